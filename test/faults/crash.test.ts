// Crash test (SPEC §11): concurrent writers drive a real logbook process over
// HTTP, it is SIGKILLed at a random moment, restarted on the same data
// directory, and everything is read back through the API. Every acknowledged
// (2xx) write must be there as it was acknowledged, acknowledged deletes must
// stay gone, `items` and host counters must equal a recount from the stored
// rows, and ids must continue above every id handed out before the crash.
//
// Each writer owns its playbooks, so the writes to any one record are serial
// and "the last acknowledged state" is well defined. A writer has at most one
// request in flight when the process dies: that write may or may not have
// landed, and the check accepts exactly those two outcomes.
//
// Seeded: the seed is printed (t.log); rerun with CRASH_SEED=<seed>. The seed
// fixes every choice (operations, payloads, kill delays); the interleaving of
// the writers and the server's timing still vary from run to run.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { dumpApi, flatten, type Resource } from '../helpers/dump.js';
import { Rng, seedFrom } from '../helpers/random.js';

const CYCLES = 4;
const WRITERS = 8;
const ENV = {
  LOGBOOK_SHARDS: '3',
  LOGBOOK_SNAPSHOT_EVERY: '200',
  LOGBOOK_SNAPSHOT_INTERVAL: '1',
  LOGBOOK_LOG_LEVEL: 'info',
  // flush (the default) unless CRASH_DURABILITY says otherwise: commit and none must survive a process crash too
  ...(process.env.CRASH_DURABILITY ? { LOGBOOK_DURABILITY: process.env.CRASH_DURABILITY } : {}),
};

const KINDS = ['playbook', 'play', 'task', 'host', 'result', 'file', 'record'] as const;
type Kind = typeof KINDS[number];
type ChildKind = Exclude<Kind, 'playbook'>;
const CHILD_KINDS = KINDS.filter((k): k is ChildKind => k !== 'playbook');
const PATH: Record<Kind, Exclude<Resource, 'labels'>> = {
  playbook: 'playbooks', play: 'plays', task: 'tasks', host: 'hosts', result: 'results', file: 'files', record: 'records',
};
const COUNTERS = ['changed', 'failed', 'ok', 'skipped', 'unreachable'] as const;
type Counters = Record<typeof COUNTERS[number], number>;
const RESULT_STATUSES = ['ok', 'failed', 'skipped', 'unreachable', 'changed', 'ignored', 'unknown'] as const;
const LABEL_POOL = ['web', 'db', 'prod', 'staging', 'nightly', 'canary', 'ünïcode', 'team a', 'ops', 'dev', 'blue', 'green'];
/** shared by all writers so that files in different playbooks share content blobs */
const FILE_POOL = ['', '- hosts: all\n  tasks: []\n', '# big\n' + 'x: "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"\n'.repeat(60), 'ünï ☃\n'];

/** Result status as the API shows it (SPEC §4), from what was written. */
function shownStatus(status: string, changed: boolean, ignoreErrors: boolean): string {
  if (status === 'ok' && changed) return 'changed';
  if (status === 'failed' && ignoreErrors) return 'ignored';
  return status;
}

/** What one result adds to its host's counters: Ansible's recap rules (SPEC §4). */
function contribution(shown: string, changed: boolean): Counters {
  const c: Counters = { changed: 0, failed: 0, ok: 0, skipped: 0, unreachable: 0 };
  switch (shown) {
    case 'ok': c.ok = 1; break;
    case 'changed': c.ok = 1; c.changed = 1; break;
    case 'ignored': c.ok = 1; if (changed) c.changed = 1; break;
    case 'failed': c.failed = 1; if (changed) c.changed = 1; break;
    case 'skipped': c.skipped = 1; break;
    case 'unreachable': c.unreachable = 1; break;
    default: break;
  }
  return c;
}

function addCounters(into: Counters, c: Counters, sign: 1 | -1): void {
  for (const k of COUNTERS) into[k] += sign * c[k];
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

interface Rec {
  kind: Kind;
  id: number;
  pb: number;
  /** the last acknowledged write response (or the row adopted from an in-flight write) */
  body: Record<string, any>;
  deleted: boolean;
  /** how an acknowledged delete took it (for messages) */
  deletedBy?: string;
  /** hosts: the counters the API must show, computed here from the writes */
  counters?: Counters;
  /** hosts: whether a PATCH ever set counters (then no recount applies) */
  patched?: boolean;
}

/** What the client knows: every acknowledged write, applied in acknowledgement order. */
class Model {
  readonly recs = Object.fromEntries(KINDS.map((k) => [k, new Map<number, Rec>()])) as Record<Kind, Map<number, Rec>>;
  /** live children per playbook */
  readonly children = new Map<number, Record<ChildKind, number[]>>();
  /** highest id ever seen per type (deleted ones included) */
  readonly maxId: Record<Kind | 'label', number> = { playbook: 0, play: 0, task: 0, host: 0, result: 0, file: 0, record: 0, label: 0 };
  /** label id → name, from acknowledged playbook writes */
  readonly labels = new Map<number, string>();

  add(kind: Kind, body: Record<string, any>): Rec {
    const id = body.id as number;
    const pb = kind === 'playbook' ? id : body.playbook as number;
    const rec: Rec = { kind, id, pb, body, deleted: false };
    this.recs[kind].set(id, rec);
    if (id > this.maxId[kind]) this.maxId[kind] = id;
    if (kind === 'playbook') this.children.set(id, Object.fromEntries(CHILD_KINDS.map((k) => [k, []])) as unknown as Record<ChildKind, number[]>);
    else this.children.get(pb)![kind].push(id);
    return rec;
  }

  live(kind: Kind, id: number): Rec | undefined {
    const rec = this.recs[kind].get(id);
    return rec && !rec.deleted ? rec : undefined;
  }

  /** An acknowledged delete, with the cascade SPEC §3 describes and the counter reversal of §4. */
  remove(kind: Kind, id: number): void {
    const rec = this.live(kind, id);
    if (!rec) return;
    const by = `DELETE ${kind} ${id}`;
    const kids = this.children.get(rec.pb)!;
    const drop = (k: ChildKind, childId: number) => {
      const child = this.live(k, childId);
      if (!child) return;
      child.deleted = true;
      child.deletedBy = by;
      const list = kids[k];
      list.splice(list.indexOf(childId), 1);
      if (k === 'result') {
        const host = this.live('host', child.body.host);
        if (host) addCounters(host.counters!, contribution(child.body.status, child.body.changed), -1);
      }
    };
    switch (kind) {
      case 'playbook':
        for (const k of CHILD_KINDS) {
          for (const childId of [...kids[k]]) Object.assign(this.recs[k].get(childId)!, { deleted: true, deletedBy: by });
        }
        rec.deleted = true;
        rec.deletedBy = by;
        this.children.delete(id);
        return;
      case 'host':
      case 'task':
        for (const r of [...kids.result]) if (this.recs.result.get(r)!.body[kind] === id) drop('result', r);
        drop(kind, id);
        return;
      default:
        drop(kind as ChildKind, id);
    }
  }
}

interface Op {
  method: 'POST' | 'PATCH' | 'DELETE';
  kind: Kind;
  path: string;
  body?: Record<string, any>;
  /** playbook the write belongs to (0 for a new playbook) */
  pb: number;
  target?: number;
  /** apply the acknowledged write to the model (response body; undefined for DELETE) */
  ack(res: any): void;
  /** POST in flight at the kill: does this unexpected row come from it? */
  matches?(row: any): boolean;
  /** PATCH in flight at the kill: does the stored row show it applied? */
  applied?(row: any): boolean;
}

class World {
  readonly model = new Model();
  readonly problems: string[] = [];
  /** default list order (SPEC §5: ascending id) broken: reported, but the cycles go on */
  readonly orderProblems: string[] = [];
  url = '';
  cycle = 0;
  stopping = false;
  /** per type: ids at or below this were handed out before the last restart */
  maxBefore: Record<Kind | 'label', number> = { playbook: 0, play: 0, task: 0, host: 0, result: 0, file: 0, record: 0, label: 0 };
  /** label ids that existed (listed) at the last verification */
  knownLabels = new Set<number>();
  acked = 0;

  problem(msg: string): void { this.problems.push(`cycle ${this.cycle}: ${msg}`); }

  /** Every create: a fresh id above everything handed out before the last restart. */
  checkNewId(kind: Kind | 'label', id: number, what: string): void {
    if (!(id > this.maxBefore[kind])) {
      const holder = kind === 'label' ? undefined : this.model.recs[kind].get(this.maxBefore[kind]);
      const how = holder ? (holder.deleted ? ` (${kind} ${holder.id} of playbook ${holder.pb}, gone by an acknowledged ${holder.deletedBy})` : ` (${kind} ${holder.id} of playbook ${holder.pb}, still stored)`) : '';
      this.problem(`${what}: new ${kind} id ${id} is not above ${this.maxBefore[kind]}, the highest ${kind} id acknowledged before the restart${how}`);
    }
  }

  noteLabels(labels: Array<{ id: number; name: string }>, what: string): void {
    for (const { id, name } of labels) {
      const known = this.model.labels.get(id);
      if (known !== undefined && known !== name) this.problem(`${what}: label ${id} was "${known}", now "${name}"`);
      for (const [otherId, otherName] of this.model.labels) {
        if (otherName === name && otherId !== id) this.problem(`${what}: label "${name}" has id ${id} but was ${otherId}`);
      }
      if (known === undefined && !this.knownLabels.has(id)) this.checkNewId('label', id, what);
      this.model.labels.set(id, name);
      if (id > this.model.maxId.label) this.model.maxId.label = id;
    }
  }
}

class Writer {
  inflight: Op | null = null;
  readonly playbooks: number[] = [];
  private seq = 0;
  rng: Rng;
  ops = 0;

  constructor(readonly idx: number, readonly world: World, seed: number) { this.rng = new Rng(seed); }

  reseed(seed: number): void { this.rng = new Rng(seed); }

  private get m(): Model { return this.world.model; }
  private uniq(): string { return `w${this.idx}c${this.world.cycle}n${this.seq++}`; }

  async run(): Promise<void> {
    let first = true;
    while (!this.world.stopping) {
      const op = first ? this.createPlaybook() : this.choose();
      first = false;
      if (!(await this.send(op))) return;
    }
  }

  /** One request; false once the server is gone (the request stays "in flight"). */
  async send(op: Op): Promise<boolean> {
    this.inflight = op;
    let res;
    try {
      res = await api(this.world.url, op.method, op.path, op.body);
    } catch {
      return false; // connection refused/reset: the write may or may not have landed
    }
    if (res.status >= 200 && res.status < 300) {
      this.inflight = null;
      this.ops++;
      this.world.acked++;
      op.ack(res.body);
      return true;
    }
    // Nothing in this workload is invalid: any refusal is a server problem. The
    // write's fate is unknown, so it stays in flight and this writer stops.
    this.world.problem(`${op.method} ${op.path} ${JSON.stringify(op.body)} → ${res.status} ${res.text.slice(0, 300)}`);
    return false;
  }

  choose(): Op {
    const { rng, m } = this;
    const pb = rng.bool(0.6) ? this.playbooks[this.playbooks.length - 1]! : rng.pick(this.playbooks);
    const kids = m.children.get(pb)!;
    const op = rng.weighted([45, 5, 7, 2, 3, 7, 5, 3, 4, 2, 5, 1.5, 1.5, 1, 0.6, 1.5]);
    switch (op) {
      case 0: return this.createResult(pb);
      case 1: return this.createHost(pb);
      case 2: return this.createTask(pb);
      case 3: return this.createPlay(pb);
      case 4: return this.createFile(pb);
      case 5: return this.createRecord(pb);
      case 6: return kids.host.length ? this.patchHost(rng.pick(kids.host)) : this.createHost(pb);
      case 7: return kids.result.length ? this.patchResult(rng.pick(kids.result)) : this.createResult(pb);
      case 8: return this.patchPlaybook(pb);
      case 9: return kids.record.length ? this.patchRecord(rng.pick(kids.record)) : this.createRecord(pb);
      case 10: return kids.result.length ? this.remove('result', rng.pick(kids.result)) : this.createResult(pb);
      case 11: return kids.host.length > 1 ? this.remove('host', rng.pick(kids.host)) : this.createHost(pb);
      case 12: return kids.task.length > 1 ? this.remove('task', rng.pick(kids.task)) : this.createTask(pb);
      case 13: return kids.record.length ? this.remove('record', rng.pick(kids.record)) : this.createRecord(pb);
      case 14: return this.playbooks.length > 1 ? this.remove('playbook', pb) : this.createPlaybook();
      default: return this.createPlaybook();
    }
  }

  // ---- creates -----------------------------------------------------------

  private create(kind: Kind, pb: number, body: Record<string, any>, check: (res: any) => void, extra?: (rec: Rec) => void): Op {
    const what = `POST /${PATH[kind]} ${JSON.stringify(body).slice(0, 200)}`;
    return {
      method: 'POST', kind, path: `/api/v1/${PATH[kind]}`, body, pb,
      ack: (res) => {
        this.world.checkNewId(kind, res.id, what);
        check(res);
        const rec = this.m.add(kind, res);
        extra?.(rec);
      },
      matches: (row) => (kind === 'playbook' ? row.path === body.path : row.playbook === pb),
    };
  }

  private expect(what: string, cond: boolean, detail: string): void {
    if (!cond) this.world.problem(`${what}: ${detail}`);
  }

  createPlaybook(): Op {
    const { rng } = this;
    const body = {
      path: `/srv/${this.uniq()}/site.yml`, runner_version: `2.${rng.int(9, 18)}.${rng.int(0, 9)}`,
      name: rng.bool(0.7) ? `play ${this.seq} ☃` : null, status: rng.pick(['running', 'completed', 'failed', 'unknown']),
      arguments: { check: rng.bool(), forks: rng.int(1, 50), tags: rng.json(1) }, labels: rng.subset(LABEL_POOL, 3),
      controller: 'ctl-' + this.idx,
    };
    return this.create('playbook', 0, body, (res) => {
      this.expect('POST playbook', same([...res.labels.map((l: any) => l.name)].sort(), [...body.labels].sort()), `labels ${JSON.stringify(res.labels)} for ${JSON.stringify(body.labels)}`);
      this.world.noteLabels(res.labels, `POST playbook ${res.id}`);
    }, (rec) => this.playbooks.push(rec.id));
  }

  createPlay(pb: number): Op {
    const { rng } = this;
    const hex = () => Math.floor(rng.next() * 2 ** 32).toString(16).padStart(8, '0');
    const h = hex() + hex() + hex() + hex();
    const uuid = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
    return this.create('play', pb, { playbook: pb, uuid, name: `play ${this.uniq()}`, status: rng.pick(['running', 'completed']) }, () => {});
  }

  createFile(pb: number): Op {
    const content = this.rng.bool(0.6) ? this.rng.pick(FILE_POOL) : `# ${this.uniq()}\n${JSON.stringify(this.rng.json(2))}\n`;
    return this.create('file', pb, { playbook: pb, path: `/srv/${this.uniq()}.yml`, content }, () => {});
  }

  createTask(pb: number): Op {
    const kids = this.m.children.get(pb)!;
    if (!kids.play.length) return this.createPlay(pb);
    if (!kids.file.length) return this.createFile(pb);
    const { rng } = this;
    const body = {
      playbook: pb, play: rng.pick(kids.play), file: rng.pick(kids.file), name: `task ${this.uniq()}`,
      action: rng.pick(['command', 'ansible.builtin.copy', 'debug', 'setup']), lineno: rng.int(1, 500),
      handler: rng.bool(0.1), tags: rng.subset(['a', 'b', 'always'], 2), status: rng.pick(['running', 'completed', 'failed']),
    };
    return this.create('task', pb, body, () => {});
  }

  createHost(pb: number): Op {
    const body = { playbook: pb, name: `host-${this.uniq()}.example`, facts: { ansible_distribution: 'Debian', extra: this.rng.json(2) } };
    return this.create('host', pb, body, (res) => {
      this.expect(`POST host ${res.id}`, COUNTERS.every((k) => res[k] === 0), `new host with counters ${JSON.stringify(res)}`);
    }, (rec) => { rec.counters = { changed: 0, failed: 0, ok: 0, skipped: 0, unreachable: 0 }; rec.patched = false; });
  }

  createResult(pb: number): Op {
    const kids = this.m.children.get(pb)!;
    if (!kids.task.length) return this.createTask(pb);
    if (!kids.host.length) return this.createHost(pb);
    const { rng } = this;
    const task = this.m.recs.task.get(rng.pick(kids.task))!;
    const status = rng.pick(RESULT_STATUSES);
    const changed = rng.bool(0.4);
    const ignoreErrors = rng.bool(0.3);
    const content: Record<string, unknown> = { msg: `result ${this.uniq()}`, rc: rng.int(0, 3), data: rng.json(2) };
    if (rng.bool(0.1)) content.stdout = 'log line ✓\n'.repeat(rng.int(50, 400)); // compressed blob
    const body: Record<string, any> = {
      playbook: pb, play: task.body.play, task: task.id, host: rng.pick(kids.host), status, changed, ignore_errors: ignoreErrors, content,
    };
    if (rng.bool(0.3)) { body.started = '2024-05-06T07:08:09.123456Z'; body.ended = `2024-05-06T07:08:${10 + rng.int(0, 40)}.5Z`; }
    const shown = shownStatus(status, changed, ignoreErrors);
    return this.create('result', pb, body, (res) => {
      this.expect(`POST result ${res.id}`, res.status === shown && res.changed === changed && res.ignore_errors === ignoreErrors,
        `shown status ${res.status}/${res.changed}/${res.ignore_errors}, expected ${shown}/${changed}/${ignoreErrors}`);
    }, (rec) => {
      const host = this.m.live('host', body.host);
      if (host) addCounters(host.counters!, contribution(shown, changed), 1);
    });
  }

  createRecord(pb: number): Op {
    const { rng } = this;
    const body = { playbook: pb, key: `key-${this.uniq()}`, type: rng.pick(['text', 'json', 'url', 'list', 'dict']), value: rng.json(3) ?? 'was null' };
    return this.create('record', pb, body, () => {});
  }

  // ---- updates -----------------------------------------------------------

  private patch(kind: Kind, id: number, body: Record<string, any>, applied: (row: any) => boolean, ack: (res: any, rec: Rec) => void): Op {
    const rec = this.m.recs[kind].get(id)!;
    return {
      method: 'PATCH', kind, path: `/api/v1/${PATH[kind]}/${id}`, body, pb: rec.pb, target: id,
      ack: (res) => { ack(res, rec); rec.body = res; },
      applied,
    };
  }

  patchPlaybook(pb: number): Op {
    const { rng } = this;
    const body: Record<string, any> = {};
    if (rng.bool(0.6)) body.status = rng.pick(['running', 'completed', 'failed', 'expired']);
    if (rng.bool(0.3)) body.name = `renamed ${this.uniq()}`;
    if (rng.bool(0.6) || Object.keys(body).length === 0) body.labels = rng.subset(LABEL_POOL, 3);
    const names = (labels: any[]) => labels.map((l) => l.name).sort();
    const applied = (row: any) => Object.entries(body).every(([k, v]) => (k === 'labels' ? same(names(row.labels), [...v].sort()) : same(row[k], v)));
    return this.patch('playbook', pb, body, applied, (res) => {
      this.expect(`PATCH playbook ${pb}`, applied(res), `response ${JSON.stringify(res).slice(0, 300)} does not show ${JSON.stringify(body)}`);
      this.world.noteLabels(res.labels, `PATCH playbook ${pb}`);
    });
  }

  patchHost(id: number): Op {
    const body: Record<string, number> = {};
    for (const k of this.rng.subset(COUNTERS)) body[k] = this.rng.int(0, 25);
    if (Object.keys(body).length === 0) body.ok = this.rng.int(0, 25);
    const applied = (row: any) => Object.entries(body).every(([k, v]) => row[k] === v);
    return this.patch('host', id, body, applied, (res, rec) => {
      Object.assign(rec.counters!, body);
      rec.patched = true;
      this.expect(`PATCH host ${id} ${JSON.stringify(body)}`, COUNTERS.every((k) => res[k] === rec.counters![k]),
        `response counters ${JSON.stringify(Object.fromEntries(COUNTERS.map((k) => [k, res[k]])))}, expected ${JSON.stringify(rec.counters)}`);
    });
  }

  patchResult(id: number): Op {
    const { rng } = this;
    const body = { status: rng.pick(RESULT_STATUSES), changed: rng.bool(0.4), ignore_errors: rng.bool(0.3) };
    const shown = shownStatus(body.status, body.changed, body.ignore_errors);
    const applied = (row: any) => row.status === shown && row.changed === body.changed && row.ignore_errors === body.ignore_errors;
    return this.patch('result', id, body, applied, (res, rec) => {
      this.expect(`PATCH result ${id}`, applied(res), `response ${res.status}/${res.changed}/${res.ignore_errors}, expected ${shown}/${body.changed}/${body.ignore_errors}`);
      const host = this.m.live('host', rec.body.host);
      if (host) {
        addCounters(host.counters!, contribution(rec.body.status, rec.body.changed), -1);
        addCounters(host.counters!, contribution(shown, body.changed), 1);
      }
    });
  }

  patchRecord(id: number): Op {
    const body = { value: this.rng.json(3) ?? '' }; // a top-level null is refused (ARA)
    return this.patch('record', id, body, (row) => same(row.value, body.value), () => {});
  }

  remove(kind: Kind, id: number): Op {
    const rec = this.m.recs[kind].get(id)!;
    return {
      method: 'DELETE', kind, path: `/api/v1/${PATH[kind]}/${id}`, pb: rec.pb, target: id,
      ack: () => {
        this.m.remove(kind, id);
        if (kind === 'playbook') this.playbooks.splice(this.playbooks.indexOf(id), 1);
      },
    };
  }
}

// ---- reading back and checking ---------------------------------------------

/** Every stored row per type: list row merged with its flattened detail. */
async function readBack(world: World): Promise<{ rows: Record<Kind, Map<number, any>>; labels: Map<number, string> }> {
  const dump = await dumpApi(world.url, { concurrency: 24 });
  const rows = Object.fromEntries(KINDS.map((k) => [k, new Map<number, any>()])) as Record<Kind, Map<number, any>>;
  for (const kind of KINDS) {
    const ids = dump.lists[PATH[kind]].map((r) => r.id as number);
    const wrong = ids.findIndex((id, i) => i > 0 && id <= ids[i - 1]!);
    if (wrong > 0) {
      world.orderProblems.push(`cycle ${world.cycle}: GET /api/v1/${PATH[kind]}?limit=1000 is not in ascending id order after the restart: … ${ids.slice(Math.max(0, wrong - 3), wrong + 3).join(', ')} …`);
    }
    for (const listRow of dump.lists[PATH[kind]]) {
      const detail = flatten(dump.details[PATH[kind]][listRow.id]);
      for (const [k, v] of Object.entries(listRow)) {
        if (k in detail && !same(detail[k], v)) world.problem(`${kind} ${listRow.id}: list shows ${k}=${JSON.stringify(v)}, detail shows ${JSON.stringify(detail[k])}`);
      }
      rows[kind].set(listRow.id, { ...detail, ...listRow });
    }
  }
  const labels = new Map<number, string>(dump.lists.labels.map((l: any) => [l.id, l.name]));
  return { rows, labels };
}

/** Decide, from what is stored, whether each write in flight at the kill landed. */
function resolveInflight(world: World, writers: Writer[], rows: Record<Kind, Map<number, any>>): { landed: number; lost: number } {
  const m = world.model;
  const stats = { landed: 0, lost: 0 };
  const claimed = new Set<string>();
  for (const w of writers) {
    const op = w.inflight;
    w.inflight = null;
    if (!op) continue;
    const what = `in-flight ${op.method} ${op.path} ${JSON.stringify(op.body ?? null).slice(0, 200)}`;
    let landed = false;
    if (op.method === 'POST') {
      const candidates = [...rows[op.kind].values()].filter((row) => !m.recs[op.kind].has(row.id) && !claimed.has(`${op.kind}${row.id}`) && op.matches!(row));
      if (candidates.length > 1) world.problem(`${what}: ${candidates.length} unacknowledged rows could come from it: ${candidates.map((r) => r.id).join(', ')}`);
      if (candidates.length === 1) {
        claimed.add(`${op.kind}${candidates[0].id}`);
        op.ack(candidates[0]);
        landed = true;
      }
    } else if (op.method === 'PATCH') {
      const row = rows[op.kind].get(op.target!);
      if (!row) world.problem(`${what}: its target (acknowledged earlier) is gone`);
      else if (op.applied!(row)) { op.ack(row); landed = true; }
    } else if (!rows[op.kind].has(op.target!)) {
      op.ack(undefined);
      landed = true;
    }
    if (landed) stats.landed++; else stats.lost++;
  }
  return stats;
}

const IGNORED_FIELDS = new Set(['items', ...COUNTERS]);

function compareWithModel(world: World, rows: Record<Kind, Map<number, any>>): void {
  const m = world.model;
  for (const kind of KINDS) {
    for (const rec of m.recs[kind].values()) {
      const row = rows[kind].get(rec.id);
      if (rec.deleted) {
        if (row) world.problem(`${kind} ${rec.id}: deleted (acknowledged) but present after restart`);
        continue;
      }
      if (!row) { world.problem(`${kind} ${rec.id}: acknowledged but missing after restart`); continue; }
      for (const [k, v] of Object.entries(rec.body)) {
        if (IGNORED_FIELDS.has(k) && kind !== 'result') continue;
        if (!(k in row)) world.problem(`${kind} ${rec.id}: field ${k} missing after restart`);
        else if (!same(row[k], v)) world.problem(`${kind} ${rec.id}: ${k} is ${JSON.stringify(row[k]).slice(0, 200)}, acknowledged ${JSON.stringify(v).slice(0, 200)}`);
      }
      if (kind === 'host') {
        const shown = Object.fromEntries(COUNTERS.map((k) => [k, row[k]]));
        if (!same(shown, rec.counters)) {
          world.problem(`host ${rec.id}${rec.patched ? ' (PATCHed)' : ''}: counters ${JSON.stringify(shown)}, expected ${JSON.stringify(rec.counters)} from the acknowledged writes`);
        }
      }
    }
    for (const id of rows[kind].keys()) {
      if (!m.recs[kind].has(id)) world.problem(`${kind} ${id}: present after restart but never acknowledged (nor in flight)`);
    }
  }
}

/** items and never-PATCHed host counters against a recount of the stored rows (SPEC §4). */
function recount(world: World, rows: Record<Kind, Map<number, any>>): void {
  const count = (kind: Kind, field: string, id: number) => {
    let n = 0;
    for (const row of rows[kind].values()) if (row[field] === id) n++;
    return n;
  };
  for (const pb of rows.playbook.values()) {
    const expected = { plays: count('play', 'playbook', pb.id), tasks: count('task', 'playbook', pb.id), results: count('result', 'playbook', pb.id), hosts: count('host', 'playbook', pb.id), files: count('file', 'playbook', pb.id), records: count('record', 'playbook', pb.id) };
    if (!same(pb.items, expected)) world.problem(`playbook ${pb.id}: items ${JSON.stringify(pb.items)}, recount ${JSON.stringify(expected)}`);
  }
  for (const play of rows.play.values()) {
    const expected = { tasks: count('task', 'play', play.id), results: count('result', 'play', play.id) };
    if (!same(play.items, expected)) world.problem(`play ${play.id}: items ${JSON.stringify(play.items)}, recount ${JSON.stringify(expected)}`);
  }
  for (const task of rows.task.values()) {
    const expected = { results: count('result', 'task', task.id) };
    if (!same(task.items, expected)) world.problem(`task ${task.id}: items ${JSON.stringify(task.items)}, recount ${JSON.stringify(expected)}`);
  }
  const byHost = new Map<number, Counters>();
  for (const r of rows.result.values()) {
    const c = byHost.get(r.host) ?? { changed: 0, failed: 0, ok: 0, skipped: 0, unreachable: 0 };
    addCounters(c, contribution(r.status, r.changed), 1);
    byHost.set(r.host, c);
  }
  for (const host of rows.host.values()) {
    if (world.model.recs.host.get(host.id)?.patched !== false) continue;
    const expected = byHost.get(host.id) ?? { changed: 0, failed: 0, ok: 0, skipped: 0, unreachable: 0 };
    const shown = Object.fromEntries(COUNTERS.map((k) => [k, host[k]]));
    if (!same(shown, expected)) world.problem(`host ${host.id} (never PATCHed): counters ${JSON.stringify(shown)}, recount from its results ${JSON.stringify(expected)}`);
  }
}

function checkLabels(world: World, rows: Record<Kind, Map<number, any>>, labels: Map<number, string>): void {
  for (const [id, name] of world.model.labels) {
    if (labels.get(id) !== name) world.problem(`label ${id} "${name}" (acknowledged in a playbook) is ${labels.has(id) ? `now "${labels.get(id)}"` : 'missing'}`);
  }
  for (const [id, name] of labels) {
    if (!world.model.labels.has(id) && !LABEL_POOL.includes(name) && !name.startsWith('probe-')) world.problem(`label ${id} "${name}" was never written`);
  }
  for (const pb of rows.playbook.values()) {
    for (const l of pb.labels) if (labels.get(l.id) !== l.name) world.problem(`playbook ${pb.id} shows label ${JSON.stringify(l)}, the label list has ${JSON.stringify(labels.get(l.id))}`);
  }
}

function recoveryLine(lb: Logbook): Record<string, any> | null {
  for (const line of lb.output().split('\n')) {
    if (!line.includes('"msg":"recovered"')) continue;
    try { return JSON.parse(line); } catch { /* partial line */ }
  }
  return null;
}

test('SIGKILL at random moments under concurrent writers loses no acknowledged write', async (t) => {
  t.timeout(120_000);
  const seed = seedFrom('CRASH_SEED');
  t.log(`CRASH_SEED=${seed}`);
  const rng = new Rng(seed);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-crash-'));
  const world = new World();
  const writers = Array.from({ length: WRITERS }, (_, i) => new Writer(i, world, seed + i + 1));
  const prober = new Writer(WRITERS, world, seed + 1000);
  let lb: Logbook | null = null;
  let snapshotsSeen = 0;
  const t0 = Date.now();
  try {
    lb = await startLogbook({ env: ENV, dataDir });
    world.url = lb.url;
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      world.cycle = cycle;
      world.stopping = false;
      const ackedBefore = world.acked;
      writers.forEach((w, i) => w.reseed((seed ^ ((cycle + 1) * 0x9e3779b1)) + i));
      const running = writers.map((w) => w.run());
      const delay = 300 + Math.floor(rng.next() * 1700);
      await new Promise((r) => setTimeout(r, delay));
      world.stopping = true;
      lb.child.kill('SIGKILL');
      await Promise.all(running);
      await lb.stop('SIGKILL');
      const inflight = writers.filter((w) => w.inflight).length;

      lb = await startLogbook({ env: ENV, dataDir });
      world.url = lb.url;
      const recovered = recoveryLine(lb);
      snapshotsSeen += recovered?.snapshots ?? 0;

      const { rows, labels } = await readBack(world);
      const fate = resolveInflight(world, writers, rows);
      compareWithModel(world, rows);
      recount(world, rows);
      checkLabels(world, rows, labels);
      t.log(`cycle ${cycle}: killed after ${delay} ms, ${world.acked - ackedBefore} writes acknowledged, ${inflight} in flight (${fate.landed} landed, ${fate.lost} not); `
        + `stored: ${KINDS.map((k) => `${rows[k].size} ${k}s`).join(', ')}; recovery: ${recovered ? `${recovered.snapshots} snapshots, ${recovered.journalEventsReplayed} journal events, ${recovered.ms} ms` : 'no log line'}`);

      // ids continue above everything handed out before this restart
      world.maxBefore = { ...world.model.maxId };
      for (const id of labels.keys()) if (id > world.maxBefore.label) world.maxBefore.label = id;
      for (const kind of KINDS) for (const id of rows[kind].keys()) if (id > world.maxBefore[kind]) world.maxBefore[kind] = id;
      world.knownLabels = new Set(labels.keys());
      const label = await api(world.url, 'POST', '/api/v1/labels', { name: `probe-${cycle}` });
      if (label.status !== 201) world.problem(`POST label → ${label.status} ${label.text}`);
      else {
        world.checkNewId('label', label.body.id, 'POST /labels after restart');
        world.model.labels.set(label.body.id, label.body.name);
      }
      world.stopping = false;
      const probe = prober.createPlaybook();
      if (await prober.send(probe)) {
        const pb = prober.playbooks[prober.playbooks.length - 1]!;
        for (const make of [() => prober.createPlay(pb), () => prober.createFile(pb), () => prober.createTask(pb), () => prober.createHost(pb),
          () => prober.createResult(pb), () => prober.createRecord(pb)]) {
          if (!(await prober.send(make()))) break;
        }
      }
      if (world.problems.length) break;
    }
  } finally {
    if (lb) await lb.stop('SIGKILL');
    if (world.problems.length === 0) rmSync(dataDir, { recursive: true, force: true });
    else t.log(`data dir kept for inspection: ${dataDir}`);
  }
  t.log(`${world.acked} writes acknowledged in ${CYCLES} cycles, ${snapshotsSeen} aggregate snapshots loaded at restarts, ${Date.now() - t0} ms`);
  t.deepEqual({ problems: world.problems.slice(0, 40), listOrder: world.orderProblems.slice(0, 10) }, { problems: [], listOrder: [] },
    `${world.problems.length} problems, ${world.orderProblems.length} lists out of order (seed ${seed})`);
  t.true(world.acked > 300, 'the writers got enough writes acknowledged to mean something');
  t.true(snapshotsSeen > 0, 'snapshots were taken (and the journal trimmed) during the run');
});
