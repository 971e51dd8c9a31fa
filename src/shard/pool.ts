// The front's side of the shards (piscina-style): one worker per shard, one
// `requestId → pending` table, and every pending request of a worker that dies is
// failed at once so no HTTP request is left hanging.
//
// A worker that dies is restarted: the new one recovers the shard's aggregates
// from disk (snapshots + journal) and, once ready, the front re-sends what lives
// only in memory (the label replica) and relearns the shard's ids (onRestart).
// Until then the shard is down: requests for it are answered 503 at once.
// Restarts that keep failing back off exponentially (up to 30 s). Whether a
// request is admitted at all is admission.ts's to say.
import { type MessagePort, Worker } from 'node:worker_threads';
import { Errors } from '../api/errors.js';
import { LIMITS } from '../limits.js';
import { errText, log } from '../log.js';
import { InFlightTable } from './in_flight.js';
import { CommitChanges, decodeAll, ShardOutbox, type ErrorReply, type FrontToShard, type ReadyMessage, type Reply, type ShardInit, type ShardToFront } from './protocol.js';
import { ShardAdmission } from './admission.js';
import type { DelayStats, ReplyHandler, Shards } from './shards.js';

/** `at`: performance.now() when sent, for the queueing delay the admission check uses */
interface Pending { handler: ReplyHandler<unknown>; context: unknown; shard: number; at: number }

export type PoolOptions = Omit<ShardInit, 'shard'> & {
  queueLimit?: number; queueDelayMs?: number;
  /** restart a worker that exits (default); false: report it through onExit (cluster mode: the partition was lost) */
  restartOnExit?: boolean;
  /** a fresh port to the search worker for a shard's worker, at each start (absent: no search index) */
  searchPortFor?: (shard: number) => MessagePort | null;
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

  /** whether a request is admitted or answered 503 at once (admission.ts) */
  private readonly admission: ShardAdmission;

  private constructor(private readonly options: PoolOptions) {
    this.size = options.shards;
    this.up = new Array<boolean>(this.size).fill(false);
    this.queued = new Int32Array(this.size);
    this.restarts = new Array<number>(this.size).fill(0);
    this.attempts = new Array<number>(this.size).fill(0);
    this.restartedAt = new Array<number>(this.size).fill(0);
    this.timers = new Array<NodeJS.Timeout | null>(this.size).fill(null);
    this.admission = new ShardAdmission(this.size, options, this.queued, this.up, (rid) => this.pending.has(rid));
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
      const { queueLimit: _, queueDelayMs: _d, restartOnExit: _r, searchPortFor, ...shared } = this.options;
      const searchPort = searchPortFor?.(shard) ?? null;
      const init: ShardInit = { ...shared, ...extra, shard, ...(searchPort ? { searchPort } : {}) };
      const worker = new Worker(new URL('../shard_worker.js', import.meta.url), {
        workerData: init, resourceLimits: { maxYoungGenerationSizeMb: LIMITS.shardYoungGenerationMb },
        transferList: searchPort ? [searchPort] : [],
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
    if (handler && !internal && this.admission.refuseToSend(shard) !== null) {
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
      this.pending.set(rid, { handler: handler as ReplyHandler<unknown>, context, shard, at });
      this.admission.sentRequest(shard, rid, at);
      this.queued[shard]!++;
    }
    this.outboxes[shard]!.post(message);
  }

  /**
   * Admission (admission.ts): would a request for the shard be refused now?
   * The caller refuses it; counted as such.
   */
  overloaded(shard: number): boolean { return this.admission.overloaded(shard); }
  /** Would every shard refuse a request now? (The front asks before it knows which shard a body targets.) */
  everyOverloaded(): boolean { return this.admission.everyOverloaded(); }
  /** The front refused a request for the shard (or, 'every', for whichever) on its own event-loop lag: it was offered all the same. */
  refusedAtFront(target: number | 'every'): void { this.admission.refusedAtFront(target); }
  /** Round trips (send → reply, ms) per shard since the last call: how many, min, mean, max. */
  takeDelayStats(): DelayStats[] { return this.admission.takeDelayStats(); }
  get shedByLength(): number { return this.admission.shedByLength; }
  get shedByDelay(): number { return this.admission.shedByDelay; }
  get shedByLengthAtHead(): number { return this.admission.shedByLengthAtHead; }


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
    this.admission.answered(entry.shard, answeredAt - entry.at, answeredAt);
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
    this.admission.cleared(shard);
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
