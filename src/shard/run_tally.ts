// What a shard's stored runs look like right now, for /metrics (src/metrics.ts
// logbook_runs{status}, logbook_runs_running_oldest_started_timestamp_seconds,
// logbook_hosts_unreachable). ShardState keeps it up to date in the same
// apply()/load() that change the rows, so it is exact after recovery, after a
// rebuild from disk, through deletes and retention: a scrape reads a few
// numbers and walks the running playbooks, never every row.

/** What the tally reads of a playbook's aggregate (state.ts Aggregate). */
interface Aggregate {
  readonly playbook: { readonly status: string; readonly started: number };
  readonly unreachableHosts: number;
}

/** A playbook's statuses (anything else a client stored is counted as it is). */
export const PLAYBOOK_STATUSES = ['unknown', 'running', 'completed', 'failed', 'expired'] as const;

/** The shard's share of the run gauges (StatsReply.runs). */
export interface RunGauges {
  /** stored playbooks per status */
  byStatus: Record<string, number>;
  /** µs since the epoch: the oldest `started` among running playbooks (null: none running) */
  oldestRunningStarted: number | null;
  /** hosts with unreachable > 0 in running playbooks */
  unreachableHostsRunning: number;
}

export class RunTally {
  private readonly byStatus = new Map<string, number>();
  /** the running playbooks: few at a time, walked at scrape time */
  private readonly running = new Set<Aggregate>();

  /** A playbook was created or loaded from a snapshot. */
  added(agg: Aggregate): void {
    this.count(agg.playbook.status, 1);
    if (agg.playbook.status === 'running') this.running.add(agg);
  }

  /** A playbook was deleted (its hosts go with it). */
  removed(agg: Aggregate): void {
    this.count(agg.playbook.status, -1);
    this.running.delete(agg);
  }

  /** A playbook's status may have changed (from `before`). */
  statusChanged(agg: Aggregate, before: string): void {
    const now = agg.playbook.status;
    if (now === before) return;
    this.count(before, -1);
    this.count(now, 1);
    if (now === 'running') this.running.add(agg); else this.running.delete(agg);
  }

  gauges(): RunGauges {
    const byStatus: Record<string, number> = {};
    for (const s of PLAYBOOK_STATUSES) byStatus[s] = 0;
    for (const [s, n] of this.byStatus) byStatus[s] = n;
    let oldest: number | null = null;
    let unreachable = 0;
    for (const agg of this.running) {
      if (oldest === null || agg.playbook.started < oldest) oldest = agg.playbook.started;
      unreachable += agg.unreachableHosts;
    }
    return { byStatus, oldestRunningStarted: oldest, unreachableHostsRunning: unreachable };
  }

  private count(status: string, delta: number): void {
    const n = (this.byStatus.get(status) ?? 0) + delta;
    if (n === 0 && !(PLAYBOOK_STATUSES as readonly string[]).includes(status)) this.byStatus.delete(status);
    else this.byStatus.set(status, n);
  }
}
