// While writes are refused for storage (a file-size limit, `prlimit --fsize`:
// every commit that grows the shard file fails), a real logbook keeps answering
// every read made meanwhile, /healthz says the write path is degraded, and after
// a restart without the limit `logbook check` agrees with recovery about the
// journal numbers the failed writes took (issue #51, items 6 and 7).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook } from '../helpers/server.js';
import { runCheck } from '../helpers/cli.js';
import { createRun, noise } from '../helpers/storage_faults.js';

const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;

test('writes refused for storage: every read made meanwhile answers, /healthz reports the write path, check agrees with recovery after', async (t) => {
  if (!hasPrlimit) { t.log('prlimit (util-linux) not found: skipped'); t.pass(); return; }
  t.timeout(180_000);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-degraded-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { LOGBOOK_SHARDS: '1', LOGBOOK_SNAPSHOT_EVERY: '100000' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const run = await createRun(lb, 'degraded');
  t.is(await lb.stop('SIGTERM'), 0);

  const limit = statSync(join(dataDir, 'shard-0.mdb')).size + 256 * 1024;
  lb = await startLogbook({ env, dataDir, wrap: ['prlimit', `--fsize=${limit}:unlimited`] }); // soft limit: lifted below
  let refusedWrites = 0;
  let acked = 0;
  const reads = new Map<number, number>();
  let health: any = null;
  const refusedReads: string[] = [];
  let writing = true;
  const writer = (async () => {
    for (let i = 0; i < 4000 && refusedWrites < 40; i++) {
      const res = await api(lb.url, 'POST', '/api/v1/results', { ...run, playbook: run.pb, status: 'ok', content: { marker: i, data: noise(i, 300) } });
      if (res.status === 201) acked++; else refusedWrites++;
    }
    writing = false;
  })();
  const reader = (async () => {
    while (writing) {
      if (refusedWrites === 0) { await new Promise((r) => setTimeout(r, 20)); continue; }
      for (const path of [`/api/v1/playbooks/${run.pb}`, `/api/v1/results?playbook=${run.pb}&limit=5`, `/api/v1/hosts/${run.host}`, '/api/v1/playbooks']) {
        const res = await api(lb.url, 'GET', path);
        reads.set(res.status, (reads.get(res.status) ?? 0) + 1);
        if (res.status !== 200 && refusedReads.length < 3) refusedReads.push(`${path}: ${res.status} ${res.text.slice(0, 300)}`);
      }
      if (health === null) health = (await api(lb.url, 'GET', '/healthz')).body;
    }
  })();
  await Promise.all([writer, reader]);
  t.log(`limit ${limit}: ${acked} writes acknowledged, ${refusedWrites} refused; reads meanwhile by status: ${JSON.stringify([...reads])}; /healthz: ${JSON.stringify(health)}; refused reads: ${refusedReads.join(' | ')}`);
  t.true(refusedWrites > 0, 'the limit was hit');
  t.true((reads.get(200) ?? 0) > 0, 'reads were made while writes were refused');
  t.deepEqual([...reads.keys()], [200], 'every read made while writes were refused answered 200');
  t.truthy(health, '/healthz answered');
  t.is(health.status, 'degraded', '/healthz: not "ok" while writes are refused');
  t.truthy(health.writes, '/healthz says what is degraded');

  // space returns (the limit is lifted on the running process): writes resume without a restart
  t.is(spawnSync('prlimit', ['--pid', String(lb.child.pid), '--fsize=unlimited:unlimited']).status, 0);
  let resumed = 0;
  for (let i = 0; i < 100 && resumed !== 201; i++) {
    resumed = (await api(lb.url, 'POST', '/api/v1/results', { ...run, playbook: run.pb, status: 'ok', content: { marker: `resumed${i}` } })).status;
    if (resumed !== 201) await new Promise((r) => setTimeout(r, 100));
  }
  t.is(resumed, 201, 'writes resume once there is room, without a restart');
  const healthy = await api(lb.url, 'GET', '/healthz');
  t.is(healthy.status, 200, JSON.stringify(healthy.body));
  t.is(healthy.body.status, 'ok');

  t.is(await lb.stop('SIGTERM'), 0);
  const check = await runCheck(dataDir);
  t.is(check.code, 0, check.output);
  t.notRegex(check.output, /are missing/);
  lb = await startLogbook({ env, dataDir });
  t.is((await api(lb.url, 'POST', '/api/v1/results', { ...run, playbook: run.pb, status: 'ok', content: { marker: 'after' } })).status, 201, 'writes work again');
});
