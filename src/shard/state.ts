// A shard's state: the playbook aggregates it owns plus per-type id indexes, and
// the pure `apply(event)` that is the only code allowed to change them. apply is
// deterministic and free of I/O so that journal replay rebuilds exactly the state
// that was acknowledged (docs/architecture.md#persistence). The one other state
// here is the label replica (the front's catalogue, copied, not journaled): it,
// and the label ids a deleted label leaves on playbooks, change only through
// the two methods at the end (labelsChanged, labelChangeLogged).
import { TYPE_CODE, type ChildType } from '../api/resources.js';
import {
  PlaybookRow, PlayRow, TaskRow, HostRow, ResultRow, FileRow, RecordRow, addToHost, setsCounter, shownStatus,
} from './rows.js';
import { ResultIndex } from './result_index.js';
import { ResultGroups, firstAfter } from './result_groups.js';
import { ListOrders } from './list_orders.js';
import { LatestHosts } from './latest_hosts.js';
import { RunTally } from './run_tally.js';

export type EventType = 'playbook' | ChildType;

/** Events are what the journal stores. Field names are the wire names; `p` is
 * the playbook the event belongs to (recovery skips what a snapshot covers). */
export type Event =
  | { e: 'create'; t: EventType; p: number; d: Record<string, any> }
  | { e: 'update'; t: EventType; p: number; id: number; d: Record<string, any> }
  | { e: 'delete'; t: EventType; p: number; id: number };

/**
 * The results of one playbook, in creation (= id) order. A plain array costs
 * 4 bytes a result where a second Map would cost ~30; lookups by id go through
 * the shard's index, and removals (rare, and batched by cascades) filter.
 *
 * It also knows the lowest position changed since the last snapshot copy
 * (`takeChangedFrom`): results are append-mostly, so a snapshot round stores
 * again only the parts from there on and keeps the ones before it.
 */
export class ResultList {
  private rows: ResultRow[] = [];
  /** lowest position added, changed or shifted since takeChangedFrom / markClean */
  private changedFrom = 0;
  get size(): number { return this.rows.length; }
  values(): IterableIterator<ResultRow> { return this.rows.values(); }
  /** The rows in id order, to read only (a list's page is cut out of them: src/shard/list.ts). */
  inIdOrder(): readonly ResultRow[] { return this.rows; }
  *keys(): IterableIterator<number> { for (const r of this.rows) yield r.id; }
  add(row: ResultRow): void {
    const n = this.rows.length;
    // ids arrive in increasing order except during recovery of out-of-order snapshots
    if (n === 0 || this.rows[n - 1]!.id < row.id) {
      this.rows.push(row);
      if (n < this.changedFrom) this.changedFrom = n;
    } else {
      this.rows.push(row);
      this.rows.sort((a, b) => a.id - b.id);
      this.changedFrom = 0;
    }
  }
  remove(ids: Set<number>): void {
    const kept: ResultRow[] = [];
    for (const r of this.rows) {
      if (!ids.has(r.id)) kept.push(r);
      else if (kept.length < this.changedFrom) this.changedFrom = kept.length; // rows from here on moved
    }
    this.rows = kept;
  }
  /** A row of this list was updated in place. */
  touched(id: number): void {
    const at = this.indexOf(id);
    if (at >= 0 && at < this.changedFrom) this.changedFrom = at;
  }
  /** The rows from position `from` on, as stored (ResultRow.toArray). */
  arraysFrom(from: number): unknown[][] {
    const rows = this.rows;
    const out: unknown[][] = new Array(Math.max(0, rows.length - from));
    for (let i = from; i < rows.length; i++) out[i - from] = rows[i]!.toArray();
    return out;
  }
  /** The lowest position changed since the last call (size: none); from now on, nothing is. */
  takeChangedFrom(): number {
    const from = this.changedFrom;
    this.changedFrom = this.rows.length;
    return from;
  }
  /** The rows are exactly those of the stored snapshot they were loaded from. */
  markClean(): void { this.changedFrom = this.rows.length; }
  private indexOf(id: number): number {
    const at = firstAfter(this.rows, id - 1);
    return this.rows[at]?.id === id ? at : -1;
  }
}

export class Aggregate {
  readonly playbook: PlaybookRow;
  readonly plays = new Map<number, PlayRow>();
  readonly tasks = new Map<number, TaskRow>();
  readonly hosts = new Map<number, HostRow>();
  readonly results = new ResultList();
  readonly files = new Map<number, FileRow>();
  readonly records = new Map<number, RecordRow>();
  readonly hostByName = new Map<string, HostRow>();
  readonly fileByPath = new Map<string, FileRow>();
  readonly recordByKey = new Map<string, RecordRow>();
  /** natural keys of batch ingest (docs/api.md#batch-ingest): play uuid, task uuid (tasks without one are not here) */
  readonly playByUuid = new Map<string, PlayRow>();
  readonly taskByUuid = new Map<string, TaskRow>();
  /** the results of each task and of each host, once a list asked (see groups()) */
  private grouped: ResultsGrouped | null = null;
  /** hosts with unreachable > 0 (logbook_hosts_unreachable: run_tally.ts) */
  unreachableHosts = 0;
  /** results by shown status (GET /api/v1/playbooks/<id>/totals), kept as results come, change and go */
  readonly totals = { ok: 0, changed: 0, failed: 0, skipped: 0, unreachable: 0, ignored: 0, unknown: 0 };
  /** results with changed: true, whatever their status (a failed task may have changed something first) */
  changedResults = 0;
  constructor(playbook: PlaybookRow) { this.playbook = playbook; }

  /** Count a result in (+1) or out (−1) of the run's totals. */
  countResult(r: ResultRow, sign: 1 | -1): void {
    const status = shownStatus(r) as keyof Aggregate['totals'];
    if (status in this.totals) this.totals[status] += sign; else this.totals.unknown += sign;
    if (r.changed) this.changedResults += sign;
  }

  /** The playbook's id: an aggregate is the row of a playbook list. */
  get id(): number { return this.playbook.id; }

  /**
   * The results of each task and of each host, in id order (for lists
   * filtered by one: src/shard/list.ts). Built at the first list that asks,
   * then kept up to date. Kept for every result from its arrival, they cost
   * batch ingest ~9 % of a shard's CPU (batch_cpu, 6 interleaved pairs: 9.3
   * → 10.2 µs a result), for groups most playbooks are never listed by.
   */
  groups(): ResultsGrouped {
    if (this.grouped === null) {
      const byTask = new ResultGroups(taskOf), byHost = new ResultGroups(hostOf);
      for (const r of this.results.values()) { byTask.add(r); byHost.add(r); }
      this.grouped = { byTask, byHost };
    }
    return this.grouped;
  }

  /** The groups if a list has built them; null: there is nothing to keep up to date. */
  get groupsIfBuilt(): ResultsGrouped | null { return this.grouped; }

  /** A result joins the playbook's list, and its task's and host's groups once they exist. */
  addResult(row: ResultRow): void {
    this.results.add(row);
    const g = this.grouped;
    if (g !== null) { g.byTask.add(row); g.byHost.add(row); }
  }
}

export interface ResultsGrouped { readonly byTask: ResultGroups; readonly byHost: ResultGroups }

const taskOf = (r: ResultRow): number => r.task;
const hostOf = (r: ResultRow): number => r.host;

/** A shard-wide index of one type's rows by id (ShardState.index): a Map, or for results a ResultIndex. */
export type RowIndex = Map<number, any> | ResultIndex<any>;

/** Wire field name → row property, where they differ. */
const PROP: Record<string, string> = {
  runner_version: 'runnerVersion', ignore_errors: 'ignoreErrors', delegated_to: 'delegatedTo',
  ingest_seq: 'ingestSeq', ingest_digest: 'ingestDigest', client_version: 'clientVersion', python_version: 'pythonVersion',
};

/** Ids removed by one event, per type code (for the front's directory). */
export type Removed = number[][];
const newRemoved = (): Removed => [[], [], [], [], [], [], [], []];

export class ShardState {
  readonly aggregates = new Map<number, Aggregate>();
  /**
   * The aggregates in id order, for playbook lists (src/shard/list.ts), which
   * cut a page in that order out of it: a new playbook is appended, a deleted
   * one spliced out; ids below the last (recovery) are sorted at the next read.
   */
  private playbookOrder: Aggregate[] = [];
  private playbookOrderStale = false;
  readonly plays = new Map<number, PlayRow>();
  readonly tasks = new Map<number, TaskRow>();
  readonly hosts = new Map<number, HostRow>();
  /** every result by id (not a Map: see result_index.ts) */
  readonly results = new ResultIndex<ResultRow>();
  readonly files = new Map<number, FileRow>();
  readonly records = new Map<number, RecordRow>();
  /** replica of the label catalogue the front owns: id → name */
  readonly labels = new Map<number, string>();
  /** highest id ever created per type code: ids are never reused, even after deletes */
  readonly maxIds: number[] = [0, 0, 0, 0, 0, 0, 0, 0];
  /** files per content hash: the file blob goes when the last file using it goes */
  readonly fileRefs = new Map<string, number>();
  /** hashes whose last file went during apply; the shard drains this to delete blobs */
  releasedFiles: string[] = [];
  /** playbooks changed since their last snapshot */
  readonly dirty = new Set<number>();
  /** playbook uuid → id (batch-ingest streams; cluster mode routes a stream by its uuid, not by a front-side map) */
  private readonly uuids = new Map<string, number>();
  /** rows kept in the order of a sort key, for the lists that asked for one (see list_orders.ts) */
  readonly orders = new ListOrders();
  /** the newest host row of each name (ARA's latesthosts) */
  readonly latestHosts = new LatestHosts();
  /** playbooks per status, the running ones (for /metrics: run_tally.ts) */
  readonly runs = new RunTally();

  /** The playbook a batch-ingest stream (playbook uuid) created, if it still exists with that uuid. */
  playbookByUuid(uuid: string): number | null {
    const id = this.uuids.get(uuid);
    if (id === undefined) return null;
    if (this.aggregates.get(id)?.playbook.uuid === uuid) return id;
    this.uuids.delete(uuid);
    return null;
  }

  index(t: EventType): RowIndex {
    switch (t) {
      case 'playbook': return this.aggregates;
      case 'play': return this.plays;
      case 'task': return this.tasks;
      case 'host': return this.hosts;
      case 'result': return this.results;
      case 'file': return this.files;
      case 'record': return this.records;
    }
  }

  /** The aggregate that owns a child row (rows always name their playbook). */
  aggregateOf(row: { playbook: number }): Aggregate {
    return this.aggregates.get(row.playbook)!;
  }

  apply(ev: Event): Removed | null {
    this.dirty.add(ev.p);
    switch (ev.e) {
      case 'create': this.create(ev.t, ev.d); return null;
      case 'update': this.update(ev.t, ev.id, ev.d); return null;
      case 'delete': return this.remove(ev.t, ev.id);
    }
  }

  private create(t: EventType, d: Record<string, any>): void {
    const code = TYPE_CODE[t];
    if (d.id > this.maxIds[code]!) this.maxIds[code] = d.id;
    if (t === 'playbook') {
      const agg = new Aggregate(new PlaybookRow(d));
      this.aggregates.set(d.id, agg);
      this.orderPlaybook(agg);
      if (agg.playbook.uuid !== null) this.uuids.set(agg.playbook.uuid, d.id);
      this.orders.added('playbook', agg);
      this.runs.added(agg);
      return;
    }
    const agg = this.aggregates.get(d.playbook)!;
    agg.playbook.summaryCache = null;
    switch (t) {
      case 'play': {
        const row = new PlayRow(d);
        agg.plays.set(row.id, row); this.plays.set(row.id, row); agg.playByUuid.set(row.uuid, row);
        this.orders.added(t, row);
        break;
      }
      case 'task': {
        const row = new TaskRow(d);
        agg.tasks.set(row.id, row); this.tasks.set(row.id, row);
        if (row.uuid !== null) agg.taskByUuid.set(row.uuid, row);
        const play = agg.plays.get(row.play); if (play) play.tasks++;
        this.orders.added(t, row);
        break;
      }
      case 'host': {
        const row = new HostRow(d);
        agg.hosts.set(row.id, row); this.hosts.set(row.id, row); agg.hostByName.set(row.name, row);
        this.latestHosts.added(row);
        if (row.unreachable > 0) agg.unreachableHosts++;
        this.orders.added(t, row);
        break;
      }
      case 'result': {
        const row = new ResultRow(d);
        agg.addResult(row); this.results.set(row.id, row);
        this.linkResult(agg, row, 1);
        this.orders.added(t, row);
        break;
      }
      case 'file': {
        const row = new FileRow(d);
        agg.files.set(row.id, row); this.files.set(row.id, row); agg.fileByPath.set(row.path, row);
        this.refFile(row.sha1, 1);
        this.orders.added(t, row);
        break;
      }
      case 'record': {
        const row = new RecordRow(d);
        agg.records.set(row.id, row); this.records.set(row.id, row); agg.recordByKey.set(row.key, row);
        this.orders.added(t, row);
        break;
      }
    }
  }

  /** Add (+1) or take back (−1) what a result contributes to its play, task and host. */
  private linkResult(agg: Aggregate, r: ResultRow, sign: 1 | -1): void {
    agg.countResult(r, sign);
    const play = agg.plays.get(r.play); if (play) play.results += sign;
    const task = agg.tasks.get(r.task); if (task) task.results += sign;
    const host = agg.hosts.get(r.host);
    if (host) {
      // a host's counters are order keys: its kept orders move it
      const marks = this.orders.before('host', host);
      const was = host.unreachable > 0;
      addToHost(host, r, sign);
      if (host.unreachable > 0 !== was) agg.unreachableHosts += was ? -1 : 1;
      this.orders.changed('host', host, marks);
    }
  }

  private update(t: EventType, id: number, d: Record<string, any>): void {
    if (t === 'playbook') {
      const agg = this.aggregates.get(id)!;
      const row = agg.playbook;
      const marks = this.orders.before(t, agg);
      const status = row.status;
      assign(row, d);
      this.runs.statusChanged(agg, status);
      this.orders.changed(t, agg, marks);
      row.summaryCache = null;
      if (typeof d.uuid === 'string') this.uuids.set(d.uuid, id);
      return;
    }
    const row = this.index(t).get(id)!;
    const agg = this.aggregateOf(row);
    agg.playbook.summaryCache = null;
    const marks = this.orders.before(t, row);
    switch (t) {
      case 'result': {
        const { task, host } = row;
        this.linkResult(agg, row, -1);
        assign(row, d);
        agg.results.touched(id);
        this.linkResult(agg, row, 1);
        const g = agg.groupsIfBuilt;
        if (g !== null && row.task !== task) { g.byTask.delete(row, task); g.byTask.add(row); }
        if (g !== null && row.host !== host) { g.byHost.delete(row, host); g.byHost.add(row); }
        break;
      }
      case 'task':
        if ('play' in d && d.play !== row.play) {
          const from = agg.plays.get(row.play); if (from) from.tasks--;
          const to = agg.plays.get(d.play); if (to) to.tasks++;
        }
        rekey(agg.taskByUuid, row, 'uuid', d);
        assign(row, d);
        break;
      case 'play': rekey(agg.playByUuid, row, 'uuid', d); assign(row, d); break;
      case 'host': {
        const name = row.name;
        const was = row.unreachable > 0;
        rekey(agg.hostByName, row, 'name', d);
        assign(row, d);
        if (row.unreachable > 0 !== was) agg.unreachableHosts += was ? -1 : 1;
        if (row.name !== name) this.latestHosts.renamed(row, name);
        if (!row.countersSet && setsCounter(d)) row.countersSet = true;
        break;
      }
      case 'file':
        rekey(agg.fileByPath, row, 'path', d);
        if ('sha1' in d && d.sha1 !== row.sha1) { this.refFile(row.sha1, -1); this.refFile(d.sha1, 1); }
        assign(row, d);
        break;
      case 'record': rekey(agg.recordByKey, row, 'key', d); assign(row, d); break;
      default: assign(row, d);
    }
    this.orders.changed(t, row, marks);
  }

  private remove(t: EventType, id: number): Removed {
    const removed = newRemoved();
    if (t === 'playbook') {
      const agg = this.aggregates.get(id)!;
      this.orders.removed('playbook', agg);
      this.runs.removed(agg);
      for (const type of ['play', 'task', 'host', 'result', 'file', 'record'] as const) {
        const index = this.index(type);
        if (this.orders.keeps(type)) this.orders.removedMany(type, Array.from((agg as any)[type + 's'].values()));
        const ids = removed[TYPE_CODE[type]]!;
        for (const rowId of (agg as any)[type + 's'].keys()) { index.delete(rowId); ids.push(rowId); }
      }
      for (const file of agg.files.values()) this.refFile(file.sha1, -1);
      for (const host of agg.hosts.values()) this.latestHosts.removed(host);
      this.aggregates.delete(id);
      this.unorderPlaybook(id);
      this.dirty.delete(id);
      removed[TYPE_CODE.playbook]!.push(id);
      return removed;
    }
    const row = this.index(t).get(id)!;
    const agg = this.aggregateOf(row);
    agg.playbook.summaryCache = null;
    // Tasks that go with this row, then results that go with it or with those tasks.
    const tasks = new Set<number>();
    if (t === 'play' || t === 'file') {
      for (const task of agg.tasks.values()) if ((t === 'play' ? task.play : task.file) === id) tasks.add(task.id);
    } else if (t === 'task') tasks.add(id);
    const results = new Set<number>();
    const dropped: ResultRow[] = [];
    const drop = (r: ResultRow): void => { this.dropResult(agg, r, removed); results.add(r.id); dropped.push(r); };
    const g = agg.groupsIfBuilt;
    if ((t === 'task' || t === 'host') && g !== null) {
      // its group is its results, in id order (a copy: the groups change below)
      for (const r of [...(t === 'task' ? g.byTask : g.byHost).of(id)]) drop(r);
    } else if (t === 'play' || t === 'file' || t === 'task' || t === 'host') {
      for (const r of agg.results.values()) {
        if (tasks.has(r.task) || (t === 'play' && r.play === id) || (t === 'host' && r.host === id)) drop(r);
      }
    } else if (t === 'result') drop(row);
    if (results.size) {
      this.orders.removedMany('result', dropped);
      agg.results.remove(results);
      g?.byTask.deleteAll(dropped);
      g?.byHost.deleteAll(dropped);
    }
    for (const taskId of tasks) {
      const task = agg.tasks.get(taskId)!;
      const play = agg.plays.get(task.play); if (play) play.tasks--;
      this.orders.removed('task', task);
      agg.tasks.delete(taskId); this.tasks.delete(taskId); removed[TYPE_CODE.task]!.push(taskId);
      if (task.uuid !== null && agg.taskByUuid.get(task.uuid) === task) agg.taskByUuid.delete(task.uuid);
    }
    if (t !== 'result' && t !== 'task') this.orders.removed(t, row);
    switch (t) {
      case 'play':
        agg.plays.delete(id); this.plays.delete(id);
        if (agg.playByUuid.get(row.uuid) === row) agg.playByUuid.delete(row.uuid);
        break;
      case 'host':
        agg.hosts.delete(id); this.hosts.delete(id); agg.hostByName.delete(row.name);
        this.latestHosts.removed(row);
        if (row.unreachable > 0) agg.unreachableHosts--;
        // a delegation to a host that is gone goes with it (ARA's many-to-many link);
        // the row changed in place, so the next snapshot round stores its part again
        for (const r of agg.results.values()) {
          if (r.delegatedTo.includes(id)) { r.delegatedTo = r.delegatedTo.filter((h) => h !== id); agg.results.touched(r.id); }
        }
        break;
      case 'file':
        agg.files.delete(id); this.files.delete(id); agg.fileByPath.delete(row.path); this.refFile(row.sha1, -1);
        break;
      case 'record': agg.records.delete(id); this.records.delete(id); agg.recordByKey.delete(row.key); break;
      case 'result': return removed;
      case 'task': return removed;
    }
    removed[TYPE_CODE[t]]!.push(id);
    return removed;
  }

  /** Undo a result's contributions and unindex it; the caller removes it from agg.results. */
  private dropResult(agg: Aggregate, r: ResultRow, removed: Removed): void {
    this.linkResult(agg, r, -1);
    this.results.delete(r.id);
    removed[TYPE_CODE.result]!.push(r.id);
  }

  private orderPlaybook(agg: Aggregate): void {
    const order = this.playbookOrder;
    if (order.length > 0 && order[order.length - 1]!.id > agg.id) this.playbookOrderStale = true;
    order.push(agg);
  }

  /** A deleted playbook leaves the order at once: it must not keep its aggregate alive until a list asks. */
  private unorderPlaybook(id: number): void {
    const order = this.playbooksInIdOrder() as Aggregate[];
    const at = firstAfter(order, id - 1);
    if (order[at]?.id === id) order.splice(at, 1);
  }

  /** Every playbook's aggregate in id order (read only, until the next change). */
  playbooksInIdOrder(): readonly Aggregate[] {
    if (this.playbookOrderStale) {
      this.playbookOrder.sort((a, b) => a.id - b.id);
      this.playbookOrderStale = false;
    }
    return this.playbookOrder;
  }

  /** An id that was created (even if its row is gone): raise the type's high-water mark. */
  observeId(t: EventType, id: number): void {
    const code = TYPE_CODE[t];
    if (id > this.maxIds[code]!) this.maxIds[code] = id;
  }

  /** Re-insert every shard-wide index in ascending id order, if it is not already. */
  sortIndexes(): void {
    this.results.settle();
    for (const t of ['playbook', 'play', 'task', 'host', 'file', 'record'] as const) {
      const index = this.index(t) as Map<number, unknown>;
      let prev = 0;
      let sorted = true;
      for (const id of index.keys()) { if (id < prev) { sorted = false; break; } prev = id; }
      if (sorted) continue;
      const ids = Float64Array.from(index.keys()).sort();
      const values: unknown[] = new Array(ids.length);
      for (let i = 0; i < ids.length; i++) values[i] = index.get(ids[i]!);
      index.clear();
      for (let i = 0; i < ids.length; i++) index.set(ids[i]!, values[i]);
    }
  }

  private refFile(sha1: string, delta: 1 | -1): void {
    const n = (this.fileRefs.get(sha1) ?? 0) + delta;
    if (n > 0) { this.fileRefs.set(sha1, n); return; }
    this.fileRefs.delete(sha1);
    this.releasedFiles.push(sha1);
  }

  /** Install an aggregate read from a snapshot; derived counters are recounted. */
  load(pb: PlaybookRow, rows: { plays: PlayRow[]; tasks: TaskRow[]; hosts: HostRow[]; results: ResultRow[]; files: FileRow[]; records: RecordRow[] }): void {
    // rows arrive without their kept orders: lists build them again
    this.orders.clear();
    const agg = new Aggregate(pb);
    this.aggregates.set(pb.id, agg);
    this.orderPlaybook(agg);
    if (pb.uuid !== null) this.uuids.set(pb.uuid, pb.id);
    const bump = (code: number, id: number) => { if (id > this.maxIds[code]!) this.maxIds[code] = id; };
    bump(TYPE_CODE.playbook, pb.id);
    for (const r of rows.plays) { agg.plays.set(r.id, r); this.plays.set(r.id, r); agg.playByUuid.set(r.uuid, r); bump(TYPE_CODE.play, r.id); }
    for (const r of rows.files) {
      agg.files.set(r.id, r); this.files.set(r.id, r); agg.fileByPath.set(r.path, r);
      this.fileRefs.set(r.sha1, (this.fileRefs.get(r.sha1) ?? 0) + 1); bump(TYPE_CODE.file, r.id);
    }
    for (const r of rows.tasks) {
      agg.tasks.set(r.id, r); this.tasks.set(r.id, r); bump(TYPE_CODE.task, r.id);
      if (r.uuid !== null) agg.taskByUuid.set(r.uuid, r);
      const play = agg.plays.get(r.play); if (play) play.tasks++;
    }
    for (const r of rows.hosts) {
      agg.hosts.set(r.id, r); this.hosts.set(r.id, r); agg.hostByName.set(r.name, r); bump(TYPE_CODE.host, r.id);
      this.latestHosts.added(r);
      if (r.unreachable > 0) agg.unreachableHosts++;
    }
    for (const r of rows.results) {
      agg.addResult(r); this.results.set(r.id, r); bump(TYPE_CODE.result, r.id);
      agg.countResult(r, 1);
      // host counters are stored as they were (they may have been overridden); items are recounted
      const play = agg.plays.get(r.play); if (play) play.results++;
      const task = agg.tasks.get(r.task); if (task) task.results++;
    }
    for (const r of rows.records) { agg.records.set(r.id, r); this.records.set(r.id, r); agg.recordByKey.set(r.key, r); bump(TYPE_CODE.record, r.id); }
    // its results are those of the stored snapshot: the next round keeps their parts until one changes
    agg.results.markClean();
    this.runs.added(agg);
  }

  /**
   * A label change the shard logs for the live stream (Shard.labelChange):
   * `each` is called for every playbook the label is on, while the replica
   * names it as this change left it (a rename: `renamedTo`; the replica may
   * hold that name, a later one, or not yet this one), then the replica's name
   * is put back. A deleted label (`removed`) leaves those playbooks here: until
   * now their rows skipped it, as the replica no longer names it.
   */
  labelChangeLogged(id: number, renamedTo: string | null, removed: boolean, each: (agg: Aggregate) => void): void {
    const held = this.labels.get(id);
    if (renamedTo !== null) this.labels.set(id, renamedTo);
    for (const agg of this.aggregates.values()) {
      const pb = agg.playbook;
      if (!pb.labels.includes(id)) continue;
      if (removed) pb.labels = pb.labels.filter((l) => l !== id);
      pb.summaryCache = null;
      each(agg);
      pb.summaryCache = null; // rendered meanwhile with the change's name: the replica's is put back below
    }
    if (held === undefined) this.labels.delete(id); else this.labels.set(id, held);
  }

  /**
   * Labels were created, renamed or deleted on the front: update the replica,
   * then make one pass over the playbooks (not one per label: after recovery the
   * front re-sends its whole catalogue) to drop cached summaries that show a
   * changed label. A deleted label stays on its playbooks until the shard logs
   * its deletion for the live stream (Shard.labelChange: their updates), which
   * finds them by it; meanwhile rows skip it (the replica no longer names it).
   */
  labelsChanged(upsert: ReadonlyArray<readonly [number, string]>, remove: readonly number[]): void {
    const changed = new Set<number>();
    for (const [id, name] of upsert) { if (this.labels.get(id) !== name) changed.add(id); this.labels.set(id, name); }
    for (const id of remove) { if (this.labels.delete(id)) changed.add(id); }
    if (changed.size === 0) return;
    for (const agg of this.aggregates.values()) {
      const pb = agg.playbook;
      if (pb.labels.some((l) => changed.has(l))) pb.summaryCache = null;
    }
  }

}

function assign(row: any, d: Record<string, any>): void {
  for (const key in d) row[PROP[key] ?? key] = d[key];
}

function rekey<R extends Record<string, any>>(map: Map<string, R>, row: R, prop: string, d: Record<string, any>): void {
  if (prop in d && d[prop] !== row[prop]) {
    if (map.get(row[prop]) === row) map.delete(row[prop]);
    if (d[prop] !== null) map.set(d[prop], row);
  }
}
