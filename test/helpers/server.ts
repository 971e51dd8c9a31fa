// Starts a real logbook process (the compiled dist/src/main.js) on a free port
// with its own temporary data directory, the way a user would run it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// dist/test/helpers → dist/src/main.js
export const MAIN_JS = join(here, '..', '..', 'src', 'main.js');

export interface Logbook {
  url: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  output: () => string;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export interface StartOptions {
  env?: Record<string, string>;
  dataDir?: string;
  /** keep the data dir after stop (for restart tests) */
  keepData?: boolean;
  /** run node under this command, e.g. ['prlimit', '--fsize=1000000'] (fault tests) */
  wrap?: string[];
  /**
   * how long to wait for "listening" before the process is killed (ms; default
   * 30 s): a bound for a start that hangs, longer where a start waits on others
   * (a cluster node on a NATS cluster that is electing leaders)
   */
  startTimeoutMs?: number;
}

export async function startLogbook(options: StartOptions = {}): Promise<Logbook> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'logbook-test-'));
  const env: Record<string, string> = {
    ...process.env as Record<string, string>,
    LOGBOOK_HOST: '127.0.0.1',
    LOGBOOK_PORT: '0',
    LOGBOOK_DATA_DIR: dataDir,
    LOGBOOK_LOG_LEVEL: 'info',
    ...options.env,
  };
  const [command, ...args] = [...(options.wrap ?? []), process.execPath, MAIN_JS];
  const child = spawn(command!, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => { out += d; });
  const port = await new Promise<number>((resolve, reject) => {
    // a server that did not start in time is killed, not left running behind the failed test
    // the log's end says where the start stopped (its first line is the whole configuration)
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`logbook did not start in ${(options.startTimeoutMs ?? 30_000) / 1000} s; its log ends:\n${out.slice(-4000)}`));
    }, options.startTimeoutMs ?? 30_000);
    child.stdout!.on('data', (d: string) => {
      out += d;
      const m = /"msg":"listening"[^\n]*"port":(\d+)/.exec(out);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`logbook exited with ${code}:\n${out}`)); });
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    child,
    output: () => out,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const code = await exited;
      if (!options.keepData && !options.dataDir) rmSync(dataDir, { recursive: true, force: true });
      return code;
    },
  };
}

/** JSON request helper: returns status, headers and parsed body (or raw text when not JSON). */
export async function api(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  let res: Response;
  try {
    res = await fetch(base + path, init);
  } catch (err) {
    // undici says only "fetch failed"; what failed (refused, reset, closed) is in its cause
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`${method} ${path}: fetch failed: ${cause?.code ?? ''} ${cause?.message ?? String(err)}`);
  }
  const text = await res.text();
  let json: any = undefined;
  try { json = text.length ? JSON.parse(text) : undefined; } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, body: json };
}

/**
 * A logbook started some other way (its `logbook serve` command, an installed
 * package): its output as it comes, and the port from its "listening" log line.
 */
export function watchServeOutput(child: ChildProcess): { output: () => string; port: (timeoutMs: number) => Promise<number> } {
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr?.setEncoding('utf8').on('data', (d: string) => { out += d; });
  const port = (timeoutMs: number) => new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => { clearInterval(poll); reject(new Error(`no "listening" line:\n${out}`)); }, timeoutMs);
    const poll = setInterval(() => {
      const m = /"msg":"listening"[^\n]*"port":(\d+)/.exec(out);
      if (m) { clearInterval(poll); clearTimeout(timer); resolve(Number(m[1])); }
    }, 50);
  });
  return { output: () => out, port };
}
