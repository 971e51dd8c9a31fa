// A snapshot round under group commit, in-process on a real LMDB store
// (test/helpers/shard_node.ts). A round copies one playbook at a time and lets
// other work run between copies; writes handled then are applied to the state
// at once but journaled only when their group is flushed. What a user would
// notice if a copy took them under the journal position before their group:
// after a restart they are applied a second time (a delete of a row that is
// gone stops the start-up; a create is counted twice).
// A round also keeps the result parts of earlier rounds whose rows did not
// change, and a restart must still show every row as it was served.
import test from 'ava';
import { join } from 'node:path';
import { ShardNode, onDisk, snapshotPartsIn, tempDir } from '../helpers/shard_node.js';

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

/** The stored result parts of playbook `pb` ("seq/k" each) and the ones its snapshot refers to. */
async function storedParts(dir: string, pb: number): Promise<{ parts: string[]; referred: string[] }> {
  const parts = (await snapshotPartsIn(join(dir, 'shard-0.mdb'))).get(pb);
  return { parts: parts?.stored ?? [], referred: parts?.referred ?? [] };
}

/** Every result's status as a fresh store on `dir` recovers it (404 → null). */
async function statusesOnDisk(dir: string, ids: number[]): Promise<Array<string | null>> {
  const node = new ShardNode(dir);
  const out: Array<string | null> = [];
  for (const id of ids) { const r = await node.get('result', id); out.push(r.status === 200 ? r.body.status : null); }
  await node.close();
  return out;
}

test('a round stores again only the result parts from the first changed row; a restart shows every change', async (t) => {
  const dir = tempDir(t);
  const ids = Array.from({ length: 30 }, (_, i) => 100 + i);
  const expected = new Map<number, string | null>();
  const open = () => new ShardNode(dir, { partRows: 4 });
  let node = open();
  const settle = async (rids: number[]) => t.true((await Promise.all(rids.map((r) => node.status(r)))).every((s) => s < 300));
  await settle([node.playbook(1), node.tree(1)]);
  const add = async (from: number, to: number) => {
    await settle(ids.slice(from, to).map((id) => { expected.set(id, 'ok'); return node.result(id, 1, 'ok'); }));
  };
  const round = async () => {
    await node.store.snapshot(node.shard.state);
    await node.close();
    t.deepEqual(await statusesOnDisk(dir, ids), ids.map((id) => expected.get(id) ?? null), 'a restart shows every result as served');
    const stored = await storedParts(dir, 1);
    t.deepEqual(stored.parts.sort(), stored.referred.slice().sort(), 'every stored part is referred to, and only those');
    node = open();
    return stored.referred;
  };

  await add(0, 10); // parts of 4, 4, 2
  const first = await round();
  t.is(first.length, 3);

  await add(10, 20); // appended: the two full parts stay, the partial one and the new rows are written
  const second = await round();
  t.is(second.length, 5);
  t.deepEqual(second.slice(0, 2), first.slice(0, 2), 'the full parts of the first round are kept');
  t.notDeepEqual(second[2], first[2], 'the partial one is written again');

  // a row in part 3 (rows 8..11) updated: parts 0-1 stay, 2 on are written again
  await settle([node.patchResult(ids[9]!, 'failed')]);
  expected.set(ids[9]!, 'failed');
  const third = await round();
  t.deepEqual(third.slice(0, 2), second.slice(0, 2));
  t.true(third.slice(2).every((ref, k) => ref !== second[k + 2]), 'the parts from the changed one on are new');

  // a row of the first part deleted: every row after it moved, nothing is kept
  await settle([node.deleteResult(ids[1]!)]);
  expected.set(ids[1]!, null);
  await add(20, 23);
  const fourth = await round();
  t.true(fourth.every((ref) => !third.includes(ref)), 'all parts are new');
  t.is(fourth.length, Math.ceil(22 / 4));

  // nothing changed in the results (a record only): every part is kept
  await settle([node.record(1, 1, 'x')]);
  t.deepEqual(await round(), fourth);
  await node.close();
});
