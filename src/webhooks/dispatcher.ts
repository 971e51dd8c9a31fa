// Webhooks (docs/webhooks.md): tell HTTP endpoints when runs start, end, fail,
// are fixed, or lose a host. The dispatcher reads the live stream as a client
// would (playbook and host changes, from its stored position), turns changes
// into run events (src/webhooks/run_events.ts), queues one delivery per endpoint
// that wants each event, and writes all of it with the new position in one
// transaction (src/webhooks/outbox.ts). Each endpoint then gets its deliveries
// in order, one at a time, retried with backoff until accepted (any 2xx) or too
// old: at least once, with an id a receiver dedupes on.
//
// It runs on the front's thread: reading a change is parsing one small row,
// and a delivery is one fetch. A receiver that is down holds up only its own
// queue, never a write (the stream's changes reach the dispatcher after their
// commit was acknowledged).
import type { WebhookEndpoint, WebhookSettings } from '../config/webhooks.js';
import { globTest } from '../config/webhooks.js';
import { Errors } from '../api/errors.js';
import { TYPE_CODE } from '../api/resources.js';
import { errText, log } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { ConsumedChange, Stream, StreamConsumer } from '../http/stream.js';
import { decodeCursor } from '../http/stream_query.js';
import { parseQuery } from '../http/page_links.js';
import { reply, type Exchange } from '../http/respond.js';
import type { WebhookService } from '../http/webhook_service.js';
import { attempt, eventBody, wants, type EndpointTests } from './delivery.js';
import { Outbox, type LogEntry, type Queued } from './outbox.js';
import { RunWatcher, type ChangeMessage } from './run_events.js';
import type { Database } from 'lmdb';

/** The stream types the watcher reads. */
const TYPES = (1 << TYPE_CODE.playbook) | (1 << TYPE_CODE.host);
/** Events read within this long are written (queued) in one transaction. */
const COMMIT_DELAY_MS = 20;
/**
 * A position that moved with nothing else to write waits this long: each
 * commit of front.mdb is an fsync beside the shards' own (at one every 20 ms a
 * batch ingest lost up to a tenth of its rate), and after a crash the changes
 * since the stored position are only read again, giving the same events.
 */
const POSITION_DELAY_MS = 500;
/** The first retry's wait; each next one doubles, up to the endpoint's max_backoff_seconds. */
const FIRST_BACKOFF_MS = 1000;

class EndpointState {
  readonly queue: Array<{ key: string; q: Queued }> = [];
  /** attempts of the delivery at the head of the queue */
  attempts = 0;
  busy = false;
  timer: NodeJS.Timeout | null = null;
  delivered = 0;
  failedAttempts = 0;
  gaveUp = 0;
  last: LogEntry | null = null;
  readonly tests: EndpointTests;
  constructor(readonly endpoint: WebhookEndpoint) {
    this.tests = { path: globTest(endpoint.paths), name: globTest(endpoint.names) };
  }
}

export interface DispatcherOptions {
  settings: WebhookSettings;
  /** front.mdb's webhooks table */
  table: Database<any, string>;
  /** the listening address, for links when the settings give no public_url */
  origin: () => string;
}

export class WebhookDispatcher implements WebhookService, StreamConsumer {
  private readonly outbox: Outbox;
  private readonly endpoints = new Map<string, EndpointState>();
  private watcher: RunWatcher | null = null;
  private stream: Stream | null = null;
  private subscription: { close(): void } | null = null;
  private shards = 0;
  private commitTimer: NodeJS.Timeout | null = null;
  private commitDelay = 0;
  /** a transaction is being written (the next waits for it) */
  private committing = false;
  /** deliveries queued in the transaction being written: they go to their endpoints once it commits */
  private staged: Array<{ endpoint: string; key: string; q: Queued }> = [];
  private closed = false;
  private readonly aborts = new AbortController();
  private metrics: Metrics | null = null;

  constructor(private readonly options: DispatcherOptions) {
    this.outbox = new Outbox(options.table);
    for (const e of options.settings.endpoints) this.endpoints.set(e.name, new EndpointState(e));
  }

  /** The stream is live: load the queues, then read the stream from where the last process stopped. */
  start(stream: Stream, shards: number, metrics: Metrics): void {
    this.stream = stream;
    this.shards = shards;
    this.metrics = metrics;
    for (const [name, list] of this.outbox.queued()) {
      const state = this.endpoints.get(name);
      if (state === undefined) {
        const n = this.outbox.dropQueue(name);
        log.warn('webhooks: deliveries dropped, their endpoint is no longer in the webhooks file', { endpoint: name, deliveries: n });
        continue;
      }
      state.queue.push(...list);
    }
    this.watcher = new RunWatcher(this.outbox, this.outbox.watchingSince());
    this.subscribe();
    for (const state of this.endpoints.values()) this.pump(state);
    log.info('webhooks: dispatching', { endpoints: [...this.endpoints.keys()], queued: [...this.endpoints.values()].reduce((n, s) => n + s.queue.length, 0) });
  }

  private subscribe(): void {
    if (this.closed || this.stream === null) return;
    const text = this.outbox.cursor();
    const since = text === null ? null : decodeCursor(text, this.shards);
    this.subscription = this.stream.consume(this, TYPES, since);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscription?.close();
    if (this.commitTimer !== null) { clearTimeout(this.commitTimer); this.commitTimer = null; }
    for (const s of this.endpoints.values()) if (s.timer !== null) clearTimeout(s.timer);
    this.aborts.abort();
    // what was read and not yet written is read again by the next process
    if (this.outbox.dirty) await this.outbox.commit().catch(() => {});
  }

  // ---- reading the stream (StreamConsumer) ----

  control(json: string): void {
    const msg = JSON.parse(json) as { op: string; cursor?: string };
    if (msg.op === 'hello' && this.outbox.cursor() === null && msg.cursor) {
      // the first start: events from here on
      this.outbox.setCursor(msg.cursor);
      this.scheduleCommit();
    } else if (msg.op === 'reset') {
      // the stored position is older than what the shards keep (LOGBOOK_STREAM_RETENTION): what happened in between cannot be read again
      log.error('webhooks: run events were lost: the live stream no longer keeps the changes after the position the dispatcher had stored; it goes on from now', {});
    }
  }

  changes(list: readonly ConsumedChange[]): void {
    if (this.closed || this.watcher === null) return;
    for (const c of list) {
      let msg: ChangeMessage & { cursor: string };
      try { msg = JSON.parse(c.json); } catch { continue; }
      for (const event of this.watcher.observe(c.shard, c.seq, msg)) {
        for (const state of this.endpoints.values()) {
          if (!wants(state.endpoint, state.tests, event)) continue;
          const q: Queued = { id: event.id, event: event.type, playbook: event.playbookId, body: eventBody(state.endpoint, event, this.base()), queued: Date.now() };
          this.staged.push({ endpoint: state.endpoint.name, key: this.outbox.enqueue(state.endpoint.name, q), q });
        }
      }
      this.outbox.setCursor(c.cursor);
    }
    this.scheduleCommit();
  }

  ended(): void {
    this.subscription = null;
    if (this.closed) return;
    // cut off (it fell behind while resuming): read again from the stored position
    setTimeout(() => this.subscribe(), 1000).unref();
  }

  private base(): string {
    return this.options.settings.publicUrl ?? this.options.origin();
  }

  private scheduleCommit(): void {
    if (this.closed) return;
    const delay = this.outbox.onlyPosition ? POSITION_DELAY_MS : COMMIT_DELAY_MS;
    if (this.commitTimer !== null) {
      if (this.commitDelay <= delay) return;
      clearTimeout(this.commitTimer); // events came after a lone position: they go sooner
    }
    this.commitDelay = delay;
    this.commitTimer = setTimeout(() => { this.commitTimer = null; this.commitNow(); }, delay);
  }

  private commitNow(): void {
    // one transaction at a time: one that failed must not be followed by a later one that stores a position past it
    if (!this.outbox.dirty || this.committing) return;
    const staged = this.staged;
    this.staged = [];
    this.committing = true;
    this.outbox.commit().then(() => {
      this.committing = false;
      for (const { endpoint, key, q } of staged) {
        const state = this.endpoints.get(endpoint)!;
        state.queue.push({ key, q });
        this.pump(state);
      }
      if (this.outbox.dirty) this.scheduleCommit();
    }, (err: unknown) => {
      this.committing = false;
      // nothing of it is stored: the stream is read again from the last stored position, and what
      // was read after it goes too (its watch state would hide the events of the lost part)
      log.error('webhooks: could not store what the dispatcher read; reading it again', { error: errText(err) });
      this.subscription?.close();
      this.subscription = null;
      if (this.commitTimer !== null) { clearTimeout(this.commitTimer); this.commitTimer = null; }
      this.outbox.discardPending();
      this.staged = [];
      setTimeout(() => this.subscribe(), 1000).unref();
    });
  }

  // ---- delivering ----

  private pump(state: EndpointState): void {
    if (this.closed || state.busy || state.timer !== null) return;
    const head = state.queue[0];
    if (head === undefined) return;
    const ep = state.endpoint;
    if (Date.now() - head.q.queued > ep.giveUpAfterSeconds * 1000) {
      this.finish(state, head, { outcome: 'gave_up', status: null, error: `not accepted within give_up_after_hours (${ep.giveUpAfterSeconds / 3600})`, ms: 0 });
      state.gaveUp++;
      this.metrics?.webhookDeliveries.inc({ endpoint: ep.name, outcome: 'gave_up' });
      return this.pump(state);
    }
    state.busy = true;
    state.attempts++;
    void attempt(ep, head.q.id, head.q.event, head.q.body, this.aborts.signal).then((r) => {
      state.busy = false;
      if (this.closed) return;
      if (r.ok) {
        state.delivered++;
        this.metrics?.webhookDeliveries.inc({ endpoint: ep.name, outcome: 'delivered' });
        this.finish(state, head, { outcome: 'delivered', status: r.status, error: null, ms: r.ms });
        return this.pump(state);
      }
      state.failedAttempts++;
      this.metrics?.webhookDeliveries.inc({ endpoint: ep.name, outcome: 'failed' });
      const entry = this.entry(head.q, state.attempts, { outcome: 'failed', status: r.status, error: r.error, ms: r.ms });
      state.last = entry;
      this.outbox.log(ep.name, entry);
      // 1 s, 2 s, 4 s … up to max_backoff_seconds, less a random part of up to a fifth (endpoints back at once are not all retried at once)
      const wait = Math.min(ep.maxBackoffSeconds * 1000, FIRST_BACKOFF_MS * 2 ** Math.min(30, state.attempts - 1)) * (1 - Math.random() / 5);
      state.timer = setTimeout(() => { state.timer = null; this.pump(state); }, wait);
      state.timer.unref();
    });
  }

  private finish(state: EndpointState, head: { key: string; q: Queued }, result: Pick<LogEntry, 'outcome' | 'status' | 'error' | 'ms'>): void {
    state.queue.shift();
    const entry = this.entry(head.q, state.attempts, result);
    state.attempts = 0;
    state.last = entry;
    this.outbox.log(state.endpoint.name, entry);
    this.outbox.done(head.key).catch((err: unknown) => log.error('webhooks: could not take a delivery off the queue (it may be sent again)', { error: errText(err) }));
  }

  private entry(q: Queued, attemptNo: number, result: Pick<LogEntry, 'outcome' | 'status' | 'error' | 'ms'>): LogEntry {
    return { delivery: q.id, event: q.event, playbook: q.playbook, attempt: attemptNo, at: new Date().toISOString(), ...result };
  }

  /** /metrics: deliveries waiting per endpoint, and the age of the oldest. */
  sample(): void {
    const now = Date.now();
    for (const s of this.endpoints.values()) {
      this.metrics?.webhookPending.set({ endpoint: s.endpoint.name }, s.queue.length);
      this.metrics?.webhookOldest.set({ endpoint: s.endpoint.name }, s.queue.length ? (now - s.queue[0]!.q.queued) / 1000 : 0);
    }
  }

  // ---- the API (WebhookService) ----

  list(ex: Exchange): void {
    const results = [...this.endpoints.values()].map((s) => describe(s));
    reply(ex, 200, JSON.stringify({ count: results.length, next: null, previous: null, results }));
  }

  deliveries(ex: Exchange, name: string, query: string): void {
    const state = this.endpoints.get(name);
    if (state === undefined) return reply(ex, 404, Errors.notFound());
    const params = parseQuery(query);
    const errors: Record<string, string[]> = Object.create(null);
    for (const key of params.keys()) if (key !== 'limit') errors[key] = ['Unknown query parameter.'];
    let limit = 100;
    const raw = params.get('limit')?.at(-1);
    if (raw !== undefined) {
      if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000) errors.limit = ['Ensure this value is an integer from 1 to 1000.'];
      else limit = Number(raw);
    }
    if (Object.keys(errors).length) return reply(ex, 400, JSON.stringify(errors));
    const { count, entries } = this.outbox.logOf(name, limit);
    reply(ex, 200, JSON.stringify({ count, pending: state.queue.length, next: null, previous: null, results: entries }));
  }
}

/** An endpoint as the API shows it: its URL without path or query (a Slack URL's path is its secret). */
function describe(s: EndpointState): Record<string, unknown> {
  const ep = s.endpoint;
  const u = new URL(ep.url);
  return {
    name: ep.name,
    url: `${u.protocol}//${u.host}/…`,
    events: [...ep.events], labels: ep.labels, paths: ep.paths, names: ep.names, format: ep.format,
    signed: ep.secret !== null,
    pending: s.queue.length,
    oldest_pending: s.queue.length ? new Date(s.queue[0]!.q.queued).toISOString() : null,
    delivered: s.delivered, failed_attempts: s.failedAttempts, gave_up: s.gaveUp,
    last_delivery: s.last,
  };
}
