// kill -9 inside a snapshot round and inside a journal trim, seeded, several
// cycles, against a real logbook process. The kill is placed by a test hook
// (LOGBOOK_TEST_HOOKS=1, LOGBOOK_TEST_KILL_AT=<snapshot|trim>:<n>:<delay ms>):
// the process SIGKILLs itself `delay` ms after its <n>th snapshot put or its
// <n>th trim was issued, while concurrent writers keep writing; snapshot slices
// are slowed (LOGBOOK_TEST_SNAPSHOT_SLICE_DELAY_MS) so rounds span many commits,
// and results are snapshotted in parts of a few (LOGBOOK_TEST_SNAPSHOT_PART_ROWS).
// After each kill the process restarts (without the hook) on the same data and
// every acknowledged write must be there as acknowledged, acknowledged deletes
// gone, and nothing that was never acknowledged (or in flight) present.
//
// Seeded: the seed is printed; rerun with FAULTS_SEED=<seed>.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { Rng, seedFrom } from '../helpers/random.js';

const WRITERS = 6;
const CYCLES = 4;
const BASE_ENV = { LOGBOOK_SHARDS: '2', LOGBOOK_SNAPSHOT_EVERY: '40', LOGBOOK_SNAPSHOT_INTERVAL: '1' };

interface Parents { pb: number; play: number; task: number; host: number }
type Op =
  | { kind: 'result'; marker: string }
  | { kind: 'record'; marker: string }
  | { kind: 'patch'; id: number; value: string }
  | { kind: 'delete'; id: number };

class World {
  readonly results = new Map<number, { pb: number; marker: string }>();
  readonly deleted = new Set<number>();
  readonly records = new Map<number, { pb: number; value: string }>();
  readonly problems: string[] = [];
  acked = 0;
  cycle = 0;
  problem(msg: string): void { this.problems.push(`cycle ${this.cycle}: ${msg}`); }
}

class Writer {
  inflight: Op | null = null;
  readonly mine = { results: [] as number[], records: [] as number[] };
  private n = 0;
  constructor(readonly idx: number, readonly parents: Parents, readonly world: World, public rng: Rng) {}

  next(): Op {
    const marker = `w${this.idx}c${this.world.cycle}n${this.n++}`;
    const choice = this.rng.weighted([50, 20, 20, 10]);
    if (choice === 2 && this.mine.records.length) return { kind: 'patch', id: this.rng.pick(this.mine.records), value: marker };
    if (choice === 3 && this.mine.results.length > 3) return { kind: 'delete', id: this.rng.pick(this.mine.results) };
    return choice === 1 ? { kind: 'record', marker } : { kind: 'result', marker };
  }

  async run(url: string): Promise<void> {
    const { pb, play, task, host } = this.parents;
    for (;;) {
      const op = this.next();
      this.inflight = op;
      let res;
      try {
        if (op.kind === 'result') res = await api(url, 'POST', '/api/v1/results', { playbook: pb, play, task, host, status: 'ok', content: { marker: op.marker } });
        else if (op.kind === 'record') res = await api(url, 'POST', '/api/v1/records', { playbook: pb, key: op.marker, type: 'text', value: op.marker });
        else if (op.kind === 'patch') res = await api(url, 'PATCH', `/api/v1/records/${op.id}`, { value: op.value });
        else res = await api(url, 'DELETE', `/api/v1/results/${op.id}`);
      } catch {
        return; // the process is gone: this write's fate is unknown
      }
      if (res.status >= 300) { this.world.problem(`${op.kind} → ${res.status} ${res.text.slice(0, 200)}`); return; }
      this.inflight = null;
      this.world.acked++;
      const w = this.world;
      if (op.kind === 'result') { w.results.set(res.body.id, { pb, marker: op.marker }); this.mine.results.push(res.body.id); }
      else if (op.kind === 'record') { w.records.set(res.body.id, { pb, value: op.marker }); this.mine.records.push(res.body.id); }
      else if (op.kind === 'patch') w.records.get(op.id)!.value = op.value;
      else { w.deleted.add(op.id); this.mine.results.splice(this.mine.results.indexOf(op.id), 1); }
    }
  }
}

async function listAll(url: string, resource: string, pb: number): Promise<any[]> {
  const res = await api(url, 'GET', `/api/v1/${resource}?playbook=${pb}&limit=1000`);
  if (res.status !== 200) throw new Error(`GET ${resource} → ${res.status}`);
  if (res.body.count > 1000) throw new Error('more than 1000 rows: raise the limit');
  return res.body.results;
}

/** Compare what the restarted server shows with what was acknowledged; settle in-flight writes. */
async function verify(url: string, world: World, writers: Writer[]): Promise<{ landed: number; lost: number }> {
  const fate = { landed: 0, lost: 0 };
  for (const w of writers) {
    const pb = w.parents.pb;
    const results = new Map((await listAll(url, 'results', pb)).map((r) => [r.id as number, r]));
    const records = new Map((await listAll(url, 'records', pb)).map((r) => [r.id as number, r]));
    const op = w.inflight;
    w.inflight = null;
    let landed = false;
    for (const [id] of results) {
      if (world.results.has(id) && !world.deleted.has(id)) continue;
      if (world.deleted.has(id) || !world.results.has(id)) {
        const detail = (await api(url, 'GET', `/api/v1/results/${id}`)).body;
        if (op?.kind === 'result' && detail?.content?.marker === op.marker && !world.results.has(id)) {
          world.results.set(id, { pb, marker: op.marker }); w.mine.results.push(id); landed = true; continue;
        }
        if (op?.kind === 'delete' && op.id === id) continue;
        world.problem(`result ${id} of playbook ${pb}: present, but ${world.deleted.has(id) ? 'its DELETE was acknowledged' : 'never acknowledged'}`);
      }
    }
    if (op?.kind === 'delete') {
      if (!results.has(op.id)) { world.deleted.add(op.id); w.mine.results.splice(w.mine.results.indexOf(op.id), 1); landed = true; }
    }
    for (const [id, { marker }] of world.results) {
      if (world.results.get(id)!.pb !== pb || world.deleted.has(id)) continue;
      if (!results.has(id)) { world.problem(`result ${id} (${marker}) acknowledged but missing`); continue; }
      const detail = await api(url, 'GET', `/api/v1/results/${id}`);
      if (detail.body?.content?.marker !== marker) world.problem(`result ${id}: content ${JSON.stringify(detail.body?.content)}, acknowledged ${marker}`);
    }
    for (const [id, row] of records) {
      if (world.records.has(id)) continue;
      if (op?.kind === 'record' && row.key === op.marker) { world.records.set(id, { pb, value: op.marker }); w.mine.records.push(id); landed = true; continue; }
      world.problem(`record ${id} (${row.key}) present but never acknowledged`);
    }
    for (const [id, rec] of world.records) {
      if (rec.pb !== pb) continue;
      const res = await api(url, 'GET', `/api/v1/records/${id}`);
      if (res.status !== 200) { world.problem(`record ${id} acknowledged but ${res.status}`); continue; }
      if (res.body.value === rec.value) continue;
      if (op?.kind === 'patch' && op.id === id && res.body.value === op.value) { rec.value = op.value; landed = true; continue; }
      world.problem(`record ${id}: value ${JSON.stringify(res.body.value)}, acknowledged ${JSON.stringify(rec.value)}`);
    }
    if (op) { if (landed) fate.landed++; else fate.lost++; }
  }
  return fate;
}

async function killCycles(t: import('ava').ExecutionContext, phase: 'snapshot' | 'trim'): Promise<void> {
  t.timeout(300_000);
  const seed = seedFrom('FAULTS_SEED');
  t.log(`FAULTS_SEED=${seed}`);
  const rng = new Rng(seed);
  const dataDir = mkdtempSync(join(tmpdir(), `logbook-kill-${phase}-`));
  const world = new World();
  let lb: Logbook | null = null;
  try {
    lb = await startLogbook({ env: BASE_ENV, dataDir });
    const parents: Parents[] = [];
    for (let i = 0; i < WRITERS; i++) {
      const post = async (path: string, body: unknown) => (await api(lb!.url, 'POST', path, body)).body.id as number;
      const pb = await post('/api/v1/playbooks', { path: `/srv/w${i}.yml`, runner_version: '2.16.1' });
      const play = await post('/api/v1/plays', { playbook: pb, uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` });
      const file = await post('/api/v1/files', { playbook: pb, path: `/srv/w${i}.yml`, content: 'x' });
      const task = await post('/api/v1/tasks', { playbook: pb, play, file, action: 'debug', lineno: 1, handler: false });
      const host = await post('/api/v1/hosts', { playbook: pb, name: `h${i}` });
      parents.push({ pb, play, task, host });
    }
    t.is(await lb.stop('SIGTERM'), 0);
    const writers = parents.map((p, i) => new Writer(i, p, world, new Rng(seed + i + 1)));
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      world.cycle = cycle;
      const count = phase === 'snapshot' ? rng.int(2, 14) : rng.int(1, 3);
      const delay = rng.int(0, 25);
      const env = {
        ...BASE_ENV, LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_KILL_AT: `${phase}:${count}:${delay}`,
        LOGBOOK_TEST_SNAPSHOT_SLICE_DELAY_MS: phase === 'snapshot' ? String(rng.int(2, 10)) : '0',
        // playbooks' results are snapshotted in parts of a few (thousands by default), so kills also
        // land between a playbook's parts and between its parts and its snapshot
        LOGBOOK_TEST_SNAPSHOT_PART_ROWS: String(rng.int(3, 9)),
      };
      lb = await startLogbook({ env, dataDir });
      const acked = world.acked;
      const url = lb.url;
      writers.forEach((w, i) => { w.rng = new Rng((seed ^ ((cycle + 1) * 0x9e3779b1)) + i); });
      const running = writers.map((w) => w.run(url));
      const died = await Promise.race([
        new Promise<boolean>((resolve) => lb!.child.once('exit', () => resolve(true))),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 60_000)),
      ]);
      if (!died) { world.problem(`the ${phase}:${count} kill point was not reached in 60 s`); lb.child.kill('SIGKILL'); }
      await Promise.all(running);
      await lb.stop('SIGKILL');
      const signal = lb.child.signalCode;
      const inflight = writers.filter((w) => w.inflight).length;

      lb = await startLogbook({ env: BASE_ENV, dataDir });
      const fate = await verify(lb.url, world, writers);
      t.log(`cycle ${cycle}: killed (${signal}) at ${phase} ${count} + ${delay} ms after ${world.acked - acked} acknowledged writes; `
        + `${inflight} in flight (${fate.landed} landed, ${fate.lost} not); ${world.results.size - world.deleted.size} results, ${world.records.size} records stored`);
      if (signal !== 'SIGKILL') world.problem(`the process ended by ${signal}, not by the SIGKILL hook`);
      await lb.stop('SIGTERM');
      lb = null;
      if (world.problems.length) break;
    }
  } finally {
    if (lb) await lb.stop('SIGKILL');
    if (world.problems.length === 0) rmSync(dataDir, { recursive: true, force: true });
    else t.log(`data dir kept for inspection: ${dataDir}`);
  }
  t.deepEqual(world.problems.slice(0, 30), [], `seed ${seed}`);
  // the writers did get writes acknowledged (how many depends on the seed: a kill at an early
  // snapshot put of a round that starts at once, e.g. with a journal left by the previous cycle,
  // comes after a handful of writes; on a slow CI machine that is all a cycle sees)
  t.true(world.acked > 20, `writes were acknowledged (${world.acked})`);
}

test('kill -9 inside snapshot rounds, several seeded cycles: nothing acknowledged lost, nothing unacknowledged stored', (t) => killCycles(t, 'snapshot'));
test('kill -9 inside journal trims, several seeded cycles: nothing acknowledged lost, nothing unacknowledged stored', (t) => killCycles(t, 'trim'));
