// Small builders for the HTTP test suites: each creates records through the
// public API (as a client would) and fails loudly when the server answers with
// an unexpected status, so a fixture problem never hides as a wrong assertion.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { api, startLogbook, type Logbook } from './server.js';

export type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
export type Reply = Awaited<ReturnType<typeof api>>;

/** The shard count every HTTP suite starts its server with (lists cross shards). */
export const SHARDS = 3;
export const SERVER_ENV = { LOGBOOK_SHARDS: String(SHARDS) };

let seq = 0;
/** A name nobody else in this process uses (lower-case letters, digits and dashes). */
export function uniq(prefix = 'x'): string {
  seq += 1;
  return `${prefix}-${process.pid.toString(36)}${Math.random().toString(36).slice(2, 7)}-${seq}`;
}

/** Sends a request and throws (with the response text) unless the status is `expect`. */
export async function call(url: string, method: string, path: string, body: unknown, expect: number, headers: Record<string, string> = {}): Promise<Reply> {
  const r = await api(url, method, path, body, headers);
  if (r.status !== expect) {
    throw new Error(`${method} ${path} ${body === undefined ? '' : JSON.stringify(body).slice(0, 300)} → ${r.status} (expected ${expect}): ${r.text.slice(0, 500)}`);
  }
  return r;
}

export const post = async (url: string, path: string, body: unknown): Promise<Json> => (await call(url, 'POST', path, body, 201)).body;
export const patch = async (url: string, path: string, body: unknown): Promise<Json> => (await call(url, 'PATCH', path, body, 200)).body;
export const put = async (url: string, path: string, body: unknown): Promise<Json> => (await call(url, 'PUT', path, body, 200)).body;
export const get = async (url: string, path: string): Promise<Json> => (await call(url, 'GET', path, undefined, 200)).body;
export const del = async (url: string, path: string): Promise<void> => { await call(url, 'DELETE', path, undefined, 204); };

/** GET a list and return the envelope. `query` is appended as is (already encoded) or built from an object. */
export async function list(url: string, resource: string, query: string | Record<string, string | number | boolean | Array<string | number>> = ''): Promise<Json> {
  return get(url, `/api/v1/${resource}${queryString(query)}`);
}

export function queryString(query: string | Record<string, string | number | boolean | Array<string | number>>): string {
  if (typeof query === 'string') return query === '' ? '' : `?${query.replace(/^\?/, '')}`;
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (Array.isArray(v)) for (const x of v) p.append(k, String(x));
    else p.append(k, String(v));
  }
  const s = p.toString();
  return s === '' ? '' : `?${s}`;
}

/** Ids of a list's results, in order. */
export const ids = (envelope: Json): number[] => envelope.results.map((r: Json) => r.id);

export async function createPlaybook(url: string, overrides: Record<string, unknown> = {}): Promise<Json> {
  return post(url, '/api/v1/playbooks', { path: `/work/${uniq('pb')}/site.yml`, runner_version: '2.15.13', ...overrides });
}

/** Creates playbooks until one lands on `shard` (playbook id mod SHARDS); extra ones are deleted. */
export async function createPlaybookOnShard(url: string, shard: number, overrides: Record<string, unknown> = {}): Promise<Json> {
  for (let i = 0; i < 50; i++) {
    const pb = await createPlaybook(url, overrides);
    if (pb.id % SHARDS === shard) return pb;
    await del(url, `/api/v1/playbooks/${pb.id}`);
  }
  throw new Error(`could not get a playbook on shard ${shard}`);
}

/** Two playbooks on the same shard (ids congruent mod SHARDS). */
export async function playbooksOnSameShard(url: string): Promise<[Json, Json]> {
  const a = await createPlaybook(url);
  const b = await createPlaybookOnShard(url, a.id % SHARDS);
  return [a, b];
}

/** Two playbooks on different shards. */
export async function playbooksOnDifferentShards(url: string, overrides: Record<string, unknown> = {}): Promise<[Json, Json]> {
  const a = await createPlaybook(url, overrides);
  const b = await createPlaybookOnShard(url, (a.id + 1) % SHARDS, overrides);
  return [a, b];
}

export async function createFile(url: string, playbook: number, overrides: Record<string, unknown> = {}): Promise<Json> {
  return post(url, '/api/v1/files', { path: `/work/${uniq('file')}.yml`, content: '- hosts: all\n', playbook, ...overrides });
}

export async function createPlay(url: string, playbook: number, overrides: Record<string, unknown> = {}): Promise<Json> {
  return post(url, '/api/v1/plays', { uuid: randomUuid(), name: uniq('play'), playbook, ...overrides });
}

export async function createTask(url: string, refs: { playbook: number; play: number; file: number }, overrides: Record<string, unknown> = {}): Promise<Json> {
  return post(url, '/api/v1/tasks', { name: uniq('task'), action: 'debug', lineno: 3, handler: false, ...refs, ...overrides });
}

export async function createHost(url: string, playbook: number, overrides: Record<string, unknown> = {}): Promise<Json> {
  return post(url, '/api/v1/hosts', { name: uniq('host'), playbook, ...overrides });
}

export async function createResult(url: string, refs: { playbook: number; play: number; task: number; host: number }, overrides: Record<string, unknown> = {}): Promise<Json> {
  return post(url, '/api/v1/results', { status: 'ok', ...refs, ...overrides });
}

export async function createRecord(url: string, playbook: number, overrides: Record<string, unknown> = {}): Promise<Json> {
  return post(url, '/api/v1/records', { key: uniq('key'), value: 'v', type: 'text', playbook, ...overrides });
}

export async function createLabel(url: string, name = uniq('label')): Promise<Json> {
  return post(url, '/api/v1/labels', { name });
}

export interface Tree {
  playbook: number; file: number; play: number; task: number; host: number; result: number;
}

/** playbook + file + play + task + host + result; returns the ids. */
export async function createTree(url: string, opts: {
  playbook?: Record<string, unknown>; result?: Record<string, unknown>; host?: Record<string, unknown>;
} = {}): Promise<Tree> {
  const playbook = (await createPlaybook(url, opts.playbook)).id as number;
  const file = (await createFile(url, playbook)).id as number;
  const play = (await createPlay(url, playbook)).id as number;
  const task = (await createTask(url, { playbook, play, file })).id as number;
  const host = (await createHost(url, playbook, opts.host)).id as number;
  const result = (await createResult(url, { playbook, play, task, host }, opts.result)).id as number;
  return { playbook, file, play, task, host, result };
}

export function randomUuid(): string {
  return randomUUID();
}

/** Microseconds since the epoch of a `YYYY-MM-DDThh:mm:ss.ffffffZ` timestamp (exact, as a bigint). */
export function micros(ts: string): bigint {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})Z$/.exec(ts);
  if (!m) throw new Error(`not a logbook timestamp: ${ts}`);
  return BigInt(Date.parse(`${m[1]}Z`)) * 1000n + BigInt(m[2]!);
}

/** The `YYYY-MM-DDThh:mm:ss.ffffffZ` text of a microsecond instant. */
export function fromMicros(us: bigint): string {
  const ms = Number(us / 1000n);
  const iso = new Date(ms - (ms % 1000)).toISOString().slice(0, 19);
  return `${iso}.${(us % 1_000_000n).toString().padStart(6, '0')}Z`;
}

export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
export const DURATION = /^\d{2,}:[0-5]\d:[0-5]\d\.\d{6}$/;

/** Runs `fn` over `items` with at most `width` in flight. */
export async function pool<T, R>(items: readonly T[], width: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(workers);
  return out;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * One real server for the whole test file: started (with `env`, default SERVER_ENV)
 * before the first test, handed to `ready`, stopped after the last test.
 */
export function serveForFile(ready: (lb: Logbook) => void, env: Record<string, string> = SERVER_ENV): void {
  let lb: Logbook | undefined;
  test.before(async () => { lb = await startLogbook({ env }); ready(lb); });
  test.after.always(async () => { await lb?.stop(); });
}
