// Start-up check of the data directory, before LMDB opens anything in it: a
// damaged or foreign directory stops start-up with a message naming the file
// and what to do, and nothing in it is written. LMDB itself would not say so:
// it initializes an empty file (a lost shard would silently restart empty), may
// try to convert a file of another data version, and a file shorter than its
// pages kills the process with SIGBUS when those pages are read.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StoreError } from './front_store.js';
import { META_ROOTS, missingPage } from './lmdb_pages.js';

/** The LMDB data version lmdb-js 3.x reads and writes (MDB_DATA_VERSION). */
const LMDB_DATA_VERSION = 2;
const LMDB_MAGIC = 0xbeefc0de;
/** sizeof(MDB_page_header) in lmdb-js's LMDB: the meta record starts after it */
const PAGE_HEADER = 24;
/** offsets inside MDB_meta (64-bit build): magic, version, psize (mm_dbs[FREE].md_pad), last page, txnid */
const META = { magic: 0, version: 4, psize: 24, lastPage: 120, txnid: 128 } as const;

const SHARD_FILE = /^shard-(\d+)\.mdb(-lock)?$/;
// search.sqlite: the search index (src/search/), with SQLite's WAL and shared-memory files
const OWN_FILES = new Set(['logbook.pid', 'front.mdb', 'front.mdb-lock', 'search.sqlite', 'search.sqlite-wal', 'search.sqlite-shm']);

interface Meta { version: number; psize: number; lastPage: number; txnid: number; freeRoot: bigint; mainRoot: bigint }

/** Throws StoreError if the directory holds anything logbook would misread or overwrite. */
export function checkDataDir(dataDir: string, shards: number): void {
  if (!existsSync(dataDir)) return;
  const dir = resolve(dataDir);
  const what = `data directory ${dir}`;
  const names = readdirSync(dataDir).sort();
  for (const name of names) {
    if (name.startsWith('.')) continue; // .gitkeep and the like
    const path = join(dataDir, name);
    if (name === 'logbook.pid') continue; // the lock: a file, or on a full disk a symbolic link to the pid (lockDataDir)
    if (!statSync(path).isFile()) {
      throw new StoreError(`${what} holds ${name}/, which logbook did not write; move it out, or point LOGBOOK_DATA_DIR at a directory only logbook uses`);
    }
    if (!OWN_FILES.has(name) && !SHARD_FILE.test(name)) {
      throw new StoreError(`${what} holds ${name}, which logbook did not write; move it out, or point LOGBOOK_DATA_DIR at a directory only logbook uses`);
    }
  }
  const stores = names.filter((n) => n.endsWith('.mdb'));
  const shardFiles = stores.filter((n) => n.startsWith('shard-'));
  if (!stores.includes('front.mdb') && shardFiles.length > 0) {
    throw new StoreError(`${what} has ${shardFiles.join(', ')} but no front.mdb (the format record and the labels): restore front.mdb from a backup; logbook will not start without it, so that nothing is overwritten`);
  }
  for (const name of stores) checkLmdbFile(join(dataDir, name), name, dir);
  void shards; // a different shard count is refused with its own message (FrontStore.checkFormat)
}

/**
 * The guard every tool runs before it maps an LMDB file (the server at start-up,
 * `logbook check`, `logbook backup`): throws StoreError naming the file when it is
 * empty, not LMDB, of another data format, or shorter than its meta page says
 * (and its pages cannot all be read: checked in a child process, where a SIGBUS
 * ends only that child).
 */
export function checkLmdbFile(path: string, name: string, dir: string): void {
  const where = `${join(dir, name)}`;
  const restore = 'restore it from a backup (or move it out to start that part empty); logbook changed nothing';
  const size = statSync(path).size;
  if (size === 0) throw new StoreError(`${where} is empty (truncated?): ${restore}`);
  const metas = [readMeta(path, 0), null as Meta | null];
  const psize = metas[0]?.psize ?? 4096;
  metas[1] = readMeta(path, psize);
  const valid = metas.filter((m): m is Meta => m !== null);
  if (valid.length === 0) {
    throw new StoreError(`${where} is not an LMDB file (no valid meta page): it is not logbook's, or it is damaged; ${restore}`);
  }
  // LMDB writes both meta pages when it creates a file and only ever rewrites one at a time:
  // one that is not a meta page is damage (LMDB itself may fault on it: SIGSEGV)
  if (valid.length === 1) {
    throw new StoreError(`${where} has a damaged meta page (page ${metas[0] === null ? 0 : 1} is not an LMDB meta page): ${restore}`);
  }
  const foreign = valid.find((m) => (m.version & 0xffff) !== LMDB_DATA_VERSION);
  if (foreign) {
    throw new StoreError(`${where} is in LMDB data format ${foreign.version & 0xffff}; this logbook reads format ${LMDB_DATA_VERSION}. Use the logbook that wrote it, or ${restore}`);
  }
  const current = valid.reduce((a, b) => (b.txnid > a.txnid ? b : a));
  const needed = (current.lastPage + 1) * current.psize;
  // LMDB may leave the last pages of a file unwritten when they are free, so a
  // short file is not proof of damage: it is healthy when every page its trees
  // reach is in it, the free-page tree too (lmdb_pages.ts: plain reads, never a
  // SIGBUS; the first write reads that tree, which no read-only probe does). Then
  // every table is read through LMDB itself in a child process, where a SIGBUS on
  // a page the walk did not foresee cannot take logbook down.
  if (size < needed) {
    const missing = missingPage(path, size, current);
    if (missing !== null || !readsCompletely(path)) {
      throw new StoreError(`${where} is truncated: ${size} bytes, but its pages reach ${needed} bytes${missing ? ` (${missing})` : ''}; ${restore}`);
    }
  }
}

/** The meta record of the page at `offset`, or null if it is not a valid one. */
function readMeta(path: string, offset: number): Meta | null {
  const buf = Buffer.alloc(PAGE_HEADER + Math.max(META.txnid, META_ROOTS.mainRoot) + 8);
  const fd = openSync(path, 'r');
  let read = 0;
  try { read = readSync(fd, buf, 0, buf.length, offset); } finally { closeSync(fd); }
  if (read < buf.length) return null;
  const m = PAGE_HEADER;
  if (buf.readUInt32LE(m + META.magic) !== LMDB_MAGIC) return null;
  const psize = buf.readUInt32LE(m + META.psize);
  if (psize < 512 || psize > 65536 || (psize & (psize - 1)) !== 0) return null;
  return {
    version: buf.readUInt32LE(m + META.version), psize,
    lastPage: Number(buf.readBigUInt64LE(m + META.lastPage)), txnid: Number(buf.readBigUInt64LE(m + META.txnid)),
    freeRoot: buf.readBigUInt64LE(m + META_ROOTS.freeRoot), mainRoot: buf.readBigUInt64LE(m + META_ROOTS.mainRoot),
  };
}

/** Can every table of the file be read to the end? (In a child process: a SIGBUS only ends that.) */
export function readsCompletely(path: string): boolean {
  const probe = fileURLToPath(new URL('./probe.js', import.meta.url));
  const run = spawnSync(process.execPath, [probe, path], { stdio: 'ignore', timeout: 600_000 });
  return run.status === 0;
}
