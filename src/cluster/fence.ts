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
  type FenceRecord, type PartitionLog, type PartitionWriter, type WriterOptions,
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

/** What a taker saw before fencing: the partition's last sequence and newest fence. */
export interface FenceState {
  lastSeq: number;
  previous: FenceRecord | null;
}

/**
 * Reads the state a fence must be based on. The last sequence is read BEFORE the newest
 * fence: a fence landing after our read of `lastSeq` makes our append fail, so the epoch
 * we compute from `previous` cannot also be used by a fence that won.
 */
export async function readFenceState(log: PartitionLog, k: number): Promise<FenceState> {
  for (;;) {
    const lastSeq = await log.lastSequence(k);
    const previous = await log.lastFence(k);
    if (previous !== null && previous.seq > lastSeq) continue; // a fence landed between the reads
    return { lastSeq, previous };
  }
}

/**
 * Appends a fence for `node` on top of `state` and returns a writer positioned after it.
 * Throws FencedError if anything was appended since `state` was read (another node's
 * fence or its owner's commit): of two nodes fencing the same state, exactly one wins.
 */
export async function appendFence(log: PartitionLog, k: number, node: string, state: FenceState, options: WriterOptions = {}): Promise<Ownership> {
  const epoch = (state.previous?.epoch ?? 0) + 1;
  const h = headers();
  h.set(HDR_KIND, 'fence');
  h.set(HDR_ID, `${node}.${epoch}.${randomBytes(4).toString('hex')}`);
  const fenceSeq = await log.appendFenced(k, fenceSubject(k), h, encodeFence(node, epoch), state.lastSeq, messageKey(h));
  return {
    partition: k, node, epoch, fenceSeq,
    previous: state.previous === null ? null : { node: state.previous.node, epoch: state.previous.epoch },
    writer: log.writer(k, node, epoch, fenceSeq, options),
  };
}

/**
 * Takes partition k for `node`: reads the fence state and fences on top of it. The
 * current owner may still be appending (a live owner being moved, or one that is merely
 * slow), and each of its commits moves the last sequence: then the taker reads again and
 * retries, up to `attempts` times. If another FENCE landed meanwhile, another node took
 * the partition: FencedError (lost the race); the caller may look again later.
 */
export async function takeOwnership(log: PartitionLog, k: number, node: string, options: WriterOptions & { attempts?: number } = {}): Promise<Ownership> {
  const attempts = options.attempts ?? 50;
  let state = await readFenceState(log, k);
  for (let attempt = 1; ; attempt++) {
    try {
      return await appendFence(log, k, node, state, options);
    } catch (err) {
      if (!(err instanceof FencedError) || attempt >= attempts) throw err;
      const now = await readFenceState(log, k);
      if ((now.previous?.seq ?? 0) !== (state.previous?.seq ?? 0)) throw err; // another taker's fence won
      state = now; // only the owner's commits got in: fence on top of them
    }
  }
}

export { FencedError };
