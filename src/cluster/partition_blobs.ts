// Where a partition worker keeps blobs (results' content, hosts' facts, files):
// a throwaway local LMDB environment, so a node's memory holds only the
// aggregates (as in single-process mode), not every result's content. Nothing
// here must survive: the stream is the source of truth, so the directory is
// emptied when the worker opens it and removed when it closes, and writes never
// wait for the disk (noSync). Writes land in lmdb-js asynchronously: until one
// is committed, reads see it from `pending` (read-your-writes for the serializer).
// `pending` holds one map per event turn (lmdb-js commits a turn's writes
// together), dropped once all its writes settled (src/store/pending_values.ts).
import { open, type Database, type RootDatabase } from 'lmdb';
import { mkdirSync, rmSync } from 'node:fs';
import type { BlobKey } from '../shard/blobs.js';
import { closeEnv } from '../store/lmdb_close.js';
import { PendingValues } from '../store/pending_values.js';

export interface BlobMap {
  get(key: BlobKey): string | undefined;
  set(key: BlobKey, value: string): void;
  delete(key: BlobKey): void;
  close?(): Promise<void>;
}

export class LocalBlobs implements BlobMap {
  private readonly env: RootDatabase;
  private readonly db: Database<string, BlobKey>;
  /** writes not committed yet, one map per event turn: value, or null for a removal */
  private readonly pending = new PendingValues<BlobKey, string | null>();
  /** the turn writes go to now (null: the next write opens one) */
  private turn: PendingTurn | null = null;
  private readonly endTurn = (): void => {
    const turn = this.turn!;
    this.turn = null;
    if (turn.open === 0) this.pending.drop(turn.values);
  };

  constructor(private readonly path: string) {
    rmSync(path, { recursive: true, force: true });
    mkdirSync(path, { recursive: true });
    this.env = open({ path, noSync: true, maxDbs: 1, eventTurnBatching: true, mapSize: 2 ** 30 });
    // no compression: a throwaway cache, and LZ4 per value was a measurable share of a batch's CPU
    this.db = this.env.openDB({ name: 'blobs', encoding: 'string' });
  }

  get(key: BlobKey): string | undefined {
    const p = this.pending.get(key);
    if (p !== undefined) return p ?? undefined;
    return this.db.get(key);
  }

  set(key: BlobKey, value: string): void {
    this.track(key, value, this.db.put(key, value));
  }

  delete(key: BlobKey): void {
    this.track(key, null, this.db.remove(key));
  }

  private track(key: BlobKey, value: string | null, written: Promise<unknown>): void {
    let turn = this.turn;
    if (turn === null) {
      turn = this.turn = { values: this.pending.open(), open: 0 };
      queueMicrotask(this.endTurn);
    }
    turn.values.set(key, value);
    turn.open++;
    const settled = (): void => { if (--turn.open === 0 && turn !== this.turn) this.pending.drop(turn.values); };
    // a write that failed is kept here: reads go on seeing it (the disk does not have it)
    written.then(settled, () => {});
  }

  async close(): Promise<void> {
    await closeEnv(this.env, 'a partition\'s blob store'); // bounded (src/store/lmdb_close.ts); the directory goes either way
    rmSync(this.path, { recursive: true, force: true });
  }
}

/** One event turn's writes while they are not committed. */
interface PendingTurn { values: Map<BlobKey, string | null>; open: number }
