// The live stream, GET /api/v1/stream (SPEC §14), over WebSocket and
// Server-Sent Events: the front's fan-out of the changes shards emit once their
// commits are durable (src/shard/changes.ts).
//
// Cursors. Each shard numbers its changes; a cursor is the vector of per-shard
// positions (base64url, opaque to clients). The front keeps the vector of the
// last change it received from every shard: a live change's cursor is that
// vector once the change is counted, built once and shared by every subscriber.
//
// Resuming (`since`, SSE Last-Event-ID). The subscriber is registered at once
// (live changes are held for it), then every shard that matters is asked for
// its changes after the cursor's position, page by page. A replay page leaves
// its shard behind every commit staged before it, so together with the held
// live changes it covers everything after the cursor; duplicates are dropped by
// comparing seqs per shard. Replayed messages carry the subscriber's running
// vector as cursor (a valid resume point; its own shard's position is the one
// the change had live). Held changes are sent, in arrival order, once every
// replay is done.
//
// Memory. A subscriber whose socket cannot take what is sent (uWS buffers it)
// or whose held changes grow past LOGBOOK_STREAM_MAX_BUFFER bytes is cut off:
// WebSocket close 1008, or the end of the SSE response. It resumes with since.
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_socket_context_t } from 'uWebSockets.js';
import type { Config } from '../config.js';
import { Errors } from '../api/errors.js';
import { RESOURCE_TYPES, TYPE_CODE } from '../api/resources.js';
import { OP_NAMES, STREAM_TYPES, type StreamChange } from '../shard/changes.js';
import type { Shards } from '../shard/shards.js';
import type { ReadyMessage, Reply } from '../shard/protocol.js';
import type { Authenticator, Denial } from './auth.js';
import { HTTP } from '../metrics.js';
import { log } from '../log.js';
import { parseQuery } from './page_links.js';
import { reply, type Exchange } from './respond.js';

export const ALLOW_STREAM = 'GET, OPTIONS';
const TYPE_NAMES: readonly string[] = (() => {
  const out: string[] = [];
  for (const t of RESOURCE_TYPES) out[TYPE_CODE[t]] = t;
  return out;
})();
/** changes per replay page (one shard message) */
const REPLAY_PAGE = 1000;
const CLOSE_POLICY = 1008;
const CLOSE_GOING_AWAY = 1001;
const CLOSE_ERROR = 1011;
/** counts clients cut off for /metrics (set by the Stream) */
let countCutOff: () => void = () => {};

// ---- cursors ---------------------------------------------------------------------

export function encodeCursor(positions: readonly number[]): string {
  return Buffer.from('1:' + positions.join(','), 'latin1').toString('base64url');
}

/** The positions a cursor names, or null when it is not one of ours for this many shards. */
export function decodeCursor(text: string, shards: number): number[] | null {
  if (text.length === 0 || text.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const plain = Buffer.from(text, 'base64url').toString('latin1');
  const m = /^1:(\d{1,15}(?:,\d{1,15})*)$/.exec(plain);
  if (m === null) return null;
  const positions = m[1]!.split(',').map(Number);
  if (positions.length !== shards) return null;
  return encodeCursor(positions) === text ? positions : null;
}

// ---- query -------------------------------------------------------------------

export interface StreamParams {
  playbook: number | null;
  /** bit per type code; 0 = every type */
  types: number;
  since: number[] | null;
  token: string | null;
}

export type ParsedStream = { ok: true; params: StreamParams } | { ok: false; body: string };

/** `playbook`, `type` (repeatable), `since` (or SSE's Last-Event-ID), `token`. */
export function parseStreamQuery(query: string, lastEventId: string, shards: number): ParsedStream {
  const q = parseQuery(query);
  const errors: Record<string, string[]> = {};
  let playbook: number | null = null;
  const pb = q.get('playbook')?.[0];
  if (pb !== undefined) {
    if (/^[1-9]\d{0,15}$/.test(pb) && Number.isSafeInteger(Number(pb))) playbook = Number(pb);
    else errors.playbook = ['A valid integer is required.'];
  }
  let types = 0;
  for (const value of q.get('type') ?? []) {
    for (const name of value.split(',')) {
      const code = STREAM_TYPES.get(name.trim().toLowerCase());
      if (code === undefined) { (errors.type ??= []).push(`Select a valid choice. ${name} is not one of the available choices.`); break; }
      types |= 1 << code;
    }
  }
  let since: number[] | null = null;
  const cursor = q.get('since')?.[0] ?? (lastEventId !== '' ? lastEventId : undefined);
  if (cursor !== undefined) {
    since = decodeCursor(cursor, shards);
    if (since === null) errors.since = ['Malformed cursor.'];
  }
  if (Object.keys(errors).length) return { ok: false, body: JSON.stringify(errors) };
  return { ok: true, params: { playbook, types, since, token: q.get('token')?.[0] ?? null } };
}

/** The Authorization header to check: the request's, else a `token` query parameter as a bearer token. */
export function streamAuthorization(header: string, query: string): string {
  if (header !== '' || !query.includes('token=')) return header;
  const token = parseQuery(query).get('token')?.[0];
  return token ? 'Bearer ' + token : '';
}

// ---- messages ------------------------------------------------------------------

/** One change on its way out: its JSON text (and SSE framing) built once for every subscriber. */
class Outgoing {
  private sseText: string | null = null;
  constructor(readonly shard: number, readonly seq: number, readonly code: number, readonly playbook: number | null,
    readonly cursor: string, readonly json: string) {}
  get sse(): string {
    return this.sseText ??= 'id: ' + this.cursor + '\ndata: ' + this.json + '\n\n';
  }
}

function changeJson(cursor: string, op: number, code: number, id: number, playbook: number | null, row: string | null): string {
  return '{"cursor":"' + cursor + '","op":"' + OP_NAMES[op] + '","type":"' + TYPE_NAMES[code] + '","id":' + id
    + ',"playbook":' + playbook + ',"row":' + (row ?? 'null') + '}';
}

// ---- subscribers -----------------------------------------------------------------

/** Where a subscriber's messages go: a WebSocket or an SSE response. */
interface Sink {
  /** send messages; false once the client is over its bound (it has been cut off) */
  send(messages: readonly Outgoing[] | null, text: string | null): boolean;
  /** close; `policy`: because the client could not keep up */
  end(code: number): void;
  heartbeat(): void;
}

class Subscriber {
  /** per shard: seq of the last change this subscriber was sent (or that its cursor named) */
  pos: number[];
  /** shards whose replay is still running; live changes are held meanwhile */
  replaying = 0;
  held: Outgoing[] | null = null;
  heldBytes = 0;
  closed = false;
  reset = false;
  constructor(readonly sink: Sink, readonly params: StreamParams, readonly hello: number[], readonly sse: boolean) {
    this.pos = params.since ? params.since.slice() : hello.slice();
  }
  wants(code: number, playbook: number | null): boolean {
    if (this.params.types !== 0 && (this.params.types & (1 << code)) === 0) return false;
    return this.params.playbook === null || this.params.playbook === playbook;
  }
}

interface WsData { params: StreamParams; sub: Subscriber | null }

export interface StreamDeps {
  config: Config;
  auth: Authenticator;
  ready: () => boolean;
  draining: () => boolean;
  /** /metrics: subscribers connected, clients cut off */
  gauge?: { set(n: number): void };
  cutOff?: { inc(): void };
}

export class Stream {
  private pool: Shards | null = null;
  /** per shard: seq of the last change received */
  private positions: number[] = [];
  private readonly everyPlaybook = new Set<Subscriber>();
  private readonly byPlaybook = new Map<number, Set<Subscriber>>();
  private readonly maxBuffer: number;
  private heartbeat: NodeJS.Timeout | null = null;
  private count = 0;
  private readonly onReplay = (r: Reply, ctx: { sub: Subscriber; shard: number }) => this.replayed(r, ctx.sub, ctx.shard);

  constructor(private readonly deps: StreamDeps) {
    this.maxBuffer = deps.config.streamMaxBuffer;
    countCutOff = () => deps.cutOff?.inc();
  }

  get subscribers(): number {
    let n = this.everyPlaybook.size;
    for (const set of this.byPlaybook.values()) n += set.size;
    return n;
  }

  /** The shards have recovered: their positions are where live changes start. */
  start(pool: Shards, ready: readonly ReadyMessage[]): void {
    this.pool = pool;
    this.positions = new Array<number>(pool.size).fill(0);
    for (const msg of ready) this.positions[msg.shard] = msg.stream[0];
    pool.onChanges = (shard, changes) => this.changes(shard, changes);
    const ms = this.deps.config.streamHeartbeat * 1000;
    this.heartbeat = setInterval(() => this.beat(), ms);
    this.heartbeat.unref();
  }

  /**
   * A shard's worker was restarted. Changes it made durable but never sent (it
   * died in between) are fetched and sent now, before its new ones: they are the
   * first thing the new worker answers.
   */
  shardRestarted(msg: ReadyMessage): void {
    const shard = msg.shard;
    if (msg.stream[0] <= this.positions[shard]!) return;
    const from = this.positions[shard]!;
    this.pool!.send(shard, { k: 'replay', rid: 0, from, playbook: null, limit: 1_000_000 }, (r: Reply) => {
      if (r.k === 'replay' && !r.reset) this.changes(shard, r.changes);
      else log.warn('live stream: changes of a restarted shard could not be recovered', { shard });
    }, null);
  }

  // ---- fan-out ------------------------------------------------------------------

  /** The changes of one durable commit of `shard`. */
  changes(shard: number, changes: readonly StreamChange[]): void {
    const positions = this.positions;
    if (this.everyPlaybook.size === 0 && this.byPlaybook.size === 0) {
      const last = changes[changes.length - 1];
      if (last && last[0] > positions[shard]!) positions[shard] = last[0];
      return;
    }
    const out: Outgoing[] = [];
    let single: number | null | undefined;
    for (const c of changes) {
      if (c[0] <= positions[shard]!) continue; // already sent (a restarted shard's catch-up)
      positions[shard] = c[0];
      const cursor = encodeCursor(positions);
      out.push(new Outgoing(shard, c[0], c[2], c[4], cursor, changeJson(cursor, c[1], c[2], c[3], c[4], c[5])));
      single = single === undefined || single === c[4] ? c[4] : -1;
    }
    if (!out.length) return;
    const whole = new WholeCommit(out);
    for (const sub of this.everyPlaybook) this.deliver(sub, out, whole);
    if (single !== -1) {
      const subs = this.byPlaybook.get(single!);
      if (subs) for (const sub of subs) this.deliver(sub, out, whole);
    } else {
      const playbooks = new Set(out.map((o) => o.playbook));
      for (const p of playbooks) {
        const subs = p === null ? undefined : this.byPlaybook.get(p);
        if (subs) for (const sub of subs) this.deliver(sub, out, null);
      }
    }
  }

  /** A label changed on the front (labels are not numbered by any shard: live only, not replayed). */
  label(op: number, id: number, row: string | null): void {
    if (this.everyPlaybook.size === 0) return;
    const cursor = encodeCursor(this.positions);
    const o = new Outgoing(-1, 0, TYPE_CODE.label, null, cursor, changeJson(cursor, op, TYPE_CODE.label, id, null, row));
    for (const sub of this.everyPlaybook) this.deliver(sub, [o], null);
  }

  private deliver(sub: Subscriber, out: readonly Outgoing[], whole: WholeCommit | null): void {
    if (sub.closed) return;
    if (sub.replaying > 0) { this.hold(sub, out); return; }
    const first = out[0]!;
    if (whole !== null && sub.pos[first.shard]! < first.seq) {
      // the common case: all of the commit is new to this subscriber; the part its
      // type filter keeps (and its SSE text) is built once per filter, not per subscriber
      sub.pos[first.shard] = out[out.length - 1]!.seq;
      const part = whole.part(sub.params.types);
      if (!part.list.length) return;
      if (!(sub.sse ? sub.sink.send(null, part.sse) : sub.sink.send(part.list, null))) this.drop(sub);
      return;
    }
    // `picked` stays null while every message goes (the common case: no copy)
    let picked: Outgoing[] | null = null;
    for (let i = 0; i < out.length; i++) {
      const o = out[i]!;
      if ((o.shard >= 0 && o.seq <= sub.pos[o.shard]!) || !sub.wants(o.code, o.playbook)) {
        picked ??= out.slice(0, i);
        continue;
      }
      if (o.shard >= 0) sub.pos[o.shard] = o.seq;
      picked?.push(o);
    }
    const messages = picked ?? out;
    if (!messages.length) return;
    if (!sub.sink.send(messages, null)) this.drop(sub);
  }

  private hold(sub: Subscriber, out: readonly Outgoing[]): void {
    const held = sub.held ??= [];
    for (const o of out) {
      if (!sub.wants(o.code, o.playbook)) continue;
      held.push(o);
      sub.heldBytes += o.json.length + 64;
    }
    if (sub.heldBytes > this.maxBuffer) { sub.sink.end(CLOSE_POLICY); this.drop(sub); }
  }

  private beat(): void {
    for (const sub of this.everyPlaybook) sub.sink.heartbeat();
    for (const set of this.byPlaybook.values()) for (const sub of set) sub.sink.heartbeat();
  }

  // ---- subscriptions ------------------------------------------------------------

  private subscribe(sink: Sink, params: StreamParams, sse: boolean): Subscriber {
    const hello = this.positions.slice();
    const sub = new Subscriber(sink, params, hello, sse);
    const cursor = encodeCursor(hello);
    const helloJson = '{"op":"hello","cursor":"' + cursor + '"}';
    // SSE: a resuming client keeps its Last-Event-ID until the replay has moved it
    const text = sse ? (params.since ? '' : 'id: ' + cursor + '\n') + 'data: ' + helloJson + '\n\n' : helloJson;
    if (!sink.send(null, text)) { sub.closed = true; return sub; }
    this.deps.gauge?.set(++this.count);
    if (params.playbook === null) this.everyPlaybook.add(sub);
    else {
      let set = this.byPlaybook.get(params.playbook);
      if (!set) this.byPlaybook.set(params.playbook, set = new Set());
      set.add(sub);
    }
    if (params.since) {
      const shards = params.playbook === null ? [...this.positions.keys()] : [this.pool!.shardOf(params.playbook)];
      sub.replaying = shards.length;
      for (const shard of shards) this.requestPage(sub, shard, sub.pos[shard]!);
    }
    return sub;
  }

  private requestPage(sub: Subscriber, shard: number, from: number): void {
    this.pool!.send(shard, { k: 'replay', rid: 0, from, playbook: sub.params.playbook, limit: REPLAY_PAGE }, this.onReplay, { sub, shard });
  }

  private replayed(r: Reply, sub: Subscriber, shard: number): void {
    if (sub.closed || sub.reset) return;
    if (r.k !== 'replay') { sub.sink.end(CLOSE_ERROR); this.drop(sub); return; }
    if (r.reset) {
      // the cursor is older than what is kept: the client re-reads; live changes continue from hello
      sub.reset = true;
      sub.pos = sub.hello.slice();
      const cursor = encodeCursor(sub.hello);
      const json = '{"op":"reset"}';
      if (!sub.sink.send(null, sub.sse ? 'id: ' + cursor + '\ndata: ' + json + '\n\n' : json)) { this.drop(sub); return; }
      sub.replaying = 0;
      this.release(sub);
      return;
    }
    const messages: Outgoing[] = [];
    for (const c of r.changes) {
      if (c[0] <= sub.pos[shard]!) continue;
      sub.pos[shard] = c[0];
      if (!sub.wants(c[2], c[4])) continue;
      const cursor = encodeCursor(sub.pos);
      messages.push(new Outgoing(shard, c[0], c[2], c[4], cursor, changeJson(cursor, c[1], c[2], c[3], c[4], c[5])));
    }
    if (r.last > sub.pos[shard]!) sub.pos[shard] = r.last;
    if (messages.length && !sub.sink.send(messages, null)) { this.drop(sub); return; }
    if (r.more) { this.requestPage(sub, shard, sub.pos[shard]!); return; }
    if (--sub.replaying === 0) this.release(sub);
  }

  /** Replays are done: send the live changes held meanwhile (those not replayed). */
  private release(sub: Subscriber): void {
    const held = sub.held;
    sub.held = null;
    sub.heldBytes = 0;
    if (held?.length) this.deliver(sub, held, null);
  }

  private drop(sub: Subscriber): void {
    if (sub.closed) return;
    sub.closed = true;
    this.deps.gauge?.set(--this.count);
    if (sub.params.playbook === null) this.everyPlaybook.delete(sub);
    else {
      const set = this.byPlaybook.get(sub.params.playbook);
      set?.delete(sub);
      if (set?.size === 0) this.byPlaybook.delete(sub.params.playbook);
    }
  }

  /** Shutdown: end every stream (clients reconnect with their last cursor). */
  closeAll(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    const subs = [...this.everyPlaybook];
    for (const set of this.byPlaybook.values()) subs.push(...set);
    for (const sub of subs) { sub.sink.end(CLOSE_GOING_AWAY); this.drop(sub); }
  }

  // ---- Server-Sent Events ----------------------------------------------------------

  /** GET /api/v1/stream with Accept: text/event-stream (the request passed the guard). */
  serveSse(ex: Exchange & { onAbort: (() => void) | null }, query: string, lastEventId: string): void {
    if (this.pool === null) return reply(ex, 503, Errors.unavailable('logbook is recovering its data; retry shortly.'));
    const parsed = parseStreamQuery(query, lastEventId, this.pool.size);
    if (!parsed.ok) return reply(ex, 400, parsed.body);
    const sink = new SseSink(ex, this.maxBuffer);
    const sub = this.subscribe(sink, parsed.params, true);
    ex.onAbort = () => this.drop(sub);
    sink.onEnd = () => this.drop(sub);
  }

  // ---- WebSocket -------------------------------------------------------------------

  /** Register the WebSocket route (before the catch-all HTTP route). */
  register(app: TemplatedApp): void {
    const heartbeat = this.deps.config.streamHeartbeat;
    const behavior = {
      // uWS pings a socket idle for about this long and closes it if the next period passes in silence;
      // at least 32 s: a client whose socket is full for a while is cut off with 1008 by the bound, not as idle
      idleTimeout: Math.min(960, Math.max(32, Math.ceil((heartbeat * 2) / 4) * 4)),
      sendPingsAutomatically: true,
      // nothing is dropped silently: we cut the client off ourselves past the bound (checked
      // before each send); uWS's own limit is above what one interval can add to it
      maxBackpressure: this.maxBuffer * 4 + 16 * 1_048_576,
      closeOnBackpressureLimit: false,
      maxPayloadLength: 4096,
      upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => this.upgrade(res, req, context),
      open: (ws: WebSocket<WsData>) => {
        const data = ws.getUserData();
        data.sub = this.subscribe(new WsSink(ws, this.maxBuffer), data.params, false);
      },
      close: (ws: WebSocket<WsData>) => {
        const data = ws.getUserData();
        if (data.sub) { (data.sub.sink as WsSink).gone = true; this.drop(data.sub); }
      },
    };
    app.ws<WsData>('/api/v1/stream', behavior);
    app.ws<WsData>('/api/v1/stream/', behavior);
  }

  private upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t): void {
    const key = req.getHeader('sec-websocket-key');
    const protocol = req.getHeader('sec-websocket-protocol');
    const extensions = req.getHeader('sec-websocket-extensions');
    const query = req.getQuery() ?? '';
    const authorization = streamAuthorization(req.getHeader('authorization'), query);
    const state = { aborted: false };
    res.onAborted(() => { state.aborted = true; });
    const refuse = (status: string, body: string, headers: Array<[string, string]> | null = null) => {
      if (state.aborted) return;
      res.cork(() => {
        res.writeStatus(status).writeHeader('Content-Type', 'application/json').writeHeader('Vary', 'Accept').writeHeader('Allow', ALLOW_STREAM);
        if (headers) for (const [k, v] of headers) res.writeHeader(k, v);
        res.end(body, true);
      });
    };
    if (this.deps.draining()) return refuse('503 Service Unavailable', Errors.unavailable('logbook is shutting down; retry shortly.'), [['Retry-After', '1']]);
    if (!this.deps.ready() || this.pool === null) return refuse('503 Service Unavailable', Errors.unavailable('logbook is recovering its data; retry shortly.'), [['Retry-After', '1']]);
    const proceed = (denial: Denial | null) => {
      if (state.aborted) return;
      if (denial) return refuse(denial.status === 401 ? '401 Unauthorized' : denial.status === 403 ? '403 Forbidden' : String(denial.status), denial.body, denial.headers);
      const parsed = parseStreamQuery(query, '', this.pool!.size);
      if (!parsed.ok) return refuse('400 Bad Request', parsed.body);
      res.cork(() => res.upgrade<WsData>({ params: parsed.params, sub: null }, key, protocol, extensions, context));
    };
    const verdict = this.deps.auth.check(authorization, false);
    if (verdict instanceof Promise) verdict.then(proceed, () => refuse('500 Internal Server Error', Errors.internal()));
    else proceed(verdict);
  }
}

/** What one subscriber's type filter keeps of a commit, and its SSE text. */
class Part {
  private text: string | null = null;
  constructor(readonly list: readonly Outgoing[]) {}
  get sse(): string {
    if (this.text === null) {
      let t = '';
      for (const o of this.list) t += o.sse;
      this.text = t;
    }
    return this.text;
  }
}

/**
 * One shard commit's messages (all from one shard, in seq order), with the part
 * each type filter keeps built once for every subscriber that has that filter.
 */
class WholeCommit {
  private readonly parts = new Map<number, Part>();
  constructor(private readonly out: readonly Outgoing[]) {}
  part(types: number): Part {
    let part = this.parts.get(types);
    if (part === undefined) {
      part = new Part(types === 0 ? this.out : this.out.filter((o) => (types & (1 << o.code)) !== 0));
      this.parts.set(types, part);
    }
    return part;
  }
}

// Sinks queue what they are given; queues are written at most once per
// FLUSH_INTERVAL_MS (at once when the last round is older than that). A write is
// a syscall per client: under a steady ingest the commits of one interval reach
// each client in one write, so the cost of many subscribers follows the number
// of clients, not clients × commits. An idle stream's next change leaves at once.
const FLUSH_INTERVAL_MS = 20;
interface Flushable { flush(): void; scheduled: boolean }
let toFlush: Flushable[] = [];
let lastFlush = 0;
function schedule(sink: Flushable): void {
  if (sink.scheduled) return;
  sink.scheduled = true;
  if (toFlush.length === 0) {
    const wait = lastFlush + FLUSH_INTERVAL_MS - performance.now();
    if (wait <= 0) setImmediate(flushAll); else setTimeout(flushAll, wait);
  }
  toFlush.push(sink);
}
function flushAll(): void {
  lastFlush = performance.now();
  const sinks = toFlush;
  toFlush = [];
  for (const sink of sinks) { sink.scheduled = false; sink.flush(); }
}

class WsSink implements Sink, Flushable {
  gone = false;
  scheduled = false;
  private queued: string[] = [];
  private queuedBytes = 0;
  constructor(private readonly ws: WebSocket<WsData>, private readonly max: number) {}
  send(messages: readonly Outgoing[] | null, text: string | null): boolean {
    if (this.gone) return false;
    // the bound is on the backlog the client has not taken (what waits for the next flush
    // is at most one interval's worth): a large commit onto an empty backlog always goes
    if (this.ws.getBufferedAmount() > this.max) { this.end(CLOSE_POLICY); return false; }
    if (text !== null) { this.queued.push(text); this.queuedBytes += text.length; }
    if (messages) for (const m of messages) { this.queued.push(m.json); this.queuedBytes += m.json.length; }
    schedule(this);
    return true;
  }
  flush(): void {
    if (this.gone || !this.queued.length) return;
    const queued = this.queued;
    this.queued = []; this.queuedBytes = 0;
    let dropped = false;
    this.ws.cork(() => {
      for (const text of queued) if (this.ws.send(text, false) === 2) { dropped = true; break; }
    });
    if (this.gone) return;
    // uWS refused a message (its own limit, above ours): the client would miss it, so it goes
    if (dropped) this.end(CLOSE_POLICY);
  }
  end(code: number): void {
    if (this.gone) return;
    if (code !== CLOSE_POLICY) this.flush(); else countCutOff();
    this.gone = true;
    this.queued = [];
    this.ws.end(code, code === CLOSE_POLICY ? 'too slow: resume with since' : code === CLOSE_GOING_AWAY ? 'server shutting down' : 'server error');
  }
  heartbeat(): void { /* uWS pings (sendPingsAutomatically) */ }
}

class SseSink implements Sink, Flushable {
  /** bytes handed to uWS since the socket last reported it could take more */
  private pending = 0;
  private ended = false;
  scheduled = false;
  private queued = '';
  onEnd: (() => void) | null = null;
  constructor(private readonly ex: Exchange, private readonly max: number) {
    const res = ex.res;
    // ex.done stays false while streaming: an abort is counted by the front's onAborted
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('Content-Type', 'text/event-stream');
      res.writeHeader('Cache-Control', 'no-cache');
      res.writeHeader('X-Accel-Buffering', 'no');
      res.writeHeader('Vary', ex.cors === null ? 'Accept' : 'Accept, Origin');
      if (ex.cors) res.writeHeader('Access-Control-Allow-Origin', ex.cors);
      res.write(': logbook live stream\n\n');
    });
    res.onWritable(() => { this.pending = 0; return true; });
  }
  private write(text: string): boolean {
    if (this.ended || this.ex.aborted) return false;
    // the bound is on the backlog the client has not taken (what waits for the next flush
    // is at most one interval's worth): a large commit onto an empty backlog always goes
    if (this.pending > this.max) { this.end(CLOSE_POLICY); return false; }
    this.queued += text;
    schedule(this);
    return true;
  }
  flush(): void {
    if (this.ended || this.ex.aborted || this.queued === '') return;
    const text = this.queued;
    this.queued = '';
    let ok = true;
    this.ex.res.cork(() => { ok = this.ex.res.write(text); });
    if (!ok || this.pending > 0) this.pending += text.length;
  }
  send(messages: readonly Outgoing[] | null, text: string | null): boolean {
    if (text !== null && messages === null) return this.write(text);
    let t = text ?? '';
    for (const m of messages!) t += m.sse;
    return this.write(t);
  }
  end(code: number): void {
    if (this.ended) return;
    if (code !== CLOSE_POLICY) this.flush(); else countCutOff();
    this.ended = true;
    this.queued = '';
    if (!this.ex.aborted && !this.ex.done) {
      this.ex.done = true;
      this.ex.res.cork(() => this.ex.res.end());
      HTTP.finish(this.ex, 200);
    }
    this.onEnd?.();
  }
  heartbeat(): void { this.write(': keep-alive\n\n'); }
}
