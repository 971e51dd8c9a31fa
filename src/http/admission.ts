// Admission control at the front (issue #11, overload): decide whether to take a
// request the moment its head arrives, before its body is read, parsed and
// validated, so a refused request costs almost nothing (a 503 + Retry-After
// written from the request handler; uWS skips the unread body and keeps the
// connection).
//
// Two signals, both queueing delays (CoDel's idea: a queue that stays above a
// target delay for an interval is a standing queue, not a burst):
//  - the front's own event-loop lag, probed by a timer: under overload every
//    request waits in the socket buffers for a whole loop iteration, which no
//    shard queue shows;
//  - the queueing delay of the target shard(s), measured by the pool
//    (ShardPool.overloaded: how long its oldest unanswered request has waited,
//    kept above the bound for an interval, and the queue length cap).
// A single long iteration (a GC pause, one big page) does not shed: the lag
// must stay above its bound for LAG_INTERVAL_MS, with requests in flight.
import { createHistogram, monitorEventLoopDelay, type IntervalHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { busyShareMeter, delayBeyondMs } from '../event_loop.js';
import { LIMITS } from '../limits.js';
import { log } from '../log.js';
import { HTTP } from '../metrics.js';
import type { Shards } from '../shard/shards.js';

/** ms between lag probes */
const PROBE_MS = 10;
/** lag above the bound for this long (ms) counts as a standing queue */
const LAG_INTERVAL_MS = 100;
/** the front's lag bound is this fraction of the shard delay bound (both delays add up in a request's latency) … */
const LAG_SHARE = 0.5;
/** … but never below this (ms): timers on a busy machine fire a few ms late anyway */
const LAG_FLOOR_MS = 10;
/**
 * The front's lag sheds only while its thread was busy for at least this share
 * of the last BUSY_WINDOW_PROBES probes (~0.5 s; event-loop utilization, GC
 * included). Under a flood that the front cannot keep up with it is busy
 * 0.9–1.0 of the time; at half the load after one, ~0.6, and a GC pause of the
 * front's (or a burst of replies after a shard's) then lagged it 80–150 ms for
 * long enough to refuse 1–2 % of the light load for seconds (bench overload),
 * which refusing does not cure: the front was not the bottleneck.
 */
const LAG_BUSY_SHARE = 0.85;
const BUSY_WINDOW_PROBES = 50;
/** ms between samples of the lag histogram the `shedding` line reports (Node records the interval plus the delay) */
const LAG_RESOLUTION_MS = 10;
/** how often (ms) the `shedding` log line may be written while requests are refused */
const REPORT_MS = 1000;
/**
 * Probes in a row that found nothing in flight before the probe goes to sleep
 * (1 s): an idle server need not wake 100 times a second for it (with the lag
 * histogram of /metrics, src/default_metrics.ts, such timers were most of its
 * idle CPU). The next request that asks shed() wakes it; lag only counts with
 * requests in flight.
 */
const IDLE_PROBES = 100;

export type Target = 'front' | 'every' | number;

export class Admission {
  /** ms of event-loop lag the front tolerates (0: off) */
  readonly lagBoundMs: number;
  /** last probe's lag (ms) */
  lagMs = 0;
  /** performance.now() since when every probe saw lag above the bound (null: not now) */
  private highSince: number | null = null;
  private expected = 0;
  /** the lag probe; null while asleep (or stopped) */
  private timer: NodeJS.Timeout | null = null;
  /** consecutive probes with nothing in flight */
  private idleProbes = 0;
  /** event-loop utilization (cumulative active and idle ms) at each of the last BUSY_WINDOW_PROBES probes, a ring */
  private readonly activeAt = new Float64Array(BUSY_WINDOW_PROBES);
  private readonly idleAt = new Float64Array(BUSY_WINDOW_PROBES);
  private busyAt = 0;
  /** the front thread's busy share over the ring (since waking, until it is full) */
  private busyShareNow = 0;
  private readonly histogram: IntervalHistogram;
  /** µs from request head to answer of the 2xx answers since the last report (the server's share of admitted latency) */
  private readonly answered: RecordableHistogram = createHistogram();
  private reportTimer: NodeJS.Timeout | null = null;
  // counters since start-up (and since the last report)
  shedByLag = 0;
  shedByShard = 0;
  admitted = 0;
  private reported = { byLag: 0, byShard: 0, admitted: 0, poolLength: 0, poolDelay: 0, headLength: 0 };
  /** the front thread's busy share since the last report */
  private readonly busyShare = busyShareMeter();

  constructor(delayBoundMs: number, private readonly pool: () => Shards | undefined) {
    this.lagBoundMs = delayBoundMs > 0 ? Math.max(LAG_FLOOR_MS, delayBoundMs * LAG_SHARE) : 0;
    this.histogram = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS });
  }

  /** start() was called and stop() was not: the report runs, the probe may be asleep */
  private get running(): boolean { return this.reportTimer !== null; }

  start(): void {
    if (this.running) return;
    HTTP.onFinish = (status, seconds) => { if (status < 300) this.answered.record(Math.max(1, Math.round(seconds * 1e6))); };
    this.wake();
    this.reportTimer = setInterval(() => this.report(), REPORT_MS);
    this.reportTimer.unref();
  }

  stop(): void {
    this.sleep();
    if (this.reportTimer) clearInterval(this.reportTimer);
    this.reportTimer = null;
    HTTP.onFinish = null;
  }

  /** Probe the loop's lag (again): a request arrived, or the server started. */
  private wake(): void {
    if (this.timer !== null) return;
    this.idleProbes = 0;
    // every slot starts at the wake-up: the share is taken over the time since, until the ring is full
    const { active, idle } = performance.eventLoopUtilization();
    this.activeAt.fill(active);
    this.idleAt.fill(idle);
    this.busyAt = 0;
    this.busyShareNow = 0;
    this.histogram.enable();
    this.expected = performance.now() + PROBE_MS;
    this.timer = setInterval(() => this.probe(), PROBE_MS);
    this.timer.unref();
  }

  /** Stop probing: nothing is in flight, so there is no lag to act on. */
  private sleep(): void {
    if (this.timer === null) return;
    clearInterval(this.timer);
    this.timer = null;
    this.histogram.disable();
    this.highSince = null;
    this.lagMs = 0;
  }

  /** Nothing in flight at the front or at the shards: no lag could delay a request. */
  private idle(): boolean {
    return HTTP.inFlight === 0 && (this.pool()?.inFlight ?? 0) === 0;
  }

  private probe(): void {
    const now = performance.now();
    this.lagMs = Math.max(0, now - this.expected);
    this.expected = now + PROBE_MS;
    if (this.lagBoundMs === 0 || this.lagMs <= this.lagBoundMs) this.highSince = null;
    else this.highSince ??= now;
    // the busy share over the ring: this probe's cumulative figures against the oldest slot's
    const { active, idle } = performance.eventLoopUtilization();
    const at = this.busyAt;
    const busy = active - this.activeAt[at]!, total = busy + idle - this.idleAt[at]!;
    this.busyShareNow = total > 0 ? busy / total : 0;
    this.activeAt[at] = active;
    this.idleAt[at] = idle;
    this.busyAt = (at + 1) % BUSY_WINDOW_PROBES;
    if (!this.idle()) this.idleProbes = 0;
    else if (++this.idleProbes >= IDLE_PROBES) this.sleep();
  }

  /**
   * Is the front's loop lagging behind standingly, with requests of its own in
   * flight? On a machine busy with other work the lag alone would shed the few
   * requests of a light client (the ARA callback does not retry a 503): as at a
   * shard, a short queue is always admitted.
   */
  get lagging(): boolean {
    return this.highSince !== null && performance.now() - this.highSince >= LAG_INTERVAL_MS
      && this.busyShareNow >= LAG_BUSY_SHARE
      && (this.pool()?.inFlight ?? 0) >= LIMITS.shardQueueDelayMinimum;
  }

  /**
   * Should a request for `target` be refused now? 'front': it needs no shard;
   * a shard number: the one shard it needs; 'every': its shard is known only
   * from its body (or it is scattered over all): refused early only when every
   * shard is overloaded (ShardPool.send decides for the one it reaches).
   */
  shed(target: Target): boolean {
    if (this.running && this.timer === null) this.wake();
    const pool = this.pool();
    // Not gated on the shard being offered more than it answers (as its own
    // delay rules are): when the front is the bottleneck, the shard is offered
    // only what the front gets to read, and the backlog is in the sockets.
    if (this.lagging) {
      this.shedByLag++;
      // the shard was offered it all the same (ShardPool.oversubscribed)
      if (target !== 'front') pool?.refusedAtFront(target);
      return true;
    }
    if (pool && target !== 'front') {
      const refuse = target === 'every' ? pool.everyOverloaded() : pool.overloaded(target);
      if (refuse) { this.shedByShard++; return true; }
    }
    this.admitted++;
    return false;
  }

  /** Refusals since start-up by where they were decided (for /metrics). */
  totals(): Record<'front_lag' | 'shard_queue' | 'after_parse', number> {
    const pool = this.pool();
    return { front_lag: this.shedByLag, shard_queue: this.shedByShard, after_parse: (pool?.shedByDelay ?? 0) + (pool?.shedByLength ?? 0) };
  }

  /** While refusing, one line per second says why and how much (the operator's view of overload). */
  private report(): void {
    const pool = this.pool();
    const r = this.reported;
    const byLag = this.shedByLag - r.byLag, byShard = this.shedByShard - r.byShard;
    const poolLength = pool?.shedByLength ?? 0, poolDelay = pool?.shedByDelay ?? 0, headLength = pool?.shedByLengthAtHead ?? 0;
    const inPool = poolLength - r.poolLength + poolDelay - r.poolDelay;
    // the delay beyond the sampling interval, as nodejs_eventloop_lag_* (src/default_metrics.ts)
    const p99 = delayBeyondMs(this.histogram.percentile(99), LAG_RESOLUTION_MS);
    const admitted = this.admitted - r.admitted;
    this.reported = { byLag: this.shedByLag, byShard: this.shedByShard, admitted: this.admitted, poolLength, poolDelay, headLength };
    const max = delayBeyondMs(this.histogram.max, LAG_RESOLUTION_MS);
    const stats = pool?.takeDelayStats();
    const answered = { p50: this.answered.percentile(50) / 1e3, p99: this.answered.percentile(99) / 1e3 };
    this.histogram.reset();
    this.answered.reset();
    const busy = this.busyShare();
    if (byLag + byShard + inPool === 0) return;
    log.warn('shedding', {
      seconds: REPORT_MS / 1000, admitted, refusedFrontLag: byLag, refusedShardDelay: byShard,
      refusedAfterParse: inPool,
      // of the refusals for a shard (from the head and after parsing), those by the queue length cap rather than the delay bound
      refusedQueueLength: poolLength - r.poolLength + headLength - r.headLength,
      admittedP50Ms: round(answered.p50), admittedP99Ms: round(answered.p99),
      eventLoopLagP99Ms: round(p99), eventLoopLagMaxMs: round(max),
      // the front thread's busy share over the second (near 1: the front is the bottleneck)
      frontBusy: Math.round(busy * 1000) / 1000,
      shardRoundTripMinMs: stats?.map((s) => round(s.minMs)), shardRoundTripMeanMs: stats?.map((s) => round(s.meanMs)), shardRoundTripMaxMs: stats?.map((s) => round(s.maxMs)),
      shardQueued: pool ? Array.from(pool.queued) : [],
      // the answer rate oversubscription is judged against (src/shard/pool.ts oversubscribed)
      shardAnswerRatePerS: stats?.map((s) => s.answerRatePerS),
    });
  }
}

function round(x: number): number { return Number.isFinite(x) ? Math.round(x * 10) / 10 : 0; }
