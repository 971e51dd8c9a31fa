// What every scenario gets from bench/run.ts: the mode, a progress printer,
// the shared read store (built once, used by `read` and `footprint`), and a
// list of notes that end up in the report.
import { availableParallelism } from 'node:os';

export interface Context {
  quick: boolean;
  /** the scenarios this run measures */
  scenarios: readonly string[];
  /** shard count logbook runs with (its default: cores − 1, at least 1, unless LOGBOOK_SHARDS is set) */
  shards: number;
  /** null when ARA's server cannot run here: the reason, printed and reported */
  araSkipped: string | null;
  /** one progress line (prefixed with the elapsed time) */
  step(msg: string): void;
  /** something the report must say (a skip, a bound, a failure) */
  note(msg: string): void;
  /** the 1 M-result (quick: 100 k) logbook data directory, built on first use */
  store(): Promise<import('../scenarios/store.js').BuiltStore>;
  /** ARA's 10 k-result database (null when ARA is skipped), built on first use */
  araStore(): Promise<import('../scenarios/store.js').AraStore | null>;
}

export function defaultShards(): number {
  const env = Number(process.env.LOGBOOK_SHARDS);
  return Number.isInteger(env) && env > 0 ? env : Math.max(1, availableParallelism() - 1);
}

const t0 = performance.now();
export function elapsed(): string {
  const s = Math.floor((performance.now() - t0) / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** Formatting helpers shared by progress lines and the report. */
export const fmt = {
  int: (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–'),
  ms: (n: number) => (!Number.isFinite(n) ? '–' : n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)),
  ratio: (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? (a / b >= 10 ? (a / b).toFixed(0) : (a / b).toFixed(1)) + '×' : '–'),
  pct: (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? ((100 * a) / b).toFixed(0) + ' %' : '–'),
  mib: (bytes: number) => (bytes / 1048576).toFixed(bytes >= 100 * 1048576 ? 0 : 1) + ' MiB',
};
