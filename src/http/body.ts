// Reading request bodies. The size cap is enforced from the Content-Length
// header before a byte is read, and again while chunks arrive (chunked
// uploads); a body over the cap is answered 413 and the connection closed. All
// bodies being received share one memory budget (LIMITS.bodiesInFlight), except
// those of requests whose credentials are still being verified: they have their
// own, small one (LIMITS.unverifiedBodyBytes), so that requests nobody has
// authenticated yet cannot take the budget from those that are.
// Parsing them is api/json_body.ts.
import type { HttpResponse } from 'uWebSockets.js';
import { LIMITS } from '../limits.js';

/** Bytes of bodies held against a bound. */
export class BodyBudget {
  used = 0;
  /** `max`: bytes, or null for LIMITS.bodiesInFlight × the body limit */
  constructor(private readonly max: number | null) {}
  bound(limit: number): number { return this.max ?? LIMITS.bodiesInFlight * limit; }
  /** Hold `n` more bytes; false (and nothing held) past the bound. */
  take(n: number, limit: number): boolean {
    if (this.used + n > this.bound(limit)) return false;
    this.used += n;
    return true;
  }
  give(n: number): void { this.used -= n; }
}

/** Bodies being received right now, all authenticated (or anonymous) requests together. */
export const SHARED_BODIES = new BodyBudget(null);
/** Bodies of requests whose credentials are being verified, received or waiting for the verdict. */
export const UNVERIFIED_BODIES = new BodyBudget(LIMITS.unverifiedBodyBytes);

/** A body being read; `release()` (idempotent, final) returns its bytes to its budget. */
export class BodyReader {
  held = 0;
  /** released: any later chunk is ignored */
  finished = false;
  constructor(readonly budget: BodyBudget) {}
  release(): void {
    this.budget.used -= this.held;
    this.held = 0;
    this.finished = true;
  }
}

/**
 * Collect the body and call `done(bytes)` once, or `tooLarge()` once if it exceeds
 * `limit`, or `busy()` once if all bodies being read together would exceed
 * LIMITS.bodiesInFlight × `limit` bytes. uWS neuters each chunk's
 * ArrayBuffer when the callback returns, so every chunk is copied (copyOf): a
 * body of 4 KiB or more is an ArrayBuffer of its own, exactly sized (a batch
 * body is moved to its shard's worker, possibly after `done` returned:
 * src/shard/protocol.ts postToShard), a smaller one a view of Node's pool.
 * `announced`: the Content-Length (NaN without one). A body that comes in
 * several chunks with its length announced is copied once, each chunk into its
 * place in one buffer of that length, whose bytes count against the budget
 * from its first chunk; without a length the chunks are copied and then joined
 * (a batch of 1,000 results is ~1.6 MB in ~25 chunks: the second copy and the
 * chunks' own ArrayBuffers cost the front ~0.2 µs per result).
 * The caller releases the reader if the request is aborted, or answered before
 * its body has arrived (uWS then closes without calling onAborted).
 */
export function readBody(res: HttpResponse, limit: number, announced: number, done: (bytes: Buffer) => void, tooLarge: () => void,
  busy: () => void, from: BodyBudget = SHARED_BODIES): BodyReader {
  const reader = new BodyReader(from);
  const budget = from.bound(limit);
  let parts: Buffer[] | null = null;
  /** the body's buffer, of the announced length, while the chunks fit in it */
  let whole: Buffer | null = null;
  let size = 0;
  res.onData((chunk, isLast) => {
    if (reader.finished) return;
    const at = size;
    size += chunk.byteLength;
    if (size > limit) { reader.release(); tooLarge(); return; }
    if (whole !== null && size > whole.length) {
      // more than announced (uWS frames a body by its Content-Length: not expected): joined as parts
      parts = [whole.subarray(0, at)];
      whole = null;
    }
    if (whole === null) {
      // the bytes the budget holds for this body: what arrived, or the whole announced length
      const hold = parts === null && !isLast && announced > size && announced <= limit ? announced : size;
      from.used += hold - reader.held;
      reader.held = hold;
      if (from.used > budget) { reader.release(); busy(); return; }
      if (hold > size) whole = Buffer.allocUnsafeSlow(hold);
    }
    if (whole !== null) {
      whole.set(new Uint8Array(chunk), at);
      if (isLast) { reader.release(); done(size === whole.length ? whole : whole.subarray(0, size)); }
      return;
    }
    if (isLast) {
      reader.release();
      if (parts === null) done(copyOf(chunk));
      else { parts.push(Buffer.from(chunk)); done(Buffer.concat(parts, size)); }
      return;
    }
    (parts ??= []).push(copyOf(chunk));
  });
  return reader;
}

/**
 * A copy of a chunk uWS lends. A small one (under 4 KiB: most per-record
 * bodies) goes into Node's shared Buffer pool rather than an ArrayBuffer of its
 * own: every new ArrayBuffer is external memory to V8, and at thousands of
 * bodies a second those made the front run a full mark-compact every ~0.4 s.
 * A larger one gets its own exactly sized ArrayBuffer (a batch body is moved to
 * its shard's worker: src/shard/protocol.ts postToShard copies a pool view).
 */
function copyOf(chunk: ArrayBuffer): Buffer {
  const out = Buffer.allocUnsafe(chunk.byteLength);
  out.set(new Uint8Array(chunk));
  return out;
}
