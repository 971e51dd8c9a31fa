// The live stream, GET /api/v1/stream (SPEC §14), against a real server over
// Server-Sent Events and WebSocket: hello first, one message per durable change
// in application order, derived updates, cascades, filters, resuming with
// `since` (also across a restart), reset, malformed cursors, slow consumers,
// authentication and batch ingest.
import test from 'ava';
import { connect } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import {
  SERVER_ENV, call, createFile, createHost, createPlay, createPlaybook, createResult, createTask, createTree,
  del, patch, post, randomUuid, serveForFile, sleep, uniq,
} from '../helpers/fixtures.js';
import { changes, openSse, openWs, type StreamClient, type StreamMessage } from '../helpers/stream.js';
import { hashSecret } from '../../src/config/password.js';

let lb: Logbook;
serveForFile((l) => { lb = l; }, SERVER_ENV);

const json = { 'content-type': 'application/json' };
const isChange = (m: StreamMessage) => m.data.op !== 'hello' && m.data.op !== 'reset';

/** Wait until a change matching `pred` arrived; returns the changes so far. */
async function until(client: StreamClient, pred: (d: any) => boolean): Promise<StreamMessage[]> {
  return client.waitFor((ms) => ms.some((m) => isChange(m) && pred(m.data)));
}

/** A marker write on its own playbook: once its change arrives, everything acknowledged before it has too. */
async function marker(url: string): Promise<number> {
  return (await createPlaybook(url)).id;
}

test('the first message is hello with a cursor; a change carries op, type, id, playbook and the list row', async (t) => {
  for (const open of [openSse, openWs]) {
    const s = await open(lb.url);
    try {
      const [hello] = await s.waitFor(1);
      t.is(hello!.data.op, 'hello');
      t.regex(hello!.data.cursor, /^[A-Za-z0-9_-]+$/);
      const pb = await createPlaybook(lb.url, { name: 'streamed' });
      const ms = await until(s, (d) => d.type === 'playbook' && d.id === pb.id);
      const m = ms.find((x) => x.data.id === pb.id && x.data.type === 'playbook')!;
      t.is(m.data.op, 'create');
      t.is(m.data.playbook, pb.id);
      t.deepEqual(Object.keys(m.data), ['cursor', 'op', 'type', 'id', 'playbook', 'row']);
      const { arguments: args, ...listed } = (await api(lb.url, 'GET', `/api/v1/playbooks?name=streamed`)).body.results.find((r: any) => r.id === pb.id);
      t.deepEqual(args, {}, 'the list row has arguments');
      t.deepEqual(m.data.row, listed, 'row = the list row, without a playbook\'s arguments');
      t.not(m.data.cursor, hello!.data.cursor);
      if (open === openSse) t.is(m.id, m.data.cursor, 'SSE id: is the cursor');
    } finally { s.close(); }
  }
});

test('a playbook\'s stream rows leave out its arguments, however large (they are re-sent on every counter change)', async (t) => {
  const s = await openSse(lb.url);
  try {
    await s.waitFor(1);
    const pb = await createPlaybook(lb.url, { arguments: { inventory: 'v'.repeat(500_000) } });
    await createHost(lb.url, pb.id);
    const ms = await until(s, (d) => d.type === 'playbook' && d.id === pb.id && d.row.items.hosts === 1);
    const rows = ms.filter((m) => m.data.type === 'playbook' && m.data.id === pb.id);
    t.deepEqual(rows.map((m) => m.data.op), ['create', 'update']);
    for (const m of rows) {
      t.false('arguments' in m.data.row);
      t.true(JSON.stringify(m.data).length < 2_000, 'a small message');
    }
    const read = (await api(lb.url, 'GET', `/api/v1/playbooks/${pb.id}`)).body;
    t.is(read.arguments.inventory.length, 500_000, 'the playbook keeps them');
  } finally { s.close(); }
});

test('a refused write sends nothing; a delete sends op delete with row null', async (t) => {
  const tree = await createTree(lb.url);
  const s = await openSse(lb.url, `?playbook=${tree.playbook}`);
  try {
    await s.waitFor(1);
    await call(lb.url, 'POST', '/api/v1/results', { playbook: tree.playbook, play: tree.play, task: 999_999_999, host: tree.host }, 400);
    await call(lb.url, 'PATCH', `/api/v1/plays/${tree.play}`, { ended: '2000-01-01T00:00:00Z' }, 400);
    await del(lb.url, `/api/v1/results/${tree.result}`);
    const ms = await until(s, (d) => d.op === 'delete');
    const first = ms.find(isChange)!;
    t.deepEqual([first.data.op, first.data.type, first.data.id, first.data.row], ['delete', 'result', tree.result, null],
      'the first change after hello is the delete: the refused writes sent nothing');
  } finally { s.close(); }
});

test('a result updates its task, play, host and playbook rows once each, after the create', async (t) => {
  const tree = await createTree(lb.url);
  const s = await openWs(lb.url, `?playbook=${tree.playbook}`);
  try {
    await s.waitFor(1);
    const r = await createResult(lb.url, { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host }, { status: 'failed' });
    const ms = await s.waitFor((all) => changes(all).length >= 5);
    await sleep(300);
    const got = changes(s.messages);
    t.deepEqual(got[0], ['create', 'result', r.id]);
    t.deepEqual(got.slice(1).map(([op, type, id]) => `${op} ${type} ${id}`).sort(), [
      `update host ${tree.host}`, `update play ${tree.play}`, `update playbook ${tree.playbook}`, `update task ${tree.task}`,
    ]);
    const rows = new Map(ms.filter(isChange).map((m) => [m.data.type, m.data.row]));
    t.is(rows.get('task').items.results, 2);
    t.is(rows.get('play').items.results, 2);
    t.is(rows.get('playbook').items.results, 2);
    t.is(rows.get('host').failed, 1);
    t.is(rows.get('host').ok, 1);
  } finally { s.close(); }
});

test('a cascading delete sends one delete, for the record deleted', async (t) => {
  const tree = await createTree(lb.url);
  const task2 = await createTask(lb.url, { playbook: tree.playbook, play: tree.play, file: tree.file });
  await createResult(lb.url, { playbook: tree.playbook, play: tree.play, task: task2.id, host: tree.host });
  const s = await openSse(lb.url, `?playbook=${tree.playbook}`);
  try {
    await s.waitFor(1);
    await del(lb.url, `/api/v1/plays/${tree.play}`);
    await until(s, (d) => d.type === 'playbook');
    await sleep(300);
    const got = changes(s.messages);
    t.deepEqual(got.filter(([op]) => op === 'delete'), [['delete', 'play', tree.play]]);
    t.false(got.some(([, type]) => type === 'task' || type === 'result'), 'nothing about the tasks and results that went with it');
    const host = s.messages.find((m) => m.data.type === 'host');
    t.truthy(host, 'the host lost its results: its counters changed');
    t.is(host!.data.row.ok, 0);
    t.deepEqual(got.filter(([, type]) => type === 'playbook').length, 1);
  } finally { s.close(); }
});

test('filters: playbook= gives one playbook, type= (repeatable) gives those types', async (t) => {
  const [a, b] = [await createPlaybook(lb.url), await createPlaybook(lb.url)];
  const onlyA = await openSse(lb.url, `?playbook=${a.id}`);
  const typed = await openWs(lb.url, '?type=host&type=records');
  try {
    await Promise.all([onlyA.waitFor(1), typed.waitFor(1)]);
    await createHost(lb.url, b.id);
    await createPlay(lb.url, b.id);
    await post(lb.url, '/api/v1/records', { key: uniq('k'), value: 1, type: 'json', playbook: b.id });
    const hostA = await createHost(lb.url, a.id);
    await until(onlyA, (d) => d.type === 'host' && d.id === hostA.id);
    await until(typed, (d) => d.type === 'host' && d.id === hostA.id);
    t.true(onlyA.messages.filter(isChange).every((m) => m.data.playbook === a.id));
    t.true(typed.messages.filter(isChange).every((m) => m.data.type === 'host' || m.data.type === 'record'));
    t.true(typed.messages.some((m) => m.data.type === 'record'));
    const bad = await api(lb.url, 'GET', '/api/v1/stream?type=nonsense', undefined, { accept: 'text/event-stream' });
    t.is(bad.status, 400);
    t.truthy(bad.body.type);
    const badPb = await api(lb.url, 'GET', '/api/v1/stream?playbook=x', undefined, { accept: 'text/event-stream' });
    t.is(badPb.status, 400);
  } finally { onlyA.close(); typed.close(); }
});

test("a playbook's changes arrive in the order its writes were applied", async (t) => {
  const tree = await createTree(lb.url);
  const s = await openSse(lb.url, `?playbook=${tree.playbook}&type=result&type=playbook`);
  try {
    await s.waitFor(1);
    const ids: number[] = [];
    // concurrent writers: the order is the shard's, which the ids follow
    await Promise.all(Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 10; i++) ids.push((await createResult(lb.url, { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host })).id);
    }));
    await s.waitFor((ms) => ms.filter((m) => m.data.type === 'result').length >= 40);
    const results = s.messages.filter((m) => m.data.type === 'result').map((m) => m.data.id);
    t.deepEqual(results, [...ids].sort((x, y) => x - y));
    await until(s, (d) => d.type === 'playbook' && d.row.items.results === 41);
    const counts = s.messages.filter((m) => m.data.type === 'playbook').map((m) => m.data.row.items.results);
    t.deepEqual(counts, [...counts].sort((x, y) => x - y), 'item counts never go back');
  } finally { s.close(); }
});

test('batch ingest (POST /api/v1/ingest) changes are streamed', async (t) => {
  const s = await openWs(lb.url, '?type=play&type=task&type=host&type=result&type=playbook');
  try {
    await s.waitFor(1);
    const play = randomUuid();
    const task = randomUuid();
    const body = {
      playbook: { uuid: randomUuid(), path: '/ingest/site.yml', runner_version: '2.16.0' }, seq: 1,
      events: [
        { kind: 'file', path: '/ingest/site.yml', content: '- hosts: all\n' },
        { kind: 'play', uuid: play, name: 'p', status: 'running' },
        { kind: 'task', uuid: task, play, file: '/ingest/site.yml', name: 't', action: 'debug', lineno: 1, handler: false },
        { kind: 'result', task, host: 'web-01', status: 'ok' },
        { kind: 'result', task, host: 'web-02', status: 'ok', changed: true },
      ],
    };
    const r = await call(lb.url, 'POST', '/api/v1/ingest', body, 200);
    const id = r.body.playbook;
    const ms = await s.waitFor((all) => all.filter((m) => m.data.type === 'result' && m.data.playbook === id).length >= 2);
    await sleep(300);
    const mine = changes(s.messages.filter((m) => m.data.playbook === id));
    t.deepEqual(mine.filter(([op]) => op === 'create').map(([, type]) => type), ['playbook', 'play', 'task', 'host', 'result', 'host', 'result']);
    const updates = mine.filter(([op]) => op === 'update').map(([, type, rid]) => `${type} ${rid}`);
    t.is(new Set(updates).size, updates.length, 'at most one update per record per commit');
    const taskRow = s.messages.find((m) => m.data.type === 'task' && m.data.playbook === id)!.data.row;
    t.is(taskRow.items.results, 2, 'created in the same commit as its results: its row already counts them');
    t.true(ms.length > 0);
    // a second batch: results of existing records update them, once each, after the creates
    const at = s.messages.length;
    const second = await call(lb.url, 'POST', '/api/v1/ingest', {
      playbook: { id }, seq: 2,
      events: [
        { kind: 'result', task, host: 'web-01', status: 'failed' },
        { kind: 'result', task, host: 'web-01', status: 'ok' },
        { kind: 'task', uuid: task, status: 'completed' },
      ],
    }, 200);
    t.is(second.body.applied, 3);
    await s.waitFor((all) => all.slice(at).filter((m) => m.data.type === 'playbook' && m.data.id === id).length >= 1);
    await sleep(300);
    const next = changes(s.messages.slice(at).filter((m) => m.data.playbook === id)).map(([op, type]) => `${op} ${type}`);
    t.deepEqual(next, ['create result', 'create result', 'update task', 'update play', 'update host', 'update playbook']);
    const host = s.messages.slice(at).find((m) => m.data.type === 'host' && m.data.playbook === id)!.data.row;
    t.deepEqual([host.ok, host.failed], [2, 1]);
  } finally { s.close(); }
});

test('since (and SSE Last-Event-ID) replays what came after the cursor, then live, no gap and no duplicate', async (t) => {
  const watcher = await openSse(lb.url);
  try {
    await watcher.waitFor(1);
    const tree = await createTree(lb.url);
    await until(watcher, (d) => d.type === 'result' && d.id === tree.result);
    const cut = watcher.messages[watcher.messages.length - 1]!.data.cursor;
    const at = watcher.messages.length;
    const pb2 = await createPlaybook(lb.url);
    await createHost(lb.url, pb2.id);
    await createResult(lb.url, { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host });
    for (const open of ['ws', 'sse', 'last-event-id'] as const) {
      const resumed = open === 'ws' ? await openWs(lb.url, `?since=${cut}`)
        : open === 'sse' ? await openSse(lb.url, `?since=${cut}`) : await openSse(lb.url, '', { 'last-event-id': cut });
      try {
        const m = await marker(lb.url);
        await until(resumed, (d) => d.type === 'playbook' && d.id === m);
        await until(watcher, (d) => d.type === 'playbook' && d.id === m);
        // both up to the marker, and only this test's playbooks: other tests write meanwhile, and
        // their changes may come before or after the marker depending on which shard answers first
        const upTo = (ms: StreamMessage[]) => ms.slice(0, ms.findIndex((x) => x.data.type === 'playbook' && x.data.id === m) + 1);
        const ours = (ms: StreamMessage[]) => ms.filter((x) => x.data.playbook === tree.playbook || x.data.playbook === pb2.id);
        const expected = changes(ours(upTo(watcher.messages.slice(at))));
        const got = changes(ours(upTo(resumed.messages)));
        t.true(got.length >= 5);
        t.deepEqual([...got].sort(), [...expected].sort(), `${open}: the same changes, none twice`);
        t.is(resumed.messages[0]!.data.op, 'hello');
        // per playbook, the same order
        for (const p of [tree.playbook, pb2.id]) {
          const only = (ms: StreamMessage[]) => changes(upTo(ms).filter((x) => x.data.playbook === p));
          t.deepEqual(only(resumed.messages), only(watcher.messages.slice(at)));
        }
      } finally { resumed.close(); }
    }
  } finally { watcher.close(); }
});

test('a malformed cursor is refused with 400 JSON (SSE and WebSocket); GET without SSE or upgrade is 406', async (t) => {
  for (const cursor of ['zzz', 'MTox', '!!', encodeURIComponent(Buffer.from('1:1,2').toString('base64url'))]) {
    const r = await api(lb.url, 'GET', `/api/v1/stream?since=${cursor}`, undefined, { accept: 'text/event-stream' });
    t.is(r.status, 400, cursor);
    t.deepEqual(r.body, { since: ['Malformed cursor.'] });
    const e = await t.throwsAsync(openWs(lb.url, `?since=${cursor}`));
    t.is((e as any).status, 400);
  }
  const r = await api(lb.url, 'GET', '/api/v1/stream');
  t.is(r.status, 406);
  t.is(r.headers.get('content-type'), 'application/json');
});

test('label changes are streamed with playbook null', async (t) => {
  const s = await openSse(lb.url, '?type=label');
  try {
    await s.waitFor(1);
    const label = await post(lb.url, '/api/v1/labels', { name: uniq('lab') });
    await patch(lb.url, `/api/v1/labels/${label.id}`, { name: uniq('lab2') });
    await del(lb.url, `/api/v1/labels/${label.id}`);
    await s.waitFor(4);
    t.deepEqual(changes(s.messages), [['create', 'label', label.id], ['update', 'label', label.id], ['delete', 'label', label.id]]);
    t.true(s.messages.slice(1).every((m) => m.data.playbook === null));
  } finally { s.close(); }
});

// ---- a server of its own: read login required, small retention, small client buffers ----

test('auth, reset and slow consumers (read login required, STREAM_RETENTION=20, STREAM_MAX_BUFFER=64 KiB)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-stream-auth-'));
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, `ui:${await hashSecret(Buffer.from('ui-secret'), 14)}:read\n`);
  const strict = await startLogbook({ env: {
    LOGBOOK_SHARDS: '1', LOGBOOK_READ_LOGIN_REQUIRED: 'true', LOGBOOK_TOKENS_FILE: tokens,
    LOGBOOK_STREAM_RETENTION: '20', LOGBOOK_STREAM_MAX_BUFFER: '65536', LOGBOOK_STREAM_HEARTBEAT: '1',
  } });
  try {
    // ---- auth: a read
    const refused = await api(strict.url, 'GET', '/api/v1/stream', undefined, { accept: 'text/event-stream' });
    t.is(refused.status, 401);
    t.deepEqual(refused.body, { detail: 'Authentication credentials were not provided.' });
    t.is(((await t.throwsAsync(openWs(strict.url))) as any).status, 401);
    const wrong = await api(strict.url, 'GET', '/api/v1/stream?token=ui.wrong', undefined, { accept: 'text/event-stream' });
    t.is(wrong.status, 401);
    const viaToken = await openSse(strict.url, '?token=ui.ui-secret');
    const viaHeader = await openWs(strict.url, '', { authorization: 'Bearer ui.ui-secret' });
    const wsToken = await openWs(strict.url, '?token=ui.ui-secret');
    const [hello] = await viaToken.waitFor(1);
    await viaHeader.waitFor(1);
    await wsToken.waitFor(1);
    t.is(hello!.data.op, 'hello');

    // ---- reset: a cursor older than what is kept
    const start = hello!.data.cursor;
    const pb = await createPlaybook(strict.url);
    for (let i = 0; i < 30; i++) await createHost(strict.url, pb.id);
    await until(viaToken, (d) => d.type === 'playbook' && d.row.items.hosts === 30);
    const old = await openSse(strict.url, `?token=ui.ui-secret&since=${start}`);
    await old.waitFor(2);
    t.is(old.messages[0]!.data.op, 'hello');
    t.deepEqual(old.messages[1]!.data, { op: 'reset' });
    const after = await createHost(strict.url, pb.id);
    await until(old, (d) => d.type === 'host' && d.id === after.id);
    t.deepEqual(changes(old.messages).map(([, type]) => type), ['host', 'playbook'], 'after the reset: live changes only');
    old.close();
    // a recent cursor is still replayed
    const recent = viaToken.messages[viaToken.messages.length - 3]!.data.cursor;
    const resumed = await openWs(strict.url, `?token=ui.ui-secret&since=${recent}`);
    await resumed.waitFor(3);
    t.not(resumed.messages[1]!.data.op, 'reset');
    resumed.close();

    // ---- slow consumers: one SSE and one WebSocket client stop reading
    const sse = connect(strict.port, '127.0.0.1');
    let sseText = '';
    sse.setEncoding('latin1');
    sse.on('data', (d: string) => { sseText += d; });
    let sseClosed = false;
    sse.on('close', () => { sseClosed = true; });
    sse.write(`GET /api/v1/stream?token=ui.ui-secret HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n`);
    const slowWs = await openWs(strict.url, '?token=ui.ui-secret');
    await slowWs.waitFor(1);
    const beatDeadline = Date.now() + 10_000;
    while (!sseText.includes(': keep-alive\n\n') && Date.now() < beatDeadline) await sleep(100);
    t.true(sseText.includes(': keep-alive\n\n'), 'an idle SSE stream gets comment lines (LOGBOOK_STREAM_HEARTBEAT=1)');
    sse.pause();
    (slowWs.ws as any)._socket.pause();
    // a task's list row carries its tags: 150 rows of 200 kB each
    const file = await createFile(strict.url, pb.id);
    const play = await createPlay(strict.url, pb.id);
    const task = await createTask(strict.url, { playbook: pb.id, play: play.id, file: file.id });
    for (let i = 0; i < 150; i++) {
      await patch(strict.url, `/api/v1/tasks/${task.id}`, { tags: [String(i).padEnd(200_000, 'x')] });
    }
    // ~30 MB were sent to each: far more than the bound and the kernel's socket buffers
    sse.resume();
    (slowWs.ws as any)._socket.resume();
    const code = await Promise.race([slowWs.ended, sleep(30_000).then(() => -1)]);
    t.is(code, 1008, 'the WebSocket client was closed with 1008');
    const deadline = Date.now() + 30_000;
    // ended by the bound (the last chunk), or, when its socket stayed full for ~10 s, closed by uWS first
    while (!sseText.includes('\r\n0\r\n\r\n') && !sseClosed && Date.now() < deadline) await sleep(100);
    t.true(sseText.includes('\r\n0\r\n\r\n') || sseClosed, 'the SSE response was ended');
    t.true(sseText.length < 15_000_000, `the SSE client did not get everything (${sseText.length} bytes)`);
    sse.destroy();
    const metrics = (await api(strict.url, 'GET', '/metrics', undefined, { authorization: 'Bearer ui.ui-secret' })).text;
    t.regex(metrics, /^logbook_stream_clients_cut_off_total [12]$/m);
    t.regex(metrics, /^logbook_stream_subscribers \d+$/m);
    // the others kept up and are still served
    const last = await createHost(strict.url, pb.id);
    await until(viaHeader, (d) => d.type === 'host' && d.id === last.id);
    t.pass();
    viaToken.close(); viaHeader.close(); wsToken.close(); slowWs.close();
  } finally {
    await strict.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

// ---- across a restart ----

test('since resumes across a restart of the server (SIGTERM, start again on the same data): no gap, no duplicate', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-stream-restart-'));
  try {
    let server = await startLogbook({ dataDir, env: SERVER_ENV });
    const watcher = await openSse(server.url);
    await watcher.waitFor(1);
    const tree = await createTree(server.url);
    await until(watcher, (d) => d.type === 'result' && d.id === tree.result);
    const cut = watcher.messages[watcher.messages.length - 1]!.data.cursor;
    const at = watcher.messages.length;
    const before: number[] = [];
    for (let i = 0; i < 5; i++) before.push((await createResult(server.url, tree)).id);
    await until(watcher, (d) => d.type === 'result' && d.id === before[4]);
    await sleep(300);
    const seenBefore = changes(watcher.messages.slice(at));
    watcher.close();
    // streams still open at SIGTERM are ended (clients resume with since) and do not hold up the exit
    const lingeringSse = await openSse(server.url);
    const lingeringWs = await openWs(server.url);
    await Promise.all([lingeringSse.waitFor(1), lingeringWs.waitFor(1)]);
    t.is(await server.stop(), 0);
    t.is(await lingeringWs.ended, 1001);
    t.is(await lingeringSse.ended, 0);

    server = await startLogbook({ dataDir, env: { ...SERVER_ENV, LOGBOOK_TEST_HOOKS: '1' } });
    try {
      const resumed = await openWs(server.url, `?since=${cut}&playbook=${tree.playbook}`);
      const fresh = await openSse(server.url, `?playbook=${tree.playbook}`);
      await fresh.waitFor(1);
      const afterRestart = await createResult(server.url, tree);
      await until(resumed, (d) => d.type === 'result' && d.id === afterRestart.id);
      await until(fresh, (d) => d.type === 'playbook');
      await sleep(300);
      const expected = [...seenBefore, ...changes(fresh.messages)];
      t.deepEqual(changes(resumed.messages), expected);
      t.true(afterRestart.id > before[4]!, 'ids continue');
      // a replayed message carries the cursor it had live (one playbook, so one shard moved)
      const live = watcher.messages.slice(at).filter(isChange).map((m) => m.data.cursor);
      const replayed = resumed.messages.filter(isChange).slice(0, live.length).map((m) => m.data.cursor);
      t.deepEqual(replayed, live);

      // a shard worker that dies and is restarted: the streams stay open and continue without a gap
      const crash = await call(server.url, 'POST', `/__test__/shards/${tree.playbook % 3}/crash`, {}, 200);
      t.is(crash.body.crashing, tree.playbook % 3);
      let afterCrash: any = null;
      const deadline = Date.now() + 60_000;
      while (afterCrash === null && Date.now() < deadline) {
        const r = await api(server.url, 'POST', '/api/v1/results', { status: 'ok', playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host });
        if (r.status === 201) afterCrash = r.body; else await sleep(200);
      }
      t.truthy(afterCrash, 'the shard came back');
      await until(resumed, (d) => d.type === 'result' && d.id === afterCrash.id);
      await until(fresh, (d) => d.type === 'result' && d.id === afterCrash.id);
      const results = (c: StreamClient) => changes(c.messages).filter(([op, type]) => op === 'create' && type === 'result').map(([, , id]) => id);
      t.deepEqual(results(fresh), [afterRestart.id, afterCrash.id]);
      t.is(new Set(results(resumed)).size, results(resumed).length, 'no duplicate');
      resumed.close(); fresh.close();
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('OPTIONS and other methods', async (t) => {
  const r = await api(lb.url, 'OPTIONS', '/api/v1/stream');
  t.is(r.status, 200);
  t.is(r.headers.get('allow'), 'GET, OPTIONS');
  const p = await api(lb.url, 'POST', '/api/v1/stream', {}, json);
  t.is(p.status, 405);
});

