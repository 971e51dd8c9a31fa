// The live stream, GET /api/v1/stream (docs/api.md#live-stream), over WebSocket and
// Server-Sent Events: the front's fan-out of the changes shards emit once their
// commits are durable (src/shard/changes.ts).
//
// Cursors. Each shard numbers its changes; a cursor is the vector of per-shard
// positions (base64url, opaque to clients). Commits reach the front from every
// shard and are sent on in one order, that of the stamps they took from a
// counter all shards share (src/shard/commit_order.ts; logged with the
// changes). A live change's cursor is the vector once the change is counted,
// built once and shared by every subscriber.
//
// Resuming (`since`, SSE Last-Event-ID). The subscriber is registered at once
// (live changes are held for it), then every shard is asked for its changes
// after the cursor's position, page by page, and the pages are merged by stamp
// up to the last commit the front had sent (newer ones come live, held). The
// merge walks the commits in the order they were sent live, so its running
// vector is, message for message, the cursor each had live. Held changes are
// sent, in arrival order, once the merge is done; duplicates are dropped by
// comparing seqs per shard.
//
// Fan-out. A live subscriber with nothing of its own queued joins its filter's
// channel (playbook or all, type mask): each commit's part for the filter is
// built once, its SSE text is encoded once per write round into one Buffer
// written to every member, and its WebSocket messages are published once on a
// uWS topic, which uWS fans out in C++.
//
// Auth for the stream's whole life. A subscriber remembers the credential it
// was let in with (src/http/auth.ts Principal: its file, name and stored hash,
// never the secret); when the users/tokens files are reloaded every subscriber
// whose credential is gone or changed is closed (WebSocket 1008, or the end of
// the SSE response), as a new request with it would get 401. A WebSocket
// upgrade that carries an Origin (every browser sends one) must come from the
// server's own origin or one in LOGBOOK_CORS_ORIGINS, else 403: a page on
// another site cannot open the stream with credentials the browser cached.
// Subscribers are capped in all (LOGBOOK_STREAM_MAX_SUBSCRIBERS) and per
// credential or anonymous client address (LOGBOOK_STREAM_MAX_PER_CLIENT): past
// either, 503 + Retry-After.
//
// Memory. A subscriber whose socket cannot take what is sent (uWS buffers it)
// or whose held changes grow past LOGBOOK_STREAM_MAX_BUFFER bytes is cut off:
// WebSocket close 1008, or the end of the SSE response. It resumes with since.
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_socket_context_t } from 'uWebSockets.js';
import type { Config } from '../config.js';
import { Errors } from '../api/errors.js';
import type { StreamChange } from '../shard/changes.js';
import type { Shards } from '../shard/shards.js';
import { CommitOrder } from '../shard/commit_order.js';
import { CommitChanges, type ReadyMessage, type Reply, type ShardToFront } from '../shard/protocol.js';
import type { Authenticator, Denial, Principal } from './auth.js';
import type { Cors } from './cors.js';
import { log } from '../log.js';
import { encodeCursor, parseStreamQuery, streamAuthorization, type StreamParams } from './stream_query.js';
import { reply, type Exchange } from './respond.js';
import {
  CLOSE_ERROR, CLOSE_GOING_AWAY, CLOSE_POLICY, CLOSE_REVOKED, Channel, DirectSink, Outgoing, SseSink, WholeCommit, WsSink,
  changeJson, countCutOffWith, type Sink, type StreamConsumer,
} from './stream_sinks.js';
export type { ConsumedChange, StreamConsumer } from './stream_sinks.js';

export const ALLOW_STREAM = 'GET, OPTIONS';
/** changes per replay page (one shard message) */
const REPLAY_PAGE = 1000;
/**
 * A shard that took a stamp and neither sent its commit nor its failure this long
 * (its worker died): the commits behind it go on without it.
 */
const ORDER_STALL_MS = 2000;

// ---- subscribers -----------------------------------------------------------------


class Subscriber {
  /** per shard: seq of the last change this subscriber was sent (or that its cursor named) */
  pos: number[];
  /** shards whose replay is still running; live changes are held meanwhile */
  replaying = 0;
  held: Outgoing[] | null = null;
  heldBytes = 0;
  closed = false;
  reset = false;
  /** set once the subscriber is live with nothing of its own queued: it shares its filter's channel */
  channel: Channel | null = null;
  /** while resuming: the shards' logs, merged in commit order */
  replay: Replay | null = null;
  /** the credential it was let in with (null: anonymous), re-checked on every credentials reload */
  principal: Principal | null = null;
  /** an in-process consumer (StreamConsumer): its messages are handed over one by one, never through a channel's uWS topic */
  direct = false;
  /** whose subscribers it counts among (credential, or client address when anonymous) */
  client = '';
  constructor(readonly sink: Sink, readonly params: StreamParams, readonly hello: number[], readonly sse: boolean) {
    this.pos = params.since ? params.since.slice() : hello.slice();
    this.direct = sink instanceof DirectSink;
  }
  wants(code: number, playbook: number | null): boolean {
    if (this.params.types !== 0 && (this.params.types & (1 << code)) === 0) return false;
    return this.params.playbook === null || this.params.playbook === playbook;
  }
}

interface WsData { params: StreamParams; sub: Subscriber | null; principal: Principal | null; client: string }

/** One shard's part of a replay: its last page and where the merge stands in it. */
interface ShardReplay { page: StreamChange[]; next: number; more: boolean; pending: boolean; last: number }
/**
 * A resume (`since`): every shard's log after the cursor, merged by commit
 * stamp up to `frontier` (the last commit the front had sent when the client
 * came back); what is later reaches the subscriber live, held until the merge
 * is done. The merge sees the commits in the order the front sent them, so its
 * running vector of positions is the cursor each message had live.
 */
interface Replay { frontier: number; shards: ShardReplay[] }

export interface StreamDeps {
  config: Config;
  auth: Authenticator;
  cors: Cors;
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
  /** subscribers not (yet) on a channel: resuming, or holding live changes meanwhile */
  private readonly everyPlaybook = new Set<Subscriber>();
  private readonly byPlaybook = new Map<number, Set<Subscriber>>();
  /** live subscribers by filter: every playbook (type mask → channel), one playbook (id → type mask → channel) */
  private readonly allChannels = new Map<number, Channel<Subscriber>>();
  private readonly playbookChannels = new Map<number, Map<number, Channel<Subscriber>>>();
  private app: TemplatedApp | null = null;
  /** the order of all shards' commits (shared with the shard workers) */
  readonly order: CommitOrder;
  /** per shard: stamped commits received and not yet sent on, oldest first */
  private inbox: Array<Array<{ stamp: number; changes: CommitChanges }>> = [];
  /** per shard: the highest stamp received */
  private received: number[] = [];
  /** the stamp of the last commit sent on */
  private frontier = 0;
  /** per shard: commits received into the inbox, and sent on, so far */
  private receivedCommits: number[] = [];
  private sentCommits: number[] = [];
  /** per shard: replies held until the commits received before them are sent on (with that count) */
  private heldReplies: Array<Array<{ reply: ShardToFront; after: number }>> = [];
  private stalled: NodeJS.Timeout | null = null;
  private readonly maxBuffer: number;
  private heartbeat: NodeJS.Timeout | null = null;
  private count = 0;
  /** of `count`, in-process consumers (Stream.consume), and the types they read (0: every type) */
  private directCount = 0;
  private directTypes = 0;
  private readonly onReplay = (r: Reply, ctx: { sub: Subscriber; shard: number }) => this.replayed(r, ctx.sub, ctx.shard);

  constructor(private readonly deps: StreamDeps) {
    this.maxBuffer = deps.config.streamMaxBuffer;
    this.order = CommitOrder.create(deps.config.shards);
    countCutOffWith(() => deps.cutOff?.inc());
    deps.auth.reloaded.push(() => this.recheck());
  }

  /** Subscribers per client key (Subscriber.client). */
  private readonly perClient = new Map<string, number>();

  /** Whose subscriber a request would be: its credential, or its address when anonymous. */
  static clientKey(principal: Principal | null, address: string): string {
    return principal ? principal.kind + ':' + principal.name : 'address:' + address;
  }

  /** null when one more subscriber for `client` is allowed, else why not (for the 503). */
  private full(client: string): string | null {
    if (this.count - this.directCount >= this.deps.config.streamMaxSubscribers) return 'the live stream has its maximum of subscribers (LOGBOOK_STREAM_MAX_SUBSCRIBERS); retry later.';
    if ((this.perClient.get(client) ?? 0) >= this.deps.config.streamMaxPerClient) return 'this client has its maximum of live-stream subscribers (LOGBOOK_STREAM_MAX_PER_CLIENT); close one or retry later.';
    return null;
  }

  /** The credentials files were reloaded: close every stream whose credential is no longer in force. */
  private recheck(): void {
    let closed = 0;
    for (const sub of this.allSubscribers()) {
      if (sub.principal === null || this.deps.auth.inForce(sub.principal, false)) continue;
      sub.sink.end(CLOSE_REVOKED);
      this.drop(sub);
      closed++;
    }
    if (closed) log.info('live stream: subscribers closed, their credentials are no longer valid', { closed });
  }

  private allSubscribers(): Subscriber[] {
    const subs = [...this.everyPlaybook];
    for (const set of this.byPlaybook.values()) subs.push(...set);
    for (const ch of this.channels()) subs.push(...ch.members());
    return subs;
  }

  get subscribers(): number {
    return this.count - this.directCount;
  }

  /** The shards have recovered: their positions are where live changes start. */
  start(pool: Shards, ready: readonly ReadyMessage[]): void {
    this.pool = pool;
    this.positions = new Array<number>(pool.size).fill(0);
    for (const msg of ready) this.positions[msg.shard] = msg.stream[0];
    this.inbox = Array.from({ length: pool.size }, () => []);
    this.received = new Array<number>(pool.size).fill(0);
    this.frontier = this.order.current();
    this.receivedCommits = new Array<number>(pool.size).fill(0);
    this.sentCommits = new Array<number>(pool.size).fill(0);
    this.heldReplies = Array.from({ length: pool.size }, () => []);
    pool.onChanges = (shard, changes, stamp) => this.incoming(shard, changes, stamp);
    if (pool.releaseReply) {
      pool.holdReply = (shard, reply) => this.holdReply(shard, reply);
      pool.releaseHeld = (shard) => this.releaseReplies(shard, true);
    }
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
      if (r.k === 'replay' && !r.reset) this.changes(shard, CommitChanges.decoded(r.changes));
      else log.warn('live stream: changes of a restarted shard could not be recovered', { shard });
    }, null);
  }

  // ---- fan-out ------------------------------------------------------------------

  /** A shard's commit (or a failed commit's stamp, with no changes). */
  private incoming(shard: number, changes: CommitChanges, stamp: number | undefined): void {
    if (!stamp) { this.changes(shard, changes); return; }
    if (stamp > this.received[shard]!) this.received[shard] = stamp;
    if (!changes.empty) { this.inbox[shard]!.push({ stamp, changes }); this.receivedCommits[shard]!++; }
    this.pump(false);
  }

  /**
   * A shard's reply arrives while changes it sent before are still waiting for
   * the commit order: it waits too. A client that has its acknowledgement and
   * then subscribes must not be sent the write it already has (its hello
   * cursor is past it).
   */
  private holdReply(shard: number, reply: ShardToFront): boolean {
    const held = this.heldReplies[shard];
    if (held === undefined || (this.sentCommits[shard] === this.receivedCommits[shard] && held.length === 0)) return false;
    held.push({ reply, after: this.receivedCommits[shard]! });
    return true;
  }

  private releaseReplies(shard: number, all: boolean): void {
    const held = this.heldReplies[shard];
    if (!held?.length) return;
    let n = 0;
    while (n < held.length && (all || held[n]!.after <= this.sentCommits[shard]!)) n++;
    if (n === 0) return;
    for (const { reply } of held.splice(0, n)) this.pool!.releaseReply?.(reply);
  }

  /**
   * Send on the received commits in stamp order: the oldest one goes once no
   * other shard can still send an older one (src/shard/commit_order.ts). A wait
   * lasts about one commit of another shard.
   */
  private pump(force: boolean): void {
    const inbox = this.inbox;
    for (;;) {
      let best = -1;
      let stamp = Infinity;
      for (let t = 0; t < inbox.length; t++) {
        const q = inbox[t]!;
        if (q.length && q[0]!.stamp < stamp) { stamp = q[0]!.stamp; best = t; }
      }
      if (best < 0) break;
      if (!force) {
        let blocked = false;
        for (let t = 0; t < inbox.length && !blocked; t++) {
          if (t !== best && !inbox[t]!.length && this.order.bound(t, this.received[t]!) < stamp) blocked = true;
        }
        if (blocked) {
          this.stalled ??= setTimeout(() => {
            this.stalled = null;
            log.warn('live stream: a shard holds back the commit order; going on without it', { stamp });
            this.pump(true);
          }, ORDER_STALL_MS);
          return;
        }
      }
      force = false;
      const commit = inbox[best]!.shift()!;
      if (stamp > this.frontier) this.frontier = stamp;
      this.sentCommits[best]!++;
      this.changes(best, commit.changes);
      this.releaseReplies(best, false);
    }
    if (this.stalled !== null) { clearTimeout(this.stalled); this.stalled = null; }
  }

  /** The changes of one durable commit of `shard` (decoded only for subscribers). */
  changes(shard: number, commit: CommitChanges): void {
    const positions = this.positions;
    if (this.count === 0) {
      if (commit.last > positions[shard]!) positions[shard] = commit.last;
      return;
    }
    // only in-process consumers (the webhook dispatcher reads playbooks and hosts): the rows of
    // other types (most of a batch: its results) are not rendered for nobody
    const only = this.count === this.directCount ? this.directTypes : 0;
    const out: Outgoing[] = [];
    let single: number | null | undefined;
    for (const c of commit.list) {
      if (c[0] <= positions[shard]!) continue; // already sent (a restarted shard's catch-up)
      positions[shard] = c[0];
      if (only !== 0 && (only & (1 << c[2])) === 0) continue;
      const cursor = encodeCursor(positions);
      out.push(new Outgoing(shard, c[0], c[2], c[4], cursor, changeJson(cursor, c[1], c[2], c[3], c[4], c[5])));
      single = single === undefined || single === c[4] ? c[4] : -1;
    }
    if (!out.length) return;
    const whole = new WholeCommit(out);
    for (const ch of this.allChannels.values()) ch.append(whole.part(ch.types));
    for (const sub of this.everyPlaybook) this.deliver(sub, out, whole);
    if (single !== -1) {
      const channels = this.playbookChannels.get(single!);
      if (channels) for (const ch of channels.values()) ch.append(whole.part(ch.types));
      const subs = this.byPlaybook.get(single!);
      if (subs) for (const sub of subs) this.deliver(sub, out, whole);
    } else {
      // a group commit of several playbooks (rare): each playbook's part is built on its own
      const playbooks = new Set(out.map((o) => o.playbook));
      for (const p of playbooks) {
        if (p === null) continue;
        const channels = this.playbookChannels.get(p);
        if (channels) {
          const mine = new WholeCommit(out.filter((o) => o.playbook === p));
          for (const ch of channels.values()) ch.append(mine.part(ch.types));
        }
        const subs = this.byPlaybook.get(p);
        if (subs) for (const sub of subs) this.deliver(sub, out, null);
      }
    }
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
      if (o.seq <= sub.pos[o.shard]! || !sub.wants(o.code, o.playbook)) {
        picked ??= out.slice(0, i);
        continue;
      }
      sub.pos[o.shard] = o.seq;
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
    for (const ch of this.channels()) ch.heartbeat();
  }

  private *channels(): Iterable<Channel<Subscriber>> {
    yield* this.allChannels.values();
    for (const m of this.playbookChannels.values()) yield* m.values();
  }

  /**
   * The subscriber is live and has nothing held: what it has been given so far
   * leaves now, and from here on it takes its filter's channel's bytes.
   */
  private join(sub: Subscriber): void {
    if (sub.closed || sub.channel !== null || sub.replaying > 0 || sub.direct) return;
    const { playbook, types } = sub.params;
    let channels: Map<number, Channel<Subscriber>> | undefined = this.allChannels;
    if (playbook !== null) {
      channels = this.playbookChannels.get(playbook);
      if (channels === undefined) this.playbookChannels.set(playbook, channels = new Map());
    }
    let ch = channels.get(types);
    if (ch === undefined) channels.set(types, ch = new Channel<Subscriber>(this.app, playbook, types));
    // what the channel holds from before this subscriber's position is not for it
    ch.flush();
    if (!sub.sink.join(ch.topic)) return; // cut off
    this.unlist(sub);
    sub.channel = ch;
    ch.add(sub);
  }

  /** Take a subscriber off the lists of those outside a channel. */
  private unlist(sub: Subscriber): void {
    if (sub.params.playbook === null) this.everyPlaybook.delete(sub);
    else {
      const set = this.byPlaybook.get(sub.params.playbook);
      set?.delete(sub);
      if (set?.size === 0) this.byPlaybook.delete(sub.params.playbook);
    }
  }

  // ---- subscriptions ------------------------------------------------------------

  private subscribe(sink: Sink, params: StreamParams, sse: boolean, principal: Principal | null, client: string): Subscriber {
    const hello = this.positions.slice();
    const sub = new Subscriber(sink, params, hello, sse);
    sub.principal = principal;
    sub.client = client;
    const cursor = encodeCursor(hello);
    const helloJson = '{"op":"hello","cursor":"' + cursor + '"}';
    // SSE: a resuming client keeps its Last-Event-ID until the replay has moved it
    const text = sse ? (params.since ? '' : 'id: ' + cursor + '\n') + 'data: ' + helloJson + '\n\n' : helloJson;
    if (!sink.send(null, text)) { sub.closed = true; return sub; }
    ++this.count;
    if (sink instanceof DirectSink) { this.directCount++; this.directTypes = params.types === 0 || (this.directCount > 1 && this.directTypes === 0) ? 0 : this.directTypes | params.types; }
    this.deps.gauge?.set(this.count - this.directCount);
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    if (params.playbook === null) this.everyPlaybook.add(sub);
    else {
      let set = this.byPlaybook.get(params.playbook);
      if (!set) this.byPlaybook.set(params.playbook, set = new Set());
      set.add(sub);
    }
    if (params.since) {
      // every shard, also for one playbook's stream: the cursors need every shard's position
      sub.replay = {
        frontier: this.frontier,
        shards: this.positions.map((_, t) => ({ page: [], next: 0, more: true, pending: true, last: sub.pos[t]! })),
      };
      sub.replaying = 1;
      for (let t = 0; t < this.positions.length; t++) this.requestPage(sub, t, sub.pos[t]!);
    } else this.join(sub);
    return sub;
  }

  /**
   * An in-process consumer (the webhook dispatcher): the changes of the types in
   * `types` (a bit per type code) from `since` (null: from now), in the order and
   * with the cursors a client would get. It is not counted against the
   * subscriber limits; it is cut off, as a client is, if it falls more than
   * LOGBOOK_STREAM_MAX_BUFFER behind while it resumes (it resubscribes).
   */
  consume(consumer: StreamConsumer, types: number, since: number[] | null): { close(): void } {
    if (this.pool === null) throw new Error('the live stream has not started');
    const sub = this.subscribe(new DirectSink(consumer), { playbook: null, types, since, token: null }, false, null, 'internal');
    return { close: () => this.drop(sub) };
  }

  private requestPage(sub: Subscriber, shard: number, from: number): void {
    this.pool!.send(shard, { k: 'replay', rid: 0, from, playbook: null, limit: REPLAY_PAGE }, this.onReplay, { sub, shard });
  }

  private replayed(r: Reply, sub: Subscriber, shard: number): void {
    if (sub.closed || sub.reset || sub.replay === null) return;
    if (r.k !== 'replay') { sub.sink.end(CLOSE_ERROR); this.drop(sub); return; }
    const st = sub.replay.shards[shard]!;
    st.pending = false;
    if (r.reset && (sub.params.playbook === null || shard === this.pool!.shardOf(sub.params.playbook))) {
      // the cursor is older than what is kept: the client re-reads; live changes continue from hello
      sub.reset = true;
      sub.replay = null;
      sub.pos = sub.hello.slice();
      const cursor = encodeCursor(sub.hello);
      const json = '{"op":"reset"}';
      if (!sub.sink.send(null, sub.sse ? 'id: ' + cursor + '\ndata: ' + json + '\n\n' : json)) { this.drop(sub); return; }
      sub.replaying = 0;
      this.release(sub);
      return;
    }
    if (r.reset) {
      // another shard's history is gone: one playbook's stream needs none of it, only a position
      st.page = []; st.next = 0; st.more = false;
      if (r.last > sub.pos[shard]!) sub.pos[shard] = r.last;
    } else {
      st.page = r.changes; st.next = 0; st.more = r.more; st.last = r.last;
    }
    this.merge(sub);
  }

  /** Send what the replay pages allow, in commit order; ask for the next page where one runs out. */
  private merge(sub: Subscriber): void {
    const replay = sub.replay!;
    const messages: Outgoing[] = [];
    let waiting = false;
    for (;;) {
      let best = -1;
      let stamp = Infinity;
      for (let t = 0; t < replay.shards.length; t++) {
        const st = replay.shards[t]!;
        if (st.next >= st.page.length) {
          if (st.more) {
            waiting = true;
            if (!st.pending) { st.pending = true; this.requestPage(sub, t, st.last); }
          }
          continue;
        }
        const s = st.page[st.next]![6] ?? 0;
        if (s < stamp) { stamp = s; best = t; }
      }
      // the rest is newer than what the front had sent when the client came back: it comes live
      if (waiting || best < 0 || stamp > replay.frontier) break;
      const c = replay.shards[best]!.page[replay.shards[best]!.next++]!;
      if (c[0] <= sub.pos[best]!) continue;
      sub.pos[best] = c[0];
      if (!sub.wants(c[2], c[4])) continue;
      const cursor = encodeCursor(sub.pos);
      messages.push(new Outgoing(best, c[0], c[2], c[4], cursor, changeJson(cursor, c[1], c[2], c[3], c[4], c[5])));
    }
    if (messages.length && !sub.sink.send(messages, null)) { this.drop(sub); return; }
    if (waiting) return;
    sub.replay = null;
    sub.replaying = 0;
    this.release(sub);
  }

  /** Replays are done: send the live changes held meanwhile (those not replayed). */
  private release(sub: Subscriber): void {
    const held = sub.held;
    sub.held = null;
    sub.heldBytes = 0;
    if (held?.length) this.deliver(sub, held, null);
    this.join(sub);
  }

  private drop(sub: Subscriber): void {
    if (sub.closed) return;
    sub.closed = true;
    --this.count;
    if (sub.direct) this.directCount--;
    this.deps.gauge?.set(this.count - this.directCount);
    const n = (this.perClient.get(sub.client) ?? 1) - 1;
    if (n > 0) this.perClient.set(sub.client, n); else this.perClient.delete(sub.client);
    const ch = sub.channel;
    if (ch === null) { this.unlist(sub); return; }
    sub.channel = null;
    ch.remove(sub);
    sub.sink.leave(ch.topic);
    if (ch.empty) {
      if (ch.playbook === null) this.allChannels.delete(ch.types);
      else {
        const m = this.playbookChannels.get(ch.playbook);
        m?.delete(ch.types);
        if (m?.size === 0) this.playbookChannels.delete(ch.playbook);
      }
    }
  }

  /** Shutdown: end every stream (clients reconnect with their last cursor). */
  closeAll(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    const subs = [...this.everyPlaybook];
    for (const set of this.byPlaybook.values()) subs.push(...set);
    for (const ch of this.channels()) { ch.flush(); subs.push(...ch.members()); }
    for (const sub of subs) { sub.sink.end(CLOSE_GOING_AWAY); this.drop(sub); }
  }

  // ---- Server-Sent Events ----------------------------------------------------------

  /** GET /api/v1/stream with Accept: text/event-stream (the request passed the guard). */
  serveSse(ex: Exchange & { onAbort: (() => void) | null }, query: string, lastEventId: string, authorization: string, address: string): void {
    if (this.pool === null) return reply(ex, 503, Errors.unavailable('logbook is recovering its data; retry shortly.'));
    const parsed = parseStreamQuery(query, lastEventId, this.pool.size);
    if (!parsed.ok) return reply(ex, 400, parsed.body);
    const principal = this.deps.auth.principalOf(authorization);
    const client = Stream.clientKey(principal, address);
    const full = this.full(client);
    if (full !== null) return reply(ex, 503, Errors.unavailable(full));
    const sink = new SseSink(ex, this.maxBuffer);
    const sub = this.subscribe(sink, parsed.params, true, principal, client);
    ex.onAbort = () => this.drop(sub);
    sink.onEnd = () => this.drop(sub);
  }

  // ---- WebSocket -------------------------------------------------------------------

  /** Register the WebSocket route (before the catch-all HTTP route). */
  register(app: TemplatedApp): void {
    this.app = app;
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
        data.sub = this.subscribe(new WsSink(ws, this.maxBuffer), data.params, false, data.principal, data.client);
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
    const origin = req.getHeader('origin');
    const host = this.deps.config.trustProxy && req.getHeader('x-forwarded-host') !== ''
      ? req.getHeader('x-forwarded-host').split(',')[0]!.trim() : req.getHeader('host');
    const address = Buffer.from(res.getRemoteAddressAsText()).toString();
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
    // cross-site WebSocket hijacking: browsers send Origin and attach cached credentials; the
    // same-origin policy does not apply to WebSocket, so the server must refuse other sites' pages
    if (!this.originAllowed(origin, host)) return refuse('403 Forbidden', Errors.forbiddenOrigin());
    const proceed = (denial: Denial | null) => {
      if (state.aborted) return;
      if (denial) return refuse(denial.status === 401 ? '401 Unauthorized' : denial.status === 403 ? '403 Forbidden' : String(denial.status), denial.body, denial.headers);
      const parsed = parseStreamQuery(query, '', this.pool!.size);
      if (!parsed.ok) return refuse('400 Bad Request', parsed.body);
      const principal = this.deps.auth.principalOf(authorization);
      const client = Stream.clientKey(principal, address);
      const full = this.full(client);
      if (full !== null) return refuse('503 Service Unavailable', Errors.unavailable(full), [['Retry-After', '1']]);
      // uWS opens the socket (open() above) within upgrade(): the count is current for the next one
      res.cork(() => res.upgrade<WsData>({ params: parsed.params, sub: null, principal, client }, key, protocol, extensions, context));
    };
    const verdict = this.deps.auth.check(authorization, false, () => address);
    if (verdict instanceof Promise) verdict.then(proceed, () => refuse('500 Internal Server Error', Errors.internal()));
    else proceed(verdict);
  }

  /**
   * May a WebSocket upgrade with this Origin proceed? No Origin (not a browser),
   * the server's own origin (its Host, or X-Forwarded-Host behind a trusted
   * proxy; scheme and host compared without case), or an origin
   * LOGBOOK_CORS_ORIGINS allows.
   */
  private originAllowed(origin: string, host: string): boolean {
    if (origin === '') return true;
    const m = /^https?:\/\/([^/]+)$/i.exec(origin);
    if (m !== null && host !== '' && m[1]!.toLowerCase() === host.toLowerCase()) return true;
    const cors = this.deps.cors;
    return cors.enabled && cors.match(origin) !== '';
  }
}
