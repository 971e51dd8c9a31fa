// Scenario: batch ingest (POST /api/v1/ingest, SPEC §13) of ~1.6 KB results in
// batches of 100 and 1,000, durable, against a fresh logbook. Several streams
// (one playbook each) run at once, each with one batch in flight as the spec
// requires. Reports results/s, batches/s, p50/p99 per batch and the cores the
// server used; the report sets them beside per-request ingest and the raw
// per-request limit from the `ingest` scenario of the same run.
//
// With the default shard count at 1 (a 2-core machine: cores − 1), the two
// shapes a fleet sends (100 × 16, 1,000 × 4) run again on a fresh logbook
// with LOGBOOK_SHARDS=2, in the same run: a batch is decoded and applied by
// its shard, so batch ingest is bound by one shard thread, and a second shard
// puts the second core to work (the default keeps the front a core of its
// own, which per-request loads want). BATCH_SECOND_SHARD=0 skips it.
//
// The load generator is this Node process (node:http, keep-alive). A batch body is one
// pre-built buffer per stream with the seq written into it, so the client
// spends little CPU (it shares the machine's cores with the server); its own
// CPU is measured and reported too.
import { Agent, request } from 'node:http';
import { availableParallelism } from 'node:os';
import type { Context } from '../lib/context.js';
import { fmt } from '../lib/context.js';
import { loopedResultContent } from '../lib/payloads.js';
import { startLogbook } from '../lib/servers.js';

export interface BatchRow {
  /** LOGBOOK_SHARDS of the server (absent in older reports: the run's shard count) */
  shards?: number;
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

/**
 * One stream's batches: a first one that opens the playbook, then `seq`-numbered
 * results-only batches, as a string (`next`) or as bytes rewritten in place
 * (`nextBytes`: the seq goes into a space-padded slot of one buffer, so the
 * generator neither builds nor encodes a megabyte per batch; valid until the
 * stream's next call, so only for one batch in flight per stream).
 */
export function streamBodies(stream: string, batchSize: number): {
  first: string; next: (seq: number) => string; nextBytes: (seq: number) => Buffer; resultBytes: number;
} {
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
  const SLOT = 16; // digits of the seq, then spaces (JSON whitespace before the comma)
  const template = Buffer.from(head + ' '.repeat(SLOT) + ',"events":[' + events + ']}');
  const at = Buffer.byteLength(head);
  return {
    first,
    next: (seq) => head + seq + ',"events":[' + events + ']}',
    nextBytes: (seq) => { template.write(String(seq).padEnd(SLOT, ' '), at, SLOT, 'latin1'); return template; },
    resultBytes: Buffer.byteLength(result),
  };
}

/** node:http with a keep-alive agent: a fraction of fetch's CPU per request (the generator shares the cores). */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** Resolves with the answer's body once the batch is answered 200; rejects otherwise. */
function post(url: string, body: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/v1/ingest`, {
      method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => {
        if (res.statusCode === 200) resolve(Buffer.concat(parts).toString());
        else reject(new Error(`ingest → ${res.statusCode} ${Buffer.concat(parts).toString().slice(0, 200)}`));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Runs so far (this process): every run's streams are new playbooks, never the streams of an earlier run. */
let runs = 0;

async function run(url: string, batchSize: number, streams: number, seconds: number, tag: string, cpu: () => number): Promise<BatchRow> {
  // Stream keys unique to this run: a stream an earlier run (or warm-up) already took to seq N would
  // have its first N batches answered as duplicates, which apply nothing and cost the server little.
  const id = `${process.pid}-${++runs}`;
  const bodies = Array.from({ length: streams }, (_, s) => streamBodies(`bench-${tag}-${id}-${batchSize}-${s}`, batchSize));
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
      const body = b.nextBytes(seq);
      const start = performance.now();
      let answer: string;
      try { answer = await post(url, body); } catch { errors++; seq--; continue; }
      // a duplicate (or a batch whose events were refused) applied nothing: counting it would measure the checks, not ingest
      if (!answer.includes('"duplicate":false') || !answer.includes(`"applied":${batchSize},`)) {
        throw new Error(`batch ${seq} was not applied whole as new: ${answer.slice(0, 200)}`);
      }
      batches++;
      latencies.push(performance.now() - start);
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

type Shape = readonly [batchSize: number, streams: number];
const SHAPES: Shape[] = [[100, 4], [100, 16], [1000, 4]];
/** the shapes run again with a second shard */
const SECOND_SHARD_SHAPES: Shape[] = [[100, 16], [1000, 4]];

export async function batch(ctx: Context): Promise<BatchResult> {
  const rows = await rowsWith(ctx, ctx.shards, SHAPES);
  if (ctx.shards === 1 && availableParallelism() >= 2 && process.env.BATCH_SECOND_SHARD !== '0') rows.push(...await rowsWith(ctx, 2, SECOND_SHARD_SHAPES));
  return { rows };
}

async function rowsWith(ctx: Context, shards: number, shapes: Shape[]): Promise<BatchRow[]> {
  const seconds = ctx.quick ? 4 : 10;
  const rows: BatchRow[] = [];
  ctx.step(`batch: starting a fresh logbook (${shards} shard(s), durability flush)`);
  const lb = await startLogbook({ env: { LOGBOOK_SHARDS: String(shards) } });
  try {
    for (const [batchSize, streams] of shapes) {
      // warm-up: the first run of a shape pays for JIT and LMDB growth
      await run(lb.url, batchSize, streams, 1, 'warm', lb.cpuSeconds);
      await lb.drain();
      const row = { shards, ...await run(lb.url, batchSize, streams, seconds, 'run', lb.cpuSeconds) };
      rows.push(row);
      ctx.step(`batch: ${batchSize}/batch × ${streams} streams, ${shards} shard(s): ${fmt.int(row.resultsPerSecond)} results/s (${fmt.int(row.batchesPerSecond)} batches/s), `
        + `p50 ${fmt.ms(row.latencyMs.p50)} / p99 ${fmt.ms(row.latencyMs.p99)} ms per batch, server ${row.serverCpu.toFixed(2)} cores, client ${row.generatorCpu.toFixed(2)} cores, ${row.errors} errors`);
    }
  } finally { await lb.stop(); }
  return rows;
}
