// One order of commits across shards for the live stream (docs/api.md#live-stream: a replayed
// message carries the cursor it had live, also on a stream of every playbook).
//
// A cursor is the vector of per-shard change positions, so the cursor a message
// had live depends on how the shards' commits were interleaved when the front
// sent them. To make that interleaving something a replay can reproduce (after
// a restart too), every commit that has changes takes a stamp from one counter
// shared by all shards (this SharedArrayBuffer), in the same turn as it is
// numbered and logged; the stamp is stored with its changes. The front sends
// commits in stamp order, and a replay merges the shards' logs by stamp: both
// see the same sequence, hence the same vectors.
//
// For the front to know that no smaller stamp can still come, each shard
// publishes the lowest stamp it took but has not sent yet (0: none) and the
// highest it has sent (a failed commit's stamp is sent too, with no changes).
// Layout (BigInt64Array): [0] the counter; for shard t, [1 + 2t] lowest unsent,
// [2 + 2t] highest sent.

export class CommitOrder {
  private readonly cells: BigInt64Array;
  /** shard side: stamps taken and not yet sent, oldest first */
  private unsent: number[] = [];
  private unsentHead = 0;

  constructor(readonly buffer: SharedArrayBuffer) {
    this.cells = new BigInt64Array(buffer);
  }

  static create(shards: number): CommitOrder {
    return new CommitOrder(new SharedArrayBuffer(8 * (1 + 2 * shards)));
  }

  // ---- shard side ----------------------------------------------------------------

  /** A (re)started shard: nothing in flight; the counter is at least its highest stored stamp. */
  recovered(shard: number, lastStamp: number): void {
    const c = this.cells;
    Atomics.store(c, 1 + 2 * shard, 0n);
    Atomics.store(c, 2 + 2 * shard, 0n);
    const want = BigInt(lastStamp);
    let cur = Atomics.load(c, 0);
    while (cur < want) {
      const seen = Atomics.compareExchange(c, 0, cur, want);
      if (seen === cur) break;
      cur = seen;
    }
    this.unsent = []; this.unsentHead = 0;
  }

  /** A commit with changes is staged: its stamp. */
  take(shard: number): number {
    const c = this.cells;
    const low = 1 + 2 * shard;
    // mark a lower bound first: the front never sees "nothing in flight" while a stamp is being taken
    if (this.unsentHead === this.unsent.length) Atomics.store(c, low, Atomics.load(c, 0) + 1n);
    const stamp = Number(Atomics.add(c, 0, 1n) + 1n);
    this.unsent.push(stamp);
    Atomics.store(c, low, BigInt(this.unsent[this.unsentHead]!));
    return stamp;
  }

  /** The commit with this stamp was sent to the front (or its failure was). */
  sent(shard: number, stamp: number): void {
    if (this.unsent[this.unsentHead] === stamp) this.unsentHead++;
    if (this.unsentHead === this.unsent.length) { this.unsent = []; this.unsentHead = 0; }
    const c = this.cells;
    // highest sent first, then lowest unsent (the front reads them the other way round)
    Atomics.store(c, 2 + 2 * shard, BigInt(stamp));
    Atomics.store(c, 1 + 2 * shard, this.unsentHead < this.unsent.length ? BigInt(this.unsent[this.unsentHead]!) : 0n);
  }

  // ---- front side ----------------------------------------------------------------

  /** The highest stamp taken so far (at start-up: every logged commit is at or below it). */
  current(): number {
    return Number(Atomics.load(this.cells, 0));
  }

  /**
   * The lowest stamp shard `shard` may still send, given the highest the front
   * has received from it; Infinity when it has nothing in flight.
   */
  bound(shard: number, received: number): number {
    const c = this.cells;
    const low = Number(Atomics.load(c, 1 + 2 * shard));
    const sent = Number(Atomics.load(c, 2 + 2 * shard));
    if (sent > received) return received + 1; // on its way: wait for it
    return low === 0 ? Infinity : low;
  }
}
