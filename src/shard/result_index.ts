// The shard's index of every result by id (ShardState.results), kept as two
// arrays: the ids ascending in a Float64Array and the rows beside them.
//
// A shard creates its records in id order (src/shard/ids.ts), so a new result
// is an append, and a lookup is a binary search. A Map of a few million results
// cost the batch path ~10 % of the shard's CPU (batch_cpu, 1 M results): every
// insert hashed its id into a table far larger than the CPU caches, and the
// table was rehashed as it doubled; the live stream's row of each new result
// looked it up again. Here an insert writes the ends of two arrays.
//
// Ids that come out of order (recovery loads snapshots playbook by playbook)
// wait in a Map until the next read in id order, or settle(), merges them in;
// lookups see them at once. Deleted ids leave a hole that iteration skips, and
// the arrays are compacted once holes are as many as rows.

export class ResultIndex<R> {
  private ids = new Float64Array(1024);
  private rows: Array<R | undefined> = [];
  /** slots used in ids/rows (rows and holes) */
  private used = 0;
  private holes = 0;
  /** ids below the last appended one, not merged in yet */
  private late: Map<number, R> | null = null;

  get size(): number { return this.used - this.holes + (this.late?.size ?? 0); }

  get(id: number): R | undefined {
    const at = this.find(id);
    if (at >= 0) return this.rows[at];
    return this.late?.get(id);
  }

  has(id: number): boolean {
    return this.get(id) !== undefined;
  }

  set(id: number, row: R): this {
    const n = this.used;
    if (n === 0 || this.ids[n - 1]! < id) {
      if (n === this.ids.length) {
        const grown = new Float64Array(n * 2);
        grown.set(this.ids);
        this.ids = grown;
      }
      this.ids[n] = id;
      this.rows.push(row);
      this.used = n + 1;
      return this;
    }
    const at = this.find(id);
    if (at >= 0) this.rows[at] = row;
    else (this.late ??= new Map()).set(id, row);
    return this;
  }

  delete(id: number): boolean {
    if (this.late?.delete(id)) return true;
    const at = this.find(id);
    if (at < 0) return false;
    this.rows[at] = undefined;
    this.holes++;
    if (this.holes >= 1024 && this.holes * 2 >= this.used) this.compact();
    return true;
  }

  clear(): void {
    this.ids = new Float64Array(1024);
    this.rows = [];
    this.used = 0;
    this.holes = 0;
    this.late = null;
  }

  /** Rows in ascending id order. */
  *values(): IterableIterator<R> {
    this.settle();
    const rows = this.rows;
    for (let i = 0; i < this.used; i++) {
      const row = rows[i];
      if (row !== undefined) yield row;
    }
  }

  /** Ids in ascending order. */
  *keys(): IterableIterator<number> {
    this.settle();
    for (let i = 0; i < this.used; i++) if (this.rows[i] !== undefined) yield this.ids[i]!;
  }

  *entries(): IterableIterator<[number, R]> {
    this.settle();
    for (let i = 0; i < this.used; i++) {
      const row = this.rows[i];
      if (row !== undefined) yield [this.ids[i]!, row];
    }
  }

  [Symbol.iterator](): IterableIterator<[number, R]> { return this.entries(); }

  /**
   * Every row in ascending id order, as an array to read only until the next
   * change (a list's page is cut out of it: src/shard/list.ts). Late ids are
   * merged and holes compacted first: a read after deletes pays that once.
   */
  inIdOrder(): readonly R[] {
    this.settle();
    if (this.holes > 0) this.compact();
    return this.rows as R[];
  }

  /** Merge the ids that came out of order into the arrays (and drop the holes). */
  settle(): void {
    if (this.late === null || this.late.size === 0) { this.late = null; return; }
    const late = [...this.late.keys()].sort((a, b) => a - b);
    const lateRows = this.late;
    this.late = null;
    const total = this.used - this.holes + late.length;
    const ids = new Float64Array(Math.max(1024, total * 2));
    const rows: Array<R | undefined> = new Array(total);
    let i = 0, k = 0, n = 0;
    while (i < this.used || k < late.length) {
      if (i < this.used && this.rows[i] === undefined) { i++; continue; }
      if (k >= late.length || (i < this.used && this.ids[i]! < late[k]!)) { ids[n] = this.ids[i]!; rows[n++] = this.rows[i]; i++; }
      else { ids[n] = late[k]!; rows[n++] = lateRows.get(late[k]!); k++; }
    }
    this.ids = ids;
    this.rows = rows;
    this.used = n;
    this.holes = 0;
  }

  /** Position of `id` among the appended ids (not a hole), or -1. */
  private find(id: number): number {
    const ids = this.ids;
    let lo = 0, hi = this.used - 1;
    // a new result's own id is the last one (the live stream's row, a reply)
    if (hi >= 0 && ids[hi] === id) return this.rows[hi] === undefined ? -1 : hi;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = ids[mid]!;
      if (at === id) return this.rows[mid] === undefined ? -1 : mid;
      if (at < id) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
  }

  private compact(): void {
    let n = 0;
    for (let i = 0; i < this.used; i++) {
      const row = this.rows[i];
      if (row === undefined) continue;
      this.ids[n] = this.ids[i]!;
      this.rows[n++] = row;
    }
    this.rows.length = n;
    this.used = n;
    this.holes = 0;
  }
}
