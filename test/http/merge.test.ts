// The order of list rows (SPEC §5: `order=`, ties by ascending id, nulls first
// ascending as SQLite sorts them) and the front's scatter/gather merge: each shard
// returns its first offset+limit rows in order, the front merges and cuts the page.
import test from 'ava';
import { compareRows, mergePages } from '../../src/api/order.js';
import type { ListRow } from '../../src/shard/protocol.js';
import { mulberry32 } from '../helpers/random.js';


const sortRows = (rows: ListRow[], desc: boolean[]): ListRow[] => [...rows].sort((a, b) => compareRows(a, b, desc));
const ids = (rows: ListRow[], keys: number): number[] => rows.map((r) => r[keys] as number);

test('compareRows: one ascending key, then ascending id', (t) => {
  t.true(compareRows([1, 10, 'x'], [2, 5, 'y'], [false]) < 0);
  t.true(compareRows([2, 5, 'y'], [1, 10, 'x'], [false]) > 0);
  t.true(compareRows([1, 5, 'x'], [1, 10, 'y'], [false]) < 0, 'tie → lower id first');
  t.is(compareRows([1, 5, 'x'], [1, 5, 'x'], [false]), 0);
  t.true(compareRows(['a', 9, ''], ['b', 1, ''], [false]) < 0);
  t.true(compareRows(['B', 1, ''], ['a', 2, ''], [false]) < 0, 'strings compare by code unit, like the shards');
});

test('compareRows: descending flips the key but not the id tie-break', (t) => {
  t.true(compareRows([2, 10, ''], [1, 5, ''], [true]) < 0);
  t.true(compareRows([1, 5, ''], [2, 10, ''], [true]) > 0);
  t.true(compareRows([1, 5, ''], [1, 10, ''], [true]) < 0, 'tie → still lower id first');
  t.true(compareRows([1, 10, ''], [1, 5, ''], [true]) > 0);
});

test('compareRows: null first ascending, last descending', (t) => {
  t.true(compareRows([null, 9, ''], [0, 1, ''], [false]) < 0);
  t.true(compareRows([0, 1, ''], [null, 9, ''], [false]) > 0);
  t.true(compareRows([null, 9, ''], ['', 1, ''], [false]) < 0);
  t.true(compareRows([null, 9, ''], [-5, 1, ''], [true]) > 0);
  t.true(compareRows([-5, 1, ''], [null, 9, ''], [true]) < 0);
  t.true(compareRows([null, 1, ''], [null, 2, ''], [false]) < 0, 'two nulls tie → id');
  t.true(compareRows([null, 1, ''], [null, 2, ''], [true]) < 0);
  const rows: ListRow[] = [[3, 1, ''], [null, 2, ''], [1, 3, ''], [null, 4, ''], [2, 5, '']];
  t.deepEqual(ids(sortRows(rows, [false]), 1), [2, 4, 3, 5, 1]);
  t.deepEqual(ids(sortRows(rows, [true]), 1), [1, 5, 3, 2, 4]);
});

test('compareRows: several keys, each with its own direction', (t) => {
  // order=status,-started
  const rows: ListRow[] = [
    ['ok', 100, 1, ''], ['failed', 100, 2, ''], ['ok', 300, 3, ''], ['failed', null, 4, ''],
    ['ok', 100, 5, ''], [null, 1, 6, ''], ['failed', 200, 7, ''],
  ];
  t.deepEqual(ids(sortRows(rows, [false, true]), 2), [6, 7, 2, 4, 3, 1, 5]);
  // order=-status,started
  t.deepEqual(ids(sortRows(rows, [true, false]), 2), [1, 5, 3, 4, 2, 7, 6]);
  // a later key decides only when the earlier ones tie
  t.true(compareRows(['a', 1, 9, ''], ['b', 0, 1, ''], [false, false]) < 0);
  t.true(compareRows(['a', 1, 9, ''], ['a', 0, 1, ''], [false, false]) > 0);
});

test('compareRows: no keys is id order (the natural order)', (t) => {
  t.true(compareRows([1, ''], [2, ''], []) < 0);
  t.true(compareRows([20, ''], [3, ''], []) > 0);
});

test('mergePages: small hand-made example across three shards', (t) => {
  const desc = [true];
  // order=-started, offset 2, limit 3; each shard sent its first 5 rows
  const parts: ListRow[][] = [
    [[900, 1, 'a'], [500, 4, 'd'], [100, 7, 'g']],
    [[800, 2, 'b'], [500, 3, 'c'], [null, 8, 'h']],
    [[700, 5, 'e'], [600, 6, 'f']],
  ];
  t.deepEqual(mergePages(parts, desc, 0, 3).map((r) => r[2]), ['a', 'b', 'e']);
  t.deepEqual(mergePages(parts, desc, 2, 3).map((r) => r[2]), ['e', 'f', 'c']);
  t.deepEqual(mergePages(parts, desc, 6, 3).map((r) => r[2]), ['g', 'h']);
  t.deepEqual(mergePages(parts, desc, 8, 3), []);
  t.deepEqual(mergePages([[], [], []], desc, 0, 3), []);
  t.deepEqual(mergePages([[[1, 1, 'x']]], [], 0, 1), [[1, 1, 'x']]);
});

type Gen = () => number | string | null;

/** Random rows with `keys` sort columns drawn from small domains (many ties, some nulls). */
function randomRows(rnd: () => number, n: number, gens: Gen[]): ListRow[] {
  const rows: ListRow[] = [];
  const used = new Set<number>();
  for (let i = 0; i < n; i++) {
    let id: number;
    do id = 1 + Math.floor(rnd() * n * 4); while (used.has(id));
    used.add(id);
    rows.push([...gens.map((g) => g()), id, `{"id":${id}}`]);
  }
  return rows;
}

test('mergePages equals the page cut from the globally sorted list (seeded property)', (t) => {
  const rnd = mulberry32(20261122);
  const int = (n: number) => Math.floor(rnd() * n);
  const gens: Record<string, Gen> = {
    time: () => (rnd() < 0.15 ? null : 1_700_000_000_000_000 + int(20) * 1_000_000),
    count: () => int(4),
    name: () => (rnd() < 0.1 ? null : ['alpha', 'Beta', 'beta', 'gamma', ''][int(5)]!),
    duration: () => (rnd() < 0.3 ? null : int(3) * 1000),
  };
  const kinds = Object.keys(gens);
  let cases = 0;
  let nonEmpty = 0;
  for (let round = 0; round < 1500; round++) {
    const keyCount = int(4); // 0 = natural (id) order
    const columns = Array.from({ length: keyCount }, () => gens[kinds[int(kinds.length)]!]!);
    const desc = columns.map(() => rnd() < 0.5);
    const rows = randomRows(rnd, int(60), columns);
    const shards = 1 + int(4);
    const limit = 1 + int(rnd() < 0.2 ? 100 : 12);
    const offset = rnd() < 0.2 ? 0 : int(rows.length + 5);
    // scatter: each shard holds a random subset, sorts it and sends its first offset+limit rows
    const held: ListRow[][] = Array.from({ length: shards }, () => []);
    for (const row of rows) held[int(shards)]!.push(row);
    const parts = held.map((part) => sortRows(part, desc).slice(0, offset + limit));
    const expected = sortRows(rows, desc).slice(offset, offset + limit);
    // a single shard cuts the page itself (skip = offset), the front then takes it whole
    const got = shards === 1
      ? mergePages([sortRows(held[0]!, desc).slice(offset, offset + limit)], desc, 0, limit)
      : mergePages(parts, desc, offset, limit);
    const tag = `round ${round}: ${shards} shards, ${rows.length} rows, keys ${keyCount} desc ${desc}, offset ${offset}, limit ${limit}`;
    if (JSON.stringify(got) !== JSON.stringify(expected)) { t.deepEqual(got, expected, tag); return; }
    // and the merged page is sorted and has at most `limit` rows
    t.true(got.length <= limit, tag);
    cases++;
    if (got.length) nonEmpty++;
  }
  t.is(cases, 1500);
  t.true(nonEmpty > 1000, `only ${nonEmpty} non-empty pages`);
});

test('mergePages with one part of already-cut rows, as the front calls it for a pinned playbook', (t) => {
  const rnd = mulberry32(7);
  const rows = sortRows(randomRows(rnd, 50, [() => Math.floor(rnd() * 5)]), [true]);
  for (let offset = 0; offset < 55; offset += 7) {
    for (const limit of [1, 3, 10, 100]) {
      const page = rows.slice(offset, offset + limit);
      t.deepEqual(mergePages([page], [true], 0, limit), page);
      // and as several shards that each sent the first offset+limit rows of a split
      const split: ListRow[][] = [[], []];
      rows.forEach((r, i) => split[i % 2]!.push(r));
      t.deepEqual(mergePages(split.map((p) => p.slice(0, offset + limit)), [true], offset, limit), page);
    }
  }
});

test('mergePages does not change the parts it merges', (t) => {
  const parts: ListRow[][] = [[[1, 1, 'a'], [3, 3, 'c']], [[2, 2, 'b']]];
  const copy = JSON.parse(JSON.stringify(parts));
  mergePages(parts, [false], 1, 2);
  t.deepEqual(parts, copy);
});
