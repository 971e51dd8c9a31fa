// Retention and expiry inside a shard: which playbooks a maintenance batch
// deletes or marks expired, as ordinary journal events (decide-style: reads the
// state, never changes it; the Shard applies and journals the events like any
// write, so recovery replays them with no special case).
//
// A batch is bounded (playbooks and rows touched) so a shard never spends long
// on it between client commands. Candidates are found by one scan of the
// shard's aggregates and queued; later batches drain the queue, re-checking
// each candidate, and a new scan happens only once the queue is empty (no
// quadratic rescans while a large backlog is worked off).
import type { Event, ShardState, Aggregate } from './state.js';
import type { MaintenanceTask } from './protocol.js';

export interface MaintenanceBatch {
  events: Event[];
  /** playbooks deleted by this batch */
  deletedPlaybooks: number;
  /** [playbooks, plays, tasks] marked expired */
  expired: [number, number, number];
  /** a bound was hit: candidates remain queued */
  more: boolean;
}

/** Rows a playbook's deletion touches (its cascade). */
function size(agg: Aggregate): number {
  return 1 + agg.plays.size + agg.tasks.size + agg.hosts.size + agg.results.size + agg.files.size + agg.records.size;
}

class Queue {
  private ids: number[] = [];
  private head = 0;
  get empty(): boolean { return this.head >= this.ids.length; }
  fill(ids: number[]): void { this.ids = ids; this.head = 0; }
  peek(): number { return this.ids[this.head]!; }
  shift(): void { this.head++; }
}

export class Maintenance {
  private readonly toDelete = new Queue();
  private readonly toExpire = new Queue();

  /** The next batch for `task`. Deletions come first: expiring what is about to go is wasted work. */
  batch(state: ShardState, task: MaintenanceTask): MaintenanceBatch {
    const out: MaintenanceBatch = { events: [], deletedPlaybooks: 0, expired: [0, 0, 0], more: false };
    let playbooks = 0;
    let rows = 0;
    const full = () => playbooks > 0 && (playbooks >= task.maxPlaybooks || rows >= task.maxRows);

    const deleteBefore = task.deleteStartedBefore;
    if (deleteBefore !== null) {
      const old = (agg: Aggregate | undefined): agg is Aggregate => agg !== undefined && agg.playbook.started < deleteBefore;
      if (this.toDelete.empty) this.toDelete.fill(scan(state, (agg) => old(agg)));
      while (!this.toDelete.empty && !full()) {
        const id = this.toDelete.peek();
        const agg = state.aggregates.get(id);
        if (old(agg)) {
          const n = size(agg);
          if (playbooks > 0 && rows + n > task.maxRows) break; // the next batch takes it
          out.events.push({ e: 'delete', t: 'playbook', p: id, id });
          out.deletedPlaybooks++;
          playbooks++;
          rows += n;
        }
        this.toDelete.shift();
      }
      if (!this.toDelete.empty) out.more = true;
    }

    const expireBefore = task.expireStartedBefore;
    if (expireBefore !== null && !out.more) {
      const stale = (agg: Aggregate | undefined): agg is Aggregate => agg !== undefined
        && agg.playbook.status === 'running' && agg.playbook.started < expireBefore
        && !(deleteBefore !== null && agg.playbook.started < deleteBefore);
      if (this.toExpire.empty) this.toExpire.fill(scan(state, (agg) => stale(agg)));
      while (!this.toExpire.empty && !full()) {
        const id = this.toExpire.peek();
        const agg = state.aggregates.get(id);
        if (stale(agg)) { rows += expire(agg, task.now, out); playbooks++; }
        this.toExpire.shift();
      }
      if (!this.toExpire.empty) out.more = true;
    }
    return out;
  }
}

function scan(state: ShardState, keep: (agg: Aggregate) => boolean): number[] {
  const ids: number[] = [];
  for (const [id, agg] of state.aggregates) if (keep(agg)) ids.push(id);
  return ids;
}

/** Events that mark a playbook and its running plays and tasks expired; returns how many. */
function expire(agg: Aggregate, now: number, out: MaintenanceBatch): number {
  const p = agg.playbook.id;
  const d = () => ({ status: 'expired', updated: now });
  out.events.push({ e: 'update', t: 'playbook', p, id: p, d: d() });
  out.expired[0]++;
  let n = 1;
  for (const play of agg.plays.values()) {
    if (play.status !== 'running') continue;
    out.events.push({ e: 'update', t: 'play', p, id: play.id, d: d() });
    out.expired[1]++;
    n++;
  }
  for (const task of agg.tasks.values()) {
    if (task.status !== 'running') continue;
    out.events.push({ e: 'update', t: 'task', p, id: task.id, d: d() });
    out.expired[2]++;
    n++;
  }
  return n;
}
