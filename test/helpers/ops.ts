// Helpers for the operations tests: a logbook process whose output lines can be
// awaited (e.g. the "recovering" line that comes before "listening"), metrics
// scraping, and small HTTP utilities with timeouts (a hanging request must fail
// the test, not stall it).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAIN_JS } from './server.js';
import { parseProm, type Family } from './prom.js';

export interface Proc {
  child: ChildProcess;
  dataDir: string;
  output: () => string;
  /** Resolves with the first output line matching `re` (searching what came before too). */
  waitFor: (re: RegExp, timeoutMs?: number) => Promise<RegExpExecArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill: (signal?: NodeJS.Signals) => Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  cleanup: () => void;
}

export function spawnLogbook(env: Record<string, string>, dataDir?: string): Proc {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'logbook-ops-'));
  const child = spawn(process.execPath, [MAIN_JS], {
    env: {
      ...process.env as Record<string, string>,
      LOGBOOK_HOST: '127.0.0.1', LOGBOOK_PORT: '0', LOGBOOK_DATA_DIR: dir, LOGBOOK_SHARDS: '2', LOGBOOK_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters: Array<{ re: RegExp; resolve: (m: RegExpExecArray) => void }> = [];
  const onData = (d: string) => {
    out += d;
    for (let i = waiters.length - 1; i >= 0; i--) {
      const m = waiters[i]!.re.exec(out);
      if (m) { waiters[i]!.resolve(m); waiters.splice(i, 1); }
    }
  };
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return {
    child, dataDir: dir, output: () => out, exited,
    waitFor(re, timeoutMs = 30_000) {
      const m = re.exec(out);
      if (m) return Promise.resolve(m);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re}:\n${out}`)), timeoutMs);
        waiters.push({ re, resolve: (match) => { clearTimeout(timer); resolve(match); } });
        void exited.then(({ code }) => { clearTimeout(timer); reject(new Error(`logbook exited (${code}) before ${re}:\n${out}`)); });
      });
    },
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    cleanup() { if (!dataDir) rmSync(dir, { recursive: true, force: true }); },
  };
}

/** The port from the "listening" line. */
export async function listening(p: Proc): Promise<string> {
  const m = await p.waitFor(/"msg":"listening"[^\n]*"port":(\d+)/);
  return `http://127.0.0.1:${m[1]}`;
}

/** fetch with a deadline: a request that hangs fails instead of stalling the test. */
export async function request(url: string, init: RequestInit = {}, timeoutMs = 15_000) {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let body: any;
  try { body = text ? JSON.parse(text) : undefined; } catch { body = undefined; }
  return { status: res.status, headers: res.headers, text, body };
}

export function post(base: string, path: string, body: unknown, timeoutMs?: number) {
  return request(base + path, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  }, timeoutMs);
}

export async function scrape(base: string): Promise<Map<string, Family>> {
  const res = await request(`${base}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${res.text}`);
  return parseProm(res.text);
}

/** Poll until `check` returns a truthy value (or throw after the timeout). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A playbook with one play, file, task, host and result; returns the ids. */
export async function seedRun(base: string, playbook: Record<string, unknown> = {}) {
  const pb = await post(base, '/api/v1/playbooks', { path: '/site.yml', runner_version: '2.16.0', ...playbook });
  if (pb.status !== 201) throw new Error(`playbook: ${pb.status} ${pb.text}`);
  const p = pb.body.id as number;
  const started = (playbook.started as string | undefined) ?? undefined;
  const at = started ? { started } : {};
  const play = await post(base, '/api/v1/plays', { playbook: p, uuid: crypto.randomUUID(), name: 'play', status: 'running', ...at });
  const file = await post(base, '/api/v1/files', { playbook: p, path: `/site-${p}.yml`, content: '- hosts: all\n' });
  const task = await post(base, '/api/v1/tasks', {
    playbook: p, play: play.body.id, file: file.body.id, action: 'ping', lineno: 1, handler: false, status: 'running', ...at,
  });
  const done = await post(base, '/api/v1/tasks', {
    playbook: p, play: play.body.id, file: file.body.id, action: 'debug', lineno: 2, handler: false, status: 'completed', ...at,
  });
  const host = await post(base, '/api/v1/hosts', { playbook: p, name: 'web1' });
  const result = await post(base, '/api/v1/results', {
    playbook: p, play: play.body.id, task: task.body.id, host: host.body.id, status: 'ok', changed: true, ...at,
  });
  const record = await post(base, '/api/v1/records', { playbook: p, key: 'k', type: 'text', value: 'v' });
  for (const r of [play, file, task, done, host, result, record]) if (r.status !== 201) throw new Error(`seed: ${r.status} ${r.text}`);
  return {
    playbook: p, play: play.body.id as number, file: file.body.id as number, task: task.body.id as number,
    doneTask: done.body.id as number, host: host.body.id as number, result: result.body.id as number, record: record.body.id as number,
  };
}
