import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { AuthNeeded } from './api.js';

export interface Loaded<T> { data: T | null; error: Error | null; reload: () => void }

/**
 * Load data for a view. `reload()` (live updates) keeps showing the previous
 * data until the new one arrives, so rows do not flicker; a load that was
 * overtaken by a newer one (or by leaving the view) is dropped.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const gen = useRef(0);
  const latest = useRef(load);
  latest.current = load;
  const run = useCallback(() => {
    const mine = ++gen.current;
    const ctl = new AbortController();
    latest.current(ctl.signal).then(
      (d) => { if (mine === gen.current) { setData(d); setError(null); } },
      (e: Error) => { if (mine === gen.current && e.name !== 'AbortError' && !(e instanceof AuthNeeded)) setError(e); },
    );
    return ctl;
  }, []);
  useEffect(() => {
    // the previous data stays on screen until the new one arrives (no flicker on live re-reads)
    const ctl = run();
    return () => { gen.current++; ctl.abort(); };
  }, deps); // eslint-disable-line react-hooks/exhaustive-deps
  return { data, error, reload: run };
}

/** Call `fn` at most once per `ms` (trailing): bursts of live changes → one re-read. */
export function useDebounced(fn: () => void, ms: number): () => void {
  const latest = useRef(fn);
  latest.current = fn;
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => { if (timer.current) clearTimeout(timer.current); }, []);
  return useCallback(() => {
    if (timer.current) return;
    timer.current = setTimeout(() => { timer.current = null; latest.current(); }, ms);
  }, [ms]);
}
