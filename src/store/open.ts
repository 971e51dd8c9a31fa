// Which store a shard worker gets: the engine is chosen here, so src/shard/
// sees only the roles of src/shard/storage.ts. Today: one LMDB environment per shard, or
// nothing on disk when there is no data directory.
import { LmdbShardStore } from './lmdb_store.js';
import { isCommitFailure } from './lmdb_commit.js';
import type { DurableShardStore, Durability } from '../shard/storage.js';

export interface StoreOptions {
  /** null: keep everything in memory */
  dataDir: string | null;
  shard: number;
  durability: Durability;
  /** LOGBOOK_MAP_SIZE (null: no limit) */
  mapSize: number | null;
  /** test hooks (LOGBOOK_TEST_HOOKS=1 only): snapshot slices that always yield (LmdbStoreOptions); told of each snapshot put / trim */
  snapshotSliceDelayMs?: number | null;
  /** test hook: results per snapshot part (LOGBOOK_TEST_SNAPSHOT_PART_ROWS) */
  snapshotPartRows?: number;
  step?: ((phase: 'snapshot' | 'trim', count: number) => void) | null;
  /** commits stopped settling (the engine lost one): the caller must restart on a fresh store */
  onStall?: ((pendingCommits: number, ms: number) => void) | null;
  stallMs?: number;
}

/** The shard's store on disk, or null for the in-memory configuration. */
export function openShardStore(options: StoreOptions): DurableShardStore | null {
  if (options.dataDir === null) return null;
  return new LmdbShardStore(options.dataDir, options.shard, options.durability, {
    mapSize: options.mapSize, snapshotSliceDelayMs: options.snapshotSliceDelayMs ?? null, step: options.step ?? null,
    ...(options.snapshotPartRows ? { snapshotPartRows: options.snapshotPartRows } : {}),
    onStall: options.onStall ?? null, ...(options.stallMs ? { stallMs: options.stallMs } : {}),
  });
}

/**
 * A rejection the storage engine raises on its own besides the ones the store
 * handles (lmdb-js: its per-transaction promises of a failed commit): the worker
 * must not die of it.
 */
export function isStorageNoise(err: unknown): boolean {
  return isCommitFailure(err);
}
