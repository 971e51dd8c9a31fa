// Id allocation shared by the front and every shard: one counter per resource
// type in a SharedArrayBuffer, advanced with Atomics. The front allocates
// playbook and label ids (it must know a playbook's id to route it); a shard
// allocates the ids of the child records it creates, at the moment it applies
// them. So a shard's records are created in id order (its indexes, unordered
// lists and the front's merge rely on that) whether they come one per request
// or thousands per ingest batch, and an id is spent only on a record that is
// created (a refused create or a found host costs none).
import { RESOURCE_TYPES } from '../api/resources.js';

/** What decide() and batch ingest need: fresh ids per type code, and raising the counters past ids seen. */
export interface Ids {
  allocate(code: number): number;
  observe(code: number, id: number): void;
}

export class IdAllocator implements Ids {
  readonly buffer: SharedArrayBuffer;
  /** next id to hand out, per type code (BigInt64: ids outgrow 2^31 in a large fleet) */
  private readonly next: BigInt64Array;

  constructor(buffer?: SharedArrayBuffer) {
    this.buffer = buffer ?? new SharedArrayBuffer(8 * RESOURCE_TYPES.length);
    this.next = new BigInt64Array(this.buffer);
    if (!buffer) this.next.fill(1n);
  }

  /** A fresh id of a type (by code); ids only grow and are never handed out twice. */
  allocate(code: number): number {
    return Number(Atomics.add(this.next, code, 1n));
  }

  /** Ids up to `id` have been handed out (recovery raises the counter past the highest one seen). */
  observe(code: number, id: number): void {
    const wanted = BigInt(id) + 1n;
    let current = Atomics.load(this.next, code);
    while (current < wanted) {
      const seen = Atomics.compareExchange(this.next, code, current, wanted);
      if (seen === current) return;
      current = seen;
    }
  }
}
