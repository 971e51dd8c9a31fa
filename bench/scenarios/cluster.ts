// Scenario `cluster` (issue #12): a 3-node cluster on this machine — three Debian
// nats-server processes as a JetStream cluster (R3) and three logbook nodes
// (LOGBOOK_CLUSTER, P partitions) — with every request spread over all nodes:
//  - per-request ingest (POST /api/v1/results, 1.6 KB bodies, wrk per node) and
//    batch ingest (POST /api/v1/ingest, 100 results per batch, Node client);
//  - reads (result detail, results of a playbook, playbook list) through every node;
//  - the CPU each process spends per 1,000 results (utime+stime from /proc, and the
//    logbook front's main thread apart: it is one thread per node, a per-node bound);
//  - failover: kill -9 of one node under a steady batch-ingest load; time until every
//    partition is owned again (/healthz of the survivors) and until a new write to
//    each of the dead node's partitions is acknowledged (a probe sent at the kill),
//    how long writers stalled and why (attempts over 5 s are listed); then every
//    acknowledged result is counted back (lost and duplicated must be 0);
//  - JetStream bytes per stored result;
//  - a capacity model from those per-result costs (clearly a model: every process
//    shares this machine's cores, so the throughput measured here is not a cluster's).
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { spawnSync } from 'node:child_process';
import { streamName } from '../../src/cluster/partition_log.js';
import { natsServerBinary, startNatsCluster, type NatsCluster } from '../../test/helpers/nats.js';
import type { Context } from '../lib/context.js';
import { fmt } from '../lib/context.js';
import { createTree, loopedResultContent, resultBody, type Tree } from '../lib/payloads.js';
import { cpuSecondsOf, startLogbook, type Running } from '../lib/servers.js';
import { runLoad, type LoadResult } from '../lib/wrk.js';
import { quantile, streamBodies } from './batch.js';

export const PARTITIONS = 6;
export const REPLICAS = 3;
const NODES = 3;
const BATCH = 100;

export interface ProcessCpu {
  name: string;
  kind: 'logbook' | 'nats';
  /** CPU seconds (utime + stime, all threads) in the window */
  cpuSeconds: number;
  /** logbook: CPU seconds of the main thread (the uWS front) in the window */
  mainThreadSeconds?: number;
}

const MODE: Record<IngestWindow['mode'], string> = {
  'per-request': 'per request (`POST /results`) to any node',
  'per-request-owner': 'per request, each node only its own partitions\' (no forwarding)',
  batch: `batch (\`POST /ingest\`, ${BATCH}/batch) to any node`,
};

export interface IngestWindow {
  mode: 'per-request' | 'per-request-owner' | 'batch';
  /** per-request: connections per node; batch: streams in all */
  concurrency: string;
  results: number;
  seconds: number;
  resultsPerSecond: number;
  /** per-request: the worst node's wrk percentiles; batch: per batch, all streams */
  latencyMs: { p50: number; p99: number; max: number };
  errors: number;
  processes: ProcessCpu[];
  /** CPU milliseconds per 1,000 stored results, summed over the three logbook nodes / nats-servers */
  logbookMsPer1000: number;
  natsMsPer1000: number;
  /** logbook main threads (fronts), summed over nodes */
  frontMsPer1000: number;
  /** cores the load generator used (wrk or this Node process) */
  generatorCores: number;
  bodyBytes: number;
}

export interface ClusterReadRow {
  endpoint: 'result' | 'results' | 'playbooks';
  label: string;
  connectionsPerNode: number;
  rps: number;
  latencyMs: { p50: number; p99: number; max: number };
  errors: number;
  logbookCores: number;
  natsCores: number;
}

export interface FailoverResult {
  victim: string;
  victimPartitions: number[];
  writers: number;
  resultsPerBatch: number;
  /** acknowledged results/s in the seconds before the kill */
  rateBefore: number;
  /** kill -9 → every partition owned by a live node, as every survivor's /healthz says */
  ownedAgainMs: number | null;
  /** kill -9 → a new batch for each of the victim's partitions, sent then and retried every 50 ms, acknowledged */
  probeMs?: Record<string, number | null>;
  /** the slowest of probeMs: when writes to all its partitions succeeded again */
  probeMaxMs?: number | null;
  /** kill -9 → the first acknowledged batch of the steady writers that was sent after the kill, per partition */
  writesOkMs: Record<string, number | null>;
  /** the slowest of writesOkMs (a writer stuck on a request the dead node had received sends nothing new meanwhile) */
  writesOkMaxMs: number | null;
  /** longest gap between acknowledgements of writers on the other partitions, from the kill on */
  otherPartitionsMaxGapMs: number;
  /** refused (503) or failed (connection) attempts while it was going on, retried elsewhere */
  retries: number;
  /** of those: connection refused or reset (the dead node itself) */
  connectionErrors: number;
  /** of those: 503s whose body says why (first words of each distinct reason, with counts) */
  unavailable: Record<string, number>;
  /** the longest single HTTP attempt (a forwarded request its dead owner had received waits for the RPC timeout) */
  longestAttemptMs: number;
  /** attempts that took over 5 s (ms from the kill when they started; negative: before) */
  slowAttempts?: { startedMs: number; ms: number; node: string; partition: number; outcome: string }[];
  /** the longest a writer of the victim's partitions waited, from the kill to its next acknowledgement */
  writerStallMaxMs: number | null;
  acknowledgedBatches: number;
  acknowledgedResults: number;
  /** acknowledged results missing afterwards (must be 0) */
  lost: number;
  /** results stored more than once (must be 0) */
  duplicated: number;
  /** writers whose next expected seq was not acknowledged+1 */
  seqMismatches: number;
}

export interface CapacityRow {
  perHour: number; resultsPerSecond: number; cores: number; logbookCores: number; natsCores: number; nodes: number; boundBy: string;
  /** the same rate sent per request (POST /results, as the stock ARA callback does) */
  perRequestNodes?: number; perRequestBoundBy?: string;
}

export interface CapacityModel {
  basis: IngestWindow['mode'];
  coresPerNode: number;
  utilization: number;
  logbookResultsPerCore: number;
  natsResultsPerCore: number;
  /** per node (one logbook + one nats-server on coresPerNode cores, at the utilization; at most what its front takes) */
  resultsPerNode: number;
  /** what one node's front (a single thread) can take at the utilization */
  frontResultsPerNode: number;
  streamBytesPerResult: number | null;
  rows: CapacityRow[];
  perRequest: { logbookResultsPerCore: number; natsResultsPerCore: number; resultsPerNode: number; frontResultsPerNode: number } | null;
}

export interface ClusterResult {
  nodes: number;
  natsServers: number;
  partitions: number;
  replicas: number;
  natsVersion: string;
  cores: number;
  ingest: IngestWindow[];
  reads: ClusterReadRow[];
  failover: FailoverResult | null;
  /** JetStream bytes (one replica) per stored result, over all partition streams */
  streamBytesPerResult: number | null;
  storedResults: number;
  model: CapacityModel | null;
}

// ---------- processes and their CPU ----------

interface Proc { name: string; kind: 'logbook' | 'nats'; pid: number }

function mainThreadSecondsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch { return 0; }
}

type CpuSample = Map<string, { cpu: number; main: number }>;
function sample(procs: Proc[]): CpuSample {
  return new Map(procs.map((p) => [p.name, { cpu: cpuSecondsOf(p.pid), main: p.kind === 'logbook' ? mainThreadSecondsOf(p.pid) : 0 }]));
}
function delta(procs: Proc[], a: CpuSample, b: CpuSample): ProcessCpu[] {
  return procs.map((p) => {
    const x = a.get(p.name)!, y = b.get(p.name)!;
    return { name: p.name, kind: p.kind, cpuSeconds: y.cpu - x.cpu, ...(p.kind === 'logbook' ? { mainThreadSeconds: y.main - x.main } : {}) };
  });
}
const sumCpu = (ps: ProcessCpu[], kind: 'logbook' | 'nats') => ps.filter((p) => p.kind === kind).reduce((s, p) => s + p.cpuSeconds, 0);
const sumMain = (ps: ProcessCpu[]) => ps.reduce((s, p) => s + (p.mainThreadSeconds ?? 0), 0);

// ---------- the cluster ----------

interface Cluster {
  nats: NatsCluster;
  nodes: Map<string, Running>;
  procs: () => Proc[];
  live: () => Running[];
  /** nodes killed on purpose (no longer measured or asked) */
  killed: Set<string>;
  stop(): Promise<void>;
}

async function health(url: string): Promise<any | null> {
  try {
    const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5000) });
    return r.status === 200 ? await r.json() : null;
  } catch { return null; }
}

/** Every partition owned by exactly the live nodes, as each of them sees it. */
async function settled(nodes: Running[]): Promise<boolean> {
  const views = await Promise.all(nodes.map((n) => health(n.url)));
  if (views.some((v) => !v?.cluster || v.cluster.unowned.length > 0 || v.cluster.nodes.length !== nodes.length)) return false;
  return views.reduce((s, v) => s + Object.keys(v.cluster.owned).length, 0) === PARTITIONS;
}

async function waitSettled(nodes: Running[], timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await settled(nodes))) {
    if (Date.now() > deadline) throw new Error('the cluster did not settle (every partition owned) in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function startCluster(ctx: Context): Promise<Cluster> {
  const nats = await startNatsCluster({ size: NODES });
  const nodes = new Map<string, Running>();
  const killed = new Set<string>();
  const cluster: Cluster = {
    nats, nodes, killed,
    procs: () => [
      ...nats.servers.filter((s) => s.child).map((s) => ({ name: `nats ${s.name}`, kind: 'nats' as const, pid: s.child!.pid! })),
      ...[...nodes].filter(([name]) => !killed.has(name)).map(([name, n]) => ({ name, kind: 'logbook' as const, pid: n.pid })),
    ],
    live: () => [...nodes].filter(([name]) => !killed.has(name)).map(([, n]) => n),
    async stop() {
      await Promise.all([...nodes.values()].map((n) => n.stop().catch(() => {})));
      await nats.stop();
    },
  };
  try {
    const started = await Promise.allSettled(Array.from({ length: NODES }, (_, i) => startLogbook({
      env: { LOGBOOK_CLUSTER: nats.urls.join(','), LOGBOOK_NODE: `node${i + 1}`, LOGBOOK_PARTITIONS: String(PARTITIONS), LOGBOOK_REPLICAS: String(REPLICAS), LOGBOOK_SHUTDOWN_TIMEOUT: '2', LOGBOOK_LOG_LEVEL: 'warn' },
    })));
    // every node that did start is stopped again below if another did not
    started.forEach((n, i) => { if (n.status === 'fulfilled') nodes.set(`node${i + 1}`, n.value); });
    const failed = started.find((n): n is PromiseRejectedResult => n.status === 'rejected');
    if (failed) throw failed.reason;
    await waitSettled(cluster.live());
    ctx.step(`cluster: ${NODES} nats-servers (JetStream R${REPLICAS}) + ${NODES} logbook nodes, ${PARTITIONS} partitions, settled`);
    return cluster;
  } catch (err) { await cluster.stop(); throw err; }
}

// ---------- per-request ingest: one wrk per node, each cycling over playbooks of every partition ----------

async function trees(nodes: Running[]): Promise<Tree[]> {
  const out: Tree[] = [];
  const covered = new Set<number>();
  // a plain POST /playbooks lands on any partition: create until each has one and there are 2P (bounded)
  for (let i = 0; (out.length < 2 * PARTITIONS || covered.size < PARTITIONS) && i < 8 * PARTITIONS; i++) {
    // a partition can still change hands just after the cluster settled (a 503 then): try again
    let tree: Tree | null = null;
    for (let attempt = 0; !tree; attempt++) {
      try { tree = await createTree(nodes[(i + attempt) % nodes.length]!.url, i); } catch (err) {
        if (attempt >= 10) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    out.push(tree);
    covered.add(tree.playbook % PARTITIONS);
  }
  return out;
}

function combine(rs: LoadResult[]): { requests: number; errors: number; rps: number; p50: number; p99: number; max: number; generatorCpu: number; seconds: number } {
  return {
    requests: rs.reduce((s, r) => s + r.requests, 0), errors: rs.reduce((s, r) => s + r.errors, 0), rps: rs.reduce((s, r) => s + r.rps, 0),
    p50: Math.max(...rs.map((r) => r.latencyMs.p50)), p99: Math.max(...rs.map((r) => r.latencyMs.p99)), max: Math.max(...rs.map((r) => r.latencyMs.max)),
    generatorCpu: rs.reduce((s, r) => s + r.generatorCpu, 0), seconds: Math.max(...rs.map((r) => r.seconds)),
  };
}

function window(mode: IngestWindow['mode'], concurrency: string, results: number, seconds: number, latencyMs: IngestWindow['latencyMs'], errors: number, processes: ProcessCpu[], generatorCores: number, bodyBytes: number): IngestWindow {
  const per1000 = (s: number) => (results > 0 ? (s * 1e6) / results : NaN);
  return {
    mode, concurrency, results, seconds, resultsPerSecond: results / seconds, latencyMs, errors, processes,
    logbookMsPer1000: per1000(sumCpu(processes, 'logbook')), natsMsPer1000: per1000(sumCpu(processes, 'nats')), frontMsPer1000: per1000(sumMain(processes)),
    generatorCores, bodyBytes,
  };
}

async function perRequestIngest(ctx: Context, c: Cluster, seconds: number, connections: number): Promise<IngestWindow[]> {
  const nodes = c.live();
  const ts = await trees(nodes);
  const content = loopedResultContent();
  const bodyOf = (t: Tree) => resultBody(t, content);
  const partitions = new Set(ts.map((t) => t.playbook % PARTITIONS));
  ctx.step(`cluster: per-request ingest over ${ts.length} playbooks in ${partitions.size}/${PARTITIONS} partitions, ${connections} connections per node`);
  const owned = await Promise.all(nodes.map(async (n) => Object.keys((await health(n.url))?.cluster?.owned ?? {}).map(Number)));
  const windows: IngestWindow[] = [];
  // any node: every node gets requests for every playbook (⅔ are forwarded to the owner over NATS), as
  // behind a load balancer; owner only: each node gets its own partitions' playbooks (what forwarding costs)
  for (const mode of ['per-request', 'per-request-owner'] as const) {
    const bodies = nodes.map((_, i) => ts.filter((t) => mode === 'per-request' || owned[i]!.includes(t.playbook % PARTITIONS)).map(bodyOf));
    const targets = nodes.map((n, i) => ({ n, bodies: bodies[i]! })).filter((x) => x.bodies.length > 0);
    const load = (secs: number) => Promise.all(targets.map((x) => runLoad({ url: `${x.n.url}/api/v1/results`, method: 'POST', bodies: x.bodies, connections, seconds: secs })));
    await load(1); // warm-up: JIT, first commits
    for (const n of nodes) await n.drain();
    const procs = c.procs();
    const a = sample(procs);
    const t0 = performance.now();
    const r = combine(await load(seconds));
    const wall = (performance.now() - t0) / 1000;
    const b = sample(procs);
    const results = r.requests - r.errors;
    const w = window(mode, `${connections} conn × ${targets.length} nodes`, results, wall, { p50: r.p50, p99: r.p99, max: r.max }, r.errors, delta(procs, a, b), r.generatorCpu, Buffer.byteLength(bodyOf(ts[0]!)));
    ctx.step(`cluster: ${MODE[mode]}: ${fmt.int(w.resultsPerSecond)} results/s, p50 ${fmt.ms(w.latencyMs.p50)} / p99 ${fmt.ms(w.latencyMs.p99)} ms (worst node), ${w.errors} errors; `
      + `CPU per 1,000 results: logbook ${fmt.int(w.logbookMsPer1000)} ms (fronts ${fmt.int(w.frontMsPer1000)}), nats ${fmt.int(w.natsMsPer1000)} ms; wrk ${w.generatorCores.toFixed(2)} cores`);
    if (r.errors) ctx.note(`cluster: ${MODE[mode]} had ${r.errors} errors (timeouts or non-2xx)`);
    windows.push(w);
  }
  return windows;
}

// ---------- batch ingest: streams spread over the nodes ----------

async function postIngest(url: string, body: string, timeoutMs = 60_000): Promise<any> {
  const r = await fetch(`${url}/api/v1/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(timeoutMs) });
  const text = await r.text();
  if (r.status !== 200) throw Object.assign(new Error(`ingest → ${r.status} ${text.slice(0, 200)}`), { status: r.status });
  return JSON.parse(text);
}

async function batchIngest(ctx: Context, c: Cluster, seconds: number, streams: number): Promise<IngestWindow> {
  const nodes = c.live();
  const run = async (tag: string, secs: number, measure: boolean) => {
    const bodies = Array.from({ length: streams }, (_, s) => streamBodies(`cluster-${tag}-${s}-${Date.now()}`, BATCH));
    await Promise.all(bodies.map(async (b, s) => {
      for (let attempt = 0; ; attempt++) {
        try { return await postIngest(nodes[(s + attempt) % nodes.length]!.url, b.first); } catch (err) {
          if (attempt >= 10 || (err as { status?: number }).status !== 503) throw err; // 503: a partition changing hands
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    }));
    for (const n of nodes) await n.drain();
    const procs = c.procs();
    const a = sample(procs);
    const gen0 = process.cpuUsage();
    const latencies: number[] = [];
    let batches = 0, errors = 0;
    const t0 = performance.now();
    const deadline = t0 + secs * 1000;
    await Promise.all(bodies.map(async (b, s) => {
      for (let seq = 2; performance.now() < deadline; seq++) {
        const start = performance.now();
        try { await postIngest(nodes[(s + seq) % nodes.length]!.url, b.next(seq)); batches++; latencies.push(performance.now() - start); } catch { errors++; seq--; }
      }
    }));
    const wall = (performance.now() - t0) / 1000;
    const gen = process.cpuUsage(gen0);
    const b = sample(procs);
    if (!measure) return null;
    latencies.sort((x, y) => x - y);
    return window('batch', `${streams} streams × ${BATCH}/batch`, batches * BATCH, wall,
      { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: latencies[latencies.length - 1] ?? NaN }, errors, delta(procs, a, b),
      (gen.user + gen.system) / 1e6 / wall, bodies[0]!.resultBytes);
  };
  await run('warm', 1, false);
  const w = (await run('run', seconds, true))!;
  ctx.step(`cluster: batch ingest (${w.concurrency}, each batch to the next node): ${fmt.int(w.resultsPerSecond)} results/s, p50 ${fmt.ms(w.latencyMs.p50)} / p99 ${fmt.ms(w.latencyMs.p99)} ms per batch, ${w.errors} errors; `
    + `CPU per 1,000 results: logbook ${fmt.int(w.logbookMsPer1000)} ms (fronts ${fmt.int(w.frontMsPer1000)}), nats ${fmt.int(w.natsMsPer1000)} ms; client ${w.generatorCores.toFixed(2)} cores`);
  if (w.errors) ctx.note(`cluster: batch ingest had ${w.errors} failed batches (retried)`);
  return w;
}

// ---------- reads ----------

async function getJson(url: string): Promise<any> {
  const r = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(30_000) });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`GET ${url}: ${r.status} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

async function reads(ctx: Context, c: Cluster, seconds: number, connections: number): Promise<ClusterReadRow[]> {
  const nodes = c.live();
  const pbs = (await getJson(`${nodes[0]!.url}/api/v1/playbooks?limit=200`)).results as { id: number }[];
  const resultIds: number[] = [];
  for (const pb of pbs.slice(0, 60)) {
    const rs = (await getJson(`${nodes[resultIds.length % nodes.length]!.url}/api/v1/results?playbook=${pb.id}&limit=20`)).results as { id: number }[];
    resultIds.push(...rs.map((r) => r.id));
  }
  if (!resultIds.length) throw new Error('no results to read');
  const specs: { endpoint: ClusterReadRow['endpoint']; label: string; paths: string[] }[] = [
    { endpoint: 'result', label: 'GET /results/<id>', paths: resultIds.slice(0, 1000).map((id) => `/api/v1/results/${id}`) },
    { endpoint: 'results', label: 'GET /results?playbook=<id>&status=ok&limit=100', paths: pbs.map((p) => `/api/v1/results?playbook=${p.id}&status=ok&limit=100`) },
    { endpoint: 'playbooks', label: 'GET /playbooks?limit=100 (every partition)', paths: ['/api/v1/playbooks?limit=100&order=-id'] },
  ];
  const rows: ClusterReadRow[] = [];
  for (const s of specs) {
    await getJson(nodes[1]!.url + s.paths[0]);
    // the paths replace the URL's (which goes through a shell: no '&' in it)
    const load = (secs: number) => Promise.all(nodes.map((n) => runLoad({ url: `${n.url}/api/v1/`, paths: s.paths, connections, seconds: secs })));
    await load(1);
    const procs = c.procs();
    const a = sample(procs);
    const t0 = performance.now();
    const r = combine(await load(seconds));
    const wall = (performance.now() - t0) / 1000;
    const d = delta(procs, a, sample(procs));
    const row: ClusterReadRow = {
      endpoint: s.endpoint, label: s.label, connectionsPerNode: connections, rps: r.rps, latencyMs: { p50: r.p50, p99: r.p99, max: r.max }, errors: r.errors,
      logbookCores: sumCpu(d, 'logbook') / wall, natsCores: sumCpu(d, 'nats') / wall,
    };
    rows.push(row);
    ctx.step(`cluster: reads ${s.label}: ${fmt.int(row.rps)} req/s, p50 ${fmt.ms(row.latencyMs.p50)} / p99 ${fmt.ms(row.latencyMs.p99)} ms (worst node), ${row.errors} errors, logbook ${row.logbookCores.toFixed(2)} / nats ${row.natsCores.toFixed(2)} cores`);
    if (r.errors) ctx.note(`cluster: reads ${s.label} had ${r.errors} errors`);
  }
  return rows;
}

// ---------- failover ----------

/** acks: when each acknowledged batch was first sent, and when its acknowledgement came */
interface Writer { uuid: string; playbook: number; acked: number; node: number; acks: { sent: number; at: number }[] }

async function failover(ctx: Context, c: Cluster, quick: boolean): Promise<FailoverResult> {
  const perBatch = 20;
  const nodes = [...c.nodes.values()];
  const names = [...c.nodes.keys()];
  const killed = c.killed;
  const deadline = Date.now() + 180_000;
  let retries = 0, connectionErrors = 0, longestAttemptMs = 0;
  let killedAt = Infinity;
  /** attempts that took over 5 s: when they started (relative to the kill), where, for which partition, how they ended */
  const slowAttempts: FailoverResult['slowAttempts'] = [];
  const unavailableWhy: Record<string, number> = {};
  const bodiesOf = new Map<string, ReturnType<typeof streamBodies>>();

  /** one batch until some node acknowledges it; a client that knows all three nodes and moves on when one fails */
  const send = async (w: Writer, seq: number, attemptTimeoutMs?: number): Promise<any> => {
    const b = bodiesOf.get(w.uuid)!;
    const body = seq === 1 ? b.first : b.next(seq);
    const sent = performance.now();
    for (let attempt = 0; ; attempt++) {
      const node = nodes[(w.node + attempt) % nodes.length]!;
      const t0 = performance.now();
      const slow = (err: unknown) => {
        const ms = performance.now() - t0;
        if (ms < 5000) return;
        const status = (err as { status?: number } | null)?.status;
        slowAttempts.push({ startedMs: Math.round(t0 - killedAt), ms: Math.round(ms), node: names[(w.node + attempt) % nodes.length]!, partition: w.playbook % PARTITIONS,
          outcome: err === null ? 'acknowledged' : status !== undefined ? `${status} ${(/\(([^)]*)\)/.exec((err as Error).message)?.[1] ?? '').split('\\n')[0]}` : String((err as Error).message).slice(0, 60) });
      };
      try {
        const reply = await postIngest(node.url, body, attemptTimeoutMs).finally(() => { longestAttemptMs = Math.max(longestAttemptMs, performance.now() - t0); })
          .catch((err) => { slow(err); throw err; });
        slow(null);
        w.acked = seq;
        w.acks.push({ sent, at: performance.now() });
        return reply;
      } catch (err) {
        const status = (err as { status?: number }).status;
        if (status !== undefined && status !== 503 && status !== 504) throw err;
        retries++;
        if (status === undefined) connectionErrors++;
        else {
          // "Partition 2 is unavailable (no responders); retry shortly." → "unavailable (no responders)"
          const why = /\(([^)]*)\)/.exec((err as Error).message)?.[1]?.split('\\n')[0]?.replace(/[0-9]+/g, 'N').slice(0, 60) ?? `${status}`;
          unavailableWhy[why] = (unavailableWhy[why] ?? 0) + 1;
        }
      }
      if (Date.now() > deadline) throw new Error(`failover: batch ${seq} of ${w.uuid} not acknowledged by any node`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  // two writers per partition, and one idle stream per partition for the probe (batch ingest places a
  // playbook by hash(uuid) mod P: open streams until every partition has its three)
  const writers: Writer[] = [];
  const spare: Writer[] = [];
  const probeOf = new Map<number, Writer>();
  const perPartition = new Map<number, number>();
  const complete = () => [...Array(PARTITIONS).keys()].every((p) => (perPartition.get(p) ?? 0) >= 2 && probeOf.has(p));
  for (let i = 0; i < 30 * PARTITIONS && !complete(); i++) {
    const w: Writer = { uuid: `failover-${i}-${Date.now()}`, playbook: 0, acked: 0, node: i % nodes.length, acks: [] };
    bodiesOf.set(w.uuid, streamBodies(w.uuid, perBatch));
    w.playbook = (await send(w, 1)).playbook as number;
    const k = w.playbook % PARTITIONS;
    if ((perPartition.get(k) ?? 0) < 2) { perPartition.set(k, (perPartition.get(k) ?? 0) + 1); writers.push(w); }
    else if (!probeOf.has(k)) probeOf.set(k, w);
    else spare.push(w); // more than needed there: stays idle (and is checked too)
  }
  const idle = spare.length + probeOf.size;

  // the victim: the node owning the most partitions (node3 on a tie)
  const owned = await Promise.all(nodes.map(async (n) => Object.keys((await health(n.url))?.cluster?.owned ?? {}).map(Number)));
  let v = nodes.length - 1;
  owned.forEach((o, i) => { if (o.length > owned[v]!.length) v = i; });
  const victim = nodes[v]!, victimName = names[v]!, victimPartitions = owned[v]!.sort((a, b) => a - b);
  ctx.step(`cluster: failover: ${writers.length} writers (${perBatch} results per batch, 2 per partition, ${idle} idle streams, one per partition probes after the kill), kill -9 of ${victimName} (owns partitions ${victimPartitions.join(', ')}) after ${quick ? 3 : 6} s`);

  let stop = false;
  const pace = 20; // ms between a writer's batches: a steady load, not a saturating one
  const running = writers.map(async (w) => {
    for (let seq = w.acked + 1; !stop; seq++) {
      await send(w, seq);
      await new Promise((r) => setTimeout(r, pace));
    }
  });
  const warm = quick ? 3000 : 6000;
  await new Promise((r) => setTimeout(r, warm));
  killedAt = performance.now();
  const ackedBefore = writers.reduce((s, w) => s + w.acks.filter((a) => a.at > killedAt - 2000).length, 0);
  process.kill(victim.pid, 'SIGKILL');
  killed.add(victimName);
  const survivors = c.live();
  // the probe: one new batch per victim partition, sent right after the kill and retried every 50 ms
  // (refused, 503, or no answer within 1 s: a request forwarded to the dead node in the moment before the
  // NATS servers noticed it is never answered) until acknowledged, the same seq each time, so exactly once:
  // when writes to that partition succeed again
  const probeMs: Record<string, number | null> = {};
  const probes = victimPartitions.map(async (p) => {
    const w = probeOf.get(p);
    if (!w) { probeMs[String(p)] = null; return; }
    await send(w, w.acked + 1, 1000);
    probeMs[String(p)] = performance.now() - killedAt;
  });
  let ownedAgainMs: number | null = null;
  const victimWriters = writers.filter((w) => victimPartitions.includes(w.playbook % PARTITIONS));
  // a batch sent after the kill and acknowledged: the victim cannot have done it
  const firstAckAfter = (p: number) => {
    const ts = writers.filter((w) => w.playbook % PARTITIONS === p).flatMap((w) => w.acks.filter((a) => a.sent > killedAt).map((a) => a.at));
    return ts.length ? Math.min(...ts) - killedAt : null;
  };
  try {
    const until = Date.now() + 90_000;
    while (Date.now() < until) {
      if (ownedAgainMs === null && (await settled(survivors))) ownedAgainMs = performance.now() - killedAt;
      if (ownedAgainMs !== null && victimPartitions.every((p) => firstAckAfter(p) !== null && String(p) in probeMs)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 1000)); // a little steady state after
  } finally {
    stop = true;
    await Promise.all([...running, ...probes]);
  }
  const writesOkMs: Record<string, number | null> = {};
  for (const p of victimPartitions) writesOkMs[String(p)] = firstAckAfter(p);
  const oks = Object.values(writesOkMs);
  const stalls = victimWriters.map((w) => w.acks.find((a) => a.at > killedAt)?.at);
  const writerStallMaxMs = stalls.some((x) => x === undefined) ? null : Math.max(...(stalls as number[])) - killedAt;
  let gap = 0;
  for (const w of writers.filter((x) => !victimWriters.includes(x))) {
    let last = killedAt;
    for (const a of w.acks.filter((x) => x.at > killedAt)) { gap = Math.max(gap, a.at - last); last = a.at; }
  }

  // every acknowledged result is there, once
  const via = survivors[0]!.url;
  let lost = 0, duplicated = 0, seqMismatches = 0, ackedResults = 0, ackedBatches = 0;
  for (const w of [...writers, ...probeOf.values(), ...spare]) {
    const found = (await getJson(`${via}/api/v1/playbooks?uuid=${w.uuid}`)).results as { id: number; items: { results: number } }[];
    const expected = (w.acked - 1) * perBatch;
    ackedResults += expected;
    ackedBatches += w.acked;
    const count = found.length === 1 ? (await getJson(`${via}/api/v1/results?playbook=${found[0]!.id}&limit=1`)).count as number : 0;
    if (count < expected) lost += expected - count;
    if (count > expected) duplicated += count - expected;
    if (found.length !== 1) { lost += expected; continue; }
    const next = await fetch(`${via}/api/v1/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ seq: w.acked + 2, playbook: { uuid: w.uuid }, events: [] }) });
    const detail = ((await next.json()) as { detail?: string }).detail;
    if (next.status !== 409 || detail !== `Expected seq ${w.acked + 1}.`) seqMismatches++;
  }
  const result: FailoverResult = {
    victim: victimName, victimPartitions, writers: writers.length, resultsPerBatch: perBatch, rateBefore: (ackedBefore * perBatch) / 2,
    ownedAgainMs, probeMs, probeMaxMs: Object.values(probeMs).some((x) => x === null) ? null : Math.max(...(Object.values(probeMs) as number[])), writesOkMs, writesOkMaxMs: oks.some((x) => x === null) ? null : Math.max(...(oks as number[])), otherPartitionsMaxGapMs: gap, retries, connectionErrors, unavailable: unavailableWhy, longestAttemptMs, slowAttempts, writerStallMaxMs,
    acknowledgedBatches: ackedBatches, acknowledgedResults: ackedResults, lost, duplicated, seqMismatches,
  };
  ctx.step(`cluster: failover: all partitions owned again after ${result.ownedAgainMs === null ? 'never (90 s)' : fmt.int(result.ownedAgainMs) + ' ms'}, `
    + `a new write to each of ${victimName}'s partitions acknowledged after ${result.probeMaxMs == null ? '–' : fmt.int(result.probeMaxMs) + ' ms'} `
    + `(${Object.entries(probeMs).map(([p, ms]) => `p${p} ${ms === null ? '–' : fmt.int(ms)}`).join(', ')}), the steady writers' first new one after `
    + `${Object.entries(writesOkMs).map(([p, ms]) => `p${p} ${ms === null ? '–' : fmt.int(ms)}`).join(', ')} ms; other partitions' longest gap ${fmt.int(gap)} ms; `
    + `${fmt.int(ackedResults)} acknowledged results: ${lost} lost, ${duplicated} duplicated, ${seqMismatches} seq mismatches; ${retries} retried attempts `
    + `(${connectionErrors} connection errors, 503s: ${JSON.stringify(unavailableWhy)}), longest attempt ${fmt.int(longestAttemptMs)} ms, longest writer stall ${writerStallMaxMs === null ? '–' : fmt.int(writerStallMaxMs)} ms`
    + (slowAttempts.length ? `; attempts over 5 s: ${slowAttempts.map((a) => `[p${a.partition} via ${a.node} at ${a.startedMs} ms: ${a.ms} ms, ${a.outcome}]`).join(' ')}` : ''));
  if (lost || duplicated || seqMismatches) ctx.note(`cluster: failover LOST ${lost} / DUPLICATED ${duplicated} acknowledged results (${seqMismatches} seq mismatches)`);
  if (result.writesOkMaxMs === null || result.ownedAgainMs === null) ctx.note('cluster: failover did not complete within 90 s');
  return result;
}

// ---------- JetStream footprint ----------

async function streamBytes(c: Cluster): Promise<{ bytes: number; results: number }> {
  const nc = await connect({ servers: c.nats.servers.filter((s) => s.child).map((s) => s.url) });
  try {
    const jsm = await jetstreamManager(nc);
    let bytes = 0;
    for (let p = 0; p < PARTITIONS; p++) bytes += (await jsm.streams.info(streamName(p))).state.bytes;
    const results = (await getJson(`${c.live()[0]!.url}/api/v1/results?limit=1`)).count as number;
    return { bytes, results };
  } finally { await nc.close(); }
}

// ---------- the capacity model ----------

export const MODEL_CORES_PER_NODE = 8;
/** at most this share of the cores busy: a node's loss puts its load on the others (⅔ for 3 nodes), plus spikes */
export const MODEL_UTILIZATION = 0.6;
export const MODEL_RATES = [10e6, 100e6, 1e9];
/** memory per stored result on a node (anonymous RSS, the footprint scenario's 2026-11-22 full run: 352 B) */
export const MODEL_MEMORY_BYTES_PER_RESULT = 352;
/** copies of a partition's state in memory: its owner's and its standby's */
export const MODEL_MEMORY_COPIES = 2;

/** Nodes for a rate from per-result costs (CPU seconds): cores at the utilization, the front thread, R3's minimum of 3. */
function nodesFor(rps: number, lb: number, nt: number, front: number): { nodes: number; boundBy: string; logbookCores: number; natsCores: number } {
  const logbookCores = (rps * lb) / MODEL_UTILIZATION, natsCores = (rps * nt) / MODEL_UTILIZATION;
  const byCores = Math.ceil((logbookCores + natsCores) / MODEL_CORES_PER_NODE);
  const byFront = Math.ceil((rps * front) / MODEL_UTILIZATION);
  const nodes = Math.max(3, byCores, byFront);
  const boundBy = byCores < 3 && byFront < 3 ? 'the minimum for R3' : byFront > byCores ? 'the front thread' : 'CPU';
  return { nodes, boundBy, logbookCores, natsCores };
}

export function capacityModel(ingest: IngestWindow[], streamBytesPerResult: number | null): CapacityModel | null {
  const basis = ingest.find((w) => w.mode === 'batch') ?? ingest[0];
  if (!basis || !Number.isFinite(basis.logbookMsPer1000) || basis.results === 0) return null;
  const perReq = ingest.find((w) => w.mode === 'per-request' && w.results > 0);
  const costs = (w: IngestWindow) => ({ lb: w.logbookMsPer1000 / 1e6, nt: w.natsMsPer1000 / 1e6, front: w.frontMsPer1000 / 1e6 }); // CPU seconds per result
  const perNodeOf = (c: ReturnType<typeof costs>) => Math.min((MODEL_CORES_PER_NODE * MODEL_UTILIZATION) / (c.lb + c.nt), MODEL_UTILIZATION / Math.max(c.front, 1e-9));
  const b = costs(basis), pr = perReq ? costs(perReq) : null;
  const rows = MODEL_RATES.map((perHour) => {
    const rps = perHour / 3600;
    const n = nodesFor(rps, b.lb, b.nt, b.front);
    return { perHour, resultsPerSecond: rps, cores: n.logbookCores + n.natsCores, logbookCores: n.logbookCores, natsCores: n.natsCores, nodes: n.nodes, boundBy: n.boundBy,
      ...(pr ? { perRequestNodes: nodesFor(rps, pr.lb, pr.nt, pr.front).nodes, perRequestBoundBy: nodesFor(rps, pr.lb, pr.nt, pr.front).boundBy } : {}) };
  });
  return {
    basis: basis.mode, coresPerNode: MODEL_CORES_PER_NODE, utilization: MODEL_UTILIZATION,
    logbookResultsPerCore: 1 / b.lb, natsResultsPerCore: 1 / b.nt, resultsPerNode: perNodeOf(b), frontResultsPerNode: MODEL_UTILIZATION / Math.max(b.front, 1e-9), streamBytesPerResult, rows,
    perRequest: pr ? {
      logbookResultsPerCore: 1 / pr.lb, natsResultsPerCore: 1 / pr.nt, resultsPerNode: perNodeOf(pr), frontResultsPerNode: MODEL_UTILIZATION / Math.max(pr.front, 1e-9),
    } : null,
  };
}

// ---------- the scenario ----------

export async function clusterScenario(ctx: Context): Promise<ClusterResult> {
  const bin = natsServerBinary();
  if (!bin) throw new Error('nats-server is not installed (Debian: apt-get install nats-server)');
  const natsVersion = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const secs = ctx.quick ? { ingest: 5, read: 3 } : { ingest: 12, read: 6 };
  const c = await startCluster(ctx);
  const out: ClusterResult = {
    nodes: NODES, natsServers: NODES, partitions: PARTITIONS, replicas: REPLICAS, natsVersion, cores: availableParallelism(),
    ingest: [], reads: [], failover: null, streamBytesPerResult: null, storedResults: 0, model: null,
  };
  try {
    out.ingest.push(...(await perRequestIngest(ctx, c, secs.ingest, 16)));
    out.ingest.push(await batchIngest(ctx, c, secs.ingest, 12));
    out.reads = await reads(ctx, c, secs.read, 16);
    const sb = await streamBytes(c);
    out.storedResults = sb.results;
    out.streamBytesPerResult = sb.results > 0 ? sb.bytes / sb.results : null;
    ctx.step(`cluster: JetStream holds ${fmt.mib(sb.bytes)} per replica for ${fmt.int(sb.results)} results: ${fmt.int(out.streamBytesPerResult ?? NaN)} B per result (× ${REPLICAS} replicas on disk)`);
    out.model = capacityModel(out.ingest, out.streamBytesPerResult);
    out.failover = await failover(ctx, c, ctx.quick);
  } finally { await c.stop(); }
  return out;
}

// ---------- the report's section ----------

function table(head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

function hourly(n: number): string { return n >= 1e9 ? `${n / 1e9} B` : `${n / 1e6} M`; }

export function clusterSection(r: ClusterResult): string {
  const out: string[] = ['## Cluster mode: 3 nodes, 3 nats-servers', ''];
  out.push(`${r.natsServers} × ${r.natsVersion} (JetStream cluster, streams R${r.replicas}) and ${r.nodes} logbook nodes (LOGBOOK_CLUSTER, ${r.partitions} partitions), **all on this machine's ${r.cores} cores**: the throughput below is what one shared box gives, not what three machines give. The transferable numbers are the CPU each process spends per 1,000 results. Every request goes to any node (the owner of the partition answers over NATS request/reply when it is another).`, '');
  out.push('### Ingest', '');
  out.push(table(['mode', 'load', 'results/s', 'p50 ms', 'p99 ms', 'errors', 'logbook CPU ms / 1,000 results (3 nodes)', '… of which fronts (main threads)', 'NATS CPU ms / 1,000 results (3 servers)', 'generator cores'],
    r.ingest.map((w) => [MODE[w.mode], w.concurrency, `**${fmt.int(w.resultsPerSecond)}**`,
      fmt.ms(w.latencyMs.p50), fmt.ms(w.latencyMs.p99), String(w.errors), `**${fmt.int(w.logbookMsPer1000)}**`, fmt.int(w.frontMsPer1000), `**${fmt.int(w.natsMsPer1000)}**`, w.generatorCores.toFixed(2)])), '');
  out.push('Per-request latencies are the worst node\'s wrk percentiles; batch latencies are per batch of 100. Per process, CPU milliseconds per 1,000 results (a logbook node\'s main thread in brackets):', '');
  const per1000 = (w: IngestWindow, sec: number) => fmt.int((sec * 1e6) / w.results);
  out.push(table(['mode', ...r.ingest[0]!.processes.map((p) => p.name)], r.ingest.map((w) => [MODE[w.mode], ...w.processes.map((p) => per1000(w, p.cpuSeconds) + (p.mainThreadSeconds !== undefined ? ` (${per1000(w, p.mainThreadSeconds)})` : ''))])), '');
  if (r.reads.length) {
    out.push('### Reads through every node', '');
    out.push(table(['request', 'conn / node', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'logbook cores', 'NATS cores', 'logbook / NATS CPU ms per 1,000 reads'],
      r.reads.map((x) => [x.label, String(x.connectionsPerNode), `**${fmt.int(x.rps)}**`, fmt.ms(x.latencyMs.p50), fmt.ms(x.latencyMs.p99), String(x.errors), x.logbookCores.toFixed(2), x.natsCores.toFixed(2),
        `${fmt.int((x.logbookCores / x.rps) * 1e6)} / ${fmt.int((x.natsCores / x.rps) * 1e6)}`])), '');
    out.push('Reads of one record go to its owner (⅔ forwarded over NATS); lists ask every partition\'s owner and merge.', '');
  }
  const f = r.failover;
  if (f) {
    out.push('### Failover: kill -9 of a node under load', '');
    out.push(`${f.writers} batch-ingest writers (${f.resultsPerBatch} results per batch, two per partition, each with one batch in flight and 20 ms between batches; a refused or failed attempt is retried on the next node after 50 ms), ${fmt.int(f.rateBefore)} results/s before the kill. kill -9 of **${f.victim}** (owned partitions ${f.victimPartitions.join(', ')}):`, '');
    out.push(table(['what', 'value'], [
      ['every partition owned again (every survivor\'s /healthz)', f.ownedAgainMs === null ? 'not within 90 s' : `**${fmt.int(f.ownedAgainMs)} ms**`],
      ...(f.probeMs ? [[`a new write to each of its partitions (sent at the kill, retried every 50 ms and after 1 s without an answer) acknowledged (slowest of ${f.victimPartitions.length})`,
        f.probeMaxMs === null || f.probeMaxMs === undefined ? '–' : `**${fmt.int(f.probeMaxMs)} ms** (${Object.entries(f.probeMs).map(([p, ms]) => `p${p}: ${ms === null ? '–' : fmt.int(ms)}`).join(', ')})`]] : []),
      [`the steady writers' first batch sent after the kill acknowledged, per partition`, f.writesOkMaxMs === null ? 'not within 90 s' : `${Object.entries(f.writesOkMs).map(([p, ms]) => `p${p}: ${ms === null ? '–' : fmt.int(ms)}`).join(', ')} ms`],
      ['longest pause of writers on the other partitions', `${fmt.int(f.otherPartitionsMaxGapMs)} ms`],
      ['longest wait of a writer on those partitions (kill → its next acknowledgement)', f.writerStallMaxMs === null ? '–' : `${fmt.int(f.writerStallMaxMs)} ms`],
      ['longest single HTTP attempt', `${fmt.int(f.longestAttemptMs)} ms`],
      ...(f.slowAttempts?.length ? [['attempts over 5 s (start relative to the kill, node asked, partition: how it ended)', f.slowAttempts.map((a) => `${fmt.int(a.startedMs)} ms, ${a.node}, p${a.partition}: ${fmt.int(a.ms)} ms, ${a.outcome}`).join('; ')]] : []),
      ['attempts refused or failed, retried on the next node', `${f.retries}: ${f.connectionErrors} connection errors (the dead node)${Object.entries(f.unavailable).map(([why, n]) => `, ${n} × 503 "${why}"`).join('')}`],
      ['acknowledged batches / results', `${fmt.int(f.acknowledgedBatches)} / ${fmt.int(f.acknowledgedResults)}`],
      ['acknowledged results lost / duplicated', `**${f.lost} / ${f.duplicated}**` + (f.seqMismatches ? ` (${f.seqMismatches} streams expect another seq)` : '')],
    ]), '');
  }
  // recomputed from the measured costs, so a re-rendered report (--report) uses the current model
  const m = capacityModel(r.ingest, r.streamBytesPerResult);
  if (m) {
    out.push('### Capacity model (a model, not a measurement)', '');
    out.push(`Derived from the measured CPU per result of the **${MODE[m.basis]}** run above. Assumptions: CPU is the bound (the network and disks keep up; NATS fsyncs every 60 s on 2.9, so its disk writes are sequential and batched); per-result costs stay what they were here when each process has its own cores (on this box the processes competed for 2 cores, and context switches are charged to them, so the costs are if anything high); R${r.replicas}, so each result's NATS cost is paid on ${r.replicas} servers — already included, since the three servers' CPU is summed; requests reach a random node, so about ⅔ are forwarded over NATS as here; a node is one machine with ${m.coresPerNode} cores running one logbook and one nats-server, kept at most ${Math.round(m.utilization * 100)} % busy (when one of 3 nodes is lost the two others carry 1.5× their load: ${Math.round(m.utilization * 100)} % → ${Math.round(m.utilization * 150)} %); at least 3 nodes for R3. One logbook front is one thread: it caps a node at ${fmt.int(m.frontResultsPerNode)} results/s at that utilization. Partitions must outnumber the cores given to logbook (each partition is one worker thread). Memory and disk retention are not in the model (see below).`, '');
    out.push(table(['', 'results/s'], [
      ['logbook, per core', `**${fmt.int(m.logbookResultsPerCore)}**`],
      [`NATS (R${r.replicas}), per core of the cluster's nats-servers`, `**${fmt.int(m.natsResultsPerCore)}**`],
      [`per node (${m.coresPerNode} cores, logbook + nats-server, ${Math.round(m.utilization * 100)} % busy; at most what its front thread takes: ${fmt.int(m.frontResultsPerNode)})`, `**${fmt.int(m.resultsPerNode)}** (${fmt.int(m.resultsPerNode * 3600 / 1e6)} M/hour)`],
      ...(m.perRequest ? [[`… with per-request ingest (\`POST /results\`, the stock ARA callback) instead`, `logbook ${fmt.int(m.perRequest.logbookResultsPerCore)}/core, NATS ${fmt.int(m.perRequest.natsResultsPerCore)}/core, **${fmt.int(m.perRequest.resultsPerNode)} per node** (front thread: ${fmt.int(m.perRequest.frontResultsPerNode)})`]] : []),
    ]), '');
    out.push(table(['results per hour', 'results/s', 'logbook cores', 'NATS cores', `nodes (${m.coresPerNode} cores each)`, 'bound by', 'nodes with per-request ingest'],
      m.rows.map((x) => [hourly(x.perHour), fmt.int(x.resultsPerSecond), x.logbookCores.toFixed(1), x.natsCores.toFixed(1), `**${x.nodes}**`, x.boundBy,
        x.perRequestNodes === undefined ? '–' : `${x.perRequestNodes} (${x.perRequestBoundBy})`])), '');
    out.push('Cores are what the rate needs at that utilization (batch ingest); nodes are the most of: cores ÷ cores per node, the rate ÷ what one front thread takes, and 3.', '');
    if (m.streamBytesPerResult) out.push(`Disk: the partition streams hold ${fmt.int(m.streamBytesPerResult)} B per result (one replica; commits are deflated, and the results here are all alike, so this is a lower bound: real results compress less), so ${r.replicas} replicas store ${fmt.int(m.streamBytesPerResult * r.replicas)} B per result: ${m.rows.map((x) => `${hourly(x.perHour)}/hour → ${((x.perHour * m.streamBytesPerResult! * r.replicas) / 1e9).toFixed(0)} GB/hour`).join(', ')} across the cluster, until the streams' retention drops them.`, '');
    const mem = MODEL_MEMORY_BYTES_PER_RESULT * MODEL_MEMORY_COPIES;
    out.push(`Memory: a partition's state lives in the memory of its owner and of its standby (the node second in its rendezvous order, tailing its stream), about ${MODEL_MEMORY_BYTES_PER_RESULT} B per stored result on each (anonymous RSS per result measured by the \`footprint\` scenario on a single node; assumed the same per partition), so ${mem} B per result across the cluster: ${m.rows.map((x) => `${hourly(x.perHour)}/hour → ${((x.perHour * mem) / 1e9).toFixed(1)} GB of RAM per hour kept`).join(', ')}. At high rates retention, not CPU, sizes the cluster: a week of 100 M/hour is ${((168 * 100e6 * mem) / 1e12).toFixed(1)} TB of RAM.`, '');
  }
  return out.join('\n');
}
