// What a shard hands to the search index (docs/search.md): for each commit, the
// records it created or changed as search documents, and the ones it removed.
// Sent once the commit is durable, off the write's path: the reply does not wait
// for it, and the index worker (src/search/) does the JSON walking and the
// SQLite work on its own thread. The shard only gathers strings it already holds
// (a blob's JSON text, a row's names); a value kept as request bytes is copied
// to text here because the body is released once the commit is stored.
import { TYPE_CODE } from '../api/resources.js';
import { blobKey, type BlobKey, type BlobReader, type BlobValue } from './blobs.js';
import type { Aggregate, Event, ShardState } from './state.js';
import { log } from '../log.js';

/**
 * One searchable record. Its own text (`text`, `json`) is what a bare word
 * searches; the columns (host, task…) also carry what it belongs to (a result's
 * host and task, every record's playbook and labels), which only field terms
 * search: a word in a playbook's name finds the playbook, not all its records.
 * Its ids, when it was created (for newest first and
 * after:/before:), the columns field terms search (host:, task:…), and its text
 * as [field, text] pairs; `json` pairs are JSON texts whose string values are the
 * text (walked by the index worker: result content, facts, arguments, values).
 */
export interface SearchDoc {
  t: number;
  id: number;
  p: number;
  created: number;
  host: string; task: string; play: string; playbook: string; path: string; status: string; label: string; action: string;
  text: Array<[string, string]>;
  json: Array<[string, string]>;
}

/** One commit's worth for the index: `seq` is the shard's journal number once it is durable. */
export interface IndexBatch {
  k: 'index';
  seq: number;
  docs: SearchDoc[];
  /** [type code, id] of records removed (a playbook: with everything under it) */
  removed: Array<[number, number]>;
  /** when it was acknowledged (ms since the epoch): the index's lag */
  at: number;
  /** documents were left out (the index was too far behind): the index is stale until this shard is rebuilt */
  incomplete?: true;
}

/** Messages a shard sends on its search port. */
export type ShardToSearch =
  | IndexBatch
  /** after recovery: where the journal is; the index answers with where it is */
  | { k: 'hello'; seq: number }
  /** a rebuild of this shard's documents: start (drop what is indexed), parts, end at `seq` */
  | { k: 'rebuild'; phase: 'start' | 'part' | 'end'; seq: number; docs: SearchDoc[] };

/** The index's answers: to hello, the journal number it has indexed up to (-1: nothing usable); after each message with documents, how many it took. */
export type SearchHelloReply = { k: 'position'; seq: number } | { k: 'took'; docs: number };

const NO_BLOBS: ReadonlyMap<BlobKey, BlobValue | null> = new Map();

/** The search document of one stored row, reading its blob text from `staged` (this commit) or `blobs` (the store). */
export function documentOf(
  state: ShardState, type: Event['t'], id: number, blobs: BlobReader, staged: ReadonlyMap<BlobKey, BlobValue | null> = NO_BLOBS,
): SearchDoc | null {
  const blob = (key: BlobKey): string | null => {
    const v = staged.has(key) ? staged.get(key) : blobs.getBlob(key);
    if (v === null || v === undefined) return null;
    return typeof v === 'string' ? v : v.text();
  };
  if (type === 'playbook') {
    const agg = state.aggregates.get(id);
    if (agg === undefined) return null;
    const pb = agg.playbook;
    const doc = base(TYPE_CODE.playbook, id, id, pb.created, agg, state);
    doc.status = pb.status;
    pushText(doc, 'name', pb.name);
    pushText(doc, 'path', pb.path);
    pushText(doc, 'controller', pb.controller);
    pushText(doc, 'user', pb.user);
    pushJson(doc, 'arguments', blob(blobKey.arguments(id)));
    return doc;
  }
  const row: any = state.index(type).get(id);
  if (row === undefined) return null;
  const agg = state.aggregates.get(row.playbook);
  if (agg === undefined) return null;
  const doc = base(TYPE_CODE[type], id, row.playbook, row.created, agg, state);
  switch (type) {
    case 'play':
      doc.play = row.name ?? '';
      pushText(doc, 'name', row.name);
      doc.status = row.status;
      break;
    case 'task': {
      doc.task = row.name ?? '';
      doc.action = row.action;
      pushText(doc, 'name', row.name);
      pushText(doc, 'action', row.action);
      doc.status = row.status;
      doc.play = agg.plays.get(row.play)?.name ?? '';
      doc.path = agg.files.get(row.file)?.path ?? '';
      pushText(doc, 'tags', row.tags === '[]' ? null : row.tags);
      break;
    }
    case 'host':
      doc.host = row.name;
      pushText(doc, 'name', row.name);
      pushJson(doc, 'facts', blob(blobKey.facts(id)));
      break;
    case 'result': {
      const task = agg.tasks.get(row.task);
      doc.status = row.status;
      doc.host = agg.hosts.get(row.host)?.name ?? '';
      doc.task = task?.name ?? '';
      doc.action = task?.action ?? '';
      doc.play = agg.plays.get(row.play)?.name ?? '';
      doc.path = task ? agg.files.get(task.file)?.path ?? '' : '';
      pushJson(doc, 'content', blob(blobKey.content(id)));
      break;
    }
    case 'file':
      doc.path = row.path;
      pushText(doc, 'path', row.path);
      pushText(doc, 'content', blob(blobKey.file(row.sha1)));
      break;
    case 'record':
      pushText(doc, 'key', row.key);
      pushJson(doc, 'value', blob(blobKey.value(id)));
      break;
  }
  return doc;
}

function base(t: number, id: number, p: number, created: number, agg: Aggregate, state: ShardState): SearchDoc {
  const pb = agg.playbook;
  let label = '';
  for (const l of pb.labels) {
    const name = state.labels.get(l);
    if (name !== undefined) label += (label ? ' ' : '') + name;
  }
  return {
    t, id, p, created,
    host: '', task: '', play: '', playbook: `${pb.name ?? ''} ${pb.path}`.trim(), path: '', status: '', label, action: '',
    text: [], json: [],
  };
}

function pushText(doc: SearchDoc, field: string, text: string | null | undefined): void {
  if (text) doc.text.push([field, text]);
}

function pushJson(doc: SearchDoc, field: string, json: string | null): void {
  if (json !== null && json !== '{}' && json !== '""' && json !== '[]' && json !== 'null') doc.json.push([field, json]);
}

/**
 * The records one commit's events touched, as documents of their state after
 * the commit, and the ones it removed. A record written twice in one commit is
 * one document.
 */
export function batchOf(
  state: ShardState, events: readonly Event[], removedIds: number[][] | null, blobs: BlobReader, staged: ReadonlyMap<BlobKey, BlobValue | null>,
): { docs: SearchDoc[]; removed: Array<[number, number]> } {
  const docs: SearchDoc[] = [];
  const removed: Array<[number, number]> = [];
  const seen = new Set<number>();
  for (const ev of events) {
    if (ev.e === 'delete') continue;
    const id: number = ev.e === 'create' ? ev.d.id : ev.id;
    const key = TYPE_CODE[ev.t] * 2 ** 44 + id;
    if (seen.has(key)) continue;
    seen.add(key);
    const doc = documentOf(state, ev.t, id, blobs, staged);
    if (doc !== null) docs.push(doc);
  }
  if (removedIds !== null) {
    for (let code = 0; code < removedIds.length; code++) for (const id of removedIds[code]!) removed.push([code, id]);
  }
  return { docs, removed };
}

/** Every document of the shard, a slice at a time (a rebuild); `each` gets slices of about `size`. */
export function* allDocuments(state: ShardState, blobs: BlobReader, size: number): Generator<SearchDoc[]> {
  let out: SearchDoc[] = [];
  const add = (doc: SearchDoc | null): void => { if (doc !== null) out.push(doc); };
  for (const [id, agg] of state.aggregates) {
    add(documentOf(state, 'playbook', id, blobs));
    for (const pid of agg.plays.keys()) add(documentOf(state, 'play', pid, blobs));
    for (const tid of agg.tasks.keys()) add(documentOf(state, 'task', tid, blobs));
    for (const hid of agg.hosts.keys()) add(documentOf(state, 'host', hid, blobs));
    for (const fid of agg.files.keys()) add(documentOf(state, 'file', fid, blobs));
    for (const rid of agg.records.keys()) add(documentOf(state, 'record', rid, blobs));
    for (const r of agg.results.values()) {
      add(documentOf(state, 'result', r.id, blobs));
      if (out.length >= size) { yield out; out = []; }
    }
    if (out.length >= size) { yield out; out = []; }
  }
  if (out.length) yield out;
}

/** A port to the search worker (node:worker_threads MessagePort, or anything that posts the same). */
export interface SearchPort {
  postMessage(msg: ShardToSearch): void;
  on(event: 'message', listener: (msg: SearchHelloReply) => void): unknown;
}

/** documents per rebuild message; the shard does other work between them */
const REBUILD_PART = 500;
/**
 * Documents sent and not yet taken by the index, past which a shard stops
 * sending them (ingest faster than the index can take, for long): memory stays
 * bounded, removals still go, and once the index has caught up the shard's
 * documents are rebuilt. Half of it resumes.
 */
const MAX_IN_FLIGHT_DOCS = 100_000;

/**
 * The shard's side of the search index: each durable commit's documents go to
 * the search worker; after recovery, a rebuild when the index is not exactly
 * at the shard's journal number (a crash lost its last batches, or the file
 * was deleted).
 */
export class SearchFeed {
  private rebuilding = false;
  private inFlight = 0;
  /** documents were left out since the last rebuild (backpressure) */
  private skipped = false;
  private rebuildFrom: (() => void) | null = null;

  constructor(private readonly port: SearchPort) {}

  /** One commit, staged: its documents now (blob values are readable until it is stored), sent once it is durable. */
  committed(state: ShardState, events: readonly Event[], removed: number[][] | null, blobs: BlobReader, seq: number, durable: Promise<void> | null): void {
    const skip = this.skipped || this.inFlight > MAX_IN_FLIGHT_DOCS;
    const { docs, removed: gone } = skip ? { docs: [], removed: batchOf(state, [], removed, blobs, NO_BLOBS).removed } : batchOf(state, events, removed, blobs, NO_BLOBS);
    if (skip && !this.skipped) { this.skipped = true; log.warn('search index: too far behind; this shard\'s new records are indexed by a rebuild once it has caught up', { inFlight: this.inFlight }); }
    this.inFlight += docs.length;
    // sent even when empty: the index's position follows every journal entry, so a clean restart finds it in step
    const send = () => this.port.postMessage(skip
      ? { k: 'index', seq, docs, removed: gone, at: Date.now(), incomplete: true }
      : { k: 'index', seq, docs, removed: gone, at: Date.now() });
    if (durable === null) send();
    else durable.then(send, () => { this.inFlight -= docs.length; /* not stored: nothing to index */ });
  }

  /** After recovery: ask the index where it is; rebuild this shard's documents if that is not `seq()`. */
  start(state: () => ShardState, blobs: BlobReader, seq: () => number): void {
    const rebuild = (): void => {
      this.rebuilding = true;
      this.skipped = false;
      this.port.postMessage({ k: 'rebuild', phase: 'start', seq: -1, docs: [] });
      const parts = allDocuments(state(), blobs, REBUILD_PART);
      const step = (): void => {
        const next = parts.next();
        if (next.done) {
          this.port.postMessage({ k: 'rebuild', phase: 'end', seq: seq(), docs: [] });
          this.rebuilding = false;
          return;
        }
        this.inFlight += next.value.length;
        this.port.postMessage({ k: 'rebuild', phase: 'part', seq: -1, docs: next.value });
        // a rebuild waits for the index too: it never has more than the bound in flight
        if (this.inFlight > MAX_IN_FLIGHT_DOCS) this.rebuildFrom = step; else setImmediate(step);
      };
      step();
    };
    this.port.on('message', (msg) => {
      if (msg.k === 'took') {
        this.inFlight -= msg.docs;
        if (this.rebuildFrom !== null && this.inFlight <= MAX_IN_FLIGHT_DOCS / 2) { const go = this.rebuildFrom; this.rebuildFrom = null; setImmediate(go); }
        else if (this.skipped && !this.rebuilding && this.inFlight <= MAX_IN_FLIGHT_DOCS / 2) rebuild();
        return;
      }
      if (this.rebuilding) return;
      if (msg.seq === seq() && msg.seq >= 0) return;
      rebuild();
    });
    this.port.postMessage({ k: 'hello', seq: seq() });
  }
}
