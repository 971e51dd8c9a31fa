// Blob values (result content, host facts…) written by a shard's LMDB store read
// back byte for byte, in the same process and after reopening the data directory.
// The store writes blobs compressed with a tail of lmdb-js's LZ4 dictionary and
// reads them with the whole dictionary (src/store/lmdb_store.ts,
// blobWriteDictionary): values made of the dictionary's own phrases are the ones
// whose compression refers into it, so they are what would come back garbled if
// the two did not line up.
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blobKey } from '../../src/shard/blobs.js';
import { LmdbShardStore } from '../../src/store/shard_store.js';

const dictionary = readFileSync(new URL('./dict/dict.txt', import.meta.resolve('lmdb'))).toString('latin1');

/** Values of all sizes around the compression threshold, many quoting the dictionary. */
function values(): string[] {
  const out: string[] = [];
  for (let i = 0; i < 400; i++) {
    const from = (i * 131) % (dictionary.length - 1);
    const quote = dictionary.slice(from, from + (i * 17) % 1500);
    out.push(JSON.stringify({ i, quote, changed: i % 2 === 0, msg: `package-${i} is already the newest version`, pad: 'x'.repeat((i * 7) % 900) }));
  }
  return out;
}

test('blob values read back unchanged, before and after reopening the store', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-blobs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const expected = values();
  const store = new LmdbShardStore(dir, 0, 'commit');
  await store.write([], expected.map((v, i) => [blobKey.content(i + 1), v]), [], []);
  let garbled = expected.filter((v, i) => store.getBlob(blobKey.content(i + 1)) !== v).length;
  t.is(garbled, 0, 'read in the same process');
  await store.close();

  const reopened = new LmdbShardStore(dir, 0, 'commit');
  garbled = expected.filter((v, i) => reopened.getBlob(blobKey.content(i + 1)) !== v).length;
  t.is(garbled, 0, 'read after reopening');
  // what the walk of the tools (logbook check) sees: every value, at its full size
  let bytes = 0;
  for (const entry of reopened.blobEntries()) bytes += entry.bytes;
  t.is(bytes, expected.reduce((n, v) => n + Buffer.byteLength(v), 0));
  await reopened.close();
});
