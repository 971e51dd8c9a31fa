// docs/ara-dialect.md: LOGBOOK_ARA_COMPAT=true (ARA's dialect for every request) adds ansible_version/controller/user to
// every playbook object (top-level and nested), created/updated to every list
// row and delegated_to to result rows; with the mode off, representations are
// exactly §2 (`off` runs the default, auto: these requests are not ARA's http client's).
import test, { type ExecutionContext } from 'ava';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import {
  SERVER_ENV, createFile, createHost, createLabel, createPlay, createPlaybook, createRecord, createResult, createTask,
  get, list, patch, put, uniq, type Json,
} from '../helpers/fixtures.js';
import { DETAIL, ROW, WRITE } from '../helpers/shapes.js';
import { openSse, type StreamMessage } from '../helpers/stream.js';

let on: Logbook;
let off: Logbook;
test.before(async () => {
  [on, off] = await Promise.all([
    startLogbook({ env: { ...SERVER_ENV, LOGBOOK_ARA_COMPAT: 'true' } }),
    startLogbook({ env: SERVER_ENV }),
  ]);
});
test.after.always(async () => { await Promise.all([on?.stop(), off?.stop()]); });

interface Made { pb: Json; file: Json; play: Json; task: Json; host: Json; host2: Json; result: Json; record: Json; label: Json }

async function build(url: string, playbook: Record<string, unknown> = { controller: 'ctl.example.org', user: 'alice' }): Promise<Made> {
  const pb = await createPlaybook(url, { runner_version: '2.15.13', labels: [uniq('c')], ...playbook });
  const file = await createFile(url, pb.id);
  const play = await createPlay(url, pb.id);
  const task = await createTask(url, { playbook: pb.id, play: play.id, file: file.id });
  const host = await createHost(url, pb.id);
  const host2 = await createHost(url, pb.id);
  const result = await createResult(url, { playbook: pb.id, play: play.id, task: task.id, host: host.id }, { delegated_to: [host2.id] });
  const record = await createRecord(url, pb.id);
  const label = await createLabel(url);
  return { pb, file, play, task, host, host2, result, record, label };
}

function compatPlaybook(t: ExecutionContext, obj: Json, expected: { ansible_version: string; controller: string | null; user: string | null }, what: string) {
  t.is(obj.ansible_version, expected.ansible_version, `${what}: ansible_version`);
  t.is(obj.controller, expected.controller, `${what}: controller`);
  t.is(obj.user, expected.user, `${what}: user`);
  t.is(obj.runner_version, expected.ansible_version, `${what}: runner_version still there`);
}

test('compat on: every playbook object, top-level and nested, carries ansible_version, controller and user', async (t) => {
  const url = on.url;
  const m = await build(url);
  const exp = { ansible_version: '2.15.13', controller: 'ctl.example.org', user: 'alice' };
  compatPlaybook(t, m.pb, exp, 'POST response');
  compatPlaybook(t, await get(url, `/api/v1/playbooks/${m.pb.id}`), exp, 'detail');
  compatPlaybook(t, (await list(url, 'playbooks', { path: m.pb.path })).results[0], exp, 'list row');
  for (const [resource, id] of [['plays', m.play.id], ['tasks', m.task.id], ['hosts', m.host.id], ['results', m.result.id], ['files', m.file.id], ['records', m.record.id]] as const) {
    compatPlaybook(t, (await get(url, `/api/v1/${resource}/${id}`)).playbook, exp, `${resource} detail nested playbook`);
  }
  const patched = await patch(url, `/api/v1/playbooks/${m.pb.id}`, { controller: 'other', ansible_version: '2.16.0' });
  compatPlaybook(t, patched, { ansible_version: '2.16.0', controller: 'other', user: 'alice' }, 'PATCH response');
  // never sent → null
  const bare = await createPlaybook(url);
  compatPlaybook(t, bare, { ansible_version: '2.15.13', controller: null, user: null }, 'never sent');
  compatPlaybook(t, await get(url, `/api/v1/playbooks/${bare.id}`), { ansible_version: '2.15.13', controller: null, user: null }, 'never sent (detail)');
});

test('compat on: every list row carries created and updated; result rows carry delegated_to', async (t) => {
  const url = on.url;
  const m = await build(url);
  const rows: Record<string, Json> = {
    playbooks: (await list(url, 'playbooks', { path: m.pb.path })).results[0],
    plays: (await list(url, 'plays', { playbook: m.pb.id })).results[0],
    tasks: (await list(url, 'tasks', { playbook: m.pb.id })).results[0],
    hosts: (await list(url, 'hosts', { playbook: m.pb.id })).results[0],
    results: (await list(url, 'results', { playbook: m.pb.id })).results[0],
    files: (await list(url, 'files', { playbook: m.pb.id })).results[0],
    records: (await list(url, 'records', { playbook: m.pb.id })).results[0],
    labels: (await list(url, 'labels', { name: m.label.name })).results[0],
  };
  for (const [resource, row] of Object.entries(rows)) {
    const detail = await get(url, `/api/v1/${resource}/${row.id}`);
    t.is(row.created, detail.created, `${resource} row created`);
    t.is(row.updated, detail.updated, `${resource} row updated`);
  }
  t.deepEqual(rows.results.delegated_to, [m.host2.id], 'result row delegated_to');
  // the detail shows delegates as it shows `host` (ARA's DetailedResultSerializer: SimpleHostSerializer(many=True))
  const resultDetail = await get(url, `/api/v1/results/${rows.results.id}`);
  t.is(resultDetail.delegated_to.length, 1);
  t.deepEqual(Object.keys(resultDetail.delegated_to[0]).sort(), Object.keys(resultDetail.host).sort(), 'a delegate has the keys of the result\'s host');
  t.like(resultDetail.delegated_to[0], { id: m.host2.id, name: m.host2.name });
  const plain = await createResult(url, { playbook: m.pb.id, play: m.play.id, task: m.task.id, host: m.host2.id });
  const plainRow = (await list(url, 'results', { host: m.host2.id })).results[0];
  t.is(plainRow.id, plain.id);
  t.true(Array.isArray(plainRow.delegated_to), 'delegated_to present even when not sent');
  t.deepEqual(plainRow.delegated_to, []);
});

test('compat on: the ara CLI default orders and filters work', async (t) => {
  const url = on.url;
  const a = await build(url, { controller: uniq('ctl'), user: 'bob' });
  const b = await build(url, { controller: a.pb.controller, user: 'bob', runner_version: '2.16.1' });
  for (const order of ['-started', '-updated', '-id', 'started']) {
    const r = await api(url, 'GET', `/api/v1/playbooks?controller=${encodeURIComponent(a.pb.controller)}&order=${order}&limit=200`);
    t.is(r.status, 200, order);
    t.is(r.body.count, 2, order);
  }
  t.deepEqual((await list(url, 'playbooks', { controller: a.pb.controller, order: '-started' })).results.map((p: Json) => p.id), [b.pb.id, a.pb.id]);
  t.deepEqual((await list(url, 'playbooks', { controller: a.pb.controller, ansible_version: '2.16.1' })).results.map((p: Json) => p.id), [b.pb.id]);
  t.deepEqual((await list(url, 'results', { playbook: b.pb.id, order: '-updated' })).results.map((r: Json) => r.id), [b.result.id]);
});

test('compat off: no ansible_version/controller/user, no created/updated in rows, no delegated_to; §2 keys exactly', async (t) => {
  const url = off.url;
  const m = await build(url);
  t.deepEqual(Object.keys(m.pb), WRITE.playbook);
  const detail = await get(url, `/api/v1/playbooks/${m.pb.id}`);
  t.deepEqual(Object.keys(detail), DETAIL.playbook);
  for (const k of ['ansible_version', 'controller', 'user']) t.false(k in detail, k);
  const nested = (await get(url, `/api/v1/results/${m.result.id}`)).playbook;
  for (const k of ['ansible_version', 'controller', 'user']) t.false(k in nested, `nested ${k}`);
  t.deepEqual(Object.keys(m.result), WRITE.result, 'result write response has no delegated_to');
  const rows: Record<string, Json> = {
    playbook: (await list(url, 'playbooks', { path: m.pb.path })).results[0],
    play: (await list(url, 'plays', { playbook: m.pb.id })).results[0],
    task: (await list(url, 'tasks', { playbook: m.pb.id })).results[0],
    result: (await list(url, 'results', { playbook: m.pb.id })).results[0],
    file: (await list(url, 'files', { playbook: m.pb.id })).results[0],
    record: (await list(url, 'records', { playbook: m.pb.id })).results[0],
  };
  for (const [type, row] of Object.entries(rows)) t.deepEqual(Object.keys(row), ROW[type], `${type} row`);
  // controller/user/delegated_to sent with the mode off are accepted (the ARA callback sends them)
  const replaced = await put(url, `/api/v1/playbooks/${m.pb.id}`, { path: m.pb.path, runner_version: '2', controller: 'c', user: 'u' });
  t.deepEqual(Object.keys(replaced), WRITE.playbook);
});

test('result delegated_to is a set, as ARA\'s many-to-many field: a host sent twice is kept once (POST, PATCH, PUT)', async (t) => {
  // The stock callback sends a looped task's delegates once per item of every host so far (its
  // delegation cache is per task), e.g. [h2, h2, h3]; ARA's server stores each host once.
  const url = on.url;
  const m = await build(url);
  const refs = { playbook: m.pb.id, play: m.play.id, task: m.task.id, host: m.host.id };
  const twice = [m.host2.id, m.host2.id, m.host.id, m.host.id];
  const posted = await createResult(url, refs, { delegated_to: twice });
  t.deepEqual(posted.delegated_to, [m.host2.id, m.host.id], 'POST response');
  t.deepEqual((await list(url, 'results', { task: m.task.id })).results.find((r: Json) => r.id === posted.id).delegated_to,
    [m.host2.id, m.host.id], 'list row');
  // ids as strings and numbers (the slow path of validation) are one id too
  const mixed = await createResult(url, refs, { delegated_to: [String(m.host.id), m.host.id] });
  t.deepEqual(mixed.delegated_to, [m.host.id], 'POST with "id" and id');
  t.deepEqual((await patch(url, `/api/v1/results/${mixed.id}`, { delegated_to: twice })).delegated_to, [m.host2.id, m.host.id], 'PATCH');
  t.deepEqual((await put(url, `/api/v1/results/${mixed.id}`, { ...refs, delegated_to: [m.host.id, m.host.id] })).delegated_to, [m.host.id], 'PUT');
  t.deepEqual((await get(url, `/api/v1/results/${mixed.id}`)).delegated_to.map((h: Json) => h.id), [m.host.id], 'detail (host objects)');
});

test('compat on vs off: controller and user are stored either way (the mode only changes representations)', async (t) => {
  // written with the mode off, the values are not shown; the filter still works on them
  const url = off.url;
  const ctl = uniq('ctl');
  const pb = await createPlaybook(url, { controller: ctl, user: 'carol' });
  t.deepEqual((await list(url, 'playbooks', { controller: ctl })).results.map((p: Json) => p.id), [pb.id]);
});

/** A result row without the keys ARA's dialect adds: the live stream keeps §2's shapes in every mode. */
function withoutDialect(row: Json): Json {
  const { delegated_to: _d, created: _c, updated: _u, ...plain } = row;
  return plain;
}

test('the live stream sends each row as its §2 list row, in both modes, live and when replayed', async (t) => {
  for (const [mode, lb] of [['compat on', on], ['compat off', off]] as const) {
    const watcher = await openSse(lb.url);
    try {
      const [hello] = await watcher.waitFor(1);
      const m = await build(lb.url);
      // a failed result with ignore_errors (shown "ignored") that has ended: every derived field of a result row
      const ignored = await createResult(lb.url, { playbook: m.pb.id, play: m.play.id, task: m.task.id, host: m.host2.id },
        { status: 'failed', ignore_errors: true, changed: true, started: '2026-11-24T07:00:00.123456Z', ended: '2026-11-24T07:01:02.5Z', delegated_to: [m.host.id] });
      const last = (ms: StreamMessage[]) => ms.some((x) => x.data.type === 'result' && x.data.id === ignored.id);
      await watcher.waitFor(last);
      const replayed = await openSse(lb.url, `?since=${hello!.data.cursor}`);
      try {
        await replayed.waitFor(last);
        const rows = (await list(lb.url, 'results', { playbook: m.pb.id })).results as Json[];
        t.is(rows.length, 2);
        for (const row of rows) {
          for (const [how, client] of [['live', watcher], ['replayed', replayed]] as const) {
            const sent = client.messages.find((x) => x.data.type === 'result' && x.data.id === row.id);
            t.deepEqual(sent?.data.row, mode === 'compat on' ? withoutDialect(row) : row, `${mode}, ${how}: result ${row.id} is its list row`);
          }
        }
        t.is(rows.find((r) => r.id === ignored.id)!.status, 'ignored');
        t.is('delegated_to' in rows[0]!, mode === 'compat on');
        const host = (await list(lb.url, 'hosts', { playbook: m.pb.id })).results.find((h: Json) => h.id === m.host.id);
        const hostSent = watcher.messages.filter((x) => x.data.type === 'host' && x.data.id === m.host.id).at(-1);
        t.deepEqual(hostSent?.data.row, host, `${mode}: the host's last change is its list row`);
      } finally { replayed.close(); }
    } finally { watcher.close(); }
  }
});
