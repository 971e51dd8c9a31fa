// Counters of what a shard's live writes did to runs, for /metrics
// (src/metrics.ts: logbook_runs_started_total, logbook_runs_ended_total,
// logbook_results_total, logbook_run_duration_seconds,
// logbook_series_runs_ended_total).
//
// Only writes this shard decides and applies as its own (Shard.stage: per-record
// writes, batch ingest, retention/expiry) are counted; recovery (journal replay,
// snapshots, a rebuild from disk) and a cluster standby tailing its partition
// apply events to ShardState directly and count nothing. So the counters start
// at 0 with each worker and never count a run twice because it was replayed: an
// alert on increase(logbook_runs_ended_total{status="failed"}[…]) does not fire
// again for old runs after a restart. A new worker has a new `epoch`, which tells
// the front (src/run_metrics.ts) to add the new totals to what it had seen.
import { randomUUID } from 'node:crypto';
import type { Event, ShardState } from './state.js';
import { shownStatus } from './rows.js';
import { globRegExp } from '../config/glob.js';

/** Upper bounds (seconds) of logbook_run_duration_seconds: 10 s … 24 h. */
export const RUN_DURATION_BUCKETS = [10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400] as const;

/** Statuses a run ends in: a playbook's status changing into one of them is an end. */
export const ENDED_STATUSES = ['completed', 'failed', 'expired'] as const;

/** Per-series counters: which playbook paths, and how many series at most (LOGBOOK_METRICS_SERIES, _MAX). */
export interface SeriesOptions {
  /** exact paths, or patterns where `*` stands for any characters; empty: no series */
  allow: readonly string[];
  max: number;
}

/** The shard's counters as sent with its stats (StatsReply.runCounters). */
export interface RunCounterTotals {
  /** this set of counters (a worker's lifetime): a new one starts from 0 */
  epoch: string;
  started: number;
  /** runs ended, by the status they ended in */
  ended: Record<string, number>;
  /** results created, by shown status */
  results: Record<string, number>;
  /** logbook_run_duration_seconds: counts per bucket of RUN_DURATION_BUCKETS (+Inf last, not cumulative) */
  durationBuckets: number[];
  durationSum: number;
  durationCount: number;
  /** per series: [path, name ('' when unset), ended by status] */
  series: Array<[string, string, Record<string, number>]>;
  /** ends of allowed series not counted because this shard already tracks `max` series */
  seriesDropped: number;
}

export class RunCounters {
  private readonly epoch = randomUUID();
  private started = 0;
  private readonly ended: Record<string, number> = {};
  private readonly results: Record<string, number> = {};
  private readonly buckets = new Array<number>(RUN_DURATION_BUCKETS.length + 1).fill(0);
  private durationSum = 0;
  private durationCount = 0;
  /** path + '\0' + name → ended by status */
  private readonly series = new Map<string, Record<string, number>>();
  private seriesDropped = 0;
  private readonly allow: RegExp | null;
  private readonly maxSeries: number;

  constructor(options: SeriesOptions = { allow: [], max: 0 }) {
    this.allow = seriesPattern(options.allow);
    this.maxSeries = options.max;
  }

  /** Before a live event is applied: the playbook status it may change (null: not a playbook update). */
  before(state: ShardState, ev: Event): string | null {
    if (ev.e !== 'update' || ev.t !== 'playbook') return null;
    return state.aggregates.get(ev.id)?.playbook.status ?? null;
  }

  /** After a live event was applied (`before`: what before() returned for it). */
  after(state: ShardState, ev: Event, before: string | null): void {
    if (ev.e !== 'create' && before === null) return;
    if (ev.e === 'create') {
      if (ev.t === 'result') {
        // the newest row of its playbook (live ids increase); the shard-wide index (a search) otherwise
        const rows = state.aggregates.get(ev.p)?.results.inIdOrder();
        let row = rows?.[rows.length - 1];
        if (row?.id !== ev.d.id) row = state.results.get(ev.d.id);
        if (row !== undefined) { const s = shownStatus(row); this.results[s] = (this.results[s] ?? 0) + 1; }
      } else if (ev.t === 'playbook') this.started++;
      return;
    }
    const pb = state.aggregates.get((ev as { id: number }).id)?.playbook;
    if (pb === undefined || pb.status === before || !(ENDED_STATUSES as readonly string[]).includes(pb.status)) return;
    this.ended[pb.status] = (this.ended[pb.status] ?? 0) + 1;
    // an expired run has no `ended`: it ran until it was marked (its `updated`)
    const seconds = ((pb.ended ?? pb.updated) - pb.started) / 1e6;
    if (Number.isFinite(seconds) && seconds >= 0) {
      let b = 0;
      while (b < RUN_DURATION_BUCKETS.length && seconds > RUN_DURATION_BUCKETS[b]!) b++;
      this.buckets[b]!++;
      this.durationSum += seconds;
      this.durationCount++;
    }
    if (this.allow !== null && this.allow.test(pb.path)) {
      const key = pb.path + '\0' + (pb.name ?? '');
      let counts = this.series.get(key);
      if (counts === undefined) {
        if (this.series.size >= this.maxSeries) { this.seriesDropped++; return; }
        this.series.set(key, counts = {});
      }
      counts[pb.status] = (counts[pb.status] ?? 0) + 1;
    }
  }

  totals(): RunCounterTotals {
    const series: RunCounterTotals['series'] = [];
    for (const [key, counts] of this.series) {
      const cut = key.indexOf('\0');
      series.push([key.slice(0, cut), key.slice(cut + 1), { ...counts }]);
    }
    return {
      epoch: this.epoch, started: this.started, ended: { ...this.ended }, results: { ...this.results },
      durationBuckets: [...this.buckets], durationSum: this.durationSum, durationCount: this.durationCount,
      series, seriesDropped: this.seriesDropped,
    };
  }
}

/** One RegExp for the allowlist: exact paths, `*` for any characters (null: none allowed). */
export function seriesPattern(allow: readonly string[]): RegExp | null {
  return globRegExp(allow.map((p) => p.trim()).filter((p) => p !== ''));
}
