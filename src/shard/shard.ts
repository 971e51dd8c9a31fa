// A shard: one thread's worth of playbook aggregates. It handles one message at a
// time (no locks): decide → apply → journal (with blobs) → reply once durable.
// A large batch is applied over several turns, but nothing else is handled
// until it is whole (ingest, finishBatch).
// Replies leave in order: a read or a refusal that arrives while writes are
// committing waits behind them, so no client ever sees data that could still
// be lost (read-your-durable-writes).
import { TYPE_CODE } from '../api/resources.js';
import { Errors } from '../api/errors.js';
import { nowMicros } from '../api/time.js';
import { jsonTextOf } from '../api/json_bytes.js';
import { blobKey, type BlobKey, type BlobValue } from './blobs.js';
import { MemoryStore } from './memory_store.js';
import type { ShardStore } from './storage.js';
import { decide } from './decide.js';
import { runList } from './list.js';
import { Serializer } from './serialize.js';
import { ShardState, type Event, type Removed } from './state.js';
import {
  encode, type FrontToShard, type IngestCommand, type IngestReply, type LatestHostRow, type LabelChangeCommand, type LabelReply, type MaintainReply,
  type MaintenanceTask, type ShardToFront, type StatsReply, type WriteCommand, type WriteReply,
} from './protocol.js';
import { BatchRunner, RunningBatch, batchDigest, type BatchOutcome } from './ingest.js';
import { IdAllocator, type Ids } from './ids.js';
import type { BodyNormalizer } from '../api/validate.js';
import { Maintenance } from './maintenance.js';
import { ChangeLog, OP_CREATE, OP_DELETE, OP_UPDATE, type StreamChange } from './changes.js';
import type { CommitOrder } from './commit_order.js';
import { errText, log } from '../log.js';
import { getHeapStatistics } from 'node:v8';
import { isAscii } from 'node:buffer';
import { decodeUtf8 } from '../api/utf8.js';
import { LIMITS } from '../limits.js';
import { junitXml } from './junit.js';
import { SearchFeed } from './search_feed.js';
import { Staged, mergeRemoved, takeBlobs, withoutRemoved } from './staged.js';
import { RunCounters, type SeriesOptions } from './run_counters.js';

export interface ShardOptions {
  store?: ShardStore;
  clock?: () => number;
  /** snapshot once this many commands were journaled since the last one */
  snapshotEvery?: number;
  /** replies that had to wait for a commit are delivered here */
  onReply?: (reply: ShardToFront) => void;
  /** a commit failed: the shard must be rebuilt from disk */
  onStorageFailure?: (err: unknown) => void;
  /** id counters shared with the front (absent: private ones, for tests) */
  ids?: Ids;
  /** validates batch-ingest events (absent: no redaction configured) */
  normalizer?: BodyNormalizer;
  /** live stream: changes kept for `since` (default 50,000) */
  streamRetention?: number;
  /** /metrics: which playbook paths get per-series run counters (default: none) */
  runSeries?: SeriesOptions;
  /** live stream: the commit order shared by all shards (absent: commits are not stamped) */
  order?: { shard: number; order: CommitOrder };
  /**
   * Group commit: per-record writes handled before `schedule` runs its callback
   * (the worker passes setImmediate: the messages of one event-loop pass) are
   * staged together and stored as one journal entry, with one set of live-stream
   * changes (derived rows once per group, not once per write). Absent: each
   * write is its own commit (tests that drive a Shard by hand).
   */
  schedule?: (flush: () => void) => void;
  /** events of a batch applied per turn (default LIMITS.ingestSliceEvents) */
  batchSlice?: number;
  /**
   * A batch body the shard owns (the worker: bytes moved to its thread) is
   * given here once its journal entry is handed to the store, which has copied
   * what it keeps of it by then (CommandJournal.write). Absent: left to the GC.
   */
  releaseBody?: (body: Uint8Array) => void;
  /** the search index's feed (docs/search.md; absent: no search index) */
  search?: SearchFeed | null;
}

/** Writes staged in this event-loop pass, committed together; their replies wait in `entry`. */
interface Group { staged: Staged; entry: Waiting; blobs: Map<BlobKey, BlobValue | null> }

/**
 * Replies waiting for a commit. `generation`: how many storage failures the
 * shard had rebuilt from when the commit was issued (a failure of a commit
 * issued before the last rebuild needs no new one). `reads`: the requests of
 * read replies among them (get, list, replay, stats): if the commit fails they
 * are answered again from the state rebuilt from disk instead of 503: a read
 * never needs a write to succeed.
 */
interface Waiting {
  outcome: 'pending' | 'durable' | 'failed'; replies: ShardToFront[]; generation: number; why: string;
  reads: Map<ShardToFront, FrontToShard> | null;
}

export class Shard {
  state = new ShardState();
  /** §2's shapes (and the live stream's rows) */
  private serializer: Serializer;
  /** ARA's dialect, for the requests that ask for it */
  private araSerializer: Serializer;
  readonly store: ShardStore;
  private readonly clock: () => number;
  private readonly snapshotEvery: number;
  private readonly onReply: (reply: ShardToFront) => void;
  private readonly onStorageFailure: (err: unknown) => void;
  /** replies held until the commits before them are durable, oldest first
   * (a queue with a head index: Array#shift is O(n) on long queues) */
  private waiting: Waiting[] = [];
  private waitingHead = 0;
  /** storage failures the state was rebuilt from */
  private generation = 0;
  private readonly maintenance = new Maintenance();
  readonly ids: Ids;
  private readonly normalizer: BodyNormalizer | null;
  /** the live stream's numbered changes (docs/api.md#live-stream) */
  readonly changes: ChangeLog;
  private readonly order: { shard: number; order: CommitOrder } | null;
  private readonly schedule: ((flush: () => void) => void) | null;
  /** the open group commit (options.schedule), null when none */
  private group: Group | null = null;
  private readonly flushGroupNow = (): void => this.flushGroup();
  /** the batch being applied a slice at a time (ingest), null when none */
  private openBatch: { rid: number; running: RunningBatch; staged: Staged; received: Uint8Array | null } | null = null;
  private readonly stepBatchNow = (): void => this.stepBatch();
  /** events of a batch applied per event-loop turn */
  private readonly batchSlice: number;
  private readonly releaseBody: ((body: Uint8Array) => void) | null;
  private readonly search: SearchFeed | null;
  /** what live writes did to runs, for /metrics (recovery counts nothing: run_counters.ts) */
  readonly runCounters: RunCounters;

  constructor(options: ShardOptions) {
    this.store = options.store ?? new MemoryStore();
    this.serializer = new Serializer(this.state, this.blobReader, false);
    this.araSerializer = new Serializer(this.state, this.blobReader, true);
    this.clock = options.clock ?? nowMicros;
    this.snapshotEvery = options.snapshotEvery ?? Infinity;
    this.onReply = options.onReply ?? (() => {});
    this.onStorageFailure = options.onStorageFailure ?? (() => {});
    this.ids = options.ids ?? new IdAllocator();
    this.normalizer = options.normalizer ?? null;
    this.changes = new ChangeLog(this.store.changeLog ?? null, options.streamRetention ?? 50_000);
    this.order = options.order ?? null;
    this.schedule = options.schedule ?? null;
    this.batchSlice = options.batchSlice ?? LIMITS.ingestSliceEvents;
    this.releaseBody = options.releaseBody ?? null;
    this.search = options.search ?? null;
    this.runCounters = new RunCounters(options.runSeries);
  }

  /** Blobs as replies must show them: an open group's values (not yet handed to the store) first. */
  private readonly blobReader = {
    getBlob: (key: BlobKey): string | undefined => {
      const pending = this.group?.blobs.get(key);
      if (pending !== undefined) return pending === null ? undefined : jsonTextOf(pending);
      return this.store.getBlob(key);
    },
  };

  /** Replace the state (recovery); the label replica is kept. */
  replaceState(state: ShardState): void {
    for (const [id, name] of this.state.labels) state.labels.set(id, name);
    this.state = state;
    this.serializer = new Serializer(state, this.blobReader, false);
    this.araSerializer = new Serializer(state, this.blobReader, true);
  }

  /** Handle one message; returns the reply if it can leave now, else it leaves via onReply. */
  handle(msg: FrontToShard): ShardToFront | null {
    // a batch being applied is finished before anything else (reads included) sees the state
    if (this.openBatch !== null) this.finishBatch();
    // writes and reads join the open group; anything else is ordered after it (a
    // label replica change too: the group's rows, taken at its flush, show the names before it)
    if (this.group !== null && msg.k !== 'write' && msg.k !== 'get' && msg.k !== 'list' && msg.k !== 'junit' && msg.k !== 'totals' && msg.k !== 'latest' && msg.k !== 'stats') this.flushGroup();
    switch (msg.k) {
      case 'write': return this.write(msg.rid, msg.cmd, msg.ara === true);
      case 'ingest': return this.ingest(msg.rid, msg.cmd);
      case 'get': {
        const { type, id } = msg;
        const row = this.state.index(type).get(id);
        if (row === undefined) return this.deliver({ k: 'get', rid: msg.rid, status: 404, body: Errors.notFound() }, null, msg);
        const agg = type === 'playbook' ? row : this.state.aggregates.get(row.playbook)!;
        return this.deliver({ k: 'get', rid: msg.rid, status: 200, body: (msg.ara ? this.araSerializer : this.serializer).any(type, agg, row, 'detail') }, null, msg);
      }
      case 'junit': {
        const agg = this.state.aggregates.get(msg.playbook);
        if (agg === undefined) return this.deliver({ k: 'get', rid: msg.rid, status: 404, body: Errors.notFound() }, null, msg);
        const xml = junitXml(agg, (id) => this.blobReader.getBlob(blobKey.content(id)), LIMITS.pageBytes / 2);
        return this.deliver({ k: 'get', rid: msg.rid, status: 200, body: xml }, null, msg);
      }
      case 'totals': {
        const agg = this.state.aggregates.get(msg.playbook);
        if (agg === undefined) return this.deliver({ k: 'get', rid: msg.rid, status: 404, body: Errors.notFound() }, null, msg);
        const t = agg.totals;
        const body = '{"ok":' + t.ok + ',"changed":' + t.changed + ',"failed":' + t.failed + ',"skipped":' + t.skipped
          + ',"unreachable":' + t.unreachable + ',"ignored":' + t.ignored + ',"changed_anything":' + (agg.changedResults > 0) + '}';
        return this.deliver({ k: 'get', rid: msg.rid, status: 200, body }, null, msg);
      }
      case 'list': {
        const { count, rows, beyond } = runList(this.state, msg.ara ? this.araSerializer : this.serializer, msg.q);
        return this.deliver({ k: 'list', rid: msg.rid, count, rows, status: 200, body: null, beyond }, null, msg);
      }
      case 'latest': return this.deliver({ k: 'latest', rid: msg.rid, status: 200, rows: this.latestHosts(msg.name, msg.contains ?? null) }, null, msg);
      case 'labels':
        this.state.labelsChanged(msg.upsert, msg.remove);
        return null;
      case 'label': return this.labelChanges(msg.rid, msg.changes);
      case 'close': return null;
      case 'maintain': return this.maintain(msg.rid, msg.task);
      case 'stats': return this.deliver(this.stats(msg.rid, -1), null, msg);
      case 'replay': {
        // behind every pending commit: the page holds nothing that is not durable when it leaves
        const page = this.changes.replay(msg.from, msg.playbook, msg.limit);
        return this.deliver({ k: 'replay', rid: msg.rid, status: 200, ...page }, null, msg);
      }
      case 'crash': return null;
      case 'stall': return null; // the worker handles it (test hook)
      case 'promote': return null; // the worker handles it (cluster mode)
    }
  }

  /** The newest host row of each name here (of one name, if given), with what latesthosts filters and orders on. */
  private latestHosts(name: string | null, contains: string | null): LatestHostRow[] {
    const { latestHosts, aggregates } = this.state;
    const out: LatestHostRow[] = [];
    const rows = name === null ? latestHosts.all() : [latestHosts.newest(name)];
    for (const h of rows) {
      if (h === undefined || (contains !== null && !h.name.toLowerCase().includes(contains))) continue;
      const pb = aggregates.get(h.playbook)!.playbook;
      out.push([h.name, h.id, h.created, h.updated, h.playbook, h.changed, h.failed, h.ok, h.skipped, h.unreachable, pb.name, pb.path]);
    }
    return out;
  }

  write(rid: number, cmd: WriteCommand, ara = false): ShardToFront | null {
    const now = this.clock();
    const decision = decide(this.state, cmd, now, this.ids);
    const reply: WriteReply = { k: 'write', rid, status: decision.status, body: null, created: null, deleted: null };
    if (!decision.ok) { reply.body = decision.body; return this.deliver(reply, null); }
    const { events } = decision;
    let durable: Promise<void> | null = null;
    let group: Group | null = null;
    if (events.length && this.schedule !== null) {
      group = this.openGroup();
      reply.deleted = this.stage(group.staged, events, group.blobs);
    } else if (events.length) {
      const committed = this.commit(events);
      durable = committed.durable;
      reply.deleted = committed.removed;
    }
    if (cmd.op !== 'delete') {
      if (cmd.op === 'create') reply.created = [TYPE_CODE[decision.type], decision.id];
      if (cmd.minimal) reply.body = '{"id":' + decision.id + '}';
      else {
        const row = this.state.index(decision.type).get(decision.id);
        const agg = decision.type === 'playbook' ? row : this.state.aggregates.get(row.playbook)!;
        reply.body = (ara ? this.araSerializer : this.serializer).any(decision.type, agg, row, 'write');
      }
    }
    if (group !== null) { group.entry.replies.push(reply); return null; }
    return this.deliver(reply, durable);
  }

  /**
   * One batch of one playbook's events (docs/api.md#batch-ingest): decided and applied in one
   * pass, one journal entry. With a scheduler (a worker), a large batch is
   * applied a slice of events per event-loop turn: between slices the thread
   * takes in commits that became durable (their replies leave) instead of
   * holding them until the whole batch is applied. Nothing else reads or
   * changes the state meanwhile: any message, and any flush, finishes the open
   * batch first (finishBatch).
   */
  ingest(rid: number, cmd: IngestCommand): ShardToFront | null {
    if (this.normalizer === null) throw new Error('batch ingest needs a normalizer');
    // the front sent the body's bytes (protocol.ts postToShard): an ASCII body with the
    // front's spans stays bytes, its events are read one by one (api/json_scan.ts asciiEventSpans)
    const received = cmd.body ?? null;
    if (cmd.digest === undefined && !cmd.probe) cmd.digest = batchDigest(cmd.body ?? Buffer.from(cmd.text, 'utf8'));
    if (cmd.body && !(cmd.spans && isAscii(cmd.body))) { cmd.text = decodeUtf8(cmd.body); cmd.body = null; }
    const staged = new Staged();
    const runner = new BatchRunner(this.state, this.normalizer, this.ids, (events) => this.stage(staged, events));
    if (cmd.probe) {
      const settled = runner.position(cmd);
      return this.deliver({
        k: 'ingest', rid, status: settled?.status ?? 0, body: settled?.body ?? '', created: null,
        exists: settled?.exists ?? false, duplicate: settled?.duplicate ?? false,
      }, null);
    }
    const started = runner.start(cmd, this.clock());
    if (!(started instanceof RunningBatch)) return this.ingested(rid, started, staged, received);
    // without a scheduler (a shard driven by hand) a batch is applied in one go
    const schedule = this.schedule;
    if (started.step(schedule === null ? Infinity : this.batchSlice)) return this.ingested(rid, started.finish(), staged, received);
    this.openBatch = { rid, running: started, staged, received };
    schedule!(this.stepBatchNow);
    return null;
  }

  /** The open batch's next slice (scheduled); the last one answers it. */
  private stepBatch(): void {
    const open = this.openBatch;
    if (open === null) return;
    let done: boolean;
    try { done = open.running.step(this.batchSlice); } catch (err) { this.openBatch = null; this.batchBroke(open.rid, err); return; }
    if (done) this.finishBatch(); else this.schedule!(this.stepBatchNow);
  }

  /** Apply what is left of the open batch now and stage its journal entry; its reply leaves as any other. */
  finishBatch(): void {
    const open = this.openBatch;
    if (open === null) return;
    // closed first: staging it may flush (a snapshot round that starts flushes first)
    this.openBatch = null;
    let reply: ShardToFront | null;
    try {
      open.running.step(Infinity);
      reply = this.ingested(open.rid, open.running.finish(), open.staged, open.received);
    } catch (err) { this.batchBroke(open.rid, err); return; }
    if (reply) this.onReply(reply);
  }

  /** A bug while applying a batch a slice at a time: answered 500 (as the worker answers a message that threw), in order. */
  private batchBroke(rid: number, err: unknown): void {
    log.error('shard failed to handle a message', { err: errText(err) });
    const reply = this.deliver({ k: 'error', rid, status: 500, body: Errors.internal() }, null);
    if (reply) this.onReply(reply);
  }

  /** A batch's answer, after its journal entry (if any) is handed to the store; `body`: its bytes, done with then. */
  private ingested(rid: number, outcome: BatchOutcome, staged: Staged, body: Uint8Array | null): ShardToFront | null {
    const reply: IngestReply = {
      k: 'ingest', rid, status: outcome.status, body: outcome.body, created: outcome.created, exists: outcome.exists,
      duplicate: outcome.duplicate,
    };
    const durable = outcome.staged ? this.flush(staged).durable : null;
    if (body !== null && this.releaseBody !== null) this.releaseBody(body);
    return this.deliver(reply, durable);
  }

  /**
   * Apply events and stage them durably: the prefetch/commit split — blobs are
   * taken out of the events, the state is changed by the pure apply, then
   * journal + blobs go to the store together. Returns the ids removed (per
   * type code) and the promise of durability.
   */
  private commit(events: Event[]): { removed: Removed | null; durable: Promise<void> | null } {
    const staged = new Staged();
    this.stage(staged, events);
    return this.flush(staged);
  }

  /**
   * Take the blobs out of events and apply them; they join `staged` for one
   * journal entry. Returns the ids these events removed. `blobs`: an open
   * group's view of the blob values it staged (replies are serialized before
   * the group reaches the store).
   */
  private stage(staged: Staged, events: Event[], blobs?: Map<BlobKey, BlobValue | null>): Removed | null {
    const puts = staged.puts.length;
    const removes = staged.removes.length;
    const files = staged.files.length;
    for (const ev of events) takeBlobs(ev, staged.puts, staged.removes, staged.files);
    if (blobs) {
      for (let i = removes; i < staged.removes.length; i++) blobs.set(staged.removes[i]!, null);
      for (let i = puts; i < staged.puts.length; i++) blobs.set(staged.puts[i]![0], staged.puts[i]![1]);
      for (let i = files; i < staged.files.length; i++) blobs.set(blobKey.file(staged.files[i]![0]), staged.files[i]![1]);
    }
    let mine: Removed | null = null;
    for (const ev of events) {
      staged.changes.before(this.state, ev);
      const status = this.runCounters.before(this.state, ev);
      const r = this.state.apply(ev);
      this.runCounters.after(this.state, ev, status);
      staged.changes.after(ev);
      if (r) mine = mine ? mergeRemoved(mine, r) : r;
      staged.events.push(ev);
    }
    // the group's own list (mergeRemoved appends in place: `mine` may be in a reply already)
    if (mine) staged.removed = mergeRemoved(staged.removed ?? mine.map(() => []), mine);
    return mine;
  }

  /** The open group commit, opened (and its flush scheduled) if none is. */
  private openGroup(): Group {
    if (this.group !== null) return this.group;
    const entry: Waiting = { outcome: 'pending', replies: [], generation: this.generation, why: '', reads: null };
    // queued now, so that replies computed after these writes (reads) wait behind them
    this.waiting.push(entry);
    this.group = { staged: new Staged(), entry, blobs: new Map() };
    this.schedule!(this.flushGroupNow);
    return this.group;
  }

  /** Hand the open group to the store (one journal entry); its replies leave once it is durable. */
  flushGroup(): void {
    if (this.openBatch !== null) this.finishBatch();
    const group = this.group;
    if (group === null) return;
    this.group = null;
    const { entry, staged, blobs } = group;
    // within a group, the last value staged for a key is the one stored (file text: flush() stores it, or removes it if released)
    staged.puts.length = 0;
    staged.removes.length = 0;
    for (const [key, value] of blobs) {
      if (typeof key === 'string') continue;
      if (value === null) staged.removes.push(key); else staged.puts.push([key, value]);
    }
    const replies = entry.replies;
    entry.replies = [];
    // the commit's changes message is queued on the entry first: it leaves before the replies
    const { durable } = this.flush(staged, entry);
    entry.replies.push(...replies);
    if (durable === null) { entry.outcome = 'durable'; this.drain(); return; }
    durable.then(() => { entry.outcome = 'durable'; this.drain(); }, (err) => this.failed(entry, err));
  }

  /** Hand what was staged to the store as one journal entry with its blob changes. */
  private flush(staged: Staged, entry?: Waiting): { removed: Removed | null; durable: Promise<void> | null } {
    const { events, puts, removes, files, removed } = staged;
    for (const [sha1, text] of files) {
      // a text no file has any more (a batch that sent one file twice, or wrote then deleted it) is not stored
      if (!this.state.fileRefs.has(sha1)) continue;
      const key = blobKey.file(sha1);
      if (this.store.getBlob(key) === undefined) puts.push([key, text]);
    }
    for (const sha1 of this.state.releasedFiles) if (!this.state.fileRefs.has(sha1)) removes.push(blobKey.file(sha1));
    this.state.releasedFiles = [];
    const dropped: number[] = [];
    if (removed) {
      for (const id of removed[TYPE_CODE.result]!) removes.push(blobKey.content(id));
      for (const id of removed[TYPE_CODE.host]!) removes.push(blobKey.facts(id));
      for (const id of removed[TYPE_CODE.record]!) removes.push(blobKey.value(id));
      for (const id of removed[TYPE_CODE.playbook]!) { removes.push(blobKey.arguments(id)); dropped.push(id); }
    }
    // a blob of a row deleted after it was written (in one group) is only removed
    const stored = removed && puts.length ? withoutRemoved(puts, removes) : puts;
    const durable = this.store.write(events, stored, removes, dropped);
    // the documents are made now, while the store still reads this commit's blob values from what it was given
    if (this.search !== null) this.search.committed(this.state, events, removed, this.store, this.store.journalSeq ?? 0, durable);
    this.emitChanges(staged, durable, entry);
    if (this.store.journalLength >= this.snapshotEvery) this.snapshotSoon();
    return { removed, durable };
  }

  /**
   * The live stream's message for this commit: numbered and logged in the same
   * turn as the journal entry (one transaction), serialized after store.write
   * (blob reads see the commit's own values), sent once the commit is durable
   * and before the commit's replies.
   */
  private emitChanges(staged: Staged, durable: Promise<void> | null, entry?: Waiting): void {
    if (staged.changes.empty) return;
    this.logChanges(staged.changes.finish(this.state, this.serializer, this.changes.seq), durable, entry);
  }

  /**
   * A commit's changes (numbered from changes.seq + 1), whatever made them:
   * stamped, logged with the commit's journal entry (the same turn as its
   * store.write), and sent once it is durable, before the commit's replies.
   */
  private logChanges(changes: StreamChange[], durable: Promise<void> | null, entry?: Waiting): void {
    if (!changes.length) return;
    // the commit's place in the order of all shards' commits (src/shard/commit_order.ts), logged with it
    const stamp = this.order === null ? 0 : this.order.order.take(this.order.shard);
    if (stamp) for (const c of changes) c[6] = stamp;
    // encoded once: the change log stores these bytes and the front gets them (rows
    // are most of a commit's bytes; the outbox copies a byte field, it does not re-encode it)
    const packed = encode(changes);
    this.changes.append(changes, packed);
    const last = changes[changes.length - 1]![0];
    if (durable === null) this.changes.durableUpTo(last);
    else durable.then(() => this.changes.durableUpTo(last), () => {});
    if (entry) { entry.replies.push({ k: 'changes', packed, stamp, last }); return; } // a group's: it leaves with the group
    const now = this.deliver({ k: 'changes', packed, stamp, last }, durable);
    if (now) this.sendChanges(now);
  }

  /**
   * A commit's changes leave (a failed commit's leave empty). The commit order
   * learns its stamp was sent before the message leaves: a front that then sees
   * it as sent and not yet received waits for the message, which is on its way.
   */
  private sendChanges(reply: ShardToFront): void {
    if (reply.k === 'changes' && reply.stamp && this.order !== null) this.order.order.sent(this.order.shard, reply.stamp);
    this.onReply(reply);
  }

  /**
   * Label changes the front has made durable (src/http/label_changes.ts), as
   * this shard's live-stream messages: the designated shard's own message for
   * each label, then an update for each playbook here that carries it (its list
   * row shows the label's name). Logged in the order they were made, as one
   * commit with a journal entry of no events, however many there are (the
   * front sends every change queued meanwhile together; cluster mode: also the
   * ones a partition read from the label stream, src/shard_worker.ts). The
   * playbook rows show the name the change gave, which in a single process the
   * front's `labels` message, sent right before this one (once the label was
   * durable), has put in the replica. A shard with nothing to log stores nothing.
   * A playbook's row shows the label as the change has it (its name then),
   * whatever the replica holds by now; the replica is left as it is.
   */
  labelChanges(rid: number, list: readonly LabelChangeCommand[]): ShardToFront | null {
    const reply: LabelReply = { k: 'label', rid, status: 200 };
    // writes and reads of the open group, and an open batch, are ordered before these changes
    this.flushGroup();
    const changes: StreamChange[] = [];
    let seq = this.changes.seq;
    let noted = 0;
    // playbooks whose label names changed: their search documents are written again
    const relabelled: Event[] = [];
    for (const c of list) {
      // logged before: the front sends a change again when it could not learn that (a restart)
      if (c.seq > 0 && c.seq <= this.changes.labelSeq) continue;
      // the changes before it are logged (cluster mode: read from the label stream)
      if (c.catchUp) { this.changes.labelSeq = c.seq; continue; }
      if (c.own) changes.push([++seq, c.op, TYPE_CODE.label, c.id, null, c.row]);
      if (c.op !== OP_CREATE) {
        // a new label is on no playbook yet; a rename or delete changes the rows of those it is on
        const renamedTo = c.op === OP_UPDATE && c.row !== null ? (JSON.parse(c.row) as { name: string }).name : null;
        this.state.labelChangeLogged(c.id, renamedTo, c.op === OP_DELETE, (agg) => {
          changes.push([++seq, OP_UPDATE, TYPE_CODE.playbook, agg.playbook.id, agg.playbook.id, this.serializer.playbookStreamRow(agg)]);
          relabelled.push({ e: 'update', t: 'playbook', p: agg.playbook.id, id: agg.playbook.id, d: {} });
        });
      }
      // numbered: this shard has logged every change up to it (kept with its next commit, cluster mode)
      if (c.seq > 0) { this.changes.labelSeq = c.seq; noted = c.seq; }
    }
    if (!changes.length) return this.deliver(reply, null);
    const durable = this.store.write([], [], [], []);
    if (this.search !== null) this.search.committed(this.state, relabelled, null, this.store, this.store.journalSeq ?? 0, durable);
    if (noted > 0) this.changes.noteLabelChange(noted);
    this.logChanges(changes, durable);
    return this.deliver(reply, durable);
  }

  // ---- operations: retention/expiry batches and stats (src/retention.ts, src/metrics.ts) ----

  /** One bounded retention/expiry batch, journaled as one entry; the reply waits for its commit. */
  maintain(rid: number, task: MaintenanceTask): ShardToFront | null {
    const batch = this.maintenance.batch(this.state, task);
    const reply: MaintainReply = { k: 'maintain', rid, status: 200, deleted: null, expired: batch.expired, more: batch.more };
    if (!batch.events.length) return this.deliver(reply, null);
    const { removed, durable } = this.commit(batch.events);
    reply.deleted = removed;
    return this.deliver(reply, durable);
  }

  stats(rid: number, shard: number): StatsReply {
    const s = this.state;
    const store = this.store.stats?.() ?? null;
    return {
      k: 'stats', rid, status: 200, shard,
      records: [0, s.aggregates.size, s.plays.size, s.tasks.size, s.hosts.size, s.results.size, s.files.size, s.records.size],
      journalEntries: this.store.journalLength,
      journalBytes: store?.journalBytes ?? null, snapshotBytes: store?.snapshotBytes ?? null,
      blobBytes: store?.blobBytes ?? null, fileBytes: store?.fileBytes ?? null,
      lastSnapshotAt: store?.lastSnapshotAt ?? null,
      heapUsedBytes: getHeapStatistics().used_heap_size,
      waitingReplies: this.waiting.length - this.waitingHead,
      runs: s.runs.gauges(),
      runCounters: this.runCounters.totals(),
    };
  }

  snapshotSoon(): void {
    if (!this.store.snapshot) return;
    // a snapshot must not capture writes that are not in the journal yet: the open
    // group is stored now, and again before each aggregate the round copies later
    this.flushGroup();
    this.store.snapshot(this.state, this.flushGroupNow).catch((err) => {
      log.error('snapshot failed', { err: errText(err) });
    });
  }

  /** Send now if nothing is waiting for a commit; otherwise queue behind it. */
  private deliver(reply: ShardToFront, durable: Promise<void> | null, read: FrontToShard | null = null): ShardToFront | null {
    if (durable === null) {
      if (this.waitingHead === this.waiting.length) return reply;
      // computed from a state that includes the commits before it: it shares the last one's fate
      // (a read is asked again if that commit fails: Waiting.reads)
      const last = this.waiting[this.waiting.length - 1]!;
      last.replies.push(reply);
      if (read !== null) (last.reads ??= new Map()).set(reply, read);
      return null;
    }
    const entry: Waiting = { outcome: 'pending', replies: [reply], generation: this.generation, why: '', reads: null };
    this.waiting.push(entry);
    durable.then(() => { entry.outcome = 'durable'; this.drain(); }, (err) => this.failed(entry, err));
    return null;
  }

  /**
   * Replies leave in commit order: a durable commit's replies as they are, a
   * failed commit's replies as 503. The store refuses every commit issued after
   * a failed one (each is conditional on the one before), so a 503 here always
   * means "not on disk": retrying is safe for every write. Commits before the
   * failed one are still waited for, never failed with it.
   */
  private drain(): void {
    const q = this.waiting;
    while (this.waitingHead < q.length && q[this.waitingHead]!.outcome !== 'pending') {
      const entry = q[this.waitingHead]!;
      q[this.waitingHead++] = undefined as unknown as Waiting;
      if (entry.outcome === 'durable') for (const reply of entry.replies) this.sendChanges(reply);
      // a failed commit's changes were never durable: never streamed (the rebuild renumbers from disk);
      // its stamp is sent with no changes, so the front stops waiting for it
      else for (const reply of entry.replies) {
        const read = entry.reads?.get(reply);
        if (read !== undefined) {
          // the state is rebuilt from disk by now: the read is answered from it (after the
          // commits still pending, like any read)
          const again = this.handle(read);
          if (again !== null) this.sendChanges(again);
          continue;
        }
        this.sendChanges(reply.k === 'changes' ? { k: 'changes', packed: null, stamp: reply.stamp, last: 0 } : notStored(reply, entry.why));
      }
    }
    if (this.waitingHead === q.length) { this.waiting = []; this.waitingHead = 0; }
    else if (this.waitingHead > 1024 && this.waitingHead * 2 > q.length) { this.waiting = q.slice(this.waitingHead); this.waitingHead = 0; }
  }

  /**
   * A commit did not reach the disk (nor did any issued after it). The state in
   * memory holds its effects, so the first failure since the last rebuild has
   * the state rebuilt from disk (onStorageFailure); later failures of commits
   * issued before that rebuild are the same failure.
   */
  private failed(entry: Waiting, err: unknown): void {
    entry.outcome = 'failed';
    entry.why = err instanceof Error ? err.message : String(err);
    if (entry.generation === this.generation) {
      this.generation++;
      // an open group was decided on the state being thrown away: it is not stored, its replies are 503
      const open = this.group;
      if (open !== null) {
        this.group = null;
        open.entry.outcome = 'failed';
        open.entry.why = entry.why;
      }
      // so was a batch being applied: it is not stored; answered 503 after the commits before it
      const batch = this.openBatch;
      this.openBatch = null;
      this.onStorageFailure(err);
      this.drain();
      if (batch !== null) {
        const reply: IngestReply = { k: 'ingest', rid: batch.rid, status: 0, body: '', created: null, exists: false, duplicate: false };
        this.onReply(notStored(reply, entry.why));
      }
      return;
    }
    this.drain();
  }
}

/** The 503 a reply becomes when the commit it waited for failed. */
function notStored(reply: ShardToFront, why: string): ShardToFront {
  const text = reply.k === 'write' || reply.k === 'maintain'
    ? `The write could not be stored (${why}); nothing was changed. Retry later.`
    : `A write this answer depended on could not be stored (${why}). Retry later.`;
  return { ...reply, status: 503, body: Errors.unavailable(text), created: null, deleted: null } as ShardToFront;
}
