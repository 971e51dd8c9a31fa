// Recovery, the one place that turns what a store holds back into a shard's
// state: load every playbook snapshot, then replay the journal tail, applying to
// each playbook only the events after the seq its snapshot reflects. Independent
// of the storage engine: a store hands over its snapshots, meta record and
// journal as a RecoverySource.
import type { Event, ShardState } from '../shard/state.js';
import { loadAggregate, type AggregateSnapshot, type ShardMeta } from './snapshot_format.js';
import type { RecoveryStats } from '../shard/storage.js';

export interface RecoverySource {
  /** [playbook id, snapshot] of every stored aggregate snapshot */
  snapshots(): Iterable<[number, AggregateSnapshot]>;
  /** the meta record of the last completed snapshot round, if any */
  meta(): ShardMeta | undefined;
  /** [seq, events] of every journal entry still stored, in seq order */
  journal(): Iterable<[number, Event[]]>;
}

export interface Recovered extends RecoveryStats {
  /** the highest journal position seen (snapshots, meta, journal) */
  lastSeq: number;
  /** when the last snapshot round completed (ms since the epoch), if known */
  lastSnapshotAt: number | null;
}

/** Rebuild an empty `state` from `source`. */
export function recoverShard(source: RecoverySource, state: ShardState): Recovered {
  const t0 = performance.now();
  let lastSeq = 0;
  let lastSnapshotAt: number | null = null;
  const snapSeq = new Map<number, number>();
  let snapshots = 0;
  for (const [id, snapshot] of source.snapshots()) {
    const seq = loadAggregate(state, snapshot);
    snapSeq.set(id, seq);
    if (seq > lastSeq) lastSeq = seq;
    snapshots++;
  }
  const meta = source.meta();
  if (meta) {
    if (meta.seq > lastSeq) lastSeq = meta.seq;
    if (typeof meta.at === 'number') lastSnapshotAt = meta.at;
    meta.maxIds.forEach((id, code) => { if (id > state.maxIds[code]!) state.maxIds[code] = id; });
  }
  let journalEntries = 0;
  let eventsApplied = 0;
  for (const [seq, events] of source.journal()) {
    journalEntries++;
    if (seq > lastSeq) lastSeq = seq;
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
  return { snapshots, journalEntries, eventsApplied, ms: performance.now() - t0, lastSeq, lastSnapshotAt };
}
