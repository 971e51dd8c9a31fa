// The run metrics of /metrics (listed in src/metrics.ts's header and
// docs/operations.md#health-metrics-and-logs): what the shards report with their stats at
// scrape time, merged across shards and rendered in the text format.
//
// Gauges (stored playbooks by status, the oldest running one, unreachable hosts
// of running playbooks) are each shard's current numbers, summed. Counters are
// each shard worker's totals since it started (src/shard/run_counters.ts): a
// worker that restarted (or a cluster partition that moved here again) reports
// a new epoch from 0, and what the old one had counted is carried over, so the
// exported counters only go up for the life of this process.
import type { RunGauges } from './shard/run_tally.js';
import { PLAYBOOK_STATUSES } from './shard/run_tally.js';
import { ENDED_STATUSES, RUN_DURATION_BUCKETS, type RunCounterTotals } from './shard/run_counters.js';

/** Result statuses as shown (shownStatus): each is exported from the start, at 0. */
const RESULT_STATUSES = ['ok', 'changed', 'failed', 'ignored', 'skipped', 'unreachable', 'unknown'] as const;

/** Counter totals summed over shards and worker epochs. */
class Sums {
  started = 0;
  readonly ended: Record<string, number> = {};
  readonly results: Record<string, number> = {};
  readonly buckets = new Array<number>(RUN_DURATION_BUCKETS.length + 1).fill(0);
  durationSum = 0;
  durationCount = 0;
  /** path + '\0' + name → ended by status */
  readonly series = new Map<string, Record<string, number>>();
  seriesDropped = 0;

  add(t: RunCounterTotals): void {
    this.started += t.started;
    addCounts(this.ended, t.ended);
    addCounts(this.results, t.results);
    t.durationBuckets.forEach((n, i) => { this.buckets[i]! += n; });
    this.durationSum += t.durationSum;
    this.durationCount += t.durationCount;
    for (const [path, name, counts] of t.series) {
      const key = path + '\0' + name;
      let mine = this.series.get(key);
      if (mine === undefined) this.series.set(key, mine = {});
      addCounts(mine, counts);
    }
    this.seriesDropped += t.seriesDropped;
  }

  copy(): Sums {
    const out = new Sums();
    out.started = this.started;
    addCounts(out.ended, this.ended);
    addCounts(out.results, this.results);
    this.buckets.forEach((n, i) => { out.buckets[i] = n; });
    out.durationSum = this.durationSum;
    out.durationCount = this.durationCount;
    for (const [key, counts] of this.series) out.series.set(key, { ...counts });
    out.seriesDropped = this.seriesDropped;
    return out;
  }
}

function addCounts(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
}

/** A label value in the text format: backslash, double quote and newline escaped. */
function labelValue(s: string): string {
  return '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') + '"';
}

export class RunMetrics {
  /** per-series label sets exported at most (LOGBOOK_METRICS_SERIES_MAX) */
  maxSeries = 50;
  /** each shard's last gauges (null: none, or the shard is down / not ours) */
  private readonly gauges: Array<RunGauges | null> = [];
  /** each shard's last counter totals, of its current epoch */
  private readonly current: Array<RunCounterTotals | null> = [];
  /** totals of epochs that ended (workers replaced) */
  private readonly carried = new Sums();
  /** the series exported, first seen first; never shrinks, so each stays a counter */
  private readonly admitted = new Set<string>();

  /** Take the shards' stats of one scrape (null: no answer). */
  update(size: number, isUp: (shard: number) => boolean, stats: ReadonlyArray<{ runs: RunGauges; runCounters: RunCounterTotals } | null>): void {
    for (let shard = 0; shard < size; shard++) {
      const s = stats[shard];
      if (!s) {
        // a shard that did not answer in time keeps its last gauges; one that is down (or, in
        // cluster mode, a partition another node owns now) no longer adds any
        if (!isUp(shard)) this.gauges[shard] = null;
        continue;
      }
      this.gauges[shard] = s.runs;
      const before = this.current[shard];
      if (before && before.epoch !== s.runCounters.epoch) this.carried.add(before);
      this.current[shard] = s.runCounters;
    }
  }

  render(): string {
    let out = '';
    const known = this.gauges.filter((g): g is RunGauges => g !== null && g !== undefined);
    if (known.length > 0) {
      const byStatus: Record<string, number> = {};
      let oldest: number | null = null;
      let unreachable = 0;
      for (const g of known) {
        addCounts(byStatus, g.byStatus);
        if (g.oldestRunningStarted !== null && (oldest === null || g.oldestRunningStarted < oldest)) oldest = g.oldestRunningStarted;
        unreachable += g.unreachableHostsRunning;
      }
      out += '# HELP logbook_runs Stored playbooks by status.\n# TYPE logbook_runs gauge\n';
      for (const s of new Set([...PLAYBOOK_STATUSES, ...Object.keys(byStatus)])) out += `logbook_runs{status=${labelValue(s)}} ${byStatus[s] ?? 0}\n`;
      out += '# HELP logbook_runs_running_oldest_started_timestamp_seconds When the oldest running playbook started (Unix time; 0: none running). Its age: time() - this.\n'
        + '# TYPE logbook_runs_running_oldest_started_timestamp_seconds gauge\n'
        + `logbook_runs_running_oldest_started_timestamp_seconds ${oldest === null ? 0 : oldest / 1e6}\n`;
      out += '# HELP logbook_hosts_unreachable Hosts with unreachable > 0 in the playbooks running now.\n# TYPE logbook_hosts_unreachable gauge\n'
        + `logbook_hosts_unreachable ${unreachable}\n`;
    }
    const sums = this.carried.copy();
    for (const t of this.current) if (t) sums.add(t);
    out += '# HELP logbook_runs_started_total Playbooks created by live writes since the process started (recovery replays are not counted).\n'
      + '# TYPE logbook_runs_started_total counter\n'
      + `logbook_runs_started_total ${sums.started}\n`;
    out += '# HELP logbook_runs_ended_total Playbooks whose status changed into completed, failed or expired by a live write (expiry included), by that status.\n'
      + '# TYPE logbook_runs_ended_total counter\n';
    for (const s of new Set([...ENDED_STATUSES, ...Object.keys(sums.ended)])) out += `logbook_runs_ended_total{status=${labelValue(s)}} ${sums.ended[s] ?? 0}\n`;
    out += '# HELP logbook_results_total Results created by live writes, by shown status.\n# TYPE logbook_results_total counter\n';
    for (const s of new Set([...RESULT_STATUSES, ...Object.keys(sums.results)])) out += `logbook_results_total{status=${labelValue(s)}} ${sums.results[s] ?? 0}\n`;
    out += '# HELP logbook_run_duration_seconds Duration of the runs that ended (ended - started; expired runs: until they were marked).\n'
      + '# TYPE logbook_run_duration_seconds histogram\n';
    let cumulative = 0;
    sums.buckets.forEach((n, i) => {
      cumulative += n;
      out += `logbook_run_duration_seconds_bucket{le="${i < RUN_DURATION_BUCKETS.length ? RUN_DURATION_BUCKETS[i] : '+Inf'}"} ${cumulative}\n`;
    });
    out += `logbook_run_duration_seconds_sum ${sums.durationSum}\nlogbook_run_duration_seconds_count ${sums.durationCount}\n`;
    let dropped = sums.seriesDropped;
    let series = '';
    for (const [key, counts] of sums.series) {
      if (!this.admitted.has(key)) {
        if (this.admitted.size >= this.maxSeries) { for (const n of Object.values(counts)) dropped += n; continue; }
        this.admitted.add(key);
      }
      const cut = key.indexOf('\0');
      const labels = `path=${labelValue(key.slice(0, cut))},name=${labelValue(key.slice(cut + 1))}`;
      for (const s of new Set([...ENDED_STATUSES, ...Object.keys(counts)])) series += `logbook_series_runs_ended_total{${labels},status=${labelValue(s)}} ${counts[s] ?? 0}\n`;
    }
    out += '# HELP logbook_series_runs_ended_total Runs ended per series (playbook path and name) allowed by LOGBOOK_METRICS_SERIES, by status.\n'
      + '# TYPE logbook_series_runs_ended_total counter\n' + series;
    out += `# HELP logbook_series_dropped_total Ends of allowed series not exported because LOGBOOK_METRICS_SERIES_MAX series already are.\n`
      + '# TYPE logbook_series_dropped_total counter\n'
      + `logbook_series_dropped_total ${dropped}\n`;
    return out;
  }
}
