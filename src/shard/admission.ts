// Admission control of the shards (docs/operations.md, "Overload"): whether a
// request for a shard is admitted or answered 503 at once, from what the front
// sees of each shard's queue: its length (at most queueLimit in flight) and, as
// CoDel does, how long its oldest request has waited while arrivals outrun the
// answers. The pool (pool.ts) tells it what it sends and what comes back; it
// keeps per shard the traffic windows, the answer rate, the service time and
// the send order, in typed arrays (this runs for every request).
import { LIMITS } from '../limits.js';
import type { DelayStats } from './shards.js';

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

export class ShardAdmission {
  /** requests refused by the pool's send(): queue length cap reached / queueing delay bound exceeded */
  shedByLength = 0;
  shedByDelay = 0;
  /** requests the front refused from their head (overloaded(), everyOverloaded()) because the queue length cap was reached */
  shedByLengthAtHead = 0;
  private readonly size: number;
  /** requests in flight per shard before a request is refused (src/limits.ts shardQueue) */
  private readonly queueLimit: number;
  /** shed while a shard's oldest request has waited longer than this (ms; 0: the length cap only) */
  readonly queueDelayMs: number;
  /** per shard: since when (performance.now()) its oldest unanswered request has waited longer than queueDelayMs; NaN: not now */
  private readonly aboveSince: Float64Array;
  /** per shard: when a request was last refused for its queueing delay (performance.now()) */
  private readonly lastRefused: Float64Array;
  /** how long (ms) the delay must stay above queueDelayMs to count as a standing queue */
  private readonly queueDelayIntervalMs: number;
  /** per shard since the last takeDelayStats(): replies, sum and max of their round trips (ms) */
  private readonly rtCount: Float64Array;
  private readonly rtSum: Float64Array;
  private readonly rtMax: Float64Array;
  private readonly rtMin: Float64Array;
  /** per shard: rids and send times in send order, to find the oldest unanswered one */
  private sent: Array<{ rids: number[]; at: number[]; head: number }>;
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

  /**
   * `queued` and `up` are the pool's own per-shard arrays (requests in flight,
   * shards that take messages), read here as they change; `isPending` says
   * whether a request id is still unanswered.
   */
  constructor(
    shards: number, options: { queueLimit?: number; queueDelayMs?: number },
    private readonly queued: Int32Array, private readonly up: readonly boolean[], private readonly isPending: (rid: number) => boolean,
  ) {
    this.size = shards;
    this.queueLimit = options.queueLimit ?? LIMITS.shardQueue;
    this.queueDelayMs = options.queueDelayMs ?? LIMITS.shardQueueDelayMs;
    this.aboveSince = new Float64Array(shards).fill(NaN);
    this.lastRefused = new Float64Array(shards).fill(-Infinity);
    this.queueDelayIntervalMs = Math.min(LIMITS.shardQueueDelayIntervalMs, 4 * this.queueDelayMs);
    this.rtCount = new Float64Array(shards);
    this.rtSum = new Float64Array(shards);
    this.rtMax = new Float64Array(shards);
    this.rtMin = new Float64Array(shards).fill(Infinity);
    this.fastestNow = new Float64Array(shards).fill(Infinity);
    this.fastestBefore = new Float64Array(shards).fill(Infinity);
    this.fastestSince = new Float64Array(shards).fill(performance.now());
    this.sent = Array.from({ length: shards }, () => ({ rids: [], at: [], head: 0 }));
    this.answerRate = new Float64Array(shards);
    this.rateWindowStart = new Float64Array(shards).fill(performance.now());
    this.rateWindowAnswers = new Float64Array(shards);
    this.rateWindowQueued = new Float64Array(shards);
    this.offeredRing = new Float64Array(shards * TRAFFIC_WINDOWS);
    this.answeredRing = new Float64Array(shards * TRAFFIC_WINDOWS);
    this.trafficAt = new Int32Array(shards);
    this.trafficSince = new Float64Array(shards).fill(performance.now());
    this.oversubscribedUntil = new Float64Array(shards).fill(-Infinity);
  }

  /** Why the pool's send() refuses a request for `shard` now (null: admitted); a refusal is counted. */
  refuseToSend(shard: number): 'length' | 'delay' | null {
    const refused = this.overloadedBy(shard);
    if (refused === null) return null;
    this.refusing(shard, refused);
    if (refused === 'length') this.shedByLength++; else this.shedByDelay++;
    return refused;
  }

  /** A request `rid` was sent to the shard at `at` (performance.now()). */
  sentRequest(shard: number, rid: number, at: number): void {
    this.countOffered(shard, at);
    if (this.queueDelayMs > 0) { const q = this.sent[shard]!; q.rids.push(rid); q.at.push(at); }
  }

  /** The shard answered a request `rt` ms after it was sent, at `now` (the pool has counted it out of `queued`). */
  answered(shard: number, rt: number, now: number): void {
    this.countAnswer(shard, now);
    this.rtCount[shard]!++;
    this.rtSum[shard]! += rt;
    if (rt > this.rtMax[shard]!) this.rtMax[shard] = rt;
    if (rt < this.rtMin[shard]!) this.rtMin[shard] = rt;
    this.countServiceTime(shard, rt, now);
    if (this.queueDelayMs > 0) this.standing(shard, now);
  }

  /** Every request the shard held was failed (its worker died): no queue is left. */
  cleared(shard: number): void {
    this.aboveSince[shard] = NaN;
    this.sent[shard] = { rids: [], at: [], head: 0 };
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
    while (q.head < q.rids.length && !this.isPending(q.rids[q.head]!)) q.head++;
    if (q.head === q.rids.length) { q.rids.length = 0; q.at.length = 0; q.head = 0; }
    else if (q.head > 1024 && q.head * 2 > q.rids.length) { q.rids.splice(0, q.head); q.at.splice(0, q.head); q.head = 0; }
    return q;
  }
}
