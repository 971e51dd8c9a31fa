// ARA's own integration playbooks (tests/integration/*.yaml), run as ARA's CI
// runs them (tests/test_tasks.yaml, tests/basic.yaml), each recorded by that
// ARA version's own callback, action and lookup plugins, into ARA's own server
// of that version and into a default logbook (no LOGBOOK_ARA_COMPAT), side by
// side: 1.5.8 (Debian's python3-ara and ara-server), 1.7.4 and ARA's newest
// commit (test/fixtures/ara-<version>/, on Debian's Django and gunicorn).
//
// A playbook passes on a server when ARA's CI would accept the run (exit 0;
// failed.yaml fails on purpose; incomplete.yaml is killed mid-run), no line of
// the output says the callback failed (`Failure using method`, `Callback
// Exception`, the http client's `Failed to <method> on`: Ansible only warns),
// and the recorded playbook ends with the status and item counts ARA's server
// recorded. Every playbook that passes on ARA's server must pass on logbook,
// except those listed, with their cause, in helpers/ara_known_failures.ts.
//
// Slow (up to 14 real ansible-playbook runs per server and version): an e2e
// suite, outside `npm run test:quick`. Skipped when ansible, Debian's ARA
// packages or gunicorn are missing.
import test, { type ExecutionContext } from 'ava';
import { isDeepStrictEqual } from 'node:util';
import { startLogbook } from '../helpers/server.js';
import { ARA_VERSIONS, missingFor, runIntegrationSuite, startAraOf, type AraVersion, type PlaybookOutcome } from '../helpers/ara_versions.js';
import { KNOWN_PLAYBOOK_FAILURES, REFERENCE_PLAYBOOK_FAILURES } from '../helpers/ara_known_failures.js';

/** Why a run does not pass, or null when it passes (compared with ARA's run of the same playbook when given). */
function whyNot(o: PlaybookOutcome, reference?: PlaybookOutcome): string | null {
  const why: string[] = [];
  if (!o.ciVerdict) why.push(`exit ${o.code}${o.failedTasks.length ? `: ${o.failedTasks.join('; ')}` : ''}`);
  if (o.callbackFailures.length) why.push(`callback: ${o.callbackFailures.slice(0, 3).join(' || ')}${o.callbackFailures.length > 3 ? ` (+${o.callbackFailures.length - 3} more)` : ''}`);
  if (typeof o.recorded === 'string') why.push(o.recorded);
  else if (reference && typeof reference.recorded !== 'string') {
    if (o.recorded.status !== reference.recorded.status) why.push(`recorded status ${o.recorded.status}, ARA ${reference.recorded.status}`);
    if (!isDeepStrictEqual(o.recorded.items, reference.recorded.items)) {
      why.push(`recorded items ${JSON.stringify(o.recorded.items)}, ARA ${JSON.stringify(reference.recorded.items)}`);
    }
  }
  return why.length ? why.join(' | ') : null;
}

async function suite(t: ExecutionContext, version: AraVersion): Promise<void> {
  const missing = missingFor(version);
  if (missing) {
    t.log(`skipped: ${missing}`);
    return;
  }
  t.timeout(1_500_000); // up to 14 playbooks per server; a loaded 2-core machine is slow
  // each server is stopped even when the other failed to start (a loaded CI machine starts slowly)
  const starting = [startAraOf(version), startLogbook({ env: { LOGBOOK_SHARDS: '2' }, startTimeoutMs: 120_000 })] as const;
  t.teardown(async () => { await Promise.allSettled(starting.map(async (s) => (await s).stop())); });
  const [ara, logbook] = await Promise.all(starting);

  // one server each: the two sequences run side by side
  const [onAra, onLogbook] = await Promise.all([runIntegrationSuite(version, ara.url), runIntegrationSuite(version, logbook.url)]);

  const known = KNOWN_PLAYBOOK_FAILURES[version.name] ?? {};
  const referenceFails = REFERENCE_PLAYBOOK_FAILURES[version.name] ?? {};
  const lines: string[] = [];
  const unexpected: string[] = [];
  const nowPassing: string[] = [];
  let araPasses = 0;
  let logbookPasses = 0;
  for (const [i, a] of onAra.entries()) {
    const l = onLogbook[i]!;
    const araWhy = whyNot(a);
    const lbWhy = whyNot(l, araWhy ? undefined : a);
    if (!araWhy) araPasses++;
    if (!lbWhy) logbookPasses++;
    const verdict = araWhy ? 'not compared (fails on ARA)' : !lbWhy ? (known[a.file] ? 'NOW PASSES (delete from known failures)' : 'ok')
      : known[a.file] ? 'KNOWN FAILURE' : 'UNEXPECTED FAILURE';
    lines.push(`  ${a.file.padEnd(22)} ARA ${araWhy ? 'FAIL' : 'pass'} (${a.seconds} s)  logbook ${lbWhy ? 'FAIL' : 'pass'} (${l.seconds} s)  → ${verdict}`
      + `${araWhy ? `\n      ARA: ${araWhy}` : ''}${lbWhy ? `\n      logbook: ${lbWhy}` : ''}`
      + `${lbWhy && known[a.file] ? `\n      known cause: ${known[a.file]}` : ''}`);
    if (araWhy) continue; // ARA's own server is the reference: its failures say nothing about logbook
    if (lbWhy && !known[a.file]) unexpected.push(`${a.file}: ${lbWhy}`);
    if (!lbWhy && known[a.file]) nowPassing.push(a.file);
  }
  t.log(`ARA ${version.name}: ${araPasses} of ${onAra.length} pass on ARA's own server, ${logbookPasses} of ${onLogbook.length} on a default logbook\n${lines.join('\n')}`);
  for (const [i, a] of onAra.entries()) {
    const l = onLogbook[i]!;
    if (whyNot(a)) t.log(`ARA's server, ${a.file}, output (tail):\n${a.run.stdout.slice(-2500)}\n${a.run.stderr.slice(-1500)}`);
    else if (unexpected.some((u) => u.startsWith(`${a.file}:`))) {
      t.log(`logbook, ${a.file}, output (tail):\n${l.run.stdout.slice(-2500)}\n${l.run.stderr.slice(-1500)}`);
    }
  }
  if (unexpected.length) t.log(`logbook log (tail):\n${logbook.output().slice(-3000)}`);
  t.deepEqual(unexpected, [], `${version.name}: playbooks that pass on ARA's server but fail on logbook (and are not known failures)`);
  t.deepEqual(nowPassing, [], `${version.name}: known failures that now pass (delete them from KNOWN_PLAYBOOK_FAILURES)`);
  // the reference must work, or every comparison above is empty
  const araFailing = onAra.filter((a) => whyNot(a)).map((a) => a.file);
  t.deepEqual(araFailing, Object.keys(referenceFails).filter((f) => onAra.some((a) => a.file === f)),
    `the integration playbooks of ${version.name} that fail on ARA's own server are those REFERENCE_PLAYBOOK_FAILURES explains`);
}

// They run with the rest (CI included); LOGBOOK_ARA_SUITES=0 leaves them out of a local
// run, as a skip that says so: they take a few minutes a version on 2 cores.
const ARA_SUITES = process.env.LOGBOOK_ARA_SUITES !== '0';
if (!ARA_SUITES) console.warn('e2e_ara_integration: skipped (LOGBOOK_ARA_SUITES=0; see docs/ara-client-tests.md)');
const suiteTest = ARA_SUITES ? test.serial : test.serial.skip;

for (const version of Object.values(ARA_VERSIONS)) {
  suiteTest(`ARA ${version.name}'s integration playbooks, recorded by its own plugins, pass on a default logbook as on ARA's server`,
    (t) => suite(t, version));
}
