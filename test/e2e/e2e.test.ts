// End to end: real ansible-playbook runs with the stock ARA callback
// (python3-ara 1.5.x) record the fixture playbook into logbook and into ARA's
// own server; what logbook serves must equal what ARA serves (normalized by
// snapshotRun), and the stock `ara` CLI must work against logbook in ARA
// compatibility mode.
//
// Needs ansible-core, python3-ara, ara-server and ara-client (CI installs them);
// without them these tests are skipped.
import test, { type ExecutionContext } from 'ava';
import { isDeepStrictEqual } from 'node:util';
import { startLogbook } from '../helpers/server.js';
import {
  FIXTURE_ITEMS, FIXTURE_EXIT, FIXTURE_RECAP, hasAnsible, hasAraCli, hasAraServer, newestPlaybookId, onPath, runAraCli, runPlaybook, snapshotRun, startAraServer, type HostRecap, type PlaybookRun, type RunSnapshot,
} from '../helpers/ansible.js';


const withAra = hasAnsible() && hasAraServer() ? test : test.skip;
const withCli = hasAnsible() && hasAraCli() ? test : test.skip;

function checkRun(t: ExecutionContext, who: string, run: PlaybookRun): void {
  // ghost (the unreachable host) uses the ssh connection plugin.
  t.true(onPath('ssh'), 'the fixture needs an ssh client (openssh-client) for its unreachable host');
  if (run.callbackErrors.length > 0) {
    t.log(`${who}: callback errors:\n${run.callbackErrors.map((e) => `  ${e.slice(0, 600)}`).join('\n')}`);
  }
  t.deepEqual(run.callbackErrors, [], `${who}: a callback HTTP request failed`);
  if (run.code !== FIXTURE_EXIT) t.log(`${who}: ansible-playbook output:\n${run.stdout}\n${run.stderr}`);
  t.is(run.code, FIXTURE_EXIT, `${who}: ansible-playbook exit code`);
  t.deepEqual(run.recap, FIXTURE_RECAP, `${who}: PLAY RECAP (the fixture is meant to be deterministic)`);
}

/** Logs what differs between two arrays of plain objects (by JSON text), both ways. */
function logArrayDiff(t: ExecutionContext, what: string, got: unknown[], want: unknown[]): void {
  const g = got.map((x) => JSON.stringify(x));
  const w = want.map((x) => JSON.stringify(x));
  const missing = w.filter((x) => !g.includes(x));
  const extra = g.filter((x) => !w.includes(x));
  t.log(`${what}: logbook has ${got.length}, ARA has ${want.length}`
    + `${missing.length ? `\n  only in ARA:\n    ${missing.join('\n    ')}` : ''}`
    + `${extra.length ? `\n  only in logbook:\n    ${extra.join('\n    ')}` : ''}`);
}

/** Compares the snapshots section by section so that every difference is logged, not just the first. */
function compareSnapshots(t: ExecutionContext, got: RunSnapshot, want: RunSnapshot): void {
  for (const key of Object.keys(want) as Array<keyof RunSnapshot>) {
    const g = got[key] as unknown;
    const w = want[key] as unknown;
    if (isDeepStrictEqual(g, w)) continue;
    if (Array.isArray(g) && Array.isArray(w)) {
      logArrayDiff(t, key, g, w);
    } else if (g && w && typeof g === 'object' && typeof w === 'object') {
      const keys = new Set([...Object.keys(g), ...Object.keys(w)]);
      for (const k of keys) {
        const a = (g as Record<string, unknown>)[k];
        const b = (w as Record<string, unknown>)[k];
        if (!isDeepStrictEqual(a, b)) t.log(`${key}.${k}: logbook ${JSON.stringify(a)} — ARA ${JSON.stringify(b)}`);
      }
    }
  }
  for (const key of Object.keys(want) as Array<keyof RunSnapshot>) {
    t.deepEqual(got[key], want[key], `snapshot section "${key}" differs from ARA's`);
  }
}

withAra('the stock ARA callback records the same run into logbook as into ARA', async (t) => {
  t.timeout(180_000);
  const [logbook, ara] = await Promise.all([
    startLogbook({ env: { LOGBOOK_SHARDS: '3' } }),
    startAraServer(),
  ]);
  t.teardown(async () => {
    if (!t.passed) t.log(`logbook output (tail):\n${logbook.output().slice(-4000)}`);
    await Promise.all([logbook.stop(), ara.stop()]);
  });

  // The two runs are independent (one server each); run them side by side.
  const [lbRun, araRun] = await Promise.all([runPlaybook(logbook.url), runPlaybook(ara.url)]);
  checkRun(t, 'ARA', araRun);
  checkRun(t, 'logbook', lbRun);

  const [lbSnap, araSnap] = await Promise.all([snapshotRun(logbook.url), snapshotRun(ara.url)]);
  t.deepEqual(araSnap.playbook.items, FIXTURE_ITEMS, 'ARA items (fixture sanity)');
  compareSnapshots(t, lbSnap, araSnap);

  t.is(lbSnap.playbook.status, 'failed');
  // Host counters = PLAY RECAP (Ansible's recap "failed" is the callback's "failures").
  for (const [name, r] of Object.entries(lbRun.recap)) {
    const h = lbSnap.hosts[name];
    t.truthy(h, `logbook has host ${name}`);
    if (!h) continue;
    t.deepEqual(
      { ok: h.ok, changed: h.changed, failed: h.failed, skipped: h.skipped, unreachable: h.unreachable },
      { ok: r.ok, changed: r.changed, failed: r.failed, skipped: r.skipped, unreachable: r.unreachable },
      `logbook counters of ${name} vs PLAY RECAP`,
    );
  }
});

withCli('the stock ara CLI works against logbook in ARA compatibility mode', async (t) => {
  t.timeout(180_000);
  const logbook = await startLogbook({ env: { LOGBOOK_ARA_COMPAT: 'true', LOGBOOK_SHARDS: '2' } });
  t.teardown(async () => {
    if (!t.passed) t.log(`logbook output (tail):\n${logbook.output().slice(-4000)}`);
    await logbook.stop();
  });

  const run = await runPlaybook(logbook.url);
  checkRun(t, 'logbook (compat)', run);

  const id = await newestPlaybookId(logbook.url);
  t.truthy(id, 'a playbook was recorded');
  if (!id) return;
  const snap = await snapshotRun(logbook.url, id);
  const playbookPath = snap.playbook.path;
  const ignored = snap.results.filter((r) => r.ignore_errors).length;

  const ara = async (...args: string[]) => {
    const r = await runAraCli(logbook.url, args);
    const ok = r.code === 0;
    t.true(ok, `ara ${args.join(' ')} exited ${r.code}`);
    if (!ok) t.log(`$ ara ${args.join(' ')} → ${r.code}\n${r.stdout.slice(0, 2000)}\n${r.stderr.slice(-3000)}`);
    return r;
  };
  const rows = (r: { json: any }): any[] => (Array.isArray(r.json) ? r.json : []);

  // Lists with the CLI's defaults (order -started / -updated, limit 50).
  const pbList = await ara('playbook', 'list', '-f', 'json');
  const pbRow = rows(pbList).find((p) => p.id === id);
  t.truthy(pbRow, 'playbook list shows the run');
  t.is(pbRow?.status, 'failed');
  t.true(typeof pbRow?.path === 'string' && pbRow.path.endsWith('playbook.yml'), 'playbook list path');
  t.is(pbRow?.ansible_version, snap.playbook.runner_version);
  t.is(pbRow?.results, FIXTURE_ITEMS.results);

  const pbLong = await ara('playbook', 'list', '-f', 'json', '--long', '--status', 'failed');
  t.is(rows(pbLong).find((p) => p.id === id)?.path, playbookPath, 'playbook list --long shows the full path');

  // The CLI always sends ignore_errors=False (or True with --ignore-errors).
  const resList = await ara('result', 'list', '-f', 'json', '--playbook', String(id), '--limit', '1000');
  t.is(rows(resList).length, FIXTURE_ITEMS.results - ignored, 'result list (ignore_errors=False) count');
  t.true(rows(resList).every((r) => r.playbook === id), 'result list rows belong to the playbook');
  const resIgnored = await ara('result', 'list', '-f', 'json', '--playbook', String(id), '--limit', '1000', '--ignore-errors');
  t.is(rows(resIgnored).length, ignored, 'result list --ignore-errors count');
  t.true(rows(resIgnored).every((r) => r.status === 'ignored'), 'ignored results are shown as "ignored"');
  const resDefault = await ara('result', 'list', '-f', 'json');
  t.is(rows(resDefault).length, Math.min(50, FIXTURE_ITEMS.results - ignored), 'result list default limit 50');
  await ara('result', 'list', '-f', 'json', '--long', '--resolve', '--limit', '5');

  const plays = await ara('play', 'list', '-f', 'json', '--playbook', String(id));
  t.deepEqual(rows(plays).map((p) => p.name).sort(), snap.plays.map((p) => p.name).sort(), 'play list');
  const tasks = await ara('task', 'list', '-f', 'json', '--playbook', String(id), '--limit', '1000');
  t.is(rows(tasks).length, FIXTURE_ITEMS.tasks, 'task list count');
  const hosts = await ara('host', 'list', '-f', 'json', '--playbook', String(id));
  t.deepEqual(rows(hosts).map((h) => h.name).sort(), Object.keys(FIXTURE_RECAP), 'host list');
  const hostRow = rows(hosts).find((h) => h.name === 'web2');
  t.is(hostRow?.failed, 1);
  const failedHosts = await ara('host', 'list', '-f', 'json', '--playbook', String(id), '--with-failed');
  t.deepEqual(rows(failedHosts).map((h) => h.name), ['web2'], 'host list --with-failed');
  const records = await ara('record', 'list', '-f', 'json', '--playbook', String(id));
  t.deepEqual(rows(records).map((r) => r.key).sort(), ['e2e-text', 'e2e-url'], 'record list');

  // Details.
  const pbShow = await ara('playbook', 'show', String(id), '-f', 'json');
  t.is(pbShow.json?.id, id);
  t.is(pbShow.json?.path, playbookPath);
  t.is(pbShow.json?.ansible_version, snap.playbook.runner_version);

  const firstResult = rows(resList)[0];
  if (firstResult) {
    const resShow = await ara('result', 'show', String(firstResult.id), '-f', 'json', '--with-content');
    t.is(resShow.json?.id, firstResult.id);
    t.is(resShow.json?.ansible_version, snap.playbook.runner_version);
    t.true(typeof resShow.json?.path === 'string' && resShow.json.path.includes(':'), 'result show path "(file) path:lineno"');
  }
  if (hostRow) {
    const hostShow = await ara('host', 'show', String(hostRow.id), '-f', 'json', '--with-facts');
    t.is(hostShow.json?.name, 'web2');
    t.is(hostShow.json?.failed, 1);
  }
  const recordRow = rows(records).find((r) => r.key === 'e2e-url');
  if (recordRow) {
    const recShow = await ara('record', 'show', String(recordRow.id), '-f', 'json');
    t.is(recShow.json?.value, 'https://example.org/logbook/e2e');
  }
  const playRow = rows(plays)[0];
  if (playRow) await ara('play', 'show', String(playRow.id), '-f', 'json');
  const taskRow = rows(tasks)[0];
  if (taskRow) await ara('task', 'show', String(taskRow.id), '-f', 'json');

  // prune without --confirm is a dry run: it lists and deletes nothing.
  const prune = await ara('playbook', 'prune', '--days', '0');
  t.regex(prune.stderr, /Found 1 playbooks matching query/);
  t.is(await newestPlaybookId(logbook.url), id, 'dry-run prune deleted nothing');

});
