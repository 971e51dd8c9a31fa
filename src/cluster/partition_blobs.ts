// Where a partition worker keeps blobs (results' content, hosts' facts, files):
// a throwaway local LMDB environment, so a node's memory holds only the
// aggregates (as in single-process mode), not every result's content. Nothing
// here must survive: the stream is the source of truth, so the directory is
// emptied when the worker opens it and removed when it closes, and writes never
// wait for the disk (noSync). Writes land in lmdb-js asynchronously: until one
// is committed, reads see it from `pending` (read-your-writes for the serializer).
import { open, type Database, type RootDatabase } from 'lmdb';
import { mkdirSync, rmSync } from 'node:fs';
import type { BlobKey } from '../store/blobs.js';
import { closeEnv } from '../store/lmdb_close.js';

export interface BlobMap {
  get(key: BlobKey): string | undefined;
  set(key: BlobKey, value: string): void;
  delete(key: BlobKey): void;
  close?(): Promise<void>;
}

export class LocalBlobs implements BlobMap {
  private readonly env: RootDatabase;
  private readonly db: Database<string, BlobKey>;
  /** writes not committed yet: value, or null for a removal */
  private readonly pending = new Map<BlobKey, string | null>();

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
    this.pending.set(key, value);
    void this.db.put(key, value).then(() => { if (this.pending.get(key) === value) this.pending.delete(key); });
  }

  delete(key: BlobKey): void {
    this.pending.set(key, null);
    void this.db.remove(key).then(() => { if (this.pending.get(key) === null) this.pending.delete(key); });
  }

  async close(): Promise<void> {
    await closeEnv(this.env, 'a partition\'s blob store'); // bounded (src/store/lmdb_close.ts); the directory goes either way
    rmSync(this.path, { recursive: true, force: true });
  }
}
