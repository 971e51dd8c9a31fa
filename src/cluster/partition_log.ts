// The partitioned journal of cluster mode (issue #12, docs/cluster.md, to scale beyond one
// machine): one JetStream stream per partition, appended to only by the partition's
// owner, with every append fenced by `Nats-Expected-Last-Sequence`.
//
// Stream layout, per partition k (0 <= k < P):
//   stream `logbook-p<k>`, file storage, R = LOGBOOK_REPLICAS, limits retention
//   subject `logbook.log.<k>`        init records, claims and commits
//   subject `logbook.log.<k>.fence`  fence records {node, epoch} (fence.ts); a separate
//                                    subject so the newest fence is one `last_by_subj` get
// and one stream `logbook-meta` (subject `logbook.meta`) whose FIRST message records the
// partition count the cluster was created with.
//
// Why these choices, on Debian's nats-server 2.9.10:
// - Only the per-STREAM expected sequence fences safely. `Nats-Expected-Last-Subject-Sequence`
//   (and KV update(), built on it) let two racing writers both win (nats-server #4320), so
//   nothing here uses it, nor KV. Fences and commits share one stream so that one
//   per-stream sequence orders both.
// - An expected last sequence of 0 ("the stream is empty") is the one value whose handling
//   has varied between server versions and modes (some code paths only check values > 0).
//   A clustered 2.9.10 stream honoured it when we tried, but nothing here depends on it:
//   each partition stream starts with an *init* record (published unconditionally; two
//   nodes racing may write two, which readers skip) and every fenced append expects a
//   sequence >= 1. Likewise the meta record is not "create if absent": the stream's first
//   message wins, whoever wrote it.
//
// Messages. Headers say what a message is; the payload is opaque bytes:
//   Logbook-Kind: init | claim | commit | fence   (claim: see fence.ts takeOwnership; readers
//                 treat init and claim records as chain breakers and otherwise skip them)
//   Logbook-Id:   unique id of the commit or fence (node.epoch.writer-nonce.counter);
//                 after an append whose outcome is unknown (timeout, leader lost) the
//                 writer reads the message at expected+1 and compares this id: its own
//                 → the append happened; another → it was fenced; none → it retries.
//   Logbook-Part: i/n (commits)   Logbook-Enc: m (msgpack) | z (msgpack, then deflate-raw)
//
// Commits and the split scheme. A commit is a list of entries, msgpackr-encoded, then
// deflated when that saves >= 10 %. If the encoded commit does not fit the server's
// max_payload (less room for headers) it is cut into n chunks appended as n consecutive
// messages, parts 1/n .. n/n, each one fenced on the sequence of the part before. Only
// part n/n completes the commit, and the writer acknowledges the commit only after part n's
// PubAck. A reader assembles parts of one Logbook-Id in order; anything else arriving
// before the chain is complete (a fence from a new owner, a different commit, a gap)
// discards the incomplete chain, so a commit whose writer was fenced or died mid-chain is
// never applied. Because every part is fenced, a chain can only be interrupted by a
// taker's claim or fence, never interleaved with another writer's parts.
import { deflateRaw, inflateRaw } from 'node:zlib';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Packr } from 'msgpackr';
import { errText, log } from '../log.js';
import { headers, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import {
  DeliverPolicy, DiscardPolicy, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType,
  jetstream, jetstreamManager,
  type JetStreamClient, type JetStreamManager, type StreamConfig,
} from '@nats-io/jetstream';

const deflateRawAsync = promisify(deflateRaw);
const inflateRawAsync = promisify(inflateRaw);

/** records, not shared structures: every message must decode on its own, years later */
const packr = new Packr({ useRecords: false, moreTypes: false });

export const HDR_KIND = 'Logbook-Kind';
export const HDR_ID = 'Logbook-Id';
export const HDR_PART = 'Logbook-Part';
export const HDR_ENC = 'Logbook-Enc';
const EXPECTED_LAST_SEQ = 'Nats-Expected-Last-Sequence';

/** bytes of max_payload left for headers (NATS counts headers in max_payload) */
const HEADER_ROOM = 1024;
/** compress only commits at least this big: below it deflate's framing eats the gain */
const COMPRESS_MIN_BYTES = 256;

export function streamName(k: number): string { return `logbook-p${k}`; }
export function commitSubject(k: number): string { return `logbook.log.${k}`; }
export function fenceSubject(k: number): string { return `logbook.log.${k}.fence`; }
export const META_STREAM = 'logbook-meta';
export const META_SUBJECT = 'logbook.meta';

/** The partition was taken by another owner (its fence, or its append, is at the sequence we expected to write). */
export class FencedError extends Error {
  override name = 'FencedError';
  constructor(readonly partition: number, readonly expectedLastSeq: number, detail: string) {
    super(`partition ${partition}: fenced: ${detail}`);
  }
}

/** The log could not be reached in time; for an append, its outcome is unknown. */
export class LogUnavailableError extends Error {
  override name = 'LogUnavailableError';
}

/** This node's LOGBOOK_PARTITIONS differs from the count the cluster was created with. */
export class PartitionCountMismatchError extends Error {
  override name = 'PartitionCountMismatchError';
  constructor(readonly configured: number, readonly existing: number) {
    super(`LOGBOOK_PARTITIONS=${configured} but this cluster was created with ${existing} partitions; ` +
      `the partition count is fixed at creation (ids and routing depend on it): set LOGBOOK_PARTITIONS=${existing}`);
  }
}

export interface PartitionLogOptions {
  partitions: number;
  replicas: number;
  /**
   * PubAck wait per attempt (ms). Short: when a stream's leader dies, the append sent to it
   * is never answered, and the next attempt can only land once JetStream elected another
   * (4-9 s on nats-server 2.9: its Raft election timeout); a long wait here is added on top
   * of the election (5 s made a NATS server's death cost 10+ s). An attempt that timed out
   * is resolved by reading the log (appendFenced), so a short wait costs a read, not safety.
   */
  ackTimeoutMs?: number;
  /** how long an append keeps retrying through a leader election before giving up (ms) */
  retryForMs?: number;
  /** how long open() waits for JetStream (meta leader election on a fresh cluster) (ms) */
  openTimeoutMs?: number;
  /**
   * stream max_age in ms (0 = keep forever, the default); retention of history, see
   * docs/cluster.md#how-it-works-inside. With a max_age, an idle partition's fence record expires too:
   * fencing stays safe (it rests on sequences, which never go back) but the epoch count
   * restarts, so the ownership layer must then re-fence periodically.
   */
  maxAgeMs?: number;
}

export interface CommitRecord {
  kind: 'commit';
  /** sequence of the commit's last part: the position to resume after */
  seq: number;
  /** sequence of its first part */
  firstSeq: number;
  id: string;
  entries: unknown[];
}
export interface FenceRecord { kind: 'fence'; seq: number; id: string; node: string; epoch: number }
export type LogRecord = CommitRecord | FenceRecord;

export interface ReplayOptions {
  /** keep tailing new records after reaching the current end (standby); stop with `signal` */
  follow?: boolean;
  signal?: AbortSignal;
  /**
   * called with every message's sequence once it is read (records yielded or skipped): how
   * far the reader is; and where a new reader must start to go on from here (seq + 1, or the
   * first part of a commit split over several messages that is not complete yet)
   */
  onPosition?: (seq: number, resumeFrom: number) => void;
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** PubAck wait per append attempt, and the JetStream API's request timeout (see PartitionLogOptions.ackTimeoutMs) */
export const ACK_TIMEOUT_MS = 2_000;
/** most time between two attempts of an append whose outcome is unknown: an election's end is noticed this soon */
const APPEND_RETRY_MAX_MS = 200;

function apiCode(err: unknown): number | undefined {
  return err instanceof JetStreamApiError ? err.code : undefined;
}

export function isWrongLastSequence(err: unknown): boolean {
  const code = apiCode(err);
  return code === JetStreamApiCodes.StreamWrongLastSequence || code === JetStreamApiCodes.StreamWrongLastSequenceUnknown;
}

/** Encoded commit bytes and their encoding tag. */
export async function encodeCommit(entries: readonly unknown[]): Promise<{ enc: 'm' | 'z'; bytes: Uint8Array }> {
  const packed = packr.pack(entries) as Uint8Array;
  if (packed.length >= COMPRESS_MIN_BYTES) {
    const z = await deflateRawAsync(packed, { level: 1 });
    if (z.length <= packed.length * 0.9) return { enc: 'z', bytes: z };
  }
  return { enc: 'm', bytes: packed };
}

export async function decodeCommit(enc: string, bytes: Uint8Array): Promise<unknown[]> {
  const raw = enc === 'z' ? await inflateRawAsync(bytes) : enc === 'm' ? bytes : null;
  if (raw === null) throw new Error(`unknown commit encoding ${JSON.stringify(enc)}`);
  const v: unknown = packr.unpack(raw);
  if (!Array.isArray(v)) throw new Error('commit payload is not a list of entries');
  return v;
}

function concat(chunks: Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

/**
 * Handle on the partition streams through one NATS connection. Appends go through a
 * PartitionWriter (owner only, obtained from fence.ts `takeOwnership`); anybody may replay.
 */
export class PartitionLog {
  readonly js: JetStreamClient;
  readonly ackTimeoutMs: number;
  readonly retryForMs: number;
  /** largest message this log writes: the server's max_payload less room for headers */
  readonly maxChunkBytes: number;
  /** appends whose PubAck did not come (timeout, election), and of those, found in the log afterwards */
  readonly counters = { unknownOutcomes: 0, foundAfterUnknown: 0 };

  private constructor(readonly nc: NatsConnection, readonly jsm: JetStreamManager, readonly options: PartitionLogOptions) {
    this.js = jetstream(nc);
    this.ackTimeoutMs = options.ackTimeoutMs ?? ACK_TIMEOUT_MS;
    this.retryForMs = options.retryForMs ?? 30_000;
    this.maxChunkBytes = Math.max(1024, nc.info!.max_payload - HEADER_ROOM);
  }

  /**
   * Connects the partition log: checks (or, on a new cluster, records) the partition
   * count, and creates any missing partition stream. Idempotent and safe to run on every
   * node at once. Throws PartitionCountMismatchError when the cluster has another count.
   */
  static async open(nc: NatsConnection, options: PartitionLogOptions): Promise<PartitionLog> {
    const deadline = Date.now() + (options.openTimeoutMs ?? 30_000);
    const jsm = await retrying(deadline, () => jetstreamManager(nc, { timeout: options.ackTimeoutMs ?? ACK_TIMEOUT_MS }));
    const log = new PartitionLog(nc, jsm, options);
    await log.ensureMeta(deadline);
    for (let k = 0; k < options.partitions; k++) await log.ensurePartition(k, deadline);
    return log;
  }

  /** A log on streams another PartitionLog.open() already checked (a partition's worker thread). */
  static async attach(nc: NatsConnection, options: PartitionLogOptions): Promise<PartitionLog> {
    const deadline = Date.now() + (options.openTimeoutMs ?? 30_000);
    const jsm = await retrying(deadline, () => jetstreamManager(nc, { timeout: options.ackTimeoutMs ?? ACK_TIMEOUT_MS }));
    return new PartitionLog(nc, jsm, options);
  }

  streamConfig(name: string, subjects: string[]): Partial<StreamConfig> & { name: string } {
    return {
      name,
      subjects,
      storage: StorageType.File,
      num_replicas: this.options.replicas,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      // nanoseconds; the meta record must never expire
      max_age: name === META_STREAM ? 0 : (this.options.maxAgeMs ?? 0) * 1_000_000,
      // no Nats-Msg-Id is used (ambiguity is resolved by reading the log), so keep the window small
      duplicate_window: 1_000_000_000,
    };
  }

  /** creates the stream unless it exists; returns its last sequence */
  async ensureStream(name: string, subjects: string[], deadline: number): Promise<number> {
    return retrying(deadline, async () => {
      try {
        return (await this.jsm.streams.info(name)).state.last_seq;
      } catch (err) {
        if (apiCode(err) !== JetStreamApiCodes.StreamNotFound) throw err;
      }
      try {
        return (await this.jsm.streams.add(this.streamConfig(name, subjects))).state.last_seq;
      } catch (err) {
        // another node created it between our info and add: fine, read it
        return (await this.jsm.streams.info(name)).state.last_seq;
      }
    });
  }

  private async ensureMeta(deadline: number): Promise<void> {
    const last = await this.ensureStream(META_STREAM, [META_SUBJECT], deadline);
    if (last === 0) {
      // Several nodes creating the cluster at once may each write one; the first message wins.
      await retrying(deadline, () => this.js.publish(META_SUBJECT, packr.pack({ partitions: this.options.partitions, createdAt: new Date().toISOString() }), { timeout: this.ackTimeoutMs }));
    }
    const first = await retrying(deadline, async () => {
      const info = await this.jsm.streams.info(META_STREAM);
      const m = await this.jsm.streams.getMessage(META_STREAM, { seq: info.state.first_seq });
      if (m === null) throw new Error('meta record not readable yet');
      return m;
    });
    const meta = packr.unpack(first.data) as { partitions?: unknown };
    if (typeof meta.partitions !== 'number') throw new Error(`${META_STREAM}: first record has no partition count`);
    if (meta.partitions !== this.options.partitions) throw new PartitionCountMismatchError(this.options.partitions, meta.partitions);
  }

  private async ensurePartition(k: number, deadline: number): Promise<void> {
    const last = await this.ensureStream(streamName(k), [commitSubject(k), fenceSubject(k)], deadline);
    if (last === 0) {
      // see the header comment: makes every later fenced append expect a sequence >= 1
      const h = headers();
      h.set(HDR_KIND, 'init');
      await retrying(deadline, () => this.js.publish(commitSubject(k), new Uint8Array(0), { headers: h, timeout: this.ackTimeoutMs }));
    }
  }

  /** the partition's last sequence (what the next fenced append must expect) */
  async lastSequence(k: number): Promise<number> {
    return retrying(Date.now() + this.retryForMs, async () => (await this.jsm.streams.info(streamName(k))).state.last_seq);
  }

  /**
   * Appends a claim record without expectation (fence.ts takeOwnership): it fences the
   * current owner at once, since every append of its expects an older sequence. Returns
   * the claim's sequence. A retry after an unknown outcome may leave two claims; harmless.
   */
  async claim(k: number, node: string): Promise<number> {
    return retrying(Date.now() + this.retryForMs, async () => {
      const h = headers();
      h.set(HDR_KIND, 'claim');
      h.set(HDR_ID, `${node}.claim.${randomBytes(4).toString('hex')}`);
      return (await this.js.publish(commitSubject(k), new Uint8Array(0), { headers: h, timeout: this.ackTimeoutMs })).seq;
    });
  }

  /** the newest fence record of partition k, or null if it never had an owner */
  async lastFence(k: number): Promise<FenceRecord | null> {
    return retrying(Date.now() + this.retryForMs, async () => {
      const m = await this.getMessage(k, { last_by_subj: fenceSubject(k) });
      return m === null ? null : decodeFence(m.seq, m.header, m.data);
    });
  }

  /** the key (messageKey) of the message at `seq`, or null when there is none (yet) */
  async idAt(k: number, seq: number): Promise<string | null> {
    const m = await this.getMessage(k, { seq });
    return m === null ? null : messageKey(m.header);
  }

  private async getMessage(k: number, query: { seq: number } | { last_by_subj: string }) {
    try {
      return await this.jsm.streams.getMessage(streamName(k), query);
    } catch (err) {
      if (apiCode(err) === JetStreamApiCodes.NoMessageFound) return null;
      throw err;
    }
  }

  /**
   * Appends one message expecting the partition's last sequence to be `expected`; returns
   * its sequence (always expected + 1). FencedError when another message holds that place.
   * An attempt whose outcome is unknown (timeout, no leader during an election) is
   * resolved by reading the message at expected + 1 and comparing its key (messageKey of
   * `h`, passed as `id`) with ours, then retried if nothing is there.
   */
  async appendFenced(k: number, subject: string, h: MsgHdrs, data: Uint8Array, expected: number, id: string): Promise<number> {
    if (!(expected >= 1)) throw new Error('fenced appends need an expected sequence >= 1 (see the init record)');
    h.set(EXPECTED_LAST_SEQ, String(expected));
    const deadline = Date.now() + this.retryForMs;
    const t0 = performance.now();
    let lastErr: unknown;
    // an append that waited (a leader election, a reconnect) says how long and why: failover's breakdown
    const slow = (how: string) => {
      const ms = performance.now() - t0;
      if (ms > 1000) log.warn('slow append to the partition log', { partition: k, ms: Math.round(ms), how, unknownOutcomes: this.counters.unknownOutcomes, lastErr: lastErr === undefined ? null : errText(lastErr) });
    };
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) {
        // Outcome of the previous attempt unknown: look before publishing again.
        try {
          const at = await this.idAt(k, expected + 1);
          if (at === id) { this.counters.foundAfterUnknown++; slow('found after an unknown outcome'); return expected + 1; }
          if (at !== null) { slow('fenced'); throw new FencedError(k, expected, `sequence ${expected + 1} holds ${at || 'a foreign message'}`); }
        } catch (err) {
          if (err instanceof FencedError) throw err;
          lastErr = err;
          if (Date.now() > deadline) break;
          await delay(Math.min(APPEND_RETRY_MAX_MS, 50 * 2 ** Math.min(attempt, 5)));
          continue;
        }
      }
      try {
        const ack = await this.js.publish(subject, data, { headers: h, timeout: this.ackTimeoutMs });
        if (ack.seq !== expected + 1) throw new Error(`PubAck at ${ack.seq}, expected ${expected + 1} (stream ${ack.stream})`);
        slow(`acknowledged at attempt ${attempt + 1}`);
        return ack.seq;
      } catch (err) {
        if (isWrongLastSequence(err)) {
          // Somebody wrote at expected+1: maybe our own earlier attempt, else a new owner.
          const at = await retrying(deadline, () => this.idAt(k, expected + 1));
          if (at === id) { if (attempt > 0) this.counters.foundAfterUnknown++; return expected + 1; }
          throw new FencedError(k, expected, `wrong last sequence; ${expected + 1} holds ${at ?? 'nothing (truncated?)'}`);
        }
        lastErr = err;
        this.counters.unknownOutcomes++;
        if (Date.now() > deadline) break;
        await delay(Math.min(APPEND_RETRY_MAX_MS, 50 * 2 ** Math.min(attempt, 5)));
      }
    }
    throw new LogUnavailableError(`partition ${k}: append at ${expected + 1} not confirmed within ${this.retryForMs} ms; outcome unknown: ${String(lastErr)}`, { cause: lastErr });
  }

  /** A writer for partition k, for the owner that wrote the fence at `lastSeq` with `epoch`. */
  writer(k: number, node: string, epoch: number, lastSeq: number, options: WriterOptions = {}): PartitionWriter {
    return new PartitionWriter(this, k, node, epoch, lastSeq, options);
  }

  /**
   * Records of partition k from sequence `fromSeq` on, in order: complete commits and
   * fences (init records and incomplete chains are skipped). Without `follow` it stops at
   * the stream's last sequence as of the call. Start from a commit's `seq + 1`.
   */
  async *replay(k: number, fromSeq = 1, options: ReplayOptions = {}): AsyncGenerator<LogRecord> {
    const name = streamName(k);
    const state = await retrying(Date.now() + this.retryForMs, async () => (await this.jsm.streams.info(name)).state);
    const end = state.last_seq;
    // nothing to read up to `end` (also when retention emptied the stream: the consumer would wait forever)
    if (!options.follow && (fromSeq > end || state.messages === 0)) return;
    const messages = await retrying(Date.now() + this.retryForMs, async () => {
      const consumer = await this.js.consumers.get(name, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Math.max(1, fromSeq) });
      // expires 5 s (default 30): the server's idle heartbeats come every 2.5 s, so a consumer whose
      // server died is noticed and recreated within seconds (a standby's tail, a takeover's replay)
      return consumer.consume({ max_messages: 512, expires: 5000 });
    });
    // what the consumer goes through (lost, recreated, its heartbeats missed): failover's breakdown
    void (async () => {
      for await (const s of messages.status()) {
        // (a pull that expired empty is a 408 'debug' status: routine)
        if (s.type === 'next' || s.type === 'heartbeat' || s.type === 'discard' || (s.type === 'debug' && s.code === 408)) continue;
        log.info('partition stream reader', { partition: k, ...s });
      }
    })().catch(() => {});
    const onAbort = () => { void messages.close(); };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort(); // stopped while the consumer was being made
    let chain: { id: string; n: number; next: number; firstSeq: number; enc: string; chunks: Uint8Array[] } | null = null;
    try {
      for await (const m of messages) {
        const h = m.headers;
        const kind = h?.get(HDR_KIND) ?? '';
        if (kind === 'fence') {
          chain = null; // a new owner: whatever chain was open will never complete
          yield decodeFence(m.seq, h, m.data);
        } else if (kind === 'commit') {
          const id = h!.get(HDR_ID);
          const [i, n] = (h!.get(HDR_PART) || '1/1').split('/').map(Number) as [number, number];
          if (i === 1) chain = { id, n, next: 1, firstSeq: m.seq, enc: h!.get(HDR_ENC), chunks: [] };
          if (chain !== null && chain.id === id && chain.n === n && chain.next === i) {
            chain.chunks.push(m.data);
            chain.next++;
            if (i === n) {
              const c = chain;
              chain = null;
              yield { kind: 'commit', seq: m.seq, firstSeq: c.firstSeq, id, entries: await decodeCommit(c.enc, concat(c.chunks)) };
            }
          } else {
            chain = null; // out of order or a stray part: never complete
          }
        } else {
          chain = null;
        }
        options.onPosition?.(m.seq, chain === null ? m.seq + 1 : chain.firstSeq);
        if (!options.follow && m.seq >= end) break;
        if (options.signal?.aborted) break;
      }
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
      await messages.close();
    }
  }
}

/** What identifies one message: its Logbook-Id, plus the part for commit parts ('' for foreign messages). */
export function messageKey(h: MsgHdrs | undefined): string {
  const id = h?.get(HDR_ID) ?? '';
  const part = h?.get(HDR_PART) ?? '';
  return part === '' ? id : `${id} ${part}`;
}

function decodeFence(seq: number, h: MsgHdrs | undefined, data: Uint8Array): FenceRecord {
  const v = packr.unpack(data) as { node?: unknown; epoch?: unknown };
  if (typeof v.node !== 'string' || typeof v.epoch !== 'number') throw new Error(`fence record at ${seq} is malformed`);
  return { kind: 'fence', seq, id: h?.get(HDR_ID) ?? '', node: v.node, epoch: v.epoch };
}

export function encodeFence(node: string, epoch: number): Uint8Array {
  return packr.pack({ node, epoch, at: new Date().toISOString() }) as Uint8Array;
}

export async function retrying<T>(deadline: number, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof PartitionCountMismatchError || err instanceof FencedError || Date.now() > deadline) throw err;
      await delay(Math.min(250, 50 * 2 ** Math.min(attempt, 5)));
    }
  }
}

export interface WriterOptions {
  /** most entries merged into one commit (bounds one commit's latency and size) */
  maxCommitEntries?: number;
}

export interface AppendResult {
  /** sequence of the commit (its last part) that holds the entry */
  seq: number;
  /** entries in that commit (1 = it went alone) */
  commitEntries: number;
}

interface Pending { entry: unknown; resolve: (r: AppendResult) => void; reject: (e: Error) => void }

/**
 * The owner's appender for one partition, with group commit: entries appended while a
 * commit is in flight wait, then go together as the next commit. A promise resolves only
 * after the PubAck of the commit holding the entry (quorum of NATS servers). After a
 * FencedError the writer is dead (every pending and later append fails with it): the node
 * lost the partition and must drop it. After a LogUnavailableError the outcome of that
 * commit is unknown, the writer is dead too, and the node must take the partition again
 * (fence.ts), replaying from its last known sequence to learn what landed.
 */
export class PartitionWriter {
  private queue: Pending[] = [];
  private flushing = false;
  private dead: Error | null = null;
  private counter = 0;
  private readonly nonce = randomBytes(4).toString('hex');
  private readonly maxCommitEntries: number;
  /** commits and messages written (metrics, tests) */
  commits = 0;
  messages = 0;

  constructor(readonly log: PartitionLog, readonly partition: number, readonly node: string, readonly epoch: number,
    private lastSeq: number, options: WriterOptions) {
    this.maxCommitEntries = options.maxCommitEntries ?? 4096;
  }

  /** the last sequence this owner wrote or saw (its fence, or its last commit part) */
  get lastSequence(): number { return this.lastSeq; }
  get state(): 'open' | 'fenced' | 'failed' {
    return this.dead === null ? 'open' : this.dead instanceof FencedError ? 'fenced' : 'failed';
  }

  append(entry: unknown): Promise<AppendResult> {
    if (this.dead !== null) return Promise.reject(this.dead);
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ entry, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0 && this.dead === null) {
        const batch = this.queue.splice(0, this.maxCommitEntries);
        try {
          const seq = await this.writeCommit(batch.map((p) => p.entry));
          for (const p of batch) p.resolve({ seq, commitEntries: batch.length });
        } catch (err) {
          const e = err instanceof Error ? err : new Error(String(err));
          this.dead = e;
          for (const p of batch) p.reject(e);
        }
      }
      if (this.dead !== null) for (const p of this.queue.splice(0)) p.reject(this.dead);
    } finally {
      this.flushing = false;
    }
  }

  private async writeCommit(entries: unknown[]): Promise<number> {
    const { enc, bytes } = await encodeCommit(entries);
    const id = `${this.node}.${this.epoch}.${this.nonce}.${++this.counter}`;
    const size = this.log.maxChunkBytes;
    const n = Math.max(1, Math.ceil(bytes.length / size));
    const k = this.partition;
    for (let i = 1; i <= n; i++) {
      const h = headers();
      h.set(HDR_KIND, 'commit');
      h.set(HDR_ID, id);
      h.set(HDR_PART, `${i}/${n}`);
      h.set(HDR_ENC, enc);
      const chunk = bytes.subarray((i - 1) * size, i * size);
      this.lastSeq = await this.log.appendFenced(k, commitSubject(k), h, chunk, this.lastSeq, messageKey(h));
      this.messages++;
    }
    this.commits++;
    return this.lastSeq;
  }
}
