// The cluster half of a shard worker's start-up: connect to NATS, rebuild the
// partition from its stream up to this node's fence, then append after it.
// Every worker has its own NATS connection: commits leave from the thread
// that decides them, without a hop through the main thread.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ShardState } from '../shard/state.js';
import type { RecoveryStats } from '../store/types.js';
import { PartitionIds } from './ids.js';
import { PartitionLog } from './partition_log.js';
import { PartitionStore } from './partition_store.js';

/** What the node's ownership layer hands a partition's worker (ShardInit.cluster). */
export interface PartitionInit {
  servers: string[];
  node: string;
  partitions: number;
  replicas: number;
  /** this node's fence on the partition: its epoch and sequence */
  epoch: number;
  fenceSeq: number;
}

export interface OpenedPartition {
  nc: NatsConnection;
  store: PartitionStore;
  state: ShardState;
  ids: PartitionIds;
  recovery: RecoveryStats;
}

export async function openPartition(k: number, init: PartitionInit): Promise<OpenedPartition> {
  const nc = await connect({ servers: init.servers, name: `logbook ${init.node} p${k}`, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  try {
    const log = await PartitionLog.attach(nc, { partitions: init.partitions, replicas: init.replicas });
    const store = new PartitionStore();
    const state = new ShardState();
    const recovery = await store.replay(log, k, init.fenceSeq, state);
    const ids = new PartitionIds(init.partitions, k);
    state.maxIds.forEach((id, code) => ids.observe(code, id));
    store.attach(log.writer(k, init.node, init.epoch, init.fenceSeq));
    return { nc, store, state, ids, recovery };
  } catch (err) {
    await nc.close().catch(() => {});
    throw err;
  }
}
