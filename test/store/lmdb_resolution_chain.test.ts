// lmdb-js keeps every write's "resolution" in a linked list and, unpatched, a
// committed one keeps its link to the next: one that was promoted to V8's old
// generation and then died keeps every later write's resolution alive through
// the young-generation collections, so all of them are copied and promoted, the
// old generation fills with garbage and full collections follow (a shard under
// load: scavenges of tens of ms, full collections every second or two).
// scripts/build_lmdb.mjs cuts the links of committed resolutions (npm ci runs
// it). 200,000 conditional writes, as a shard issues them, in a child process
// that counts its full collections: the unpatched lmdb-js needed 6, the
// patched 1 (the start-up one).
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = join(import.meta.dirname, '..', '..', '..');

const WRITE_LOOP = `
import { open } from 'lmdb';
import { PerformanceObserver, constants } from 'node:perf_hooks';
let major = 0, minor = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
    else if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++;
  }
}).observe({ entryTypes: ['gc'] });
const env = open({ path: process.argv[1] + '/x.mdb', noSubdir: true, eventTurnBatching: true, commitDelay: 0, overlappingSync: true, separateFlushed: true });
const journal = env.openDB({ name: 'journal', keyEncoding: 'uint32', encoding: 'msgpack' });
const heads = env.openDB({ name: 'head', encoding: 'msgpack', useVersions: true });
const value = { text: 'x'.repeat(200) };
let head = null;
for (let seq = 1; seq <= 200000; seq++) {
  const after = head; head = seq;
  const write = () => { void journal.put(seq, value); void heads.put('h', null, seq); };
  const stored = after === null ? heads.ifNoExists('h', write) : heads.ifVersion('h', after, write);
  if (seq % 50 === 0 && !(await stored)) throw new Error('a write was not stored');
}
await new Promise((r) => setTimeout(r, 100)); // the observer's last entries
process.stdout.write(JSON.stringify({ major, minor }));
`;

test('lmdb-js with the resolution-chain fix: 200,000 writes need no full garbage collection', (t) => {
  const lmdbDir = dirname(dirname(createRequire(import.meta.url).resolve('lmdb')));
  t.true(readFileSync(join(lmdbDir, 'write.js'), 'utf8').includes('logbook: resolution-chain-1'), 'write.js carries the fix (scripts/build_lmdb.mjs)');
  const dir = mkdtempSync(join(tmpdir(), 'logbook-lmdb-chain-'));
  try {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', WRITE_LOOP, dir], { cwd: root, encoding: 'utf8', timeout: 120_000 });
    t.is(run.status, 0, run.stderr);
    const gcs = JSON.parse(run.stdout) as { major: number; minor: number };
    t.log(`full collections ${gcs.major}, young-generation collections ${gcs.minor}`);
    t.true(gcs.major <= 2, `dead writes kept later ones alive: ${gcs.major} full collections (unpatched: 6)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
