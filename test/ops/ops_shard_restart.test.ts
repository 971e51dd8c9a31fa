// A shard worker that dies (uncaught exception, via the LOGBOOK_TEST_HOOKS
// trigger) is restarted with its aggregates recovered from disk; the requests
// it held, and those that arrive while it is down, are answered 503 — none
// hangs; every acknowledged write is there afterwards; the label catalogue is
// back in the new worker; /healthz says which shard is down meanwhile.
import test from 'ava';
import { eventually, listening, post, request, scrape, spawnLogbook } from '../helpers/ops.js';
import { sample } from '../helpers/prom.js';

test('a killed shard worker is restarted, no request hangs, acknowledged writes survive', async (t) => {
  const p = spawnLogbook({ LOGBOOK_TEST_HOOKS: '1' });
  t.teardown(() => { void p.kill('SIGKILL').then(p.cleanup); });
  const base = await listening(p);

  // playbook 1 lives on shard 1 (id mod 2), with a label the new worker must still render
  const pb = await post(base, '/api/v1/playbooks', { path: '/a.yml', runner_version: '2.16', labels: ['prod'] });
  t.is(pb.status, 201);
  const playbook = pb.body.id as number;
  t.is(playbook % 2, 1);
  const play = await post(base, '/api/v1/plays', { playbook, uuid: crypto.randomUUID() });
  const file = await post(base, '/api/v1/files', { playbook, path: '/a.yml', content: 'x' });
  const task = await post(base, '/api/v1/tasks', { playbook, play: play.body.id, file: file.body.id, action: 'ping', lineno: 1, handler: false });
  const host = await post(base, '/api/v1/hosts', { playbook, name: 'h1' });
  const other = await post(base, '/api/v1/playbooks', { path: '/b.yml', runner_version: '2.16' }); // shard 0
  const result = { playbook, play: play.body.id, task: task.body.id, host: host.body.id, status: 'ok' };

  // writers and readers on the doomed shard, and readers on the healthy one
  const acked: number[] = [];
  const statuses = new Map<number, number>();
  let stop = false;
  const count = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
  const writer = async () => {
    while (!stop) {
      const r = await post(base, '/api/v1/results', result, 10_000);
      count(r.status);
      if (r.status === 201) acked.push(r.body.id);
      else if (r.status === 503) t.truthy(r.headers.get('retry-after'));
    }
  };
  const reader = async () => {
    while (!stop) {
      const r = await request(`${base}/api/v1/results?playbook=${playbook}&limit=1`, {}, 10_000);
      count(r.status);
      const healthy = await request(`${base}/api/v1/playbooks/${other.body.id}`, {}, 10_000);
      t.is(healthy.status, 200, 'the other shard keeps serving');
    }
  };
  const load = [...Array.from({ length: 6 }, writer), reader(), reader()];
  await new Promise((r) => setTimeout(r, 300));
  const crash = await post(base, '/__test__/shards/1/crash', {});
  t.deepEqual(crash.body, { crashing: 1 });
  const degraded = await eventually(async () => {
    const h = await request(`${base}/healthz`);
    return h.status === 503 ? h.body : null;
  }, 5000, '/healthz to report the shard down').catch(() => null);
  await p.waitFor(/"msg":"shard restarted"[^\n]*"shard":1/, 20_000);
  await new Promise((r) => setTimeout(r, 300));
  stop = true;
  await Promise.all(load); // every request came back (request() fails after 10 s otherwise)

  t.log(`statuses: ${JSON.stringify([...statuses])}, acknowledged: ${acked.length}`);
  t.deepEqual([...statuses.keys()].filter((s) => s !== 200 && s !== 201 && s !== 503), []);
  t.true((statuses.get(503) ?? 0) > 0, 'requests held by or sent to the dead shard got 503');
  t.true(acked.length > 0);
  if (degraded) t.like(degraded, { status: 'degraded', shards_down: [1] });
  t.regex(p.output(), /"msg":"shard worker exited; restarting it"[^\n]*"shard":1/);

  const health = await request(`${base}/healthz`);
  t.is(health.status, 200);
  t.is(health.body.status, 'ok');
  // every acknowledged write is there (read from the recovered worker)
  for (const id of acked) t.is((await request(`${base}/api/v1/results/${id}`)).status, 200, `result ${id}`);
  const list = await request(`${base}/api/v1/results?playbook=${playbook}&limit=1`);
  t.true(list.body.count >= acked.length);
  const detail = await request(`${base}/api/v1/playbooks/${playbook}`);
  t.deepEqual(detail.body.labels.map((l: { name: string }) => l.name), ['prod'], 'the label catalogue was re-sent');
  t.is(detail.body.items.results, list.body.count);
  // the shard takes new writes, with ids above everything before
  const after = await post(base, '/api/v1/results', result);
  t.is(after.status, 201);
  t.true(after.body.id > Math.max(...acked));

  const m = await scrape(base);
  t.is(sample(m, 'logbook_shard_restarts_total', { shard: '1' }), 1);
  t.is(sample(m, 'logbook_shard_restarts_total', { shard: '0' }), 0);
  t.is(sample(m, 'logbook_shard_up', { shard: '1' }), 1);
  t.is((await p.kill('SIGTERM')).code, 0);
});
