// Metrics in the Prometheus text format (GET /metrics).
//
// Two halves:
//  - Per-request metrics (count by route/method/status, latency histogram by
//    route/method, in-flight, aborted) sit on the hot path, so they live in
//    preallocated Float64Arrays indexed by small integers: recording a request
//    is a few array increments, no allocation, no label hashing (prom-client's
//    labelled observe() builds a key string and a closure per call). They are
//    rendered to text at scrape time.
//  - Everything sampled at scrape time or changed rarely (shard stats, records
//    per type, store sizes, recovery, retention, process memory and event-loop
//    metrics) uses prom-client gauges/counters in a registry of our own.
//
// Metric names (all `logbook_` but prom-client's process_*/nodejs_* defaults):
//   logbook_http_requests_total{route,method,status}            counter
//   logbook_http_request_duration_seconds{route,method}         histogram
//   logbook_http_requests_in_flight                             gauge
//   logbook_http_requests_aborted_total{route,method}           counter
//   logbook_ready                                               gauge 0/1
//   logbook_recovery_duration_seconds                           gauge (start-up)
//   logbook_shard_recovery_duration_seconds{shard}              gauge (last recovery, restarts included)
//   logbook_shard_up{shard}  logbook_shard_restarts_total{shard}
//   logbook_shard_queue_depth{shard}                            requests sent, not yet answered
//   logbook_requests_refused_total{reason}                      503 for overload: front_lag, shard_queue (from the head), after_parse
//   logbook_shard_waiting_replies{shard}                        replies waiting for a commit
//   logbook_records{type}                                       live records per resource type
//   logbook_shard_journal_entries{shard}                        journal entries since the last snapshot
//   logbook_shard_journal_bytes / _snapshot_bytes / _blob_bytes / _store_file_bytes {shard}
//   logbook_shard_last_snapshot_timestamp_seconds{shard}, logbook_shard_last_snapshot_age_seconds{shard}
//   logbook_shard_heap_used_bytes{shard}
//   logbook_retention_deleted_total{type}, logbook_expired_total{type}
//   logbook_maintenance_runs_total, logbook_maintenance_errors_total,
//   logbook_maintenance_last_run_timestamp_seconds
// Runs (src/run_metrics.ts; kept by the shards as writes arrive, no recount at scrape time):
//   logbook_runs{status}                                        gauge: stored playbooks by status
//   logbook_runs_running_oldest_started_timestamp_seconds       gauge: `started` of the oldest running playbook (0: none)
//   logbook_hosts_unreachable                                   gauge: hosts with unreachable > 0 in running playbooks
//   logbook_runs_started_total                                  counter: playbooks created
//   logbook_runs_ended_total{status}                            counter: status changed into completed/failed/expired
//   logbook_results_total{status}                               counter: results created, by shown status
//   logbook_run_duration_seconds                                histogram (10 s … 24 h), observed when a run ends
//   logbook_series_runs_ended_total{path,name,status}           counter, only paths in LOGBOOK_METRICS_SERIES,
//                                                               at most LOGBOOK_METRICS_SERIES_MAX (path, name) sets
//   logbook_series_dropped_total                                counter: ends of allowed series past that bound
//   The *_total counters count live writes of this process only: journal replay at
//   start-up, rebuilds from disk and cluster standbys count nothing (src/shard/run_counters.ts).
import { Counter, Gauge, Registry } from 'prom-client';
import { RESOURCE_TYPES, TYPE_TO_PATH } from './api/resources.js';
import { collectDefaultMetrics } from './default_metrics.js';
import { debugEnabled, log } from './log.js';
import type { StatsReply } from './shard/protocol.js';
import { RunMetrics } from './run_metrics.js';

// ---- per-request metrics ---------------------------------------------------

/** Route templates (the `route` label; the paths of the OpenAPI document): raw URLs would make unbounded label sets. */
export const ROUTE_TEMPLATES: readonly string[] = [
  '/api/', '/api/v1/', '/healthz', '/metrics', '/api/v1/openapi.json', 'unmatched', '/__test__',
  ...RESOURCE_TYPES.map((t) => `/api/v1/${TYPE_TO_PATH[t]}`),
  ...RESOURCE_TYPES.map((t) => `/api/v1/${TYPE_TO_PATH[t]}/{id}`),
  '/api/v1/ingest', '/api/v1/stream', '/api/v1/latesthosts', '/api/v1/latesthosts/{name}', '/api/v1/playbooks/{id}/junit.xml',
  '/api/v1/webhooks', '/api/v1/webhooks/{name}/deliveries', '/api/v1/playbooks/{id}/totals', '/api/v1/search',
];
/** Index of a route template; list and detail routes add the resource's TYPE_CODE. */
export const ROUTE = {
  index: 0, root: 1, healthz: 2, metrics: 3, openapi: 4, missing: 5, test: 6, list: 7, detail: 7 + RESOURCE_TYPES.length,
  ingest: 7 + 2 * RESOURCE_TYPES.length, stream: 8 + 2 * RESOURCE_TYPES.length,
  latest: 9 + 2 * RESOURCE_TYPES.length, latestDetail: 10 + 2 * RESOURCE_TYPES.length, junit: 11 + 2 * RESOURCE_TYPES.length,
  webhooks: 12 + 2 * RESOURCE_TYPES.length, webhookDeliveries: 13 + 2 * RESOURCE_TYPES.length, totals: 14 + 2 * RESOURCE_TYPES.length,
  search: 15 + 2 * RESOURCE_TYPES.length,
} as const;

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'other'] as const;
const STATUSES = [200, 201, 204, 400, 401, 403, 404, 405, 406, 408, 409, 413, 415, 429, 431, 500, 503] as const;
/** Upper bounds (seconds) of the latency histogram. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

const NM = METHODS.length;
const NS = STATUSES.length + 1; // + "other"
const NB = LATENCY_BUCKETS.length + 1; // + +Inf
const SLOTS = ROUTE_TEMPLATES.length * NM;

function methodIndex(method: string): number {
  switch (method) {
    case 'GET': return 0;
    case 'HEAD': return 1;
    case 'POST': return 2;
    case 'PUT': return 3;
    case 'PATCH': return 4;
    case 'DELETE': return 5;
    case 'OPTIONS': return 6;
    default: return 7;
  }
}

function statusIndex(status: number): number {
  switch (status) {
    case 200: return 0; case 201: return 1; case 204: return 2; case 400: return 3; case 401: return 4;
    case 403: return 5; case 404: return 6; case 405: return 7; case 406: return 8; case 408: return 9;
    case 413: return 10; case 415: return 11; case 429: return 12; case 431: return 13; case 500: return 14;
    case 503: return 15; default: return 16;
  }
}

/** What a request carries for its metrics (fields of the front's exchange object). */
export interface Timed {
  /** route × method slot, from slotOf() */
  slot: number;
  /** performance.now() when the request arrived */
  t0: number;
  method: string;
  url: string;
}

export class HttpMetrics {
  private readonly byStatus = new Float64Array(SLOTS * NS);
  private readonly buckets = new Float64Array(SLOTS * NB);
  private readonly sums = new Float64Array(SLOTS);
  private readonly aborts = new Float64Array(SLOTS);
  inFlight = 0;
  /** called with each answered request's status and seconds (admission control's own statistics) */
  onFinish: ((status: number, seconds: number) => void) | null = null;

  /** The slot of a route (ROUTE index) and method. */
  slotOf(route: number, method: string): number {
    return route * NM + methodIndex(method);
  }

  /** A request arrived: returns its start time. */
  start(): number {
    this.inFlight++;
    return performance.now();
  }

  /** A request was answered. */
  finish(req: Timed, status: number): void {
    this.inFlight--;
    const seconds = (performance.now() - req.t0) / 1000;
    const slot = req.slot;
    this.byStatus[slot * NS + statusIndex(status)]!++;
    let b = 0;
    while (b < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[b]!) b++;
    this.buckets[slot * NB + b]!++;
    this.sums[slot]! += seconds;
    this.onFinish?.(status, seconds);
    if (debugEnabled) {
      log.debug('request', {
        method: req.method, route: ROUTE_TEMPLATES[Math.floor(slot / NM)], url: req.url, status,
        ms: Math.round(seconds * 1e6) / 1e3,
      });
    }
  }

  /** The client went away before the answer. */
  abort(req: Timed): void {
    this.inFlight--;
    this.aborts[req.slot]!++;
  }

  /** The per-request families in the text format. */
  render(): string {
    let requests = '# HELP logbook_http_requests_total HTTP requests answered, by route template, method and status.\n'
      + '# TYPE logbook_http_requests_total counter\n';
    let latency = '# HELP logbook_http_request_duration_seconds Time from request arrival to the response, by route template and method.\n'
      + '# TYPE logbook_http_request_duration_seconds histogram\n';
    let aborted = '# HELP logbook_http_requests_aborted_total Requests whose client went away before the response.\n'
      + '# TYPE logbook_http_requests_aborted_total counter\n';
    for (let slot = 0; slot < SLOTS; slot++) {
      const labels = `route="${ROUTE_TEMPLATES[Math.floor(slot / NM)]}",method="${METHODS[slot % NM]}"`;
      let count = 0;
      for (let s = 0; s < NS; s++) {
        const n = this.byStatus[slot * NS + s]!;
        if (n === 0) continue;
        count += n;
        requests += `logbook_http_requests_total{${labels},status="${s < STATUSES.length ? STATUSES[s] : 'other'}"} ${n}\n`;
      }
      if (this.aborts[slot]! > 0) aborted += `logbook_http_requests_aborted_total{${labels}} ${this.aborts[slot]}\n`;
      if (count === 0) continue;
      let cumulative = 0;
      for (let b = 0; b < NB; b++) {
        cumulative += this.buckets[slot * NB + b]!;
        const le = b < LATENCY_BUCKETS.length ? String(LATENCY_BUCKETS[b]) : '+Inf';
        latency += `logbook_http_request_duration_seconds_bucket{${labels},le="${le}"} ${cumulative}\n`;
      }
      latency += `logbook_http_request_duration_seconds_sum{${labels}} ${this.sums[slot]}\n`;
      latency += `logbook_http_request_duration_seconds_count{${labels}} ${count}\n`;
    }
    return requests + latency + aborted
      + '# HELP logbook_http_requests_in_flight Requests received and not yet answered.\n'
      + '# TYPE logbook_http_requests_in_flight gauge\n'
      + `logbook_http_requests_in_flight ${this.inFlight}\n`;
  }
}

/** The process-wide request metrics (the front's reply path records into it). */
export const HTTP = new HttpMetrics();

// ---- everything else (prom-client) ------------------------------------------

export interface ShardView {
  readonly size: number;
  isUp(shard: number): boolean;
  readonly queued: Int32Array;
  readonly restarts: number[];
}

export class Metrics {
  readonly registry = new Registry();
  readonly http = HTTP;
  /** the run metrics (src/run_metrics.ts) */
  readonly runs = new RunMetrics();
  private readonly g = (name: string, help: string, labelNames: string[] = []) =>
    new Gauge({ name, help, labelNames, registers: [this.registry] });
  private readonly c = (name: string, help: string, labelNames: string[] = []) =>
    new Counter({ name, help, labelNames, registers: [this.registry] });

  readonly ready = this.g('logbook_ready', '1 once recovery is done and requests are served.');
  readonly recovery = this.g('logbook_recovery_duration_seconds', 'Start-up recovery time: every shard loaded its snapshots and replayed its journal.');
  readonly shardRecovery = this.g('logbook_shard_recovery_duration_seconds', 'Time of the last recovery of each shard (start-up or restart).', ['shard']);
  private readonly shardUp = this.g('logbook_shard_up', '1 while the shard worker is running and recovered.', ['shard']);
  private readonly restarts = this.c('logbook_shard_restarts_total', 'Shard workers restarted after they died.', ['shard']);
  private readonly restartsSeen: number[] = [];
  private readonly refused = this.c('logbook_requests_refused_total', 'Requests refused with 503 + Retry-After for overload: from their head for the front\'s event-loop lag or their shard\'s queue, or after their body was parsed.', ['reason']);
  private readonly refusedSeen = new Map<string, number>();
  private readonly queue = this.g('logbook_shard_queue_depth', 'Requests sent to the shard and not yet answered.', ['shard']);
  private readonly waiting = this.g('logbook_shard_waiting_replies', 'Replies the shard holds until their commit is durable.', ['shard']);
  private readonly records = this.g('logbook_records', 'Live records per resource type.', ['type']);
  private readonly journalEntries = this.g('logbook_shard_journal_entries', 'Journal entries since the last completed snapshot.', ['shard']);
  private readonly journalBytes = this.g('logbook_shard_journal_bytes', 'Bytes of LMDB pages used by the shard journal.', ['shard']);
  private readonly snapshotBytes = this.g('logbook_shard_snapshot_bytes', 'Bytes of LMDB pages used by the shard snapshots.', ['shard']);
  private readonly blobBytes = this.g('logbook_shard_blob_bytes', 'Bytes of LMDB pages used by the shard blobs (content, facts, file text).', ['shard']);
  private readonly fileBytes = this.g('logbook_shard_store_file_bytes', 'Size of the shard LMDB file (shard-<k>.mdb).', ['shard']);
  private readonly snapshotTime = this.g('logbook_shard_last_snapshot_timestamp_seconds', 'When the last snapshot round of the shard completed (Unix time).', ['shard']);
  private readonly snapshotAge = this.g('logbook_shard_last_snapshot_age_seconds', 'Seconds since the last completed snapshot round of the shard.', ['shard']);
  private readonly heap = this.g('logbook_shard_heap_used_bytes', 'V8 heap used by the shard worker.', ['shard']);
  readonly retentionDeleted = this.c('logbook_retention_deleted_total', 'Records deleted by retention (LOGBOOK_RETENTION_DAYS), by type.', ['type']);
  readonly expired = this.c('logbook_expired_total', 'Records marked expired (LOGBOOK_EXPIRE_RUNNING_AFTER), by type.', ['type']);
  readonly maintenanceRuns = this.c('logbook_maintenance_runs_total', 'Retention/expiry passes run.');
  readonly maintenanceErrors = this.c('logbook_maintenance_errors_total', 'Retention/expiry batches that failed (retried on the next pass).');
  readonly maintenanceLastRun = this.g('logbook_maintenance_last_run_timestamp_seconds', 'When the last retention/expiry pass finished (Unix time).');
  // ---- live stream (src/http/stream.ts) ----
  readonly streamSubscribers = this.g('logbook_stream_subscribers', 'Live-stream clients connected (SSE and WebSocket).');
  readonly streamCutOff = this.c('logbook_stream_clients_cut_off_total', 'Live-stream clients closed because they did not keep up (LOGBOOK_STREAM_MAX_BUFFER).');
  // ---- search (src/search/) ----
  readonly searchDocuments = this.g('logbook_search_documents', 'Records in the full-text search index.');
  readonly searchIndexed = this.c('logbook_search_documents_indexed_total', 'Documents written to the search index (new, changed, rebuilt).');
  readonly searchLag = this.g('logbook_search_lag_seconds', 'Longest time from a write\'s acknowledgement to its being findable, over the last second (0: nothing indexed).');
  readonly searchShardsBehind = this.g('logbook_search_shards_behind', 'Shards whose search documents are being rebuilt or are stale (their new records are not findable yet).');

  // ---- webhooks (src/webhooks/) ----
  readonly webhookDeliveries = this.c('logbook_webhook_deliveries_total', 'Webhook delivery attempts by endpoint and outcome: delivered (a 2xx), failed (retried), gave_up (older than give_up_after_hours).', ['endpoint', 'outcome']);
  readonly webhookPending = this.g('logbook_webhook_pending', 'Webhook deliveries queued and not yet accepted, by endpoint.', ['endpoint']);
  readonly webhookOldest = this.g('logbook_webhook_oldest_pending_age_seconds', 'Age of the oldest webhook delivery not yet accepted, by endpoint (0: none).', ['endpoint']);

  constructor() {
    collectDefaultMetrics(this.registry);
    // series that exist from the start read 0, not "absent"
    for (const type of RESOURCE_TYPES) this.retentionDeleted.inc({ type }, 0);
    for (const type of ['playbook', 'play', 'task']) this.expired.inc({ type }, 0);
    this.streamCutOff.inc(0);
    for (const reason of ['front_lag', 'shard_queue', 'after_parse']) this.refused.inc({ reason }, 0);
  }

  /** Totals of refusals kept by admission (counted on the hot path in plain numbers, added here at scrape time). */
  updateRefused(totals: Record<'front_lag' | 'shard_queue' | 'after_parse', number>): void {
    for (const [reason, total] of Object.entries(totals)) {
      this.refused.inc({ reason }, total - (this.refusedSeen.get(reason) ?? 0));
      this.refusedSeen.set(reason, total);
    }
  }

  /** Sample what the shards reported (null: the shard did not answer) and the pool's own counters. */
  updateShards(pool: ShardView, stats: Array<StatsReply | null>, labelCount: number): void {
    const perType = new Array<number>(RESOURCE_TYPES.length).fill(0);
    perType[0] = labelCount;
    const now = Date.now();
    for (let shard = 0; shard < pool.size; shard++) {
      const k = String(shard);
      this.shardUp.set({ shard: k }, pool.isUp(shard) ? 1 : 0);
      this.restarts.inc({ shard: k }, pool.restarts[shard]! - (this.restartsSeen[shard] ?? 0));
      this.restartsSeen[shard] = pool.restarts[shard]!;
      this.queue.set({ shard: k }, pool.queued[shard]!);
      const s = stats[shard];
      if (!s) continue;
      for (let code = 1; code < RESOURCE_TYPES.length; code++) perType[code]! += s.records[code] ?? 0;
      this.waiting.set({ shard: k }, s.waitingReplies);
      this.journalEntries.set({ shard: k }, s.journalEntries);
      this.heap.set({ shard: k }, s.heapUsedBytes);
      if (s.journalBytes !== null) this.journalBytes.set({ shard: k }, s.journalBytes);
      if (s.snapshotBytes !== null) this.snapshotBytes.set({ shard: k }, s.snapshotBytes);
      if (s.blobBytes !== null) this.blobBytes.set({ shard: k }, s.blobBytes);
      if (s.fileBytes !== null) this.fileBytes.set({ shard: k }, s.fileBytes);
      if (s.lastSnapshotAt !== null) {
        this.snapshotTime.set({ shard: k }, s.lastSnapshotAt / 1000);
        this.snapshotAge.set({ shard: k }, Math.max(0, (now - s.lastSnapshotAt) / 1000));
      }
    }
    this.runs.update(pool.size, (shard) => pool.isUp(shard), stats);
    // a type's count is only known when every shard answered
    if (stats.every((s) => s !== null)) {
      RESOURCE_TYPES.forEach((type, code) => this.records.set({ type }, perType[code]!));
    }
  }

  /** A retention/expiry pass finished (retention.ts RetentionSink); `at` in µs. */
  onPass(result: { deleted: Record<string, number>; expired: [number, number, number]; errors: number }, at: number): void {
    for (const [type, n] of Object.entries(result.deleted)) this.retentionDeleted.inc({ type }, n);
    (['playbook', 'play', 'task'] as const).forEach((type, i) => { if (result.expired[i]) this.expired.inc({ type }, result.expired[i]); });
    this.maintenanceRuns.inc();
    if (result.errors) this.maintenanceErrors.inc(result.errors);
    this.maintenanceLastRun.set(at / 1e6);
  }

  /** The whole exposition. */
  async render(): Promise<string> {
    return this.http.render() + this.runs.render() + await this.registry.metrics();
  }

  get contentType(): string { return this.registry.contentType; }
}
