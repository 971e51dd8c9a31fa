// A shard store keeps the blob values of commands in flight in memory until
// they are durable, so reads see them (src/store/lmdb_store.ts, `overlay`).
// Kept in one long-lived Map that every command added to and deleted from, they
// were all promoted to V8's old generation: the map's rehashed tables link to
// the ones that replace them, so one promoted table keeps every later one, and
// the contents in them, alive through every young-generation collection. A
// flood of results then filled the old generation with garbage. 3,000 commands
// of 100 1.6 KB contents (480 MB written), 8 in flight, in a child process that
// traces its collections: the long-lived map promoted ~378 MB, one map per
// command ~10 MB.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const WRITE_LOOP = `
const [dist, dir] = process.argv.slice(1);
const { LmdbShardStore } = await import(dist + '/src/store/lmdb_store.js');
const { blobKey } = await import(dist + '/src/shard/blobs.js');
const store = new LmdbShardStore(dir, 0, 'flush');
const text = JSON.stringify({ msg: 'x'.repeat(1500) });
let id = 0;
const inFlight = [];
for (let cmd = 1; cmd <= 3000; cmd++) {
  const puts = [];
  for (let i = 0; i < 100; i++) { id++; puts.push([blobKey.content(id), (text + id).slice(1)]); }
  inFlight.push(store.write([{ e: 'update', t: 'playbook', p: 1, id: 1, d: { n: cmd } }], puts, [], []));
  if (inFlight.length >= 8) await inFlight.shift();
}
await Promise.all(inFlight);
if (store.getBlob(blobKey.content(id)) !== (text + id).slice(1)) throw new Error('the last content does not read back');
await store.close();
`;

test('contents of commands in flight are not promoted to the old generation (one overlay per command)', (t) => {
  const dist = pathToFileURL(join(import.meta.dirname, '..', '..')).href; // dist/ (this file runs as dist/test/…)
  const dir = mkdtempSync(join(tmpdir(), 'logbook-overlay-gc-'));
  try {
    const run = spawnSync(process.execPath, ['--trace-gc-nvp', '--input-type=module', '-e', WRITE_LOOP, dist, dir], { encoding: 'utf8', timeout: 120_000 });
    t.is(run.status, 0, run.stderr);
    let promoted = 0, scavenges = 0;
    for (const line of run.stdout.split('\n')) {
      if (!line.includes('gc=s ')) continue;
      scavenges++;
      promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
    }
    t.true(scavenges > 10, `the child traced its collections (${scavenges} scavenges)`);
    const mb = promoted / 1e6;
    t.log(`${scavenges} scavenges promoted ${mb.toFixed(0)} MB of 480 MB of contents written`);
    t.true(mb < 60, `the contents of settled commands were kept alive and promoted: ${mb.toFixed(0)} MB (one long-lived map: ~378)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
