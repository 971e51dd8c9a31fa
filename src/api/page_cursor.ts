// Keyset cursors for list pages past the offset cap (docs/api.md#lists, #11).
//
// An offset page costs every shard offset + limit rows (src/shard/list.ts), so
// `offset` is capped (LOGBOOK_MAX_LIST_OFFSET). A client that follows `next`
// must not run into that cap: past it, `next` (and `previous`) carry
// `cursor=<opaque>` instead of `offset`. A cursor names the row the page starts
// after (or, going back, ends before) by its sort keys and id, so each shard
// keeps only `limit` rows beyond it, however deep the page is, and counts the
// rows beyond it: the page's offset is then known exactly, without the cursor
// carrying one, and no row is skipped or repeated when rows come and go.
import type { ListRow } from './list_types.js';

export type KeyValue = number | string | null;

export interface PageCursor {
  /** true: the rows just before `keys`, in reverse (a `previous` link) */
  back: boolean;
  /** sort-key values of the boundary row, then its id (a list row without its JSON) */
  keys: KeyValue[];
}

/** base64url of [back, ...keys] as JSON: opaque to clients, checked on the way in. */
export function encodePageCursor(c: PageCursor): string {
  return Buffer.from(JSON.stringify([c.back ? 1 : 0, ...c.keys]), 'utf8').toString('base64url');
}

/** The boundary keys of a merged page row ([keys…, id, json] → [keys…, id]). */
export function boundaryOf(row: ListRow): KeyValue[] {
  return row.slice(0, -1) as KeyValue[];
}

/**
 * The cursor `text` names, or null when it is not one of ours for an order of
 * `orderKeys` keys (a cursor made for another order has another key count).
 */
export function decodePageCursor(text: string, orderKeys: number): PageCursor | null {
  if (text.length === 0 || text.length > 16384 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  let a: unknown;
  try { a = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')); } catch { return null; }
  if (!Array.isArray(a) || a.length !== orderKeys + 2) return null;
  const back = a[0] as unknown;
  if (back !== 0 && back !== 1) return null;
  const keys = a.slice(1) as unknown[];
  for (const k of keys) if (k !== null && typeof k !== 'string' && !(typeof k === 'number' && Number.isFinite(k))) return null;
  const id = keys[keys.length - 1];
  if (!Number.isSafeInteger(id) || (id as number) < 1) return null;
  return { back: back === 1, keys: keys as KeyValue[] };
}
