// Backup of a running server (src/tools/backup.ts): writers keep writing to a
// real logbook while the real backup tool runs as a child process; the server
// is stopped; a new server started on the backup must hold every write
// acknowledged before the backup started, with items and host counters equal to
// a recount over the API, and must take new writes with fresh ids. The copy also
// passes `check` (src/tools/check.ts) untouched.
import test from 'ava';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import crypto from 'node:crypto';
import { api, startLogbook } from '../helpers/server.js';
import { dumpApi } from '../helpers/dump.js';

const here = dirname(fileURLToPath(import.meta.url));
const TOOLS = join(here, '..', '..', 'src', 'tools');
const ENV = { LOGBOOK_SHARDS: '3', LOGBOOK_SNAPSHOT_EVERY: '300', LOGBOOK_SNAPSHOT_INTERVAL: '1' };
const WRITERS = 6;
const COUNTERS = ['changed', 'failed', 'ok', 'skipped', 'unreachable'] as const;
type Counters = Record<typeof COUNTERS[number], number>;
const STATUSES = ['ok', 'failed', 'skipped', 'unreachable'] as const;
const LABELS = ['web', 'db', 'prod', 'nightly', 'ops'];

export function runTool(tool: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [join(TOOLS, tool + '.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { output += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { output += d; });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

interface Acked { kind: string; id: number; at: number; fields: Record<string, unknown> }

const refused: string[] = [];
/** A POST; null when not acknowledged (a refusal other than 503 is a test defect: kept to report). */
async function post(url: string, path: string, body: unknown): Promise<{ id: number; body: any } | null> {
  try {
    const r = await api(url, 'POST', path, body);
    if (r.status === 201) return { id: r.body.id, body: r.body };
    if (r.status !== 503) refused.push(`${path} → ${r.status} ${r.text.slice(0, 200)}`);
  } catch { /* connection closed at shutdown */ }
  await new Promise((r) => setTimeout(r, 20));
  return null;
}

/** One writer: playbook trees, one request at a time; every 201 is recorded with its time. */
async function writer(url: string, n: number, acked: Acked[], stop: { now: boolean }): Promise<void> {
  let round = 0;
  const ack = (kind: string, id: number, fields: Record<string, unknown>) => acked.push({ kind, id, at: performance.now(), fields });
  while (!stop.now) {
    round++;
    const labels = [LABELS[(n + round) % LABELS.length]!, `w${n}`];
    const pb = await post(url, '/api/v1/playbooks', { path: `/w${n}/r${round}.yml`, runner_version: '2.15.13', labels, arguments: { round, big: 'x'.repeat(600) } });
    if (!pb) continue;
    ack('playbook', pb.id, { path: `/w${n}/r${round}.yml`, labels: [...labels].sort() });
    const file = await post(url, '/api/v1/files', { path: `/w${n}/r${round}.yml`, content: `- hosts: all # ${n}\n`, playbook: pb.id });
    const play = await post(url, '/api/v1/plays', { uuid: crypto.randomUUID(), name: `play ${round}`, playbook: pb.id });
    if (!file || !play) continue;
    ack('file', file.id, { playbook: pb.id }); ack('play', play.id, { playbook: pb.id });
    const hosts: number[] = [];
    for (let h = 0; h < 2; h++) {
      const host = await post(url, '/api/v1/hosts', { name: `h${h}`, playbook: pb.id, facts: { n, h, pad: 'f'.repeat(700) } });
      if (host) { hosts.push(host.id); ack('host', host.id, { playbook: pb.id, name: `h${h}` }); }
    }
    for (let t = 0; t < 3 && !stop.now; t++) {
      const task = await post(url, '/api/v1/tasks', { name: `t${t}`, action: 'debug', lineno: t, handler: false, playbook: pb.id, play: play.id, file: file.id });
      if (!task) continue;
      ack('task', task.id, { play: play.id });
      for (const host of hosts) {
        const status = STATUSES[(n + round + t + host) % STATUSES.length]!;
        const changed = (host + t) % 3 === 0;
        const r = await post(url, '/api/v1/results', { status, changed, playbook: pb.id, play: play.id, task: task.id, host, content: { msg: `r ${n}/${round}/${t}`, pad: 'c'.repeat(600) } });
        if (r) ack('result', r.id, { status: status === 'ok' && changed ? 'changed' : status, host, task: task.id });
      }
    }
    const rec = await post(url, '/api/v1/records', { key: `k${round}`, value: { n }, type: 'json', playbook: pb.id });
    if (rec) ack('record', rec.id, { key: `k${round}` });
  }
}

function contribution(shown: string, changed: boolean): Counters {
  const c: Counters = { changed: 0, failed: 0, ok: 0, skipped: 0, unreachable: 0 };
  if (shown === 'ok') c.ok = 1;
  else if (shown === 'changed') { c.ok = 1; c.changed = 1; }
  else if (shown === 'failed') { c.failed = 1; if (changed) c.changed = 1; }
  else if (shown === 'skipped') c.skipped = 1;
  else if (shown === 'unreachable') c.unreachable = 1;
  return c;
}

test('a backup taken under load restores every write acknowledged before it started, with exact counters and fresh ids', async (t) => {
  const target = join(mkdtempSync(join(tmpdir(), 'logbook-backup-')), 'copy');
  const lb = await startLogbook({ env: ENV });
  let restored: Awaited<ReturnType<typeof startLogbook>> | null = null;
  try {
    // the tool refuses a non-empty target and a directory that is not logbook's
    const occupied = mkdtempSync(join(tmpdir(), 'logbook-occupied-'));
    writeFileSync(join(occupied, 'keep'), 'x');
    const intoOccupied = await runTool('backup', [lb.dataDir, occupied]);
    t.is(intoOccupied.code, 1, intoOccupied.output);
    t.regex(intoOccupied.output, /not empty/);
    t.deepEqual(readdirSync(occupied), ['keep']);
    rmSync(occupied, { recursive: true, force: true });
    const empty = mkdtempSync(join(tmpdir(), 'logbook-notdata-'));
    t.is((await runTool('backup', [empty, join(empty, 'x')])).code, 1);
    rmSync(empty, { recursive: true, force: true });

    const acked: Acked[] = [];
    const stop = { now: false };
    const writers = Array.from({ length: WRITERS }, (_, n) => writer(lb.url, n, acked, stop));
    while (acked.filter((a) => a.kind === 'result').length < 300) {
      if (refused.length) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (refused.length) { stop.now = true; await Promise.all(writers); t.fail(`writes refused: ${refused.slice(0, 3).join('; ')}\n${lb.output().slice(-4000)}`); return; }
    const backupStarted = performance.now();
    const ackedBefore = acked.length;
    const backup = await runTool('backup', [lb.dataDir, target]);
    const backupEnded = performance.now();
    // keep writing a little after the backup, then stop
    const afterBackup = acked.length;
    await new Promise((r) => setTimeout(r, 500));
    stop.now = true;
    await Promise.all(writers);
    t.is(backup.code, 0, backup.output);
    // what the server warned about, for a refusal reported at the end (after the data checks, which say more)
    const serverTrouble = lb.output().split('\n').filter((l) => /"level":"(warn|error|fatal)"/.test(l)).slice(-20).join('\n');
    for (const name of ['shard-0.mdb', 'shard-1.mdb', 'shard-2.mdb', 'front.mdb']) t.regex(backup.output, new RegExp(`copied ${name.replace('.', '\\.')}`));
    t.deepEqual(readdirSync(target).sort(), ['front.mdb', 'shard-0.mdb', 'shard-1.mdb', 'shard-2.mdb']);
    t.true(afterBackup > ackedBefore, 'writes went on while the backup ran');
    t.log(`${ackedBefore} writes acknowledged before the backup, ${afterBackup - ackedBefore} during it (${Math.round(backupEnded - backupStarted)} ms), ${acked.length} in all`);
    t.is(await lb.stop(), 0);
    // the copy passes the data directory check as it is (before any server touched it)
    const checked = await runTool('check', [target]);
    t.is(checked.code, 0, checked.output);

    restored = await startLogbook({ env: ENV, dataDir: target });
    const dump = await dumpApi(restored.url);
    const byKind = (kind: string) => new Map<number, any>(dump.lists[(kind + 's') as 'playbooks'].map((r) => [r.id, dump.details[(kind + 's') as 'playbooks'][r.id]]));
    const rows: Record<string, Map<number, any>> = {};
    for (const k of ['playbook', 'play', 'task', 'host', 'result', 'file', 'record']) rows[k] = byKind(k);

    // every write acknowledged before the backup started is there, as acknowledged
    const missing: string[] = [];
    for (const a of acked) {
      if (a.at >= backupStarted) continue;
      const row = rows[a.kind]!.get(a.id);
      if (!row) { missing.push(`${a.kind} ${a.id} missing`); continue; }
      for (const [k, v] of Object.entries(a.fields)) {
        const got = k === 'labels' ? row.labels.map((l: any) => l.name).sort()
          : ['playbook', 'play', 'task', 'host', 'file'].includes(k) && typeof row[k] === 'object' ? row[k].id : row[k];
        if (JSON.stringify(got) !== JSON.stringify(v)) missing.push(`${a.kind} ${a.id}: ${k} ${JSON.stringify(got)}, acknowledged ${JSON.stringify(v)}`);
      }
    }
    t.deepEqual(missing.slice(0, 20), [], `${missing.length} acknowledged writes lost or changed`);
    // blobs came along: a result's content and a host's facts
    const someResult = [...rows.result!.values()][0];
    t.regex(JSON.stringify(someResult.content), /"pad":"c{600}"/);
    const someHost = [...rows.host!.values()][0];
    t.regex(JSON.stringify(someHost.facts), /"pad":"f{700}"/);

    // counters equal a recount over the API
    const problems: string[] = [];
    const count = (kind: string, field: string, id: number) => {
      let n = 0;
      for (const r of rows[kind]!.values()) if ((typeof r[field] === 'object' && r[field] !== null ? r[field].id : r[field]) === id) n++;
      return n;
    };
    for (const pb of rows.playbook!.values()) {
      const expected = { plays: count('play', 'playbook', pb.id), tasks: count('task', 'playbook', pb.id), results: count('result', 'playbook', pb.id), hosts: count('host', 'playbook', pb.id), files: count('file', 'playbook', pb.id), records: count('record', 'playbook', pb.id) };
      if (JSON.stringify(pb.items) !== JSON.stringify(expected)) problems.push(`playbook ${pb.id}: items ${JSON.stringify(pb.items)}, recount ${JSON.stringify(expected)}`);
    }
    const byHost = new Map<number, Counters>();
    for (const r of rows.result!.values()) {
      const host = typeof r.host === 'object' ? r.host.id : r.host;
      const c = byHost.get(host) ?? { changed: 0, failed: 0, ok: 0, skipped: 0, unreachable: 0 };
      const add = contribution(r.status, r.changed);
      for (const k of COUNTERS) c[k] += add[k];
      byHost.set(host, c);
    }
    for (const host of rows.host!.values()) {
      const expected = byHost.get(host.id) ?? { changed: 0, failed: 0, ok: 0, skipped: 0, unreachable: 0 };
      const shown = Object.fromEntries(COUNTERS.map((k) => [k, host[k]]));
      if (JSON.stringify(shown) !== JSON.stringify(expected)) problems.push(`host ${host.id}: counters ${JSON.stringify(shown)}, recount ${JSON.stringify(expected)}`);
    }
    t.deepEqual(problems.slice(0, 20), [], `${problems.length} counters differ from a recount`);

    // new writes get fresh ids, above everything in the backup
    const maxId = (kind: string) => Math.max(0, ...rows[kind]!.keys());
    const pb = await api(restored.url, 'POST', '/api/v1/playbooks', { path: '/after/restore.yml', runner_version: '2.15.13', labels: ['after-restore'] });
    t.is(pb.status, 201, pb.text);
    t.true(pb.body.id > maxId('playbook'), `new playbook id ${pb.body.id} above ${maxId('playbook')}`);
    const host = await api(restored.url, 'POST', '/api/v1/hosts', { name: 'fresh', playbook: pb.body.id });
    t.is(host.status, 201, host.text);
    t.true(host.body.id > maxId('host'));
    const labelIds = dump.lists.labels.map((l) => l.id as number);
    t.true(pb.body.labels[0].id > Math.max(0, ...labelIds));
    t.deepEqual(refused.slice(0, 3), [], `no write was refused; the server's warnings and errors:\n${serverTrouble}`);
  } finally {
    stopAll: {
      await restored?.stop();
      await lb.stop();
      rmSync(dirname(target), { recursive: true, force: true });
      break stopAll;
    }
  }
});
