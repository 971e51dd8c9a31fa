// A shard's live-stream change log in its LMDB environment (src/shard/changes.ts
// ChangeStore): the `changes` table, and the number of the last label change a
// commit logged, kept as the version of a record of the `head` table. One entry
// per commit, keyed by its first change's seq: a batch of 1,000 results is one
// put here, not 1,000 (the table is only read to replay).
//
// Every write here is issued right after its commit's journal write, in the same
// event turn (so in the same transaction), on the same condition: the head record
// must hold the version that journal write sets (lmdb_store.ts), so a change is
// on disk exactly when its commit is.
import { asBinary, type Database } from 'lmdb';
import type { ChangeStore, StreamChange } from '../shard/changes.js';

const HEAD_KEY = 'head';
/** head table: the version of this record is the front's number of the last label change logged (ChangeStore.noteLabelChange) */
const LABEL_CHANGE_KEY = 'label-change';

export class LmdbChangeLog implements ChangeStore {
  /** `head`: the head version the last journal write issued sets */
  constructor(private readonly changes: Database<StreamChange[], number>, private readonly heads: Database<null, string>,
    private readonly head: () => number | null) {}

  // One entry per commit, keyed by its first change's seq: a batch of 1,000
  // results is one put here, not 1,000 (the table is only read to replay).

  /**
   * A commit's changes, issued right after its write() in the same event turn (so
   * in the same transaction) and on the same condition: the head must be the
   * version that write sets, so a change is on disk exactly when its write is.
   */
  appendChanges(changes: StreamChange[], packed: Uint8Array): void {
    if (!changes.length) return;
    void this.heads.ifVersion(HEAD_KEY, this.head()!, () => { // head: set by the write() just before
      // plain msgpack (protocol.ts encode), which this table's decoder reads as it reads its own
      void this.changes.put(changes[0]![0], asBinary(packed) as unknown as StreamChange[]);
    });
  }

  /** The label change a commit logged: issued right after its write(), on the same condition as appendChanges. */
  noteLabelChange(seq: number): void {
    void this.heads.ifVersion(HEAD_KEY, this.head()!, () => { void this.heads.put(LABEL_CHANGE_KEY, null, seq); });
  }

  labelChangeSeq(): number {
    return this.heads.getEntry(LABEL_CHANGE_KEY)?.version ?? 0;
  }

  /** Changes with from < seq <= to, oldest first, at most `limit`. */
  readChanges(from: number, to: number, limit: number): StreamChange[] {
    const out: StreamChange[] = [];
    // the entry holding from + 1 starts at or before it
    let start = from + 1;
    for (const key of this.changes.getKeys({ start: from + 1, reverse: true, limit: 1 })) start = key;
    for (const { value } of this.changes.getRange({ start, end: to + 1 })) {
      for (const c of value) {
        if (c[0] <= from) continue;
        if (c[0] > to || out.length >= limit) return out;
        out.push(c);
      }
    }
    return out;
  }

  changeBounds(): [number, number] | null {
    let first: number | undefined;
    let last: number | undefined;
    for (const { value } of this.changes.getRange({ limit: 1 })) first = value[0]![0];
    for (const { value } of this.changes.getRange({ limit: 1, reverse: true })) last = value[value.length - 1]![0];
    return first === undefined || last === undefined ? null : [first, last];
  }

  /**
   * Drop the commits whose every change is below `below`. An entry's key is its
   * first change's seq, so an entry ends where the next one starts: every entry
   * whose next entry starts at or below `below` goes, found by keys alone (reading
   * the values meant decoding thousands of rows on the shard thread per trim).
   */
  trimChanges(below: number): void {
    let previous: number | null = null;
    for (const key of this.changes.getKeys({ end: below + 1 })) {
      if (previous !== null) void this.changes.remove(previous);
      previous = key;
    }
  }
}
