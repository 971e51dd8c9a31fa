// Lists of every row of a shard in one order, or with a `status` filter, are
// cut out of orders the shard keeps (src/shard/list_orders.ts,
// ordered_index.ts) from the first list that asks, through every create,
// update and delete after it. A seeded model test (replay with
// LIST_ORDERS_SEED=<seed>): random writes of every type, and after each few
// of them, every documented order of every type, both directions, with and
// without a status filter, paged by offset and by cursor both ways, against a
// full sort of the rows (ties by ascending id) and against the scan every
// other list uses.
import test from 'ava';
import { ORDER_KEYS, RESULT_STATUSES, RUN_STATUSES } from '../../src/api/resources.js';
import { compareRows, pageOrder } from '../../src/api/order.js';
import { runList } from '../../src/shard/list.js';
import { OrderedIndex, OrderWindow } from '../../src/shard/ordered_index.js';
import type { ListQuery, ListRow, NormalizedFilter } from '../../src/shard/protocol.js';
import type { Serializer } from '../../src/shard/serialize.js';
import { ShardState, type Aggregate, type Event, type EventType } from '../../src/shard/state.js';
import { shownStatus } from '../../src/shard/rows.js';
import { mulberry32, seedFrom } from '../helpers/random.js';

type Listed = EventType;
const TYPES: Listed[] = ['playbook', 'play', 'task', 'host', 'result', 'file', 'record'];
/** keys-only lists never render: no serializer is needed */
const serializer = null as unknown as Serializer;

/** A row's value for an order key, written out again from the documented columns (not the code under test). */
function expectedValue(type: Listed, row: any, key: string): number | string | null {
  const r = type === 'playbook' ? (row as Aggregate).playbook : row;
  switch (key) {
    case 'id': return r.id;
    case 'duration': return r.ended === null ? null : r.ended - r.started;
    default: return r[key] ?? null;
  }
}

function expectedStatus(type: Listed, row: any): string | null {
  if (type === 'playbook') return (row as Aggregate).playbook.status;
  if (type === 'result') return shownStatus(row);
  return type === 'play' || type === 'task' ? row.status : null;
}

function rowsOf(state: ShardState, type: Listed): any[] {
  return type === 'playbook' ? [...state.aggregates.values()] : [...state.index(type).values()];
}

test('every order and status filter pages as a full sort, by offset and by cursor, under random writes', (t) => {
  const seed = seedFrom('LIST_ORDERS_SEED');
  t.log(`seed ${seed} (replay with LIST_ORDERS_SEED=${seed})`);
  const rnd = mulberry32(seed);
  const int = (n: number): number => Math.floor(rnd() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  // few distinct values, so ties (broken by id) are common; null ended now and then
  const time = (): number => 1_000 + int(40) * 10;
  const ended = (): number | null => (rnd() < 0.2 ? null : 1_500 + int(30) * 10);
  let checked = 0, cursors = 0, moves = 0, deletes = 0;

  for (let round = 0; round < 6; round++) {
    const state = new ShardState();
    const next = [0, 0, 0, 0, 0, 0, 0, 0];
    const id = (code: number): number => (next[code]! += 1 + int(2));
    const apply = (ev: Event): void => { state.apply(ev); };
    const live = (type: Listed): any[] => rowsOf(state, type);
    const ops = 500;
    for (let op = 0; op < ops; op++) {
      const r = rnd();
      const aggs = live('playbook') as Aggregate[];
      if (aggs.length === 0 || r < 0.04) {
        const pid = id(1);
        apply({ e: 'create', t: 'playbook', p: pid, d: { id: pid, created: time(), updated: time(), started: time(), ended: ended(), name: rnd() < 0.2 ? null : pick(['a', 'b', 'c']), runner_version: '2.16', status: pick(RUN_STATUSES), path: '/p.yml', labels: [] } });
        continue;
      }
      const agg = pick(aggs);
      const p = agg.id;
      const base = { playbook: p, created: time(), updated: time() };
      if (r < 0.5) {
        // a create of a child of one playbook
        const plays = [...agg.plays.values()], tasks = [...agg.tasks.values()], hosts = [...agg.hosts.values()], files = [...agg.files.values()];
        const kind = int(6);
        if (kind === 0 || plays.length === 0) {
          const d = { ...base, id: id(2), started: time(), ended: ended(), name: 'play', uuid: `u${next[2]}`, status: pick(RUN_STATUSES) };
          apply({ e: 'create', t: 'play', p, d });
        } else if (kind === 1 || files.length === 0) {
          const d = { ...base, id: id(6), path: `/f${int(5)}.yml`, sha1: `s${int(3)}` };
          apply({ e: 'create', t: 'file', p, d });
        } else if (kind === 2 || tasks.length === 0) {
          const d = { ...base, id: id(3), play: pick(plays).id, file: pick(files).id, started: time(), ended: ended(), name: 'task', action: 'x', lineno: 1, handler: false, status: pick(RUN_STATUSES) };
          apply({ e: 'create', t: 'task', p, d });
        } else if (kind === 3 || hosts.length === 0) {
          const d = { ...base, id: id(4), name: `h${int(4)}`, ...(rnd() < 0.3 ? { ok: int(3), failed: int(2) } : {}) };
          apply({ e: 'create', t: 'host', p, d });
        } else if (kind === 4) {
          const d = { ...base, id: id(7), key: pick(['k1', 'k2', 'k3']), type: 'text' };
          apply({ e: 'create', t: 'record', p, d });
        } else {
          const task = pick(tasks);
          const d = { ...base, id: id(5), play: task.play, task: task.id, host: pick(hosts).id, started: time(), ended: ended(), status: pick(['ok', 'failed', 'skipped', 'unreachable', 'unknown']), changed: rnd() < 0.3, ignore_errors: rnd() < 0.2, delegated_to: [] };
          apply({ e: 'create', t: 'result', p, d });
        }
      } else if (r < 0.85) {
        // an update that may move a row in its orders
        const type = pick(TYPES.filter((x) => x === 'playbook' || (agg as any)[x + 's'].size > 0));
        if (type === 'playbook') {
          apply({ e: 'update', t: 'playbook', p, id: p, d: pick([{ status: pick(RUN_STATUSES) }, { ended: ended(), updated: time() }, { name: pick(['a', 'b', null]) }, { started: time() }]) });
        } else {
          const row = pick([...(agg as any)[type + 's'].values()]);
          const hosts = [...agg.hosts.values()];
          const d = type === 'result'
            ? pick([{ status: pick(['ok', 'failed', 'skipped', 'unreachable']), updated: time() }, { ended: ended() }, { changed: rnd() < 0.5 }, { ignore_errors: rnd() < 0.5 }, { host: pick(hosts).id }, { started: time() }])
            : type === 'host' ? pick([{ ok: int(5) }, { skipped: int(5), unreachable: int(2) }, { changed: int(3), updated: time() }, { name: `h${int(9)}` }])
            : type === 'file' ? { path: `/f${int(9)}.yml`, updated: time() }
            : type === 'record' ? { key: `k${int(9)}`, updated: time() }
            : pick([{ status: pick(RUN_STATUSES) }, { ended: ended(), updated: time() }, { started: time() }]);
          apply({ e: 'update', t: type, p, id: row.id, d });
        }
        moves++;
      } else {
        // a delete, cascading to the rows that go with it
        const type = pick(TYPES.filter((x) => x === 'playbook' || (agg as any)[x + 's'].size > 0));
        if (type === 'playbook' && rnd() < 0.6) continue;
        const victim = type === 'playbook' ? p : pick([...(agg as any)[type + 's'].values()]).id;
        apply({ e: 'delete', t: type, p, id: victim });
        deletes++;
      }
      if (op % 25 !== 24) continue;
      for (const type of TYPES) {
        const all = live(type);
        const statuses = type === 'result' ? RESULT_STATUSES : type === 'playbook' || type === 'play' || type === 'task' ? RUN_STATUSES : null;
        const filterSets: Array<string[] | null> = [null];
        if (statuses) filterSets.push([pick(statuses)], statuses.filter(() => rnd() < 0.5));
        for (const key of ORDER_KEYS[type]) {
          for (const desc of [false, true]) {
            for (const chosen of filterSets) {
              // id ascending without a filter is the natural order, served elsewhere
              const order: Array<[string, boolean]> = key === 'id' && !desc && chosen ? [] : [[key, desc]];
              const filters: NormalizedFilter[] = chosen ? [{ kind: 'status', column: 'status', value: chosen }] : [];
              const matching = all.filter((row) => chosen === null || chosen.includes(expectedStatus(type, row)!));
              const full: ListRow[] = matching.map((row) => (order.length ? [expectedValue(type, row, key), row.id, ''] : [row.id, '']));
              const descs = order.map(([, d]) => d);
              full.sort((a, b) => compareRows(a, b, descs));
              const q = (more: Partial<ListQuery>): ListQuery => ({ type, filters, order, skip: 0, take: 10, keysOnly: true, ...more });
              const scanned = (more: Partial<ListQuery>) => runList(state, serializer, q({ ...more, filters: [...filters, { kind: 'int_gt', column: 'id', value: 0 }] }));
              const what = `round ${round} op ${op}: ${type} order=${desc ? '-' : ''}${key} status=${chosen?.join('|') ?? '*'}`;
              // pages by offset
              for (const skip of [0, int(full.length + 2), int(full.length + 2)]) {
                const take = 1 + int(8);
                const got = runList(state, serializer, q({ skip, take }));
                if (got.count !== full.length) return t.fail(`${what}: count ${got.count}, want ${full.length}`);
                t.deepEqual(got.rows, full.slice(skip, skip + take), `${what} offset ${skip}`);
                checked++;
              }
              // keyset pages both ways, from a row's keys, or keys between rows (a row gone or moved since)
              for (let k = 0; k < 3; k++) {
                const boundary: Array<number | string | null> = full.length && rnd() < 0.7
                  ? (full[int(full.length)]!.slice(0, -1) as Array<number | string | null>)
                  : [...(order.length ? [expectedValue(type, pick(all.length ? all : [{ id: 1, playbook: { id: 1 } }]), key)] : []), int(next[1]! + next[5]! + 3)];
                if (order.length === 0) boundary.splice(0, boundary.length - 1);
                // an id order's value is the id (a cursor of ours never says otherwise)
                else if (key === 'id') boundary[0] = boundary[1]!;
                for (const back of [false, true]) {
                  const cmp = pageOrder(descs, back);
                  const beyond = full.filter((row) => cmp(row, [...boundary, '']) > 0);
                  beyond.sort(cmp);
                  const take = 1 + int(6);
                  const got = runList(state, serializer, q({ take, bound: { keys: boundary, back } }));
                  const old = scanned({ take, bound: { keys: boundary, back } });
                  t.deepEqual(got, old, `${what} cursor ${JSON.stringify(boundary)} back=${back}: as the scan`);
                  if (got.count !== full.length || got.beyond !== beyond.length) return t.fail(`${what} cursor ${JSON.stringify(boundary)} back=${back}: count ${got.count}/${full.length}, beyond ${got.beyond}/${beyond.length}`);
                  t.deepEqual(got.rows, beyond.slice(0, take), `${what} cursor ${JSON.stringify(boundary)} back=${back}`);
                  cursors++;
                }
              }
            }
          }
        }
      }
    }
  }
  t.log(`checked ${checked} offset pages and ${cursors} cursor pages; ${moves} updates, ${deletes} deletes`);
  t.true(checked > 1000 && cursors > 1000 && moves > 100 && deletes > 50);
});

test('an ordered index keeps its entries sorted and counted through splits, removals and emptied leaves', (t) => {
  const seed = seedFrom('LIST_ORDERS_SEED');
  t.log(`seed ${seed} (replay with LIST_ORDERS_SEED=${seed})`);
  const rnd = mulberry32(seed);
  const index = new OrderedIndex<number>(3);
  const model = new Map<number, [number | null, number]>();
  for (let op = 0; op < 60_000; op++) {
    const r = rnd();
    // appends (keys that grow), inserts anywhere, removals, and phases that empty most of the tree
    const phase = Math.floor(op / 10_000) % 2;
    if (r < (phase === 0 ? 0.7 : 0.3)) {
      const id = op + 1;
      const value = rnd() < 0.5 ? op : rnd() < 0.1 ? null : Math.floor(rnd() * 500);
      const cls = Math.floor(rnd() * 3);
      index.insert(value, id, cls); model.set(id, [value, cls]);
    } else if (model.size) {
      const keys = [...model.keys()];
      const id = keys[Math.floor(rnd() * Math.min(keys.length, 50))]!;
      const [value, cls] = model.get(id)!;
      t.true(index.remove(value, id, cls));
      model.delete(id);
      if (rnd() < 0.1) t.false(index.remove(value, id, cls));
    }
    if (op % 5000 === 4999) {
      const want = [...model].map(([id, [value, cls]]) => ({ value, id, cls }))
        .sort((a, b) => compareRows([a.value, a.id], [b.value, b.id], [false]));
      t.deepEqual([...index.entries()], want);
      for (const mask of [null, [0], [1, 2]]) {
        const sub = want.filter((e) => mask === null || mask.includes(e.cls));
        t.is(index.count(mask), sub.length);
        for (const desc of [false, true]) {
          const w = new OrderWindow(index, desc, mask);
          const sorted = [...sub].sort((a, b) => compareRows([a.value, a.id], [b.value, b.id], [desc]));
          for (let k = 0; k < 20 && sorted.length; k++) {
            const pos = Math.floor(rnd() * sorted.length);
            t.is(w.at(pos).id, sorted[pos]!.id);
            t.is(w.positionOf(sorted[pos]!.value, sorted[pos]!.id, false), pos);
          }
        }
      }
    }
  }
});
