// SPEC.md §5 (lists): pagination (limit/offset validation, max_page_size clamp,
// next/previous links), default order across shards, every `order` key asc/desc
// with ties by ascending id, and every filter per resource.
import test, { type ExecutionContext } from 'ava';
import { request } from 'node:http';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import {
  SERVER_ENV, SHARDS, createFile, createHost, createLabel, createPlay, createPlaybook, createPlaybookOnShard, createRecord, createResult,
  createTask, createTree, fromMicros, get, ids, list, micros, patch, pool, post, queryString, sleep, uniq, type Json, serveForFile} from '../helpers/fixtures.js';

let lb: Logbook;
let url: string;
serveForFile((server) => { lb = server; url = server.url; });

type Query = Record<string, string | number | boolean | Array<string | number>>;

async function idsOf(resource: string, query: Query | string): Promise<number[]> {
  return ids(await list(url, resource, query));
}

async function expect400(t: ExecutionContext, path: string, expected: Json, what = path) {
  const r = await api(url, 'GET', path);
  t.is(r.status, 400, `${what}: status (${r.text})`);
  t.deepEqual(r.body, expected, `${what}: body`);
}

async function expect400Keys(t: ExecutionContext, path: string, keys: string[], what = path) {
  const r = await api(url, 'GET', path);
  t.is(r.status, 400, `${what}: status (${r.text})`);
  t.deepEqual(Object.keys(r.body ?? {}).sort(), [...keys].sort(), `${what}: error keys (${r.text})`);
}

const T0 = '2030-01-01T00:00:00';
/** A timestamp `s` seconds after 2030-01-01T00:00:00Z. */
const at = (s: number) => `${T0.slice(0, 17)}${String(s).padStart(2, '0')}.000000Z`;

// ---------------------------------------------------------------- pagination

test('count and default ascending-id order across shards, for every resource', async (t) => {
  const tok = uniq('xs');
  const pbs: Json[] = [];
  for (let i = 0; i < 6; i++) pbs.push(await createPlaybookOnShard(url, i % SHARDS, { path: `/srv/${tok}/p${i}.yml`, name: tok }));
  t.deepEqual(new Set(pbs.map((p) => p.id % SHARDS)).size, SHARDS, 'fixture: playbooks on every shard');
  const expectPb = pbs.map((p) => p.id).sort((a, b) => a - b);
  const env = await list(url, 'playbooks', { path: tok });
  t.is(env.count, 6);
  t.deepEqual(ids(env), expectPb);
  t.is(env.next, null);
  t.is(env.previous, null);
  // children in every playbook, created round-robin so ids interleave across shards
  const made: Record<string, number[]> = { hosts: [], plays: [], files: [], records: [], tasks: [], results: [] };
  const trees: Json[] = [];
  for (const pb of pbs) {
    const file = await createFile(url, pb.id, { path: `/srv/${tok}/f-${pb.id}.yml` });
    const play = await createPlay(url, pb.id, { name: `${tok}-play` });
    trees.push({ pb: pb.id, file: file.id, play: play.id });
    made.files!.push(file.id);
    made.plays!.push(play.id);
  }
  for (const tr of trees) {
    const host = await createHost(url, tr.pb, { name: `${tok}-h` });
    const task = await createTask(url, { playbook: tr.pb, play: tr.play, file: tr.file }, { name: `${tok}-task` });
    const result = await createResult(url, { playbook: tr.pb, play: tr.play, task: task.id, host: host.id }, { status: 'ok' });
    const rec = await createRecord(url, tr.pb, { key: tok });
    made.hosts!.push(host.id); made.tasks!.push(task.id); made.results!.push(result.id); made.records!.push(rec.id);
  }
  const queries: Record<string, Query> = {
    hosts: { name: `${tok}-h` }, plays: { name: `${tok}-play` }, files: { path: tok }, records: { key: tok },
    tasks: { name: `${tok}-task` },
  };
  for (const [resource, query] of Object.entries(queries)) {
    const e = await list(url, resource, query);
    t.is(e.count, 6, `${resource} count across shards`);
    t.deepEqual(ids(e), [...made[resource]!].sort((a, b) => a - b), `${resource} ascending id across shards`);
  }
  // results: the global list is in ascending id order and includes ours
  const all = ids(await list(url, 'results', { limit: 1000 }));
  t.deepEqual(all, [...all].sort((a, b) => a - b), 'results ascending id');
  for (const id of made.results!) t.true(all.includes(id));
});

test('walking next links across shards yields every row once, in order (default and -id and by name)', async (t) => {
  const tok = uniq('walk');
  const names = ['m', 'c', 'x', 'a', 'q', 'c', 'b'];
  const pbs: Json[] = [];
  for (const n of names) pbs.push(await createPlaybookOnShard(url, (pbs.length * 2) % SHARDS, { path: `/w/${tok}/${pbs.length}.yml`, name: `${n}-${tok}` }));
  t.is(new Set(pbs.map((p) => p.id % SHARDS)).size, SHARDS, 'fixture: playbooks on every shard');
  const byId = pbs.map((p) => p.id).sort((a, b) => a - b);
  const byName = [...pbs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id)).map((p) => p.id);
  for (const [order, expected] of [[undefined, byId], ['-id', [...byId].reverse()], ['name', byName]] as const) {
    const seen: number[] = [];
    let next: string | null = `${url}/api/v1/playbooks${queryString({ path: tok, limit: 2, ...(order ? { order } : {}) })}`;
    let pages = 0;
    while (next) {
      t.true(next.startsWith(`${url}/api/v1/playbooks?`), `next is absolute: ${next}`);
      const r = await api(url, 'GET', next.slice(url.length));
      t.is(r.status, 200);
      t.is(r.body.count, names.length);
      seen.push(...ids(r.body));
      next = r.body.next;
      if (++pages > 10) break;
    }
    t.is(pages, 4, `order ${order}: pages`);
    t.deepEqual(seen, [...expected], `order ${order}: rows across pages`);
  }
});

function parts(link: string | null) {
  if (link === null) return null;
  const u = new URL(link);
  return { base: `${u.protocol}//${u.host}${u.pathname}`, params: [...u.searchParams].map(([k, v]) => `${k}=${v}`).sort() };
}

test('next/previous links: exact offsets, offset omitted when offset − limit <= 0, other parameters kept', async (t) => {
  const tok = uniq('links');
  for (let i = 0; i < 5; i++) await createPlaybook(url, { path: `/l/${tok}/${i}.yml`, status: i % 2 ? 'running' : 'completed' });
  const base = `${url}/api/v1/playbooks`;
  const page = async (q: string) => {
    const r = await api(url, 'GET', `/api/v1/playbooks?${q}`);
    t.is(r.status, 200, q);
    return r.body;
  };
  const link = (q: string) => parts(`${base}?${q}`);
  const same = (got: string | null, want: string | null, what: string) => {
    t.deepEqual(parts(got), want === null ? null : link(want), `${what}: ${got}`);
  };
  let p = await page(`path=${tok}&limit=2`);
  t.is(p.results.length, 2);
  same(p.next, `limit=2&offset=2&path=${tok}`, 'first next');
  same(p.previous, null, 'first previous');
  p = await page(`path=${tok}&limit=2&offset=2`);
  same(p.next, `limit=2&offset=4&path=${tok}`, 'middle next');
  same(p.previous, `limit=2&path=${tok}`, 'middle previous drops offset');
  p = await page(`path=${tok}&limit=2&offset=4`);
  t.is(p.results.length, 1);
  same(p.next, null, 'last next');
  same(p.previous, `limit=2&offset=2&path=${tok}`, 'last previous');
  p = await page(`path=${tok}&limit=2&offset=3`);
  same(p.next, null, 'offset 3: 3+2 >= 5');
  same(p.previous, `limit=2&offset=1&path=${tok}`, 'offset 3 previous');
  p = await page(`path=${tok}&limit=2&offset=1`);
  same(p.next, `limit=2&offset=3&path=${tok}`, 'offset 1 next');
  same(p.previous, `limit=2&path=${tok}`, 'offset 1 previous: 1-2 < 0 drops offset');
  p = await page(`path=${tok}&offset=2`);
  t.is(p.results.length, 3);
  same(p.next, null, 'default limit next');
  same(p.previous, `limit=100&path=${tok}`, 'default limit written explicitly');
  p = await page(`path=${tok}&limit=2&offset=10`);
  t.deepEqual(p.results, []);
  t.is(p.count, 5);
  same(p.next, null, 'beyond the end');
  same(p.previous, `limit=2&offset=8&path=${tok}`, 'beyond the end previous');
  p = await page(`path=${tok}&limit=5`);
  same(p.next, null, 'exactly one page');
  // every other parameter (unknown, repeated, empty) is kept
  p = await page(`status=running&status=completed&path=${tok}&format=json&limit=1&offset=1`);
  t.is(p.count, 5);
  same(p.next, `format=json&limit=1&offset=2&path=${tok}&status=running&status=completed`, 'params kept');
  same(p.previous, `format=json&limit=1&path=${tok}&status=running&status=completed`, 'params kept (previous)');
  // X-Forwarded-* are ignored unless trust_proxy is on
  const fwd = await api(url, 'GET', `/api/v1/playbooks?path=${tok}&limit=2`, undefined, { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' });
  t.true(fwd.body.next.startsWith(`${base}?`), fwd.body.next);
});

test('next links are built from the request Host header', async (t) => {
  const tok = uniq('host');
  for (let i = 0; i < 3; i++) await createPlaybook(url, { path: `/h/${tok}/${i}.yml` });
  const body = await new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: lb.port, path: `/api/v1/playbooks?path=${tok}&limit=1`, headers: { host: 'logbook.example:8443' } }, (res) => {
      let s = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { s += d; });
      res.on('end', () => resolve(s));
    });
    req.on('error', reject);
    req.end();
  });
  const env = JSON.parse(body);
  t.deepEqual(parts(env.next), parts(`http://logbook.example:8443/api/v1/playbooks?limit=1&offset=1&path=${tok}`));
});

test('with trust_proxy on, links use X-Forwarded-Proto and X-Forwarded-Host', async (t) => {
  const proxied = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_TRUST_PROXY: 'true' } });
  try {
    for (let i = 0; i < 3; i++) await createLabel(proxied.url, `proxy-${i}`);
    const r = await api(proxied.url, 'GET', '/api/v1/labels?limit=1&offset=1', undefined, { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'logbook.example.org' });
    t.is(r.status, 200);
    t.deepEqual(parts(r.body.next), parts('https://logbook.example.org/api/v1/labels?limit=1&offset=2'));
    t.deepEqual(parts(r.body.previous), parts('https://logbook.example.org/api/v1/labels?limit=1'));
    const plain = await api(proxied.url, 'GET', '/api/v1/labels?limit=1');
    t.deepEqual(parts(plain.body.next), parts(`${proxied.url}/api/v1/labels?limit=1&offset=1`), 'without the headers: the Host header');
  } finally {
    await proxied.stop();
  }
});

test('limit and offset that are not non-negative integers (limit ≥ 1) → 400 on that parameter', async (t) => {
  for (const v of ['0', '-1', 'abc', '1.5', '1e2']) await expect400Keys(t, `/api/v1/playbooks?limit=${v}`, ['limit'], `limit=${v}`);
  for (const v of ['-1', 'abc', '1.5']) await expect400Keys(t, `/api/v1/hosts?offset=${v}`, ['offset'], `offset=${v}`);
  await expect400Keys(t, '/api/v1/results?limit=0&offset=-2', ['limit', 'offset'], 'both');
  t.is((await api(url, 'GET', '/api/v1/labels?limit=1&offset=0')).status, 200);
  const far = await api(url, 'GET', '/api/v1/playbooks?offset=100000&limit=99999999999');
  t.is(far.status, 200, `offset at the cap and a huge limit are valid: ${far.text.slice(0, 200)}`);
  t.deepEqual(far.body.results, []);
  // past LIMITS.maxListOffset: 400 on offset, naming the limit and the way out
  const deep = await api(url, 'GET', '/api/v1/playbooks?offset=99999999999999999999&limit=10');
  t.is(deep.status, 400);
  t.deepEqual(Object.keys(deep.body), ['offset']);
  t.regex(deep.body.offset[0], /less than or equal to 100000\..*filters/);
  const none = await api(url, 'GET', '/api/v1/plays?playbook=987654321');
  t.is(none.status, 200);
  t.deepEqual([none.body.count, none.body.results], [0, []]);
});

test('default page size 100 and limit clamped to max_page_size 1000', async (t) => {
  const pb = await createPlaybook(url);
  await pool(Array.from({ length: 1001 }, (_, i) => i), 16, (i) => createRecord(url, pb.id, { key: `k${String(i).padStart(4, '0')}` }));
  const first = await list(url, 'records', { playbook: pb.id });
  t.is(first.count, 1001);
  t.is(first.results.length, 100);
  t.deepEqual(parts(first.next), parts(`${url}/api/v1/records?limit=100&offset=100&playbook=${pb.id}`));
  const big = await list(url, 'records', { playbook: pb.id, limit: 5000 });
  t.is(big.count, 1001);
  t.is(big.results.length, 1000, 'clamped to 1000');
  t.truthy(big.next, 'a next page remains');
  t.is(new URL(big.next).searchParams.get('offset'), '1000');
  const last = await api(url, 'GET', new URL(big.next).pathname + new URL(big.next).search);
  t.is(last.body.results.length, 1);
  t.deepEqual(ids(big).concat(ids(last.body)), [...ids(big), ...ids(last.body)].sort((a, b) => a - b));
});

// ---------------------------------------------------------------- ordering

type Getter = (row: Json) => string | number;

/** Checks `order=key` and `order=-key` against a client-side sort of the same rows (ties by ascending id). */
async function checkOrder(t: ExecutionContext, resource: string, query: Query, key: string, values: Map<number, string | number>, opts: { mustDiffer?: boolean } = {}) {
  const rowIds = [...values.keys()];
  const cmp = (a: number, b: number, dir: 1 | -1) => {
    const va = values.get(a)!;
    const vb = values.get(b)!;
    if (va < vb) return -dir;
    if (va > vb) return dir;
    return a - b;
  };
  const asc = [...rowIds].sort((a, b) => cmp(a, b, 1));
  const desc = [...rowIds].sort((a, b) => cmp(a, b, -1));
  if (opts.mustDiffer !== false) {
    const byId = [...rowIds].sort((a, b) => a - b);
    t.notDeepEqual(asc, byId, `fixture: ${resource} ${key} ascending differs from id order`);
  }
  t.deepEqual(await idsOf(resource, { ...query, order: key }), asc, `${resource} order=${key}`);
  t.deepEqual(await idsOf(resource, { ...query, order: `-${key}` }), desc, `${resource} order=-${key}`);
}

async function valuesOf(resource: string, rowIds: number[], get_: Getter, fromDetail: boolean, query: Query): Promise<Map<number, string | number>> {
  const out = new Map<number, string | number>();
  if (fromDetail) {
    for (const id of rowIds) out.set(id, get_(await get(url, `/api/v1/${resource}/${id}`)));
  } else {
    const rows = (await list(url, resource, query)).results;
    for (const id of rowIds) out.set(id, get_(rows.find((r: Json) => r.id === id)));
  }
  return out;
}

/** started/ended/duration pattern: ties on started (#2,#4), ended (#1,#3 and #2,#4), duration (#2,#4). */
const TIMES = [
  { started: at(3), ended: at(4) }, // 1s
  { started: at(1), ended: at(6) }, // 5s
  { started: at(2), ended: at(4) }, // 2s
  { started: at(1), ended: at(6) }, // 5s
];

async function checkCommonOrders(t: ExecutionContext, resource: string, query: Query, rowIds: number[], timed: boolean) {
  // updated: touch #3 then #1 so the updated order is 2, 4, 3, 1
  await sleep(2);
  await patch(url, `/api/v1/${resource}/${rowIds[2]}`, {});
  await sleep(2);
  await patch(url, `/api/v1/${resource}/${rowIds[0]}`, {});
  const idMap = new Map(rowIds.map((id) => [id, id] as [number, number]));
  await checkOrder(t, resource, query, 'id', idMap, { mustDiffer: false });
  const detail = true;
  await checkOrder(t, resource, query, 'created', await valuesOf(resource, rowIds, (r) => r.created, detail, query), { mustDiffer: false });
  await checkOrder(t, resource, query, 'updated', await valuesOf(resource, rowIds, (r) => r.updated, detail, query));
  if (timed) {
    for (const k of ['started', 'ended', 'duration']) {
      await checkOrder(t, resource, query, k, await valuesOf(resource, rowIds, (r) => r[k], false, query));
    }
  }
}

test('playbooks: every order key asc/desc, ties by ascending id, several keys', async (t) => {
  const tok = uniq('ord');
  const names = ['c', 'a', 'b', 'a'];
  const statuses = ['running', 'completed', 'failed', 'completed'];
  const rows: number[] = [];
  for (let i = 0; i < 4; i++) {
    rows.push((await createPlaybook(url, { path: `/o/${tok}/${i}.yml`, name: `${names[i]}-${tok}`, status: statuses[i], ...TIMES[i] })).id);
  }
  const q = { path: tok };
  await checkCommonOrders(t, 'playbooks', q, rows, true);
  await checkOrder(t, 'playbooks', q, 'name', await valuesOf('playbooks', rows, (r) => r.name, false, q));
  await checkOrder(t, 'playbooks', q, 'status', await valuesOf('playbooks', rows, (r) => r.status, false, q));
  // several keys: status asc, then name desc, then id
  t.deepEqual(await idsOf('playbooks', { ...q, order: 'status,-name' }), [rows[1]!, rows[3]!, rows[2]!, rows[0]!]);
  t.deepEqual(await idsOf('playbooks', { ...q, order: '-duration,-id' }), [rows[3]!, rows[1]!, rows[2]!, rows[0]!]);
  t.deepEqual(await idsOf('playbooks', { ...q, order: 'ended,-started' }), [rows[0]!, rows[2]!, rows[1]!, rows[3]!]);
});

test('plays, tasks and results: order by id, created, updated, started, ended, duration', async (t) => {
  const tok = uniq('ord');
  const pb = (await createPlaybook(url)).id;
  const file = (await createFile(url, pb)).id;
  const holder = (await createPlay(url, pb)).id;
  const host = (await createHost(url, pb)).id;
  const plays: number[] = [];
  const tasks: number[] = [];
  const results: number[] = [];
  for (let i = 0; i < 4; i++) {
    plays.push((await createPlay(url, pb, { name: tok, ...TIMES[i] })).id);
    tasks.push((await createTask(url, { playbook: pb, play: holder, file }, TIMES[i])).id);
  }
  for (let i = 0; i < 4; i++) {
    results.push((await createResult(url, { playbook: pb, play: holder, task: tasks[0]!, host }, TIMES[i])).id);
  }
  await checkCommonOrders(t, 'plays', { playbook: pb, name: tok }, plays, true);
  await checkCommonOrders(t, 'tasks', { play: holder }, tasks, true);
  await checkCommonOrders(t, 'results', { task: tasks[0]! }, results, true);
});

test('hosts: order by id, created, updated, name and every counter', async (t) => {
  const pb = await createPlaybook(url);
  const spec = [
    { name: 'c', changed: 2, failed: 0, ok: 5, skipped: 1, unreachable: 0 },
    { name: 'a', changed: 0, failed: 3, ok: 1, skipped: 1, unreachable: 1 },
    { name: 'b', changed: 1, failed: 3, ok: 9, skipped: 0, unreachable: 0 },
    { name: 'd', changed: 0, failed: 1, ok: 1, skipped: 2, unreachable: 0 },
  ];
  const rows: number[] = [];
  for (const s of spec) rows.push((await createHost(url, pb.id, s)).id);
  const q = { playbook: pb.id };
  await checkCommonOrders(t, 'hosts', q, rows, false);
  for (const k of ['name', 'changed', 'failed', 'ok', 'skipped', 'unreachable']) {
    await checkOrder(t, 'hosts', q, k, await valuesOf('hosts', rows, (r) => r[k], false, q));
  }
});

test('files, records: order by id, created, updated and path / key', async (t) => {
  const pb = await createPlaybook(url);
  const files: number[] = [];
  const records: number[] = [];
  for (const n of ['c', 'a', 'b', 'd']) {
    files.push((await createFile(url, pb.id, { path: `/x/${n}.yml` })).id);
    records.push((await createRecord(url, pb.id, { key: n })).id);
  }
  const q = { playbook: pb.id };
  await checkCommonOrders(t, 'files', q, files, false);
  await checkOrder(t, 'files', q, 'path', await valuesOf('files', files, (r) => r.path, false, q));
  await checkCommonOrders(t, 'records', q, records, false);
  await checkOrder(t, 'records', q, 'key', await valuesOf('records', records, (r) => r.key, false, q));
});

test.serial('labels: order by id, created, updated, name', async (t) => {
  const start = fromMicros(micros((await createLabel(url)).created) + 1n);
  const tok = uniq('lo');
  const rows: number[] = [];
  for (const n of ['c', 'a', 'b', 'd']) rows.push((await createLabel(url, `${n}-${tok}`)).id);
  const q = { created_after: start };
  t.deepEqual(await idsOf('labels', q), rows, 'fixture: only this test\'s labels');
  await checkCommonOrders(t, 'labels', q, rows, false);
  await checkOrder(t, 'labels', q, 'name', await valuesOf('labels', rows, (r) => r.name, false, q));
});

test('unknown order key → 400 with the exact body, per resource', async (t) => {
  const invalid = (k: string) => ({ order: [`Select a valid choice. ${k} is not one of the available choices.`] });
  const cases: Array<[string, string]> = [
    ['playbooks', 'path'], ['playbooks', 'bogus'], ['plays', 'name'], ['tasks', 'name'], ['tasks', 'lineno'],
    ['hosts', 'started'], ['results', 'status'], ['files', 'name'], ['records', 'type'], ['labels', 'started'],
  ];
  for (const [resource, key] of cases) await expect400(t, `/api/v1/${resource}?order=${key}`, invalid(key), `${resource} order=${key}`);
  await expect400(t, '/api/v1/playbooks?order=id,nope', invalid('nope'), 'invalid key in second position');
  await expect400(t, '/api/v1/hosts?order=-name,ID', invalid('ID'), 'keys are case-sensitive');
});

// ---------------------------------------------------------------- date filters

/** Inclusive before/after on `field` for rows whose values increase with the given order. */
async function checkDateFilter(t: ExecutionContext, resource: string, query: Query, field: string, rowIds: number[], values: string[]) {
  const mid = values[1]!;
  const us = micros(mid);
  const minus = fromMicros(us - 1n);
  const plus = fromMicros(us + 1n);
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const pick = (pred: (v: string) => boolean) => sorted(rowIds.filter((_, i) => pred(values[i]!)));
  const f = (v: string) => micros(v);
  t.deepEqual(await idsOf(resource, { ...query, [`${field}_after`]: mid }), pick((v) => f(v) >= us), `${resource} ${field}_after (inclusive)`);
  t.deepEqual(await idsOf(resource, { ...query, [`${field}_before`]: mid }), pick((v) => f(v) <= us), `${resource} ${field}_before (inclusive)`);
  t.deepEqual(await idsOf(resource, { ...query, [`${field}_after`]: plus }), pick((v) => f(v) > us), `${resource} ${field}_after +1µs`);
  t.deepEqual(await idsOf(resource, { ...query, [`${field}_before`]: minus }), pick((v) => f(v) < us), `${resource} ${field}_before -1µs`);
  t.deepEqual(await idsOf(resource, { ...query, [`${field}_after`]: mid, [`${field}_before`]: mid }), pick((v) => f(v) === us), `${resource} ${field} both bounds`);
}

test('created/updated before/after filters are inclusive, for every resource', async (t) => {
  const tok = uniq('dates');
  const pb = await createPlaybook(url);
  const file = await createFile(url, pb.id);
  const play0 = await createPlay(url, pb.id);
  const task0 = await createTask(url, { playbook: pb.id, play: play0.id, file: file.id });
  const host0 = await createHost(url, pb.id);
  const make: Record<string, (i: number) => Promise<Json>> = {
    playbooks: (i) => createPlaybook(url, { path: `/d/${tok}/${i}.yml` }),
    plays: () => createPlay(url, pb.id, { name: tok }),
    tasks: () => createTask(url, { playbook: pb.id, play: play0.id, file: file.id }, { name: tok }),
    hosts: (i) => createHost(url, pb.id, { name: `${tok}-${i}` }),
    results: () => createResult(url, { playbook: pb.id, play: play0.id, task: task0.id, host: host0.id }),
    files: (i) => createFile(url, pb.id, { path: `/d/${tok}/${i}.yml` }),
    records: () => createRecord(url, pb.id),
    labels: (i) => createLabel(url, `${tok}-${i}`),
  };
  const queries: Record<string, Query> = {
    playbooks: { path: tok }, plays: { playbook: pb.id, name: tok }, tasks: { playbook: pb.id, name: tok },
    hosts: { playbook: pb.id, name: tok }, results: { task: task0.id }, files: { playbook: pb.id, path: tok },
    records: { playbook: pb.id }, labels: { name: tok },
  };
  const rows: Record<string, number[]> = {};
  for (let i = 0; i < 3; i++) {
    for (const [resource, mk] of Object.entries(make)) (rows[resource] ??= []).push((await mk(i)).id);
    await sleep(1);
  }
  for (const [resource, q] of Object.entries(queries)) {
    const mine = rows[resource]!;
    t.deepEqual(await idsOf(resource, q), mine, `fixture: ${resource} query selects exactly the rows`);
    const created: string[] = [];
    for (const id of mine) created.push((await get(url, `/api/v1/${resource}/${id}`)).created);
    await checkDateFilter(t, resource, q, 'created', mine, created);
    // touch in reverse order so that the updated order differs from the created order
    for (const id of [...mine].reverse()) { await patch(url, `/api/v1/${resource}/${id}`, {}); await sleep(1); }
    const updated: string[] = [];
    for (const id of mine) updated.push((await get(url, `/api/v1/${resource}/${id}`)).updated);
    await checkDateFilter(t, resource, q, 'updated', mine, updated);
  }
});

test('started/ended before/after filters (inclusive; offsets accepted; null ended never matches)', async (t) => {
  const tok = uniq('se');
  const tree = await createTree(url);
  const mk = {
    playbooks: (i: number, body: Json) => createPlaybook(url, { path: `/se/${tok}/${i}.yml`, ...body }),
    plays: (_: number, body: Json) => createPlay(url, tree.playbook, { name: tok, ...body }),
    tasks: (_: number, body: Json) => createTask(url, { playbook: tree.playbook, play: tree.play, file: tree.file }, { name: tok, ...body }),
    results: (_: number, body: Json) => createResult(url, { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host }, { ...body, status: 'skipped' }),
  };
  const queries: Record<string, Query> = {
    playbooks: { path: tok }, plays: { playbook: tree.playbook, name: tok }, tasks: { playbook: tree.playbook, name: tok },
    results: { task: tree.task, status: 'skipped' },
  };
  const starts = [at(10), at(20), at(30)];
  const ends = [at(40), at(45), at(50)];
  for (const [resource, make] of Object.entries(mk)) {
    const rows: number[] = [];
    for (let i = 0; i < 3; i++) rows.push((await make(i, { started: starts[i], ended: ends[i] })).id);
    const open = (await make(3, { started: at(25) })).id; // still running
    const q = queries[resource]!;
    t.deepEqual(await idsOf(resource, q), [...rows, open], `fixture: ${resource}`);
    await checkDateFilter(t, resource, q, 'started', [...rows, open], [...starts, at(25)]);
    await checkDateFilter(t, resource, q, 'ended', rows, ends);
    t.false((await idsOf(resource, { ...q, ended_before: at(59) })).includes(open), `${resource}: null ended not before`);
    t.false((await idsOf(resource, { ...q, ended_after: at(0) })).includes(open), `${resource}: null ended not after`);
    // the same instant written with an offset, and without an offset (UTC)
    t.deepEqual(await idsOf(resource, { ...q, started_after: '2030-01-01T01:00:20+01:00' }), [rows[1]!, rows[2]!, open].sort((a, b) => a - b), `${resource}: +01:00`);
    t.deepEqual(await idsOf(resource, { ...q, started_before: '2030-01-01T00:00:20' }), [rows[0]!, rows[1]!], `${resource}: naive = UTC`);
  }
});

test('bad filter values → 400 naming each bad parameter', async (t) => {
  await expect400(t, '/api/v1/playbooks?created_after=yesterday', { created_after: ['Enter a valid date/time.'] });
  await expect400(t, '/api/v1/plays?playbook=abc', { playbook: ['Enter a number.'] });
  await expect400(t, '/api/v1/plays?uuid=nope', { uuid: ['Enter a valid UUID.'] });
  await expect400(t, '/api/v1/results?status=bogus', { status: ['Select a valid choice. bogus is not one of the available choices.'] });
  await expect400(t, '/api/v1/playbooks?status=ok', { status: ['Select a valid choice. ok is not one of the available choices.'] });
  await expect400Keys(t, '/api/v1/tasks?handler=maybe', ['handler']);
  await expect400Keys(t, '/api/v1/results?changed=yes', ['changed']);
  await expect400Keys(t, '/api/v1/results?ignore_errors=2', ['ignore_errors']);
  await expect400Keys(t, '/api/v1/hosts?ok__gt=abc', ['ok__gt']);
  await expect400Keys(t, '/api/v1/results?host=x', ['host']);
  await expect400Keys(t, '/api/v1/records?updated_before=2030-13-01T00:00:00Z', ['updated_before']);
  await expect400Keys(t, '/api/v1/plays?status=bogus&playbook=abc&created_after=yesterday&order=nope', ['status', 'playbook', 'created_after', 'order']);
});

test('a parameter no list reads is a 400 naming it (ignored in ARA\'s dialect); filters do not apply to detail routes', async (t) => {
  const pb = await createPlaybook(url, { status: 'running' });
  t.deepEqual(await idsOf('playbooks', { path: pb.path, format: 'json' }), [pb.id]);
  const unknown = await api(url, 'GET', `/api/v1/playbooks?path=${encodeURIComponent(pb.path)}&whatever=x`);
  t.is(unknown.status, 400);
  t.deepEqual(unknown.body, { whatever: ['Unknown query parameter.'] });
  const ara = await api(url, 'GET', `/api/v1/playbooks?path=${encodeURIComponent(pb.path)}&whatever=x`, undefined, { 'user-agent': 'ara-http-client_1.5.8' });
  t.deepEqual(ara.body.results.map((r: { id: number }) => r.id), [pb.id]);
  const detail = await api(url, 'GET', `/api/v1/playbooks/${pb.id}?status=failed&name=zzz&order=bogus`);
  t.is(detail.status, 200);
  t.is(detail.body.id, pb.id);
  const patched = await api(url, 'PATCH', `/api/v1/playbooks/${pb.id}?name=zzz`, { name: 'n' });
  t.is(patched.status, 200);
  t.is(patched.body.name, 'n');
});

// ---------------------------------------------------------------- per-resource filters

test('playbook filters: name, path (case-insensitive substrings), status (repeatable), label, runner_version/ansible_version, controller', async (t) => {
  const tok = uniq('pf');
  const a = await createPlaybook(url, { path: `/srv/${tok}/Deploy/Site.yml`, name: `Deploy Web ${tok}`, status: 'completed', labels: [`Prod-${tok}`], runner_version: `2.15.${tok}`, controller: `ctl-a-${tok}` });
  const b = await createPlaybook(url, { path: `/srv/${tok}/other.yml`, name: `Backup ${tok}`, status: 'failed', labels: [`prod-${tok}x`], runner_version: `2.16.${tok}`, controller: `ctl-b-${tok}` });
  const c = await createPlaybook(url, { path: `/srv/${tok}/third.yml`, name: null, status: 'running' });
  const q = { path: tok };
  t.deepEqual(await idsOf('playbooks', q), [a.id, b.id, c.id]);
  t.deepEqual(await idsOf('playbooks', { ...q, name: 'web' }), [a.id], 'name substring, case-insensitive');
  t.deepEqual(await idsOf('playbooks', { ...q, name: tok.toUpperCase() }), [a.id, b.id]);
  t.deepEqual(await idsOf('playbooks', { path: `${tok}/deploy/site` }), [a.id], 'path substring, case-insensitive');
  t.deepEqual(await idsOf('playbooks', { ...q, status: 'failed' }), [b.id]);
  t.deepEqual(await idsOf('playbooks', { ...q, status: ['failed', 'completed'] }), [a.id, b.id], 'status repeatable (OR)');
  t.deepEqual(await idsOf('playbooks', { ...q, status: ['running', 'unknown'] }), [c.id]);
  t.deepEqual(await idsOf('playbooks', { label: `prod-${tok}` }), [a.id], 'label: name, case-insensitive, exact');
  t.deepEqual(await idsOf('playbooks', { label: `PROD-${tok}X` }), [b.id]);
  t.deepEqual(await idsOf('playbooks', { label: `prod-${tok.slice(0, -1)}` }), [], 'label is not a substring match');
  t.deepEqual(await idsOf('playbooks', { ...q, runner_version: `2.15.${tok}` }), [a.id]);
  t.deepEqual(await idsOf('playbooks', { ...q, ansible_version: `2.16.${tok}` }), [b.id], 'ansible_version alias');
  t.deepEqual(await idsOf('playbooks', { ...q, controller: `ctl-b-${tok}` }), [b.id]);
  t.deepEqual(await idsOf('playbooks', { ...q, controller: `ctl-z-${tok}` }), []);
});

test('play filters: playbook, uuid, status, name', async (t) => {
  const [pb1, pb2] = [await createPlaybook(url), await createPlaybook(url)];
  const uuid = '3f6c2b1a-0000-4000-8000-00000000beef';
  const p1 = await createPlay(url, pb1.id, { name: 'Install Web', status: 'completed', uuid });
  const p2 = await createPlay(url, pb1.id, { name: 'Configure DB', status: 'running' });
  const p3 = await createPlay(url, pb2.id, { name: 'Install DB', status: 'completed', uuid });
  t.deepEqual(await idsOf('plays', { playbook: pb1.id }), [p1.id, p2.id]);
  t.deepEqual(await idsOf('plays', { playbook: pb2.id }), [p3.id]);
  t.deepEqual(await idsOf('plays', { uuid }), [p1.id, p3.id], 'uuid across playbooks');
  t.deepEqual(await idsOf('plays', { uuid, playbook: pb2.id }), [p3.id]);
  t.deepEqual(await idsOf('plays', { uuid: uuid.toUpperCase() }), [p1.id, p3.id], 'uuid in another form');
  t.deepEqual(await idsOf('plays', { playbook: pb1.id, status: 'running' }), [p2.id]);
  t.deepEqual(await idsOf('plays', { playbook: pb1.id, status: ['running', 'completed'] }), [p1.id, p2.id]);
  t.deepEqual(await idsOf('plays', { playbook: pb1.id, name: 'install' }), [p1.id], 'name substring, case-insensitive');
  t.deepEqual(await idsOf('plays', { playbook: pb1.id, name: 'Web' }), [p1.id]);
});

test('task filters: playbook, play, status, name, action (case-insensitive exact), path (file path substring), handler', async (t) => {
  const tree = await createTree(url);
  const pb = tree.playbook;
  const roleFile = await createFile(url, pb, { path: '/roles/web/tasks/Main.yml' });
  const play2 = await createPlay(url, pb);
  const t1 = (await get(url, `/api/v1/tasks/${tree.task}`)).id;
  const t2 = (await createTask(url, { playbook: pb, play: play2.id, file: roleFile.id }, { name: 'Install nginx', action: 'ansible.builtin.apt', handler: false, status: 'completed' })).id;
  const t3 = (await createTask(url, { playbook: pb, play: play2.id, file: roleFile.id }, { name: 'restart nginx', action: 'service', handler: true, status: 'completed' })).id;
  t.deepEqual(await idsOf('tasks', { playbook: pb }), [t1, t2, t3]);
  t.deepEqual(await idsOf('tasks', { play: play2.id }), [t2, t3]);
  t.deepEqual(await idsOf('tasks', { playbook: pb, status: 'completed' }), [t2, t3]);
  t.deepEqual(await idsOf('tasks', { playbook: pb, status: ['unknown', 'completed'] }), [t1, t2, t3]);
  t.deepEqual(await idsOf('tasks', { playbook: pb, name: 'NGINX' }), [t2, t3], 'name substring, case-insensitive');
  t.deepEqual(await idsOf('tasks', { playbook: pb, action: 'SERVICE' }), [t3], 'action case-insensitive');
  t.deepEqual(await idsOf('tasks', { playbook: pb, action: 'apt' }), [], 'action is exact, not a substring');
  t.deepEqual(await idsOf('tasks', { playbook: pb, action: 'ansible.builtin.apt' }), [t2]);
  t.deepEqual(await idsOf('tasks', { playbook: pb, path: 'roles/web' }), [t2, t3], 'file path substring');
  t.deepEqual(await idsOf('tasks', { playbook: pb, path: 'main.yml' }), [t2, t3], 'file path substring, case-insensitive');
  for (const v of ['true', 'True', 'TRUE', '1']) t.deepEqual(await idsOf('tasks', { playbook: pb, handler: v }), [t3], `handler=${v}`);
  for (const v of ['false', 'False', 'FALSE', '0']) t.deepEqual(await idsOf('tasks', { playbook: pb, handler: v }), [t1, t2], `handler=${v}`);
});

test('host filters: playbook, name and <counter>__gt / __lt for every counter', async (t) => {
  const [pb, pb2] = [await createPlaybook(url), await createPlaybook(url)];
  const h1 = await createHost(url, pb.id, { name: 'web-01', changed: 1, failed: 0, ok: 5, skipped: 2, unreachable: 0 });
  const h2 = await createHost(url, pb.id, { name: 'db-01', changed: 3, failed: 1, ok: 7, skipped: 0, unreachable: 1 });
  const h3 = await createHost(url, pb.id, { name: 'WEB-02', changed: 0, failed: 2, ok: 0, skipped: 2, unreachable: 0 });
  const h4 = await createHost(url, pb2.id, { name: 'web-01' });
  t.deepEqual(await idsOf('hosts', { playbook: pb.id }), [h1.id, h2.id, h3.id]);
  t.deepEqual(await idsOf('hosts', { playbook: pb2.id }), [h4.id]);
  t.deepEqual(await idsOf('hosts', { playbook: pb.id, name: 'web' }), [h1.id, h3.id], 'name substring, case-insensitive');
  const hosts = [h1, h2, h3];
  for (const c of ['changed', 'failed', 'ok', 'skipped', 'unreachable']) {
    for (const n of [0, 1, 2, 5]) {
      t.deepEqual(await idsOf('hosts', { playbook: pb.id, [`${c}__gt`]: n }), hosts.filter((h) => h[c] > n).map((h) => h.id), `${c}__gt=${n}`);
      t.deepEqual(await idsOf('hosts', { playbook: pb.id, [`${c}__lt`]: n }), hosts.filter((h) => h[c] < n).map((h) => h.id), `${c}__lt=${n}`);
    }
  }
  t.deepEqual(await idsOf('hosts', { playbook: pb.id, ok__gt: 0, failed__lt: 2 }), [h1.id, h2.id], 'combined');
});

test('result filters: playbook, play, task, host, status (shown, repeatable), changed, ignore_errors', async (t) => {
  const tree = await createTree(url, { result: { status: 'ok', changed: true } }); // shown changed
  const pb = tree.playbook;
  const play2 = await createPlay(url, pb);
  const task2 = await createTask(url, { playbook: pb, play: play2.id, file: tree.file });
  const host2 = await createHost(url, pb);
  const refs = { playbook: pb, play: play2.id, task: task2.id, host: host2.id };
  const r1 = tree.result;
  const r2 = (await createResult(url, refs, { status: 'failed', ignore_errors: true })).id; // ignored
  const r3 = (await createResult(url, { ...refs, host: tree.host }, { status: 'skipped' })).id;
  const r4 = (await createResult(url, { ...refs, task: task2.id }, { status: 'ok' })).id;
  const other = await createTree(url);
  t.deepEqual(await idsOf('results', { playbook: pb }), [r1, r2, r3, r4]);
  t.deepEqual(await idsOf('results', { playbook: other.playbook }), [other.result]);
  t.deepEqual(await idsOf('results', { play: play2.id }), [r2, r3, r4]);
  t.deepEqual(await idsOf('results', { task: tree.task }), [r1]);
  t.deepEqual(await idsOf('results', { host: tree.host }), [r1, r3]);
  t.deepEqual(await idsOf('results', { playbook: pb, status: 'changed' }), [r1]);
  t.deepEqual(await idsOf('results', { playbook: pb, status: ['ignored', 'skipped'] }), [r2, r3]);
  t.deepEqual(await idsOf('results', { playbook: pb, status: 'failed' }), []);
  for (const v of ['true', 'TRUE', '1']) t.deepEqual(await idsOf('results', { playbook: pb, changed: v }), [r1], `changed=${v}`);
  for (const v of ['false', 'False', '0']) t.deepEqual(await idsOf('results', { playbook: pb, changed: v }), [r2, r3, r4], `changed=${v}`);
  for (const v of ['true', 'True', '1']) t.deepEqual(await idsOf('results', { playbook: pb, ignore_errors: v }), [r2], `ignore_errors=${v}`);
  for (const v of ['false', 'FALSE', '0']) t.deepEqual(await idsOf('results', { playbook: pb, ignore_errors: v }), [r1, r3, r4], `ignore_errors=${v}`);
  t.deepEqual(await idsOf('results', { playbook: pb, host: host2.id, task: task2.id }), [r2, r4]);
});

test('file filters: playbook, path (substring); record filters: playbook, key (exact); label filter: name', async (t) => {
  const [pb, pb2] = [await createPlaybook(url), await createPlaybook(url)];
  const f1 = await createFile(url, pb.id, { path: '/srv/site.yml' });
  const f2 = await createFile(url, pb.id, { path: '/srv/roles/web/tasks/main.yml' });
  const f3 = await createFile(url, pb2.id, { path: '/srv/site.yml' });
  t.deepEqual(await idsOf('files', { playbook: pb.id }), [f1.id, f2.id]);
  t.deepEqual(await idsOf('files', { playbook: pb.id, path: 'roles/WEB' }), [f2.id], 'path substring, case-insensitive');
  t.deepEqual(await idsOf('files', { playbook: pb.id, path: 'site.yml' }), [f1.id]);
  t.deepEqual(await idsOf('files', { playbook: pb2.id }), [f3.id]);
  const r1 = await createRecord(url, pb.id, { key: 'release' });
  const r2 = await createRecord(url, pb.id, { key: 'release_url' });
  const r3 = await createRecord(url, pb2.id, { key: 'release' });
  t.deepEqual(await idsOf('records', { playbook: pb.id }), [r1.id, r2.id]);
  t.deepEqual(await idsOf('records', { playbook: pb.id, key: 'release' }), [r1.id], 'key exact');
  t.deepEqual(await idsOf('records', { playbook: pb.id, key: 'releas' }), []);
  t.deepEqual(await idsOf('records', { key: 'release', playbook: pb2.id }), [r3.id]);
  const name = uniq('lbl');
  const l1 = await createLabel(url, name);
  await createLabel(url, `${name}-other`.replace(name, uniq('zz')));
  t.deepEqual(await idsOf('labels', { name }), [l1.id]);
});
