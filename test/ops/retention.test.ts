// Retention (LOGBOOK_RETENTION_DAYS) and expiry (LOGBOOK_EXPIRE_RUNNING_AFTER).
// Unit level: Retention drives in-process Shards (in-memory store) with an
// injected clock, so "40 days later" takes no time. End to end: a real server
// with a 1 s check interval deletes and expires exactly what is old, counts it
// in /metrics, logs it, and the outcome survives a restart.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTimestamp, formatTimestamp } from '../../src/api/time.js';
import { Retention, type MaintenanceTarget, type PassResult } from '../../src/retention.js';
import { Shard } from '../../src/shard/shard.js';
import { ShardState } from '../../src/shard/state.js';
import type { FrontToShard, MaintainReply, MaintenanceTask, ShardToFront, WriteCommand, WriteReply } from '../../src/shard/protocol.js';
import { LmdbShardStore, type ShardStore } from '../../src/store/shard_store.js';
import { setLogLevel } from '../../src/log.js';
import { eventually, listening, request, scrape, seedRun, spawnLogbook } from '../helpers/ops.js';
import { sample } from '../helpers/prom.js';

setLogLevel('silent'); // the in-process passes log; the end-to-end test reads the server's own lines

const DAY = 86_400_000_000;
const HOUR = 3_600_000_000;
const T0 = parseTimestamp('2026-06-01T00:00:00Z')!;

/** Shards in-process, with the front's id allocation and routing reduced to a few lines. */
class Cluster implements MaintenanceTarget {
  now = T0;
  readonly shards: Shard[];
  private readonly next: Record<string, number> = {};
  private rid = 1;
  private readonly waiting = new Map<number, (r: ShardToFront) => void>();
  constructor(readonly size: number, store?: (k: number) => ShardStore) {
    this.shards = Array.from({ length: size }, (_, k) => new Shard({
      clock: () => this.now, onReply: (r) => this.answered(r), ...(store ? { store: store(k) } : {}),
    }));
  }

  private answered(r: ShardToFront): void {
    const rid = (r as { rid: number }).rid;
    this.waiting.get(rid)?.(r);
    this.waiting.delete(rid);
  }

  /** Send a message and get its reply, now or after the commit it waits for. */
  private ask(shard: number, msg: FrontToShard): Promise<ShardToFront> {
    const rid = this.rid++;
    (msg as { rid: number }).rid = rid;
    return new Promise((resolve) => {
      this.waiting.set(rid, resolve);
      const reply = this.shards[shard]!.handle(msg);
      if (reply) this.answered(reply);
    });
  }

  async maintain(shard: number, task: MaintenanceTask): Promise<MaintainReply> {
    return await this.ask(shard, { k: 'maintain', rid: 0, task }) as MaintainReply;
  }

  async write(type: WriteCommand['type'], playbook: number, set: Record<string, unknown>): Promise<number> {
    const id = this.next[type] = (this.next[type] ?? 0) + 1;
    const owner = type === 'playbook' ? id : playbook;
    const cmd: WriteCommand = { op: 'create', type, id, put: false, set, errors: null, elsewhere: null, minimal: true };
    const reply = await this.ask(owner % this.size, { k: 'write', rid: 0, cmd }) as WriteReply;
    if (reply.status >= 300) throw new Error(`${type}: ${reply.status} ${reply.body}`);
    return reply.created![1];
  }

  /** A playbook with a play, a file, two tasks (one in `status`, one completed), two hosts, two results and a record. */
  async run(started: number, status = 'completed'): Promise<Record<string, number>> {
    const playbook = await this.write('playbook', 0, { path: '/p.yml', runner_version: '2.16', status, started, labels: [] });
    const at = { started };
    const play = await this.write('play', playbook, { playbook, uuid: crypto.randomUUID(), status, ...at });
    const file = await this.write('file', playbook, { playbook, path: `/f${playbook}.yml`, content: 'x' });
    const task = await this.write('task', playbook, { playbook, play, file, action: 'ping', lineno: 1, handler: false, status, ...at });
    const done = await this.write('task', playbook, { playbook, play, file, action: 'ping', lineno: 2, handler: false, status: 'completed', ...at });
    const host = await this.write('host', playbook, { playbook, name: 'h1' });
    const host2 = await this.write('host', playbook, { playbook, name: 'h2' });
    const result = await this.write('result', playbook, { playbook, play, task, host, status: 'ok', ...at });
    await this.write('result', playbook, { playbook, play, task: done, host: host2, status: 'failed', ...at });
    const record = await this.write('record', playbook, { playbook, key: 'k', type: 'text' });
    return { playbook, play, file, task, done, host, result, record };
  }

  state(playbook: number): ShardState { return this.shards[playbook % this.size]!.state; }
  has(type: 'playbook' | 'play' | 'task' | 'host' | 'result' | 'file' | 'record', id: number): boolean {
    return this.shards.some((s) => s.state.index(type).has(id));
  }
  count(type: 'playbook' | 'play' | 'task' | 'host' | 'result' | 'file' | 'record'): number {
    return this.shards.reduce((n, s) => n + s.state.index(type).size, 0);
  }
}

test('retention deletes exactly the playbooks started before the cutoff, with everything under them', async (t) => {
  const c = new Cluster(2);
  const old1 = await c.run(T0 - 40 * DAY);
  const old2 = await c.run(T0 - 31 * DAY, 'running');
  const edge = await c.run(T0 - 30 * DAY); // exactly at the cutoff: kept
  const young = await c.run(T0 - 2 * DAY);
  const passes: PassResult[] = [];
  const r = new Retention(c, { retentionDays: 30, expireRunningAfter: null, intervalMs: 1000, now: () => c.now, sink: { onPass: (res) => passes.push(res) } });

  const result = await r.runOnce();
  t.deepEqual(result.deleted, { playbook: 2, play: 2, task: 4, host: 4, result: 4, file: 2, record: 2 });
  t.is(result.errors, 0);
  t.is(passes.length, 1);
  for (const ids of [old1, old2]) {
    t.false(c.has('playbook', ids.playbook!));
    for (const type of ['play', 'task', 'host', 'result', 'file', 'record'] as const) t.false(c.has(type, ids[type === 'task' ? 'task' : type]!), type);
    t.false(c.has('task', ids.done!));
  }
  for (const ids of [edge, young]) {
    const agg = c.state(ids.playbook!).aggregates.get(ids.playbook!)!;
    t.truthy(agg);
    // counters of what stays are untouched
    t.deepEqual([agg.plays.size, agg.tasks.size, agg.results.size, agg.hosts.size], [1, 2, 2, 2]);
    t.is(agg.hosts.get(ids.host!)!.ok, 1);
    t.is(agg.plays.get(ids.play!)!.results, 2);
  }
  t.is(c.count('result'), 4);
  // nothing more to do until time moves
  t.deepEqual((await r.runOnce()).deleted, {});
  c.now += DAY + 1;
  t.deepEqual((await r.runOnce()).deleted, { playbook: 1, play: 1, task: 2, host: 2, result: 2, file: 1, record: 1 });
  t.false(c.has('playbook', edge.playbook!));
  t.true(c.has('playbook', young.playbook!));
});

test('expiry marks exactly the stale running playbooks, and their running plays and tasks', async (t) => {
  const c = new Cluster(2);
  const stale = await c.run(T0 - 3 * HOUR, 'running');
  const fresh = await c.run(T0 - 1 * HOUR, 'running');
  const finished = await c.run(T0 - 5 * HOUR, 'completed');
  const r = new Retention(c, { retentionDays: null, expireRunningAfter: 2 * 3600, intervalMs: 1000, now: () => c.now });
  c.now += 1;
  const result = await r.runOnce();
  t.deepEqual(result.expired, [1, 1, 1]);
  t.deepEqual(result.deleted, {});
  const agg = c.state(stale.playbook!).aggregates.get(stale.playbook!)!;
  t.is(agg.playbook.status, 'expired');
  t.is(agg.playbook.updated, c.now);
  t.is(agg.playbook.ended, null);
  t.is(agg.plays.get(stale.play!)!.status, 'expired');
  t.is(agg.tasks.get(stale.task!)!.status, 'expired');
  t.is(agg.tasks.get(stale.done!)!.status, 'completed', 'a finished task stays as it was');
  t.is(agg.results.size, 2);
  t.is(c.state(fresh.playbook!).aggregates.get(fresh.playbook!)!.playbook.status, 'running');
  t.is(c.state(finished.playbook!).aggregates.get(finished.playbook!)!.playbook.status, 'completed');
  t.deepEqual((await r.runOnce()).expired, [0, 0, 0], 'nothing twice');
  c.now += 2 * HOUR;
  t.deepEqual((await r.runOnce()).expired, [1, 1, 1]);
  t.is(c.state(fresh.playbook!).aggregates.get(fresh.playbook!)!.playbook.status, 'expired');
});

test('batches are bounded by playbooks and rows; a pass drains them all', async (t) => {
  const c = new Cluster(1);
  for (let i = 0; i < 7; i++) await c.run(T0 - 100 * DAY);
  const young = await c.run(T0);
  const r = new Retention(c, { retentionDays: 30, expireRunningAfter: null, intervalMs: 1000, now: () => c.now, maxPlaybooks: 2, maxRows: 1_000_000 });
  const first = await c.maintain(0, r.task());
  t.is(first.deleted![1]!.length, 2);
  t.true(first.more);
  const pass = await r.runOnce();
  t.is(pass.deleted.playbook, 5);
  t.is(pass.batches, 3);
  t.is(c.count('playbook'), 1);
  t.true(c.has('playbook', young.playbook!));

  // a row bound smaller than one playbook still takes one playbook a batch
  const d = new Cluster(1);
  for (let i = 0; i < 3; i++) await d.run(T0 - 100 * DAY);
  const rows = new Retention(d, { retentionDays: 30, expireRunningAfter: null, intervalMs: 1000, now: () => d.now, maxPlaybooks: 100, maxRows: 5 });
  const one = await d.maintain(0, rows.task());
  t.is(one.deleted![1]!.length, 1);
  t.true(one.more);
  t.is((await rows.runOnce()).batches, 2);
  t.is(d.count('playbook'), 0);
});

test('the timer runs passes every interval and stop() ends them', async (t) => {
  const c = new Cluster(2);
  await c.run(T0 - 40 * DAY);
  let passes = 0;
  const r = new Retention(c, { retentionDays: 30, expireRunningAfter: 3600, intervalMs: 10, now: () => c.now, sink: { onPass: () => { passes++; } } });
  r.start();
  await eventually(async () => passes >= 1);
  t.is(c.count('playbook'), 0);
  await c.run(T0 - 40 * DAY);
  await eventually(async () => c.count('playbook') === 0);
  await r.stop();
  const stopped = passes;
  await c.run(T0 - 40 * DAY);
  await new Promise((res) => setTimeout(res, 50));
  t.is(passes, stopped);
  t.is(c.count('playbook'), 1);
  const off = new Retention(c, { retentionDays: null, expireRunningAfter: null, intervalMs: 10 });
  t.false(off.enabled);
});

test('maintenance batches are journaled: recovery from disk sees the deletions and expirations', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-retention-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new LmdbShardStore(dir, 0, 'commit');
  const c = new Cluster(1, () => store);
  const old = await c.run(T0 - 40 * DAY);
  const stale = await c.run(T0 - 5 * HOUR, 'running');
  const kept = await c.run(T0 - 1 * HOUR, 'running');
  const r = new Retention(c, { retentionDays: 30, expireRunningAfter: 2 * 3600, intervalMs: 1000, now: () => c.now });
  const pass = await r.runOnce();
  t.is(pass.deleted.playbook, 1);
  t.deepEqual(pass.expired, [1, 1, 1]);
  await store.close();

  const reopened = new LmdbShardStore(dir, 0, 'commit');
  const state = new ShardState();
  reopened.recover(state);
  t.false(state.aggregates.has(old.playbook!));
  t.false(state.results.has(old.result!));
  t.is(state.aggregates.get(stale.playbook!)!.playbook.status, 'expired');
  t.is(state.tasks.get(stale.task!)!.status, 'expired');
  t.is(state.aggregates.get(kept.playbook!)!.playbook.status, 'running');
  t.is(state.aggregates.get(kept.playbook!)!.results.size, 2);
  await reopened.close();
});

test.serial('end to end: old playbooks are deleted and stale running ones expired, counted and logged', async (t) => {
  const p = spawnLogbook({ LOGBOOK_RETENTION_DAYS: '30', LOGBOOK_EXPIRE_RUNNING_AFTER: '2h', LOGBOOK_MAINTENANCE_INTERVAL: '1' });
  t.teardown(() => { void p.kill('SIGKILL').then(p.cleanup); });
  const base = await listening(p);
  // seeded with current times, then moved into the past: no pass can catch a half-built run
  const old = await seedRun(base, { status: 'completed' });
  const older = await seedRun(base, { status: 'running' });
  const stale = await seedRun(base, { status: 'running' });
  const fresh = await seedRun(base, { status: 'running' });
  const kept = await seedRun(base, { status: 'completed' });
  const ago = (us: number) => formatTimestamp(Date.now() * 1000 - us);
  const patch = (id: number, body: unknown) => request(`${base}/api/v1/playbooks/${id}`, {
    method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  t.is((await patch(old.playbook, { started: ago(40 * DAY) })).status, 200);
  t.is((await patch(older.playbook, { started: ago(31 * DAY) })).status, 200);
  t.is((await patch(stale.playbook, { started: ago(3 * HOUR) })).status, 200);
  t.is((await patch(kept.playbook, { started: ago(10 * DAY) })).status, 200);

  await eventually(async () => (await request(`${base}/api/v1/playbooks/${older.playbook}`)).status === 404
    && (await request(`${base}/api/v1/playbooks/${stale.playbook}`)).body.status === 'expired', 10_000, 'a pass');
  for (const ids of [old, older]) {
    t.is((await request(`${base}/api/v1/playbooks/${ids.playbook}`)).status, 404);
    for (const [path, id] of [['plays', ids.play], ['tasks', ids.task], ['tasks', ids.doneTask], ['hosts', ids.host],
      ['results', ids.result], ['files', ids.file], ['records', ids.record]] as const) {
      t.is((await request(`${base}/api/v1/${path}/${id}`)).status, 404, `${path}/${id}`);
    }
    t.is((await request(`${base}/api/v1/results?playbook=${ids.playbook}`)).body.count, 0);
  }
  const staleNow = await request(`${base}/api/v1/playbooks/${stale.playbook}`);
  t.is(staleNow.body.status, 'expired');
  t.is((await request(`${base}/api/v1/plays/${stale.play}`)).body.status, 'expired');
  t.is((await request(`${base}/api/v1/tasks/${stale.task}`)).body.status, 'expired');
  t.is((await request(`${base}/api/v1/tasks/${stale.doneTask}`)).body.status, 'completed');
  t.is((await request(`${base}/api/v1/playbooks/${fresh.playbook}`)).body.status, 'running');
  const keptNow = await request(`${base}/api/v1/playbooks/${kept.playbook}`);
  t.is(keptNow.status, 200);
  t.deepEqual(keptNow.body.items, { plays: 1, tasks: 2, results: 1, hosts: 1, files: 1, records: 1 });
  t.is((await request(`${base}/api/v1/playbooks?limit=1`)).body.count, 3);

  const m = await scrape(base);
  t.is(sample(m, 'logbook_retention_deleted_total', { type: 'playbook' }), 2);
  t.is(sample(m, 'logbook_retention_deleted_total', { type: 'task' }), 4);
  t.is(sample(m, 'logbook_retention_deleted_total', { type: 'result' }), 2);
  t.is(sample(m, 'logbook_expired_total', { type: 'playbook' }), 1);
  t.is(sample(m, 'logbook_expired_total', { type: 'play' }), 1);
  t.is(sample(m, 'logbook_expired_total', { type: 'task' }), 1);
  t.true(sample(m, 'logbook_maintenance_runs_total')! >= 1);
  t.is(sample(m, 'logbook_records', { type: 'playbook' }), 3);
  t.regex(p.output(), /"msg":"retention on"[^\n]*"retentionDays":30/);
  t.regex(p.output(), /"msg":"retention deleted playbooks"[^\n]*"deleted_playbooks":/);
  t.regex(p.output(), /"msg":"expired running playbooks"[^\n]*"playbooks":1/);
  t.is((await p.kill('SIGTERM')).code, 0);

  // the outcome is durable: a restart without retention sees the same
  const again = spawnLogbook({}, p.dataDir);
  t.teardown(() => { void again.kill('SIGKILL'); });
  const base2 = await listening(again);
  t.is((await request(`${base2}/api/v1/playbooks/${old.playbook}`)).status, 404);
  t.is((await request(`${base2}/api/v1/playbooks/${stale.playbook}`)).body.status, 'expired');
  t.is((await request(`${base2}/api/v1/tasks/${stale.task}`)).body.status, 'expired');
  t.is((await request(`${base2}/api/v1/playbooks?limit=1`)).body.count, 3);
  t.is((await again.kill('SIGTERM')).code, 0);
});
