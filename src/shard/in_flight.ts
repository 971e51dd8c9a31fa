// The front's table of requests sent to shards and not yet answered, by request
// id. Ids are handed out in increasing order and answered mostly in order, so
// the entries live in a window of an array indexed by id, not in a long-lived
// Map that every request adds to and deletes from, whose rehashed tables would
// keep every request's context alive until a full collection
// (src/store/pending_values.ts says how). An answered slot is cleared at once; the window's
// front moves past answered ids, and the array is replaced by a copy of its live
// part when most of it is behind the front.
//
// An entry left unanswered while many later ones come and go (a request a
// shard holds for long) would keep the window growing: past MAX_WINDOW ids it
// moves to a small map of stragglers, and the window's front moves on.

/** ids the window spans at most before its oldest unanswered entries move to the stragglers */
const MAX_WINDOW = 1 << 16;
/** the window is compacted once this many answered slots lie before its front (and they are half of it) */
const COMPACT_AFTER = 1024;

export class InFlightTable<V> {
  private slots: Array<V | undefined> = [];
  /** index in `slots` of the window's front (the oldest id it holds) */
  private head = 0;
  /** id − offset = index in `slots` */
  private offset = 0;
  private stragglers: Map<number, V> | null = null;
  private count = 0;

  get size(): number { return this.count; }

  /** `id` must be higher than every id added before. */
  set(id: number, value: V): void {
    if (this.count === (this.stragglers?.size ?? 0)) { this.slots.length = 0; this.head = 0; this.offset = id; }
    const at = id - this.offset;
    if (at < this.slots.length) throw new Error(`request id ${id} is not above the ids in flight`);
    while (this.slots.length < at) this.slots.push(undefined);
    this.slots.push(value);
    this.count++;
    if (this.slots.length - this.head > MAX_WINDOW) this.spill();
  }

  get(id: number): V | undefined {
    const at = id - this.offset;
    if (at >= this.head && at < this.slots.length) return this.slots[at];
    return this.stragglers?.get(id);
  }

  has(id: number): boolean { return this.get(id) !== undefined; }

  delete(id: number): boolean {
    const at = id - this.offset;
    if (at >= this.head && at < this.slots.length) {
      if (this.slots[at] === undefined) return false;
      this.slots[at] = undefined;
      this.count--;
      if (at === this.head) this.advance();
      return true;
    }
    if (this.stragglers?.delete(id)) { this.count--; return true; }
    return false;
  }

  /** Every entry, as a copy (the caller may delete and add while it walks it). */
  entries(): Array<[number, V]> {
    const out: Array<[number, V]> = this.stragglers ? [...this.stragglers] : [];
    for (let at = this.head; at < this.slots.length; at++) {
      const value = this.slots[at];
      if (value !== undefined) out.push([at + this.offset, value]);
    }
    return out;
  }

  /** Move the front past answered ids; compact when most of the array is behind it. */
  private advance(): void {
    const slots = this.slots;
    while (this.head < slots.length && slots[this.head] === undefined) this.head++;
    if (this.head === slots.length) { slots.length = 0; this.offset += this.head; this.head = 0; }
    else if (this.head >= COMPACT_AFTER && this.head * 2 >= slots.length) {
      this.slots = slots.slice(this.head);
      this.offset += this.head;
      this.head = 0;
    }
  }

  /** The window spans too many ids: its oldest unanswered entries become stragglers. */
  private spill(): void {
    const keep = MAX_WINDOW >> 1;
    const stragglers = this.stragglers ??= new Map();
    while (this.slots.length - this.head > keep) {
      const value = this.slots[this.head];
      if (value !== undefined) { stragglers.set(this.head + this.offset, value); this.slots[this.head] = undefined; }
      this.head++;
    }
    this.advance();
  }
}
