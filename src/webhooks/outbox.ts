// The webhook dispatcher's durable state, in front.mdb's `webhooks` table
// (docs/webhooks.md#delivery-guarantees): the live-stream position it has read
// up to, the run watch (src/webhooks/run_events.ts) true at that position, the
// deliveries not yet accepted by their endpoint, and each endpoint's delivery
// log. What one read of the stream changes is written in one transaction with
// the new position, so after a crash (kill -9 included) the dispatcher resumes
// from a position and a state that agree: the changes after it are read again
// and give the same events, with the same ids, again.
//
// Keys (strings, msgpack values):
//   cursor                    the stream position (a `since`)
//   since                     ms: when webhooks were first switched on for this data directory
//   p:<playbook>              PlaybookFacts
//   s:<path>\0<name>          the status the series' last run ended in
//   h:<playbook>:<host>       that host was reported unreachable
//   q:<endpoint>:<n>          a delivery waiting for its endpoint (Queued), n = order of queueing
//   l:<endpoint>:<n>          a delivery attempt (LogEntry), kept for the last LOG_KEEP attempts
//   next                      the next n
import type { Database } from 'lmdb';
import type { PlaybookFacts, WatchState } from './run_events.js';

export interface Queued {
  /** the event's id (the delivery id a receiver dedupes on) */
  id: string;
  event: string;
  playbook: number;
  /** the request body, as sent on every attempt */
  body: string;
  /** ms: when it was queued (a delivery not accepted within give_up_after_hours is dropped) */
  queued: number;
}

export interface LogEntry {
  delivery: string;
  event: string;
  playbook: number;
  /** 1 for the first attempt of a delivery */
  attempt: number;
  at: string;
  outcome: 'delivered' | 'failed' | 'gave_up' | 'dropped';
  /** the endpoint's HTTP status (null: no answer) */
  status: number | null;
  error: string | null;
  ms: number;
}

/** Attempts each endpoint's log keeps. */
export const LOG_KEEP = 1000;

const pad = (n: number): string => String(n).padStart(15, '0');
const DELETED = Symbol('deleted');

export class Outbox implements WatchState {
  /** writes not yet handed to LMDB (read before the table: the watch reads its own writes) */
  private pending = new Map<string, unknown>();
  /** writes handed to LMDB and not yet committed */
  private committing = new Map<string, unknown>();
  private nextN: number;
  /** hosts noted per playbook (forgetHosts removes them without a scan) */
  private readonly hostsOf = new Map<number, number[]>();

  constructor(private readonly db: Database<any, string>) {
    // `next` is written with the queue and with the log, in different transactions: the keys themselves say where it stands
    let high = (db.get('next') as number | undefined) ?? 1;
    for (const prefix of ['q:', 'l:']) {
      for (const key of db.getKeys({ start: prefix, end: prefix.slice(0, 1) + ';' })) {
        const n = Number(key.slice(key.lastIndexOf(':') + 1));
        if (n >= high) high = n + 1;
      }
    }
    this.nextN = high;
  }

  // ---- position ----

  cursor(): string | null {
    return (this.read('cursor') as string | undefined) ?? null;
  }

  setCursor(cursor: string): void {
    this.write('cursor', cursor);
  }

  /** When webhooks were first switched on here (recorded now if never). */
  watchingSince(): number {
    let since = this.read('since') as number | undefined;
    if (since === undefined) this.write('since', since = Date.now());
    return since;
  }

  // ---- the run watch (WatchState) ----

  playbook(id: number): PlaybookFacts | undefined {
    return this.read('p:' + id) as PlaybookFacts | undefined;
  }

  setPlaybook(id: number, facts: PlaybookFacts | null): void {
    this.write('p:' + id, facts ?? DELETED);
  }

  seriesLast(series: string): string | undefined {
    return this.read('s:' + series) as string | undefined;
  }

  setSeriesLast(series: string, status: string): void {
    this.write('s:' + series, status);
  }

  hostNotified(playbook: number, host: number): boolean {
    return this.read('h:' + playbook + ':' + host) !== undefined;
  }

  setHostNotified(playbook: number, host: number): void {
    this.write('h:' + playbook + ':' + host, 1);
    let hosts = this.hostsOf.get(playbook);
    if (hosts === undefined) this.hostsOf.set(playbook, hosts = []);
    hosts.push(host);
  }

  forgetHosts(playbook: number): void {
    const hosts = this.hostsOf.get(playbook);
    if (hosts !== undefined) { for (const h of hosts) this.write('h:' + playbook + ':' + h, DELETED); this.hostsOf.delete(playbook); }
    // noted by an earlier process: found on disk
    for (const { key } of this.db.getRange({ start: 'h:' + playbook + ':', end: 'h:' + playbook + ';' })) this.write(key, DELETED);
  }

  // ---- deliveries ----

  /** Queue a delivery; its key (the queue order) is returned. */
  enqueue(endpoint: string, q: Queued): string {
    const key = 'q:' + endpoint + ':' + pad(this.nextN++);
    this.write(key, q);
    this.write('next', this.nextN);
    return key;
  }

  /** Every queued delivery, by endpoint, oldest first. */
  queued(): Map<string, Array<{ key: string; q: Queued }>> {
    const out = new Map<string, Array<{ key: string; q: Queued }>>();
    for (const { key, value } of this.db.getRange({ start: 'q:', end: 'q;' })) {
      const endpoint = key.slice(2, key.lastIndexOf(':'));
      let list = out.get(endpoint);
      if (list === undefined) out.set(endpoint, list = []);
      list.push({ key, q: value as Queued });
    }
    return out;
  }

  /** A delivery is done (accepted, or given up): off the queue at once, its own transaction. */
  done(key: string): Promise<unknown> {
    return this.db.remove(key);
  }

  /** Log an attempt; past LOG_KEEP entries the oldest of that endpoint go. */
  log(endpoint: string, entry: LogEntry): void {
    const key = 'l:' + endpoint + ':' + pad(this.nextN++);
    void this.db.put(key, entry);
    void this.db.put('next', this.nextN);
    let extra = 0;
    const keys: string[] = [];
    for (const k of this.db.getKeys({ start: 'l:' + endpoint + ';', end: 'l:' + endpoint + ':', reverse: true, offset: LOG_KEEP })) {
      keys.push(k); extra++;
      if (extra >= 100) break;
    }
    for (const k of keys) void this.db.remove(k);
  }

  /** An endpoint's log, newest first. */
  logOf(endpoint: string, limit: number): { count: number; entries: LogEntry[] } {
    const range = { start: 'l:' + endpoint + ';', end: 'l:' + endpoint + ':', reverse: true };
    const entries: LogEntry[] = [];
    let count = 0;
    for (const { value } of this.db.getRange(range)) {
      if (entries.length < limit) entries.push(value as LogEntry);
      count++;
    }
    return { count, entries };
  }

  /** Forget an endpoint no longer configured: its queue goes (its log stays readable until it rolls over). */
  dropQueue(endpoint: string): number {
    let n = 0;
    for (const key of this.db.getKeys({ start: 'q:' + endpoint + ':', end: 'q:' + endpoint + ';' })) { void this.db.remove(key); n++; }
    return n;
  }

  // ---- transactions ----

  get dirty(): boolean { return this.pending.size > 0; }

  /** A commit failed: what was read after it is forgotten too (it is read again from the stored position). */
  discardPending(): void {
    this.pending = new Map();
  }

  /** Is the stream position all there is to write? */
  get onlyPosition(): boolean { return this.pending.size === 1 && this.pending.has('cursor'); }

  /** Write what the last reads of the stream changed, in one transaction. Resolves when committed. */
  commit(): Promise<unknown> {
    const writes = this.pending;
    this.pending = new Map();
    for (const [k, v] of writes) this.committing.set(k, v);
    const done = this.db.transaction(() => {
      for (const [k, v] of writes) {
        if (v === DELETED) void this.db.remove(k); else void this.db.put(k, v);
      }
    });
    const settle = (): void => {
      // later writes of the same keys (a newer value committing) stay
      for (const [k, v] of writes) if (this.committing.get(k) === v) this.committing.delete(k);
    };
    return done.then((r) => { settle(); return r; }, (err: unknown) => { settle(); throw err; });
  }

  private read(key: string): unknown {
    let v = this.pending.get(key);
    if (v === undefined) v = this.committing.get(key);
    if (v === undefined) v = this.db.get(key);
    return v === DELETED ? undefined : v;
  }

  private write(key: string, value: unknown): void {
    this.pending.set(key, value);
  }
}
