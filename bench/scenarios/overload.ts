// Scenario: overload. How logbook behaves when offered more writes than it can
// take: find the sustainable ingest rate (closed loop, 32 connections), then
// offer twice that with an open-loop generator (arrivals at a fixed rate,
// whatever the server does) and measure what it sheds (503 + Retry-After), the
// latency of what it admits, its peak memory, whether any acknowledged write is
// lost (every acknowledged id is read back), and how fast latency and shedding
// return to normal once the offered load drops to half the sustainable rate.
// Run once per admission policy (LOGBOOK_SHARD_QUEUE_DELAY: 0 = queue length
// only, the default; 200 ms; 50 ms), so the report shows the trade-off.
import type { Context } from '../lib/context.js';
import { fmt } from '../lib/context.js';
import { LoadGenerator, percentile, type Sample } from '../lib/open_loop.js';
import { createTree, loopedResultContent, resultBody } from '../lib/payloads.js';
import { startLogbook, type Running } from '../lib/servers.js';

/** Admitted latency the recovery is judged by (ms). */
export const RECOVERED_P99_MS = 100;
const WINDOW_MS = 250;
const TASKS = 16; // results spread over tasks so each read-back list stays under the offset cap

export interface OverloadPhase {
  seconds: number;
  offeredRps: number;
  admittedRps: number;
  shedRps: number;
  /** answers other than 2xx and 503, and connections that failed */
  errors: number;
  admittedMs: { p50: number; p99: number; max: number };
  /** p99 of the 503 answers' latency: shedding must be fast */
  shedP99Ms: number;
  /** p99 ms between a request being due and the generator writing it (its own lag: no free connection, busy CPU) */
  generatorLagP99Ms: number;
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
  baseRssBytes: number;
  peakRssBytes: number;
  peakConnections: number;
  acknowledged: number;
  /** acknowledged writes missing when read back: must be 0 */
  lost: number;
  /** stored results beyond the acknowledged ones (requests whose answer never arrived) */
  unacknowledgedStored: number;
}

export interface OverloadResult { shards: number; runs: OverloadRun[] }

function phase(samples: Sample[], from: number, to: number, offeredRps: number): OverloadPhase {
  const inside = samples.filter((s) => s.due >= from && s.due < to);
  const seconds = (to - from) / 1000;
  const admitted = inside.filter((s) => s.status >= 200 && s.status < 300).map((s) => s.latency);
  const shedSamples = inside.filter((s) => s.status === 503);
  const shed = shedSamples.length;
  return {
    seconds, offeredRps, admittedRps: admitted.length / seconds, shedRps: shed / seconds,
    errors: inside.length - admitted.length - shed,
    admittedMs: { p50: percentile(admitted, 0.5), p99: percentile(admitted, 0.99), max: admitted.reduce((a, b) => Math.max(a, b), -Infinity) },
    shedP99Ms: percentile(shedSamples.map((s) => s.latency), 0.99),
    generatorLagP99Ms: percentile(inside.map((s) => s.lag), 0.99),
  };
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
    for (let offset = 0; ; offset += 1000) {
      const r = await fetch(`${url}/api/v1/results?task=${task}&limit=1000&offset=${offset}`);
      if (r.status !== 200) throw new Error(`read back: GET results?task=${task}&offset=${offset} → ${r.status} ${await r.text()}`);
      const page = (await r.json()) as { results: Array<{ id: number }>; next: string | null };
      for (const row of page.results) ids.add(row.id);
      if (page.next === null) break;
    }
  }
  return ids;
}

async function runOnce(ctx: Context, policy: string, env: Record<string, string>): Promise<OverloadRun> {
  const secs = ctx.quick ? { sustain: 3, overload: 10, after: 6, warmup: 1 } : { sustain: 8, overload: 60, after: 15, warmup: 2 };
  ctx.step(`overload [${policy}]: starting a fresh logbook (${ctx.shards} shard(s), durability flush)`);
  const lb: Running = await startLogbook({ env: { LOGBOOK_SHARDS: String(ctx.shards), ...env } });
  let gen: LoadGenerator | null = null;
  let rssTimer: NodeJS.Timeout | null = null;
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
    gen = new LoadGenerator({
      port: Number(new URL(lb.url).port), path: '/api/v1/results',
      bodies: tasks.map((task) => resultBody({ ...tree, task }, content)),
      onAck: (body) => { const m = /"id":(\d+)/.exec(body); if (m) acked.add(Number(m[1])); },
    }, 4000);

    // 1. sustainable rate: the best closed-loop throughput at 32 or 128 connections
    //    (group commit takes more per fsync with more writers waiting)
    await gen.closedLoop(32, secs.warmup);
    let sustainable = { rps: 0, p99: NaN, connections: 0, seconds: secs.sustain };
    for (const connections of [32, 128]) {
      const ok = (await gen.closedLoop(connections, secs.sustain)).filter((s) => s.status === 201);
      if (ok.length / secs.sustain > sustainable.rps) sustainable = { rps: ok.length / secs.sustain, p99: percentile(ok.map((s) => s.latency), 0.99), connections, seconds: secs.sustain };
    }
    ctx.step(`overload [${policy}]: sustainable ≈ ${fmt.int(sustainable.rps)} writes/s (closed loop, ${sustainable.connections} conn, p99 ${fmt.ms(sustainable.p99)} ms)`);
    await lb.drain();

    // 2. twice that, open loop; 3. then half of it
    const baseRssBytes = lb.rssBytes();
    let peakRssBytes = baseRssBytes;
    rssTimer = setInterval(() => { peakRssBytes = Math.max(peakRssBytes, lb.rssBytes()); }, 100);
    const samples: Sample[] = [];
    const high = 2 * sustainable.rps, low = 0.5 * sustainable.rps;
    ctx.step(`overload [${policy}]: offering ${fmt.int(high)} writes/s for ${secs.overload} s, then ${fmt.int(low)}/s for ${secs.after} s (open loop)`);
    const t0 = performance.now();
    const pending = await gen.openLoop((t) => (t < secs.overload ? high : low), secs.overload + secs.after, (s) => { samples.push(s); });
    const t1 = t0 + secs.overload * 1000, t2 = t1 + secs.after * 1000;
    await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 120_000))]);
    clearInterval(rssTimer); rssTimer = null;
    peakRssBytes = Math.max(peakRssBytes, lb.rssBytes());
    const overload = phase(samples, t0, t1, high);
    const after = phase(samples, t1, t2, low);
    const recoveryMs = recovery(samples, t1, t2);
    const sheddingEndedMs = samples.reduce((last, x) => (x.due >= t1 && x.due < t2 && x.status === 503 ? Math.max(last, x.due - t1) : last), 0);
    const peakConnections = gen.peakConnections;
    gen.close(); gen = null;
    await lb.drain();

    // 4. every acknowledged write is there
    const stored = await readBack(lb.url, tasks);
    let lost = 0;
    for (const id of acked) if (!stored.has(id)) lost++;
    const run: OverloadRun = {
      policy, env, sustainable, overload, after, recoveryMs, sheddingEndedMs, baseRssBytes, peakRssBytes, peakConnections,
      acknowledged: acked.size, lost, unacknowledgedStored: stored.size - (acked.size - lost),
    };
    ctx.step(`overload [${policy}]: at 2× admitted ${fmt.int(overload.admittedRps)}/s (p50 ${fmt.ms(overload.admittedMs.p50)} / p99 ${fmt.ms(overload.admittedMs.p99)} / max ${fmt.ms(overload.admittedMs.max)} ms), shed ${fmt.int(overload.shedRps)}/s (p99 ${fmt.ms(overload.shedP99Ms)} ms), ${overload.errors} errors, generator lag p99 ${fmt.ms(overload.generatorLagP99Ms)} ms, ${peakConnections} conn; ` +
      `RSS ${fmt.mib(baseRssBytes)} → peak ${fmt.mib(peakRssBytes)}; last 503 ${fmt.int(sheddingEndedMs)} ms and p99 < ${RECOVERED_P99_MS} ms ${recoveryMs === null ? 'not within the phase' : `${fmt.int(recoveryMs)} ms`} after the drop; ` +
      `${fmt.int(acked.size)} acknowledged, ${lost} lost, ${run.unacknowledgedStored} stored without an answer`);
    if (lost > 0) ctx.note(`overload [${policy}]: ${lost} acknowledged writes were missing when read back`);
    return run;
  } finally {
    if (rssTimer) clearInterval(rssTimer);
    gen?.close();
    await lb.stop();
  }
}

export async function overloadScenario(ctx: Context): Promise<OverloadResult> {
  const runs: OverloadRun[] = [];
  runs.push(await runOnce(ctx, 'queue length only (default, LOGBOOK_SHARD_QUEUE_DELAY=0)', { LOGBOOK_SHARD_QUEUE_DELAY: '0' }));
  runs.push(await runOnce(ctx, '+ queueing delay 200 ms', { LOGBOOK_SHARD_QUEUE_DELAY: '200' }));
  runs.push(await runOnce(ctx, '+ queueing delay 50 ms', { LOGBOOK_SHARD_QUEUE_DELAY: '50' }));
  return { shards: ctx.shards, runs };
}
