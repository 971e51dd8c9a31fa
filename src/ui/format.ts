// Display helpers: times in UTC (what the API stores), durations shortened.

/** `2026-11-22T16:02:21.123456Z` → `2026-11-22 16:02:21` */
export function when(ts: string | null | undefined): string {
  if (!ts) return '—';
  return ts.slice(0, 19).replace('T', ' ');
}

/** `HH:MM:SS.ffffff` → `1h 02m`, `3m 04s`, `12.3s`, `0.45s` */
export function took(d: string | null | undefined): string {
  if (!d) return '—';
  const m = /^(\d+):(\d\d):(\d\d)\.(\d+)$/.exec(d);
  if (!m) return d;
  const h = Number(m[1]);
  const min = Number(m[2]);
  const s = Number(m[3]) + Number(`0.${m[4]}`);
  if (h > 0) return `${h}h ${String(min).padStart(2, '0')}m`;
  if (min > 0) return `${min}m ${String(Math.floor(s)).padStart(2, '0')}s`;
  return s >= 10 ? `${s.toFixed(1)}s` : `${s.toFixed(2)}s`;
}

/** Pretty JSON for content, facts, arguments and record values. */
export function pretty(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
}

/** Worst first: what a reader of a run looks for. */
export const STATUS_RANK: Record<string, number> = {
  failed: 0, unreachable: 1, running: 2, expired: 3, changed: 4, ignored: 5, ok: 6, completed: 6, skipped: 7, unknown: 8,
};
