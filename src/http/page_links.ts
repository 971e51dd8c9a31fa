// Query-string parsing and the `next`/`previous` links of list responses.
//
// ARA builds these links with Django REST framework's LimitOffsetPagination:
// parse the request query with parse_qs(keep_blank_values=True), set `limit`
// and `offset` (or drop `offset`), then re-encode with
// urlencode(sorted(params.items()), doseq=True). Clients and snapshot tests
// compare the URLs as strings, so we reproduce Python's parsing, ordering and
// percent-encoding exactly rather than use URLSearchParams (which sorts by
// UTF-16 code units, encodes `~` and `*` differently and decodes malformed
// input differently).

import { boundaryOf, encodePageCursor, type KeyValue, type PageCursor } from '../api/page_cursor.js';
import type { ListRow } from '../shard/protocol.js';

// ---------------------------------------------------------------- decoding

/** Hex digit value by char code (< 128), -1 otherwise. */
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) HEX_VALUE[48 + i] = i;
for (let i = 0; i < 6; i++) HEX_VALUE[65 + i] = HEX_VALUE[97 + i] = 10 + i;

/** Byte value of `%XX` at s[i] (i at the `%`) within s[.., end), or -1. */
function escapedByte(s: string, i: number, end: number): number {
  if (i + 2 >= end) return -1;
  const h = s.charCodeAt(i + 1);
  const l = s.charCodeAt(i + 2);
  if (h >= 128 || l >= 128) return -1;
  const hv = HEX_VALUE[h]!;
  const lv = HEX_VALUE[l]!;
  return hv < 0 || lv < 0 ? -1 : (hv << 4) | lv;
}

// Python decodes percent-escaped bytes as UTF-8 with errors='replace'; the
// WHATWG decoder in replacement mode substitutes U+FFFD the same way (one per
// maximal invalid subpart).
const utf8 = new TextDecoder();
let byteBuffer = new Uint8Array(256); // reused across calls, grown when needed

/**
 * Python's unquote_plus(s[a, b)): `+` → space, `%XX` → byte, consecutive bytes
 * decoded together as UTF-8, a `%` not followed by two hex digits kept as is.
 */
function unquotePlus(s: string, a: number, b: number): string {
  let out = '';
  let run = a; // start of the pending run of characters copied verbatim
  let i = a;
  while (i < b) {
    const c = s.charCodeAt(i);
    if (c === 43 /* + */) {
      out += s.slice(run, i) + ' ';
      run = ++i;
      continue;
    }
    let byte: number;
    if (c !== 37 /* % */ || (byte = escapedByte(s, i, b)) < 0) {
      i++;
      continue;
    }
    out += s.slice(run, i);
    // Collect the whole run of %XX escapes: a multi-byte UTF-8 character
    // arrives as several of them.
    let n = 0;
    let ascii = true;
    do {
      if (n === byteBuffer.length) {
        const bigger = new Uint8Array(n * 2);
        bigger.set(byteBuffer);
        byteBuffer = bigger;
      }
      byteBuffer[n++] = byte;
      if (byte >= 128) ascii = false;
      i += 3;
    } while (s.charCodeAt(i) === 37 && (byte = escapedByte(s, i, b)) >= 0);
    if (ascii) {
      // Common case (`%3A`, `%2B`): no decoder call needed.
      for (let k = 0; k < n; k++) out += String.fromCharCode(byteBuffer[k]!);
    } else {
      out += utf8.decode(byteBuffer.subarray(0, n));
    }
    run = i;
  }
  return run === a ? s.slice(a, b) : out + s.slice(run, b);
}

/**
 * Parses a raw query string (without the leading `?`) like Python's
 * `parse_qsl(q, keep_blank_values=True)`: `&`-separated, empty segments
 * skipped, a segment without `=` is a name with an empty value, names and
 * values unquoted with `+` as space. Names map to their values in order of
 * appearance; the map's order is that of each name's first appearance.
 */
export function parseQuery(rawQuery: string): Map<string, string[]> {
  const params = new Map<string, string[]>();
  const n = rawQuery.length;
  let start = 0;
  while (start < n) {
    let end = rawQuery.indexOf('&', start);
    if (end < 0) end = n;
    if (end > start) {
      const eq = rawQuery.indexOf('=', start);
      const nameEnd = eq >= 0 && eq < end ? eq : end;
      const name = unquotePlus(rawQuery, start, nameEnd);
      const value = nameEnd < end ? unquotePlus(rawQuery, nameEnd + 1, end) : '';
      const values = params.get(name);
      if (values === undefined) params.set(name, [value]);
      else values.push(value);
    }
    start = end + 1;
  }
  return params;
}

// ---------------------------------------------------------------- encoding

/** `%00`..`%FF`, upper-case as Python writes them. */
const PERCENT: string[] = [];
for (let i = 0; i < 256; i++) PERCENT.push('%' + (i < 16 ? '0' : '') + i.toString(16).toUpperCase());

/** Characters quote_plus leaves alone: A-Z a-z 0-9 `_.-~`. */
const UNRESERVED = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~') UNRESERVED[c.charCodeAt(0)] = 1;

/**
 * Python's quote_plus(s): space → `+`, unreserved characters kept, everything
 * else as `%XX` of its UTF-8 bytes. Hand-rolled rather than
 * encodeURIComponent + fix-ups: that keeps `!*'()`, and throws on a lone
 * surrogate (encoded here as U+FFFD, which is what a UTF-8 decode upstream
 * would have produced).
 */
function quotePlus(s: string): string {
  let out = '';
  let run = 0; // start of the pending run of unreserved characters
  const n = s.length;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 128 && UNRESERVED[c] === 1) continue;
    out += s.slice(run, i);
    if (c === 32) {
      out += '+';
    } else if (c < 0x80) {
      out += PERCENT[c];
    } else if (c < 0x800) {
      out += PERCENT[0xc0 | (c >> 6)]! + PERCENT[0x80 | (c & 63)];
    } else {
      if (c >= 0xd800 && c <= 0xdfff) {
        const lo = s.charCodeAt(i + 1);
        if (c <= 0xdbff && lo >= 0xdc00 && lo <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
          out +=
            PERCENT[0xf0 | (cp >> 18)]! +
            PERCENT[0x80 | ((cp >> 12) & 63)] +
            PERCENT[0x80 | ((cp >> 6) & 63)] +
            PERCENT[0x80 | (cp & 63)];
          run = ++i + 1;
          continue;
        }
        c = 0xfffd; // lone surrogate
      }
      out += PERCENT[0xe0 | (c >> 12)]! + PERCENT[0x80 | ((c >> 6) & 63)] + PERCENT[0x80 | (c & 63)];
    }
    run = i + 1;
  }
  return run === 0 ? s : out + s.slice(run);
}

/**
 * Orders strings by code point, as Python sorts str (JS `<` compares UTF-16
 * code units, which differs when a surrogate meets U+E000..U+FFFF).
 */
function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Move surrogates above the rest of the BMP (a standard UTF-16 trick).
    if (x >= 0xd800) x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
    if (y >= 0xd800) y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    return x - y;
  }
  return a.length - b.length;
}

// ---------------------------------------------------------------- links

/**
 * Joins the pre-encoded groups of the other parameters (sorted by name) with
 * `limit` and either `offset` (when ≥ 0) or `cursor` (when not null), each at
 * its sorted place. These names and values are ASCII, so plain `<` agrees with
 * code-point order here.
 */
function buildUrl(base: string, names: string[], groups: string[], limit: number, offset: number, cursor: string | null = null): string {
  let query = '';
  let i = 0;
  const n = names.length;
  const add = (name: string, group: string): void => {
    for (; i < n && names[i]! < name; i++) query += (query ? '&' : '') + groups[i];
    query += (query ? '&' : '') + group;
  };
  if (cursor !== null) add('cursor', 'cursor=' + cursor);
  add('limit', 'limit=' + limit);
  if (offset >= 0 && cursor === null) add('offset', 'offset=' + offset);
  for (; i < n; i++) query += '&' + groups[i];
  return base + '?' + query;
}

/** What a page needs to link past the offset cap with keyset cursors (src/api/page_cursor.ts). */
export interface KeysetLinks {
  /** deepest `offset` served; a link that would go past it carries a cursor */
  maxOffset: number;
  /** the page's rows ([sort keys…, id, json]): their first and last name the cursors */
  rows: readonly ListRow[];
  /**
   * A keyset page: its `offset` was counted, and the next page starts right after
   * its last row even when it holds fewer than `limit` rows (rows deleted meanwhile).
   */
  counted?: boolean;
  /**
   * The cursor the page was asked by (null: an offset page). A page that comes
   * back empty (the rows past its cursor were deleted) has no row to name its
   * neighbours by: they are named from the cursor's position instead.
   */
  cursor?: PageCursor | null;
}

/**
 * The `next` and `previous` URLs of a list page, as DRF's LimitOffsetPagination
 * writes them. `base` is `scheme://host/path` without a query; `rawQuery` is
 * the request's query string as received (without `?`). `limit` and `offset`
 * are the validated values actually used for the page (a keyset page's offset
 * as its shards counted it). With `keyset`, a link whose offset would pass the
 * cap names the page by a cursor instead.
 */
export function pageLinks(
  base: string,
  rawQuery: string,
  count: number,
  limit: number,
  offset: number,
  keyset?: KeysetLinks,
): { next: string | null; previous: string | null } {
  const nextOffset = offset + (keyset?.counted ? keyset.rows.length : limit);
  const cursor = keyset?.cursor ?? null;
  // An empty page going back has nothing before its cursor: it sits at offset 0
  // and its next page starts there (the rows from the cursor on). Going forward,
  // an empty page ends the list: its next is null, its previous the page before.
  const hasNext = nextOffset < count && (keyset?.counted !== true || keyset.rows.length > 0 || cursor?.back === true);
  const hasPrevious = offset > 0;
  if (!hasNext && !hasPrevious) return { next: null, previous: null };

  // Encode every other parameter once, as `name=v1&name=v2`, for both links.
  const params = parseQuery(rawQuery);
  params.delete('limit');
  params.delete('offset');
  params.delete('cursor');
  const names = Array.from(params.keys()).sort(compareCodePoints);
  const groups = new Array<string>(names.length);
  for (let i = 0; i < names.length; i++) {
    const name = quotePlus(names[i]!);
    const values = params.get(names[i]!)!;
    let group = name + '=' + quotePlus(values[0]!);
    for (let k = 1; k < values.length; k++) group += '&' + name + '=' + quotePlus(values[k]!);
    groups[i] = group;
  }

  const previousOffset = offset - limit;
  const maxOffset = keyset?.maxOffset ?? Infinity;
  const rows = keyset?.rows ?? [];
  let next: string | null = null;
  if (hasNext) {
    if (nextOffset <= maxOffset) next = buildUrl(base, names, groups, limit, nextOffset <= 0 ? -1 : nextOffset);
    else if (rows.length > 0) next = buildUrl(base, names, groups, limit, -1, encodePageCursor({ back: false, keys: boundaryOf(rows[rows.length - 1]!) }));
  }
  let previous: string | null = null;
  if (hasPrevious) {
    if (previousOffset <= maxOffset) previous = buildUrl(base, names, groups, limit, previousOffset <= 0 ? -1 : previousOffset);
    else if (rows.length > 0) previous = buildUrl(base, names, groups, limit, -1, encodePageCursor({ back: true, keys: boundaryOf(rows[0]!) }));
    else if (cursor !== null && !cursor.back) previous = buildUrl(base, names, groups, limit, -1, encodePageCursor({ back: true, keys: upTo(cursor.keys) }));
  }
  return { next, previous };
}

/**
 * A `back` boundary that keeps the row `keys` names: the rows before it and
 * that row itself. Ties are broken by ascending id and ids are integers, so the
 * rows before (sort keys…, id + 1) are exactly the rows up to (sort keys…, id).
 * An empty page that a forward cursor (rows after `keys`) asked for sits right
 * after that row, which is the last row of the page before it when it still exists.
 */
function upTo(keys: readonly KeyValue[]): KeyValue[] {
  const out = keys.slice();
  out[out.length - 1] = (out[out.length - 1] as number) + 1;
  return out;
}
