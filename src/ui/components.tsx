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

/** ARA's task messages (docs/api.md#the-ara-dialect): lists a task's results reported. */
export interface TaskMessageLists { warnings?: unknown; deprecations?: unknown; exceptions?: unknown }

const MESSAGE_KINDS = [
  ['exceptions', 'exception', 'exceptions'],
  ['warnings', 'warning', 'warnings'],
  ['deprecations', 'deprecation', 'deprecations'],
] as const;

/** One message as text: warnings and exceptions are strings, a deprecation an object with `msg` (and a version). */
function messageText(m: unknown): string {
  if (typeof m === 'string') return m;
  if (m !== null && typeof m === 'object' && typeof (m as { msg?: unknown }).msg === 'string') {
    const d = m as { msg: string; version?: unknown; date?: unknown; collection_name?: unknown };
    const when = d.version ?? d.date;
    const where = typeof d.collection_name === 'string' && d.collection_name ? ` (${d.collection_name})` : '';
    return when ? `${d.msg} — removed in ${String(when)}${where}` : d.msg + where;
  }
  return JSON.stringify(m);
}

/**
 * A task's exceptions, warnings and deprecations, each kind a disclosure
 * ("2 warnings") that opens to the messages; nothing when it has none.
 * Exceptions are tracebacks: shown as preformatted text.
 */
export function TaskMessages({ task, open = false }: { task: TaskMessageLists; open?: boolean }) {
  const kinds = MESSAGE_KINDS.map(([key, one, many]) => {
    const list = Array.isArray(task[key]) ? task[key] as unknown[] : [];
    return { key, list, label: `${list.length} ${list.length === 1 ? one : many}` };
  }).filter((k) => k.list.length > 0);
  if (kinds.length === 0) return null;
  return (
    <div class="task-messages">
      {kinds.map((k) => (
        <details key={k.key} class={`msg msg-${k.key}`} open={open} data-messages={k.key}>
          <summary>{k.label}</summary>
          <ul>{k.list.map((m, i) => <li key={i}>{k.key === 'exceptions' ? <pre class="text">{messageText(m)}</pre> : messageText(m)}</li>)}</ul>
        </details>
      ))}
    </div>
  );
}
