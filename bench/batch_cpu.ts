// CPU per result of batch ingest (SPEC §13), in one process, without HTTP:
// `node dist/bench/batch_cpu.js [batchSize=1000] [seconds=5] [durability=flush] [orders=none]`.
// `orders`: the list orders the shard keeps up to date while it ingests
// (src/shard/list_orders.ts; built at the first list that asks): `none`;
// `ara`, the ones ARA's CLI and exporter read (results by -started,
// playbooks by -started and running by started, hosts by -updated); `all`,
// every documented order of every type (host counters move with every result).
// The front's part (Ingest.handle: envelope check, message encoding; then the
// shard's reply and the commit's live-stream message as the front takes them,
// with no subscriber) and the shard's part (message decoding, Shard.handle on a
// real LMDB store, reply encoding) run in separate phases and are timed with this thread's own CPU
// clock, so the numbers hold on a machine other processes load (wall-clock
// throughput does not). The store's commits run on lmdb-js's threads; the
// process's total CPU (all threads) is reported beside it.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileWriteValidators } from '../src/api/schemas.js';
import { loadConfig } from '../src/config.js';
import { BodyNormalizer } from '../src/api/validate.js';
import { Directory } from '../src/http/directory.js';
import { Ingest } from '../src/http/ingest.js';
import { LabelCatalogue } from '../src/http/labels.js';
import type { Exchange } from '../src/http/respond.js';
import {
  CommitChanges, decode, decodeAll, encode, postToShard, receivedFromFront, type FrontToShard, type Posted, type ShardToFront,
} from '../src/shard/protocol.js';
import type { ShardPool } from '../src/shard/pool.js';
import { CommitOrder } from '../src/shard/commit_order.js';
import { Shard } from '../src/shard/shard.js';
import { ORDER_KEYS } from '../src/api/resources.js';
import type { ListQuery } from '../src/shard/protocol.js';
import { ShardState } from '../src/shard/state.js';
import { LmdbShardStore } from '../src/store/lmdb_store.js';
import type { Durability } from '../src/shard/storage.js';
import { loopedResultContent } from './lib/payloads.js';

const batchSize = Number(process.argv[2] ?? 1000);
const seconds = Number(process.argv[3] ?? 5);
const durability = (process.argv[4] ?? 'flush') as Durability;
const orders = process.argv[5] ?? 'none';
const STREAMS = 4;

/** This thread's CPU time in µs (Linux: the scheduler's run time of the main thread, in ns). */
function threadCpu(): number {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
}
const processCpu = (): number => { const u = process.cpuUsage(); return u.user + u.system; };
/** CPU time in µs of each of this process's threads, summed by thread name (main, V8 GC helpers, lmdb-js's writer…). */
function threadsCpu(): Map<string, number> {
  const out = new Map<string, number>();
  const tick = 1e6 / 100; // USER_HZ
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const name = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim().replace(/[0-9]+$/, '');
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) * tick);
    } catch { /* the thread ended */ }
  }
  return out;
}

// a server's default redaction (LOGBOOK_IGNORED_FACTS, LOGBOOK_IGNORED_ARGUMENTS): the normalizer looks for facts in every content
const defaults = loadConfig({}, []);
const normalizer = new BodyNormalizer(compileWriteValidators(), { ignoredFacts: defaults.ignoredFacts, ignoredArguments: defaults.ignoredArguments });

// ---- batch bodies, as the `batch` scenario sends them ----
const content = JSON.stringify(loopedResultContent());
const now = new Date().toISOString();
const result = `{"kind":"result","task":"t","host":"web-HOST","status":"ok","changed":false,"started":"${now}","ended":"${now}","content":${content}}`;
const events = Array.from({ length: batchSize }, (_, i) => result.replace('HOST', String(i % 20))).join(',');
const first = (stream: string): string => JSON.stringify({
  playbook: { uuid: stream, path: `/srv/${stream}.yml`, runner_version: '2.16.0', status: 'running' }, seq: 1,
  events: [
    { kind: 'file', path: '/srv/site.yml', content: '- hosts: all\n' },
    { kind: 'play', uuid: '5254000b-5d3f-1b2c-0000-000000000008', name: 'site', status: 'running' },
    { kind: 'task', uuid: 't', play: '5254000b-5d3f-1b2c-0000-000000000008', file: '/srv/site.yml', name: 'packages', action: 'apt', lineno: 4, handler: false },
  ],
});
const body = (stream: string, seq: number): Buffer => Buffer.from(`{"playbook":{"uuid":"${stream}"},"seq":${seq},"events":[${events}]}`);

// ---- the front, with a pool that hands us the message as it would post it ----
let sent: Posted | null = null;
let answer: ((r: ShardToFront) => void) | null = null;
/** what a worker's postMessage would move (the bytes are transferred, not cloned) */
const port = { postMessage(value: unknown): void { sent = value as Posted; } };
const pool = {
  shardOf: () => 0,
  send(_shard: number, message: FrontToShard, handler: (r: ShardToFront, ctx: unknown) => void, ctx: unknown): void {
    postToShard(port, message);
    answer = (r) => handler(r, ctx);
  },
} as unknown as ShardPool;
const dir = new Directory();
const ingest = new Ingest({
  pool: () => pool, dir, labels: new LabelCatalogue(null), normalizer, maxBodyBytes: 64 << 20,
});
let status = 0;
function exchange(): Exchange {
  const res = {
    cork(f: () => void) { f(); return res; }, writeStatus(s: string) { status = parseInt(s, 10); return res; },
    writeHeader() { return res; }, end() { return res; }, endWithoutBody() { return res; },
  };
  return { res, method: 'POST', allow: '', aborted: false, done: false, close: false, extraHeaders: null, cors: null, slot: 0, t0: 0, url: '' } as unknown as Exchange;
}
/** Front: one request → the message as posted to the shard. */
function front(bytes: Buffer): Posted {
  sent = null;
  ingest.handle(exchange(), 'application/json', '', bytes);
  if (sent === null) throw new Error(`the front answered ${status} itself`);
  return sent;
}

// ---- the shard, on a real store ----
const dataDir = mkdtempSync(join(tmpdir(), 'logbook-batch-cpu-'));
const store = new LmdbShardStore(dataDir, 0, durability);
const replies: Array<(r: ShardToFront) => void> = [];
/** the last commit's live-stream message, as the worker posts it */
let changesPosted: Uint8Array | null = null;
const shard = new Shard({
  store, ids: dir.ids, normalizer,
  // as in a server (src/server.ts): every commit with changes takes a stamp of the live stream's commit order
  order: { shard: 0, order: CommitOrder.create(1) },
  // the worker encodes every message it posts; live-stream changes go to the front too
  onReply: (r) => { const bytes = encode(r); if (r.k !== 'changes') replies.shift()!(decode(bytes)); else changesPosted = bytes; },
});
shard.replaceState(new ShardState());
shard.changes.recover();
/** Shard: one encoded message → its (decoded) reply, once durable. */
function onShard(posted: Posted): Promise<ShardToFront> {
  return new Promise((resolve) => {
    const [msg] = receivedFromFront(posted) as [FrontToShard];
    replies.push(resolve);
    const r = shard.handle(msg);
    if (r) { replies.pop(); resolve(decode(encode(r))); }
  });
}

async function roundTrip(bytes: Buffer): Promise<void> {
  const msg = front(bytes);
  const done = answer!;
  const r = await onShard(msg);
  done(r);
  if (status !== 200) throw new Error(`ingest answered ${status}: ${JSON.stringify(r).slice(0, 200)}`);
}

const streams = Array.from({ length: STREAMS }, (_, i) => `cpu-${i}`);
for (const s of streams) await roundTrip(Buffer.from(first(s)));
// each stream's batch 2 once through the shard: its reply and its commit's changes, as posted to the front
const posted: Array<{ reply: Uint8Array; changes: Uint8Array }> = [];
for (const s of streams) {
  changesPosted = null;
  const r = await onShard(front(body(s, 2)));
  if (r.k !== 'ingest' || r.status !== 200 || changesPosted === null) throw new Error('batch 2 was not taken');
  posted.push({ reply: encode(r), changes: changesPosted });
}
const seqs = streams.map(() => 3);

// lists that make the shard keep their orders from now on
const lists: ListQuery[] = [];
const list = (type: ListQuery['type'], key: string, desc: boolean, status?: string): void => {
  lists.push({ type, filters: status ? [{ kind: 'status', column: 'status', value: [status] }] : [], order: [[key, desc]], skip: 0, take: 1 });
};
if (orders === 'ara') { list('result', 'started', true); list('playbook', 'started', true); list('playbook', 'started', false, 'running'); list('host', 'updated', true); }
else if (orders === 'all') {
  for (const [type, keys] of Object.entries(ORDER_KEYS)) if (type !== 'label') for (const key of keys) if (key !== 'id') list(type as ListQuery['type'], key, true);
} else if (orders !== 'none') throw new Error(`orders: none, ara or all, not ${orders}`);
for (const q of lists) shard.handle({ k: 'list', rid: 0, q });

/** The front takes a shard's messages as ShardPool does: the reply to its request, the commit's changes (no subscriber: its last seq). */
function fromShard(bytes: Uint8Array, done: ((r: ShardToFront) => void) | null): number {
  let last = 0;
  for (const msg of decodeAll<ShardToFront>(bytes)) {
    if (msg.k === 'changes') last = CommitChanges.of(msg).last;
    else done!(msg);
  }
  return last;
}

// front phase: the same bodies over and over (the front keeps no per-batch state), each answered
async function frontPhase(ms: number): Promise<{ us: number; n: number }> {
  const bodies = streams.map((s) => body(s, 2));
  const c0 = threadCpu();
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < ms) {
    for (let i = 0; i < bodies.length; i++) {
      front(bodies[i]!);
      fromShard(posted[i]!.reply, answer);
      if (status !== 200 || fromShard(posted[i]!.changes, null) === 0) throw new Error('the front did not take the answer');
      n += batchSize;
    }
  }
  return { us: threadCpu() - c0, n };
}

// shard phase: STREAMS batches in flight, each stream's next once its last is durable
async function shardPhase(ms: number): Promise<{ us: number; n: number; all: number; wall: number; threads: Record<string, number> }> {
  const c0 = threadCpu();
  const p0 = processCpu();
  const th0 = threadsCpu();
  const t0 = performance.now();
  let n = 0;
  let extra = 0; // front work done here to make messages, subtracted
  await Promise.all(streams.map(async (s, i) => {
    while (performance.now() - t0 < ms) {
      const e0 = threadCpu();
      const msg = front(body(s, seqs[i]++));
      extra += threadCpu() - e0;
      const r = await onShard(msg);
      if (r.k !== 'ingest' || r.status !== 200) throw new Error(`batch answered ${JSON.stringify(r).slice(0, 200)}`);
      n += batchSize;
    }
  }));
  const threads: Record<string, number> = {};
  for (const [name, us] of threadsCpu()) {
    const d = us - (th0.get(name) ?? 0);
    if (d > 0) threads[name] = +(d / n).toFixed(2);
  }
  return { us: threadCpu() - c0 - extra, n, all: processCpu() - p0 - extra, wall: performance.now() - t0, threads };
}

await frontPhase(500);
await shardPhase(1000);
const f = await frontPhase(seconds * 1000 / 2);
const s = await shardPhase(seconds * 1000);
console.log(JSON.stringify({
  batchSize, durability, orders,
  frontUsPerResult: +(f.us / f.n).toFixed(2),
  shardUsPerResult: +(s.us / s.n).toFixed(2),
  shardProcessUsPerResult: +(s.all / s.n).toFixed(2),
  shardResultsPerSecond: Math.round(s.n / (s.wall / 1000)),
  // µs per result by thread (the main thread's includes the front work subtracted above)
  threadsUsPerResult: s.threads,
  // disk: pages of the blob tables (contents, packed) per stored result
  blobBytesPerResult: Math.round(store.stats().blobBytes / shard.state.results.size),
}));
await store.close();
rmSync(dataDir, { recursive: true, force: true });
