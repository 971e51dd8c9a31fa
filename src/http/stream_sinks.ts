// The live stream's outgoing side (src/http/stream.ts subscribes, replays and fans out):
// each change's message built once for every subscriber (Outgoing, a commit's
// part per type filter), and where messages go: a channel of the subscribers that
// share a filter, a WebSocket, an SSE response, or an in-process consumer (the
// webhook dispatcher). Writes are grouped into flush rounds (see FLUSH_INTERVAL_MS).
import type { WebSocket, TemplatedApp } from 'uWebSockets.js';
import { RESOURCE_TYPES, TYPE_CODE } from '../api/resources.js';
import { OP_NAMES, rowJson, type ChangeRow } from '../shard/changes.js';
import { HTTP } from '../metrics.js';
import type { Exchange } from './respond.js';

export const CLOSE_POLICY = 1008;
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_ERROR = 1011;
/** the credentials the stream was opened with were revoked (WebSocket close code; SSE: the response ends) */
export const CLOSE_REVOKED = 4401;
/** counts clients cut off for /metrics (set by the Stream) */
let countCutOff: () => void = () => {};
export function countCutOffWith(count: () => void): void { countCutOff = count; }

const TYPE_NAMES: readonly string[] = (() => {
  const out: string[] = [];
  for (const t of RESOURCE_TYPES) out[TYPE_CODE[t]] = t;
  return out;
})();

// ---- messages ------------------------------------------------------------------

/** One change on its way out: its JSON text (and SSE framing) built once for every subscriber. */
export class Outgoing {
  private sseText: string | null = null;
  constructor(readonly shard: number, readonly seq: number, readonly code: number, readonly playbook: number | null,
    readonly cursor: string, readonly json: string) {}
  get sse(): string {
    return this.sseText ??= 'id: ' + this.cursor + '\ndata: ' + this.json + '\n\n';
  }
}

export function changeJson(cursor: string, op: number, code: number, id: number, playbook: number | null, row: ChangeRow): string {
  return '{"cursor":"' + cursor + '","op":"' + OP_NAMES[op] + '","type":"' + TYPE_NAMES[code] + '","id":' + id
    + ',"playbook":' + playbook + ',"row":' + rowJson(row) + '}';
}

// ---- sinks ---------------------------------------------------------------------

/** Where a subscriber's messages go: a WebSocket or an SSE response. */
export interface Sink {
  /** send messages; false once the client is over its bound (it has been cut off) */
  send(messages: readonly Outgoing[] | null, text: string | null): boolean;
  /** close; `policy`: because the client could not keep up */
  end(code: number): void;
  heartbeat(): void;
  /** send what is queued now, then take the channel's bytes; false once cut off */
  join(topic: string): boolean;
  leave(topic: string): void;
}

/** One change as an in-process consumer gets it. */
export interface ConsumedChange {
  readonly shard: number;
  /** its number in its shard's log */
  readonly seq: number;
  /** type code (TYPE_CODE) */
  readonly code: number;
  readonly playbook: number | null;
  /** the position after it (a `since` to resume from) */
  readonly cursor: string;
  /** the message a client gets: {cursor, op, type, id, playbook, row} */
  readonly json: string;
}

/** An in-process reader of the stream (Stream.consume). */
export interface StreamConsumer {
  changes(list: readonly ConsumedChange[]): void;
  /** `{"op":"hello","cursor":…}` first; `{"op":"reset"}` when `since` was older than the shards keep */
  control(json: string): void;
  /** the stream ended the subscription (shutdown, or too far behind while resuming) */
  ended(code: number): void;
}

export class DirectSink implements Sink {
  constructor(private readonly consumer: StreamConsumer) {}
  send(messages: readonly Outgoing[] | null, text: string | null): boolean {
    if (text !== null) this.consumer.control(text);
    if (messages !== null && messages.length) this.consumer.changes(messages);
    return true;
  }
  end(code: number): void { this.consumer.ended(code); }
  heartbeat(): void {}
  join(): boolean { return true; }
  leave(): void {}
}

/** What one subscriber's type filter keeps of a commit, and its SSE text. */
export class Part {
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
export class WholeCommit {
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

/**
 * The live subscribers of one filter (one playbook or every playbook, one type
 * mask), who are sent the same bytes. Each commit's part for the filter is
 * appended once; on the next flush round the SSE text is encoded once into one
 * Buffer that is written to every SSE member, and each WebSocket message is
 * published once on the channel's uWS topic, which uWS fans out in C++. No
 * work per member but the write itself (and the bound check).
 */
/** A subscriber as its channel sees it. */
export interface Member { readonly sse: boolean; readonly sink: Sink }

export class Channel<M extends Member = Member> implements Flushable {
  scheduled = false;
  readonly topic: string;
  private readonly sse = new Set<M>();
  private readonly ws = new Set<M>();
  private sseText: string[] = [];
  private wsMessages: string[] = [];
  constructor(private readonly app: TemplatedApp | null, readonly playbook: number | null, readonly types: number) {
    this.topic = 'stream/' + (playbook ?? '*') + '/' + types;
  }
  get empty(): boolean { return this.sse.size === 0 && this.ws.size === 0; }
  members(): M[] { return [...this.sse, ...this.ws]; }
  add(sub: M): void { (sub.sse ? this.sse : this.ws).add(sub); }
  remove(sub: M): void { (sub.sse ? this.sse : this.ws).delete(sub); }
  append(part: Part): void {
    if (!part.list.length) return;
    if (this.sse.size) this.sseText.push(part.sse);
    if (this.ws.size) for (const o of part.list) this.wsMessages.push(o.json);
    schedule(this);
  }
  heartbeat(): void {
    // WebSocket members are pinged by uWS
    if (this.sse.size) { this.sseText.push(': keep-alive\n\n'); schedule(this); }
  }
  /** One round: the SSE text, encoded once, written to every SSE member; each WebSocket message published once. */
  flush(): void {
    if (this.sseText.length) {
      const buf = Buffer.from(this.sseText.length === 1 ? this.sseText[0]! : this.sseText.join(''));
      this.sseText = [];
      for (const sub of this.sse) (sub.sink as SseSink).writeShared(buf);
    }
    if (this.wsMessages.length) {
      const messages = this.wsMessages;
      this.wsMessages = [];
      // uWS skips a socket over its own limit silently: members past ours are cut off first
      for (const sub of this.ws) (sub.sink as WsSink).checkBound();
      if (this.app !== null && this.ws.size) for (const m of messages) this.app.publish(this.topic, m, false);
    }
  }
}

// Sinks and channels queue what they are given; queues are written at most
// once per FLUSH_INTERVAL_MS (at once when the last round is older than that).
// A write is a syscall per client: under a steady ingest the commits of one
// interval reach each client in one write, so the cost of many subscribers
// follows the number of clients, not clients × commits. An idle stream's next
// change leaves at once. (Tried and dropped: spacing rounds further apart with
// more clients, and writing a round in slices between other events; on the
// shared 2-core box both raised delivery latency more than they saved.)
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

export class WsSink implements Sink, Flushable {
  gone = false;
  scheduled = false;
  private queued: string[] = [];
  private queuedBytes = 0;
  constructor(private readonly ws: WebSocket<unknown>, private readonly max: number) {}
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
    // uWS refused a message (its own limit, above ours): the client would miss it, so it goes
    if (dropped && !this.gone) this.end(CLOSE_POLICY);
  }
  end(code: number): void {
    if (this.gone) return;
    if (code !== CLOSE_POLICY) this.flush(); else countCutOff();
    this.gone = true;
    this.queued = [];
    this.ws.end(code, code === CLOSE_POLICY ? 'too slow: resume with since' : code === CLOSE_GOING_AWAY ? 'server shutting down'
      : code === CLOSE_REVOKED ? 'credentials no longer valid' : 'server error');
  }
  heartbeat(): void { /* uWS pings (sendPingsAutomatically) */ }
  join(topic: string): boolean {
    this.flush();
    if (this.gone) return false;
    this.ws.subscribe(topic);
    return true;
  }
  leave(topic: string): void { if (!this.gone) this.ws.unsubscribe(topic); }
  /** A channel member: cut off past the bound (before a publish, which uWS would skip it for). */
  checkBound(): void {
    if (!this.gone && this.ws.getBufferedAmount() > this.max) this.end(CLOSE_POLICY);
  }
}

export class SseSink implements Sink, Flushable {
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
  join(): boolean {
    this.flush();
    return !this.ended && !this.ex.aborted;
  }
  leave(): void {}
  /** A channel member: the channel's bytes of one flush round, the same Buffer for every member. */
  writeShared(buf: Buffer): void {
    if (this.ended || this.ex.aborted) return;
    if (this.pending > this.max) { this.end(CLOSE_POLICY); return; }
    let ok = true;
    this.ex.res.cork(() => { ok = this.ex.res.write(buf); });
    if (!ok || this.pending > 0) this.pending += buf.length;
  }
}
