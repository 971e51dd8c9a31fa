// A large batch is applied a slice of events per event-loop turn
// (src/shard/shard.ts ingest, LIMITS.ingestSliceEvents), so that the commits
// that become durable meanwhile are answered without waiting for the whole
// batch. What a client must not notice: nothing reads or changes the state
// while a batch is half applied (any message, and any flush, finishes it
// first), the batch is still one journal entry answered once it is durable,
// and a storage failure while it is open answers it 503 and stores none of it.
import test from 'ava';
import { parseTimestamp } from '../../src/api/time.js';
import { compileWriteValidators } from '../../src/api/schemas.js';
import { BodyNormalizer } from '../../src/api/validate.js';
import type { BlobKey, BlobValue } from '../../src/shard/blobs.js';
import { MemoryStore } from '../../src/shard/memory_store.js';
import { Shard } from '../../src/shard/shard.js';
import type { IngestCommand, ShardToFront } from '../../src/shard/protocol.js';
import type { Event } from '../../src/shard/state.js';

const T0 = parseTimestamp('2026-01-01T00:00:00Z')!;
const normalizer = new BodyNormalizer(compileWriteValidators(), { ignoredFacts: [], ignoredArguments: [] });

/** A store whose commits settle when the test says (as LMDB's do, later), or fail. */
class Store extends MemoryStore {
  entries: Event[][] = [];
  private settle: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  override write(events: Event[], puts: Array<[BlobKey, BlobValue]>, removes: BlobKey[]): null {
    super.write(events, puts, removes);
    this.entries.push(events);
    return new Promise<void>((resolve, reject) => this.settle.push({ resolve, reject })) as unknown as null;
  }

  /** the oldest unsettled commit becomes durable (or fails) */
  async commit(fail = false): Promise<void> {
    const next = this.settle.shift()!;
    if (fail) next.reject(new Error('disk full (test)')); else next.resolve();
    await new Promise((r) => setImmediate(r));
  }

  get unsettled(): number { return this.settle.length; }

  /** snapshot rounds started (only with snapshots: true); a round flushes the shard's open writes first */
  rounds = 0;
  async snapshotRound(_state: unknown, beforeEach?: () => void): Promise<void> {
    this.rounds++;
    beforeEach?.();
  }
}

function harness(slice: number, options: { snapshotEvery?: number; unscheduled?: boolean } = {}) {
  const store = new Store();
  if (options.snapshotEvery) {
    // a store that snapshots: its journal length counts entries, and it has snapshot rounds
    Object.defineProperty(store, 'journalLength', { get: () => store.entries.length });
    Object.assign(store, { snapshot: store.snapshotRound.bind(store) });
  }
  const replies: ShardToFront[] = [];
  const scheduled: Array<() => void> = [];
  let failures = 0;
  const shard = new Shard({
    store, clock: () => T0, normalizer, batchSlice: slice, snapshotEvery: options.snapshotEvery,
    onReply: (r) => replies.push(r),
    onStorageFailure: () => { failures++; },
    ...(options.unscheduled ? {} : { schedule: (f: () => void) => { scheduled.push(f); } }),
  });
  let rid = 0;
  const send = (msg: Parameters<Shard['handle']>[0]): number => {
    const out = shard.handle(msg);
    if (out) replies.push(out);
    return 'rid' in msg ? msg.rid : 0;
  };
  const ingest = (seq: number, events: unknown[]): number => {
    const cmd: IngestCommand = {
      playbook: 1, uuid: 'stream-1', seq, text: JSON.stringify({ playbook: { uuid: 'stream-1' }, seq, events }), body: null, labels: [], spans: null,
      create: seq === 1 ? { path: '/site.yml', runner_version: '2.16', arguments: '{}', status: 'running', started: T0 } : null,
    };
    return send({ k: 'ingest', rid: ++rid, cmd });
  };
  /** one event-loop turn: what was scheduled runs */
  const turn = (): void => { for (const f of scheduled.splice(0)) f(); };
  const reply = (r: number) => replies.find((x) => 'rid' in x && x.rid === r) as (ShardToFront & { status: number; body: string }) | undefined;
  return { store, shard, replies, ingest, send, turn, reply, next: () => ++rid, failures: () => failures };
}

const results = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ kind: 'result', task: 't', host: `h${i % 3}`, status: 'ok', content: { tag, i } }));

/** a playbook with a play, a task and its file, committed */
async function opened(h: ReturnType<typeof harness>): Promise<void> {
  const r = h.ingest(1, [
    { kind: 'file', path: '/site.yml', content: '- hosts: all\n' },
    { kind: 'play', uuid: 'p', name: 'site', status: 'running' },
    { kind: 'task', uuid: 't', play: 'p', file: '/site.yml', name: 'ping', action: 'ping', lineno: 1, handler: false },
  ]);
  await h.store.commit();
  if (h.reply(r)?.status !== 200) throw new Error(`the first batch was answered ${JSON.stringify(h.reply(r))}`);
}

test('a read that arrives while a batch is half applied sees all of it, after the batch is answered', async (t) => {
  const h = harness(4);
  await opened(h);
  const entries = h.store.entries.length;
  const batch = h.ingest(2, results(10, 'a'));
  t.is(h.reply(batch), undefined, 'ten events, slices of four: not answered in the turn it arrived');
  t.is(h.store.entries.length, entries, 'nothing is stored before the batch is applied whole');
  h.turn(); // a second slice
  const read = h.next();
  h.send({ k: 'get', rid: read, type: 'playbook', id: 1 });
  t.is(h.store.entries.length, entries + 1, 'the read finished the batch first: one journal entry');
  await h.store.commit();
  const order = h.replies.filter((r) => r.k !== 'changes').map((r) => 'rid' in r ? r.rid : 0);
  t.deepEqual(order.slice(-2), [batch, read], 'the batch is answered before the read');
  t.is(JSON.parse(h.reply(batch)!.body).applied, 10);
  t.is(JSON.parse(h.reply(read)!.body).items.results, 10, 'the read saw every result of the batch');
  h.turn();
  t.is(h.store.entries.length, entries + 1, 'the slice still scheduled does nothing');
});

test('a commit that becomes durable while a large batch is applied is answered before the batch ends', async (t) => {
  const h = harness(4);
  await opened(h);
  const first = h.ingest(2, results(3, 'first')); // one slice: applied and staged at once
  t.is(h.store.unsettled, 1);
  const second = h.ingest(3, results(12, 'second'));
  h.turn();
  await h.store.commit(); // the first batch's commit settles while the second is half applied
  t.is(h.reply(first)?.status, 200, 'answered between two slices of the next batch');
  t.is(h.reply(second), undefined);
  t.is(h.store.unsettled, 0, 'the second batch is not staged yet');
  h.turn();
  t.is(h.store.unsettled, 1, 'its last slice staged it, one journal entry');
  await h.store.commit();
  t.is(JSON.parse(h.reply(second)!.body).applied, 12);
});

test('a flush (snapshot, close) finishes the open batch first', async (t) => {
  const h = harness(4);
  await opened(h);
  const batch = h.ingest(2, results(9, 'a'));
  t.is(h.store.unsettled, 0);
  h.shard.flushGroup();
  t.is(h.store.unsettled, 1, 'staged whole before the flush returned');
  await h.store.commit();
  t.is(JSON.parse(h.reply(batch)!.body).applied, 9);
  t.is(h.shard.state.results.size, 9);
});

test('a batch whose journal entry starts a snapshot round is stored once and answered', async (t) => {
  const h = harness(4, { snapshotEvery: 1 });
  await opened(h);
  const rounds = h.store.rounds;
  const entries = h.store.entries.length;
  const batch = h.ingest(2, results(10, 'a'));
  h.turn();
  h.turn();
  t.is(h.store.rounds, rounds + 1, 'its commit started a round (which flushes the shard first)');
  t.is(h.store.entries.length, entries + 1, 'one journal entry');
  await h.store.commit();
  t.is(h.reply(batch)?.status, 200);
  t.is(JSON.parse(h.reply(batch)!.body).applied, 10);
});

test('a shard without a scheduler (driven by hand) applies a batch in one go', async (t) => {
  const h = harness(4, { unscheduled: true });
  await opened(h);
  const batch = h.ingest(2, results(10, 'a'));
  t.is(h.store.unsettled, 1, 'staged in the turn it arrived');
  await h.store.commit();
  t.is(JSON.parse(h.reply(batch)!.body).applied, 10);
  t.is(h.shard.state.results.size, 10);
});

test('a storage failure while a batch is open answers it 503 and stores none of it', async (t) => {
  const h = harness(4);
  await opened(h);
  const first = h.ingest(2, results(2, 'first'));
  const entries = h.store.entries.length;
  const second = h.ingest(3, results(10, 'second'));
  await h.store.commit(true); // the first batch's commit fails while the second is open
  t.is(h.reply(first)?.status, 503);
  t.is(h.reply(second)?.status, 503, 'decided on the state being thrown away: not stored, answered 503');
  t.is(h.failures(), 1, 'one rebuild');
  h.turn();
  h.turn();
  t.is(h.store.entries.length, entries, 'nothing of the open batch reached the store');
  t.is(h.store.unsettled, 0);
});
