// Admission by queueing delay (src/shard/pool.ts, LOGBOOK_SHARD_QUEUE_DELAY): with
// a queue length bound far away, a shard that is offered more than it answers and
// whose requests wait longer than the delay bound gets new ones refused with 503 +
// Retry-After; with the delay bound off (0) the same flood is all admitted. A
// closed population of writers (each waits for its answer before the next, as the
// stock ARA callback does) is never refused, however long it makes the queue.
// Refused writes store nothing.
import test from 'ava';
import { LoadGenerator } from '../../bench/lib/open_loop.js';
import { createTree, factsResultContent, resultBody } from '../../bench/lib/payloads.js';
import { api, startLogbook } from '../helpers/server.js';

/**
 * Results with ~22 KB of facts (bench/lib/payloads.ts), which cost the server far
 * more than the generator. First 64 writers in a closed loop for a second (each
 * sends its next write once answered): the shard's rate with a queue, its
 * capacity, which a flood is measured by (a fresh shard's is unknown, and then
 * only the length bound sheds). Then open-loop floods (bench/lib/open_loop.ts:
 * writes at a fixed rate whatever the server answers, a new connection when none
 * is free) of 1.5 s, the first at three times what the writers got through, each
 * next one at three times what the last got through, until one is shed (at most
 * `rounds`): a cold server is slower than it is a second later.
 */
async function flood(env: Record<string, string>, rounds: number) {
  const lb = await startLogbook({ env: { LOGBOOK_SHARDS: '1', LOGBOOK_SHARD_QUEUE: '100000', ...env } });
  const tree = await createTree(lb.url);
  const gen = new LoadGenerator({ port: Number(new URL(lb.url).port), path: '/api/v1/results', bodies: [resultBody(tree, factsResultContent())] });
  try {
    const warm = (await gen.closedLoop(64, 1)).map((s) => s.status);
    const floods: Array<{ rate: number; statuses: number[] }> = [];
    let rate = 3 * warm.length;
    do {
      const statuses: number[] = [];
      const { settled } = await gen.openLoop(() => rate, 1.5, (s) => { statuses.push(s.status); });
      await settled;
      floods.push({ rate, statuses });
      rate = Math.min(40_000, 3 * statuses.filter((s) => s === 201).length / 1.5);
    } while (floods.length < rounds && !floods.at(-1)!.statuses.includes(503));
    const list = await api(lb.url, 'GET', '/api/v1/results?limit=1');
    return { warm, floods, statuses: floods.flatMap((f) => f.statuses), stored: (list.body.count as number) - warm.filter((s) => s === 201).length };
  } finally {
    gen.close();
    await lb.stop();
  }
}

test('a shard offered more than it answers, whose requests wait longer than LOGBOOK_SHARD_QUEUE_DELAY, sheds new ones with 503', async (t) => {
  // 1 ms: a durable write alone takes longer (fsync), so once 32 are queued the bound is exceeded
  const { warm, floods, statuses, stored } = await flood({ LOGBOOK_SHARD_QUEUE_DELAY: '1' }, 4);
  const created = statuses.filter((s) => s === 201).length;
  const refused = statuses.filter((s) => s === 503).length;
  // (the warm-up's 22 KB bodies keep a loaded machine's front busy for long
  // enough that a shard stall can look like a flood: not what this test is about)
  t.log(`closed loop: ${warm.filter((s) => s === 201).length} of ${warm.length} writes in 1 s; then 1.5 s at ${floods.map((f) => `${Math.round(f.rate)}/s: ${f.statuses.filter((s) => s === 201).length} created, ${f.statuses.filter((s) => s === 503).length} refused`).join('; ')}`);
  t.deepEqual([...new Set(statuses)].filter((s) => s !== 201 && s !== 503), [], 'writes are created or refused');
  t.true(refused > 0, 'the flood was shed');
  t.true(created >= 32, 'a short queue is always admitted');
  t.is(stored, created, 'exactly the acknowledged writes exist');
});

test('with the delay bound off (0) the same flood is admitted whole', async (t) => {
  const { statuses, stored } = await flood({ LOGBOOK_SHARD_QUEUE_DELAY: '0' }, 1);
  t.deepEqual([...new Set(statuses)], [201]);
  t.is(stored, statuses.length);
});

// serial: alone in this file; the floods above would stall its shard
test.serial('a closed population of writers is not refused for the queue it makes, however long it waits', async (t) => {
  // 1 ms: with 96 writers in flight every request waits far longer, and the
  // previous rule refused 5–83 % of them (fetch or raw-socket clients); but each
  // writer sends its next only once answered, so the shard is offered what it
  // answers, and refusing would only turn writes into failures (the stock ARA
  // callback does not retry a 503). Not zero: a population caught in a long stall
  // of a loaded machine can look like a flood for a moment (ShardPool.oversubscribed;
  // 24 of 13,570 in one run beside other test files, 0 in runs alone).
  const lb = await startLogbook({ env: { LOGBOOK_SHARDS: '1', LOGBOOK_SHARD_QUEUE_DELAY: '1' } });
  // each of the 96 connections sends its next write as soon as the last is answered
  const gen = new LoadGenerator({ port: Number(new URL(lb.url).port), path: '/api/v1/playbooks', bodies: [JSON.stringify({ path: '/fleet.yml', runner_version: '2.16.0' })] });
  try {
    const statuses = (await gen.closedLoop(96, 2.5)).map((s) => s.status);
    const counts = statuses.reduce<Record<number, number>>((m, s) => ({ ...m, [s]: (m[s] ?? 0) + 1 }), {});
    t.log(`96 closed-loop writers for 2.5 s: ${JSON.stringify(counts)}`);
    const created = counts[201] ?? 0, refused = counts[503] ?? 0;
    t.is(created + refused, statuses.length, 'writes are created or refused');
    t.true(refused < 0.02 * statuses.length, `at most a stray 2 % refused (${refused} of ${statuses.length})`);
    const list = await api(lb.url, 'GET', '/api/v1/playbooks?limit=1');
    t.is(list.body.count, created, 'exactly the acknowledged writes exist');
  } finally {
    gen.close();
    await lb.stop();
  }
});

// serial: a stall of the shard is what this test is about; the floods above stall it too
test.serial('a stall of the shard under a light load is not taken for a flood: nothing is refused', async (t) => {
  // Writers first (a queue: the shard's answer rate with one, its capacity), then
  // an open loop at an eighth of what they got through, during which the shard's
  // thread is held for 400 ms, as by a long GC pause (test hook). Its queue then
  // waits far longer than the delay bound, and for two windows nothing is
  // answered while requests keep coming; but arrivals at an eighth of its
  // capacity are no flood, and what piled up drains at once. The rule before
  // refused from such a stall and, since each refusal is an arrival without
  // an answer, kept refusing (bench overload: 1–23 % of the load after a flood
  // refused for 5–15 s).
  const lb = await startLogbook({ env: { LOGBOOK_SHARDS: '1', LOGBOOK_SHARD_QUEUE: '100000', LOGBOOK_TEST_HOOKS: '1' } });
  const tree = await createTree(lb.url);
  const gen = new LoadGenerator({ port: Number(new URL(lb.url).port), path: '/api/v1/results', bodies: [resultBody(tree, factsResultContent())] });
  try {
    const warm = (await gen.closedLoop(64, 1.5)).filter((s) => s.status === 201).length / 1.5;
    const rate = Math.max(100, warm / 8);
    const statuses: number[] = [];
    let stalled: Promise<{ status: number; body: any }> | null = null;
    // the stall comes 1 s into the 3 s of light load (openLoop returns once it has sent them all)
    const stallAt = setTimeout(() => { stalled = api(lb.url, 'POST', '/__test__/shards/0/stall/400'); }, 1000);
    const { settled } = await gen.openLoop(() => rate, 3, (s) => { statuses.push(s.status); });
    await settled;
    clearTimeout(stallAt);
    t.deepEqual((await stalled!)?.body, { stalling: 0 }, 'the shard was stalled');
    const counts = statuses.reduce<Record<number, number>>((m, s) => ({ ...m, [s]: (m[s] ?? 0) + 1 }), {});
    t.log(`writers: ${Math.round(warm)}/s; then 3 s at ${Math.round(rate)}/s (an eighth) with a 400 ms stall: ${JSON.stringify(counts)}`);
    t.deepEqual(Object.keys(counts), ['201'], 'every write of the light load was admitted and stored');
  } finally {
    gen.close();
    await lb.stop();
  }
});
