// SPEC.md §2: the exact keys, in order, of every representation (list row,
// detail, write response, nested summaries) and `Prefer: return=minimal`.
import test, { type ExecutionContext } from 'ava';
import { api, type Logbook } from '../helpers/server.js';
import {
  TIMESTAMP, call, createFile, createHost, createLabel, createPlay, createPlaybook, createRecord,
  createTask, createTree, get, list, patch, post, put, randomUuid, uniq, type Json, serveForFile} from '../helpers/fixtures.js';
import { DETAIL, ENVELOPE, ITEMS, LABEL_IN_PLAYBOOK, PLURAL, ROW, SUMMARY, WRITE } from '../helpers/shapes.js';

let lb: Logbook;
let url: string;
serveForFile((server) => { lb = server; url = server.url; });

function keys(t: ExecutionContext, obj: Json, expected: readonly string[], what: string): void {
  t.true(obj !== null && typeof obj === 'object' && !Array.isArray(obj), `${what}: not an object: ${JSON.stringify(obj)}`);
  t.deepEqual(Object.keys(obj ?? {}), [...expected], `${what}: keys/order`);
}

function playbookSummary(t: ExecutionContext, obj: Json, what: string): void {
  keys(t, obj, SUMMARY.playbook, `${what} summary(playbook)`);
  keys(t, obj.items, ITEMS.playbook, `${what} summary(playbook).items`);
  for (const l of obj.labels) keys(t, l, LABEL_IN_PLAYBOOK, `${what} summary(playbook).labels[]`);
}

async function rowOf(resource: string, query: string, id: number): Promise<Json> {
  const env = await list(url, resource, query);
  const row = env.results.find((r: Json) => r.id === id);
  if (!row) throw new Error(`${resource} ${id} not in list ?${query}: ${JSON.stringify(env).slice(0, 400)}`);
  return row;
}

test('playbook: write response, detail and list row keys in §2 order', async (t) => {
  const created = await createPlaybook(url, { labels: [uniq('lab')], arguments: { check: false } });
  keys(t, created, WRITE.playbook, 'POST response');
  keys(t, created.items, ITEMS.playbook, 'POST response items');
  t.is(created.labels.length, 1);
  keys(t, created.labels[0], LABEL_IN_PLAYBOOK, 'label inside a playbook');
  const id = created.id;
  keys(t, await patch(url, `/api/v1/playbooks/${id}`, { name: 'renamed' }), WRITE.playbook, 'PATCH response');
  keys(t, await put(url, `/api/v1/playbooks/${id}`, { path: created.path, runner_version: '2.16.0' }), WRITE.playbook, 'PUT response');
  const detail = await get(url, `/api/v1/playbooks/${id}`);
  keys(t, detail, DETAIL.playbook, 'detail');
  keys(t, detail.items, ITEMS.playbook, 'detail items');
  keys(t, detail.labels[0], LABEL_IN_PLAYBOOK, 'detail label');
  const row = await rowOf('playbooks', `path=${encodeURIComponent(created.path)}`, id);
  keys(t, row, ROW.playbook, 'list row');
  keys(t, row.items, ITEMS.playbook, 'list row items');
  keys(t, row.labels[0], LABEL_IN_PLAYBOOK, 'list row label');
  for (const ts of [detail.created, detail.updated, detail.started]) t.regex(ts, TIMESTAMP);
  t.is(detail.ended, null);
  t.is(detail.duration, null);
});

test('play: write response, detail (nested summary(playbook)) and list row keys', async (t) => {
  const pb = await createPlaybook(url, { labels: [uniq('lab')] });
  const created = await createPlay(url, pb.id);
  keys(t, created, WRITE.play, 'POST response');
  keys(t, created.items, ITEMS.play, 'POST response items');
  t.is(created.playbook, pb.id, 'write response playbook is an int');
  keys(t, await patch(url, `/api/v1/plays/${created.id}`, { name: 'x' }), WRITE.play, 'PATCH response');
  keys(t, await put(url, `/api/v1/plays/${created.id}`, { uuid: created.uuid, playbook: pb.id }), WRITE.play, 'PUT response');
  const detail = await get(url, `/api/v1/plays/${created.id}`);
  keys(t, detail, DETAIL.play, 'detail');
  keys(t, detail.items, ITEMS.play, 'detail items');
  playbookSummary(t, detail.playbook, 'play detail');
  t.is(detail.playbook.id, pb.id);
  const row = await rowOf('plays', `playbook=${pb.id}`, created.id);
  keys(t, row, ROW.play, 'list row');
  keys(t, row.items, ITEMS.play, 'list row items');
  t.is(row.playbook, pb.id);
});

test('task: write response, detail (summaries of playbook, play; file list row) and list row keys', async (t) => {
  const pb = await createPlaybook(url);
  const file = await createFile(url, pb.id, { path: `/roles/${uniq('r')}/tasks/main.yml` });
  const play = await createPlay(url, pb.id);
  const created = await createTask(url, { playbook: pb.id, play: play.id, file: file.id }, { tags: ['a'] });
  keys(t, created, WRITE.task, 'POST response');
  keys(t, created.items, ITEMS.task, 'POST response items');
  t.is(created.path, file.path, 'task path is its file path');
  t.deepEqual([created.play, created.file, created.playbook], [play.id, file.id, pb.id]);
  keys(t, await patch(url, `/api/v1/tasks/${created.id}`, { name: 'x' }), WRITE.task, 'PATCH response');
  keys(t, await put(url, `/api/v1/tasks/${created.id}`, {
    action: 'debug', lineno: 1, handler: false, play: play.id, file: file.id, playbook: pb.id,
  }), WRITE.task, 'PUT response');
  const detail = await get(url, `/api/v1/tasks/${created.id}`);
  keys(t, detail, DETAIL.task, 'detail');
  keys(t, detail.items, ITEMS.task, 'detail items');
  playbookSummary(t, detail.playbook, 'task detail');
  keys(t, detail.play, SUMMARY.play, 'task detail summary(play)');
  keys(t, detail.play.items, ITEMS.play, 'task detail summary(play).items');
  t.is(detail.play.playbook, pb.id, 'summary(play).playbook is an int');
  keys(t, detail.file, ROW.file, 'task detail file (list row of file)');
  t.deepEqual(detail.file, { id: file.id, sha1: file.sha1, playbook: pb.id, path: file.path });
  t.is(detail.path, file.path);
  const row = await rowOf('tasks', `playbook=${pb.id}`, created.id);
  keys(t, row, ROW.task, 'list row');
  keys(t, row.items, ITEMS.task, 'list row items');
  t.is(row.path, file.path);
  t.deepEqual([row.play, row.file, row.playbook], [play.id, file.id, pb.id]);
});

test('host: write response, detail (seed form) and list row keys', async (t) => {
  const pb = await createPlaybook(url);
  const created = await createHost(url, pb.id, { facts: { a: 1 } });
  keys(t, created, WRITE.host, 'POST response');
  t.is(created.playbook, pb.id);
  keys(t, await patch(url, `/api/v1/hosts/${created.id}`, { ok: 1 }), WRITE.host, 'PATCH response');
  keys(t, await put(url, `/api/v1/hosts/${created.id}`, { name: created.name, playbook: pb.id }), WRITE.host, 'PUT response');
  const detail = await get(url, `/api/v1/hosts/${created.id}`);
  keys(t, detail, DETAIL.host, 'detail');
  playbookSummary(t, detail.playbook, 'host detail');
  const row = await rowOf('hosts', `playbook=${pb.id}`, created.id);
  keys(t, row, ROW.host, 'list row');
  t.is(row.playbook, pb.id);
});

test('result: write response, detail (seed form with four summaries) and list row keys', async (t) => {
  const tree = await createTree(url, { playbook: { labels: [uniq('lab')] } });
  const created = await post(url, '/api/v1/results', {
    playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host, status: 'ok', content: { msg: 'hi' },
  });
  keys(t, created, WRITE.result, 'POST response');
  t.deepEqual([created.host, created.task, created.play, created.playbook], [tree.host, tree.task, tree.play, tree.playbook]);
  keys(t, await patch(url, `/api/v1/results/${created.id}`, { status: 'skipped' }), WRITE.result, 'PATCH response');
  keys(t, await put(url, `/api/v1/results/${created.id}`, {
    playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host,
  }), WRITE.result, 'PUT response');
  const detail = await get(url, `/api/v1/results/${created.id}`);
  keys(t, detail, DETAIL.result, 'detail');
  playbookSummary(t, detail.playbook, 'result detail');
  keys(t, detail.play, SUMMARY.play, 'result detail summary(play)');
  keys(t, detail.task, SUMMARY.task, 'result detail summary(task)');
  keys(t, detail.task.items, ITEMS.task, 'result detail summary(task).items');
  keys(t, detail.host, SUMMARY.host, 'result detail summary(host)');
  t.deepEqual([detail.task.play, detail.task.file, detail.task.playbook], [tree.play, tree.file, tree.playbook]);
  t.is(detail.play.playbook, tree.playbook);
  t.is(detail.host.playbook, tree.playbook);
  const row = await rowOf('results', `playbook=${tree.playbook}`, created.id);
  keys(t, row, ROW.result, 'list row');
  t.deepEqual([row.playbook, row.play, row.task, row.host], [tree.playbook, tree.play, tree.task, tree.host]);
});

test('file: write response, detail and list row (seed) keys', async (t) => {
  const pb = await createPlaybook(url);
  const created = await createFile(url, pb.id);
  keys(t, created, WRITE.file, 'POST response');
  t.is(created.playbook, pb.id);
  keys(t, await patch(url, `/api/v1/files/${created.id}`, { content: 'changed' }), WRITE.file, 'PATCH response');
  keys(t, await put(url, `/api/v1/files/${created.id}`, { path: created.path, content: 'x', playbook: pb.id }), WRITE.file, 'PUT response');
  const detail = await get(url, `/api/v1/files/${created.id}`);
  keys(t, detail, DETAIL.file, 'detail');
  playbookSummary(t, detail.playbook, 'file detail');
  t.is(detail.content, 'x');
  const row = await rowOf('files', `playbook=${pb.id}`, created.id);
  keys(t, row, ROW.file, 'list row');
  t.regex(row.sha1, /^[0-9a-f]{40}$/);
});

test('record: write response, detail and list row keys', async (t) => {
  const pb = await createPlaybook(url);
  const created = await createRecord(url, pb.id);
  keys(t, created, WRITE.record, 'POST response');
  t.is(created.playbook, pb.id);
  keys(t, await patch(url, `/api/v1/records/${created.id}`, { value: 2 }), WRITE.record, 'PATCH response');
  keys(t, await put(url, `/api/v1/records/${created.id}`, { key: created.key, type: 'text', playbook: pb.id }), WRITE.record, 'PUT response');
  const detail = await get(url, `/api/v1/records/${created.id}`);
  keys(t, detail, DETAIL.record, 'detail');
  playbookSummary(t, detail.playbook, 'record detail');
  const row = await rowOf('records', `playbook=${pb.id}`, created.id);
  keys(t, row, ROW.record, 'list row');
  t.is(row.playbook, pb.id);
});

test('label: write response, detail and list row keys', async (t) => {
  const created = await createLabel(url);
  keys(t, created, WRITE.label, 'POST response');
  keys(t, await patch(url, `/api/v1/labels/${created.id}`, { name: uniq('renamed') }), WRITE.label, 'PATCH response');
  keys(t, await put(url, `/api/v1/labels/${created.id}`, { name: uniq('put') }), WRITE.label, 'PUT response');
  const detail = await get(url, `/api/v1/labels/${created.id}`);
  keys(t, detail, DETAIL.label, 'detail');
  const row = await rowOf('labels', `name=${encodeURIComponent(detail.name)}`, created.id);
  keys(t, row, ROW.label, 'list row');
});

test('every list answers with the envelope keys in seed order', async (t) => {
  await createTree(url);
  for (const resource of Object.values(PLURAL)) {
    const env = await list(url, resource, 'limit=1');
    keys(t, env, ENVELOPE, `${resource} envelope`);
    t.true(Number.isInteger(env.count));
    t.true(Array.isArray(env.results));
  }
});

test('nested summaries carry the same values as the records they summarize', async (t) => {
  const tree = await createTree(url, { playbook: { labels: [uniq('lab')], name: 'nested' } });
  const result = await get(url, `/api/v1/results/${tree.result}`);
  const playbook = await get(url, `/api/v1/playbooks/${tree.playbook}`);
  const play = await get(url, `/api/v1/plays/${tree.play}`);
  const task = await get(url, `/api/v1/tasks/${tree.task}`);
  const host = await get(url, `/api/v1/hosts/${tree.host}`);
  const pick = (o: Json, ks: readonly string[]) => Object.fromEntries(ks.map((k) => [k, o[k]]));
  t.deepEqual(result.playbook, pick(playbook, SUMMARY.playbook));
  t.deepEqual(result.play, { ...pick(play, SUMMARY.play), playbook: tree.playbook });
  t.deepEqual(result.task, { ...pick(task, SUMMARY.task), play: tree.play, file: tree.file, playbook: tree.playbook });
  t.deepEqual(result.host, { ...pick(host, SUMMARY.host), playbook: tree.playbook });
  t.deepEqual(result.playbook.items, { plays: 1, tasks: 1, results: 1, hosts: 1, files: 1, records: 0 });
});

test('Prefer: return=minimal answers {"id": N} with the same status and still writes', async (t) => {
  const minimal = { prefer: 'return=minimal' };
  const path = `/work/${uniq('min')}.yml`;
  const created = await call(url, 'POST', '/api/v1/playbooks', { path, runner_version: '2.15' }, 201, minimal);
  t.deepEqual(Object.keys(created.body), ['id']);
  t.true(Number.isInteger(created.body.id));
  const id = created.body.id;
  t.is((await get(url, `/api/v1/playbooks/${id}`)).path, path);

  const patched = await call(url, 'PATCH', `/api/v1/playbooks/${id}`, { name: 'minimal' }, 200, minimal);
  t.deepEqual(patched.body, { id });
  t.is((await get(url, `/api/v1/playbooks/${id}`)).name, 'minimal');

  const replaced = await call(url, 'PUT', `/api/v1/playbooks/${id}`, { path, runner_version: '9.9' }, 200, minimal);
  t.deepEqual(replaced.body, { id });
  t.is((await get(url, `/api/v1/playbooks/${id}`)).runner_version, '9.9');

  const play = await call(url, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: id }, 201, minimal);
  t.deepEqual(Object.keys(play.body), ['id']);
  const label = await call(url, 'POST', '/api/v1/labels', { name: uniq('min') }, 201, minimal);
  t.deepEqual(Object.keys(label.body), ['id']);

  // A failing write still reports its errors.
  const bad = await api(url, 'POST', '/api/v1/playbooks', { path }, minimal);
  t.is(bad.status, 400);
  t.deepEqual(bad.body, { runner_version: ['This field is required.'] });
});

test('nested summaries are current after updates of the summarized records', async (t) => {
  const tree = await createTree(url, { playbook: { labels: [uniq('lab')] } });
  await patch(url, `/api/v1/playbooks/${tree.playbook}`, { status: 'failed', name: 'after', ended: '2099-01-01T00:00:00Z' });
  await patch(url, `/api/v1/plays/${tree.play}`, { name: 'play after', status: 'completed' });
  await patch(url, `/api/v1/tasks/${tree.task}`, { name: 'task after', lineno: 42 });
  await patch(url, `/api/v1/hosts/${tree.host}`, { name: 'host-after', unreachable: 3 });
  const r = await get(url, `/api/v1/results/${tree.result}`);
  t.is(r.playbook.status, 'failed');
  t.is(r.playbook.name, 'after');
  t.is(r.playbook.ended, '2099-01-01T00:00:00.000000Z');
  t.is(r.play.name, 'play after');
  t.is(r.play.status, 'completed');
  t.is(r.task.name, 'task after');
  t.is(r.task.lineno, 42);
  t.is(r.host.name, 'host-after');
  t.is(r.host.unreachable, 3);
  const task = await get(url, `/api/v1/tasks/${tree.task}`);
  t.is(task.playbook.name, 'after');
  t.is(task.play.name, 'play after');
  t.is((await get(url, `/api/v1/files/${tree.file}`)).playbook.status, 'failed');
  t.is((await get(url, `/api/v1/hosts/${tree.host}`)).playbook.name, 'after');
});
