// SPEC.md §1/§2 value formats: microsecond timestamps in and out (offsets,
// truncation past 6 digits, date-only rejected), derived durations (hours not
// folded into days, ended < started rejected), non-ASCII round trips, JSON
// values returned exactly as stored (key order, integer-like keys, big
// integers), a 5 MB content round trip, uuid normalization.
import test, { type ExecutionContext } from 'ava';
import { createHash } from 'node:crypto';
import { api, type Logbook } from '../helpers/server.js';
import {
  DURATION, TIMESTAMP, createFile, createHost, createPlay, createPlaybook, createRecord, createResult,
  createTask, createTree, get, list, patch, post, put, randomUuid, type Json, type Tree, serveForFile} from '../helpers/fixtures.js';

let lb: Logbook;
let url: string;
serveForFile((server) => { lb = server; url = server.url; });

const DATETIME_ERROR = 'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].';

// ---------------------------------------------------------------- timestamps

const TIMESTAMP_IN: Array<[string, string]> = [
  ['2024-01-02T03:04:05.123456Z', '2024-01-02T03:04:05.123456Z'],
  ['2024-01-02T03:04:05.000001Z', '2024-01-02T03:04:05.000001Z'],
  ['2024-01-02T03:04:05.123456+02:00', '2024-01-02T01:04:05.123456Z'],
  ['2024-01-02T03:04:05.123456-01:30', '2024-01-02T04:34:05.123456Z'],
  ['2024-01-02T03:04:05+0530', '2024-01-01T21:34:05.000000Z'],
  ['2024-01-02T03:04:05-0000', '2024-01-02T03:04:05.000000Z'],
  ['2024-01-01T00:30:00+01:00', '2023-12-31T23:30:00.000000Z'],
  ['2024-01-02 03:04:05', '2024-01-02T03:04:05.000000Z'],
  ['2024-01-02T03:04:05', '2024-01-02T03:04:05.000000Z'],
  ['2024-01-02T03:04', '2024-01-02T03:04:00.000000Z'],
  ['2024-01-02T03:04Z', '2024-01-02T03:04:00.000000Z'],
  ['2024-01-02T03:04:05.5', '2024-01-02T03:04:05.500000Z'],
  ['2024-01-02T03:04:05.12Z', '2024-01-02T03:04:05.120000Z'],
  ['2024-01-02T03:04:05.123456789Z', '2024-01-02T03:04:05.123456Z'],
  ['2024-01-02T03:04:05.999999999+00:00', '2024-01-02T03:04:05.999999Z'],
  ['2024-02-29T23:59:59.9999995Z', '2024-02-29T23:59:59.999999Z'],
];

test('timestamps in: offsets, space separator, optional seconds and fraction, 7–9 digits truncated', async (t) => {
  const pb = await createPlaybook(url);
  for (const [input, output] of TIMESTAMP_IN) {
    const play = await api(url, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: pb.id, started: input });
    t.is(play.status, 201, `${input}: ${play.text}`);
    t.is(play.body.started, output, input);
    t.is((await get(url, `/api/v1/plays/${play.body.id}`)).started, output, `${input} (detail)`);
  }
  // the same on ended, via PATCH, and on other resources
  const p = await createPlay(url, pb.id, { started: '2024-01-02T00:00:00Z' });
  t.is((await patch(url, `/api/v1/plays/${p.id}`, { ended: '2024-01-02T03:04:05.123456789+02:00' })).ended, '2024-01-02T01:04:05.123456Z');
  const pb2 = await createPlaybook(url, { started: '2024-01-02 03:04:05.654321-02:00', ended: '2024-01-02T05:04:06Z' });
  t.is(pb2.started, '2024-01-02T05:04:05.654321Z');
  t.is(pb2.duration, '00:00:00.345679');
});

test('timestamps in: a date alone and malformed values → 400 on that field', async (t) => {
  const pb = await createPlaybook(url);
  const bad = ['2024-01-02', '2024-01-02T', '2024-01-02T03', 'notadate', '2024-13-01T00:00:00Z', '2024-01-02T25:00:00Z',
    '2024-02-30T00:00:00Z', '2024-01-02T03:04:05.1234567890Z', '2024-01-02T03:04:05+2:00', '02/01/2024 03:04', ''];
  for (const value of bad) {
    const r = await api(url, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: pb.id, started: value });
    t.is(r.status, 400, `started=${JSON.stringify(value)}: ${r.text}`);
    t.deepEqual(r.body, { started: [DATETIME_ERROR] }, `started=${JSON.stringify(value)}`);
  }
  const num = await api(url, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: pb.id, started: 1704164645 });
  t.is(num.status, 400);
  t.deepEqual(Object.keys(num.body), ['started']);
  const ended = await api(url, 'PATCH', `/api/v1/playbooks/${pb.id}`, { ended: '2030-01-02' });
  t.is(ended.status, 400);
  t.deepEqual(ended.body, { ended: [DATETIME_ERROR] });
  t.is((await list(url, 'plays', { playbook: pb.id })).count, 0);
});

test('timestamps outside 1700-01-01 to 2250-12-31 UTC → 400 on that field and nothing stored; the edges keep their µs; filters take any year', async (t) => {
  const pb = await createPlaybook(url);
  const outOfRange = (v: string) => [`Datetime out of range: ${v} (supported: 1700-01-01 to 2250-12-31 UTC).`];
  for (const value of ['2400-01-01T00:00:00.000001Z', '2251-01-01T00:00Z', '1699-12-31T23:59:59.999999Z', '1700-01-01T00:30+01:00', '0001-01-01T00:00', '9999-12-31 23:59']) {
    const r = await api(url, 'POST', '/api/v1/plays', { uuid: randomUuid(), playbook: pb.id, started: value });
    t.is(r.status, 400, `started=${value}: ${r.text}`);
    t.deepEqual(r.body, { started: outOfRange(value) }, value);
  }
  t.is((await list(url, 'plays', { playbook: pb.id })).count, 0);
  const both = await api(url, 'PATCH', `/api/v1/playbooks/${pb.id}`, { started: '1600-01-01T00:00Z', ended: '2300-01-01T00:00Z', status: 'completed' });
  t.is(both.status, 400);
  t.deepEqual(both.body, { started: outOfRange('1600-01-01T00:00Z'), ended: outOfRange('2300-01-01T00:00Z') });
  t.like(await get(url, `/api/v1/playbooks/${pb.id}`), { started: pb.started, ended: null, status: pb.status });
  // the first and last microseconds of the range read back exactly
  const edges = await createPlaybook(url, { started: '1700-01-01T00:00:00.000001+00:00', ended: '2250-12-31T23:59:59.999999Z' });
  t.like(edges, { started: '1700-01-01T00:00:00.000001Z', ended: '2250-12-31T23:59:59.999999Z', duration: '4829951:59:59.999998' });
  t.like(await get(url, `/api/v1/playbooks/${edges.id}`), { started: '1700-01-01T00:00:00.000001Z', ended: '2250-12-31T23:59:59.999999Z' });
  // list filters are not writes: any year 0001–9999 is taken and compared with what is stored
  const mine = { path: edges.path };
  t.is((await list(url, 'playbooks', { ...mine, started_before: '0001-01-01T00:00' })).count, 0);
  t.true((await list(url, 'playbooks', { ...mine, started_after: '0001-01-01' })).results.some((r: Json) => r.id === edges.id));
  t.true((await list(url, 'playbooks', { ...mine, ended_before: '9999-12-31T23:59:59.999999Z', started_before: '1700-01-01T00:00:00.000001Z' }))
    .results.some((r: Json) => r.id === edges.id));
  t.is((await list(url, 'playbooks', { ...mine, started_after: '2400-01-01T00:00:00.000001Z' })).count, 0);
});

test('timestamps out: UTC with exactly six fraction digits on every timestamp field', async (t) => {
  const tree = await createTree(url);
  const check = (obj: Json, what: string) => {
    for (const k of ['created', 'updated', 'started', 'ended']) {
      if (obj[k] !== undefined && obj[k] !== null) t.regex(obj[k], TIMESTAMP, `${what}.${k}`);
    }
  };
  await patch(url, `/api/v1/results/${tree.result}`, { started: '2024-05-01T10:00:00Z', ended: '2024-05-01T10:00:01Z' });
  for (const [resource, id] of Object.entries({ playbooks: tree.playbook, plays: tree.play, tasks: tree.task, hosts: tree.host, results: tree.result, files: tree.file })) {
    const d = await get(url, `/api/v1/${resource}/${id}`);
    check(d, resource);
    if (d.playbook && typeof d.playbook === 'object') check(d.playbook, `${resource}.playbook`);
  }
  const r = await get(url, `/api/v1/results/${tree.result}`);
  t.is(r.started, '2024-05-01T10:00:00.000000Z');
  t.is(r.ended, '2024-05-01T10:00:01.000000Z');
  t.is(r.duration, '00:00:01.000000');
});

// ---------------------------------------------------------------- durations

const DURATIONS: Array<[string, string, string]> = [
  ['2024-01-01T00:00:00Z', '2024-01-01T00:00:01.5Z', '00:00:01.500000'],
  ['2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z', '00:00:00.000000'],
  ['2024-01-01T00:00:00.999999Z', '2024-01-01T00:00:01Z', '00:00:00.000001'],
  ['2024-01-01T00:00:00Z', '2024-01-02T03:00:00Z', '27:00:00.000000'],
  ['2024-01-01T23:59:59.5Z', '2024-01-03T00:00:00.25Z', '24:00:00.750000'],
  ['2024-01-01T00:00:00Z', '2024-01-05T04:01:02.000003Z', '100:01:02.000003'],
  ['2024-01-01T10:00:00+02:00', '2024-01-01T09:00:00Z', '01:00:00.000000'],
];

async function timedRecord(kind: string, tree: Tree, times: Json): Promise<Json> {
  switch (kind) {
    case 'playbooks': return createPlaybook(url, times);
    case 'plays': return createPlay(url, tree.playbook, times);
    case 'tasks': return createTask(url, { playbook: tree.playbook, play: tree.play, file: tree.file }, times);
    default: return createResult(url, { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host }, times);
  }
}

test('duration = ended − started as HH:MM:SS.ffffff, hours not folded into days (playbooks, plays, tasks, results)', async (t) => {
  const tree = await createTree(url);
  for (const kind of ['playbooks', 'plays', 'tasks', 'results']) {
    for (const [started, ended, duration] of DURATIONS) {
      const rec = await timedRecord(kind, tree, { started, ended, duration: '99:99:99' });
      t.is(rec.duration, duration, `${kind} ${started} → ${ended} (write response)`);
      t.regex(rec.duration, DURATION);
      t.is((await get(url, `/api/v1/${kind}/${rec.id}`)).duration, duration, `${kind} ${started} → ${ended} (detail)`);
    }
  }
  const row = (await list(url, 'results', { task: tree.task, order: '-duration', limit: 1 })).results[0];
  t.is(row.duration, '100:01:02.000003', 'list row duration');
});

test('duration follows writes of started/ended; null while ended is null; never taken from input', async (t) => {
  const tree = await createTree(url);
  for (const kind of ['playbooks', 'plays', 'tasks', 'results']) {
    const rec = await timedRecord(kind, tree, { started: '2024-01-01T00:00:00Z', duration: '01:00:00.000000' });
    t.is(rec.ended, null, kind);
    t.is(rec.duration, null, `${kind}: running, duration null despite input`);
    const path = `/api/v1/${kind}/${rec.id}`;
    t.is((await patch(url, path, { ended: '2024-01-01T00:10:00Z' })).duration, '00:10:00.000000', `${kind}: ended set`);
    t.is((await patch(url, path, { started: '2024-01-01T00:09:00Z' })).duration, '00:01:00.000000', `${kind}: started moved`);
    t.is((await patch(url, path, { duration: '05:00:00.000000' })).duration, '00:01:00.000000', `${kind}: duration ignored`);
    const cleared = await patch(url, path, { ended: null });
    t.is(cleared.ended, null, `${kind}: ended cleared`);
    t.is(cleared.duration, null, `${kind}: duration null again`);
    t.is((await get(url, path)).duration, null);
  }
});

test('ended earlier than started → 400 on `ended` (POST, PATCH of either field)', async (t) => {
  const tree = await createTree(url);
  for (const kind of ['playbooks', 'plays', 'tasks', 'results']) {
    const base: Json = {
      playbooks: { path: '/e.yml', runner_version: '1' },
      plays: { uuid: randomUuid(), playbook: tree.playbook },
      tasks: { action: 'a', lineno: 1, handler: false, play: tree.play, file: tree.file, playbook: tree.playbook },
      results: { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host },
    }[kind];
    const r = await api(url, 'POST', `/api/v1/${kind}`, { ...base, started: '2024-01-01T00:00:01Z', ended: '2024-01-01T00:00:00.999999Z' });
    t.is(r.status, 400, `${kind} POST`);
    t.deepEqual(Object.keys(r.body ?? {}), ['ended'], `${kind} POST error key (${r.text})`);
    const rec = await timedRecord(kind, tree, { started: '2024-01-01T00:00:00Z', ended: '2024-01-01T01:00:00Z' });
    const path = `/api/v1/${kind}/${rec.id}`;
    const p1 = await api(url, 'PATCH', path, { ended: '2023-12-31T23:59:59Z' });
    t.is(p1.status, 400, `${kind} PATCH ended`);
    t.deepEqual(Object.keys(p1.body ?? {}), ['ended']);
    const p2 = await api(url, 'PATCH', path, { started: '2024-01-01T02:00:00Z' });
    t.is(p2.status, 400, `${kind} PATCH started after ended (${p2.text})`);
    t.deepEqual(Object.keys(p2.body ?? {}), ['ended']);
    const after = await get(url, path);
    t.is(after.started, '2024-01-01T00:00:00.000000Z', `${kind}: unchanged`);
    t.is(after.duration, '01:00:00.000000');
  }
  t.is((await get(url, `/api/v1/playbooks/${tree.playbook}`)).items.plays, 2, 'the rejected play was not created');
});

for (const kind of ['playbooks', 'plays', 'tasks', 'results']) {
  test(`${kind}: ended earlier than a defaulted started (now) → 400 on \`ended\``, async (t) => {
    const tree = await createTree(url);
    const ended = '2000-01-01T00:00:00Z';
    const body: Json = {
      playbooks: { path: `/e/${tree.playbook}.yml`, runner_version: '1', ended },
      plays: { uuid: randomUuid(), playbook: tree.playbook, ended },
      tasks: { action: 'a', lineno: 1, handler: false, play: tree.play, file: tree.file, playbook: tree.playbook, ended },
      results: { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host, ended },
    }[kind];
    const r = await api(url, 'POST', `/api/v1/${kind}`, body);
    t.is(r.status, 400, `POST ${kind} with only ended, in the past (${r.text.slice(0, 400)})`);
    t.deepEqual(Object.keys(r.body ?? {}), ['ended']);
    t.deepEqual((await get(url, `/api/v1/playbooks/${tree.playbook}`)).items, { plays: 1, tasks: 1, results: 1, hosts: 1, files: 1, records: 0 }, 'nothing created');
  });
}

// ---------------------------------------------------------------- non-ASCII

test('non-ASCII text round-trips as UTF-8 (names, paths, labels, content, values)', async (t) => {
  const s = 'héllo ☃ 日本語 😀 Ωμέγα';
  const label = `étiquette-${randomUuid().slice(0, 6)}-☃`;
  const pb = await createPlaybook(url, { name: s, path: `/srv/${s}/site.yml`, labels: [label] });
  t.is(pb.name, s);
  t.is(pb.labels[0].name, label);
  const file = await createFile(url, pb.id, { path: `/srv/${s}.yml`, content: `# ${s}\n` });
  t.is(file.sha1, createHash('sha1').update(`# ${s}\n`, 'utf8').digest('hex'));
  const play = await createPlay(url, pb.id, { name: s });
  const task = await createTask(url, { playbook: pb.id, play: play.id, file: file.id }, { name: s, tags: [s] });
  const host = await createHost(url, pb.id, { name: `hôte-${s}`, facts: { [s]: s } });
  const result = await createResult(url, { playbook: pb.id, play: play.id, task: task.id, host: host.id }, { content: { msg: s, [s]: [s] } });
  const record = await createRecord(url, pb.id, { key: `clé-${s}`, value: { [s]: s } });
  const raw = await api(url, 'GET', `/api/v1/results/${result.id}`);
  t.true(raw.text.includes(s), 'result detail raw text carries the characters as UTF-8');
  t.regex(raw.headers.get('content-type') ?? '', /^application\/json/);
  t.deepEqual(raw.body.content, { msg: s, [s]: [s] });
  t.is(raw.body.task.name, s);
  t.is(raw.body.host.name, `hôte-${s}`);
  t.is(raw.body.playbook.name, s);
  t.is((await get(url, `/api/v1/files/${file.id}`)).content, `# ${s}\n`);
  t.is((await get(url, `/api/v1/files/${file.id}`)).path, `/srv/${s}.yml`);
  t.deepEqual((await get(url, `/api/v1/records/${record.id}`)).value, { [s]: s });
  t.is((await get(url, `/api/v1/records/${record.id}`)).key, `clé-${s}`);
  t.deepEqual((await get(url, `/api/v1/hosts/${host.id}`)).facts, { [s]: s });
  t.deepEqual((await get(url, `/api/v1/tasks/${task.id}`)).tags, [s]);
  // filters with non-ASCII values
  t.deepEqual((await list(url, 'playbooks', { name: '日本語 😀' })).results.map((r: Json) => r.id), [pb.id]);
  t.deepEqual((await list(url, 'playbooks', { label })).results.map((r: Json) => r.id), [pb.id]);
  t.deepEqual((await list(url, 'records', { playbook: pb.id, key: `clé-${s}` })).results.map((r: Json) => r.id), [record.id]);
  t.deepEqual((await list(url, 'hosts', { playbook: pb.id, name: 'HÔTE' })).results.map((r: Json) => r.id), [host.id], 'case-insensitive beyond ASCII');
  const rawList = await api(url, 'GET', `/api/v1/playbooks?path=${encodeURIComponent(s)}`);
  t.true(rawList.text.includes(s));
});

test('non-ASCII in the request body is read as UTF-8 whatever the escaping', async (t) => {
  const pb = await createPlaybook(url);
  // the ARA client sends Python json.dumps output: \u escapes, including surrogate pairs
  const escaped = '{"key":"k","type":"text","playbook":' + pb.id + ',"value":"h\\u00e9llo \\u2603 \\ud83d\\ude00"}';
  const r = await api(url, 'POST', '/api/v1/records', escaped);
  t.is(r.status, 201);
  t.is(r.body.value, 'héllo ☃ 😀');
  t.is((await get(url, `/api/v1/records/${r.body.id}`)).value, 'héllo ☃ 😀');
});

// ---------------------------------------------------------------- JSON values verbatim

/** Removes insignificant whitespace from JSON text (outside strings). */
function minify(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') { out += text[++i]; continue; }
      if (c === '"') inString = false;
    } else if (c === '"') { inString = true; out += c; } else if (!/\s/.test(c)) out += c;
  }
  return out;
}

const VERBATIM = '{"b":1,"a":{"z":[3,2,1],"10":"ten","2":"two","1":"one"},"10":true,"0":null,"big":12345678901234567890,'
  + '"neg":-98765432109876543210,"list":[12345678901234567890,{"y":1,"x":2}],"s":"12345678901234567890","f":1.0,"g":2.50}';

test('JSON values keep key order (integer-like keys too), big integers and number text verbatim', async (t) => {
  const tree = await createTree(url);
  const refs = `"playbook":${tree.playbook},"play":${tree.play},"task":${tree.task},"host":${tree.host}`;
  const posted = await api(url, 'POST', '/api/v1/results', `{${refs},"content":${VERBATIM}}`);
  t.is(posted.status, 201);
  t.true(minify(posted.text).includes(`"content":${VERBATIM}`), `result POST response: ${posted.text.slice(0, 400)}`);
  const detail = await api(url, 'GET', `/api/v1/results/${posted.body.id}`);
  t.true(minify(detail.text).includes(`"content":${VERBATIM}`), `result detail: ${detail.text.slice(0, 600)}`);
  const patched = await api(url, 'PATCH', `/api/v1/hosts/${tree.host}`, `{"facts":${VERBATIM}}`);
  t.true(minify(patched.text).includes(`"facts":${VERBATIM}`), 'host PATCH response');
  t.true(minify((await api(url, 'GET', `/api/v1/hosts/${tree.host}`)).text).includes(`"facts":${VERBATIM}`), 'host detail');
  await api(url, 'PATCH', `/api/v1/playbooks/${tree.playbook}`, `{"arguments":${VERBATIM}}`);
  t.true(minify((await api(url, 'GET', `/api/v1/playbooks/${tree.playbook}`)).text).includes(`"arguments":${VERBATIM}`), 'playbook detail');
  const pbPath = (await get(url, `/api/v1/playbooks/${tree.playbook}`)).path;
  t.true(minify((await api(url, 'GET', `/api/v1/playbooks?path=${encodeURIComponent(pbPath)}`)).text).includes(`"arguments":${VERBATIM}`), 'playbook list row');
  await api(url, 'PATCH', `/api/v1/tasks/${tree.task}`, `{"tags":[${VERBATIM},99999999999999999999]}`);
  t.true(minify((await api(url, 'GET', `/api/v1/tasks/${tree.task}`)).text).includes(`"tags":[${VERBATIM},99999999999999999999]`), 'task tags');
  const rec = await api(url, 'POST', '/api/v1/records', `{"key":"k","type":"json","playbook":${tree.playbook},"value":${VERBATIM}}`);
  t.is(rec.status, 201);
  t.true(minify((await api(url, 'GET', `/api/v1/records/${rec.body.id}`)).text).includes(`"value":${VERBATIM}`), 'record value');
});

test('JSON fields take any JSON value but null; a JSON-looking string stays a string', async (t) => {
  const tree = await createTree(url);
  const refs = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
  for (const value of [[1, 'two', { three: 3 }], 'just a string', 42, 1.5, true, false, {}, [], '{"a": "dictionary"}']) {
    const r = await createResult(url, refs, { content: value });
    t.deepEqual(r.content, value, `content ${JSON.stringify(value)}`);
    t.deepEqual((await get(url, `/api/v1/results/${r.id}`)).content, value);
    const rec = await createRecord(url, tree.playbook, { value });
    t.deepEqual((await get(url, `/api/v1/records/${rec.id}`)).value, value, `record value ${JSON.stringify(value)}`);
  }
  for (const [path, body] of [
    ['/api/v1/results', { ...refs, content: null }],
    ['/api/v1/records', { key: 'n', type: 't', playbook: tree.playbook, value: null }],
  ] as const) {
    const r = await api(url, 'POST', path, body);
    t.is(r.status, 400, path);
    t.deepEqual(Object.values(r.body ?? {}), [['This field may not be null.']], `${path}: ${r.text}`);
  }
  const nullFacts = await api(url, 'PATCH', `/api/v1/hosts/${tree.host}`, { facts: null });
  t.is(nullFacts.status, 400);
  t.deepEqual(nullFacts.body, { facts: ['This field may not be null.'] });
});

test('a 5 MB result content round-trips intact', async (t) => {
  const tree = await createTree(url);
  const chunk = 'line of output: héllo ☃ ' + '0123456789'.repeat(5) + '\n';
  const stdout = chunk.repeat(Math.ceil((5 * 1024 * 1024) / Buffer.byteLength(chunk)));
  t.true(Buffer.byteLength(stdout) >= 5 * 1024 * 1024);
  const content = { changed: false, stdout, stdout_lines_count: stdout.length, rc: 0 };
  const refs = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
  const r = await api(url, 'POST', '/api/v1/results', { ...refs, content });
  t.is(r.status, 201, r.text.slice(0, 200));
  const detail = await get(url, `/api/v1/results/${r.body.id}`);
  t.is(detail.content.stdout.length, stdout.length);
  t.true(detail.content.stdout === stdout, 'stdout identical');
  t.deepEqual(Object.keys(detail.content), ['changed', 'stdout', 'stdout_lines_count', 'rc']);
  // the list row does not carry content
  const row = (await list(url, 'results', { task: tree.task, limit: 10 })).results.find((x: Json) => x.id === r.body.id);
  t.false('content' in row);
  // PUT replaces it entirely
  const replaced = await put(url, `/api/v1/results/${r.body.id}`, { ...refs, content: { small: true } });
  t.deepEqual(replaced.content, { small: true });
});

// ---------------------------------------------------------------- uuid

test('play uuid: any standard form in, lower-case hyphenated out; invalid → 400', async (t) => {
  const pb = await createPlaybook(url);
  const canonical = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
  for (const input of [
    canonical, canonical.toUpperCase(), canonical.replace(/-/g, ''), canonical.replace(/-/g, '').toUpperCase(),
    `{${canonical}}`, `urn:uuid:${canonical}`, `{${canonical.toUpperCase()}}`,
  ]) {
    const play = await api(url, 'POST', '/api/v1/plays', { uuid: input, playbook: pb.id });
    t.is(play.status, 201, `${input}: ${play.text}`);
    t.is(play.body.uuid, canonical, input);
    t.is((await get(url, `/api/v1/plays/${play.body.id}`)).uuid, canonical);
  }
  t.is((await list(url, 'plays', { uuid: canonical, playbook: pb.id })).count, 7);
  for (const input of ['nope', '1234', `${canonical}0`, canonical.replace('a', 'g'), `${canonical}_2`, '']) {
    const r = await api(url, 'POST', '/api/v1/plays', { uuid: input, playbook: pb.id });
    t.is(r.status, 400, input);
    t.deepEqual(r.body, { uuid: ['Must be a valid UUID.'] }, input);
  }
  const play = await createPlay(url, pb.id);
  const patched = await patch(url, `/api/v1/plays/${play.id}`, { uuid: canonical.toUpperCase() });
  t.is(patched.uuid, canonical);
  const bad = await api(url, 'PATCH', `/api/v1/plays/${play.id}`, { uuid: 'zzz' });
  t.is(bad.status, 400);
  t.is((await get(url, `/api/v1/plays/${play.id}`)).uuid, canonical);
});
