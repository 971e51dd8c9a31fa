// The label catalogue of a cluster (docs/cluster.md: "Labels: one small cluster-wide
// catalogue"): one JetStream stream, `logbook-labels`, that every node tails
// into its front's catalogue. Labels are unique by name cluster-wide, so every
// label change is appended with Nats-Expected-Last-Sequence (the per-stream
// header, which fences safely on 2.9.10): appends are serialized across the
// cluster, and a node whose view is behind fails its append (503, retry) rather
// than create a second label of the same name. A new label's id is the stream
// sequence its create lands at, known before the append (the expected sequence
// + 1): ids are small, unique and never reused.
//
// The stream is also the live stream's record of label changes (docs/api.md#live-stream,
// src/http/label_changes.ts): a change's sequence is its number, and each
// partition logs every change in sequence order, reading what it has not logged
// from here (readLabelChanges), so a change a partition could not log when it
// was made is logged later, by whichever node owns the partition then.
import { headers, type NatsConnection } from '@nats-io/transport-node';
import {
  DeliverPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, type JetStreamClient, type JetStreamManager, type StoredMsg,
} from '@nats-io/jetstream';
import { Packr } from 'msgpackr';
import { errText, log } from '../log.js';
import type { LabelStore, StoredLabel } from '../store/label_store.js';
import { HDR_KIND, retrying, type PartitionLog } from './partition_log.js';
import { OP_CREATE, OP_DELETE, OP_UPDATE } from '../shard/changes.js';

export const LABEL_STREAM = 'logbook-labels';
/** how often the tail checks that it is not stuck behind the stream (ms) */
const TAIL_CHECK_MS = 5000;
export const LABEL_SUBJECT = 'logbook.labels';
const packr = new Packr({ useRecords: false, moreTypes: false });

/** `change` (OP_CREATE, OP_UPDATE): absent in messages written before it was kept (read: a create lands at its id) */
type LabelMessage = { op: 'put'; id: number; label: StoredLabel; change?: number } | { op: 'remove'; id: number };

/** One label change as the stream has it, with its sequence: the live stream's record of it. */
export interface LabelStreamChange { seq: number; op: number; id: number; label: StoredLabel | null }

export class ClusterLabels implements LabelStore {
  private readonly labels = new Map<number, StoredLabel>();
  private maxId = 0;
  /** the stream sequence applied last */
  private applied = 0;
  /** the sequence the last append this node issued will land at */
  private reserved = 0;
  /** ids reserved for creates whose append has not been issued yet */
  private readonly fresh = new Set<number>();
  /** appends go out one after another: each expects the one before it */
  private chain: Promise<unknown> = Promise.resolve();
  private pending = 0;
  private broken = false;
  private readonly js: JetStreamClient;
  private readonly abort = new AbortController();
  /** a change reached this node through the stream (another node's, or our own coming back) */
  onChange: ((id: number, label: StoredLabel | null) => void) | null = null;

  private constructor(private readonly nc: NatsConnection, private readonly plog: PartitionLog) {
    this.js = jetstream(nc);
  }

  /** Open the stream (creating it on a new cluster) and read the whole catalogue; then follow it. */
  static async open(nc: NatsConnection, plog: PartitionLog): Promise<ClusterLabels> {
    const labels = new ClusterLabels(nc, plog);
    const deadline = Date.now() + 30_000;
    let last = await plog.ensureStream(LABEL_STREAM, [LABEL_SUBJECT], deadline);
    if (last === 0) {
      // fenced appends expect a sequence >= 1 (see partition_log.ts): start with an init record
      const h = headers();
      h.set(HDR_KIND, 'init');
      last = (await retrying(deadline, () => labels.js.publish(LABEL_SUBJECT, new Uint8Array(0), { headers: h }))).seq;
    }
    await labels.follow(last);
    labels.reserved = labels.applied;
    return labels;
  }

  /**
   * Tail the stream; resolves once everything up to `upTo` is applied. The
   * tail reads on for as long as the node runs: a consumer that ends (its
   * server went away) or stops delivering while the stream has more (checked
   * every TAIL_CHECK_MS) is replaced by one that starts after the last
   * message applied. Without that a node would stop learning label changes
   * after a NATS server failure, and its catalogue and replicas would miss them.
   */
  private async follow(upTo: number): Promise<void> {
    const open = () => retrying(Date.now() + 30_000, async () => {
      const consumer = await this.js.consumers.get(LABEL_STREAM, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.applied + 1 });
      return consumer.consume({ max_messages: 256, expires: 5000 }); // see partition_log.ts replay()
    });
    let messages = await open();
    /** a new consumer is being set up: not stalled */
    let reopening = false;
    let caughtUp: () => void;
    const done = new Promise<void>((r) => { caughtUp = r; });
    if (upTo <= 0) caughtUp!();
    this.abort.signal.addEventListener('abort', () => { void messages.close(); }, { once: true });
    // a consumer that delivers nothing while the stream has more: closed, so the loop below replaces it
    let checked = this.applied;
    const watchdog = setInterval(() => {
      const seen = this.applied;
      if (seen !== checked || reopening) { checked = seen; return; }
      this.plog.jsm.streams.info(LABEL_STREAM).then((info) => {
        if (info.state.last_seq > this.applied && this.applied === seen && !this.abort.signal.aborted) {
          log.warn('label stream: the tail stalled; reading on from where it stopped', { applied: this.applied, last: info.state.last_seq });
          void messages.close();
        }
      }, () => { /* not reachable now: checked again at the next tick */ });
    }, TAIL_CHECK_MS);
    watchdog.unref();
    this.abort.signal.addEventListener('abort', () => clearInterval(watchdog), { once: true });
    void (async () => {
      while (!this.abort.signal.aborted) {
        try {
          for await (const m of messages) {
            if (m.seq > this.applied) {
              this.applied = m.seq;
              if (m.headers?.get(HDR_KIND) !== 'init' && m.data.length) {
                try { this.apply(packr.unpack(m.data) as LabelMessage); } catch (err) { log.error('label stream: unreadable message', { seq: m.seq, err: errText(err) }); }
              }
            }
            if (m.seq >= upTo) caughtUp!();
          }
          if (!this.abort.signal.aborted) log.warn('label stream: the tail ended; reading on from where it stopped', { applied: this.applied });
        } catch (err) {
          if (!this.abort.signal.aborted) log.warn('label stream: the tail failed; reading on from where it stopped', { applied: this.applied, err: errText(err) });
        }
        if (this.abort.signal.aborted) break;
        reopening = true;
        await new Promise((r) => setTimeout(r, 250));
        try { messages = await open(); } catch (err) { log.warn('label stream: the tail cannot read the stream yet', { err: errText(err) }); }
        reopening = false;
      }
    })().catch((err) => log.error('label stream: tail stopped', { err: errText(err) }));
    await done;
  }

  private apply(msg: LabelMessage): void {
    if (msg.id > this.maxId) this.maxId = msg.id;
    if (msg.op === 'put') this.labels.set(msg.id, msg.label);
    else this.labels.delete(msg.id);
    this.onChange?.(msg.id, msg.op === 'put' ? msg.label : null);
  }

  /** A new label's id: the sequence its create will land at. */
  allocateId(): number {
    const id = this.next();
    this.fresh.add(id);
    return id;
  }

  /** Resolves with the sequence the change landed at. */
  putLabel(id: number, label: StoredLabel, op?: number): Promise<number> {
    const seq = this.fresh.delete(id) ? id : this.next();
    return this.append(seq, op === undefined ? { op: 'put', id, label } : { op: 'put', id, label, change: op });
  }

  /** Resolves with the sequence the change landed at (undefined: nothing was stored, so nothing is removed). */
  removeLabel(id: number): Promise<number | undefined> {
    // a label whose create never got appended (its write failed): nothing is stored
    this.fresh.delete(id);
    if (!this.labels.has(id)) return Promise.resolve(undefined);
    return this.append(this.next(), { op: 'remove', id });
  }

  /** The stream's sequence this node has read up to. */
  get position(): number { return this.applied; }

  /** The sequence the next append will land at; starts from what the tail has seen when nothing is in flight. */
  private next(): number {
    if (this.pending === 0 && this.fresh.size === 0 && this.applied > this.reserved) this.reserved = this.applied;
    return ++this.reserved;
  }

  isStored(id: number): boolean { return this.labels.has(id); }

  storedLabel(id: number): StoredLabel | null { return this.labels.get(id) ?? null; }

  labelMaxId(): number { return this.maxId; }
  *allLabels(): Iterable<[number, StoredLabel]> { yield* this.labels; }

  private append(seq: number, msg: LabelMessage): Promise<number> {
    this.pending++;
    const run = async (): Promise<number> => {
      if (this.broken) throw new Error('another node changed the labels at the same time');
      const h = headers();
      h.set('Nats-Expected-Last-Sequence', String(seq - 1));
      try {
        const ack = await this.js.publish(LABEL_SUBJECT, packr.pack(msg), { headers: h, timeout: 5000 });
        if (ack.seq !== seq) throw new Error(`label change landed at ${ack.seq}, expected ${seq}`);
        return seq;
      } catch (err) {
        this.broken = true;
        throw err;
      }
    };
    const p = this.chain.then(run, run);
    this.chain = p.finally(async () => {
      if (--this.pending === 0 && this.broken) await this.resync();
    }).catch(() => {});
    return p;
  }

  /** After a failed append: wait for the tail to reach the stream's end, and reserve from there. */
  private async resync(): Promise<void> {
    try {
      const last = (await this.plog.jsm.streams.info(LABEL_STREAM)).state.last_seq;
      for (let i = 0; i < 100 && this.applied < last; i++) await new Promise((r) => setTimeout(r, 20));
      if (this.pending === 0) {
        this.reserved = Math.max(this.applied, last);
        this.fresh.clear();
        this.broken = false;
      }
    } catch (err) {
      log.warn('label stream: resync failed; the next change retries it', { err: errText(err) });
      this.pending === 0 && setTimeout(() => void this.resync(), 500);
    }
  }

  close(): void { this.abort.abort(); }
}

/**
 * The label changes at sequences from..to of the label stream, in order (init
 * records skipped): what a partition has not logged yet (partition_worker.ts).
 * Read message by message (the range is the few changes since the partition's
 * last one, as a rule): no consumer to set up, nothing left behind on the
 * servers. Rejects when a message cannot be read now.
 */
export async function readLabelChanges(jsm: JetStreamManager, from: number, to: number): Promise<LabelStreamChange[]> {
  const out: LabelStreamChange[] = [];
  for (let seq = Math.max(1, from); seq <= to; seq++) {
    let m: StoredMsg | null;
    try {
      m = await jsm.streams.getMessage(LABEL_STREAM, { seq });
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) continue;
      throw err;
    }
    if (m === null || m.header?.get(HDR_KIND) === 'init' || !m.data.length) continue;
    const msg = packr.unpack(m.data) as LabelMessage;
    if (msg.op === 'put') {
      // before `change` was kept: a create is the put that lands at its label's id (allocateId)
      const op = msg.change ?? (msg.id === seq ? OP_CREATE : OP_UPDATE);
      out.push({ seq, op, id: msg.id, label: msg.label });
    } else out.push({ seq, op: OP_DELETE, id: msg.id, label: null });
  }
  return out;
}

/** The label stream's last sequence. */
export async function labelStreamEnd(plog: PartitionLog): Promise<number> {
  return (await plog.jsm.streams.info(LABEL_STREAM)).state.last_seq;
}
