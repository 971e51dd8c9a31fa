// The front's routing in cluster mode: no directory at all. Every id encodes its
// partition (k·P + p, allocated by the partition's owner: src/cluster/ids.ts), so
// `id mod P` routes a request, and whether the record exists is the owner's
// answer (404). A new playbook goes to the partitions in turn; a batch-ingest
// stream to the partition its uuid hashes to, so that a retried first batch, on
// any node, finds the playbook its first attempt created. Label ids come from
// the cluster's label stream (src/cluster/labels.ts).
import { createHash } from 'node:crypto';
import type { ResourceType } from '../api/resources.js';
import { Directory } from '../http/directory.js';
import type { ReadyMessage } from '../shard/protocol.js';
import type { Shards } from '../shard/shards.js';
import type { ClusterLabels } from './labels.js';

export class ClusterDirectory extends Directory {
  private next = Math.floor(Math.random() * 1_000_000);

  constructor(private readonly partitions: number, private readonly labels: ClusterLabels) { super(); }

  override allocate(type: ResourceType): number {
    if (type === 'label') return this.labels.allocateId();
    throw new Error(`in cluster mode the partition's owner allocates ${type} ids`);
  }

  override get authoritative(): boolean { return false; }

  override observe(): void {}

  override shardOf(_type: ResourceType, id: number): number {
    return Number.isSafeInteger(id) && id >= 1 ? id % this.partitions : -1;
  }

  override placePlaybook(_shards: Shards): { id: number; shard: number } {
    return { id: 0, shard: this.next++ % this.partitions };
  }

  override streamShard(uuid: string): number {
    return createHash('sha1').update(uuid).digest().readUInt32BE(0) % this.partitions;
  }

  override record(): void {}
  override load(_ready: ReadyMessage): void {}
}
