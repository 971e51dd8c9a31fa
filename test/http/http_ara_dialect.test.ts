// docs/ara-dialect.md: LOGBOOK_ARA_COMPAT=auto (the default) answers ARA's http
// client (User-Agent ara-http-client_<version>) in ARA's dialect and every other
// request in §2's shapes; true/false force it either way.
import test from 'ava';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import {
  SERVER_ENV, call, createFile, createHost, createPlay, createPlaybook, createResult, createTask, type Json,
} from '../helpers/fixtures.js';
import { ROW } from '../helpers/shapes.js';

const ARA = { 'user-agent': 'ara-http-client_1.7.4' };

let auto: Logbook;
let off: Logbook;
test.before(async () => {
  [auto, off] = await Promise.all([
    startLogbook({ env: SERVER_ENV, startTimeoutMs: 120_000 }),
    startLogbook({ env: { ...SERVER_ENV, LOGBOOK_ARA_COMPAT: 'false' }, startTimeoutMs: 120_000 }),
  ]);
});
test.after.always(async () => { await Promise.all([auto?.stop(), off?.stop()]); });

async function run(url: string): Promise<{ pb: Json; task: Json; result: Json }> {
  const pb = await createPlaybook(url, { runner_version: '2.15.13', controller: 'ctl', user: 'alice' });
  const file = await createFile(url, pb.id);
  const play = await createPlay(url, pb.id);
  const task = await createTask(url, { playbook: pb.id, play: play.id, file: file.id });
  const host = await createHost(url, pb.id);
  const result = await createResult(url, { playbook: pb.id, play: play.id, task: task.id, host: host.id });
  return { pb, task, result };
}

test('auto: the same playbook is ARA-shaped for ARA\'s client and §2-shaped for everyone else', async (t) => {
  const { pb, task, result } = await run(auto.url);
  t.false('ansible_version' in pb, 'a write from a client that is not ARA\'s gets §2');
  const plain = await call(auto.url, 'GET', `/api/v1/playbooks?path=${encodeURIComponent(pb.path)}`, undefined, 200);
  const ara = await call(auto.url, 'GET', `/api/v1/playbooks?path=${encodeURIComponent(pb.path)}`, undefined, 200, ARA);
  t.deepEqual(Object.keys(plain.body.results[0]), ROW.playbook);
  t.is(ara.body.results[0].ansible_version, '2.15.13');
  t.is(ara.body.results[0].controller, 'ctl');
  t.is(ara.body.results[0].user, 'alice');
  for (const r of [plain, ara]) t.is(r.headers.get('vary'), 'Accept, User-Agent', 'caches must key on the User-Agent');
  const taskAra = (await call(auto.url, 'GET', `/api/v1/tasks/${task.id}`, undefined, 200, ARA)).body;
  t.true('uuid' in taskAra);
  const taskPlain = (await call(auto.url, 'GET', `/api/v1/tasks/${task.id}`, undefined, 200)).body;
  t.false('uuid' in taskPlain);
  const rows = (await call(auto.url, 'GET', `/api/v1/results?playbook=${pb.id}`, undefined, 200, ARA)).body.results;
  t.deepEqual(rows[0].delegated_to, []);
  t.is(rows[0].id, result.id);
  // a write from ARA's client is answered in its dialect
  const created = (await call(auto.url, 'POST', '/api/v1/playbooks', { path: '/x.yml', ansible_version: '2.16.1' }, 201, ARA)).body;
  t.is(created.ansible_version, '2.16.1');
  t.true('created' in created && 'controller' in created);
  const index = (await call(auto.url, 'GET', '/api/', undefined, 200, ARA)).body;
  t.is(index.kind, 'ara');
  t.is((await call(auto.url, 'GET', '/api/', undefined, 200)).body.kind, 'logbook');
});

test('false: ARA\'s client gets §2 shapes too, and no Vary on the User-Agent', async (t) => {
  const { pb } = await run(off.url);
  const r = await call(off.url, 'GET', `/api/v1/playbooks/${pb.id}`, undefined, 200, ARA);
  t.false('ansible_version' in r.body);
  t.is(r.headers.get('vary'), 'Accept');
  t.is((await api(off.url, 'GET', '/api/', undefined, ARA)).body.kind, 'logbook');
});

test('the old boolean values and a wrong one', async (t) => {
  const on = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_ARA_COMPAT: '1' }, startTimeoutMs: 120_000 });
  try {
    const pb = await createPlaybook(on.url, { runner_version: '2.15.13' });
    t.is(pb.ansible_version, '2.15.13', 'true (1): every request gets the dialect');
    const r = await api(on.url, 'GET', `/api/v1/playbooks/${pb.id}`);
    t.is(r.headers.get('vary'), 'Accept');
  } finally { await on.stop(); }
  await t.throwsAsync(startLogbook({ env: { ...SERVER_ENV, LOGBOOK_ARA_COMPAT: 'sometimes' } }));
});

test('playbook client_version and python_version: stored, filtered, shown in the dialect, kept across a restart', async (t) => {
  let lb = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_SNAPSHOT_EVERY: '3' }, keepData: true, startTimeoutMs: 120_000 });
  try {
    const body = { path: '/v.yml', ansible_version: '2.16.1', client_version: '1.7.4', python_version: '3.11.2', status: 'running' };
    const pb = (await call(lb.url, 'POST', '/api/v1/playbooks', body, 201, ARA)).body;
    t.is(pb.client_version, '1.7.4');
    t.is(pb.python_version, '3.11.2');
    t.is(typeof pb.server_version, 'string');
    // several more writes: the shard snapshots (LOGBOOK_SNAPSHOT_EVERY) and journals after it
    for (let i = 0; i < 4; i++) await createPlaybook(lb.url);
    const late = (await call(lb.url, 'POST', '/api/v1/playbooks', { ...body, client_version: '1.8.0' }, 201, ARA)).body;
    await lb.stop();
    lb = await startLogbook({ env: SERVER_ENV, dataDir: lb.dataDir, keepData: true, startTimeoutMs: 120_000 });
    for (const [id, v] of [[pb.id, '1.7.4'], [late.id, '1.8.0']] as const) {
      const back = (await call(lb.url, 'GET', `/api/v1/playbooks/${id}`, undefined, 200, ARA)).body;
      t.is(back.client_version, v);
      t.is(back.python_version, '3.11.2');
    }
    const filtered = (await call(lb.url, 'GET', '/api/v1/playbooks?client_version=1.8', undefined, 200, ARA)).body;
    t.deepEqual(filtered.results.map((p: Json) => p.id), [late.id]);
    const byPython = (await call(lb.url, 'GET', '/api/v1/playbooks?python_version=3.11', undefined, 200)).body;
    t.deepEqual(byPython.results.map((p: Json) => p.id), [pb.id, late.id]);
  } finally { await lb.stop(); }
});

test('task warnings, deprecations and exceptions: [] by default, PATCHed as ARA\'s newest callback does, shown in the dialect only', async (t) => {
  const { task } = await run(auto.url);
  const before = (await call(auto.url, 'GET', `/api/v1/tasks/${task.id}`, undefined, 200, ARA)).body;
  t.deepEqual([before.warnings, before.deprecations, before.exceptions], [[], [], []]);
  const warnings = [{ msg: 'a warning' }];
  const patched = (await call(auto.url, 'PATCH', `/api/v1/tasks/${task.id}`, { warnings, exceptions: ['boom'] }, 200, ARA)).body;
  t.deepEqual(patched.warnings, warnings);
  t.deepEqual(patched.exceptions, ['boom']);
  const row = (await call(auto.url, 'GET', `/api/v1/tasks?playbook=${task.playbook}`, undefined, 200, ARA)).body.results[0];
  t.deepEqual([row.warnings, row.deprecations, row.exceptions], [warnings, [], ['boom']]);
  const plain = (await call(auto.url, 'GET', `/api/v1/tasks/${task.id}`, undefined, 200)).body;
  t.false('warnings' in plain);
});
