// Scenario 2 (+ baselines): reads at 32 connections on a store of 1 M results
// (quick: 100 k) across 1 000 playbooks: result detail, host detail (with
// ~30 KB of facts), playbook list (100 rows), results list filtered by
// playbook and status. ARA's own server answers the same requests on a 10 k
// result store (100 playbooks × 10 hosts × 10 tasks: at ~100 reads/s a bigger
// one would not change its numbers, only the time to build it); the raw
// ceiling is a bare uWS server answering one LMDB record per GET.
import { encodePageCursor } from '../../src/api/page_cursor.js';
import { parseTimestamp } from '../../src/api/time.js';
import { LIMITS } from '../../src/limits.js';
import { ORDER_KEYS, RESULT_STATUSES, RUN_STATUSES, TYPE_TO_PATH } from '../../src/api/resources.js';
import type { Context } from '../lib/context.js';
import { loopedResultContent } from '../lib/payloads.js';
import { startAra, startLogbook, startRaw, type Running } from '../lib/servers.js';
import { describe, measure, type LoadRow } from './ingest.js';

export type Endpoint = 'result' | 'host' | 'playbooks' | 'results';
export const ENDPOINTS: Record<Endpoint, string> = {
  result: 'GET /results/<id>',
  host: 'GET /hosts/<id>',
  playbooks: 'GET /playbooks?limit=100',
  results: 'GET /results?playbook=<id>&status=ok',
};

export interface ReadRow extends LoadRow { endpoint: Endpoint | 'raw'; responseBytes: number }

export interface ReadResult {
  connections: number;
  seconds: Record<string, number>;
  store: { results: number; playbooks: number; hosts: number };
  araStore: { results: number; playbooks: number; hosts: number; diskBytes: number; buildSeconds: number } | null;
  rows: ReadRow[];
  /** one client, one request at a time: a deep page by offset and by keyset cursor (absent in older runs) */
  deep?: DeepPages;
}

/**
 * Median ms of `GET /results?order=-started&limit=100` at depth 0, at `depth` by offset, at `depth` by cursor;
 * and of pages in id order (`idOrder`, absent in older runs), which are cut out of arrays kept in that order.
 */
export interface DeepPages {
  depth: number; samples: number; firstMs: number; offsetMs: number; cursorMs: number;
  idOrder?: Array<{ path: string; ms: number }>;
  /**
   * Every documented order of every list (both directions) and every `status`
   * filter (absent in older runs): median ms of the first page (limit=100), and
   * of the page after a cursor naming the row half-way down; `firstUseMs`: the
   * first request of the order, which builds the order its shards keep it in.
   */
  orders?: Array<{ path: string; count: number; firstUseMs: number; firstMs: number; cursorMs: number }>;
}

const CONNECTIONS = 32;

/** A deterministic spread of ids (an LCG), so runs read the same records. */
function spread(n: number, max: number, seed = 7): number[] {
  const out: number[] = [];
  let x = seed;
  for (let i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648; out.push(1 + (x % max)); }
  return out;
}

function pathsFor(endpoint: Endpoint, s: { results: number; playbooks: number; hosts: number }): string[] {
  switch (endpoint) {
    case 'result': return spread(1000, s.results).map((id) => `/api/v1/results/${id}`);
    case 'host': return spread(1000, s.hosts).map((id) => `/api/v1/hosts/${id}`);
    case 'playbooks': return Array.from({ length: Math.max(1, Math.floor(s.playbooks / 100)) }, (_, k) => `/api/v1/playbooks?limit=100&offset=${k * 100}&order=-id`);
    case 'results': return spread(1000, s.playbooks).map((id) => `/api/v1/results?playbook=${id}&status=ok&limit=100`);
  }
}

/** Fetch a few of the paths once: all must answer 200; returns the mean body size. */
async function check(server: Running, paths: string[]): Promise<number> {
  let bytes = 0;
  const sample = paths.slice(0, 5);
  for (const p of sample) {
    const r = await fetch(server.url + p, { headers: { accept: 'application/json' } });
    const body = await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`${server.name} GET ${p}: ${r.status} ${Buffer.from(body).toString().slice(0, 200)}`);
    bytes += body.byteLength;
  }
  return Math.round(bytes / sample.length);
}

async function endpoints(ctx: Context, server: Running, name: LoadRow['server'], s: { results: number; playbooks: number; hosts: number }, secs: number, rows: ReadRow[]): Promise<void> {
  for (const endpoint of Object.keys(ENDPOINTS) as Endpoint[]) {
    const paths = pathsFor(endpoint, s);
    const responseBytes = await check(server, paths);
    // no warm-up at load for ARA (see ingest); check() above warmed it
    const row: ReadRow = { ...(await measure(server, { url: server.url, paths, connections: CONNECTIONS, seconds: secs }, name === 'ara' ? 0 : 1)), server: name, endpoint, responseBytes };
    rows.push(row);
    ctx.step(`read: ${name} ${ENDPOINTS[endpoint]} (${responseBytes} B) × ${CONNECTIONS} conn: ${describe(row)}`);
    if (row.errors > 0) ctx.note(`read: ${name} ${ENDPOINTS[endpoint]} had ${row.errors} errors`);
  }
}

export async function read(ctx: Context): Promise<ReadResult> {
  // ARA's list pages take ~0.5 s of a worker each: at 32 connections a request
  // queues for seconds, so its runs must be long enough to see answers at all
  const seconds = ctx.quick ? { logbook: 3, raw: 2, ara: 5 } : { logbook: 8, raw: 4, ara: 8 };
  const rows: ReadRow[] = [];
  let deep: DeepPages | undefined;
  const built = await ctx.store();
  const store = { results: built.build.results, playbooks: built.build.playbooks, hosts: built.build.hosts };

  ctx.step(`read: starting logbook on the ${store.results.toLocaleString('en-US')}-result store`);
  const lb = await startLogbook({ dataDir: built.dir, env: { LOGBOOK_SHARDS: String(built.shards) } });
  try {
    ctx.step(`read: logbook ready after ${(lb.readyMs / 1000).toFixed(1)} s`);
    await endpoints(ctx, lb, 'logbook', store, seconds.logbook, rows);
    deep = await deepPages(lb, store.results);
    ctx.step(`read: logbook results?order=-started&limit=100, median of ${deep.samples}: first page ${deep.firstMs.toFixed(1)} ms, offset ${deep.depth.toLocaleString('en-US')} ${deep.offsetMs.toFixed(1)} ms, cursor at the same row ${deep.cursorMs.toFixed(1)} ms`);
    ctx.step(`read: logbook pages in id order, median of ${deep.samples}: ${deep.idOrder!.map((x) => `${x.path} ${x.ms.toFixed(1)} ms`).join(', ')}`);
    const orders = deep.orders!;
    const worst = (f: 'firstMs' | 'cursorMs') => orders.reduce((a, b) => (b[f] > a[f] ? b : a));
    ctx.step(`read: logbook every order and status filter (${orders.length} lists), median of ${deep.samples}: worst first page ${worst('firstMs').firstMs.toFixed(1)} ms (${worst('firstMs').path}), worst cursor page ${worst('cursorMs').cursorMs.toFixed(1)} ms (${worst('cursorMs').path}); slowest first use ${Math.max(...orders.map((o) => o.firstUseMs)).toFixed(0)} ms`);
    for (const o of orders) ctx.step(`read:   ${o.path} (${o.count}): first use ${o.firstUseMs.toFixed(0)} ms, first page ${o.firstMs.toFixed(1)} ms, cursor page ${o.cursorMs.toFixed(1)} ms`);
  } finally { await lb.stop(); }

  ctx.step('read: starting the raw read ceiling (uWS + one LMDB get + JSON.stringify per GET)');
  const fill = ctx.quick ? 2000 : 10_000;
  const raw = await startRaw({ count: fill, body: JSON.stringify(loopedResultContent()) });
  try {
    const paths = spread(1000, fill).map((n) => `/${n}`);
    const responseBytes = await check(raw, paths);
    const row: ReadRow = { ...(await measure(raw, { url: raw.url, paths, connections: CONNECTIONS, seconds: seconds.raw }, 1)), endpoint: 'raw', responseBytes };
    rows.push(row);
    ctx.step(`read: raw GET /<n> (${responseBytes} B) × ${CONNECTIONS} conn: ${describe(row)}`);
  } finally { await raw.stop(); }

  let araStore: ReadResult['araStore'] = null;
  if (ctx.araSkipped) ctx.step(`read: ARA baseline skipped: ${ctx.araSkipped}`);
  else {
    let ara: Running | null = null;
    try {
      const a = (await ctx.araStore())!;
      araStore = { results: a.results, playbooks: a.playbooks, hosts: a.hosts, diskBytes: a.diskBytes, buildSeconds: a.buildSeconds };
      ctx.step(`read: starting ARA (gunicorn 2 workers) on its ${a.results.toLocaleString('en-US')}-result store; ${seconds.ara} s runs`);
      ara = await startAra(a.dir);
      await endpoints(ctx, ara, 'ara', araStore, seconds.ara, rows);
    } catch (err) {
      ctx.note(`read: ARA baseline failed: ${(err as Error).message}`);
      ctx.step(`read: ARA failed: ${(err as Error).message}`);
    } finally { await ara?.stop(); }
  }
  return { connections: CONNECTIONS, seconds, store, araStore, rows, deep };
}

/**
 * A deep page costs every shard offset + limit rows by offset, `limit` rows by
 * keyset cursor (src/api/page_cursor.ts). Both pages start at the same row:
 * half the store deep, at most the offset cap.
 */
async function deepPages(server: Running, results: number): Promise<DeepPages> {
  const depth = Math.min(LIMITS.maxListOffset, Math.floor(results / 2));
  const path = '/api/v1/results?order=-started&limit=100';
  const boundary = (await (await fetch(`${server.url}${path.replace('limit=100', 'limit=1')}&offset=${depth - 1}`)).json()) as { results: Array<{ id: number; started: string }> };
  const row = boundary.results[0]!;
  const cursor = encodePageCursor({ back: false, keys: [parseTimestamp(row.started)!, row.id] });
  const samples = 5;
  const median = async (p: string): Promise<{ ms: number; first: number }> => {
    const times: number[] = [];
    let first = 0;
    for (let i = 0; i < samples; i++) {
      const t0 = performance.now();
      const r = await fetch(server.url + p);
      const body = (await r.json()) as { results: Array<{ id: number }> };
      times.push(performance.now() - t0);
      if (r.status !== 200) throw new Error(`GET ${p}: ${r.status}`);
      first = body.results[0]?.id ?? 0;
    }
    return { ms: times.sort((a, b) => a - b)[samples >> 1]!, first };
  };
  const firstPage = await median(path);
  const byOffset = await median(`${path}&offset=${depth}`);
  const byCursor = await median(`${path}&cursor=${cursor}`);
  if (byOffset.first !== byCursor.first) throw new Error(`deep pages differ: offset ${depth} starts at result ${byOffset.first}, the cursor's at ${byCursor.first}`);
  // pages in id order: the UI's playbook list, the newest results, a deep page over every shard
  // (keyed, then rendered: two passes), and the results of one task and of one playbook
  const task = ((await (await fetch(`${server.url}/api/v1/tasks?limit=1`)).json()) as { results: Array<{ id: number; playbook: number }> }).results[0]!;
  const idOrder: Array<{ path: string; ms: number }> = [];
  const pages: Array<[label: string, path: string]> = [
    ['/playbooks?order=-id&limit=100', '/api/v1/playbooks?order=-id&limit=100'],
    ['/results?order=-id&limit=100', '/api/v1/results?order=-id&limit=100'],
    [`/results?limit=100&offset=${depth}`, `/api/v1/results?limit=100&offset=${depth}`],
    ['/results?task=<id>&limit=100', `/api/v1/results?task=${task.id}&limit=100`],
    ['/results?playbook=<id>&order=-id&limit=100', `/api/v1/results?playbook=${task.playbook}&order=-id&limit=100`],
  ];
  for (const [label, p] of pages) idOrder.push({ path: label, ms: (await median(p)).ms });
  const orders = await everyOrder(server, async (p) => (await median(p)).ms);
  return { depth, samples, firstMs: firstPage.ms, offsetMs: byOffset.ms, cursorMs: byCursor.ms, idOrder, orders };
}

/**
 * Every documented order of every list, both ways, and every `status` filter
 * (alone, and in the orders ARA's CLI and exporter ask for): the first page,
 * and the page after a cursor naming the row half-way down (made as the
 * server makes its own: the row's sort key and id).
 */
async function everyOrder(server: Running, median: (p: string) => Promise<number>): Promise<NonNullable<DeepPages['orders']>> {
  const lists: Array<{ path: string; key: string | null }> = [];
  for (const [type, keys] of Object.entries(ORDER_KEYS)) {
    if (type === 'label') continue; // the front's catalogue, not the shards'
    for (const key of keys) for (const desc of [true, false]) lists.push({ path: `/api/v1/${TYPE_TO_PATH[type as 'playbook']}?order=${desc ? '-' : ''}${key}&limit=100`, key });
  }
  for (const s of RESULT_STATUSES) {
    lists.push({ path: `/api/v1/results?status=${s}&limit=100`, key: null });
    lists.push({ path: `/api/v1/results?status=${s}&order=-started&limit=100`, key: 'started' });
  }
  for (const type of ['playbooks', 'plays', 'tasks']) for (const s of RUN_STATUSES) lists.push({ path: `/api/v1/${type}?status=${s}&order=started&limit=100`, key: 'started' });
  const out: NonNullable<DeepPages['orders']> = [];
  for (const { path, key } of lists) {
    const t0 = performance.now();
    const head = (await (await fetch(server.url + path.replace('limit=100', 'limit=1'))).json()) as { count: number };
    const firstUseMs = performance.now() - t0;
    const firstMs = await median(path);
    let cursorMs = 0;
    if (head.count > 1) {
      const mid = (await (await fetch(`${server.url}${path.replace('limit=100', 'limit=1')}&offset=${Math.min(LIMITS.maxListOffset, head.count >> 1)}`)).json()) as { results: Array<Record<string, unknown> & { id: number }> };
      const row = mid.results[0]!;
      // `order=id` is the natural order (list_query drops it): its cursor names the id alone
      const keys = key === null || path.includes('?order=id&') ? [row.id] : [sortKeyOf(row, key), row.id];
      cursorMs = await median(`${path}&cursor=${encodePageCursor({ back: false, keys })}`);
    }
    out.push({ path: path.replace('/api/v1', '').replace('&limit=100', ''), count: head.count, firstUseMs, firstMs, cursorMs });
  }
  return out;
}

/** A row's sort key as a cursor carries it: timestamps in µs, a duration from them, others as shown. */
function sortKeyOf(row: Record<string, unknown>, key: string): number | string | null {
  const us = (v: unknown): number | null => (typeof v === 'string' ? parseTimestamp(v) ?? null : null);
  if (key === 'duration') { const s = us(row.started), e = us(row.ended); return s === null || e === null ? null : e - s; }
  if (['created', 'updated', 'started', 'ended'].includes(key)) return us(row[key]);
  if (key === 'id') return row.id as number;
  return (row[key] ?? null) as number | string | null;
}
