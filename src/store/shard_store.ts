// The store's public names, from the modules that hold them (imports elsewhere
// keep working): roles and errors in src/shard/storage.ts, the LMDB store in lmdb_store.ts,
// the in-memory one in src/shard/memory_store.ts, recovery in recovery.ts.
export * from '../shard/storage.js';
export { MemoryStore } from '../shard/memory_store.js';
export { LmdbShardStore, type LmdbStoreOptions, type StoreFaults } from './lmdb_store.js';
