// A damaged or foreign data directory stops a real logbook at start-up: a
// non-zero exit (2), a message naming the file and what to do, and not one byte
// of the directory changed (contents and mtimes compared before and after).
// Cases: a truncated shard file (LMDB would die of SIGBUS reading it), an empty
// one (LMDB would start it empty), a shard file in another LMDB data format, a
// non-LMDB file named like a shard, foreign files and directories, a missing
// front.mdb. A healthy copy of the same directory starts and serves its data.
import test from 'ava';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook } from '../helpers/server.js';
import { runUntilExit } from '../helpers/process.js';

const ENV = { LOGBOOK_SHARDS: '2' };

/** Every file's bytes and mtime (LMDB lock files: name only, readers may touch them). */
function fingerprint(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (sub: string) => {
    for (const name of readdirSync(join(dir, sub)).sort()) {
      const rel = join(sub, name);
      const st = statSync(join(dir, rel));
      if (st.isDirectory()) { out[rel + '/'] = 'dir'; walk(rel); continue; }
      out[rel] = name.endsWith('-lock') ? 'lock' : `${st.size} bytes, mtime ${st.mtimeMs}, ${readFileSync(join(dir, rel)).toString('base64').length} b64, sum ${checksum(readFileSync(join(dir, rel)))}`;
    }
  };
  walk('');
  return out;
}

function checksum(b: Buffer): number {
  let h = 2166136261;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 16777619);
  return h >>> 0;
}

/** Overwrite bytes in place. */
function patch(path: string, offset: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+');
  try { writeSync(fd, bytes, 0, bytes.length, offset); } finally { closeSync(fd); }
}

let healthy = '';
const work = mkdtempSync(join(tmpdir(), 'logbook-datadir-'));
let playbooks: number[] = [];

test.before(async () => {
  healthy = join(work, 'healthy');
  mkdirSync(healthy);
  const lb = await startLogbook({ env: { ...ENV, LOGBOOK_SNAPSHOT_EVERY: '20' }, dataDir: healthy });
  for (let i = 0; i < 12; i++) {
    const pb = await api(lb.url, 'POST', '/api/v1/playbooks', { path: `/srv/${i}.yml`, runner_version: '2.16.1', arguments: { pad: 'x'.repeat(4000) + i } });
    playbooks.push(pb.body.id);
    for (let k = 0; k < 5; k++) await api(lb.url, 'POST', '/api/v1/records', { playbook: pb.body.id, key: `k${k}`, type: 'json', value: { n: k, text: `${i}/${k} `.repeat(300) } });
  }
  if (await lb.stop('SIGTERM') !== 0) throw new Error('setup: logbook did not stop cleanly');
});
test.after.always(() => rmSync(work, { recursive: true, force: true }));

/** A copy of the healthy directory, damaged by `damage`; start-up must refuse it and change nothing. */
async function refused(t: import('ava').ExecutionContext, name: string, damage: (dir: string) => void, expect: RegExp[]): Promise<void> {
  const dir = join(work, name);
  cpSync(healthy, dir, { recursive: true, preserveTimestamps: true });
  damage(dir);
  const before = fingerprint(dir);
  const run = await runUntilExit({ env: ENV, dataDir: dir, timeoutMs: 30_000 });
  t.log(run.output.split('\n').filter((l) => l.startsWith('logbook:')).join('\n') || run.output.slice(-500));
  t.is(run.code, 2, `exit code (signal ${run.signal})`);
  for (const re of expect) t.regex(run.output, re);
  t.notRegex(run.output, /"msg":"listening"/);
  t.deepEqual(fingerprint(dir), before, 'nothing in the directory changed');
}

test('a truncated shard file is refused, naming it (LMDB would die of SIGBUS)', (t) =>
  refused(t, 'truncated', (dir) => truncateSync(join(dir, 'shard-1.mdb'), 3 * 4096), [/shard-1\.mdb is truncated/, /restore it from a backup/]));

test('an empty shard file is refused (LMDB would start that shard empty)', (t) =>
  refused(t, 'empty', (dir) => truncateSync(join(dir, 'shard-0.mdb'), 0), [/shard-0\.mdb is empty/]));

test('a shard file in another LMDB data format is refused, naming the format', (t) =>
  refused(t, 'version', (dir) => {
    const path = join(dir, 'shard-0.mdb');
    for (const page of [0, 4096]) patch(path, page + 24 + 4, Buffer.from([1, 0, 0, 0])); // mm_version 1 in both meta pages
  }, [/shard-0\.mdb is in LMDB data format 1; this logbook reads format 2/]));

test('a non-LMDB file named like a shard is refused', (t) =>
  refused(t, 'garbage', (dir) => writeFileSync(join(dir, 'shard-1.mdb'), 'not a database\n'.repeat(2000)), [/shard-1\.mdb is not an LMDB file/]));

test('foreign files in the data directory are refused, naming them', async (t) => {
  await refused(t, 'foreign-file', (dir) => writeFileSync(join(dir, 'notes.txt'), 'mine'), [/holds notes\.txt, which logbook did not write/, /LOGBOOK_DATA_DIR/]);
  await refused(t, 'foreign-dir', (dir) => mkdirSync(join(dir, 'backup')), [/holds backup\/, which logbook did not write/]);
});

test('shard files without front.mdb are refused (the format record and labels are gone)', (t) =>
  refused(t, 'no-front', (dir) => { unlinkSync(join(dir, 'front.mdb')); unlinkSync(join(dir, 'front.mdb-lock')); }, [/no front\.mdb/, /restore front\.mdb from a backup/]));

test('the healthy directory starts and serves everything; dotfiles (.gitkeep) are allowed', async (t) => {
  const dir = join(work, 'copy');
  cpSync(healthy, dir, { recursive: true, preserveTimestamps: true });
  writeFileSync(join(dir, '.gitkeep'), '');
  const lb = await startLogbook({ env: ENV, dataDir: dir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const list = await api(lb.url, 'GET', '/api/v1/playbooks?limit=100');
  t.deepEqual(list.body.results.map((p: any) => p.id).sort((a: number, b: number) => a - b), [...playbooks].sort((a, b) => a - b));
  t.is((await api(lb.url, 'GET', '/api/v1/records?limit=1')).body.count, 60);
});
