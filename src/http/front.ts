// The HTTP front (main thread): routes /api/v1 requests, validates bodies and
// queries, allocates ids, sends commands to the shard that owns the playbook and
// scatters list queries, then writes the replies. It holds no record state
// beyond the routing directory and the label catalogue.
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { Config } from '../config.js';
import { Errors } from '../api/errors.js';
import { parseListQuery, toShardQuery, type PageSettings, type ParsedList } from '../api/list_query.js';
import { compareRows, mergePages } from '../api/order.js';
import {
  DISPLAY_NAME, PATH_TO_TYPE, TYPE_TO_PATH, WRITE_FIELDS, RESOURCE_TYPES, TYPE_CODE,
  isChildType, type ResourceType,
} from '../api/resources.js';
import { compileWriteValidators, type WriteMode } from '../api/schemas.js';
import { nowMicros } from '../api/time.js';
import { BodyNormalizer, type Normalized } from '../api/validate.js';
import type { ReplyHandler, ShardPool } from '../shard/pool.js';
import type { ListReply, ListRow, ReadyMessage, ShardToFront, WriteCommand, WriteReply } from '../shard/protocol.js';
import type { FrontStore } from '../store/front_store.js';
import { log } from '../log.js';
import { parseJsonBody, readBody, type BodyReader } from './body.js';
import { Directory } from './directory.js';
import { Ingest } from './ingest.js';
import type { IdAllocator } from '../shard/ids.js';
import { Guard } from './guard.js';
import { LabelCatalogue, type Label } from './labels.js';
import { pageLinks, parseQuery } from './page_links.js';
import { ALLOW_DETAIL, ALLOW_INDEX, ALLOW_LIST, reply, type Exchange } from './respond.js';
import { isUiPath, UiFiles } from './static.js';
// ---- operations (health, metrics, OpenAPI, shard restarts, retention) ----
import { HTTP, Metrics, ROUTE } from '../metrics.js';
import { Ops, opsAllow, opsMetricRoute, parseOpsRoute, type OpsRoute } from './ops.js';

type Route =
  | { kind: 'index' } | { kind: 'root' } | { kind: 'missing' } | OpsRoute
  | { kind: 'ingest' }
  | { kind: 'list'; type: ResourceType }
  | { kind: 'detail'; type: ResourceType; id: number };

/** Everything a request needs after its handler returns (uWS's HttpRequest dies then). */
interface Req extends Exchange {
  url: string;
  query: string;
  host: string;
  forwardedProto: string;
  forwardedHost: string;
  contentType: string;
  contentEncoding: string;
  minimal: boolean;
  route: Route;
}

const ID = /^[1-9]\d{0,15}$/;
const ALLOW_INGEST = 'POST, OPTIONS';
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** URL segment → type as a Map: one lookup, and no prototype keys ('constructor') to guard against. */
const TYPE_BY_PATH = new Map<string, ResourceType>(Object.entries(PATH_TO_TYPE));

export function parseRoute(url: string): Route {
  const path = url.length > 1 && url.endsWith('/') ? url.slice(0, -1) : url;
  if (path === '/api') return { kind: 'index' };
  if (path === '/api/v1') return { kind: 'root' };
  const ops = parseOpsRoute(path);
  if (ops) return ops;
  if (!path.startsWith('/api/v1/')) return { kind: 'missing' };
  if (path === '/api/v1/ingest') return { kind: 'ingest' };
  const rest = path.slice(8);
  const slash = rest.indexOf('/');
  const type = TYPE_BY_PATH.get(slash < 0 ? rest : rest.slice(0, slash));
  if (type === undefined) return { kind: 'missing' };
  if (slash < 0) return { kind: 'list', type };
  const idText = rest.slice(slash + 1);
  if (!ID.test(idText)) return { kind: 'missing' };
  const id = Number(idText);
  return Number.isSafeInteger(id) ? { kind: 'detail', type, id } : { kind: 'missing' };
}

function allowOf(route: Route): string {
  switch (route.kind) {
    case 'list': return ALLOW_LIST;
    case 'detail': return ALLOW_DETAIL;
    case 'missing': return '';
    case 'ingest': return ALLOW_INGEST;
    case 'ops': return opsAllow(route);
    default: return ALLOW_INDEX;
  }
}

/** The route template index of a route, for metrics (metrics.ts ROUTE). */
function metricRoute(route: Route): number {
  switch (route.kind) {
    case 'index': return ROUTE.index;
    case 'root': return ROUTE.root;
    case 'missing': return ROUTE.missing;
    case 'ingest': return ROUTE.ingest;
    case 'list': return ROUTE.list + TYPE_CODE[route.type];
    case 'detail': return ROUTE.detail + TYPE_CODE[route.type];
    case 'ops': return opsMetricRoute(route);
  }
}

/** `uuid`: a playbook created with one becomes known to batch ingest as a stream */
interface WriteContext { ex: Req; shard: number; claims: number[] | null; uuid: string | null }
interface ListContext {
  ex: Req; parsed: Extract<ParsedList, { ok: true }>; remaining: number; single: boolean;
  count: number; parts: ListRow[][]; failed: ListReply | null;
}

export class Front {
  private readonly dir = new Directory();
  private readonly labels: LabelCatalogue;
  /** false until every shard has recovered: requests get 503 meanwhile */
  ready = false;
  private readonly normalizer: BodyNormalizer;
  private readonly pages: PageSettings;
  /** duplicate headers, CORS, authentication: run before routing (src/http/guard.ts) */
  readonly guard: Guard;
  // Reply handlers are bound once: the pending table stores the handler and a
  // context object, so no closure is created per request.
  private readonly onWrite: ReplyHandler<WriteContext> = (r, ctx) => this.finishWrite(r, ctx);
  private readonly onList: ReplyHandler<ListContext> = (r, ctx) => this.gatherList(r, ctx);
  port = 0;

  /** set by recover(): the front answers 503 until the shards have recovered */
  private pool!: ShardPool;
  // ---- operations ----
  readonly metrics = new Metrics();
  private readonly ops: Ops;
  /** set by a shutdown: new requests get 503 and their connection closed */
  draining = false;
  private readonly ingest: Ingest;
  /** the web UI's files (src/http/static.ts) */
  private readonly ui = new UiFiles();

  constructor(private readonly config: Config, private readonly version: string, store: FrontStore | null) {
    this.ops = new Ops(config, version, this.metrics, {
      ready: () => this.ready, draining: () => this.draining,
      pool: () => this.pool ?? null, labelCount: () => this.labels.byId.size,
    });
    this.labels = new LabelCatalogue(store);
    this.normalizer = new BodyNormalizer(compileWriteValidators(), {
      ignoredFacts: config.ignoredFacts, ignoredArguments: config.ignoredArguments,
    });
    this.pages = { pageSize: config.pageSize, maxPageSize: config.maxPageSize };
    this.guard = new Guard(config);
    this.ingest = new Ingest({
      pool: () => this.pool, dir: this.dir, labels: this.labels, normalizer: this.normalizer, maxBodyBytes: config.maxBodyBytes,
      broadcastLabels: (upsert, remove) => this.pool.broadcast({ k: 'labels', upsert, remove }),
    });
  }

  /** The id counters the shards share with the front. */
  get ids(): IdAllocator { return this.dir.ids; }

  close(): void {
    this.guard.close();
  }

  /** Rebuild the id allocators, the directory and the label replicas after recovery. */
  recover(pool: ShardPool, ready: ReadyMessage[]): void {
    this.pool = pool;
    const maxLabel = this.labels.load();
    this.dir.observe(0, maxLabel);
    for (const msg of ready) {
      msg.maxIds.forEach((id, code) => this.dir.observe(code, id));
      msg.ids.forEach((ids, code) => { for (const id of ids) this.dir.set(code, id, msg.shard); });
      this.ingest.learn(msg.streams);
    }
    const upsert: Array<[number, string]> = [...this.labels.byId.values()].map((l) => [l.id, l.name]);
    if (upsert.length) this.pool.broadcast({ k: 'labels', upsert, remove: [] });
    pool.onRestart = (msg) => this.shardRestarted(msg);
    this.ready = true;
  }

  // ---- operations hooks (shard restarts: shard/pool.ts; retention: retention.ts) ----

  /** A restarted shard recovered from disk: relearn its ids, give it the label catalogue. */
  private shardRestarted(msg: ReadyMessage): void {
    msg.maxIds.forEach((id, code) => this.dir.observe(code, id));
    msg.ids.forEach((ids, code) => { for (const id of ids) this.dir.set(code, id, msg.shard); });
    this.ingest.learn(msg.streams);
    const upsert: Array<[number, string]> = [...this.labels.byId.values()].map((l) => [l.id, l.name]);
    if (upsert.length) this.pool.send(msg.shard, { k: 'labels', upsert, remove: [] }, null);
    this.metrics.shardRecovery.set({ shard: String(msg.shard) }, msg.recovery.ms / 1000);
  }

  /** Ids deleted outside a request (retention), per type code, leave the directory. */
  forget(deleted: number[][]): void {
    for (let code = 0; code < deleted.length; code++) for (const id of deleted[code]!) this.dir.clear(code, id);
  }

  /** The uWS route handler: copy what is needed out of `req`, then read the body if any. */
  onRequest(res: HttpResponse, req: HttpRequest): void {
    const method = req.getCaseSensitiveMethod();
    const url = req.getUrl();
    if (isUiPath(url)) return this.ui.serve(res, req, this.guard);
    const route = parseRoute(url);
    const ex: Req = {
      res, method, allow: allowOf(route), aborted: false, done: false, close: false, extraHeaders: null,
      url, query: req.getQuery() ?? '', host: req.getHeader('host'),
      forwardedProto: req.getHeader('x-forwarded-proto'), forwardedHost: req.getHeader('x-forwarded-host'),
      contentType: req.getHeader('content-type'), contentEncoding: req.getHeader('content-encoding'),
      minimal: /\breturn=minimal\b/i.test(req.getHeader('prefer')),
      route, cors: null,
      slot: HTTP.slotOf(metricRoute(route), method), t0: HTTP.start(),
    };
    let reader: BodyReader | null = null;
    res.onAborted(() => {
      if (!ex.done && !ex.aborted) HTTP.abort(ex);
      ex.aborted = true;
      reader?.release();
    });
    const length = req.getHeader('content-length');
    const hasBody = BODY_METHODS.has(method) || (length !== '' && length !== '0') || req.getHeader('transfer-encoding') !== '';
    // ---- security gate: may answer (400/401/403/503, CORS preflight) or verify credentials first
    const gate = this.guard.admit(ex, req, route.kind === 'ops' && route.op === 'healthz', hasBody);
    if (gate === false) return;
    // ----
    if (!hasBody) { this.afterGate(gate, ex, null); return; }
    const limit = this.config.maxBodyBytes;
    if (length !== '' && Number(length) > limit) { this.tooLarge(ex); return; }
    reader = readBody(res, limit, (bytes) => this.afterGate(gate, ex, bytes), () => this.tooLarge(ex), () => this.overloaded(ex));
    // refused while its body was still arriving: the connection closes without onAborted
    if (gate !== true) gate.then((ok) => { if (!ok) reader!.release(); }, () => reader!.release());
  }

  /** Dispatch once the gate has let the request through: at once, or after its credentials are verified. */
  private afterGate(gate: true | Promise<boolean>, ex: Req, body: Buffer | null): void {
    if (gate === true) return this.dispatch(ex, body);
    // readBody may hand over a view of uWS's chunk, which is neutered when this
    // callback returns: keep a copy across the wait
    const kept = body === null ? null : Buffer.from(body);
    gate.then((ok) => { if (ok) this.dispatch(ex, kept); }, (err) => this.failed(ex, err));
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
      case 'ingest':
        if (method === 'POST') return this.ingest.handle(ex, ex.contentType, ex.contentEncoding, body);
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody('Ingest'));
        return this.notAllowed(ex);
      case 'index':
      case 'root':
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody(route.kind === 'index' ? 'Api Index' : 'Api Root'));
        if (!read) return this.notAllowed(ex);
        return reply(ex, 200, route.kind === 'index' ? this.indexBody(ex) : this.rootBody(ex));
      case 'list':
        if (read) return this.list(ex, route.type);
        if (method === 'POST') return this.create(ex, route.type, body);
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody(`${DISPLAY_NAME[route.type]} List`));
        return this.notAllowed(ex);
      case 'detail':
        if (read) return this.get(ex, route.type, route.id);
        if (method === 'PUT' || method === 'PATCH') return this.update(ex, route.type, route.id, body, method === 'PUT');
        if (method === 'DELETE') return this.remove(ex, route.type, route.id);
        if (method === 'OPTIONS') return reply(ex, 200, optionsBody(`${DISPLAY_NAME[route.type]} Instance`));
        return this.notAllowed(ex);
    }
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
    return JSON.stringify({ kind: 'logbook', version: this.version, api: [`${this.origin(ex)}/api/v1/`] });
  }

  private rootBody(ex: Req): string {
    const origin = this.origin(ex);
    const out: Record<string, string> = {};
    for (const type of RESOURCE_TYPES) out[TYPE_TO_PATH[type]] = `${origin}/api/v1/${TYPE_TO_PATH[type]}`;
    return JSON.stringify(out);
  }

  // ---- reads ---------------------------------------------------------------

  /** The shard holding a record, or -1. */
  private locate(type: ResourceType, id: number): number {
    return this.dir.shardOf(type, id);
  }

  private get(ex: Req, type: ResourceType, id: number): void {
    if (type === 'label') {
      const label = this.labels.byId.get(id);
      return label ? reply(ex, 200, label.toJSON()) : reply(ex, 404, Errors.notFound());
    }
    const shard = this.locate(type, id);
    if (shard < 0) return reply(ex, 404, Errors.notFound());
    this.pool.send(shard, { k: 'get', rid: 0, type, id }, onSimpleReply, ex);
  }

  private list(ex: Req, type: ResourceType): void {
    const parsed = parseListQuery(type, parseQuery(ex.query), this.pages);
    if (!parsed.ok) return reply(ex, 400, parsed.body);
    if (type === 'label') return this.labelList(ex, parsed);
    const pinned = parsed.playbook !== null && isChildType(type);
    if (pinned && parsed.playbook! < 1) return this.envelope(ex, parsed, 0, []);
    const shards = pinned ? [this.pool.shardOf(parsed.playbook!)] : Array.from({ length: this.pool.size }, (_, i) => i);
    const single = shards.length === 1;
    const q = toShardQuery(type, parsed, single);
    const ctx: ListContext = { ex, parsed, remaining: shards.length, single, count: 0, parts: [], failed: null };
    for (const shard of shards) this.pool.send(shard, { k: 'list', rid: 0, q }, this.onList, ctx);
  }

  private gatherList(r: ShardToFront, ctx: ListContext): void {
    if (r.k !== 'list' || r.status !== 200) ctx.failed ??= r as ListReply;
    else { ctx.count += r.count; ctx.parts.push(r.rows); }
    if (--ctx.remaining > 0) return;
    if (ctx.failed) return reply(ctx.ex, ctx.failed.status, ctx.failed.body ?? Errors.internal());
    const { parsed } = ctx;
    const desc = parsed.order.map(([, d]) => d);
    const rows = mergePages(ctx.parts, desc, ctx.single ? 0 : parsed.offset, parsed.limit);
    this.envelope(ctx.ex, parsed, ctx.count, rows);
  }

  private envelope(ex: Req, parsed: Extract<ParsedList, { ok: true }>, count: number, rows: ListRow[]): void {
    const path = ex.url;
    const { next, previous } = pageLinks(this.origin(ex) + path, ex.query, count, parsed.limit, parsed.offset);
    let results = '';
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      results += (i ? ',' : '') + (row[row.length - 1] as string);
    }
    reply(ex, 200, '{"count":' + count + ',"next":' + JSON.stringify(next) + ',"previous":' + JSON.stringify(previous)
      + ',"results":[' + results + ']}');
  }

  // ---- writes --------------------------------------------------------------

  private create(ex: Req, type: ResourceType, body: Buffer): void {
    const parsed = parseJsonBody(body, ex.contentType);
    if (!parsed.ok) return reply(ex, parsed.status, parsed.body);
    const n = this.normalizer.normalize(type, 'create', parsed.value, parsed.text);
    if (type === 'label') return this.labelWrite(ex, null, n);
    if (type === 'playbook') {
      if (n.errors) return reply(ex, 400, Errors.fields(n.errors, WRITE_FIELDS.playbook));
      return this.sendWrite(ex, -1, 'create', 'playbook', 0, false, n);
    }
    const playbook = n.set.playbook as number | undefined;
    if (playbook === undefined || this.locate('playbook', playbook) < 0) {
      const errors = n.errors ?? {};
      if (playbook !== undefined) errors.playbook = [Errors.invalidPk(playbook)];
      return reply(ex, 400, Errors.fields(errors, WRITE_FIELDS[type]));
    }
    // id 0: the shard allocates a child's id when it creates it (src/shard/ids.ts)
    this.sendWrite(ex, this.pool.shardOf(playbook), 'create', type, 0, false, n);
  }

  private update(ex: Req, type: ResourceType, id: number, body: Buffer, put: boolean): void {
    const shard = type === 'label' ? (this.labels.byId.has(id) ? 0 : -1) : this.locate(type, id);
    if (shard < 0) return reply(ex, 404, Errors.notFound());
    const parsed = parseJsonBody(body, ex.contentType);
    if (!parsed.ok) return reply(ex, parsed.status, parsed.body);
    const mode: WriteMode = put ? 'put' : 'patch';
    const n = this.normalizer.normalize(type, mode, parsed.value, parsed.text);
    if (type === 'label') return this.labelWrite(ex, this.labels.byId.get(id)!, n);
    if (type === 'playbook' && n.errors) return reply(ex, 400, Errors.fields(n.errors, WRITE_FIELDS.playbook));
    this.sendWrite(ex, shard, 'update', type, id, put, n);
  }

  private remove(ex: Req, type: ResourceType, id: number): void {
    if (type === 'label') {
      const label = this.labels.byId.get(id);
      if (!label) return reply(ex, 404, Errors.notFound());
      const persisted = this.labels.remove(label);
      this.pool.broadcast({ k: 'labels', upsert: [], remove: [id] });
      return afterDurable(persisted, () => reply(ex, 204, null), ex);
    }
    const shard = this.locate(type, id);
    if (shard < 0) return reply(ex, 404, Errors.notFound());
    const cmd: WriteCommand = { op: 'delete', type, id, put: false, set: {}, errors: null, elsewhere: null, minimal: false };
    this.pool.send(shard, { k: 'write', rid: 0, cmd }, this.onWrite, { ex, shard, claims: null, uuid: null } satisfies WriteContext);
  }

  /**
   * Send a write to its shard. A new playbook gets its id (and so its shard) only
   * when it is sent: a create that first waits for its new labels to be stored
   * must not reach its shard after a playbook with a higher id, because each
   * shard keeps its records in creation order = id order (unordered lists and
   * the front's merge rely on it).
   */
  private sendWrite(ex: Req, shard: number, op: 'create' | 'update', type: Exclude<ResourceType, 'label'>, id: number, put: boolean, n: Normalized): void {
    const ctx: WriteContext = { ex, shard, claims: null, uuid: typeof n.set.uuid === 'string' ? n.set.uuid : null };
    const dispatch = () => {
      if (op === 'create' && type === 'playbook') { id = this.dir.allocate('playbook'); ctx.shard = this.pool.shardOf(id); }
      const cmd: WriteCommand = {
        op, type, id, put, set: n.set, errors: n.errors, elsewhere: this.foreignKeys(type, n.set, ctx.shard), minimal: ex.minimal,
      };
      this.pool.send(ctx.shard, { k: 'write', rid: 0, cmd }, this.onWrite, ctx);
    };
    if (type === 'playbook' && Array.isArray(n.set.labels)) {
      // New label names become labels first (durably), so a committed playbook
      // never names a label that a crash could lose.
      const resolved = this.labels.resolve(n.set.labels as string[], () => this.dir.allocate('label'), nowMicros());
      n.set.labels = resolved.ids;
      ctx.claims = resolved.claims.length ? resolved.claims : null;
      if (resolved.created.length) this.pool.broadcast({ k: 'labels', upsert: resolved.created.map((l) => [l.id, l.name]), remove: [] });
      if (resolved.persisted) {
        resolved.persisted.then(dispatch, (err) => { this.storageFailed(ex, err); this.settleLabels(ctx, false); });
        return;
      }
    }
    dispatch();
  }

  /** FK fields whose id exists on another shard: the shard reports "does not belong to playbook". */
  private foreignKeys(type: ResourceType, set: Record<string, unknown>, shard: number): string[] | null {
    let out: string[] | null = null;
    for (const spec of WRITE_FIELDS[type]) {
      const value = set[spec.name];
      if (spec.name === 'playbook' || value === undefined) continue;
      if (spec.kind === 'fk') {
        const s = this.locate(spec.target!, value as number);
        if (s >= 0 && s !== shard) (out ??= []).push(spec.name);
      } else if (spec.kind === 'fklist') {
        for (const id of value as number[]) {
          const s = this.locate(spec.target!, id);
          if (s >= 0 && s !== shard) (out ??= []).push(`${spec.name}:${id}`);
        }
      }
    }
    return out;
  }

  private finishWrite(reply_: ShardToFront, ctx: WriteContext): void {
    // a shard that died answers with a synthesized non-write reply: no labels, no ids
    const r: WriteReply = reply_.k === 'write' ? reply_
      : { k: 'write', rid: 0, status: (reply_ as { status: number }).status, body: (reply_ as { body: string }).body, created: null, deleted: null };
    this.settleLabels(ctx, r.status < 300);
    if (r.created) {
      this.dir.set(r.created[0], r.created[1], ctx.shard);
      if (ctx.uuid !== null && r.created[0] === TYPE_CODE.playbook) this.ingest.learn([[ctx.uuid, r.created[1]]], false);
    }
    if (r.deleted) {
      for (let code = 0; code < r.deleted.length; code++) for (const id of r.deleted[code]!) this.dir.clear(code, id);
    }
    reply(ctx.ex, r.status, r.body);
  }

  private settleLabels(ctx: WriteContext, succeeded: boolean): void {
    if (!ctx.claims) return;
    const dropped = this.labels.settle(ctx.claims, succeeded);
    if (dropped.length) this.pool.broadcast({ k: 'labels', upsert: [], remove: dropped.map((l) => l.id) });
  }

  private storageFailed(ex: Req, err: unknown): void {
    log.error('label store write failed', { err: String((err as Error)?.stack ?? err) });
    reply(ex, 503, Errors.unavailable('The write could not be stored; nothing was changed. Retry later.'));
  }

  // ---- labels (owned here) ---------------------------------------------------

  private labelWrite(ex: Req, label: Label | null, n: Normalized): void {
    if (n.errors) return reply(ex, 400, Errors.fields(n.errors, WRITE_FIELDS.label));
    const name = n.set.name as string | undefined;
    if (name !== undefined && this.labels.taken(name, label?.id ?? 0)) return reply(ex, 400, Errors.labelExists());
    const now = nowMicros();
    let persisted: Promise<unknown> | null;
    if (label === null) ({ label, persisted } = this.labels.create(this.dir.allocate('label'), name!, now));
    else persisted = this.labels.touch(label, name ?? label.name, now);
    this.pool.broadcast({ k: 'labels', upsert: [[label.id, label.name]], remove: [] });
    const body = ex.minimal ? `{"id":${label.id}}` : label.toJSON();
    afterDurable(persisted, () => reply(ex, ex.method === 'POST' ? 201 : 200, body), ex);
  }

  private labelList(ex: Req, parsed: Extract<ParsedList, { ok: true }>): void {
    const value = (l: Label, col: string): number | string =>
      col === 'created' ? l.created : col === 'updated' ? l.updated : col === 'name' ? l.name : l.id;
    const rows: ListRow[] = [];
    for (const label of this.labels.byId.values()) {
      const keep = parsed.filters.every((f) => {
        const v = value(label, f.column);
        switch (f.kind) {
          case 'date_before': return (v as number) <= (f.value as number);
          case 'date_after': return (v as number) >= (f.value as number);
          case 'icontains': return (v as string).toLowerCase().includes(f.value as string);
          default: return true;
        }
      });
      if (keep) rows.push([...parsed.order.map(([col]) => value(label, col)), label.id, label.toJSON()]);
    }
    const desc = parsed.order.map(([, d]) => d);
    rows.sort((a, b) => compareRows(a, b, desc));
    this.envelope(ex, parsed, rows.length, rows.slice(parsed.offset, parsed.offset + parsed.limit));
  }
}

/** Answer once `persisted` is on disk (at once when there is nothing to wait for); 503 if it failed. */
function afterDurable(persisted: Promise<unknown> | null, answer: () => void, ex: Req): void {
  if (!persisted) return answer();
  persisted.then(answer, (err) => {
    log.error('label store write failed', { err: String((err as Error)?.stack ?? err) });
    reply(ex, 503, Errors.unavailable('The write could not be stored; nothing was changed. Retry later.'));
  });
}

function optionsBody(name: string): string {
  return JSON.stringify({ name, renders: ['application/json'], parses: ['application/json'] });
}

function onSimpleReply(r: ShardToFront, ex: Req): void {
  const body = (r as { body?: string | null }).body ?? null;
  reply(ex, (r as { status: number }).status, body);
}
