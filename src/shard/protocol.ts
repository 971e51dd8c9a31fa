// The messages that cross the front ↔ shard boundary, and the one msgpackr
// codec both threads use for them. Everything here is plain data: errors travel
// as status + JSON body, never as thrown objects.
import { Packr } from 'msgpackr';
import type { ListQuery, ListRow, NormalizedFilter } from '../api/list_types.js';
import type { NatsAuth } from '../config/cluster.js';
import type { ResourceType } from '../api/resources.js';
import type { FieldErrors } from '../api/validate.js';
import type { StreamChange } from './changes.js';
import { spansWholeBuffer } from './release.js';
import type { RunGauges } from './run_tally.js';
import type { RunCounterTotals, SeriesOptions } from './run_counters.js';

// Defined where the front builds them (api/), carried to the shards here.
export type { FieldErrors, ListQuery, ListRow, NormalizedFilter };

export interface WriteCommand {
  op: 'create' | 'update' | 'delete';
  type: Exclude<ResourceType, 'label'>;
  /** allocated id (create) or target id (update/delete) */
  id: number;
  /** PUT (full update) rather than PATCH */
  put: boolean;
  /** normalized field values by field name (labels already resolved to ids) */
  set: Record<string, unknown>;
  /** stateless field errors found by the front, merged with the shard's own */
  errors: FieldErrors | null;
  /** FK fields whose id exists but lives on another shard (so: another playbook) */
  elsewhere: string[] | null;
  /** `Prefer: return=minimal` */
  minimal: boolean;
}

/** One batch of one playbook's events (docs/api.md#batch-ingest), decided and applied by the shard. */
export interface IngestCommand {
  /** the stream's playbook id (allocated by the front when it knew no playbook for the uuid) */
  playbook: number;
  /** the stream's key (`playbook.uuid`), null when the client named the playbook by id */
  uuid: string | null;
  seq: number;
  /** normalized create fields (labels resolved to ids) when the front knew no playbook for the uuid */
  create: Record<string, unknown> | null;
  /** the batch body's JSON text, as received (after gunzip): the shard parses the events itself */
  text: string;
  /**
   * On the way to the shard, the same text as the body's UTF-8 bytes instead
   * (then `text` is empty): the front posts them beside the message, moved
   * rather than copied or encoded again (postToShard). Shard.ingest decodes them,
   * but for an ASCII body with `spans`, read event by event (BatchRunner).
   */
  body?: Uint8Array | null;
  /** label ids for `playbook` events that set labels, by event index (names resolved by the front) */
  labels: Array<[number, number[]]>;
  /** where the events and their members are in the body, as the front's scan of its bytes found them
   * (api/json_scan.ts, an Int32Array's bytes; only for an ASCII body); null: the shard finds them itself */
  spans?: Uint8Array | null;
  /**
   * the digest of the body's bytes as received (after gunzip), batchDigest in shard/ingest.ts: kept
   * with the stream's `seq` when the batch applies, compared when that `seq` comes again. The shard
   * computes it from `body` (off the front's thread); the front sets it only on a probe, which
   * carries no body.
   */
  digest?: string;
  /**
   * Only ask where the batch stands before its events are read: answered with
   * its refusal (no playbook by that id, an unknown stream, a gap in `seq`) or
   * with the duplicate's answer (its `seq` was applied), or status 0 when it
   * would go on. Nothing is applied either way. The front asks it before it
   * creates labels a batch names (src/http/ingest.ts).
   */
  probe?: boolean;
}

/**
 * A label change the front has made durable (src/http/label_changes.ts), for
 * the live stream: each shard logs it as a commit of its own, so that it has a
 * place in the shards' numbered change logs (a cursor of its own, replayed by
 * `since`, also after a restart).
 */
export interface LabelChangeCommand {
  /**
   * the front's number for the change (front.mdb), increasing; a shard logs a
   * number once (the front sends one again when it could not learn that it was
   * logged). Cluster mode: the change's sequence in the label stream, and a
   * partition logs every change of that stream in order, reading the ones it
   * was not sent from the stream (src/shard_worker.ts). 0: not numbered (no
   * store): logged whenever it comes
   */
  seq: number;
  /**
   * Cluster mode: only "log every change up to `seq`" (op, id, row unused): the
   * partition reads them from the label stream (src/cluster/label_catch_up.ts)
   */
  catchUp?: boolean;
  /** OP_CREATE, OP_UPDATE or OP_DELETE (src/shard/changes.ts) */
  op: number;
  id: number;
  /** the label's list row (null on delete) */
  row: string | null;
  /** the designated shard logs the label's own message; every shard, the updates of its playbooks that carry the label */
  own: boolean;
}

export type FrontToShard =
  /** `ara`: render the reply in ARA's dialect (docs/ara-dialect.md); absent: §2's shapes */
  | { k: 'write'; rid: number; cmd: WriteCommand; ara?: true }
  | { k: 'ingest'; rid: number; cmd: IngestCommand }
  | { k: 'get'; rid: number; type: Exclude<ResourceType, 'label'>; id: number; ara?: true }
  | { k: 'list'; rid: number; q: ListQuery; ara?: true }
  /** a playbook as JUnit XML (answered with a GetReply whose body is the XML) */
  | { k: 'junit'; rid: number; playbook: number }
  /** a run's results by shown status (docs/api.md#run-totals) */
  | { k: 'totals'; rid: number; playbook: number }
  /**
   * ARA's latesthosts: the shard's newest host row of each name (of `name`
   * alone, if given; of the names that contain `contains`, lower-case, if given), as LatestHostRows
   */
  | { k: 'latest'; rid: number; name: string | null; contains?: string }
  | { k: 'labels'; upsert: Array<[number, string]>; remove: number[] }
  /**
   * live stream: log label changes, in the order they were made, as one commit
   * (answered once it is durable, with LabelReply): the front sends every change
   * queued meanwhile together, so a write that created many labels costs one
   * commit of each shard, not one per label (src/http/label_changes.ts)
   */
  | { k: 'label'; rid: number; changes: LabelChangeCommand[] }
  /** finish pending commits, flush, close the store and exit */
  | { k: 'close' }
  // ---- operations (metrics, retention/expiry, test hooks) ----
  | { k: 'stats'; rid: number }
  | { k: 'maintain'; rid: number; task: MaintenanceTask }
  // ---- live stream (docs/api.md#live-stream, src/http/stream.ts) ----
  /** the shard's changes after seq `from` (of one playbook, if given), at most `limit` */
  | { k: 'replay'; rid: number; from: number; playbook: number | null; limit: number }
  /** test hook (LOGBOOK_TEST_HOOKS=1 only): the worker dies of an uncaught exception */
  | { k: 'crash' }
  /** test hook (LOGBOOK_TEST_HOOKS=1 only): the worker's thread is busy for `ms`, as in a long GC pause */
  | { k: 'stall'; ms: number }
  // ---- cluster mode: a standby partition becomes the owner (src/cluster/partition_worker.ts) ----
  | { k: 'promote'; rid: number; epoch: number; fenceSeq: number };

/** One bounded batch of retention and expiry work for a shard (src/retention.ts). */
export interface MaintenanceTask {
  /** delete playbooks (and everything under them) whose `started` is before this, µs; null: retention off */
  deleteStartedBefore: number | null;
  /** mark playbooks still `running` whose `started` is before this expired, µs; null: expiry off */
  expireStartedBefore: number | null;
  /** µs: the `updated` stamp of what expiry changes */
  now: number;
  /** bounds of one batch: playbooks, and rows touched (at least one playbook is always taken) */
  maxPlaybooks: number;
  maxRows: number;
}

export interface MaintainReply {
  k: 'maintain';
  rid: number;
  status: number;
  /** ids removed per type code (cascades included), null when nothing was deleted */
  deleted: number[][] | null;
  /** records marked expired: [playbooks, plays, tasks] */
  expired: [number, number, number];
  /** the batch hit a bound: more work is queued */
  more: boolean;
}

/** What a shard reports for /metrics. */
/** Cluster mode, every second: how far the worker is in its partition's stream (owner: last append; standby: last read). */
export interface PositionMessage { k: 'position'; shard: number; seq: number }

/** A standby was promoted: the records it read between ready and its fence. */
export interface PromotedReply { k: 'promoted'; rid: number; status: number; entries: number; ms: number; results: number }

export interface StatsReply {
  k: 'stats';
  rid: number;
  status: number;
  shard: number;
  /** live records per type code */
  records: number[];
  /** journal entries since the last completed snapshot */
  journalEntries: number;
  /** bytes of pages used by the journal, snapshot and blob tables, and the store file's size (null: in memory) */
  journalBytes: number | null;
  snapshotBytes: number | null;
  blobBytes: number | null;
  fileBytes: number | null;
  /** ms since the epoch of the last completed snapshot (null: none known) */
  lastSnapshotAt: number | null;
  /** the worker's V8 heap */
  heapUsedBytes: number;
  /** replies waiting for a commit */
  waitingReplies: number;
  /** stored runs now (kept exact through recovery) */
  runs: RunGauges;
  /** what this worker's live writes did to runs since it started */
  runCounters: RunCounterTotals;
}

export interface WriteReply {
  k: 'write';
  rid: number;
  status: number;
  body: string | null;
  /** [typeCode, id] of a record that now exists (created, or found by get-or-create) */
  created: [number, number] | null;
  /** ids removed by a delete, per type code (cascades included) */
  deleted: number[][] | null;
}

export interface GetReply { k: 'get'; rid: number; status: number; body: string }

/** A label change is logged (or was already, or the shard had nothing to log for it), and durable. */
export interface LabelReply { k: 'label'; rid: number; status: number }

export interface IngestReply {
  k: 'ingest';
  rid: number;
  status: number;
  body: string;
  /** ids created per type code, null if none */
  created: number[][] | null;
  /** whether the stream's playbook exists after this batch (the front forgets a uuid whose playbook does not) */
  exists: boolean;
  /** the batch's `seq` was applied before: it changed nothing (labels the front created for it are dropped) */
  duplicate: boolean;
}

/** A request that failed as a whole: its shard is down, overloaded, or hit a bug. Any request may get it. */
export interface ErrorReply { k: 'error'; rid: number; status: number; body: string }

export interface ListReply {
  k: 'list'; rid: number; count: number; rows: ListRow[]; status: number; body: string | null;
  /** a keyset page (ListQuery.bound): matches past its boundary */
  beyond?: number;
}

/**
 * A shard's newest host of one name, with what latesthosts filters and orders
 * on: [name, host id, created µs, updated µs, playbook id, changed, failed, ok,
 * skipped, unreachable, playbook name, playbook path].
 */
export type LatestHostRow = [string, number, number, number, number, number, number, number, number, number, string | null, string];
export interface LatestReply { k: 'latest'; rid: number; status: number; rows: LatestHostRow[] }

/** Sent once recovery is complete: what the front needs to rebuild its directory. */
export interface ReadyMessage {
  k: 'ready';
  shard: number;
  /** highest id ever created per type code (deleted ones included) */
  maxIds: number[];
  /** ids of live records per type code */
  ids: number[][];
  recovery: { snapshots: number; journalEntries: number; eventsApplied: number; ms: number; results: number };
  /** batch-ingest streams: [uuid, playbook id] of every playbook with a uuid */
  streams: Array<[string, number]>;
  /** live stream: [last change seq, lowest seq kept] */
  stream: [number, number];
}

/**
 * Shard-initiated (no rid): the changes of one commit, sent once the commit is
 * durable, in commit order (src/shard/changes.ts).
 */
export interface ChangesMessage {
  k: 'changes';
  /**
   * the commit's changes, msgpack-encoded once by the shard (the same bytes go to
   * its change log): null for a failed commit's message (see changesIn)
   */
  packed: Uint8Array | null;
  /** the commit's stamp in the order of all shards' commits (0: not stamped); a failed commit's comes with no changes */
  stamp: number;
  /** the seq of the commit's last change (0: none, as with `packed` null) */
  last: number;
}

/** The changes a ChangesMessage carries. */
export function changesIn(msg: ChangesMessage): StreamChange[] {
  return msg.packed === null ? [] : decode<StreamChange[]>(msg.packed);
}

/**
 * One commit's changes as the front gets them (Shards.onChanges), decoded when
 * first read: with no subscriber the live stream only moves its position to
 * `last`, and decoding a batch's thousand rows cost the front ~0.3 µs a change.
 */
export class CommitChanges {
  private decoded: StreamChange[] | null;

  private constructor(private readonly packed: Uint8Array | null, readonly last: number, decoded: StreamChange[] | null) {
    this.decoded = decoded;
  }

  /** a shard's message (not decoded yet) */
  static of(msg: ChangesMessage): CommitChanges {
    return new CommitChanges(msg.packed, msg.packed === null ? 0 : msg.last, null);
  }

  /** changes at hand (a replay page, cluster mode's published commit) */
  static decoded(changes: StreamChange[]): CommitChanges {
    return new CommitChanges(null, changes.length ? changes[changes.length - 1]![0] : 0, changes);
  }

  get empty(): boolean { return this.last === 0; }

  get list(): StreamChange[] {
    return this.decoded ??= this.packed === null ? [] : decode<StreamChange[]>(this.packed);
  }

  /** msgpack of `list`: the shard's own bytes when it sent them (cluster mode publishes them without decoding) */
  get bytes(): Uint8Array {
    return this.packed ?? encode(this.list);
  }
}

/** A page of a shard's change log (answer to `replay`); it leaves behind every commit staged before it. */
export interface ReplayReply {
  k: 'replay'; rid: number; status: number;
  changes: StreamChange[];
  /** the position this page reaches */
  last: number;
  more: boolean;
  /** `from` is older than what the shard keeps (or ahead of its log) */
  reset: boolean;
}

/** A shard could not start (e.g. its store would not open or recover). */
export interface FailedMessage { k: 'failed'; shard: number; error: string }

export type ShardToFront = WriteReply | GetReply | ListReply | LatestReply | IngestReply | ErrorReply | ReadyMessage | FailedMessage
  | StatsReply | MaintainReply | ChangesMessage | ReplayReply | PromotedReply | PositionMessage | LabelReply;
/** What a request's reply handler receives: its own reply kind, or an ErrorReply. */
export type Reply = Exclude<ShardToFront, ReadyMessage | FailedMessage | ChangesMessage | PositionMessage>;

/** Worker start-up data (workerData). */
export interface ShardInit {
  shard: number;
  shards: number;
  /** null: keep everything in memory (no persistence) */
  dataDir: string | null;
  durability: 'flush' | 'commit' | 'none';
  snapshotEvery: number;
  snapshotIntervalMs: number;
  /** the id counters shared with the front (src/shard/ids.ts) */
  ids: SharedArrayBuffer;
  /** LOGBOOK_IGNORED_FACTS / LOGBOOK_IGNORED_ARGUMENTS: batch ingest validates and redacts in the shard */
  ignoredFacts: readonly string[];
  ignoredArguments: readonly string[];
  /** LOGBOOK_MAP_SIZE: bytes a shard's file may grow to (null: no limit) */
  mapSize?: number | null;
  /** live stream: changes kept per shard for `since` (LOGBOOK_STREAM_RETENTION) */
  streamRetention?: number;
  /** live stream: the commit order shared by all shards (src/shard/commit_order.ts) */
  streamOrder?: SharedArrayBuffer;
  /** cluster mode: the partition this worker owns (its shard number) and the fence it owns it by */
  cluster?: PartitionInit;
  /** LOGBOOK_METRICS_SERIES / LOGBOOK_METRICS_SERIES_MAX: playbook paths with per-series run counters */
  runSeries?: SeriesOptions;
  /** LOGBOOK_LOG_LEVEL, for the worker's own log lines */
  logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
  /** the search worker's port for this shard (a node:worker_threads MessagePort, transferred; absent: no search index) */
  searchPort?: unknown;
}

/** What the node's ownership layer hands a partition's worker (ShardInit.cluster). */
export interface PartitionInit {
  servers: string[];
  /** credentials and TLS, as the node's own connection has them */
  auth: NatsAuth;
  node: string;
  partitions: number;
  replicas: number;
  /** this node's fence on the partition: its epoch and sequence (0, 0 for a standby) */
  epoch: number;
  fenceSeq: number;
  /** tail the stream until promoted, instead of owning the partition now */
  standby?: boolean;
  /** where this node keeps throwaway local blob stores (under the data directory); null: in memory */
  blobDir: string | null;
}

// Plain maps rather than records: the messages are few and small beside the JSON
// text they carry, and independent encoders on two threads must never disagree.
const packr = new Packr({ useRecords: false, moreTypes: false });

/** Encode into a fresh, exactly sized buffer that can be transferred. msgpackr's
 * pack() returns a view of a reused slab; transferring that would detach the slab. */
export function encode(message: unknown): Uint8Array {
  const view = packr.pack(message);
  const copy = new Uint8Array(view.length);
  copy.set(view);
  return copy;
}

export function decode<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}

/**
 * What crosses to a worker in one postMessage: one encoded message or an encoded
 * array of them (an Outbox's turn), or an ingest message with its batch's body
 * bytes beside it.
 */
export type Posted = Uint8Array | [Uint8Array, Uint8Array];

/** What a port needs to be posted to (a Worker, a MessagePort, parentPort). */
export interface PostPort { postMessage(value: unknown, transfer: ArrayBuffer[]): void }

/**
 * At most this many messages to one postMessage: a receiver that got a whole
 * turn's (say 70 requests parsed in 3 ms) would idle until the sender's turn
 * ended, then the sender until the answers came; sixteen keep both busy. 8, 16,
 * 32 and unbounded were tried (1 shard, 128 connections): all within the noise
 * of each other but unbounded, which was slower.
 */
const OUTBOX_MAX = 16;

/**
 * The messages posted to one port in one turn of the event loop leave together,
 * as one encoded array in one postMessage, in the order they were posted. A
 * postMessage and its 'message' event cost both threads ~10 µs of CPU whatever
 * they carry (serialization, a wake-up, an event object), which under load is
 * paid per request twice (request and reply); eight messages to a turn measured
 * ~2 µs each. Nothing waits for a fuller batch: the turn's end (setImmediate,
 * after this pass's I/O callbacks) sends what there is.
 */
export class Outbox<M extends { k: string }> {
  private queued: M[] = [];
  private readonly flushNow = (): void => this.flush();

  constructor(protected readonly port: PostPort) {}

  post(message: M): void {
    const n = this.queued.push(message);
    if (n === 1) setImmediate(this.flushNow);
    else if (n >= OUTBOX_MAX) this.flush();
  }

  /** Post what is queued, now (before an exit, or a message posted around the outbox). */
  flush(): void {
    const queued = this.queued;
    if (queued.length === 0) return;
    this.queued = [];
    const bytes = encode(queued.length === 1 ? queued[0] : queued);
    this.port.postMessage(bytes, [bytes.buffer as ArrayBuffer]);
  }
}

/** The front's outbox to a shard's worker: a batch's body moves beside its own message (postToShard), after what was queued. */
export class ShardOutbox extends Outbox<FrontToShard> {
  override post(message: FrontToShard): void {
    if (message.k === 'ingest' && message.cmd.body) {
      this.flush();
      postToShard(this.port, message);
      return;
    }
    super.post(message);
  }
}

/** The messages of one postMessage from an Outbox (one, or a turn's array). */
export function decodeAll<T>(bytes: Uint8Array): T[] {
  const decoded = decode<T | T[]>(bytes);
  return Array.isArray(decoded) ? decoded : [decoded];
}

/**
 * Post a message to a worker. An ingest batch's body (megabytes) does not go
 * through msgpack: its bytes are transferred beside the message, so the front
 * neither encodes the text again nor copies it (a view of a larger buffer is copied once).
 */
export function postToShard(port: PostPort, message: FrontToShard): void {
  const body = message.k === 'ingest' ? message.cmd.body : null;
  if (!body) {
    const bytes = encode(message);
    port.postMessage(bytes, [bytes.buffer as ArrayBuffer]);
    return;
  }
  const cmd = (message as Extract<FrontToShard, { k: 'ingest' }>).cmd;
  cmd.body = null;
  const bytes = encode(message);
  cmd.body = body;
  // only a buffer the body has to itself may move; a view of a larger one (a Buffer
  // pool slab, a NATS read buffer) is copied: moving it would detach what it is part of
  // (and Buffer#slice is a view, not a copy)
  const moved = spansWholeBuffer(body) ? body : new Uint8Array(body);
  port.postMessage([bytes, moved] satisfies Posted, [bytes.buffer as ArrayBuffer, moved.buffer as ArrayBuffer]);
}

/** The messages a worker receives in one postMessage from postToShard or an Outbox, in order. */
export function receivedFromFront(data: Posted): FrontToShard[] {
  if (!Array.isArray(data)) return decodeAll<FrontToShard>(data);
  const message = decode<FrontToShard>(data[0]);
  if (message.k === 'ingest') message.cmd.body = data[1];
  return [message];
}
