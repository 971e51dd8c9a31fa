// Commit encoding of the cluster partition log (src/cluster/partition_log.ts): a commit
// is a list of entries, msgpackr-encoded, deflated only when that pays; decoding gives
// the entries back exactly; and what a partition's entries say when replayed
// (src/cluster/partition_store.ts). No NATS needed.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { Packr } from 'msgpackr';
import { decodeCommit, encodeCommit } from '../../src/cluster/partition_log.js';
import { PartitionStore } from '../../src/cluster/partition_store.js';
import { ShardState } from '../../src/shard/state.js';

test('repetitive commits are compressed and decode to the same entries', async (t) => {
  const entries = Array.from({ length: 50 }, (_, i) => ({ i, task: 'Gathering Facts', host: `web-${i % 5}`, status: 'ok', at: new Date(1_700_000_000_000 + i) }));
  const { enc, bytes } = await encodeCommit(entries);
  t.is(enc, 'z');
  t.true(bytes.length < JSON.stringify(entries).length / 3);
  t.deepEqual(await decodeCommit(enc, bytes), entries);
});

test('small or incompressible commits stay plain msgpack', async (t) => {
  const small = [{ a: 1 }];
  t.is((await encodeCommit(small)).enc, 'm');
  const noise = [randomBytes(4096)];
  const { enc, bytes } = await encodeCommit(noise);
  t.is(enc, 'm');
  const back = await decodeCommit(enc, bytes);
  t.true(Buffer.from(back[0] as Uint8Array).equals(noise[0]!));
});

test('an unknown encoding or a payload that is not a list is an error, not garbage', async (t) => {
  const { bytes } = await encodeCommit([1, 2]);
  await t.throwsAsync(decodeCommit('x', bytes), { message: /unknown commit encoding/ });
  const { bytes: notList } = await encodeCommit([]);
  notList[0] = 0x01; // positive fixint: a number, not an array
  await t.throwsAsync(decodeCommit('m', notList), { message: /not a list/ });
});

test('a journal entry carries how far its partition has logged the label stream; entries written before that say nothing', (t) => {
  const packr = new Packr({ useRecords: false, moreTypes: false });
  const replayed = (entries: unknown[][]) => {
    const store = new PartitionStore();
    const state = new ShardState();
    for (const e of entries) store.applyEntry(Uint8Array.from(packr.pack(e) as Uint8Array), state);
    return store.lastLabelSeq;
  };
  t.is(replayed([]), 0, 'a new partition: from the label stream\'s start');
  t.is(replayed([[[], [], [], 3, 7], [[], [], [], 4, 9], [[], [], [], 5, 9]]), 9, 'the highest position replayed');
  // a journal written before the position was kept: unknown (the worker then starts from the stream's end)
  t.is(replayed([[[], [], [], 3], [[], [], [], 4]]), null);
  t.is(replayed([[[], [], [], 3], [[], [], [], 4, 12]]), 12, 'kept since some entry: known');
});
