// What happened to runs, read off the live stream's playbook and host changes
// (docs/webhooks.md#events). The stream gives a playbook's row after each
// commit that touched it; whether that commit *ended* the run depends on what
// the row said before, so the watcher keeps, per playbook, the facts it last
// saw (status, path, name, labels) and, per series, the status its last run
// ended in. That state is the dispatcher's (src/webhooks/outbox.ts), stored
// with the stream position it is true at: replaying the stream from that
// position gives the same events again, with the same ids.
import type { WebhookEvent } from '../config/webhooks.js';

/** What the watcher remembers of a playbook. */
export interface PlaybookFacts {
  status: string;
  path: string;
  name: string | null;
  labels: string[];
}

/** The watcher's memory (the outbox keeps it, in step with the stream position). */
export interface WatchState {
  playbook(id: number): PlaybookFacts | undefined;
  /** null: the playbook was deleted */
  setPlaybook(id: number, facts: PlaybookFacts | null): void;
  /** the status the last ended run of a series ended in (completed or failed) */
  seriesLast(series: string): string | undefined;
  setSeriesLast(series: string, status: string): void;
  hostNotified(playbook: number, host: number): boolean;
  setHostNotified(playbook: number, host: number): void;
  /** the run ended or was deleted: its hosts' notes go */
  forgetHosts(playbook: number): void;
}

export interface RunEvent {
  /** the same for the same change whenever it is read: `<shard>.<seq>.<event>` */
  id: string;
  type: WebhookEvent;
  playbookId: number;
  /** the playbook's row as the live stream gave it (for host.unreachable: what the watcher knows of it) */
  playbook: Record<string, unknown>;
  facts: PlaybookFacts;
  /** run.fixed: the status the series' previous run ended in */
  previousStatus?: string;
  /** host.unreachable: the host's row */
  host?: Record<string, unknown>;
}

/** One live-stream message (the fields the watcher reads). */
export interface ChangeMessage {
  op: 'create' | 'update' | 'delete';
  type: string;
  id: number;
  playbook: number | null;
  row: Record<string, unknown> | null;
}

export const ENDED = new Set(['completed', 'failed', 'expired']);

/** A run's series: the same path, and the same name where one is set. */
export function seriesKey(facts: PlaybookFacts): string {
  return facts.path + '\0' + (facts.name ?? '');
}

export class RunWatcher {
  /**
   * `watchingSince` (ms since the epoch): when webhooks were first switched on
   * for this data directory. A playbook the watcher has never seen (it ran
   * before) whose row says it ended is an end to report only if it ended since.
   */
  constructor(private readonly state: WatchState, private readonly watchingSince: number) {}

  /** The events one change makes (`shard`, `seq`: its place in the stream, for the ids). */
  observe(shard: number, seq: number, msg: ChangeMessage): RunEvent[] {
    if (msg.type === 'playbook') return this.playbookChange(shard + '.' + seq, msg);
    if (msg.type === 'host' && msg.row !== null && msg.playbook !== null) return this.hostChange(shard + '.' + seq, msg);
    return [];
  }

  private playbookChange(at: string, msg: ChangeMessage): RunEvent[] {
    const known = this.state.playbook(msg.id);
    if (msg.op === 'delete' || msg.row === null) {
      if (known !== undefined) { this.state.setPlaybook(msg.id, null); this.state.forgetHosts(msg.id); }
      return [];
    }
    const row = msg.row;
    const facts: PlaybookFacts = {
      status: String(row.status ?? 'unknown'),
      path: String(row.path ?? ''),
      name: typeof row.name === 'string' && row.name !== '' ? row.name : null,
      labels: Array.isArray(row.labels) ? row.labels.map((l: { name?: unknown }) => String(l?.name ?? '')) : [],
    };
    if (known === undefined || !sameFacts(known, facts)) this.state.setPlaybook(msg.id, facts);
    const events: RunEvent[] = [];
    const event = (type: WebhookEvent, extra: Partial<RunEvent> = {}): void => {
      events.push({ id: at + '.' + type, type, playbookId: msg.id, playbook: row, facts, ...extra });
    };
    if (msg.op === 'create') event('run.started');
    const wasEnded = known !== undefined ? ENDED.has(known.status) : msg.op === 'create' ? false : !this.endedSinceWatching(row);
    if (!ENDED.has(facts.status) || wasEnded) return events;
    event('run.ended');
    if (facts.status === 'failed') event('run.failed');
    if (facts.status !== 'expired') {
      const series = seriesKey(facts);
      const last = this.state.seriesLast(series);
      if (facts.status === 'completed' && last === 'failed') event('run.fixed', { previousStatus: last });
      if (last !== facts.status) this.state.setSeriesLast(series, facts.status);
    }
    this.state.forgetHosts(msg.id);
    return events;
  }

  private hostChange(at: string, msg: ChangeMessage): RunEvent[] {
    const row = msg.row!;
    const playbook = msg.playbook!;
    if (msg.op === 'delete' || !(Number(row.unreachable) > 0)) return [];
    const facts = this.state.playbook(playbook);
    // a host of a run that has ended (a late write) or that the watcher never saw start is not news
    if (facts === undefined || ENDED.has(facts.status) || this.state.hostNotified(playbook, msg.id)) return [];
    this.state.setHostNotified(playbook, msg.id);
    const type: WebhookEvent = 'host.unreachable';
    return [{
      id: at + '.' + type, type, playbookId: playbook, facts, host: row,
      playbook: { id: playbook, name: facts.name, path: facts.path, status: facts.status, labels: facts.labels.map((name) => ({ name })) },
    }];
  }

  private endedSinceWatching(row: Record<string, unknown>): boolean {
    // an expired run has no `ended`: its last update is when it was marked
    const at = Date.parse(String(row.ended ?? row.updated ?? ''));
    return Number.isFinite(at) && at >= this.watchingSince;
  }
}

function sameFacts(a: PlaybookFacts, b: PlaybookFacts): boolean {
  return a.status === b.status && a.path === b.path && a.name === b.name
    && a.labels.length === b.labels.length && a.labels.every((l, i) => l === b.labels[i]);
}
