// Taking ownership of a partition (issue #12, DESIGN.md § "Ownership"). Safety comes
// from the fence alone: the taker appends a fence record {node, epoch} expecting the
// partition stream's last sequence; once it lands, the previous owner's next append
// (which expects an older sequence) fails with FencedError and that owner must drop the
// partition. Of two nodes racing for one partition exactly one fence lands. Liveness
// (who should own what: heartbeats, rendezvous hashing) is not here yet.
import { randomBytes } from 'node:crypto';
import { headers } from '@nats-io/transport-node';
import {
  FencedError, HDR_ID, HDR_KIND, encodeFence, fenceSubject, messageKey,
  type PartitionLog, type PartitionWriter, type WriterOptions,
} from './partition_log.js';

export interface Ownership {
  partition: number;
  node: string;
  /** strictly greater than every earlier fence's epoch on this partition */
  epoch: number;
  /** sequence of our fence record: replay up to it to hold the partition's whole state */
  fenceSeq: number;
  /** the previous owner, if any */
  previous: { node: string; epoch: number } | null;
  writer: PartitionWriter;
}

/**
 * Appends a fence for `node` to partition k and returns a writer positioned after it.
 * Throws FencedError if another node's append or fence got in first (lost the race);
 * the caller may look again and retry if it should still own the partition.
 */
export async function takeOwnership(log: PartitionLog, k: number, node: string, options: WriterOptions = {}): Promise<Ownership> {
  for (;;) {
    // Read the last sequence BEFORE the newest fence: a fence that lands after our read of
    // `last` makes our append fail, so the epoch we compute cannot be reused by a winner.
    const last = await log.lastSequence(k);
    const prev = await log.lastFence(k);
    if (prev !== null && prev.seq > last) continue; // a fence landed between the two reads: read again
    const epoch = (prev?.epoch ?? 0) + 1;
    const h = headers();
    h.set(HDR_KIND, 'fence');
    h.set(HDR_ID, `${node}.${epoch}.${randomBytes(4).toString('hex')}`);
    const fenceSeq = await log.appendFenced(k, fenceSubject(k), h, encodeFence(node, epoch), last, messageKey(h));
    return {
      partition: k, node, epoch, fenceSeq,
      previous: prev === null ? null : { node: prev.node, epoch: prev.epoch },
      writer: log.writer(k, node, epoch, fenceSeq, options),
    };
  }
}

export { FencedError };
