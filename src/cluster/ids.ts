// Ids in cluster mode (docs/cluster.md): the owner of
// partition p hands out k·P + p, so `id mod P` routes any request to its
// partition with no directory, and two partitions never hand out the same id.
// Only the partition's owner allocates (its worker thread), so plain counters do.
import { RESOURCE_TYPES } from '../api/resources.js';
import type { Ids } from '../shard/ids.js';

export class PartitionIds implements Ids {
  /** next k per type code */
  private readonly next: number[] = RESOURCE_TYPES.map(() => 0);

  constructor(readonly partitions: number, readonly partition: number) {}

  allocate(code: number): number {
    let k = this.next[code]!;
    // id 0 is never an id: partition 0 starts at k = 1
    if (k === 0 && this.partition === 0) k = 1;
    this.next[code] = k + 1;
    return k * this.partitions + this.partition;
  }

  /** Ids up to `id` were handed out (replay): later ones come after it. */
  observe(code: number, id: number): void {
    if (id % this.partitions !== this.partition) return;
    const k = Math.floor(id / this.partitions) + 1;
    if (k > this.next[code]!) this.next[code] = k;
  }
}
