// `logbook check` and `logbook backup` on damaged data directories (issue #51,
// item 6), against real LMDB files written by a real server: both run the
// server's start-up guard before they map a file, so a file truncated below its
// pages is reported (exit 1, the file named), not a SIGBUS. A seeded fuzz pass
// truncates, zero-fills and flips bytes at seeded offsets of each file: `check`
// never dies on a signal (it answers 0 or 1), and the server either refuses the
// directory saying why, or starts; it never dies on a signal either.
// Replay a run with LOGBOOK_FUZZ_SEED=<the seed it logged>.
import test from 'ava';
import { spawn } from 'node:child_process';
import { closeSync, cpSync, mkdirSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook } from '../helpers/server.js';
import { CLI_JS, runCheck } from '../helpers/cli.js';
import { runUntilExit } from '../helpers/process.js';
import { Rng, seedFrom } from '../helpers/random.js';
import { META_ROOTS } from '../../src/store/lmdb_pages.js';

const ENV = { LOGBOOK_SHARDS: '2' };
const work = mkdtempSync(join(tmpdir(), 'logbook-check-fuzz-'));
let healthy = '';

test.before(async () => {
  healthy = join(work, 'healthy');
  mkdirSync(healthy);
  const lb = await startLogbook({ env: { ...ENV, LOGBOOK_SNAPSHOT_EVERY: '20' }, dataDir: healthy });
  for (let i = 0; i < 8; i++) {
    const pb = await api(lb.url, 'POST', '/api/v1/playbooks', { path: `/srv/${i}.yml`, runner_version: '2.16.1', arguments: { pad: 'x'.repeat(3000) + i } });
    for (let k = 0; k < 4; k++) await api(lb.url, 'POST', '/api/v1/records', { playbook: pb.body.id, key: `k${k}`, type: 'json', value: { n: k, text: `${i}/${k} `.repeat(400) } });
  }
  if (await lb.stop('SIGTERM') !== 0) throw new Error('setup: logbook did not stop cleanly');
});
test.after.always(() => rmSync(work, { recursive: true, force: true }));

let copies = 0;
function copyOfHealthy(): string {
  const dir = join(work, `copy-${copies++}`);
  cpSync(healthy, dir, { recursive: true });
  for (const name of readdirSync(dir)) if (name.endsWith('-lock') || name === 'logbook.pid') rmSync(join(dir, name), { force: true });
  return dir;
}

function runBackup(dir: string, target: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; output: string }> {
  const child = spawn(process.execPath, [CLI_JS, 'backup', dir, target], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { output += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { output += d; });
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, output })));
}

function patch(path: string, offset: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+');
  try { writeSync(fd, bytes, 0, bytes.length, offset); } finally { closeSync(fd); }
}

test.serial('a shard file truncated to half: check and backup exit 1 naming it (no SIGBUS)', async (t) => {
  const dir = copyOfHealthy();
  const file = join(dir, 'shard-0.mdb');
  truncateSync(file, Math.floor(statSync(file).size / 2));
  const check = await runCheck(dir);
  t.is(check.code, 1, check.output);
  t.regex(check.output, /shard-0\.mdb is truncated/);
  const backup = await runBackup(dir, join(work, 'backup-of-truncated'));
  t.is(backup.signal, null, backup.output);
  t.is(backup.code, 1, backup.output);
  t.regex(backup.output, /shard-0\.mdb is truncated/);
  // the healthy directory checks clean (the guard is not a false alarm)
  const clean = await runCheck(copyOfHealthy());
  t.is(clean.code, 0, clean.output);
});

test.serial('front.mdb cut inside its free-page tree (read by the first write, not by reads): the server refuses it naming the page, no SIGBUS', async (t) => {
  const dir = copyOfHealthy();
  const file = join(dir, 'front.mdb');
  // the newer meta page names the free-page tree's root (LMDB's own layout: src/store/lmdb_pages.ts)
  const meta = (at: number) => {
    const b = Buffer.alloc(200);
    const fd = openSync(file, 'r');
    try { readSync(fd, b, 0, b.length, at); } finally { closeSync(fd); }
    return { txnid: b.readBigUInt64LE(24 + 128), freeRoot: b.readBigUInt64LE(24 + META_ROOTS.freeRoot) };
  };
  const current = [meta(0), meta(4096)].reduce((a, b) => (b.txnid > a.txnid ? b : a));
  t.not(current.freeRoot, 0xffffffffffffffffn, 'the healthy front.mdb has a free-page tree');
  const cutAt = Number(current.freeRoot) * 4096 + 2048;
  t.true(cutAt < statSync(file).size);
  truncateSync(file, cutAt);
  const server = await runUntilExit({ dataDir: dir, env: ENV, timeoutMs: 8000 });
  t.is(server.signal, null, server.output.slice(-2000));
  t.is(server.code, 2, server.output.slice(-2000));
  t.regex(server.output, new RegExp(`front\\.mdb is truncated: ${cutAt} bytes, but its pages reach \\d+ bytes \\(page ${current.freeRoot} is past the end of the file`));
  const check = await runCheck(dir);
  t.is(check.code, 1, check.output);
  t.regex(check.output, /front\.mdb is truncated/);
});

test.serial('fuzz: truncations, zero-filled pages and flipped bytes never make check die on a signal, nor the server', async (t) => {
  const seed = seedFrom('LOGBOOK_FUZZ_SEED');
  t.log(`LOGBOOK_FUZZ_SEED=${seed}`);
  const rng = new Rng(seed);
  const files = ['front.mdb', 'shard-0.mdb', 'shard-1.mdb'];
  const cases = Number(process.env.LOGBOOK_FUZZ_CASES ?? 9);
  for (let i = 0; i < cases; i++) {
    const dir = copyOfHealthy();
    const name = files[i % files.length]!;
    const file = join(dir, name);
    const size = statSync(file).size;
    const kind = rng.pick(['truncate', 'zero', 'flip'] as const);
    let what = '';
    if (kind === 'truncate') {
      const to = rng.bool() ? rng.int(1, size - 1) : rng.int(1, Math.max(1, Math.floor(size / 4096) - 1)) * 4096;
      truncateSync(file, to);
      what = `${name} truncated to ${to} of ${size} bytes`;
    } else if (kind === 'zero') {
      const page = rng.int(0, Math.max(0, Math.floor(size / 4096) - 1));
      patch(file, page * 4096, Buffer.alloc(Math.min(4096, size - page * 4096)));
      what = `${name} page ${page} zero-filled`;
    } else {
      const offsets = Array.from({ length: 16 }, () => rng.int(0, size - 1));
      for (const at of offsets) patch(file, at, Buffer.from([rng.int(1, 255)]));
      what = `${name}: 16 bytes flipped at ${offsets.join(',')}`;
    }
    what = `${what} (LOGBOOK_FUZZ_SEED=${seed}, case ${i})`; // in every failure message: a CI log keeps only those
    const check = await runCheck(dir);
    t.true(check.code === 0 || check.code === 1, `${what}: check exited ${check.code} (a signal?)\n${check.output.slice(-2000)}`);
    const server = await runUntilExit({ dataDir: dir, env: ENV, timeoutMs: 8000 });
    t.is(server.signal === 'SIGKILL' && server.timedOut ? null : server.signal, null, `${what}: the server died on a signal\n${server.output.slice(-2000)}`);
    if (!server.timedOut) {
      // it refused the directory: it said why
      t.not(server.code, 0, `${what}: the server exited 0\n${server.output.slice(-2000)}`);
      t.regex(server.output, /\.mdb|damaged|corrupt|restore/i, `${what}: the server stopped without naming the damage\n${server.output.slice(-2000)}`);
    }
    if (kind === 'truncate' && check.code === 1) t.regex(check.output, new RegExp(name.replace('.', '\\.')), `${what}: check did not name the file`);
    t.log(`${what}: check ${check.code}, server ${server.timedOut ? 'started' : `refused (${server.code})`}`);
    rmSync(dir, { recursive: true, force: true });
  }
});
