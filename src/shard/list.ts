// A shard's part of a list query: filter its rows, count them, keep the best
// skip + take (top-k, not a full sort), and return the requested window as [sortKey…, id, json] rows for the front to merge.
import { pageOrder } from '../api/order.js';
import type { ListQuery, ListRow, NormalizedFilter } from './protocol.js';
import { shownStatus } from './rows.js';
import { TopK } from './top_k.js';
import type { Aggregate, ShardState, EventType } from './state.js';
import type { Serializer } from './serialize.js';

type Value = number | string | boolean | null;

/** The value of a filter/sort column of a row. For playbooks the "row" is the aggregate. */
function column(type: EventType, row: any, col: string, state: ShardState): Value {
  if (type === 'playbook') {
    const pb = (row as Aggregate).playbook;
    switch (col) {
      case 'runner_version': return pb.runnerVersion;
      case 'duration': return pb.ended === null ? null : pb.ended - pb.started;
      default: return (pb as any)[col] ?? null;
    }
  }
  switch (col) {
    case 'duration': return row.ended === null ? null : row.ended - row.started;
    case 'status': return type === 'result' ? shownStatus(row) : row.status;
    case 'ignore_errors': return row.ignoreErrors;
    case 'path': return type === 'task' ? state.aggregates.get(row.playbook)?.files.get(row.file)?.path ?? null : row.path;
    default: return row[col] ?? null;
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
    case 'label': {
      const ids = new Set<number>();
      for (const [id, name] of state.labels) if (name.toLowerCase() === value) ids.add(id);
      return (row) => (row as Aggregate).playbook.labels.some((id) => ids.has(id));
    }
    default: return (row) => column(type, row, col, state) === value; // id, exact, bool, uuid
  }
}

export function runList(state: ShardState, serializer: Serializer, q: ListQuery): { count: number; rows: ListRow[]; beyond?: number } {
  const type = q.type;
  // A playbook filter narrows the scan to one aggregate.
  let candidates: { values(): Iterable<any> } = state.index(type);
  const filters: Array<(row: any) => boolean> = [];
  for (const f of q.filters) {
    if (f.kind === 'id' && f.column === 'playbook' && type !== 'playbook') {
      const agg = state.aggregates.get(f.value as number);
      if (!agg) return { count: 0, rows: [] };
      candidates = (agg as any)[type + 's'];
    } else filters.push(matcher(type, f, state));
  }
  const idOf = (row: any): number => (type === 'playbook' ? row.playbook.id : row.id);
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
      if (count >= q.skip && count < end) rows.push([idOf(row), render(type, row, state, serializer)]);
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
    const keys: ListRow = q.order.map(([col]) => (col === 'id' ? idOf(row) : column(type, row, col, state)));
    keys.push(idOf(row), row);
    // a keyset page: only the rows beyond its boundary, in the direction it goes
    if (bound !== undefined) {
      if (cmp(keys, bound) <= 0) continue;
      beyond++;
    }
    top.offer(keys);
  }
  const page = top.sorted().slice(q.skip);
  for (const keys of page) keys[keys.length - 1] = render(type, keys[keys.length - 1], state, serializer);
  return bound === undefined ? { count, rows: page } : { count, rows: page, beyond };
}

function render(type: EventType, row: any, state: ShardState, serializer: Serializer): string {
  if (type === 'playbook') return serializer.playbook(row as Aggregate, 'list');
  return serializer.any(type, state.aggregates.get(row.playbook)!, row, 'list');
}
