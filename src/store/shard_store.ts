// A shard's persistence: one LMDB environment per shard (its own write lock, so
// shards commit in parallel) holding
//   journal    seq → events of one command        (append-only, trimmed after snapshots)
//   snapshots  playbook id → aggregate snapshot    (key 0: shard meta)
//   blobs      key → large JSON text               (LZ4-compressed when it pays)
// Every command's journal entry and blob changes are issued in one event turn, so
// lmdb-js puts them in one transaction; the shard replies only once that
// transaction is durable (group commit: commands arriving meanwhile join the next).
import { open, type Database, type RootDatabase } from 'lmdb';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Event, ShardState } from '../shard/state.js';
import { PlaybookRow, PlayRow, TaskRow, HostRow, ResultRow, FileRow, RecordRow } from '../shard/rows.js';
import type { BlobKey, BlobReader } from './blobs.js';

/**
 * When a write counts as done:
 *  - 'flush'  : the transaction is on stable storage (fsync'd): survives power loss. Default.
 *  - 'commit' : committed to the OS (survives a process crash, not a power loss)
 *  - 'none'   : LMDB noSync: for benchmarks and throwaway data only
 */
export type Durability = 'flush' | 'commit' | 'none';

export interface ShardStore extends BlobReader {
  /** Stage one command (journal entry + blob changes) and return when it is durable (null: already). */
  write(events: Event[], puts: Array<[BlobKey, string]>, removes: BlobKey[], droppedPlaybooks: number[]): Promise<void> | null;
  /** Snapshot what changed and trim the journal it covers; called by the shard when due. */
  snapshot?(state: ShardState): Promise<void>;
  /** Journal entries appended since the last completed snapshot. */
  readonly journalLength: number;
  close?(): Promise<void>;
  /** Sizes and snapshot age for /metrics (absent: nothing on disk). */
  stats?(): StoreStats;
}

export interface StoreStats {
  /** bytes of pages used by each table */
  journalBytes: number;
  snapshotBytes: number;
  blobBytes: number;
  /** size of the shard's LMDB file */
  fileBytes: number;
  /** ms since the epoch of the last completed snapshot, if known */
  lastSnapshotAt: number | null;
}

/** Blobs in a Map, nothing on disk: the in-memory configuration and unit tests. */
export class MemoryStore implements ShardStore {
  readonly blobs = new Map<BlobKey, string>();
  readonly journalLength = 0;
  getBlob(key: BlobKey): string | undefined { return this.blobs.get(key); }
  write(_events: Event[], puts: Array<[BlobKey, string]>, removes: BlobKey[]): null {
    for (const key of removes) this.blobs.delete(key);
    for (const [key, value] of puts) this.blobs.set(key, value);
    return null;
  }
}

const META_KEY = 0;
/** `at`: when the snapshot round completed (ms since the epoch; absent in data written before it existed) */
interface ShardMeta { seq: number; maxIds: number[]; at?: number }

/** Aggregate snapshot: [seq, playbook, plays, tasks, hosts, results, files, records] as positional arrays. */
type AggregateSnapshot = [number, unknown[], unknown[][], unknown[][], unknown[][], unknown[][], unknown[][], unknown[][]];

export interface RecoveryStats { snapshots: number; journalEntries: number; eventsApplied: number; ms: number }

export class LmdbShardStore implements ShardStore {
  private readonly env: RootDatabase;
  private readonly journal: Database<Event[], number>;
  private readonly snapshots: Database<AggregateSnapshot | ShardMeta, number>;
  private readonly blobs: Database<string, BlobKey>;
  private seq = 0;
  /** blob values written but not yet committed: reads must see them (null = removed) */
  private readonly overlay = new Map<BlobKey, { seq: number; value: string | null }>();
  private sinceSnapshot = 0;
  private snapshotting = false;
  private readonly path: string;
  private lastSnapshotAt: number | null = null;

  constructor(dataDir: string, shard: number, private readonly durability: Durability) {
    this.path = join(dataDir, `shard-${shard}.mdb`);
    this.env = open({
      path: this.path,
      maxDbs: 4,
      // Flushes overlap the next transactions instead of holding the write lock:
      // group commit keeps the disk busy while new writes queue up.
      overlappingSync: durability === 'flush',
      separateFlushed: true,
      noSync: durability === 'none',
      eventTurnBatching: true,
      commitDelay: 0,
      mapSize: 2 ** 30,
    });
    this.journal = this.env.openDB({ name: 'journal', keyEncoding: 'uint32', encoding: 'msgpack' });
    this.snapshots = this.env.openDB({ name: 'snapshots', keyEncoding: 'uint32', encoding: 'msgpack' });
    this.blobs = this.env.openDB({ name: 'blobs', encoding: 'string', compression: { threshold: 512 } });
  }

  get journalLength(): number { return this.sinceSnapshot; }

  getBlob(key: BlobKey): string | undefined {
    const pending = this.overlay.get(key);
    if (pending) return pending.value ?? undefined;
    return this.blobs.get(key);
  }

  write(events: Event[], puts: Array<[BlobKey, string]>, removes: BlobKey[], droppedPlaybooks: number[]): Promise<void> {
    const seq = ++this.seq;
    this.sinceSnapshot++;
    for (const key of removes) { this.overlay.set(key, { seq, value: null }); void this.blobs.remove(key); }
    for (const [key, value] of puts) { this.overlay.set(key, { seq, value }); void this.blobs.put(key, value); }
    for (const id of droppedPlaybooks) void this.snapshots.remove(id);
    const committed = this.journal.put(seq, events) as Promise<boolean> & { flushed?: Promise<void> };
    const done = this.durability === 'flush' && committed.flushed ? committed.flushed : committed;
    const touched = puts.length || removes.length ? [...removes, ...puts.map(([k]) => k)] : null;
    return (done as Promise<unknown>).then(() => {
      if (touched) for (const key of touched) if (this.overlay.get(key)?.seq === seq) this.overlay.delete(key);
    });
  }

  /**
   * Snapshot every playbook changed since the last round, a slice at a time so
   * ingest is never stalled for long, then trim the journal entries the round
   * covers. Each aggregate's snapshot records the seq it reflects; recovery
   * applies only later events to it. Entries below the round's start are
   * covered by every snapshot once the round is complete.
   */
  async snapshot(state: ShardState): Promise<void> {
    if (this.snapshotting) return;
    this.snapshotting = true;
    try {
      const start = this.seq + 1;
      const ids = [...state.dirty];
      state.dirty.clear();
      this.sinceSnapshot = 0;
      let last: Promise<unknown> | null = null;
      let sliceStart = performance.now();
      for (const id of ids) {
        const agg = state.aggregates.get(id);
        if (agg) last = this.snapshots.put(id, encodeAggregate(this.seq, agg));
        if (performance.now() - sliceStart > 8) {
          await new Promise((r) => setImmediate(r));
          sliceStart = performance.now();
        }
      }
      const at = Date.now();
      last = this.snapshots.put(META_KEY, { seq: this.seq, maxIds: state.maxIds.slice(), at });
      await flushedOf(last);
      this.lastSnapshotAt = at;
      let trimmed: Promise<unknown> | null = null;
      for (const key of this.journal.getKeys({ end: start })) trimmed = this.journal.remove(key);
      if (trimmed) await trimmed;
    } finally {
      this.snapshotting = false;
    }
  }

  /** Load the snapshots, then replay the journal tail into an empty state. */
  recover(state: ShardState): RecoveryStats {
    const t0 = performance.now();
    const snapSeq = new Map<number, number>();
    let snapshots = 0;
    for (const { key, value } of this.snapshots.getRange({ start: 1 })) {
      const [seq, pb, plays, tasks, hosts, results, files, records] = value as AggregateSnapshot;
      state.load(PlaybookRow.fromArray(pb), {
        plays: plays.map(PlayRow.fromArray), tasks: tasks.map(TaskRow.fromArray), hosts: hosts.map(HostRow.fromArray),
        results: results.map(ResultRow.fromArray), files: files.map(FileRow.fromArray), records: records.map(RecordRow.fromArray),
      });
      snapSeq.set(key, seq);
      if (seq > this.seq) this.seq = seq;
      snapshots++;
    }
    const meta = this.snapshots.get(META_KEY) as ShardMeta | undefined;
    if (meta) {
      if (meta.seq > this.seq) this.seq = meta.seq;
      if (typeof meta.at === 'number') this.lastSnapshotAt = meta.at;
      meta.maxIds.forEach((id, code) => { if (id > state.maxIds[code]!) state.maxIds[code] = id; });
    }
    let journalEntries = 0;
    let eventsApplied = 0;
    for (const { key: seq, value: events } of this.journal.getRange()) {
      journalEntries++;
      if (seq > this.seq) this.seq = seq;
      for (const ev of events) {
        const covered = snapSeq.get(ev.p);
        if (covered !== undefined && seq <= covered) continue;
        // events of a playbook deleted later (its snapshot went with it) are skipped,
        // but the ids they created stay used: ids are never handed out twice
        if (!state.aggregates.has(ev.p) && !(ev.e === 'create' && ev.t === 'playbook')) {
          if (ev.e === 'create') state.observeId(ev.t, ev.d.id);
          continue;
        }
        state.apply(ev);
        eventsApplied++;
      }
    }
    state.releasedFiles = [];
    // snapshots load playbook by playbook: put the shard-wide indexes back in id
    // (= creation) order, which unordered lists and the front's merge rely on
    state.sortIndexes();
    this.sinceSnapshot = journalEntries;
    return { snapshots, journalEntries, eventsApplied, ms: performance.now() - t0 };
  }

  // ---- read-only walks for tools (src/tools/check.ts); never used while serving ----

  /** Every stored blob: its key and the bytes of its (decompressed) text. */
  *blobEntries(): Iterable<{ key: BlobKey; bytes: number }> {
    for (const { key, value } of this.blobs.getRange()) yield { key, bytes: Buffer.byteLength(value) };
  }

  /** Journal entry seqs in order, and the seq the last completed snapshot round covers (meta). */
  journalLayout(): { seqs: number[]; snapshotSeq: number | null } {
    const meta = this.snapshots.get(META_KEY) as ShardMeta | undefined;
    return { seqs: [...this.journal.getKeys()], snapshotSeq: meta ? meta.seq : null };
  }

  async close(): Promise<void> {
    await this.env.flushed;
    await this.env.close();
  }

  stats(): StoreStats {
    const used = (db: Database<any, any>): number => {
      const s = db.getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
      return (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize;
    };
    let fileBytes = 0;
    try { fileBytes = statSync(this.path).size; } catch { /* not created yet */ }
    return {
      journalBytes: used(this.journal), snapshotBytes: used(this.snapshots), blobBytes: used(this.blobs),
      fileBytes, lastSnapshotAt: this.lastSnapshotAt,
    };
  }
}

function encodeAggregate(seq: number, agg: import('../shard/state.js').Aggregate): AggregateSnapshot {
  const rows = <T extends { toArray(): unknown[] }>(m: { size: number; values(): Iterable<T> }) => {
    const out: unknown[][] = new Array(m.size);
    let i = 0;
    for (const r of m.values()) out[i++] = r.toArray();
    return out;
  };
  return [seq, agg.playbook.toArray(), rows(agg.plays), rows(agg.tasks), rows(agg.hosts), rows(agg.results), rows(agg.files), rows(agg.records)];
}

function flushedOf(p: Promise<unknown>): Promise<unknown> {
  return (p as Promise<unknown> & { flushed?: Promise<unknown> }).flushed ?? p;
}
