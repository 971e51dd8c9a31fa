// Ordering of list rows, shared by the shards (sorting their part) and the front
// (merging the parts). A row is [sortKey…, id, json]: keys compare in order, with
// null before any value ascending (as SQLite does) and after it descending; ties
// are broken by ascending id so pages are stable across shards.
import type { ListRow } from './list_types.js';

export function compareRows(a: ListRow, b: ListRow, desc: readonly boolean[]): number {
  const n = desc.length;
  for (let i = 0; i < n; i++) {
    const c = compareValues(a[i]!, b[i]!);
    if (c !== 0) return desc[i] ? -c : c;
  }
  return (a[n] as number) - (b[n] as number);
}

function compareValues(x: number | string | boolean | null, y: number | string | boolean | null): number {
  if (x === y) return 0;
  if (x === null) return -1;
  if (y === null) return 1;
  return x < y ? -1 : 1;
}

/**
 * The order a page's rows are selected in: the list's, or for a keyset page
 * going back (src/api/page_cursor.ts) its reverse, nearest the boundary first.
 */
export function pageOrder(desc: readonly boolean[], back: boolean): (a: ListRow, b: ListRow) => number {
  return back ? (a, b) => compareRows(b, a, desc) : (a, b) => compareRows(a, b, desc);
}

/**
 * Merge rows from several shards, each already sorted (by pageOrder(desc, back)),
 * and cut the requested page, in that order.
 */
export function mergePages(parts: ListRow[][], desc: readonly boolean[], offset: number, limit: number, back = false): ListRow[] {
  if (parts.length === 1) return parts[0]!.slice(offset, offset + limit);
  const cmp = pageOrder(desc, back);
  const heads = new Array<number>(parts.length).fill(0);
  const out: ListRow[] = [];
  let skipped = 0;
  for (;;) {
    let best = -1;
    for (let p = 0; p < parts.length; p++) {
      const part = parts[p]!;
      if (heads[p]! >= part.length) continue;
      if (best < 0 || cmp(part[heads[p]!]!, parts[best]![heads[best]!]!) < 0) best = p;
    }
    if (best < 0) return out;
    const row = parts[best]![heads[best]!++]!;
    if (skipped < offset) { skipped++; continue; }
    out.push(row);
    if (out.length >= limit) return out;
  }
}
