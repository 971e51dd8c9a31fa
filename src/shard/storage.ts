// What a shard needs from its persistence, in three small roles, free of any
// storage engine: a command journal (with the blob changes of each command),
// blobs read on demand, and snapshots that let the journal be trimmed. A store
// implements all three (src/store/lmdb_store.ts: one LMDB environment per shard;
// memory_store.ts: nothing on disk); recovery (src/store/recovery.ts) only needs to read
// one back. Another journal (e.g. NATS JetStream) would implement these.
import type { Event, ShardState } from './state.js';
import type { BlobKey, BlobReader, BlobValue } from './blobs.js';
import type { ChangeStore } from './changes.js';

/**
 * When a write counts as done:
 *  - 'flush'  : the transaction is on stable storage (fsync'd): survives power loss. Default.
 *  - 'commit' : committed to the OS (survives a process crash, not a power loss)
 *  - 'none'   : no sync: for benchmarks and throwaway data only
 */
export type Durability = 'flush' | 'commit' | 'none';

/** The command journal: one entry per command, with that command's blob changes, stored together. */
export interface CommandJournal {
  /**
   * Stage one command (journal entry + blob changes + snapshots of playbooks it
   * dropped) and return when it is durable (null: already). Rejects with a
   * StorageError when it is not stored; then no command staged after it is either.
   * What it keeps of a value given as bytes it copies before it returns: the
   * caller may free their buffer then (Shard releaseBody).
   */
  write(events: Event[], puts: Array<[BlobKey, BlobValue]>, removes: BlobKey[], droppedPlaybooks: number[]): Promise<void> | null;
  /** Journal entries appended since the last completed snapshot. */
  readonly journalLength: number;
  /** The number of the last journal entry staged (absent: a store that does not number them) */
  readonly journalSeq?: number;
}

/** Snapshots of playbook aggregates: a completed round trims the journal entries it covers. */
export interface SnapshotWriter {
  /**
   * Snapshot what changed and trim the journal it covers; called by the shard
   * when due. `beforeCopy` runs before each aggregate is copied: the shard
   * stores the writes it has staged but not yet journaled (group commit), so
   * that no copy holds a change its recorded seq does not cover.
   */
  snapshot?(state: ShardState, beforeCopy?: () => void): Promise<void>;
}

/** What src/shard/ uses: journal, blobs and snapshots, plus metrics and closing. */
export interface ShardStore extends CommandJournal, BlobReader, SnapshotWriter {
  /** where the live stream's changes are kept with the commits (absent: in memory only) */
  readonly changeLog?: ChangeStore;
  close?(): Promise<void>;
  /** Sizes and snapshot age for /metrics (absent: nothing on disk). */
  stats?(): StoreStats;
}

/** A store on disk, as the shard worker drives it: recovery and a storage limit besides. */
export interface DurableShardStore extends ShardStore {
  /** Rebuild `state` (empty) from what is stored; also after a storage failure. */
  recover(state: ShardState): RecoveryStats;
  /** At the storage limit: refuse creates and updates before they change anything. */
  full(): boolean;
  /** The storage limit in bytes (null: none). */
  readonly sizeLimit: number | null;
}

export interface StoreStats {
  /** bytes of pages used by each table */
  journalBytes: number;
  snapshotBytes: number;
  blobBytes: number;
  /** size of the shard's file */
  fileBytes: number;
  /** ms since the epoch of the last completed snapshot, if known */
  lastSnapshotAt: number | null;
}

export interface RecoveryStats { snapshots: number; journalEntries: number; eventsApplied: number; ms: number }

/** A write, snapshot or trim that did not reach the disk; `message` says why, for the 503 body and the log. */
export class StorageError extends Error {}
