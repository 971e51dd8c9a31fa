// The commit order the live stream's cursors rest on (src/shard/commit_order.ts):
// stamps from one counter shared by the shards, and the front's rule for when
// a received commit may be sent on (no shard can still send an older stamp).
// Each side has its own CommitOrder over the same SharedArrayBuffer, as the
// shard workers and the front have.
import test from 'ava';
import { CommitOrder } from '../../src/shard/commit_order.js';

function setUp(shards: number) {
  const front = CommitOrder.create(shards);
  const shard = Array.from({ length: shards }, () => new CommitOrder(front.buffer));
  shard.forEach((s, i) => s.recovered(i, 0));
  return { front, shard };
}

test('stamps are one increasing sequence across shards, and continue above what was logged after a restart', (t) => {
  const { front, shard } = setUp(3);
  t.deepEqual([shard[0]!.take(0), shard[2]!.take(2), shard[0]!.take(0), shard[1]!.take(1)], [1, 2, 3, 4]);
  t.is(front.current(), 4);
  // a restart: every shard recovers; the counter goes to the highest logged stamp, never down
  const again = setUp(2);
  again.shard[0]!.recovered(0, 17);
  again.shard[1]!.recovered(1, 9);
  t.is(again.shard[1]!.take(1), 18);
});

test('a commit waits while another shard holds an older stamp, until that commit (or its failure) has reached the front', (t) => {
  const { front, shard } = setUp(2);
  const a = shard[0]!.take(0); // shard 0 staged a commit (1), not durable yet
  const b = shard[1]!.take(1); // shard 1 staged one after it (2) and sends it first
  shard[1]!.sent(1, b);
  const received = [0, b];
  t.true(front.bound(0, received[0]!) < b, 'shard 0 may still send an older stamp: 2 waits');
  shard[0]!.sent(0, a);
  t.true(front.bound(0, received[0]!) < b, 'sent but not received yet: still waits (the message is on its way)');
  received[0] = a;
  t.is(front.bound(0, received[0]!), Infinity, 'received: 2 may go');
  t.is(front.bound(1, received[1]!), Infinity);
});

test('with several commits in flight, the lowest unsent stamp bounds what may go', (t) => {
  const { front, shard } = setUp(2);
  const s1 = shard[0]!.take(0);
  const s2 = shard[0]!.take(0);
  const other = shard[1]!.take(1);
  shard[1]!.sent(1, other);
  t.is(front.bound(0, 0), s1);
  shard[0]!.sent(0, s1);
  t.is(front.bound(0, s1), s2, 'the next one in flight');
  t.true(front.bound(0, s1) < other, 'the other shard\'s later commit still waits');
  shard[0]!.sent(0, s2);
  t.is(front.bound(0, s2), Infinity);
  t.true(front.bound(0, s2) > other);
});
