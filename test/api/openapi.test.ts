// The OpenAPI document (GET /api/v1/openapi.json) against the running server:
// it lists every path, method and list parameter, and real responses of every
// resource and form (list envelope and rows, detail with nested summaries,
// write responses, minimal writes, error bodies, OPTIONS, index, health)
// validate against the response schema the document gives for that operation
// and status — compiled with TypeBox — with keys in the order the schema
// declares. Run with ARA compatibility off and on.
import test, { type ExecutionContext } from 'ava';
import { Compile } from 'typebox/compile';
import { FILTERS, LIST_PARAMS, RESOURCE_TYPES, TYPE_TO_PATH, type ResourceType } from '../../src/api/resources.js';
import { listening, request, spawnLogbook } from '../helpers/ops.js';

type Json = any;

class Doc {
  private readonly cache = new Map<string, { Check(v: unknown): boolean; Errors(v: unknown): Iterable<unknown> }>();
  constructor(readonly doc: Json) {}

  validator(schema: Json) {
    const key = JSON.stringify(schema);
    let v = this.cache.get(key);
    if (!v) {
      v = Compile({ ...schema, components: this.doc.components }) as never;
      this.cache.set(key, v!);
    }
    return v!;
  }

  resolve(schema: Json): Json {
    while (schema && schema.$ref) schema = this.doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')];
    return schema;
  }

  /** The JSON schema of a documented response, or undefined. */
  responseSchema(path: string, method: string, status: number): Json {
    return this.doc.paths[path]?.[method.toLowerCase()]?.responses?.[status]?.content?.['application/json']?.schema;
  }

  /** Keys appear in the order the schema declares them (closed objects), recursively. */
  keyOrder(value: Json, schema: Json, at: string, problems: string[]): void {
    schema = this.resolve(schema);
    if (!schema || value === null || typeof value !== 'object') return;
    if (schema.anyOf) {
      const branch = schema.anyOf.find((b: Json) => this.validator(b).Check(value));
      if (branch) this.keyOrder(value, branch, at, problems);
      return;
    }
    if (Array.isArray(value)) {
      if (schema.items) value.forEach((item, i) => this.keyOrder(item, schema.items, `${at}[${i}]`, problems));
      return;
    }
    if (schema.properties && schema.additionalProperties === false) {
      const want = Object.keys(schema.properties).filter((k) => k in value);
      const got = Object.keys(value);
      if (JSON.stringify(want) !== JSON.stringify(got)) problems.push(`${at}: keys ${got.join(',')} but the schema says ${want.join(',')}`);
      for (const k of got) if (schema.properties[k]) this.keyOrder(value[k], schema.properties[k], `${at}.${k}`, problems);
    }
  }
}

interface Checker {
  doc: Doc;
  base: string;
  checked: Set<string>;
  /** Send a request and check its response against the document. */
  call(method: string, url: string, template: string, expect: number, body?: unknown, headers?: Record<string, string>): Promise<Json>;
}

function checker(t: ExecutionContext, doc: Doc, base: string): Checker {
  const c: Checker = {
    doc, base, checked: new Set(),
    async call(method, url, template, expect, body, headers = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
      }
      const res = await request(base + url, init);
      t.is(res.status, expect, `${method} ${url}: ${res.text}`);
      const schema = doc.responseSchema(template, method, res.status);
      if (res.status === 204) { t.is(res.text, ''); return undefined; }
      t.truthy(schema, `the document has a JSON response for ${method} ${template} ${res.status}`);
      if (!schema) return res.body;
      const v = doc.validator(schema);
      const ok = v.Check(res.body);
      if (!ok) t.log(`${method} ${url} → ${res.text}\n${JSON.stringify([...v.Errors(res.body)], null, 1).slice(0, 2000)}`);
      t.true(ok, `${method} ${url} (${res.status}) matches the documented schema`);
      const problems: string[] = [];
      doc.keyOrder(res.body, schema, `${method} ${url}`, problems);
      t.deepEqual(problems, []);
      c.checked.add(`${method} ${template} ${res.status}`);
      return res.body;
    },
  };
  return c;
}

const list = (type: ResourceType) => `/api/v1/${TYPE_TO_PATH[type]}`;
const detail = (type: ResourceType) => `/api/v1/${TYPE_TO_PATH[type]}/{id}`;

async function exercise(t: ExecutionContext, c: Checker): Promise<void> {
  const { call } = c;
  // index, root, health, OPTIONS
  await call('GET', '/api/', '/api/', 200);
  await call('GET', '/api/v1/', '/api/v1/', 200);
  await call('OPTIONS', '/api/v1/', '/api/v1/', 200);
  await call('GET', '/healthz', '/healthz', 200);

  // one of everything, through write responses
  const label = await call('POST', list('label'), list('label'), 201, { name: 'prod' });
  const pb = await call('POST', list('playbook'), list('playbook'), 201, {
    path: '/site.yml', ansible_version: '2.16.1', labels: ['prod', 'web'], arguments: { check: false, tags: ['a'] },
    status: 'running', controller: 'ctl', user: 'me',
  });
  await call('POST', list('playbook'), list('playbook'), 201, { path: '/other.yml', runner_version: '2.16.1', name: 'other' });
  const playbook = pb.id;
  const play = await call('POST', list('play'), list('play'), 201, { playbook, uuid: crypto.randomUUID(), name: 'p1', status: 'running' });
  const file = await call('POST', list('file'), list('file'), 201, { playbook, path: '/site.yml', content: '- hosts: all\n' });
  const task = await call('POST', list('task'), list('task'), 201, {
    playbook, play: play.id, file: file.id, action: 'ping', lineno: 3, handler: false, tags: ['t'], name: 'ping it',
  });
  const host = await call('POST', list('host'), list('host'), 201, { playbook, name: 'web1', facts: { os: 'debian' } });
  const host2 = await call('POST', list('host'), list('host'), 201, { playbook, name: 'web2' });
  const result = await call('POST', list('result'), list('result'), 201, {
    playbook, play: play.id, task: task.id, host: host.id, status: 'ok', changed: true, content: { msg: 'pong' },
    started: '2026-01-01T00:00:00Z', ended: '2026-01-01T00:00:01.5Z', delegated_to: [host2.id],
  });
  const record = await call('POST', list('record'), list('record'), 201, { playbook, key: 'k', type: 'json', value: { a: [1, 2] } });
  await call('POST', list('result'), list('result'), 201, { playbook, play: play.id, task: task.id, host: host2.id, status: 'failed', ignore_errors: true });
  const ids: Record<ResourceType, number> = {
    label: label.id, playbook, play: play.id, task: task.id, host: host.id, result: result.id, file: file.id, record: record.id,
  };

  for (const type of RESOURCE_TYPES) {
    const id = ids[type];
    // list envelopes: first page (next set), second page (previous set), a filtered page
    await call('GET', `${list(type)}?limit=1`, list(type), 200);
    await call('GET', `${list(type)}?limit=1&offset=1&order=-id`, list(type), 200);
    if (type === 'playbook') await call('GET', `${list(type)}?status=running&status=completed`, list(type), 200);
    else if (type !== 'label') await call('GET', `${list(type)}?playbook=${playbook}`, list(type), 200);
    await call('GET', `${list(type)}/${id}`, detail(type), 200);
    await call('GET', `${list(type)}/${id}/`, detail(type), 200);
    await call('PATCH', `${list(type)}/${id}`, detail(type), 200, {});
    await call('PATCH', `${list(type)}/${id}`, detail(type), 200, {}, { prefer: 'return=minimal' });
    await call('OPTIONS', list(type), list(type), 200);
    await call('OPTIONS', `${list(type)}/${id}`, detail(type), 200);
    // errors
    await call('GET', `${list(type)}/999999`, detail(type), 404);
    await call('POST', list(type), list(type), 400, type === 'label' ? { name: '' } : {});
    await call('POST', list(type), list(type), 400, '{"broken', { 'content-type': 'application/json' });
    await call('POST', list(type), list(type), 415, 'x=1', { 'content-type': 'text/plain' });
    await call('GET', `${list(type)}?limit=0`, list(type), 400);
    await call('GET', `${list(type)}?order=nope`, list(type), 400);
  }
  // PUT (full update) of a few, a minimal create, deletes
  await call('PUT', `${list('record')}/${record.id}`, detail('record'), 200, { playbook, key: 'k', type: 'text' });
  await call('PUT', `${list('label')}/${label.id}`, detail('label'), 200, { name: 'production' });
  await call('POST', list('record'), list('record'), 201, { playbook, key: 'k2', type: 'text' }, { prefer: 'return=minimal' });
  await call('PATCH', `${list('playbook')}/${playbook}`, detail('playbook'), 200, { status: 'completed', ended: '2030-01-01T00:00:00Z' });
  await call('GET', `${list('playbook')}/${playbook}`, detail('playbook'), 200);
  await call('DELETE', `${list('result')}/${result.id}`, detail('result'), 204);
  await call('DELETE', `${list('result')}/${result.id}`, detail('result'), 404);
  t.is((await request(`${c.base}/api/v1/playbooks/${playbook}`, { method: 'DELETE' })).status, 204);
  await call('GET', `${list('task')}?playbook=${playbook}`, list('task'), 200);

  // batch ingest (SPEC §13): applied with a rejected event, duplicate, gap, bad envelope
  const stream = `stream-${crypto.randomUUID()}`;
  const batch = {
    playbook: { uuid: stream, path: '/site.yml', runner_version: '2.16.1', labels: ['ingested'] }, seq: 1,
    events: [{ kind: 'host', name: 'h1' }, { kind: 'result', task: 'no-such-task', host: 'h1' }],
  };
  await call('POST', '/api/v1/ingest', '/api/v1/ingest', 200, batch);
  await call('POST', '/api/v1/ingest', '/api/v1/ingest', 200, batch);
  await call('POST', '/api/v1/ingest', '/api/v1/ingest', 409, { playbook: { uuid: stream }, seq: 5, events: [] });
  await call('POST', '/api/v1/ingest', '/api/v1/ingest', 400, { playbook: { uuid: stream }, seq: 2, events: [{ kind: 'nope' }] });
  await call('OPTIONS', '/api/v1/ingest', '/api/v1/ingest', 200);
}

function checkStructure(t: ExecutionContext, doc: Json): void {
  t.is(doc.openapi, '3.1.0');
  const ops = (path: string) => Object.keys(doc.paths[path] ?? {}).filter((k) => k !== 'parameters').sort();
  t.deepEqual(ops('/api/'), ['get', 'options']);
  t.deepEqual(ops('/healthz'), ['get']);
  t.deepEqual(ops('/metrics'), ['get']);
  t.deepEqual(ops('/api/v1/openapi.json'), ['get']);
  for (const type of RESOURCE_TYPES) {
    t.deepEqual(ops(list(type)), ['get', 'head', 'options', 'post'], type);
    t.deepEqual(ops(detail(type)), ['delete', 'get', 'head', 'options', 'patch', 'put'], type);
    const params = doc.paths[list(type)].get.parameters.map((p: Json) => p.name);
    t.deepEqual(params, [...FILTERS[type].map((f) => f.param), ...(type === 'label' ? [] : ['q']), ...LIST_PARAMS], `${type} list parameters`);
    t.truthy(doc.paths[list(type)].post.requestBody.content['application/json'].schema.$ref);
  }
  // every $ref resolves
  const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
  for (const r of new Set(refs)) {
    const name = /#\/components\/schemas\/([^"]+)/.exec(r)?.[1];
    t.truthy(name && doc.components.schemas[name], r);
  }
  // the request schemas are the validators': a canonical body passes, a bad one fails
  const create = Compile({ $ref: '#/components/schemas/PlaybookCreate', components: doc.components } as never);
  t.true(create.Check({ path: '/a.yml', runner_version: '2.16', started: '2026-01-01 10:00' }));
  t.false(create.Check({ path: '/a.yml', runner_version: '2.16', status: 'bogus' }));
}

for (const compat of [false, true]) {
  test.serial(`real responses validate against the OpenAPI document (ARA compatibility ${compat ? 'on' : 'off'})`, async (t) => {
    const p = spawnLogbook({ LOGBOOK_ARA_COMPAT: String(compat) });
    t.teardown(() => { void p.kill('SIGKILL').then(p.cleanup); });
    const base = await listening(p);
    const res = await request(`${base}/api/v1/openapi.json`);
    t.is(res.status, 200);
    t.is(res.headers.get('content-type'), 'application/json');
    checkStructure(t, res.body);
    const doc = new Doc(res.body);
    const c = checker(t, doc, base);
    await exercise(t, c);
    // the checks bite: an extra key, a missing key, a wrong type or a reordering is caught
    const pb = (await request(`${base}/api/v1/playbooks?limit=1`)).body.results[0];
    const row = doc.validator({ $ref: '#/components/schemas/PlaybookListRow' });
    t.true(row.Check(pb));
    t.false(row.Check({ ...pb, extra: 1 }));
    const { path: _path, ...missing } = pb;
    t.false(row.Check(missing));
    t.false(row.Check({ ...pb, name: 3 }));
    t.false(row.Check({ ...pb, started: '2026-01-01T00:00:00Z' }), 'six fraction digits');
    const { id, ...rest } = pb;
    const problems: string[] = [];
    doc.keyOrder({ ...rest, id }, { $ref: '#/components/schemas/PlaybookListRow' }, 'reordered', problems);
    t.is(problems.length, 1);
    // the two modes' documents differ exactly by the compatibility fields
    if (compat) {
      const { ansible_version: _a, ...plain } = pb;
      t.false(row.Check(plain));
    } else t.false(row.Check({ ...pb, ansible_version: pb.runner_version }));
    // every resource's list, detail and write schema was exercised
    for (const type of RESOURCE_TYPES) {
      for (const want of [`GET ${list(type)} 200`, `GET ${detail(type)} 200`, `POST ${list(type)} 201`, `PATCH ${detail(type)} 200`]) {
        t.true(c.checked.has(want), want);
      }
    }
    t.is((await p.kill('SIGTERM')).code, 0);
  });
}
