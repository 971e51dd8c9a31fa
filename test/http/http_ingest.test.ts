// SPEC.md §13 (batch ingest): identity by client uuid, natural keys and upserts,
// per-event outcomes with their cascade, exactly-once by seq, gzip (and a gzip
// bomb), limits, bad input, auth; playbook/task uuid on POST and as filters.
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { api, startLogbook } from '../helpers/server.js';
import { createPlaybook, get, list, post, randomUuid, serveForFile, uniq, type Json } from '../helpers/fixtures.js';
import { hashSecret } from '../../src/config/password.js';
import { rawExchange } from '../helpers/raw_http.js';

let url: string;
serveForFile((server) => { url = server.url; }, { LOGBOOK_SHARDS: '3', LOGBOOK_MAX_BODY_BYTES: String(4 * 1024 * 1024) });

const PATH = '/work/site.yml';
const SOURCE = '- hosts: all\n  tasks:\n    - debug: msg=hi\n';

function header(uuid: string, extra: Record<string, unknown> = {}): Json {
  return { uuid, path: PATH, runner_version: '2.16.0', status: 'running', started: '2026-01-01T00:00:00Z', ...extra };
}

const ingest = (body: unknown, headers: Record<string, string> = {}) => api(url, 'POST', '/api/v1/ingest', body, headers);

/** A playbook's first batch: a file, a play and a task, ready for results. */
function opening(uuid: string, extra: Json[] = []): Json {
  const play = randomUuid();
  return {
    play,
    body: {
      playbook: header(uuid), seq: 1, events: [
        { kind: 'file', path: PATH, content: SOURCE },
        { kind: 'play', uuid: play, name: 'first play', status: 'running', started: '2026-01-01T00:00:00Z' },
        { kind: 'task', uuid: `${uuid}-t1`, play, file: PATH, name: 'say hi', action: 'debug', lineno: 3, handler: false,
          tags: ['a'], status: 'running', started: '2026-01-01T00:00:01Z' },
        ...extra,
      ],
    },
  };
}

test('the first batch creates the playbook by uuid; events apply in order and name parents by natural key', async (t) => {
  const uuid = uniq('run');
  const { body } = opening(uuid, [
    { kind: 'result', task: `${uuid}-t1`, host: 'web-01', delegated_to: ['db-01'], status: 'ok', changed: true,
      content: 'CONTENT', started: '2026-01-01T00:00:01Z', ended: '2026-01-01T00:00:02Z' },
    { kind: 'record', key: 'build', value: { n: 1 }, type: 'json' },
  ]);
  body.playbook.labels = ['ingest', 'fleet'];
  // raw text: a JS object would reorder the integer-like key and round the big number
  const r = await ingest(JSON.stringify(body).replace('"CONTENT"', '{"msg":"hi","2":1,"big":12345678901234567890}'));
  t.is(r.status, 200, r.text);
  t.like(r.body, { seq: 1, applied: 5, rejected: [], duplicate: false });
  const pb = await get(url, `/api/v1/playbooks/${r.body.playbook}`);
  t.like(pb, { path: PATH, runner_version: '2.16.0', status: 'running', items: { plays: 1, tasks: 1, results: 1, hosts: 2, files: 1, records: 1 } });
  t.deepEqual(pb.labels.map((l: Json) => l.name).sort(), ['fleet', 'ingest']);
  const results = await list(url, 'results', { playbook: pb.id });
  t.is(results.count, 1);
  const result = await get(url, `/api/v1/results/${results.results[0].id}`);
  // content is stored as the client's text: key order and big integers survive
  const raw = await api(url, 'GET', `/api/v1/results/${result.id}`);
  t.true(raw.text.includes('"content":{"msg":"hi","2":1,"big":12345678901234567890}'), raw.text);
  t.is(result.status, 'changed');
  t.is(result.duration, '00:00:01.000000');
  const hosts = await list(url, 'hosts', { playbook: pb.id });
  const byName = Object.fromEntries(hosts.results.map((h: Json) => [h.name, h]));
  t.like(byName['web-01'], { ok: 1, changed: 1 });
  t.like(byName['db-01'], { ok: 0, changed: 0 }, 'a delegate is created by name and counts nothing');
  const task = (await list(url, 'tasks', { uuid: `${uuid}-t1` })).results;
  t.is(task.length, 1, 'a task can be found by its uuid');
  t.like(task[0], { name: 'say hi', lineno: 3, tags: ['a'], path: PATH, items: { results: 1 } });
  t.is((await list(url, 'playbooks', { uuid })).count, 1, 'a playbook can be found by its uuid');
});

test('ignored_facts redacts a result content\'s own ansible_facts in a batch, compact or spaced, short or long, and only there', async (t) => {
  const notice = "Not saved as configured by 'ignored_facts'";
  const uuid = uniq('facts');
  const facts = '{"ansible_env":{"SECRET":"x"},"ansible_distribution":"Debian"}';
  const redacted = { ansible_env: notice, ansible_distribution: 'Debian' };
  const contents: Array<[string, unknown]> = [
    [`{"ansible_facts":${facts},"changed":false}`, { ansible_facts: redacted, changed: false }],
    [`{"changed":false, "ansible_facts" : ${facts.replace(/,/g, ', ')}}`, { changed: false, ansible_facts: redacted }],
    [`{"x":{"ansible_facts":${facts}},"msg":"ansible_facts"}`, { x: { ansible_facts: JSON.parse(facts) }, msg: 'ansible_facts' }], // not its own: kept
    [`[{"ansible_facts":${facts}}]`, [{ ansible_facts: JSON.parse(facts) }]],
    // a key spelled with escapes is the same key
    [`{"ansible\\u005ffacts":${facts}}`, { ansible_facts: redacted }],
    [`{"msg":"caf\\u00e9","ansible_facts":{"ansible\\u005fenv":{"SECRET":"x"}}}`, { msg: 'café', ansible_facts: { ansible_env: notice } }],
  ];
  // each again, long enough to reach the shard as bytes rather than text (api/json_scan.ts asciiEventSpans)
  const pad = 'x'.repeat(200);
  for (const [raw, read] of [...contents]) {
    contents.push(Array.isArray(read)
      ? [raw.slice(0, -1) + `,"${pad}"]`, [...read, pad]]
      : [raw.slice(0, -1) + `,"pad":"${pad}"}`, { ...read as object, pad }]);
  }
  const { body } = opening(uuid, contents.map((_, i) => (
    { kind: 'result', task: `${uuid}-t1`, host: 'web-01', status: 'ok', content: `CONTENT${i}`, started: '2026-01-01T00:00:01Z' })));
  let text = JSON.stringify(body);
  contents.forEach(([raw], i) => { text = text.replace(`"CONTENT${i}"`, raw); });
  const r = await ingest(text);
  t.is(r.status, 200, r.text);
  t.like(r.body, { applied: 3 + contents.length, rejected: [] });
  const results = (await list(url, 'results', { playbook: r.body.playbook, order: 'id' })).results;
  t.is(results.length, contents.length);
  for (let i = 0; i < contents.length; i++) {
    t.deepEqual((await get(url, `/api/v1/results/${results[i].id}`)).content, contents[i]![1], contents[i]![0]);
  }
});

test('text beyond ASCII reads back the same whether sent as UTF-8 or as \\u escapes (two ways through the shard)', async (t) => {
  // An ASCII body is read event by event from its bytes, any other as one decoded text (Shard.ingest).
  const name = 'Zürich ✓ 🚀 “quoted”';
  const content = { msg: 'déjà vu — 日本', n: [1, 'ß'] };
  const events = (uuid: string) => opening(uuid, [
    { kind: 'host', name },
    { kind: 'result', task: `${uuid}-t1`, host: name, status: 'ok', content, started: '2026-01-01T00:00:01Z' },
    { kind: 'record', key: name, value: content, type: 'json' },
  ]).body;
  const ascii = (text: string) => text.replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  const read = async (text: string) => {
    t.is(/[^\x00-\x7f]/.test(text), text.includes('ü'));
    const r = await ingest(text);
    t.is(r.status, 200, r.text);
    t.like(r.body, { applied: 6, rejected: [] });
    const id = r.body.playbook;
    const host = (await list(url, 'hosts', { playbook: id })).results[0];
    const result = await get(url, `/api/v1/results/${(await list(url, 'results', { playbook: id })).results[0].id}`);
    const record = await get(url, `/api/v1/records/${(await list(url, 'records', { playbook: id })).results[0].id}`);
    return { host: host.name, content: result.content, record: [record.key, record.value] };
  };
  const utf8 = await read(JSON.stringify(events(uniq('utf8'))));
  const escaped = await read(ascii(JSON.stringify(events(uniq('escaped')))));
  t.deepEqual(utf8, { host: name, content, record: [name, content] });
  t.deepEqual(escaped, utf8);
});

test('reads while a large batch is applied see none of it or all of it, never a part', async (t) => {
  const uuid = `whole-${uniq()}`;
  const opened = await ingest(opening(uuid).body);
  t.is(opened.status, 200, opened.text);
  const id = opened.body.playbook as number;
  // a shard applies a large batch over several turns (LIMITS.ingestSliceEvents per turn)
  const N = 5_000;
  const events = Array.from({ length: N }, (_, i) => ({ kind: 'result', task: `${uuid}-t1`, host: `h${i % 10}`, status: 'ok', content: { i } }));
  let answered = false;
  const seen: number[] = [];
  const readers = Array.from({ length: 4 }, async () => {
    while (!answered) {
      const r = await api(url, 'GET', `/api/v1/playbooks/${id}`);
      seen.push(r.body.items.results as number);
    }
  });
  const batch = await ingest({ playbook: { uuid }, seq: 2, events });
  answered = true;
  await Promise.all(readers);
  t.is(batch.status, 200, batch.text);
  t.is(batch.body.applied, N);
  t.true(seen.length > 0);
  t.deepEqual([...new Set(seen)].filter((n) => n !== 0 && n !== N), [], `counts seen while the batch was applied: ${[...new Set(seen)].join(', ')}`);
  t.is((await get(url, `/api/v1/playbooks/${id}`)).items.results, N);
});

test('a large batch arriving in pieces, with a Content-Length or chunked, is read whole', async (t) => {
  const port = Number(new URL(url).port);
  for (const framing of ['content-length', 'chunked'] as const) {
    const uuid = `pieces-${framing}-${uniq()}`;
    const { body: first } = opening(uuid);
    t.is((await ingest(first)).status, 200);
    // ~1.2 MB: 600 results of 2 KB contents, each different
    const events = Array.from({ length: 600 }, (_, i) => ({
      kind: 'result', task: `${uuid}-t1`, host: `h${i % 7}`, status: 'ok', content: { i, msg: `${i}-`.padEnd(2000, String.fromCharCode(97 + (i % 26))) },
    }));
    const body = Buffer.from(JSON.stringify({ playbook: { uuid }, seq: 2, events }));
    const pieces: Buffer[] = [];
    for (let at = 0; at < body.length; at += 200_000) pieces.push(body.subarray(at, at + 200_000));
    const head = `POST /api/v1/ingest HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n`
      + (framing === 'content-length' ? `Content-Length: ${body.length}\r\n\r\n` : 'Transfer-Encoding: chunked\r\n\r\n');
    const sent = framing === 'content-length' ? pieces
      : [...pieces.map((p) => Buffer.concat([Buffer.from(p.length.toString(16) + '\r\n'), p, Buffer.from('\r\n')])), Buffer.from('0\r\n\r\n')];
    const r = await rawExchange(port, [head, ...sent], { gapMs: 20, waitMs: 20_000 });
    t.is(r.responses[0]?.status, 200, framing);
    t.like(JSON.parse(r.responses[0]!.body), { seq: 2, applied: 600, rejected: [], duplicate: false });
    const results = (await list(url, 'results', { playbook: JSON.parse(r.responses[0]!.body).playbook, order: 'id', limit: 600 })).results as Json[];
    t.is(results.length, 600);
    for (const i of [0, 1, 299, 599]) {
      t.deepEqual((await get(url, `/api/v1/results/${results[i]!.id}`)).content, events[i]!.content, `${framing}: result ${i}`);
    }
  }
});

test('later batches upsert by natural key: existing play, task, host, file, record are patched, not duplicated', async (t) => {
  const uuid = uniq('run');
  const { body, play } = opening(uuid, [
    { kind: 'host', name: 'web-01', facts: { os: 'debian' } },
    { kind: 'record', key: 'k', value: 'one', type: 'text' },
  ]);
  const first = await ingest(body);
  t.is(first.status, 200, first.text);
  const id = first.body.playbook;
  const second = await ingest({
    playbook: { uuid }, seq: 2, events: [
      { kind: 'result', task: `${uuid}-t1`, host: 'web-01', status: 'failed', ended: '2026-01-01T00:00:03Z', started: '2026-01-01T00:00:02Z' },
      { kind: 'task', uuid: `${uuid}-t1`, status: 'completed', ended: '2026-01-01T00:00:04Z' },
      { kind: 'play', uuid: play, status: 'completed', ended: '2026-01-01T00:00:05Z' },
      { kind: 'host', name: 'web-01', ok: 7, changed: 0, failed: 1, skipped: 0, unreachable: 0 },
      { kind: 'record', key: 'k', value: 'two' },
      { kind: 'playbook', status: 'failed', ended: '2026-01-01T00:00:06Z', labels: ['done'] },
    ],
  });
  t.is(second.status, 200, second.text);
  t.like(second.body, { playbook: id, seq: 2, applied: 6, rejected: [], duplicate: false });
  const pb = await get(url, `/api/v1/playbooks/${id}`);
  t.like(pb, { status: 'failed', ended: '2026-01-01T00:00:06.000000Z', duration: '00:00:06.000000', items: { plays: 1, tasks: 1, hosts: 1, records: 1, results: 1 } });
  t.deepEqual(pb.labels.map((l: Json) => l.name), ['done']);
  const tasks = await list(url, 'tasks', { playbook: id });
  t.like(tasks.results[0], { status: 'completed', duration: '00:00:03.000000' });
  const hosts = await list(url, 'hosts', { playbook: id });
  t.like(hosts.results[0], { name: 'web-01', ok: 7, failed: 1 }, 'an explicit host stats event overrides the live counters');
  const facts = await get(url, `/api/v1/hosts/${hosts.results[0].id}`);
  t.deepEqual(facts.facts, { os: 'debian' });
  const records = await list(url, 'records', { playbook: id });
  t.is(records.count, 1);
  t.is((await get(url, `/api/v1/records/${records.results[0].id}`)).value, 'two');
  // the playbook can also be named by id
  const third = await ingest({ playbook: { id }, seq: 3, events: [{ kind: 'playbook', name: 'renamed' }] });
  t.like(third.body, { playbook: id, seq: 3, applied: 1 });
  t.is((await get(url, `/api/v1/playbooks/${id}`)).name, 'renamed');
});

test('a bad event is skipped and reported; events naming it (or any unknown parent) are skipped too; the rest apply', async (t) => {
  const uuid = uniq('run');
  const badPlay = randomUuid();
  const r = await ingest({
    playbook: header(uuid), seq: 1, events: [
      { kind: 'file', path: PATH, content: SOURCE },
      { kind: 'play', uuid: badPlay, status: 'nonsense' },
      { kind: 'task', uuid: 'child', play: badPlay, file: PATH, action: 'debug', lineno: 1, handler: false },
      { kind: 'result', task: 'child', host: 'h1', status: 'ok' },
      { kind: 'task', uuid: 'orphan', play: randomUuid(), file: PATH, action: 'debug', lineno: 1, handler: false },
      { kind: 'task', uuid: 'nofile', play: badPlay, file: '/never/sent.yml', action: 'debug', lineno: 1, handler: false },
      { kind: 'host', name: 'h2', ok: 'many' },
      { kind: 'host', name: 'h3' },
      { kind: 'record', key: 'r', type: 'text', value: 'kept' },
    ],
  });
  t.is(r.status, 200, r.text);
  t.is(r.body.applied, 3);
  t.deepEqual(r.body.rejected.map((x: Json) => x.index), [1, 2, 3, 4, 5, 6]);
  t.deepEqual(Object.keys(r.body.rejected[0].errors), ['status']);
  t.deepEqual(Object.keys(r.body.rejected[1].errors), ['play']);
  t.deepEqual(Object.keys(r.body.rejected[2].errors), ['task']);
  t.deepEqual(Object.keys(r.body.rejected[5].errors), ['ok']);
  const pb = await get(url, `/api/v1/playbooks/${r.body.playbook}`);
  t.like(pb.items, { plays: 0, tasks: 0, results: 0, hosts: 1, files: 1, records: 1 });
  t.is((await list(url, 'hosts', { playbook: pb.id, name: 'h1' })).count, 0, 'a rejected result creates no host');
});

test('play keys are the client\'s: any string of at most 64 characters; a UUID is normalized', async (t) => {
  const uuid = uniq('run');
  const upper = randomUuid().toUpperCase();
  const r = await ingest({
    playbook: header(uuid), seq: 1, events: [
      { kind: 'file', path: PATH, content: SOURCE },
      { kind: 'play', uuid: 'play-one', name: 'opaque key', status: 'running' },
      { kind: 'play', uuid: upper, name: 'uuid key' },
      { kind: 'play', uuid: 'p'.repeat(65) },
      { kind: 'task', uuid: 't-1', play: 'play-one', file: PATH, action: 'debug', lineno: 1, handler: false },
      { kind: 'task', uuid: 't-2', play: upper.toLowerCase(), file: PATH, action: 'debug', lineno: 2, handler: false },
      { kind: 'play', uuid: 'play-one', status: 'completed' },
    ],
  });
  t.is(r.status, 200, r.text);
  t.is(r.body.applied, 6);
  t.deepEqual(r.body.rejected.map((x: Json) => [x.index, Object.keys(x.errors)]), [[3, ['uuid']]]);
  const plays = (await list(url, 'plays', { playbook: r.body.playbook })).results;
  t.deepEqual(plays.map((p: Json) => [p.name, p.uuid, p.status, p.items.tasks]), [
    ['opaque key', 'play-one', 'completed', 1], ['uuid key', upper.toLowerCase(), 'unknown', 1],
  ]);
});

test('rejected lists the first 100 events; applied counts all that applied', async (t) => {
  const { body } = opening(uniq('run'));
  for (let i = 0; i < 150; i++) body.events.push({ kind: 'result', task: 'no-such-task', host: 'h', status: 'ok' });
  body.events.push({ kind: 'host', name: 'last' });
  const r = await ingest(body);
  t.is(r.status, 200, r.text);
  t.is(r.body.applied, 4);
  t.is(r.body.rejected.length, 100);
  t.is(r.body.rejected[0].index, 3);
  t.is(r.body.rejected[99].index, 102);
});

test('seq: a repeated batch is a duplicate that changes nothing; a gap is 409; an unknown uuid wants seq 1', async (t) => {
  const uuid = uniq('run');
  const { body } = opening(uuid, [{ kind: 'result', task: `${uuid}-t1`, host: 'web', status: 'ok' }]);
  const first = await ingest(body);
  t.is(first.status, 200);
  const again = await ingest(body);
  t.is(again.status, 200);
  t.deepEqual(again.body, { playbook: first.body.playbook, seq: 1, applied: 0, duplicate: true });
  t.is((await list(url, 'results', { playbook: first.body.playbook })).count, 1, 'the duplicate added nothing');
  const gap = await ingest({ playbook: { uuid }, seq: 3, events: [] });
  t.is(gap.status, 409);
  t.deepEqual(gap.body, { detail: 'Expected seq 2.' });
  const unknown = await ingest({ playbook: header(uniq('run')), seq: 2, events: [] });
  t.is(unknown.status, 409);
  t.deepEqual(unknown.body, { detail: 'Expected seq 1.' });
  // a batch refused as a whole does not use up its seq
  const refused = await ingest({ playbook: { uuid }, seq: 2, events: [{ kind: 'bogus' }] });
  t.is(refused.status, 400);
  const second = await ingest({ playbook: { uuid }, seq: 2, events: [{ kind: 'result', task: `${uuid}-t1`, host: 'web', status: 'ok' }] });
  t.like(second.body, { seq: 2, applied: 1, duplicate: false });
  t.is((await list(url, 'results', { playbook: first.body.playbook })).count, 2);
});

test('a duplicate or refused repeat of a batch creates no label: a playbook event naming a new one, by uuid or by id, changes nothing', async (t) => {
  const uuid = uniq('run');
  const first = await ingest(opening(uuid).body);
  t.is(first.status, 200);
  const id = first.body.playbook;
  const kept = uniq('kept');
  const second = await ingest({ playbook: { uuid }, seq: 2, events: [{ kind: 'playbook', labels: [kept] }] });
  t.like(second.body, { seq: 2, applied: 1, duplicate: false });
  const labelled = async (name: string) => (await api(url, 'GET', `/api/v1/labels?name=${name}`)).body.count;
  t.is(await labelled(kept), 1);
  const never = uniq('never');
  for (const [what, named, seq] of [['uuid, seq 2', { uuid }, 2], ['uuid, seq 1', { uuid }, 1], ['id, seq 2', { id }, 2], ['id as text, seq 1', { id: String(id) }, 1]] as const) {
    const again = await ingest({ playbook: named, seq, events: [{ kind: 'playbook', labels: [never] }] });
    // the last applied seq (2) with another body is refused; an older one is a duplicate
    if (seq === 2) t.deepEqual([again.status, again.body], [409, { detail: 'Batch 2 was already applied with other content.' }], what);
    else t.deepEqual(again.body, { playbook: id, seq, applied: 0, duplicate: true }, what);
  }
  t.is(await labelled(never), 0, 'no label was created');
  t.deepEqual((await get(url, `/api/v1/playbooks/${id}`)).labels.map((l: Json) => l.name), [kept], 'the playbook keeps its labels');
});

test('a later batch may name its playbook by id as every FK takes one: an integer or a decimal string', async (t) => {
  const uuid = uniq('run');
  const { body } = opening(uuid);
  const first = await ingest(body);
  t.is(first.status, 200, first.text);
  const id: number = first.body.playbook;
  const result = (n: number) => ({ kind: 'result', task: `${uuid}-t1`, host: 'web', status: 'ok', content: { n } });
  // refused as a whole, each with the per-record API's message for that value: nothing applied, no seq used up
  const refusals: Array<[unknown, string]> = [
    [null, 'This field may not be null.'],
    [true, 'Incorrect type. Expected pk value, received bool.'],
    ['two', 'Incorrect type. Expected pk value, received str.'],
    [[id], 'Incorrect type. Expected pk value, received list.'],
    ['0', 'Invalid pk "0" - object does not exist.'],
    [-1, 'Invalid pk "-1" - object does not exist.'],
    ['999999999', 'Invalid pk "999999999" - object does not exist.'],
  ];
  for (const [given, message] of refusals) {
    const r = await ingest({ playbook: { id: given }, seq: 2, events: [result(0)] });
    t.is(r.status, 400, `${JSON.stringify(given)} → ${r.text}`);
    t.deepEqual(r.body, { playbook: { id: [message] } }, JSON.stringify(given));
  }
  t.is((await list(url, 'results', { playbook: id })).count, 0);
  // accepted: the decimal string, with the whitespace a FK may carry, and the integer
  const byString = await ingest({ playbook: { id: String(id) }, seq: 2, events: [result(2)] });
  t.is(byString.status, 200, byString.text);
  t.like(byString.body, { playbook: id, seq: 2, applied: 1, duplicate: false });
  const spaced = await ingest({ playbook: { id: ` ${id} ` }, seq: 3, events: [result(3)] });
  t.like(spaced.body, { playbook: id, seq: 3, applied: 1, duplicate: false });
  const byNumber = await ingest({ playbook: { id }, seq: 4, events: [result(4)] });
  t.like(byNumber.body, { playbook: id, seq: 4, applied: 1, duplicate: false });
  // the id as text names the same stream: its older seq is a duplicate; the last seq resent as sent is one too
  const again = await ingest({ playbook: { id: String(id) }, seq: 3, events: [result(3)] });
  t.deepEqual(again.body, { playbook: id, seq: 3, applied: 0, duplicate: true });
  const resent = await ingest({ playbook: { id }, seq: 4, events: [result(4)] });
  t.deepEqual(resent.body, { playbook: id, seq: 4, applied: 0, duplicate: true });
  t.is((await list(url, 'results', { playbook: id })).count, 3);
});

test('a number past 2^53 given as the playbook id or as a parent key is named as sent, not as its double', async (t) => {
  const uuid = uniq('run');
  const first = await ingest(opening(uuid).body);
  t.is(first.status, 200, first.text);
  // raw text: JSON.stringify would send the double (12345678901234567000)
  const huge = '12345678901234567890';
  const byId = await ingest(`{"playbook": {"id": ${huge}}, "seq": 2, "events": []}`);
  t.is(byId.status, 400);
  t.deepEqual(byId.body, { playbook: { id: [`Invalid pk "${huge}" - object does not exist.`] } });
  const next = '9007199254740993'; // 2^53 + 1: parses to 2^53
  // a body beyond ASCII takes the other way through the front (JSON.parse rather than the byte scan)
  const past = await ingest(`{"playbook": { "id" : ${next} }, "seq": 2, "events": [], "note": "é"}`);
  t.deepEqual(past.body, { playbook: { id: [`Invalid pk "${next}" - object does not exist.`] } });
  const events = `[{"kind": "task", "uuid": "t2", "play": ${huge}, "file": "${PATH}", "action": "debug", "lineno": 1, "handler": false},
    {"kind": "result", "task": ${huge}1, "host": "web"}]`;
  const r = await ingest(`{"playbook": {"uuid": "${uuid}"}, "seq": 2, "events": ${events}}`);
  t.is(r.status, 200, r.text);
  t.deepEqual(r.body.rejected, [
    { index: 0, errors: { play: [`No play "${huge}" in this playbook: it was never sent, or its event was rejected.`] } },
    { index: 1, errors: { task: [`No task "${huge}1" in this playbook: it was never sent, or its event was rejected.`] } },
  ]);
});

test('timestamps outside the supported range: the first batch\'s playbook is refused whole, an event is rejected alone', async (t) => {
  const uuid = uniq('run');
  const message = (v: string) => [`Datetime out of range: ${v} (supported: 1700-01-01 to 2250-12-31 UTC).`];
  const refused = await ingest({ playbook: header(uuid, { started: '2400-01-01T00:00:00.000001Z' }), seq: 1, events: [] });
  t.is(refused.status, 400);
  t.deepEqual(refused.body, { playbook: { started: message('2400-01-01T00:00:00.000001Z') } });
  t.is((await list(url, 'playbooks', { uuid })).count, 0);
  const { body } = opening(uuid, [
    { kind: 'result', task: `${uuid}-t1`, host: 'web', status: 'ok', started: '2026-01-01T00:00:02Z', ended: '2251-01-01T00:00Z' },
    { kind: 'task', uuid: `${uuid}-t1`, status: 'completed', ended: '2250-12-31T23:59:59.999999Z' },
    { kind: 'playbook', ended: '1699-12-31T23:59:59Z' },
  ]);
  const r = await ingest(body);
  t.is(r.status, 200, r.text);
  t.deepEqual(r.body.rejected, [
    { index: 3, errors: { ended: message('2251-01-01T00:00Z') } },
    { index: 5, errors: { ended: message('1699-12-31T23:59:59Z') } },
  ]);
  t.is((await list(url, 'results', { playbook: r.body.playbook })).count, 0);
  const task = (await list(url, 'tasks', { uuid: `${uuid}-t1` })).results[0];
  t.is(task.ended, '2250-12-31T23:59:59.999999Z');
  t.is((await get(url, `/api/v1/playbooks/${r.body.playbook}`)).ended, null);
});

test('concurrent retries of a first batch create one playbook', async (t) => {
  const uuid = uniq('run');
  const { body } = opening(uuid, [{ kind: 'result', task: `${uuid}-t1`, host: 'web', status: 'ok' }]);
  const replies = await Promise.all(Array.from({ length: 6 }, () => ingest(body)));
  t.true(replies.every((r) => r.status === 200), replies.map((r) => r.text).join('\n'));
  t.is(replies.filter((r) => !r.body.duplicate).length, 1);
  t.is(new Set(replies.map((r) => r.body.playbook)).size, 1);
  t.is((await list(url, 'playbooks', { uuid })).count, 1);
  t.is((await list(url, 'results', { playbook: replies[0]!.body.playbook })).count, 1);
});

test('gzip bodies are accepted; bad gzip is 400; a gzip bomb stops at the body limit with 413; other encodings 415', async (t) => {
  const uuid = uniq('run');
  const { body } = opening(uuid);
  const zipped = await fetch(`${url}/api/v1/ingest`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(JSON.stringify(body)),
  });
  t.is(zipped.status, 200, await zipped.clone().text());
  t.like(await zipped.json(), { applied: 3 });
  const bad = await fetch(`${url}/api/v1/ingest`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: 'not gzip at all',
  });
  t.is(bad.status, 400);
  t.deepEqual(await bad.json(), { detail: 'The body is not valid gzip.' });
  // 64 MiB of spaces inside a JSON string compress to ~64 KiB; the limit here is 4 MiB
  const bomb = gzipSync(Buffer.concat([Buffer.from('{"seq":1,"playbook":{"uuid":"bomb"},"events":[],"pad":"'), Buffer.alloc(64 * 1024 * 1024, 32), Buffer.from('"}')]));
  t.true(bomb.length < 1024 * 1024);
  const boom = await fetch(`${url}/api/v1/ingest`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: bomb,
  });
  t.is(boom.status, 413);
  t.deepEqual(await boom.json(), { detail: `Request body exceeds ${4 * 1024 * 1024} bytes.` });
  const br = await fetch(`${url}/api/v1/ingest`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'br' }, body: '{}',
  });
  t.is(br.status, 415);
  t.is((await list(url, 'playbooks', { uuid: 'bomb' })).count, 0);
});

test('limits: more than 10,000 events is 413 naming the limit; nothing applied', async (t) => {
  const uuid = uniq('run');
  const events = Array.from({ length: 10_001 }, (_, i) => ({ kind: 'host', name: `h${i}` }));
  const r = await ingest({ playbook: header(uuid), seq: 1, events });
  t.is(r.status, 413);
  t.deepEqual(r.body, { detail: 'A batch carries at most 10000 events.' });
  t.is((await list(url, 'playbooks', { uuid })).count, 0);
});

test('bad input is 400 for the whole batch and changes nothing', async (t) => {
  const uuid = uniq('run');
  const cases: Array<[unknown, Json]> = [
    ['{"seq":', undefined],
    ['[1,2]', { non_field_errors: ['Invalid data. Expected a dictionary, but got list.'] }],
    [{ playbook: header(uuid), events: [] }, { seq: ['This field is required.'] }],
    [{ playbook: header(uuid), seq: 0, events: [] }, { seq: ['Ensure this value is greater than or equal to 1.'] }],
    [{ playbook: header(uuid), seq: 'one', events: [] }, { seq: ['A valid integer is required.'] }],
    [{ seq: 1, events: [] }, { playbook: ['This field is required.'] }],
    [{ playbook: 'x', seq: 1, events: [] }, { playbook: ['Invalid data. Expected a dictionary, but got str.'] }],
    [{ playbook: { path: PATH, runner_version: '1' }, seq: 1, events: [] }, { playbook: { uuid: ['This field is required.'] } }],
    [{ playbook: { uuid: 'u'.repeat(65), path: PATH, runner_version: '1' }, seq: 1, events: [] }, { playbook: { uuid: ['Ensure this field has no more than 64 characters.'] } }],
    [{ playbook: { uuid }, seq: 1, events: [] }, { playbook: { runner_version: ['This field is required.'], path: ['This field is required.'] } }],
    [{ playbook: header(uuid), seq: 1 }, { events: ['This field is required.'] }],
    [{ playbook: header(uuid), seq: 1, events: {} }, { events: ['Expected a list of items but got type "dict".'] }],
    [{ playbook: header(uuid), seq: 1, events: [{ kind: 'host', name: 'a' }, 3] }, { events: ['Event 1 is not an object.'] }],
    [{ playbook: header(uuid), seq: 1, events: [{ kind: 'host', name: 'a' }, { kind: 'teleport' }] }, { events: ['Event 1: Unknown event kind "teleport".'] }],
    [{ playbook: { id: 999999999 }, seq: 2, events: [] }, { playbook: { id: ['Invalid pk "999999999" - object does not exist.'] } }],
  ];
  for (const [body, expected] of cases) {
    const r = await ingest(body);
    t.is(r.status, 400, `${JSON.stringify(body).slice(0, 120)} → ${r.text}`);
    if (expected !== undefined) t.deepEqual(r.body, expected);
    else t.regex(r.body.detail, /^JSON parse error/);
  }
  t.is((await list(url, 'playbooks', { uuid })).count, 0);
  const get405 = await api(url, 'GET', '/api/v1/ingest');
  t.is(get405.status, 405);
  t.is(get405.headers.get('allow'), 'POST, OPTIONS');
});

test('uuid on playbooks and tasks: accepted on POST, filterable, hidden from §2 shapes without compat mode', async (t) => {
  const uuid = uniq('pb');
  const pb = await createPlaybook(url, { uuid });
  t.false('uuid' in pb, 'SPEC §2 shapes are unchanged with compat mode off');
  const found = await list(url, 'playbooks', { uuid });
  t.deepEqual(found.results.map((r: Json) => r.id), [pb.id]);
  // a stream can continue a playbook created with that uuid
  const r = await ingest({ playbook: { uuid }, seq: 1, events: [{ kind: 'playbook', status: 'completed' }] });
  t.like(r.body, { playbook: pb.id, applied: 1 });
  const file = await post(url, '/api/v1/files', { playbook: pb.id, path: PATH, content: SOURCE });
  const play = await post(url, '/api/v1/plays', { playbook: pb.id, uuid: randomUuid() });
  await post(url, '/api/v1/tasks', { playbook: pb.id, play: play.id, file: file.id, action: 'debug', lineno: 1, handler: false, uuid: `${uuid}-task` });
  t.is((await list(url, 'tasks', { uuid: `${uuid}-task` })).count, 1);
});

test('auth: ingest is a write', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-ingest-auth-'));
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, `ci:${await hashSecret(Buffer.from('ci-secret'), 14)}:write\nro:${await hashSecret(Buffer.from('ro-secret'), 14)}:read\n`);
  const lb = await startLogbook({ env: { LOGBOOK_WRITE_LOGIN_REQUIRED: 'true', LOGBOOK_TOKENS_FILE: tokens } });
  try {
    const { body } = opening(uniq('run'));
    const anonymous = await api(lb.url, 'POST', '/api/v1/ingest', body);
    t.is(anonymous.status, 401);
    const reader = await api(lb.url, 'POST', '/api/v1/ingest', body, { authorization: 'Bearer ro.ro-secret' });
    t.is(reader.status, 403);
    const writer = await api(lb.url, 'POST', '/api/v1/ingest', body, { authorization: 'Bearer ci.ci-secret' });
    t.is(writer.status, 200, writer.text);
    t.like(writer.body, { seq: 1, applied: 3 }, 'the refused attempts did not use up seq 1');
  } finally {
    await lb.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
