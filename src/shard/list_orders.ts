// The orders a shard keeps its rows in for lists (ShardState.orders): for a
// type and a sort key, an OrderedIndex of every row of the type by (value,
// id), with the row's status as its class, so a page in that order, with or
// without a `status` filter, is found by position (src/shard/list.ts).
//
// An order is built at the first list that asks for it, then kept up to date
// by ShardState.apply: a new row is inserted, a row whose value or status
// changed is moved (ended, duration, updated, status; a host's counters move
// with every result of the host), a deleted one taken out. Orders no list ever
// asked for cost nothing; a built one costs a descent of its tree per change
// (batch_cpu: see the commit that added this).
import { RESULT_STATUSES, RUN_STATUSES, type ChildType } from '../api/resources.js';
import { OrderedIndex, compareValues, type ClassMask, type SortValue } from './ordered_index.js';
import { shownStatus } from './rows.js';

/** A type a shard lists (state.ts's EventType, not imported: state.ts imports this file). */
type EventType = 'playbook' | ChildType;

/** The statuses a type's `status` filter chooses from (in class order); none: no status filter. */
const STATUSES: Record<EventType, readonly string[]> = {
  playbook: RUN_STATUSES, play: RUN_STATUSES, task: RUN_STATUSES, result: RESULT_STATUSES,
  host: [], file: [], record: [],
};

/** The status a filter reads of a row (a playbook's row is its aggregate). */
function statusOf(type: EventType, row: any): string | null {
  switch (type) {
    case 'playbook': return row.playbook.status;
    case 'result': return shownStatus(row);
    case 'play': case 'task': return row.status;
    default: return null;
  }
}

/** A row's value for an order key, as the list shows and compares it. */
export function sortValue(type: EventType, row: any, key: string): SortValue {
  if (key === 'id') return row.id;
  const r = type === 'playbook' ? row.playbook : row;
  switch (key) {
    case 'duration': return r.ended === null ? null : r.ended - r.started;
    case 'runner_version': return r.runnerVersion;
    default: return r[key] ?? null;
  }
}

/**
 * A reader of one key's value for one type: a function of its own per key, so
 * each reads one property at a site that sees few row shapes (a keyed read,
 * row[key], would look the key up at every change of every row).
 */
function readerOf(type: EventType, key: string): (row: any) => SortValue {
  if (type === 'playbook') return (agg) => sortValue(type, agg, key);
  switch (key) {
    case 'id': return (r) => r.id;
    case 'created': return (r) => r.created;
    case 'updated': return (r) => r.updated;
    case 'started': return (r) => r.started;
    case 'ended': return (r) => r.ended;
    case 'duration': return (r) => (r.ended === null ? null : r.ended - r.started);
    case 'changed': return (r) => r.changed;
    case 'failed': return (r) => r.failed;
    case 'ok': return (r) => r.ok;
    case 'skipped': return (r) => r.skipped;
    case 'unreachable': return (r) => r.unreachable;
    default: return (r) => sortValue(type, r, key);
  }
}

/** Order keys whose values are numbers (or null): timestamps, durations, counters, ids. */
const NUMERIC = new Set(['id', 'created', 'updated', 'started', 'ended', 'duration', 'changed', 'failed', 'ok', 'skipped', 'unreachable']);

/** One kept order, with what it was built for. */
class KeptOrder {
  readonly index: OrderedIndex<any>;
  /** what the row being changed held here before (ListOrders.before → changed) */
  wasValue: SortValue = null;
  wasCls = 0;
  /** the row's value for the key */
  readonly value: (row: any) => SortValue;
  constructor(readonly type: EventType, readonly key: string, private readonly statuses: readonly string[]) {
    this.value = readerOf(type, key);
    // one class more than the statuses: a status outside them (never shown by a filter)
    this.index = new OrderedIndex(statuses.length + 1, NUMERIC.has(key));
  }

  classOf(row: any): number {
    if (this.statuses.length === 0) return 0;
    const at = this.statuses.indexOf(statusOf(this.type, row)!);
    return at < 0 ? this.statuses.length : at;
  }

  add(row: any): void { this.index.insert(this.value(row), row.id, this.classOf(row)); }
  remove(row: any): void { this.index.remove(this.value(row), row.id, this.classOf(row)); }

  /** The classes of the statuses a filter names. */
  mask(statuses: readonly string[] | null): ClassMask {
    if (statuses === null) return null;
    const mask: number[] = [];
    for (const s of statuses) {
      const at = this.statuses.indexOf(s);
      if (at >= 0 && !mask.includes(at)) mask.push(at);
    }
    return mask;
  }
}

/**
 * Every row's entry of an order, sorted by (value, id): values, ids, classes.
 * Numbers are sorted as numbers in typed arrays, and not at all when they
 * already are in order (a row's `created` mostly follows its id).
 */
function sortedEntries(kept: KeptOrder, rows: Iterable<any>): [SortValue[], number[], number[]] {
  const values: SortValue[] = [], ids: number[] = [], cls: number[] = [];
  let numeric = true, sorted = true;
  for (const row of rows) {
    const v = kept.value(row), n = values.length;
    if (v !== null && typeof v !== 'number') numeric = false;
    if (sorted && n > 0 && (compareValues(values[n - 1]!, v) || ids[n - 1]! - row.id) > 0) sorted = false;
    values.push(v); ids.push(row.id); cls.push(kept.classOf(row));
  }
  if (sorted) return [values, ids, cls];
  const n = values.length;
  const at = new Uint32Array(n);
  for (let i = 0; i < n; i++) at[i] = i;
  let order: Uint32Array | null = numeric ? packedOrder(values, ids) : null;
  if (order !== null) { /* sorted without a comparator */ } else if (numeric) {
    const v = new Float64Array(n), id = new Float64Array(ids);
    for (let i = 0; i < n; i++) v[i] = values[i] === null ? -Infinity : values[i] as number;
    order = at.sort((a, b) => (v[a]! - v[b]!) || (id[a]! - id[b]!));
  } else order = at.sort((a, b) => compareValues(values[a]!, values[b]!) || ids[a]! - ids[b]!);
  return [Array.from(order, (i) => values[i]!), Array.from(order, (i) => ids[i]!), Array.from(order, (i) => cls[i]!)];
}

/**
 * The positions of integer values (null below all) sorted by (value,
 * position), found by a native sort of 64-bit words (value above, position
 * below), when the rows came in id order (then position order is id order)
 * and the words can hold both: on 1 M results' timestamps ~10 x faster than a
 * sort with a comparator (seconds). null: they cannot.
 */
function packedOrder(values: readonly SortValue[], ids: readonly number[]): Uint32Array | null {
  const n = values.length;
  let min = Infinity, max = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (i > 0 && ids[i - 1]! >= ids[i]!) return null;
    if (v === null) continue;
    if (!Number.isSafeInteger(v)) return null;
    if ((v as number) < min) min = v as number;
    if ((v as number) > max) max = v as number;
  }
  if (min === Infinity) min = max = 0;
  const bits = Math.max(1, Math.ceil(Math.log2(n + 1)));
  // null is 0, values from 1
  if ((max - min + 2) * 2 ** bits >= 2 ** 63) return null;
  const shift = BigInt(bits);
  const words = new BigUint64Array(n);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    words[i] = ((v === null ? 0n : BigInt((v as number) - min + 1)) << shift) | BigInt(i);
  }
  words.sort();
  const mask = (1n << shift) - 1n;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = Number(words[i]! & mask);
  return order;
}

/** The kept orders of a row about to change, each holding what the row was (ListOrders.before). */
export type OrderMarks = readonly KeptOrder[];

export class ListOrders {
  /** kept orders by type; absent: none of the type is kept */
  private readonly byType = new Map<EventType, KeptOrder[]>();

  /**
   * The index of `type` by `key` (building it from `rows`, every row of the
   * type in id order, if no list asked for it yet), and the class mask of a
   * status filter's values.
   */
  get(type: EventType, key: string, rows: () => Iterable<any>, statuses: readonly string[] | null): { index: OrderedIndex<any>; mask: ClassMask } {
    let kept = this.byType.get(type)?.find((k) => k.key === key);
    if (kept === undefined) {
      kept = new KeptOrder(type, key, STATUSES[type]);
      kept.index.load(...sortedEntries(kept, rows()));
      let list = this.byType.get(type);
      if (list === undefined) this.byType.set(type, list = []);
      list.push(kept);
    }
    return { index: kept.index, mask: kept.mask(statuses) };
  }

  /** Orders of `type` are kept (a change to its rows must be told). */
  keeps(type: EventType): boolean { return this.byType.has(type); }

  added(type: EventType, row: any): void {
    const list = this.byType.get(type);
    if (list !== undefined) for (const k of list) k.add(row);
  }

  removed(type: EventType, row: any): void {
    const list = this.byType.get(type);
    if (list !== undefined) for (const k of list) k.remove(row);
  }

  /**
   * A row is about to change: each kept order of its type notes what the row
   * holds there (no allocation: this runs for every result's host). null:
   * none kept. Give the answer to changed() once the row changed, before any
   * other row of the type changes.
   */
  before(type: EventType, row: any): OrderMarks | null {
    const list = this.byType.get(type);
    if (list === undefined) return null;
    for (const k of list) { k.wasValue = k.value(row); k.wasCls = k.classOf(row); }
    return list;
  }

  /** A row changed: each order its value or status moved in takes it out and in again. */
  changed(_type: EventType, row: any, marks: OrderMarks | null): void {
    if (marks === null) return;
    for (const k of marks) {
      const value = k.value(row), cls = k.classOf(row);
      if (value === k.wasValue && cls === k.wasCls) continue;
      k.index.remove(k.wasValue, row.id, k.wasCls);
      k.index.insert(value, row.id, cls);
    }
  }

  /**
   * Many rows of a type went at once (a playbook deleted with its children):
   * taken out one by one, or when they are many, the order is dropped and
   * built again by the next list that asks for it.
   */
  removedMany(type: EventType, rows: readonly any[]): void {
    const list = this.byType.get(type);
    if (list === undefined || rows.length === 0) return;
    const size = list[0]!.index.size;
    if (rows.length * 8 > size && size > 4096) { this.byType.delete(type); return; }
    for (const k of list) for (const row of rows) k.remove(row);
  }

  /** Forget every order (the state is rebuilt from a snapshot); lists build them again. */
  clear(): void { this.byType.clear(); }
}
