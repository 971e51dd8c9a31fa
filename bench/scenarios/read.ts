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
  return { depth, samples, firstMs: firstPage.ms, offsetMs: byOffset.ms, cursorMs: byCursor.ms, idOrder };
}
