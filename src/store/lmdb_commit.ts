// How lmdb-js reports the fate of a write, in one place for every store that
// writes through it (the shard store, front.mdb). A write's promise resolves at
// commit; `flushed` (with separateFlushed) once the commit is on stable storage,
// and never for a failed transaction. A failed transaction rejects every write
// in it with "Commit failed (see commitError for details)" and the cause in a
// second promise, `commitError`, rejected right after: left unhandled it is a
// rejection that takes the process down, so whoever sees the first one handles
// the second (commitCause).

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

/** lmdb-js also rejects promises nobody holds (its own per-transaction ones) when a commit fails. */
export function isCommitFailure(err: unknown): boolean {
  return err instanceof Error && (err.message.startsWith('Commit failed') || 'commitError' in err);
}
