// Values written and not yet settled, which reads must see before the disk has
// them: one small map per write batch (a command, an event turn), read newest
// first and dropped whole when the batch settles. Not one long-lived map that
// every write adds to and deletes from: V8 links each table a Map outgrows or
// rehashes to the one that replaces it, so once one of a long-lived map's
// tables is promoted, every later table — with the values that were in the map
// when it was rehashed (every result's content) — survives each young-generation
// collection until the next full one. Batch ingest promoted ~2.3 KB of garbage
// per result that way (test/store/store_overlay_gc.test.ts); a batch's map dies young
// with its batch.
export class PendingValues<K, V> {
  private readonly batches: Array<Map<K, V>> = [];

  /** A new batch, the newest: reads see what is set in it until drop(). */
  open(): Map<K, V> {
    const batch = new Map<K, V>();
    this.batches.push(batch);
    return batch;
  }

  /** The newest batch's value for `key` (a later write replaces an earlier one); undefined: none pending. */
  get(key: K): V | undefined {
    for (let i = this.batches.length - 1; i >= 0; i--) {
      const value = this.batches[i]!.get(key);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  /** The batch settled (usually the oldest; a failed one may settle after a later one). */
  drop(batch: Map<K, V>): void {
    const at = this.batches.indexOf(batch);
    if (at >= 0) this.batches.splice(at, 1);
  }

  clear(): void { this.batches.length = 0; }
}
