// Storage failures of a shard's LMDB store, driven in-process: a real Shard on a
// real LmdbShardStore in a temporary directory, with the store's test hook
// (StoreFaults) refusing chosen writes the way a failed LMDB transaction does.
// What a user would notice is checked: the status each write was answered with,
// what reads show afterwards, and what a fresh store recovers from the disk.
//  - a failed snapshot round must not let a later round trim journal entries
//    that no durable snapshot covers (acknowledged writes lost);
//  - after a failed write, reads show what is on disk (no blob value of the
//    failed write), also after the shard rebuilt its state;
//  - a failure answers 503 exactly for the writes that are not on disk: earlier
//    commits still in flight are acknowledged, later ones (decided on the failed
//    write's state) are refused by LMDB and answered 503.
import test from 'ava';
import type { WriteReply } from '../../src/shard/protocol.js';
import { ShardNode as Node, onDisk, tempDir } from '../helpers/shard_node.js';

test('a failed snapshot round does not let the next round trim journal entries no snapshot covers', async (t) => {
  const dir = tempDir(t);
  const node = new Node(dir);
  const acked = [node.playbook(1), node.record(1, 1, 'one'), node.record(2, 1, 'two')];
  t.deepEqual(await Promise.all(acked.map((rid) => node.status(rid))), [201, 201, 201]);

  node.faults.pending.snapshot = 1; // the round's first snapshot put (playbook 1) fails
  const failedRound = await node.store.snapshot(node.shard.state).then(() => 'completed', (err: Error) => err.message);
  t.regex(failedRound, /injected snapshot failure/, 'the failed round reports its failure');

  // another playbook changes, and the next round succeeds and trims what it covers
  t.is(await node.status(node.playbook(2)), 201);
  t.is(await node.status(node.record(3, 2, 'three')), 201);
  await node.store.snapshot(node.shard.state);
  await node.close();

  t.deepEqual(await onDisk(dir, { playbooks: [1, 2], records: [1, 2, 3] }), {
    'playbook 1': '/srv/1.yml', 'playbook 2': '/srv/2.yml', 'record 1': 'one', 'record 2': 'two', 'record 3': 'three',
  }, 'every acknowledged write is recovered');
});

test('a snapshot round whose puts fail after the first one is not complete either', async (t) => {
  const dir = tempDir(t);
  const node = new Node(dir);
  for (let pb = 1; pb <= 3; pb++) {
    t.is(await node.status(node.playbook(pb)), 201);
    t.is(await node.status(node.record(pb, pb, `v${pb}`)), 201);
  }
  // the first snapshot put succeeds, later ones of the round fail
  let n = 0;
  const faults = node.faults;
  faults.fail = (what) => what === 'snapshot' && n++ >= 1 && n <= 3;
  await node.store.snapshot(node.shard.state).catch(() => {});
  t.is(await node.status(node.record(10, 1, 'later')), 201);
  await node.store.snapshot(node.shard.state);
  await node.close();
  t.deepEqual(await onDisk(dir, { playbooks: [1, 2, 3], records: [1, 2, 3, 10] }), {
    'playbook 1': '/srv/1.yml', 'playbook 2': '/srv/2.yml', 'playbook 3': '/srv/3.yml',
    'record 1': 'v1', 'record 2': 'v2', 'record 3': 'v3', 'record 10': 'later',
  });
});

test('after a failed PATCH (503), reads show the stored value, before and after the shard rebuilt its state', async (t) => {
  const dir = tempDir(t);
  const node = new Node(dir);
  t.is(await node.status(node.playbook(1)), 201);
  t.is(await node.status(node.record(1, 1, 'stored')), 201);

  node.faults.pending.journal = 1;
  const patch = node.patchRecord(1, 'never stored');
  t.is(await node.status(patch), 503, 'the failed PATCH is answered 503');
  t.regex((await node.reply(patch) as WriteReply).body!, /could not be stored/);
  t.true(node.rebuilds >= 1, 'the shard rebuilt its state from disk');
  t.like(await node.get('record', 1), { status: 200, body: { value: 'stored' } }, 'a GET shows the value on disk');

  // and the record is still writable
  t.is(await node.status(node.patchRecord(1, 'second')), 200);
  t.like(await node.get('record', 1), { status: 200, body: { value: 'second' } });
  await node.close();
  t.deepEqual(await onDisk(dir, { records: [1] }), { 'record 1': 'second' });
});

test('a failure answers 503 exactly for the writes not on disk: earlier commits are acknowledged, later ones refused', async (t) => {
  const dir = tempDir(t);
  const node = new Node(dir);
  t.is(await node.status(node.playbook(1)), 201);
  t.is(await node.status(node.playbook(2)), 201);

  // one event turn: a write that will commit, one that fails, and later ones decided on the failed one's state
  const before = node.record(1, 1, 'before');
  node.faults.pending.journal = 1;
  const failed = node.record(2, 1, 'fails');
  const after = [node.record(3, 2, 'after, other playbook'), node.patchRecord(1, 'after, patched')];
  const statuses = { before: await node.status(before), failed: await node.status(failed), after: await Promise.all(after.map((r) => node.status(r))) };
  t.deepEqual(statuses, { before: 201, failed: 503, after: [503, 503] });
  t.is(node.rebuilds, 1, 'one failure, one rebuild');

  // memory = disk: the 503s left nothing, the acknowledged write is there
  t.like(await node.get('record', 1), { status: 200, body: { value: 'before' } });
  t.is((await node.get('record', 2)).status, 404);
  t.is((await node.get('record', 3)).status, 404);
  // retrying the refused writes is safe and works
  t.is(await node.status(node.record(3, 2, 'retried')), 201);
  await node.close();
  t.deepEqual(await onDisk(dir, { records: [1, 2, 3] }), { 'record 1': 'before', 'record 2': null, 'record 3': 'retried' });
});

test('a snapshot round started before a failed write stores nothing of the failed write', async (t) => {
  const dir = tempDir(t);
  const node = new Node(dir);
  t.is(await node.status(node.playbook(1)), 201);
  node.faults.pending.journal = 1;
  const failed = node.record(1, 1, 'fails');
  // a round in the same turn: the aggregate it encodes includes the failed record
  const round = node.store.snapshot(node.shard.state);
  t.is(await node.status(failed), 503);
  await t.throwsAsync(round);
  await node.close();
  t.deepEqual(await onDisk(dir, { playbooks: [1], records: [1] }), { 'playbook 1': '/srv/1.yml', 'record 1': null });
});
