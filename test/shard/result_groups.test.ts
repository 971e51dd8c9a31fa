// An aggregate's results grouped by task or host (src/shard/result_groups.ts)
// hold exactly the results of each parent, in id order, whatever order ids
// came in (recovery), however results moved between parents, and whatever was
// deleted one by one or many at once. A seeded model test against a Map of
// every row's parent (replay with RESULT_GROUPS_SEED=<seed>). Lists built on
// the groups are checked against full scans in shard_aggregate.test.ts.
import test from 'ava';
import { ResultGroups, firstAfter } from '../../src/shard/result_groups.js';
import { ResultRow } from '../../src/shard/rows.js';
import { mulberry32, seedFrom } from '../helpers/random.js';

const row = (id: number, task: number): ResultRow =>
  new ResultRow({ id, playbook: 1, play: 1, task, host: 1, created: 0, updated: 0, started: 0 });

test('groups equal the rows of each parent in id order after adds out of order, moves and deletes', (t) => {
  const seed = seedFrom('RESULT_GROUPS_SEED');
  t.log(`seed ${seed} (replay with RESULT_GROUPS_SEED=${seed})`);
  const rnd = mulberry32(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  let moved = 0, late = 0, bulk = 0;
  for (let round = 0; round < 30; round++) {
    const groups = new ResultGroups((r) => r.task);
    const rows = new Map<number, ResultRow>();
    let next = 100;
    for (let op = 0; op < 400; op++) {
      const r = rnd();
      if (r < 0.55) {
        // mostly ascending ids; now and then one below (recovery loads out of order)
        const id = rnd() < 0.15 ? 1 + int(next - 1) : (next += 1 + int(3));
        if (rows.has(id)) continue;
        if (id < next) late++;
        const x = row(id, 1 + int(6));
        rows.set(id, x); groups.add(x);
      } else if (r < 0.75 && rows.size) {
        const x = [...rows.values()][int(rows.size)]!;
        const from = x.task;
        x.task = 1 + int(6);
        if (x.task !== from) { groups.delete(x, from); groups.add(x); moved++; }
      } else if (r < 0.9 && rows.size) {
        const x = [...rows.values()][int(rows.size)]!;
        rows.delete(x.id); groups.deleteAll([x]);
      } else if (rows.size) {
        // many at once: every row of one parent, and some others
        const parent = 1 + int(6);
        const gone = [...rows.values()].filter((x) => x.task === parent || rnd() < 0.1);
        for (const x of gone) rows.delete(x.id);
        groups.deleteAll(gone); bulk++;
      }
      if (op % 50 === 49 || op === 399) {
        const expected = new Map<number, number[]>();
        for (const x of [...rows.values()].sort((a, b) => a.id - b.id)) expected.set(x.task, [...(expected.get(x.task) ?? []), x.id]);
        const got = new Map([...groups.entries()].map(([p, g]) => [p, g.map((x) => x.id)]));
        t.deepEqual([...got].sort((a, b) => a[0] - b[0]), [...expected].sort((a, b) => a[0] - b[0]), `round ${round} op ${op}`);
        for (const p of [1, 2, 3, 4, 5, 6]) t.deepEqual(groups.of(p).map((x) => x.id), expected.get(p) ?? []);
      }
    }
  }
  t.log(`moved ${moved}, late ${late}, bulk deletes ${bulk}`);
  t.true(moved > 100 && late > 100 && bulk > 50);
});

test('firstAfter: the first position above an id, at both ends and between', (t) => {
  const rows = [3, 5, 9].map((id) => ({ id }));
  t.deepEqual([0, 3, 4, 5, 8, 9, 10].map((id) => firstAfter(rows, id)), [0, 1, 1, 2, 2, 3, 3]);
  t.is(firstAfter([], 7), 0);
});
