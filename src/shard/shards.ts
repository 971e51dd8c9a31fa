// What the front needs from the shards, whatever runs them: a ShardPool
// (src/shard/pool.ts: one worker thread per shard, this process) or, in cluster
// mode, the partitions of every node (src/cluster/cluster_shards.ts: local
// workers for the partitions this node owns, NATS request/reply for the rest).
// A shard index is a partition number in cluster mode.
import type { CommitChanges, FrontToShard, ReadyMessage, Reply, ShardToFront } from './protocol.js';

/** Called with the shard's reply, or an ErrorReply (the shard is gone, overloaded, or failed the request). */
export type ReplyHandler<C> = (reply: Reply, context: C) => void;

/** A shard's round trips since the last look, and the capacity admission reckons with. */
export interface DelayStats {
  replies: number; minMs: number; meanMs: number; maxMs: number;
  /** answers per second with a queue behind them (the decaying peak; 0 before any queue): what oversubscription is judged against */
  answerRatePerS: number;
}

export interface Shards {
  /** number of shards (partitions) */
  readonly size: number;
  /** the shard that owns a playbook */
  shardOf(playbookId: number): number;
  /**
   * send a message; `handler` gets the reply, or an ErrorReply (503 when the shard is down or overloaded).
   * `internal`: work the front owes, not a client's request (a label change's log entry): not
   * refused for overload, nor counted as a refusal, whatever the clients' traffic.
   */
  send<C>(shard: number, message: FrontToShard, handler: ReplyHandler<C> | null, context?: C, internal?: boolean): void;
  /** a message without reply to every shard that is up (label replica changes) */
  broadcast(message: FrontToShard): void;
  /** requests sent and not yet answered */
  readonly inFlight: number;
  isUp(shard: number): boolean;
  /** shards that are down */
  down(): number[];
  /**
   * Shards whose last write was refused for storage (503: disk full, a file-size
   * limit, the map size, a failing commit), with when and why; a write that
   * succeeds clears its shard. Reads keep working meanwhile (/healthz reports it).
   */
  writesRefused?(): Array<{ shard: number; since: number; detail: string }>;
  /** requests in flight per shard (/metrics) */
  readonly queued: Int32Array;
  /** restarts per shard since start-up (/metrics) */
  readonly restarts: number[];
  /** set by the front: a shard (re)started and recovered */
  onRestart: ((ready: ReadyMessage) => void) | null;
  /** set by the front: a shard's committed changes (live stream), with the commit's stamp in the commit order if kept (src/shard/commit_order.ts) */
  onChanges: ((shard: number, changes: CommitChanges, stamp?: number) => void) | null;
  /** set by the live stream where the commit order is kept (ShardPool): true when it keeps a reply until the shard's earlier changes are counted */
  holdReply?: ((shard: number, reply: ShardToFront) => boolean) | null;
  /** set by the live stream: a shard's worker exited; the replies it holds for it are handed back now */
  releaseHeld?: ((shard: number) => void) | null;
  /** a reply the live stream held, delivered now */
  releaseReply?(reply: ShardToFront): void;
  /** test hook: make a shard's worker die */
  crash(shard: number): boolean;
  /** test hook: keep a shard's worker busy for `ms` (a long GC pause) */
  stall(shard: number, ms: number): boolean;
  close(): Promise<void>;
  // ---- admission (src/http/admission.ts) ----
  /** would a request to this shard be refused now (its queue stands above the delay bound)? */
  overloaded(shard: number): boolean;
  /** would every shard refuse (the front asks before it knows which shard a body targets)? */
  everyOverloaded(): boolean;
  /** the front refused a request for this shard (or, 'every', for one of them) on its own lag: it was offered all the same */
  refusedAtFront(target: number | 'every'): void;
  /** requests refused by send() after parsing, by the length cap and by the delay bound */
  readonly shedByLength: number;
  readonly shedByDelay: number;
  /** of the requests the front refused from their head for a shard (overloaded, everyOverloaded), those refused by the length cap */
  readonly shedByLengthAtHead: number;
  /** send → reply round trips per shard since the last call, and the answer rate admission takes as its capacity (the `shedding` log line) */
  takeDelayStats(): DelayStats[];
  /** cluster mode: nodes, partitions owned, NATS connection (/healthz, /metrics) */
  clusterStatus?(): ClusterStatus;
}

/** A cluster node's view of the partitions (Shards.clusterStatus; cluster/cluster_shards.ts makes it, http/ops.ts shows it). */
export interface ClusterStatus {
  node: string;
  nodes: string[];
  partitions: number;
  /** partitions this node owns: partition → epoch */
  owned: Record<string, number>;
  /** partitions this node keeps a standby of, and how many stream messages each is behind its owner (null: owner unknown) */
  standby: Array<{ partition: number; lag: number | null }>;
  /** partitions no live node owns (requests for them get 503) */
  unowned: number[];
  nats: 'connected' | 'reconnecting' | 'closed';
}
