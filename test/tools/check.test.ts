// The data directory check (src/tools/check.ts), run as users run it: the real
// tool as a child process on a real server's data directory. A good directory →
// exit 0 and a summary; a live server's directory → refused; each kind of damage
// written straight into LMDB (an orphan blob, a host counter changed in a
// snapshot, a file's text removed) → exit 1 naming it.
import { runCheck } from '../helpers/cli.js';
import test from 'ava';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import crypto from 'node:crypto';
import { open } from 'lmdb';
import { api, startLogbook, type Logbook } from '../helpers/server.js';

const here = dirname(fileURLToPath(import.meta.url));
const SHARDS = 3;

const check = runCheck;

async function ok201(url: string, path: string, body: unknown): Promise<any> {
  const r = await api(url, 'POST', path, body);
  if (r.status !== 201) throw new Error(`POST ${path} → ${r.status} ${r.text}`);
  return r.body;
}

/** A few playbooks on every shard: files, plays, tasks, hosts (one with counters set), results (one delegated), records, labels. */
async function fill(url: string): Promise<void> {
  for (let i = 0; i < 6; i++) {
    const pb = await ok201(url, '/api/v1/playbooks', { path: `/p${i}.yml`, runner_version: '2.15.13', labels: ['web', `l${i}`], arguments: { i } });
    const file = await ok201(url, '/api/v1/files', { path: `/p${i}.yml`, content: `- hosts: all # ${i % 2}\n`, playbook: pb.id });
    const play = await ok201(url, '/api/v1/plays', { uuid: crypto.randomUUID(), name: 'play', playbook: pb.id });
    const hosts = [];
    for (const name of ['a', 'b']) hosts.push(await ok201(url, '/api/v1/hosts', { name, playbook: pb.id, facts: { name } }));
    for (let t = 0; t < 3; t++) {
      const task = await ok201(url, '/api/v1/tasks', { name: `t${t}`, action: 'debug', lineno: t, handler: false, playbook: pb.id, play: play.id, file: file.id });
      for (const host of hosts) {
        await ok201(url, '/api/v1/results', {
          status: ['ok', 'failed', 'skipped'][t], changed: t === 0, playbook: pb.id, play: play.id, task: task.id, host: host.id,
          content: { msg: `${i}/${t}` }, ...(t === 1 ? { delegated_to: [hosts[0].id] } : {}),
        });
      }
    }
    await ok201(url, '/api/v1/records', { key: 'k', value: { i }, type: 'json', playbook: pb.id });
    // what both Ansible callbacks do at the end: Ansible's stats, which need not equal a recount
    const stats = await api(url, 'PATCH', `/api/v1/hosts/${hosts[0].id}`, { ok: 7, changed: 1, failed: 0, skipped: 2, unreachable: 0 });
    if (stats.status !== 200) throw new Error(`PATCH host → ${stats.status} ${stats.text}`);
  }
}

let lb: Logbook;
let good: string;

test.before(async () => {
  good = mkdtempSync(join(tmpdir(), 'logbook-check-'));
  lb = await startLogbook({ dataDir: good, env: { LOGBOOK_SHARDS: String(SHARDS), LOGBOOK_SNAPSHOT_EVERY: '20', LOGBOOK_SNAPSHOT_INTERVAL: '1' } });
  await fill(lb.url);
  // a deleted label stays referenced on disk by its playbooks: a note, not a problem
  const labels = await api(lb.url, 'GET', '/api/v1/labels?name=l0');
  const del = await api(lb.url, 'DELETE', `/api/v1/labels/${labels.body.results[0].id}`);
  if (del.status !== 204) throw new Error(`label delete → ${del.status}`);
  await new Promise((r) => setTimeout(r, 1500)); // let a snapshot round run
});

test.after.always(async () => {
  await lb?.stop();
  rmSync(good, { recursive: true, force: true });
});

test.serial('a live server\'s directory is refused (exit 2, naming the pid)', async (t) => {
  const r = await check(good);
  t.is(r.code, 2, r.output);
  t.regex(r.output, new RegExp(`in use by another logbook \\(pid ${lb.child.pid}\\)`));
});

test.serial('a good stopped directory → exit 0 with records per type, blobs and bytes', async (t) => {
  t.is(await lb.stop(), 0);
  const r = await check(good);
  t.is(r.code, 0, r.output);
  t.regex(r.output, /records: 6 playbooks, 6 plays, 18 tasks, 12 hosts, 36 results, 6 files, 6 records, 6 labels/);
  t.regex(r.output, /blobs: 66, \d+ B of text: content 36 .*facts 12 .*arguments 6 .*value 6 .*file 6 /);
  t.regex(r.output, /note: 1 label reference\(s\) to deleted labels/);
  t.regex(r.output, /note: 6 host\(s\) whose counters a write set \(an Ansible callback's final stats\): not compared with a recount/);
  t.regex(r.output, /^OK: /m);
});

/** A copy of the good directory, damaged by `damage` through LMDB directly. */
async function damaged(t: { teardown(fn: () => void): void }, damage: (dir: string) => Promise<void>): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-check-bad-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(good, dir, { recursive: true });
  await damage(dir);
  return dir;
}

function shardEnv(dir: string, k: number) {
  const env = open({ path: join(dir, `shard-${k}.mdb`), maxDbs: 4 });
  return {
    env,
    blobs: env.openDB<string, number | string>({ name: 'blobs', encoding: 'string', compression: { threshold: 512 } }),
    snapshots: env.openDB<any, number>({ name: 'snapshots', keyEncoding: 'uint32', encoding: 'msgpack' }),
  };
}

test.serial('an orphan blob (its result does not exist) → exit 1 naming it', async (t) => {
  const dir = await damaged(t, async (d) => {
    const { env, blobs } = shardEnv(d, 1);
    await blobs.put(1 * 2 ** 40 + 987654, '{"msg":"nobody owns me"}');
    await env.close();
  });
  const r = await check(dir);
  t.is(r.code, 1, r.output);
  t.regex(r.output, /1 problem\(s\):\n {2}- shard-1\.mdb: orphan blob content:987654: result 987654 does not exist/);
});

test.serial('a host counter changed in a snapshot → exit 1 naming the host and the recount', async (t) => {
  let hostId = 0;
  let setInSnapshots = 0;
  const dir = await damaged(t, async (d) => {
    for (let k = 0; k < SHARDS && !hostId; k++) {
      const { env, snapshots } = shardEnv(d, k);
      for (const { key, value } of snapshots.getRange({ start: 1 })) {
        setInSnapshots += (value[4] as unknown[][]).filter((h) => h[10] === 1).length;
        // a host whose counters no write set (those are a recount of its results)
        const host = (value[4] as unknown[][]).find((h) => h[10] !== 1);
        if (!host) continue;
        hostId = host[0] as number;
        host[7] = (host[7] as number) + 5; // ok
        await snapshots.put(key, value);
        break;
      }
      await env.close();
    }
  });
  t.true(hostId > 0, 'some host was in a snapshot');
  t.true(setInSnapshots > 0, 'a snapshot keeps that a host\'s counters were set');
  const r = await check(dir);
  t.is(r.code, 1, r.output);
  t.regex(r.output, new RegExp(`- host ${hostId}: counters ok \\d+; recount from its results ok \\d+`));
});

test.serial('a file whose text blob is gone → exit 1 naming the file', async (t) => {
  const dir = await damaged(t, async (d) => {
    const { env, blobs } = shardEnv(d, 0);
    const fileKey = [...blobs.getKeys()].find((k) => typeof k === 'string');
    if (fileKey === undefined) throw new Error('no file blob in shard 0');
    await blobs.remove(fileKey);
    await env.close();
  });
  const r = await check(dir);
  t.is(r.code, 1, r.output);
  t.regex(r.output, /- file \d+: its content \(blob f[0-9a-f]{40}\) is missing from shard-0\.mdb/);
});

test.serial('a file sent twice with other text in one batch leaves no orphan blob: exit 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-check-twice-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const server = await startLogbook({ dataDir: dir, env: { LOGBOOK_SHARDS: '1' } });
  const res = await api(server.url, 'POST', '/api/v1/ingest', {
    playbook: { uuid: 'twice', path: '/twice.yml', runner_version: '2.15.13' }, seq: 1,
    events: [{ kind: 'file', path: '/a.yml', content: 'one' }, { kind: 'file', path: '/a.yml', content: 'two' }],
  });
  t.like(res.body, { applied: 2, rejected: [] });
  const file = (await api(server.url, 'GET', '/api/v1/files?playbook=' + res.body.playbook)).body.results[0];
  t.is((await api(server.url, 'GET', `/api/v1/files/${file.id}`)).body.content, 'two');
  t.is(await server.stop(), 0);
  const r = await check(dir);
  t.is(r.code, 0, r.output);
  t.regex(r.output, /blobs: 1, /);
});

test.serial('not a data directory, or bad arguments → exit 2 with usage', async (t) => {
  const empty = mkdtempSync(join(tmpdir(), 'logbook-check-empty-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  const r = await check(empty);
  t.is(r.code, 2);
  t.regex(r.output, /not a logbook data directory/);
});
