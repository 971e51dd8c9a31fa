// A JSON value kept as the bytes of the body it came in, not as a string. A
// batch of 1,000 results carries ~2 KB of content per result that the shard
// only stores: decoded into a string per event, that text was most of a shard's
// allocation per result (sampling heap profiler, bench/HISTORY.md session 30),
// lived until its commit was durable (so young-generation collections copied
// it), and was encoded back into bytes for its chunk. Kept as a range of the
// batch body's bytes, it is copied once, into the chunk.
//
// Only for ASCII bodies (the front's scan, api/json_scan.ts, admits no other):
// a byte is a character, so the value's text is its Latin-1 decoding and its
// UTF-8 encoding is its bytes.

export class JsonBytes {
  constructor(
    /** the whole body: a view of it, held until the value is stored */
    readonly body: Buffer,
    readonly start: number,
    readonly end: number,
  ) {}

  /** length in characters, which is in bytes (ASCII) */
  get length(): number { return this.end - this.start; }

  /** The value's JSON text (a read of a value not stored yet, a store that keeps strings). */
  text(): string { return this.body.toString('latin1', this.start, this.end); }

  /** Copy the bytes into `target` at `at`; the number copied. */
  copyTo(target: Uint8Array, at: number): number { return this.body.copy(target, at, this.start, this.end); }
}

/** A JSON value's text, whichever way it is kept. */
export function jsonTextOf(value: string | JsonBytes): string {
  return typeof value === 'string' ? value : value.text();
}
