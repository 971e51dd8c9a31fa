// The servers a benchmark measures, each a real process on a loopback port:
// logbook (dist/src/main.js), ARA's own server (Debian's ara-server under
// gunicorn, SQLite) and the raw limit (bench/raw_server.ts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { createServer } from 'node:net';

export interface Running {
  name: string;
  url: string;
  pid: number;
  dataDir: string;
  /** milliseconds from spawn until the server answered ready */
  readyMs: number;
  stop(): Promise<void>;
  /** CPU seconds the process (and its threads, and for ARA its workers) used so far */
  cpuSeconds(): number;
  /** resident memory of the process (for ARA: master + workers) */
  rssBytes(): number;
  /** what the process wrote to stdout (logbook: JSON log lines) */
  output(): string;
  /** resolves once the server has worked off what it had queued (see drain) */
  drain(): Promise<number>;
}

/**
 * Wait until a server has answered everything queued before: wrk drops its
 * connections when its time is up, but a server that queues (gunicorn's sync
 * workers) still works through the abandoned requests, which would be charged
 * to the next measurement. One cheap request, answered in order behind them,
 * tells when it is done. Returns the milliseconds waited.
 */
function drainer(url: string): () => Promise<number> {
  return async () => {
    const t0 = performance.now();
    const r = await fetch(url, { signal: AbortSignal.timeout(300_000) });
    await r.arrayBuffer();
    return performance.now() - t0;
  };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const port = (s.address() as { port: number }).port; s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

/** Two fields of /proc/<pid>/stat summed, as seconds (clock ticks, USER_HZ = 100 on Linux); 0 once gone. */
function statSeconds(pid: number | 'self', a: number, b: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[a]) + Number(fields[b])) / 100;
  } catch { return 0; }
}

export function cpuSecondsOf(pid: number): number {
  return statSeconds(pid, 11, 12); // utime + stime
}

/** CPU of a process's reaped children (and of theirs): cutime + cstime. */
export function reapedChildrenCpuSecondsOf(pid: number | 'self'): number {
  return statSeconds(pid, 13, 14);
}

export function rssBytesOf(pid: number): number {
  try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024; } catch { return 0; }
}

/** Anonymous resident memory (heap, stacks, buffers), without file pages such as LMDB's map. */
export function rssAnonBytesOf(pid: number): number {
  try { return Number(/RssAnon:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024; } catch { return 0; }
}

export function onPath(cmd: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((d) => d && existsSync(join(d, cmd)));
}

async function waitFor(url: string, child: ChildProcess, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
    try { const r = await fetch(url); await r.arrayBuffer(); if (r.status < 500) return; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${what} did not start in time`);
}

function stopper(child: ChildProcess, cleanup: () => void): () => Promise<void> {
  return async () => {
    // a child already killed by a signal (a failover benchmark's kill -9) has no exit to wait for
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => { const t = setTimeout(() => { child.kill('SIGKILL'); r(null); }, 15_000); child.once('exit', () => { clearTimeout(t); r(null); }); });
    }
    cleanup();
  };
}

/** A child's output, kept (the last ~1 MB) for the scenario; BENCH_LOGBOOK_LOG=<file> also appends it there, whole. */
function capture(child: ChildProcess): () => string {
  let out = '';
  const file = process.env.BENCH_LOGBOOK_LOG;
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (out.length > 1_000_000) out = out.slice(-500_000);
    if (file) appendFileSync(file, d);
  });
  return () => out;
}

const root = new URL('../../', import.meta.url).pathname; // dist/bench/lib → dist/
export const MAIN_JS = join(root, 'src', 'main.js');
/** The source tree (for files tsc does not copy, like bench/ara_store.py). */
export const SOURCE_ROOT = join(root, '..');

export interface LogbookOptions {
  env?: Record<string, string>;
  /** serve this directory and keep it afterwards (default: a fresh temporary one, removed on stop) */
  dataDir?: string;
  /** node options before the script (e.g. --cpu-prof, which NODE_OPTIONS refuses) */
  nodeArgs?: string[];
}

export async function startLogbook(options: LogbookOptions = {}): Promise<Running> {
  const dir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'logbook-bench-'));
  const port = await freePort();
  const t0 = performance.now();
  // BENCH_LOGBOOK_MAIN: another build's dist/src/main.js, to compare two versions under the same load
  // BENCH_LOGBOOK_NODE_ARGS: node options for every logbook started (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof")
  const nodeArgs = [...(process.env.BENCH_LOGBOOK_NODE_ARGS?.split(' ').filter(Boolean) ?? []), ...(options.nodeArgs ?? [])];
  const child = spawn(process.execPath, [...nodeArgs, process.env.BENCH_LOGBOOK_MAIN ?? MAIN_JS], {
    // capacity scenarios (closed loop at up to 128 connections) measure what the server can do, not its
    // admission: the queueing delay bound is off unless a scenario sets it (overload does)
    env: { ...process.env, LOGBOOK_HOST: '127.0.0.1', LOGBOOK_PORT: String(port), LOGBOOK_DATA_DIR: dir, LOGBOOK_LOG_LEVEL: 'info', LOGBOOK_SHARD_QUEUE_DELAY: '0', ...options.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const output = capture(child);
  const url = `http://127.0.0.1:${port}`;
  // /healthz answers 503 while the shards recover: ready means recovered
  await waitFor(`${url}/healthz`, child, 'logbook');
  const readyMs = performance.now() - t0;
  return {
    name: 'logbook', url, pid: child.pid!, dataDir: dir, readyMs, output, drain: drainer(`${url}/healthz`),
    cpuSeconds: () => cpuSecondsOf(child.pid!), rssBytes: () => rssBytesOf(child.pid!),
    stop: stopper(child, () => { if (!options.dataDir) rmSync(dir, { recursive: true, force: true }); }),
  };
}

/** The `recovered` log line of a logbook: how long recovery took and what it loaded. */
export function recoveredLine(output: string): { ms: number; slowestShardMs: number; results: number; journalEventsReplayed: number } | null {
  for (const line of output.split('\n')) {
    if (!line.includes('"msg":"recovered"')) continue;
    try { return JSON.parse(line); } catch { /* partial line */ }
  }
  return null;
}

/**
 * Whether ARA's own server can run here: ara-manage (ara-server) and gunicorn.
 * A missing gunicorn is installed with apt-get when we are root on Debian;
 * anything else returns the reason ARA's baseline is skipped.
 */
export function araUnavailable(log: (msg: string) => void): string | null {
  if (!onPath('ara-manage')) return 'ara-manage not found (Debian: apt-get install ara-server)';
  if (onPath('gunicorn')) return null;
  if (process.getuid?.() === 0 && onPath('apt-get')) {
    log('gunicorn not found: apt-get install -y gunicorn');
    const r = spawnSync('apt-get', ['install', '-y', 'gunicorn'], { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (r.status === 0 && onPath('gunicorn')) return null;
    return `gunicorn not found and apt-get install -y gunicorn failed: ${(r.stderr ?? '').trim().split('\n').pop()}`;
  }
  return 'gunicorn not found (Debian: apt-get install gunicorn)';
}

function araEnv(dir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('ARA_')) env[k] = v;
  return { ...env, ARA_BASE_DIR: dir, ARA_ALLOWED_HOSTS: "['127.0.0.1','localhost']", ARA_DEBUG: 'false', ARA_LOG_LEVEL: 'WARNING', PYTHONWARNINGS: 'ignore' };
}

/** A migrated, empty ARA database directory. */
export function prepareAraDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ara-bench-'));
  const migrate = spawnSync('ara-manage', ['migrate'], { env: araEnv(dir), encoding: 'utf8' });
  if (migrate.status !== 0) throw new Error(`ara-manage migrate failed: ${migrate.stderr}`);
  return dir;
}

/**
 * Fills a migrated ARA directory through Django's ORM (bench/ara_store.py):
 * playbooks × hosts × tasks results holding `content`, hosts holding `facts`.
 */
export function fillAraDir(dir: string, playbooks: number, hosts: number, tasks: number, values: { content: unknown; facts: unknown }): { results: number; seconds: number; blobBytes: { content: number; facts: number } } {
  const file = join(dir, 'values.json');
  writeFileSync(file, JSON.stringify(values));
  const r = spawnSync('/usr/bin/python3', [join(SOURCE_ROOT, 'bench', 'ara_store.py'), String(playbooks), String(hosts), String(tasks), file], { env: araEnv(dir), encoding: 'utf8' });
  rmSync(file, { force: true });
  if (r.status !== 0) throw new Error(`bench/ara_store.py failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

/** ARA's own server as Debian ships it, behind gunicorn with 2 workers, on SQLite (dataDir: keep it afterwards). */
export async function startAra(dataDir?: string): Promise<Running> {
  const dir = dataDir ?? prepareAraDir();
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn('gunicorn', ['--workers', '2', '--bind', `127.0.0.1:${port}`, '--log-level', 'warning', 'ara.server.wsgi'], {
    env: araEnv(dir), stdio: ['ignore', 'pipe', 'inherit'],
  });
  const output = capture(child);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/api/`, child, 'ara (gunicorn)');
  const readyMs = performance.now() - t0;
  // gunicorn's workers are children of the master: count them all
  const pids = () => [child.pid!, ...spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean).map(Number)];
  return {
    name: 'ara', url, pid: child.pid!, dataDir: dir, readyMs, output, drain: drainer(`${url}/api/`),
    cpuSeconds: () => pids().reduce((s, p) => s + cpuSecondsOf(p), 0),
    rssBytes: () => pids().reduce((s, p) => s + rssBytesOf(p), 0),
    stop: stopper(child, () => { if (!dataDir) rmSync(dir, { recursive: true, force: true }); }),
  };
}

/** The raw limit: bare uWS + JSON.parse + one durable LMDB put per POST; GET /<n> reads record n. */
export async function startRaw(fill?: { count: number; body: string }, env: Record<string, string> = {}): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'raw-bench-'));
  const args = [join(root, 'bench', 'raw_server.js'), String(await freePort()), dir];
  if (fill) { writeFileSync(join(dir, 'fill.json'), fill.body); args.push(String(fill.count), join(dir, 'fill.json')); }
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const output = capture(child);
  const url = `http://127.0.0.1:${args[1]}`;
  await waitFor(`${url}/1`, child, 'raw server');
  return {
    name: 'raw', url, pid: child.pid!, dataDir: dir, readyMs: performance.now() - t0, output, drain: drainer(`${url}/1`),
    cpuSeconds: () => cpuSecondsOf(child.pid!), rssBytes: () => rssBytesOf(child.pid!),
    stop: stopper(child, () => rmSync(dir, { recursive: true, force: true })),
  };
}
