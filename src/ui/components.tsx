import type { ComponentChildren } from 'preact';
import { NotFound } from './api.js';

export function Status({ value }: { value: string }) {
  return <span class={`status s-${value}`}>{value}</span>;
}

export function Failure({ error }: { error: Error }) {
  if (error instanceof NotFound) return <p class="notice" role="alert">Not found. It may have been deleted.</p>;
  return <p class="notice error" role="alert">Could not load: {error.message}</p>;
}

export function Loading() {
  return <p class="muted" aria-live="polite">Loading…</p>;
}

/** A table that scrolls sideways on a narrow screen instead of overflowing the page. */
export function Table({ children, label }: { children: ComponentChildren; label: string }) {
  return <div class="table-wrap" role="region" aria-label={label} tabIndex={0}><table>{children}</table></div>;
}

/** Previous/next over a list the server pages (limit/offset). */
export function Pager({ count, offset, limit, go }: { count: number; offset: number; limit: number; go: (offset: number) => void }) {
  if (count <= limit && offset === 0) return null;
  const last = Math.min(offset + limit, count);
  return (
    <nav class="pager" aria-label="pages">
      <button type="button" disabled={offset === 0} onClick={() => go(Math.max(0, offset - limit))}>← Previous</button>
      <span>{count === 0 ? 0 : offset + 1}–{last} of {count}</span>
      <button type="button" disabled={last >= count} onClick={() => go(offset + limit)}>Next →</button>
    </nav>
  );
}

export function Counts({ items, keys }: { items: Record<string, number>; keys: string[] }) {
  return <>{keys.map((k) => <span key={k} class="count"><b>{items[k] ?? 0}</b> {k}</span>)}</>;
}
