// Scenario 1 (+ baselines): POST /api/v1/results with a ~1.6 KB looped-task
// result and a ~30 KB fact-gathering result at 1, 8, 32 and 128 connections,
// against a freshly started logbook (durable: replies after the group commit),
// the raw limit (bare uWS + JSON.parse + durable LMDB put) and ARA's own server
// (gunicorn, 2 workers, SQLite; shorter runs: it is ~100× slower).
import type { Context } from '../lib/context.js';
import { fmt } from '../lib/context.js';
import { createTree, factsResultContent, loopedResultContent, resultBody } from '../lib/payloads.js';
import { startAra, startLogbook, startRaw, type Running } from '../lib/servers.js';
import { runLoad, type Latency } from '../lib/wrk.js';

export type ServerName = 'logbook' | 'logbook-nosync' | 'raw' | 'ara';
export type PayloadName = 'looped' | 'facts';

export interface LoadRow {
  server: ServerName;
  connections: number;
  rps: number;
  requests: number;
  errors: number;
  latencyMs: Latency;
  /** cores the server used during the run (CPU seconds per second) */
  serverCpu: number;
  /** cores wrk used during the run */
  generatorCpu: number;
  seconds: number;
  /** server RSS at the end of the run */
  rssBytes: number;
}

export interface IngestRow extends LoadRow { payload: PayloadName; bodyBytes: number }

export interface IngestResult {
  connections: number[];
  seconds: Record<string, number>;
  bodyBytes: Record<PayloadName, number>;
  rows: IngestRow[];
}

export const LEVELS = [1, 8, 32, 128];

/** One measured wrk run against a server, with the server's CPU and RSS around it. */
export async function measure(server: Running, spec: Parameters<typeof runLoad>[0], warmupSeconds: number): Promise<LoadRow> {
  if (warmupSeconds > 0) { await runLoad({ ...spec, seconds: warmupSeconds }); await server.drain(); }
  const cpu0 = server.cpuSeconds();
  const t0 = performance.now();
  const r = await runLoad(spec);
  const wall = (performance.now() - t0) / 1000;
  // CPU is read before the drain: abandoned requests are not part of this run
  const serverCpu = (server.cpuSeconds() - cpu0) / wall;
  const rssBytes = server.rssBytes();
  await server.drain();
  return {
    server: server.name as ServerName, connections: spec.connections, rps: r.rps, requests: r.requests, errors: r.errors,
    latencyMs: r.latencyMs, serverCpu, generatorCpu: r.generatorCpu, seconds: r.seconds, rssBytes,
  };
}

export function describe(r: LoadRow): string {
  return `${fmt.int(r.rps)} req/s, p50 ${fmt.ms(r.latencyMs.p50)} / p90 ${fmt.ms(r.latencyMs.p90)} / p99 ${fmt.ms(r.latencyMs.p99)} / max ${fmt.ms(r.latencyMs.max)} ms, ` +
    `${r.errors} errors, server ${r.serverCpu.toFixed(2)} cores, wrk ${r.generatorCpu.toFixed(2)} cores`;
}

export async function ingest(ctx: Context): Promise<IngestResult> {
  const seconds = ctx.quick ? { logbook: 3, raw: 2, ara: 3, warmup: 1 } : { logbook: 8, raw: 4, ara: 5, warmup: 1 };
  const contents: Record<PayloadName, Record<string, unknown>> = { looped: loopedResultContent(), facts: factsResultContent() };
  const rows: IngestRow[] = [];
  const bodyBytes = {} as Record<PayloadName, number>;
  const label = (p: PayloadName) => (p === 'looped' ? '1.6 KB result' : '30 KB facts');

  const run = async (server: Running, name: ServerName, payload: PayloadName, path: string, body: string, levels: number[], secs: number) => {
    bodyBytes[payload] = Buffer.byteLength(body);
    // ARA gets no warm-up at load: what it queued would spill into the run (its
    // Python is warm from creating the tree); the others warm up at each level
    const warmup = name === 'ara' ? 0 : seconds.warmup;
    for (const connections of levels) {
      const row = { ...(await measure(server, { url: server.url + path, method: 'POST', body, connections, seconds: secs }, warmup)), server: name, payload, bodyBytes: Buffer.byteLength(body) };
      rows.push(row);
      ctx.step(`ingest: ${name} ${label(payload)} × ${connections} conn: ${describe(row)}`);
      if (row.errors > 0) ctx.note(`ingest: ${name} ${label(payload)} at ${connections} connections had ${row.errors} errors (timeouts or non-2xx)`);
    }
  };

  for (const payload of ['looped', 'facts'] as const) {
    ctx.step(`ingest: starting a fresh logbook (${ctx.shards} shard(s), durability flush) for the ${label(payload)}`);
    const lb = await startLogbook({ env: { LOGBOOK_SHARDS: String(ctx.shards) } });
    try {
      const tree = await createTree(lb.url);
      await run(lb, 'logbook', payload, '/api/v1/results', resultBody(tree, contents[payload]), LEVELS, seconds.logbook);
    } finally { await lb.stop(); }
  }
  // what durability costs: the same load with LMDB noSync
  {
    ctx.step('ingest: a fresh logbook with LOGBOOK_DURABILITY=none (what the fsync costs)');
    const lb = await startLogbook({ env: { LOGBOOK_SHARDS: String(ctx.shards), LOGBOOK_DURABILITY: 'none' } });
    try {
      const tree = await createTree(lb.url);
      await run(lb, 'logbook-nosync', 'looped', '/api/v1/results', resultBody(tree, contents.looped), [32], seconds.logbook);
    } finally { await lb.stop(); }
  }
  for (const payload of ['looped', 'facts'] as const) {
    ctx.step(`ingest: starting the raw limit server (uWS + JSON.parse + durable LMDB put) for the ${label(payload)}`);
    const raw = await startRaw();
    try {
      await run(raw, 'raw', payload, '/', resultBody({ playbook: 1, play: 1, task: 1, host: 1, file: 1 }, contents[payload]), LEVELS, seconds.raw);
    } finally { await raw.stop(); }
  }
  if (ctx.araSkipped) ctx.step(`ingest: ARA baseline skipped: ${ctx.araSkipped}`);
  else {
    for (const payload of ['looped', 'facts'] as const) {
      ctx.step(`ingest: starting ARA (gunicorn 2 workers, SQLite) for the ${label(payload)}; ${seconds.ara} s runs`);
      let ara: Running | null = null;
      try {
        ara = await startAra();
        const tree = await createTree(ara.url);
        await run(ara, 'ara', payload, '/api/v1/results', resultBody(tree, contents[payload]), LEVELS, seconds.ara);
      } catch (err) {
        ctx.note(`ingest: ARA ${label(payload)} failed: ${(err as Error).message}`);
        ctx.step(`ingest: ARA failed: ${(err as Error).message}`);
      } finally { await ara?.stop(); }
    }
  }
  return { connections: LEVELS, seconds: { logbook: seconds.logbook, raw: seconds.raw, ara: seconds.ara }, bodyBytes, rows };
}
