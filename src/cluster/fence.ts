// Taking ownership of a partition (issue #12, docs/cluster.md#how-it-works-inside). Safety comes
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

export interface TakeOptions extends WriterOptions {
  /**
   * Take the partition only from this epoch (0: never owned). The liveness layer passes
   * the epoch it decided to replace, so that of two nodes acting on the same view one
   * wins and the other gets FencedError instead of taking it over again right after.
   */
  ifEpoch?: number;
  /** conditional fence attempts before claiming (below), and claims before giving up */
  attempts?: number;
}

function checkEpoch(k: number, want: number | undefined, seen: FenceRecord | null, at: number): void {
  if (want !== undefined && (seen?.epoch ?? 0) !== want) {
    throw new FencedError(k, at, `partition moved on: newest fence is ${seen === null ? 'none' : `${seen.node} epoch ${seen.epoch}`}, not epoch ${want}`);
  }
}

/**
 * Takes partition k for `node`.
 * 1. Read the fence state and fence on top of it (a conditional append: it changes
 *    nothing unless the state is still as read). Retried a few times while only the
 *    owner's commits get in.
 * 2. A loaded owner always has its next commit in flight, so a read-then-fence can keep
 *    losing to it. Then the taker appends a *claim* record without expectation: it lands
 *    at once, and from then on that owner's appends fail. The fence then expects the
 *    claim's sequence. Another taker's claim in between → claim again (random pause);
 *    another taker's FENCE after our claim → it won: FencedError.
 * At most one fence lands on any state, so never two owners. A claim of a taker that
 * then loses still fences whoever owned the partition; the liveness layer (not written
 * yet) takes it again. Prefer `ifEpoch` so that racing takers give up early.
 */
export async function takeOwnership(log: PartitionLog, k: number, node: string, options: TakeOptions = {}): Promise<Ownership> {
  const attempts = options.attempts ?? 5;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const state = await readFenceState(log, k);
    checkEpoch(k, options.ifEpoch, state.previous, state.lastSeq);
    try {
      return await appendFence(log, k, node, state, options);
    } catch (err) {
      if (!(err instanceof FencedError)) throw err;
      const latest = await log.lastFence(k);
      if ((latest?.seq ?? 0) !== (state.previous?.seq ?? 0)) throw err; // another taker's fence won
    }
  }
  for (let attempt = 1; ; attempt++) {
    const before = await log.lastFence(k);
    checkEpoch(k, options.ifEpoch, before, 0);
    const claimSeq = await log.claim(k, node);
    const previous = await log.lastFence(k);
    if ((previous?.seq ?? 0) !== (before?.seq ?? 0)) {
      throw new FencedError(k, claimSeq, `${previous!.node} fenced at ${previous!.seq} while we claimed`);
    }
    try {
      return await appendFence(log, k, node, { lastSeq: claimSeq, previous }, options);
    } catch (err) {
      if (!(err instanceof FencedError) || attempt >= attempts) throw err;
      const latest = await log.lastFence(k);
      if ((latest?.seq ?? 0) !== (previous?.seq ?? 0)) throw err; // another taker's fence won
      // only another taker's claim got in: pause a random while so one of us gets through
      await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
    }
  }
}

export { FencedError };
