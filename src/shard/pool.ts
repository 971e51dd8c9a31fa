// The front's side of the shards (piscina-style): one worker per shard, one
// `requestId → pending` table, and every pending request of a worker that dies is
// failed at once so no HTTP request is left hanging.
//
// A worker that dies is restarted: the new one recovers the shard's aggregates
// from disk (snapshots + journal) and, once ready, the front re-sends what lives
// only in memory (the label replica) and relearns the shard's ids (onRestart).
// Until then the shard is down: requests for it are answered 503 at once.
// Restarts that keep failing back off exponentially (up to 30 s).
import { Worker } from 'node:worker_threads';
import { Errors } from '../api/errors.js';
import { LIMITS } from '../limits.js';
import { errText, log } from '../log.js';
import { InFlightTable } from './in_flight.js';
import { CommitChanges, decodeAll, ShardOutbox, type ErrorReply, type FrontToShard, type ReadyMessage, type Reply, type ShardInit, type ShardToFront } from './protocol.js';
import type { DelayStats, ReplyHandler, Shards } from './shards.js';

/**
 * Window (ms) of a shard's fastest round trip, its service time without a
 * queue (BBR keeps the minimum RTT over a window the same way). Even under a
 * 2× flood some answers come back within 1–2 ms (a request that joins a commit
 * as it starts: bench overload, the shedding lines' shardRoundTripMinMs), so
 * the minimum does not climb with the queue it is subtracted from.
 */
const SERVICE_WINDOW_MS = 1000;

/**
 * What a shard is offered and what it answers are counted in windows of
 * TRAFFIC_WINDOW_MS, the current one and TRAFFIC_WINDOWS - 1 before it
 * (oversubscribed()). A flood is seen 200–300 ms after it starts; meanwhile it
 * is admitted whole, up to the length bound. (50 ms windows saw it sooner, but
 * then 512 closed-loop writers joining 256 looked like a flood and had 92 % of
 * their requests refused, bench/closed_loop.sh.)
 */
const TRAFFIC_WINDOW_MS = 100;
const TRAFFIC_WINDOWS = 3;
/**
 * Once a shard was seen offered more than it answers within an overload
 * episode, it counts as such for this long (ms) whatever the windows say: a
 * stall of the front (its GC, a burst of replies) leaves windows with no
 * arrivals while the shard drains its queue, and the flood that piled up in
 * the sockets meanwhile must not then be let in whole while the windows fill
 * again. After the load drops the episode ends within this plus
 * TRAFFIC_WINDOWS windows.
 */
const OVERSUBSCRIBED_HOLD_MS = 500;

/** `at`: performance.now() when sent, for the queueing delay the admission check uses */
interface Pending { handler: ReplyHandler<unknown>; context: unknown; shard: number; at: number }

export type PoolOptions = Omit<ShardInit, 'shard'> & {
  queueLimit?: number; queueDelayMs?: number;
  /** restart a worker that exits (default); false: report it through onExit (cluster mode: the partition was lost) */
  restartOnExit?: boolean;
};

/** A restart within this long of the previous one counts as a failed attempt (backoff grows). */
const STABLE_MS = 10_000;
const MAX_BACKOFF_MS = 30_000;

export class ShardPool implements Shards {
  readonly size: number;
  private readonly workers: Array<Worker | null> = [];
  /** each worker's outbox: what the front posts to it in one turn leaves as one message (protocol.ts) */
  private readonly outboxes: Array<ShardOutbox | null> = [];
  /** requests sent and not yet answered, by request id (not a Map: in_flight.ts says why) */
  private readonly pending = new InFlightTable<Pending>();
  private nextRid = 1;
  private closing = false;
  /** shards that accept messages (false while a dead worker is being replaced) */
  private readonly up: boolean[];
  /** requests sent to each shard and not yet answered (the queue depth /metrics shows) */
  readonly queued: Int32Array;
  /** restarts per shard since start-up */
  readonly restarts: number[];
  private readonly attempts: number[];
  private readonly restartedAt: number[];
  private readonly timers: Array<NodeJS.Timeout | null>;
  /** set by the front: a restarted shard is ready (its ids, recovery stats) */
  onRestart: ((ready: ReadyMessage) => void) | null = null;
  /** cluster mode: a worker's position in its partition's stream */
  onPosition: ((shard: number, seq: number) => void) | null = null;
  /** restartOnExit false: a worker exited (requests it held were answered 503) */
  onExit: ((shard: number, code: number) => void) | null = null;
  /** set by the front: a shard's committed changes (live stream), in commit order per shard */
  onChanges: ((shard: number, changes: CommitChanges, stamp?: number) => void) | null = null;
  /**
   * set by the live stream: true when it keeps this reply until the shard's
   * earlier changes have gone out on the stream (it hands it back through
   * releaseReply), so a write is never acknowledged before its changes are counted
   */
  holdReply: ((shard: number, reply: ShardToFront) => boolean) | null = null;
  /** set by the live stream: a worker exited; replies it holds for that shard are handed back now */
  releaseHeld: ((shard: number) => void) | null = null;

  /** requests in flight per shard before send() answers 503 (src/limits.ts shardQueue) */
  private readonly queueLimit: number;
  /** shed while a shard's oldest request has waited longer than this (ms; 0: the length cap only) */
  private readonly queueDelayMs: number;
  /** per shard: since when (performance.now()) its oldest unanswered request has waited longer than queueDelayMs; NaN: not now */
  private readonly aboveSince: Float64Array;
  /** per shard: when a request was last refused for its queueing delay (performance.now()) */
  private readonly lastRefused: Float64Array;
  /** how long (ms) the delay must stay above queueDelayMs to count as a standing queue */
  private readonly queueDelayIntervalMs: number;
  /** requests refused by send(): queue length cap reached / queueing delay bound exceeded */
  shedByLength = 0;
  shedByDelay = 0;
  /** requests the front refused from their head (overloaded(), everyOverloaded()) because the queue length cap was reached */
  shedByLengthAtHead = 0;
  /** per shard since the last takeDelayStats(): replies, sum and max of their round trips (ms) */
  private readonly rtCount: Float64Array;
  private readonly rtSum: Float64Array;
  private readonly rtMax: Float64Array;
  private readonly rtMin: Float64Array;
  /** per shard: rids and send times in send order, to find the oldest unanswered one */
  private readonly sent: Array<{ rids: number[]; at: number[]; head: number }>;
  /**
   * per shard: the fastest round trip (ms) of this window of SERVICE_WINDOW_MS
   * and of the one before, and when this one began: the shard's service time
   * with no queue (its commit's fsync, mostly), which admission does not count
   * as queueing delay (see standing())
   */
  private readonly fastestNow: Float64Array;
  private readonly fastestBefore: Float64Array;
  private readonly fastestSince: Float64Array;
  /** per shard: answers per ms, the decaying peak over windows of LIMITS.shardRateWindowMs (the rate a queue drains at; see countAnswer) */
  private readonly answerRate: Float64Array;
  /** per shard: start (performance.now()) and answers of the current rate window */
  private readonly rateWindowStart: Float64Array;
  private readonly rateWindowAnswers: Float64Array;
  /** per shard: answers of the current rate window that left a queue (≥ LIMITS.shardQueueDelayMinimum in flight) behind them */
  private readonly rateWindowQueued: Float64Array;
  /**
   * per shard: requests offered to it (admitted or refused) and requests it
   * answered in the current window of TRAFFIC_WINDOW_MS and the
   * TRAFFIC_WINDOWS - 1 before it (rings, shard-major; trafficAt: the current
   * window's slot in both, trafficSince: when it began), which oversubscribed() compares
   */
  private readonly offeredRing: Float64Array;
  private readonly answeredRing: Float64Array;
  private readonly trafficAt: Int32Array;
  private readonly trafficSince: Float64Array;
  /** per shard: until when (performance.now()) it counts as oversubscribed within an episode (OVERSUBSCRIBED_HOLD_MS) */
  private readonly oversubscribedUntil: Float64Array;

  private constructor(private readonly options: PoolOptions) {
    this.size = options.shards;
    this.queueLimit = options.queueLimit ?? LIMITS.shardQueue;
    this.queueDelayMs = options.queueDelayMs ?? LIMITS.shardQueueDelayMs;
    this.aboveSince = new Float64Array(options.shards).fill(NaN);
    this.lastRefused = new Float64Array(options.shards).fill(-Infinity);
    this.queueDelayIntervalMs = Math.min(LIMITS.shardQueueDelayIntervalMs, 4 * this.queueDelayMs);
    this.rtCount = new Float64Array(options.shards);
    this.rtSum = new Float64Array(options.shards);
    this.rtMax = new Float64Array(options.shards);
    this.rtMin = new Float64Array(options.shards).fill(Infinity);
    this.fastestNow = new Float64Array(options.shards).fill(Infinity);
    this.fastestBefore = new Float64Array(options.shards).fill(Infinity);
    this.fastestSince = new Float64Array(options.shards).fill(performance.now());
    this.sent = Array.from({ length: options.shards }, () => ({ rids: [], at: [], head: 0 }));
    this.answerRate = new Float64Array(options.shards);
    this.rateWindowStart = new Float64Array(options.shards).fill(performance.now());
    this.rateWindowAnswers = new Float64Array(options.shards);
    this.rateWindowQueued = new Float64Array(options.shards);
    this.offeredRing = new Float64Array(options.shards * TRAFFIC_WINDOWS);
    this.answeredRing = new Float64Array(options.shards * TRAFFIC_WINDOWS);
    this.trafficAt = new Int32Array(options.shards);
    this.trafficSince = new Float64Array(options.shards).fill(performance.now());
    this.oversubscribedUntil = new Float64Array(options.shards).fill(-Infinity);
    this.up = new Array<boolean>(this.size).fill(false);
    this.queued = new Int32Array(this.size);
    this.restarts = new Array<number>(this.size).fill(0);
    this.attempts = new Array<number>(this.size).fill(0);
    this.restartedAt = new Array<number>(this.size).fill(0);
    this.timers = new Array<NodeJS.Timeout | null>(this.size).fill(null);
  }

  /** Start every shard; resolves when all have recovered, with what they report. */
  static async start(options: PoolOptions): Promise<{ pool: ShardPool; ready: ReadyMessage[] }> {
    const pool = new ShardPool(options);
    const ready = await Promise.all(Array.from({ length: options.shards }, (_, shard) => pool.spawn(shard)));
    pool.up.fill(true);
    return { pool, ready };
  }

  /** A pool whose workers are started one by one with open() (cluster mode: the partitions this node owns). */
  static idle(options: PoolOptions): ShardPool {
    return new ShardPool(options);
  }

  /** Start shard `shard`'s worker with `extra` start-up data; resolves once it has recovered and is up. */
  async open(shard: number, extra: Partial<ShardInit>): Promise<ReadyMessage> {
    if (this.workers[shard]) throw new Error(`shard ${shard} is already running`);
    const ready = await this.spawn(shard, extra);
    this.up[shard] = true;
    return ready;
  }

  /** Start a worker that is not up for requests yet (a cluster standby); control() talks to it, markUp() opens it. */
  async openStandby(shard: number, extra: Partial<ShardInit>): Promise<ReadyMessage> {
    if (this.workers[shard]) throw new Error(`shard ${shard} is already running`);
    return this.spawn(shard, extra);
  }

  /** Is a worker running for the shard (up or not)? */
  running(shard: number): boolean { return !!this.workers[shard]; }

  /** Send to a running worker whether or not it is up (a standby's promotion). */
  control<C>(shard: number, message: FrontToShard, handler: ReplyHandler<C>, context?: C): void {
    if (!this.workers[shard]) { queueMicrotask(() => handler(unavailable(0, shard), context as C)); return; }
    this.post(shard, message, handler, context);
  }

  markUp(shard: number): void { if (this.workers[shard]) this.up[shard] = true; }

  /** Stop one worker: it finishes its pending commits first (bounded), then exits. */
  async release(shard: number): Promise<void> {
    const worker = this.workers[shard];
    this.up[shard] = false;
    if (!worker) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => { void worker.terminate(); }, 10_000);
      worker.once('exit', () => { clearTimeout(timer); resolve(); });
      this.closeWorker(shard);
    });
  }

  /** Ask a worker to close, after whatever was posted to it before. */
  private closeWorker(shard: number): void {
    const outbox = this.outboxes[shard];
    if (!outbox) return;
    outbox.post({ k: 'close' });
    outbox.flush();
  }

  /** Start one worker; resolves with its ready message, rejects if it fails to start. */
  private spawn(shard: number, extra: Partial<ShardInit> = {}): Promise<ReadyMessage> {
    return new Promise<ReadyMessage>((resolve, reject) => {
      const { queueLimit: _, queueDelayMs: _d, restartOnExit: _r, ...shared } = this.options;
      const init: ShardInit = { ...shared, ...extra, shard };
      const worker = new Worker(new URL('../shard_worker.js', import.meta.url), {
        workerData: init, resourceLimits: { maxYoungGenerationSizeMb: LIMITS.shardYoungGenerationMb },
      });
      this.workers[shard] = worker;
      this.outboxes[shard] = new ShardOutbox(worker);
      let started = false;
      const received = (msg: ShardToFront): void => {
        if (msg.k === 'ready') { started = true; resolve(msg); return; }
        if (msg.k === 'failed') { reject(new Error(`shard ${shard}: ${msg.error}`)); return; }
        if (msg.k === 'changes') { this.onChanges?.(shard, CommitChanges.of(msg), msg.stamp); return; }
        if (msg.k === 'position') { this.onPosition?.(shard, msg.seq); return; }
        this.noteWrite(shard, msg);
        if (this.holdReply?.(shard, msg)) return;
        this.onReply(msg);
      };
      worker.on('message', (bytes: Uint8Array) => { for (const msg of decodeAll<ShardToFront>(bytes)) received(msg); });
      worker.on('error', (err) => {
        log.error('shard worker error', { shard, err: errText(err) });
      });
      worker.on('exit', (code) => {
        if (this.workers[shard] === worker) { this.workers[shard] = null; this.outboxes[shard] = null; this.up[shard] = false; }
        this.releaseHeld?.(shard); // answered by the worker before it died: they stand
        const failed = this.failPending(shard);
        if (!started) { reject(new Error(`shard ${shard} exited during start-up (code ${code})`)); return; }
        if (this.closing) return;
        if (this.options.restartOnExit === false) { this.onExit?.(shard, code); return; }
        log.error('shard worker exited; restarting it', { shard, code, requestsFailed: failed });
        this.restart(shard);
      });
    });
  }

  private restart(shard: number): void {
    const now = Date.now();
    this.attempts[shard] = now - this.restartedAt[shard]! < STABLE_MS ? this.attempts[shard]! + 1 : 0;
    const delay = this.attempts[shard] === 0 ? 0 : Math.min(MAX_BACKOFF_MS, 100 * 2 ** this.attempts[shard]!);
    this.timers[shard] = setTimeout(() => {
      this.timers[shard] = null;
      if (this.closing) return;
      this.restartedAt[shard] = Date.now();
      this.restarts[shard]!++;
      const t0 = performance.now();
      this.spawn(shard).then((ready) => {
        if (this.closing) return;
        // up and onRestart in one turn: the label replica is the first message the new worker gets
        this.up[shard] = true;
        this.onRestart?.(ready);
        log.warn('shard restarted', {
          shard, ms: Math.round(performance.now() - t0), recoveryMs: Math.round(ready.recovery.ms),
          snapshots: ready.recovery.snapshots, journalEventsReplayed: ready.recovery.eventsApplied,
        });
      }, (err) => {
        log.error('shard restart failed', { shard, err: errText(err) });
        if (!this.closing) this.restart(shard);
      });
    }, delay);
  }

  /** Shard that owns a playbook. */
  shardOf(playbookId: number): number {
    return playbookId % this.size;
  }

  get inFlight(): number { return this.pending.size; }

  /** Is the shard's worker running and recovered? */
  isUp(shard: number): boolean { return this.up[shard]!; }

  /** Shards that are down (being restarted). */
  /** per shard: the first of the current run of writes refused for storage (null: writes work) */
  private readonly refusedWrites = new Map<number, { since: number; detail: string }>();

  writesRefused(): Array<{ shard: number; since: number; detail: string }> {
    return [...this.refusedWrites].map(([shard, r]) => ({ shard, ...r }));
  }

  /** Follow the write path's health from the shards' answers to writes. */
  private noteWrite(shard: number, msg: ShardToFront): void {
    if (msg.k !== 'write' && msg.k !== 'ingest') return;
    if (msg.status === 503) {
      if (!this.refusedWrites.has(shard)) {
        let detail = '';
        try { detail = String(JSON.parse(String(msg.body)).detail ?? ''); } catch { /* not JSON */ }
        this.refusedWrites.set(shard, { since: Date.now(), detail });
      }
    } else if (msg.status < 300) this.refusedWrites.delete(shard);
  }

  down(): number[] {
    const out: number[] = [];
    for (let shard = 0; shard < this.size; shard++) if (!this.up[shard]) out.push(shard);
    return out;
  }

  /**
   * Send a message; `handler` gets the reply. When the shard already has
   * `queueLimit` requests in flight, nothing is sent and the handler gets a 503
   * (reply() adds Retry-After): the mailbox and the pending table stay bounded.
   */
  send<C>(shard: number, message: FrontToShard, handler: ReplyHandler<C> | null, context?: C, internal = false): void {
    if (!this.up[shard]) {
      // never post to a dead worker: nothing would ever answer
      if (handler) queueMicrotask(() => handler(unavailable(0, shard), context as C));
      return;
    }
    const refused = handler && !internal ? this.overloadedBy(shard) : null;
    if (handler && refused !== null) {
      this.refusing(shard, refused);
      if (refused === 'length') this.shedByLength++; else this.shedByDelay++;
      queueMicrotask(() => handler({ k: 'error', rid: 0, status: 503, body: Errors.overloaded() }, context as C));
      return;
    }
    this.post(shard, message, handler, context);
  }

  /** Post to the shard's worker (admitted), registering the handler for its reply. */
  private post<C>(shard: number, message: FrontToShard, handler: ReplyHandler<C> | null, context?: C): void {
    if (handler) {
      const rid = this.nextRid++;
      (message as { rid: number }).rid = rid;
      const at = performance.now();
      this.countOffered(shard, at);
      this.pending.set(rid, { handler: handler as ReplyHandler<unknown>, context, shard, at });
      if (this.queueDelayMs > 0) { const q = this.sent[shard]!; q.rids.push(rid); q.at.push(at); }
      this.queued[shard]!++;
    }
    this.outboxes[shard]!.post(message);
  }

  /**
   * Admission: refuse when the shard has queueLimit requests in flight, or (CoDel's
   * idea) when it has a real queue (≥ LIMITS.shardQueueDelayMinimum) that is
   * standing: for the last queueDelayIntervalMs, whenever looked at (each
   * admission, each answer), its oldest unanswered request had waited longer
   * than queueDelayMs (one slow fsync under a light load does not shed: the
   * queue drains below the bound and the stretch ends). A length alone is a
   * poor bound: 1024 requests are 0.1 s of cheap reads but seconds of writes on
   * a loaded machine; the delay bound keeps admitted latency near the target
   * whatever each request costs. A short queue is always admitted, so a slow
   * disk alone cannot shed a light load.
   */
  overloaded(shard: number): boolean {
    const refused = this.overloadedBy(shard);
    if (refused === null) return false;
    this.refusing(shard, refused); // the caller refuses the request
    if (refused === 'length') this.shedByLengthAtHead++;
    return true;
  }

  /**
   * Would every shard refuse a request now? (The front asks before it knows
   * which shard a body targets.) Only a refusal counts as one: a shard that
   * would refuse while another admits is not in an overload episode for it.
   */
  everyOverloaded(): boolean {
    let up = 0;
    for (let shard = 0; shard < this.size; shard++) {
      if (!this.up[shard]) continue;
      if (this.overloadedBy(shard) === null) return false;
      up++;
    }
    if (up === 0) return false; // shards that are down answer for themselves (503, "Shard k is unavailable")
    // refused: each shard's reason again (cheap, and only on this path; nothing allocated per request)
    let length = false;
    for (let shard = 0; shard < this.size; shard++) {
      const why = this.up[shard] ? this.overloadedBy(shard) : null;
      if (why !== null) this.refusing(shard, why);
      length ||= why === 'length';
    }
    if (length) this.shedByLengthAtHead++;
    return true;
  }

  /** A request is refused for this shard's sake: a refusal for its delay starts (or extends) its overload episode. */
  private refusing(shard: number, why: 'length' | 'delay'): void {
    const now = performance.now();
    this.countOffered(shard, now);
    if (why === 'delay') this.lastRefused[shard] = now;
  }

  /**
   * The front refused a request for the shard on its own event-loop lag: it was
   * offered all the same (else, while the front refuses a flood, the shard would
   * seem offered only what it answers, and admit all that passes the front).
   * 'every': the request's shard was not known yet; each shard counts it.
   */
  refusedAtFront(target: number | 'every'): void {
    const now = performance.now();
    if (target !== 'every') { this.countOffered(target, now); return; }
    for (let shard = 0; shard < this.size; shard++) this.countOffered(shard, now);
  }

  /** A request for the shard arrived (admitted or refused): it counts towards the offered rate. */
  private countOffered(shard: number, now: number): void {
    this.rotateTraffic(shard, now);
    this.offeredRing[shard * TRAFFIC_WINDOWS + this.trafficAt[shard]!]!++;
  }

  /** Start a new window for each that ended (after a gap of all of them, start afresh). */
  private rotateTraffic(shard: number, now: number): void {
    const w = TRAFFIC_WINDOW_MS;
    if (now - this.trafficSince[shard]! < w) return;
    const base = shard * TRAFFIC_WINDOWS;
    if (now - this.trafficSince[shard]! >= TRAFFIC_WINDOWS * w) {
      this.offeredRing.fill(0, base, base + TRAFFIC_WINDOWS);
      this.answeredRing.fill(0, base, base + TRAFFIC_WINDOWS);
      this.trafficSince[shard] = now;
      return;
    }
    while (now - this.trafficSince[shard]! >= w) {
      // the oldest window's slot starts the new one
      const next = (this.trafficAt[shard]! + 1) % TRAFFIC_WINDOWS;
      this.offeredRing[base + next] = 0;
      this.answeredRing[base + next] = 0;
      this.trafficAt[shard] = next;
      this.trafficSince[shard] = this.trafficSince[shard]! + w;
    }
  }

  /**
   * Is the shard offered more than it answers? Only then can its queue grow
   * without bound, and only then does refusing shorten it.
   * - To start an overload episode: in each of the last two complete windows
   *   of TRAFFIC_WINDOW_MS it was offered (admitted or refused) more
   *   than LIMITS.shardOfferedRateFactor times what it answered in that
   *   window. A closed population of clients, however slow the shard, offers
   *   what it answers plus what its queue grows by, at most its size, once:
   *   its ramp-up fills one window, not two in a row; a flood fills every
   *   window. A GC pause at half the load is one window short of answers, and
   *   the next drains the queue. Not a guarantee: a population that ramps up
   *   over 200 ms or more on a slow shard, or one caught in a longer stall,
   *   looks like a flood, and then its refused clients, sending again at
   *   once, keep the episode going as a flood's would.
   * - Within an episode (`episode`): while it was offered more than it
   *   answered over the last TRAFFIC_WINDOWS windows together. A flood's queue
   *   drains in bursts (a window with a stall, then one with twice the
   *   answers), which must not end the episode and let the flood in whole for
   *   two windows; once the load drops below what the shard answers, the
   *   episode ends within TRAFFIC_WINDOWS windows and OVERSUBSCRIBED_HOLD_MS.
   * Both only while the arrivals also exceed LIMITS.shardOfferedCapacityShare
   * of the shard's answer rate with a queue: refused arrivals are never
   * answered, so after a stall at a light load "offered more than answered"
   * alone would hold for as long as anything was refused.
   * Before the shard's answer rate with a queue is known (a fresh shard, or one
   * that never had a queue) it is not oversubscribed: only the length bound applies.
   */
  private oversubscribed(shard: number, now: number, episode: boolean): boolean {
    const capacity = this.answerRate[shard]!; // answers per ms
    if (capacity === 0) return false;
    this.rotateTraffic(shard, now);
    const base = shard * TRAFFIC_WINDOWS;
    // more than the shard can answer must be arriving (LIMITS.shardOfferedCapacityShare):
    // a stall at a light load leaves windows without answers, which is not a flood
    const share = LIMITS.shardOfferedCapacityShare * capacity;
    let open: boolean;
    if (episode) {
      let offered = 0, answered = 0;
      for (let i = base; i < base + TRAFFIC_WINDOWS; i++) { offered += this.offeredRing[i]!; answered += this.answeredRing[i]!; }
      const spanMs = (TRAFFIC_WINDOWS - 1) * TRAFFIC_WINDOW_MS + (now - this.trafficSince[shard]!);
      open = offered > answered && offered > share * spanMs;
    } else {
      open = true;
      for (let back = 1; back <= 2 && open; back++) {
        const i = base + (this.trafficAt[shard]! + TRAFFIC_WINDOWS - back) % TRAFFIC_WINDOWS;
        const offered = this.offeredRing[i]!;
        open = offered > LIMITS.shardOfferedRateFactor * this.answeredRing[i]! && offered > share * TRAFFIC_WINDOW_MS;
      }
    }
    if (open) { this.oversubscribedUntil[shard] = now + OVERSUBSCRIBED_HOLD_MS; return true; }
    return episode && now < this.oversubscribedUntil[shard]!;
  }

  /** Why a request for `shard` would be refused now (null: admitted); records nothing (see refusing()). */
  private overloadedBy(shard: number): 'length' | 'delay' | null {
    const queued = this.queued[shard]!;
    if (queued >= this.queueLimit) return 'length';
    if (this.queueDelayMs === 0 || queued < LIMITS.shardQueueDelayMinimum) return null;
    const now = performance.now();
    const recentlyRefused = now - this.lastRefused[shard]! <= LIMITS.shardQueueDelayRecentMs;
    // a queue that arrivals do not outrun is not overload, however long it is (see oversubscribed())
    if (!this.oversubscribed(shard, now, recentlyRefused)) return null;
    // Within an overload episode (a refusal within shardQueueDelayRecentMs),
    // admit only what drains within the bound at the rate the shard answers
    // (Little's law: queue = rate × wait). The oldest-wait test alone reacts a
    // bound late: while the oldest request ages towards the bound every arrival
    // is admitted, so under a flood the queue swung to 500–1,000 requests and
    // admitted writes waited ~100 ms on average with a 50 ms bound (bench
    // overload, 60 s at 2×). Outside an episode only the oldest-wait test
    // sheds, so a burst onto an idle shard is admitted.
    if (recentlyRefused && queued >= this.answerRate[shard]! * this.queueDelayMs) return 'delay';
    if (!this.standing(shard, now)) return null;
    // the interval filters out a lone slow commit; a shard that was refusing a
    // moment ago has a standing queue still, and waiting out another interval
    // each time would let it grow to bound + interval (CoDel resumes dropping at once too)
    if (now - this.aboveSince[shard]! < this.queueDelayIntervalMs && !recentlyRefused) return null;
    return 'delay';
  }

  /**
   * Count an answer of the shard towards its answer rate: the peak of recent
   * windows, decaying by a tenth per window. A queue drains at the shard's
   * capacity, which a window with a slow commit or a GC pause in it
   * understates; a plain average dipped after each such hiccup and the cap
   * then refused a light load for a while.
   */
  private countAnswer(shard: number, now: number): void {
    this.rotateTraffic(shard, now);
    this.answeredRing[shard * TRAFFIC_WINDOWS + this.trafficAt[shard]!]!++;
    this.rateWindowAnswers[shard]!++;
    // answered with a queue behind it: the shard answers at its capacity, not at what it is offered
    if (this.queued[shard]! >= LIMITS.shardQueueDelayMinimum) this.rateWindowQueued[shard]!++;
    const elapsed = now - this.rateWindowStart[shard]!;
    if (elapsed < LIMITS.shardRateWindowMs) return;
    // Only a window that had a queue for most of its answers measures how fast
    // the shard drains one; under a light load the answer rate is the offered
    // rate, and so low a figure would cap an overload episode's queue far below
    // what the shard drains within the bound (overloadedBy). A window much
    // longer than one had idle time in it (the first answer after a pause
    // closes it): no measure either. oversubscribed() waits for a first measure.
    if (elapsed < 2 * LIMITS.shardRateWindowMs && 2 * this.rateWindowQueued[shard]! >= this.rateWindowAnswers[shard]!) {
      const rate = this.rateWindowAnswers[shard]! / elapsed;
      this.answerRate[shard] = Math.max(rate, 0.9 * this.answerRate[shard]!);
    }
    this.rateWindowStart[shard] = now;
    this.rateWindowAnswers[shard] = 0;
    this.rateWindowQueued[shard] = 0;
  }

  /**
   * Is the oldest unanswered request of the shard waiting longer than the bound?
   * Keeps aboveSince: when the current stretch of such waits began. The oldest
   * wait, not the round trips of answers, since some answers (reads, commits
   * that find the disk idle) come back at once from a long queue.
   */
  private standing(shard: number, now: number): boolean {
    // what a request waits beyond the shard's fastest recent round trip: on a
    // disk whose fsync takes 15 ms every write waits that long with no queue at
    // all, and a bound of 10 ms must not shed a light load there
    const bound = this.queueDelayMs + this.serviceTime(shard);
    const oldest = this.oldestWait(shard, now);
    if (oldest <= bound) { this.aboveSince[shard] = NaN; return false; }
    if (Number.isNaN(this.aboveSince[shard])) this.aboveSince[shard] = now - oldest + bound;
    return true;
  }

  /** The shard's fastest round trip (ms) over the last one to two SERVICE_WINDOW_MS (0 before any answer). */
  private serviceTime(shard: number): number {
    const fastest = Math.min(this.fastestNow[shard]!, this.fastestBefore[shard]!);
    return fastest === Infinity ? 0 : fastest;
  }

  private countServiceTime(shard: number, rt: number, now: number): void {
    if (now - this.fastestSince[shard]! >= SERVICE_WINDOW_MS) {
      this.fastestBefore[shard] = this.fastestNow[shard]!;
      this.fastestNow[shard] = Infinity;
      this.fastestSince[shard] = now;
    }
    if (rt < this.fastestNow[shard]!) this.fastestNow[shard] = rt;
  }

  /** Round trips (send → reply, ms) per shard since the last call: how many, min, mean, max. */
  takeDelayStats(): DelayStats[] {
    const out = Array.from({ length: this.size }, (_, shard) => ({
      replies: this.rtCount[shard]!, minMs: this.rtCount[shard]! ? this.rtMin[shard]! : 0,
      meanMs: this.rtCount[shard]! ? this.rtSum[shard]! / this.rtCount[shard]! : 0, maxMs: this.rtMax[shard]!,
      answerRatePerS: Math.round(this.answerRate[shard]! * 1000),
    }));
    this.rtCount.fill(0); this.rtSum.fill(0); this.rtMax.fill(0); this.rtMin.fill(Infinity);
    return out;
  }

  /** ms the oldest unanswered request of a shard has waited (a burst has no answers yet to measure). */
  private oldestWait(shard: number, now: number): number {
    const q = this.advance(shard);
    return q.head < q.rids.length ? now - q.at[q.head]! : 0;
  }

  /** Drop answered requests from the front of a shard's send order (called on every reply: stays small). */
  private advance(shard: number): { rids: number[]; at: number[]; head: number } {
    const q = this.sent[shard]!;
    while (q.head < q.rids.length && !this.pending.has(q.rids[q.head]!)) q.head++;
    if (q.head === q.rids.length) { q.rids.length = 0; q.at.length = 0; q.head = 0; }
    else if (q.head > 1024 && q.head * 2 > q.rids.length) { q.rids.splice(0, q.head); q.at.splice(0, q.head); q.head = 0; }
    return q;
  }

  broadcast(message: FrontToShard): void {
    // a shard that is down gets the whole label catalogue when it is back
    for (let shard = 0; shard < this.size; shard++) if (this.up[shard]) this.send(shard, message, null);
  }

  /** A reply the live stream held (holdReply), delivered now. */
  releaseReply(reply: ShardToFront): void { this.onReply(reply); }

  private onReply(reply: ShardToFront): void {
    if (reply.k === 'ready' || reply.k === 'failed' || reply.k === 'changes' || reply.k === 'position') return;
    const entry = this.pending.get(reply.rid);
    if (!entry) return;
    this.pending.delete(reply.rid);
    this.queued[entry.shard]!--;
    const answeredAt = performance.now();
    const rt = answeredAt - entry.at;
    this.countAnswer(entry.shard, answeredAt);
    this.rtCount[entry.shard]!++;
    this.rtSum[entry.shard]! += rt;
    if (rt > this.rtMax[entry.shard]!) this.rtMax[entry.shard] = rt;
    if (rt < this.rtMin[entry.shard]!) this.rtMin[entry.shard] = rt;
    this.countServiceTime(entry.shard, rt, answeredAt);
    if (this.queueDelayMs > 0) this.standing(entry.shard, answeredAt);
    handleSafely(entry.handler, reply, entry.context);
  }

  /** Answer 503 to every request the shard held; returns how many. */
  private failPending(shard: number): number {
    let n = 0;
    for (const [rid, entry] of this.pending.entries()) {
      if (entry.shard !== shard) continue;
      this.pending.delete(rid);
      n++;
      handleSafely(entry.handler, unavailable(rid, shard), entry.context);
    }
    this.queued[shard] = 0;
    this.aboveSince[shard] = NaN;
    this.sent[shard] = { rids: [], at: [], head: 0 };
    return n;
  }

  /** Test hook (LOGBOOK_TEST_HOOKS=1): keep a worker's thread busy for `ms`, as a long GC pause would. */
  stall(shard: number, ms: number): boolean {
    if (!this.up[shard]) return false;
    this.send(shard, { k: 'stall', ms }, null);
    return true;
  }

  /** Test hook (LOGBOOK_TEST_HOOKS=1): make a worker die of an uncaught exception. */
  crash(shard: number): boolean {
    if (!this.up[shard]) return false;
    this.send(shard, { k: 'crash' }, null);
    return true;
  }

  /** Let every shard finish and flush its writes, then stop the workers. */
  async close(): Promise<void> {
    this.closing = true;
    for (const timer of this.timers) if (timer) clearTimeout(timer);
    await Promise.all(this.workers.map((worker, shard) => worker === null ? undefined : new Promise<void>((resolve) => {
      const timer = setTimeout(() => { void worker.terminate(); }, 10_000);
      worker.once('exit', () => { clearTimeout(timer); resolve(); });
      this.closeWorker(shard);
      this.up[shard] = false;
    })));
  }
}

/** The reply a request gets when its shard is gone. */
function unavailable(rid: number, shard: number): ErrorReply {
  return { k: 'error', rid, status: 503, body: Errors.unavailable(`Shard ${shard} is unavailable; retry shortly.`) };
}

/**
 * Run a reply's handler; a throw is logged, never let out: it would reach the
 * process's uncaught-exception handler and stop every request. The front's
 * handlers answer their own request 500 first (src/http/respond.ts answering()).
 */
export function handleSafely<C>(handler: ReplyHandler<C>, reply: Reply, context: C): void {
  try {
    handler(reply, context);
  } catch (err) {
    log.error('a shard reply handler failed', { k: reply.k, err: errText(err) });
  }
}
