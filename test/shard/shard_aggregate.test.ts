// Unit tests of a Shard driven in-process with the write commands the front
// would send (normalized values: µs timestamps, JSON fields as JSON text, FKs as
// numbers, labels as ids the front resolved and broadcast), with an injected
// clock and an in-memory store that round-trips every journaled batch through
// the msgpackr codec of protocol.ts, as a real journal would.
// SPEC §2–§4 are the contract checked here; the last tests check the property
// durability relies on: replaying the journal (with the blobs stored beside it)
// rebuilds the acknowledged state. The front's label catalogue is tested here too.
import test from 'ava';
import { isDeepStrictEqual } from 'node:util';
import { Shard } from '../../src/shard/shard.js';
import { ShardState, type Event } from '../../src/shard/state.js';
import { Serializer } from '../../src/shard/serialize.js';
import { runList } from '../../src/shard/list.js';
import {
  decode, encode, type GetReply, type ListQuery, type NormalizedFilter, type WriteCommand, type WriteReply,
} from '../../src/shard/protocol.js';
import { MemoryStore } from '../../src/store/shard_store.js';
import { blobKey, blobKind, type BlobKey } from '../../src/shard/blobs.js';
import { LabelCatalogue } from '../../src/http/labels.js';
import type { LabelStore, StoredLabel } from '../../src/store/label_store.js';
import { sha1 } from '../../src/shard/decide.js';
import { ResultRow } from '../../src/shard/rows.js';
import { TYPE_CODE, RESOURCE_TYPES } from '../../src/api/resources.js';
import { parseTimestamp } from '../../src/api/time.js';
import { mulberry32 } from '../helpers/random.js';

type WType = WriteCommand['type'];
type Json = any;


/** Blobs in memory (replies stay synchronous) plus a journal: each batch is encoded and decoded like a real one. */
class RecordingStore extends MemoryStore {
  readonly events: Event[] = [];
  batches = 0;
  override write(events: Event[], puts: Array<[string, string]>, removes: string[], _dropped: number[] = []): null {
    const bytes = encode(events);
    this.batches++;
    for (const ev of decode<Event[]>(bytes)) this.events.push(ev);
    return super.write(events, puts, removes);
  }
}

/** A store for replays: blobs copied from the live store; nothing may be written. */
class ReplayStore extends MemoryStore {
  constructor(blobs: ReadonlyMap<BlobKey, string>) {
    super();
    for (const [k, v] of blobs) this.blobs.set(k, v);
  }
  override write(): null { throw new Error('replay must not journal'); }
}

/** The large JSON field of each type, its blob key and the value a row has without one (SPEC §2 defaults). */
const BLOBS: Record<string, { field: string; key: (id: number) => BlobKey; default: string } | undefined> = {
  result: { field: 'content', key: blobKey.content, default: '{}' },
  host: { field: 'facts', key: blobKey.facts, default: '{}' },
  playbook: { field: 'arguments', key: blobKey.arguments, default: '{}' },
  record: { field: 'value', key: blobKey.value, default: '""' },
};

const T0 = parseTimestamp('2026-01-01T00:00:00Z')!;
const HOUR = 3_600_000_000;
const ts = (s: string): number => parseTimestamp(s)!;

/** The front's side, reduced to what a shard needs: id allocation, label catalogue, commands. */
class Harness {
  readonly store = new RecordingStore();
  /** the µs the clock returned last; each write advances it by 1 ms */
  now = T0;
  readonly shard: Shard;
  private readonly next: Record<string, number> = {};
  readonly labelByName = new Map<string, number>();
  private rid = 1;

  /** `ara`: requests ask for ARA's dialect (docs/ara-dialect.md) */
  constructor(private readonly ara = false) {
    this.shard = new Shard({ store: this.store, clock: () => (this.now += 1000) });
  }

  allocate(type: string): number {
    this.next[type] = (this.next[type] ?? 0) + 1;
    return this.next[type]!;
  }

  write(cmd: Partial<WriteCommand> & Pick<WriteCommand, 'op' | 'type' | 'id'>): WriteReply {
    const full: WriteCommand = {
      put: false, set: {}, errors: null, elsewhere: null, minimal: false, ...cmd,
    };
    const batches = this.store.batches;
    // the command itself crosses a thread boundary too
    const reply = this.shard.handle(decode(encode({ k: 'write', rid: this.rid++, cmd: full, ...(this.ara ? { ara: true } : {}) })));
    if (!reply || reply.k !== 'write') throw new Error('no write reply');
    if (this.store.batches > batches) this.model(full, reply);
    return reply;
  }

  /** What the blobs should hold, from the commands that changed something (a model independent of the shard). */
  readonly expectBlobs = new Map<BlobKey, string>();
  /** file id → its text */
  readonly fileTexts = new Map<number, string>();
  private model(cmd: WriteCommand, reply: WriteReply): void {
    if (cmd.op === 'delete') {
      reply.deleted?.forEach((ids, code) => {
        const type = RESOURCE_TYPES[code]!;
        for (const id of ids) {
          if (type === 'file') this.fileTexts.delete(id);
          const spec = BLOBS[type];
          if (spec) this.expectBlobs.delete(spec.key(id));
        }
      });
      return;
    }
    const spec = BLOBS[cmd.type];
    if (spec && (cmd.op === 'create' || spec.field in cmd.set)) {
      this.expectBlobs.set(spec.key(cmd.id), (cmd.set[spec.field] as string | undefined) ?? spec.default);
    }
    if (cmd.type === 'file' && typeof cmd.set.content === 'string') this.fileTexts.set(cmd.id, cmd.set.content);
  }

  /** Labels resolved as the front does: known names → ids; unknown names get ids and are
   * broadcast to the shard (as a labels message) before the write that uses them. */
  labels(names: string[]): number[] {
    const ids: number[] = [];
    const upsert: Array<[number, string]> = [];
    for (const name of names) {
      let id = this.labelByName.get(name);
      if (id === undefined) { id = this.allocate('label'); this.labelByName.set(name, id); upsert.push([id, name]); }
      ids.push(id);
    }
    if (upsert.length) {
      const reply = this.shard.handle(decode(encode({ k: 'labels', upsert, remove: [] })));
      if (reply !== null) throw new Error('a labels message has no reply');
    }
    return ids;
  }

  create(type: WType, set: Record<string, unknown>, extra: Partial<WriteCommand> = {}): WriteReply {
    return this.write({ op: 'create', type, id: this.allocate(type), set, ...extra });
  }
  update(type: WType, id: number, set: Record<string, unknown>, extra: Partial<WriteCommand> = {}): WriteReply {
    return this.write({ op: 'update', type, id, set, ...extra });
  }
  remove(type: WType, id: number): WriteReply {
    return this.write({ op: 'delete', type, id });
  }

  /** Create and insist on 201; the id of the record. */
  make(type: WType, set: Record<string, unknown>, extra: Partial<WriteCommand> = {}): number {
    const r = this.create(type, set, extra);
    if (r.status !== 201) throw new Error(`create ${type} ${JSON.stringify(set)} → ${r.status} ${r.body}`);
    return JSON.parse(r.body!).id;
  }

  getReply(type: WType, id: number): GetReply {
    return this.shard.handle({ k: 'get', rid: this.rid++, type, id, ...(this.ara ? { ara: true as const } : {}) }) as GetReply;
  }
  detail(type: WType, id: number): Json {
    const r = this.getReply(type, id);
    if (r.status !== 200) throw new Error(`get ${type} ${id} → ${r.status}`);
    return JSON.parse(r.body);
  }
  exists(type: WType, id: number): boolean {
    return this.getReply(type, id).status === 200;
  }
  list(type: WType, q: Partial<ListQuery> = {}): Json[] {
    const r = this.shard.handle({ k: 'list', rid: this.rid++, q: { type, filters: [], order: [], skip: 0, take: 1e9, ...q }, ...(this.ara ? { ara: true as const } : {}) });
    if (!r || r.k !== 'list') throw new Error('no list reply');
    return r.rows.map((row) => JSON.parse(row[row.length - 1] as string));
  }

  /** A playbook with one play, one file, one task and one host. */
  scaffold(name = 'pb'): { pb: number; play: number; file: number; task: number; host: number } {
    const pb = this.make('playbook', { path: `/src/${name}.yml`, runner_version: '2.14.1', arguments: '{}', status: 'running', started: T0 });
    const play = this.make('play', { playbook: pb, uuid: '5e0c9a5e-0000-4000-8000-000000000001', name: 'play', started: T0 });
    const file = this.make('file', { playbook: pb, path: `/src/${name}.yml`, content: '- hosts: all\n' });
    const task = this.make('task', { playbook: pb, play, file, action: 'ping', lineno: 3, handler: false, started: T0 });
    const host = this.make('host', { playbook: pb, name: 'web1' });
    return { pb, play, file, task, host };
  }

  result(s: { pb: number; play: number; task: number; host: number }, set: Record<string, unknown> = {}): number {
    return this.make('result', { playbook: s.pb, play: s.play, task: s.task, host: s.host, content: '{}', started: T0, ...set });
  }

  counters(host: number): Record<string, number> {
    const h = this.detail('host', host);
    return { changed: h.changed, failed: h.failed, ok: h.ok, skipped: h.skipped, unreachable: h.unreachable };
  }
}

const ZERO = { changed: 0, failed: 0, ok: 0, skipped: 0, unreachable: 0 };
const counts = (c: Partial<typeof ZERO>) => ({ ...ZERO, ...c });

/** `deleted` of a reply as { type: sorted ids } for the non-empty codes. */
function deletedByType(r: WriteReply): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  if (!r.deleted) return out;
  r.deleted.forEach((ids, code) => { if (ids.length) out[RESOURCE_TYPES[code]!] = [...ids].sort((a, b) => a - b); });
  return out;
}

/** Everything a client could see of a shard, for "changed nothing" checks. */
function visible(h: Harness): string {
  const out: string[] = [];
  for (const type of ['playbook', 'play', 'task', 'host', 'result', 'file', 'record'] as const) {
    for (const id of [...h.shard.state.index(type).keys()]) out.push(h.getReply(type, id).body);
    out.push(JSON.stringify(h.list(type)));
  }
  return out.join('\n');
}

/**
 * Where the live store's blobs differ from the harness's model (empty when they agree): every live
 * row's large value is its last written text (a row at the default has no blob), no blob outlives
 * its row, and a file text is stored once per content hash for as long as some file uses it.
 */
function blobProblems(h: Harness): string[] {
  const out: string[] = [];
  const st = h.shard.state;
  const blobs = h.store.blobs;
  const kindOf = (key: BlobKey): string => ({ content: 'r', facts: 'h', arguments: 'p', value: 'v', file: 'f' } as Record<string, string>)[blobKind(key) ?? ''] ?? '?';
  const idOf = (key: BlobKey): number => (typeof key === 'string' ? NaN : key % 2 ** 40);
  const alive = (key: BlobKey): boolean => {
    const id = idOf(key);
    switch (kindOf(key)) {
      case 'r': return st.results.has(id);
      case 'h': return st.hosts.has(id);
      case 'p': return st.aggregates.has(id);
      case 'v': return st.records.has(id);
      default: return false;
    }
  };
  for (const [key, text] of h.expectBlobs) {
    if (!alive(key)) out.push(`model: ${key} belongs to no live row`);
    const spec = BLOBS[{ r: 'result', h: 'host', p: 'playbook', v: 'record' }[kindOf(key) as 'r']!]!;
    const stored = blobs.get(key);
    if (text === spec.default ? stored !== undefined : stored !== text) out.push(`${key}: stored ${stored} ≠ written ${text}`);
  }
  for (const type of ['result', 'host', 'playbook', 'record'] as const) {
    for (const id of st.index(type).keys()) if (!h.expectBlobs.has(BLOBS[type]!.key(id))) out.push(`model: ${type} ${id} unknown`);
  }
  const hashes = new Set<string>();
  for (const f of st.files.values()) {
    hashes.add(f.sha1);
    const text = h.fileTexts.get(f.id);
    if (text === undefined) { out.push(`model: file ${f.id} unknown`); continue; }
    if (sha1(text) !== f.sha1) out.push(`file ${f.id}: sha1 ${f.sha1} is not that of its text`);
    if (blobs.get(blobKey.file(f.sha1)) !== text) out.push(`file ${f.id}: blob ${JSON.stringify(blobs.get(blobKey.file(f.sha1)))} ≠ ${JSON.stringify(text)}`);
  }
  for (const key of blobs.keys()) {
    if (typeof key === 'string') { if (!hashes.has(key.slice(1))) out.push(`${key}: no live file has this content`); }
    else if (!h.expectBlobs.has(key)) out.push(`${key}: ${alive(key) ? 'not written by any command' : 'outlived its row'}`);
  }
  return out;
}

// ---- items counters (SPEC §2 `items`, §4) --------------------------------------

test('items counters of playbook, play and task follow creates and deletes', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const play2 = h.make('play', { playbook: s.pb, uuid: '5e0c9a5e-0000-4000-8000-000000000002' });
  const task2 = h.make('task', { playbook: s.pb, play: play2, file: s.file, action: 'copy', lineno: 9, handler: false });
  const host2 = h.make('host', { playbook: s.pb, name: 'web2' });
  h.make('record', { playbook: s.pb, key: 'k', type: 'text', value: '"v"' });
  const r1 = h.result(s, { status: 'ok' });
  h.result({ ...s, host: host2 }, { status: 'ok' });
  h.result({ ...s, play: play2, task: task2 }, { status: 'failed' });

  t.deepEqual(h.detail('playbook', s.pb).items, { plays: 2, tasks: 2, results: 3, hosts: 2, files: 1, records: 1 });
  t.deepEqual(h.detail('play', s.play).items, { tasks: 1, results: 2 });
  t.deepEqual(h.detail('play', play2).items, { tasks: 1, results: 1 });
  t.deepEqual(h.detail('task', s.task).items, { results: 2 });
  t.deepEqual(h.detail('task', task2).items, { results: 1 });
  // the same counters in list rows and in nested summaries
  t.deepEqual(h.list('play').map((p) => p.items), [{ tasks: 1, results: 2 }, { tasks: 1, results: 1 }]);
  t.deepEqual(h.detail('result', r1).task.items, { results: 2 });
  t.deepEqual(h.detail('result', r1).play.items, { tasks: 1, results: 2 });
  t.deepEqual(h.detail('result', r1).playbook.items, { plays: 2, tasks: 2, results: 3, hosts: 2, files: 1, records: 1 });

  t.is(h.remove('result', r1).status, 204);
  t.deepEqual(h.detail('task', s.task).items, { results: 1 });
  t.deepEqual(h.detail('play', s.play).items, { tasks: 1, results: 1 });
  t.deepEqual(h.detail('playbook', s.pb).items, { plays: 2, tasks: 2, results: 2, hosts: 2, files: 1, records: 1 });
});

test('moving a task to another play moves its count; a result update moves its play/task counts', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const play2 = h.make('play', { playbook: s.pb, uuid: '5e0c9a5e-0000-4000-8000-000000000002' });
  const task2 = h.make('task', { playbook: s.pb, play: play2, file: s.file, action: 'copy', lineno: 9, handler: false });
  const r = h.result(s);
  t.is(h.update('task', s.task, { play: play2 }).status, 200);
  t.deepEqual(h.detail('play', s.play).items, { tasks: 0, results: 1 });
  t.deepEqual(h.detail('play', play2).items, { tasks: 2, results: 0 });
  t.is(h.update('result', r, { play: play2, task: task2 }).status, 200);
  t.deepEqual(h.detail('play', s.play).items, { tasks: 0, results: 0 });
  t.deepEqual(h.detail('play', play2).items, { tasks: 2, results: 1 });
  t.deepEqual(h.detail('task', s.task).items, { results: 0 });
  t.deepEqual(h.detail('task', task2).items, { results: 1 });
});

// ---- host counters (SPEC §4 table) --------------------------------------------

interface CounterCase { status: string; changed?: boolean; ignore_errors?: boolean; shown: string; expect: Partial<typeof ZERO> }
const COUNTER_CASES: CounterCase[] = [
  { status: 'ok', shown: 'ok', expect: { ok: 1 } },
  { status: 'ok', changed: true, shown: 'changed', expect: { ok: 1, changed: 1 } },
  { status: 'changed', shown: 'changed', expect: { ok: 1, changed: 1 } },
  { status: 'failed', ignore_errors: true, shown: 'ignored', expect: { ok: 1 } },
  { status: 'failed', ignore_errors: true, changed: true, shown: 'ignored', expect: { ok: 1, changed: 1 } },
  { status: 'ignored', shown: 'ignored', expect: { ok: 1 } },
  { status: 'failed', shown: 'failed', expect: { failed: 1 } },
  { status: 'failed', changed: true, shown: 'failed', expect: { failed: 1, changed: 1 } },
  { status: 'skipped', shown: 'skipped', expect: { skipped: 1 } },
  { status: 'unreachable', shown: 'unreachable', expect: { unreachable: 1 } },
  { status: 'unknown', shown: 'unknown', expect: {} },
  { status: 'ok', ignore_errors: true, shown: 'ok', expect: { ok: 1 } },
];

for (const c of COUNTER_CASES) {
  const label = `${c.status}${c.changed ? '+changed' : ''}${c.ignore_errors ? '+ignore_errors' : ''}`;
  test(`host counters: stored ${label} shows as ${c.shown} and counts ${JSON.stringify(c.expect)}`, (t) => {
    const h = new Harness();
    const s = h.scaffold();
    const set: Record<string, unknown> = { status: c.status };
    if (c.changed !== undefined) set.changed = c.changed;
    if (c.ignore_errors !== undefined) set.ignore_errors = c.ignore_errors;
    const reply = h.create('result', { playbook: s.pb, play: s.play, task: s.task, host: s.host, ...set });
    t.is(reply.status, 201);
    const written = JSON.parse(reply.body!);
    t.is(written.status, c.shown, 'write response shows the derived status');
    t.is(written.changed, c.changed ?? false, '`changed` is returned as stored');
    t.is(written.ignore_errors, c.ignore_errors ?? false);
    t.is(h.detail('result', written.id).status, c.shown);
    t.is(h.list('result')[0].status, c.shown);
    t.deepEqual(h.counters(s.host), counts(c.expect));
    t.deepEqual(h.detail('result', written.id).host, { id: s.host, name: 'web1', ...counts(c.expect), playbook: s.pb });
    // and deleting it reverses exactly that contribution
    t.is(h.remove('result', written.id).status, 204);
    t.deepEqual(h.counters(s.host), ZERO);
  });
}

test('host counters add up over many results', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  let expect = { ...ZERO };
  for (const c of COUNTER_CASES) {
    h.result(s, { status: c.status, changed: c.changed ?? false, ignore_errors: c.ignore_errors ?? false });
    for (const [k, v] of Object.entries(c.expect)) (expect as any)[k] += v;
  }
  t.deepEqual(h.counters(s.host), expect);
  t.deepEqual(expect, { ok: 7, changed: 4, failed: 2, skipped: 1, unreachable: 1 }); // the table itself
});

test('a host update that sets a counter overrides the live value; later results count on from it', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  h.result(s, { status: 'ok' });
  h.result(s, { status: 'failed' });
  t.deepEqual(h.counters(s.host), counts({ ok: 1, failed: 1 }));
  const r = h.update('host', s.host, { ok: 10, changed: 4 });
  t.is(r.status, 200);
  t.deepEqual(JSON.parse(r.body!).ok, 10);
  t.deepEqual(h.counters(s.host), counts({ ok: 10, changed: 4, failed: 1 }), 'counters not sent are left alone');
  h.result(s, { status: 'ok' });
  h.result(s, { status: 'skipped' });
  t.deepEqual(h.counters(s.host), counts({ ok: 11, changed: 4, failed: 1, skipped: 1 }));
  // a PUT of the ARA callback's totals at the end of a run
  t.is(h.update('host', s.host, { name: 'web1', playbook: s.pb, facts: '{}', ok: 2, changed: 0, failed: 0, skipped: 0, unreachable: 0 }, { put: true }).status, 200);
  t.deepEqual(h.counters(s.host), counts({ ok: 2 }));
});

test('a host created with counters starts from them', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const host = h.make('host', { playbook: s.pb, name: 'web9', ok: 3, unreachable: 1 });
  t.deepEqual(h.counters(host), counts({ ok: 3, unreachable: 1 }));
  h.result({ ...s, host }, { status: 'unreachable' });
  t.deepEqual(h.counters(host), counts({ ok: 3, unreachable: 2 }));
});

test('changing a result status, flags or host moves its contribution', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const host2 = h.make('host', { playbook: s.pb, name: 'web2' });
  const r = h.result(s, { status: 'ok' });
  t.deepEqual(h.counters(s.host), counts({ ok: 1 }));

  t.is(h.update('result', r, { changed: true }).status, 200);
  t.deepEqual(h.counters(s.host), counts({ ok: 1, changed: 1 }));
  t.is(h.update('result', r, { status: 'failed' }).status, 200);
  t.deepEqual(h.counters(s.host), counts({ failed: 1, changed: 1 }));
  t.is(h.update('result', r, { ignore_errors: true }).status, 200);
  t.is(h.detail('result', r).status, 'ignored');
  t.deepEqual(h.counters(s.host), counts({ ok: 1, changed: 1 }));
  t.is(h.update('result', r, { host: host2, changed: false }).status, 200);
  t.deepEqual(h.counters(s.host), ZERO);
  t.deepEqual(h.counters(host2), counts({ ok: 1 }));
  t.is(h.update('result', r, { status: 'unreachable' }).status, 200);
  t.deepEqual(h.counters(host2), counts({ unreachable: 1 }));
  t.is(h.update('result', r, { status: 'unknown' }).status, 200);
  t.deepEqual(h.counters(host2), ZERO);
  // a no-op PATCH changes no counter but bumps `updated`
  const before = h.detail('result', r);
  t.is(h.update('result', r, {}).status, 200);
  const after = h.detail('result', r);
  t.deepEqual(h.counters(host2), ZERO);
  t.not(after.updated, before.updated);
  t.is(after.created, before.created);
});

// ---- cascades (SPEC §3 DELETE) ---------------------------------------------------

/** Two plays, two files, three tasks, two hosts, six results, one record, in one playbook, plus a bystander playbook. */
function bigScaffold(h: Harness) {
  const s = h.scaffold();
  const other = h.scaffold('other');
  const play2 = h.make('play', { playbook: s.pb, uuid: '5e0c9a5e-0000-4000-8000-000000000002' });
  const file2 = h.make('file', { playbook: s.pb, path: '/src/roles/x/tasks/main.yml', content: '- debug: {}\n' });
  const task2 = h.make('task', { playbook: s.pb, play: s.play, file: file2, action: 'debug', lineno: 1, handler: false });
  const task3 = h.make('task', { playbook: s.pb, play: play2, file: s.file, action: 'copy', lineno: 7, handler: true });
  const host2 = h.make('host', { playbook: s.pb, name: 'web2' });
  const record = h.make('record', { playbook: s.pb, key: 'k', type: 'text', value: '"v"' });
  const results = {
    a: h.result(s, { status: 'ok' }),                                  // play1 task1 host1
    b: h.result({ ...s, host: host2 }, { status: 'ok', changed: true }), // play1 task1 host2
    c: h.result({ ...s, task: task2 }, { status: 'failed' }),           // play1 task2(file2) host1
    d: h.result({ ...s, task: task2, host: host2 }, { status: 'skipped' }),
    e: h.result({ ...s, play: play2, task: task3 }, { status: 'unreachable' }), // play2 task3(file1) host1
    f: h.result({ ...s, play: play2, task: task3, host: host2 }, { status: 'ok' }),
  };
  const otherResult = h.result(other, { status: 'ok' });
  return { ...s, other, play2, file2, task2, task3, host2, record, results, otherResult };
}

test('deleting a playbook removes everything under it and reports every id; labels and other playbooks stay', (t) => {
  const h = new Harness();
  const ids = h.labels(['prod']);
  const x = bigScaffold(h);
  t.is(h.update('playbook', x.pb, { labels: ids }).status, 200);
  const otherRows = (): string[] => (['playbook', 'play', 'task', 'host', 'file'] as const)
    .map((type) => h.getReply(type, type === 'playbook' ? x.other.pb : (x.other as any)[type]).body)
    .concat(h.getReply('result', x.otherResult).body);
  const otherBefore = otherRows();
  const r = h.remove('playbook', x.pb);
  t.is(r.status, 204);
  t.is(r.body, null);
  const rs = x.results;
  t.deepEqual(deletedByType(r), {
    playbook: [x.pb],
    play: [x.play, x.play2],
    task: [x.task, x.task2, x.task3],
    host: [x.host, x.host2],
    result: [rs.a, rs.b, rs.c, rs.d, rs.e, rs.f],
    file: [x.file, x.file2],
    record: [x.record],
  });
  for (const [type, list] of Object.entries(deletedByType(r))) {
    for (const id of list) t.false(h.exists(type as WType, id), `${type} ${id} is gone`);
  }
  t.true(h.exists('playbook', x.other.pb));
  t.true(h.exists('result', x.otherResult));
  t.deepEqual(h.detail('host', x.other.host).ok, 1);
  t.true(h.shard.state.labels.has(ids[0]!), 'labels stay');
  t.deepEqual(h.list('playbook').map((p) => p.id), [x.other.pb]);
  t.deepEqual(h.list('result').map((p) => p.id), [x.otherResult]);
  t.deepEqual(otherRows(), otherBefore, 'the other playbook is untouched');
});

test('deleting a play removes its tasks and their results, and results naming the play', (t) => {
  const h = new Harness();
  const x = bigScaffold(h);
  const r = h.remove('play', x.play2);
  t.is(r.status, 204);
  t.deepEqual(deletedByType(r), { play: [x.play2], task: [x.task3], result: [x.results.e, x.results.f] });
  t.deepEqual(h.detail('playbook', x.pb).items, { plays: 1, tasks: 2, results: 4, hosts: 2, files: 2, records: 1 });
  t.deepEqual(h.counters(x.host), counts({ ok: 1, failed: 1 }));
  t.deepEqual(h.counters(x.host2), counts({ ok: 1, changed: 1, skipped: 1 }));
  t.false(h.exists('task', x.task3));
  t.false(h.exists('result', x.results.e));
});

test('deleting a task removes its results and takes back their counts', (t) => {
  const h = new Harness();
  const x = bigScaffold(h);
  const r = h.remove('task', x.task2);
  t.deepEqual(deletedByType(r), { task: [x.task2], result: [x.results.c, x.results.d] });
  t.deepEqual(h.detail('play', x.play).items, { tasks: 1, results: 2 });
  t.deepEqual(h.counters(x.host), counts({ ok: 1, unreachable: 1 }));
  t.deepEqual(h.counters(x.host2), counts({ ok: 2, changed: 1 }));
  t.deepEqual(h.detail('playbook', x.pb).items, { plays: 2, tasks: 2, results: 4, hosts: 2, files: 2, records: 1 });
});

test('deleting a host removes its results; items of plays and tasks follow', (t) => {
  const h = new Harness();
  const x = bigScaffold(h);
  const r = h.remove('host', x.host2);
  t.deepEqual(deletedByType(r), { host: [x.host2], result: [x.results.b, x.results.d, x.results.f] });
  t.deepEqual(h.detail('play', x.play).items, { tasks: 2, results: 2 });
  t.deepEqual(h.detail('play', x.play2).items, { tasks: 1, results: 1 });
  t.deepEqual(h.detail('task', x.task).items, { results: 1 });
  t.deepEqual(h.detail('playbook', x.pb).items, { plays: 2, tasks: 3, results: 3, hosts: 1, files: 2, records: 1 });
  // the name is free again: a new host is created, not found
  const again = h.create('host', { playbook: x.pb, name: 'web2' });
  t.is(again.status, 201);
  t.not(JSON.parse(again.body!).id, x.host2);
  t.deepEqual(h.counters(JSON.parse(again.body!).id), ZERO);
});

test('deleting a file removes the tasks using it and their results', (t) => {
  const h = new Harness();
  const x = bigScaffold(h);
  const r = h.remove('file', x.file);
  t.deepEqual(deletedByType(r), { file: [x.file], task: [x.task, x.task3], result: [x.results.a, x.results.b, x.results.e, x.results.f] });
  t.deepEqual(h.detail('play', x.play).items, { tasks: 1, results: 2 });
  t.deepEqual(h.detail('play', x.play2).items, { tasks: 0, results: 0 });
  t.deepEqual(h.counters(x.host), counts({ failed: 1 }));
  t.deepEqual(h.counters(x.host2), counts({ skipped: 1 }));
  t.deepEqual(h.detail('playbook', x.pb).items, { plays: 2, tasks: 1, results: 2, hosts: 2, files: 1, records: 1 });
  const again = h.create('file', { playbook: x.pb, path: '/src/pb.yml', content: 'new text' });
  t.is(again.status, 201, 'the path is free again, whatever the content');
});

test('playbooks loaded out of id order (recovery) list in id order; a deleted one leaves the list at once', (t) => {
  const h = new Harness();
  const ids = [1, 2, 3, 4].map((i) => JSON.parse(h.create('playbook', { path: `/p${i}.yml`, runner_version: '2.16' }).body!).id as number);
  const loaded = new ShardState();
  for (const id of [...ids].reverse()) {
    const agg = h.shard.state.aggregates.get(id)!;
    loaded.load(agg.playbook, { plays: [], tasks: [], hosts: [], results: [], files: [], records: [] });
  }
  const serializer = new Serializer(loaded, h.store, false);
  const listed = (q: Partial<ListQuery> = {}) => runList(loaded, serializer, { type: 'playbook', filters: [], order: [], skip: 0, take: 100, ...q }).rows.map((r) => r[0]);
  t.deepEqual(listed(), ids);
  t.deepEqual(listed({ order: [['id', true]] }).length, 4);
  t.deepEqual(listed({ bound: { keys: [ids[1]!], back: false } }), ids.slice(2));
  loaded.apply({ e: 'delete', t: 'playbook', p: ids[2]!, id: ids[2]! });
  // gone from the order at once, not at the next list: its aggregate is not kept alive
  t.is((loaded as unknown as { playbookOrder: unknown[] }).playbookOrder.length, 3);
  t.deepEqual(listed(), [ids[0], ids[1], ids[3]]);
  t.is(runList(loaded, serializer, { type: 'playbook', filters: [], order: [], skip: 0, take: 100 }).count, 3);
});

test('deleting a result or a record reports only that id', (t) => {
  const h = new Harness();
  const x = bigScaffold(h);
  t.deepEqual(deletedByType(h.remove('result', x.results.c)), { result: [x.results.c] });
  t.deepEqual(deletedByType(h.remove('record', x.record)), { record: [x.record] });
  t.is(h.create('record', { playbook: x.pb, key: 'k', type: 'text' }).status, 201, 'the key is free again');
});

test('deleting or updating an unknown id is a 404 and journals nothing', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const before = h.store.events.length;
  for (const type of ['playbook', 'play', 'task', 'host', 'result', 'file', 'record'] as const) {
    const d = h.remove(type, 999);
    t.is(d.status, 404);
    t.is(d.body, '{"detail":"Not found."}');
    const u = h.update(type, 999, { playbook: s.pb });
    t.is(u.status, 404);
  }
  const r = h.result(s);
  t.is(h.remove('result', r).status, 204);
  t.is(h.remove('result', r).status, 404, 'a second delete finds nothing');
  t.is(h.store.events.length, before + 2);
});

test('deleting a host takes it out of delegated_to of the results that remain (compat rows show it)', (t) => {
  // SPEC §3: host → its results are deleted; a result that was only delegated to the host stays,
  // and must not keep naming a host that no longer exists (§9 result rows carry delegated_to).
  const h = new Harness(true);
  const s = h.scaffold();
  const host2 = h.make('host', { playbook: s.pb, name: 'web2' });
  const r = h.result(s, { status: 'ok', delegated_to: [host2, s.host] });
  // the detail shows delegates as host objects (ARA), rows and write answers as ids
  const delegates = () => h.detail('result', r).delegated_to.map((d: { id: number }) => d.id);
  t.deepEqual(delegates(), [host2, s.host]);
  t.deepEqual(deletedByType(h.remove('host', host2)), { host: [host2] });
  t.true(h.exists('result', r));
  t.deepEqual(delegates(), [s.host]);
  t.deepEqual(h.list('result')[0].delegated_to, [s.host]);
});

// ---- get-or-create, uniqueness ------------------------------------------------------

test('host get-or-create returns the existing host unchanged with 201 and journals nothing', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  h.update('host', s.host, { facts: '{"a":1}' });
  h.result(s, { status: 'ok' });
  const before = h.getReply('host', s.host).body;
  const events = h.store.events.length;
  const r = h.create('host', { playbook: s.pb, name: 'web1', facts: '{"b":2}', ok: 99 });
  t.is(r.status, 201);
  t.deepEqual(r.created, [TYPE_CODE.host, s.host]);
  const body = JSON.parse(r.body!);
  t.is(body.id, s.host);
  t.deepEqual(body.facts, { a: 1 });
  t.is(body.ok, 1);
  t.is(h.getReply('host', s.host).body, before);
  t.is(h.store.events.length, events);
  // same name in another playbook is another host
  const other = h.scaffold('other');
  t.not(other.host, s.host);
});

test('file get-or-create: same content finds the file, different content is refused on `content`', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const events = h.store.events.length;
  const same = h.create('file', { playbook: s.pb, path: '/src/pb.yml', content: '- hosts: all\n' });
  t.is(same.status, 201);
  t.is(JSON.parse(same.body!).id, s.file);
  t.deepEqual(same.created, [TYPE_CODE.file, s.file]);
  const diff = h.create('file', { playbook: s.pb, path: '/src/pb.yml', content: 'other' });
  t.is(diff.status, 400);
  t.is(diff.body, JSON.stringify({ content: [`A file with path "/src/pb.yml" already exists in playbook ${s.pb} with different content.`] }));
  t.is(diff.created, null);
  t.is(h.store.events.length, events);
  t.deepEqual(h.detail('playbook', s.pb).items.files, 1);
  // sha1 is the hex SHA-1 of the UTF-8 content; empty content is allowed
  const empty = JSON.parse(h.create('file', { playbook: s.pb, path: '/e', content: '' }).body!);
  t.is(empty.sha1, 'da39a3ee5e6b4b0d3255bfef95601890afd80709');
  const utf8 = JSON.parse(h.create('file', { playbook: s.pb, path: '/u', content: 'é' }).body!);
  t.is(utf8.sha1, 'bf15be717ac1b080b4f1c456692825891ff5073d');
  t.is(h.list('file')[0].sha1, 'cc6bc51d200550b3b6b7e44896db5a0e3f8377a5');
});

test('file sha1 follows a content update', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const r = h.update('file', s.file, { content: 'abc' });
  t.is(r.status, 200);
  t.is(JSON.parse(r.body!).sha1, 'a9993e364706816aba3e25717850c26c9cd0d89d');
  t.is(h.list('file')[0].sha1, 'a9993e364706816aba3e25717850c26c9cd0d89d');
});

test('record (key, playbook) is unique on create and on rename; hosts and files on rename', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const unique = '{"non_field_errors":["The fields key, playbook must make a unique set."]}';
  const k1 = h.make('record', { playbook: s.pb, key: 'k1', type: 'text', value: '"a"' });
  const k2 = h.make('record', { playbook: s.pb, key: 'k2', type: 'text' });
  const dup = h.create('record', { playbook: s.pb, key: 'k1', type: 'text' });
  t.is(dup.status, 400);
  t.is(dup.body, unique);
  const rename = h.update('record', k2, { key: 'k1' });
  t.is(rename.status, 400);
  t.is(rename.body, unique);
  t.is(h.update('record', k1, { key: 'k1', value: '"b"' }).status, 200, 'keeping its own key is fine');
  const other = h.scaffold('other');
  t.is(h.create('record', { playbook: other.pb, key: 'k1', type: 'text' }).status, 201, 'another playbook may use the key');

  const web2 = h.make('host', { playbook: s.pb, name: 'web2' });
  const hostRename = h.update('host', web2, { name: 'web1' });
  t.is(hostRename.status, 400);
  t.is(hostRename.body, '{"non_field_errors":["The fields name, playbook must make a unique set."]}');
  const f2 = h.make('file', { playbook: s.pb, path: '/two', content: '' });
  const fileRename = h.update('file', f2, { path: '/src/pb.yml' });
  t.is(fileRename.status, 400);
  t.is(fileRename.body, '{"non_field_errors":["The fields path, playbook must make a unique set."]}');
  // a successful rename frees the old key and takes the new one
  t.is(h.update('record', k2, { key: 'k3' }).status, 200);
  t.is(h.create('record', { playbook: s.pb, key: 'k2', type: 'text' }).status, 201);
  t.is(h.create('record', { playbook: s.pb, key: 'k3', type: 'text' }).status, 400);
  t.is(h.update('host', web2, { name: 'web3' }).status, 200);
  t.is(JSON.parse(h.create('host', { playbook: s.pb, name: 'web3' }).body!).id, web2);
  t.not(JSON.parse(h.create('host', { playbook: s.pb, name: 'web2' }).body!).id, web2);
});

// ---- foreign keys (SPEC §3) ----------------------------------------------------------

test('FK refusals: missing id, a row of another playbook on the same shard, one on another shard', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const o = h.scaffold('other');
  const base = { playbook: s.pb, play: s.play, task: s.task, host: s.host };

  const missing = h.create('result', { ...base, host: 999 });
  t.is(missing.status, 400);
  t.is(missing.body, '{"host":["Invalid pk \\"999\\" - object does not exist."]}');

  const foreign = h.create('result', { ...base, task: o.task, play: o.play });
  t.is(foreign.status, 400);
  t.is(foreign.body, JSON.stringify({
    task: [`Task ${o.task} does not belong to playbook ${s.pb}.`],
    play: [`Play ${o.play} does not belong to playbook ${s.pb}.`],
  }), 'every failing field at once, in serializer order');

  const elsewhere = h.create('result', { ...base, host: 5000 }, { elsewhere: ['host'] });
  t.is(elsewhere.body, `{"host":["Host 5000 does not belong to playbook ${s.pb}."]}`);

  const task = h.create('task', { playbook: s.pb, play: o.play, file: 77, action: 'x', lineno: 1, handler: false });
  t.is(task.body, JSON.stringify({
    play: [`Play ${o.play} does not belong to playbook ${s.pb}.`],
    file: ['Invalid pk "77" - object does not exist.'],
  }));

  const delegated = h.create('result', { ...base, delegated_to: [s.host, o.host] });
  t.is(delegated.body, `{"delegated_to":["Host ${o.host} does not belong to playbook ${s.pb}."]}`);
  const delegatedMissing = h.create('result', { ...base, delegated_to: [404] });
  t.is(delegatedMissing.body, '{"delegated_to":["Invalid pk \\"404\\" - object does not exist."]}');

  const noPlaybook = h.create('play', { playbook: 4242, uuid: '5e0c9a5e-0000-4000-8000-000000000009' });
  t.is(noPlaybook.status, 400);
  t.is(noPlaybook.body, '{"playbook":["Invalid pk \\"4242\\" - object does not exist."]}');

  // on update, FKs are checked against the row's own playbook
  const r = h.result(s);
  const moved = h.update('result', r, { host: o.host });
  t.is(moved.body, `{"host":["Host ${o.host} does not belong to playbook ${s.pb}."]}`);
  const taskMove = h.update('task', s.task, { play: o.play });
  t.is(taskMove.body, `{"play":["Play ${o.play} does not belong to playbook ${s.pb}."]}`);
});

test('a child cannot move to another playbook; restating its own playbook is fine', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const o = h.scaffold('other');
  const r = h.update('play', s.play, { playbook: o.pb, name: 'x' });
  t.is(r.status, 400);
  t.is(r.body, '{"playbook":["The playbook of a play cannot be changed."]}');
  t.is(h.detail('play', s.play).name, 'play');
  t.is(h.update('host', s.host, { playbook: s.pb, name: 'web1' }).status, 200);
  const rec = h.make('record', { playbook: s.pb, key: 'k', type: 't' });
  t.is(h.update('record', rec, { playbook: o.pb }).body, '{"playbook":["The playbook of a record cannot be changed."]}');
});

test('front errors are merged with the shard own, in serializer order', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const r = h.create('result', { playbook: s.pb, play: s.play, task: s.task, host: 999 },
    { errors: { status: ['"bogus" is not a valid choice.'], content: ['This field may not be null.'] } });
  t.is(r.status, 400);
  t.deepEqual(Object.keys(JSON.parse(r.body!)), ['content', 'status', 'host']);
});

// ---- ended ≥ started (SPEC §1) -------------------------------------------------------------

const endedError = '{"ended":["Ended must not be earlier than started."]}';

test('ended before started is refused on create and against stored values on update', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const t1 = ts('2026-01-01T10:00:00Z');
  const bad = h.create('play', { playbook: s.pb, uuid: '5e0c9a5e-0000-4000-8000-0000000000aa', started: t1, ended: t1 - 1 });
  t.is(bad.status, 400);
  t.is(bad.body, endedError);
  const equal = h.create('play', { playbook: s.pb, uuid: '5e0c9a5e-0000-4000-8000-0000000000ab', started: t1, ended: t1 });
  t.is(equal.status, 201);
  t.is(JSON.parse(equal.body!).duration, '00:00:00.000000');

  // only `ended` sent: compared with the stored `started`
  const r = h.result(s, { started: t1 });
  const upd = h.update('result', r, { ended: t1 - 1_000_000 });
  t.is(upd.status, 400);
  t.is(upd.body, endedError);
  t.is(h.detail('result', r).ended, null);
  t.is(h.update('result', r, { ended: t1 + 27 * HOUR }).status, 200);
  t.is(h.detail('result', r).duration, '27:00:00.000000');
  // only `started` sent, after the stored `ended`
  const late = h.update('result', r, { started: t1 + 28 * HOUR });
  t.is(late.status, 400);
  t.is(late.body, endedError);
  // both sent, consistent with each other though not with what is stored
  t.is(h.update('result', r, { started: t1 + 30 * HOUR, ended: t1 + 31 * HOUR }).status, 200);
  t.is(h.detail('result', r).duration, '01:00:00.000000');
  // clearing ended is always fine and nulls duration
  t.is(h.update('result', r, { ended: null }).status, 200);
  t.is(h.detail('result', r).duration, null);
  // the playbook too
  const pbBad = h.update('playbook', s.pb, { ended: T0 - 1 });
  t.is(pbBad.body, endedError);
});

test('ended before the default started (now) is refused on create', (t) => {
  // SPEC §1: "A write that would make `ended` earlier than `started` → 400 on `ended`";
  // SPEC §3: a result's / playbook's `started` defaults to now.
  const h = new Harness();
  const s = h.scaffold();
  const past = T0 - HOUR;
  const r = h.create('result', { playbook: s.pb, play: s.play, task: s.task, host: s.host, status: 'ok', ended: past });
  t.is(r.status, 400, `got ${r.status} ${r.body}`);
  t.is(r.body, endedError);
  const pb = h.create('playbook', { path: '/x.yml', runner_version: '2.14', ended: past });
  t.is(pb.status, 400, `got ${pb.status} ${pb.body}`);
  t.is(pb.body, endedError);
});

test('started defaults to the shard clock; created = updated = now; updated moves on every write', (t) => {
  const h = new Harness();
  const pbReply = h.create('playbook', { path: '/x.yml', runner_version: '2.14' });
  const pb = JSON.parse(pbReply.body!);
  const now = h.now;
  t.is(parseTimestamp(pb.started), now);
  t.is(parseTimestamp(pb.created), now);
  t.is(parseTimestamp(pb.updated), now);
  t.deepEqual([pb.name, pb.status, pb.ended, pb.duration, pb.arguments, pb.labels], [null, 'unknown', null, null, {}, []]);
  const upd = JSON.parse(h.update('playbook', pb.id, { status: 'completed' }).body!);
  t.is(parseTimestamp(upd.updated), h.now);
  t.is(upd.created, pb.created);
  t.is(upd.started, pb.started);
});

// ---- refusals change nothing -------------------------------------------------------------

test('a refused command emits no events and changes nothing', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const o = h.scaffold('other');
  const r = h.result(s, { status: 'ok', started: T0 });
  h.make('record', { playbook: s.pb, key: 'k', type: 't' });
  const ids = h.labels(['newlabel']);
  const before = visible(h);
  const events = h.store.events.length;
  const batches = h.store.batches;
  const refusals: WriteReply[] = [
    h.create('result', { playbook: s.pb, play: s.play, task: s.task, host: 999, status: 'failed' }),
    h.create('result', { playbook: s.pb, play: o.play, task: s.task, host: s.host }),
    h.create('record', { playbook: s.pb, key: 'k', type: 't' }),
    h.create('file', { playbook: s.pb, path: '/src/pb.yml', content: 'changed' }),
    h.create('play', { playbook: 9999, uuid: '5e0c9a5e-0000-4000-8000-000000000001' }),
    h.create('playbook', { path: '/y', runner_version: '1', labels: ids, started: T0, ended: T0 - 1 }),
    h.update('playbook', s.pb, { labels: ids, name: 'renamed', ended: T0 - 1 }),
    h.update('result', r, { status: 'failed', ended: T0 - 5 }),
    h.update('result', r, { status: 'failed', host: o.host }),
    h.update('task', s.task, { play: s.play, file: 31337 }),
    h.update('host', s.host, { ok: 5, playbook: o.pb }),
    h.update('play', s.play, { name: 'x' }, { errors: { uuid: ['Must be a valid UUID.'] } }),
  ];
  for (const [i, reply] of refusals.entries()) {
    t.is(reply.status, 400, `refusal #${i}: ${reply.body}`);
    t.is(reply.created, null);
    t.is(reply.deleted, null);
  }
  t.is(h.store.events.length, events);
  t.is(h.store.batches, batches);
  t.is(visible(h), before);
  t.is(h.shard.state.aggregates.get(s.pb)!.playbook.labels.length, 0, 'the refused update attached no label');
});

// ---- labels ---------------------------------------------------------------------------------

test('labels the front broadcast are shown by playbook writes and never journaled; rename and delete reach cached summaries', (t) => {
  const h = new Harness();
  const batches = h.store.batches;
  const ids = h.labels(['b-label', 'a-label']);
  t.deepEqual([...h.shard.state.labels], [[ids[0], 'b-label'], [ids[1], 'a-label']], 'the replica holds what was broadcast');
  t.is(h.store.batches, batches, 'a labels message journals nothing');
  const n = h.store.events.length;
  const pbReply = h.create('playbook', { path: '/x.yml', runner_version: '2.14', labels: ids });
  t.is(pbReply.status, 201);
  const pb = JSON.parse(pbReply.body!).id;
  t.false('labels' in pbReply, 'a write reply carries no labels');
  t.deepEqual(JSON.parse(pbReply.body!).labels, [{ id: ids[0], name: 'b-label' }, { id: ids[1], name: 'a-label' }]);
  t.is(h.store.events.length, n + 1, 'only the playbook create is journaled');
  const ev = h.store.events[n]!;
  t.like(ev, { e: 'create', t: 'playbook', p: pb });
  t.deepEqual(ev.e === 'create' && ev.d.labels, ids, 'the playbook names its labels by id');
  const play = h.make('play', { playbook: pb, uuid: '5e0c9a5e-0000-4000-8000-000000000001' });
  t.deepEqual(h.detail('play', play).playbook.labels.map((l: Json) => l.name), ['b-label', 'a-label']); // caches the summary
  t.deepEqual(h.list('playbook')[0].labels.map((l: Json) => l.name), ['b-label', 'a-label']);
  const before = h.store.batches;
  h.shard.handle({ k: 'labels', upsert: [[ids[0]!, 'renamed']], remove: [] });
  h.labelByName.delete('b-label'); h.labelByName.set('renamed', ids[0]!);
  t.deepEqual(h.detail('play', play).playbook.labels.map((l: Json) => l.name), ['renamed', 'a-label']);
  t.deepEqual(h.list('playbook')[0].labels.map((l: Json) => l.name), ['renamed', 'a-label']);
  h.shard.handle({ k: 'labels', upsert: [], remove: [ids[1]!] });
  t.deepEqual(h.detail('play', play).playbook.labels, [{ id: ids[0], name: 'renamed' }]);
  t.deepEqual(h.detail('playbook', pb).labels, [{ id: ids[0], name: 'renamed' }]);
  t.deepEqual(h.list('playbook')[0].labels, [{ id: ids[0], name: 'renamed' }]);
  t.is(h.store.batches, before, 'renames and deletes journal nothing on the shard');
  // a second playbook reuses the existing label: no message, one journaled event
  const m = h.store.events.length;
  const pb2 = h.make('playbook', { path: '/y.yml', runner_version: '2.14', labels: h.labels(['renamed']) });
  t.is(h.store.events.length, m + 1);
  t.deepEqual(h.detail('playbook', pb2).labels, [{ id: ids[0], name: 'renamed' }]);
});

// The front's label catalogue (constructed without a store: nothing persisted).
function catalogue(): { labels: LabelCatalogue; allocate: () => number } {
  let next = 0;
  return { labels: new LabelCatalogue(null), allocate: () => ++next };
}

test('label catalogue: resolve makes unknown names provisional labels with claims; known ones are reused', (t) => {
  const { labels, allocate } = catalogue();
  const a = labels.resolve(['prod', 'dev', 'prod'], allocate, T0);
  t.deepEqual(a.ids, [1, 2, 1], 'a name repeated in one write is one label');
  t.deepEqual(a.created.map((l) => [l.id, l.name]), [[1, 'prod'], [2, 'dev']]);
  t.deepEqual(a.claims, [1, 2, 1]);
  t.is(a.persisted, null, 'no store: nothing to wait for');
  t.is(labels.byName.get('prod')?.id, 1);
  t.is(labels.byId.get(2)?.name, 'dev');
  t.true(labels.taken('prod'));
  t.false(labels.taken('prod', 1), 'a label does not clash with itself');
  t.is(labels.byId.get(1)!.toJSON(), '{"id":1,"created":"2026-01-01T00:00:00.000000Z","updated":"2026-01-01T00:00:00.000000Z","name":"prod"}');
  // a write that uses them succeeds: they are confirmed
  t.deepEqual(labels.settle(a.claims, true), []);
  const b = labels.resolve(['dev', 'ci'], allocate, T0 + 1);
  t.deepEqual(b.ids, [2, 3]);
  t.deepEqual(b.created.map((l) => l.name), ['ci']);
  t.deepEqual(b.claims, [3], 'confirmed labels are not claimed again');
  // ... so a later failed write cannot take a confirmed label away
  t.deepEqual(labels.settle(b.claims, false).map((l) => l.name), ['ci']);
  t.true(labels.byName.has('dev'));
  t.false(labels.byName.has('ci'));
  t.false(labels.byId.has(3));
  const c = labels.resolve([], allocate, T0 + 2);
  t.deepEqual([c.ids, c.created, c.claims, c.persisted], [[], [], [], null]);
});

test('label catalogue: a refused write removes the labels it created and returns them (nothing used them)', (t) => {
  const { labels, allocate } = catalogue();
  labels.settle(labels.resolve(['prod'], allocate, T0).claims, true);
  const r = labels.resolve(['prod', 'new1', 'new2'], allocate, T0);
  t.deepEqual(r.ids, [1, 2, 3]);
  const dropped = labels.settle(r.claims, false);
  t.deepEqual(dropped.map((l) => [l.id, l.name]).sort(), [[2, 'new1'], [3, 'new2']]);
  t.deepEqual([...labels.byId.keys()], [1]);
  t.deepEqual([...labels.byName.keys()], ['prod']);
  // the name is free again and comes back under a new id (ids are never reused)
  const again = labels.resolve(['new1'], allocate, T0);
  t.deepEqual(again.ids, [4]);
  t.deepEqual(labels.settle(again.claims, true), []);
  t.is(labels.byName.get('new1')?.id, 4);
  // settling twice does nothing more
  t.deepEqual(labels.settle(again.claims, false), []);
  t.true(labels.byId.has(4));
});

for (const order of ['fail first', 'succeed first'] as const) {
  test(`label catalogue: two writes claim the same new label; one fails, one succeeds (${order}) → it stays`, (t) => {
    const { labels, allocate } = catalogue();
    const a = labels.resolve(['shared', 'only-a'], allocate, T0);
    const b = labels.resolve(['shared'], allocate, T0);
    t.deepEqual(a.ids, [1, 2]);
    t.deepEqual(b.ids, [1], 'the second write finds the provisional label');
    t.deepEqual(b.created, [], 'and does not create it again');
    t.deepEqual(b.claims, [1], 'but holds a claim on it');
    if (order === 'fail first') {
      t.deepEqual(labels.settle(a.claims, false).map((l) => l.name), ['only-a']);
      t.true(labels.byName.has('shared'), 'still claimed by the other write');
      t.deepEqual(labels.settle(b.claims, true), []);
    } else {
      t.deepEqual(labels.settle(b.claims, true), []);
      t.deepEqual(labels.settle(a.claims, false).map((l) => l.name), ['only-a']);
    }
    t.deepEqual([...labels.byName.keys()], ['shared']);
    // confirmed now: a later failure does not take it away
    t.deepEqual(labels.settle(labels.resolve(['shared'], allocate, T0).claims, false), []);
    t.true(labels.byId.has(1));
  });
}

test('label catalogue: two writes claim the same new label and both fail → it goes', (t) => {
  const { labels, allocate } = catalogue();
  const a = labels.resolve(['shared'], allocate, T0);
  const b = labels.resolve(['shared'], allocate, T0);
  t.deepEqual(labels.settle(a.claims, false), [], 'the other write still holds it');
  t.true(labels.byName.has('shared'));
  t.deepEqual(labels.settle(b.claims, false).map((l) => [l.id, l.name]), [[1, 'shared']]);
  t.is(labels.byName.size, 0);
  t.is(labels.byId.size, 0);
});

test('label catalogue: create, rename and remove; a provisional label made real by a direct write stays', (t) => {
  const { labels, allocate } = catalogue();
  const { label } = labels.create(allocate(), 'x', T0);
  t.is(labels.byName.get('x'), label);
  t.is(labels.touch(label, 'y', T0 + 5), null);
  t.false(labels.byName.has('x'));
  t.is(labels.byName.get('y'), label);
  t.deepEqual([label.created, label.updated], [T0, T0 + 5]);
  t.is(labels.remove(label), null);
  t.is(labels.byId.size, 0);
  // a label a pending playbook write created, then touched by a label write: no longer provisional
  const r = labels.resolve(['z'], allocate, T0);
  labels.touch(labels.byId.get(r.ids[0]!)!, 'z', T0 + 1);
  t.deepEqual(labels.settle(r.claims, false), []);
  t.true(labels.byName.has('z'));
});

test('minimal replies carry only the id; a refusal still carries its errors', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const r = h.create('host', { playbook: s.pb, name: 'web5' }, { minimal: true });
  t.is(r.status, 201);
  t.regex(r.body!, /^\{"id":\d+\}$/);
  const u = h.update('host', s.host, { ok: 1 }, { minimal: true });
  t.is(u.body, `{"id":${s.host}}`);
  const bad = h.create('host', { playbook: 999, name: 'x' }, { minimal: true });
  t.is(bad.status, 400);
  t.is(bad.body, '{"playbook":["Invalid pk \\"999\\" - object does not exist."]}');
});

test('JSON fields are stored and returned as the text the front sent', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const content = '{"2":"b","1":"a","big":123456789012345678901234567890,"f":1.0,"s":"é ☃"}';
  const r = h.result(s, { content });
  t.true(h.getReply('result', r).body.includes(',"content":' + content + ','));
  const rec = h.make('record', { playbook: s.pb, key: 'v', type: 'json', value: '[1,{"b":1,"a":2}]' });
  t.true(h.getReply('record', rec).body.includes('"value":[1,{"b":1,"a":2}]'));
  const task = h.make('task', { playbook: s.pb, play: s.play, file: s.file, action: 'x', lineno: 1, handler: true, tags: '"notalist"' });
  t.is(h.detail('task', task).tags, 'notalist');
  t.is(h.detail('task', s.task).tags.length, 0, 'tags default to []');
  t.is(h.detail('record', h.make('record', { playbook: s.pb, key: 'd', type: 't' })).value, '', 'value defaults to ""');
});

// ---- blobs (DESIGN.md "Persistence": large JSON values live outside the rows) ----

test('large JSON values go to blobs, not into journaled events; a value reset to its default drops its blob', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const pb = h.make('playbook', { path: '/b.yml', runner_version: '2.14', arguments: '{"limit":"web"}' });
  const r = h.result(s, { content: '{"msg":"hi"}' });
  h.update('host', s.host, { facts: '{"os":"linux"}' });
  const rec = h.make('record', { playbook: s.pb, key: 'k', type: 'json', value: '[1]' });
  t.is(h.store.blobs.get(blobKey.arguments(pb)), '{"limit":"web"}');
  t.is(h.store.blobs.get(blobKey.content(r)), '{"msg":"hi"}');
  t.is(h.store.blobs.get(blobKey.facts(s.host)), '{"os":"linux"}');
  t.is(h.store.blobs.get(blobKey.value(rec)), '[1]');
  t.is(h.store.blobs.get(blobKey.file(sha1('- hosts: all\n'))), '- hosts: all\n');
  t.false(h.store.blobs.has(blobKey.arguments(s.pb)), 'a default value is not stored');
  t.false(h.store.blobs.has(blobKey.content(h.result(s))), 'a default value is not stored');
  for (const ev of h.store.events) {
    if (ev.e === 'delete') continue;
    for (const field of ['content', 'facts', 'arguments', 'value']) t.false(field in ev.d, `${ev.e} ${ev.t}: ${field} is not journaled`);
  }
  t.like(h.store.events.find((ev) => ev.e === 'create' && ev.t === 'file'), { d: { sha1: sha1('- hosts: all\n') } });
  // and the representations splice them back in
  t.deepEqual(h.detail('playbook', pb).arguments, { limit: 'web' });
  t.deepEqual(h.detail('result', r).content, { msg: 'hi' });
  t.deepEqual(h.detail('host', s.host).facts, { os: 'linux' });
  t.deepEqual(h.detail('record', rec).value, [1]);
  t.is(h.detail('file', s.file).content, '- hosts: all\n');
  // back to the default: the blob goes, the default shows
  t.is(h.update('result', r, { content: '{}' }).status, 200);
  t.false(h.store.blobs.has(blobKey.content(r)));
  t.deepEqual(h.detail('result', r).content, {});
  t.is(h.update('record', rec, { value: '""' }).status, 200);
  t.false(h.store.blobs.has(blobKey.value(rec)));
  t.is(h.detail('record', rec).value, '');
  t.deepEqual(blobProblems(h), []);
});

test('deleting rows removes their blobs, cascades included', (t) => {
  const h = new Harness();
  const x = bigScaffold(h);
  for (const id of Object.values(x.results)) h.update('result', id, { content: `{"id":${id}}` });
  h.update('host', x.host2, { facts: '{"a":1}' });
  h.update('playbook', x.pb, { arguments: '{"v":true}' });
  h.update('result', x.otherResult, { content: '{"other":1}' });
  t.deepEqual(blobProblems(h), []);
  h.remove('host', x.host2); // its facts and results b, d, f
  for (const key of [blobKey.facts(x.host2), blobKey.content(x.results.b), blobKey.content(x.results.d), blobKey.content(x.results.f)]) {
    t.false(h.store.blobs.has(key), String(key));
  }
  t.true(h.store.blobs.has(blobKey.content(x.results.a)));
  t.deepEqual(blobProblems(h), []);
  h.remove('record', x.record);
  t.false(h.store.blobs.has(blobKey.value(x.record)));
  h.remove('playbook', x.pb);
  t.deepEqual([...h.store.blobs.keys()].filter((k) => typeof k === 'number'), [blobKey.content(x.otherResult)], 'only the other playbook’s blobs are left');
  t.deepEqual(blobProblems(h), []);
});

test('a file text is stored once per hash and removed when the last file using it goes', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const o = h.scaffold('other');
  const text = '- hosts: all\n';
  const key = blobKey.file(sha1(text));
  // s.file and o.file (two playbooks) share the text
  t.is(h.detail('file', o.file).sha1, sha1(text));
  t.is([...h.store.blobs.keys()].filter((k) => typeof k === 'string').length, 1);
  const same = h.make('file', { playbook: s.pb, path: '/copy.yml', content: text });
  const lone = h.make('file', { playbook: s.pb, path: '/lone.yml', content: 'lone' });
  const loneKey = blobKey.file(sha1('lone'));
  t.is(h.store.blobs.get(loneKey), 'lone');

  // a file whose hash no other file uses: its blob goes with it
  t.is(h.remove('file', lone).status, 204);
  t.false(h.store.blobs.has(loneKey), 'the only file with that content is gone: so is its text');
  // files that share their text: it stays until the last one goes
  t.is(h.remove('file', same).status, 204);
  t.is(h.store.blobs.get(key), text, 'two more files use it');
  t.is(h.remove('file', s.file).status, 204);
  t.is(h.store.blobs.get(key), text, 'a file of another playbook still uses it');
  t.is(h.detail('file', o.file).content, text);
  t.is(h.remove('playbook', o.pb).status, 204);
  t.false(h.store.blobs.has(key), 'the last file using it went with its playbook');
  t.deepEqual(blobProblems(h), []);
});

test('a file content update moves it to the new text; the old one goes once unused', (t) => {
  const h = new Harness();
  const s = h.scaffold();
  const f2 = h.make('file', { playbook: s.pb, path: '/two.yml', content: 'v1' });
  const f3 = h.make('file', { playbook: s.pb, path: '/three.yml', content: 'v1' });
  t.is(h.update('file', f2, { content: 'v2' }).status, 200);
  t.is(h.store.blobs.get(blobKey.file(sha1('v1'))), 'v1', 'still used by another file');
  t.is(h.store.blobs.get(blobKey.file(sha1('v2'))), 'v2');
  t.is(h.update('file', f3, { content: 'v2' }).status, 200);
  t.false(h.store.blobs.has(blobKey.file(sha1('v1'))), 'no file uses v1 any more');
  t.is(h.detail('file', f3).content, 'v2');
  t.is(h.update('file', f3, { content: 'v2' }).status, 200, 'rewriting the same text');
  t.is(h.store.blobs.get(blobKey.file(sha1('v2'))), 'v2');
  t.is(h.remove('file', f2).status, 204);
  t.is(h.store.blobs.get(blobKey.file(sha1('v2'))), 'v2');
  t.is(h.remove('file', f3).status, 204);
  t.false(h.store.blobs.has(blobKey.file(sha1('v2'))));
  t.deepEqual(blobProblems(h), []);
});

// ---- replay equivalence (DESIGN.md "Persistence") ---------------------------------------------

const TYPES = ['playbook', 'play', 'task', 'host', 'result', 'file', 'record'] as const;
const RESULT_STATUSES = ['ok', 'failed', 'skipped', 'unreachable', 'changed', 'ignored', 'unknown'];
const RUN_STATUSES = ['unknown', 'running', 'completed', 'failed', 'expired'];

interface RunOutcome { h: Harness; overridden: Set<number>; statuses: Map<number, number>; refused: number; created: number; deleted: number }

/** A seeded random mix of creates, updates (PATCH and PUT-like) and deletes of every type. */
function randomRun(seed: number, steps: number): RunOutcome {
  const rnd = mulberry32(seed);
  const h = new Harness();
  const st = h.shard.state;
  const overridden = new Set<number>();
  const statuses = new Map<number, number>();
  let refused = 0; let created = 0; let deleted = 0;
  const int = (n: number) => Math.floor(rnd() * n);
  const chance = (p: number) => rnd() < p;
  const pick = <X>(xs: readonly X[]): X | undefined => (xs.length ? xs[int(xs.length)] : undefined);
  const idsOf = (m: { keys(): Iterable<number> }) => [...m.keys()];
  const time = () => T0 + int(2000) * 1_000_000 + int(1_000_000);
  const uuid = () => '5e0c9a5e-0000-4000-8000-' + String(int(1e12)).padStart(12, '0');
  const names = ['web1', 'web2', 'db1', 'db2', 'lb'];
  const paths = ['/a.yml', '/b.yml', '/roles/r/tasks/main.yml'];
  const contents = ['', 'x', '- hosts: all\n'];
  const keys = ['k1', 'k2', 'k3'];
  const labelNames = ['prod', 'dev', 'ci', 'nightly'];
  const json = () => pick(['{}', '[]', '"s"', '{"b":1,"a":[1,2]}', '{"10":1,"2":2}', '123456789012345678901'])!;
  /** an FK of `type` in agg, sometimes of another playbook, sometimes missing */
  const fk = (agg: Map<number, unknown>, global: Map<number, unknown>): number => {
    const r = rnd();
    if (r < 0.04) return 100000 + int(10);
    if (r < 0.08) return pick(idsOf(global)) ?? 1;
    return pick(idsOf(agg)) ?? 100000;
  };
  /** started/ended, mostly consistent; now and then ended before started (a refusal) */
  const timing = (set: Record<string, unknown>) => {
    const started = time();
    if (chance(0.4)) set.started = started;
    if (chance(0.3)) set.ended = chance(0.2) ? null : chance(0.1) ? started - 1 - int(1e9) : started + int(1e9) + 2_000_000_000;
  };

  for (let step = 0; step < steps; step++) {
    const pbIds = idsOf(st.aggregates);
    const op = rnd();
    let reply: WriteReply;
    if (pbIds.length < 2 || (op < 0.03 && pbIds.length < 6)) {
      const set: Record<string, unknown> = { path: pick(paths), runner_version: '2.' + int(20), arguments: json() };
      if (chance(0.5)) set.status = pick(RUN_STATUSES);
      if (chance(0.5)) set.name = chance(0.2) ? null : 'pb' + int(100);
      timing(set);
      const ids = h.labels(labelNames.filter(() => chance(0.3)));
      if (ids.length) set.labels = ids;
      reply = h.create('playbook', set);
    } else if (op < 0.55) {
      // create a child
      const pb = pick(pbIds)!;
      const agg = st.aggregates.get(pb)!;
      let type = pick(['play', 'task', 'task', 'host', 'result', 'result', 'result', 'result', 'result', 'file', 'record'] as const)!;
      // prerequisites first, so that most creates can succeed
      if (type === 'result' && agg.tasks.size === 0) type = 'task';
      if (type === 'result' && agg.hosts.size === 0) type = 'host';
      if (type === 'task' && agg.files.size === 0) type = 'file';
      if (type === 'task' && agg.plays.size === 0) type = 'play';
      const set: Record<string, unknown> = { playbook: chance(0.02) ? 99999 : pb };
      switch (type) {
        case 'play': set.uuid = uuid(); if (chance(0.5)) set.name = 'p' + int(9); timing(set); break;
        case 'task':
          Object.assign(set, { play: fk(agg.plays, st.plays), file: fk(agg.files, st.files), action: pick(['ping', 'copy', 'debug']), lineno: int(200), handler: chance(0.2) });
          if (chance(0.5)) set.tags = json();
          if (chance(0.5)) set.status = pick(RUN_STATUSES);
          timing(set);
          break;
        case 'host':
          set.name = pick(names);
          if (chance(0.5)) set.facts = json();
          break;
        case 'result':
          Object.assign(set, { play: fk(agg.plays, st.plays), task: fk(agg.tasks, st.tasks), host: fk(agg.hosts, st.hosts), content: json() });
          if (chance(0.9)) set.status = pick(RESULT_STATUSES);
          if (chance(0.6)) set.changed = chance(0.5);
          if (chance(0.6)) set.ignore_errors = chance(0.5);
          if (chance(0.1)) set.delegated_to = [fk(agg.hosts, st.hosts)];
          timing(set);
          break;
        case 'file': set.path = pick(paths); set.content = pick(contents); break;
        case 'record': set.key = pick(keys); set.type = 'text'; if (chance(0.7)) set.value = json(); break;
      }
      reply = h.create(type, set);
    } else if (op < 0.9) {
      // update a child or a playbook
      const type = pick(['playbook', 'play', 'task', 'host', 'host', 'result', 'result', 'result', 'file', 'record'] as const)!;
      const id = pick(idsOf(st.index(type)));
      if (id === undefined) continue;
      const row: any = type === 'playbook' ? st.aggregates.get(id)!.playbook : st.index(type).get(id);
      const agg = st.aggregates.get(type === 'playbook' ? id : row.playbook)!;
      const put = chance(0.2);
      const set: Record<string, unknown> = {};
      if (chance(0.03) && type !== 'playbook') set.playbook = pick(pbIds);
      switch (type) {
        case 'playbook': {
          if (chance(0.5)) set.status = pick(RUN_STATUSES);
          if (chance(0.3)) set.name = 'pb' + int(100);
          if (chance(0.3) || put) set.arguments = put && chance(0.5) ? '{}' : json();
          if (chance(0.3)) set.labels = h.labels(labelNames.filter(() => chance(0.3)));
          if (chance(0.2)) set.controller = 'ctl' + int(3);
          timing(set);
          break;
        }
        case 'play': if (chance(0.5)) set.status = pick(RUN_STATUSES); if (chance(0.3)) set.name = null; timing(set); break;
        case 'task':
          if (chance(0.4)) set.play = fk(agg.plays, st.plays);
          if (chance(0.3)) set.file = fk(agg.files, st.files);
          if (chance(0.4)) set.status = pick(RUN_STATUSES);
          if (put || chance(0.2)) set.tags = put && chance(0.5) ? '[]' : json();
          timing(set);
          break;
        case 'host':
          if (chance(0.2)) set.name = pick(names);
          if (put || chance(0.3)) set.facts = put && chance(0.5) ? '{}' : json();
          if (chance(0.15)) for (const c of ['changed', 'failed', 'ok', 'skipped', 'unreachable']) if (chance(0.5)) set[c] = int(20);
          break;
        case 'result':
          if (chance(0.5)) set.status = pick(RESULT_STATUSES);
          if (chance(0.4)) set.changed = chance(0.5);
          if (chance(0.4)) set.ignore_errors = chance(0.5);
          if (chance(0.2)) set.host = fk(agg.hosts, st.hosts);
          if (chance(0.1)) set.task = fk(agg.tasks, st.tasks);
          if (chance(0.1)) set.play = fk(agg.plays, st.plays);
          if (put || chance(0.2)) set.content = put && chance(0.5) ? '{}' : json();
          timing(set);
          break;
        case 'file':
          if (chance(0.5)) set.content = pick(contents);
          if (chance(0.3)) set.path = pick(paths);
          break;
        case 'record':
          if (chance(0.3)) set.key = pick(keys);
          if (put || chance(0.5)) set.value = put && chance(0.5) ? '""' : json();
          break;
      }
      reply = h.update(type, id, set, { put });
      if (reply.status === 200 && type === 'host' && ['changed', 'failed', 'ok', 'skipped', 'unreachable'].some((c) => c in set)) overridden.add(id);
    } else {
      const type = pick(['play', 'task', 'task', 'host', 'host', 'result', 'result', 'result', 'result', 'file', 'record', 'record',
        ...(chance(0.25) ? ['playbook' as const] : [])] as const)!;
      const id = chance(0.03) ? 777777 : pick(idsOf(st.index(type)));
      if (id === undefined) continue;
      reply = h.remove(type, id);
      if (reply.status === 204) deleted++;
    }
    statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
    // a list by task or host builds a playbook's result groups, which the writes after it keep up to date
    if (chance(0.02)) st.aggregates.get(pick(idsOf(st.aggregates))!)?.groups();
    // reads between writes warm the serializer's caches, so a stale cache would show in the final views
    if (chance(0.3)) {
      const type = pick(TYPES)!;
      const id = pick(idsOf(st.index(type)));
      if (id !== undefined) h.getReply(type, id);
    }
    if (reply.status >= 400) refused++;
    if (reply.status === 201) created++;
  }
  return { h, overridden, statuses, refused, created, deleted };
}

/** A row as plain data, without the serializer's cache (a result's `updated` is a getter: read it too). */
function plain(row: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) if (k !== 'summaryCache') out[k] = v;
  if (row instanceof ResultRow) out.updated = row.updated;
  return out;
}

/** Where two states differ (empty when they are the same), cache fields aside. */
function diffStates(live: ShardState, replayed: ShardState): string[] {
  const out: string[] = [];
  const same = (what: string, a: unknown, b: unknown) => { if (!isDeepStrictEqual(a, b)) out.push(`${what}: ${JSON.stringify(a)} ≠ ${JSON.stringify(b)}`); };
  for (const type of TYPES) same(`${type} ids (and their order)`, [...live.index(type).keys()], [...replayed.index(type).keys()]);
  for (const [id, agg] of live.aggregates) {
    const other = replayed.aggregates.get(id);
    if (!other) continue; // reported by the ids above
    same(`playbook ${id}`, plain(agg.playbook), plain(other.playbook));
    for (const m of ['plays', 'tasks', 'hosts', 'results', 'files', 'records'] as const) {
      same(`${m} of playbook ${id}`, [...agg[m].values()].map(plain), [...other[m].values()].map(plain));
    }
    for (const m of ['hostByName', 'fileByPath', 'recordByKey'] as const) {
      same(`${m} of playbook ${id}`, [...agg[m]].map(([k, r]) => [k, r.id]).sort(), [...other[m]].map(([k, r]) => [k, r.id]).sort());
    }
  }
  same('label replica', [...live.labels], [...replayed.labels]);
  same('max ids', live.maxIds, replayed.maxIds);
  same('file refs', [...live.fileRefs].sort(), [...replayed.fileRefs].sort());
  same('run gauges', live.runs.gauges(), replayed.runs.gauges());
  return out;
}

/** The run gauges (src/shard/run_tally.ts) recounted from every row. */
function recountRuns(state: ShardState): ReturnType<ShardState['runs']['gauges']> {
  const byStatus: Record<string, number> = { unknown: 0, running: 0, completed: 0, failed: 0, expired: 0 };
  let oldest: number | null = null;
  let unreachable = 0;
  for (const agg of state.aggregates.values()) {
    const pb = agg.playbook;
    byStatus[pb.status] = (byStatus[pb.status] ?? 0) + 1;
    if (pb.status !== 'running') continue;
    if (oldest === null || pb.started < oldest) oldest = pb.started;
    for (const h of agg.hosts.values()) if (h.unreachable > 0) unreachable++;
  }
  return { byStatus, oldestRunningStarted: oldest, unreachableHostsRunning: unreachable };
}

/** The first client-visible difference between two views, or null. */
function diffViews(live: string[], replayed: string[]): string | null {
  if (live.length !== replayed.length) return `${live.length} views ≠ ${replayed.length}`;
  for (let i = 0; i < live.length; i++) if (live[i] !== replayed[i]) return `view #${i}:\n${live[i]}\n≠\n${replayed[i]}`;
  return null;
}

/** A fresh shard rebuilt from journaled events only, over a copy of the live blobs; the
 * front then re-sends its label catalogue, as it does after recovery. */
function replay(live: Shard, events: readonly Event[]): Shard {
  const replica = new Shard({ store: new ReplayStore((live.store as MemoryStore).blobs) });
  for (const ev of events) replica.state.apply(decode<Event>(encode(ev)));
  replica.state.releasedFiles = [];
  replica.handle({ k: 'labels', upsert: [...live.state.labels], remove: [] });
  return replica;
}

/** Every detail and every list, as a client would read them. */
function everything(shard: Shard, state: ShardState, compat: boolean): string[] {
  const out: string[] = [];
  for (const type of TYPES) {
    for (const id of state.index(type).keys()) {
      out.push((shard.handle({ k: 'get', rid: 1, type, id, ...(compat ? { ara: true as const } : {}) }) as GetReply).body);
    }
    const serializer = new Serializer(state, shard.store, compat);
    for (const order of [[], [['updated', true]], [['started', false], ['ended', true]]] as Array<Array<[string, boolean]>>) {
      if (order.length && (type === 'host' || type === 'file' || type === 'record') && order[0]![0] === 'started') continue;
      const { count, rows } = runList(state, serializer, { type, filters: [], order, skip: 0, take: 1e9 });
      out.push(type + ' ' + count + ' ' + JSON.stringify(rows));
    }
  }
  return out;
}

for (const seed of [1, 2, 3, 20261122, 0xdecaf]) {
  test(`replaying the journal rebuilds the live state exactly (seed ${seed})`, (t) => {
    const run = randomRun(seed, 500);
    const { h } = run;
    // the run must exercise what it claims to: creates, refusals, deletes, live results
    t.log(JSON.stringify([...run.statuses]), 'alive', TYPES.map((x) => h.shard.state.index(x).size).join(' '));
    t.true(run.created > 100, `created ${run.created}`);
    t.true(run.refused > 10, `refused ${run.refused}`);
    t.true(run.deleted > 10, `deleted ${run.deleted}`);
    t.true(h.shard.state.results.size > 10, `results alive ${h.shard.state.results.size}`);
    const liveView = everything(h.shard, h.shard.state, false);

    const replica = replay(h.shard, h.store.events);
    t.deepEqual(diffStates(h.shard.state, replica.state), []);
    // the run gauges kept as writes came are a recount's; counters count the live writes, not the replay
    t.deepEqual(h.shard.state.runs.gauges(), recountRuns(h.shard.state));
    t.is(h.shard.runCounters.totals().started, h.store.events.filter((e) => e.e === 'create' && e.t === 'playbook').length);
    t.is(replica.runCounters.totals().started, 0);
    t.is(diffViews(liveView, everything(replica, replica.state, false)), null);
    // and once more in compat mode, from two independent replays
    const x = replay(h.shard, h.store.events); const y = replay(h.shard, h.store.events);
    everything(x, x.state, true); // warm x's caches, then change nothing: views must still agree
    t.is(diffViews(everything(x, x.state, true), everything(y, y.state, true)), null);
  });

  test(`counters equal a recount from the rows after a random run (seed ${seed})`, (t) => {
    const { h, overridden } = randomRun(seed, 500);
    const st = h.shard.state;
    // every row of the global index lives in its aggregate and vice versa
    for (const type of ['play', 'task', 'host', 'result', 'file', 'record'] as const) {
      let inAggs = 0;
      for (const agg of st.aggregates.values()) {
        const m = (agg as any)[type + 's'] as { size: number; values(): IterableIterator<any> };
        inAggs += m.size;
        for (const row of m.values()) t.is(st.index(type).get(row.id), row, `${type} ${row.id} indexed`);
      }
      t.is(st.index(type).size, inAggs, `${type}: no orphans in the global index`);
      for (const row of st.index(type).values()) t.true(st.aggregates.has(row.playbook), `${type} ${row.id} has a playbook`);
    }
    // referential integrity after cascades
    for (const task of st.tasks.values()) {
      t.true(st.plays.has(task.play), `task ${task.id} play`);
      t.true(st.files.has(task.file), `task ${task.id} file`);
    }
    for (const r of st.results.values()) {
      t.true(st.plays.has(r.play) && st.tasks.has(r.task) && st.hosts.has(r.host), `result ${r.id} FKs`);
    }
    for (const play of st.plays.values()) {
      const tasks = [...st.tasks.values()].filter((x) => x.play === play.id).length;
      const results = [...st.results.values()].filter((x) => x.play === play.id).length;
      t.deepEqual({ id: play.id, tasks: play.tasks, results: play.results }, { id: play.id, tasks, results });
    }
    for (const task of st.tasks.values()) {
      const results = [...st.results.values()].filter((x) => x.task === task.id).length;
      t.deepEqual({ id: task.id, results: task.results }, { id: task.id, results });
    }
    let checked = 0;
    for (const host of st.hosts.values()) {
      t.true(host.ok >= 0 && host.changed >= 0 && host.failed >= 0 && host.skipped >= 0 && host.unreachable >= 0, `host ${host.id} counters`);
      if (overridden.has(host.id)) continue;
      const expect = { ...ZERO };
      for (const r of st.results.values()) {
        if (r.host !== host.id) continue;
        // SPEC §4 table, written out independently of rows.ts
        const shown = r.status === 'ok' && r.changed ? 'changed' : r.status === 'failed' && r.ignoreErrors ? 'ignored' : r.status;
        if (shown === 'ok') expect.ok++;
        else if (shown === 'changed') { expect.ok++; expect.changed++; }
        else if (shown === 'ignored') { expect.ok++; if (r.changed) expect.changed++; }
        else if (shown === 'failed') { expect.failed++; if (r.changed) expect.changed++; }
        else if (shown === 'skipped') expect.skipped++;
        else if (shown === 'unreachable') expect.unreachable++;
      }
      const got = { changed: host.changed, failed: host.failed, ok: host.ok, skipped: host.skipped, unreachable: host.unreachable };
      t.deepEqual({ id: host.id, ...got }, { id: host.id, ...expect });
      checked++;
    }
    t.true(checked > 3, `recounted ${checked} hosts`);
    for (const agg of st.aggregates.values()) {
      const items = h.detail('playbook', agg.playbook.id).items;
      t.deepEqual(items, {
        plays: [...st.plays.values()].filter((x) => x.playbook === agg.playbook.id).length,
        tasks: [...st.tasks.values()].filter((x) => x.playbook === agg.playbook.id).length,
        results: [...st.results.values()].filter((x) => x.playbook === agg.playbook.id).length,
        hosts: [...st.hosts.values()].filter((x) => x.playbook === agg.playbook.id).length,
        files: [...st.files.values()].filter((x) => x.playbook === agg.playbook.id).length,
        records: [...st.records.values()].filter((x) => x.playbook === agg.playbook.id).length,
      });
    }
    // results of an aggregate are in id order, as lists show them
    for (const agg of st.aggregates.values()) {
      const ids = [...agg.results.keys()];
      t.deepEqual(ids, [...ids].sort((a, b) => a - b), `results of playbook ${agg.playbook.id} in id order`);
    }
  });

  test(`the results of a task, host, play or playbook (and a play's tasks) list as a filter of every row does, any order, page or cursor (seed ${seed})`, (t) => {
    const { h } = randomRun(seed, 500);
    const st = h.shard.state;
    const serializer = new Serializer(st, h.shard.store, false);
    // each group is exactly its parent's results, in id order, and no group is left for a parent without any;
    // groups built during the run were kept up to date, the others are built now
    const built = [...st.aggregates.values()].filter((agg) => agg.groupsIfBuilt !== null && agg.results.size > 0).length;
    t.true(built >= 2, `playbooks whose groups were built while written: ${built}`);
    let groups = 0;
    for (const agg of st.aggregates.values()) {
      const { byTask, byHost } = agg.groups();
      for (const [by, col] of [[byTask, 'task'], [byHost, 'host']] as const) {
        for (const [parent, rows] of by.entries()) {
          groups++;
          t.deepEqual(rows.map((r) => r.id), [...agg.results.values()].filter((r) => r[col] === parent).map((r) => r.id), `${col} ${parent} of playbook ${agg.playbook.id}`);
          t.true(rows.length > 0, `no empty ${col} group`);
        }
        const parents = new Set([...agg.results.values()].map((r) => r[col]));
        t.is([...by.entries()].length, parents.size, `a ${col} group for every ${col} with results`);
      }
    }
    t.true(groups > 10, `groups ${groups}`);
    // a list narrowed to a group (kind 'id') against the same filter as a scan of every result (kind 'exact')
    const orders: Array<Array<[string, boolean]>> = [[], [['id', true]], [['started', false]]];
    let compared = 0;
    for (const col of ['task', 'host', 'play', 'playbook'] as const) {
      const parents = [...(col === 'task' ? st.tasks : col === 'host' ? st.hosts : col === 'play' ? st.plays : st.aggregates).keys(), 999_999];
      for (const parent of parents) {
        const expected = [...st.results.values()].filter((r) => r[col] === parent).map((r) => r.id);
        const other = expected.length ? st.results.get(expected[0]!)! : null;
        const extras: NormalizedFilter[][] = [[], [{ kind: 'status', column: 'status', value: ['ok', 'failed'] }]];
        if (other) extras.push([{ kind: 'id', column: col === 'task' ? 'host' : 'task', value: col === 'task' ? other.host : other.task }]);
        if (other) extras.push([{ kind: 'id', column: 'playbook', value: other.playbook }]);
        for (const order of orders) {
          for (const extra of extras) {
            const bounds: Array<ListQuery['bound']> = [undefined];
            for (const id of [expected[0], expected[Math.floor(expected.length / 2)], expected.at(-1)! + 1, 0]) {
              if (id === undefined || Number.isNaN(id)) continue;
              const keys = order.length === 0 ? [id] : order[0]![0] === 'id' ? [id, id] : [st.results.get(id)?.started ?? T0, id];
              bounds.push({ keys, back: false }, { keys, back: true });
            }
            for (const bound of bounds) {
              for (const [skip, take] of [[0, 1e9], [0, 3], [2, 3]]) {
                if (bound && skip > 0) continue;
                const q = (kind: 'id' | 'exact'): ListQuery => ({
                  type: 'result', filters: [{ kind, column: col, value: parent }, ...extra], order, skip, take, ...(bound ? { bound } : {}),
                });
                const narrowed = runList(st, serializer, q('id'));
                const scanned = runList(st, serializer, q('exact'));
                t.deepEqual(narrowed, scanned, JSON.stringify(q('id')));
                if (extra.length === 0 && !bound) t.is(narrowed.count, expected.length);
                compared++;
              }
            }
          }
        }
      }
    }
    // every result (and every playbook) of the shard, an array in id order, against a filter every row meets, which takes the generic path
    for (const [type, order] of [...orders.map((o) => ['result', o] as const), ['playbook', []] as const, ['playbook', [['id', true]]] as const, ['playbook', [['started', false]]] as const]) {
      const ids = type === 'result' ? [...st.results.keys()] : [...st.aggregates.keys()].sort((a, b) => a - b);
      t.deepEqual(st.playbooksInIdOrder().map((agg) => agg.id), [...st.aggregates.keys()].sort((a, b) => a - b), 'playbooks in id order');
      const bounds: Array<ListQuery['bound']> = [undefined];
      for (const id of [ids[0], ids[Math.floor(ids.length / 3)], ids.at(-1)! + 1]) {
        if (id === undefined) continue;
        const started = type === 'result' ? st.results.get(id)?.started : st.aggregates.get(id)?.playbook.started;
        const keys = order.length === 0 ? [id] : order[0]![0] === 'id' ? [id, id] : [started ?? T0, id];
        bounds.push({ keys, back: false }, { keys, back: true });
      }
      for (const bound of bounds) {
        for (const [skip, take] of [[0, 1e9], [0, 4], [3, 4]]) {
          if (bound && skip > 0) continue;
          const q = (filters: NormalizedFilter[]): ListQuery => ({ type, filters, order: order as Array<[string, boolean]>, skip, take, ...(bound ? { bound } : {}) });
          t.deepEqual(runList(st, serializer, q([])), runList(st, serializer, q([{ kind: 'int_gt', column: 'id', value: 0 }])), JSON.stringify(q([])));
          compared++;
        }
      }
    }
    // tasks of one play: narrowed to its playbook's tasks
    for (const play of [...st.plays.keys(), 999_999]) {
      for (const order of [[], [['name', true]]] as Array<Array<[string, boolean]>>) {
        const q = (kind: 'id' | 'exact'): ListQuery => ({ type: 'task', filters: [{ kind, column: 'play', value: play }], order, skip: 0, take: 1e9 });
        t.deepEqual(runList(st, serializer, q('id')), runList(st, serializer, q('exact')), `tasks of play ${play}`);
        compared++;
      }
    }
    t.true(compared > 500, `compared ${compared}`);
  });

  test(`the store holds the last written value of every live row and no orphan blob after a random run (seed ${seed})`, (t) => {
    const { h } = randomRun(seed, 500);
    t.true(h.store.blobs.size > 10, `blobs ${h.store.blobs.size}`);
    t.deepEqual(blobProblems(h), []);
  });
}

test('the journal holds only plain data that survives the codec unchanged, without large values, each event naming its playbook', (t) => {
  const { h } = randomRun(7, 200);
  for (const ev of h.store.events) t.deepEqual(decode(encode(ev)), ev);
  t.true(h.store.events.every((ev) => ev.e !== 'create' || typeof ev.d.id === 'number'));
  t.true(h.store.events.every((ev) => ev.e === 'delete'
    || !['content', 'facts', 'arguments', 'value'].some((field) => field in ev.d)), 'large values are in blobs only');
  // `p` is the playbook the event belongs to, as of when it happened
  const st = new ShardState();
  for (const ev of h.store.events) {
    const owner = ev.e === 'create'
      ? (ev.t === 'playbook' ? ev.d.id : ev.d.playbook)
      : (ev.t === 'playbook' ? ev.id : st.index(ev.t).get(ev.id)?.playbook);
    t.is(ev.p, owner, `${ev.e} ${ev.t}`);
    st.apply(ev);
  }
});

test('the replay check detects a lost event (negative control)', (t) => {
  const { h } = randomRun(1, 300);
  const events = [...h.store.events];
  let last = -1;
  // the last update of a result still there (an update of one deleted later leaves no trace to find)
  events.forEach((ev, i) => { if (ev.e === 'update' && ev.t === 'result' && h.shard.state.results.has(ev.id)) last = i; });
  t.true(last >= 0);
  events.splice(last, 1);
  const replica = replay(h.shard, events);
  t.not(diffStates(h.shard.state, replica.state).length, 0);
  t.not(diffViews(everything(h.shard, h.shard.state, false), everything(replica, replica.state, false)), null);
});

test('the blob check detects a lost, a stale and an orphan blob (negative control)', (t) => {
  const { h } = randomRun(1, 300);
  t.deepEqual(blobProblems(h), []);
  const [key, text] = [...h.store.blobs].find(([k]) => blobKind(k) === 'content')!;
  h.store.blobs.delete(key);
  t.is(blobProblems(h).length, 1, 'lost');
  h.store.blobs.set(key, text + ' ');
  t.is(blobProblems(h).length, 1, 'stale');
  h.store.blobs.set(key, text);
  h.store.blobs.set(blobKey.content(999999), '{}');
  h.store.blobs.set(blobKey.file(sha1('nobody')), 'nobody');
  t.is(blobProblems(h).length, 2, 'orphans');
});

/** A label store whose writes settle when the test says (in the order issued, or not). */
function slowStore() {
  const stored = new Map<number, StoredLabel>();
  const writes: Array<{ settle: (ok: boolean) => void }> = [];
  const issue = (apply: () => void): Promise<unknown> => new Promise((resolve, reject) => {
    writes.push({ settle: (ok) => { if (ok) { apply(); resolve(undefined); } else reject(new Error('disk full')); } });
  });
  const store: LabelStore = {
    putLabel: (id, label) => issue(() => stored.set(id, { ...label })),
    removeLabel: (id) => issue(() => stored.delete(id)),
    labelMaxId: () => Math.max(0, ...stored.keys()),
    allLabels: () => stored.entries(),
    storedLabel: (id) => stored.get(id) ?? null,
  };
  return { store, writes, stored };
}
const tick = () => new Promise((r) => setImmediate(r));
const shownNames = (labels: LabelCatalogue) => [...labels.shownAll()].map(([id, l]) => `${id}:${l.name}`).sort();

test('label catalogue: reads show a label as durable, not a change still on its way (and not one set back)', async (t) => {
  const { store, writes } = slowStore();
  const labels = new LabelCatalogue(store);
  const { label } = labels.create(1, 'a', T0);
  t.is(labels.shown(1), null, 'a create on its way: not shown');
  t.deepEqual(shownNames(labels), []);
  writes.shift()!.settle(true); await tick();
  t.is(labels.shown(1)?.name, 'a');

  // two renames on their way: the first durable is shown, not the second
  labels.touch(label, 'b', T0 + 1);
  labels.touch(label, 'c', T0 + 2);
  t.is(labels.byName.get('c'), label, 'the names are taken at once');
  t.is(labels.shown(1)?.name, 'a');
  writes.shift()!.settle(true); await tick();
  t.is(labels.shown(1)?.name, 'b');
  t.deepEqual(shownNames(labels), ['1:b']);
  writes.shift()!.settle(true); await tick();
  t.is(labels.shown(1)?.name, 'c');

  // a rename that fails: never shown, and set back
  labels.touch(label, 'd', T0 + 3)?.catch(() => {});
  t.is(labels.shown(1)?.name, 'c');
  writes.shift()!.settle(false); await tick();
  t.is(labels.shown(1)?.name, 'c');
  t.is(labels.byId.get(1)?.name, 'c', 'the catalogue is set back');

  // a delete on its way: still shown until durable
  labels.remove(labels.byId.get(1)!);
  t.false(labels.byId.has(1));
  t.is(labels.shown(1)?.name, 'c');
  t.deepEqual(shownNames(labels), ['1:c']);
  writes.shift()!.settle(true); await tick();
  t.is(labels.shown(1), null);
  t.deepEqual(shownNames(labels), []);

  // a label a playbook write creates: shown once that write succeeded, not when only its create is durable
  const r = labels.resolve(['p'], () => 2, T0);
  writes.shift()!.settle(true); await tick();
  t.is(labels.shown(2), null, 'its playbook write is still on its way');
  labels.settle(r.claims, true);
  t.is(labels.shown(2)?.name, 'p');
  t.deepEqual(shownNames(labels), ['2:p']);
});

test('label catalogue: a name a label is leaving stays taken until that is durable (a failed rename or delete gets it back, no twin)', async (t) => {
  const { store, writes, stored } = slowStore();
  const labels = new LabelCatalogue(store);
  const { label } = labels.create(1, 'a', T0);
  writes.shift()!.settle(true); await tick();
  labels.touch(label, 'b', T0 + 1)?.catch(() => {});
  t.true(labels.taken('a'), 'the old name, while the rename is on its way');
  t.false(labels.taken('a', 1), 'but not for the label itself (renamed back)');
  t.true(labels.taken('b'));
  writes.shift()!.settle(false); await tick();
  t.is(labels.byName.get('a'), label, 'the failed rename is set back');
  t.false(labels.taken('b'));
  labels.remove(label)?.catch(() => {});
  t.true(labels.taken('a'), 'the name of a label being deleted');
  writes.shift()!.settle(true); await tick();
  t.false(labels.taken('a'), 'free once the delete is durable');
  t.deepEqual([...stored.keys()], []);
});
