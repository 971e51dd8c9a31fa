// The front's side of the shards (piscina-style): one worker per shard, one
// `requestId → pending` table, and every pending request of a worker that dies is
// failed at once so no HTTP request is left hanging.
import { Worker } from 'node:worker_threads';
import { Errors } from '../api/errors.js';
import { LIMITS } from '../limits.js';
import { log } from '../log.js';
import { decode, encode, type FrontToShard, type ReadyMessage, type ShardInit, type ShardToFront } from './protocol.js';

/** Called with the shard's reply (or a synthesized 503 when the shard is gone). */
export type ReplyHandler = (reply: ShardToFront, context: any) => void;

interface Pending { handler: ReplyHandler; context: any; shard: number }

export type PoolOptions = Omit<ShardInit, 'shard'> & { queueLimit?: number };

export class ShardPool {
  readonly size: number;
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  /** requests in flight per shard, bounded by `queueLimit` (src/limits.ts shardQueue) */
  readonly queued: Int32Array;
  private nextRid = 1;
  private closing = false;

  private constructor(size: number, private readonly queueLimit: number) {
    this.size = size;
    this.queued = new Int32Array(size);
  }

  /** Start every shard; resolves when all have recovered, with what they report. */
  static async start(options: PoolOptions): Promise<{ pool: ShardPool; ready: ReadyMessage[] }> {
    const pool = new ShardPool(options.shards, options.queueLimit ?? LIMITS.shardQueue);
    const url = new URL('./worker.js', import.meta.url);
    const ready = await Promise.all(Array.from({ length: options.shards }, (_, shard) => new Promise<ReadyMessage>((resolve, reject) => {
      const { queueLimit: _, ...shared } = options;
      const init: ShardInit = { ...shared, shard };
      const worker = new Worker(url, { workerData: init });
      pool.workers[shard] = worker;
      let started = false;
      worker.on('message', (bytes: Uint8Array) => {
        const msg = decode<ShardToFront>(bytes);
        if (msg.k === 'ready') { started = true; resolve(msg); return; }
        if (msg.k === 'failed') { reject(new Error(`shard ${shard}: ${msg.error}`)); return; }
        pool.onReply(msg);
      });
      worker.on('error', (err) => {
        log.error('shard worker error', { shard, err: String(err?.stack ?? err) });
        if (!started) reject(err);
      });
      worker.on('exit', (code) => {
        pool.failPending(shard);
        if (!started) reject(new Error(`shard ${shard} exited during start-up (code ${code})`));
        else if (!pool.closing) log.error('shard worker exited', { shard, code });
      });
    })));
    return { pool, ready };
  }

  /** Shard that owns a playbook. */
  shardOf(playbookId: number): number {
    return playbookId % this.size;
  }

  get inFlight(): number { return this.pending.size; }

  /**
   * Send a message; `handler` gets the reply. When the shard already has
   * `queueLimit` requests in flight, nothing is sent and the handler gets a 503
   * (reply() adds Retry-After): the mailbox and the pending table stay bounded.
   */
  send(shard: number, message: FrontToShard, handler: ReplyHandler | null, context?: unknown): void {
    if (handler && this.queued[shard]! >= this.queueLimit) {
      queueMicrotask(() => handler({ k: 'get', rid: 0, status: 503, body: Errors.overloaded() }, context));
      return;
    }
    if (handler) {
      const rid = this.nextRid++;
      (message as { rid: number }).rid = rid;
      this.pending.set(rid, { handler, context, shard });
      this.queued[shard]!++;
    }
    const bytes = encode(message);
    this.workers[shard]!.postMessage(bytes, [bytes.buffer as ArrayBuffer]);
  }

  broadcast(message: FrontToShard): void {
    for (let shard = 0; shard < this.size; shard++) this.send(shard, message, null);
  }

  private onReply(reply: ShardToFront): void {
    if (reply.k === 'ready' || reply.k === 'failed') return;
    const entry = this.pending.get(reply.rid);
    if (!entry) return;
    this.pending.delete(reply.rid);
    this.queued[entry.shard]!--;
    entry.handler(reply, entry.context);
  }

  private failPending(shard: number): void {
    for (const [rid, entry] of this.pending) {
      if (entry.shard !== shard) continue;
      this.pending.delete(rid);
      this.queued[shard]!--;
      entry.handler({ k: 'get', rid, status: 503, body: Errors.unavailable(`Shard ${shard} is unavailable.`) }, entry.context);
    }
  }

  /** Let every shard finish and flush its writes, then stop the workers. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.workers.map((worker, shard) => new Promise<void>((resolve) => {
      const timer = setTimeout(() => { void worker.terminate(); }, 10_000);
      worker.once('exit', () => { clearTimeout(timer); resolve(); });
      this.send(shard, { k: 'close' }, null);
    })));
  }
}
