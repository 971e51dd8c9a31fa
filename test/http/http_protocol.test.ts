// SPEC.md §1 and the seed: Content-Type, Vary and Allow on 2xx and 4xx, HEAD,
// OPTIONS bodies, /api/ and /api/v1/ bodies, trailing-slash equivalence, 204
// on DELETE, /healthz.
import test, { type ExecutionContext } from 'ava';
import { api, type Logbook } from '../helpers/server.js';
import { createLabel, createPlaybook, createTree, get, uniq, serveForFile } from '../helpers/fixtures.js';
import { DISPLAY, PLURAL } from '../helpers/shapes.js';

let lb: Logbook;
let url: string;
serveForFile((server) => { lb = server; url = server.url; });

const ALLOW_LIST = 'GET, POST, HEAD, OPTIONS';
const ALLOW_DETAIL = 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS';
const ALLOW_INDEX = 'GET, HEAD, OPTIONS';

function jsonHeaders(t: ExecutionContext, r: { headers: Headers }, allow: string, what: string) {
  t.is(r.headers.get('content-type'), 'application/json', `${what}: Content-Type`);
  t.regex(r.headers.get('vary') ?? '', /(^|,\s*)Accept(\s*,|$)/, `${what}: Vary: Accept`);
  t.is(r.headers.get('allow'), allow, `${what}: Allow`);
}

test('Content-Type, Vary: Accept and Allow on 2xx and 4xx responses of every path kind', async (t) => {
  const tree = await createTree(url);
  const cases: Array<[string, string, unknown, number, string]> = [
    ['GET', '/api/', undefined, 200, ALLOW_INDEX],
    ['GET', '/api/v1/', undefined, 200, ALLOW_INDEX],
    ['GET', '/api/v1/playbooks', undefined, 200, ALLOW_LIST],
    ['GET', `/api/v1/results/${tree.result}`, undefined, 200, ALLOW_DETAIL],
    ['GET', `/api/v1/hosts/${tree.host}`, undefined, 200, ALLOW_DETAIL],
    ['GET', '/api/v1/files', undefined, 200, ALLOW_LIST],
    ['POST', '/api/v1/labels', { name: uniq('hdr') }, 201, ALLOW_LIST],
    ['PATCH', `/api/v1/plays/${tree.play}`, { name: 'p' }, 200, ALLOW_DETAIL],
    ['PUT', `/api/v1/plays/${tree.play}`, { uuid: '6f1d0000-0000-4000-8000-000000000001', playbook: tree.playbook }, 200, ALLOW_DETAIL],
    ['POST', '/api/v1/labels', {}, 400, ALLOW_LIST],
    ['GET', '/api/v1/tasks?order=nope', undefined, 400, ALLOW_LIST],
    ['PATCH', `/api/v1/tasks/${tree.task}`, { lineno: 'x' }, 400, ALLOW_DETAIL],
    ['GET', '/api/v1/records/999999', undefined, 404, ALLOW_DETAIL],
    ['DELETE', '/api/v1/records', undefined, 405, ALLOW_LIST],
    ['POST', '/api/v1/', { a: 1 }, 405, ALLOW_INDEX],
    ['OPTIONS', '/api/v1/results', undefined, 200, ALLOW_LIST],
    ['OPTIONS', `/api/v1/results/${tree.result}`, undefined, 200, ALLOW_DETAIL],
  ];
  for (const [method, path, body, status, allow] of cases) {
    const r = await api(url, method, path, body);
    t.is(r.status, status, `${method} ${path} (${r.text.slice(0, 200)})`);
    jsonHeaders(t, r, allow, `${method} ${path}`);
  }
});

test('DELETE → 204 with an empty body and the Allow header', async (t) => {
  const tree = await createTree(url);
  for (const [resource, id] of [['results', tree.result], ['hosts', tree.host], ['playbooks', tree.playbook]] as const) {
    const r = await api(url, 'DELETE', `/api/v1/${resource}/${id}`);
    t.is(r.status, 204, resource);
    t.is(r.text, '', resource);
    t.is(r.headers.get('allow'), ALLOW_DETAIL, `${resource}: Allow`);
    t.true((r.headers.get('content-length') ?? '0') === '0', 'no body length');
  }
});

test('HEAD = GET status and headers without a body (list, detail, index, 404)', async (t) => {
  const pb = await createPlaybook(url, { labels: [uniq('head')] });
  for (const path of [`/api/v1/playbooks/${pb.id}`, '/api/', '/api/v1/', `/api/v1/playbooks?path=${encodeURIComponent(pb.path)}`, '/api/v1/plays/999999', '/api/v1/playbooks?limit=0']) {
    const g = await api(url, 'GET', path);
    const h = await api(url, 'HEAD', path);
    t.is(h.status, g.status, `${path}: status`);
    t.is(h.text, '', `${path}: no body`);
    for (const name of ['content-type', 'vary', 'allow', 'content-length']) {
      t.is(h.headers.get(name), g.headers.get(name), `${path}: ${name}`);
    }
    t.is(Number(g.headers.get('content-length')), Buffer.byteLength(g.text), `${path}: GET content-length matches`);
  }
});

test('OPTIONS → 200 with name/renders/parses for every list and detail path', async (t) => {
  const tree = await createTree(url);
  const label = await createLabel(url);
  const detailIds: Record<string, number> = {
    label: label.id, playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host, result: tree.result, file: tree.file, record: 1,
  };
  for (const [type, plural] of Object.entries(PLURAL)) {
    const l = await api(url, 'OPTIONS', `/api/v1/${plural}`);
    t.is(l.status, 200);
    t.is(l.text, JSON.stringify({ name: `${DISPLAY[type]} List`, renders: ['application/json'], parses: ['application/json'] }), `${plural} list OPTIONS`);
    const d = await api(url, 'OPTIONS', `/api/v1/${plural}/${detailIds[type]}`);
    t.is(d.status, 200);
    t.is(d.text, JSON.stringify({ name: `${DISPLAY[type]} Instance`, renders: ['application/json'], parses: ['application/json'] }), `${plural} detail OPTIONS`);
  }
  const missing = await api(url, 'OPTIONS', '/api/v1/playbooks/987654321');
  t.is(missing.status, 200, 'OPTIONS on a missing id is still 200');
  t.is(missing.body.name, 'Playbook Instance');
  const index = await api(url, 'OPTIONS', '/api/');
  t.is(index.status, 200);
  t.deepEqual(index.body, { name: 'Api Index', renders: ['application/json'], parses: ['application/json'] });
  const root = await api(url, 'OPTIONS', '/api/v1/');
  t.is(root.status, 200);
  t.deepEqual(root.body, { name: 'Api Root', renders: ['application/json'], parses: ['application/json'] });
});

test('GET /api/ and GET /api/v1/ bodies with absolute URLs', async (t) => {
  const index = await api(url, 'GET', '/api/');
  t.is(index.status, 200);
  t.deepEqual(Object.keys(index.body), ['kind', 'version', 'api']);
  t.is(index.body.kind, 'logbook');
  t.regex(index.body.version, /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/);
  t.deepEqual(index.body.api, [`${url}/api/v1/`]);
  const root = await api(url, 'GET', '/api/v1/');
  t.is(root.status, 200);
  t.deepEqual(Object.keys(root.body), ['labels', 'playbooks', 'plays', 'tasks', 'hosts', 'results', 'files', 'records']);
  for (const [k, v] of Object.entries(root.body)) t.is(v, `${url}/api/v1/${k}`);
  // the listed URLs work
  for (const v of Object.values(root.body)) t.is((await api(url, 'GET', String(v).slice(url.length))).status, 200);
});

test('a trailing slash is accepted and means the same (lists, details, writes, index)', async (t) => {
  const tree = await createTree(url);
  const pb = await get(url, `/api/v1/playbooks/${tree.playbook}`);
  const slash = await api(url, 'GET', `/api/v1/playbooks/${tree.playbook}/`);
  t.is(slash.status, 200);
  t.deepEqual(slash.body, pb);
  t.is(slash.headers.get('allow'), ALLOW_DETAIL);
  const q = `playbook=${tree.playbook}`;
  t.deepEqual((await api(url, 'GET', `/api/v1/results/?${q}`)).body, (await api(url, 'GET', `/api/v1/results?${q}`)).body);
  const listSlash = await api(url, 'GET', `/api/v1/hosts/?${q}`);
  t.is(listSlash.headers.get('allow'), ALLOW_LIST);
  t.is(listSlash.body.count, 1);
  const created = await api(url, 'POST', '/api/v1/labels/', { name: uniq('slash') });
  t.is(created.status, 201);
  const patched = await api(url, 'PATCH', `/api/v1/labels/${created.body.id}/`, { name: uniq('slash2') });
  t.is(patched.status, 200);
  t.is((await get(url, `/api/v1/labels/${created.body.id}`)).name, patched.body.name);
  t.is((await api(url, 'DELETE', `/api/v1/labels/${created.body.id}/`)).status, 204);
  t.is((await api(url, 'GET', `/api/v1/labels/${created.body.id}`)).status, 404);
  t.deepEqual((await api(url, 'GET', '/api')).body, (await api(url, 'GET', '/api/')).body);
  t.deepEqual((await api(url, 'GET', '/api/v1')).body, (await api(url, 'GET', '/api/v1/')).body);
  // the next link of a list requested with a slash still works
  const page = await api(url, 'GET', '/api/v1/results/?limit=1');
  if (page.body.next) t.is((await api(url, 'GET', new URL(page.body.next).pathname + new URL(page.body.next).search)).status, 200);
});

test('GET /healthz → 200 {"status":"ok", …}', async (t) => {
  const r = await api(url, 'GET', '/healthz');
  t.is(r.status, 200);
  t.is(r.body.status, 'ok'); // more keys (version, shards, uptime) are allowed (operations issue)
  t.regex(r.headers.get('content-type') ?? '', /^application\/json/);
});

test('Accept: application/json and */* get JSON', async (t) => {
  for (const accept of ['application/json', '*/*']) {
    const r = await api(url, 'GET', '/api/v1/labels?limit=1', undefined, { accept });
    t.is(r.status, 200, accept);
    t.is(r.headers.get('content-type'), 'application/json', accept);
  }
});
