// Recovery and start-up guards of the on-disk store (SPEC §11, DESIGN.md
// "Persistence"), each seen the way a user sees them: through the HTTP API,
// the exit code and the message of a real logbook process.
//  - snapshot + journal trim + replay give back exactly the state that was
//    served before a restart (SIGTERM or SIGKILL), with the journal trimmed
//    (also a result row changed by another record's delete: `delegated_to`);
//  - ids are never handed out twice, also after a restart;
//  - a newer on-disk format, or another LOGBOOK_SHARDS, is refused (exit 2);
//  - one data directory, one logbook (pid lock; a stale lock is taken over);
//  - SIGTERM under load: exit 0 and nothing acknowledged is lost.
import test from 'ava';
import { open } from 'lmdb';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { dumpApi, flatten, listAll, type Dump } from '../helpers/dump.js';
import { runUntilExit } from '../helpers/process.js';
import { Rng, seedFrom } from '../helpers/random.js';
import { FORMAT_VERSION } from '../../src/store/front_store.js';
import { snapshotPartsIn } from '../helpers/shard_node.js';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-recovery-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A write that must succeed; returns the response body. */
async function must(url: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await api(url, method, path, body);
  if (res.status < 200 || res.status >= 300) throw new Error(`${method} ${path} ${JSON.stringify(body)?.slice(0, 200)} → ${res.status} ${res.text}`);
  return res.body;
}

function recoveryLine(lb: Logbook): Record<string, any> {
  for (const line of lb.output().split('\n')) {
    if (line.includes('"msg":"recovered"')) return JSON.parse(line);
  }
  throw new Error(`no "recovered" log line in:\n${lb.output()}`);
}

/** Journal entries left in each (closed) shard environment. */
async function journalLengths(dataDir: string, shards: number): Promise<number[]> {
  const out: number[] = [];
  for (let k = 0; k < shards; k++) {
    const env = open({ path: join(dataDir, `shard-${k}.mdb`), maxDbs: 4, readOnly: true });
    const journal = env.openDB<unknown, number>({ name: 'journal', keyEncoding: 'uint32', encoding: 'msgpack' });
    out.push(journal.getKeysCount());
    await env.close();
  }
  return out;
}

/** Result parts stored in each (closed) shard environment, and how many of them the snapshots refer to. */
async function snapshotParts(dataDir: string, shards: number): Promise<{ stored: number; referred: number }> {
  let stored = 0, referred = 0;
  for (let k = 0; k < shards; k++) {
    for (const parts of (await snapshotPartsIn(join(dataDir, `shard-${k}.mdb`))).values()) {
      stored += parts.stored.length;
      referred += parts.stored.filter((key) => parts.referred.includes(key)).length;
    }
  }
  return { stored, referred };
}

/** List queries (filters, orders) whose answers must also survive a restart. */
const QUERIES = [
  'playbooks?order=-started', 'playbooks?label=web', 'playbooks?status=completed&status=failed', 'playbooks?order=name',
  'plays?status=running&limit=1000', 'tasks?order=-duration&limit=1000', 'tasks?action=debug&limit=1000',
  'hosts?order=-ok,name&limit=1000', 'hosts?failed__gt=0&limit=1000', 'results?status=changed&limit=1000',
  'results?status=ignored&status=failed&limit=1000', 'results?order=-duration&limit=1000', 'results?changed=true&limit=1000',
  'files?path=common&limit=1000', 'records?key=key-1&limit=1000', 'labels?order=-name',
];

interface FullDump { api: Dump; queries: Record<string, { count: number; results: unknown[] }> }

/** Which ids differ between two dumps, per resource (a readable summary next to the deep diff). */
function dumpDiff(after: FullDump, before: FullDump): string[] {
  const out: string[] = [];
  for (const r of Object.keys(before.api.details) as Array<keyof Dump['details']>) {
    const a = after.api.details[r], b = before.api.details[r];
    const missing = Object.keys(b).filter((id) => !(id in a));
    const extra = Object.keys(a).filter((id) => !(id in b));
    const changed = Object.keys(b).filter((id) => id in a && JSON.stringify(a[+id]) !== JSON.stringify(b[+id]));
    if (missing.length) out.push(`${r}: missing ${missing.map((id) => `${id}${b[+id].playbook ? ` (playbook ${b[+id].playbook.id ?? b[+id].playbook})` : ''}`).join(', ')}`);
    if (extra.length) out.push(`${r}: unexpected ${extra.join(', ')}`);
    for (const id of changed.slice(0, 10)) {
      const keys = Object.keys(b[+id]).filter((k) => JSON.stringify(a[+id][k]) !== JSON.stringify(b[+id][k]));
      out.push(`${r} ${id}: ${keys.map((k) => `${k} ${JSON.stringify(a[+id][k]).slice(0, 120)} (was ${JSON.stringify(b[+id][k]).slice(0, 120)})`).join('; ')}`);
    }
  }
  for (const r of Object.keys(before.api.lists) as Array<keyof Dump['lists']>) {
    const a = after.api.lists[r].map((row) => row.id), b = before.api.lists[r].map((row) => row.id);
    const i = b.findIndex((id, k) => a[k] !== id);
    if (i >= 0 || a.length !== b.length) {
      const at = i >= 0 ? i : b.length;
      out.push(`GET /api/v1/${r}: ids from position ${at} are ${a.slice(at, at + 8).join(', ')}…, were ${b.slice(at, at + 8).join(', ')}…`);
    }
  }
  for (const q of Object.keys(before.queries)) {
    if (JSON.stringify(after.queries[q]) !== JSON.stringify(before.queries[q])) out.push(`GET ${q}: count ${after.queries[q]!.count} (was ${before.queries[q]!.count}) or rows differ`);
  }
  return out;
}

/** The dump with every list sorted by id: the same records and values, whatever the order. */
function byId(d: FullDump): unknown {
  const sort = (rows: any[]) => [...rows].sort((a, b) => a.id - b.id);
  return {
    details: d.api.details,
    lists: Object.fromEntries(Object.entries(d.api.lists).map(([r, rows]) => [r, sort(rows)])),
    queries: Object.fromEntries(Object.entries(d.queries).map(([q, v]) => [q, { count: v.count, results: sort(v.results) }])),
  };
}

async function fullDump(url: string): Promise<FullDump> {
  const queries: FullDump['queries'] = {};
  for (const q of QUERIES) {
    const body = await must(url, 'GET', `/api/v1/${q}`);
    queries[q] = { count: body.count, results: body.results };
  }
  return { api: await dumpApi(url), queries };
}

const FILES = ['', '- hosts: all\n', '# common role\n' + 'line of yaml: true\n'.repeat(80)];
const LABELS = ['web', 'db', 'prod', 'staging', 'obsolete', 'nightly'];

/**
 * One playbook with many children, then updates and deletes of every kind
 * (cascades included). Returns the number of successful writes.
 */
async function fillPlaybook(url: string, rng: Rng, i: number): Promise<number> {
  let writes = 0;
  const w = async (method: string, path: string, body?: unknown) => { const r = await must(url, method, path, body); writes++; return r; };
  const pb = (await w('POST', '/api/v1/playbooks', {
    path: `/srv/site-${i}.yml`, runner_version: '2.16.1', name: `site ${i}`, status: 'running',
    labels: rng.subset(LABELS, 3), arguments: { limit: `group${i}`, check: false }, controller: 'ctl', user: 'me',
  })).id;
  const plays = [];
  for (let k = 0; k < 3; k++) plays.push((await w('POST', '/api/v1/plays', { playbook: pb, uuid: `00000000-0000-4000-8000-${String(i * 10 + k).padStart(12, '0')}`, name: `play ${k}`, status: 'running' })).id);
  const files = [];
  for (let k = 0; k < 3; k++) files.push((await w('POST', '/api/v1/files', { playbook: pb, path: `/srv/roles/common/f${k}.yml`, content: FILES[k]! + (k === 1 ? `# ${i}\n` : '') })).id);
  const tasks = [];
  for (let k = 0; k < 8; k++) {
    tasks.push((await w('POST', '/api/v1/tasks', {
      playbook: pb, play: rng.pick(plays), file: rng.pick(files), name: `task ${k}`, action: rng.pick(['debug', 'command', 'copy']),
      lineno: rng.int(1, 99), handler: k === 7, tags: ['t', String(k)], status: 'completed', started: '2024-01-02T03:04:05Z', ended: `2024-01-02T03:04:${10 + k}.25Z`,
    })).id);
  }
  const hosts = [];
  for (let k = 0; k < 4; k++) hosts.push((await w('POST', '/api/v1/hosts', { playbook: pb, name: `h${k}.example`, facts: { ansible_os_family: 'Debian', k } })).id);
  const results: number[] = [];
  for (let k = 0; k < 40; k++) {
    const task = rng.pick(tasks);
    const taskPlay = (await must(url, 'GET', `/api/v1/tasks/${task}`)).play.id;
    results.push((await w('POST', '/api/v1/results', {
      playbook: pb, play: taskPlay, task, host: rng.pick(hosts), status: rng.pick(['ok', 'failed', 'skipped', 'unreachable', 'changed', 'unknown']),
      changed: rng.bool(0.4), ignore_errors: rng.bool(0.3), content: { msg: `r${k}`, data: rng.json(2) },
      started: '2024-01-02T03:04:05Z', ended: `2024-01-02T03:04:${String(5 + rng.int(0, 50)).padStart(2, '0')}.5Z`,
    })).id);
  }
  const records = [];
  for (let k = 0; k < 5; k++) records.push((await w('POST', '/api/v1/records', { playbook: pb, key: `key-${k}`, type: 'json', value: rng.json(2) ?? 1 })).id);
  // updates
  await w('PATCH', `/api/v1/hosts/${hosts[0]}`, { ok: 7, failed: 1 });
  for (const r of results.slice(0, 3)) await w('PATCH', `/api/v1/results/${r}`, { status: 'failed', ignore_errors: true, changed: true });
  await w('PATCH', `/api/v1/playbooks/${pb}`, { status: rng.pick(['completed', 'failed']), labels: rng.subset(LABELS, 3), ended: '2030-01-01T00:00:00Z' });
  await w('PATCH', `/api/v1/records/${records[0]}`, { value: { changed: 'value', n: i } });
  await w('PUT', `/api/v1/tasks/${tasks[0]}`, { playbook: pb, play: plays[0], file: files[0], action: 'debug', lineno: 1, handler: false, name: 'put' });
  // deletes, with cascades
  for (const r of results.slice(5, 8)) await w('DELETE', `/api/v1/results/${r}`);
  await w('DELETE', `/api/v1/hosts/${hosts[3]}`);
  await w('DELETE', `/api/v1/tasks/${tasks[6]}`);
  await w('DELETE', `/api/v1/records/${records[4]}`);
  await w('DELETE', `/api/v1/files/${files[2]}`);
  if (i % 2) await w('DELETE', `/api/v1/plays/${plays[2]}`);
  return writes;
}

test('snapshot + journal trim + replay: every list and detail is the same after SIGTERM/restart and after SIGKILL/restart', async (t) => {
  t.timeout(90_000);
  const seed = seedFrom('RECOVERY_SEED');
  t.log(`RECOVERY_SEED=${seed}`);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-recovery-'));
  let kept = false;
  const keep = () => { kept = true; return dataDir; };
  t.teardown(() => { if (!kept) rmSync(dataDir, { recursive: true, force: true }); });
  // results are snapshotted in parts of 7 (test hook; thousands by default), so parts are written,
  // replaced round after round, removed with their playbook, and loaded back
  const env = { LOGBOOK_SHARDS: '3', LOGBOOK_SNAPSHOT_EVERY: '50', LOGBOOK_SNAPSHOT_INTERVAL: '86400', LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_SNAPSHOT_PART_ROWS: '7' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });

  // ~80 writes per playbook, 8 playbooks over 3 shards: several snapshot rounds per shard
  const counts = await Promise.all(Array.from({ length: 8 }, (_, i) => fillPlaybook(lb.url, new Rng(seed + i), i)));
  let writes = counts.reduce((a, b) => a + b, 0);
  const playbooks = (await listAll(lb.url, 'playbooks')).map((p) => p.id as number);
  await must(lb.url, 'DELETE', `/api/v1/playbooks/${playbooks[3]}`);
  const obsolete = (await listAll(lb.url, 'labels')).find((l) => l.name === 'obsolete');
  if (obsolete) await must(lb.url, 'DELETE', `/api/v1/labels/${obsolete.id}`);
  writes += 2;
  // a tail that only the journal holds: the last snapshot round of each shard is behind it
  for (const pb of playbooks.filter((_, k) => k !== 3)) {
    const host = (await listAll(lb.url, 'hosts', `playbook=${pb}`))[0];
    let task = (await listAll(lb.url, 'tasks', `playbook=${pb}`))[0];
    if (!task) {
      const [play, file] = [(await listAll(lb.url, 'plays', `playbook=${pb}`))[0], (await listAll(lb.url, 'files', `playbook=${pb}`))[0]];
      task = await must(lb.url, 'POST', '/api/v1/tasks', { playbook: pb, play: play.id, file: file.id, action: 'debug', lineno: 2, handler: false });
      writes++;
    }
    for (let k = 0; k < 3; k++) {
      await must(lb.url, 'POST', '/api/v1/results', { playbook: pb, play: task.play, task: task.id, host: host.id, status: 'ok', changed: k === 1, content: { tail: k } });
    }
    await must(lb.url, 'PATCH', `/api/v1/hosts/${host.id}`, { skipped: 3 });
    await must(lb.url, 'POST', '/api/v1/records', { playbook: pb, key: 'tail', type: 'text', value: 'only in the journal' });
    writes += 5;
  }
  const before = await fullDump(lb.url);
  t.true(before.api.lists.results.length > 50, `the fill left many results (${before.api.lists.results.length})`);

  t.is(await lb.stop('SIGTERM'), 0, 'SIGTERM exits 0');
  const journal = await journalLengths(dataDir, 3);
  t.log(`${writes} writes; journal entries left per shard after SIGTERM: ${journal.join(', ')}`);
  t.true(journal.every((n) => n < 2 * 50 + 30), `every shard's journal was trimmed after its snapshots (${journal.join(', ')} entries for ${writes} writes)`);
  t.true(journal.some((n) => n > 0), 'some state is only in the journal tail (so replay is exercised)');
  const parts = await snapshotParts(dataDir, 3);
  t.log(`snapshot parts stored: ${parts.stored}, referred to by snapshots: ${parts.referred}`);
  t.true(parts.referred > 0, 'some snapshots keep their results in parts');
  t.is(parts.stored, parts.referred, 'no part is left that no snapshot refers to (older rounds, the deleted playbook)');

  lb = await startLogbook({ env, dataDir });
  const recovered = recoveryLine(lb);
  t.log(`restart after SIGTERM: ${recovered.snapshots} snapshots, ${recovered.journalEventsReplayed} journal events replayed`);
  t.true(recovered.snapshots > 0 && recovered.journalEventsReplayed > 0, 'recovery used snapshots and a journal tail');
  const afterTerm = await fullDump(lb.url);
  const termDiff = dumpDiff(afterTerm, before);
  if (termDiff.length) t.log(`differences after SIGTERM + restart:\n${termDiff.join('\n')}`);
  if (JSON.stringify(byId(afterTerm)) !== JSON.stringify(byId(before))) t.log(`data dir kept: ${keep()}`);
  // same rows and values first (order checked at the end, so an ordering bug does not hide the rest)
  t.deepEqual(byId(afterTerm), byId(before), 'the API shows the same records after SIGTERM and restart');

  // more writes on top of the recovered state (snapshotted aggregates changed
  // only in the journal), then a crash instead of a clean stop
  const live = playbooks.filter((_, k) => k !== 3);
  await must(lb.url, 'PATCH', `/api/v1/playbooks/${live[0]}`, { labels: ['web', 'after-restart'], status: 'expired' });
  const results = await listAll(lb.url, 'results', `playbook=${live[1]}`);
  await must(lb.url, 'PATCH', `/api/v1/results/${results[0].id}`, { status: 'ok', changed: true });
  await must(lb.url, 'DELETE', `/api/v1/results/${results[1].id}`);
  const plays = await listAll(lb.url, 'plays', `playbook=${live[2]}`);
  await must(lb.url, 'DELETE', `/api/v1/plays/${plays[0].id}`);
  const hosts = await listAll(lb.url, 'hosts', `playbook=${live[3]}`);
  await must(lb.url, 'DELETE', `/api/v1/hosts/${hosts[0].id}`);
  const fresh = await must(lb.url, 'POST', '/api/v1/playbooks', { path: '/srv/fresh.yml', runner_version: '2.17.0', labels: ['db'] });
  await must(lb.url, 'POST', '/api/v1/records', { playbook: fresh.id, key: 'k', type: 'text', value: 'v' });
  const beforeKill = await fullDump(lb.url);
  t.is(await lb.stop('SIGKILL'), null);

  lb = await startLogbook({ env, dataDir });
  const afterKill = await fullDump(lb.url);
  const killDiff = dumpDiff(afterKill, beforeKill);
  if (killDiff.length) t.log(`differences after SIGKILL + restart:\n${killDiff.join('\n')}`);
  if (JSON.stringify(byId(afterKill)) !== JSON.stringify(byId(beforeKill))) t.log(`data dir kept: ${keep()}`);
  t.deepEqual(byId(afterKill), byId(beforeKill), 'the API shows the same records after SIGKILL and restart');
  // and in the same order: lists, pages, filtered and ordered queries
  t.deepEqual({ afterSigterm: afterTerm, afterSigkill: afterKill }, { afterSigterm: before, afterSigkill: beforeKill }, 'every list is in the same order after the restarts');
});

test('after a restart from snapshots, default lists are still in ascending id order and paging visits every row once', async (t) => {
  const dataDir = tempDir(t);
  // two shards (playbooks 1, 3 on one, 2, 4 on the other), a snapshot round every 8 writes
  const env = { LOGBOOK_SHARDS: '2', LOGBOOK_SNAPSHOT_EVERY: '8', LOGBOOK_SNAPSHOT_INTERVAL: '86400' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const post = (path: string, body: unknown) => must(lb.url, 'POST', `/api/v1/${path}`, body);
  const parents = [];
  for (let i = 0; i < 4; i++) {
    const pb = await post('playbooks', { path: `/srv/${i}.yml`, runner_version: '2.16.0' });
    const play = await post('plays', { playbook: pb.id, uuid: `00000000-0000-4000-8000-00000000000${i}` });
    const file = await post('files', { playbook: pb.id, path: '/srv/main.yml', content: String(i) });
    const task = await post('tasks', { playbook: pb.id, play: play.id, file: file.id, action: 'debug', lineno: 1, handler: false });
    const host = await post('hosts', { playbook: pb.id, name: 'localhost' });
    parents.push({ pb: pb.id, play: play.id, task: task.id, host: host.id });
  }
  // results and records interleaved across the four playbooks, as parallel runs write them
  const ids: Record<string, number[]> = { results: [], records: [] };
  for (let n = 0; n < 24; n++) {
    const p = parents[n % 4]!;
    ids.results!.push((await post('results', { playbook: p.pb, play: p.play, task: p.task, host: p.host, status: 'ok' })).id);
    ids.records!.push((await post('records', { playbook: p.pb, key: `k${n}`, type: 'text', value: n })).id);
  }
  const page = async (resource: 'results' | 'records', limit: number) => {
    const seen: number[] = [];
    for (let offset = 0; offset < 24; offset += limit) {
      seen.push(...(await must(lb.url, 'GET', `/api/v1/${resource}?limit=${limit}&offset=${offset}`)).results.map((r: any) => r.id));
    }
    return seen;
  };
  t.deepEqual(await page('results', 5), ids.results, 'before the restart');
  t.is(await lb.stop('SIGTERM'), 0);

  lb = await startLogbook({ env, dataDir });
  t.true(recoveryLine(lb).snapshots > 0, 'recovered from snapshots');
  const onePage = { results: (await listAll(lb.url, 'results')).map((r) => r.id), records: (await listAll(lb.url, 'records')).map((r) => r.id) };
  const pagesOf5 = { results: await page('results', 5), records: await page('records', 5) };
  t.deepEqual({ onePage, pagesOf5 }, { onePage: ids, pagesOf5: ids }, 'ascending id (SPEC §5 default order), every row exactly once across pages');
});

test('a deleted label keeps its id to itself after a restart: a new label neither reuses it nor shows up on old playbooks', async (t) => {
  const dataDir = tempDir(t);
  const env = { LOGBOOK_SHARDS: '2' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  await must(lb.url, 'POST', '/api/v1/labels', { name: 'keep' });
  const gone = await must(lb.url, 'POST', '/api/v1/labels', { name: 'retired' });
  const pb = await must(lb.url, 'POST', '/api/v1/playbooks', { path: '/srv/a.yml', runner_version: '2.16.0', labels: ['keep', 'retired'] });
  t.is((await api(lb.url, 'DELETE', `/api/v1/labels/${gone.id}`)).status, 204);
  const shown = (await must(lb.url, 'GET', `/api/v1/playbooks/${pb.id}`)).labels.map((l: any) => l.name);
  t.deepEqual(shown, ['keep'], 'the deleted label is gone from the playbook at once');
  t.is(await lb.stop('SIGTERM'), 0);

  lb = await startLogbook({ env, dataDir });
  const created = await must(lb.url, 'POST', '/api/v1/labels', { name: 'brand-new' });
  const after = (await must(lb.url, 'GET', `/api/v1/playbooks/${pb.id}`)).labels;
  t.deepEqual(
    { newLabelId: created.id, newIdAboveDeleted: created.id > gone.id, playbookLabels: after.map((l: any) => l.name) },
    { newLabelId: created.id, newIdAboveDeleted: true, playbookLabels: ['keep'] },
    `label ${gone.id} ("retired") was deleted before the restart; the new label got id ${created.id}`,
  );
});

test('a playbook whose results shrink below one snapshot part leaves no part behind; a restart shows what was served', async (t) => {
  const dataDir = tempDir(t);
  // snapshots by age every second, results in parts of 3 (test hook)
  const env = { LOGBOOK_SHARDS: '1', LOGBOOK_SNAPSHOT_INTERVAL: '1', LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_SNAPSHOT_PART_ROWS: '3' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const rounds = () => lb.output().split('\n').filter((l) => l.includes('"msg":"snapshot taken"')).length;
  const nextRound = async () => {
    const before = rounds();
    for (let i = 0; i < 100 && rounds() === before; i++) await new Promise((r) => setTimeout(r, 100));
    t.true(rounds() > before, 'a snapshot round ran');
  };
  const pb = (await must(lb.url, 'POST', '/api/v1/playbooks', { path: '/srv/shrink.yml', runner_version: '2.16.0' })).id;
  const play = (await must(lb.url, 'POST', '/api/v1/plays', { playbook: pb, name: 'p', uuid: '6bd4f5a2-4c5e-4f0a-9a7e-0c0ffee00001' })).id;
  const file = (await must(lb.url, 'POST', '/api/v1/files', { playbook: pb, path: '/srv/shrink.yml', content: '- hosts: all' })).id;
  const task = (await must(lb.url, 'POST', '/api/v1/tasks', { playbook: pb, play, file, action: 'debug', lineno: 1, handler: false })).id;
  const host = (await must(lb.url, 'POST', '/api/v1/hosts', { playbook: pb, name: 'h' })).id;
  const results: number[] = [];
  for (let k = 0; k < 10; k++) results.push((await must(lb.url, 'POST', '/api/v1/results', { playbook: pb, play, task, host, status: 'ok', content: { k } })).id);
  await nextRound(); // 10 results: 4 parts
  for (const id of results.slice(0, 8)) await must(lb.url, 'DELETE', `/api/v1/results/${id}`);
  await nextRound(); // 2 results: inline, the 4 parts go
  const served = await fullDump(lb.url);
  t.is(await lb.stop('SIGTERM'), 0);
  t.deepEqual(await snapshotParts(dataDir, 1), { stored: 0, referred: 0 });
  lb = await startLogbook({ env, dataDir });
  t.deepEqual(await fullDump(lb.url), served);
  t.deepEqual((await listAll(lb.url, 'results', `playbook=${pb}`)).map((r) => r.id), results.slice(8));
});

test('ids of records in a deleted playbook are not handed out again after a crash', async (t) => {
  const dataDir = tempDir(t);
  // one shard, a snapshot after every 10 journaled writes, none by time
  const env = { LOGBOOK_SHARDS: '1', LOGBOOK_SNAPSHOT_EVERY: '10', LOGBOOK_SNAPSHOT_INTERVAL: '86400' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const post = (path: string, body: unknown) => must(lb.url, 'POST', `/api/v1/${path}`, body);
  const children = async (pb: number, tag: string) => {
    const play = await post('plays', { playbook: pb, uuid: `00000000-0000-4000-8000-0000000000${tag}` });
    const file = await post('files', { playbook: pb, path: `/srv/${tag}.yml`, content: tag });
    const task = await post('tasks', { playbook: pb, play: play.id, file: file.id, action: 'debug', lineno: 1, handler: false });
    const host = await post('hosts', { playbook: pb, name: `host-${tag}` });
    const result = await post('results', { playbook: pb, play: play.id, task: task.id, host: host.id, status: 'ok' });
    const record = await post('records', { playbook: pb, key: `key-${tag}`, type: 'text', value: tag });
    return { play: play.id, file: file.id, task: task.id, host: host.id, result: result.id, record: record.id } as Record<string, number>;
  };
  const keep = await post('playbooks', { path: '/srv/keep.yml', runner_version: '2.16.0' });
  const doomed = await post('playbooks', { path: '/srv/doomed.yml', runner_version: '2.16.0' });
  await children(doomed.id, '10');
  await post('records', { playbook: doomed.id, key: 'a', type: 'text', value: 1 });
  await post('records', { playbook: doomed.id, key: 'b', type: 'text', value: 2 }); // 10th write: a snapshot of both playbooks
  await new Promise((r) => setTimeout(r, 300)); // let the snapshot round finish and trim
  const late = await children(doomed.id, '20'); // after the snapshot: only in the journal
  t.is((await api(lb.url, 'DELETE', `/api/v1/playbooks/${doomed.id}`)).status, 204);
  t.is(await lb.stop('SIGKILL'), null);

  lb = await startLogbook({ env, dataDir });
  const fresh = await children(keep.id, '30');
  const above = Object.fromEntries(Object.keys(late).map((k) => [k, fresh[k]! > late[k]!]));
  t.deepEqual(above, { play: true, file: true, task: true, host: true, result: true, record: true },
    `ids acknowledged (then deleted with their playbook) before the crash: ${JSON.stringify(late)}; new ids after restart: ${JSON.stringify(fresh)}`);
});

/** Rewrite front.mdb's format record (the server must be stopped). */
async function rewriteFormat(dataDir: string, change: (record: any) => any): Promise<any> {
  const env = open({ path: join(dataDir, 'front.mdb'), maxDbs: 4 });
  const meta = env.openDB<any, string>({ name: 'meta', encoding: 'msgpack' });
  const original = meta.get('format');
  await meta.put('format', change(original));
  await env.close();
  return original;
}

test('a data dir in a newer on-disk format is refused (exit 2, message names the format) and left intact', async (t) => {
  const dataDir = tempDir(t);
  const env = { LOGBOOK_SHARDS: '3' };
  let lb = await startLogbook({ env, dataDir });
  const pb = await must(lb.url, 'POST', '/api/v1/playbooks', { path: '/srv/site.yml', runner_version: '2.16.0', labels: ['web'] });
  t.is(await lb.stop('SIGTERM'), 0);

  const original = await rewriteFormat(dataDir, (r) => ({ ...r, format: 999, shards: 3, created: new Date().toISOString() }));
  t.like(original, { format: FORMAT_VERSION, shards: 3 }, 'the format record as written by this logbook');
  const refused = await runUntilExit({ env, dataDir });
  t.log(refused.output.trim());
  t.is(refused.code, 2, 'exit code 2');
  t.regex(refused.output, /format/i);
  t.regex(refused.output, /999/);
  t.notRegex(refused.output, /"msg":"listening"/);

  const garbage = await rewriteFormat(dataDir, (r) => ({ ...r, format: 'one' }));
  t.is(garbage.format, 999);
  const refusedAgain = await runUntilExit({ env, dataDir });
  t.is(refusedAgain.code, 2, 'a format that is not a number is refused too');
  t.regex(refusedAgain.output, /format/i);

  // flipped bytes that leave a record without its shard count (found by test/faults/faults_check_fuzz):
  // damage to restore, not a shard count to start with
  await rewriteFormat(dataDir, (r) => ({ format: FORMAT_VERSION, sharbs: 3, created: r.created }));
  const damaged = await runUntilExit({ env, dataDir });
  t.is(damaged.code, 2);
  t.regex(damaged.output, /front\.mdb in .* is damaged: its format record reads .*restore the data directory from a backup/);
  t.notRegex(damaged.output, /LOGBOOK_SHARDS=undefined/);

  await rewriteFormat(dataDir, () => original);
  lb = await startLogbook({ env, dataDir });
  t.like(await must(lb.url, 'GET', `/api/v1/playbooks/${pb.id}`), { id: pb.id, path: '/srv/site.yml', labels: pb.labels }, 'the refused starts changed nothing');
  t.is(await lb.stop('SIGTERM'), 0);

  // data of the first format (before snapshot parts) opens, and its record is raised to this format
  // (older binaries must refuse what this one may write there now)
  await rewriteFormat(dataDir, (r) => ({ ...r, format: 1 }));
  lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  t.like(await must(lb.url, 'GET', `/api/v1/playbooks/${pb.id}`), { id: pb.id, path: '/srv/site.yml' });
  t.is(await lb.stop('SIGTERM'), 0);
  const upgraded = await rewriteFormat(dataDir, (r) => r);
  t.like(upgraded, { format: FORMAT_VERSION, shards: 3 });
});

test('a data dir written with another LOGBOOK_SHARDS is refused with a message naming both counts', async (t) => {
  const dataDir = tempDir(t);
  let lb = await startLogbook({ env: { LOGBOOK_SHARDS: '3' }, dataDir });
  const pbs = [];
  for (let i = 0; i < 4; i++) pbs.push(await must(lb.url, 'POST', '/api/v1/playbooks', { path: `/srv/${i}.yml`, runner_version: '2.16.0' }));
  t.is(await lb.stop('SIGTERM'), 0);

  const refused = await runUntilExit({ env: { LOGBOOK_SHARDS: '2' }, dataDir });
  t.log(refused.output.trim());
  t.is(refused.code, 2);
  t.regex(refused.output, /LOGBOOK_SHARDS=3/);
  t.regex(refused.output, /\b2\b/);

  lb = await startLogbook({ env: { LOGBOOK_SHARDS: '3' }, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  t.deepEqual((await listAll(lb.url, 'playbooks')).map((p) => p.id), pbs.map((p) => p.id), 'all playbooks still there with the right shard count');
});

test('one data dir, one logbook: a second one exits 2 naming the dir and pid; after a SIGKILL the stale lock is taken over', async (t) => {
  const dataDir = tempDir(t);
  const env = { LOGBOOK_SHARDS: '2' };
  const first = await startLogbook({ env, dataDir });
  t.teardown(async () => { await first.stop('SIGKILL'); });
  const a = await must(first.url, 'POST', '/api/v1/playbooks', { path: '/srv/a.yml', runner_version: '2.16.0' });
  const pidFile = join(dataDir, 'logbook.pid');
  const pid = String(first.child.pid);

  const second = await runUntilExit({ env, dataDir });
  t.log(second.output.trim());
  t.is(second.code, 2, 'the second logbook exits 2');
  t.true(second.output.includes(realpathSync(dataDir)) || second.output.includes(dataDir), 'the message names the data dir');
  t.regex(second.output, new RegExp(`\\b${pid}\\b`), 'the message names the pid holding it');
  t.is(readFileSync(pidFile, 'utf8').trim(), pid, 'the refused start left the lock alone');

  // the first one is unaffected
  t.is((await api(first.url, 'GET', '/healthz')).status, 200);
  const b = await must(first.url, 'POST', '/api/v1/playbooks', { path: '/srv/b.yml', runner_version: '2.16.0' });
  t.is((await api(first.url, 'GET', `/api/v1/playbooks/${a.id}`)).status, 200);

  t.is(await first.stop('SIGKILL'), null);
  t.true(existsSync(pidFile), 'a killed logbook leaves its pid file behind');
  const third = await startLogbook({ env, dataDir });
  t.teardown(async () => { await third.stop('SIGKILL'); });
  t.deepEqual((await listAll(third.url, 'playbooks')).map((p) => p.id), [a.id, b.id]);
  t.is(readFileSync(pidFile, 'utf8').trim(), String(third.child.pid), 'the new logbook holds the lock now');
  t.is(await third.stop('SIGTERM'), 0);
  t.false(existsSync(pidFile), 'a clean stop releases the lock');

  // the lock written on a full disk (a symbolic link to the pid), left by a killed logbook
  symlinkSync(String(pidOfNoProcess()), pidFile);
  const fourth = await startLogbook({ env, dataDir });
  t.teardown(async () => { await fourth.stop('SIGKILL'); });
  t.deepEqual((await listAll(fourth.url, 'playbooks')).map((p) => p.id), [a.id, b.id], 'a stale link lock does not stop start-up');
  t.is(readFileSync(pidFile, 'utf8').trim(), String(fourth.child.pid), 'and is replaced by a pid file');
  t.is(await fourth.stop('SIGTERM'), 0);
});

/** A pid no live process has (the lock of a process that is gone). */
function pidOfNoProcess(): number {
  for (let pid = 4_000_000; ; pid--) {
    try { process.kill(pid, 0); } catch (err) { if ((err as NodeJS.ErrnoException).code === 'ESRCH') return pid; }
  }
}

test('SIGTERM under concurrent writers: exit 0, every acknowledged write is there after restart, no refused write is', async (t) => {
  t.timeout(60_000);
  const seed = seedFrom('SIGTERM_SEED');
  t.log(`SIGTERM_SEED=${seed}`);
  const rng = new Rng(seed);
  const dataDir = tempDir(t);
  const env = { LOGBOOK_SHARDS: '3', LOGBOOK_SNAPSHOT_EVERY: '100' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });

  const acked = { results: new Map<number, any>(), records: new Map<number, any>() };
  /** records whose last PATCH got no answer: either value is fine */
  const maybe = new Map<number, unknown>();
  const refused: Array<{ what: string; status: number; text: string; marker: string }> = [];
  let sigterm = 0;
  let ackedAfterSigterm = 0;

  const setup = async (i: number) => {
    const pb = await must(lb.url, 'POST', '/api/v1/playbooks', { path: `/srv/w${i}.yml`, runner_version: '2.16.0' });
    const play = await must(lb.url, 'POST', '/api/v1/plays', { playbook: pb.id, uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` });
    const file = await must(lb.url, 'POST', '/api/v1/files', { playbook: pb.id, path: '/srv/x.yml', content: 'x' });
    const task = await must(lb.url, 'POST', '/api/v1/tasks', { playbook: pb.id, play: play.id, file: file.id, action: 'debug', lineno: 1, handler: false });
    const host = await must(lb.url, 'POST', '/api/v1/hosts', { playbook: pb.id, name: `h${i}` });
    return { pb, play, task, host };
  };
  const writer = async (i: number, { pb, play, task, host }: Awaited<ReturnType<typeof setup>>) => {
    const wr = new Rng(seed + i + 1);
    const mine: number[] = [];
    for (let n = 0; ; n++) {
      const marker = `w${i}n${n}`;
      const choice = wr.weighted([6, 3, 1]);
      let method = 'POST', path: string, body: any;
      if (choice === 0) {
        path = '/api/v1/results';
        body = { playbook: pb.id, play: play.id, task: task.id, host: host.id, status: wr.pick(['ok', 'failed', 'changed']), changed: wr.bool(), content: { marker, data: wr.json(2) } };
      } else if (choice === 1 || mine.length === 0) {
        path = '/api/v1/records';
        body = { playbook: pb.id, key: marker, type: 'json', value: { marker, data: wr.json(2) } };
      } else {
        const id = wr.pick(mine);
        method = 'PATCH'; path = `/api/v1/records/${id}`; body = { value: { marker, patched: true } };
      }
      let res;
      try {
        res = await api(lb.url, method, path, body);
      } catch {
        if (method === 'PATCH') maybe.set(Number(path.split('/').pop()), body.value);
        return; // the server is gone: this write's fate is unknown
      }
      if (res.status >= 200 && res.status < 300) {
        if (sigterm) ackedAfterSigterm++;
        if (path.endsWith('results')) acked.results.set(res.body.id, res.body);
        else { acked.records.set(res.body.id, res.body); if (method === 'POST') mine.push(res.body.id); }
      } else {
        refused.push({ what: `${method} ${path}`, status: res.status, text: res.text, marker });
        if (!sigterm) throw new Error(`${method} ${path} → ${res.status} ${res.text} before SIGTERM`);
      }
    }
  };
  const setups = await Promise.all(Array.from({ length: 8 }, (_, i) => setup(i)));
  const writers = setups.map((s, i) => writer(i, s));
  // mid-load: after a seeded number of acknowledged writes (at most 20 s)
  const target = 80 + rng.int(0, 170);
  for (const until = Date.now() + 20_000; acked.results.size + acked.records.size < target && Date.now() < until;) await new Promise((r) => setTimeout(r, 5));
  sigterm = Date.now();
  lb.child.kill('SIGTERM');
  const code = await lb.stop('SIGTERM');
  const stopMs = Date.now() - sigterm;
  await Promise.all(writers);
  t.log(`${acked.results.size} results, ${acked.records.size} records acknowledged; SIGTERM → exit ${code} in ${stopMs} ms; `
    + `${ackedAfterSigterm} writes acknowledged after SIGTERM, ${refused.length} refused (${[...new Set(refused.map((r) => `${r.status} ${r.text}`))].join('; ')})`);
  t.is(code, 0, 'SIGTERM exits 0');
  t.true(stopMs < 12_000, `stopped in ${stopMs} ms`);
  t.deepEqual(refused.filter((r) => r.status >= 500 && r.status !== 503), [], 'no internal errors during the shutdown');

  lb = await startLogbook({ env, dataDir });
  const problems: string[] = [];
  const results = new Map((await listAll(lb.url, 'results')).map((r) => [r.id as number, r]));
  const records = new Map((await listAll(lb.url, 'records')).map((r) => [r.id as number, r]));
  for (const [id, body] of acked.results) {
    if (!results.has(id)) { problems.push(`result ${id} acknowledged but missing`); continue; }
    const stored = flatten(await must(lb.url, 'GET', `/api/v1/results/${id}`));
    for (const [k, v] of Object.entries(body)) if (JSON.stringify(stored[k]) !== JSON.stringify(v)) problems.push(`result ${id}: ${k} ${JSON.stringify(stored[k])} ≠ acknowledged ${JSON.stringify(v)}`);
  }
  for (const [id, body] of acked.records) {
    if (!records.has(id)) { problems.push(`record ${id} acknowledged but missing`); continue; }
    const stored = flatten(await must(lb.url, 'GET', `/api/v1/records/${id}`));
    for (const [k, v] of Object.entries(body)) {
      if (JSON.stringify(stored[k]) === JSON.stringify(v)) continue;
      if ((k === 'value' || k === 'updated') && maybe.has(id)) continue;
      problems.push(`record ${id}: ${k} ${JSON.stringify(stored[k])} ≠ acknowledged ${JSON.stringify(v)}`);
    }
  }
  // a write answered with an error must not have happened anyway
  const refusedMarkers = new Set(refused.map((r) => r.marker));
  for (const r of records.values()) if (refusedMarkers.has(r.key)) problems.push(`record ${r.id} (${r.key}) was stored although its POST was answered ${refused.find((x) => x.marker === r.key)!.status}`);
  for (const id of results.keys()) {
    if (acked.results.has(id)) continue;
    const stored = await must(lb.url, 'GET', `/api/v1/results/${id}`);
    if (refusedMarkers.has(stored.content.marker)) problems.push(`result ${id} (${stored.content.marker}) was stored although its POST was answered with an error`);
  }
  for (const [id] of acked.records) {
    const stored = await must(lb.url, 'GET', `/api/v1/records/${id}`);
    if (stored.value?.patched && refusedMarkers.has(stored.value.marker)) problems.push(`record ${id} shows PATCH ${stored.value.marker} although it was answered with an error`);
  }
  t.deepEqual(problems, [], `seed ${seed}`);
  t.true(acked.results.size + acked.records.size >= target, 'enough writes were acknowledged to mean something');
});

test('a host deleted after a snapshot round leaves no delegation to it behind: a restart from the next round shows what was served', async (t) => {
  const dataDir = tempDir(t);
  // compatibility mode (result rows show `delegated_to`), snapshots by age every second, results in parts of 2 (test hook)
  const env = { LOGBOOK_SHARDS: '1', LOGBOOK_ARA_COMPAT: 'true', LOGBOOK_SNAPSHOT_INTERVAL: '1', LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_SNAPSHOT_PART_ROWS: '2' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const rounds = () => lb.output().split('\n').filter((l) => l.includes('"msg":"snapshot taken"')).length;
  const nextRound = async () => {
    const before = rounds();
    for (let i = 0; i < 100 && rounds() === before; i++) await new Promise((r) => setTimeout(r, 100));
    t.true(rounds() > before, 'a snapshot round ran');
  };
  const pb = (await must(lb.url, 'POST', '/api/v1/playbooks', { path: '/srv/delegate.yml', runner_version: '2.16.0' })).id;
  const play = (await must(lb.url, 'POST', '/api/v1/plays', { playbook: pb, name: 'p', uuid: '6bd4f5a2-4c5e-4f0a-9a7e-0c0ffee00002' })).id;
  const file = (await must(lb.url, 'POST', '/api/v1/files', { playbook: pb, path: '/srv/delegate.yml', content: '- hosts: all' })).id;
  const task = (await must(lb.url, 'POST', '/api/v1/tasks', { playbook: pb, play, file, action: 'debug', lineno: 1, handler: false })).id;
  const web = (await must(lb.url, 'POST', '/api/v1/hosts', { playbook: pb, name: 'web' })).id;
  const db = (await must(lb.url, 'POST', '/api/v1/hosts', { playbook: pb, name: 'db' })).id; // a delegate only: no result of its own
  for (let k = 0; k < 6; k++) await must(lb.url, 'POST', '/api/v1/results', { playbook: pb, play, task, host: web, status: 'ok', delegated_to: k % 2 ? [db] : [] });
  await nextRound(); // 6 results: 3 parts
  await must(lb.url, 'DELETE', `/api/v1/hosts/${db}`);
  const served = (await listAll(lb.url, 'results', `playbook=${pb}`)).map((r) => [r.id, r.delegated_to]);
  t.true(served.every(([, d]) => (d as number[]).length === 0), 'no delegation to the deleted host is served');
  await nextRound(); // the delete is in this round's snapshot: its journal entry is trimmed
  await lb.stop('SIGKILL');
  lb = await startLogbook({ env, dataDir });
  t.deepEqual((await listAll(lb.url, 'results', `playbook=${pb}`)).map((r) => [r.id, r.delegated_to]), served);
});
