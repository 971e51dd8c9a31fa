// SPEC.md §4 (derived state): `items` counters after creates and cascading
// deletes, host counters per shown result status (Ansible recap rules), PATCH
// overrides, reversal on result delete / status change, and the shown result
// status (changed/ignored) everywhere including filters.
import test, { type ExecutionContext } from 'ava';
import { api, type Logbook } from '../helpers/server.js';
import {
  createFile, createHost, createPlay, createPlaybook, createRecord, createResult, createTask, createTree,
  del, get, ids, list, patch, post, type Json, type Tree, serveForFile, SERVER_ENV } from '../helpers/fixtures.js';

let lb: Logbook;
let url: string;
// 60 concurrent writes to one shard below: on a loaded machine they may wait past the
// default queueing delay bound and be shed (503), which this file does not test
serveForFile((server) => { lb = server; url = server.url; }, { ...SERVER_ENV, LOGBOOK_SHARD_QUEUE_DELAY: '0' });

type Counters = { changed: number; failed: number; ok: number; skipped: number; unreachable: number };
const ZERO: Counters = { changed: 0, failed: 0, ok: 0, skipped: 0, unreachable: 0 };
const counters = (h: Json): Counters => ({ changed: h.changed, failed: h.failed, ok: h.ok, skipped: h.skipped, unreachable: h.unreachable });

/** A playbook with 2 plays, 2 files, 3 tasks, 2 hosts, 6 results (every task × host), 1 record. */
async function bigTree() {
  const pb = (await createPlaybook(url)).id as number;
  const files = [(await createFile(url, pb)).id, (await createFile(url, pb)).id] as number[];
  const plays = [(await createPlay(url, pb)).id, (await createPlay(url, pb)).id] as number[];
  const tasks = [
    (await createTask(url, { playbook: pb, play: plays[0]!, file: files[0]! })).id,
    (await createTask(url, { playbook: pb, play: plays[0]!, file: files[1]! })).id,
    (await createTask(url, { playbook: pb, play: plays[1]!, file: files[1]! })).id,
  ] as number[];
  const hosts = [(await createHost(url, pb)).id, (await createHost(url, pb)).id] as number[];
  const taskPlay = [plays[0]!, plays[0]!, plays[1]!];
  const results: number[][] = []; // results[task][host]
  for (let ti = 0; ti < 3; ti++) {
    results.push([]);
    for (const host of hosts) {
      results[ti]!.push((await createResult(url, { playbook: pb, play: taskPlay[ti]!, task: tasks[ti]!, host }, { status: 'ok' })).id);
    }
  }
  const record = (await createRecord(url, pb)).id as number;
  return { pb, files, plays, tasks, hosts, results, record };
}

async function items(resource: string, id: number): Promise<Json> {
  return (await get(url, `/api/v1/${resource}/${id}`)).items;
}

async function gone(t: ExecutionContext, resource: string, list_: number[]) {
  for (const id of list_) t.is((await api(url, 'GET', `/api/v1/${resource}/${id}`)).status, 404, `${resource} ${id} should be gone`);
}
async function present(t: ExecutionContext, resource: string, list_: number[]) {
  for (const id of list_) t.is((await api(url, 'GET', `/api/v1/${resource}/${id}`)).status, 200, `${resource} ${id} should remain`);
}

// ---------------------------------------------------------------- items

test('items counters after creates, in detail, list row, write responses and nested summaries', async (t) => {
  const b = await bigTree();
  const expected = { plays: 2, tasks: 3, results: 6, hosts: 2, files: 2, records: 1 };
  t.deepEqual(await items('playbooks', b.pb), expected);
  const row = (await list(url, 'playbooks', { path: (await get(url, `/api/v1/playbooks/${b.pb}`)).path })).results[0];
  t.deepEqual(row.items, expected);
  t.deepEqual((await patch(url, `/api/v1/playbooks/${b.pb}`, {})).items, expected);
  t.deepEqual((await get(url, `/api/v1/results/${b.results[0]![0]}`)).playbook.items, expected);
  t.deepEqual((await get(url, `/api/v1/hosts/${b.hosts[0]}`)).playbook.items, expected);
  t.deepEqual(await items('plays', b.plays[0]!), { tasks: 2, results: 4 });
  t.deepEqual(await items('plays', b.plays[1]!), { tasks: 1, results: 2 });
  t.deepEqual((await list(url, 'plays', { playbook: b.pb })).results.map((p: Json) => p.items), [{ tasks: 2, results: 4 }, { tasks: 1, results: 2 }]);
  t.deepEqual((await patch(url, `/api/v1/plays/${b.plays[0]}`, {})).items, { tasks: 2, results: 4 });
  for (const task of b.tasks) t.deepEqual(await items('tasks', task), { results: 2 });
  t.deepEqual((await list(url, 'tasks', { playbook: b.pb })).results.map((x: Json) => x.items), [{ results: 2 }, { results: 2 }, { results: 2 }]);
  t.deepEqual((await get(url, `/api/v1/results/${b.results[2]![1]}`)).task.items, { results: 2 });
  t.deepEqual((await get(url, `/api/v1/results/${b.results[2]![1]}`)).play.items, { tasks: 1, results: 2 });
  // get-or-create hits do not count twice
  const host = await get(url, `/api/v1/hosts/${b.hosts[0]}`);
  await post(url, '/api/v1/hosts', { name: host.name, playbook: b.pb });
  const file = await get(url, `/api/v1/files/${b.files[0]}`);
  await post(url, '/api/v1/files', { path: file.path, content: file.content, playbook: b.pb });
  t.deepEqual(await items('playbooks', b.pb), expected);
});

test('delete a result: task, play and playbook counters drop', async (t) => {
  const b = await bigTree();
  await del(url, `/api/v1/results/${b.results[0]![0]}`);
  t.deepEqual(await items('tasks', b.tasks[0]!), { results: 1 });
  t.deepEqual(await items('plays', b.plays[0]!), { tasks: 2, results: 3 });
  t.deepEqual(await items('playbooks', b.pb), { plays: 2, tasks: 3, results: 5, hosts: 2, files: 2, records: 1 });
});

test('delete a task cascades to its results', async (t) => {
  const b = await bigTree();
  await del(url, `/api/v1/tasks/${b.tasks[1]}`);
  await gone(t, 'results', b.results[1]!);
  await present(t, 'results', [...b.results[0]!, ...b.results[2]!]);
  t.deepEqual(await items('plays', b.plays[0]!), { tasks: 1, results: 2 });
  t.deepEqual(await items('playbooks', b.pb), { plays: 2, tasks: 2, results: 4, hosts: 2, files: 2, records: 1 });
  t.is((await list(url, 'results', { task: b.tasks[1]! })).count, 0);
});

test('delete a play cascades to its tasks and their results', async (t) => {
  const b = await bigTree();
  await del(url, `/api/v1/plays/${b.plays[0]}`);
  await gone(t, 'tasks', [b.tasks[0]!, b.tasks[1]!]);
  await gone(t, 'results', [...b.results[0]!, ...b.results[1]!]);
  await present(t, 'tasks', [b.tasks[2]!]);
  await present(t, 'results', b.results[2]!);
  await present(t, 'files', b.files);
  t.deepEqual(await items('playbooks', b.pb), { plays: 1, tasks: 1, results: 2, hosts: 2, files: 2, records: 1 });
  t.is((await list(url, 'tasks', { playbook: b.pb })).count, 1);
  t.is((await list(url, 'results', { playbook: b.pb })).count, 2);
});

test('delete a host cascades to its results; counters of tasks, plays and playbook follow', async (t) => {
  const b = await bigTree();
  await del(url, `/api/v1/hosts/${b.hosts[0]}`);
  await gone(t, 'results', b.results.map((r) => r[0]!));
  await present(t, 'results', b.results.map((r) => r[1]!));
  for (const task of b.tasks) t.deepEqual(await items('tasks', task), { results: 1 });
  t.deepEqual(await items('plays', b.plays[0]!), { tasks: 2, results: 2 });
  t.deepEqual(await items('plays', b.plays[1]!), { tasks: 1, results: 1 });
  t.deepEqual(await items('playbooks', b.pb), { plays: 2, tasks: 3, results: 3, hosts: 1, files: 2, records: 1 });
});

test('delete a file cascades to the tasks using it and their results', async (t) => {
  const b = await bigTree();
  await del(url, `/api/v1/files/${b.files[1]}`); // used by tasks 1 and 2
  await gone(t, 'tasks', [b.tasks[1]!, b.tasks[2]!]);
  await gone(t, 'results', [...b.results[1]!, ...b.results[2]!]);
  await present(t, 'tasks', [b.tasks[0]!]);
  await present(t, 'results', b.results[0]!);
  await present(t, 'plays', b.plays);
  t.deepEqual(await items('plays', b.plays[0]!), { tasks: 1, results: 2 });
  t.deepEqual(await items('plays', b.plays[1]!), { tasks: 0, results: 0 });
  t.deepEqual(await items('playbooks', b.pb), { plays: 2, tasks: 1, results: 2, hosts: 2, files: 1, records: 1 });
});

test('delete a record: playbook records counter drops', async (t) => {
  const b = await bigTree();
  await del(url, `/api/v1/records/${b.record}`);
  t.is((await items('playbooks', b.pb)).records, 0);
});

test('delete a playbook cascades to everything in it; labels stay; other playbooks untouched', async (t) => {
  const b = await bigTree();
  const keep = await bigTree();
  const label = (await patch(url, `/api/v1/playbooks/${b.pb}`, { labels: [`cascade-${b.pb}`] })).labels[0];
  await del(url, `/api/v1/playbooks/${b.pb}`);
  await gone(t, 'playbooks', [b.pb]);
  await gone(t, 'plays', b.plays);
  await gone(t, 'tasks', b.tasks);
  await gone(t, 'hosts', b.hosts);
  await gone(t, 'results', b.results.flat());
  await gone(t, 'files', b.files);
  await gone(t, 'records', [b.record]);
  for (const r of ['plays', 'tasks', 'hosts', 'results', 'files', 'records']) {
    t.is((await list(url, r, { playbook: b.pb })).count, 0, `${r} of the deleted playbook`);
  }
  t.is((await get(url, `/api/v1/labels/${label.id}`)).name, label.name);
  t.deepEqual(await items('playbooks', keep.pb), { plays: 2, tasks: 3, results: 6, hosts: 2, files: 2, records: 1 });
  await present(t, 'results', keep.results.flat());
});

// ---------------------------------------------------------------- host counters

const RECAP: Array<[string, Record<string, unknown>, string, Partial<Counters>]> = [
  ['ok', { status: 'ok' }, 'ok', { ok: 1 }],
  ['ok + changed', { status: 'ok', changed: true }, 'changed', { ok: 1, changed: 1 }],
  ['stored changed', { status: 'changed', changed: true }, 'changed', { ok: 1, changed: 1 }],
  ['failed + ignore_errors', { status: 'failed', ignore_errors: true }, 'ignored', { ok: 1 }],
  ['failed + ignore_errors + changed', { status: 'failed', ignore_errors: true, changed: true }, 'ignored', { ok: 1, changed: 1 }],
  ['stored ignored', { status: 'ignored' }, 'ignored', { ok: 1 }],
  ['failed', { status: 'failed' }, 'failed', { failed: 1 }],
  ['failed + changed', { status: 'failed', changed: true }, 'failed', { failed: 1, changed: 1 }],
  ['skipped', { status: 'skipped' }, 'skipped', { skipped: 1 }],
  ['unreachable', { status: 'unreachable' }, 'unreachable', { unreachable: 1 }],
  ['unknown', { status: 'unknown' }, 'unknown', {}],
];

for (const [what, body, shown, incr] of RECAP) {
  test(`host counters: a ${what} result (shown ${shown}) increments ${JSON.stringify(incr)}`, async (t) => {
    const tree = await createTree(url, { result: { status: 'ok' } }); // one ok result already
    const base = { ...ZERO, ok: 1 };
    t.deepEqual(counters(await get(url, `/api/v1/hosts/${tree.host}`)), base);
    const refs = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
    const r = await createResult(url, refs, body);
    t.is(r.status, shown, 'write response shows the shown status');
    const expected: Counters = { ...base };
    for (const [k, v] of Object.entries(incr)) expected[k as keyof Counters] += v as number;
    t.deepEqual(counters(await get(url, `/api/v1/hosts/${tree.host}`)), expected, 'host detail');
    t.deepEqual(counters((await list(url, 'hosts', { playbook: tree.playbook })).results[0]), expected, 'host list row');
    t.deepEqual(counters((await get(url, `/api/v1/results/${r.id}`)).host), expected, 'summary(host) in result detail');
    // deleting the result reverses its contribution
    await del(url, `/api/v1/results/${r.id}`);
    t.deepEqual(counters(await get(url, `/api/v1/hosts/${tree.host}`)), base, 'after result delete');
  });
}

test('host counters: a PATCH that sets counters overrides the live values; later results count on top', async (t) => {
  const tree = await createTree(url, { result: { status: 'ok', changed: true } });
  t.deepEqual(counters(await get(url, `/api/v1/hosts/${tree.host}`)), { ...ZERO, ok: 1, changed: 1 });
  const patched = await patch(url, `/api/v1/hosts/${tree.host}`, { ok: 10, failed: 2, skipped: 3 });
  t.deepEqual(counters(patched), { changed: 1, failed: 2, ok: 10, skipped: 3, unreachable: 0 });
  t.deepEqual(counters(await get(url, `/api/v1/hosts/${tree.host}`)), { changed: 1, failed: 2, ok: 10, skipped: 3, unreachable: 0 });
  await createResult(url, { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host }, { status: 'skipped' });
  t.deepEqual(counters(await get(url, `/api/v1/hosts/${tree.host}`)), { changed: 1, failed: 2, ok: 10, skipped: 4, unreachable: 0 });
  // PUT with counters also overrides
  const host = await get(url, `/api/v1/hosts/${tree.host}`);
  const replaced = await api(url, 'PUT', `/api/v1/hosts/${tree.host}`, { name: host.name, playbook: tree.playbook, changed: 7, failed: 0, ok: 0, skipped: 0, unreachable: 5 });
  t.is(replaced.status, 200);
  t.deepEqual(counters(replaced.body), { changed: 7, failed: 0, ok: 0, skipped: 0, unreachable: 5 });
});

test('host counters follow a result status change (PATCH of status, changed, ignore_errors)', async (t) => {
  const tree = await createTree(url, { result: { status: 'ok' } });
  const host = () => get(url, `/api/v1/hosts/${tree.host}`).then(counters);
  const path = `/api/v1/results/${tree.result}`;
  t.deepEqual(await host(), { ...ZERO, ok: 1 });
  t.is((await patch(url, path, { status: 'failed' })).status, 'failed');
  t.deepEqual(await host(), { ...ZERO, failed: 1 });
  t.is((await patch(url, path, { ignore_errors: true })).status, 'ignored');
  t.deepEqual(await host(), { ...ZERO, ok: 1 });
  t.is((await patch(url, path, { changed: true })).status, 'ignored');
  t.deepEqual(await host(), { ...ZERO, ok: 1, changed: 1 });
  t.is((await patch(url, path, { status: 'ok', ignore_errors: false })).status, 'changed');
  t.deepEqual(await host(), { ...ZERO, ok: 1, changed: 1 });
  t.is((await patch(url, path, { changed: false })).status, 'ok');
  t.deepEqual(await host(), { ...ZERO, ok: 1 });
  t.is((await patch(url, path, { status: 'unreachable' })).status, 'unreachable');
  t.deepEqual(await host(), { ...ZERO, unreachable: 1 });
  const refs = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
  t.is((await api(url, 'PUT', path, { ...refs, status: 'skipped' })).body.status, 'skipped');
  t.deepEqual(await host(), { ...ZERO, skipped: 1 });
  await del(url, path);
  t.deepEqual(await host(), ZERO);
});

test('host counters: deleting a task or a play reverses the contributions of the results it removes', async (t) => {
  const b = await bigTree(); // every host has 3 ok results
  t.deepEqual(counters(await get(url, `/api/v1/hosts/${b.hosts[0]}`)), { ...ZERO, ok: 3 });
  await del(url, `/api/v1/tasks/${b.tasks[2]}`);
  t.deepEqual(counters(await get(url, `/api/v1/hosts/${b.hosts[0]}`)), { ...ZERO, ok: 2 });
  await del(url, `/api/v1/plays/${b.plays[0]}`);
  t.deepEqual(counters(await get(url, `/api/v1/hosts/${b.hosts[1]}`)), ZERO);
});

// ---------------------------------------------------------------- shown status

async function shownEverywhere(t: ExecutionContext, tree: Tree, id: number, shown: string, stored: { changed: boolean; ignore_errors: boolean }) {
  t.is((await get(url, `/api/v1/results/${id}`)).status, shown, 'detail');
  const row = (await list(url, 'results', { playbook: tree.playbook })).results.find((r: Json) => r.id === id);
  t.is(row.status, shown, 'list row');
  t.is(row.changed, stored.changed, 'changed returned as stored');
  t.is(row.ignore_errors, stored.ignore_errors);
  t.true(ids(await list(url, 'results', { playbook: tree.playbook, status: shown })).includes(id), `?status=${shown} finds it`);
}

test('shown status: stored ok + changed=true is `changed` everywhere and filtered as changed, not ok', async (t) => {
  const tree = await createTree(url, { result: { status: 'ok', changed: true } });
  const created = await get(url, `/api/v1/results/${tree.result}`);
  t.is(created.status, 'changed');
  t.is(created.changed, true);
  await shownEverywhere(t, tree, tree.result, 'changed', { changed: true, ignore_errors: false });
  t.deepEqual(ids(await list(url, 'results', { playbook: tree.playbook, status: 'ok' })), []);
  t.is((await patch(url, `/api/v1/results/${tree.result}`, {})).status, 'changed', 'PATCH response');
  const plainOk = await createResult(url, tree, { status: 'ok', changed: false });
  t.is(plainOk.status, 'ok');
  t.deepEqual(ids(await list(url, 'results', { playbook: tree.playbook, status: 'ok' })), [plainOk.id]);
  t.deepEqual(ids(await list(url, 'results', { playbook: tree.playbook, status: ['ok', 'changed'] })), [tree.result, plainOk.id]);
});

test('shown status: stored failed + ignore_errors=true is `ignored` everywhere and filtered as ignored, not failed', async (t) => {
  const tree = await createTree(url, { result: { status: 'failed', ignore_errors: true } });
  const post_ = await get(url, `/api/v1/results/${tree.result}`);
  t.is(post_.status, 'ignored');
  await shownEverywhere(t, tree, tree.result, 'ignored', { changed: false, ignore_errors: true });
  const failed = await createResult(url, tree, { status: 'failed' });
  t.is(failed.status, 'failed');
  t.deepEqual(ids(await list(url, 'results', { playbook: tree.playbook, status: 'failed' })), [failed.id]);
  t.deepEqual(ids(await list(url, 'results', { playbook: tree.playbook, status: 'ignored' })), [tree.result]);
  t.deepEqual(ids(await list(url, 'results', { playbook: tree.playbook, status: 'failed', ignore_errors: 'true' })), []);
  // the write response also shows it
  t.is((await patch(url, `/api/v1/results/${failed.id}`, { ignore_errors: true })).status, 'ignored');
  t.deepEqual(ids(await list(url, 'results', { playbook: tree.playbook, status: 'ignored' })), [tree.result, failed.id]);
  t.is((await get(url, `/api/v1/results/${failed.id}`)).status, 'ignored');
});

test('shown status: skipped + changed stays skipped; failed + changed stays failed', async (t) => {
  const tree = await createTree(url, { result: { status: 'skipped', changed: true } });
  t.is((await get(url, `/api/v1/results/${tree.result}`)).status, 'skipped');
  const f = await createResult(url, tree, { status: 'failed', changed: true });
  t.is(f.status, 'failed');
  t.is((await get(url, `/api/v1/results/${f.id}`)).changed, true);
  t.deepEqual(ids(await list(url, 'results', { playbook: tree.playbook, status: 'changed' })), []);
});

// ---------------------------------------------------------------- moving records and concurrency

test('PATCH of a result\'s host or task moves its contribution (host counters, task/play items)', async (t) => {
  const b = await bigTree(); // 3 tasks × 2 hosts, all ok
  const r = b.results[0]![0]!; // task 0 (play 0), host 0
  const host = (i: number) => get(url, `/api/v1/hosts/${b.hosts[i]}`).then(counters);
  await patch(url, `/api/v1/results/${r}`, { status: 'failed' });
  t.deepEqual(await host(0), { ...ZERO, ok: 2, failed: 1 });
  await patch(url, `/api/v1/results/${r}`, { host: b.hosts[1] });
  t.deepEqual(await host(0), { ...ZERO, ok: 2 }, 'old host loses the result');
  t.deepEqual(await host(1), { ...ZERO, ok: 3, failed: 1 }, 'new host gains it');
  await patch(url, `/api/v1/results/${r}`, { task: b.tasks[2], play: b.plays[1] });
  t.deepEqual(await items('tasks', b.tasks[0]!), { results: 1 });
  t.deepEqual(await items('tasks', b.tasks[2]!), { results: 3 });
  t.deepEqual(await items('plays', b.plays[0]!), { tasks: 2, results: 3 });
  t.deepEqual(await items('plays', b.plays[1]!), { tasks: 1, results: 3 });
  t.deepEqual(await items('playbooks', b.pb), { plays: 2, tasks: 3, results: 6, hosts: 2, files: 2, records: 1 });
  // deleting the moved result reverses it where it now is
  await del(url, `/api/v1/results/${r}`);
  t.deepEqual(await host(1), { ...ZERO, ok: 3 });
  t.deepEqual(await items('tasks', b.tasks[2]!), { results: 2 });
  t.deepEqual(await items('plays', b.plays[1]!), { tasks: 1, results: 2 });
});

test('PATCH of a task\'s play moves the task between plays (results keep their own play)', async (t) => {
  const b = await bigTree();
  await patch(url, `/api/v1/tasks/${b.tasks[0]}`, { play: b.plays[1] });
  t.deepEqual(await items('plays', b.plays[0]!), { tasks: 1, results: 4 });
  t.deepEqual(await items('plays', b.plays[1]!), { tasks: 2, results: 2 });
  t.deepEqual((await list(url, 'tasks', { play: b.plays[1]! })).results.map((x: Json) => x.id), [b.tasks[0], b.tasks[2]]);
  // deleting the play the task moved to takes the task along
  await del(url, `/api/v1/plays/${b.plays[1]}`);
  await gone(t, 'tasks', [b.tasks[0]!, b.tasks[2]!]);
  await gone(t, 'results', [...b.results[0]!, ...b.results[2]!]);
  t.deepEqual(await items('plays', b.plays[0]!), { tasks: 1, results: 2 });
  t.deepEqual(await items('playbooks', b.pb), { plays: 1, tasks: 1, results: 2, hosts: 2, files: 2, records: 1 });
});

test('a task\'s path is its file\'s path: follows PATCH of the task\'s file and of the file\'s path', async (t) => {
  const tree = await createTree(url);
  const f2 = await createFile(url, tree.playbook, { path: '/roles/db/tasks/main.yml' });
  t.is((await patch(url, `/api/v1/tasks/${tree.task}`, { file: f2.id })).path, f2.path);
  t.is((await get(url, `/api/v1/tasks/${tree.task}`)).file.id, f2.id);
  await patch(url, `/api/v1/files/${f2.id}`, { path: '/roles/db/tasks/renamed.yml' });
  t.is((await get(url, `/api/v1/tasks/${tree.task}`)).path, '/roles/db/tasks/renamed.yml', 'task detail');
  t.is((await get(url, `/api/v1/tasks/${tree.task}`)).file.path, '/roles/db/tasks/renamed.yml', 'task detail file');
  t.is((await list(url, 'tasks', { playbook: tree.playbook })).results[0].path, '/roles/db/tasks/renamed.yml', 'task list row');
  t.is((await get(url, `/api/v1/results/${tree.result}`)).task.path, '/roles/db/tasks/renamed.yml', 'summary(task) in result');
  t.deepEqual((await list(url, 'tasks', { playbook: tree.playbook, path: 'renamed' })).results.map((x: Json) => x.id), [tree.task]);
  t.is((await list(url, 'tasks', { playbook: tree.playbook, path: 'main.yml' })).count, 0);
  // deleting the old file no longer touches the task
  await del(url, `/api/v1/files/${tree.file}`);
  t.is((await api(url, 'GET', `/api/v1/tasks/${tree.task}`)).status, 200);
});

test('counters stay exact under concurrent writes to one playbook', async (t) => {
  const tree = await createTree(url, { result: { status: 'skipped' } });
  const refs = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
  const statuses = ['ok', 'failed', 'skipped', 'unreachable'];
  const made = await Promise.all(Array.from({ length: 60 }, (_, i) => createResult(url, refs, { status: statuses[i % 4], changed: i % 3 === 0 })));
  const hosts = await Promise.all(Array.from({ length: 20 }, (_, i) => post(url, '/api/v1/hosts', { name: `same-${i % 5}`, playbook: tree.playbook })));
  t.is(new Set(hosts.map((h) => h.id)).size, 5, 'concurrent get-or-create yields one host per name');
  await Promise.all(made.filter((_, i) => i % 2 === 1).map((r) => del(url, `/api/v1/results/${r.id}`)));
  const kept = made.filter((_, i) => i % 2 === 0); // even i: statuses ok/skipped alternate (i%4 = 0 or 2)
  const expected = { ...ZERO, skipped: 1 };
  made.forEach((r, i) => {
    if (i % 2 === 1) return;
    const s = statuses[i % 4];
    const changed = i % 3 === 0;
    if (s === 'ok') { expected.ok += 1; if (changed) expected.changed += 1; }
    if (s === 'skipped') expected.skipped += 1;
    void r;
  });
  t.deepEqual(counters(await get(url, `/api/v1/hosts/${tree.host}`)), expected);
  t.deepEqual(await items('tasks', tree.task), { results: 1 + kept.length });
  t.deepEqual(await items('playbooks', tree.playbook), { plays: 1, tasks: 1, results: 1 + kept.length, hosts: 6, files: 1, records: 0 });
  t.is((await list(url, 'results', { task: tree.task })).count, 1 + kept.length);
});
