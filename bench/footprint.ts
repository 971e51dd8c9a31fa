// Footprint and recovery benchmark.
//
// Builds a data directory holding N results (default 1 000 000, across 1 000
// playbooks of 10 hosts × 100 tasks) by driving the real Shard + LmdbShardStore
// in-process (the same code path as the server, minus HTTP), then measures:
//   - heap bytes per stored result (live state, blobs off the heap)
//   - disk bytes per result
//   - recovery: a fresh state loading the snapshots + journal tail, results/s
//   - restart of the real server on that directory, until it listens
// Run: node --expose-gc dist/bench/footprint.js [results]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Shard } from '../src/shard/shard.js';
import { ShardState } from '../src/shard/state.js';
import { LmdbShardStore } from '../src/store/shard_store.js';
import { FrontStore } from '../src/store/front_store.js';
import type { WriteCommand } from '../src/shard/protocol.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) { console.error('run with node --expose-gc'); process.exit(2); }

const target = Number(process.argv[2] ?? 1_000_000);
const HOSTS = 10, TASKS = 100;
const perPlaybook = HOSTS * TASKS;
const playbooks = Math.max(1, Math.round(target / perPlaybook));
const dir = mkdtempSync(join(tmpdir(), 'logbook-footprint-'));

// ~1.6 KB, the size of a looped task's result as the ARA callback sends it
const content = JSON.stringify({
  changed: false, msg: 'All items completed', results: Array.from({ length: 6 }, (_, i) => ({
    ansible_loop_var: 'item', changed: false, failed: false, item: `package-${i}`, msg: `package-${i} is already the newest version`,
    invocation: { module_args: { name: `package-${i}`, state: 'present', update_cache: false } },
  })),
});

function mb(n: number): string { return (n / 1048576).toFixed(1) + ' MiB'; }
function dirBytes(path: string): number {
  return readdirSync(path).reduce((sum, f) => sum + statSync(join(path, f)).size, 0);
}

async function build(): Promise<{ heapPerResult: number; results: number; writeSecs: number }> {
  const front = new FrontStore(dir);
  await front.checkFormat(1, dir);
  await front.close();
  const store = new LmdbShardStore(dir, 0, 'none');
  const shard = new Shard({ compat: false, store, snapshotEvery: Infinity });
  const ids = { playbook: 0, play: 0, task: 0, host: 0, result: 0, file: 0 };
  let rid = 0;
  const write = (cmd: Partial<WriteCommand> & Pick<WriteCommand, 'type' | 'set'>) =>
    shard.write(++rid, { op: 'create', id: ++ids[cmd.type as keyof typeof ids], put: false, errors: null, elsewhere: null, minimal: true, ...cmd });
  gc!();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  let now = Date.now() * 1000;
  for (let p = 0; p < playbooks; p++) {
    write({ type: 'playbook', set: { runner_version: '2.14.18', path: `/srv/site-${p}.yml`, status: 'running', started: now, arguments: '{"check":false}' } });
    const pb = ids.playbook;
    write({ type: 'file', set: { playbook: pb, path: `/srv/site-${p}.yml`, content: '- hosts: all\n  tasks: []\n' } });
    const file = ids.file;
    write({ type: 'play', set: { playbook: pb, uuid: '5254000b-5d3f-1b2c-0000-' + String(p).padStart(12, '0'), name: 'site', status: 'running', started: now } });
    const play = ids.play;
    const hosts: number[] = [];
    for (let h = 0; h < HOSTS; h++) { write({ type: 'host', set: { playbook: pb, name: `host-${h}.example.org` } }); hosts.push(ids.host); }
    for (let t = 0; t < TASKS; t++) {
      write({ type: 'task', set: { playbook: pb, play, file, name: `task ${t}`, action: 'ansible.builtin.package', lineno: t + 3, handler: false, status: 'running', started: now, tags: '[]' } });
      const task = ids.task;
      for (const host of hosts) {
        now += 1000;
        write({ type: 'result', set: { playbook: pb, play, task, host, status: t % 7 === 0 ? 'skipped' : 'ok', changed: t % 3 === 0, ignore_errors: false, started: now - 900, ended: now, content } });
      }
    }
    // let lmdb-js commit in batches instead of one giant transaction
    if (p % 20 === 19) await new Promise((r) => setImmediate(r));
  }
  await store.snapshot(shard.state);
  const writeSecs = (performance.now() - t0) / 1000;
  gc!();
  const heapPerResult = (process.memoryUsage().heapUsed - heap0) / shard.state.results.size;
  const results = shard.state.results.size;
  await store.close();
  return { heapPerResult, results, writeSecs };
}

async function recover(): Promise<{ ms: number; results: number; heapPerResult: number }> {
  gc!();
  const heap0 = process.memoryUsage().heapUsed;
  const store = new LmdbShardStore(dir, 0, 'flush');
  const state = new ShardState();
  const t0 = performance.now();
  store.recover(state);
  const ms = performance.now() - t0;
  gc!();
  const heapPerResult = (process.memoryUsage().heapUsed - heap0) / state.results.size;
  await store.close();
  return { ms, results: state.results.size, heapPerResult };
}

async function restartServer(): Promise<{ ms: number; rssMiB: number }> {
  const main = new URL('../src/main.js', import.meta.url).pathname;
  const t0 = performance.now();
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, LOGBOOK_PORT: '0', LOGBOOK_SHARDS: '1', LOGBOOK_DATA_DIR: dir }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const ms = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d) => { out += d; if (out.includes('"msg":"listening"')) resolve(performance.now() - t0); });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
  });
  const rss = Number((await import('node:fs')).readFileSync(`/proc/${child.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)![1]) * 1024;
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return { ms, rssMiB: rss / 1048576 };
}

const built = await build();
console.log(`built ${built.results} results in ${built.writeSecs.toFixed(1)} s (${Math.round(built.results / built.writeSecs)} results/s through Shard.write, noSync)`);
console.log(`heap per stored result (live ingest): ${built.heapPerResult.toFixed(0)} bytes`);
const disk = dirBytes(dir);
console.log(`disk: ${mb(disk)} = ${(disk / built.results).toFixed(0)} bytes per result (content ${content.length} bytes, LZ4)`);
const rec = await recover();
console.log(`recovery: ${rec.results} results in ${rec.ms.toFixed(0)} ms = ${Math.round(rec.results / (rec.ms / 1000))} results/s; heap per result after recovery ${rec.heapPerResult.toFixed(0)} bytes`);
const restart = await restartServer();
console.log(`server restart until listening: ${restart.ms.toFixed(0)} ms, RSS ${restart.rssMiB.toFixed(0)} MiB (${(restart.rssMiB * 1048576 / rec.results).toFixed(0)} bytes per result)`);
console.log(JSON.stringify({ bench: 'footprint', results: built.results, heapBytesPerResult: Math.round(built.heapPerResult), heapBytesPerResultRecovered: Math.round(rec.heapPerResult), diskBytesPerResult: Math.round(disk / built.results), recoveryMs: Math.round(rec.ms), recoveryResultsPerSec: Math.round(rec.results / (rec.ms / 1000)), restartMs: Math.round(restart.ms), rssMiB: Math.round(restart.rssMiB) }));
rmSync(dir, { recursive: true, force: true });
