// SPEC.md §6 (errors, always JSON): 404, 405, malformed JSON, non-object bodies,
// field errors (every failing field at once), 415, 413 (own small-limit server),
// and "a request that fails validation changes nothing".
import test, { type ExecutionContext } from 'ava';
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import {
  SERVER_ENV, createFile, createPlay, createPlaybook, createTree, get, list, randomUuid, uniq,
} from '../helpers/fixtures.js';
import { PLURAL } from '../helpers/shapes.js';

let lb: Logbook;
let small: Logbook;
let url: string;
const LIMIT = 2048;
test.before(async () => {
  [lb, small] = await Promise.all([
    startLogbook({ env: SERVER_ENV }),
    startLogbook({ env: { ...SERVER_ENV, LOGBOOK_MAX_BODY_BYTES: String(LIMIT) } }),
  ]);
  url = lb.url;
});
test.after.always(async () => { await Promise.all([lb?.stop(), small?.stop()]); });

const NOT_FOUND = { detail: 'Not found.' };
const ALLOW_LIST = 'GET, POST, HEAD, OPTIONS';
const ALLOW_DETAIL = 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS';
const ALLOW_INDEX = 'GET, HEAD, OPTIONS';
const REQUIRED = 'This field is required.';

function isJson(t: ExecutionContext, r: { headers: Headers; text: string }, what: string) {
  t.regex(r.headers.get('content-type') ?? '', /^application\/json\b/, `${what}: JSON content type`);
  t.notThrows(() => JSON.parse(r.text), `${what}: JSON body`);
}

// ---------------------------------------------------------------- 404

test('unknown id → 404 {"detail":"Not found."} with the detail Allow header, for every resource and method', async (t) => {
  for (const resource of Object.values(PLURAL)) {
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
      const r = await api(url, method, `/api/v1/${resource}/987654321`, method === 'PUT' || method === 'PATCH' ? {} : undefined);
      t.is(r.status, 404, `${method} ${resource}`);
      t.deepEqual(r.body, NOT_FOUND, `${method} ${resource}`);
      t.is(r.headers.get('allow'), ALLOW_DETAIL, `${method} ${resource} Allow`);
      isJson(t, r, `${method} ${resource}`);
    }
  }
  // a PUT of malformed JSON to a missing id is still a 404 (lookup before body parsing)
  const r = await api(url, 'PUT', '/api/v1/playbooks/987654321', '{"path":');
  t.is(r.status, 404);
});

test('unknown paths → JSON 404', async (t) => {
  for (const path of ['/nope', '/api/v2/', '/api/v1/nope', '/api/v1/nope/1', '/api/v1/playbooks/abc', '/api/v1/playbooks/0',
    '/api/v1/playbooks/-1', '/api/v1/playbooks/1/plays', '/api/v1/playbooks/1.5', '/uix', '/api/v1/playbooks/99999999999999999999', '/api/v1/playbooks/ 1', '/api/v1/PLAYBOOKS']) {
    const r = await api(url, 'GET', path);
    t.is(r.status, 404, path);
    t.deepEqual(r.body, NOT_FOUND, path);
    isJson(t, r, path);
    // a resource's detail path with an id that cannot be one keeps that path's methods; elsewhere no Allow at all (not an empty one)
    const detailPath = /^\/api\/v1\/playbooks\/[^/]+$/.test(path);
    t.is(r.headers.get('allow'), detailPath ? ALLOW_DETAIL : null, `${path} Allow`);
  }
  const r = await api(url, 'POST', '/api/v1/nope', { a: 1 });
  t.is(r.status, 404);
  t.deepEqual(r.body, NOT_FOUND);
});

// ---------------------------------------------------------------- 405

test('method not allowed → 405 with the exact body and the path\'s Allow header', async (t) => {
  const pb = await createPlaybook(url);
  const cases: Array<[string, string, string]> = [
    ['DELETE', '/api/v1/playbooks', ALLOW_LIST],
    ['PUT', '/api/v1/hosts', ALLOW_LIST],
    ['PATCH', '/api/v1/labels', ALLOW_LIST],
    ['POST', `/api/v1/playbooks/${pb.id}`, ALLOW_DETAIL],
    ['POST', '/api/v1/hosts/1', ALLOW_DETAIL],
    ['POST', '/api/', ALLOW_INDEX],
    ['DELETE', '/api/v1/', ALLOW_INDEX],
    ['PUT', '/api/v1', ALLOW_INDEX],
  ];
  for (const [method, path, allow] of cases) {
    const r = await api(url, method, path, method === 'DELETE' ? undefined : { a: 1 });
    t.is(r.status, 405, `${method} ${path}`);
    t.deepEqual(r.body, { detail: `Method "${method}" not allowed.` }, `${method} ${path}`);
    t.is(r.headers.get('allow'), allow, `${method} ${path} Allow`);
    isJson(t, r, `${method} ${path}`);
  }
  // the method check comes before body parsing
  const r = await api(url, 'POST', `/api/v1/playbooks/${pb.id}`, 'not json', { 'content-type': 'application/xml' });
  t.is(r.status, 405);
});

test('405 for methods fetch cannot send (TRACE) as well', async (t) => {
  const { status, body, allow } = await new Promise<{ status: number; body: string; allow: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: lb.port, path: '/api/v1/playbooks', method: 'TRACE' }, (res) => {
      let s = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { s += d; });
      res.on('end', () => resolve({ status: res.statusCode!, body: s, allow: String(res.headers.allow) }));
    });
    req.on('error', reject);
    req.end();
  });
  t.is(status, 405);
  t.deepEqual(JSON.parse(body), { detail: 'Method "TRACE" not allowed.' });
  t.is(allow, ALLOW_LIST);
});

// ---------------------------------------------------------------- bodies

test('malformed JSON → 400 {"detail":"JSON parse error - …"} on POST, PUT and PATCH', async (t) => {
  const pb = await createPlaybook(url);
  const bodies = ['{"runner_version": ', '{path: 1}', '{"a":1,}', '{"a":1} x', 'nul', '\u00ff'];
  for (const [method, path] of [['POST', '/api/v1/playbooks'], ['PUT', `/api/v1/playbooks/${pb.id}`], ['PATCH', `/api/v1/playbooks/${pb.id}`]]) {
    for (const b of bodies) {
      const r = await api(url, method!, path!, b);
      t.is(r.status, 400, `${method} ${JSON.stringify(b)}`);
      t.true(r.text.startsWith('{"detail":"JSON parse error - '), `${method} ${JSON.stringify(b)}: ${r.text}`);
      t.deepEqual(Object.keys(r.body ?? {}), ['detail']);
      t.true(r.body.detail.length > 'JSON parse error - '.length, 'says what and where');
      isJson(t, r, 'parse error');
    }
  }
  t.is((await get(url, `/api/v1/playbooks/${pb.id}`)).updated, pb.updated, 'nothing changed');
});

test('body that is not an object → 400 non_field_errors', async (t) => {
  const pb = await createPlaybook(url);
  const expected = (kind: string) => ({ non_field_errors: [`Invalid data. Expected a dictionary, but got ${kind}.`] });
  for (const [method, path] of [['POST', '/api/v1/playbooks'], ['PATCH', `/api/v1/playbooks/${pb.id}`], ['PUT', `/api/v1/playbooks/${pb.id}`], ['POST', '/api/v1/labels']]) {
    let r = await api(url, method!, path!, [{ path: '/x', runner_version: '1' }]);
    t.is(r.status, 400, `${method} ${path} list`);
    t.deepEqual(r.body, expected('list'), `${method} ${path} list`);
    r = await api(url, method!, path!, '"a string"');
    t.is(r.status, 400, `${method} ${path} str`);
    t.deepEqual(r.body, expected('str'), `${method} ${path} str`);
    r = await api(url, method!, path!, 'null');
    t.is(r.status, 400, `${method} ${path} null`);
    t.deepEqual(r.body, { non_field_errors: ['No data provided'] }, `${method} ${path} null`);
  }
});

test('an empty body is {}: POST reports every required field, PATCH is a valid no-op', async (t) => {
  const r = await api(url, 'POST', '/api/v1/records', '', { 'content-type': 'application/json' });
  t.is(r.status, 400);
  t.deepEqual(r.body, { key: [REQUIRED], type: [REQUIRED], playbook: [REQUIRED] });
  const pb = await createPlaybook(url);
  const p = await api(url, 'PATCH', `/api/v1/playbooks/${pb.id}`, '', { 'content-type': 'application/json' });
  t.is(p.status, 200);
  t.is(p.body.path, pb.path);
});

test('field errors: every failing field is reported at once', async (t) => {
  const tree = await createTree(url);
  // type errors and missing keys together
  let r = await api(url, 'POST', '/api/v1/tasks', { lineno: 'abc', handler: 'maybe', play: tree.play, playbook: tree.playbook });
  t.is(r.status, 400);
  t.deepEqual(r.body, { action: [REQUIRED], lineno: ['A valid integer is required.'], handler: ['Must be a valid boolean.'], file: [REQUIRED] });
  // playbook: bad status, bad started, bad ended, missing path, labels not a list
  r = await api(url, 'POST', '/api/v1/playbooks', { runner_version: '1', status: 'bogus', started: 'notadate', ended: 'never', labels: 'abc' });
  t.is(r.status, 400);
  t.deepEqual(Object.keys(r.body).sort(), ['ended', 'labels', 'path', 'started', 'status']);
  t.deepEqual(r.body.status, ['"bogus" is not a valid choice.']);
  t.deepEqual(r.body.path, [REQUIRED]);
  t.deepEqual(r.body.started, ['Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].']);
  t.deepEqual(r.body.labels, ['Expected a list of items but got type "str".']);
  // validation errors and a nonexistent FK together
  r = await api(url, 'POST', '/api/v1/plays', { playbook: 987654, uuid: 'nope' });
  t.is(r.status, 400);
  t.deepEqual(r.body, { uuid: ['Must be a valid UUID.'], playbook: ['Invalid pk "987654" - object does not exist.'] });
  r = await api(url, 'POST', '/api/v1/results', {
    playbook: tree.playbook, play: tree.play, task: 987654, host: tree.host, status: 'bogus', changed: 'notbool', content: null,
  });
  t.is(r.status, 400);
  t.deepEqual(Object.keys(r.body).sort(), ['changed', 'content', 'status', 'task']);
  t.deepEqual(r.body.content, ['This field may not be null.']);
  t.deepEqual(r.body.task, ['Invalid pk "987654" - object does not exist.']);
  // two bad FKs at once (one missing, one in another playbook)
  const other = await createPlaybook(url);
  const foreignFile = await createFile(url, other.id);
  r = await api(url, 'POST', '/api/v1/tasks', { action: 'a', lineno: 1, handler: false, play: 987654, file: foreignFile.id, playbook: tree.playbook });
  t.is(r.status, 400);
  t.deepEqual(r.body, {
    play: ['Invalid pk "987654" - object does not exist.'],
    file: [`File ${foreignFile.id} does not belong to playbook ${tree.playbook}.`],
  });
  // the same on PATCH
  r = await api(url, 'PATCH', `/api/v1/tasks/${tree.task}`, { lineno: 1.5, handler: 'x', status: 'nope' });
  t.is(r.status, 400);
  t.deepEqual(Object.keys(r.body).sort(), ['handler', 'lineno', 'status']);
  // null where not allowed
  r = await api(url, 'POST', '/api/v1/playbooks', { path: null, runner_version: null, started: null });
  t.is(r.status, 400);
  t.deepEqual(r.body.path, ['This field may not be null.']);
  t.deepEqual(r.body.runner_version, ['This field may not be null.']);
  t.deepEqual(r.body.started, ['This field may not be null.']);
});

// ---------------------------------------------------------------- 415

test('wrong media type → 415; a JSON type with a charset parameter is fine', async (t) => {
  const body = JSON.stringify({ name: uniq('mt') });
  const r = await api(url, 'POST', '/api/v1/labels', body, { 'content-type': 'text/plain' });
  t.is(r.status, 415);
  t.deepEqual(r.body, { detail: 'Unsupported media type "text/plain" in request.' });
  t.is(r.headers.get('allow'), ALLOW_LIST);
  isJson(t, r, '415');
  const form = await api(url, 'POST', '/api/v1/labels', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' });
  t.is(form.status, 415);
  t.deepEqual(form.body, { detail: 'Unsupported media type "application/x-www-form-urlencoded" in request.' });
  t.is((await list(url, 'labels', { name: JSON.parse(body).name })).count, 0, 'nothing created');
  const pb = await createPlaybook(url);
  const p = await api(url, 'PATCH', `/api/v1/playbooks/${pb.id}`, '{"name":"x"}', { 'content-type': 'text/plain; charset=utf-8' });
  t.is(p.status, 415);
  t.regex(p.body?.detail ?? '', /^Unsupported media type "text\/plain(; ?charset=utf-8)?" in request\.$/);
  const ok = await api(url, 'POST', '/api/v1/labels', body, { 'content-type': 'application/json; charset=utf-8' });
  t.is(ok.status, 201);
  const ok2 = await api(url, 'PATCH', `/api/v1/playbooks/${pb.id}`, '{"name":"y"}', { 'content-type': 'Application/JSON;charset=UTF-8' });
  t.is(ok2.status, 200);
  t.is(ok2.body.name, 'y');
});

// ---------------------------------------------------------------- 413

test('body over max_body_bytes → 413 with the exact body; the server keeps serving', async (t) => {
  const u = small.url;
  const pb = await api(u, 'POST', '/api/v1/playbooks', { path: '/x.yml', runner_version: '1' });
  t.is(pb.status, 201);
  const big = JSON.stringify({ path: '/big.yml', runner_version: '1', name: 'x'.repeat(LIMIT) });
  const r = await api(u, 'POST', '/api/v1/playbooks', big);
  t.is(r.status, 413);
  t.deepEqual(r.body, { detail: `Request body exceeds ${LIMIT} bytes.` });
  isJson(t, r, '413');
  // streamed without a Content-Length (chunked)
  const chunks = [big.slice(0, 1000), big.slice(1000)];
  const streamed = await fetch(`${u}/api/v1/playbooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: new ReadableStream({
      start(controller) { for (const c of chunks) controller.enqueue(new TextEncoder().encode(c)); controller.close(); },
    }),
    duplex: 'half',
  } as RequestInit).then(async (res) => ({ status: res.status, body: await res.json().catch(() => null) }), (err) => ({ status: -1, body: String(err) }));
  t.is(streamed.status, 413, `chunked: ${JSON.stringify(streamed.body)}`);
  // a body just under the limit is fine (multi-byte characters count as bytes)
  const fits = JSON.stringify({ path: '/fits.yml', runner_version: '1', name: 'é'.repeat(200), arguments: { pad: 'é'.repeat(600) } });
  t.true(Buffer.byteLength(fits) < LIMIT);
  t.is((await api(u, 'POST', '/api/v1/playbooks', fits)).status, 201);
  const overByBytes = JSON.stringify({ path: '/b.yml', runner_version: '1', name: 'é'.repeat(LIMIT / 2) });
  t.true(overByBytes.length < LIMIT + 100 && Buffer.byteLength(overByBytes) > LIMIT);
  t.is((await api(u, 'POST', '/api/v1/playbooks', overByBytes)).status, 413, 'limit counts bytes, not characters');
  // the boundary: exactly LIMIT bytes is accepted, LIMIT + 1 is not
  const exact = (n: number) => {
    const head = JSON.stringify({ path: '/edge.yml', runner_version: '1', arguments: { pad: '' } });
    return head.replace('"pad":""', `"pad":"${'p'.repeat(n - Buffer.byteLength(head))}"`);
  };
  t.is(Buffer.byteLength(exact(LIMIT)), LIMIT);
  const atLimit = await api(u, 'POST', '/api/v1/playbooks', exact(LIMIT));
  t.is(atLimit.status, 201, `exactly ${LIMIT} bytes: ${atLimit.text.slice(0, 200)}`);
  t.is((await api(u, 'POST', '/api/v1/playbooks', exact(LIMIT + 1))).status, 413, `${LIMIT + 1} bytes`);
  // chunked under the limit is fine
  const okStream = await fetch(`${u}/api/v1/labels`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: new ReadableStream({
      start(controller) { controller.enqueue(new TextEncoder().encode('{"name":')); controller.enqueue(new TextEncoder().encode('"chunked"}')); controller.close(); },
    }),
    duplex: 'half',
  } as RequestInit);
  t.is(okStream.status, 201, 'chunked body under the limit');
  const count = (await api(u, 'GET', '/api/v1/playbooks')).body.count;
  t.is(count, 3, 'the rejected bodies created nothing');
  t.is((await api(u, 'GET', `/api/v1/playbooks/${pb.body.id}`)).status, 200);
});

// ---------------------------------------------------------------- nothing changes

// serial: ids are global, so no concurrent test of this file may take one in between
test.serial('a refused create uses up no id: the next playbook, label and play get the next ids', async (t) => {
  const pb = await createPlaybook(url);
  const label = (await api(url, 'POST', '/api/v1/labels', { name: uniq('ids') })).body;
  const play = (await api(url, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: pb.id })).body;
  const refused = [
    // new label + ended before the (default, now) started: judged on the front before any id is taken
    ['/api/v1/playbooks', { path: '/x.yml', runner_version: '1', labels: [uniq('new')], ended: '2000-01-01T00:00:00Z' }],
    ['/api/v1/playbooks', { path: '/x.yml', runner_version: '1', labels: [uniq('new')], started: '2001-01-01T00:00:00Z', ended: '2000-01-01T00:00:00Z' }],
    ['/api/v1/playbooks', { path: '/x.yml', runner_version: '1', labels: [uniq('new')], status: 'bogus' }],
    ['/api/v1/labels', { name: label.name }],
    ['/api/v1/plays', { uuid: randomUuid(), playbook: pb.id, ended: '2000-01-01T00:00:00Z' }],
  ] as const;
  for (const [path, body] of refused) {
    const r = await api(url, 'POST', path, body);
    t.is(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
  }
  t.is((await createPlaybook(url)).id, pb.id + 1, 'playbook id');
  t.is((await api(url, 'POST', '/api/v1/labels', { name: uniq('ids') })).body.id, label.id + 1, 'label id');
  t.is((await api(url, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: pb.id })).body.id, play.id + 1, 'play id');
});

test('a failed write changes nothing: no playbook, no half-created labels, counters unchanged', async (t) => {
  const label = uniq('half');
  const path = `/fail/${uniq('p')}.yml`;
  let r = await api(url, 'POST', '/api/v1/playbooks', { path, runner_version: '1', labels: [label], status: 'bogus' });
  t.is(r.status, 400);
  t.is((await list(url, 'labels', { name: label })).count, 0, 'label not created by a failed POST');
  t.is((await list(url, 'playbooks', { path })).count, 0);
  const pb = await createPlaybook(url, { labels: [uniq('keep')] });
  r = await api(url, 'PATCH', `/api/v1/playbooks/${pb.id}`, { labels: [label], started: 'yesterday', name: 'changed' });
  t.is(r.status, 400);
  const after = await get(url, `/api/v1/playbooks/${pb.id}`);
  t.deepEqual(after.labels, pb.labels);
  t.is(after.name, pb.name);
  t.is(after.updated, pb.updated);
  t.is((await list(url, 'labels', { name: label })).count, 0, 'label not created by a failed PATCH');
  // a label write rejected on another field of a playbook in a different shard: FK failure also leaves labels alone
  r = await api(url, 'PATCH', `/api/v1/playbooks/${pb.id}`, { labels: [label], ended: '2000-01-01T00:00:00Z', started: '2001-01-01T00:00:00Z' });
  t.is(r.status, 400);
  t.deepEqual(Object.keys(r.body), ['ended']);
  t.is((await list(url, 'labels', { name: label })).count, 0, 'label not created when ended < started');
  t.deepEqual((await get(url, `/api/v1/playbooks/${pb.id}`)).labels, pb.labels);
  // ended earlier than the stored started: only the playbook's shard can tell
  r = await api(url, 'PATCH', `/api/v1/playbooks/${pb.id}`, { labels: [label], ended: '2000-01-01T00:00:00Z' });
  t.is(r.status, 400);
  t.deepEqual(Object.keys(r.body), ['ended']);
  t.is((await list(url, 'labels', { name: label })).count, 0, 'label not created when the shard rejects the write');
  t.deepEqual((await get(url, `/api/v1/playbooks/${pb.id}`)).labels, pb.labels);
  // a write to a missing playbook creates no label either
  r = await api(url, 'PATCH', '/api/v1/playbooks/987654321', { labels: [label] });
  t.is(r.status, 404);
  r = await api(url, 'PUT', '/api/v1/playbooks/987654321', { path: '/x', runner_version: '1', labels: [label] });
  t.is(r.status, 404);
  t.is((await list(url, 'labels', { name: label })).count, 0, 'label not created by a write to a missing playbook');

  const tree = await createTree(url);
  const before = await get(url, `/api/v1/playbooks/${tree.playbook}`);
  const hostBefore = await get(url, `/api/v1/hosts/${tree.host}`);
  const refs = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
  r = await api(url, 'POST', '/api/v1/results', { ...refs, task: 987654, status: 'failed' });
  t.is(r.status, 400);
  r = await api(url, 'POST', '/api/v1/results', { ...refs, status: 'failed', started: '2000-01-01T00:00:00Z', ended: '1999-01-01T00:00:00Z' });
  t.is(r.status, 400);
  r = await api(url, 'POST', '/api/v1/tasks', { action: 'a', lineno: 1, handler: false, play: tree.play, file: 987654, playbook: tree.playbook });
  t.is(r.status, 400);
  r = await api(url, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: tree.playbook, status: 'nope' });
  t.is(r.status, 400);
  r = await api(url, 'POST', '/api/v1/hosts', { name: 'new', playbook: tree.playbook, ok: 'many' });
  t.is(r.status, 400);
  r = await api(url, 'POST', '/api/v1/records', { key: 'k', playbook: tree.playbook });
  t.is(r.status, 400);
  r = await api(url, 'POST', '/api/v1/files', { path: '/f', content: 5, playbook: tree.playbook });
  t.is(r.status, 400);
  const after2 = await get(url, `/api/v1/playbooks/${tree.playbook}`);
  t.deepEqual(after2.items, before.items);
  t.is(after2.updated, before.updated);
  const hostAfter = await get(url, `/api/v1/hosts/${tree.host}`);
  t.deepEqual(hostAfter, hostBefore);
  t.deepEqual((await get(url, `/api/v1/plays/${tree.play}`)).items, { tasks: 1, results: 1 });
  t.deepEqual((await get(url, `/api/v1/tasks/${tree.task}`)).items, { results: 1 });
  for (const resource of ['plays', 'tasks', 'hosts', 'results', 'files', 'records']) {
    t.is((await list(url, resource, { playbook: tree.playbook })).count, resource === 'records' ? 0 : 1, resource);
  }
  const play = await createPlay(url, tree.playbook);
  t.is((await get(url, `/api/v1/playbooks/${tree.playbook}`)).items.plays, 2, `a later write still works (play ${play.id})`);
});

test('errors are JSON for every status the API produces', async (t) => {
  const cases: Array<[string, string, unknown, Record<string, string>, number]> = [
    ['GET', '/api/v1/playbooks/999999', undefined, {}, 404],
    ['GET', '/api/v1/playbooks?limit=0', undefined, {}, 400],
    ['POST', '/api/v1/playbooks', '{', {}, 400],
    ['POST', '/api/v1/playbooks', 'x', { 'content-type': 'text/plain' }, 415],
    ['DELETE', '/api/v1/files', undefined, {}, 405],
  ];
  for (const [method, path, body, headers, status] of cases) {
    const r = await api(url, method, path, body, headers);
    t.is(r.status, status, `${method} ${path}`);
    isJson(t, r, `${method} ${path}`);
    t.is(r.headers.get('vary'), 'Accept, User-Agent', `${method} ${path} Vary`);
  }
});

// ---------------------------------------------------------------- Content-Encoding

test('per-record writes take a gzip body, and refuse another encoding with 415 changing nothing', async (t) => {
  const send = (method: string, path: string, body: Buffer, encoding: string) => fetch(url + path, {
    method, body, headers: { 'Content-Type': 'application/json', 'Content-Encoding': encoding },
  }).then(async (r) => ({ status: r.status, body: await r.json() as Record<string, any> }));
  const created = await send('POST', '/api/v1/labels', gzipSync(JSON.stringify({ name: 'gzipped-label' })), 'gzip');
  t.is(created.status, 201, JSON.stringify(created.body));
  t.is(created.body.name, 'gzipped-label');
  const patched = await send('PATCH', `/api/v1/labels/${created.body.id}`, gzipSync(JSON.stringify({ name: 'gzipped-renamed' })), 'gzip');
  t.is(patched.status, 200, JSON.stringify(patched.body));
  t.is(patched.body.name, 'gzipped-renamed');

  const br = await send('POST', '/api/v1/labels', Buffer.from(JSON.stringify({ name: 'br-label' })), 'br');
  t.is(br.status, 415);
  t.deepEqual(br.body, { detail: 'Unsupported content encoding "br": send identity or gzip.' });
  const bad = await send('POST', '/api/v1/labels', Buffer.from('not gzip'), 'gzip');
  t.is(bad.status, 400);
  t.deepEqual(bad.body, { detail: 'The body is not valid gzip.' });
  t.is((await api(url, 'GET', '/api/v1/labels?name=br-label')).body.count, 0, 'nothing created');
});
