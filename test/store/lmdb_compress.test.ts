// lmdb-js compresses a value put in a table with compression (logbook's blobs
// and chunks of result contents). Unchanged, it hands each such value to libuv's
// thread pool as a native task, which costs the writing thread (a shard) ~20 µs
// per value; scripts/build_lmdb.mjs has lmdb's write thread compress it instead,
// when its transaction reaches the value (npm ci runs the script). Every value
// must read back as written, whichever way it was compressed: with logbook's
// short write dictionary read through the full one, one that must be compressed
// because of its first byte, one below the threshold, one of a conditional
// write that is refused.
import test from 'ava';
import { createHook } from 'node:async_hooks';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { open } from 'lmdb';

test('a compressed value costs the writing thread no thread-pool task, and reads back as written', async (t) => {
  const lmdbDir = dirname(dirname(createRequire(import.meta.url).resolve('lmdb')));
  t.true(readFileSync(join(lmdbDir, 'write.js'), 'utf8').includes('logbook: compress-in-writer-1'), 'write.js carries the change (scripts/build_lmdb.mjs)');
  const dir = mkdtempSync(join(tmpdir(), 'logbook-lmdb-compress-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const env = open({ path: join(dir, 'x.mdb'), maxDbs: 4, eventTurnBatching: true, commitDelay: 0, overlappingSync: true, separateFlushed: true });
  // as LmdbShardStore opens its blobs: read with lmdb-js's dictionary, written with its last 256 bytes
  const dict = readFileSync(join(lmdbDir, 'dict', 'dict.txt'));
  const tail = Buffer.from(dict.subarray((dict.length & ~7) - 256, dict.length & ~7));
  const blobs = env.openDB<string, string>({ name: 'blobs', encoding: 'string', compression: { threshold: 512 } });
  const blobWriter = env.openDB<string, string>({ name: 'blobs', encoding: 'string', compression: { threshold: 512, dictionary: tail } });
  const chunks = env.openDB<Buffer, number>({ name: 'chunks', encoding: 'binary', compression: { threshold: 512 } });
  const heads = env.openDB<null, string>({ name: 'head', encoding: 'msgpack', useVersions: true });

  const text = (i: number): string => JSON.stringify({ i, msg: `package-${i} is already the newest version`, items: Array.from({ length: 20 }, (_, k) => `item-${i}-${k}`) });
  const chunk = (i: number): Buffer => Buffer.from(Array.from({ length: 20 }, (_, k) => text(i * 100 + k)).join(''));
  const flagged = Buffer.concat([Buffer.from([0xfe]), Buffer.from('a value whose first byte is the compression mark')]); // short, but must be compressed
  let tasks = 0;
  const hook = createHook({ init(_id, type) { if (type === 'generic') tasks++; } });
  hook.enable();
  try {
    // one transaction of many values (a batch), then one value per turn (per-record writes)
    let last: Promise<boolean> = Promise.resolve(true);
    for (let i = 0; i < 200; i++) { void blobWriter.put(`b${i}`, text(i)); last = chunks.put(i, chunk(i)); }
    void chunks.put(1000, flagged);
    void blobWriter.put('short', '{}');
    t.true(await last);
    for (let i = 200; i < 220; i++) t.true(await blobWriter.put(`b${i}`, text(i)));
    // a refused conditional write: its value is compressed or not, but never stored
    await heads.put('h', null, 1);
    t.false(await heads.ifVersion('h', 2, () => { void chunks.put(2000, chunk(2000)); }));
  } finally {
    hook.disable();
  }
  t.is(tasks, 0, 'values were handed to the thread pool to be compressed');
  for (let i = 0; i < 220; i++) t.is(blobs.get(`b${i}`), text(i));
  for (let i = 0; i < 200; i++) t.deepEqual(chunks.get(i), chunk(i));
  t.deepEqual(chunks.get(1000), flagged);
  t.is(blobs.get('short'), '{}');
  t.is(chunks.get(2000), undefined);
  await env.close();
});
