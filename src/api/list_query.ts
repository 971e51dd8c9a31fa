// Query string of a list request → a normalized ListQuery, or a 400 body naming
// every bad parameter (docs/api.md#lists). A parameter the list does not read is
// one of them, except in ARA's dialect, which ignores it as django-filter does.
import { Messages } from './errors.js';
import { DIALECTS, FILTERS, LIST_PARAMS, ORDER_KEYS, type ResourceType } from './resources.js';
import { parseTimestamp } from './time.js';
import { normalizeUuid } from './uuid.js';
import { decodePageCursor, type PageCursor } from './page_cursor.js';
import type { ListQuery, NormalizedFilter } from './list_types.js';

export interface PageSettings {
  pageSize: number;
  maxPageSize: number;
  /** largest `offset` served; deeper pages are reached by `cursor` links (src/api/page_cursor.ts) */
  maxListOffset: number;
}

export type ParsedList =
  | {
    ok: true; filters: NormalizedFilter[]; order: Array<[string, boolean]>; limit: number;
    /** the page's position (0 for a keyset page: its shards count it) */
    offset: number;
    /** a keyset page (a `cursor` link past the offset cap); `offset` is then ignored */
    cursor: PageCursor | null;
    playbook: number | null;
    /** `q=`: the list's rows are those the search index matches too (docs/search.md); the front resolves it */
    search: string | null;
  }
  | { ok: false; body: string };

const KNOWN_FILTERS = Object.fromEntries(Object.entries(FILTERS).map(([type, specs]) => [
  type, new Set(specs.map((s) => s.param)),
])) as unknown as Record<ResourceType, ReadonlySet<string>>;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const UINT = /^\d+$/;

function parseFilterDate(v: string): number | undefined {
  return parseTimestamp(DATE_ONLY.test(v) ? v + 'T00:00:00' : v);
}

/** django-filter's NumberFilter reads a decimal: "1", " 1", "1.0", "1e0" are all 1. */
const DECIMAL = /^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$/;
function parseNumber(v: string): number | undefined {
  // Python's Decimal grammar: no hex/octal/binary literals, no Infinity
  if (!DECIMAL.test(v)) return undefined;
  const n = Number(v.trim());
  return Number.isFinite(n) ? n : undefined;
}

function parseBool(v: string): boolean | undefined {
  const l = v.toLowerCase();
  if (l === 'true' || l === '1') return true;
  if (l === 'false' || l === '0') return false;
  return undefined;
}

/**
 * `ara`: the request is answered in ARA's dialect (docs/api.md#the-ara-dialect),
 * where a parameter no filter reads is ignored; elsewhere it is a 400 naming
 * it, so that a misspelt filter never passes for a filter that matched.
 */
export function parseListQuery(type: ResourceType, params: Map<string, string[]>, pages: PageSettings, ara = false): ParsedList {
  const errors: Record<string, string[]> = Object.create(null); // a parameter may be called __proto__
  const filters: NormalizedFilter[] = [];
  let playbook: number | null = null;
  for (const spec of FILTERS[type]) {
    const values = params.get(spec.param);
    if (!values) continue;
    const v = values[values.length - 1]!;
    if (v === '' && spec.kind !== 'status') continue;
    const fail = (msg: string) => { errors[spec.param] = [msg]; };
    const add = (value: NormalizedFilter['value']) => filters.push({ kind: spec.kind, column: spec.column, value });
    switch (spec.kind) {
      case 'date_before': case 'date_after': {
        const us = parseFilterDate(v);
        if (us === undefined) fail(Messages.enterDatetime); else add(us);
        break;
      }
      case 'id': case 'has_id': case 'int_gt': case 'int_lt': {
        const n = parseNumber(v);
        if (n === undefined) { fail(Messages.enterNumber); break; }
        const value = spec.kind === 'id' || spec.kind === 'has_id' ? Math.trunc(n) : n;
        add(value);
        if (spec.kind === 'id' && spec.column === 'playbook') playbook = value;
        break;
      }
      case 'icontains': case 'iexact': case 'label': add(v.toLowerCase()); break;
      case 'exact': add(v); break;
      case 'bool': {
        const b = parseBool(v);
        if (b === undefined) fail(Messages.selectChoice(v)); else add(b);
        break;
      }
      case 'uuid': {
        const u = normalizeUuid(v);
        if (u === undefined) fail(Messages.enterUuid); else add(u);
        break;
      }
      case 'status': {
        const badValue = values.find((s) => !spec.choices!.includes(s));
        if (badValue !== undefined) fail(Messages.selectChoice(badValue)); else add(values);
        break;
      }
    }
  }

  const order: Array<[string, boolean]> = [];
  const orderValues = params.get('order');
  const orderText = orderValues ? orderValues[orderValues.length - 1]! : '';
  if (orderText !== '') {
    for (const item of orderText.split(',')) {
      const desc = item.startsWith('-');
      const key = desc ? item.slice(1) : item;
      if (!ORDER_KEYS[type].includes(key)) { errors.order = [Messages.selectChoice(key)]; break; }
      order.push([key, desc]);
    }
  }

  const dialect = params.get('dialect')?.at(-1);
  if (dialect !== undefined && !DIALECTS.includes(dialect)) errors.dialect = [Messages.selectChoice(dialect)];

  // `order=id` is the natural order; drop it so shards can skip sorting
  if (order.length === 1 && order[0]![0] === 'id' && !order[0]![1]) order.length = 0;
  const limit = parseWindow(params.get('limit'), 1, pages.pageSize, errors, 'limit');
  const cursorValues = params.get('cursor');
  let cursor: PageCursor | null = null;
  let offset = 0;
  if (cursorValues) {
    // the page's offset is counted from the cursor's boundary; an `offset` beside it is ignored
    cursor = decodePageCursor(cursorValues[cursorValues.length - 1]!, errors.order ? 0 : order.length);
    if (cursor === null) errors.cursor = [Messages.invalidCursor];
  } else {
    offset = parseWindow(params.get('offset'), 0, 0, errors, 'offset');
    // a deep offset costs offset + limit rows kept and merged per shard: bounded
    if (offset > pages.maxListOffset && !errors.offset) errors.offset = [Messages.offsetTooLarge(pages.maxListOffset)];
  }
  const q = params.get('q');
  // an empty q= is no search, as an empty filter is no filter
  const search = q === undefined || type === 'label' || q[q.length - 1]!.trim() === '' ? null : q[q.length - 1]!;
  if (!ara) {
    for (const param of params.keys()) {
      if (param === 'q' && type !== 'label') continue;
      if (!LIST_PARAMS.includes(param) && !KNOWN_FILTERS[type].has(param)) errors[param] = [Messages.unknownParameter];
    }
  }
  if (Object.keys(errors).length) return { ok: false, body: JSON.stringify(errors) };
  return { ok: true, filters, order, limit: Math.min(limit, pages.maxPageSize), offset, cursor, playbook, search };
}

function parseWindow(values: string[] | undefined, min: number, fallback: number, errors: Record<string, string[]>, name: string): number {
  if (!values) return fallback;
  const v = values[values.length - 1]!;
  if (UINT.test(v)) {
    const n = Number(v);
    if (n < min) { errors[name] = [Messages.minValue(min)]; return fallback; }
    return Number.isSafeInteger(n) ? n : Number.MAX_SAFE_INTEGER;
  }
  errors[name] = [/^-\d+$/.test(v) ? Messages.minValue(min) : Messages.invalidInt];
  return fallback;
}

export function toShardQuery(type: Exclude<ResourceType, 'label'>, parsed: Extract<ParsedList, { ok: true }>, single: boolean): ListQuery {
  // One shard can cut the page itself; several each return their first offset+limit rows.
  // A keyset page needs only `limit` rows beyond its boundary from each.
  const { cursor } = parsed;
  if (cursor) return { type, filters: parsed.filters, order: parsed.order, skip: 0, take: parsed.limit, bound: { keys: cursor.keys, back: cursor.back } };
  return {
    type,
    filters: parsed.filters,
    order: parsed.order,
    skip: single ? parsed.offset : 0,
    take: single ? parsed.limit : parsed.offset + parsed.limit,
  };
}
