// The live stream (SPEC §14) for what a write changes beyond its own record:
// labels (created, renamed, deleted; also get-or-created by a playbook write)
// and the rows that show another record's fields (a playbook's label names, a
// task's file path). Every message has its own cursor; a label change is
// replayed by `since` with the cursor it had live, also after a restart; a
// label rename or delete sends an `update` for each playbook carrying the
// label, a file's path rename one for each task showing that path, and a
// host's delete one for each result delegated to it (`delegated_to`).
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import {
  SERVER_ENV, SHARDS, createFile, createHost, createLabel, createPlay, createPlaybook, createPlaybookOnShard, createResult, createTask, createTree,
  del, patch, serveForFile, uniq,
} from '../helpers/fixtures.js';
import { openSse, openWs, type StreamClient, type StreamMessage } from '../helpers/stream.js';
import { parseProm, sample } from '../helpers/prom.js';

let lb: Logbook;
serveForFile((l) => { lb = l; }, SERVER_ENV);

const isChange = (m: StreamMessage) => m.data.op !== 'hello' && m.data.op !== 'reset';
/** What a client sees of a change: its cursor and what it is about. */
const seen = (ms: StreamMessage[]) => ms.filter(isChange).map((m) => `${m.data.cursor} ${m.data.op} ${m.data.type} ${m.data.id}`);
const is = (op: string, type: string, id: number) => (m: StreamMessage) => m.data.op === op && m.data.type === type && m.data.id === id;
const labelNames = (row: any): string[] => row.labels.map((l: any) => l.name).sort();

async function untilSeen(client: StreamClient, pred: (m: StreamMessage) => boolean): Promise<StreamMessage[]> {
  return client.waitFor((ms) => ms.some(pred), 60_000);
}

/** Messages up to and including the first that matches `pred`. */
function upTo(ms: StreamMessage[], pred: (m: StreamMessage) => boolean): StreamMessage[] {
  const i = ms.findIndex(pred);
  return i < 0 ? ms : ms.slice(0, i + 1);
}

test.serial('every message has its own cursor: label creates too (POST, and get-or-created by a playbook write)', async (t) => {
  const s = await openSse(lb.url);
  try {
    await s.waitFor(1);
    const before = await createPlaybook(lb.url);
    await untilSeen(s, is('create', 'playbook', before.id));
    const posted = await createLabel(lb.url);
    const name = uniq('implied');
    const pb = await createPlaybook(lb.url, { labels: [name] });
    const implied = pb.labels.find((l: any) => l.name === name);
    const ms = await untilSeen(s, is('create', 'playbook', pb.id));
    await untilSeen(s, is('create', 'label', implied.id));
    const cursors = ms.map((m) => m.data.cursor);
    t.is(new Set(cursors).size, cursors.length, `no two messages share a cursor: ${JSON.stringify(ms.map((m) => [m.data.op, m.data.type, m.data.id, m.data.cursor]))}`);
    const created = ms.find(is('create', 'label', posted.id));
    t.truthy(created, 'the posted label is sent');
    t.deepEqual(created!.data.row, posted);
    t.is(created!.data.playbook, null);
    t.is(created!.id, created!.data.cursor, 'SSE id: is the cursor');
    const impliedAt = ms.findIndex(is('create', 'label', implied.id));
    t.true(impliedAt >= 0, 'a label get-or-created by a playbook write is sent');
    t.deepEqual(ms[impliedAt]!.data.row.name, name);
    t.true(impliedAt < ms.findIndex(is('create', 'playbook', pb.id)), 'before the playbook that shows it');

    // acknowledged before a client subscribes: not sent to it
    const late = await createLabel(lb.url);
    const after = await openWs(lb.url, '?type=label&type=playbook');
    try {
      await after.waitFor(1);
      const marker = await createPlaybook(lb.url);
      await untilSeen(after, is('create', 'playbook', marker.id));
      t.false(after.messages.some(is('create', 'label', late.id)), 'the 201 came after its message was counted');
    } finally { after.close(); }
  } finally { s.close(); }
});

test.serial('a label rename or delete sends an update for each playbook carrying it, after the label\'s own message', async (t) => {
  const label = await createLabel(lb.url);
  const other = await createLabel(lb.url);
  const carrying: any[] = [];
  for (let shard = 0; shard < SHARDS; shard++) {
    carrying.push(await createPlaybookOnShard(lb.url, shard, { labels: [label.name, other.name] }));
  }
  const without = await createPlaybook(lb.url, { labels: [other.name] });
  const s = await openWs(lb.url);
  const one = await openSse(lb.url, `?playbook=${carrying[1].id}`);
  try {
    await Promise.all([s.waitFor(1), one.waitFor(1)]);
    const renamed = uniq('renamed');
    await patch(lb.url, `/api/v1/labels/${label.id}`, { name: renamed });
    for (const pb of carrying) await untilSeen(s, is('update', 'playbook', pb.id));
    const afterRename = s.messages.slice();
    const labelAt = afterRename.findIndex(is('update', 'label', label.id));
    t.true(labelAt > 0, 'the label update is sent');
    t.is(afterRename[labelAt]!.data.row.name, renamed);
    for (const pb of carrying) {
      const at = afterRename.findIndex(is('update', 'playbook', pb.id));
      t.true(at > labelAt, `playbook ${pb.id} after the label's own message`);
      t.deepEqual(labelNames(afterRename[at]!.data.row), [other.name, renamed].sort(), 'its row shows the new name');
      t.is(afterRename.filter(is('update', 'playbook', pb.id)).length, 1, 'one update per playbook');
    }
    const { arguments: _args, ...listed } = (await api(lb.url, 'GET', `/api/v1/playbooks?path=${encodeURIComponent(carrying[0].path)}`)).body.results
      .find((r: any) => r.id === carrying[0].id);
    t.deepEqual(afterRename.find(is('update', 'playbook', carrying[0].id))!.data.row, listed, 'the row is the list row (a playbook\'s without its arguments)');

    await del(lb.url, `/api/v1/labels/${label.id}`);
    await untilSeen(s, is('delete', 'label', label.id));
    for (const pb of carrying) await s.waitFor((ms) => ms.filter(is('update', 'playbook', pb.id)).length >= 2, 60_000);
    const afterDelete = s.messages.slice(afterRename.length);
    const deletedAt = afterDelete.findIndex(is('delete', 'label', label.id));
    t.is(afterDelete[deletedAt]!.data.row, null);
    for (const pb of carrying) {
      const at = afterDelete.findIndex(is('update', 'playbook', pb.id));
      t.true(at > deletedAt, `playbook ${pb.id} after the delete`);
      t.deepEqual(labelNames(afterDelete[at]!.data.row), [other.name], 'its row no longer shows the label');
    }
    // a playbook that does not carry the label is not updated
    const marker = await createPlaybook(lb.url);
    await untilSeen(s, is('create', 'playbook', marker.id));
    t.false(s.messages.some((m) => m.data.type === 'playbook' && m.data.id === without.id), 'nothing for a playbook without the label');
    // a stream of one playbook gets that playbook's updates (labels themselves have playbook null)
    await one.waitFor((ms) => ms.filter(is('update', 'playbook', carrying[1].id)).length >= 2, 60_000);
    t.true(one.messages.filter(isChange).every((m) => m.data.playbook === carrying[1].id));
  } finally { s.close(); one.close(); }
});

test.serial('a file path rename sends an update for each task showing the path', async (t) => {
  const tree = await createTree(lb.url);
  const second = await createTask(lb.url, { playbook: tree.playbook, play: tree.play, file: tree.file });
  const otherFile = await createFile(lb.url, tree.playbook);
  const elsewhere = await createTask(lb.url, { playbook: tree.playbook, play: tree.play, file: otherFile.id });
  const s = await openSse(lb.url, `?playbook=${tree.playbook}`);
  try {
    await s.waitFor(1);
    const path = `/work/${uniq('renamed')}.yml`;
    await patch(lb.url, `/api/v1/files/${tree.file}`, { path });
    await untilSeen(s, is('update', 'task', second.id));
    await untilSeen(s, is('update', 'task', tree.task));
    const marker = (await createPlay(lb.url, tree.playbook)).id;
    await untilSeen(s, is('create', 'play', marker));
    const ms = s.messages.filter(isChange);
    t.is(ms[0]!.data.type, 'file', 'the file first');
    t.is(ms[0]!.data.row.path, path);
    for (const task of [tree.task, second.id]) {
      const updates = ms.filter(is('update', 'task', task));
      t.is(updates.length, 1, `one update for task ${task}`);
      t.is(updates[0]!.data.row.path, path, 'its row shows the new path');
    }
    t.false(ms.some((m) => m.data.type === 'task' && m.data.id === elsewhere.id), 'nothing for a task of another file');
    // a PATCH that leaves the path as it is changes no task row
    const at = s.messages.length;
    await patch(lb.url, `/api/v1/files/${tree.file}`, { path });
    const again = (await createPlay(lb.url, tree.playbook)).id;
    await untilSeen(s, is('create', 'play', again));
    t.false(s.messages.slice(at).some((m) => m.data.type === 'task'));
  } finally { s.close(); }
});

test('since replays label creates, renames and deletes with the cursors they had live, also after a restart', async (t) => {
  t.timeout(180_000);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-stream-labels-'));
  let server: Logbook | null = await startLogbook({ dataDir, env: SERVER_ENV });
  try {
    const url = server.url;
    const watcher = await openSse(url);
    const [hello] = await watcher.waitFor(1);
    const cut = hello!.data.cursor as string;
    const label = await createLabel(url);
    const carriers: any[] = [];
    for (let shard = 0; shard < SHARDS; shard++) carriers.push(await createPlaybookOnShard(url, shard, { labels: [label.name] }));
    await patch(url, `/api/v1/labels/${label.id}`, { name: uniq('renamed') });
    const implied = (await createPlaybook(url, { labels: [uniq('implied')] })).labels[0];
    await del(url, `/api/v1/labels/${label.id}`);
    await del(url, `/api/v1/labels/${implied.id}`);
    const marker = (await createPlaybook(url)).id;
    const isMarker = is('create', 'playbook', marker);
    await untilSeen(watcher, isMarker);
    const live = upTo(watcher.messages.slice(1), isMarker);
    const liveSeen = seen(live);
    for (const op of ['create', 'update', 'delete']) t.true(live.some(is(op, 'label', label.id)), `${op} of the label is sent live`);
    t.true(live.some(is('create', 'label', implied.id)) && live.some(is('delete', 'label', implied.id)));
    // resume in the middle too: right after the label's create
    const midAt = live.findIndex(is('create', 'label', label.id));
    const mid = live[midAt]!.data.cursor as string;
    const midSeen = seen(live.slice(midAt + 1));

    const check = async (base: string, when: string) => {
      for (const open of ['sse', 'ws'] as const) {
        const all = open === 'sse' ? await openSse(base, `?since=${cut}`) : await openWs(base, `?since=${cut}`);
        const fromMid = open === 'sse' ? await openSse(base, '', { 'last-event-id': mid }) : await openWs(base, `?since=${mid}`);
        const labels = open === 'sse' ? await openSse(base, `?since=${cut}&type=label`) : await openWs(base, `?since=${cut}&type=label`);
        try {
          await untilSeen(all, isMarker);
          t.deepEqual(seen(upTo(all.messages, isMarker)), liveSeen, `${when}, ${open}: the same messages, order and cursors`);
          await untilSeen(fromMid, isMarker);
          t.deepEqual(seen(upTo(fromMid.messages, isMarker)), midSeen, `${when}, ${open}: from the middle`);
          const liveLabels = seen(live.filter((m) => m.data.type === 'label'));
          await labels.waitFor((ms) => seen(ms).length >= liveLabels.length, 60_000);
          t.deepEqual(seen(labels.messages), liveLabels, `${when}, ${open}: type=label`);
        } finally { all.close(); fromMid.close(); labels.close(); }
      }
    };
    await check(url, 'live server');
    watcher.close();

    t.is(await server.stop(), 0);
    server = await startLogbook({ dataDir, env: SERVER_ENV });
    await check(server.url, 'after a restart');
    // and after a kill -9
    await server.stop('SIGKILL');
    server = await startLogbook({ dataDir, env: SERVER_ENV });
    await check(server.url, 'after kill -9');
    // numbering goes on: a new label change after the restart is sent and replayed after the old ones
    const s = await openSse(server.url, `?since=${cut}&type=label`);
    try {
      const fresh = await createLabel(server.url);
      await untilSeen(s, is('create', 'label', fresh.id));
      const got = seen(s.messages);
      t.deepEqual(got.slice(0, -1), seen(live.filter((m) => m.data.type === 'label')));
      t.is(new Set(s.messages.filter(isChange).map((m) => m.data.cursor)).size, got.length);
    } finally { s.close(); }
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a label change stored while shard 0 cannot log it still reaches the stream: tried again when the shard is back, sent again after kill -9', async (t) => {
  t.timeout(180_000);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-stream-labels-retry-'));
  const env = { ...SERVER_ENV, LOGBOOK_TEST_HOOKS: '1' };
  let server: Logbook | null = await startLogbook({ dataDir, env });
  try {
    const watcher = await openSse(server.url, '?type=label');
    const [hello] = await watcher.waitFor(1);
    const cut = hello!.data.cursor as string;
    const label = await createLabel(server.url);

    // shard 0's worker dies: the rename is stored and answered; its message follows once the shard is back
    await api(server.url, 'POST', '/__test__/shards/0/crash', {});
    const first = uniq('while-down');
    await patch(server.url, `/api/v1/labels/${label.id}`, { name: first });
    await untilSeen(watcher, (m) => m.data.op === 'update' && m.data.id === label.id && m.data.row.name === first);

    // shard 0 is busy (a long pause) when the next rename is stored, and the process is killed before it logs it
    await api(server.url, 'POST', '/__test__/shards/0/stall/8000', {});
    const second = uniq('before-kill');
    const pending = api(server.url, 'PATCH', `/api/v1/labels/${label.id}`, { name: second }).catch(() => null);
    const front = open({ path: join(dataDir, 'front.mdb'), readOnly: true, maxDbs: 4 });
    try {
      const labels = front.openDB<{ name: string }, number>({ name: 'labels', keyEncoding: 'uint32', encoding: 'msgpack' });
      const deadline = Date.now() + 30_000;
      while (labels.get(label.id)?.name !== second && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      t.is(labels.get(label.id)?.name, second, 'the rename is in front.mdb');
    } finally { await front.close(); }
    await server.stop('SIGKILL');
    await pending;
    watcher.close();
    t.false(watcher.messages.some((m) => m.data.row?.name === second), 'not sent before the kill');

    server = await startLogbook({ dataDir, env });
    t.is((await api(server.url, 'GET', `/api/v1/labels/${label.id}`)).body.name, second);
    const resumed = await openWs(server.url, `?since=${cut}&type=label`);
    try {
      await untilSeen(resumed, (m) => m.data.op === 'update' && m.data.id === label.id && m.data.row.name === second);
      const got = resumed.messages.filter(isChange);
      t.deepEqual(got.map((m) => [m.data.op, m.data.row?.name]), [['create', label.name], ['update', first], ['update', second]]);
      t.deepEqual(seen(got.slice(0, 2)), seen(watcher.messages.filter(isChange)), 'the same cursors as live');
      t.is(new Set(got.map((m) => m.data.cursor)).size, 3);
      // sent once: a restart after it was logged does not send it again
      t.is(await server.stop(), 0);
      server = await startLogbook({ dataDir, env });
      const again = await openSse(server.url, `?since=${cut}&type=label`);
      try {
        const marker = await createLabel(server.url);
        await untilSeen(again, is('create', 'label', marker.id));
        t.deepEqual(seen(again.messages).slice(0, -1), seen(got));
      } finally { again.close(); }
    } finally { resumed.close(); }
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('deleting a host sends an update for each result delegated to it: a consumer\'s copy of the results stays equal to the list', async (t) => {
  t.timeout(120_000);
  // the stream renders logbook's shapes; `delegated_to` shows in ARA's dialect (its http client's User-Agent)
  const compat = await startLogbook({ env: SERVER_ENV });
  const ara = { 'user-agent': 'ara-http-client_1.7.4' };
  try {
    const url = compat.url;
    const s = await openSse(url);
    const [hello] = await s.waitFor(1);
    const tree = await createTree(url);
    const refs = { playbook: tree.playbook, play: tree.play, task: tree.task };
    const gone = (await createHost(url, tree.playbook)).id as number;
    const stays = (await createHost(url, tree.playbook)).id as number;
    const on = (host: number, delegated_to: number[]) => createResult(url, { ...refs, host }, { delegated_to }).then((r) => r.id as number);
    const toGone = await on(tree.host, [gone]);
    const toBoth = await on(tree.host, [gone, stays]);
    const toOther = await on(tree.host, [stays]);
    const ofGone = await on(gone, [stays]); // goes with its host
    const fromOther = await on(stays, [gone]);
    await del(url, `/api/v1/hosts/${gone}`);
    const marker = (await createPlay(url, tree.playbook)).id;
    await untilSeen(s, is('create', 'play', marker));

    // the consumer: results by id from the stream (a host's delete takes its results with it)
    const copy = new Map<number, any>();
    for (const m of s.messages.filter(isChange)) {
      const { op, type, id, row } = m.data;
      if (type === 'result') { if (op === 'delete') copy.delete(id); else copy.set(id, row); }
      if (type === 'host' && op === 'delete') for (const [rid, r] of copy) if (r.host === id) copy.delete(rid);
    }
    const listed = (await api(url, 'GET', `/api/v1/results?playbook=${tree.playbook}&limit=1000`)).body.results;
    t.deepEqual([...copy.values()].sort((a, b) => a.id - b.id), listed, 'what the stream said equals what the list shows');
    const listedAra = (await api(url, 'GET', `/api/v1/results?playbook=${tree.playbook}&limit=1000`, undefined, ara)).body.results;
    t.deepEqual(listedAra.map((r: any) => [r.id, r.delegated_to]), [[tree.result, []], [toGone, []], [toBoth, [stays]], [toOther, [stays]], [fromOther, []]]);

    // the commit's changes: the host's delete, then what it changed
    const hostAt = s.messages.findIndex(is('delete', 'host', gone));
    t.true(hostAt >= 0, 'the host\'s delete is sent');
    const after = upTo(s.messages, is('create', 'play', marker)).slice(hostAt);
    const updated = after.filter((m) => m.data.op === 'update' && m.data.type === 'result').map((m) => m.data.id).sort((a, b) => a - b);
    t.deepEqual(updated, [toGone, toBoth, fromOther], 'one update for each result delegated to the host, none for others');
    t.false(after.some((m) => m.data.type === 'result' && m.data.id === ofGone), 'the host\'s own result goes with it (one delete, for the host)');
    const cursors = after.map((m) => m.data.cursor);
    t.is(new Set(cursors).size, cursors.length, 'each its own cursor');

    // replayed by `since` as they were sent live
    const replay = await openWs(url, `?since=${hello!.data.cursor}`);
    try {
      await untilSeen(replay, is('create', 'play', marker));
      t.deepEqual(seen(upTo(replay.messages, is('create', 'play', marker))), seen(upTo(s.messages, is('create', 'play', marker))));
    } finally { replay.close(); }
  } finally { await compat.stop(); }
});

test('a label rename reaches playbook rows, read or streamed, only once it is durable and its own message is logged; its answer once every shard shows it', async (t) => {
  t.timeout(180_000);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-stream-labels-replica-'));
  const server = await startLogbook({ dataDir, env: { ...SERVER_ENV, LOGBOOK_TEST_HOOKS: '1' } });
  try {
    const url = server.url;
    const label = await createLabel(url);
    const pbs: any[] = [];
    for (let shard = 0; shard < SHARDS; shard++) pbs.push(await createPlaybookOnShard(url, shard, { labels: [label.name] }));
    const s = await openSse(url);
    await s.waitFor(1);

    // shard 0 logs the labels' own messages: held busy, the rename is stored but its message waits
    await api(url, 'POST', '/__test__/shards/0/stall/8000', {});
    const renamed = uniq('renamed');
    const answer = api(url, 'PATCH', `/api/v1/labels/${label.id}`, { name: renamed });
    const front = open({ path: join(dataDir, 'front.mdb'), readOnly: true, maxDbs: 4 });
    try {
      const labels = front.openDB<{ name: string }, number>({ name: 'labels', keyEncoding: 'uint32', encoding: 'msgpack' });
      const deadline = Date.now() + 30_000;
      while (labels.get(label.id)?.name !== renamed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      t.is(labels.get(label.id)?.name, renamed, 'the rename is in front.mdb');
    } finally { await front.close(); }
    // meanwhile the other shards' playbooks are written and read: they show the label as it was
    const written = await patch(url, `/api/v1/playbooks/${pbs[1].id}`, { name: uniq('during') });
    const read = (await api(url, 'GET', `/api/v1/playbooks/${pbs[2].id}`)).body;
    t.deepEqual(labelNames(written), [label.name], 'a playbook written before the rename\'s message is logged shows the old name');
    t.deepEqual(labelNames(read), [label.name], 'and one read then');
    // a playbook write that names the new name waits for the rename: it shows the label by that name
    const naming = api(url, 'PATCH', `/api/v1/playbooks/${pbs[2].id}`, { labels: [renamed] });

    const r = await answer;
    t.is(r.status, 200, r.text);
    for (const pb of pbs) t.deepEqual(labelNames((await api(url, 'GET', `/api/v1/playbooks/${pb.id}`)).body), [renamed], `answered: playbook ${pb.id} shows the new name`);
    const n = await naming;
    t.is(n.status, 200, n.text);
    t.deepEqual(n.body.labels, [{ id: label.id, name: renamed }]);

    // a consumer that keeps the labels by their messages never sees a playbook row name one otherwise
    const marker = (await createPlaybookOnShard(url, 0)).id;
    await untilSeen(s, is('create', 'playbook', marker));
    const names = new Map<number, string>([[label.id, label.name]]);
    const shown: Array<{ op: string; playbook: number; name: string; known: string | undefined }> = [];
    for (const m of upTo(s.messages, is('create', 'playbook', marker)).filter(isChange)) {
      const { op, type, id, row } = m.data;
      if (type === 'label') { if (row) names.set(id, row.name); else names.delete(id); continue; }
      if (type !== 'playbook' || !row) continue;
      for (const l of row.labels) if (l.id === label.id) shown.push({ op, playbook: id, name: l.name, known: names.get(l.id) });
    }
    t.deepEqual(shown.filter((x) => x.name !== x.known), [], 'every playbook row names the label as its messages so far do');
    t.true(shown.some((x) => x.playbook === pbs[1].id && x.name === label.name), 'the write during the wait was streamed with the old name');
    t.true(shown.some((x) => x.name === renamed), 'and the rows after the rename with the new one');
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('label reads show only durable changes: a create, rename or delete still on its way to the store is not read, by id, by name or in the list\'s order', async (t) => {
  t.timeout(120_000);
  const server = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_TEST_HOOKS: '1' } });
  try {
    const url = server.url;
    // names in an order that a rename changes: 'b…' renamed 'd…' moves past 'c…'
    const tag = uniq('').slice(1);
    const a = await createLabel(url, `a-${tag}`);
    const b = await createLabel(url, `b-${tag}`);
    const c = await createLabel(url, `c-${tag}`);
    const pb = await createPlaybookOnShard(url, 1, { labels: [b.name] });
    const read = async (path: string) => (await api(url, 'GET', path)).body;
    const byName = `/api/v1/labels?order=name&limit=100`;
    const before = await read(byName);
    t.deepEqual(before.results.map((l: any) => l.name), [a.name, b.name, c.name]);
    const counted = async () => sample(parseProm((await api(url, 'GET', '/metrics')).text), 'logbook_records', { type: 'label' });
    t.is(await counted(), 3);

    // the label store takes its time to make the next writes durable
    t.is((await api(url, 'POST', '/__test__/labels/hold/4000', {})).status, 200);
    const answered: string[] = [];
    const renamed = `d-${tag}`;
    // (a failed assertion stops the server: a request then fails, and is not left unhandled)
    const write = (what: string, method: string, path: string, body?: unknown) =>
      api(url, method, path, body).then((r) => { answered.push(what); return r; }, (err) => ({ status: 0, text: String(err), body: null as any }));
    const writes = [
      write('rename', 'PATCH', `/api/v1/labels/${b.id}`, { name: renamed }),
      write('delete', 'DELETE', `/api/v1/labels/${c.id}`),
      write('create', 'POST', '/api/v1/labels', { name: `e-${tag}` }),
      write('playbook', 'POST', '/api/v1/playbooks', { path: '/p.yml', runner_version: '2.16', labels: [`f-${tag}`] }),
    ];
    await new Promise((r) => setTimeout(r, 300));
    // the name is taken at once: a second label of it is refused; and the names being left are
    // not free yet (the rename or delete may fail and be set back)
    for (const taken of [renamed, b.name, c.name]) {
      const twin = await api(url, 'POST', '/api/v1/labels', { name: taken });
      t.is(twin.status, 400, `${taken}: ${twin.text}`);
    }

    // meanwhile every read shows the labels as stored
    const during = {
      b: await api(url, 'GET', `/api/v1/labels/${b.id}`),
      c: await api(url, 'GET', `/api/v1/labels/${c.id}`),
      list: await read(byName),
      desc: await read(`/api/v1/labels?order=-name&limit=2`),
      oldName: await read(`/api/v1/labels?name=b-${tag}`),
      newName: await read(`/api/v1/labels?name=${renamed}`),
      created: await read(`/api/v1/labels?name=e-${tag}`),
      implied: await read(`/api/v1/labels?name=f-${tag}`),
      playbook: await read(`/api/v1/playbooks/${pb.id}`),
      counted: await counted(),
    };
    t.deepEqual(answered, [], 'the reads were made while every write was still on its way');
    t.is(during.b.status, 200);
    t.deepEqual(during.b.body, b, 'the label by id: its name before the rename');
    t.is(during.c.status, 200);
    t.deepEqual(during.c.body, c, 'a label being deleted is still there');
    t.deepEqual(during.list, before, 'the list: the same rows, in the same order, the same count');
    t.deepEqual(during.desc.results.map((l: any) => l.name), [c.name, b.name], 'ordered and paged by the stored names');
    t.is(during.oldName.count, 1, 'found by its stored name');
    t.is(during.newName.count, 0, 'not by the name it is being renamed to');
    t.is(during.created.count, 0, 'a label being created is not listed');
    t.is(during.implied.count, 0, 'nor one created for a playbook write still on its way');
    t.deepEqual(labelNames(during.playbook), [b.name], 'a playbook carrying the label shows its stored name');
    t.is(during.counted, 3, 'the metric counts the labels as stored');

    // once stored, each write is answered and reads show it
    const [rename, remove, create, playbook] = await Promise.all(writes);
    t.is(rename!.status, 200, rename!.text);
    t.is(rename!.body.name, renamed);
    t.is(remove!.status, 204, remove!.text);
    t.is(create!.status, 201, create!.text);
    t.is(playbook!.status, 201, playbook!.text);
    t.deepEqual(await read(`/api/v1/labels/${b.id}`), rename!.body);
    t.is((await api(url, 'GET', `/api/v1/labels/${c.id}`)).status, 404);
    t.deepEqual((await read(byName)).results.map((l: any) => l.name), [a.name, renamed, `e-${tag}`, `f-${tag}`]);
    t.deepEqual(await read(`/api/v1/labels/${create!.body.id}`), create!.body);
    t.deepEqual(labelNames(await read(`/api/v1/playbooks/${pb.id}`)), [renamed]);
    t.is(await counted(), 4);
  } finally {
    await server.stop();
  }
});

test('a playbook write naming a label that a rename is moving waits for it: a failed rename leaves one label of each name, never two', async (t) => {
  t.timeout(120_000);
  const server = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_TEST_HOOKS: '1' }, keepData: true });
  t.teardown(() => rmSync(server.dataDir, { recursive: true, force: true }));
  try {
    const url = server.url;
    const tag = uniq('').slice(1);
    const count = async (name: string) => (await api(url, 'GET', `/api/v1/labels?name=${encodeURIComponent(name)}`)).body.count;
    // each way a playbook write names labels: POST /playbooks, and a batch's playbook
    const ways: Array<[string, number, (name: string) => Promise<{ status: number; text: string; labels: () => Promise<any[]> }>]> = [
      ['POST /playbooks', 201, async (name) => {
        const r = await api(url, 'POST', '/api/v1/playbooks', { path: '/p.yml', runner_version: '2.16', labels: [name] });
        return { status: r.status, text: r.text, labels: async () => r.body.labels };
      }],
      ['POST /ingest', 200, async (name) => {
        const uuid = uniq('leaving');
        const r = await api(url, 'POST', '/api/v1/ingest', { playbook: { uuid, path: '/p.yml', runner_version: '2.16', status: 'running', labels: [name] }, seq: 1, events: [] });
        return { status: r.status, text: r.text, labels: async () => (await api(url, 'GET', `/api/v1/playbooks/${r.body.playbook}`)).body.labels };
      }],
    ];
    for (const [way, ok, write] of ways) {
      const old = `old-${ok}-${tag}`;
      const renamed = `new-${ok}-${tag}`;
      const label = await createLabel(url, old);
      // the rename is not stored: it fails 1.5 s later, and the label is set back to its old name
      t.is((await api(url, 'POST', '/__test__/labels/fail/1500', {})).status, 200);
      const rename = api(url, 'PATCH', `/api/v1/labels/${label.id}`, { name: renamed });
      await new Promise((r) => setTimeout(r, 300));
      // meanwhile a playbook names both: the label's old name (being left) and its new one (being taken)
      const [leaving, arriving] = await Promise.all([write(old), write(renamed), rename.then((r) => t.is(r.status, 503, `${way}: ${r.text}`))]);
      t.is(leaving!.status, ok, `${way}: ${leaving!.text}`);
      t.is(arriving!.status, ok, `${way}: ${arriving!.text}`);
      t.is(await count(old), 1, `${way}: one label named ${old}`);
      t.is(await count(renamed), 1, `${way}: one label named ${renamed}`);
      t.deepEqual((await leaving!.labels()).map((l: any) => [l.id, l.name]), [[label.id, old]], `${way}: the old name is the label's again`);
      const [got] = await arriving!.labels();
      t.not(got.id, label.id, `${way}: the new name is a label of its own`);
      t.is(got.name, renamed);
    }
    // two renames at once, the first stored (reported late), the second failing: both names are
    // taken meanwhile (the first's too, though the label was renamed on), and one label keeps the first
    const label = await createLabel(url, `twice-${tag}`);
    t.is((await api(url, 'POST', '/__test__/labels/hold/2000', {})).status, 200);
    t.is((await api(url, 'POST', '/__test__/labels/fail/1500/1', {})).status, 200);
    const renames = [`twice-x-${tag}`, `twice-y-${tag}`].map((to) => ({ to, reply: api(url, 'PATCH', `/api/v1/labels/${label.id}`, { name: to }) }));
    await new Promise((r) => setTimeout(r, 300));
    for (const { to } of renames) t.is((await api(url, 'POST', '/api/v1/labels', { name: to })).status, 400, `${to} is taken`);
    const statuses = await Promise.all(renames.map(async ({ reply }) => (await reply).status));
    t.deepEqual([...statuses].sort(), [200, 503]);
    const stored = renames[statuses.indexOf(200)]!.to;
    t.is((await api(url, 'GET', `/api/v1/labels/${label.id}`)).body.name, stored);
    for (const { to } of renames) t.is(await count(to), to === stored ? 1 : 0, to);

    // and after a restart the store holds the same
    await server.stop();
    const again = await startLogbook({ env: SERVER_ENV, dataDir: server.dataDir });
    try {
      const names = (await api(again.url, 'GET', '/api/v1/labels?limit=1000')).body.results.map((l: any) => l.name).filter((n: string) => n.endsWith(tag));
      t.deepEqual([...names].sort(), [...new Set(names)].sort(), 'no name twice');
      t.is(names.length, 5);
    } finally { await again.stop(); }
  } finally {
    await server.stop();
  }
});
