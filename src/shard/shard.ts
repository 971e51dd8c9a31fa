// A shard: one thread's worth of playbook aggregates. It handles one message at a
// time (no locks): decide → apply → journal (with blobs) → reply once durable.
// Replies leave in order: a read or a refusal that arrives while writes are
// committing waits behind them, so no client ever sees data that could still
// be lost (read-your-durable-writes).
import { TYPE_CODE } from '../api/resources.js';
import { Errors } from '../api/errors.js';
import { nowMicros } from '../api/time.js';
import { BLOB_DEFAULT, BLOB_FIELDS, blobKey } from '../store/blobs.js';
import { MemoryStore, type ShardStore } from '../store/shard_store.js';
import { decide } from './decide.js';
import { runList } from './list.js';
import { Serializer } from './serialize.js';
import { ShardState, type Event, type Removed } from './state.js';
import type { FrontToShard, ShardToFront, WriteCommand, WriteReply } from './protocol.js';

export interface ShardOptions {
  compat: boolean;
  store?: ShardStore;
  clock?: () => number;
  /** snapshot once this many commands were journaled since the last one */
  snapshotEvery?: number;
  /** replies that had to wait for a commit are delivered here */
  onReply?: (reply: ShardToFront) => void;
  /** a commit failed: the shard must be rebuilt from disk */
  onStorageFailure?: (err: unknown) => void;
}

interface Waiting { durable: boolean; replies: ShardToFront[] }

export class Shard {
  state = new ShardState();
  private serializer: Serializer;
  readonly store: ShardStore;
  private readonly clock: () => number;
  private readonly compat: boolean;
  private readonly snapshotEvery: number;
  private readonly onReply: (reply: ShardToFront) => void;
  private readonly onStorageFailure: (err: unknown) => void;
  /** replies held until the commits before them are durable, oldest first
   * (a queue with a head index: Array#shift is O(n) on long queues) */
  private waiting: Waiting[] = [];
  private waitingHead = 0;

  constructor(options: ShardOptions) {
    this.compat = options.compat;
    this.store = options.store ?? new MemoryStore();
    this.serializer = new Serializer(this.state, this.store, options.compat);
    this.clock = options.clock ?? nowMicros;
    this.snapshotEvery = options.snapshotEvery ?? Infinity;
    this.onReply = options.onReply ?? (() => {});
    this.onStorageFailure = options.onStorageFailure ?? (() => {});
  }

  /** Replace the state (recovery); the label replica is kept. */
  replaceState(state: ShardState): void {
    for (const [id, name] of this.state.labels) state.labels.set(id, name);
    this.state = state;
    this.serializer = new Serializer(state, this.store, this.compat);
  }

  /** Handle one message; returns the reply if it can leave now, else it leaves via onReply. */
  handle(msg: FrontToShard): ShardToFront | null {
    switch (msg.k) {
      case 'write': return this.write(msg.rid, msg.cmd);
      case 'get': {
        const { type, id } = msg;
        const row = this.state.index(type).get(id);
        if (row === undefined) return this.deliver({ k: 'get', rid: msg.rid, status: 404, body: Errors.notFound() }, null);
        const agg = type === 'playbook' ? row : this.state.aggregates.get(row.playbook)!;
        return this.deliver({ k: 'get', rid: msg.rid, status: 200, body: this.serializer.any(type, agg, row, 'detail') }, null);
      }
      case 'list': {
        const { count, rows } = runList(this.state, this.serializer, msg.q);
        return this.deliver({ k: 'list', rid: msg.rid, count, rows, status: 200, body: null }, null);
      }
      case 'labels':
        for (const [id, name] of msg.upsert) this.state.labelChanged(id, name);
        for (const id of msg.remove) this.state.labelChanged(id, null);
        return null;
      case 'close': return null;
    }
  }

  write(rid: number, cmd: WriteCommand): ShardToFront | null {
    const now = this.clock();
    const decision = decide(this.state, cmd, now);
    const reply: WriteReply = { k: 'write', rid, status: decision.status, body: null, created: null, deleted: null };
    if (!decision.ok) { reply.body = decision.body; return this.deliver(reply, null); }
    const { events } = decision;
    let durable: Promise<void> | null = null;
    if (events.length) {
      // prefetch/commit split: blobs are taken out of the events, the state is
      // changed by the pure apply, then journal + blobs go to the store together
      const puts: Array<[string, string]> = [];
      const removes: string[] = [];
      const files: Array<[string, string]> = [];
      for (const ev of events) takeBlobs(ev, puts, removes, files);
      let removed: Removed | null = null;
      for (const ev of events) removed = this.state.apply(ev) ?? removed;
      for (const [sha1, text] of files) {
        const key = blobKey.file(sha1);
        if (this.store.getBlob(key) === undefined) puts.push([key, text]);
      }
      for (const sha1 of this.state.releasedFiles) if (!this.state.fileRefs.has(sha1)) removes.push(blobKey.file(sha1));
      this.state.releasedFiles = [];
      const dropped: number[] = [];
      if (removed) {
        for (const id of removed[TYPE_CODE.result]!) removes.push(blobKey.content(id));
        for (const id of removed[TYPE_CODE.host]!) removes.push(blobKey.facts(id));
        for (const id of removed[TYPE_CODE.record]!) removes.push(blobKey.value(id));
        for (const id of removed[TYPE_CODE.playbook]!) { removes.push(blobKey.arguments(id)); dropped.push(id); }
        reply.deleted = removed;
      }
      durable = this.store.write(events, puts, removes, dropped);
      if (this.store.journalLength >= this.snapshotEvery) this.snapshotSoon();
    }
    if (cmd.op === 'delete') return this.deliver(reply, durable);
    if (cmd.op === 'create') reply.created = [TYPE_CODE[decision.type], decision.id];
    if (cmd.minimal) reply.body = '{"id":' + decision.id + '}';
    else {
      const row = this.state.index(decision.type).get(decision.id);
      const agg = decision.type === 'playbook' ? row : this.state.aggregates.get(row.playbook)!;
      reply.body = this.serializer.any(decision.type, agg, row, 'write');
    }
    return this.deliver(reply, durable);
  }

  snapshotSoon(): void {
    if (!this.store.snapshot) return;
    this.store.snapshot(this.state).catch((err) => {
      console.error(JSON.stringify({ level: 'error', msg: 'snapshot failed', err: String((err as Error)?.stack ?? err) }));
    });
  }

  /** Send now if nothing is waiting for a commit; otherwise queue behind it. */
  private deliver(reply: ShardToFront, durable: Promise<void> | null): ShardToFront | null {
    if (durable === null) {
      if (this.waitingHead === this.waiting.length) return reply;
      this.waiting[this.waiting.length - 1]!.replies.push(reply);
      return null;
    }
    const entry: Waiting = { durable: false, replies: [reply] };
    this.waiting.push(entry);
    durable.then(() => { entry.durable = true; this.drain(); }, (err) => this.failed(err));
    return null;
  }

  private drain(): void {
    const q = this.waiting;
    while (this.waitingHead < q.length && q[this.waitingHead]!.durable) {
      const entry = q[this.waitingHead]!;
      q[this.waitingHead++] = undefined as unknown as Waiting;
      for (const reply of entry.replies) this.onReply(reply);
    }
    if (this.waitingHead === q.length) { this.waiting = []; this.waitingHead = 0; }
    else if (this.waitingHead > 1024 && this.waitingHead * 2 > q.length) { this.waiting = q.slice(this.waitingHead); this.waitingHead = 0; }
  }

  /** A commit failed: nothing waiting may be acknowledged; the state must be rebuilt from disk. */
  private failed(err: unknown): void {
    const body = Errors.unavailable('The write could not be stored; nothing was changed. Retry later.');
    const entries = this.waiting.slice(this.waitingHead);
    this.waiting = []; this.waitingHead = 0;
    for (const entry of entries) {
      for (const r of entry.replies) {
        this.onReply({ ...r, status: 503, body, created: null, deleted: null } as ShardToFront);
      }
    }
    this.onStorageFailure(err);
  }
}

/** Move an event's large JSON values out into blob puts/removes (the journal keeps the rest). */
function takeBlobs(ev: Event, puts: Array<[string, string]>, removes: string[], files: Array<[string, string]>): void {
  if (ev.e === 'delete') return;
  const spec = BLOB_FIELDS[ev.t];
  if (spec && spec.field in ev.d) {
    const text = ev.d[spec.field] as string;
    delete ev.d[spec.field];
    const key = spec.key(ev.e === 'create' ? ev.d.id : ev.id);
    if (text !== BLOB_DEFAULT[spec.field]) puts.push([key, text]);
    else if (ev.e === 'update') removes.push(key);
  }
  if (ev.t === 'file' && 'content' in ev.d) {
    files.push([ev.d.sha1, ev.d.content]);
    delete ev.d.content;
  }
}
