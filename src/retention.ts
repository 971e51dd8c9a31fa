// Retention and expiry, run in the background on the front:
//  - LOGBOOK_RETENTION_DAYS: playbooks whose `started` is more than N days ago
//    are deleted with everything under them (the same cascade as DELETE);
//  - LOGBOOK_EXPIRE_RUNNING_AFTER: playbooks still `running` that started longer
//    ago than that are marked `expired`, with their plays and tasks that are
//    still running.
// Every check interval, each shard is asked for bounded batches (a few
// playbooks, a bounded number of rows: src/shard/maintenance.ts) until it has
// nothing left; between batches the event loop runs, and a shard interleaves
// client commands with batches, so ingest never stalls behind a large purge.
// The clock is injected (µs since the epoch) so tests can move time.
import { nowMicros } from './api/time.js';
import { RESOURCE_TYPES } from './api/resources.js';
import { errText, log } from './log.js';
import type { MaintainReply, MaintenanceTask, ShardToFront } from './shard/protocol.js';
import type { Shards } from './shard/shards.js';

/** Where batches run: the shard pool in the server, Shard objects in unit tests. */
export interface MaintenanceTarget {
  readonly size: number;
  /** Run one batch on a shard; resolves with its reply (a non-200 status when the shard was unavailable). */
  maintain(shard: number, task: MaintenanceTask): Promise<MaintainReply>;
}

/** What a pass did, summed over shards. */
export interface PassResult {
  /** records deleted per type (cascades included), by type name */
  deleted: Record<string, number>;
  /** [playbooks, plays, tasks] marked expired */
  expired: [number, number, number];
  batches: number;
  errors: number;
}

export interface RetentionSink {
  onPass(result: PassResult, at: number): void;
}

export interface RetentionOptions {
  /** delete playbooks started more than this many days ago (null: off) */
  retentionDays: number | null;
  /** mark playbooks running for longer than this many seconds expired (null: off) */
  expireRunningAfter: number | null;
  /** ms between passes */
  intervalMs: number;
  /** µs since the epoch */
  now?: () => number;
  /** batch bounds */
  maxPlaybooks?: number;
  maxRows?: number;
  sink?: RetentionSink;
}

const DAY_US = 86_400 * 1e6;

export class Retention {
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<PassResult> | null = null;
  private stopped = false;

  constructor(private readonly target: MaintenanceTarget, private readonly options: RetentionOptions) {
    this.now = options.now ?? nowMicros;
  }

  get enabled(): boolean {
    return this.options.retentionDays !== null || this.options.expireRunningAfter !== null;
  }

  /** Run a pass now, then one every interval (a pass never overlaps the previous one). */
  start(): void {
    if (!this.enabled || this.stopped) return;
    const loop = () => {
      this.timer = null;
      void this.runOnce().finally(() => {
        if (!this.stopped) { this.timer = setTimeout(loop, this.options.intervalMs); this.timer.unref(); }
      });
    };
    loop();
  }

  /** Stop scheduling; resolves when the pass in progress (if any) has finished its current batches. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.running) await this.running.catch(() => undefined);
  }

  /** The task for this moment (cutoffs move with the clock). */
  task(): MaintenanceTask {
    const now = this.now();
    const { retentionDays, expireRunningAfter } = this.options;
    return {
      deleteStartedBefore: retentionDays === null ? null : now - retentionDays * DAY_US,
      expireStartedBefore: expireRunningAfter === null ? null : now - expireRunningAfter * 1e6,
      now,
      maxPlaybooks: this.options.maxPlaybooks ?? 16,
      maxRows: this.options.maxRows ?? 20_000,
    };
  }

  /** One pass: every shard in parallel, batch after batch until each has nothing left. */
  runOnce(): Promise<PassResult> {
    if (this.running) return this.running;
    const pass = this.pass().finally(() => { this.running = null; });
    this.running = pass;
    return pass;
  }

  private async pass(): Promise<PassResult> {
    const result: PassResult = { deleted: {}, expired: [0, 0, 0], batches: 0, errors: 0 };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: this.target.size }, (_, shard) => this.drain(shard, result)));
    const at = this.now();
    this.options.sink?.onPass(result, at);
    const deletedPlaybooks = result.deleted.playbook ?? 0;
    if (deletedPlaybooks > 0) {
      log.info('retention deleted playbooks', {
        retentionDays: this.options.retentionDays, ...prefixed('deleted', result.deleted), ms: Math.round(performance.now() - t0),
      });
    }
    if (result.expired[0] > 0) {
      log.info('expired running playbooks', {
        expireRunningAfter: this.options.expireRunningAfter,
        playbooks: result.expired[0], plays: result.expired[1], tasks: result.expired[2],
      });
    }
    return result;
  }

  private async drain(shard: number, result: PassResult): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      let reply: MaintainReply;
      try {
        reply = await this.target.maintain(shard, this.task());
      } catch (err) {
        result.errors++;
        log.error('retention batch failed', { shard, err: errText(err) });
        return;
      }
      result.batches++;
      if (reply.status !== 200) {
        result.errors++;
        log.warn('retention batch not run; retrying on the next pass', { shard, status: reply.status });
        return;
      }
      if (reply.deleted) {
        reply.deleted.forEach((ids, code) => {
          if (ids.length) result.deleted[RESOURCE_TYPES[code]!] = (result.deleted[RESOURCE_TYPES[code]!] ?? 0) + ids.length;
        });
      }
      for (let i = 0; i < 3; i++) result.expired[i]! += reply.expired[i]!;
      if (!reply.more) return;
      // let HTTP traffic through between batches
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

function prefixed(prefix: string, counts: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts)) out[`${prefix}_${k}s`] = v;
  return out;
}

/** Batches through the shard pool; what they delete leaves the front's directory via `forget`. */
export function poolTarget(pool: Shards, forget: (deleted: number[][]) => void): MaintenanceTarget {
  return {
    size: pool.size,
    maintain(shard, task) {
      return new Promise((resolve) => {
        pool.send(shard, { k: 'maintain', rid: 0, task }, (r: ShardToFront) => {
          if (r.k === 'maintain') {
            if (r.deleted) forget(r.deleted);
            resolve(r);
          } else {
            resolve({ k: 'maintain', rid: 0, status: (r as { status: number }).status ?? 503, deleted: null, expired: [0, 0, 0], more: false });
          }
        }, null);
      });
    },
  };
}
