// `npm run backup -- <data dir> <target dir>` (or `node dist/src/tools/backup.js …`):
// a consistent copy of a logbook data directory while the server keeps running.
//
// Every LMDB environment (shard-<k>.mdb, then front.mdb) is copied with LMDB's own
// copy facility (mdb_env_copy2 with compaction, lmdb-js `env.backup(path, true)`):
// it runs inside one read transaction, so each copy is exactly the environment as
// of one committed transaction, never a torn file, and writers are not blocked
// (readers and the writer do not lock each other in LMDB).
//
// Across environments (README "Backup and restore"):
//  - a write acknowledged before the backup started is in the copy: it was
//    committed (and flushed) before any copy's read transaction began;
//  - a playbook and everything under it live in one shard, so each playbook is
//    copied whole, as of one transaction;
//  - front.mdb is copied last, so every label a copied playbook refers to exists
//    in the copy (unless it was deleted while the backup ran) and the label id
//    high-water mark covers every label id in the shards;
//  - id allocators are rebuilt at start-up from the highest ids in the shard
//    copies, so a server restored from the copy hands out fresh ids.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { open } from 'lmdb';
import { checkLmdbFile } from '../store/data_dir.js';
import { StoreError } from '../store/front_store.js';

const USAGE = 'Usage: logbook backup <data dir> <target dir>\n\n'
  + 'Copies every LMDB environment of a (running) logbook data directory into an empty target directory,\n'
  + 'each as of one transaction (LMDB\'s compacting copy). Restore: start logbook on the target directory.\n\n'
  + 'Exit codes: 0 copied, 1 failure (not a data directory, target not empty, a copy failed), 2 usage (bad arguments).\n';
const SHARD_FILE = /^shard-(\d+)\.mdb$/;

/** The environments of a data directory in copy order: shards by number, front.mdb last. */
export function environments(dataDir: string): string[] {
  const shards = readdirSync(dataDir)
    .map((name) => SHARD_FILE.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]))
    .map((m) => m[0]);
  return [...shards, 'front.mdb'];
}

export interface CopiedEnvironment { name: string; sourceBytes: number; copyBytes: number; ms: number }

/** Copy one environment with LMDB's compacting copy; returns its sizes. */
export async function copyEnvironment(source: string, target: string): Promise<CopiedEnvironment> {
  const t0 = performance.now();
  // readOnly: the tool takes a reader slot, never the write lock, and cannot
  // change anything; the open flags otherwise match the server's (src/store/*).
  const env = open({ path: source, readOnly: true, maxDbs: 4 });
  const partial = target + '.partial';
  try {
    rmSync(partial, { force: true });
    await env.backup(partial, true);
    renameSync(partial, target);
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  } finally {
    await env.close();
  }
  return { name: basename(target), sourceBytes: statSync(source).size, copyBytes: statSync(target).size, ms: performance.now() - t0 };
}

/** 512 B, 12 KiB, 3.4 MiB, 1.2 GiB */
export function bytes(n: number): string {
  if (n < 1024) return n + ' B';
  if (n < 1024 * 1024) return (n / 1024).toFixed(n < 10 * 1024 ? 1 : 0) + ' KiB';
  if (n < 1024 ** 3) return (n / 1024 ** 2).toFixed(1) + ' MiB';
  return (n / 1024 ** 3).toFixed(2) + ' GiB';
}

export async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(USAGE); return 0; }
  const paths = argv.filter((a) => !a.startsWith('--'));
  if (paths.length !== 2 || paths.length !== argv.length) { process.stderr.write(USAGE); return 2; }
  const dataDir = resolve(paths[0]!);
  const targetDir = resolve(paths[1]!);
  if (!existsSync(join(dataDir, 'front.mdb'))) {
    process.stderr.write(`backup: ${dataDir} is not a logbook data directory (no front.mdb)\n`);
    return 1;
  }
  if (targetDir === dataDir) { process.stderr.write('backup: the target must not be the data directory\n'); return 1; }
  if (existsSync(targetDir)) {
    if (!statSync(targetDir).isDirectory()) { process.stderr.write(`backup: ${targetDir} exists and is not a directory\n`); return 1; }
    if (readdirSync(targetDir).length > 0) { process.stderr.write(`backup: refusing to write into ${targetDir}: it is not empty\n`); return 1; }
  }
  mkdirSync(targetDir, { recursive: true });
  // the server's guard before any file is mapped: a truncated source is reported, not a SIGBUS
  for (const name of environments(dataDir)) {
    if (!existsSync(join(dataDir, name))) continue; // the copy says it is missing
    try {
      checkLmdbFile(join(dataDir, name), name, dataDir);
    } catch (err) {
      if (!(err instanceof StoreError)) throw err;
      process.stderr.write(`backup: nothing copied: ${err.message}\n`);
      return 1;
    }
  }
  const t0 = performance.now();
  const started = new Date().toISOString();
  let total = 0;
  try {
    for (const name of environments(dataDir)) {
      const c = await copyEnvironment(join(dataDir, name), join(targetDir, name));
      total += c.copyBytes;
      process.stdout.write(`copied ${name}: ${bytes(c.copyBytes)} (live file ${bytes(c.sourceBytes)}) in ${(c.ms / 1000).toFixed(2)} s\n`);
    }
  } catch (err) {
    process.stderr.write(`backup: failed: ${(err as Error).message}\n  ${targetDir} is incomplete: remove it before retrying\n`);
    return 1;
  }
  process.stdout.write(`backup of ${dataDir} started ${started} complete in ${((performance.now() - t0) / 1000).toFixed(2)} s: ` +
    `${environments(dataDir).length} environments, ${bytes(total)} in ${targetDir}\n` +
    `restore: start logbook with LOGBOOK_DATA_DIR=${targetDir} (and the same LOGBOOK_SHARDS)\n`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
