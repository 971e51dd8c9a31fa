// A shard's part of a list query: filter its rows, count them, keep the best
// skip + take (top-k, not a full sort), and return the requested window as
// [sortKey…, id, json] rows for the front to merge. Rows kept in id order (a
// task's or host's results, a playbook's, the shard's, its playbooks) give a
// page in that order by position, without looking at the rest; so do the
// orders kept for one sort key (src/shard/list_orders.ts) for a list of every
// row of the shard in any one order, with or without a `status` filter. The front may
// ask for keys only (json ''), then for the JSON of the rows it kept (`ids`).
import { pageOrder } from '../api/order.js';
import type { ListQuery, ListRow, NormalizedFilter } from './protocol.js';
import { firstAfter } from './result_groups.js';
import type { ResultRow } from './rows.js';
import { shownStatus } from './rows.js';
import { TopK } from './top_k.js';
import { OrderWindow, type Entry } from './ordered_index.js';
import type { Aggregate, ShardState, EventType } from './state.js';
import type { Serializer } from './serialize.js';
import { VERSION } from '../version.js';

type Value = number | string | boolean | null;

/** The value of a filter/sort column of a row. For playbooks the "row" is the aggregate. */
function column(type: EventType, row: any, col: string, state: ShardState): Value {
  if (type === 'playbook') {
    const pb = (row as Aggregate).playbook;
    switch (col) {
      case 'runner_version': return pb.runnerVersion;
      case 'client_version': return pb.clientVersion;
      case 'python_version': return pb.pythonVersion;
      case 'server_version': return VERSION;
      case 'duration': return pb.ended === null ? null : pb.ended - pb.started;
      default: return (pb as any)[col] ?? null;
    }
  }
  switch (col) {
    case 'duration': return row.ended === null ? null : row.ended - row.started;
    case 'status': return type === 'result' ? shownStatus(row) : row.status;
    case 'ignore_errors': return row.ignoreErrors;
    case 'path': return type === 'task' ? state.aggregates.get(row.playbook)?.files.get(row.file)?.path ?? null : row.path;
    // ARA's filters through a row's parents, all of them in this shard with the row
    case 'playbook_name': return state.aggregates.get(row.playbook)?.playbook.name ?? null;
    case 'playbook_path': return state.aggregates.get(row.playbook)?.playbook.path ?? null;
    case 'task_name': return state.tasks.get(row.task)?.name ?? null;
    case 'host_name': return state.hosts.get(row.host)?.name ?? null;
    case 'warnings_count': return jsonListLength(row.warnings);
    case 'deprecations_count': return jsonListLength(row.deprecations);
    case 'exceptions_count': return jsonListLength(row.exceptions);
    default: return row[col] ?? null;
  }
}

/** ARA's JsonLength of a task's list: its length, 0 for anything that is not a list. */
function jsonListLength(text: string): number {
  if (text === '[]') return 0; // nearly every task: no parse
  try {
    const v = JSON.parse(text);
    return Array.isArray(v) ? v.length : 0;
  } catch {
    return 0;
  }
}

function matcher(type: EventType, f: NormalizedFilter, state: ShardState): (row: any) => boolean {
  const { column: col, value } = f;
  switch (f.kind) {
    case 'date_before': return (row) => { const v = column(type, row, col, state); return v !== null && (v as number) <= (value as number); };
    case 'date_after': return (row) => { const v = column(type, row, col, state); return v !== null && (v as number) >= (value as number); };
    case 'int_gt': return (row) => (column(type, row, col, state) as number) > (value as number);
    case 'int_lt': return (row) => (column(type, row, col, state) as number) < (value as number);
    case 'icontains': return (row) => {
      const v = column(type, row, col, state);
      return v !== null && String(v).toLowerCase().includes(value as string);
    };
    case 'iexact': return (row) => {
      const v = column(type, row, col, state);
      return v !== null && String(v).toLowerCase() === value;
    };
    case 'status': return (row) => (value as string[]).includes(column(type, row, col, state) as string);
    case 'has_id': return (row) => (row.delegatedTo as readonly number[]).includes(value as number);
    case 'id_in': {
      const ids = new Set(value as number[]);
      return (row) => ids.has(column(type, row, 'id', state) as number);
    }
    case 'label': {
      const ids = new Set<number>();
      for (const [id, name] of state.labels) if (name.toLowerCase() === value) ids.add(id);
      return (row) => (row as Aggregate).playbook.labels.some((id) => ids.has(id));
    }
    default: return (row) => column(type, row, col, state) === value; // id, exact, bool, uuid
  }
}

type ListReply = { count: number; rows: ListRow[]; beyond?: number };
/** A row of an array kept in id order: a result, or a playbook's aggregate. */
type IdRow = ResultRow | Aggregate;

/**
 * The rows a list has to look at: for results of one task or host, that
 * parent's group (its filter is then met by every row); for children of one
 * playbook, or of one play (a `play` filter, which still filters), that
 * playbook's; else the shard's. Results come as an array in id order. null:
 * the filter names a parent this shard does not have, so nothing matches here.
 */
function candidatesOf(state: ShardState, q: ListQuery): { rows: { values(): Iterable<any> } | readonly IdRow[]; narrowedBy: NormalizedFilter | null } | null {
  const type = q.type;
  if (type === 'playbook') return { rows: state.playbooksInIdOrder(), narrowedBy: null };
  if (type === 'result') {
    for (const f of q.filters) {
      if (f.kind !== 'id' || (f.column !== 'task' && f.column !== 'host')) continue;
      const parent = (f.column === 'task' ? state.tasks : state.hosts).get(f.value as number);
      if (parent === undefined) return null;
      const groups = state.aggregates.get(parent.playbook)!.groups();
      return { rows: (f.column === 'task' ? groups.byTask : groups.byHost).of(parent.id), narrowedBy: f };
    }
  }
  for (const f of q.filters) {
    if (f.kind !== 'id' || (f.column !== 'playbook' && f.column !== 'play')) continue;
    const playbook = f.column === 'playbook' ? f.value as number : state.plays.get(f.value as number)?.playbook;
    const agg = playbook === undefined ? undefined : state.aggregates.get(playbook);
    if (agg === undefined) return null;
    // a playbook's results are an array in id order, from which a page in that order is cut
    return { rows: type === 'result' ? agg.results.inIdOrder() : (agg as any)[type + 's'], narrowedBy: f.column === 'playbook' ? f : null };
  }
  // the shard's results are kept in id order (ResultIndex), so a page in that order is cut out of them too
  return { rows: type === 'result' ? state.results.inIdOrder() : state.index(type), narrowedBy: null };
}

export function runList(state: ShardState, serializer: Serializer, q: ListQuery): ListReply {
  const type = q.type;
  if (q.ids) return renderIds(type, q.ids, state, serializer);
  const show = q.keysOnly ? keysOnly : (row: any): string => render(type, row, state, serializer);
  const kept = keptOrderPage(state, q, show);
  if (kept !== null) return kept;
  const narrowed = candidatesOf(state, q);
  if (narrowed === null) return q.bound ? { count: 0, rows: [], beyond: 0 } : { count: 0, rows: [] };
  const candidates = narrowed.rows;
  const filters: Array<(row: any) => boolean> = [];
  for (const f of q.filters) if (f !== narrowed.narrowedBy) filters.push(matcher(type, f, state));
  if (Array.isArray(candidates) && filters.length === 0 && isIdOrder(q.order)) return idOrderPage(candidates, q, show);
  const matches = (row: any): boolean => {
    for (const m of filters) if (!m(row)) return false;
    return true;
  };
  const end = q.skip + q.take;
  let count = 0;
  if (q.order.length === 0 && !q.bound) {
    // natural order is creation order (ascending id): keep only the window
    const rows: ListRow[] = [];
    for (const row of candidates.values()) {
      if (filters.length && !matches(row)) continue;
      if (count >= q.skip && count < end) rows.push([row.id, show(row)]);
      count++;
    }
    return { count, rows };
  }
  const desc = q.order.map(([, d]) => d);
  const cmp = pageOrder(desc, q.bound?.back ?? false);
  const bound = q.bound?.keys as ListRow | undefined;
  // key every match, keep only the `end` best in a bounded heap instead of sorting all
  const top = new TopK<ListRow>(end, cmp);
  let beyond = 0;
  for (const row of candidates.values()) {
    if (filters.length && !matches(row)) continue;
    count++;
    // every row has its id (a playbook's aggregate too)
    const keys: ListRow = q.order.map(([col]) => (col === 'id' ? row.id : column(type, row, col, state)));
    keys.push(row.id, row);
    // a keyset page: only the rows beyond its boundary, in the direction it goes
    if (bound !== undefined) {
      if (cmp(keys, bound) <= 0) continue;
      beyond++;
    }
    top.offer(keys);
  }
  const page = top.sorted().slice(q.skip);
  for (const keys of page) keys[keys.length - 1] = show(keys[keys.length - 1]);
  return bound === undefined ? { count, rows: page } : { count, rows: page, beyond };
}

/** The natural order, or id descending: the order a group is kept in, or its reverse. */
function isIdOrder(order: ListQuery['order']): boolean {
  return order.length === 0 || (order.length === 1 && order[0]![0] === 'id');
}

/**
 * A page of a whole group (or a playbook's results) in id order: every row matches, so the count is its
 * length, and the page is cut out of it (a keyset page: from a binary search
 * for its boundary), rendering only the rows returned.
 */
function idOrderPage(group: readonly IdRow[], q: ListQuery, show: (row: IdRow) => string): ListReply {
  const count = group.length;
  const desc = q.order.length === 1 && q.order[0]![1];
  const keyed = q.order.length === 1; // order=-id: [id, id, json]; natural: [id, json]
  const row = (r: IdRow): ListRow => (keyed ? [r.id, r.id, show(r)] : [r.id, show(r)]);
  // positions [from, to) in id order, taken from the `from` end (up) or the `to` end (down)
  let from = 0, to = count, up = !desc;
  if (q.bound) {
    const boundary = q.bound.keys[q.bound.keys.length - 1] as number;
    // after the boundary in the list's order, or before it going back: higher ids when they agree
    const higher = desc === q.bound.back;
    if (higher) from = firstAfter(group, boundary); else to = firstAfter(group, boundary - 1);
    up = higher;
  }
  const beyond = to - from;
  const rows: ListRow[] = [];
  for (let i = q.skip; i < q.skip + q.take && i < beyond; i++) rows.push(row(group[up ? from + i : to - 1 - i]!));
  return q.bound ? { count, rows, beyond } : { count, rows };
}

/**
 * A page of every row of the shard in one order (one sort key, or id with a
 * `status` filter, or id of a type kept in a Map), with no filter but
 * `status`: cut out of the order kept for that key (built at the first list
 * that asks), by position. null: the list is not one of those (several keys,
 * other filters, or an id order of results or playbooks, which idOrderPage
 * serves from the arrays they are kept in by id).
 */
function keptOrderPage(state: ShardState, q: ListQuery, show: (row: any) => string): ListReply | null {
  if (q.order.length > 1 || q.filters.length > 1) return null;
  const status = q.filters.length === 1 ? q.filters[0]! : null;
  if (status !== null && status.kind !== 'status') return null;
  const type = q.type;
  // the natural order's first page of a Map is its first rows; deeper ones, -id and cursors are not
  if (status === null && isIdOrder(q.order) && (type === 'result' || type === 'playbook' || (q.order.length === 0 && !q.bound && q.skip < 1000))) return null;
  const [key, desc] = q.order[0] ?? ['id', false];
  const rows = (): Iterable<any> => (type === 'playbook' ? state.playbooksInIdOrder() : state.index(type).values());
  const { index, mask } = state.orders.get(type, key, rows, status === null ? null : status.value as string[]);
  const order = new OrderWindow(index, desc, mask);
  const count = order.n;
  // [value, id, json] in an explicit order; [id, json] in the natural one
  const keyed = q.order.length === 1;
  // the tree holds ids: the page's rows are looked up
  const byId = type === 'playbook' ? state.aggregates : state.index(type);
  const row = (e: Entry): ListRow => {
    const r = byId.get(e.id);
    return keyed ? [e.value as ListRow[number], e.id, show(r)] : [e.id, show(r)];
  };
  const out: ListRow[] = [];
  if (!q.bound) {
    for (let pos = q.skip; pos < q.skip + q.take && pos < count; pos++) out.push(row(order.at(pos)));
    return { count, rows: out };
  }
  // a keyset page: the rows after its boundary (or before it going back, nearest first)
  const keys = q.bound.keys;
  const value = keys[0] ?? null, id = keys[keys.length - 1] as number;
  if (!q.bound.back) {
    const from = order.positionOf(value, id, true);
    for (let pos = from + q.skip; pos < from + q.skip + q.take && pos < count; pos++) out.push(row(order.at(pos)));
    return { count, rows: out, beyond: count - from };
  }
  const to = order.positionOf(value, id, false);
  for (let pos = to - 1 - q.skip; pos > to - 1 - q.skip - q.take && pos >= 0; pos--) out.push(row(order.at(pos)));
  return { count, rows: out, beyond: to };
}

/** The JSON a keys-only row carries: none. */
const keysOnly = (): string => '';

/** A page's rows picked by a first keys-only pass: each one still there, as [id, json]. */
function renderIds(type: EventType, ids: readonly number[], state: ShardState, serializer: Serializer): ListReply {
  const rows: ListRow[] = [];
  for (const id of ids) {
    const row = type === 'playbook' ? state.aggregates.get(id) : state.index(type).get(id);
    if (row !== undefined) rows.push([id, render(type, row, state, serializer)]);
  }
  return { count: rows.length, rows };
}

function render(type: EventType, row: any, state: ShardState, serializer: Serializer): string {
  if (type === 'playbook') return serializer.playbook(row as Aggregate, 'list');
  return serializer.any(type, state.aggregates.get(row.playbook)!, row, 'list');
}
