// SPEC.md §3 (writes): required/optional/defaults per resource, PUT vs PATCH,
// get-or-create of hosts and files, unique record keys and label names, labels
// by name, foreign-key checks (same shard and across shards), the playbook of a
// child is fixed, the `ansible_version` alias, ignored_facts/ignored_arguments
// redaction and `updated` bumping.
import test, { type ExecutionContext } from 'ava';
import { createHash } from 'node:crypto';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import {
  SERVER_ENV, SHARDS, createFile, createHost, createLabel, createPlay, createPlaybook, createRecord, createResult,
  createPlaybookOnShard, createTask, createTree, del, get, list, micros, patch, playbooksOnDifferentShards, playbooksOnSameShard, post, put,
  randomUuid, sleep, uniq, type Json, serveForFile} from '../helpers/fixtures.js';

let lb: Logbook;
let url: string;
serveForFile((server) => { lb = server; url = server.url; });

const REQUIRED = 'This field is required.';
const FACTS_NOTICE = "Not saved as configured by 'ignored_facts'";
const ARGS_NOTICE = "Not saved as configured by 'ignored_arguments'";

async function expect400(t: ExecutionContext, method: string, path: string, body: unknown, expected: Json, what = `${method} ${path}`) {
  const r = await api(url, method, path, body);
  t.is(r.status, 400, `${what}: status (${r.text})`);
  t.deepEqual(r.body, expected, `${what}: body`);
}

/** A 400 whose body has exactly these keys (messages not pinned by SPEC). */
async function expect400Keys(t: ExecutionContext, method: string, path: string, body: unknown, expectedKeys: string[], what = `${method} ${path}`) {
  const r = await api(url, method, path, body);
  t.is(r.status, 400, `${what}: status (${r.text})`);
  t.deepEqual(Object.keys(r.body ?? {}).sort(), [...expectedKeys].sort(), `${what}: error keys (${r.text})`);
  for (const k of expectedKeys) {
    t.true(Array.isArray(r.body?.[k]) && r.body[k].length > 0 && r.body[k].every((m: unknown) => typeof m === 'string' && m.length > 0),
      `${what}: ${k} carries a list of messages (${r.text})`);
  }
  return r;
}

function near(t: ExecutionContext, ts: string, before: number, after: number, what: string) {
  const ms = Number(micros(ts) / 1000n);
  t.true(ms >= before - 2000 && ms <= after + 2000, `${what}: ${ts} not between request start and end`);
}

// ---------------------------------------------------------------- required / defaults

test('label: name required, ≤255 characters, unique', async (t) => {
  await expect400(t, 'POST', '/api/v1/labels', {}, { name: [REQUIRED] });
  await expect400Keys(t, 'POST', '/api/v1/labels', { name: 'x'.repeat(256) }, ['name']);
  const name = uniq('dup') + 'y'.repeat(200);
  const label = await createLabel(url, name);
  t.is(label.name, name);
  await expect400(t, 'POST', '/api/v1/labels', { name }, { name: ['label with this name already exists.'] });
  // renaming onto an existing name is the same duplicate
  const other = await createLabel(url);
  await expect400(t, 'PATCH', `/api/v1/labels/${other.id}`, { name }, { name: ['label with this name already exists.'] });
  t.is((await get(url, `/api/v1/labels/${other.id}`)).name, other.name);
  t.is((await list(url, 'labels', { name })).count, 1);
});

test('playbook: path and runner_version required; defaults', async (t) => {
  await expect400(t, 'POST', '/api/v1/playbooks', {}, { runner_version: [REQUIRED], path: [REQUIRED] });
  const before = Date.now();
  const pb = await post(url, '/api/v1/playbooks', { path: '/p.yml', runner_version: '2.15.0' });
  const after = Date.now();
  t.is(pb.name, null);
  t.is(pb.status, 'unknown');
  t.deepEqual(pb.arguments, {});
  t.deepEqual(pb.labels, []);
  t.is(pb.ended, null);
  t.is(pb.duration, null);
  t.is(pb.runner_version, '2.15.0');
  t.is(pb.path, '/p.yml');
  near(t, pb.started, before, after, 'started defaults to now');
  t.deepEqual(pb.items, { plays: 0, tasks: 0, results: 0, hosts: 0, files: 0, records: 0 });
});

test('playbook: ansible_version is accepted as an alias of runner_version (POST, PATCH)', async (t) => {
  const pb = await post(url, '/api/v1/playbooks', { path: '/alias.yml', ansible_version: '2.14.1' });
  t.is(pb.runner_version, '2.14.1');
  t.is(pb.ansible_version, undefined, 'compat mode is off: no ansible_version key');
  const patched = await patch(url, `/api/v1/playbooks/${pb.id}`, { ansible_version: '2.17.0' });
  t.is(patched.runner_version, '2.17.0');
  t.is((await get(url, `/api/v1/playbooks/${pb.id}`)).runner_version, '2.17.0');
  const replaced = await put(url, `/api/v1/playbooks/${pb.id}`, { path: '/alias.yml', ansible_version: '2.18.0' });
  t.is(replaced.runner_version, '2.18.0');
});

test('play: uuid and playbook required; status defaults to unknown', async (t) => {
  await expect400(t, 'POST', '/api/v1/plays', {}, { uuid: [REQUIRED], playbook: [REQUIRED] });
  const pb = await createPlaybook(url);
  const play = await post(url, '/api/v1/plays', { uuid: randomUuid(), playbook: pb.id });
  t.is(play.status, 'unknown');
  t.is(play.ended, null);
  t.is(play.duration, null);
  t.deepEqual(play.items, { tasks: 0, results: 0 });
});

test('task: action, lineno, handler, play, file, playbook required; tags [] and status unknown by default', async (t) => {
  await expect400(t, 'POST', '/api/v1/tasks', {}, {
    action: [REQUIRED], lineno: [REQUIRED], handler: [REQUIRED], play: [REQUIRED], file: [REQUIRED], playbook: [REQUIRED],
  });
  const pb = await createPlaybook(url);
  const file = await createFile(url, pb.id);
  const play = await createPlay(url, pb.id);
  // each required key alone is reported
  const full = { action: 'debug', lineno: 4, handler: true, play: play.id, file: file.id, playbook: pb.id };
  for (const k of Object.keys(full)) {
    const body: Json = { ...full };
    delete body[k];
    await expect400(t, 'POST', '/api/v1/tasks', body, { [k]: [REQUIRED] }, `task without ${k}`);
  }
  const task = await post(url, '/api/v1/tasks', full);
  t.deepEqual(task.tags, []);
  t.is(task.status, 'unknown');
  t.is(task.handler, true);
  t.is(task.lineno, 4);
  t.deepEqual(task.items, { results: 0 });
});

test('host: name and playbook required; facts {} and counters 0 by default', async (t) => {
  await expect400(t, 'POST', '/api/v1/hosts', {}, { name: [REQUIRED], playbook: [REQUIRED] });
  const pb = await createPlaybook(url);
  const host = await post(url, '/api/v1/hosts', { name: 'web1', playbook: pb.id });
  t.deepEqual(host.facts, {});
  t.deepEqual([host.changed, host.failed, host.ok, host.skipped, host.unreachable], [0, 0, 0, 0, 0]);
});

test('result: playbook, play, task, host required; defaults', async (t) => {
  const r = await api(url, 'POST', '/api/v1/results', {});
  t.is(r.status, 400);
  t.deepEqual(Object.keys(r.body).sort(), ['host', 'play', 'playbook', 'task']);
  for (const k of ['host', 'play', 'playbook', 'task']) t.deepEqual(r.body[k], [REQUIRED]);
  const tree = await createTree(url);
  const before = Date.now();
  const result = await post(url, '/api/v1/results', { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host });
  const after = Date.now();
  t.is(result.status, 'unknown');
  t.is(result.changed, false);
  t.is(result.ignore_errors, false);
  t.deepEqual(result.content, {});
  t.is(result.ended, null);
  t.is(result.duration, null);
  near(t, result.started, before, after, 'result started defaults to now');
});

test('file: path, content, playbook required; empty content allowed; sha1 of the UTF-8 content', async (t) => {
  await expect400(t, 'POST', '/api/v1/files', {}, { path: [REQUIRED], content: [REQUIRED], playbook: [REQUIRED] });
  const pb = await createPlaybook(url);
  const empty = await post(url, '/api/v1/files', { path: '/empty.yml', content: '', playbook: pb.id });
  t.is(empty.content, '');
  t.is(empty.sha1, createHash('sha1').update('').digest('hex'));
  const text = '- name: café ☃ 日本\n  debug: msg=😀\n';
  const f = await post(url, '/api/v1/files', { path: '/utf8.yml', content: text, playbook: pb.id });
  t.is(f.sha1, createHash('sha1').update(Buffer.from(text, 'utf8')).digest('hex'));
  t.is((await get(url, `/api/v1/files/${f.id}`)).content, text);
  // PATCH content → new sha1
  const changed = await patch(url, `/api/v1/files/${f.id}`, { content: 'other' });
  t.is(changed.sha1, createHash('sha1').update('other').digest('hex'));
  t.is((await get(url, `/api/v1/files/${f.id}`)).sha1, changed.sha1);
});

test('record: key, type, playbook required; value defaults to ""', async (t) => {
  await expect400(t, 'POST', '/api/v1/records', {}, { key: [REQUIRED], type: [REQUIRED], playbook: [REQUIRED] });
  const pb = await createPlaybook(url);
  const rec = await post(url, '/api/v1/records', { key: 'k', type: 'text', playbook: pb.id });
  t.is(rec.value, '');
  t.is((await get(url, `/api/v1/records/${rec.id}`)).value, '');
});

test('status values accepted per resource, others rejected on `status`', async (t) => {
  const tree = await createTree(url);
  for (const s of ['unknown', 'running', 'completed', 'failed', 'expired']) {
    t.is((await patch(url, `/api/v1/playbooks/${tree.playbook}`, { status: s })).status, s, `playbook ${s}`);
    t.is((await patch(url, `/api/v1/plays/${tree.play}`, { status: s })).status, s, `play ${s}`);
    t.is((await patch(url, `/api/v1/tasks/${tree.task}`, { status: s })).status, s, `task ${s}`);
  }
  for (const s of ['ok', 'failed', 'skipped', 'unreachable', 'changed', 'ignored', 'unknown']) {
    t.is((await patch(url, `/api/v1/results/${tree.result}`, { status: s })).status, s, `result ${s}`);
  }
  for (const [resource, id] of [['playbooks', tree.playbook], ['plays', tree.play], ['tasks', tree.task], ['results', tree.result]] as const) {
    await expect400(t, 'PATCH', `/api/v1/${resource}/${id}`, { status: 'bogus' }, { status: ['"bogus" is not a valid choice.'] });
  }
  await expect400Keys(t, 'PATCH', `/api/v1/results/${tree.result}`, { status: 'expired' }, ['status']);
  await expect400Keys(t, 'PATCH', `/api/v1/playbooks/${tree.playbook}`, { status: 'ok' }, ['status']);
  t.is((await get(url, `/api/v1/playbooks/${tree.playbook}`)).status, 'expired', 'a rejected status leaves the old one');
});

test('read-only and unknown keys are ignored on writes', async (t) => {
  const pb = await post(url, '/api/v1/playbooks', {
    path: '/ro.yml', runner_version: '1', id: 999999, items: { plays: 5 }, created: '2001-01-01T00:00:00Z',
    updated: '2001-01-01T00:00:00Z', duration: '10:00:00.000000', sha1: 'x', bogus_key: 1,
  });
  t.not(pb.id, 999999);
  t.is(pb.items.plays, 0);
  t.false(pb.created.startsWith('2001'));
  t.false(pb.updated.startsWith('2001'));
  t.is(pb.duration, null);
  t.false('bogus_key' in pb);
  t.is((await api(url, 'GET', '/api/v1/playbooks/999999')).status, 404);
  const file = await createFile(url, pb.id, { sha1: '0'.repeat(40) });
  t.is(file.sha1, createHash('sha1').update('- hosts: all\n').digest('hex'));
});

test('ids are positive integers, increasing in creation order, never reused', async (t) => {
  const a = await createPlaybook(url);
  const b = await createPlaybook(url);
  t.true(a.id > 0 && b.id > a.id);
  await del(url, `/api/v1/playbooks/${b.id}`);
  const c = await createPlaybook(url);
  t.true(c.id > b.id, 'a deleted id is not handed out again');
  const l1 = await createLabel(url);
  await del(url, `/api/v1/labels/${l1.id}`);
  const l2 = await createLabel(url);
  t.true(l2.id > l1.id);
});

// ---------------------------------------------------------------- PUT vs PATCH

test('PATCH changes only the given keys', async (t) => {
  const pb = await createPlaybook(url, { name: 'n', status: 'running', arguments: { forks: 5 }, labels: [uniq('keep')] });
  const patched = await patch(url, `/api/v1/playbooks/${pb.id}`, { status: 'completed' });
  t.is(patched.status, 'completed');
  for (const k of ['name', 'arguments', 'labels', 'path', 'runner_version', 'started']) t.deepEqual(patched[k], pb[k], k);
  const detail = await get(url, `/api/v1/playbooks/${pb.id}`);
  t.is(detail.status, 'completed');
  t.deepEqual(detail.arguments, { forks: 5 });
});

test('PUT needs every required key and resets omitted JSON fields to their defaults', async (t) => {
  const tree = await createTree(url);
  // playbook: arguments → {}
  await patch(url, `/api/v1/playbooks/${tree.playbook}`, { arguments: { forks: 9 } });
  await expect400(t, 'PUT', `/api/v1/playbooks/${tree.playbook}`, { path: '/x.yml' }, { runner_version: [REQUIRED] });
  t.deepEqual((await get(url, `/api/v1/playbooks/${tree.playbook}`)).arguments, { forks: 9 }, 'failed PUT changed nothing');
  t.deepEqual((await put(url, `/api/v1/playbooks/${tree.playbook}`, { path: '/x.yml', runner_version: '2' })).arguments, {});
  t.deepEqual((await get(url, `/api/v1/playbooks/${tree.playbook}`)).arguments, {});
  // task: tags → []
  const task = await patch(url, `/api/v1/tasks/${tree.task}`, { tags: ['a', 'b'] });
  t.deepEqual(task.tags, ['a', 'b']);
  const taskBody = { action: 'debug', lineno: 1, handler: false, play: tree.play, file: tree.file, playbook: tree.playbook };
  await expect400(t, 'PUT', `/api/v1/tasks/${tree.task}`, { ...taskBody, action: undefined }, { action: [REQUIRED] });
  t.deepEqual((await put(url, `/api/v1/tasks/${tree.task}`, taskBody)).tags, []);
  // host: facts → {}
  await patch(url, `/api/v1/hosts/${tree.host}`, { facts: { a: 1 } });
  const host = await get(url, `/api/v1/hosts/${tree.host}`);
  t.deepEqual(host.facts, { a: 1 });
  t.deepEqual((await put(url, `/api/v1/hosts/${tree.host}`, { name: host.name, playbook: tree.playbook })).facts, {});
  // result: content → {}
  await patch(url, `/api/v1/results/${tree.result}`, { content: { msg: 'x' } });
  const refs = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
  t.deepEqual((await put(url, `/api/v1/results/${tree.result}`, refs)).content, {});
  t.deepEqual((await get(url, `/api/v1/results/${tree.result}`)).content, {});
  // record: value → ""
  const rec = await createRecord(url, tree.playbook, { value: { a: 1 } });
  await expect400(t, 'PUT', `/api/v1/records/${rec.id}`, { key: rec.key, playbook: tree.playbook }, { type: [REQUIRED] });
  t.is((await put(url, `/api/v1/records/${rec.id}`, { key: rec.key, type: 'text', playbook: tree.playbook })).value, '');
  t.is((await get(url, `/api/v1/records/${rec.id}`)).value, '');
  // PATCH without the field keeps it
  await patch(url, `/api/v1/records/${rec.id}`, { value: [1] });
  t.deepEqual((await patch(url, `/api/v1/records/${rec.id}`, { type: 'list' })).value, [1]);
});

test('PUT, PATCH and DELETE on an unknown id → 404 and nothing is created', async (t) => {
  const pb = await createPlaybook(url);
  for (const [method, body] of [['PUT', { path: '/x', runner_version: '1' }], ['PATCH', { name: 'x' }], ['DELETE', undefined]] as const) {
    const r = await api(url, method, '/api/v1/playbooks/987654321', body);
    t.is(r.status, 404, method);
    t.deepEqual(r.body, { detail: 'Not found.' });
  }
  t.is((await api(url, 'PUT', '/api/v1/plays/987654321', { uuid: randomUuid(), playbook: pb.id })).status, 404);
  t.is((await get(url, `/api/v1/playbooks/${pb.id}`)).items.plays, 0);
});

test('DELETE → 204 with an empty body, then the record is gone (404), a second DELETE → 404', async (t) => {
  const tree = await createTree(url);
  const rec = await createRecord(url, tree.playbook);
  const label = await createLabel(url);
  for (const [resource, id] of [
    ['results', tree.result], ['records', rec.id], ['tasks', tree.task], ['hosts', tree.host], ['files', tree.file],
    ['plays', tree.play], ['playbooks', tree.playbook], ['labels', label.id],
  ] as const) {
    const r = await api(url, 'DELETE', `/api/v1/${resource}/${id}`);
    t.is(r.status, 204, `${resource} delete`);
    t.is(r.text, '', `${resource} delete body`);
    t.is((await api(url, 'GET', `/api/v1/${resource}/${id}`)).status, 404, `${resource} gone`);
    t.is((await api(url, 'DELETE', `/api/v1/${resource}/${id}`)).status, 404, `${resource} second delete`);
  }
});

// ---------------------------------------------------------------- get-or-create

test('host POST is a get-or-create on (name, playbook): existing host returned unchanged with 201', async (t) => {
  const pb = await createPlaybook(url);
  const other = await createPlaybook(url);
  const first = await post(url, '/api/v1/hosts', { name: 'web1', playbook: pb.id, facts: { a: 1 }, ok: 2 });
  const again = await api(url, 'POST', '/api/v1/hosts', { name: 'web1', playbook: pb.id, facts: { b: 2 }, ok: 7, failed: 3 });
  t.is(again.status, 201);
  t.is(again.body.id, first.id);
  t.deepEqual(again.body.facts, { a: 1 });
  t.is(again.body.ok, 2);
  t.is(again.body.failed, 0);
  t.is(again.body.updated, first.updated, 'an existing host is returned unchanged (updated too)');
  t.deepEqual((await get(url, `/api/v1/hosts/${first.id}`)).facts, { a: 1 });
  t.is((await list(url, 'hosts', { playbook: pb.id })).count, 1);
  t.is((await get(url, `/api/v1/playbooks/${pb.id}`)).items.hosts, 1);
  // same name in another playbook is another host; name matching is exact
  const elsewhere = await post(url, '/api/v1/hosts', { name: 'web1', playbook: other.id });
  t.not(elsewhere.id, first.id);
  const upper = await post(url, '/api/v1/hosts', { name: 'WEB1', playbook: pb.id });
  t.not(upper.id, first.id);
});

test('file POST is a get-or-create on (path, playbook): same content → existing file, different content → 400 on content', async (t) => {
  const pb = await createPlaybook(url);
  const first = await post(url, '/api/v1/files', { path: '/site.yml', content: 'a: 1\n', playbook: pb.id });
  const again = await api(url, 'POST', '/api/v1/files', { path: '/site.yml', content: 'a: 1\n', playbook: pb.id });
  t.is(again.status, 201);
  t.is(again.body.id, first.id);
  t.is(again.body.sha1, first.sha1);
  t.is(again.body.updated, first.updated, 'an existing file is returned unchanged (updated too)');
  const clash = await expect400Keys(t, 'POST', '/api/v1/files', { path: '/site.yml', content: 'a: 2\n', playbook: pb.id }, ['content']);
  t.regex(clash.body.content[0], /content/i, 'the message says the content differs');
  t.is((await get(url, `/api/v1/files/${first.id}`)).content, 'a: 1\n', 'existing file unchanged');
  t.is((await list(url, 'files', { playbook: pb.id })).count, 1);
  t.is((await get(url, `/api/v1/playbooks/${pb.id}`)).items.files, 1);
  // concurrent identical POSTs all get the one file
  const same = await Promise.all(Array.from({ length: 6 }, () => api(url, 'POST', '/api/v1/files', { path: '/site.yml', content: 'a: 1\n', playbook: pb.id })));
  t.deepEqual(same.map((r) => [r.status, r.body.id]), same.map(() => [201, first.id]));
  // same content under another path → a new file with the same sha1
  const copy = await post(url, '/api/v1/files', { path: '/copy.yml', content: 'a: 1\n', playbook: pb.id });
  t.not(copy.id, first.id);
  t.is(copy.sha1, first.sha1);
  // same path in another playbook → another file
  const pb2 = await createPlaybook(url);
  t.not((await post(url, '/api/v1/files', { path: '/site.yml', content: 'a: 2\n', playbook: pb2.id })).id, first.id);
});

test('record (key, playbook) is unique on POST and on rename; same key in another playbook is fine', async (t) => {
  const pb = await createPlaybook(url);
  const unique = { non_field_errors: ['The fields key, playbook must make a unique set.'] };
  const a = await createRecord(url, pb.id, { key: 'k1', value: 'one' });
  await expect400(t, 'POST', '/api/v1/records', { key: 'k1', type: 'text', value: 'two', playbook: pb.id }, unique);
  const b = await createRecord(url, pb.id, { key: 'k2' });
  await expect400(t, 'PATCH', `/api/v1/records/${b.id}`, { key: 'k1' }, unique);
  t.is((await get(url, `/api/v1/records/${b.id}`)).key, 'k2');
  t.is((await get(url, `/api/v1/records/${a.id}`)).value, 'one');
  t.is((await list(url, 'records', { playbook: pb.id })).count, 2);
  const pb2 = await createPlaybook(url);
  t.is((await createRecord(url, pb2.id, { key: 'k1' })).key, 'k1');
  // re-saving a record with its own key is not a clash
  t.is((await patch(url, `/api/v1/records/${a.id}`, { key: 'k1', value: 'uno' })).value, 'uno');
});

// ---------------------------------------------------------------- labels

test('playbook labels are names, get-or-created, and writes replace the set', async (t) => {
  const [n1, n2, n3] = [uniq('l1'), uniq('l2'), uniq('l3')];
  const existing = await createLabel(url, n1);
  const pb = await createPlaybook(url, { labels: [n1, n2] });
  const names = (p: Json) => p.labels.map((l: Json) => l.name).sort();
  t.deepEqual(names(pb), [n1, n2].sort());
  t.is(pb.labels.find((l: Json) => l.name === n1).id, existing.id, 'an existing label is reused');
  const created2 = (await list(url, 'labels', { name: n2 })).results;
  t.is(created2.length, 1, 'a new name creates a label');
  t.is(pb.labels.find((l: Json) => l.name === n2).id, created2[0].id);
  // a second playbook with the same name reuses the same label
  const pb2 = await createPlaybook(url, { labels: [n2] });
  t.is(pb2.labels[0].id, created2[0].id);
  // PATCH replaces the set
  const replaced = await patch(url, `/api/v1/playbooks/${pb.id}`, { labels: [n2, n3] });
  t.deepEqual(names(replaced), [n2, n3].sort());
  t.deepEqual(names(await get(url, `/api/v1/playbooks/${pb.id}`)), [n2, n3].sort());
  // PATCH without labels keeps them; PUT without labels keeps them too (no serializer default)
  t.deepEqual(names(await patch(url, `/api/v1/playbooks/${pb.id}`, { name: 'x' })), [n2, n3].sort());
  // [] clears
  t.deepEqual((await patch(url, `/api/v1/playbooks/${pb.id}`, { labels: [] })).labels, []);
  t.deepEqual((await get(url, `/api/v1/playbooks/${pb.id}`)).labels, []);
  // labels that were dropped still exist
  t.is((await get(url, `/api/v1/labels/${existing.id}`)).name, n1);
  // labels must be a list
  await expect400Keys(t, 'PATCH', `/api/v1/playbooks/${pb.id}`, { labels: 'abc' }, ['labels']);
});

test('label rename and delete are reflected in playbooks (detail, list and nested summaries)', async (t) => {
  const [n1, n2] = [uniq('ren'), uniq('gone')];
  const tree = await createTree(url, { playbook: { labels: [n1, n2] } });
  const pb = await get(url, `/api/v1/playbooks/${tree.playbook}`);
  const l1 = pb.labels.find((l: Json) => l.name === n1);
  const l2 = pb.labels.find((l: Json) => l.name === n2);
  const renamed = uniq('renamed');
  t.is((await patch(url, `/api/v1/labels/${l1.id}`, { name: renamed })).name, renamed);
  const names = (p: Json) => p.labels.map((l: Json) => l.name).sort();
  t.deepEqual(names(await get(url, `/api/v1/playbooks/${tree.playbook}`)), [renamed, n2].sort());
  t.deepEqual(names((await list(url, 'playbooks', { label: renamed })).results[0] ?? { labels: [] }), [renamed, n2].sort());
  t.is((await list(url, 'playbooks', { label: n1 })).count, 0, 'the old name no longer matches');
  t.deepEqual(names((await get(url, `/api/v1/results/${tree.result}`)).playbook), [renamed, n2].sort());
  await del(url, `/api/v1/labels/${l2.id}`);
  const after = await get(url, `/api/v1/playbooks/${tree.playbook}`);
  t.deepEqual(after.labels, [{ id: l1.id, name: renamed }]);
  t.deepEqual((await get(url, `/api/v1/hosts/${tree.host}`)).playbook.labels, [{ id: l1.id, name: renamed }]);
  t.is((await list(url, 'playbooks', { label: n2 })).count, 0);
  // the playbook itself is untouched
  t.is(after.path, pb.path);
  t.deepEqual(after.items, pb.items);
});

// ---------------------------------------------------------------- foreign keys

test('FK to a nonexistent record → 400 Invalid pk "N" - object does not exist.', async (t) => {
  const missing = 987654;
  const tree = await createTree(url);
  const pk = (n: number | string) => [`Invalid pk "${n}" - object does not exist.`];
  await expect400(t, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: missing }, { playbook: pk(missing) });
  await expect400(t, 'POST', '/api/v1/hosts', { name: 'h', playbook: missing }, { playbook: pk(missing) });
  await expect400(t, 'POST', '/api/v1/files', { path: '/f', content: '', playbook: missing }, { playbook: pk(missing) });
  await expect400(t, 'POST', '/api/v1/records', { key: 'k', type: 't', playbook: missing }, { playbook: pk(missing) });
  const taskBody = { action: 'a', lineno: 1, handler: false, play: tree.play, file: tree.file, playbook: tree.playbook };
  await expect400(t, 'POST', '/api/v1/tasks', { ...taskBody, play: missing }, { play: pk(missing) });
  await expect400(t, 'POST', '/api/v1/tasks', { ...taskBody, file: missing }, { file: pk(missing) });
  await expect400(t, 'POST', '/api/v1/tasks', { ...taskBody, file: String(missing) }, { file: pk(missing) });
  const resultBody = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
  for (const k of ['host', 'task', 'play', 'playbook'] as const) {
    await expect400(t, 'POST', '/api/v1/results', { ...resultBody, [k]: missing }, { [k]: pk(missing) }, `result with missing ${k}`);
  }
  await expect400(t, 'PATCH', `/api/v1/tasks/${tree.task}`, { file: missing }, { file: pk(missing) });
  // an id past 2^53 is named as sent, not as the double it parses to (12345678901234567000): raw text, JSON.stringify would round it
  const huge = '12345678901234567890';
  await expect400(t, 'POST', '/api/v1/plays', `{"uuid":"${randomUuid()}","playbook":${huge}}`, { playbook: pk(huge) });
  await expect400(t, 'POST', '/api/v1/plays', `{"uuid":"${randomUuid()}","playbook":"${huge}"}`, { playbook: pk(huge) });
  await expect400(t, 'POST', '/api/v1/results', JSON.stringify(resultBody).replace('}', `,"delegated_to":[${tree.host},${huge}]}`),
    { delegated_to: pk(huge) });
  // a deleted record is just as missing
  const file2 = await createFile(url, tree.playbook);
  await del(url, `/api/v1/files/${file2.id}`);
  await expect400(t, 'POST', '/api/v1/tasks', { ...taskBody, file: file2.id }, { file: pk(file2.id) });
  t.deepEqual((await get(url, `/api/v1/playbooks/${tree.playbook}`)).items, { plays: 1, tasks: 1, results: 1, hosts: 1, files: 1, records: 0 });
});

async function checkCrossPlaybook(t: ExecutionContext, a: Json, b: Json) {
  // `a` owns the referenced records; writes target playbook `b`.
  const fileA = await createFile(url, a.id);
  const playA = await createPlay(url, a.id);
  const taskA = await createTask(url, { playbook: a.id, play: playA.id, file: fileA.id });
  const hostA = await createHost(url, a.id);
  const fileB = await createFile(url, b.id);
  const playB = await createPlay(url, b.id);
  const taskB = await createTask(url, { playbook: b.id, play: playB.id, file: fileB.id });
  const hostB = await createHost(url, b.id);
  const msg = (r: string, id: number) => [`${r} ${id} does not belong to playbook ${b.id}.`];
  const shards = `(playbooks ${a.id} and ${b.id}, shards ${a.id % SHARDS}/${b.id % SHARDS})`;

  const task = { action: 'a', lineno: 1, handler: false, play: playB.id, file: fileB.id, playbook: b.id };
  await expect400(t, 'POST', '/api/v1/tasks', { ...task, play: playA.id }, { play: msg('Play', playA.id) }, `task → foreign play ${shards}`);
  await expect400(t, 'POST', '/api/v1/tasks', { ...task, file: fileA.id }, { file: msg('File', fileA.id) }, `task → foreign file ${shards}`);
  const result = { playbook: b.id, play: playB.id, task: taskB.id, host: hostB.id };
  await expect400(t, 'POST', '/api/v1/results', { ...result, host: hostA.id }, { host: msg('Host', hostA.id) }, `result → foreign host ${shards}`);
  await expect400(t, 'POST', '/api/v1/results', { ...result, task: taskA.id }, { task: msg('Task', taskA.id) }, `result → foreign task ${shards}`);
  await expect400(t, 'POST', '/api/v1/results', { ...result, play: playA.id }, { play: msg('Play', playA.id) }, `result → foreign play ${shards}`);
  await expect400(t, 'PATCH', `/api/v1/tasks/${taskB.id}`, { file: fileA.id }, { file: msg('File', fileA.id) }, `PATCH task → foreign file ${shards}`);
  const after = await get(url, `/api/v1/playbooks/${b.id}`);
  t.deepEqual(after.items, { plays: 1, tasks: 1, results: 0, hosts: 1, files: 1, records: 0 }, 'nothing was written');
  t.is((await get(url, `/api/v1/tasks/${taskB.id}`)).file.id, fileB.id);
}

test('FK of another playbook on the same shard → 400 <Resource> N does not belong to playbook M.', async (t) => {
  const [a, b] = await playbooksOnSameShard(url);
  t.is(a.id % SHARDS, b.id % SHARDS);
  await checkCrossPlaybook(t, a, b);
});

test('FK of another playbook on a different shard → 400 <Resource> N does not belong to playbook M.', async (t) => {
  const [a, b] = await playbooksOnDifferentShards(url);
  t.not(a.id % SHARDS, b.id % SHARDS);
  await checkCrossPlaybook(t, a, b);
});

test('FKs accept decimal strings', async (t) => {
  const pb = await createPlaybook(url);
  const play = await post(url, '/api/v1/plays', { uuid: randomUuid(), playbook: String(pb.id) });
  t.is(play.playbook, pb.id);
  const file = await post(url, '/api/v1/files', { path: '/s.yml', content: 'x', playbook: String(pb.id) });
  const task = await post(url, '/api/v1/tasks', {
    action: 'debug', lineno: 1, handler: false, play: String(play.id), file: String(file.id), playbook: String(pb.id),
  });
  t.deepEqual([task.play, task.file, task.playbook], [play.id, file.id, pb.id]);
  const host = await post(url, '/api/v1/hosts', { name: 'h', playbook: String(pb.id) });
  const result = await post(url, '/api/v1/results', {
    playbook: String(pb.id), play: String(play.id), task: String(task.id), host: String(host.id),
  });
  t.deepEqual([result.playbook, result.play, result.task, result.host], [pb.id, play.id, task.id, host.id]);
  t.is((await get(url, `/api/v1/playbooks/${pb.id}`)).items.results, 1);
  // a non-numeric string is not a pk
  await expect400Keys(t, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: 'abc' }, ['playbook']);
});

test("a child's playbook cannot change (PATCH/PUT with another playbook → 400; the same playbook is fine)", async (t) => {
  const tree = await createTree(url);
  const other = await createPlaybook(url);
  const rec = await createRecord(url, tree.playbook);
  for (const [resource, id] of [
    ['plays', tree.play], ['tasks', tree.task], ['hosts', tree.host], ['results', tree.result], ['files', tree.file], ['records', rec.id],
  ] as const) {
    await expect400Keys(t, 'PATCH', `/api/v1/${resource}/${id}`, { playbook: other.id }, ['playbook'], `PATCH ${resource} playbook`);
    t.is((await get(url, `/api/v1/${resource}/${id}`)).playbook.id, tree.playbook, `${resource} still in its playbook`);
    t.is((await patch(url, `/api/v1/${resource}/${id}`, { playbook: tree.playbook })).playbook, tree.playbook, `${resource} same playbook`);
  }
  const play = await get(url, `/api/v1/plays/${tree.play}`);
  await expect400Keys(t, 'PUT', `/api/v1/plays/${tree.play}`, { uuid: play.uuid, playbook: other.id }, ['playbook']);
  t.is((await put(url, `/api/v1/plays/${tree.play}`, { uuid: play.uuid, playbook: tree.playbook })).playbook, tree.playbook);
  t.deepEqual((await get(url, `/api/v1/playbooks/${other.id}`)).items, { plays: 0, tasks: 0, results: 0, hosts: 0, files: 0, records: 0 });
});

// ---------------------------------------------------------------- redaction

test('ignored_facts (default ansible_env) redacts host facts on POST, PATCH and PUT', async (t) => {
  const pb = await createPlaybook(url);
  const host = await post(url, '/api/v1/hosts', {
    name: 'h', playbook: pb.id, facts: { ansible_hostname: 'h', ansible_env: { HOME: '/root', SECRET: 's3' }, z: 1 },
  });
  t.deepEqual(host.facts, { ansible_hostname: 'h', ansible_env: FACTS_NOTICE, z: 1 });
  t.deepEqual(Object.keys(host.facts), ['ansible_hostname', 'ansible_env', 'z'], 'key order kept');
  t.deepEqual((await get(url, `/api/v1/hosts/${host.id}`)).facts, { ansible_hostname: 'h', ansible_env: FACTS_NOTICE, z: 1 });
  const patched = await patch(url, `/api/v1/hosts/${host.id}`, { facts: { ansible_env: { PATH: '/bin' }, ansible_os_family: 'Debian' } });
  t.deepEqual(patched.facts, { ansible_env: FACTS_NOTICE, ansible_os_family: 'Debian' });
  const r = await get(url, `/api/v1/hosts/${host.id}`);
  t.false(JSON.stringify(r).includes('/bin'));
  const replaced = await put(url, `/api/v1/hosts/${host.id}`, { name: 'h', playbook: pb.id, facts: { ansible_env: 'x' } });
  t.deepEqual(replaced.facts, { ansible_env: FACTS_NOTICE });
  // a fact not named in ignored_facts is kept, even when nested
  const other = await patch(url, `/api/v1/hosts/${host.id}`, { facts: { nested: { ansible_env: 'kept' } } });
  t.deepEqual(other.facts, { nested: { ansible_env: 'kept' } });
});

test('ignored_facts redacts content.ansible_facts of results (only there)', async (t) => {
  const tree = await createTree(url);
  const refs = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
  const result = await post(url, '/api/v1/results', {
    ...refs, status: 'ok',
    content: { ansible_facts: { ansible_env: { SECRET: 'x' }, ansible_distribution: 'Debian' }, changed: false, ansible_env: 'top-level kept' },
  });
  const expected = { ansible_facts: { ansible_env: FACTS_NOTICE, ansible_distribution: 'Debian' }, changed: false, ansible_env: 'top-level kept' };
  t.deepEqual(result.content, expected);
  t.deepEqual((await get(url, `/api/v1/results/${result.id}`)).content, expected);
  const patched = await patch(url, `/api/v1/results/${result.id}`, { content: { ansible_facts: { ansible_env: [1] } } });
  t.deepEqual(patched.content, { ansible_facts: { ansible_env: FACTS_NOTICE } });
  t.deepEqual((await get(url, `/api/v1/results/${result.id}`)).content, { ansible_facts: { ansible_env: FACTS_NOTICE } });
  // a key spelled with escapes is the same key, at either level
  for (const raw of ['{"ansible\\u005ffacts":{"ansible_env":{"SECRET":"x"}}}', '{"\\u0061nsible_facts":{"ansible\\u005fenv":{"SECRET":"x"}}}']) {
    const r = await api(url, 'PATCH', `/api/v1/results/${result.id}`, `{"content":${raw}}`);
    t.is(r.status, 200, r.text);
    t.false(r.text.includes('SECRET'), r.text);
    t.deepEqual((await get(url, `/api/v1/results/${result.id}`)).content, { ansible_facts: { ansible_env: FACTS_NOTICE } }, raw);
  }
  const host = await post(url, '/api/v1/hosts', { name: 'escaped', playbook: tree.playbook, facts: { a: 1 } });
  const r = await api(url, 'PATCH', `/api/v1/hosts/${host.id}`, '{"facts":{"ansible\\u005fenv":{"SECRET":"x"}}}');
  t.deepEqual(r.body.facts, { ansible_env: FACTS_NOTICE }, r.text);
});

test('ignored_arguments (default extra_vars) redacts playbook arguments on POST, PATCH and PUT', async (t) => {
  const args = { check: false, extra_vars: { password: 'hunter2' }, forks: 5 };
  const pb = await createPlaybook(url, { arguments: args });
  const expected = { check: false, extra_vars: ARGS_NOTICE, forks: 5 };
  t.deepEqual(pb.arguments, expected);
  t.deepEqual(Object.keys(pb.arguments), ['check', 'extra_vars', 'forks']);
  t.deepEqual((await get(url, `/api/v1/playbooks/${pb.id}`)).arguments, expected);
  const row = (await list(url, 'playbooks', { path: pb.path })).results[0];
  t.deepEqual(row.arguments, expected);
  const listText = (await api(url, 'GET', `/api/v1/playbooks?path=${encodeURIComponent(pb.path)}`)).text;
  t.false(listText.includes('hunter2'));
  t.deepEqual((await patch(url, `/api/v1/playbooks/${pb.id}`, { arguments: { extra_vars: 'a=b' } })).arguments, { extra_vars: ARGS_NOTICE });
  t.deepEqual((await put(url, `/api/v1/playbooks/${pb.id}`, { path: pb.path, runner_version: '2', arguments: { extra_vars: ['x'], tags: ['t'] } })).arguments,
    { extra_vars: ARGS_NOTICE, tags: ['t'] });
  t.deepEqual((await patch(url, `/api/v1/playbooks/${pb.id}`, { arguments: { verbosity: 2 } })).arguments, { verbosity: 2 });
});

// ---------------------------------------------------------------- updated

test('`updated` changes on every successful write, including an empty PATCH; `created` never does', async (t) => {
  const tree = await createTree(url);
  const rec = await createRecord(url, tree.playbook);
  const label = await createLabel(url);
  for (const [resource, id] of [
    ['playbooks', tree.playbook], ['plays', tree.play], ['tasks', tree.task], ['hosts', tree.host],
    ['results', tree.result], ['files', tree.file], ['records', rec.id], ['labels', label.id],
  ] as const) {
    const before = await get(url, `/api/v1/${resource}/${id}`);
    await sleep(2);
    const r = await api(url, 'PATCH', `/api/v1/${resource}/${id}`, {});
    t.is(r.status, 200, `${resource}: {} PATCH`);
    t.true(micros(r.body.updated) > micros(before.updated), `${resource}: updated bumped by {} (${before.updated} → ${r.body.updated})`);
    t.is(r.body.created, before.created, `${resource}: created unchanged`);
    const after = await get(url, `/api/v1/${resource}/${id}`);
    t.is(after.updated, r.body.updated, `${resource}: bump persisted`);
    // a failed write does not bump
    const bad = await api(url, 'PATCH', `/api/v1/${resource}/${id}`, resource === 'labels' ? { name: 'n'.repeat(256) } : resource === 'playbooks' ? { status: 'bogus' } : { playbook: 'abc' });
    t.is(bad.status, 400, `${resource}: bad PATCH rejected (${bad.text})`);
    t.is((await get(url, `/api/v1/${resource}/${id}`)).updated, after.updated, `${resource}: failed write leaves updated`);
  }
});

test('a label shared by playbooks on every shard: rename and delete reach all of them', async (t) => {
  const name = uniq('shared');
  const pbs = [];
  for (let s = 0; s < SHARDS; s++) pbs.push(await createPlaybookOnShard(url, s, { labels: [name, uniq('own')] }));
  const label = pbs[0].labels.find((l: Json) => l.name === name);
  for (const pb of pbs) t.is(pb.labels.find((l: Json) => l.name === name).id, label.id, 'one label for all');
  t.deepEqual((await list(url, 'playbooks', { label: name })).results.map((p: Json) => p.id), pbs.map((p) => p.id));
  const renamed = uniq('renamed');
  await put(url, `/api/v1/labels/${label.id}`, { name: renamed });
  for (const pb of pbs) {
    t.truthy((await get(url, `/api/v1/playbooks/${pb.id}`)).labels.find((l: Json) => l.id === label.id && l.name === renamed), `shard ${pb.id % SHARDS} sees the rename`);
  }
  t.is((await list(url, 'playbooks', { label: renamed })).count, SHARDS);
  await del(url, `/api/v1/labels/${label.id}`);
  for (const pb of pbs) {
    const labels = (await get(url, `/api/v1/playbooks/${pb.id}`)).labels;
    t.is(labels.length, 1, `shard ${pb.id % SHARDS}: only its own label remains`);
    t.false(labels.some((l: Json) => l.id === label.id));
  }
  t.is((await list(url, 'playbooks', { label: renamed })).count, 0);
  // the name can be used again: a new label with a new id
  const again = await createPlaybook(url, { labels: [renamed] });
  t.true(again.labels[0].id > label.id);
});

test('PUT keeps omitted fields that are not JSON fields with defaults (name, status, started, labels, counters, changed)', async (t) => {
  const tree = await createTree(url, { playbook: { name: 'keep', status: 'running', started: '2024-01-01T00:00:00Z', labels: [uniq('keep')] }, result: { status: 'ok', changed: true, ignore_errors: true } });
  const pb = await get(url, `/api/v1/playbooks/${tree.playbook}`);
  const replaced = await put(url, `/api/v1/playbooks/${tree.playbook}`, { path: pb.path, runner_version: '3.0' });
  for (const k of ['name', 'status', 'started', 'labels']) t.deepEqual(replaced[k], pb[k], `playbook ${k}`);
  await patch(url, `/api/v1/hosts/${tree.host}`, { ok: 4, skipped: 2 });
  const host = await get(url, `/api/v1/hosts/${tree.host}`);
  const h = await put(url, `/api/v1/hosts/${tree.host}`, { name: host.name, playbook: tree.playbook });
  t.deepEqual([h.ok, h.skipped, h.changed], [4, 2, host.changed], 'host counters kept');
  const r = await put(url, `/api/v1/results/${tree.result}`, { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host });
  t.is(r.status, 'changed');
  t.is(r.changed, true);
  t.is(r.ignore_errors, true);
});

test('booleans and integers accept the usual DRF literals', async (t) => {
  const tree = await createTree(url);
  const base = { action: 'debug', play: tree.play, file: tree.file, playbook: tree.playbook };
  for (const [v, expected] of [[true, true], ['true', true], ['True', true], [1, true], ['1', true], [false, false], ['false', false], [0, false], ['0', false]] as const) {
    const task = await post(url, '/api/v1/tasks', { ...base, lineno: 1, handler: v });
    t.is(task.handler, expected, `handler ${JSON.stringify(v)}`);
  }
  t.is((await post(url, '/api/v1/tasks', { ...base, lineno: '12', handler: false })).lineno, 12);
  await expect400(t, 'POST', '/api/v1/tasks', { ...base, lineno: 1.5, handler: false }, { lineno: ['A valid integer is required.'] });
  await expect400(t, 'POST', '/api/v1/tasks', { ...base, lineno: 1, handler: 'maybe' }, { handler: ['Must be a valid boolean.'] });
});

test('concurrent writes naming the same new label create it once', async (t) => {
  const name = uniq('race');
  const pbs = await Promise.all(Array.from({ length: 9 }, () => createPlaybook(url, { labels: [name] })));
  const labelIds = new Set(pbs.map((p) => p.labels[0].id));
  t.is(labelIds.size, 1);
  t.is((await list(url, 'labels', { name })).count, 1);
  const name2 = uniq('race2');
  const posts = await Promise.all(Array.from({ length: 6 }, () => api(url, 'POST', '/api/v1/labels', { name: name2 })));
  t.deepEqual(posts.map((p) => p.status).sort(), [201, 400, 400, 400, 400, 400]);
  t.is((await list(url, 'labels', { name: name2 })).count, 1);
});

test('ignored_facts / ignored_arguments follow the configuration (lists; empty means none)', async (t) => {
  const custom = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_IGNORED_FACTS: 'ansible_mounts,ansible_ssh_host_key_rsa_public', LOGBOOK_IGNORED_ARGUMENTS: 'become_user,vault_password_files' } });
  const none = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_IGNORED_FACTS: '', LOGBOOK_IGNORED_ARGUMENTS: '' } });
  try {
    const facts = { ansible_env: { A: 1 }, ansible_mounts: [1], ansible_ssh_host_key_rsa_public: 'k', other: 2 };
    const args = { extra_vars: { x: 1 }, become_user: 'root', vault_password_files: ['/v'], forks: 5 };
    const c = await createTree(custom.url, { host: { facts }, playbook: { arguments: args } });
    t.deepEqual((await get(custom.url, `/api/v1/hosts/${c.host}`)).facts,
      { ansible_env: { A: 1 }, ansible_mounts: FACTS_NOTICE, ansible_ssh_host_key_rsa_public: FACTS_NOTICE, other: 2 });
    t.deepEqual((await get(custom.url, `/api/v1/playbooks/${c.playbook}`)).arguments,
      { extra_vars: { x: 1 }, become_user: ARGS_NOTICE, vault_password_files: ARGS_NOTICE, forks: 5 });
    const r = await createResult(custom.url, c, { content: { ansible_facts: facts } });
    t.deepEqual(r.content.ansible_facts.ansible_mounts, FACTS_NOTICE);
    t.deepEqual(r.content.ansible_facts.ansible_env, { A: 1 });
    const n = await createTree(none.url, { host: { facts }, playbook: { arguments: args } });
    t.deepEqual((await get(none.url, `/api/v1/hosts/${n.host}`)).facts, facts, 'nothing ignored');
    t.deepEqual((await get(none.url, `/api/v1/playbooks/${n.playbook}`)).arguments, args, 'nothing ignored');
  } finally {
    await Promise.all([custom.stop(), none.stop()]);
  }
});
