// The front's own persistence, in <dataDir>/front.mdb: the on-disk format
// version (checked before anything else opens), the shard count the data was
// written with, the label catalogue (the front owns labels), and the label
// changes not yet logged by every shard for the live stream
// (src/http/label_changes.ts). A pid lock file keeps two logbooks from sharing
// one data directory.
import { open, type Database, type RootDatabase } from 'lmdb';
import { closeSync, mkdirSync, openSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LabelChangeStore, LabelStore, StoredLabel, StoredLabelChange } from './label_store.js';
import { log } from '../log.js';
import { closeEnv } from './lmdb_close.js';
import { commitCause, flushedOf } from './lmdb_commit.js';

/**
 * Bump when the on-disk layout changes; older binaries refuse newer data, and
 * this one upgrades the record of older data when it opens it.
 *   1: the first layout.
 *   2: a large playbook's snapshot keeps its results in parts (snapshot_parts):
 *      a format-1 binary would load such a playbook without its results.
 *   3: the result contents of a batch are packed (content_chunks): an older
 *      binary would serve them as `{}`.
 *   4: a snapshot round keeps the unchanged result parts of earlier rounds,
 *      keyed by those rounds' seqs (listed in the snapshot): an older binary
 *      would look for every part under the snapshot's own seq.
 */
export const FORMAT_VERSION = 4;

export class StoreError extends Error {}

interface FormatRecord { format: number; shards: number; created: string }
/** meta key of the highest label id ever created: deleted label ids are never handed out again */
const LABEL_HIGH_WATER = 'labelMaxId';
/** meta key of the highest number given to a label change: numbers are never given twice (shards log each once) */
const LABEL_CHANGE_SEQ = 'labelChangeSeq';

/** Take the data directory: refuse it if another live process holds it. */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'logbook.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeLock(path);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(lockOwner(path));
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new StoreError(`data directory ${resolve(dataDir)} is in use by another logbook (pid ${pid}); stop it or choose another LOGBOOK_DATA_DIR`);
      }
      rmSync(path, { force: true }); // left by a process that is gone (e.g. killed)
    }
  }
  throw new StoreError(`cannot lock data directory ${resolve(dataDir)}`);
}

/**
 * Create the lock file holding our pid (EEXIST if there is one). On a full disk
 * the pid cannot be written (creating the file takes an inode, its text a data
 * block): the lock is then a symbolic link whose target is the pid, which lives
 * in the inode (as Emacs's lock files), so that logbook still starts and serves
 * what it has stored when restarted before space is freed.
 */
function writeLock(path: string): void {
  const fd = openSync(path, 'wx');
  try {
    writeSync(fd, String(process.pid));
  } catch (err) {
    closeSync(fd);
    rmSync(path, { force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOSPC' && code !== 'EDQUOT') throw err;
    symlinkSync(String(process.pid), path);
    log.warn('the disk is full: the data directory lock is a symbolic link to the pid', { path, code });
    return;
  }
  closeSync(fd);
}

/** The pid text of a lock file: its content, or the target of the symbolic link written on a full disk. */
function lockOwner(path: string): string {
  try {
    return readlinkSync(path).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err; // EINVAL: a regular file
    return readFileSync(path, 'utf8').trim();
  }
}

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM'; }
}

export class FrontStore implements LabelStore, LabelChangeStore {
  private readonly env: RootDatabase;
  private readonly meta: Database<any, string>;
  private labelHighWater = 0;
  readonly labels: Database<StoredLabel, number>;
  /** label changes not yet logged by every shard, by number (an older binary ignores this table) */
  private readonly labelChanges: Database<StoredLabelChange, number>;
  /** the webhook dispatcher's outbox, cursor and run watch (src/webhooks/outbox.ts; an older binary ignores this table) */
  readonly webhooks: Database<any, string>;

  constructor(dataDir: string) {
    this.env = open({ path: join(dataDir, 'front.mdb'), maxDbs: 8, overlappingSync: true, separateFlushed: true });
    this.meta = this.env.openDB({ name: 'meta', encoding: 'msgpack' });
    this.labels = this.env.openDB({ name: 'labels', keyEncoding: 'uint32', encoding: 'msgpack' });
    this.labelChanges = this.env.openDB({ name: 'label_changes', keyEncoding: 'uint32', encoding: 'msgpack' });
    this.webhooks = this.env.openDB({ name: 'webhooks', encoding: 'msgpack' });
  }

  /**
   * Check (or, for a new directory, write) the format record. A newer or unknown
   * format, or a different shard count, stops start-up with a clear message.
   */
  async checkFormat(shards: number, dataDir: string): Promise<void> {
    const record = this.meta.get('format');
    if (record === undefined) {
      await durable(this.meta.put('format', { format: FORMAT_VERSION, shards, created: new Date().toISOString() }));
      return;
    }
    // a record that decodes but is not one a logbook wrote (flipped bytes) is damage, not a setting
    const damaged = record === null || typeof record !== 'object'
      || (typeof record.format === 'number' && !(Number.isSafeInteger(record.shards) && record.shards >= 1));
    if (damaged) {
      throw new StoreError(`front.mdb in ${resolve(dataDir)} is damaged: its format record reads ${JSON.stringify(record)?.slice(0, 200)}; restore the data directory from a backup (docs/operations.md#backup-restore-and-check)`);
    }
    if (typeof record.format !== 'number' || record.format > FORMAT_VERSION || record.format < 1) {
      throw new StoreError(`data directory ${resolve(dataDir)} has on-disk format ${JSON.stringify(record.format)}; this logbook reads format ${FORMAT_VERSION}. Use a newer logbook or another LOGBOOK_DATA_DIR.`);
    }
    if (record.shards !== shards) {
      throw new StoreError(`data directory ${resolve(dataDir)} was written with LOGBOOK_SHARDS=${record.shards}; start with the same shard count (got ${shards})`);
    }
    // older data reads as it is; from now on it may be written in this format, which older binaries must refuse
    if (record.format < FORMAT_VERSION) await durable(this.meta.put('format', { ...record, format: FORMAT_VERSION }));
  }

  /** Store a label; a new highest id is recorded in the same transaction (same event turn). */
  putLabel(id: number, label: StoredLabel): Promise<unknown> {
    // same transaction as the label: if it fails, the label's own promise says so
    if (id > this.labelHighWater) { this.labelHighWater = id; this.meta.put(LABEL_HIGH_WATER, id).catch(() => {}); }
    return durable(this.labels.put(id, label));
  }

  /** The highest label id ever created, deleted ones included. */
  labelMaxId(): number {
    this.labelHighWater = Math.max(this.labelHighWater, Number(this.meta.get(LABEL_HIGH_WATER) ?? 0));
    return this.labelHighWater;
  }
  removeLabel(id: number): Promise<unknown> { return durable(this.labels.remove(id)); }

  storedLabel(id: number): StoredLabel | null {
    return this.labels.get(id) ?? null;
  }

  *allLabels(): Iterable<[number, StoredLabel]> {
    for (const { key, value } of this.labels.getRange()) yield [key, value];
  }

  // ---- label changes for the live stream (src/http/label_changes.ts) ----

  labelChangeSeq(): number {
    return Number(this.meta.get(LABEL_CHANGE_SEQ) ?? 0);
  }

  /** Issued in the label write's turn: one transaction with it, which reports for both (these promises are not watched). */
  putLabelChange(seq: number, change: StoredLabelChange): void {
    this.meta.put(LABEL_CHANGE_SEQ, seq).catch(() => {});
    this.labelChanges.put(seq, change).catch(() => {});
  }

  /** Not waited for: a change kept after it was logged is sent again after a restart, and the shards skip it. */
  removeLabelChange(seq: number): void {
    this.labelChanges.remove(seq).catch(() => {});
  }

  *pendingLabelChanges(): Iterable<[number, StoredLabelChange]> {
    for (const { key, value } of this.labelChanges.getRange()) yield [key, value];
  }

  async close(): Promise<void> {
    // bounded: after a label write failed for good (a full disk) lmdb-js would keep the flush and the close pending
    await closeEnv(this.env, 'front.mdb');
  }
}

/**
 * The promise that resolves when a write is on stable storage: the commit first
 * (a failed transaction never settles `flushed`: the request would wait for
 * ever), then the flush. A failed commit's cause is handled (a label written on a
 * full disk took the process down with it unhandled).
 */
export function durable(p: Promise<unknown>): Promise<unknown> {
  return p.then(() => flushedOf(p), (err: unknown) => { void commitCause(err); throw err; });
}
