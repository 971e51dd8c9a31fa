// Closing an lmdb-js environment without waiting for ever. lmdb-js never
// settles the flush of a transaction that failed, and its close() first waits
// for the writes to end: after a commit failed for good (a full disk) both stay
// pending, and a shutdown waited until something killed it (the shard pool's
// terminate after 10 s, then the process's own shutdown bound). LMDB needs no
// close to be consistent on disk (every commit is atomic and a crash loses
// nothing committed), so past a bound the caller goes on and exits.
import type { RootDatabase } from 'lmdb';
import { log } from '../log.js';

/** ms an environment's last flush and close may take before its owner gives up on them */
export const CLOSE_BOUND_MS = 5000;

/**
 * Wait for the last flush, then close; true when both ended within `boundMs`.
 * Past the bound it logs that `what` (e.g. "front.mdb") is left unclosed.
 */
export async function closeEnv(env: RootDatabase, what: string, boundMs = CLOSE_BOUND_MS): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  // not unref'd: the owner is shutting down and this is what it waits for
  const bound = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), boundMs); });
  const closed = (async () => { await env.flushed; await env.close(); return true as const; })();
  try {
    const ended = await Promise.race([closed, bound]);
    if (!ended) log.warn(`${what} did not close in time (a write failed?); exiting without it`, { boundMs });
    return ended;
  } finally {
    clearTimeout(timer);
  }
}
