// A snapshot round under group commit, in-process on a real LMDB store
// (test/helpers/shard_node.ts). A round copies one playbook at a time and lets
// other work run between copies; writes handled then are applied to the state
// at once but journaled only when their group is flushed. What a user would
// notice if a copy took them under the journal position before their group:
// after a restart they are applied a second time (a delete of a row that is
// gone stops the start-up; a create is counted twice).
import test from 'ava';
import { ShardNode, onDisk, tempDir } from './helpers/shard_node.js';

test('writes staged while a round is between two playbooks are recovered once', async (t) => {
  const dir = tempDir(t);
  // every slice yields one setImmediate, as a round does under load
  const node = new ShardNode(dir, { groupCommit: true, sliceDelayMs: 0 });
  for (const pb of [1, 2]) {
    const rids = [node.playbook(pb), node.record(pb * 10 + 1, pb, 'a'), node.record(pb * 10 + 2, pb, 'b')];
    t.deepEqual(await Promise.all(rids.map((r) => node.status(r))), [201, 201, 201]);
  }
  // the round copies playbook 1, then yields; these writes to playbook 2 are handled in that pause
  node.shard.snapshotSoon();
  const deleted = node.deleteRecord(21);
  const created = node.record(23, 2, 'c');
  t.deepEqual([await node.status(deleted), await node.status(created)], [204, 201]);
  await node.close(); // lets the round finish

  t.deepEqual(await onDisk(dir, { playbooks: [1, 2], records: [11, 12, 21, 22, 23], items: true }), {
    'playbook 1': '/srv/1.yml, 2 records', 'playbook 2': '/srv/2.yml, 2 records',
    'record 11': 'a', 'record 12': 'b', 'record 21': null, 'record 22': 'b', 'record 23': 'c',
  });
});
