// The front's table of requests in flight (src/shard/in_flight.ts) against a
// Map doing the same: requests answered mostly in order, some late, one held
// past the window's span (a straggler), and a shard's requests all failed at
// once while others go on.
import test from 'ava';
import { InFlightTable } from '../../src/shard/in_flight.js';

/** xorshift32: the same run every time */
function random(seed: number): () => number {
  let x = seed;
  return () => { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; return (x >>> 0) / 2 ** 32; };
}

function same(t: import('ava').ExecutionContext, table: InFlightTable<string>, model: Map<number, string>, ids: number[]): void {
  t.is(table.size, model.size);
  for (const id of ids) t.is(table.get(id), model.get(id), `id ${id}`);
  t.deepEqual(new Map(table.entries()), model);
}

test('answers in any order read back like a Map, through compactions and a straggler held past the window', (t) => {
  const next = random(7);
  const table = new InFlightTable<string>();
  const model = new Map<number, string>();
  let id = 0;
  const held = 5; // answered last, after ~200 k later requests
  const open: number[] = [];
  for (let step = 0; step < 200_000; step++) {
    id += next() < 0.1 ? 2 : 1; // ids skip (requests that take no reply slot)
    table.set(id, `r${id}`); model.set(id, `r${id}`);
    if (id !== held) open.push(id);
    // answer 0–2 requests: mostly the oldest, sometimes a later one
    for (let k = Math.floor(next() * 2.2); k > 0 && open.length; k--) {
      const at = next() < 0.8 ? 0 : Math.floor(next() * open.length);
      const [answered] = open.splice(at, 1);
      t.true(table.delete(answered!) === model.delete(answered!));
    }
    if (step % 20_000 === 0) same(t, table, model, [held, ...open.slice(0, 50), id, id + 1]);
  }
  t.is(table.get(held), `r${held}`, 'the straggler is still there');
  same(t, table, model, [held, ...open.slice(0, 200)]);
  for (const rid of [held, ...open]) { table.delete(rid); model.delete(rid); }
  t.is(table.size, 0);
  t.false(table.delete(held), 'an answered id is gone');
  table.set(id + 10, 'after'); model.set(id + 10, 'after');
  same(t, table, model, [id + 10, held]);
});

test('failing one shard\'s requests while the handlers send new ones', (t) => {
  const table = new InFlightTable<{ shard: number }>();
  let id = 0;
  for (let i = 0; i < 3000; i++) table.set(++id, { shard: i % 3 });
  let failed = 0;
  for (const [rid, entry] of table.entries()) {
    if (entry.shard !== 1) continue;
    table.delete(rid);
    failed++;
    table.set(++id, { shard: 0 }); // a handler's retry, elsewhere
  }
  t.is(failed, 1000);
  t.is(table.size, 3000);
  t.is(table.entries().filter(([, e]) => e.shard === 1).length, 0);
  t.throws(() => table.set(id, { shard: 0 }), { message: /not above/ });
});
