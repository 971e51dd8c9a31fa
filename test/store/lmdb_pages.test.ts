// A short LMDB file (src/store/lmdb_pages.ts, data_dir.ts checkLmdbFile): LMDB
// may leave a file's last pages unwritten when they are free, so the start-up
// check accepts a file shorter than its meta page says exactly when every page
// its trees reach is in it. Both sides are shown with LMDB itself, in a child
// process (where a SIGBUS ends only the child): a file cut down to the pages the
// walk needs opens, reads and takes writes that reuse the free pages; one page
// less is refused naming the page, before anything maps it.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, readSync, closeSync, rmSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { open } from 'lmdb';
import { checkLmdbFile } from '../../src/store/data_dir.js';
import { META_ROOTS, missingPage, type MetaRoots } from '../../src/store/lmdb_pages.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const work = mkdtempSync(join(tmpdir(), 'logbook-lmdb-pages-'));
test.after.always(() => rmSync(work, { recursive: true, force: true }));

/** The newer meta page's roots (the one LMDB opens). */
function roots(path: string): MetaRoots {
  const fd = openSync(path, 'r');
  try {
    const metas = [0, 4096].map((at) => {
      const b = Buffer.alloc(200);
      readSync(fd, b, 0, b.length, at);
      return {
        psize: b.readUInt32LE(24 + 24), lastPage: Number(b.readBigUInt64LE(24 + 120)), txnid: b.readBigUInt64LE(24 + 128),
        freeRoot: b.readBigUInt64LE(24 + META_ROOTS.freeRoot), mainRoot: b.readBigUInt64LE(24 + META_ROOTS.mainRoot),
      };
    });
    return metas[0]!.txnid > metas[1]!.txnid ? metas[0]! : metas[1]!;
  } finally { closeSync(fd); }
}

/** In a child: open the file, read every entry, write entries that need the free pages, read them back. */
function useInChild(path: string): { status: number | null; signal: NodeJS.Signals | null; stdout: string } {
  const code = `
    import { open } from 'lmdb';
    const env = open({ path: ${JSON.stringify(path)}, noSubdir: true, maxDbs: 4 });
    const db = env.openDB({ name: 't' });
    let n = 0;
    for (const { value } of db.getRange({})) n += value.length;
    for (let i = 0; i < 200; i++) await db.put('new' + i, 'z'.repeat(i * 40));
    await db.put('large', 'L'.repeat(150000));
    let back = 0;
    for (let i = 0; i < 200; i++) back += db.get('new' + i).length;
    await env.close();
    process.stdout.write(n + ' ' + back);`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd: repo, encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, signal: run.signal, stdout: run.stdout };
}

/** An LMDB file whose last pages are free: a large value took a run of pages at its end, then was removed. */
async function fileWithFreeTail(name: string): Promise<string> {
  const path = join(work, name);
  const env = open({ path, noSubdir: true, maxDbs: 4 });
  const db = env.openDB({ name: 't' });
  for (let i = 0; i < 50; i++) await db.put(`k${i}`, 'v'.repeat(100));
  await db.put('big', Buffer.alloc(200_000, 1));
  await db.remove('big');
  for (let i = 0; i < 3; i++) await db.put(`after${i}`, 'w');
  await env.close();
  rmSync(path + '-lock', { force: true });
  return path;
}

test('a file cut down to the pages its trees reach is accepted and works; one page less is refused, naming the page', async (t) => {
  const path = await fileWithFreeTail('short.mdb');

  const meta = roots(path);
  const pages = statSync(path).size / meta.psize;
  t.is(pages, meta.lastPage + 1, 'LMDB wrote the file out to its last page');
  let keep = pages;
  while (keep > 2 && missingPage(path, (keep - 1) * meta.psize, meta) === null) keep--;
  t.true(keep < pages - 10, `the free run at the end can go: ${keep} of ${pages} pages are needed`);

  truncateSync(path, keep * meta.psize);
  t.notThrows(() => checkLmdbFile(path, 'short.mdb', work));
  const used = useInChild(path);
  t.is(used.signal, null, 'LMDB read and wrote the short file without a signal');
  t.is(used.status, 0);
  t.is(used.stdout, `${50 * 100 + 3} ${Array.from({ length: 200 }, (_, i) => i * 40).reduce((a, b) => a + b, 0)}`);

  // a fresh copy, one page shorter than the walk needs
  const cut = await fileWithFreeTail('cut.mdb');
  truncateSync(cut, (keep - 1) * meta.psize);
  const error = t.throws(() => checkLmdbFile(cut, 'cut.mdb', work));
  t.regex(error!.message, new RegExp(`cut\\.mdb is truncated: ${(keep - 1) * meta.psize} bytes, but its pages reach ${pages * meta.psize} bytes \\(page ${keep - 1} is past the end of the file`));
});
