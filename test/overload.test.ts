// Admission by queueing delay (src/shard/pool.ts, LOGBOOK_SHARD_QUEUE_DELAY): with
// a queue length bound far away, a shard whose requests wait longer than the
// delay bound gets new ones refused with 503 + Retry-After; with the delay bound
// off (0) the same burst is all admitted. Refused writes store nothing.
import test from 'ava';
import { api, startLogbook } from './helpers/server.js';

async function burst(env: Record<string, string>) {
  const lb = await startLogbook({ env: { LOGBOOK_SHARDS: '1', LOGBOOK_SHARD_QUEUE: '100000', ...env } });
  try {
    const rs = await Promise.all(Array.from({ length: 600 }, (_, i) =>
      api(lb.url, 'POST', '/api/v1/playbooks', { path: `/load/${i}.yml`, runner_version: '2.16.0' })));
    const list = await api(lb.url, 'GET', '/api/v1/playbooks?limit=1');
    return { rs, stored: list.body.count as number };
  } finally {
    await lb.stop();
  }
}

test('a shard whose requests wait longer than LOGBOOK_SHARD_QUEUE_DELAY sheds new ones with 503 + Retry-After', async (t) => {
  // 1 ms: a durable write alone takes longer (fsync), so once 32 are queued the bound is exceeded
  const { rs, stored } = await burst({ LOGBOOK_SHARD_QUEUE_DELAY: '1' });
  const created = rs.filter((r) => r.status === 201).length;
  const refused = rs.filter((r) => r.status === 503);
  t.log(`600 concurrent writes, delay bound 1 ms: ${created} created, ${refused.length} refused`);
  t.true(rs.every((r) => r.status === 201 || r.status === 503));
  t.true(refused.length > 0, 'the delay bound was reached');
  t.true(created >= 32, 'a short queue is always admitted');
  for (const r of refused) {
    t.is(r.headers.get('retry-after'), '1');
    t.deepEqual(r.body, { detail: 'The server is overloaded; retry shortly.' });
  }
  t.is(stored, created, 'exactly the acknowledged writes exist');
});

test('with the delay bound off (0) the same burst is admitted whole', async (t) => {
  const { rs, stored } = await burst({ LOGBOOK_SHARD_QUEUE_DELAY: '0' });
  t.deepEqual([...new Set(rs.map((r) => r.status))], [201]);
  t.is(stored, 600);
});
