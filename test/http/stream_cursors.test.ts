// The live stream's cursors across shards (SPEC §14: "a replayed message
// carries the cursor it had live"): a stream of every playbook, resumed with
// `since` from a cursor in the middle of writes interleaved over all shards,
// replays the very messages the live stream sent after that cursor, in the same
// order and with the same cursors; so does a stream of one playbook (its
// messages only); and after a restart of the server on the same data.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLogbook, type Logbook } from '../helpers/server.js';
import { SERVER_ENV, SHARDS, createTree, createResult, type Tree } from '../helpers/fixtures.js';
import { openSse, openWs, type StreamClient, type StreamMessage } from '../helpers/stream.js';

const isChange = (m: StreamMessage) => m.data.op !== 'hello' && m.data.op !== 'reset';
/** What a client sees of a change: its cursor and what it is about. */
const seen = (ms: StreamMessage[]) => ms.filter(isChange).map((m) => `${m.data.cursor} ${m.data.op} ${m.data.type} ${m.data.id}`);

/** Messages up to and including the create of playbook `marker`. */
function upTo(ms: StreamMessage[], marker: number): StreamMessage[] {
  const i = ms.findIndex((m) => m.data.type === 'playbook' && m.data.op === 'create' && m.data.id === marker);
  return i < 0 ? ms : ms.slice(0, i + 1);
}

async function untilMarker(client: StreamClient, marker: number): Promise<void> {
  await client.waitFor((ms) => ms.some((m) => m.data.type === 'playbook' && m.data.op === 'create' && m.data.id === marker), 60_000);
}

/** Results written concurrently to playbooks on every shard, so that the shards' commits interleave. */
async function interleave(url: string, trees: Tree[], rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.all(trees.map((tree) => createResult(url, tree)));
}

test('a resumed stream (every playbook, one playbook; SSE and WebSocket; after a restart) carries the cursors the live stream had', async (t) => {
  t.timeout(180_000);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-stream-cursors-'));
  let lb: Logbook | null = await startLogbook({ dataDir, env: SERVER_ENV });
  try {
    // at least two playbooks on every shard
    const trees: Tree[] = [];
    const onShard = (shard: number) => trees.filter((tr) => tr.playbook % SHARDS === shard).length;
    while (trees.length < 40 && [...Array(SHARDS).keys()].some((shard) => onShard(shard) < 2)) trees.push(await createTree(lb.url));
    t.true([...Array(SHARDS).keys()].every((shard) => onShard(shard) >= 2));

    const watcher = await openSse(lb.url);
    await watcher.waitFor(1);
    await interleave(lb.url, trees, 4);
    // the cursor to resume from: one in the middle of the interleaved writes
    await watcher.waitFor((ms) => ms.filter(isChange).length >= 20, 60_000);
    const cutIndex = watcher.messages.findIndex((m, i) => i >= 10 && isChange(m));
    const cut = watcher.messages[cutIndex]!.data.cursor as string;
    await interleave(lb.url, trees, 4);
    const marker = (await createTree(lb.url)).playbook;
    await untilMarker(watcher, marker);
    const live = upTo(watcher.messages.slice(cutIndex + 1), marker);
    const shardsMoved = new Set(live.filter(isChange).map((m) => m.data.playbook % SHARDS));
    t.is(shardsMoved.size, SHARDS, 'the live messages after the cursor come from every shard');

    const one = trees[1]!.playbook;
    for (const open of ['sse', 'ws'] as const) {
      const all = open === 'sse' ? await openSse(lb.url, `?since=${cut}`) : await openWs(lb.url, `?since=${cut}`);
      const mine = open === 'sse' ? await openSse(lb.url, `?since=${cut}&playbook=${one}`) : await openWs(lb.url, `?since=${cut}&playbook=${one}`);
      try {
        await untilMarker(all, marker);
        t.deepEqual(seen(upTo(all.messages, marker)), seen(live), `${open}: every playbook, the same messages, order and cursors`);
        await mine.waitFor((ms) => seen(ms).length >= seen(live.filter((m) => m.data.playbook === one)).length, 60_000);
        t.deepEqual(seen(mine.messages), seen(live.filter((m) => m.data.playbook === one)), `${open}: one playbook, its messages with the cursors they had live`);
      } finally { all.close(); mine.close(); }
    }
    watcher.close();
    // the commit order never had to give up waiting for a shard (every commit's stamp reached the front)
    t.false(lb.output().includes('holds back the commit order'), 'no stall of the commit order');

    // after a restart on the same data (the commit order and the logs are on disk)
    t.is(await lb.stop(), 0);
    lb = await startLogbook({ dataDir, env: SERVER_ENV });
    const resumed = await openSse(lb.url, `?since=${cut}`);
    try {
      await untilMarker(resumed, marker);
      t.deepEqual(seen(upTo(resumed.messages, marker)), seen(live), 'after a restart: the same messages, order and cursors');
      // and live messages still follow
      const after = await createTree(lb.url);
      await resumed.waitFor((ms) => ms.some((m) => m.data.type === 'result' && m.data.id === after.result), 60_000);
    } finally { resumed.close(); }
  } finally {
    await lb?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a write acknowledged before a client subscribes is not sent to it, while other shards commit meanwhile', async (t) => {
  t.timeout(180_000);
  const lb = await startLogbook({ env: SERVER_ENV });
  let busy = true;
  try {
    const trees: Tree[] = [];
    const onShard = (shard: number) => trees.filter((tr) => tr.playbook % SHARDS === shard).length;
    while (trees.length < 40 && [...Array(SHARDS).keys()].some((shard) => onShard(shard) < 1)) trees.push(await createTree(lb.url));
    const watched = trees.find((tr) => tr.playbook % SHARDS === 0)!;
    const others = trees.filter((tr) => tr.playbook % SHARDS !== 0);
    // the other shards commit all the time, so commits wait for each other in the commit order
    const load = (async () => { while (busy) await Promise.all(others.map((tr) => createResult(lb.url, tr))); })();
    for (let i = 0; i < 20; i++) {
      const r = await createResult(lb.url, watched);
      const s = await openSse(lb.url, `?playbook=${watched.playbook}&type=result`);
      try {
        await s.waitFor(1);
        const marker = await createResult(lb.url, watched);
        await s.waitFor((ms) => ms.some((m) => m.data.id === marker.id));
        t.deepEqual(s.messages.filter(isChange).map((m) => m.data.id), [marker.id], `round ${i}: the result ${r.id} acknowledged before hello is not sent`);
      } finally { s.close(); }
    }
    busy = false;
    await load;
  } finally {
    busy = false;
    await lb.stop();
  }
});
