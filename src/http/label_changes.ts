// The live stream's label messages (docs/api.md#live-stream). The label catalogue is the
// front's (labels.ts, front.mdb), but a stream message needs a place in the
// shards' numbered, journaled change logs: a cursor of its own, and replay by
// `since`, also after a restart. So every durable label change is sent to the
// shards as a commit of theirs (Shard.labelChange): the designated shard logs
// the label's own message, and each shard an update for every playbook of its
// own that carries the label (their list rows show its name).
//
// Two stores, two transactions. A change is numbered and kept in front.mdb (the
// label_changes table) in the same transaction as the label itself, until every
// shard has logged it; after a restart the front sends what is still kept again,
// and a shard logs each number once (it stores the last one it logged with its
// changes). So a stored label change reaches the stream once, also when the
// process dies between the two.
//
// One batch at a time, in the order the changes were made: every change queued
// since the last batch left (at most LIMITS.labelChangesPerCommit) goes as one
// message to the designated shard first (the labels' messages come before the
// playbook updates they cause), then to the others together (none for creates
// alone: a new label is on no playbook yet); each shard logs a batch as one
// commit. So a write that names a thousand new labels costs each shard one
// commit, not a thousand in a row, and a label write of another client waits
// for one batch, not for the thousand (it was ~1,250 labels/s, one journal
// entry each: 50 k new labels held another client's POST /labels for 39 s). A
// request that changed a label is answered once its change is logged, so a
// client that has the answer and then subscribes is not sent it.
//
// The shards' label replicas (the names their playbook rows show; message kind
// `labels`) learn a change here too, never before it is durable: each shard
// right before it logs the change (the two messages are adjacent in its queue,
// and the replica message closes the shard's open group of writes first), so
// the designated shard's replica changes with the label's own message, and
// another shard's only after that message is logged: no playbook row, read or
// streamed, shows a name before the label's message, nor one a crash could
// lose. A create reaches the other shards' replicas after the designated shard
// logged it, before the request is answered. Order: durable → replicas →
// answer. (Cluster mode sends every local partition's replica the change once
// the label stream has it, before the label's message is sent: that stream is
// another store than the partitions' journals.) The shards take
// these messages whatever the clients' load (Shards.send `internal`): a flood
// of writes does not hold the stream's label messages back, and admission's
// refusal counts stay the clients'. A change a
// shard could not log (down, a failed commit) is tried again, before
// any later one, every RETRY_MS and when the shard restarts; the requests that
// made it and the ones behind it are answered meanwhile (their labels are
// stored; the messages follow), each once it is stored and every shard's
// replica was sent it (the messages that come late then show the newest names).
//
// Cluster mode: the label stream (src/cluster/labels.ts) is the store, and a
// change's number is the sequence it landed at there, known once it is stored.
// A partition logs every change of that stream once, in its order, reading
// from the stream the ones it was not sent (src/shard_worker.ts): so a change
// sent again after an answer got lost is not logged twice, and one this node
// could not get logged (a partition moving, its owner gone) is tried again as
// in a single process, and is logged anyway when the partition's owner catches
// up with the stream (src/cluster/label_catch_up.ts), also if this node died.
import { LIMITS } from '../limits.js';
import { log } from '../log.js';
import { OP_CREATE } from '../shard/changes.js';
import type { LabelChangeCommand, Reply } from '../shard/protocol.js';
import type { Shards } from '../shard/shards.js';
import type { LabelChangeStore, StoredLabelChange } from '../store/label_store.js';

/** What the shards' label replicas learn (message kind `labels`). */
export interface ReplicaChange { upsert: Array<[number, string]>; remove: number[] }

/** The shard that logs the labels' own messages. */
export const LABEL_SHARD = 0;
const RETRY_MS = 1000;

interface Entry {
  change: LabelChangeCommand;
  /** resolves once the label's write is durable (null: nothing to wait for); rejects when it failed */
  stored: Promise<unknown> | null;
  /** the requests waiting for it */
  waiters: Array<() => void>;
  /** what the shards' replicas learn from it; null once every shard was sent it (or needs nothing: sent again after a restart) */
  replica: ReplicaChange | null;
}

/**
 * The changes on their way to the shards together, in the order they were
 * made: one message to each shard and one commit of its (Shard.labelChanges).
 * A write that created a thousand labels is one such step, not a thousand, and
 * another request's change waits at most for the step in progress.
 */
interface Batch {
  entries: Entry[];
  /** the designated shard has logged them */
  labelLogged: boolean;
  /** the other shards that have not logged them yet (null: not sent to them yet) */
  others: Set<number> | null;
}

export class LabelChanges {
  private pool: Shards | null = null;
  private readonly queue: Entry[] = [];
  private seq = 0;
  /** the changes on their way to the shards (null: none) */
  private current: Batch | null = null;
  /** the current batch could not be logged everywhere: it is tried again */
  private stuck = false;
  private retry: NodeJS.Timeout | null = null;
  /** shutting down: changes go on as usual (their requests are drained), but none is tried again */
  private closing = false;
  /**
   * Sends the shards' label replicas a change (set by the front): to one shard
   * (queued behind what was sent it before), or to every shard that is up (null).
   */
  replicate: ((change: ReplicaChange, shard: number | null) => void) | null = null;

  /**
   * `numberedByStore` (cluster mode): the label store's write resolves with the
   * change's number (its label stream sequence); none: nothing was stored.
   */
  constructor(private readonly store: LabelChangeStore | null, private readonly numberedByStore = false) {
    // numbers go on from the last one given, whatever happens before start()
    this.seq = store?.labelChangeSeq() ?? 0;
  }

  /**
   * The shards have recovered: changes a previous run kept (it stopped before
   * every shard had logged them) go first, then those made since.
   */
  start(pool: Shards): void {
    this.pool = pool;
    if (this.store !== null) {
      const kept: Entry[] = [];
      for (const [seq, c] of this.store.pendingLabelChanges()) {
        if (seq > this.seq) this.seq = seq;
        // the replicas were given the stored catalogue at start: nothing to replicate
        kept.push(entry({ seq, op: c.op, id: c.id, row: c.row, own: true }, null, null));
      }
      if (kept.length) log.info('live stream: label changes not logged by every shard are sent again', { changes: kept.length });
      this.queue.unshift(...kept);
    }
    this.pump();
  }

  /** Are changes numbered and kept until logged by front.mdb (not in cluster mode: the label stream numbers them)? */
  get numbered(): boolean { return this.store !== null; }

  /**
   * A label change, made in this turn (`stored`: its write to the catalogue's
   * store, issued in this turn too, so it and the change are one transaction;
   * `name`: the label's name after it, null for a delete). Resolves when the
   * request may be answered: its change is logged and every shard's replica
   * has it (or, for now, only the replicas); rejects as `stored` does.
   */
  record(op: number, id: number, row: string | null, stored: Promise<unknown> | null, name: string | null): Promise<unknown> {
    const seq = this.store === null ? 0 : ++this.seq;
    if (this.store !== null) this.store.putLabelChange(seq, { op, id, row });
    const replica: ReplicaChange = name === null ? { upsert: [], remove: [id] } : { upsert: [[id, name]], remove: [] };
    const e = entry({ seq, op, id, row, own: true }, stored, replica);
    const logged = new Promise<void>((resolve) => { e.waiters.push(resolve); });
    // cluster mode: the replicas learn it once the label stream has it (another node's changes reach
    // them from its tail), before its messages are sent to the partitions (this callback comes first)
    if (!this.numbered) {
      if (stored === null) this.replicateAll(e); else stored.then(() => this.replicateAll(e), () => {});
    }
    // behind a change that is being tried again: answered once stored and replicated
    if (this.stuck) this.release(e);
    this.queue.push(e);
    // the changes made in this turn go together: the next turn's pump takes them all
    if (!this.pumpQueued) { this.pumpQueued = true; queueMicrotask(() => { this.pumpQueued = false; this.pump(); }); }
    return stored === null ? logged : stored.then(() => logged);
  }

  private pumpQueued = false;

  /** A restarted shard may log what it could not. */
  shardRestarted(): void {
    if (!this.stuck || this.retry === null || this.current === null) return;
    clearTimeout(this.retry);
    this.retry = null;
    this.send(this.current);
  }

  /** Shutting down: a change that cannot be logged now stays kept in front.mdb for the next start. */
  close(): void {
    this.closing = true;
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
    if (this.stuck) {
      for (const e of this.current?.entries ?? []) this.release(e);
      for (const e of this.queue) this.release(e);
    }
  }

  /**
   * The changes queued (at most LIMITS.labelChangesPerCommit) become the next
   * batch, sent once each of them is durable: a change whose write failed is
   * not logged (nor was its number stored: same transaction), and its request
   * fails with its write.
   */
  private pump(): void {
    if (this.current !== null || this.pool === null || !this.queue.length) return;
    const batch: Batch = { entries: this.queue.splice(0, LIMITS.labelChangesPerCommit), labelLogged: false, others: null };
    this.current = batch;
    const outcomes = batch.entries.map((e) => (e.stored ?? Promise.resolve()).then((stored: unknown): Outcome => {
      if (!this.numberedByStore) return 'log';
      // nothing stored (a label whose create was never stored is removed): nothing to log
      if (typeof stored !== 'number' || stored <= 0) return 'answer';
      e.change.seq = stored;
      return 'log';
    }, (): Outcome => 'drop'));
    Promise.all(outcomes).then((what) => {
      const logged: Entry[] = [];
      batch.entries.forEach((e, i) => {
        if (what[i] === 'log') logged.push(e);
        else if (what[i] === 'answer') this.answer(e);
      });
      batch.entries = logged;
      if (logged.length) this.send(batch); else this.next();
    });
  }

  private send(batch: Batch): void {
    const pool = this.pool!;
    if (!batch.labelLogged) {
      this.replicateTo(batch, LABEL_SHARD); // right before the labels' own messages: the two are adjacent in its queue
      const changes = batch.entries.map((e) => e.change);
      pool.send(LABEL_SHARD, { k: 'label', rid: 0, changes }, (r: Reply) => {
        if (!ok(r)) { this.failed(batch, LABEL_SHARD, r); return; }
        batch.labelLogged = true;
        this.send(batch);
      }, null, true);
      return;
    }
    if (batch.others === null) {
      batch.others = new Set();
      for (let shard = 0; shard < pool.size; shard++) if (shard !== LABEL_SHARD) batch.others.add(shard);
    }
    // a new label is on no playbook yet: the other shards only learn its name
    const changes: LabelChangeCommand[] = [];
    for (const e of batch.entries) if (e.change.op !== OP_CREATE) changes.push({ ...e.change, own: false });
    if (!changes.length) { for (const shard of batch.others) this.replicateTo(batch, shard); batch.others.clear(); }
    if (batch.others.size === 0) { this.done(batch); return; }
    let waiting = batch.others.size;
    let failure: [number, Reply] | null = null;
    for (const shard of [...batch.others]) {
      this.replicateTo(batch, shard); // each shard's replica changes with its playbook updates, after the labels' messages
      pool.send(shard, { k: 'label', rid: 0, changes }, (r: Reply) => {
        if (ok(r)) batch.others!.delete(shard); else failure ??= [shard, r];
        if (--waiting > 0) return;
        if (failure === null) this.done(batch); else this.failed(batch, failure[0], failure[1]);
      }, null, true);
    }
  }

  /** Every shard has logged the batch. */
  private done(batch: Batch): void {
    for (const e of batch.entries) {
      e.replica = null; // every shard was sent it
      if (e.change.seq > 0) this.store?.removeLabelChange(e.change.seq);
    }
    if (this.stuck) log.info('live stream: label changes were logged after all', { changes: batch.entries.length, first: batch.entries[0]?.change.seq });
    this.stuck = false;
    for (const e of batch.entries) this.answer(e);
    this.next();
  }

  private next(): void {
    this.current = null;
    this.pump();
  }

  /**
   * A shard could not log the batch. Numbered changes are tried again (the
   * shards log a number once); ones that are not (no store: the shard may have
   * logged them and its answer got lost) are given up.
   */
  private failed(batch: Batch, shard: number, r: Reply): void {
    const why = 'body' in r && typeof r.body === 'string' ? r.body : String(r.status);
    const first = batch.entries[0]!.change;
    if (first.seq === 0) {
      log.warn('live stream: label changes could not be logged; they are not streamed', { label: first.id, changes: batch.entries.length, shard, why });
      for (const e of batch.entries) this.release(e);
      this.next();
      return;
    }
    if (!this.stuck) log.warn('live stream: label changes could not be logged yet; trying again', { label: first.id, change: first.seq, changes: batch.entries.length, shard, why });
    this.stuck = true;
    // their requests and those behind them need not wait: their labels are stored (the replicas learn them first)
    for (const e of batch.entries) this.release(e);
    for (const q of this.queue) this.release(q);
    // kept in front.mdb: the next start sends them (cluster mode: the partition's owner catches up with the label stream)
    if (this.closing) return;
    this.retry = setTimeout(() => { this.retry = null; this.send(batch); }, RETRY_MS);
    this.retry.unref();
  }

  private answer(e: Entry): void {
    const waiters = e.waiters;
    e.waiters = [];
    for (const w of waiters) w();
  }

  /**
   * A change's requests are answered before it is logged everywhere: once it is
   * stored, every shard's replica learns it (those that log it later are not
   * sent it again: a replica never goes back to an older name), then they are.
   */
  private release(e: Entry): void {
    const go = (): void => { this.replicateAll(e); this.answer(e); };
    if (e.stored === null) go(); else e.stored.then(go, () => {}); // not stored: its request fails with it
  }

  /**
   * One shard's replica learns the batch's changes, as one message (again, when
   * a failed attempt is tried again: the same names). Folded in the order they
   * were made: a label renamed twice has the second name, one created and
   * deleted is removed.
   */
  private replicateTo(batch: Batch, shard: number): void {
    if (this.replicate === null) return;
    const names = new Map<number, string | null>();
    for (const e of batch.entries) {
      if (e.replica === null) continue;
      for (const [id, name] of e.replica.upsert) { names.delete(id); names.set(id, name); }
      for (const id of e.replica.remove) { names.delete(id); names.set(id, null); }
    }
    if (!names.size) return;
    const change: ReplicaChange = { upsert: [], remove: [] };
    for (const [id, name] of names) if (name === null) change.remove.push(id); else change.upsert.push([id, name]);
    this.replicate(change, shard);
  }

  /** Every shard's replica learns the change now, and is not sent it again. */
  private replicateAll(e: Entry): void {
    if (e.replica === null) return;
    this.replicate?.(e.replica, null);
    e.replica = null;
  }
}

/** What becomes of a queued change once its write settled: logged, answered without logging (nothing stored), or dropped (its write failed). */
type Outcome = 'log' | 'answer' | 'drop';

function entry(change: LabelChangeCommand, stored: Promise<unknown> | null, replica: ReplicaChange | null): Entry {
  return { change, stored, waiters: [], replica };
}

function ok(r: Reply): boolean {
  return r.k === 'label' && r.status === 200;
}
