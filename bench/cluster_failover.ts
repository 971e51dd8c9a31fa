// Cluster failover, measured from outside (issue #51 item 8): three Debian nats-servers
// (JetStream R3) and three logbook nodes on this machine, 24 batch-ingest writers
// spread over the nodes, and three kinds of fault, each injected `--runs` times
// (default 5), interleaved:
//  - node-kill:  kill -9 of the logbook node owning the most partitions (restarted after);
//  - nats-kill:  kill -9 of the nats-server leading the most partition streams (restarted after);
//  - node-pause: SIGSTOP of the node owning the most partitions for --pause-s (15 s), then SIGCONT.
// The failover time of one fault is the longest any writer went without an acknowledgement
// from the fault on (each writer has one batch in flight, 20 ms between batches; an attempt
// refused, failed or unanswered within 2 s is sent again, same seq, to the next node, as a
// client behind a load balancer would). At the end every writer's results are counted back:
// lost and duplicated acknowledged results must be 0. Writes a JSON file and prints a table.
//   npm run build && node dist/bench/cluster_failover.js [--runs 5] [--kinds node-kill,nats-kill,node-pause] [--partitions 12] [--pause-s 15] [--out file.json]
// Everything shares this machine's cores (and other engineers' load): times are noisy.
import { writeFileSync } from 'node:fs';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { streamName } from '../src/cluster/partition_log.js';
import { rendezvousRanking } from '../src/cluster/rendezvous.js';
import { startNatsCluster, type NatsCluster } from '../test/helpers/nats.js';
import { startLogbook, type Running } from './lib/servers.js';
import { streamBodies } from './scenarios/batch.js';

type Kind = 'node-kill' | 'nats-kill' | 'node-pause';
const arg = (name: string, def: string) => { const i = process.argv.indexOf(`--${name}`); return i > 0 ? process.argv[i + 1]! : def; };
const RUNS = Number(arg('runs', '5'));
const KINDS = arg('kinds', 'node-kill,nats-kill,node-pause').split(',') as Kind[];
const PARTITIONS = Number(arg('partitions', '12'));
const PAUSE_MS = Number(arg('pause-s', '15')) * 1000;
const WRITERS = Number(arg('writers', '24'));
const OUT = arg('out', '');
const PER_BATCH = 10;
const ATTEMPT_TIMEOUT_MS = 2000;
const NAMES = ['node1', 'node2', 'node3'];

const t00 = performance.now();
const say = (msg: string) => console.log(`[${((performance.now() - t00) / 1000).toFixed(1)} s] ${msg}`);

const nats: NatsCluster = await startNatsCluster({ size: 3 });
const nodes = new Map<string, Running>();
const stopped = new Set<string>();

async function startNode(name: string): Promise<void> {
  nodes.set(name, await startLogbook({
    env: { LOGBOOK_CLUSTER: nats.urls.join(','), LOGBOOK_NODE: name, LOGBOOK_PARTITIONS: String(PARTITIONS), LOGBOOK_REPLICAS: '3', LOGBOOK_SHUTDOWN_TIMEOUT: '2', LOGBOOK_LOG_LEVEL: 'info' },
  }));
}

async function health(url: string): Promise<any | null> {
  try {
    const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    return await r.json();
  } catch { return null; }
}

/** every partition owned by one of the running nodes, each node seeing all of them */
async function allOwned(): Promise<boolean> {
  const live = [...nodes].filter(([n]) => !stopped.has(n)).map(([, r]) => r);
  const views = await Promise.all(live.map((n) => health(n.url)));
  if (views.some((v) => !v?.cluster || v.cluster.unowned.length > 0 || v.cluster.nodes.length !== live.length)) return false;
  return views.reduce((s, v) => s + Object.keys(v.cluster.owned).length, 0) === PARTITIONS;
}

/**
 * every partition owned by the running node that should own it (a node that rejoined has
 * taken its share back), with its standby up on the node second in line, each node seeing
 * all of them: the next fault starts from a steady state
 */
async function settled(): Promise<boolean> {
  const names = NAMES.filter((n) => !stopped.has(n));
  const views = await Promise.all(names.map((n) => health(nodes.get(n)!.url)));
  if (views.some((v) => !v?.cluster || v.cluster.unowned.length > 0 || v.cluster.nodes.length !== names.length)) return false;
  if (views.reduce((s, v) => s + Object.keys(v.cluster.owned).length, 0) !== PARTITIONS) return false;
  for (let p = 0; p < PARTITIONS; p++) {
    const owner = names[views.findIndex((v) => String(p) in v.cluster.owned)];
    const [first, second] = rendezvousRanking(p, names);
    if (owner !== first) return false;
    // and its standby is up (a standby restarted after a move replays the whole stream first)
    if (second !== undefined && !views[names.indexOf(second)].cluster.standby.some((s: { partition: number }) => s.partition === p)) return false;
  }
  return true;
}

/** false: not settled within the timeout (at the start: an error); the next fault then starts anyway, and says so */
async function waitSettled(timeoutMs = 300_000, first = false): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await settled())) {
    if (Date.now() > deadline) {
      if (first) throw new Error('the cluster did not settle in time');
      say('the cluster did not settle (owners in rendezvous order, standbys up) within the timeout; the next fault starts anyway');
      return false;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return true;
}

/** every partition stream has a leader and every replica current */
async function streamsHealthy(): Promise<void> {
  const nc = await connect({ servers: nats.servers.filter((s) => s.child).map((s) => s.url) });
  try {
    const jsm = await jetstreamManager(nc);
    const deadline = Date.now() + 120_000;
    for (let p = 0; p < PARTITIONS; p++) {
      for (;;) {
        const info = await jsm.streams.info(streamName(p)).catch(() => null);
        if (info?.cluster?.leader && (info.cluster.replicas ?? []).length === 2 && info.cluster.replicas!.every((r) => r.current)) break;
        if (Date.now() > deadline) throw new Error(`stream ${p} did not recover`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally { await nc.close(); }
}

async function streamLeaders(): Promise<Map<string, number>> {
  const nc = await connect({ servers: nats.servers.filter((s) => s.child).map((s) => s.url) });
  try {
    const jsm = await jetstreamManager(nc);
    const count = new Map<string, number>();
    for (let p = 0; p < PARTITIONS; p++) {
      const leader = (await jsm.streams.info(streamName(p))).cluster?.leader;
      if (leader) count.set(leader, (count.get(leader) ?? 0) + 1);
    }
    return count;
  } finally { await nc.close(); }
}

// ---- writers ----

interface Writer { uuid: string; acked: number; node: number; acks: number[]; bodies: ReturnType<typeof streamBodies> }
const counters = { attempts: 0, retried: 0, timeouts: 0, connectionErrors: 0, unavailable: 0 };

async function post(url: string, body: string): Promise<{ status: number; text: string }> {
  const r = await fetch(`${url}/api/v1/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS) });
  return { status: r.status, text: await r.text() };
}

async function send(w: Writer, seq: number): Promise<void> {
  const body = seq === 1 ? w.bodies.first : w.bodies.next(seq);
  for (let attempt = 0; ; attempt++) {
    const name = NAMES[(w.node + attempt) % NAMES.length]!;
    const node = nodes.get(name)!;
    counters.attempts++;
    try {
      const r = await post(node.url, body);
      if (r.status === 200) { w.acked = seq; w.acks.push(performance.now()); w.node = (w.node + attempt) % NAMES.length; return; }
      if (r.status !== 503) throw new Error(`ingest ${w.uuid} seq ${seq} via ${name}: ${r.status} ${r.text.slice(0, 300)}`);
      counters.unavailable++;
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('ingest ')) throw err;
      if ((err as Error).name === 'TimeoutError') counters.timeouts++; else counters.connectionErrors++;
    }
    counters.retried++;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// ---- the run ----

interface Run { kind: Kind; run: number; victim: string; victimOwned: number; failoverMs: number; stalledWriters: number; notes: string[] }
const runs: Run[] = [];
let writers: Writer[] = [];
let stop = false;
let running: Promise<void>[] = [];
/** whether the cluster had settled before the next fault */
let steady = true;

/** log lines of every node since `from` (output lengths) that tell what happened */
function events(from: Map<Running, number>, t0Iso: number): string[] {
  const out: string[] = [];
  for (const [name, n] of nodes) {
    // a node restarted since (node-kill) is a new process: all of its output is after the fault
    const text = n.output().slice(from.get(n) ?? 0);
    for (const line of text.split('\n')) {
      if (!/partition|standby|paused|nats|append|fence|promot/i.test(line)) continue;
      try {
        const j = JSON.parse(line);
        const at = Date.parse(j.time) - t0Iso;
        const { level: _l, time: _t, pid: _p, msg, ...rest } = j;
        out.push(`${name} +${at} ms ${msg} ${JSON.stringify(rest)}`);
      } catch { /* partial line */ }
    }
  }
  return out.sort((a, b) => Number(/\+(-?\d+) ms/.exec(a)![1]) - Number(/\+(-?\d+) ms/.exec(b)![1]));
}

try {
  await Promise.all(NAMES.map(startNode));
  await waitSettled(120_000, true);
  say(`3 nats-servers (R3) + 3 nodes, ${PARTITIONS} partitions: settled`);
  writers = Array.from({ length: WRITERS }, (_, i) => ({ uuid: `failover-${i}-${Date.now()}`, acked: 0, node: i % 3, acks: [], bodies: streamBodies(`failover-${i}-${Date.now()}`, PER_BATCH) }));
  for (const w of writers) w.bodies = streamBodies(w.uuid, PER_BATCH);
  running = writers.map(async (w) => {
    for (let seq = 1; !stop; seq++) {
      await send(w, seq);
      await new Promise((r) => setTimeout(r, 20));
    }
  });
  await new Promise((r) => setTimeout(r, 3000));
  for (let run = 1; run <= RUNS; run++) {
    for (const kind of KINDS) {
      const owned = await Promise.all(NAMES.map(async (n) => Object.keys((await health(nodes.get(n)!.url))?.cluster?.owned ?? {}).length));
      let victim = NAMES[owned.indexOf(Math.max(...owned))]!;
      let victimOwned = Math.max(...owned);
      if (kind === 'nats-kill') {
        const leaders = await streamLeaders();
        const best = [...leaders].sort((a, b) => b[1] - a[1])[0]!;
        victim = best[0]; victimOwned = best[1];
      }
      const from = new Map([...nodes.values()].map((r) => [r, r.output().length]));
      const t0 = performance.now();
      const t0Iso = Date.now();
      if (kind === 'node-kill') { process.kill(nodes.get(victim)!.pid, 'SIGKILL'); stopped.add(victim); }
      else if (kind === 'nats-kill') await nats.kill(victim);
      else { process.kill(nodes.get(victim)!.pid, 'SIGSTOP'); stopped.add(victim); }
      // until every writer has an acknowledgement after the fault, and a little steady state
      const deadline = t0 + 90_000;
      const allAcked = () => writers.every((w) => w.acks.some((a) => a > t0 + 1000));
      let takenDuringPause = '';
      if (kind === 'node-pause') {
        // the pause lasts PAUSE_MS whatever happens meanwhile
        while (performance.now() < t0 + PAUSE_MS && !allAcked()) await new Promise((r) => setTimeout(r, 100));
        const rest = t0 + PAUSE_MS - performance.now();
        if (rest > 0) await new Promise((r) => setTimeout(r, rest));
        takenDuringPause = (await allOwned()) ? 'taken over during the pause' : 'NOT taken over during the pause';
        process.kill(nodes.get(victim)!.pid, 'SIGCONT');
      }
      while (performance.now() < deadline && !allAcked()) await new Promise((r) => setTimeout(r, 100));
      let failoverMs = 0, stalled = 0;
      for (const w of writers) {
        let last = t0, gap = 0;
        for (const a of w.acks.filter((x) => x > t0)) { gap = Math.max(gap, a - last); last = a; }
        if (!w.acks.some((a) => a > t0)) gap = performance.now() - t0;
        if (gap > 1000) stalled++;
        failoverMs = Math.max(failoverMs, gap);
      }
      // heal
      if (kind === 'node-kill') { await nodes.get(victim)!.stop(); await startNode(victim); stopped.delete(victim); }
      else if (kind === 'nats-kill') await nats.restart(victim);
      else stopped.delete(victim);
      await new Promise((r) => setTimeout(r, 1000));
      const ev = events(from, t0Iso);
      const r: Run = { kind, run, victim, victimOwned, failoverMs: Math.round(failoverMs), stalledWriters: stalled, notes: [steady ? '' : 'started before the cluster settled', takenDuringPause, ...ev].filter(Boolean) };
      runs.push(r);
      say(`${kind} #${run} (${victim}, ${kind === 'nats-kill' ? 'leading' : 'owning'} ${victimOwned}): failover ${r.failoverMs} ms, ${stalled} writers stalled > 1 s ${takenDuringPause}${steady ? '' : ' (started before the cluster settled)'}`);
      if (process.argv.includes('--verbose')) for (const e of ev) console.log(`    ${e}`);
      await streamsHealthy();
      steady = await waitSettled();
      await new Promise((r) => setTimeout(r, 3000));
    }
  }
} finally {
  stop = true;
  await Promise.race([Promise.all(running), new Promise((r) => setTimeout(r, 30_000))]);
}

// every acknowledged result is there, once
let lost = 0, duplicated = 0, seqMismatches = 0, ackedResults = 0;
try {
  const via = nodes.get('node1')!.url;
  for (const w of writers) {
    if (w.acked === 0) continue;
    const found = (await (await fetch(`${via}/api/v1/playbooks?uuid=${w.uuid}`)).json() as any).results as { id: number }[];
    const expected = (w.acked - 1) * PER_BATCH;
    ackedResults += expected;
    if (found.length !== 1) { lost += expected; continue; }
    const count = ((await (await fetch(`${via}/api/v1/results?playbook=${found[0]!.id}&limit=1`)).json()) as any).count as number;
    if (count < expected) lost += expected - count;
    if (count > expected) duplicated += count - expected;
    // a partition may be moving back to a node that rejoined: a 503 is asked again
    let next: Response;
    for (let attempt = 0; ; attempt++) {
      next = await fetch(`${via}/api/v1/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ seq: w.acked + 2, playbook: { uuid: w.uuid }, events: [] }) });
      if (next.status !== 503 || attempt >= 100) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const detail = ((await next.json()) as { detail?: string }).detail;
    if (next.status !== 409 || detail !== `Expected seq ${w.acked + 1}.`) {
      seqMismatches++;
      console.log(`seq mismatch: ${w.uuid} acknowledged up to ${w.acked}; seq ${w.acked + 2} was answered ${next.status} ${JSON.stringify(detail)}`);
    }
  }
} finally {
  for (const n of nodes.values()) { try { process.kill(n.pid, 'SIGCONT'); } catch { /* gone */ } }
  await Promise.all([...nodes.values()].map((n) => n.stop().catch(() => {})));
  await nats.stop();
}

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2; };
console.log(`\n| fault | runs | min ms | median ms | max ms | each |\n|---|---:|---:|---:|---:|---|`);
const summary: Record<string, { min: number; median: number; max: number; each: number[] }> = {};
for (const kind of KINDS) {
  const xs = runs.filter((r) => r.kind === kind).map((r) => r.failoverMs);
  if (!xs.length) continue;
  summary[kind] = { min: Math.min(...xs), median: median(xs), max: Math.max(...xs), each: xs };
  console.log(`| ${kind} | ${xs.length} | ${Math.min(...xs)} | ${median(xs)} | ${Math.max(...xs)} | ${xs.join(', ')} |`);
}
console.log(`\n${ackedResults} acknowledged results: lost ${lost}, duplicated ${duplicated}, seq mismatches ${seqMismatches}; attempts ${counters.attempts}, retried ${counters.retried} (timeouts ${counters.timeouts}, connection errors ${counters.connectionErrors}, 503 ${counters.unavailable})`);
if (OUT) writeFileSync(OUT, JSON.stringify({ partitions: PARTITIONS, writers: WRITERS, pauseMs: PAUSE_MS, summary, runs, ackedResults, lost, duplicated, seqMismatches, counters }, null, 2));
process.exit(lost || duplicated || seqMismatches ? 1 : 0);
