// Group commit in a shard (src/shard/shard.ts, ShardOptions.schedule): the
// per-record writes of one event-loop pass are one journal entry. What a client
// must not notice: every reply leaves only once the group is durable, in
// arrival order, after the group's live-stream changes; a reply shows the
// values its own write stored (blobs included) though the group is not stored
// yet; a row written and deleted in one group leaves no blob; a storage failure
// answers the whole group 503 and stores none of it.
import test from 'ava';
import { parseTimestamp } from '../../src/api/time.js';
import { blobKey, type BlobKey, type BlobValue } from '../../src/shard/blobs.js';
import { MemoryStore } from '../../src/shard/memory_store.js';
import { Shard } from '../../src/shard/shard.js';
import { changesIn, type ShardToFront, type WriteCommand } from '../../src/shard/protocol.js';
import type { Event } from '../../src/shard/state.js';

const T0 = parseTimestamp('2026-01-01T00:00:00Z')!;

/** A store that counts journal entries and can be told to fail the next write (as LMDB rejects a commit). */
class Store extends MemoryStore {
  entries: Event[][] = [];
  failNext = false;
  override write(events: Event[], puts: Array<[BlobKey, BlobValue]>, removes: BlobKey[]): null {
    if (this.failNext) { this.failNext = false; return Promise.reject(new Error('disk full (test)')) as unknown as null; }
    this.entries.push(events);
    return super.write(events, puts, removes);
  }
}

function harness() {
  const store = new Store();
  const replies: ShardToFront[] = [];
  let pending: (() => void) | null = null;
  let failures = 0;
  const shard = new Shard({
    store, clock: () => T0,
    onReply: (r) => replies.push(r),
    onStorageFailure: () => { failures++; },
    schedule: (flush) => { pending = flush; },
  });
  let rid = 0;
  const write = (cmd: Partial<WriteCommand> & Pick<WriteCommand, 'op' | 'type'>): number => {
    const r = ++rid;
    const out = shard.handle({ k: 'write', rid: r, cmd: { id: 0, put: false, set: {}, errors: null, elsewhere: null, minimal: false, ...cmd } });
    if (out) replies.push(out);
    return r;
  };
  /** end of the event-loop pass: the scheduled flush runs (then `next`, in the same turn), then the store's promises settle */
  const pass = async (next?: () => void): Promise<void> => { const f = pending; pending = null; f?.(); next?.(); await new Promise((r) => setImmediate(r)); };
  const reply = (r: number) => replies.find((x) => 'rid' in x && x.rid === r) as (ShardToFront & { status: number; body: string | null; created?: [number, number] | null }) | undefined;
  return { store, shard, replies, write, pass, reply, failures: () => failures };
}

async function scaffold(h: ReturnType<typeof harness>): Promise<{ pb: number; play: number; task: number; host: number; file: number }> {
  const id = (r: number) => h.reply(r)!.created![1];
  const pbR = h.write({ op: 'create', type: 'playbook', id: 1, set: { path: '/site.yml', runner_version: '2.16', arguments: '{}', status: 'running', started: T0 } });
  const pb = 1;
  const playR = h.write({ op: 'create', type: 'play', set: { playbook: pb, uuid: '5e0c9a5e-0000-4000-8000-000000000001', name: 'play', started: T0 } });
  const fileR = h.write({ op: 'create', type: 'file', set: { playbook: pb, path: '/site.yml', content: '- hosts: all\n' } });
  await h.pass();
  const [play, file] = [id(playR), id(fileR)];
  const taskR = h.write({ op: 'create', type: 'task', set: { playbook: pb, play, file, action: 'ping', lineno: 1, handler: false, started: T0 } });
  const hostR = h.write({ op: 'create', type: 'host', set: { playbook: pb, name: 'web1' } });
  await h.pass();
  if (h.reply(pbR)!.status !== 201) throw new Error('scaffold failed');
  return { pb, play, task: id(taskR), host: id(hostR), file };
}

test('the writes of one pass are one journal entry; replies wait for it, in order, after its changes', async (t) => {
  const h = harness();
  const s = await scaffold(h);
  const entries = h.store.entries.length;
  const before = h.replies.length;
  const writes = [1, 2, 3].map((n) => h.write({
    op: 'create', type: 'result', set: { playbook: s.pb, play: s.play, task: s.task, host: s.host, status: 'ok', content: `{"n":${n}}`, started: T0 },
  }));
  const read = h.shard.handle({ k: 'get', rid: 1000, type: 'task', id: s.task });
  t.is(read, null, 'a read behind pending writes waits for them');
  t.is(h.replies.length, before, 'nothing leaves before the group is stored');
  await h.pass();
  t.is(h.store.entries.length, entries + 1, 'three writes, one journal entry');
  const out = h.replies.slice(before);
  t.deepEqual(out.map((r) => r.k), ['changes', 'write', 'write', 'write', 'get'], 'the group\'s changes first, then the replies in arrival order');
  const changes = changesIn(out[0] as Extract<ShardToFront, { k: 'changes' }>);
  // three result creates, then one update each of the task, play, host and playbook whose counters moved
  t.is(changes.filter((c) => c[2] === 5).length, 3);
  t.is(changes.length, 3 + 4, 'derived rows once per group, not once per write');
  for (const [i, r] of writes.entries()) {
    const body = JSON.parse(h.reply(r)!.body!);
    t.deepEqual(body.content, { n: i + 1 }, 'the reply shows its own content though the group was not stored when it was serialized');
  }
  t.is(JSON.parse((out[4] as { body: string }).body).items.results, 3, 'the read saw every write before it');
});

test('a row written and deleted in one pass leaves no blob; a value set twice keeps the last', async (t) => {
  const h = harness();
  const s = await scaffold(h);
  const created = h.write({ op: 'create', type: 'result', set: { playbook: s.pb, play: s.play, task: s.task, host: s.host, status: 'ok', content: '{"gone":true}', started: T0 } });
  await h.pass();
  const gone = h.reply(created)!.created![1];
  const kept = h.write({ op: 'create', type: 'result', set: { playbook: s.pb, play: s.play, task: s.task, host: s.host, status: 'ok', content: '{"v":1}', started: T0 } });
  await h.pass();
  const keptId = h.reply(kept)!.created![1];
  // one pass: a new result and its deletion; a content reset to the default then set again; a file added and deleted
  const fresh = h.write({ op: 'create', type: 'result', set: { playbook: s.pb, play: s.play, task: s.task, host: s.host, status: 'ok', content: '{"brief":true}', started: T0 } });
  h.write({ op: 'delete', type: 'result', id: gone });
  h.write({ op: 'update', type: 'result', id: keptId, set: { content: '{}' } });
  h.write({ op: 'update', type: 'result', id: keptId, set: { content: '{"v":2}' } });
  const file = h.write({ op: 'create', type: 'file', set: { playbook: s.pb, path: '/other.yml', content: 'only briefly\n' } });
  await h.pass();
  const freshId = h.reply(fresh)!.created![1];
  const fileId = h.reply(file)!.created![1];
  const delResult = h.write({ op: 'delete', type: 'result', id: freshId });
  const delFile = h.write({ op: 'delete', type: 'file', id: fileId });
  await h.pass();
  const deleted = (r: number) => (h.reply(r) as unknown as { deleted: number[][] }).deleted;
  t.deepEqual(deleted(delResult)[5], [freshId], 'each delete reports its own ids, not the group\'s');
  t.deepEqual(deleted(delFile)[5], []);
  t.deepEqual(deleted(delFile)[6], [fileId]);
  t.false(h.store.blobs.has(blobKey.content(gone)), 'deleted: its content is gone');
  t.false(h.store.blobs.has(blobKey.content(freshId)), 'created and deleted in one group: no blob left');
  t.is(h.store.blobs.get(blobKey.content(keptId)), '{"v":2}', 'the last value of the pass');
  t.false([...h.store.blobs.keys()].some((k) => typeof k === 'string' && h.store.blobs.get(k) === 'only briefly\n'), 'no orphan file text');
  // and the same pass again, in one group: created, then deleted before the group is stored
  const once = h.write({ op: 'create', type: 'result', set: { playbook: s.pb, play: s.play, task: s.task, host: s.host, status: 'ok', content: '{"one":1}', started: T0 } });
  const onceFile = h.write({ op: 'create', type: 'file', set: { playbook: s.pb, path: '/third.yml', content: 'third\n' } });
  // their ids, from the state (the replies wait for the group)
  const onceId = Math.max(...h.shard.state.results.keys());
  const onceFileId = Math.max(...h.shard.state.files.keys());
  h.write({ op: 'delete', type: 'result', id: onceId });
  h.write({ op: 'delete', type: 'file', id: onceFileId });
  await h.pass();
  t.is(h.reply(once)!.status, 201);
  t.is(h.reply(onceFile)!.status, 201);
  t.false(h.store.blobs.has(blobKey.content(onceId)), 'created and deleted within one group: no content blob');
  t.false([...h.store.blobs.values()].includes('third\n'), 'created and deleted within one group: no file text');
});

test('a failed group commit answers every write of the group 503 and the shard is rebuilt once', async (t) => {
  const h = harness();
  const s = await scaffold(h);
  const before = h.replies.length;
  h.store.failNext = true;
  const writes = [1, 2].map((n) => h.write({
    op: 'create', type: 'result', set: { playbook: s.pb, play: s.play, task: s.task, host: s.host, status: 'ok', content: `{"n":${n}}`, started: T0 },
  }));
  const entries = h.store.entries.length;
  // a write of the next group, staged before the failure is known: decided on the state being thrown away
  let late = 0;
  await h.pass(() => {
    late = h.write({ op: 'create', type: 'result', set: { playbook: s.pb, play: s.play, task: s.task, host: s.host, status: 'ok', content: '{"late":1}', started: T0 } });
  });
  await new Promise((r) => setImmediate(r));
  t.deepEqual(writes.map((r) => h.reply(r)?.status), [503, 503]);
  t.is(h.reply(late)?.status, 503, 'the group open when the failure was known is not stored either');
  await h.pass();
  t.is(h.store.entries.length, entries, 'nothing of either group was stored');
  t.false([...h.store.blobs.values()].includes('{"late":1}'));
  t.is(h.failures(), 1, 'one rebuild');
  t.is(h.replies.slice(before).filter((r) => r.k === 'changes' && changesIn(r).length > 0).length, 0, 'nothing of it is streamed');
});
