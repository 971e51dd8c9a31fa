// Live-stream benchmark (SPEC §14): many SSE subscribers on one running
// playbook while results are ingested (POST /api/v1/ingest, SPEC §13).
//   node dist/bench/stream.js [--subs 1000] [--rate 5000] [--seconds 10] [--batch 100] [--all] [--ws] [--prof DIR]
// Measures
//   1. delivery latency: from the ingest batch's acknowledgement (its 200) to
//      each subscriber's receipt of the batch's last change (the playbook row
//      update that closes every batch), p50/p99/max over subscribers × batches,
//      with batches paced at --rate results/s;
//   2. ingest throughput at full speed (one stream, batches back to back) without
//      subscribers and with --subs subscribers on that playbook.
// Subscribers are raw sockets in a worker thread of this process
// (bench/lib/stream_clients.ts) that count bytes and scan for the playbook rows
// without parsing: the client side must stay cheap beside the server it
// measures, and must not delay the load generator's event loop. `bench CPU`
// is this whole process (load generator and subscribers).
import { Worker } from 'node:worker_threads';
import { benchArg as arg, openIngestStream, postIngest as post, type IngestStream as Stream } from './lib/ingest_stream.js';
import { startLogbook, type Running } from './lib/servers.js';
import type { ClientsConfig, ClientsReport, ClientsRequest } from './lib/stream_clients.js';

const SUBS = arg('subs', 1000);
const RATE = arg('rate', 5000);
const SECONDS = arg('seconds', 10);
const BATCH = arg('batch', 100);
const HOSTS = 20;
/** --all: subscribers take every change of the playbook (as the web UI does), not only its playbook rows */
const ALL = process.argv.includes('--all');
/** --ws: subscribers use WebSocket instead of Server-Sent Events */
const WS = process.argv.includes('--ws');
/** epoch milliseconds, comparable with the subscribers' worker thread */
const now = (): number => performance.timeOrigin + performance.now();

const openStream = (url: string): Promise<Stream> => openIngestStream(url, HOSTS);

/** One batch of results; resolves with the acknowledgement time and the playbook's result count after it. */
async function batch(url: string, s: Stream): Promise<{ at: number; results: number }> {
  s.seq++;
  const events = Array.from({ length: BATCH }, (_, i) => ({
    kind: 'result', task: s.task, host: `web-${i % HOSTS}`, status: 'ok', changed: i % 7 === 0,
    content: { msg: 'pong', i }, started: '2026-01-01T00:00:00Z', ended: '2026-01-01T00:00:01Z',
  }));
  await post(url, { playbook: { id: s.id }, seq: s.seq, events });
  s.results += BATCH;
  return { at: now(), results: s.results };
}

/** The subscribers, in a worker thread (bench/lib/stream_clients.ts). */
class Clients {
  private readonly worker: Worker;
  private readonly reports: ClientsReport[] = [];
  private waiting: (() => void) | null = null;
  constructor(server: Running, playbook: number, n: number) {
    const cfg: ClientsConfig = { port: Number(new URL(server.url).port), playbook, subs: n, all: ALL, ws: WS };
    this.worker = new Worker(new URL('./lib/stream_clients.js', import.meta.url), { workerData: cfg });
    this.worker.on('message', (r: ClientsReport) => { this.reports.push(r); this.waiting?.(); });
    this.worker.on('error', (err) => { console.error(err); process.exitCode = 1; });
  }
  private async next(k: ClientsReport['k'], timeoutMs: number): Promise<ClientsReport> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.reports.findIndex((r) => r.k === k);
      if (i >= 0) return this.reports.splice(i, 1)[0]!;
      if (Date.now() > deadline) throw new Error(`subscribers: no ${k} in time`);
      await new Promise<void>((r) => { this.waiting = r; setTimeout(r, 200); });
    }
  }
  ready(): Promise<ClientsReport> { return this.next('ready', 60_000); }
  async collect(acks: Map<number, number>): Promise<Extract<ClientsReport, { k: 'collected' }>> {
    this.worker.postMessage({ k: 'collect', acks: [...acks] } satisfies ClientsRequest);
    return await this.next('collected', 60_000) as Extract<ClientsReport, { k: 'collected' }>;
  }
  async close(): Promise<void> {
    this.worker.postMessage({ k: 'close' } satisfies ClientsRequest);
    await this.worker.terminate();
  }
}

/** Batches back to back for `seconds`: results per second. */
async function fullSpeed(server: Running, s: Stream, seconds: number): Promise<number> {
  const t0 = performance.now();
  const cpu0 = server.cpuSeconds();
  const own0 = process.cpuUsage();
  let n = 0;
  while (performance.now() - t0 < seconds * 1000) { await batch(server.url, s); n += BATCH; }
  const rate = n / ((performance.now() - t0) / 1000);
  const own = process.cpuUsage(own0);
  console.log(`  (server CPU ${(((server.cpuSeconds() - cpu0) / n) * 1e6).toFixed(0)} µs per result, bench CPU ${((own.user + own.system) / n).toFixed(0)} µs per result)`);
  return rate;
}

const pct = (sorted: number[], p: number) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]! : NaN;

async function main(): Promise<void> {
  // --url: measure a server started elsewhere (e.g. under --cpu-prof); CPU and RSS then read as 0
  const url = process.argv.includes('--url') ? process.argv[process.argv.indexOf('--url') + 1]! : null;
  // --prof <dir>: the server writes V8 CPU profiles (main thread and shards) there when it stops
  const prof = process.argv.includes('--prof') ? process.argv[process.argv.indexOf('--prof') + 1]! : null;
  const env: Record<string, string> = { LOGBOOK_LOG_LEVEL: 'warn' };
  const nodeArgs = prof === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${prof}`];
  const server: Running = url === null ? await startLogbook({ env, nodeArgs }) : {
    name: 'external', url, pid: 0, dataDir: '', readyMs: 0, output: () => '', drain: async () => 0,
    cpuSeconds: () => 0, rssBytes: () => 0, stop: async () => {},
  };
  try {
    // ---- throughput without subscribers
    const warm = await openStream(server.url);
    await fullSpeed(server, warm, 2);
    const alone = await openStream(server.url);
    const without = await fullSpeed(server, alone, SECONDS);
    console.log(`ingest, no subscribers: ${Math.round(without)} results/s`);

    // ---- latency at a paced rate, SUBS subscribers on the playbook
    const paced = await openStream(server.url);
    const clients = new Clients(server, paced.id, SUBS);
    await clients.ready();
    console.log(`${SUBS} ${WS ? 'WebSocket' : 'SSE'} subscribers connected (${ALL ? 'every change of the playbook' : 'its playbook rows'})`);
    const acks = new Map<number, number>();
    const interval = (BATCH / RATE) * 1000;
    const t0 = performance.now();
    const cpu0 = server.cpuSeconds();
    const own0 = process.cpuUsage();
    let next = t0;
    let sent = 0;
    while (performance.now() - t0 < SECONDS * 1000) {
      const b = await batch(server.url, paced);
      acks.set(b.results, b.at);
      sent += BATCH;
      next += interval;
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const elapsed = (performance.now() - t0) / 1000;
    const achieved = sent / elapsed;
    const own = process.cpuUsage(own0);
    const pacedCpu = `server ${((server.cpuSeconds() - cpu0) / elapsed).toFixed(2)} cores, bench (load + subscribers) ${((own.user + own.system) / 1e6 / elapsed).toFixed(2)} cores`;
    await new Promise((r) => setTimeout(r, 2000));
    const got = await clients.collect(acks);
    const lat = Array.from(got.latencies).sort((a, b) => a - b);
    const first = Array.from(got.first).sort((a, b) => a - b);
    console.log(`paced ingest: ${Math.round(achieved)} results/s (target ${RATE}), ${acks.size} batches × ${SUBS} subscribers; ${pacedCpu}`);
    console.log(`delivery after acknowledgement (ms; negative = before the client read its 200): p50 ${pct(lat, 50).toFixed(1)} p99 ${pct(lat, 99).toFixed(1)} max ${lat[lat.length - 1]?.toFixed(1)}; missing ${got.missing}, cut off ${got.ended}`);
    console.log(`  first subscriber of each batch: p50 ${pct(first, 50).toFixed(1)} p99 ${pct(first, 99).toFixed(1)} ms (the rest is the spread of one fan-out round, server writes and client reads)`);

    // ---- throughput with the subscribers watching
    const withSubs = await fullSpeed(server, paced, SECONDS);
    await new Promise((r) => setTimeout(r, 2000));
    const after = await clients.collect(new Map());
    console.log(`ingest, ${SUBS} subscribers: ${Math.round(withSubs)} results/s (${((withSubs / without - 1) * 100).toFixed(1)} % vs none); cut off ${after.ended}; ${(after.bytes / 2 ** 20).toFixed(0)} MiB received`);
    console.log(`server rss ${(server.rssBytes() / 2 ** 20).toFixed(0)} MiB, cpu ${server.cpuSeconds().toFixed(1)} s`);
    await clients.close();
  } finally {
    await server.stop();
  }
}

main().catch((err) => { console.error(err); process.exitCode = 1; });
