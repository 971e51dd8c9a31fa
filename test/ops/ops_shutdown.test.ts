// Graceful shutdown: SIGTERM while writers are busy stops accepting, lets the
// in-flight requests finish, flushes, and exits 0 within the bound; after a
// restart every acknowledged write is there. SIGINT does the same.
import test from 'ava';
import { listening, post, request, spawnLogbook } from '../helpers/ops.js';

async function seed(base: string, n: number) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const pb = await post(base, '/api/v1/playbooks', { path: `/p${i}.yml`, runner_version: '2.16', status: 'running' });
    const playbook = pb.body.id as number;
    const play = await post(base, '/api/v1/plays', { playbook, uuid: crypto.randomUUID() });
    const file = await post(base, '/api/v1/files', { playbook, path: '/p.yml', content: '' });
    const task = await post(base, '/api/v1/tasks', { playbook, play: play.body.id, file: file.body.id, action: 'ping', lineno: 1, handler: false });
    const host = await post(base, '/api/v1/hosts', { playbook, name: 'h' });
    out.push({ playbook, play: play.body.id, task: task.body.id, host: host.body.id, status: 'ok' });
  }
  return out;
}

test.serial('SIGTERM with active writers loses no acknowledged write and exits 0 in time', async (t) => {
  const p = spawnLogbook({ LOGBOOK_SHUTDOWN_TIMEOUT: '10' });
  t.teardown(() => { void p.kill('SIGKILL').then(p.cleanup); });
  const base = await listening(p);
  const targets = await seed(base, 2); // one playbook per shard

  const acked: number[] = [];
  const statuses = new Map<string, number>();
  let stop = false;
  const writer = async (i: number) => {
    while (!stop) {
      let status: string;
      try {
        const r = await post(base, '/api/v1/results', { ...targets[i % targets.length], content: { i } }, 15_000);
        status = String(r.status);
        if (r.status === 201) acked.push(r.body.id);
      } catch (err) {
        status = (err as Error).name === 'TimeoutError' ? 'timeout' : 'refused';
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status !== '201') await new Promise((r) => setTimeout(r, 5));
    }
  };
  const writers = Array.from({ length: 8 }, (_, i) => writer(i));
  await new Promise((r) => setTimeout(r, 500));
  const before = acked.length;
  const signalled = Date.now();
  p.child.kill('SIGTERM');
  const { code } = await p.exited;
  const took = Date.now() - signalled;
  await new Promise((r) => setTimeout(r, 100));
  stop = true;
  await Promise.all(writers);

  t.log(`acknowledged ${acked.length} (${before} before SIGTERM), exit after ${took} ms, statuses ${JSON.stringify([...statuses])}`);
  t.is(code, 0);
  t.true(took < 10_000, 'within LOGBOOK_SHUTDOWN_TIMEOUT');
  t.false(statuses.has('timeout'), 'no request hung');
  t.deepEqual([...statuses.keys()].filter((s) => !['201', '503', 'refused'].includes(s)), []);
  t.true(acked.length > 0);
  t.regex(p.output(), /"msg":"stopping"[^\n]*"signal":"SIGTERM"/);
  t.regex(p.output(), /"msg":"drained"/);

  // restart on the same data: every acknowledged write is there
  const again = spawnLogbook({}, p.dataDir);
  t.teardown(() => { void again.kill('SIGKILL'); });
  const base2 = await listening(again);
  const missing: number[] = [];
  for (const id of acked) if ((await request(`${base2}/api/v1/results/${id}`)).status !== 200) missing.push(id);
  t.deepEqual(missing, []);
  const total = await request(`${base2}/api/v1/results?limit=1`);
  t.true(total.body.count >= acked.length);
  t.is((await again.kill('SIGINT')).code, 0);
  p.cleanup();
});

test.serial('SIGINT on an idle server exits 0 promptly', async (t) => {
  const p = spawnLogbook({});
  t.teardown(() => { void p.kill('SIGKILL').then(p.cleanup); });
  await listening(p);
  const t0 = Date.now();
  const { code } = await p.kill('SIGINT');
  t.is(code, 0);
  t.true(Date.now() - t0 < 5000);
  t.regex(p.output(), /"msg":"stopped"[^\n]*"signal":"SIGINT"/);
});
