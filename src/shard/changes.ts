// The live stream's source in a shard (docs/api.md#live-stream): which records one commit
// changed, as the messages the stream sends, and the shard's numbered log of
// them (persisted with the journal entry, so `since` resumes across restarts).
//
// A commit's changes are, in order of application: one create/update/delete per
// record written (a cascading delete is one delete, for the record named), then
// one update per record whose derived fields (items, host counters) changed
// because of them, or whose row shows a field of another record they changed
// (a task's `path` is its file's; a result's `delegated_to` loses a deleted
// host), at most one per record per commit. (A
// playbook's label names change with the label: Shard.labelChange.) Rows are taken when the
// commit is staged: as JSON text, except a result's, which is its fields
// (ResultListFields; most of a batch's changes) that the front renders once per
// change, and only when a subscriber is sent it. Either way every subscriber
// gets the same text.
import { RESOURCE_TYPES, TYPE_CODE } from '../api/resources.js';
import { LIMITS } from '../limits.js';
import { resultListFields, resultListJson, type ResultListFields, type Serializer } from './serialize.js';
import type { Aggregate, Event, EventType, ShardState } from './state.js';

/** op codes of a change */
export const OP_CREATE = 0;
export const OP_UPDATE = 1;
export const OP_DELETE = 2;
export const OP_NAMES = ['create', 'update', 'delete'] as const;

/**
 * One change: [seq, op, type code, id, playbook id (null for a label), list row | null on delete,
 * stamp of its commit in the order of all shards' commits (src/shard/commit_order.ts; absent in logs written before it)].
 * The list row is its JSON text, or for a result its fields (ResultListFields; logs
 * written before them hold text for results too): rowJson gives the text of either.
 */
export type StreamChange = [number, number, number, number, number | null, ChangeRow, number?];
export type ChangeRow = string | ResultListFields | null;

/** The JSON text of a change's row ('null' on delete). */
export function rowJson(row: ChangeRow): string {
  return row === null ? 'null' : typeof row === 'string' ? row : resultListJson(row);
}

interface Direct { t: EventType; id: number; p: number; op: number }
interface Derived { t: EventType; id: number; p: number; before: string }

/** The records one commit touched, collected around each apply(). */
export class ChangeCollector {
  private readonly direct = new Map<number, Direct>();
  private readonly derived = new Map<number, Derived>();
  /** records whose rows show a field another record's write changed (rare: made when needed) */
  private shown: Map<number, Direct> | null = null;

  /** Before an event is applied: remember the derived values it may change. */
  before(state: ShardState, ev: Event): void {
    if (ev.t === 'playbook') return;
    const agg = state.aggregates.get(ev.p);
    if (agg === undefined) return;
    if (ev.e === 'delete' && ev.t !== 'result') {
      // cascades (rare): every counter-bearing record of the playbook is a candidate
      this.candidate(state, 'playbook', ev.p, ev.p);
      for (const id of agg.plays.keys()) this.candidate(state, 'play', id, ev.p);
      for (const id of agg.tasks.keys()) this.candidate(state, 'task', id, ev.p);
      for (const id of agg.hosts.keys()) this.candidate(state, 'host', id, ev.p);
      // a host's delegations go with it (ShardState.remove): the rows of the
      // results delegated to it show a shorter `delegated_to` (compat mode)
      if (ev.t === 'host') {
        for (const r of agg.results.values()) {
          if (r.host !== ev.id && r.delegatedTo.includes(ev.id)) {
            this.shown ??= new Map();
            this.shown.set(keyOf('result', r.id), { t: 'result', id: r.id, p: ev.p, op: OP_UPDATE });
          }
        }
      }
      return;
    }
    switch (ev.t) {
      case 'result': {
        const row = ev.e === 'create' ? ev.d : state.results.get(ev.id);
        if (row === undefined) return;
        this.candidate(state, 'task', row.task, ev.p);
        this.candidate(state, 'play', row.play, ev.p);
        this.candidate(state, 'host', row.host, ev.p);
        if (ev.e === 'update') {
          for (const fk of ['task', 'play', 'host'] as const) {
            if (typeof ev.d[fk] === 'number') this.candidate(state, fk, ev.d[fk], ev.p);
          }
        } else this.candidate(state, 'playbook', ev.p, ev.p);
        return;
      }
      case 'task': {
        const row = ev.e === 'create' ? ev.d : state.tasks.get(ev.id);
        if (row === undefined) return;
        this.candidate(state, 'play', row.play, ev.p);
        if (ev.e === 'update' && typeof ev.d.play === 'number') this.candidate(state, 'play', ev.d.play, ev.p);
        if (ev.e === 'create') this.candidate(state, 'playbook', ev.p, ev.p);
        return;
      }
      case 'file': {
        if (ev.e === 'create') { this.candidate(state, 'playbook', ev.p, ev.p); return; }
        if (ev.e !== 'update') return; // a delete went above (its tasks go with it)
        // a new path is on the list rows of the file's tasks
        const file = state.files.get(ev.id);
        if (file === undefined || typeof ev.d.path !== 'string' || ev.d.path === file.path) return;
        this.shown ??= new Map();
        for (const task of agg.tasks.values()) {
          if (task.file === ev.id) this.shown.set(keyOf('task', task.id), { t: 'task', id: task.id, p: ev.p, op: OP_UPDATE });
        }
        return;
      }
      default:
        if (ev.e === 'create') this.candidate(state, 'playbook', ev.p, ev.p);
    }
  }

  /** After an event is applied: the record it names changed. */
  after(ev: Event): void {
    const id = ev.e === 'create' ? ev.d.id as number : ev.id;
    const key = keyOf(ev.t, id);
    const seen = this.direct.get(key);
    if (ev.e === 'create') { this.direct.set(key, { t: ev.t, id, p: ev.p, op: OP_CREATE }); return; }
    if (ev.e === 'update') { if (seen === undefined) this.direct.set(key, { t: ev.t, id, p: ev.p, op: OP_UPDATE }); return; }
    // a delete: it is the record's last change in this commit, so it moves to the end
    this.direct.delete(key);
    if (seen?.op !== OP_CREATE) this.direct.set(key, { t: ev.t, id, p: ev.p, op: OP_DELETE });
  }

  get empty(): boolean { return this.direct.size === 0; }

  /** The commit's changes, numbered from `seq + 1`, rows serialized from the state after the commit. */
  finish(state: ShardState, serializer: Serializer, seq: number): StreamChange[] {
    const out: StreamChange[] = [];
    const moved = new Set<number>();
    for (const [key, d] of this.derived) {
      if (exists(state, d.t, d.id) && fingerprint(state, d.t, d.id) !== d.before) moved.add(key);
    }
    if (this.shown !== null) for (const [key, d] of this.shown) if (exists(state, d.t, d.id)) moved.add(key);
    for (const [key, c] of this.direct) {
      if (c.op === OP_DELETE) { out.push([++seq, OP_DELETE, TYPE_CODE[c.t], c.id, c.p, null]); continue; }
      if (c.op === OP_UPDATE && moved.has(key)) continue; // sent once, after what changed its derived fields
      const row = listRow(state, serializer, c.t, c.id);
      if (row !== null) out.push([++seq, c.op, TYPE_CODE[c.t], c.id, c.p, row]);
    }
    for (const key of moved) {
      if (this.direct.get(key)?.op === OP_CREATE) continue; // its create already carries the final row
      const d = this.derived.get(key) ?? this.shown!.get(key)!;
      const row = listRow(state, serializer, d.t, d.id);
      if (row !== null) out.push([++seq, OP_UPDATE, TYPE_CODE[d.t], d.id, d.p, row]);
    }
    return out;
  }

  private candidate(state: ShardState, t: EventType, id: number, p: number): void {
    const key = keyOf(t, id);
    if (this.derived.has(key) || !exists(state, t, id)) return;
    this.derived.set(key, { t, id, p, before: fingerprint(state, t, id) });
  }
}

/** A record's key in a commit's maps: a number, not a string (~5 per result of a batch: no string to build and hash). */
const keyOf = (t: EventType, id: number): number => id * 8 + TYPE_CODE[t];

function exists(state: ShardState, t: EventType, id: number): boolean {
  return state.index(t).has(id);
}

/** The derived fields of a record, as one comparable string. */
function fingerprint(state: ShardState, t: EventType, id: number): string {
  switch (t) {
    case 'playbook': {
      const a = state.aggregates.get(id)!;
      return a.plays.size + ',' + a.tasks.size + ',' + a.results.size + ',' + a.hosts.size + ',' + a.files.size + ',' + a.records.size;
    }
    case 'play': { const p = state.plays.get(id)!; return p.tasks + ',' + p.results; }
    case 'task': return String(state.tasks.get(id)!.results);
    case 'host': {
      const h = state.hosts.get(id)!;
      return h.changed + ',' + h.failed + ',' + h.ok + ',' + h.skipped + ',' + h.unreachable;
    }
    default: return '';
  }
}

function listRow(state: ShardState, serializer: Serializer, t: EventType, id: number): ChangeRow {
  if (t === 'result') {
    const r = state.results.get(id);
    return r === undefined ? null : resultListFields(r, serializer.compat);
  }
  if (t === 'playbook') {
    const agg = state.aggregates.get(id);
    return agg === undefined ? null : serializer.playbookStreamRow(agg);
  }
  const row = state.index(t).get(id);
  if (row === undefined) return null;
  const agg: Aggregate | undefined = state.aggregates.get(row.playbook);
  return agg === undefined ? null : serializer.any(t, agg, row, 'list');
}

/** Where a shard's change log lives (the LMDB store; absent: memory only). */
export interface ChangeStore {
  /** `packed`: the same changes, msgpack-encoded (what is stored) */
  appendChanges(changes: StreamChange[], packed: Uint8Array): void;
  /** changes with from < seq <= to, at most `limit`, oldest first (committed ones only) */
  readChanges(from: number, to: number, limit: number): StreamChange[];
  /** [lowest, highest] seq kept on disk, null when none */
  changeBounds(): [number, number] | null;
  /** drop changes with seq < `below` */
  trimChanges(below: number): void;
  /**
   * The front's number of the label change a commit logged (LabelChangeCommand),
   * issued right after the commit's write (the same transaction: on disk exactly when its changes are).
   */
  noteLabelChange(seq: number): void;
  /** the highest label change number noted (0: none) */
  labelChangeSeq(): number;
}

export interface ReplayPage {
  changes: StreamChange[];
  /** the position the page reaches (the client's next `from`) */
  last: number;
  more: boolean;
  /** `from` is older than what is kept, or ahead of the log: the client must re-read */
  reset: boolean;
}

/**
 * The shard's numbered changes: the recent ones in memory (replays of live
 * clients come from here), all kept ones in the store. At least `retention`
 * changes stay replayable.
 */
export class ChangeLog {
  /** highest seq handed out */
  seq = 0;
  /** lowest seq still kept (seq + 1 when nothing is) */
  oldest = 1;
  private ring: StreamChange[] = [];
  private ringHead = 0;
  /** highest seq known durable */
  private durable = 0;
  /** the front's number of the last label change logged (LabelChangeCommand; as the store has it) */
  labelSeq = 0;

  constructor(private readonly store: ChangeStore | null, private readonly retention: number) {}

  /** After recovery: continue the numbering where the store left it. */
  recover(): void {
    if (this.store !== null) this.labelSeq = this.store.labelChangeSeq();
    const bounds = this.store?.changeBounds() ?? null;
    this.ring = []; this.ringHead = 0;
    if (bounds === null) { this.oldest = this.seq + 1; this.durable = this.seq; return; }
    this.oldest = bounds[0];
    this.seq = bounds[1];
    this.durable = bounds[1];
  }

  /**
   * Record a commit's changes (already numbered from seq + 1, `packed`: msgpack-encoded);
   * staged in the same turn as its journal entry.
   */
  append(changes: StreamChange[], packed: Uint8Array): void {
    if (!changes.length) return;
    this.seq = changes[changes.length - 1]![0];
    for (const c of changes) this.ring.push(c);
    this.store?.appendChanges(changes, packed);
    this.trim();
  }

  /** The commit being logged (after its store.write, in the same turn) is label change `seq` of the front's. */
  noteLabelChange(seq: number): void {
    this.labelSeq = seq;
    this.store?.noteLabelChange(seq);
  }

  /** Every change up to `seq` is durable. */
  durableUpTo(seq: number): void {
    if (seq > this.durable) this.durable = seq;
    this.trim();
  }

  private trim(): void {
    // memory keeps the last `retention` changes (never one not yet durable: a replay of it would lie)
    const keep = Math.min(this.retention, LIMITS.streamChangesInMemory);
    let dropped = 0;
    while (this.ring.length - this.ringHead > keep && this.ring[this.ringHead]![0] <= this.durable) { this.ringHead++; dropped++; }
    if (this.ringHead > 4096 && this.ringHead * 2 > this.ring.length) { this.ring = this.ring.slice(this.ringHead); this.ringHead = 0; }
    if (this.store === null) { if (dropped) this.oldest = this.ring.length > this.ringHead ? this.ring[this.ringHead]![0] : this.seq + 1; return; }
    // the store keeps `retention` and trims in steps of a tenth of it, so trimming is rare
    const below = this.seq - this.retention + 1;
    if (below - this.oldest >= Math.max(1, Math.floor(this.retention / 10))) {
      this.store.trimChanges(below);
      this.oldest = below;
    }
  }

  /** A commit failed: the changes not yet durable never happened. */
  forgetPending(): void {
    while (this.ring.length > this.ringHead && this.ring[this.ring.length - 1]![0] > this.durable) this.ring.pop();
    this.seq = this.durable;
  }

  /** Changes after `from` (of one playbook, if given), at most `limit`. */
  replay(from: number, playbook: number | null, limit: number): ReplayPage {
    if (from > this.seq || from < this.oldest - 1) return { changes: [], last: this.seq, more: false, reset: true };
    const out: StreamChange[] = [];
    let last = from;
    const ringFirst = this.ring.length > this.ringHead ? this.ring[this.ringHead]![0] : this.seq + 1;
    // older than memory: from the store (committed, so durable once this reply leaves behind the commits)
    while (last < ringFirst - 1 && out.length < limit && this.store !== null) {
      const page = this.store.readChanges(last, ringFirst - 1, Math.min(1000, limit * 4));
      if (!page.length) { last = ringFirst - 1; break; }
      for (const c of page) { if (playbook === null || c[4] === playbook) out.push(c); last = c[0]; if (out.length >= limit) break; }
    }
    if (out.length < limit && last >= ringFirst - 1) {
      let i = this.ringHead + Math.max(0, last - ringFirst + 1);
      for (; i < this.ring.length && out.length < limit; i++) {
        const c = this.ring[i]!;
        if (c[0] <= last) continue;
        if (playbook === null || c[4] === playbook) out.push(c);
        last = c[0];
      }
      if (i >= this.ring.length) last = this.seq;
    }
    return { changes: out, last, more: last < this.seq, reset: false };
  }
}

/** Resource names the stream's `type` filter accepts, singular and plural, → type code. */
export const STREAM_TYPES: ReadonlyMap<string, number> = new Map(
  RESOURCE_TYPES.flatMap((t) => [[t, TYPE_CODE[t]] as [string, number], [t + 's', TYPE_CODE[t]] as [string, number]]),
);
