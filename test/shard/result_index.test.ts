// The shard's result index (src/shard/result_index.ts) answers as a Map of the
// same ids would, and iterates in ascending id order, whatever order the ids
// came in (recovery loads snapshots playbook by playbook) and whatever was
// deleted. A seeded model test against a Map (replay with RESULT_INDEX_SEED=<seed>).
import test from 'ava';
import { isDeepStrictEqual } from 'node:util';
import { ResultIndex } from '../../src/shard/result_index.js';
import { mulberry32, seedFrom } from '../helpers/random.js';

const sorted = (m: Map<number, string>): Array<[number, string]> => [...m].sort((a, b) => a[0] - b[0]);

test('appends, late ids, deletes and compaction read back as a Map of the same ids, in id order', (t) => {
  const seed = seedFrom('RESULT_INDEX_SEED');
  t.log(`seed ${seed} (replay with RESULT_INDEX_SEED=${seed})`);
  const rnd = mulberry32(seed);
  const holes = (index: ResultIndex<string>): number => (index as unknown as { holes: number }).holes;
  let compactions = 0;
  let arrays = 0;
  for (let round = 0; round < 40; round++) {
    const index = new ResultIndex<string>();
    const model = new Map<number, string>();
    let next = 1 + Math.floor(rnd() * 5);
    const ops = 200 + Math.floor(rnd() * 8000);
    const deletes = 0.05 + rnd() * 0.3;
    for (let n = 0; n < ops; n++) {
      const r = rnd();
      if (r < 0.5) {
        // the common case: a new id above every other (some ids go to other shards)
        next += 1 + Math.floor(rnd() * 3);
        const row = `r${next}.${n}`;
        index.set(next, row); model.set(next, row);
      } else if (r < 0.6) {
        // an id below the last one (recovery), or a row set again
        const id = 1 + Math.floor(rnd() * next);
        const row = `l${id}.${n}`;
        index.set(id, row); model.set(id, row);
      } else if (r < 0.6 + deletes) {
        const id = 1 + Math.floor(rnd() * (next + 10));
        const before = holes(index);
        if (index.delete(id) !== model.delete(id)) return t.fail(`round ${round}: delete ${id}`);
        if (holes(index) < before) compactions++;
      } else {
        const id = Math.floor(rnd() * (next + 10));
        if (index.get(id) !== model.get(id) || index.has(id) !== model.has(id)) return t.fail(`round ${round}: get/has ${id}`);
        if (index.size !== model.size) return t.fail(`round ${round}: size ${index.size}, want ${model.size}`);
        if (rnd() < 0.05 && !isDeepStrictEqual([...index.entries()], sorted(model))) return t.fail(`round ${round}: entries after ${n} operations`);
        // the array a list's page is cut from: every row, in id order, no hole; the index answers the same after
        if (rnd() < 0.02) {
          if (!isDeepStrictEqual([...index.inIdOrder()], sorted(model).map(([, row]) => row))) return t.fail(`round ${round}: inIdOrder after ${n} operations`);
          if (index.size !== model.size) return t.fail(`round ${round}: size after inIdOrder`);
          arrays++;
        }
      }
    }
    // then most rows go (a playbook deleted, retention)
    for (const id of [...model.keys()]) {
      if (rnd() < 0.2) continue;
      const before = holes(index);
      if (!index.delete(id) || !model.delete(id)) return t.fail(`round ${round}: delete ${id} of most`);
      if (holes(index) < before) compactions++;
      if (rnd() < 0.01 && index.size !== model.size) return t.fail(`round ${round}: size while deleting most`);
    }
    t.is(index.size, model.size);
    for (const id of model.keys()) if (index.get(id) !== model.get(id)) return t.fail(`round ${round}: get ${id} at the end`);
    const want = sorted(model);
    if (!isDeepStrictEqual([...index.keys()], want.map(([id]) => id))) return t.fail(`round ${round}: keys`);
    if (!isDeepStrictEqual([...index.values()], want.map(([, row]) => row))) return t.fail(`round ${round}: values`);
    if (!isDeepStrictEqual([...index], want)) return t.fail(`round ${round}: iterated`);
    // settled: still the same
    index.settle();
    if (!isDeepStrictEqual([...index.entries()], want)) return t.fail(`round ${round}: entries once settled`);
    index.clear();
    t.is(index.size, 0);
    t.deepEqual([...index.keys()], []);
  }
  t.true(compactions > 0, 'the arrays were compacted in some round');
  t.true(arrays > 100, `inIdOrder checked ${arrays} times`);
});

test('ids beyond 2^31 and far apart', (t) => {
  const index = new ResultIndex<string>();
  const ids = [3, 2 ** 31 + 5, 2 ** 40, 2 ** 52 + 1];
  for (const id of ids) index.set(id, String(id));
  index.set(7, '7'); // late
  for (const id of [...ids, 7]) t.is(index.get(id), String(id));
  t.deepEqual([...index.keys()], [3, 7, 2 ** 31 + 5, 2 ** 40, 2 ** 52 + 1]);
  t.is(index.get(4), undefined);
  t.is(index.get(2 ** 31 + 4), undefined);
});

test('the last id deleted is gone, once', (t) => {
  const index = new ResultIndex<string>();
  index.set(1, 'a');
  index.set(2, 'b');
  t.true(index.delete(2));
  t.false(index.delete(2));
  t.false(index.has(2));
  t.is(index.size, 1);
  index.set(2, 'c'); // set again (not something ids do, but a Map would take it)
  t.is(index.get(2), 'c');
  t.is(index.size, 2);
  t.deepEqual([...index.entries()], [[1, 'a'], [2, 'c']]);
});
