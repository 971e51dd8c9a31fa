// The stored form of a playbook aggregate's snapshot and of a shard's snapshot
// meta record: plain positional arrays (msgpack-friendly, engine-independent).
import type { Aggregate, ShardState } from '../shard/state.js';
import { PlaybookRow, PlayRow, TaskRow, HostRow, ResultRow, FileRow, RecordRow } from '../shard/rows.js';

/**
 * Aggregate snapshot: [seq, playbook, plays, tasks, hosts, results, files,
 * records] as positional arrays, and optionally the number of parts its results
 * were stored in apart (then `results` is empty here): a playbook of a large
 * fleet holds hundreds of thousands of results, and encoding them as one value
 * stalled its shard for a third of a second each round.
 */
export type AggregateSnapshot = [number, unknown[], unknown[][], unknown[][], unknown[][], unknown[][], unknown[][], unknown[][], number?];

/** Index of `results` and of the part count in an AggregateSnapshot. */
const RESULTS = 5;
const PARTS = 8;

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

/**
 * Split a snapshot's results into parts of at most `partRows` rows, stored
 * apart from it; a snapshot with no more than that keeps them inline.
 */
export function splitResults(snapshot: AggregateSnapshot, partRows: number): { head: AggregateSnapshot; parts: unknown[][][] } {
  const results = snapshot[RESULTS];
  if (results.length <= partRows) return { head: snapshot, parts: [] };
  const parts: unknown[][][] = [];
  for (let i = 0; i < results.length; i += partRows) parts.push(results.slice(i, i + partRows));
  const head = snapshot.slice() as AggregateSnapshot;
  head[RESULTS] = [];
  head[PARTS] = parts.length;
  return { head, parts };
}

/** How many result parts a stored snapshot refers to (0: its results are inline). */
export function resultPartsOf(snapshot: AggregateSnapshot): number {
  return snapshot[PARTS] ?? 0;
}

/** A stored snapshot with its result parts put back. */
export function joinResults(head: AggregateSnapshot, parts: unknown[][][]): AggregateSnapshot {
  const whole = head.slice(0, PARTS) as AggregateSnapshot;
  whole[RESULTS] = parts.length === 1 ? parts[0]! : ([] as unknown[][]).concat(...parts);
  return whole;
}
