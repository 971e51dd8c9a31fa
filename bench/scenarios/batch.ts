// Scenario: batch ingest (POST /api/v1/ingest, SPEC §13) of ~1.6 KB results in
// batches of 100 and 1,000, durable, against a fresh logbook. Several streams
// (one playbook each) run at once, each with one batch in flight as the spec
// requires. Reports results/s, batches/s, p50/p99 per batch and the cores the
// server used; the report sets them beside per-request ingest and the raw
// per-request limit from the `ingest` scenario of the same run.
//
// The load generator is this Node process (undici fetch). A batch body is one
// pre-built string with the seq spliced in, so the client spends little CPU;
// its own CPU is measured and reported too.
import type { Context } from '../lib/context.js';
import { fmt } from '../lib/context.js';
import { loopedResultContent } from '../lib/payloads.js';
import { startLogbook } from '../lib/servers.js';

export interface BatchRow {
  batchSize: number;
  streams: number;
  resultsPerSecond: number;
  batchesPerSecond: number;
  latencyMs: { p50: number; p99: number; max: number };
  /** cores the server used (CPU seconds per second) */
  serverCpu: number;
  /** cores this load generator used */
  generatorCpu: number;
  seconds: number;
  errors: number;
  resultBytes: number;
}

export interface BatchResult { rows: BatchRow[] }

export function quantile(sorted: number[], q: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** One stream's batches: a first one that opens the playbook, then `seq`-numbered results-only batches. */
export function streamBodies(stream: string, batchSize: number): { first: string; next: (seq: number) => string; resultBytes: number } {
  const content = JSON.stringify(loopedResultContent());
  const now = new Date().toISOString();
  const result = `{"kind":"result","task":"t","host":"web-HOST","status":"ok","changed":false,"started":"${now}","ended":"${now}","content":${content}}`;
  const results: string[] = [];
  for (let i = 0; i < batchSize; i++) results.push(result.replace('HOST', String(i % 20)));
  const events = results.join(',');
  const first = JSON.stringify({
    playbook: { uuid: stream, path: `/srv/${stream}.yml`, runner_version: '2.16.0', status: 'running' }, seq: 1,
    events: [
      { kind: 'file', path: '/srv/site.yml', content: '- hosts: all\n' },
      { kind: 'play', uuid: '5254000b-5d3f-1b2c-0000-000000000008', name: 'site', status: 'running' },
      { kind: 'task', uuid: 't', play: '5254000b-5d3f-1b2c-0000-000000000008', file: '/srv/site.yml', name: 'packages', action: 'apt', lineno: 4, handler: false },
    ],
  });
  const head = `{"playbook":{"uuid":"${stream}"},"seq":`;
  return { first, next: (seq) => head + seq + ',"events":[' + events + ']}', resultBytes: Buffer.byteLength(result) };
}

async function post(url: string, body: string): Promise<number> {
  const r = await fetch(`${url}/api/v1/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`ingest → ${r.status} ${text.slice(0, 200)}`);
  return r.status;
}

async function run(url: string, batchSize: number, streams: number, seconds: number, tag: string, cpu: () => number): Promise<BatchRow> {
  const bodies = Array.from({ length: streams }, (_, s) => streamBodies(`bench-${tag}-${batchSize}-${s}`, batchSize));
  await Promise.all(bodies.map((b) => post(url, b.first)));
  const latencies: number[] = [];
  let errors = 0;
  let batches = 0;
  const cpu0 = cpu();
  const gen0 = process.cpuUsage();
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(bodies.map(async (b) => {
    for (let seq = 2; performance.now() < deadline; seq++) {
      const body = b.next(seq);
      const start = performance.now();
      try { await post(url, body); batches++; latencies.push(performance.now() - start); } catch { errors++; seq--; }
    }
  }));
  const wall = (performance.now() - t0) / 1000;
  const gen = process.cpuUsage(gen0);
  latencies.sort((a, b) => a - b);
  return {
    batchSize, streams, resultsPerSecond: (batches * batchSize) / wall, batchesPerSecond: batches / wall,
    latencyMs: { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: latencies[latencies.length - 1] ?? NaN },
    serverCpu: (cpu() - cpu0) / wall, generatorCpu: (gen.user + gen.system) / 1e6 / wall, seconds: wall, errors,
    resultBytes: bodies[0]!.resultBytes,
  };
}

export async function batch(ctx: Context): Promise<BatchResult> {
  const seconds = ctx.quick ? 4 : 10;
  const rows: BatchRow[] = [];
  ctx.step(`batch: starting a fresh logbook (${ctx.shards} shard(s), durability flush)`);
  const lb = await startLogbook({ env: { LOGBOOK_SHARDS: String(ctx.shards) } });
  try {
    for (const [batchSize, streams] of [[100, 4], [100, 16], [1000, 4]] as const) {
      // warm-up: the first run of a shape pays for JIT and LMDB growth
      await run(lb.url, batchSize, streams, 1, 'warm', lb.cpuSeconds);
      await lb.drain();
      const row = await run(lb.url, batchSize, streams, seconds, 'run', lb.cpuSeconds);
      rows.push(row);
      ctx.step(`batch: ${batchSize}/batch × ${streams} streams: ${fmt.int(row.resultsPerSecond)} results/s (${fmt.int(row.batchesPerSecond)} batches/s), `
        + `p50 ${fmt.ms(row.latencyMs.p50)} / p99 ${fmt.ms(row.latencyMs.p99)} ms per batch, server ${row.serverCpu.toFixed(2)} cores, client ${row.generatorCpu.toFixed(2)} cores, ${row.errors} errors`);
    }
  } finally { await lb.stop(); }
  return { rows };
}
