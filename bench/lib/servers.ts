// The servers a benchmark measures, each a real process on a loopback port.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';

export interface Running {
  name: string;
  url: string;
  pid: number;
  dataDir: string;
  stop(): Promise<void>;
  /** CPU seconds the process (and its threads) used so far */
  cpuSeconds(): number;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const port = (s.address() as { port: number }).port; s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

export function cpuSecondsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime in clock ticks
  } catch { return 0; }
}

export function rssBytesOf(pid: number): number {
  try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024; } catch { return 0; }
}

async function waitFor(url: string, child: ChildProcess, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
    try { const r = await fetch(url); if (r.status < 500) return; } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not start in time`);
}

function stopper(child: ChildProcess, cleanup: () => void): () => Promise<void> {
  return async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => { const t = setTimeout(() => { child.kill('SIGKILL'); r(null); }, 15_000); child.once('exit', () => { clearTimeout(t); r(null); }); });
    }
    cleanup();
  };
}

const root = new URL('../../', import.meta.url).pathname; // dist/ → bench lives in dist/bench/lib
export const MAIN_JS = join(root, 'src', 'main.js');

export async function startLogbook(env: Record<string, string> = {}, dataDir?: string): Promise<Running> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'logbook-bench-'));
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN_JS], {
    env: { ...process.env, LOGBOOK_PORT: String(port), LOGBOOK_DATA_DIR: dir, LOGBOOK_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/healthz`, child, 'logbook');
  return { name: 'logbook', url, pid: child.pid!, dataDir: dir, cpuSeconds: () => cpuSecondsOf(child.pid!), stop: stopper(child, () => { if (!dataDir) rmSync(dir, { recursive: true, force: true }); }) };
}

/** ARA's own server as Debian ships it, behind gunicorn with 2 workers, on SQLite. */
export async function startAra(): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'ara-bench-'));
  const env = { ...process.env, ARA_BASE_DIR: dir, ARA_ALLOWED_HOSTS: "['127.0.0.1','localhost']", ARA_DEBUG: 'false', ARA_LOG_LEVEL: 'WARNING' };
  const migrate = spawnSync('ara-manage', ['migrate'], { env, encoding: 'utf8' });
  if (migrate.status !== 0) throw new Error(`ara-manage migrate failed: ${migrate.stderr}`);
  const port = await freePort();
  const child = spawn('gunicorn', ['--workers', '2', '--bind', `127.0.0.1:${port}`, '--log-level', 'warning', 'ara.server.wsgi'], {
    env, stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/api/`, child, 'ara (gunicorn)');
  // gunicorn's workers are children of the master: count them all
  const cpu = () => {
    const kids = spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean).map(Number);
    return [child.pid!, ...kids].reduce((s, p) => s + cpuSecondsOf(p), 0);
  };
  return { name: 'ara', url, pid: child.pid!, dataDir: dir, cpuSeconds: cpu, stop: stopper(child, () => rmSync(dir, { recursive: true, force: true })) };
}

/** The raw limit: bare uWS + JSON.parse + one durable LMDB put per request. */
export async function startRaw(): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'raw-bench-'));
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'bench', 'raw_server.js'), String(port), dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/`, child, 'raw server');
  return { name: 'raw', url, pid: child.pid!, dataDir: dir, cpuSeconds: () => cpuSecondsOf(child.pid!), stop: stopper(child, () => rmSync(dir, { recursive: true, force: true })) };
}
