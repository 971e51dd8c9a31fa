// The HTTP front (main thread): routes /api/v1 requests, validates bodies and
// queries, allocates ids, sends commands to the shard that owns the playbook and
// scatters list queries, then writes the replies. It holds no record state
// beyond the routing directory and the label catalogue.
import { SearchResource } from './search.js';
import type { SearchService } from '../search/search_service.js';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Config } from '../config.js';
import { Errors } from '../api/errors.js';
import { parseListQuery, type PageSettings } from '../api/list_query.js';
import { DISPLAY_NAME, RESOURCE_TYPES, TYPE_TO_PATH, type ResourceType } from '../api/resources.js';
import { compileWriteValidators } from '../api/schemas.js';
import { BodyNormalizer } from '../api/validate.js';
import type { Shards } from '../shard/shards.js';
import type { FrontToShard, ReadyMessage } from '../shard/protocol.js';
import type { IdAllocator } from '../shard/ids.js';
import { log } from '../log.js';
import { LIMITS } from '../limits.js';
import { TEST_HOOKS } from '../test_hooks.js';
import { readBody, UNVERIFIED_BODIES, type BodyReader } from './body.js';
import { Directory } from './directory.js';
import { Guard } from './guard.js';
import { Ingest } from './ingest.js';
import { LabelResource } from './label_resource.js';
import { LatestHosts } from './latest_hosts.js';
import type { WebhookService } from './webhook_service.js';
import { LabelCatalogue } from './labels.js';
import { LabelChanges, type ReplicaChange } from './label_changes.js';
import type { LabelChangeStore, LabelStore, StoredLabel } from '../store/label_store.js';
import { parseQuery } from './page_links.js';
import { Reads } from './reads.js';
import { decodedBody } from './body_encoding.js';
import { reply } from './respond.js';
import { allowOf, metricRoute, optionsBody, parseRoute, type Req } from './routes.js';
import { Writes } from './writes.js';
import { Admission, type Target } from './admission.js';
import { araWebPathTarget, isUiPath, UiFiles } from './static.js';
// ---- operations (health, metrics, OpenAPI, shard restarts, retention) ----
import { HTTP, Metrics } from '../metrics.js';
import { Ops } from './ops.js';
// ---- live stream (docs/api.md#live-stream) ----
import { Stream } from './stream.js';
import { streamAuthorization } from './stream_query.js';


export { parseRoute } from './routes.js';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * What a request needs, for admission: null (never refused: operations, the
 * live stream, preflights), 'front' (no shard), its one shard, or 'every' (the
 * shard is named in its body, or a list is scattered over all of them).
 */
function admissionTarget(route: Req['route'], method: string, dir: Directory): Target | null {
  if (method === 'OPTIONS') return null;
  switch (route.kind) {
    case 'list': case 'ingest': case 'latest': return 'every';
    case 'detail': {
      if (route.type === 'label') return 'front';
      const shard = dir.shardOf(route.type, route.id);
      return shard < 0 ? 'front' : shard;
    }
    case 'junit': case 'totals': {
      const shard = dir.shardOf('playbook', route.playbook);
      return shard < 0 ? 'front' : shard;
    }
    case 'index': case 'root': return 'front';
    default: return null;
  }
}

/**
 * A request's exchange: what its handling needs, copied out of uWS's
 * stack-allocated HttpRequest. `req` null: a request refused from its head,
 * whose answer needs none of its headers (each getHeader crosses into uWS).
 * One literal for both, so every exchange has the same shape.
 */
function exchange(res: HttpResponse, method: string, url: string, route: Req['route'], req: HttpRequest | null): Req {
  return {
    res, method, allow: allowOf(route), aborted: false, done: false, close: false, extraHeaders: null,
    url, query: req ? req.getQuery() ?? '' : '', host: req ? req.getHeader('host') : '',
    forwardedProto: req ? req.getHeader('x-forwarded-proto') : '', forwardedHost: req ? req.getHeader('x-forwarded-host') : '',
    contentType: req ? req.getHeader('content-type') : '', contentEncoding: req ? req.getHeader('content-encoding') : '',
    minimal: req ? /\breturn=minimal\b/i.test(req.getHeader('prefer')) : false,
    route, cors: null, onAbort: null, ara: false, varyAgent: false,
    stream: req && route.kind === 'stream' ? {
      accept: req.getHeader('accept'), lastEventId: req.getHeader('last-event-id'),
      authorization: streamAuthorization(req.getHeader('authorization'), req.getQuery() ?? ''),
      address: Buffer.from(res.getRemoteAddressAsText()).toString(),
    } : null,
    slot: HTTP.slotOf(metricRoute(route), method), t0: HTTP.start(),
  };
}

/** The value of a `dialect` query parameter that names one (`ara`, `logbook`), else null (a list then names a bad one). */
function askedDialect(query: string): 'ara' | 'logbook' | null {
  const values = parseQuery(query).get('dialect');
  const v = values?.[values.length - 1];
  return v === 'ara' || v === 'logbook' ? v : null;
}

/** ARA's http client's User-Agent: `ara-http-client_<version>` (ara/clients/http.py) */
const ARA_CLIENT_AGENT = 'ara-http-client_';

/** The routes with a dialect: ARA's API paths (not the stream, batch ingest, operations or the UI). */
function isApiRoute(route: Req['route']): boolean {
  return route.kind === 'list' || route.kind === 'detail' || route.kind === 'index' || route.kind === 'root' || route.kind === 'latest';
}

/** Does the request carry a body: a method that has one, or a length or chunked encoding announced? */
function announcesBody(req: HttpRequest, method: string, length: string): boolean {
  return BODY_METHODS.has(method) || (length !== '' && length !== '0') || req.getHeader('transfer-encoding') !== '';
}

export class Front {
  private readonly dir: Directory;
  private readonly labels: LabelCatalogue;
  /** the live stream's log of label changes: each is logged by the shards (src/http/label_changes.ts) */
  private readonly labelChanges: LabelChanges;
  /** label id → name, as the shards' replicas were sent them (Front.replicate) */
  private readonly replicaNames = new Map<number, string>();
  /** false until every shard has recovered: requests get 503 meanwhile */
  ready = false;
  private readonly normalizer: BodyNormalizer;
  private readonly pages: PageSettings;
  /** duplicate headers, CORS, authentication: run before routing (src/http/guard.ts) */
  readonly guard: Guard;
  port = 0;
  // the request handlers by role
  private readonly reads: Reads;
  private readonly search: SearchResource;
  private readonly writes: Writes;
  private readonly labelResource: LabelResource;
  private readonly ingest: Ingest;
  private readonly latestHosts: LatestHosts;

  /** set by recover(): the front answers 503 until the shards have recovered */
  private pool!: Shards;
  // ---- operations ----
  readonly metrics = new Metrics();
  private readonly ops: Ops;
  /** set by a shutdown: new requests get 503 and their connection closed */
  draining = false;
  /** the live stream's fan-out (src/http/stream.ts); server.ts registers its WebSocket route */
  readonly stream: Stream;
  /** the web UI's files (src/http/static.ts) */
  private readonly ui = new UiFiles();
  /** overload: refuse a request from its head, before its body is read (src/http/admission.ts) */
  readonly admission: Admission;

  /**
   * `labelStore`: front.mdb, or the cluster's label stream; `dir`: the routing
   * directory (cluster mode: ClusterDirectory, which routes by id mod P).
   */
  constructor(private readonly config: Config, private readonly version: string, labelStore: LabelStore | null, dir?: Directory,
    /** the webhook dispatcher (LOGBOOK_WEBHOOKS_FILE), started once the stream is live */
    private readonly webhooks: WebhookService | null = null,
    /** the full-text search worker (docs/search.md; null: search answers 503) */
    private readonly searchService: SearchService | null = null) {
    this.dir = dir ?? new Directory();
    this.metrics.runs.maxSeries = config.metricsSeriesMax;
    this.ops = new Ops(config, version, this.metrics, {
      ready: () => this.ready, draining: () => this.draining,
      pool: () => this.pool ?? null, labelCount: () => this.labels.shownCount(),
      holdLabelWrites: (ms, fail, skip) => { if (fail) this.labels.failNext = { ms, skip }; else this.labels.heldUntil = Date.now() + ms; },
      refused: () => this.admission.totals(),
      beforeScrape: () => { this.webhooks?.sample(); this.sampleSearch(); },
    });
    this.labels = new LabelCatalogue(labelStore);
    // front.mdb keeps the changes until every shard has logged them; the cluster's label stream numbers them
    // (a partition reads from it what it has not logged)
    const changeStore = labelStore !== null && 'putLabelChange' in labelStore ? labelStore as LabelStore & LabelChangeStore : null;
    this.labelChanges = new LabelChanges(changeStore, labelStore !== null && !this.dir.authoritative);
    this.labels.changes = this.labelChanges;
    this.labels.replicasMissed = (change) => this.replicate(change, null);
    this.normalizer = new BodyNormalizer(compileWriteValidators(), {
      ignoredFacts: config.ignoredFacts, ignoredArguments: config.ignoredArguments,
    });
    this.pages = { pageSize: config.pageSize, maxPageSize: config.maxPageSize, maxListOffset: config.maxListOffset };
    this.guard = new Guard(config);
    this.admission = new Admission(config.shardQueueDelay, () => this.pool);
    this.stream = new Stream({
      config, auth: this.guard.auth, cors: this.guard.cors, ready: () => this.ready, draining: () => this.draining,
      gauge: this.metrics.streamSubscribers, cutOff: this.metrics.streamCutOff,
    });
    const pool = () => this.pool;
    // the shards' label replicas learn a change once it is durable, from the live stream's log of label changes
    this.labelChanges.replicate = (change, shard) => this.replicate(change, shard);
    this.reads = new Reads({
      pool, dir: this.dir, origin: (ex) => this.origin(ex), maxListOffset: config.maxListOffset,
      // test hook (LOGBOOK_TEST_HOOKS=1): a small page budget, so a test can go past it without gigabytes
      pageBytes: TEST_HOOKS.pageBytes || LIMITS.pageBytes,
    });
    this.search = new SearchResource({ search: searchService, pool, origin: (ex) => this.origin(ex) });
    this.latestHosts = new LatestHosts({ pool, dir: this.dir, origin: (ex) => this.origin(ex), pages: this.pages });
    this.labelResource = new LabelResource({
      labels: this.labels, dir: this.dir,
      envelope: (ex, parsed, count, rows, offset) => this.reads.envelope(ex, parsed, count, rows, offset),
    });
    this.ingest = new Ingest({
      pool, dir: this.dir, labels: this.labels, normalizer: this.normalizer, maxBodyBytes: config.maxBodyBytes,
    });
    this.writes = new Writes({
      pool, dir: this.dir, labels: this.labels, labelResource: this.labelResource, normalizer: this.normalizer,
      playbookWithUuid: (uuid, id) => this.ingest.learn([[uuid, id]], false),
    });
  }

  /** The id counters the shards share with the front. */
  get ids(): IdAllocator { return this.dir.ids; }

  close(): void {
    void this.webhooks?.close();
    this.admission.stop();
    this.labelChanges.close();
    this.stream.closeAll();
    this.guard.close();
  }

  /** Rebuild the id allocators, the directory and the label replicas after recovery. */
  recover(pool: Shards, ready: ReadyMessage[]): void {
    this.pool = pool;
    const maxLabel = this.labels.load();
    this.dir.observe(0, maxLabel);
    for (const msg of ready) {
      this.dir.load(msg);
      this.ingest.learn(msg.streams);
    }
    const upsert: Array<[number, string]> = [...this.labels.byId.values()].map((l) => [l.id, l.name]);
    if (upsert.length) this.replicate({ upsert, remove: [] }, null);
    pool.onRestart = (msg) => this.shardRestarted(msg);
    this.stream.start(pool, ready);
    this.webhooks?.start(this.stream, pool.size, this.metrics);
    // after the replica: label changes a previous run did not get logged by every shard go first
    this.labelChanges.start(pool);
    this.admission.start();
    this.ready = true;
  }

  // ---- operations hooks (shard restarts: shard/pool.ts; retention: retention.ts) ----

  /** A restarted shard recovered from disk: relearn its ids, give it the label catalogue. */
  private shardRestarted(msg: ReadyMessage): void {
    this.dir.load(msg);
    this.ingest.learn(msg.streams);
    this.stream.shardRestarted(msg);
    // what the other replicas were sent (durable), not the catalogue (it has changes on their way)
    const upsert: Array<[number, string]> = [...this.replicaNames];
    if (upsert.length) this.pool.send(msg.shard, { k: 'labels', upsert, remove: [] }, null);
    this.labelChanges.shardRestarted(); // one it could not log is tried again at once
    this.metrics.shardRecovery.set({ shard: String(msg.shard) }, msg.recovery.ms / 1000);
  }

  /** Cluster mode: another node changed a label (the label stream): the catalogue and the local shards' replicas follow. */
  labelChanged(id: number, stored: StoredLabel | null): void {
    const change = this.labels.applyStreamed(id, stored);
    if (change) this.replicate(change, null);
  }

  /**
   * The shards' label replicas learn a change: one shard (behind what it was
   * sent before) or every shard that is up (null). A shard that is down, or
   * restarts, is given every name sent so far when it is back.
   */
  private replicate(change: ReplicaChange, shard: number | null): void {
    for (const [id, name] of change.upsert) this.replicaNames.set(id, name);
    for (const id of change.remove) this.replicaNames.delete(id);
    if (!this.pool) return; // before recovery: recover() sends them all
    const msg: FrontToShard = { k: 'labels', upsert: change.upsert, remove: change.remove };
    if (shard === null) this.pool.broadcast(msg); else this.pool.send(shard, msg, null);
  }

  /** Ids deleted outside a request (retention), per type code, leave the directory. */
  forget(deleted: number[][]): void {
    this.dir.record(-1, null, deleted);
  }

  /** The uWS route handler: copy what is needed out of `req`, then read the body if any. */
  onRequest(res: HttpResponse, req: HttpRequest): void {
    const method = req.getCaseSensitiveMethod();
    const url = req.getUrl();
    if (isUiPath(url)) return this.ui.serve(res, req, this.guard);
    const araPage = araWebPathTarget(url);
    if (araPage !== null) return this.ui.redirect(res, req, araPage);
    const route = parseRoute(url);
    // Admission first: under overload most requests end here, and a refusal
    // reads only what its answer needs (see refuse()).
    const target = this.ready && !this.draining ? admissionTarget(route, method, this.dir) : null;
    if (target !== null && this.admission.shed(target)) return this.refuse(res, req, method, url, route);
    const ex = exchange(res, method, url, route, req);
    this.chooseDialect(ex, req);
    let reader: BodyReader | null = null;
    res.onAborted(() => {
      if (!ex.done && !ex.aborted) HTTP.abort(ex);
      ex.aborted = true;
      reader?.release();
      ex.onAbort?.();
    });
    const length = req.getHeader('content-length');
    const hasBody = announcesBody(req, method, length);
    // ---- security gate: may answer (400/401/403/503, CORS preflight) or verify credentials first
    // browsers' EventSource cannot set headers: the stream also takes a `token` query parameter
    const authorization = ex.stream?.authorization;
    // the webhook endpoints name receivers and their delivery logs: read with the write scope
    const gate = this.guard.admit(ex, req, route.kind === 'ops' && route.op === 'healthz', hasBody, authorization, route.kind === 'webhooks');
    if (gate === false) return;
    // ----
    if (!hasBody) { this.afterGate(gate, ex, null); return; }
    const limit = this.config.maxBodyBytes;
    const announced = length === '' ? NaN : Number(length);
    if (announced > limit) { this.tooLarge(ex); return; }
    // credentials still being verified (a KDF): the body counts against the small budget of such requests
    reader = readBody(res, limit, announced, (bytes) => this.afterGate(gate, ex, bytes), () => this.tooLarge(ex), () => this.overloaded(ex),
      gate === true ? undefined : UNVERIFIED_BODIES);
    // refused while its body was still arriving: the connection closes without onAborted
    if (gate !== true) gate.then((ok) => { if (!ok) reader!.release(); }, () => reader!.release());
  }

  /**
   * ARA's dialect or §2's shapes, per request: ARA's http client says who it is
   * (`ara-http-client_<version>`); the stream and the UI are never answered in it.
   */
  private chooseDialect(ex: Req, req: HttpRequest): void {
    if (!isApiRoute(ex.route)) return;
    // an explicit `dialect=ara|logbook` in the query wins in every mode (the web
    // UI asks for ARA's task fields so); it is in the URL, so caches key on it
    const asked = ex.query.includes('dialect=') ? askedDialect(ex.query) : null;
    if (asked !== null) { ex.ara = asked === 'ara'; return; }
    const mode = this.config.araCompat;
    if (mode === 'false') return;
    if (mode === 'true') { ex.ara = true; return; }
    ex.varyAgent = true;
    ex.ara = req.getHeader('user-agent').startsWith(ARA_CLIENT_AGENT);
  }

  /**
   * 503 + Retry-After from the request's head: its body is not read (uWS skips
   * it; the connection stays usable when its length is known), parsed or
   * validated. Only what the answer needs is read from the head (each
   * getHeader crosses into uWS): none of the headers a handled request copies,
   * no credentials (an overloaded server refuses everyone alike, before a
   * password check can cost anything), no abort handler (the answer is written
   * before the handler returns). The gate's other rules still apply: CORS, and
   * a repeated singleton header is answered 400 and closed (still counted as
   * refused for overload, which it also was).
   */
  private refuse(res: HttpResponse, req: HttpRequest, method: string, url: string, route: Req['route']): void {
    const ex = exchange(res, method, url, route, null);
    const length = req.getHeader('content-length');
    const hasBody = announcesBody(req, method, length);
    if (this.guard.admit(ex, req, true, hasBody) === false) return;
    if (length === '' && hasBody) ex.close = true;
    reply(ex, 503, Errors.overloaded());
  }

  /** Dispatch once the gate has let the request through: at once, or after its credentials are verified. */
  private afterGate(gate: true | Promise<boolean>, ex: Req, body: Buffer | null): void {
    if (gate === true) return this.dispatch(ex, body);
    // readBody may hand over a view of uWS's chunk, which is neutered when this
    // callback returns: keep a copy across the wait
    const kept = body === null ? null : Buffer.from(body);
    // held until the verdict, against the budget of requests not authenticated yet
    const held = kept?.length ?? 0;
    if (held && !UNVERIFIED_BODIES.take(held, this.config.maxBodyBytes)) return this.overloaded(ex);
    gate.then((ok) => { UNVERIFIED_BODIES.give(held); if (ok) this.dispatch(ex, kept); },
      (err) => { UNVERIFIED_BODIES.give(held); this.failed(ex, err); });
  }

  private overloaded(ex: Req): void {
    ex.close = true; // the rest of the body is not read
    reply(ex, 503, Errors.overloaded());
  }

  private tooLarge(ex: Req): void {
    ex.close = true; // the rest of the body is not read
    reply(ex, 413, Errors.tooLarge(this.config.maxBodyBytes));
  }

  private dispatch(ex: Req, body: Buffer | null): void {
    try {
      this.route(ex, body ?? Buffer.alloc(0));
    } catch (err) {
      this.failed(ex, err);
    }
  }

  private failed(ex: Req, err: unknown): void {
    log.error('request failed', { method: ex.method, url: ex.url, err: String((err as Error)?.stack ?? err) });
    reply(ex, 500, Errors.internal());
  }

  private route(ex: Req, body: Buffer): void {
    const { route, method } = ex;
    if (route.kind === 'ops') return this.ops.handle(ex, route);
    if (this.draining) {
      ex.close = true;
      return reply(ex, 503, Errors.unavailable('logbook is shutting down; retry shortly.'));
    }
    if (!this.ready) return reply(ex, 503, Errors.unavailable('logbook is recovering its data; retry shortly.'));
    const read = method === 'GET' || method === 'HEAD';
    switch (route.kind) {
      case 'missing': return reply(ex, 404, Errors.notFound());
      case 'stream':
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody('Stream'));
        if (method !== 'GET') return this.notAllowed(ex);
        // WebSocket upgrades never get here (Stream.register); anything else must ask for SSE
        if (!/\btext\/event-stream\b/i.test(ex.stream!.accept)) {
          return reply(ex, 406, JSON.stringify({ detail: 'Use a WebSocket upgrade or Accept: text/event-stream.' }));
        }
        return this.stream.serveSse(ex, ex.query, ex.stream!.lastEventId, ex.stream!.authorization, ex.stream!.address);
      case 'ingest':
        if (method === 'POST') return this.ingest.handle(ex, ex.contentType, ex.contentEncoding, body);
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody('Ingest'));
        return this.notAllowed(ex);
      case 'index':
      case 'root':
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody(route.kind === 'index' ? 'Api Index' : 'Api Root'));
        if (!read) return this.notAllowed(ex);
        return reply(ex, 200, route.kind === 'index' ? this.indexBody(ex) : this.rootBody(ex));
      case 'latest':
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody(route.name === null ? 'Latest Host List' : 'Latest Host Instance'));
        if (!read) return this.notAllowed(ex);
        return route.name === null ? this.latestHosts.list(ex) : this.latestHosts.get(ex, route.name);
      case 'list':
        if (read) return this.list(ex, route.type);
        if (method === 'POST') {
          // most bodies come without Content-Encoding: no closure for them
          if (ex.contentEncoding === '') return this.writes.create(ex, route.type, body);
          return decodedBody(ex, ex.contentEncoding, body, this.config.maxBodyBytes, (b) => this.writes.create(ex, route.type, b));
        }
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody(`${DISPLAY_NAME[route.type]} List`));
        return this.notAllowed(ex);
      case 'detail':
        if (read) return route.type === 'label' ? this.labelResource.get(ex, route.id) : this.reads.get(ex, route.type, route.id);
        if (method === 'PUT' || method === 'PATCH') {
          if (ex.contentEncoding === '') return this.writes.update(ex, route.type, route.id, body, method === 'PUT');
          return decodedBody(ex, ex.contentEncoding, body, this.config.maxBodyBytes, (b) => this.writes.update(ex, route.type, route.id, b, method === 'PUT'));
        }
        if (method === 'DELETE') return this.writes.remove(ex, route.type, route.id);
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody(`${DISPLAY_NAME[route.type]} Instance`));
        return this.notAllowed(ex);
      case 'webhooks':
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody(route.name === null ? 'Webhook List' : 'Webhook Delivery List'));
        if (!read) return this.notAllowed(ex);
        if (route.name !== null) return this.webhooks === null ? reply(ex, 404, Errors.notFound()) : this.webhooks.deliveries(ex, route.name, ex.query);
        if (this.webhooks === null) return reply(ex, 200, '{"count":0,"next":null,"previous":null,"results":[]}');
        return this.webhooks.list(ex);
      case 'search':
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody('Search'));
        if (!read) return this.notAllowed(ex);
        return this.search.handle(ex);
      case 'totals':
        if (read) return this.reads.totals(ex, route.playbook);
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody('Playbook Totals'));
        return this.notAllowed(ex);
      case 'junit':
        if (read) return this.reads.junit(ex, route.playbook);
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody('Playbook JUnit XML'));
        return this.notAllowed(ex);
    }
  }

  /** The search index's gauges from the worker's last stats (it pushes them each second). */
  private searchIndexedSeen = 0;
  private sampleSearch(): void {
    const s = this.searchService?.latest;
    if (!s) return;
    this.metrics.searchDocuments.set(s.documents);
    this.metrics.searchLag.set(s.lagMs / 1000);
    this.metrics.searchShardsBehind.set(s.shardsBehind);
    if (s.indexed > this.searchIndexedSeen) { this.metrics.searchIndexed.inc(s.indexed - this.searchIndexedSeen); this.searchIndexedSeen = s.indexed; }
  }

  private notAllowed(ex: Req): void {
    reply(ex, 405, Errors.methodNotAllowed(ex.method));
  }

  // ---- links ---------------------------------------------------------------

  private origin(ex: Req): string {
    const trust = this.config.trustProxy;
    const proto = trust && ex.forwardedProto ? ex.forwardedProto.split(',')[0]!.trim() : 'http';
    const host = (trust && ex.forwardedHost ? ex.forwardedHost.split(',')[0]!.trim() : ex.host)
      || `${this.config.host}:${this.port}`;
    return `${proto}://${host}`;
  }

  private indexBody(ex: Req): string {
    return JSON.stringify({ kind: ex.ara ? 'ara' : 'logbook', version: this.version, api: [`${this.origin(ex)}/api/v1/`] });
  }

  private rootBody(ex: Req): string {
    const origin = this.origin(ex);
    const out: Record<string, string> = {};
    for (const type of RESOURCE_TYPES) {
      out[TYPE_TO_PATH[type]] = `${origin}/api/v1/${TYPE_TO_PATH[type]}`;
      // ARA's router lists it after hosts; logbook's own root keeps its resources only (it answers everywhere all the same)
      if (type === 'host' && ex.ara) out.latesthosts = `${origin}/api/v1/latesthosts`;
    }
    return JSON.stringify(out);
  }

  private list(ex: Req, type: ResourceType): void {
    const parsed = parseListQuery(type, parseQuery(ex.query), this.pages, ex.ara);
    if (!parsed.ok) return reply(ex, 400, parsed.body);
    if (type === 'label') return this.labelResource.list(ex, parsed);
    // q=: the search index narrows the list to its matches first (docs/search.md)
    if (parsed.search !== null) return this.search.narrowList(ex, type, parsed, (narrowed) => this.reads.list(ex, type, narrowed));
    this.reads.list(ex, type, parsed);
  }
}
