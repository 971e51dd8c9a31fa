// The shards of a cluster node (DESIGN.md § "Scale beyond one machine"): the
// partitions this node owns run in local shard workers (a ShardPool opened one
// partition at a time); every other partition is reached over NATS
// request/reply on `logbook.rpc.<p>`, which only its owner subscribes to. The
// front sees one Shards whatever node it runs on: every node answers every request.
//
// Ownership. Safety comes from the fence (fence.ts): a node takes a partition by
// appending a fence record, after which the previous owner's appends fail and it
// drops the partition, so no write is acknowledged by two owners. Liveness comes
// from heartbeats on `logbook.hb` (every 500 ms, listing the partitions a node
// owns with their epochs) and rendezvous hashing of partitions over the nodes
// heard within the lease (3 s): each node takes the partitions it should own and
// that nobody owns, or whose owner is gone; a joining node takes its share from
// live owners after a short grace; an owner that sees a higher epoch for one of
// its partitions (it was paused, and another node fenced it) releases it at once.
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Errors } from '../api/errors.js';
import { errText, log } from '../log.js';
import { ShardPool, type PoolOptions, type ReplyHandler } from '../shard/pool.js';
import { decode, encode, type ErrorReply, type FrontToShard, type ReadyMessage, type Reply } from '../shard/protocol.js';
import type { Shards } from '../shard/shards.js';
import type { StreamChange } from '../shard/changes.js';
import type { ClusterConfig } from './config.js';
import { takeOwnership } from './fence.js';
import type { PartitionLog } from './partition_log.js';
import { rendezvousRanking } from './rendezvous.js';

export const HEARTBEAT_SUBJECT = 'logbook.hb';
export const rpcSubject = (partition: number): string => `logbook.rpc.${partition}`;

export interface ClusterTimings {
  heartbeatMs: number;
  /** a node not heard from for this long is gone: its partitions are taken over */
  leaseMs: number;
  /** a node that (re)joined waits this long before taking partitions from live owners */
  joinGraceMs: number;
  /** a request forwarded to another node's partition fails with 503 after this long */
  rpcTimeoutMs: number;
}
export const DEFAULT_TIMINGS: ClusterTimings = { heartbeatMs: 500, leaseMs: 3000, joinGraceMs: 2000, rpcTimeoutMs: 15_000 };

interface Heartbeat { node: string; owned: Array<[number, number]>; leaving?: boolean }
interface Peer { seenAt: number; owned: Map<number, number> }
interface Owned { epoch: number; sub: Subscription; since: number }

export interface ClusterStatus {
  node: string;
  nodes: string[];
  partitions: number;
  /** partitions this node owns: partition → epoch */
  owned: Record<string, number>;
  /** partitions this node keeps a standby of */
  standby: number[];
  /** partitions no live node owns (requests for them get 503) */
  unowned: number[];
  nats: 'connected' | 'reconnecting' | 'closed';
}

export class ClusterShards implements Shards {
  readonly size: number;
  private readonly pool: ShardPool;
  private readonly owned = new Map<number, Owned>();
  private readonly taking = new Set<number>();
  /** partitions this node keeps a standby of (a worker tailing the stream, not serving) */
  private readonly standbys = new Set<number>();
  private readonly startingStandby = new Set<number>();
  private readonly peers = new Map<string, Peer>();
  private joinedAt = performance.now();
  private lastBeat = performance.now();
  private timers: NodeJS.Timeout[] = [];
  private reconciling = false;
  private closing = false;
  private remoteInFlight = 0;
  private natsState: ClusterStatus['nats'] = 'connected';
  onRestart: ((ready: ReadyMessage) => void) | null = null;
  /** counters for /metrics */
  readonly counters = { takeovers: 0, released: 0, lost: 0, forwarded: 0, forwardFailed: 0 };

  constructor(
    private readonly config: ClusterConfig,
    private readonly nc: NatsConnection,
    private readonly log: PartitionLog,
    poolOptions: PoolOptions,
    /** the label catalogue, for a partition's worker once it has started (its replica) */
    private readonly labels: () => Array<[number, string]>,
    private readonly timings: ClusterTimings = DEFAULT_TIMINGS,
  ) {
    this.size = config.partitions;
    this.pool = ShardPool.idle({ ...poolOptions, shards: config.partitions, restartOnExit: false });
    this.pool.onExit = (partition, code) => this.workerExited(partition, code);
  }

  get queued(): Int32Array { return this.pool.queued; }
  get restarts(): number[] { return this.pool.restarts; }
  get onChanges(): ((shard: number, changes: StreamChange[]) => void) | null { return this.pool.onChanges; }
  set onChanges(f: ((shard: number, changes: StreamChange[]) => void) | null) { this.pool.onChanges = f; }
  get inFlight(): number { return this.pool.inFlight + this.remoteInFlight; }

  /** Join: heartbeats, then take this node's share. Resolves once a first round of takeovers settled. */
  async start(): Promise<void> {
    this.nc.subscribe(HEARTBEAT_SUBJECT, { callback: (err, m) => { if (!err) this.heard(decode<Heartbeat>(m.data)); } });
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === 'disconnect' || s.type === 'reconnecting') this.natsState = 'reconnecting';
        else if (s.type === 'reconnect') this.natsState = 'connected';
        else if (s.type === 'close') this.natsState = 'closed';
      }
    })().catch(() => {});
    this.beat();
    this.timers.push(setInterval(() => this.beat(), this.timings.heartbeatMs));
    // hear the other nodes before deciding anything: a lease's worth, at most
    await new Promise((r) => setTimeout(r, Math.min(this.timings.leaseMs, this.timings.heartbeatMs * 3)));
    await this.reconcile();
    this.timers.push(setInterval(() => { void this.reconcile(); }, this.timings.heartbeatMs));
  }

  shardOf(playbookId: number): number { return playbookId % this.size; }

  isUp(partition: number): boolean { return this.pool.isUp(partition) || this.remoteOwner(partition) !== null; }

  down(): number[] {
    const out: number[] = [];
    for (let p = 0; p < this.size; p++) if (!this.isUp(p)) out.push(p);
    return out;
  }

  send<C>(partition: number, message: FrontToShard, handler: ReplyHandler<C> | null, context?: C): void {
    if (this.owned.has(partition) && this.pool.isUp(partition)) return this.pool.send(partition, message, handler, context);
    if (!handler) return; // label replica changes: the other nodes learn them from the label stream themselves
    this.forward(partition, message, handler as ReplyHandler<unknown>, context);
  }

  broadcast(message: FrontToShard): void { this.pool.broadcast(message); }

  crash(partition: number): boolean { return this.pool.crash(partition); }

  /** A request for a partition another node owns: NATS request/reply to its owner. */
  private forward(partition: number, message: FrontToShard, handler: ReplyHandler<unknown>, context: unknown): void {
    this.remoteInFlight++;
    this.counters.forwarded++;
    this.nc.request(rpcSubject(partition), encode(message), { timeout: this.timings.rpcTimeoutMs }).then((m) => {
      this.remoteInFlight--;
      handler(decode<Reply>(m.data), context);
    }, (err: unknown) => {
      this.remoteInFlight--;
      this.counters.forwardFailed++;
      // no responders: nobody owns it right now (a takeover is under way); a timeout: its owner is gone or stuck
      handler(unavailable(partition, errText(err)), context);
    });
  }

  /** Requests from other nodes' fronts for a partition this node owns. */
  private serve(partition: number): Subscription {
    return this.nc.subscribe(rpcSubject(partition), {
      callback: (err, m) => {
        if (err) return;
        let message: FrontToShard;
        try { message = decode<FrontToShard>(m.data); } catch { return; }
        if (!this.owned.has(partition) || !this.pool.isUp(partition)) {
          m.respond(encode(unavailable(partition, 'its owner is releasing it')));
          return;
        }
        this.pool.send(partition, message, (reply: Reply) => { m.respond(encode(reply)); }, null);
      },
    });
  }

  // ---- membership ----

  private beat(leaving = false): void {
    const now = performance.now();
    // a timer this late means the process was stopped (SIGSTOP, a VM pause): the others
    // have taken our partitions meanwhile; rejoin as a new node would (grace before taking)
    if (now - this.lastBeat > this.timings.leaseMs) {
      log.warn('this node was paused longer than the lease; rejoining', { node: this.config.node, pausedMs: Math.round(now - this.lastBeat) });
      this.joinedAt = now;
    }
    this.lastBeat = now;
    const hb: Heartbeat = { node: this.config.node, owned: [...this.owned].map(([p, o]) => [p, o.epoch]), ...(leaving ? { leaving } : {}) };
    try { this.nc.publish(HEARTBEAT_SUBJECT, encode(hb)); } catch { /* closed or reconnecting: the next beat */ }
  }

  private heard(hb: Heartbeat): void {
    if (hb.node === this.config.node) return;
    if (hb.leaving) { this.peers.delete(hb.node); return; }
    this.peers.set(hb.node, { seenAt: performance.now(), owned: new Map(hb.owned) });
    // another node owns one of ours with a higher epoch: it fenced us (we were paused); let go now
    for (const [p, epoch] of hb.owned) {
      const mine = this.owned.get(p);
      if (mine && epoch > mine.epoch) void this.release(p, `${hb.node} owns it at epoch ${epoch}`);
    }
  }

  private liveNodes(): string[] {
    const now = performance.now();
    const nodes = [this.config.node];
    for (const [node, peer] of this.peers) {
      if (now - peer.seenAt <= this.timings.leaseMs) nodes.push(node);
      else if (now - peer.seenAt > this.timings.leaseMs * 20) this.peers.delete(node);
    }
    return nodes.sort();
  }

  /** The live node (not this one) that announces the highest epoch for a partition. */
  private remoteOwner(partition: number): { node: string; epoch: number } | null {
    const now = performance.now();
    let best: { node: string; epoch: number } | null = null;
    for (const [node, peer] of this.peers) {
      if (now - peer.seenAt > this.timings.leaseMs) continue;
      const epoch = peer.owned.get(partition);
      if (epoch !== undefined && (best === null || epoch > best.epoch)) best = { node, epoch };
    }
    return best;
  }

  // ---- ownership ----

  private async reconcile(): Promise<void> {
    if (this.reconciling || this.closing) return;
    this.reconciling = true;
    try {
      const live = this.liveNodes();
      const graceOver = performance.now() - this.joinedAt >= this.timings.joinGraceMs;
      const takes: Array<Promise<void>> = [];
      for (let p = 0; p < this.size; p++) {
        if (this.owned.has(p) || this.taking.has(p) || this.startingStandby.has(p)) continue;
        const [owner, standby] = rendezvousRanking(p, live);
        if (owner !== this.config.node) {
          // the second in line keeps a standby; a standby that is no longer second goes
          if (standby === this.config.node && !this.standbys.has(p)) void this.startStandby(p);
          else if (standby !== this.config.node && this.standbys.has(p)) void this.stopStandby(p);
          continue;
        }
        // a live owner keeps it until our own heartbeats have been seen for a while (no ping-pong on a blip)
        if (this.remoteOwner(p) !== null && !graceOver) continue;
        takes.push(this.take(p));
      }
      await Promise.all(takes);
    } finally {
      this.reconciling = false;
    }
  }

  private async take(partition: number): Promise<void> {
    this.taking.add(partition);
    const t0 = performance.now();
    try {
      const ownership = await takeOwnership(this.log, partition, this.config.node);
      let ready: ReadyMessage;
      let promoted: { entries: number; ms: number; results: number } | null = null;
      if (this.standbys.has(partition)) {
        // a standby has the partition up to a recent position: it reads the tail up to our fence
        this.standbys.delete(partition);
        promoted = await this.promote(partition, ownership.epoch, ownership.fenceSeq);
        ready = { k: 'ready', shard: partition, maxIds: [], ids: [], streams: [], stream: [0, 0],
          recovery: { snapshots: 0, journalEntries: promoted.entries, eventsApplied: 0, ms: promoted.ms, results: promoted.results } };
        this.pool.markUp(partition);
      } else {
        ready = await this.pool.open(partition, { cluster: this.partitionInit(ownership.epoch, ownership.fenceSeq, false) });
      }
      if (this.closing) { await this.pool.release(partition); return; }
      const labels = this.labels();
      if (labels.length) this.pool.send(partition, { k: 'labels', upsert: labels, remove: [] }, null);
      this.owned.set(partition, { epoch: ownership.epoch, sub: this.serve(partition), since: Date.now() });
      this.counters.takeovers++;
      this.beat();
      this.onRestart?.(ready);
      log.info('partition taken', {
        partition, epoch: ownership.epoch, from: ownership.previous?.node ?? null, ms: Math.round(performance.now() - t0),
        fromStandby: promoted !== null, replayedEntries: ready.recovery.journalEntries, results: ready.recovery.results,
      });
    } catch (err) {
      log.warn('taking a partition failed; retrying later', { partition, err: errText(err) });
      if (this.pool.running(partition) && !this.owned.has(partition)) await this.pool.release(partition).catch(() => {});
    } finally {
      this.taking.delete(partition);
    }
  }

  private partitionInit(epoch: number, fenceSeq: number, standby: boolean) {
    const c = this.config;
    return { servers: c.servers, node: c.node, partitions: c.partitions, replicas: c.replicas, epoch, fenceSeq, standby };
  }

  private promote(partition: number, epoch: number, fenceSeq: number): Promise<{ entries: number; ms: number; results: number }> {
    return new Promise((resolve, reject) => {
      this.pool.control(partition, { k: 'promote', rid: 0, epoch, fenceSeq }, (r: Reply) => {
        if (r.k === 'promoted') resolve(r);
        else reject(new Error(`promotion failed: ${'body' in r ? r.body : r.k}`));
      });
    });
  }

  private async startStandby(partition: number): Promise<void> {
    this.startingStandby.add(partition);
    try {
      const ready = await this.pool.openStandby(partition, { cluster: this.partitionInit(0, 0, true) });
      if (this.closing) { await this.pool.release(partition); return; }
      this.standbys.add(partition);
      log.info('standby started', { partition, entries: ready.recovery.journalEntries, results: ready.recovery.results, ms: Math.round(ready.recovery.ms) });
    } catch (err) {
      log.warn('starting a standby failed; retrying later', { partition, err: errText(err) });
    } finally {
      this.startingStandby.delete(partition);
    }
  }

  private async stopStandby(partition: number): Promise<void> {
    if (!this.standbys.delete(partition)) return;
    await this.pool.release(partition);
  }

  private async release(partition: number, why: string): Promise<void> {
    const owned = this.owned.get(partition);
    if (!owned) return;
    this.owned.delete(partition);
    this.counters.released++;
    owned.sub.unsubscribe();
    log.warn('partition released', { partition, epoch: owned.epoch, why });
    await this.pool.release(partition);
  }

  /** A partition's worker exited by itself: its commit was fenced or not acknowledged. */
  private workerExited(partition: number, code: number): void {
    if (this.standbys.delete(partition)) { log.warn('standby stopped', { partition, code }); return; }
    const owned = this.owned.get(partition);
    if (!owned) return; // released on purpose
    this.owned.delete(partition);
    owned.sub.unsubscribe();
    this.counters.lost++;
    log.warn('partition lost (its worker stopped)', { partition, epoch: owned.epoch, code });
    this.beat();
  }

  clusterStatus(): ClusterStatus {
    const owned: Record<string, number> = {};
    for (const [p, o] of [...this.owned].sort((a, b) => a[0] - b[0])) owned[String(p)] = o.epoch;
    return {
      node: this.config.node, nodes: this.liveNodes(), partitions: this.size, owned, standby: [...this.standbys].sort((a, b) => a - b),
      unowned: this.down(), nats: this.natsState,
    };
  }

  /** Leave: tell the others (they take over at once), finish and stop the local partitions. */
  async close(): Promise<void> {
    this.closing = true;
    for (const t of this.timers) clearInterval(t);
    for (const o of this.owned.values()) o.sub.unsubscribe();
    this.owned.clear();
    this.beat(true);
    await this.pool.close();
  }
}

function unavailable(partition: number, why: string): ErrorReply {
  return { k: 'error', rid: 0, status: 503, body: Errors.unavailable(`Partition ${partition} is unavailable (${why}); retry shortly.`) };
}
