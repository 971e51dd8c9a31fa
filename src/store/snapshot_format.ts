// The stored form of a playbook aggregate's snapshot and of a shard's snapshot
// meta record: plain positional arrays (msgpack-friendly, engine-independent).
import type { Aggregate, ShardState } from '../shard/state.js';
import { PlaybookRow, PlayRow, TaskRow, HostRow, ResultRow, FileRow, RecordRow } from '../shard/rows.js';

/** Aggregate snapshot: [seq, playbook, plays, tasks, hosts, results, files, records] as positional arrays. */
export type AggregateSnapshot = [number, unknown[], unknown[][], unknown[][], unknown[][], unknown[][], unknown[][], unknown[][]];

/**
 * Written last in each completed snapshot round: the seq the round reflects, the
 * highest id ever created per type code, and (`at`) when the round completed (ms
 * since the epoch; absent in data written before it existed).
 */
export interface ShardMeta { seq: number; maxIds: number[]; at?: number }

/** An aggregate as it is at journal position `seq`. */
export function encodeAggregate(seq: number, agg: Aggregate): AggregateSnapshot {
  const rows = <T extends { toArray(): unknown[] }>(m: { size: number; values(): Iterable<T> }) => {
    const out: unknown[][] = new Array(m.size);
    let i = 0;
    for (const r of m.values()) out[i++] = r.toArray();
    return out;
  };
  return [seq, agg.playbook.toArray(), rows(agg.plays), rows(agg.tasks), rows(agg.hosts), rows(agg.results), rows(agg.files), rows(agg.records)];
}

/** Load a snapshot into `state`; returns the seq it reflects. */
export function loadAggregate(state: ShardState, snapshot: AggregateSnapshot): number {
  const [seq, pb, plays, tasks, hosts, results, files, records] = snapshot;
  state.load(PlaybookRow.fromArray(pb), {
    plays: plays.map(PlayRow.fromArray), tasks: tasks.map(TaskRow.fromArray), hosts: hosts.map(HostRow.fromArray),
    results: results.map(ResultRow.fromArray), files: files.map(FileRow.fromArray), records: records.map(RecordRow.fromArray),
  });
  return seq;
}
