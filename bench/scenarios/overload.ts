// Scenario: overload. How logbook behaves when offered more writes than it can
// take: find the sustainable ingest rate (closed loop, 32 connections), then
// offer twice that with an open-loop generator (arrivals at a fixed rate,
// whatever the server does) and measure what it sheds (503 + Retry-After), the
// latency of what it admits, its peak memory, whether any acknowledged write is
// lost (every acknowledged id is read back), and how fast latency and shedding
// return to normal once the offered load drops to half the sustainable rate.
// Run once per admission policy (LOGBOOK_SHARD_QUEUE_DELAY: 0 = queue length
// only; 10 ms, the default; 25 ms), so the report shows the trade-off. The
// generator is a C program (bench/lib/open_loop.c, built with `cc` on first use;
// OVERLOAD_GENERATOR=node takes the Node one, bench/lib/open_loop.ts), runs at
// nice -10 when allowed (the server at 0; see GENERATOR_NICE) and its CPU is
// reported: on a 2-core machine it competes with the server it loads
// (OVERLOAD_PIN=1 gives each its own core instead). The server's `shedding`
// log lines say where admitted requests waited (front event-loop lag, shard
// round trip) and where refusals happened (at the head, after parsing).
import { execFileSync } from 'node:child_process';
import { availableParallelism, getPriority, setPriority } from 'node:os';
import type { Context } from '../lib/context.js';
import { fmt } from '../lib/context.js';
import { LoadGenerator, percentile, type LoadSpec, type Sample } from '../lib/open_loop.js';
import { NativeLoadGenerator, nativeGenerator } from '../lib/open_loop_native.js';
import { createTree, loopedResultContent, resultBody } from '../lib/payloads.js';
import { startLogbook, startRaw, type Running } from '../lib/servers.js';

/** Admitted latency the recovery is judged by (ms). */
export const RECOVERED_P99_MS = 100;
const WINDOW_MS = 250;
const TASKS = 16;
/**
 * The load generator shares the cores with the server: it runs at this nice
 * value (the server at 0; OVERLOAD_GENERATOR_NICE overrides; without the
 * privilege to raise its priority it stays at 0). It used to run at nice 10 to
 * take less from the server, but a starved generator reads answers late and
 * adds its own delay to every latency it reports (measured: generator lag p99
 * 123–329 ms at 2×, admitted p99 420 ms from the write while the server's own
 * head → answer p99 was 166 ms). Ahead of the server it timestamps promptly;
 * its CPU is what the open loop needs, and the server gets the rest.
 */
const GENERATOR_NICE = Number(process.env.OVERLOAD_GENERATOR_NICE ?? -10);

/**
 * OVERLOAD_PIN=1: the server (every thread) runs on core 0 only and the load
 * generator on the other cores, so neither takes CPU from the other: what a
 * client on another machine sees of a one-core server. The sustainable rate is
 * measured pinned, so 2× is twice what the pinned server sustains. Without it
 * (the default) both share every core, as on a developer's laptop.
 * Measured pinned (2026-11-23, quick run, 25 ms policy): the generator still
 * lagged 136 ms at p99 on a core of its own (0.53 of it busy, 3,302
 * connections open), so on this machine the client-side p99 is the Node
 * generator's as much as the server's.
 */
const PIN = process.env.OVERLOAD_PIN === '1';

/**
 * Which load generator offers the load: `native` (bench/lib/open_loop.c, built
 * with the machine's C compiler; the default when one is there) or `node`
 * (bench/lib/open_loop.ts, this process). OVERLOAD_GENERATOR picks one.
 * Measured on the 2-core machine (2026-11-25, 2× for 60 s, default policy): the
 * Node generator took 0.67–0.78 of a core, the C one 0.54–0.58 (most of what
 * is left is the kernel's loopback TCP work, charged to the sender). The C one
 * also dates each request at its exact point of the schedule; the Node one
 * dates it at the timer tick that sends it, so a stall of its own event loop
 * did not count in "latency from due".
 */
type Generator = LoadGenerator | NativeLoadGenerator;

function generator(spec: LoadSpec, maxConnections: number): Generator {
  const wanted = process.env.OVERLOAD_GENERATOR ?? 'native';
  const binary = wanted === 'node' ? null : nativeGenerator();
  if (wanted === 'native' && binary === null && process.env.OVERLOAD_GENERATOR) throw new Error('OVERLOAD_GENERATOR=native: no C compiler (cc) built bench/lib/open_loop.c');
  return binary === null ? new LoadGenerator(spec, maxConnections) : new NativeLoadGenerator(binary, spec, maxConnections, GENERATOR_NICE);
}

/** CPU seconds the generator has used: this process's, or the C program's. */
function generatorCpu(gen: Generator): number {
  if (gen instanceof NativeLoadGenerator) return gen.cpuSeconds();
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** Set the CPU affinity of every thread of `pid` (taskset from util-linux); false if it could not. */
function pin(pid: number, cpus: string): boolean {
  try { execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' }); return true; } catch { return false; }
}

export interface OverloadPhase {
  seconds: number;
  offeredRps: number;
  admittedRps: number;
  shedRps: number;
  /** answers other than 2xx and 503, and connections that failed */
  errors: number;
  /** those by status (0: the connection closed before an answer) */
  errorStatuses: Record<string, number>;
  admittedMs: { p50: number; p99: number; max: number };
  /** p99 of the 503 answers' latency: shedding must be fast */
  shedP99Ms: number;
  /** p99 ms between a request being due and the generator writing it (its own lag: no free connection, busy CPU) */
  generatorLagP99Ms: number;
  /** admitted latency from when the request was written (due → answer minus the generator's lag): what the server and the network added */
  admittedFromSendMs: { p50: number; p99: number };
  /** CPU cores (CPU seconds / wall seconds) of the server (front + shards) and of the load generator in this phase */
  serverCores: number;
  generatorCores: number;
}

/** Summed from the server's `shedding` log lines (src/http/admission.ts, one per second while it refuses). */
export interface SheddingLog {
  seconds: number;
  /** refused from the request head: front event-loop lag / target shard(s) queueing delay */
  refusedFrontLag: number;
  refusedShardDelay: number;
  /** refused after the body was parsed, when the shard was reached (ShardPool.send) */
  refusedAfterParse: number;
  /** worst per-second p99 of the front's event-loop lag, and its median over the seconds logged */
  eventLoopLagP99MaxMs: number;
  eventLoopLagP99MedianMs: number;
  /** median over the seconds logged of the front thread's busy share (event-loop utilization; NaN before it was logged) */
  frontBusyMedian: number;
  /** the server's own view of admitted (2xx) requests, head → answer (no socket-buffer or generator time): median and worst of the per-second p99 */
  serverAdmittedP99MedianMs: number;
  serverAdmittedP99MaxMs: number;
  /** mean of the per-second mean shard round trips (send → reply: mailbox + work + group commit), and the worst max */
  shardRoundTripMeanMs: number;
  shardRoundTripMaxMs: number;
}

export interface OverloadRun {
  /** what the run varied: the admission policy */
  policy: string;
  env: Record<string, string>;
  sustainable: { rps: number; p99: number; connections: number; seconds: number };
  overload: OverloadPhase;
  after: OverloadPhase;
  /** ms after the load dropped until every later window had no 503 and admitted p99 < RECOVERED_P99_MS (null: not within the phase) */
  recoveryMs: number | null;
  /** ms after the load dropped until the last 503 (0: none after the drop) */
  sheddingEndedMs: number;
  /** ms after the load dropped until the first request due after it was admitted and answered within RECOVERED_P99_MS */
  firstFastMs: number | null;
  /** nice value the generator ran at during the open loop (the server stays at 0) */
  generatorNice: number;
  /** from the server's shedding lines: during the overload, and after the drop */
  shedding: SheddingLog | null;
  sheddingAfter: SheddingLog | null;
  /** the server's shedding lines as logged (one per second while it refused) */
  sheddingLines: Array<Record<string, unknown>>;
  baseRssBytes: number;
  peakRssBytes: number;
  peakConnections: number;
  /** generator connects that failed before connecting (their requests count as errors, status 0) */
  connectFailures: number;
  acknowledged: number;
  /** acknowledged writes missing when read back: must be 0 */
  lost: number;
  /** stored results beyond the acknowledged ones (requests whose answer never arrived) */
  unacknowledgedStored: number;
}

/**
 * The same open loop against the ideal shedder (bench/raw_server.ts with
 * RAW_ADMIT_RPS): bare uWS that answers 503 + Retry-After from the request
 * handler beyond a fixed rate (a token bucket at logbook's admitted rate) and
 * handles the rest as the raw limit does (JSON.parse, one durable LMDB put).
 * No server built on this stack does less per request, so its admitted p99 is
 * what this machine and this generator allow at that load: when it misses the
 * 100 ms bound too, the miss is the machine's, not logbook's policy.
 */
export interface OverloadFloor {
  /** the run whose offered and admitted rates it repeats */
  policy: string;
  admitRps: number;
  overload: OverloadPhase;
  generatorNice: number;
  peakConnections: number;
}

export interface OverloadResult { shards: number; runs: OverloadRun[]; floor?: OverloadFloor | null }

function phase(samples: Sample[], from: number, to: number, offeredRps: number, cpu: { server: number; generator: number }): OverloadPhase {
  const inside = samples.filter((s) => s.due >= from && s.due < to);
  const seconds = (to - from) / 1000;
  const admitted = inside.filter((s) => s.status >= 200 && s.status < 300).map((s) => s.latency);
  const shedSamples = inside.filter((s) => s.status === 503);
  const shed = shedSamples.length;
  return {
    seconds, offeredRps, admittedRps: admitted.length / seconds, shedRps: shed / seconds,
    errors: inside.length - admitted.length - shed,
    errorStatuses: inside.reduce<Record<string, number>>((by, s) => {
      if ((s.status < 200 || s.status >= 300) && s.status !== 503) by[s.status] = (by[s.status] ?? 0) + 1;
      return by;
    }, {}),
    admittedMs: { p50: percentile(admitted, 0.5), p99: percentile(admitted, 0.99), max: admitted.reduce((a, b) => Math.max(a, b), -Infinity) },
    shedP99Ms: percentile(shedSamples.map((s) => s.latency), 0.99),
    generatorLagP99Ms: percentile(inside.map((s) => s.lag), 0.99),
    admittedFromSendMs: {
      p50: percentile(inside.filter((s) => s.status >= 200 && s.status < 300).map((s) => s.latency - s.lag), 0.5),
      p99: percentile(inside.filter((s) => s.status >= 200 && s.status < 300).map((s) => s.latency - s.lag), 0.99),
    },
    serverCores: cpu.server / seconds, generatorCores: cpu.generator / seconds,
  };
}

/** The server's `shedding` lines written between two points of its output. */
function sheddingLines(output: string): Array<Record<string, number | number[]> & { time: string }> {
  const lines: Array<Record<string, number | number[]> & { time: string }> = [];
  for (const line of output.split('\n')) {
    if (!line.includes('"msg":"shedding"')) continue;
    try { lines.push(JSON.parse(line)); } catch { /* partial line */ }
  }
  return lines;
}

/**
 * Summary of the `shedding` lines about [from, to) (Unix ms). A line covers the
 * `seconds` before its time; `whole`: only lines whose span starts at or after
 * `from`. The after-drop summary needs that: the first line after the drop
 * mostly counts the flood's last second (up to ~13 k refusals at 2×, read as
 * refusals at half load in earlier runs).
 */
function sheddingLog(all: ReturnType<typeof sheddingLines>, from: number, to: number, whole = false): SheddingLog | null {
  const lines = all.filter((l) => {
    const t = Date.parse(l.time);
    const start = t - 1000 * ((l.seconds as number) || 1);
    return t > from && t <= to + 500 && (!whole || start >= from - 50);
  });
  if (!lines.length) return null;
  const sum = (k: string) => lines.reduce((a, l) => a + ((l[k] as number) ?? 0), 0);
  const p99s = lines.map((l) => l.eventLoopLagP99Ms as number);
  const rtMeans = lines.map((l) => ((l.shardRoundTripMeanMs as number[] | undefined) ?? [0]).reduce((a, b) => Math.max(a, b), 0));
  const rtMaxes = lines.map((l) => ((l.shardRoundTripMaxMs as number[] | undefined) ?? [0]).reduce((a, b) => Math.max(a, b), 0));
  return {
    seconds: lines.length, refusedFrontLag: sum('refusedFrontLag'), refusedShardDelay: sum('refusedShardDelay'), refusedAfterParse: sum('refusedAfterParse'),
    eventLoopLagP99MaxMs: Math.max(...p99s), eventLoopLagP99MedianMs: percentile(p99s, 0.5),
    frontBusyMedian: percentile(lines.map((l) => (typeof l.frontBusy === 'number' ? l.frontBusy : NaN)), 0.5),
    serverAdmittedP99MedianMs: percentile(lines.map((l) => l.admittedP99Ms as number), 0.5), serverAdmittedP99MaxMs: Math.max(...lines.map((l) => l.admittedP99Ms as number)),
    shardRoundTripMeanMs: rtMeans.reduce((a, b) => a + b, 0) / rtMeans.length, shardRoundTripMaxMs: Math.max(...rtMaxes),
  };
}

/** ms from `from` until the first request due after it was admitted and answered within the bound. */
function firstFast(samples: Sample[], from: number, to: number): number | null {
  let first: number | null = null;
  for (const s of samples) {
    if (s.due < from || s.due >= to || s.status < 200 || s.status >= 300 || s.latency >= RECOVERED_P99_MS) continue;
    if (first === null || s.due < first) first = s.due;
  }
  return first === null ? null : first - from;
}

/** ms from `from` until every later window is calm (no 503, admitted p99 under the bound). */
function recovery(samples: Sample[], from: number, to: number): number | null {
  const windows: Sample[][] = [];
  for (const s of samples) {
    if (s.due < from || s.due >= to) continue;
    (windows[Math.floor((s.due - from) / WINDOW_MS)] ??= []).push(s);
  }
  let calmSince: number | null = null;
  for (let w = 0; w < windows.length; w++) {
    const ws = windows[w] ?? [];
    const admitted = ws.filter((s) => s.status >= 200 && s.status < 300).map((s) => s.latency);
    const calm = ws.every((s) => s.status !== 503 && s.status !== 0) && (admitted.length === 0 || percentile(admitted, 0.99) < RECOVERED_P99_MS);
    if (!calm) calmSince = null;
    else if (calmSince === null) calmSince = w * WINDOW_MS;
  }
  return calmSince;
}

async function readBack(url: string, tasks: number[]): Promise<Set<number>> {
  const ids = new Set<number>();
  for (const task of tasks) {
    // the `next` links: past the offset cap (LIMITS) they carry a cursor, and a full run admits more than it
    for (let next: string | null = `${url}/api/v1/results?task=${task}&limit=1000`; next !== null;) {
      const r = await fetch(new URL(next, url));
      if (r.status !== 200) throw new Error(`read back: GET ${next} → ${r.status} ${await r.text()}`);
      const page = (await r.json()) as { results: Array<{ id: number }>; next: string | null };
      for (const row of page.results) ids.add(row.id);
      next = page.next;
    }
  }
  return ids;
}

const seconds = (ctx: Context) => (ctx.quick ? { sustain: 3, overload: 10, after: 6, warmup: 1 } : { sustain: 8, overload: 60, after: 15, warmup: 2 });

/** Pin the server to core 0 and this process to the others (OVERLOAD_PIN=1); the undo, or null when not pinned. */
function pinBoth(ctx: Context, label: string, serverPid: number): (() => void) | null {
  if (!PIN) return null;
  const cores = availableParallelism();
  // the server's threads all exist once it listens (shard workers, lmdb-js's); later ones inherit the mask
  if (cores > 1 && pin(serverPid, '0') && pin(process.pid, `1-${cores - 1}`)) {
    ctx.step(`${label}: server pinned to core 0, generator to core(s) 1-${cores - 1}`);
    return () => { pin(process.pid, `0-${cores - 1}`); };
  }
  ctx.note(`${label}: OVERLOAD_PIN=1 but the processes could not be pinned (taskset, ${cores} cores): they share every core`);
  return null;
}

/**
 * Run the open loop at `rate(t)` for `secs` seconds with this process at
 * GENERATOR_NICE: the samples, and both sides' CPU seconds before and after
 * `splitAt` seconds (the end of the overload phase).
 */
async function offer(gen: Generator, server: Running, rate: (t: number) => number, secs: number, splitAt: number) {
  const samples: Sample[] = [];
  const native = gen instanceof NativeLoadGenerator;
  const niceBefore = getPriority(0);
  // the generator gets ahead of the server: this thread (the server was spawned before), or the C program as it starts
  if (!native) try { setPriority(0, GENERATOR_NICE); } catch { /* not allowed: runs at the same priority */ }
  const cpu0 = { server: server.cpuSeconds(), generator: 0 };
  let cpu1 = cpu0;
  let generatorNice = getPriority(0);
  const cpuTimer = setTimeout(() => { cpu1 = { server: server.cpuSeconds(), generator: generatorCpu(gen) }; }, splitAt * 1000);
  const wall0 = Date.now();
  let t0 = performance.now();
  const genStart = native ? 0 : generatorCpu(gen);
  const loop = gen.openLoop(rate, secs, (s) => { samples.push(s); });
  if (native) setTimeout(() => { generatorNice = gen.niceOf() ?? generatorNice; }, 100);
  const { settled, start } = await loop as { settled: Promise<void>; start?: number };
  // the C program's schedule starts a few ms after it is spawned: phases count from its t = 0
  if (start !== undefined) t0 = start;
  const cpu2 = { server: server.cpuSeconds(), generator: generatorCpu(gen) };
  clearTimeout(cpuTimer);
  if (!native) try { setPriority(0, niceBefore); } catch { /* lowering is one-way without privileges */ }
  let giveUp: NodeJS.Timeout | undefined;
  await Promise.race([settled, new Promise((r) => { giveUp = setTimeout(r, 120_000); })]);
  clearTimeout(giveUp); // else the process lingers two minutes after the report
  return {
    samples, t0, wall0, generatorNice,
    cpuBefore: { server: cpu1.server - cpu0.server, generator: cpu1.generator - genStart },
    cpuAfter: { server: cpu2.server - cpu1.server, generator: cpu2.generator - cpu1.generator },
  };
}

/** The ideal shedder at `offeredRps`, admitting `admitRps` (see OverloadFloor). */
async function floorRun(ctx: Context, policy: string, offeredRps: number, admitRps: number): Promise<OverloadFloor> {
  const secs = seconds(ctx);
  ctx.step(`overload floor: bare uWS + LMDB admitting ${fmt.int(admitRps)}/s (token bucket), 503 at the head beyond; offering ${fmt.int(offeredRps)}/s for ${secs.overload} s`);
  const raw = await startRaw(undefined, { RAW_ADMIT_RPS: String(Math.round(admitRps)) });
  const unpin = pinBoth(ctx, 'overload floor', raw.pid);
  let gen: Generator | null = null;
  try {
    // the raw server stores any JSON: the same result body as logbook's run, with made-up parents
    gen = generator({ port: Number(new URL(raw.url).port), path: '/', bodies: [resultBody({ playbook: 1, play: 1, file: 1, task: 1, host: 1 }, loopedResultContent())] }, 4000);
    await gen.closedLoop(32, secs.warmup);
    const o = await offer(gen, raw, () => offeredRps, secs.overload, secs.overload);
    const overload = phase(o.samples, o.t0, o.t0 + secs.overload * 1000, offeredRps, o.cpuBefore);
    ctx.step(`overload floor: admitted ${fmt.int(overload.admittedRps)}/s (p50 ${fmt.ms(overload.admittedMs.p50)} / p99 ${fmt.ms(overload.admittedMs.p99)} ms, from the write ${fmt.ms(overload.admittedFromSendMs.p99)} ms), shed ${fmt.int(overload.shedRps)}/s (p99 ${fmt.ms(overload.shedP99Ms)} ms), generator lag p99 ${fmt.ms(overload.generatorLagP99Ms)} ms, cores: server ${overload.serverCores.toFixed(2)}, generator ${overload.generatorCores.toFixed(2)}`);
    return { policy, admitRps, overload, generatorNice: o.generatorNice, peakConnections: gen.peakConnections };
  } finally {
    gen?.close();
    await raw.stop();
    unpin?.();
  }
}

async function runOnce(ctx: Context, policy: string, env: Record<string, string>): Promise<OverloadRun> {
  const secs = seconds(ctx);
  ctx.step(`overload [${policy}]: starting a fresh logbook (${ctx.shards} shard(s), durability flush)`);
  const lb: Running = await startLogbook({ env: { LOGBOOK_SHARDS: String(ctx.shards), ...env } });
  let gen: Generator | null = null;
  let rssTimer: NodeJS.Timeout | null = null;
  const unpin = pinBoth(ctx, `overload [${policy}]`, lb.pid);
  try {
    const tree = await createTree(lb.url);
    const tasks = [tree.task];
    for (let i = 1; i < TASKS; i++) {
      const r = await fetch(`${lb.url}/api/v1/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ playbook: tree.playbook, play: tree.play, file: tree.file, name: `packages ${i}`, action: 'ansible.builtin.apt', lineno: 4 + i, handler: false }) });
      if (r.status !== 201) throw new Error(`creating task ${i}: ${r.status} ${await r.text()}`);
      tasks.push(((await r.json()) as { id: number }).id);
    }
    const content = loopedResultContent();
    const acked = new Set<number>();
    gen = generator({
      port: Number(new URL(lb.url).port), path: '/api/v1/results',
      bodies: tasks.map((task) => resultBody({ ...tree, task }, content)),
      onAck: (body) => { const m = /"id":(\d+)/.exec(body); if (m) acked.add(Number(m[1])); },
    }, 4000);

    // 1. sustainable rate: the best closed-loop throughput at 32 or 128 connections
    //    (group commit takes more per fsync with more writers waiting)
    await gen.closedLoop(32, secs.warmup);
    let sustainable = { rps: 0, p99: NaN, connections: 0, seconds: secs.sustain };
    // OVERLOAD_SUSTAINABLE_RPS: take this as the sustainable rate (offer twice it) instead of measuring it,
    // so that runs compared back to back on a busy machine get the same offered load
    const fixed = Number(process.env.OVERLOAD_SUSTAINABLE_RPS ?? 0);
    if (fixed > 0) sustainable = { rps: fixed, p99: NaN, connections: 0, seconds: 0 };
    for (const connections of fixed > 0 ? [] : [32, 128]) {
      const ok = (await gen.closedLoop(connections, secs.sustain)).filter((s) => s.status === 201);
      if (ok.length / secs.sustain > sustainable.rps) sustainable = { rps: ok.length / secs.sustain, p99: percentile(ok.map((s) => s.latency), 0.99), connections, seconds: secs.sustain };
    }
    ctx.step(fixed > 0 ? `overload [${policy}]: sustainable taken as ${fmt.int(fixed)} writes/s (OVERLOAD_SUSTAINABLE_RPS)`
      : `overload [${policy}]: sustainable ≈ ${fmt.int(sustainable.rps)} writes/s (closed loop, ${sustainable.connections} conn, p99 ${fmt.ms(sustainable.p99)} ms)`);
    await lb.drain();

    // 2. twice that, open loop; 3. then half of it
    const baseRssBytes = lb.rssBytes();
    let peakRssBytes = baseRssBytes;
    rssTimer = setInterval(() => { peakRssBytes = Math.max(peakRssBytes, lb.rssBytes()); }, 100);
    const high = 2 * sustainable.rps, low = 0.5 * sustainable.rps;
    ctx.step(`overload [${policy}]: offering ${fmt.int(high)} writes/s for ${secs.overload} s, then ${fmt.int(low)}/s for ${secs.after} s (open loop)`);
    const outputBefore = lb.output().length;
    const { samples, t0, wall0, generatorNice, cpuBefore, cpuAfter } = await offer(gen, lb, (t) => (t < secs.overload ? high : low), secs.overload + secs.after, secs.overload);
    const t1 = t0 + secs.overload * 1000, t2 = t1 + secs.after * 1000;
    clearInterval(rssTimer); rssTimer = null;
    peakRssBytes = Math.max(peakRssBytes, lb.rssBytes());
    const overload = phase(samples, t0, t1, high, cpuBefore);
    const after = phase(samples, t1, t2, low, cpuAfter);
    const recoveryMs = recovery(samples, t1, t2);
    const firstFastMs = firstFast(samples, t1, t2);
    const lines = sheddingLines(lb.output().slice(outputBefore));
    const wall1 = wall0 + secs.overload * 1000, wall2 = wall1 + secs.after * 1000;
    const shedding = sheddingLog(lines, wall0, wall1);
    const sheddingAfter = sheddingLog(lines, wall1, wall2, true);
    const sheddingEndedMs = samples.reduce((last, x) => (x.due >= t1 && x.due < t2 && x.status === 503 ? Math.max(last, x.due - t1) : last), 0);
    const peakConnections = gen.peakConnections;
    const connectFailures = gen.connectFailures;
    gen.close(); gen = null;
    await lb.drain();

    // 4. every acknowledged write is there
    let stored: Set<number>;
    try {
      stored = await readBack(lb.url, tasks);
    } catch (err) {
      // say why (undici's "fetch failed" hides its cause) and what the server last logged
      const cause = (err as { cause?: unknown }).cause;
      const tail = lb.output().split('\n').filter((l) => !l.includes('"msg":"shedding"')).slice(-8).join('\n');
      throw new Error(`read back failed: ${String(err)}${cause ? ` (${String(cause)})` : ''}; the server's last log lines:\n${tail}`);
    }
    let lost = 0;
    for (const id of acked) if (!stored.has(id)) lost++;
    const run: OverloadRun = {
      policy: unpin ? `${policy}, pinned: server on core 0, generator on 1-${availableParallelism() - 1}` : policy, env, sustainable, overload, after, recoveryMs, sheddingEndedMs, firstFastMs, generatorNice, shedding, sheddingAfter,
      sheddingLines: lines.map(({ level: _l, pid: _p, msg: _m, ...rest }) => rest), baseRssBytes, peakRssBytes, peakConnections, connectFailures,
      acknowledged: acked.size, lost, unacknowledgedStored: stored.size - (acked.size - lost),
    };
    ctx.step(`overload [${policy}]: at 2× admitted ${fmt.int(overload.admittedRps)}/s (p50 ${fmt.ms(overload.admittedMs.p50)} / p99 ${fmt.ms(overload.admittedMs.p99)} / max ${fmt.ms(overload.admittedMs.max)} ms), shed ${fmt.int(overload.shedRps)}/s (p99 ${fmt.ms(overload.shedP99Ms)} ms), ${overload.errors} errors${overload.errors ? ` ${JSON.stringify(overload.errorStatuses)}` : ''}, generator lag p99 ${fmt.ms(overload.generatorLagP99Ms)} ms, ${peakConnections} conn${connectFailures ? ` (${connectFailures} failed to connect)` : ''}; ` +
      `RSS ${fmt.mib(baseRssBytes)} → peak ${fmt.mib(peakRssBytes)}; last 503 ${fmt.int(sheddingEndedMs)} ms and p99 < ${RECOVERED_P99_MS} ms ${recoveryMs === null ? 'not within the phase' : `${fmt.int(recoveryMs)} ms`} after the drop; ` +
      `${fmt.int(acked.size)} acknowledged, ${lost} lost, ${run.unacknowledgedStored} stored without an answer`);
    ctx.step(`overload [${policy}]: admitted p50/p99 from the write ${fmt.ms(overload.admittedFromSendMs.p50)} / ${fmt.ms(overload.admittedFromSendMs.p99)} ms; cores at 2×: server ${overload.serverCores.toFixed(2)}, generator ${overload.generatorCores.toFixed(2)} (nice ${generatorNice}); ` +
      `first fast admit ${firstFastMs === null ? 'none' : `${fmt.int(firstFastMs)} ms`} after the drop; ` +
      (shedding ? `server log over ${shedding.seconds} s: refused at the head ${fmt.int(shedding.refusedFrontLag)} (front lag) + ${fmt.int(shedding.refusedShardDelay)} (shard delay), after parsing ${fmt.int(shedding.refusedAfterParse)}; front event-loop lag p99 median ${fmt.ms(shedding.eventLoopLagP99MedianMs)} / worst ${fmt.ms(shedding.eventLoopLagP99MaxMs)} ms, front busy ${Number.isNaN(shedding.frontBusyMedian) ? '–' : shedding.frontBusyMedian.toFixed(2)} (median); server-side admitted p99 (head → answer) median ${fmt.ms(shedding.serverAdmittedP99MedianMs)} / worst ${fmt.ms(shedding.serverAdmittedP99MaxMs)} ms; shard round trip mean ${fmt.ms(shedding.shardRoundTripMeanMs)} / max ${fmt.ms(shedding.shardRoundTripMaxMs)} ms` : 'no shedding lines logged') +
      `; after the drop: ${fmt.int(after.shedRps * after.seconds)} of ${fmt.int(after.offeredRps * after.seconds)} offered requests refused (${(100 * after.shedRps / after.offeredRps).toFixed(1)} %), server ${after.serverCores.toFixed(2)} cores, ${sheddingAfter ? `refused ${fmt.int(sheddingAfter.refusedFrontLag)} (front lag) + ${fmt.int(sheddingAfter.refusedShardDelay)} (shard) + ${fmt.int(sheddingAfter.refusedAfterParse)} (after parsing), lag p99 median ${fmt.ms(sheddingAfter.eventLoopLagP99MedianMs)} ms, shard round trip mean ${fmt.ms(sheddingAfter.shardRoundTripMeanMs)} ms` : 'nothing refused'}`);
    if (lost > 0) ctx.note(`overload [${policy}]: ${lost} acknowledged writes were missing when read back`);
    return run;
  } finally {
    if (rssTimer) clearInterval(rssTimer);
    gen?.close();
    await lb.stop();
    unpin?.();
  }
}

/** Admission policies compared (LOGBOOK_SHARD_QUEUE_DELAY; OVERLOAD_DELAYS=0,50 picks some, or other delays in ms). */
const POLICIES: Array<[string, Record<string, string>]> = [
  ['queue length only (LOGBOOK_SHARD_QUEUE_DELAY=0)', { LOGBOOK_SHARD_QUEUE_DELAY: '0' }],
  ['queueing delay 10 ms (default)', { LOGBOOK_SHARD_QUEUE_DELAY: '10' }],
  ['queueing delay 25 ms', { LOGBOOK_SHARD_QUEUE_DELAY: '25' }],
];

export async function overloadScenario(ctx: Context): Promise<OverloadResult> {
  const pick = process.env.OVERLOAD_DELAYS?.split(',').map((d) => d.trim()).filter((d) => /^\d+$/.test(d));
  // A picked delay that is not one of the three compared by default runs as its own policy.
  const policies: Array<[string, Record<string, string>]> = pick?.length
    ? pick.map((d) => POLICIES.find(([, env]) => env.LOGBOOK_SHARD_QUEUE_DELAY === d) ?? [`queueing delay ${d} ms`, { LOGBOOK_SHARD_QUEUE_DELAY: d }])
    : POLICIES;
  const runs: OverloadRun[] = [];
  for (const [policy, env] of policies) runs.push(await runOnce(ctx, policy, env));
  // the floor repeats the default policy's load (or the only one run); OVERLOAD_FLOOR=0 skips it
  const base = runs.find((r) => r.policy.includes('default')) ?? runs[0];
  const floor = base && process.env.OVERLOAD_FLOOR !== '0' ? await floorRun(ctx, base.policy, base.overload.offeredRps, base.overload.admittedRps) : null;
  return { shards: ctx.shards, runs, floor };
}
