// A shard's persistence: one LMDB environment per shard (its own write lock, so
// shards commit in parallel) holding
//   journal    seq → events of one command        (append-only, trimmed after snapshots)
//   snapshots  playbook id → aggregate snapshot    (key 0: shard meta)
//   snapshot_parts  [playbook id, seq, k] → part k of that snapshot's results (large playbooks)
//   blobs      key → large JSON text               (LZ4-compressed when it pays)
//   content_chunks  [playbook, first, last] → contents of results a batch created, packed (content_chunks.ts)
//   head       one record whose version is the seq of the last stored command
// Every command's journal entry and blob changes are issued in one event turn, so
// lmdb-js puts them in one transaction; the shard replies only once that
// transaction is durable (group commit: commands arriving meanwhile join the next).
//
// Failures. A command is decided on the state every earlier command left, so it
// may only land if all of them did. lmdb-js runs later transactions after a
// failed one (a disk or file-size limit hit by one batch need not stop the
// next), so every command's writes are conditional on the head record holding
// the seq of the command before it (`ifVersion`): after a failed command, every
// command issued behind it is refused by LMDB too, and a refused command left
// nothing on disk. Snapshots are conditional on the head the same way, so a
// snapshot never captures the effect of a command that failed.
import { asBinary, open, type Database, type RootDatabase } from 'lmdb';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Event, ShardState } from '../shard/state.js';
import { jsonTextOf } from '../api/json_bytes.js';
import { BLOB_DEFAULT, blobKey, contentResultId, type BlobKey, type BlobValue } from '../shard/blobs.js';
import { CHUNK_ALONE_BYTES, CHUNK_MIN_CONTENTS, ContentChunks, type ChunkKey, type PackableContent } from './content_chunks.js';
import { log } from '../log.js';
import { closeEnv } from './lmdb_close.js';
import { LmdbChangeLog } from './lmdb_change_log.js';
import { failureCause, flushedOf } from './lmdb_commit.js';
import { encodeJournalEntry } from './msgpack_writer.js';
import { PendingValues } from './pending_values.js';
import { recoverShard } from './recovery.js';
import { encodeAggregate, joinResults, keptParts, partSeqOf, resultPartsOf, splitResults, type AggregateSnapshot, type PartRef, type ShardMeta } from './snapshot_format.js';
import { LIMITS } from '../limits.js';
import { StorageError, type DurableShardStore, type Durability, type RecoveryStats, type StoreStats } from '../shard/storage.js';

/** Test hook: refuse a write the way a failed LMDB transaction does (none of its writes land). */
export interface StoreFaults {
  fail(what: 'journal' | 'snapshot' | 'trim'): boolean;
}

export interface LmdbStoreOptions {
  /**
   * Bytes the shard's file may grow to (LOGBOOK_MAP_SIZE); null: no limit.
   * lmdb-js grows an LMDB map on demand, so this is enforced by logbook: see full().
   */
  mapSize?: number | null;
  faults?: StoreFaults | null;
  /**
   * test hook: yield after every snapshot slice, for this long (0: one setImmediate,
   * as under load; more widens the window a crash test aims at). Null or absent:
   * yield only once a slice has run 8 ms.
   */
  snapshotSliceDelayMs?: number | null;
  /** results per stored snapshot part (default LIMITS.snapshotPartRows; tests use a few to exercise parts) */
  snapshotPartRows?: number;
  /** test hook: told after each snapshot put and each trim is issued (a crash test kills the process there) */
  step?: ((phase: 'snapshot' | 'trim', count: number) => void) | null;
  /**
   * Called once if a commit has been pending for `stallMs` (default 30 s).
   * lmdb-js can lose a failed transaction (e.g. a page spill that cannot be
   * written, EIO): its promises then never settle, so the shard's replies, which
   * leave in commit order, would hang behind it. The worker exits and is
   * restarted on a fresh environment.
   */
  onStall?: ((pendingCommits: number, ms: number) => void) | null;
  stallMs?: number;
}

const META_KEY = 0;
/** head table: the record whose version is the seq of the last stored command (lmdb_change_log.ts keeps its own record there too) */
const HEAD_KEY = 'head';

export class LmdbShardStore implements DurableShardStore {
  private readonly env: RootDatabase;
  private readonly journal: Database<Event[], number>;
  private readonly snapshots: Database<AggregateSnapshot | ShardMeta, number>;
  /** results of large playbooks' snapshots, in parts written one at a time (snapshot_format.ts splitResults) */
  private readonly snapshotParts: Database<unknown[][], [number, number, number]>;
  /**
   * the result parts each playbook's last copied snapshot consists of (the next
   * round keeps those whose rows did not change); absent: write them all
   */
  private readonly layouts = new Map<number, PartRef[]>();
  /** playbooks whose stored parts may have no snapshot referring to them any more (cleaned after a round) */
  private readonly partsToClean = new Set<number>();
  private readonly blobs: Database<string, BlobKey>;
  /** the same table, for writes: compresses with a short dictionary (see blobWriteDictionary) */
  private readonly blobWriter: Database<string, BlobKey>;
  /** result contents of batches, packed (content_chunks.ts) */
  private readonly chunkTable: Database<Buffer, ChunkKey>;
  private readonly chunks: ContentChunks;
  /** the live stream's numbered changes, the last N, in this environment's `changes` table (lmdb_change_log.ts) */
  readonly changeLog: LmdbChangeLog;
  private readonly heads: Database<null, string>;
  /** seq of the last command issued (never reused, also after a failure) */
  private seq = 0;
  /** the head version the next command requires: the seq of the last command issued, or, after a
   * failure, of the last one stored; null: no head record yet (new or older data directory) */
  private head: number | null = null;
  /** bumped by recover(): a snapshot round of an older state must not store anything more */
  private generation = 0;
  /** blob values of the commands issued and not yet settled, one map per command: reads must see them (null = removed) */
  private readonly overlay = new PendingValues<BlobKey, BlobValue | null>();
  private sinceSnapshot = 0;
  private snapshotting = false;
  /** settles when the snapshot round in progress ends (close() lets it finish) */
  private roundEnded: Promise<void> = Promise.resolve();
  private readonly path: string;
  private lastSnapshotAt: number | null = null;
  private readonly mapSize: number | null;
  private readonly faults: StoreFaults | null;
  private readonly sliceDelayMs: number | null;
  private readonly partRows: number;
  private readonly step: ((phase: 'snapshot' | 'trim', count: number) => void) | null;
  private stepCounts = { snapshot: 0, trim: 0 };
  /** writes issued and not yet durable or failed → when each was issued, oldest first (stall watchdog) */
  private readonly pendingSince = new Map<number, number>();
  private commitsIssued = 0;
  private stallTimer: NodeJS.Timeout | null = null;
  /** the last write issued to LMDB (injected failures are reported after it) */
  private lastIssued: Promise<unknown> = Promise.resolve();
  private fullCheckedAt = 0;
  private fullNow = false;

  constructor(dataDir: string, shard: number, private readonly durability: Durability, options: LmdbStoreOptions = {}) {
    this.path = join(dataDir, `shard-${shard}.mdb`);
    this.mapSize = options.mapSize ?? null;
    this.faults = options.faults ?? null;
    this.sliceDelayMs = options.snapshotSliceDelayMs ?? null;
    this.partRows = options.snapshotPartRows ?? LIMITS.snapshotPartRows;
    this.step = options.step ?? null;
    if (options.onStall) {
      const onStall = options.onStall;
      const stallMs = options.stallMs ?? 30_000;
      this.stallTimer = setInterval(() => {
        // the oldest commit still pending: one lost transaction stalls its replies
        // and every later reply (they leave in order), also while later commits settle
        const oldest = this.pendingSince.values().next().value;
        if (oldest === undefined) return;
        const ms = performance.now() - oldest;
        if (ms > stallMs) { clearInterval(this.stallTimer!); onStall(this.pendingSince.size, Math.round(ms)); }
      }, Math.min(1000, stallMs / 2));
      this.stallTimer.unref();
    }
    this.env = open({
      path: this.path,
      maxDbs: 8,
      // Flushes overlap the next transactions instead of holding the write lock:
      // group commit keeps the disk busy while new writes queue up.
      overlappingSync: durability === 'flush',
      separateFlushed: true,
      noSync: durability === 'none',
      eventTurnBatching: true,
      commitDelay: 0,
      // the initial map; lmdb-js grows it when a transaction needs more
      mapSize: Math.min(this.mapSize ?? 2 ** 30, 2 ** 30),
    });
    this.journal = this.env.openDB({ name: 'journal', keyEncoding: 'uint32', encoding: 'msgpack' });
    this.snapshots = this.env.openDB({ name: 'snapshots', keyEncoding: 'uint32', encoding: 'msgpack' });
    this.snapshotParts = this.env.openDB({ name: 'snapshot_parts', encoding: 'msgpack' });
    this.blobs = this.env.openDB({ name: 'blobs', encoding: 'string', compression: { threshold: 512 } });
    const dictionary = blobWriteDictionary();
    this.blobWriter = dictionary === null ? this.blobs
      : this.env.openDB({ name: 'blobs', encoding: 'string', compression: { threshold: 512, dictionary } });
    this.heads = this.env.openDB({ name: 'head', encoding: 'msgpack', useVersions: true });
    this.changeLog = new LmdbChangeLog(this.env.openDB({ name: 'changes', encoding: 'msgpack' }), this.heads, () => this.head);
    this.chunkTable = this.env.openDB({ name: 'content_chunks', encoding: 'binary', compression: { threshold: 512 } });
    this.chunks = new ContentChunks(this.chunkTable);
  }

  get journalLength(): number { return this.sinceSnapshot; }

  get journalSeq(): number { return this.seq; }

  getBlob(key: BlobKey): string | undefined {
    const pending = this.overlay.get(key);
    if (pending !== undefined) return pending === null ? undefined : jsonTextOf(pending);
    const value = this.blobs.get(key);
    if (value !== undefined) return value;
    const result = contentResultId(key);
    return result === null ? undefined : this.chunks.read(result);
  }

  /**
   * Journal numbers taken by writes whose commit failed, found when the shard was
   * rebuilt from disk: recorded (in the `head` table, as `skip:<first>` with the
   * last as its version) with the next write that commits, so that `logbook check`
   * and recovery tell them from entries lost later.
   */
  private skippedToRecord: Array<[number, number]> = [];

  /** The recorded ranges of journal numbers no write ever committed (see skippedToRecord). */
  skippedRanges(): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (const { key, version } of this.heads.getRange({ start: 'skip:', end: 'skip;', versions: true })) {
      const first = Number(String(key).slice(5));
      if (Number.isSafeInteger(first) && typeof version === 'number') out.push([first, version]);
    }
    return out;
  }

  write(events: Event[], puts: Array<[BlobKey, BlobValue]>, removes: BlobKey[], droppedPlaybooks: number[]): Promise<void> {
    const seq = ++this.seq;
    const skipped = this.skippedToRecord.length ? this.skippedToRecord : null;
    if (skipped) this.skippedToRecord = [];
    const after = this.head;
    this.head = seq;
    this.sinceSnapshot++;
    const failing = this.faults?.fail('journal') ?? false;
    const packed = !failing && puts.length >= CHUNK_MIN_CONTENTS ? this.pack(events, puts) : null;
    // nothing of the bytes values were given as is held past this call (CommandJournal.write):
    // a packed content is read from its chunk until committed, any other value is text
    let alone = textValues(packed === null ? puts : packed.alone);
    const overlay = puts.length || removes.length ? this.overlay.open() : null;
    if (overlay) {
      for (const key of removes) overlay.set(key, null);
      if (packed !== null) for (const [key, value] of packed.placed) overlay.set(key, value);
      for (const [key, value] of alone) overlay.set(key, value);
    }
    let stored: Promise<boolean>;
    if (failing) stored = this.injected('journal');
    else {
      const reset = removes.length ? this.packedResets(events, removes) : null;
      if (reset) alone = alone.concat(reset);
      const droppedChunks = droppedPlaybooks.length ? this.chunks.drop(new Set(droppedPlaybooks)) : null;
      // the entry as lmdb-js's encoder writes it, by a faster writer (msgpack_writer.ts); null: by lmdb-js's
      const entry = encodeJournalEntry(events);
      stored = this.afterHead(after, () => {
        for (const key of removes) void this.blobWriter.remove(key);
        for (const [key, value] of alone) void this.blobWriter.put(key, value);
        if (packed) for (const [key, value] of packed.chunks) void this.chunkTable.put(key, value);
        if (droppedChunks) for (const key of droppedChunks) void this.chunkTable.remove(key);
        for (const id of droppedPlaybooks) {
          void this.snapshots.remove(id);
          for (const key of this.snapshotParts.getKeys({ start: [id], end: [id + 1] })) void this.snapshotParts.remove(key);
          this.partsToClean.add(id); // parts a round has in flight now: removed once it is durable
          this.layouts.delete(id);
        }
        void this.journal.put(seq, entry === null ? events : asBinary(entry) as unknown as Event[]);
        void this.heads.put(HEAD_KEY, null, seq);
        if (skipped) for (const [first, last] of skipped) void this.heads.put('skip:' + first, null, last);
      });
      this.lastIssued = stored;
    }
    // The overlay of this command goes once its transaction is committed or has
    // failed, not when it is flushed: from the commit on, reads find its values in
    // LMDB (lmdb-js renews its read transaction at each commit, before the write's
    // promise resolves), and after a failure reads must show what is on disk (the
    // shard rebuilds its state from disk too). Held until the flush (~10 ms more
    // under batch load), a batch's contents (views of its chunks: external memory
    // to V8) lived through more young-generation collections than they need to.
    if (overlay) {
      const settle = () => { this.overlay.drop(overlay); };
      stored.then(settle, settle);
    }
    return this.durable(stored, 'write');
  }

  /**
   * The contents of results this command creates, packed into chunks when there
   * are enough of them (a batch); the other puts are stored alone. Null: none packed.
   */
  private pack(events: Event[], puts: Array<[BlobKey, BlobValue]>):
    { chunks: Array<[ChunkKey, Buffer]>; placed: Array<[BlobKey, BlobValue]>; alone: Array<[BlobKey, BlobValue]> } | null {
    const created = new Map<number, number>();
    for (const ev of events) if (ev.e === 'create' && ev.t === 'result') created.set(ev.d.id as number, ev.p);
    if (created.size < CHUNK_MIN_CONTENTS) return null;
    const packable: PackableContent[] = [];
    const alone: Array<[BlobKey, BlobValue]> = [];
    for (const put of puts) {
      const id = contentResultId(put[0]);
      const playbook = id === null ? undefined : created.get(id);
      if (playbook !== undefined && put[1].length < CHUNK_ALONE_BYTES) packable.push({ id: id!, playbook, text: put[1] });
      else alone.push(put);
    }
    if (packable.length < CHUNK_MIN_CONTENTS) return null;
    packable.sort((a, b) => a.id - b.id);
    const chunks = this.chunks.pack(packable);
    return { chunks, placed: packable.map((c) => [blobKey.content(c.id), c.text]), alone };
  }

  /**
   * A packed content set back to the default (a PATCH/PUT: the shard removes
   * the blob) is stored as the default instead: a removal would let the value
   * in its chunk show through. A result deleted is only removed.
   */
  private packedResets(events: Event[], removes: BlobKey[]): Array<[BlobKey, string]> | null {
    let out: Array<[BlobKey, string]> | null = null;
    let updated: Set<number> | null = null;
    for (const key of removes) {
      const id = contentResultId(key);
      if (id === null || !this.chunks.holds(id)) continue;
      updated ??= new Set(events.flatMap((ev) => (ev.e === 'update' && ev.t === 'result' ? [ev.id] : [])));
      if (updated.has(id)) (out ??= []).push([key, BLOB_DEFAULT.content]);
    }
    return out;
  }

  /**
   * An injected failure, reported the way LMDB reports a failed transaction:
   * after every transaction issued before it has been resolved.
   */
  private injected(what: string): Promise<boolean> {
    const fail = () => { throw new StorageError(`injected ${what} failure (test hook)`); };
    return this.lastIssued.then(fail, fail);
  }

  /** Issue `writes` in one transaction, to be applied only if the head record has version `head` (null: is absent). */
  private afterHead(head: number | null, writes: () => void): Promise<boolean> {
    return head === null ? this.heads.ifNoExists(HEAD_KEY, writes) : this.heads.ifVersion(HEAD_KEY, head, writes);
  }

  /**
   * Resolves once a conditional write is durable; rejects with a StorageError when
   * its transaction failed or its condition did not hold (an earlier command
   * failed): in both cases none of it is on disk. (A failed transaction never
   * resolves lmdb-js's `flushed`: wait for the commit first, then the flush.)
   */
  private durable(stored: Promise<boolean>, what: string): Promise<void> {
    const token = ++this.commitsIssued;
    this.pendingSince.set(token, performance.now());
    const result = stored.then((ok) => {
      if (!ok) throw new StorageError(`the ${what} was not stored because an earlier write of this shard failed`);
      if (this.durability === 'flush') return flushedOf(stored).then(() => undefined);
      return undefined;
    }, async (err) => { throw new StorageError(await failureText(err, this.path)); });
    // the watchdog counts until durable (a flush can be lost too, after a commit)
    const settled = () => { this.pendingSince.delete(token); };
    result.then(settled, settled);
    return result;
  }

  /**
   * Is the shard's file at its size limit (LOGBOOK_MAP_SIZE)? Checked at most every
   * 20 ms (getStats costs microseconds): a write that passes may still grow the
   * file a little past the limit, so the limit is a soft one.
   */
  full(): boolean {
    if (this.mapSize === null) return false;
    const now = performance.now();
    if (now - this.fullCheckedAt < 20) return this.fullNow;
    this.fullCheckedAt = now;
    const s = this.env.getStats() as { lastPageNumber: number; pageSize: number };
    // a command writes a few pages (more for large blobs); keep that much room
    this.fullNow = (s.lastPageNumber + 1) * s.pageSize + 64 * s.pageSize >= this.mapSize;
    return this.fullNow;
  }

  /** The storage limit in bytes (null: none). */
  get sizeLimit(): number | null { return this.mapSize; }

  /**
   * Snapshot every playbook changed since the last round, a slice at a time so
   * ingest is never stalled for long, then trim the journal entries the round
   * covers. Each aggregate's snapshot records the seq it reflects; recovery
   * applies only later events to it. Entries below the round's start are
   * covered by every snapshot once every snapshot of the round is durable, and
   * only then are they trimmed. A round that fails (or is overtaken by a
   * recovery) puts its playbooks back as dirty and trims nothing: the next
   * round snapshots them again.
   */
  snapshot(state: ShardState, beforeCopy: () => void = () => {}): Promise<void> {
    if (this.snapshotting) return Promise.resolve();
    const round = this.snapshotRound(state, beforeCopy);
    this.roundEnded = round.then(() => undefined, () => undefined);
    return round;
  }

  private async snapshotRound(state: ShardState, beforeCopy: () => void): Promise<void> {
    this.snapshotting = true;
    const generation = this.generation;
    const t0 = performance.now();
    const ids = [...state.dirty];
    state.dirty.clear();
    const journaled = this.sinceSnapshot;
    this.sinceSnapshot = 0;
    const start = this.seq + 1;
    const stored: Array<Promise<void>> = [];
    const put = (id: number | [number, number, number], value: AggregateSnapshot | ShardMeta | unknown[][]): void => {
      if (this.generation !== generation) throw new StorageError('the snapshot round was overtaken by a recovery');
      const p: Promise<boolean> = this.faults?.fail('snapshot')
        ? this.injected('snapshot')
        : (this.lastIssued = this.afterHead(this.head, typeof id === 'number'
          ? () => { void this.snapshots.put(id, value as AggregateSnapshot | ShardMeta); }
          : () => { void this.snapshotParts.put(id, value as unknown[][]); }));
      const done = this.durable(p, 'snapshot');
      done.catch(() => {}); // judged below, with the others
      stored.push(done);
      this.step?.('snapshot', ++this.stepCounts.snapshot);
    };
    let sliceStart = performance.now();
    let longestSliceMs = 0;
    let partsWritten = 0, partsKept = 0;
    const slice = async (): Promise<void> => {
      const ms = performance.now() - sliceStart;
      if (ms > longestSliceMs) longestSliceMs = ms;
      const delay = this.sliceDelayMs;
      if (delay === null && ms <= 8) return;
      await new Promise((r) => (delay ? setTimeout(r, delay) : setImmediate(r)));
      sliceStart = performance.now();
    };
    try {
      for (const id of ids) {
        // Writes handled between slices may be staged in the shard's open group:
        // applied to the state, not yet in the journal. Stored first, or this copy
        // would hold changes past its seq, and recovery would apply them twice.
        beforeCopy();
        const agg = state.aggregates.get(id);
        if (agg) {
          // the rows are copied at this seq in one go (a consistent cut); their
          // encoding is what takes long, and it goes part by part between other work.
          // Parts of earlier rounds whose rows have not changed since are kept.
          const seq = this.seq;
          const changedFrom = agg.results.takeChangedFrom();
          const { kept, rows } = keptParts(this.layouts.get(id) ?? [], changedFrom, this.partRows, agg.results.size);
          const { head, parts, layout } = splitResults(encodeAggregate(seq, agg, rows), this.partRows, kept);
          if (layout.length) this.layouts.set(id, layout); else this.layouts.delete(id);
          // its parts no longer referred to go after this round (also when it has none now: it shrank)
          this.partsToClean.add(id);
          for (let k = 0; k < parts.length; k++) {
            put([id, seq, kept.length + k], parts[k]!);
            await slice();
          }
          // written after its parts, so a snapshot never refers to a part not stored;
          // a playbook deleted meanwhile gets none (its parts are cleaned below)
          if (layout.length === 0 || state.aggregates.get(id) === agg) put(id, head);
          partsWritten += parts.length;
          partsKept += kept.length;
        }
        await slice();
      }
      beforeCopy(); // maxIds too: no id past the seq it is stored with
      const at = Date.now();
      put(META_KEY, { seq: this.seq, maxIds: state.maxIds.slice(), at });
      for (const result of await Promise.allSettled(stored)) if (result.status === 'rejected') throw result.reason;
      if (this.generation !== generation) throw new StorageError('the snapshot round was overtaken by a recovery');
    } catch (err) {
      // what this round stored is unknown: the next one writes these playbooks whole
      for (const id of ids) { this.layouts.delete(id); if (state.aggregates.has(id)) state.dirty.add(id); }
      this.sinceSnapshot += journaled;
      this.snapshotting = false;
      throw err;
    }
    this.lastSnapshotAt = Date.now();
    try {
      // Covered entries: trimming them is safe whatever else fails, so no condition.
      const trims: Array<Promise<unknown>> = [];
      for (const key of this.journal.getKeys({ end: start })) {
        trims.push(this.faults?.fail('trim') ? this.injected('trim') : (this.lastIssued = this.journal.remove(key)));
      }
      if (trims.length) this.step?.('trim', ++this.stepCounts.trim);
      const partsRemoved = this.cleanParts();
      for (const result of await Promise.allSettled([...trims, ...partsRemoved])) {
        if (result.status === 'rejected') throw new StorageError(`journal trim failed (the entries stay; the next round trims them): ${await failureText(result.reason, this.path)}`);
      }
      log.info('snapshot taken', {
        playbooks: ids.length, journalEntriesTrimmed: trims.length,
        resultParts: { written: partsWritten, kept: partsKept, removed: partsRemoved.length },
        ms: Math.round(performance.now() - t0), longestSliceMs: Math.round(longestSliceMs),
      });
    } finally {
      this.snapshotting = false;
    }
  }

  /**
   * Remove result parts no stored snapshot refers to: those of an older round
   * of the same playbook, of a deleted playbook, of a round that failed. Runs
   * once the round is durable, so the snapshots read here are the ones on disk.
   */
  private cleanParts(): Array<Promise<unknown>> {
    const removes: Array<Promise<unknown>> = [];
    for (const id of this.partsToClean) {
      this.partsToClean.delete(id);
      const head = this.snapshots.get(id) as AggregateSnapshot | undefined;
      const count = head === undefined ? 0 : resultPartsOf(head);
      for (const key of this.snapshotParts.getKeys({ start: [id], end: [id + 1] })) {
        const [, seq, k] = key;
        if (!(k < count && partSeqOf(head!, k) === seq)) removes.push(this.snapshotParts.remove(key));
      }
    }
    return removes;
  }

  /**
   * A stored snapshot with its results (from its parts when it was split); the
   * parts' layout is remembered, so the next round keeps those still unchanged.
   */
  private wholeSnapshot(id: number, stored: AggregateSnapshot): AggregateSnapshot {
    const count = resultPartsOf(stored);
    if (count === 0) return stored;
    const parts: unknown[][][] = [];
    const layout: PartRef[] = [];
    for (let k = 0; k < count; k++) {
      const seq = partSeqOf(stored, k);
      const part = this.snapshotParts.get([id, seq, k]);
      if (part === undefined) {
        throw new Error(`${this.path}: the snapshot of playbook ${id} refers to part ${k + 1} of ${count} of its results, which is not stored: the data directory is damaged (restore it from a backup)`);
      }
      parts.push(part);
      layout.push({ seq, rows: part.length });
    }
    this.layouts.set(id, layout);
    return joinResults(stored, parts);
  }

  /** Load the snapshots, then replay the journal tail into an empty state (recovery.ts). */
  recover(state: ShardState): RecoveryStats {
    // what memory held for commands in flight is not on disk (yet, or ever): reads go to disk
    this.overlay.clear();
    this.generation++;
    const issued = this.seq;
    this.layouts.clear();
    const snapshots = this.snapshots;
    const journal = this.journal;
    const whole = (id: number, stored: AggregateSnapshot) => this.wholeSnapshot(id, stored);
    // Numbers missing between journal entries are those of writes whose commit failed
    // (a full disk, an I/O error): a number is taken when the write is issued, and the
    // writes issued behind a failing commit keep theirs. None of them was acknowledged,
    // so recovery goes on across the gap; it says so, as `logbook check` does.
    const gaps: Array<[number, number]> = [];
    let previous = -1;
    let recovered: ReturnType<typeof recoverShard>;
    try {
      recovered = recoverShard({
        *snapshots() { for (const { key, value } of snapshots.getRange({ start: 1 })) yield [key, whole(key, value as AggregateSnapshot)]; },
        meta: () => snapshots.get(META_KEY) as ShardMeta | undefined,
        *journal() {
          for (const { key, value } of journal.getRange()) {
            if (previous >= 0 && (key as number) !== previous + 1 && gaps.length < 100) gaps.push([previous + 1, (key as number) - 1]);
            previous = key as number;
            yield [key, value];
          }
        },
      }, state);
    } catch (err) {
      // LMDB reports damage it meets while reading as an error (MDB_CORRUPTED, MDB_PAGE_NOTFOUND,
      // MDB_BAD_TXN, …): say which file, and what to do
      throw new Error(`${this.path} could not be read back (${(err as Error)?.message ?? String(err)}): the file is damaged; restore it from a backup (logbook changed nothing)`);
    }
    if (gaps.length) {
      const recorded = this.skippedRanges();
      const unexplained = gaps.filter(([a, b]) => !recorded.some(([x, y]) => x <= a && b <= y));
      const text = (list: Array<[number, number]>) => list.slice(0, 10).map(([a, b]) => (a === b ? String(a) : `${a}-${b}`)).join(', ');
      if (unexplained.length < gaps.length) {
        log.info('journal numbers skipped by writes that failed (never acknowledged); recovery went on across them',
          { store: this.path, gaps: text(gaps.filter((g) => !unexplained.includes(g))) });
      }
      if (unexplained.length) {
        log.warn('journal entries missing that no failed write explains (run logbook check); recovery went on across them',
          { store: this.path, gaps: text(unexplained) });
      }
    }
    this.chunks.load();
    // rebuilt after a failed commit: the numbers issued past what is on disk were never written
    if (issued > recovered.lastSeq) this.skippedToRecord.push([recovered.lastSeq + 1, issued]);
    if (recovered.lastSeq > this.seq) this.seq = recovered.lastSeq;
    if (recovered.lastSnapshotAt !== null) this.lastSnapshotAt = recovered.lastSnapshotAt;
    const head = this.heads.getEntry(HEAD_KEY);
    this.head = head === undefined ? null : head.version ?? null;
    if (this.head !== null && this.head > this.seq) this.seq = this.head;
    this.sinceSnapshot = recovered.journalEntries;
    // parts a crashed round left behind, unreferenced: the next round removes them
    for (const key of this.snapshotParts.getKeys()) this.partsToClean.add(key[0]);
    const { snapshots: count, journalEntries, eventsApplied, ms } = recovered;
    return { snapshots: count, journalEntries, eventsApplied, ms };
  }

  // ---- read-only walks for tools (src/tools/check.ts); never used while serving ----

  /** Every stored blob: its key and the bytes of its (decompressed) text. */
  *blobEntries(): Iterable<{ key: BlobKey; bytes: number }> {
    for (const { key, value } of this.blobs.getRange()) yield { key, bytes: Buffer.byteLength(value) };
  }

  /** Stored chunks of packed result contents (content_chunks.ts). */
  chunkEntries(): Iterable<{ key: ChunkKey; ids: number[]; bytes: number }> {
    return this.chunks.entries();
  }

  /** Journal entry seqs in order, and the seq the last completed snapshot round covers (meta). */
  journalLayout(): { seqs: number[]; snapshotSeq: number | null } {
    const meta = this.snapshots.get(META_KEY) as ShardMeta | undefined;
    return { seqs: [...this.journal.getKeys()], snapshotSeq: meta ? meta.seq : null };
  }

  async close(): Promise<void> {
    if (this.stallTimer) clearInterval(this.stallTimer);
    // a round cut short leaves parts no snapshot refers to until the next one: let it end (bounded)
    await Promise.race([this.roundEnded, new Promise((r) => setTimeout(r, 5000).unref())]);
    // lmdb-js never settles the flush (nor the close) of an environment whose last commit failed: bounded
    await closeEnv(this.env, this.path);
  }

  stats(): StoreStats {
    const used = (db: Database<any, any>): number => {
      const s = db.getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
      return (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize;
    };
    let fileBytes = 0;
    try { fileBytes = statSync(this.path).size; } catch { /* not created yet */ }
    return {
      journalBytes: used(this.journal), snapshotBytes: used(this.snapshots) + used(this.snapshotParts),
      blobBytes: used(this.blobs) + used(this.chunkTable),
      fileBytes, lastSnapshotAt: this.lastSnapshotAt,
    };
  }
}

/**
 * The dictionary blobs are compressed with: the last 256 bytes of the one lmdb-js
 * decompresses them with (its default, lib/dict/dict.txt), or null to write with
 * that one too. Why: lmdb-js loads its 5.5 KB dictionary into LZ4's tables for
 * every value it compresses, which costs about twice the compression itself (a
 * batch of 1,000 results is 1,000 values). LZ4 takes a dictionary as the bytes
 * that precede a value, so a value compressed with a tail of the dictionary
 * refers only to bytes the reading side has at the same distances: it reads back
 * unchanged through the default handle, as do values written before (values
 * come out ~17 % larger for lacking the rest of the dictionary).
 */
function blobWriteDictionary(): Buffer | null {
  try {
    // where lmdb-js reads it from: next to its entry module
    const dict = readFileSync(new URL('./dict/dict.txt', import.meta.resolve('lmdb')));
    const used = dict.length & ~7; // lmdb-js uses a word-aligned length of its dictionary
    return used >= 256 ? Buffer.from(dict.subarray(used - 256, used)) : null;
  } catch {
    return null;
  }
}

/**
 * Why a write failed, in words for a 503 body and the log (lmdb_commit.ts: the
 * cause lmdb-js gives, or what the free space of the file's filesystem says, or
 * the error's own message: failureCause).
 */
async function failureText(err: unknown, file: string): Promise<string> {
  if (err instanceof StorageError) return err.message;
  let detail = await failureCause(err, dirname(file));
  // lmdb's failed-page-write text ends in ", buffer sizes A B C": of its iovecs,
  // those past the first are stale stack values when fewer were written; the
  // position and size before it are what an operator can use
  detail = detail.replace(/, buffer sizes -?\d+( -?\d+)*/, '');
  // a guess only where the cause leaves it open: an I/O error or a file too large
  // can be either; "No space left on device" (lmdb-js's cause, or the free space
  // silentCause measured) already says which
  const hint = /no space/i.test(detail) ? '' : /input\/output|EIO|EFBIG|too large/i.test(detail) ? ' (disk full or a file-size limit?)' : '';
  return `the data directory could not be written: ${detail}${hint}`;
}

/** Blob puts with any value given as bytes turned into its text (the same array when there is none). */
function textValues(puts: Array<[BlobKey, BlobValue]>): Array<[BlobKey, string]> {
  if (puts.every(([, value]) => typeof value === 'string')) return puts as Array<[BlobKey, string]>;
  return puts.map(([key, value]) => [key, jsonTextOf(value)]);
}
