// The stored form of a playbook aggregate's snapshot and of a shard's snapshot
// meta record: plain positional arrays (msgpack-friendly, engine-independent).
import type { Aggregate, ShardState } from '../shard/state.js';
import { PlaybookRow, PlayRow, TaskRow, HostRow, ResultRow, FileRow, RecordRow } from '../shard/rows.js';

/**
 * Aggregate snapshot: [seq, playbook, plays, tasks, hosts, results, files,
 * records] as positional arrays, and optionally the number of parts its results
 * were stored in apart (then `results` is empty here): a playbook of a large
 * fleet holds hundreds of thousands of results, and encoding them as one value
 * stalled its shard for a third of a second each round. Part k is stored under
 * [playbook, seq of the round that wrote it, k]: the seqs are listed last
 * (format 4; before it, every part had the snapshot's own seq). A round keeps
 * the parts of earlier rounds whose rows did not change (results are
 * append-mostly) and writes only the ones after them.
 */
export type AggregateSnapshot = [number, unknown[], unknown[][], unknown[][], unknown[][], unknown[][], unknown[][], unknown[][], number?, number[]?];

/** Index of `results`, of the part count and of the parts' seqs in an AggregateSnapshot. */
const RESULTS = 5;
const PARTS = 8;
const PART_SEQS = 9;

/** A stored part of a snapshot's results: the seq it is keyed by, and how many rows it holds. */
export interface PartRef { seq: number; rows: number }

/**
 * Written last in each completed snapshot round: the seq the round reflects, the
 * highest id ever created per type code, and (`at`) when the round completed (ms
 * since the epoch; absent in data written before it existed).
 */
export interface ShardMeta { seq: number; maxIds: number[]; at?: number }

/**
 * An aggregate as it is at journal position `seq`; its results from position
 * `resultsFrom` on (those before it are in parts kept from earlier rounds).
 */
export function encodeAggregate(seq: number, agg: Aggregate, resultsFrom = 0): AggregateSnapshot {
  const rows = <T extends { toArray(): unknown[] }>(m: { size: number; values(): Iterable<T> }) => {
    const out: unknown[][] = new Array(m.size);
    let i = 0;
    for (const r of m.values()) out[i++] = r.toArray();
    return out;
  };
  return [seq, agg.playbook.toArray(), rows(agg.plays), rows(agg.tasks), rows(agg.hosts), agg.results.arraysFrom(resultsFrom), rows(agg.files), rows(agg.records)];
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
 * apart from it, after the `kept` parts of earlier rounds (the snapshot holds
 * only the rows after those); a snapshot with no more than `partRows` rows and
 * nothing kept keeps them inline. `parts` are the new parts, numbered from
 * `kept.length`; `layout` is every part of the result.
 */
export function splitResults(snapshot: AggregateSnapshot, partRows: number, kept: PartRef[] = []): { head: AggregateSnapshot; parts: unknown[][][]; layout: PartRef[] } {
  const results = snapshot[RESULTS];
  if (kept.length === 0 && results.length <= partRows) return { head: snapshot, parts: [], layout: [] };
  const parts: unknown[][][] = [];
  for (let i = 0; i < results.length; i += partRows) parts.push(results.slice(i, i + partRows));
  const seq = snapshot[0];
  const layout = kept.concat(parts.map((p) => ({ seq, rows: p.length })));
  const head = snapshot.slice() as AggregateSnapshot;
  head[RESULTS] = [];
  head[PARTS] = layout.length;
  head[PART_SEQS] = layout.map((p) => p.seq);
  return { head, parts, layout };
}

/** How many result parts a stored snapshot refers to (0: its results are inline). */
export function resultPartsOf(snapshot: AggregateSnapshot): number {
  return snapshot[PARTS] ?? 0;
}

/** The seq part `k` of a stored snapshot is keyed by. */
export function partSeqOf(snapshot: AggregateSnapshot, k: number): number {
  return snapshot[PART_SEQS]?.[k] ?? snapshot[0];
}

/** A stored snapshot with its result parts put back. */
export function joinResults(head: AggregateSnapshot, parts: unknown[][][]): AggregateSnapshot {
  const whole = head.slice(0, PARTS) as AggregateSnapshot;
  whole[RESULTS] = parts.length === 1 ? parts[0]! : ([] as unknown[][]).concat(...parts);
  return whole;
}

/**
 * The stored parts a round can keep: the leading ones that hold only rows
 * before `changedFrom` (the first position changed since they were written)
 * and are full, or last with no row after them (a partial part is written
 * again with the rows after it, or parts would get ever smaller). `size`: the
 * results there are now.
 */
export function keptParts(layout: PartRef[], changedFrom: number, partRows: number, size: number): { kept: PartRef[]; rows: number } {
  let rows = 0, k = 0;
  for (; k < layout.length; k++) {
    const end = rows + layout[k]!.rows;
    if (end > changedFrom || (layout[k]!.rows < partRows && end !== size)) break;
    rows = end;
  }
  return { kept: layout.slice(0, k), rows };
}
