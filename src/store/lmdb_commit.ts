// How lmdb-js reports the fate of a write, in one place for every store that
// writes through it (the shard store, front.mdb). A write's promise resolves at
// commit; `flushed` (with separateFlushed) once the commit is on stable storage,
// and never for a failed transaction. A failed transaction rejects every write
// in it with "Commit failed (see commitError for details)" and the cause in a
// second promise, `commitError`, rejected right after: left unhandled it is a
// rejection that takes the process down, so whoever sees the first one handles
// the second (commitCause). A transaction that fails without a status (a page
// spill that cannot be written, seen on a full disk) carries no cause at all:
// then the filesystem's free space is the best evidence there is (silentCause).

import { statfs } from 'node:fs/promises';

/** The promise that resolves when a committed write is on stable storage (the write's own when there is no `flushed`). */
export function flushedOf(p: Promise<unknown>): Promise<unknown> {
  return (p as Promise<unknown> & { flushed?: Promise<unknown> }).flushed ?? p;
}

/**
 * The cause of a failed commit, as text, with `commitError`'s rejection handled.
 * null when the error carries none, or when it has not said within `waitMs`:
 * lmdb-js rejects it only when its write thread reports an error status, and a
 * transaction can also fail without one (e.g. a page spill that cannot be
 * written), then it never settles.
 */
export function commitCause(err: unknown, waitMs = 100): Promise<string | null> {
  const cause = (err as { commitError?: Promise<unknown> } | null)?.commitError;
  if (!cause || typeof cause.then !== 'function') return Promise.resolve(null);
  const why = cause.then(() => null, (inner: unknown) => (inner instanceof Error ? inner.message : String(inner)));
  return Promise.race([why, new Promise<null>((r) => setTimeout(() => r(null), waitMs).unref())]);
}

/** Below this much free space, a commit that failed without a cause is put down to a full disk. */
const NEARLY_FULL_BYTES = 1 << 20;

/**
 * What can be said of a commit that failed with no cause from lmdb-js, from the
 * free space of the filesystem holding `dir`: "No space left on device" when it
 * is nearly full, else that LMDB gave no cause. null when `dir` cannot be read.
 */
export async function silentCause(dir: string): Promise<string | null> {
  try {
    const fs = await statfs(dir);
    const free = fs.bavail * fs.bsize;
    if (free < NEARLY_FULL_BYTES) return `No space left on device (${Math.floor(free / 1024)} KiB free on its filesystem; LMDB gave no error code)`;
    return `the commit failed and LMDB gave no error code (${(free / 2 ** 20).toFixed(0)} MiB free on its filesystem)`;
  } catch {
    return null;
  }
}

/**
 * Why a write failed, as text: the cause lmdb-js gives in `commitError`; for a
 * failed commit without one, what the free space of the filesystem holding `dir`
 * says (silentCause); for any other error (one thrown before a commit), its own
 * message.
 */
export async function failureCause(err: unknown, dir: string): Promise<string> {
  const cause = await commitCause(err);
  if (cause !== null) return cause;
  const guess = isCommitFailure(err) ? await silentCause(dir) : null;
  return guess ?? (err instanceof Error ? err.message : String(err));
}

/** lmdb-js also rejects promises nobody holds (its own per-transaction ones) when a commit fails. */
export function isCommitFailure(err: unknown): boolean {
  return err instanceof Error && (err.message.startsWith('Commit failed') || 'commitError' in err);
}
