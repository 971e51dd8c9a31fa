// The shards of a cluster node (docs/cluster.md): the
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
import { handleSafely, ShardPool, type PoolOptions } from '../shard/pool.js';
import { CommitChanges, decode, encode, type ErrorReply, type FrontToShard, type MaintainReply, type ReadyMessage, type Reply } from '../shard/protocol.js';
import { poolTarget, type MaintenanceTarget } from '../retention.js';
import type { ClusterStatus, DelayStats, ReplyHandler, Shards } from '../shard/shards.js';
import type { StreamChange } from '../shard/changes.js';
import type { ClusterConfig } from '../config/cluster.js';
import { takeOwnership } from './fence.js';
import type { PartitionLog } from './partition_log.js';
import { rendezvousRanking } from './rendezvous.js';

export const HEARTBEAT_SUBJECT = 'logbook.hb';
export const CHANGES_SUBJECT = 'logbook.ev';
export const rpcSubject = (partition: number): string => `logbook.rpc.${partition}`;
/** a node taking a partition from a live owner asks it to let go first (a planned move, no failed writes) */
export const releaseSubject = (partition: number): string => `logbook.release.${partition}`;

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

/** owned: [partition, epoch, last sequence appended] */
interface Heartbeat { node: string; owned: Array<[number, number, number?]>; leaving?: boolean }
interface Peer { seenAt: number; owned: Map<number, number>; positions: Map<number, number> }
interface Owned { epoch: number; sub: Subscription; releaseSub: Subscription; since: number }

export class ClusterShards implements Shards {
  readonly size: number;
  private readonly pool: ShardPool;
  private readonly owned = new Map<number, Owned>();
  private readonly taking = new Set<number>();
  /** partitions this node keeps a standby of (a worker tailing the stream, not serving) */
  private readonly standbys = new Set<number>();
  private readonly startingStandby = new Set<number>();
  /** where this node's workers are in their partitions' streams */
  private readonly positions = new Map<number, number>();
  private readonly peers = new Map<string, Peer>();
  private joinedAt = performance.now();
  private lastBeat = performance.now();
  private timers: NodeJS.Timeout[] = [];
  private reconciling = false;
  /** after a pause past the lease: no ownership decisions before this (leaseLapsed) */
  private quietUntil = 0;
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
    /** throwaway local blob stores go under here (null: in memory) */
    private readonly blobDir: string | null = null,
    private readonly timings: ClusterTimings = DEFAULT_TIMINGS,
  ) {
    this.size = config.partitions;
    this.pool = ShardPool.idle({ ...poolOptions, shards: config.partitions, restartOnExit: false });
    this.pool.onExit = (partition, code) => this.workerExited(partition, code);
    this.pool.onPosition = (partition, seq) => { this.positions.set(partition, seq); };
  }

  get queued(): Int32Array { return this.pool.queued; }
  get restarts(): number[] { return this.pool.restarts; }
  /**
   * Live stream: a partition's committed changes, from whichever node owns it. The
   * owner publishes each commit's changes once on `logbook.ev.<p>` (after its
   * PubAck: durable only); every node's front fans them out to its subscribers.
   */
  onChanges: ((shard: number, changes: CommitChanges) => void) | null = null;
  get inFlight(): number { return this.pool.inFlight + this.remoteInFlight; }

  /** Join: heartbeats, then take this node's share (in the background). */
  async start(): Promise<void> {
    this.nc.subscribe(HEARTBEAT_SUBJECT, { callback: (err, m) => { if (!err) this.heard(decode<Heartbeat>(m.data)); } });
    this.nc.subscribe(`${CHANGES_SUBJECT}.*`, {
      callback: (err, m) => {
        if (err) return;
        const partition = Number(m.subject.slice(CHANGES_SUBJECT.length + 1));
        if (Number.isInteger(partition) && partition >= 0 && partition < this.size) this.onChanges?.(partition, CommitChanges.decoded(decode<StreamChange[]>(m.data)));
      },
    });
    this.pool.onChanges = (partition, changes) => {
      try { this.nc.publish(`${CHANGES_SUBJECT}.${partition}`, changes.bytes); } catch (err) { log.warn('publishing stream changes failed', { partition, err: errText(err) }); }
    };
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type !== 'ping' && s.type !== 'staleConnection') log.info('nats connection status', { type: s.type, server: 'server' in s ? s.server : undefined });
        if (s.type === 'disconnect' || s.type === 'reconnecting') this.natsState = 'reconnecting';
        else if (s.type === 'reconnect') this.natsState = 'connected';
        else if (s.type === 'close') this.natsState = 'closed';
      }
    })().catch(() => {});
    this.beat();
    this.timers.push(setInterval(() => this.beat(), this.timings.heartbeatMs));
    // hear the other nodes before deciding anything: a lease's worth, at most
    await new Promise((r) => setTimeout(r, Math.min(this.timings.leaseMs, this.timings.heartbeatMs * 3)));
    // takeovers run in the background: the node serves at once (requests for a partition
    // being taken wait for it in forward(); /healthz lists what no node owns yet)
    void this.reconcile();
    this.timers.push(setInterval(() => { void this.reconcile(); }, this.timings.heartbeatMs));
  }

  shardOf(playbookId: number): number { return playbookId % this.size; }

  // admission: what this node can see, its own partitions (a forwarded request is admitted by its owner's pool)
  overloaded(partition: number): boolean { return this.pool.isUp(partition) && this.pool.overloaded(partition); }
  everyOverloaded(): boolean { return this.owned.size === this.size && this.pool.everyOverloaded(); }
  refusedAtFront(target: number | 'every'): void { this.pool.refusedAtFront(target); }
  get shedByLength(): number { return this.pool.shedByLength; }
  get shedByDelay(): number { return this.pool.shedByDelay; }
  get shedByLengthAtHead(): number { return this.pool.shedByLengthAtHead; }
  takeDelayStats(): DelayStats[] { return this.pool.takeDelayStats(); }

  /** The partitions this node owns and serves, with their epochs. */
  ownedPartitions(): Array<[partition: number, epoch: number]> {
    const out: Array<[number, number]> = [];
    for (const [p, o] of this.owned) if (this.pool.isUp(p)) out.push([p, o.epoch]);
    return out;
  }

  isUp(partition: number): boolean { return this.pool.isUp(partition) || this.remoteOwner(partition) !== null; }

  down(): number[] {
    const out: number[] = [];
    for (let p = 0; p < this.size; p++) if (!this.isUp(p)) out.push(p);
    return out;
  }

  send<C>(partition: number, message: FrontToShard, handler: ReplyHandler<C> | null, context?: C, internal = false): void {
    if (this.owned.has(partition) && !this.leaseLapsed() && this.pool.isUp(partition)) return this.pool.send(partition, message, handler, context, internal);
    if (!handler) return; // label replica changes: the other nodes learn them from the label stream themselves
    this.forward(partition, message, handler as ReplyHandler<unknown>, context);
  }

  broadcast(message: FrontToShard): void { this.pool.broadcast(message); }

  crash(partition: number): boolean { return this.pool.crash(partition); }
  stall(partition: number, ms: number): boolean { return this.pool.stall(partition, ms); }

  /** A request for a partition another node owns: NATS request/reply to its owner. */
  private forward(partition: number, message: FrontToShard, handler: ReplyHandler<unknown>, context: unknown): void {
    this.remoteInFlight++;
    this.counters.forwarded++;
    const bytes = encode(message);
    const giveUpAt = performance.now() + this.timings.leaseMs + this.timings.joinGraceMs;
    const attempt = (): void => {
      // a request the owner took and will never answer (it died): failed when its lease runs
      // out rather than at the request timeout (the outcome is as unknown either way)
      const owner = this.remoteOwner(partition)?.node ?? null;
      let settled = false;
      const abandon = (why: string) => {
        if (settled) return;
        settled = true;
        this.remoteInFlight--;
        this.counters.forwardFailed++;
        handleSafely(handler, unavailable(partition, why), context);
      };
      const waiting = owner === null ? null : this.forwardsTo(owner);
      waiting?.add(abandon);
      this.nc.request(rpcSubject(partition), bytes, { timeout: this.timings.rpcTimeoutMs }).then((m) => {
        waiting?.delete(abandon);
        if (settled) return;
        settled = true;
        this.remoteInFlight--;
        handleSafely(handler, decode<Reply>(m.data), context);
      }, (err: unknown) => {
        waiting?.delete(abandon);
        if (settled) return;
        // No responders: nobody owns the partition this instant (it is moving): the request
        // reached nobody, so it is safe to send again, for about as long as a takeover takes.
        if (isNoResponders(err) && performance.now() < giveUpAt && !this.closing) { setTimeout(attempt, 100); return; }
        // a timeout: its owner is gone or stuck (its lease will run out, and another node take it)
        abandon(isNoResponders(err) ? 'no node owns it right now' : (err instanceof Error ? err.message : String(err)));
      });
    };
    attempt();
  }

  /** Requests from other nodes' fronts for a partition this node owns. */
  private serve(partition: number): Subscription {
    return this.nc.subscribe(rpcSubject(partition), {
      callback: (err, m) => {
        if (err) return;
        let message: FrontToShard;
        try { message = decode<FrontToShard>(m.data); } catch { return; }
        // woken from a pause past the lease: another node owns it now and answers this request;
        // an answer from here would come from state that may be stale (a 409 for a seq it never saw)
        if (this.leaseLapsed()) return;
        if (!this.owned.has(partition) || !this.pool.isUp(partition)) {
          m.respond(encode(unavailable(partition, 'its owner is releasing it')));
          return;
        }
        this.pool.send(partition, message, (reply: Reply) => { m.respond(encode(reply)); }, null);
      },
    });
  }

  // ---- membership ----

  /**
   * Whether this node's own lease ran out: its heartbeat timer has not run for longer
   * than the lease, so the process was stopped (SIGSTOP, a VM or GC pause) and the others
   * have taken its partitions meanwhile (fencing them). Checked before anything is served
   * from a partition, because after a pause the requests that waited in the sockets are
   * read before the late timer runs. Once lapsed, the node drops every partition at once
   * (their writers are fenced anyway: no stale write can land) and rejoins as a new node
   * would, taking its share back after the join grace.
   */
  private leaseLapsed(): boolean {
    const now = performance.now();
    if (now - this.lastBeat <= this.timings.leaseMs) return false;
    log.warn('this node was paused longer than the lease; dropping its partitions and rejoining', {
      node: this.config.node, pausedMs: Math.round(now - this.lastBeat), owned: [...this.owned.keys()],
    });
    this.joinedAt = now;
    this.lastBeat = now;
    // what it knows of the others is from before the pause (they all look gone): take nothing
    // until their heartbeats have been heard again, or it would fence every live owner
    this.quietUntil = now + this.timings.leaseMs + this.timings.joinGraceMs;
    for (const p of [...this.owned.keys()]) void this.release(p, 'this node was paused past its lease');
    this.beat();
    return true;
  }

  private beat(leaving = false): void {
    // a timer this late means the process was stopped: leaseLapsed() drops what it owned
    if (!leaving) this.leaseLapsed();
    const now = performance.now();
    this.lastBeat = now;
    const hb: Heartbeat = {
      node: this.config.node, owned: [...this.owned].map(([p, o]) => [p, o.epoch, this.positions.get(p) ?? 0]), ...(leaving ? { leaving } : {}),
    };
    try { this.nc.publish(HEARTBEAT_SUBJECT, encode(hb)); } catch { /* closed or reconnecting: the next beat */ }
  }

  private heard(hb: Heartbeat): void {
    if (hb.node === this.config.node) return;
    if (hb.leaving) { this.peers.delete(hb.node); this.gone(hb.node); return; }
    this.peers.set(hb.node, {
      seenAt: performance.now(), owned: new Map(hb.owned.map(([p, epoch]) => [p, epoch])),
      positions: new Map(hb.owned.map(([p, , seq]) => [p, seq ?? 0])),
    });
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
      if (now - peer.seenAt <= this.timings.leaseMs) { nodes.push(node); continue; }
      this.gone(node);
      if (now - peer.seenAt > this.timings.leaseMs * 20) this.peers.delete(node);
    }
    return nodes.sort();
  }

  /** requests forwarded to each node and not answered yet: how to fail them */
  private readonly forwards = new Map<string, Set<(why: string) => void>>();
  private forwardsTo(node: string): Set<(why: string) => void> {
    let set = this.forwards.get(node);
    if (!set) this.forwards.set(node, set = new Set());
    return set;
  }

  /** A node's lease ran out (or it left): what it was asked and did not answer gets 503 now. */
  private gone(node: string): void {
    const set = this.forwards.get(node);
    if (!set?.size) return;
    const pending = [...set];
    set.clear();
    for (const abandon of pending) abandon(`its owner ${node} stopped answering; the outcome of a write is unknown`);
  }

  /** Resolves once `node` is no longer live (its lease ran out, or it left); polled, gives up after 10 s. */
  private leaseOver(node: string): Promise<void> {
    return new Promise<void>((resolve) => {
      const t0 = performance.now();
      const timer = setInterval(() => {
        const peer = this.peers.get(node);
        const gone = peer === undefined || performance.now() - peer.seenAt > this.timings.leaseMs;
        if (gone) { clearInterval(timer); resolve(); } else if (performance.now() - t0 > 10_000) clearInterval(timer);
      }, 100);
    });
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
    // woken from a pause, this timer may run before the heartbeat's: what it knows of the
    // others is from before the pause (they all look gone), and acting on it would fence
    // every live owner. leaseLapsed() notices the pause and starts the quiet period.
    if (this.reconciling || this.closing || this.leaseLapsed() || performance.now() < this.quietUntil) return;
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
        if (this.remoteOwner(p) !== null) {
          // a live owner keeps it until our own heartbeats have been seen for a while (no ping-pong on a blip)
          if (!graceOver) continue;
          // A planned move: this node first reads the partition as a standby, then asks the
          // owner to let go. Between the owner letting go and this node serving it, only the
          // records the standby has not read yet are read, not the partition's history
          // (which, on a loaded machine, took tens of seconds during which it had no owner).
          if (!this.standbys.has(p)) {
            if (!this.pool.running(p)) void this.startStandby(p);
            continue;
          }
          if ((this.standbyLag(p) ?? 0) > PLANNED_MOVE_MAX_LAG) continue;
        }
        // our own worker of it is still draining (released a moment ago, or a standby being stopped):
        // a fence now would fail that worker's last commits, which it may be answering, and
        // pool.open would refuse a second worker after the fence had already cost an epoch
        if (this.pool.running(p) && !this.standbys.has(p)) continue;
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
      const owner = this.remoteOwner(partition);
      if (owner !== null) {
        // a planned move (this node joined): the owner finishes its commits and lets go first,
        // so no write fails on the fence; requests meanwhile wait for the new owner (forward()).
        // An owner whose lease runs out meanwhile (it died or was stopped) is not waited for.
        await Promise.race([
          this.nc.request(releaseSubject(partition), encode({ node: this.config.node }), { timeout: 5000 }),
          this.leaseOver(owner.node).then(() => { throw new Error(`its owner ${owner.node} is gone`); }),
        ]).catch((err: unknown) => log.warn('the owner did not release the partition; fencing it', { partition, err: errText(err) }));
      }
      const ownership = await takeOwnership(this.log, partition, this.config.node);
      let ready: ReadyMessage;
      let promoted: { entries: number; ms: number; results: number } | null = null;
      if (this.standbys.has(partition)) {
        // a standby has the partition up to a recent position: it reads the tail up to our fence
        this.standbys.delete(partition);
        // It reads on from wherever it is (its reader repairs itself after a NATS fault:
        // partition_worker.ts follow), however far behind: that is never more than a full
        // replay. Only a standby that stopped moving at all is given up for a full replay.
        try {
          promoted = await this.whileMoving(partition, this.promote(partition, ownership.epoch, ownership.fenceSeq));
        } catch (err) {
          log.warn('promoting the standby failed; replaying the partition', { partition, err: errText(err) });
          await this.pool.release(partition);
        }
      }
      if (promoted) {
        ready = { k: 'ready', shard: partition, maxIds: [], ids: [], streams: [], stream: [0, 0],
          recovery: { snapshots: 0, journalEntries: promoted.entries, eventsApplied: 0, ms: promoted.ms, results: promoted.results } };
        this.pool.markUp(partition);
      } else {
        ready = await this.pool.open(partition, { cluster: this.partitionInit(ownership.epoch, ownership.fenceSeq, false) });
      }
      if (this.closing) { await this.pool.release(partition); return; }
      this.owned.set(partition, {
        epoch: ownership.epoch, sub: this.serve(partition), since: Date.now(),
        releaseSub: this.nc.subscribe(releaseSubject(partition), {
          callback: (err, m) => {
            if (err) return;
            void this.release(partition, 'a node that should own it asked for it').finally(() => { try { m.respond(encode({ released: true })); } catch { /* asker gone */ } });
          },
        }),
      });
      this.counters.takeovers++;
      this.beat();
      // the front gives the worker the label replica, in this same turn (before any request can reach it)
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
    return { servers: c.servers, auth: c.auth, node: c.node, partitions: c.partitions, replicas: c.replicas, epoch, fenceSeq, standby, blobDir: this.blobDir };
  }

  /** `promotion`, or an error once the standby's position has not moved for PROMOTE_STALL_MS */
  private whileMoving<T>(partition: number, promotion: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let seen = this.positions.get(partition);
      let movedAt = performance.now();
      const timer = setInterval(() => {
        const now = this.positions.get(partition);
        if (now !== seen) { seen = now; movedAt = performance.now(); return; }
        if (performance.now() - movedAt < PROMOTE_STALL_MS) return;
        clearInterval(timer);
        reject(new Error(`the standby has not moved for ${PROMOTE_STALL_MS} ms (at ${seen ?? 'an unknown position'})`));
      }, 500);
      promotion.then((v) => { clearInterval(timer); resolve(v); }, (e) => { clearInterval(timer); reject(e); });
    });
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
    this.positions.delete(partition);
    this.counters.released++;
    owned.sub.unsubscribe();
    owned.releaseSub.unsubscribe();
    log.warn('partition released', { partition, epoch: owned.epoch, why });
    await this.pool.release(partition);
  }

  /** A partition's worker exited by itself: its commit was fenced or not acknowledged. */
  private workerExited(partition: number, code: number): void {
    this.positions.delete(partition);
    if (this.standbys.delete(partition)) { log.warn('standby stopped', { partition, code }); return; }
    const owned = this.owned.get(partition);
    if (!owned) return; // released on purpose
    this.owned.delete(partition);
    owned.sub.unsubscribe();
    owned.releaseSub.unsubscribe();
    this.counters.lost++;
    log.warn('partition lost (its worker stopped)', { partition, epoch: owned.epoch, code });
    this.beat();
  }

  /** stream messages between the owner's last append (its heartbeat) and this node's standby */
  private standbyLag(partition: number): number | null {
    const owner = this.remoteOwner(partition);
    const ownerSeq = owner ? this.peers.get(owner.node)?.positions.get(partition) : undefined;
    if (ownerSeq === undefined) return null;
    return Math.max(0, ownerSeq - (this.positions.get(partition) ?? 0));
  }

  /** Retention and expiry batches: each node runs those of the partitions it owns (the others' are no-ops here). */
  maintenanceTarget(): MaintenanceTarget {
    const all = poolTarget(this, () => {});
    const idle: MaintainReply = { k: 'maintain', rid: 0, status: 200, deleted: null, expired: [0, 0, 0], more: false };
    return {
      size: this.size,
      maintain: (p, task) => (this.owned.has(p) && this.pool.isUp(p) ? all.maintain(p, task) : Promise.resolve(idle)),
    };
  }

  clusterStatus(): ClusterStatus {
    const owned: Record<string, number> = {};
    for (const [p, o] of [...this.owned].sort((a, b) => a[0] - b[0])) owned[String(p)] = o.epoch;
    return {
      node: this.config.node, nodes: this.liveNodes(), partitions: this.size, owned,
      standby: [...this.standbys].sort((a, b) => a - b).map((p) => ({ partition: p, lag: this.standbyLag(p) })),
      unowned: this.down(), nats: this.natsState,
    };
  }

  /** Leave: tell the others (they take over at once), finish and stop the local partitions. */
  async close(): Promise<void> {
    this.closing = true;
    for (const t of this.timers) clearInterval(t);
    for (const o of this.owned.values()) { o.sub.unsubscribe(); o.releaseSub.unsubscribe(); }
    this.owned.clear();
    this.beat(true);
    await this.pool.close();
  }
}

/** a planned move waits until this node's standby is at most this many stream messages behind the owner */
const PLANNED_MOVE_MAX_LAG = 100;

/**
 * A standby being promoted whose position has not moved for this long is given up and the
 * partition replayed from the start instead. Its own reader starts a new consumer after
 * 2 s without progress (partition_worker.ts), so this only catches a standby that is stuck.
 */
const PROMOTE_STALL_MS = 10_000;

function isNoResponders(err: unknown): boolean {
  return typeof (err as { isNoResponders?: unknown })?.isNoResponders === 'function' && (err as { isNoResponders(): boolean }).isNoResponders();
}

function unavailable(partition: number, why: string): ErrorReply {
  return { k: 'error', rid: 0, status: 503, body: Errors.unavailable(`Partition ${partition} is unavailable (${why}); retry shortly.`) };
}
