// Builds lmdb-js's native module from its bundled sources with one fix, so that
// a full disk does not abort logbook, and changes two things in its JavaScript:
// a garbage-collection defect, and where values are compressed. Run by `npm ci`
// / `npm install` (the package's `prepare`), or by hand:
// `node scripts/build_lmdb.mjs [--force]`.
//
// 1. The native defect (lmdb 3.5.6, the newest release; liblmdb/mdb.c,
// mdb_page_flush): when a page write fails (ENOSPC, EFBIG from a file-size
// limit, EIO) lmdb-js formats "Attempting to write page at position …, buffer
// sizes %i %i %i" with sprintf into a 100-byte malloc. The text needs up to 133
// bytes, and two of its numbers are stale stack values that usually make it
// longer than 100, so the heap is overwritten and glibc aborts the whole process
// a few failed commits later ("corrupted size vs. prev_size", "malloc(): invalid
// size"): every shard and the HTTP front die with it. Found by
// test/faults/faults_fsize.test.ts (a flake: "other side closed" was the server
// aborting); reproduced every time by test/store/lmdb_write_errors.test.ts. The fix
// allocates 160 bytes and bounds the write (snprintf).
//
// 2. The JavaScript defect (write.js, and its bundle dist/index.cjs): every write
// gets a "resolution" object in a singly linked list; once its transaction
// commits, the cursor moves past it but the object keeps its `next` (and a
// transaction's first one its `nextTxn`). V8's young-generation collector treats
// every old-generation object as live until the next full collection, so one
// resolution that was promoted and then died keeps, through `next`, every later
// one alive: each write's resolution (and what its promise's closures hold) is
// copied by every scavenge and promoted, and the old generation fills with
// garbage. A loop of ~14 k conditional puts/s for 15 s: scavenges of 21–32 ms
// and a full collection every 1.7 s, against 0.2–0.3 ms and none with the links
// cut. The fix clears both links of a resolution the commit cursor has passed
// (nothing reads them after: the write cursor is ahead of it, and the
// after-commit callbacks are given the range before the cursor moves).
//
// 3. Compression in the write thread (write.js, dist/index.cjs): a value put in
// a table with compression (logbook's blobs and content chunks) was handed to
// libuv's thread pool to be compressed (`compress()`: a native async task per
// value), and lmdb's write thread took the result when its transaction reached
// the value. Queuing the task, waking a pool thread and completing the task
// back on the calling thread cost that thread 10-40 µs per value, less when
// many share an event turn (a shard: 12-20 % of its CPU per result of a
// 100-result batch, ~5 chunks of contents; ~6 % of a 1,000-result one).
// Without it, the write thread compresses the value itself when it reaches it:
// lmdb's own path for a value no pool thread has started (writer.cpp, "doing
// the compression ourselves"; the only path of a synchronous transaction).
// The same function compresses with the same dictionary, so the stored bytes
// do not change; the compression runs inside the transaction, on one thread,
// instead of beside it on up to four (which also shared the table's one LZ4
// stream state).
//
// Drop fix 1 or 2 once an lmdb release fixes it, change 3 once lmdb-js compresses
// in its write thread (or lets a caller choose that).
//
// node-gyp-build (lmdb's loader) prefers build/Release/lmdb.node over the
// prebuilt binaries, so the built module is what `import 'lmdb'` loads. Build
// flags are lmdb's own (binding.gyp, the same defines as its Node 20 prebuild).
// Without a compiler, or for another lmdb version, the prebuilt binary stays
// and this says so; logbook logs a warning at start-up (src/store/lmdb_build.ts).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The lmdb release the fix is written against (its mdb.c must hold OLD verbatim). */
const LMDB_VERSION = '3.5.6';
/** Written next to the built module once it loads: which fix it carries. */
const MARKER = 'logbook-patch';
const PATCH_ID = 'mdb_page_flush-write-error-snprintf-1';

const MDB_C = 'dependencies/lmdb/libraries/liblmdb/mdb.c';
const OLD = `						last_error = malloc(100);
						sprintf(last_error, "Attempting to write page at position %u, size %u, blocks %u, buffer sizes %i %i %i", wpos, wsize, n, iov[0].iov_len, iov[1].iov_len, iov[2].iov_len);`;
const NEW = `						last_error = malloc(160); /* logbook: the text needs up to 133 bytes (was malloc(100) + sprintf) */
						snprintf(last_error, 160, "Attempting to write page at position %u, size %u, blocks %u, buffer sizes %i %i %i", wpos, wsize, n, iov[0].iov_len, iov[1].iov_len, iov[2].iov_len);`;

/** The JavaScript changes, each in write.js and in its bundle dist/index.cjs. */
const JS_FILES = ['write.js', 'dist/index.cjs'];
/** Fix 2: both loops that walk committed resolutions (resolveCommit, rejectCommit). */
const JS_PATCH_ID = 'resolution-chain-1';
const JS_OLD = `		} while (
			(uncommittedResolution = uncommittedResolution.next) &&
			uncommittedResolution != txnResolution
		);
		txnResolution = txnResolution.nextTxn;`;
const JS_NEW = `			/* logbook: ${JS_PATCH_ID} (scripts/build_lmdb.mjs): a passed resolution lets go of the later ones */
			var passedResolution = uncommittedResolution;
			uncommittedResolution = uncommittedResolution.next;
			passedResolution.next = null;
		} while (
			uncommittedResolution &&
			uncommittedResolution != txnResolution
		);
		var passedTxn = txnResolution;
		txnResolution = txnResolution.nextTxn;
		passedTxn.nextTxn = null;`;
/** Change 3: a compressible value is not handed to the thread pool (writeInstructions). */
const COMPRESS_PATCH_ID = 'compress-in-writer-1';
const COMPRESS_OLD = `					if (!writeTxn)
						compress(env.address, uint32.address + (position << 3), () => {
							// this is never actually called in NodeJS, just use to pin the buffer in memory until it is finished
							// and is a no-op in Deno
							if (!float64) throw new Error('No float64 available');
						});`;
const COMPRESS_NEW = `					/* logbook: ${COMPRESS_PATCH_ID} (scripts/build_lmdb.mjs): the write thread compresses the value when it reaches it */`;
const JS_PATCHES = [
  { id: JS_PATCH_ID, old: JS_OLD, new: JS_NEW, times: 2, without: 'committed writes can keep later ones alive: more GC work' },
  { id: COMPRESS_PATCH_ID, old: COMPRESS_OLD, new: COMPRESS_NEW, times: 1, without: 'every compressed value costs the writing thread a pool task' },
];

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lmdbDir = join(root, 'node_modules', 'lmdb');
const force = process.argv.includes('--force');

function say(msg) { process.stderr.write(`build_lmdb: ${msg}\n`); }

function warn(msg) {
  say(`WARNING: ${msg}`);
  say('WARNING: logbook will use lmdb\'s prebuilt binary, which aborts the process when a write to');
  say('WARNING: the data directory fails (disk full, a file-size limit). See README "Storage engine".');
}

/** Fix 2 and change 3, in place; true when every file carries both (already, or now). */
function patchJs() {
  let all = true;
  for (const patch of JS_PATCHES) {
    let patched = 0;
    for (const file of JS_FILES) {
      const path = join(lmdbDir, file);
      const text = readFileSync(path, 'utf8');
      if (text.includes(patch.new)) { patched++; continue; }
      if (text.split(patch.old).length !== patch.times + 1) { say(`WARNING: ${file} does not hold the text ${patch.id} replaces: not applied (${patch.without})`); continue; }
      writeFileSync(path, text.split(patch.old).join(patch.new));
      patched++;
    }
    if (patched === JS_FILES.length) say(`lmdb ${LMDB_VERSION} JavaScript carries ${patch.id}`);
    else all = false;
  }
  return all;
}

function main() {
  if (!existsSync(join(lmdbDir, 'package.json'))) { say('node_modules/lmdb not installed: nothing to build'); return 0; }
  const version = JSON.parse(readFileSync(join(lmdbDir, 'package.json'), 'utf8')).version;
  if (version !== LMDB_VERSION) {
    warn(`lmdb ${version} is installed; the fixes are written for ${LMDB_VERSION}. Check whether ${version} fixed mdb.c's write-error message and the resolution list's links (write.js), then update or drop scripts/build_lmdb.mjs.`);
    return 0;
  }
  patchJs();
  const marker = join(lmdbDir, 'build', MARKER);
  const built = join(lmdbDir, 'build', 'Release', 'lmdb.node');
  if (!force && existsSync(built) && existsSync(marker) && readFileSync(marker, 'utf8').trim() === PATCH_ID) {
    say(`lmdb ${version} already built with the fix (${PATCH_ID})`);
    return 0;
  }

  const source = join(lmdbDir, MDB_C);
  const text = readFileSync(source, 'utf8');
  if (!text.includes(NEW)) {
    if (!text.includes(OLD)) { warn(`${MDB_C} does not hold the text the fix replaces`); return 0; }
    writeFileSync(source, text.replace(OLD, NEW));
  }

  // npm runs scripts with npm_config_node_gyp (its bundled node-gyp) and the npm
  // config as npm_config_* (nodedir: where Node's headers are, without a download)
  const nodeGyp = process.env.npm_config_node_gyp
    ?? join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  if (!existsSync(nodeGyp)) { warn(`node-gyp not found (${nodeGyp})`); return 0; }
  say(`building lmdb ${version} from source with the fix (~25 s on 2 cores) …`);
  const args = [nodeGyp, 'rebuild', '--release', '--jobs=max'];
  // Node's headers: npm's nodedir, else the ones installed beside this node (Debian's
  // nodejs and the nodejs.org tarballs ship include/node); else node-gyp downloads them
  const besideNode = join(dirname(process.execPath), '..');
  const nodedir = process.env.npm_config_nodedir
    ?? (existsSync(join(besideNode, 'include', 'node', 'node_api.h')) ? besideNode : null);
  if (nodedir) args.push(`--nodedir=${nodedir}`);
  const gyp = spawnSync(process.execPath, args, { cwd: lmdbDir, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (gyp.status !== 0) {
    say((gyp.stdout + gyp.stderr).split('\n').slice(-25).join('\n'));
    rmSync(join(lmdbDir, 'build'), { recursive: true, force: true });
    warn(`node-gyp failed (exit ${gyp.status ?? gyp.signal}; a C++ compiler, make and Python are needed)`);
    return 0;
  }
  // the module must load and work before the loader is allowed to prefer it
  const check = spawnSync(process.execPath, ['--input-type=module', '-e', `
    import { open } from 'lmdb'; import { mkdtempSync, rmSync } from 'node:fs'; import { join } from 'node:path'; import { tmpdir } from 'node:os';
    const dir = mkdtempSync(join(tmpdir(), 'build-lmdb-'));
    try { const db = open({ path: join(dir, 'x.mdb'), noSubdir: true }); await db.put('k', { v: 1 }); if (db.get('k')?.v !== 1) throw new Error('read back failed'); await db.close(); }
    finally { rmSync(dir, { recursive: true, force: true }); }`], { cwd: root, encoding: 'utf8' });
  if (check.status !== 0) {
    say(check.stderr.split('\n').slice(-15).join('\n'));
    rmSync(join(lmdbDir, 'build'), { recursive: true, force: true });
    warn('the built module did not load or work');
    return 0;
  }
  // keep only the module (the object files are ~15 MB)
  for (const dir of ['Release/obj.target', 'Release/.deps', 'lmdb.target.mk']) rmSync(join(lmdbDir, 'build', dir), { recursive: true, force: true });
  writeFileSync(marker, `${PATCH_ID}\n`);
  say(`lmdb ${version} built with the fix: ${built}`);
  return 0;
}

process.exitCode = main();
