// Top-k page selection (src/shard/top_k.ts) against a full sort: same rows, same
// order, on random rows with repeated keys, nulls, mixed directions and any k.
import test from 'ava';
import { compareRows } from '../../src/api/order.js';
import type { ListRow } from '../../src/shard/protocol.js';
import { TopK, topK } from '../../src/shard/top_k.js';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (s + 0x6d2b79f5) >>> 0; let t = s; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32; };
}

test('top-k equals the first k rows of a full sort (random rows, keys with ties and nulls)', (t) => {
  const seed = Number(process.env.LOGBOOK_TOPK_SEED ?? Date.now() % 1e9);
  const rand = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
  for (let round = 0; round < 300; round++) {
    const n = Math.floor(rand() * 400);
    const nKeys = 1 + Math.floor(rand() * 3);
    const desc = Array.from({ length: nKeys }, () => rand() < 0.5);
    const kinds = Array.from({ length: nKeys }, () => pick(['int', 'str', 'bool', 'float']));
    const ids = Array.from({ length: n }, (_, i) => i + 1).sort(() => rand() - 0.5);
    const rows: ListRow[] = ids.map((id) => {
      const keys: ListRow = kinds.map((kind) => {
        if (rand() < 0.15) return null;
        switch (kind) {
          case 'int': return Math.floor(rand() * 5);
          case 'str': return pick(['a', 'b', 'B', 'ok', 'failed', '']);
          case 'bool': return rand() < 0.5;
          default: return rand();
        }
      });
      keys.push(id, `row ${id}`);
      return keys;
    });
    const cmp = (a: ListRow, b: ListRow) => compareRows(a, b, desc);
    const full = [...rows].sort(cmp);
    for (const k of [0, 1, 2, Math.floor(rand() * (n + 2)), n - 1, n, n + 5]) {
      if (k < 0) continue;
      const got = topK(rows, k, cmp);
      if (JSON.stringify(got) !== JSON.stringify(full.slice(0, k))) {
        t.fail(`seed ${seed} round ${round}: top ${k} of ${n} rows (desc ${JSON.stringify(desc)}) differs from the full sort`);
        return;
      }
    }
  }
  t.log(`seed ${seed} (LOGBOOK_TOPK_SEED)`);
  t.pass();
});

test('TopK keeps at most k rows however many are offered', (t) => {
  const top = new TopK<number>(3, (a, b) => a - b);
  for (let i = 1000; i > 0; i--) top.offer(i);
  t.deepEqual(top.sorted(), [1, 2, 3]);
  const none = new TopK<number>(0, (a, b) => a - b);
  none.offer(1);
  t.deepEqual(none.sorted(), []);
});
