// ARA 1.7.4 and ARA's newest commit against a default logbook (no
// LOGBOOK_ARA_COMPAT), compared with ARA's own server of the same version:
// - the e2e fixture playbook (test/fixtures/e2e), recorded by that version's own
//   callback and ara_record into both servers, reads back as the same run
//   (snapshotRun, as test/e2e/e2e.test.ts does for Debian's 1.5.8), and list rows and
//   details carry every field ARA's serve;
// - every `ara` read command of that version's CLI (list, show and metrics of
//   each resource with its common filters, `-f json`) exits 0 against logbook
//   and prints the same as against ARA's server, ids, uuids, timestamps,
//   durations and the server's address aside.
// Cases logbook still gets wrong are listed with their cause in
// helpers/ara_known_failures.ts and logged as KNOWN FAILURE, never passed.
//
// An e2e suite (outside `npm run test:quick`): skipped without ansible,
// Debian's ARA packages or gunicorn.
import test, { type ExecutionContext } from 'ava';
import { hostname } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { startLogbook } from '../helpers/server.js';
import { FIXTURE_EXIT, FIXTURE_RECAP, runPlaybook, snapshotRun, type RunSnapshot } from '../helpers/ansible.js';
import { ARA_NEWEST, ARA_VERSIONS, callbackFailures, missingFor, recordingEnv, runAraCliOf, startAraOf, type AraVersion } from '../helpers/ara_versions.js';
import { KNOWN_CLI_FAILURES, KNOWN_PARITY_FAILURES } from '../helpers/ara_known_failures.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Reads both servers as ARA's clients do: with their http client's User-Agent,
 * which a default logbook answers in ARA's dialect (docs/api.md#the-ara-dialect).
 */
async function getJson(base: string, path: string): Promise<Json> {
  const res = await fetch(base + path, { headers: { accept: 'application/json', 'user-agent': 'ara-http-client_e2e' } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path} → ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** The ids the `show` commands and filters use, found on each server by what they name. */
interface Ids { pb: string; play: string; task: string; host: string; result: string; record: string }

async function findIds(base: string): Promise<Partial<Ids>> {
  const ids: Partial<Ids> = {};
  const pb = (await getJson(base, '/api/v1/playbooks?order=-id&limit=1')).results[0];
  if (!pb) return ids;
  ids.pb = String(pb.id);
  const q = `playbook=${pb.id}&limit=1000`;
  const safe = async (f: () => Promise<void>) => { try { await f(); } catch { /* the command then says it */ } };
  await safe(async () => {
    const plays: Json[] = (await getJson(base, `/api/v1/plays?${q}`)).results;
    plays.sort((a, b) => String(a.name).localeCompare(String(b.name)));
    if (plays[0]) ids.play = String(plays[0].id);
  });
  // the fixture's first `command` task of its first play (same name and line on both servers)
  const tasks: Json[] = await getJson(base, `/api/v1/tasks?${q}`).then((p) => p.results).catch(() => []);
  tasks.sort((a, b) => `${a.name}\u0000${String(a.lineno).padStart(6, '0')}`.localeCompare(`${b.name}\u0000${String(b.lineno).padStart(6, '0')}`));
  const task = tasks.find((t) => t.action === 'command' || t.action === 'ansible.builtin.command') ?? tasks[0];
  if (task) ids.task = String(task.id);
  await safe(async () => {
    const host = (await getJson(base, `/api/v1/hosts?${q}&name=web2`)).results.find((h: Json) => h.name === 'web2');
    if (host) ids.host = String(host.id);
  });
  await safe(async () => {
    if (!ids.host || !ids.task) return;
    const r = (await getJson(base, `/api/v1/results?${q}&host=${ids.host}&task=${ids.task}`)).results[0];
    if (r) ids.result = String(r.id);
  });
  await safe(async () => {
    const r = (await getJson(base, `/api/v1/records?${q}&key=e2e-url`)).results[0];
    if (r) ids.record = String(r.id);
  });
  return ids;
}

/** The read commands of `version`'s CLI; `{pb}`-style placeholders are replaced per server, `{controller}` and `{ansible_version}` per machine. */
function commands(version: AraVersion): string[] {
  const list = [
    'playbook list', 'playbook list --long', 'playbook list --status failed', 'playbook list --path playbook.yml',
    'playbook list --label check:False', 'playbook list --ansible_version {ansible_version}', 'playbook list --controller {controller}',
    `playbook list --client_version ${version.name === '1.7.4' ? '1.7.4' : '1.7.5.dev4'}`, 'playbook list --user root',
    'playbook list --order started --limit 5',
    'playbook show {pb}',
    'playbook metrics', 'playbook metrics --aggregate name', 'playbook metrics --aggregate ansible_version',
    'playbook metrics --aggregate controller', 'playbook metrics --long --status failed',
    'play list --playbook {pb}', 'play list --playbook {pb} --long --resolve', 'play list --status completed',
    'play list --name "Play two"', 'play show {play}',
    'task list --playbook {pb} --limit 1000', 'task list --playbook {pb} --long --resolve --limit 1000',
    'task list --status failed', 'task list --name sleep', 'task list --action command', 'task list --path playbook.yml',
    'task show {task}',
    'task metrics', 'task metrics --aggregate name', 'task metrics --aggregate path', 'task metrics --long --playbook {pb}',
    'host list --playbook {pb}', 'host list --with-failed', 'host list --without-changed', 'host list --with-unreachable',
    'host list --latest', 'host list --playbook {pb} --long --resolve', 'host list --name web',
    'host show {host}', 'host show {host} --with-facts',
    'host metrics', 'host metrics --with-failed',
    'record list --playbook {pb}', 'record list --key e2e-url', 'record list --long --resolve', 'record show {record}',
    'result list --playbook {pb} --limit 1000', 'result list --status failed', 'result list --changed', 'result list --ignore-errors',
    'result list --host {host}', 'result list --task {task}', 'result list --playbook {pb} --long --resolve --limit 1000',
    'result list --order started --limit 5', 'result show {result}', 'result show {result} --with-content',
  ];
  if (version.name === ARA_NEWEST) {
    list.push('task list --with-warnings', 'task list --without-warnings', 'task list --with-deprecations',
      'task list --without-exceptions', 'task list --with-exceptions');
  }
  return list;
}

/** Splits a command line written with "double quotes" around arguments that hold spaces. */
function argv(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

const ID_KEYS = new Set(['id', 'playbook', 'play', 'task', 'host', 'file', 'result', 'record']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TIME = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d/;
const DURATION = /^(\d+ days?, )?\d+:\d\d:\d\d(\.\d+)?$/;

/** A CLI output without what differs between two servers recording the same run. */
function normalise(value: Json, server: string, key = ''): Json {
  if (Array.isArray(value)) {
    return value.map((v) => normalise(v, server)).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }
  if (value && typeof value === 'object') {
    if (key === 'facts' || key === 'content') return `<${key} keys: ${Object.keys(value).sort().join(',')}>`;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalise(v, server, k)]));
  }
  if (ID_KEYS.has(key) && typeof value === 'number') return '<id>';
  if (key === 'server_version') return '<server version>';
  if (typeof value === 'string') {
    if (UUID.test(value)) return '<uuid>';
    if (TIME.test(value)) return '<time>';
    if (DURATION.test(value)) return '<duration>';
    if (value.includes(server)) return value.split(server).join('<server>').replace(/\d+/g, '#');
    if (ID_KEYS.has(key) && /^\d+$/.test(value)) return '<id>';
    // `path` of a result: "(id) path:line"
    return value.replace(/^\(\d+\) /, '(<id>) ');
  }
  return value;
}

/** Where two normalised outputs differ, in a few lines. */
function differences(got: Json, want: Json, at = '', out: string[] = []): string[] {
  if (out.length >= 6 || isDeepStrictEqual(got, want)) return out;
  if (Array.isArray(got) && Array.isArray(want)) {
    const g = got.map((x) => JSON.stringify(x));
    const w = want.map((x) => JSON.stringify(x));
    if (g.length === w.length && g.length > 0) {
      got.forEach((x, i) => differences(x, want[i], `${at}[${i}]`, out));
      return out;
    }
    out.push(`${at || 'rows'}: logbook ${g.length}, ARA ${w.length}`);
    const missing = w.filter((x) => !g.includes(x)).slice(0, 2);
    const extra = g.filter((x) => !w.includes(x)).slice(0, 2);
    for (const m of missing) out.push(`  only ARA: ${m.slice(0, 300)}`);
    for (const e of extra) out.push(`  only logbook: ${e.slice(0, 300)}`);
    return out;
  }
  if (got && want && typeof got === 'object' && typeof want === 'object' && !Array.isArray(got) && !Array.isArray(want)) {
    for (const k of new Set([...Object.keys(got), ...Object.keys(want)])) {
      if (!(k in got)) out.push(`${at}.${k}: missing on logbook (ARA ${JSON.stringify(want[k]).slice(0, 120)})`);
      else if (!(k in want)) out.push(`${at}.${k}: only on logbook`);
      else differences(got[k], want[k], `${at}.${k}`, out);
      if (out.length >= 6) break;
    }
    return out;
  }
  out.push(`${at || 'value'}: logbook ${JSON.stringify(got)?.slice(0, 200)}, ARA ${JSON.stringify(want)?.slice(0, 200)}`);
  return out;
}

/** The last line of a failed CLI run that says why (cliff prints the exception's text). */
function cliError(stderr: string, stdout: string): string {
  const lines = `${stderr}\n${stdout}`.split('\n').map((l) => l.trim()).filter(Boolean);
  return lines.slice(-2).join(' / ').slice(0, 300);
}

/** Keys each list row and detail has on ARA's server but not on logbook (the fields a client may read). */
async function missingFields(ara: string, logbook: string, araIds: Partial<Ids>, lbIds: Partial<Ids>): Promise<string[]> {
  const out: string[] = [];
  const pairs: Array<[string, string, string]> = [
    ['playbooks', 'pb', ''], ['plays', 'play', 'playbook'], ['tasks', 'task', 'playbook'], ['hosts', 'host', 'playbook'],
    ['results', 'result', 'playbook'], ['records', 'record', 'playbook'], ['files', '', 'playbook'], ['latesthosts', '', ''],
  ];
  for (const [resource, idKey, filter] of pairs) {
    const query = (ids: Partial<Ids>) => `/api/v1/${resource}?limit=1${filter ? `&${filter}=${ids.pb}` : ''}`;
    const [a, l] = await Promise.all([getJson(ara, query(araIds)).catch((e) => String(e)), getJson(logbook, query(lbIds)).catch((e) => String(e))]);
    if (typeof l === 'string') { out.push(`${resource} list: ${l}`); continue; }
    if (typeof a === 'string') continue;
    const aRow = a.results?.[0] ?? {};
    const lRow = l.results?.[0] ?? {};
    const lacking = Object.keys(aRow).filter((k) => !(k in lRow));
    if (lacking.length && l.results?.length) out.push(`${resource} list row lacks: ${lacking.join(', ')}`);
    const araId = idKey ? araIds[idKey as keyof Ids] : aRow.id;
    const lbId = idKey ? lbIds[idKey as keyof Ids] : lRow.id;
    if (araId === undefined || lbId === undefined || resource === 'latesthosts') continue;
    const [ad, ld] = await Promise.all([getJson(ara, `/api/v1/${resource}/${araId}`), getJson(logbook, `/api/v1/${resource}/${lbId}`).catch((e) => String(e))]);
    if (typeof ld === 'string') { out.push(`${resource} detail: ${ld}`); continue; }
    const lackingDetail = Object.keys(ad).filter((k) => !(k in ld));
    if (lackingDetail.length) out.push(`${resource} detail lacks: ${lackingDetail.join(', ')}`);
    for (const nested of ['playbook', 'play', 'task']) {
      if (ad[nested] && typeof ad[nested] === 'object' && ld[nested] && typeof ld[nested] === 'object') {
        const n = Object.keys(ad[nested]).filter((k) => !(k in ld[nested]));
        if (n.length) out.push(`${resource} detail's ${nested} lacks: ${n.join(', ')}`);
      }
    }
  }
  const [aRoot, lRoot] = await Promise.all([getJson(ara, '/api/').catch(() => null), getJson(logbook, '/api/').catch((e) => String(e))]);
  if (aRoot && typeof lRoot === 'string') out.push(`GET /api/: ${lRoot}`);
  return out;
}

async function suite(t: ExecutionContext, version: AraVersion): Promise<void> {
  const missing = missingFor(version);
  if (missing) {
    t.log(`skipped: ${missing}`);
    return;
  }
  t.timeout(1_200_000); // ~120 CLI runs and two playbook runs on a loaded 2-core machine
  // each server is stopped even when the other failed to start (a loaded CI machine starts slowly)
  const starting = [startAraOf(version), startLogbook({ env: { LOGBOOK_SHARDS: '2' }, startTimeoutMs: 120_000 })] as const;
  t.teardown(async () => { await Promise.allSettled(starting.map(async (s) => (await s).stop())); });
  const [ara, logbook] = await Promise.all(starting);

  // the same run recorded by this version's callback into each server, side by side
  const [araRun, lbRun] = await Promise.all([ara.url, logbook.url].map((url) => runPlaybook(url, {
    timeoutMs: 400_000, // two runs side by side on a loaded 2-core machine
    // ARA's callback settings at their defaults (the integration suite sets ARA CI's)
    env: Object.fromEntries(Object.entries(recordingEnv(version, url)).filter(([k]) => k !== 'ARA_DEFAULT_LABELS' && k !== 'ARA_IGNORED_FILES')),
  })));
  const araCallback = callbackFailures(araRun!);
  const lbCallback = callbackFailures(lbRun!);
  t.is(araRun!.code, FIXTURE_EXIT, `ARA's server: ansible-playbook exit code\n${araRun!.stdout.slice(-2000)}`);
  t.deepEqual(araRun!.recap, FIXTURE_RECAP, 'ARA\'s server: PLAY RECAP');
  t.deepEqual(araCallback, [], 'ARA\'s server: the callback worked (reference)');

  const known = KNOWN_CLI_FAILURES[version.name] ?? {};
  const knownParity = KNOWN_PARITY_FAILURES[version.name] ?? {};
  const unexpected: string[] = [];
  const nowPassing: string[] = [];
  // each verdict is logged as it comes, so that a run cut short still says what it saw
  const verdict = (what: string, why: string | null, knownCause: string | undefined) => {
    t.log(`${version.name} ${why ? (knownCause ? 'KNOWN FAILURE' : 'FAIL') : knownCause ? 'NOW PASSES' : 'ok'}  ${what}${why ? `\n    ${why.replace(/\n/g, '\n    ')}` : ''}`);
    if (why && !knownCause) unexpected.push(`${what}: ${why}`);
    if (!why && knownCause) nowPassing.push(what);
  };

  // recording: the callback must not fail, the run must end as on ARA's server
  verdict('record: the callback reports no error', lbCallback.length ? lbCallback.slice(0, 4).join('\n') : null, knownParity['record: the callback reports no error']);

  // run parity (snapshotRun, as the 1.5.8 e2e test compares)
  let araSnap: RunSnapshot | null = null;
  let lbSnap: RunSnapshot | string;
  araSnap = await snapshotRun(ara.url);
  try { lbSnap = await snapshotRun(logbook.url); } catch (err) { lbSnap = String(err); }
  if (typeof lbSnap === 'string') {
    verdict('run parity: snapshot', lbSnap, knownParity['run parity: snapshot']);
  } else {
    for (const key of Object.keys(araSnap) as Array<keyof RunSnapshot>) {
      const same = isDeepStrictEqual(lbSnap[key], araSnap[key]);
      verdict(`run parity: ${key}`, same ? null : differences(lbSnap[key], araSnap[key], key).join('\n'), knownParity[`run parity: ${key}`]);
    }
  }

  const [araIds, lbIds] = await Promise.all([findIds(ara.url), findIds(logbook.url).catch(() => ({}))]);
  const fields = await missingFields(ara.url, logbook.url, araIds, lbIds);
  verdict('fields: every field ARA serves', fields.length ? fields.join('\n') : null, knownParity['fields: every field ARA serves']);

  // the CLI
  const machine: Record<string, string> = { ansible_version: araSnap.playbook.runner_version, controller: hostname() };
  let cliPass = 0;
  const cmds = commands(version);
  for (const line of cmds) {
    const fill = (ids: Partial<Ids>) => argv(line).map((a) => a.replace(/\{(\w+)\}/g, (_, k: string) => machine[k] ?? ids[k as keyof Ids] ?? `<no ${k}>`));
    const [a, l] = await Promise.all([
      runAraCliOf(version, ara.url, [...fill(araIds), '-f', 'json']),
      runAraCliOf(version, logbook.url, [...fill(lbIds), '-f', 'json']),
    ]);
    let why: string | null = null;
    if (a.code !== 0) {
      t.log(`not compared (fails on ARA's server: exit ${a.code} ${cliError(a.stderr, a.stdout)})  ara ${line}`);
      unexpected.push(`ara ${line} fails on ARA's own server: ${cliError(a.stderr, a.stdout)}`);
      continue;
    }
    if (l.code !== 0) why = `exit ${l.code}: ${cliError(l.stderr, l.stdout)}`;
    else {
      const d = differences(normalise(l.json, logbook.url), normalise(a.json, ara.url));
      if (d.length) why = `output differs:\n${d.join('\n')}`;
    }
    if (!why) cliPass++;
    verdict(`ara ${line}`, why, known[line]);
  }

  t.log(`ARA ${version.name}: CLI ${cliPass} of ${cmds.length} read commands exit 0 and print the same on a default logbook as on ARA's server`);
  if (unexpected.length) t.log(`logbook log (tail):\n${logbook.output().slice(-3000)}`);
  t.deepEqual(unexpected, [], `${version.name}: checks that fail on logbook and are not known failures`);
  t.deepEqual(nowPassing, [], `${version.name}: known failures that now pass (delete them from ara_known_failures.ts)`);
}

// With the rest; LOGBOOK_ARA_SUITES=0 leaves them out (test/e2e/e2e_ara_integration.test.ts).
const ARA_SUITES = process.env.LOGBOOK_ARA_SUITES !== '0';
if (!ARA_SUITES) console.warn('e2e_ara_cli: skipped (LOGBOOK_ARA_SUITES=0; see docs/ara-client-tests.md)');
const suiteTest = ARA_SUITES ? test.serial : test.serial.skip;

for (const name of ['1.7.4', ARA_NEWEST]) {
  const version = ARA_VERSIONS[name]!;
  suiteTest(`ARA ${name}: a run recorded into logbook reads back as on ARA's server, and every ara read command works the same`,
    (t) => suite(t, version));
}
