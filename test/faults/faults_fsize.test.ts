// A file-size limit hit by a real logbook process (`prlimit --fsize`): the
// shard file cannot grow, so LMDB commits fail with an I/O error. Node ignores
// SIGXFSZ, so the process lives on: writes get 503 naming the cause, reads keep
// working, the process neither dies nor restarts in a loop, and after a restart
// without the limit everything acknowledged is there. Once during ingest, once
// during a snapshot round (a big aggregate's snapshot is what does not fit).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook } from '../helpers/server.js';
import { createRun, missingResults, must, noise, postOrExplain } from '../helpers/storage_faults.js';

const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;
if (!hasPrlimit) console.warn('faults_fsize: prlimit (util-linux) not found; skipped');
const withPrlimit = hasPrlimit ? test : test.skip;

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-fsize-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const shardFile = (dataDir: string) => join(dataDir, 'shard-0.mdb');

withPrlimit('a file-size limit hit during ingest: 503s naming the cause, reads work, no crash; nothing acknowledged lost after a restart without it', async (t) => {
  t.timeout(120_000);
  const dataDir = tempDir(t);
  const env = { LOGBOOK_SHARDS: '1', LOGBOOK_SNAPSHOT_EVERY: '100' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const run = await createRun(lb, 'fsize');
  t.is(await lb.stop('SIGTERM'), 0);

  const limit = statSync(shardFile(dataDir)).size + 512 * 1024;
  lb = await startLogbook({ env, dataDir, wrap: ['prlimit', `--fsize=${limit}`] });
  const acked = new Map<number, string>();
  const refused: Array<{ status: number; detail: string; marker: string }> = [];
  for (let i = 0; i < 3000 && refused.length < 20; i++) {
    const marker = `m${i}`;
    const res = await postOrExplain(t, lb, '/api/v1/results', { ...run, playbook: run.pb, status: 'ok', content: { marker, data: noise(i, 300) } });
    if (res.status === 201) acked.set(res.body.id, marker);
    else refused.push({ status: res.status, detail: res.body?.detail ?? res.text, marker });
  }
  t.log(`limit ${limit} bytes: ${acked.size} results acknowledged, ${refused.length} refused; first: ${refused[0]?.status} ${refused[0]?.detail}`);
  t.true(refused.length > 0, 'the limit was hit');
  t.deepEqual([...new Set(refused.map((r) => r.status))], [503], 'refusals are 503s');
  t.regex(refused[0]!.detail, /could not be stored \(the data directory could not be written: .*\)/);
  t.is(lb.child.exitCode, null, 'the process is alive (SIGXFSZ is ignored, a failed commit is not fatal)');
  const health = await api(lb.url, 'GET', '/healthz');
  t.is(health.body.shards_down, undefined, 'no shard is down');
  t.is(health.body.writes?.status, 'refused', '/healthz reports the write path refused (reads go on)');
  t.notRegex(lb.output(), /shard worker exited/, 'no shard worker died');
  t.deepEqual(await missingResults(lb, acked, true), [], 'reads at the limit show every acknowledged result');
  const count = (await must(lb, 'GET', `/api/v1/results?playbook=${run.pb}&limit=1`)).count;
  t.is(count, acked.size, 'and nothing refused');

  t.is(await lb.stop('SIGKILL'), null);
  lb = await startLogbook({ env, dataDir });
  t.deepEqual(await missingResults(lb, acked, true), [], 'after a restart without the limit every acknowledged result is there');
  const results = (await must(lb, 'GET', `/api/v1/results?playbook=${run.pb}&limit=1000`)).results as Array<{ id: number }>;
  const stored = new Set(results.map((r) => r.id));
  t.is(stored.size, acked.size, 'no refused write was stored');
  t.is((await api(lb.url, 'POST', '/api/v1/results', { ...run, playbook: run.pb, status: 'ok', content: { marker: 'after' } })).status, 201, 'writes work again');
});

withPrlimit('a file-size limit hit by a snapshot round: the round fails, nothing is trimmed or lost, service goes on', async (t) => {
  t.timeout(120_000);
  const dataDir = tempDir(t);
  // no snapshot while filling: the whole playbook is in the journal
  const filling = { LOGBOOK_SHARDS: '1', LOGBOOK_SNAPSHOT_EVERY: '1000000', LOGBOOK_SNAPSHOT_INTERVAL: '86400' };
  let lb = await startLogbook({ env: filling, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const run = await createRun(lb, 'snapshot');
  const acked = new Map<number, string>();
  // small journal entries, many rows: the aggregate's snapshot (~300 KB) is far larger
  // than the free pages LMDB keeps in the file, so it needs the file to grow
  await Promise.all(Array.from({ length: 8 }, async (_, w) => {
    for (let i = 0; i < 500; i++) {
      const marker = `w${w}n${i}`;
      const body = await must(lb, 'POST', '/api/v1/results', { ...run, playbook: run.pb, status: 'ok', content: { marker } });
      acked.set(body.id, marker);
    }
  }));
  t.is(await lb.stop('SIGTERM'), 0);

  // restart with room for a few journal entries but not for the snapshot; a round every second
  const limit = statSync(shardFile(dataDir)).size + 8 * 1024;
  // (lmdb-js sometimes loses such a failed transaction: its promises never settle;
  // the stall watchdog then restarts the shard: LOGBOOK_TEST_STALL_MS shortens its bound)
  const env = { ...filling, LOGBOOK_SNAPSHOT_INTERVAL: '1', LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_STALL_MS: '3000' };
  lb = await startLogbook({ env, dataDir, wrap: ['prlimit', `--fsize=${limit}`] });
  const failedOrStalled = /"msg":"(snapshot failed|storage stalled[^"]*)"/;
  for (let i = 0; i < 600 && !failedOrStalled.test(lb.output()); i++) await new Promise((r) => setTimeout(r, 50));
  if (!failedOrStalled.test(lb.output())) t.log(lb.output().slice(-3000));
  t.regex(lb.output(), failedOrStalled, 'the snapshot round failed (or stalled and the shard was restarted) and said so');
  t.log(`the round: ${failedOrStalled.exec(lb.output())![1]}`);
  for (let i = 0; i < 200 && (await api(lb.url, 'GET', '/healthz')).body?.shards_down !== undefined; i++) await new Promise((r) => setTimeout(r, 100));
  // small writes meanwhile: acknowledged ones must survive, refused ones are 503
  const statuses: number[] = [];
  for (let i = 0; i < 40; i++) {
    const marker = `late${i}`;
    const res = await postOrExplain(t, lb, '/api/v1/results', { ...run, playbook: run.pb, status: 'ok', content: { marker } });
    statuses.push(res.status);
    if (res.status === 201) acked.set(res.body.id, marker);
  }
  t.log(`limit ${limit}: late writes ${JSON.stringify(Object.fromEntries([...new Set(statuses)].map((s) => [s, statuses.filter((x) => x === s).length])))}`);
  t.true(statuses.every((s) => s === 201 || s === 503), 'only 201 or 503');
  t.is(lb.child.exitCode, null, 'the process is alive');
  for (let i = 0; i < 200 && (await api(lb.url, 'GET', '/healthz')).body?.shards_down !== undefined; i++) await new Promise((r) => setTimeout(r, 100));
  t.deepEqual(await missingResults(lb, acked, true), [], 'reads show every acknowledged result');

  t.is(await lb.stop('SIGKILL'), null);
  lb = await startLogbook({ env: { ...env, LOGBOOK_SNAPSHOT_INTERVAL: '86400' }, dataDir });
  t.deepEqual(await missingResults(lb, acked, true), [], 'after a restart without the limit every acknowledged result is there');
  t.is((await must(lb, 'GET', `/api/v1/results?playbook=${run.pb}&limit=1`)).count, acked.size, 'and only those');
});
