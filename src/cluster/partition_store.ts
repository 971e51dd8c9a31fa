// A partition's store in cluster mode: the ShardStore a shard worker writes to
// when its journal is the partition's JetStream stream (docs/cluster.md, to scale beyond
// one machine). A commit is acknowledged once its PubAck came back (a quorum of
// NATS servers holds it): write() resolves then. Blobs are kept in memory and
// rebuilt, like the aggregates, by replaying the stream when a node takes the
// partition: the stream is the only source of truth, so a node's local disk
// holds nothing that must survive (an empty disk loses nothing).
//
// Not built yet (README § Cluster mode): snapshots into local LMDB and standby
// replicas tailing the stream, so that failover replays a short tail rather
// than the partition's whole history.
import { Packr } from 'msgpackr';
import { jsonTextOf } from '../api/json_bytes.js';
import type { BlobKey, BlobValue } from '../shard/blobs.js';
import type { RecoveryStats, ShardStore } from '../shard/storage.js';
import type { Event, ShardState } from '../shard/state.js';
import type { PartitionLog, PartitionWriter } from './partition_log.js';
import type { BlobMap } from './partition_blobs.js';

/** journal entries must decode on their own, on any node, years later: no shared structures */
const packr = new Packr({ useRecords: false, moreTypes: false });

/**
 * One journal entry as stored in the stream: the events and blob changes of one
 * commit, the live stream's change seq after it (a new owner numbers on from
 * there, so stream cursors never go back when a partition moves), and the label
 * stream's sequence up to which the partition has logged label changes (a new
 * owner logs the ones after it: src/shard_worker.ts; absent in entries written
 * before it was kept).
 */
export type Entry = [events: Event[], puts: Array<[BlobKey, string]>, removes: BlobKey[], changeSeq?: number, labelSeq?: number];

export class PartitionStore implements ShardStore {
  /** blobs: a throwaway local LMDB (partition_blobs.ts), or a Map when there is no data directory */
  constructor(readonly blobs: BlobMap = new Map<BlobKey, string>()) {}

  /** no snapshots here: nothing to trim, so never due */
  readonly journalLength = 0;
  private writer: PartitionWriter | null = null;
  /** commits appended and acknowledged (metrics) */
  commits = 0;
  /** the live stream's change seq (the shard's ChangeLog), read when an entry is encoded */
  changeSeq: () => number = () => 0;
  /** the highest change seq replayed */
  lastChangeSeq = 0;
  /** the label stream's sequence up to which label changes are logged (the shard's ChangeLog.labelSeq), read when an entry is encoded */
  labelSeq: () => number = () => 0;
  private replayedLabelSeq = 0;
  private replayedEntries = 0;
  private replayedWithLabelSeq = 0;
  /** the highest such sequence replayed; null: entries were replayed and none had one (written before it was kept) */
  get lastLabelSeq(): number | null {
    return this.replayedEntries > 0 && this.replayedWithLabelSeq === 0 ? null : this.replayedLabelSeq;
  }

  /** Start appending after the fence this node wrote (fence.ts takeOwnership). */
  attach(writer: PartitionWriter): void { this.writer = writer; }

  get lastSequence(): number { return this.writer?.lastSequence ?? 0; }

  /** commits appended and not settled yet: closing waits for them (a released partition's last writes) */
  private readonly inFlight = new Set<Promise<void>>();

  async close(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
    await this.blobs.close?.();
  }

  getBlob(key: BlobKey): string | undefined { return this.blobs.get(key); }

  write(events: Event[], values: Array<[BlobKey, BlobValue]>, removes: BlobKey[]): Promise<void> {
    // the stream's entries and the blob map hold text
    const puts = values.map(([key, value]): [BlobKey, string] => [key, jsonTextOf(value)]);
    this.applyBlobs(puts, removes);
    const writer = this.writer;
    if (writer === null) return Promise.reject(new Error('partition is not owned by this node'));
    // Encoded at the end of this turn: after the shard numbered the commit's stream
    // changes (which it does right after write()), before any later message changes
    // the rows these events hold. Entries still reach the writer in write order.
    const done = new Promise<void>((resolve, reject) => {
      queueMicrotask(() => {
        const entry = Uint8Array.from(packr.pack([events, puts, removes, this.changeSeq(), this.labelSeq()] satisfies Entry) as Uint8Array);
        writer.append(entry).then(() => { this.commits++; resolve(); }, reject);
      });
    });
    this.inFlight.add(done);
    const forget = () => { this.inFlight.delete(done); };
    done.then(forget, forget);
    return done;
  }

  /** Apply one stored entry (replay, or a standby following the owner). */
  applyEntry(raw: Uint8Array, state: ShardState): number {
    const [events, puts, removes, changeSeq, labelSeq] = packr.unpack(raw) as Entry;
    for (const ev of events) state.apply(ev);
    this.applyBlobs(puts, removes);
    if (typeof changeSeq === 'number' && changeSeq > this.lastChangeSeq) this.lastChangeSeq = changeSeq;
    this.replayedEntries++;
    if (typeof labelSeq === 'number') {
      this.replayedWithLabelSeq++;
      if (labelSeq > this.replayedLabelSeq) this.replayedLabelSeq = labelSeq;
    }
    return events.length;
  }

  private applyBlobs(puts: Array<[BlobKey, string]>, removes: BlobKey[]): void {
    for (const key of removes) this.blobs.delete(key);
    for (const [key, value] of puts) this.blobs.set(key, value);
  }

  /**
   * Rebuild `state` (empty) from partition k's stream, up to sequence `upTo`
   * (the fence this node just wrote: everything before it is the partition).
   */
  async replay(log: PartitionLog, k: number, upTo: number, state: ShardState): Promise<RecoveryStats> {
    const t0 = performance.now();
    let journalEntries = 0;
    let eventsApplied = 0;
    if (upTo > 0) {
      for await (const record of log.replay(k, 1)) {
        if (record.seq > upTo) break;
        if (record.kind !== 'commit') continue;
        for (const raw of record.entries) {
          journalEntries++;
          eventsApplied += this.applyEntry(raw as Uint8Array, state);
        }
        if (record.seq >= upTo) break;
      }
    }
    state.releasedFiles = [];
    state.dirty.clear();
    state.sortIndexes();
    return { snapshots: 0, journalEntries, eventsApplied, ms: performance.now() - t0 };
  }
}
