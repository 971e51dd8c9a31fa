// An aggregate's results grouped by one parent (their task, or their host),
// each group in id order.
//
// A list of one task's or one host's results (`results?task=`, what the UI's
// task and host pages read, and a client paging through a big run) used to
// filter every result of the shard for every page: ~40 ms a page with 300 k
// results in the shard, and paging through 1.2 M of them did not finish in 7
// minutes (the overload benchmark's read back, #11). Its group gives the count
// at once, and a page in id order is a binary search into it
// (src/shard/list.ts), whatever the shard holds.
//
// An aggregate builds its groups at the first list that asks (Aggregate.groups),
// then keeps them: one array slot per result per grouping, and a push when a
// result is created (ids arrive in increasing order). Moving a result to
// another task or host, and an id below the last, take a binary search and a
// splice; deletes filter each affected group once.
import type { ResultRow } from './rows.js';

export class ResultGroups {
  private readonly groups = new Map<number, ResultRow[]>();
  constructor(private readonly parentOf: (r: ResultRow) => number) {}

  /** The results of one parent in id order (empty: none). Read only. */
  of(parent: number): readonly ResultRow[] {
    return this.groups.get(parent) ?? NONE;
  }

  add(row: ResultRow): void {
    const parent = this.parentOf(row);
    const group = this.groups.get(parent);
    if (group === undefined) { this.groups.set(parent, [row]); return; }
    const n = group.length;
    if (group[n - 1]!.id < row.id) { group.push(row); return; }
    group.splice(firstAfter(group, row.id - 1), 0, row);
  }

  /** Take `row` out of the group of `parent` (the one it was in before it moved). */
  delete(row: ResultRow, parent: number): void {
    const group = this.groups.get(parent);
    if (group === undefined) return;
    const at = firstAfter(group, row.id - 1);
    if (group[at] !== row) return;
    if (group.length === 1) this.groups.delete(parent);
    else group.splice(at, 1);
  }

  /** Take out every one of `rows`, each from the group of its parent: one pass per group touched. */
  deleteAll(rows: readonly ResultRow[]): void {
    if (rows.length === 0) return;
    const gone = new Set<ResultRow>(rows);
    const parents = new Set<number>();
    for (const r of rows) parents.add(this.parentOf(r));
    for (const parent of parents) {
      const group = this.groups.get(parent);
      if (group === undefined) continue;
      const kept = group.filter((r) => !gone.has(r));
      if (kept.length === 0) this.groups.delete(parent);
      else this.groups.set(parent, kept);
    }
  }

  /** Every parent with its group (tests compare them to a recount). */
  entries(): IterableIterator<[number, readonly ResultRow[]]> {
    return this.groups.entries();
  }
}

const NONE: readonly ResultRow[] = Object.freeze([]);

/** The position of the first row of `rows` (id order) whose id is above `id`. */
export function firstAfter(rows: readonly { id: number }[], id: number): number {
  let lo = 0, hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid]!.id <= id) lo = mid + 1; else hi = mid;
  }
  return lo;
}
