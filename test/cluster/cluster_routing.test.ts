// Cluster mode's pure parts: rendezvous hashing (every node computes the same owner,
// and a node leaving moves only its own partitions) and partition ids (k·P + p).
import test from 'ava';
import { rendezvousOwner } from '../../src/cluster/rendezvous.js';
import { PartitionIds } from '../../src/cluster/ids.js';

test('rendezvous: the same owner whatever the order of nodes; a leaving node moves only its own partitions', (t) => {
  const nodes = ['a', 'b', 'c'];
  const owners = Array.from({ length: 64 }, (_, p) => rendezvousOwner(p, nodes));
  t.deepEqual(Array.from({ length: 64 }, (_, p) => rendezvousOwner(p, ['c', 'a', 'b'])), owners);
  for (const n of nodes) t.true(owners.filter((o) => o === n).length > 5, `${n} gets a share`);
  const without = Array.from({ length: 64 }, (_, p) => rendezvousOwner(p, ['a', 'c']));
  owners.forEach((o, p) => { if (o !== 'b') t.is(without[p], o, `partition ${p} stays with ${o}`); });
  t.is(rendezvousOwner(0, []), null);
});

test('partition ids: k·P + p, never 0, past every id replay observed', (t) => {
  const ids = new PartitionIds(6, 0);
  t.deepEqual([ids.allocate(1), ids.allocate(1), ids.allocate(2)], [6, 12, 6]);
  const p4 = new PartitionIds(6, 4);
  t.is(p4.allocate(5), 4);
  p4.observe(5, 40); // 6·6 + 4
  p4.observe(5, 41); // another partition's id: ignored
  t.is(p4.allocate(5), 46);
  t.is(p4.allocate(5) % 6, 4);
});
