// The store's public names, from the modules that hold them (imports elsewhere
// keep working): roles and errors in types.ts, the LMDB store in lmdb_store.ts,
// the in-memory one in memory_store.ts, recovery in recovery.ts.
export * from './types.js';
export { MemoryStore } from './memory_store.js';
export { LmdbShardStore, type LmdbStoreOptions, type StoreFaults } from './lmdb_store.js';
