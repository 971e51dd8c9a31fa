// Cluster mode end to end (issue #12): three REAL nats-server 2.9.10 processes as a
// JetStream cluster and three logbook nodes (LOGBOOK_CLUSTER) on loopback.
//  - the multi-play e2e playbook recorded through one node with the stock ARA
//    callback reads back identically from every node;
//  - concurrent writers spread over all nodes while a node is killed (-9), while the
//    NATS server leading some streams is killed, and while a node is paused
//    (SIGSTOP) past its lease: afterwards every acknowledged write is there exactly
//    once, counters equal a recount, ids are unique;
//  - all nodes restarted with empty local disks rebuild everything from the streams.
// Writers use batch ingest (SPEC §13): its seq makes a retry after an unknown outcome
// exactly-once, so "exactly once" is checkable. Serial: each phase builds on the last.
//
// Needs nats-server (Debian `nats-server`); skipped without it. CI installs it.
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { hasNatsServer, startNatsCluster, type NatsCluster } from '../helpers/nats.js';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { FIXTURE_EXIT, FIXTURE_ITEMS, hasAnsible, newestPlaybookId, runPlaybook, snapshotRun } from '../helpers/ansible.js';
import { dumpApi, listAll } from '../helpers/dump.js';
import { openSse, type StreamMessage } from '../helpers/stream.js';
import { streamName } from '../../src/cluster/partition_log.js';
import { rendezvousOwner, rendezvousRanking } from '../../src/cluster/rendezvous.js';

const hasNats = hasNatsServer();
if (!hasNats) console.warn('e2e_cluster_nodes: nats-server not installed; skipped (apt-get install nats-server)');
const serial = hasNats ? test.serial : test.serial.skip;
const ansibleInstalled = hasAnsible();
if (hasNats && !ansibleInstalled) console.warn('e2e_cluster_nodes: ansible not installed; the recording test skipped');

const PARTITIONS = 6;
let nats: NatsCluster;
const nodes = new Map<string, Logbook>();

async function startNode(name: string): Promise<Logbook> {
  const node = await startLogbook({
    // test hooks: POST /__test__/labels/hold/<ms> (src/http/ops.ts)
    env: { LOGBOOK_CLUSTER: nats.urls.join(','), LOGBOOK_NODE: name, LOGBOOK_PARTITIONS: String(PARTITIONS), LOGBOOK_SHUTDOWN_TIMEOUT: '2', LOGBOOK_TEST_HOOKS: '1' },
    // a node starts once the label stream is read to its end: after a NATS server died, on a loaded
    // machine, that waited through leader elections for more than 30 s once (CI, session 27)
    startTimeoutMs: 120_000,
  });
  nodes.set(name, node);
  return node;
}

const live = () => [...nodes.values()].filter((n) => n.child.exitCode === null && n.child.signalCode === null);
const nodeName = (node: Logbook) => [...nodes].find(([, n]) => n === node)![0];

/** Until every partition is owned by a live node, as every live node sees it. */
async function settled(timeoutMs = 100_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const views = await Promise.all(live().map((n) => api(n.url, 'GET', '/healthz').catch(() => null)));
    const ok = views.every((v) => v?.status === 200 && v.body.cluster.unowned.length === 0);
    const owned = views.reduce((sum, v) => sum + (v ? Object.keys(v.body.cluster?.owned ?? {}).length : 0), 0);
    // and balanced: each node owns what rendezvous hashing gives it (joins have taken their share)
    const names = views.map((v) => v?.body?.cluster?.node as string);
    const balanced = views.every((v) => v && Object.keys(v.body.cluster.owned).map(Number).sort().join()
      === Array.from({ length: PARTITIONS }, (_, p) => p).filter((p) => rendezvousOwner(p, names) === v.body.cluster.node).join());
    if (ok && owned === PARTITIONS && balanced) return;
    if (Date.now() > deadline) throw new Error(`cluster not settled: ${JSON.stringify(views.map((v) => v?.body))}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test.before(async () => {
  if (!hasNats) return;
  nats = await startNatsCluster();
  await Promise.all(['node1', 'node2', 'node3'].map(startNode));
  await settled();
});

test.after.always(async () => {
  for (const n of nodes.values()) { n.child.kill('SIGCONT'); await n.stop('SIGKILL').catch(() => {}); }
  await nats?.stop();
});

// ---- writers: batch ingest streams with exactly-once seq ----

const RESULTS_PER_BATCH = 4;
interface Writer { uuid: string; acked: number; node: number }
const writers: Writer[] = [];

function batch(w: Writer, seq: number): unknown {
  const task = `${w.uuid}-t1`;
  if (seq === 1) {
    return {
      seq, playbook: { uuid: w.uuid, path: `/fleet/${w.uuid}.yml`, runner_version: '2.16.0', status: 'running', labels: ['cluster'] },
      events: [
        { kind: 'file', path: '/fleet/site.yml', content: '- hosts: all\n  tasks:\n    - ping:\n' },
        { kind: 'play', uuid: `${w.uuid}-p1`, name: 'play', status: 'running' },
        { kind: 'task', uuid: task, play: `${w.uuid}-p1`, file: '/fleet/site.yml', lineno: 3, handler: false, name: 'task', action: 'ping', status: 'running' },
      ],
    };
  }
  return {
    seq, playbook: { uuid: w.uuid },
    events: Array.from({ length: RESULTS_PER_BATCH }, (_, j) => ({
      kind: 'result', task, host: `h${seq}-${j}`, status: 'ok', content: { writer: w.uuid, seq, j },
    })),
  };
}

/** Send one batch until some node acknowledges it (200), rotating over the live nodes. */
async function send(w: Writer, seq: number, stopAt: number): Promise<void> {
  const body = batch(w, seq);
  for (let attempt = 0; ; attempt++) {
    const targets = live();
    const node = targets[(w.node + attempt) % targets.length]!;
    try {
      const r = await api(node.url, 'POST', '/api/v1/ingest', body);
      if (r.status === 200) {
        if (r.body.rejected?.length) throw new Error(`ingest ${w.uuid} seq ${seq}: events rejected: ${r.text}`);
        w.acked = seq;
        return;
      }
      if (r.status !== 503) throw new Error(`ingest ${w.uuid} seq ${seq} via ${node.url}: ${r.status} ${r.text}`);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('ingest ')) throw err;
      // connection refused or reset (a killed node), or a timeout: retry elsewhere
    }
    if (Date.now() > stopAt) throw new Error(`ingest ${w.uuid} seq ${seq}: no node acknowledged it`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Run `count` writers for `batches` batches each while `during` happens. */
async function write(count: number, batches: number, during: () => Promise<void>): Promise<Writer[]> {
  const mine = Array.from({ length: count }, (_, i) => ({ uuid: `w-${randomUUID()}`, acked: 0, node: i }));
  writers.push(...mine);
  const stopAt = Date.now() + 180_000;
  let done = 0;
  const running = mine.map(async (w) => {
    for (let seq = 1; seq <= batches; seq++) await send(w, seq, stopAt);
    done++;
  });
  await Promise.all([...running, during()]);
  if (done !== count) throw new Error('a writer did not finish');
  return mine;
}

/** Every acknowledged batch is there exactly once, counters equal a recount, ids are unique. */
async function checkWriters(t: import('ava').ExecutionContext, via: Logbook): Promise<void> {
  const resultIds = new Set<number>();
  for (const w of writers) {
    const pbs = await listAll(via.url, 'playbooks', `uuid=${w.uuid}`);
    t.is(pbs.length, 1, `${w.uuid}: one playbook`);
    const pb = (await api(via.url, 'GET', `/api/v1/playbooks/${pbs[0].id}`)).body;
    const results = await listAll(via.url, 'results', `playbook=${pb.id}`);
    const expected = (w.acked - 1) * RESULTS_PER_BATCH;
    t.is(results.length, expected, `${w.uuid}: every acknowledged result, once`);
    t.is(pb.items.results, expected, `${w.uuid}: the counter equals the recount`);
    const hosts = await listAll(via.url, 'hosts', `playbook=${pb.id}`);
    t.is(hosts.length, expected, `${w.uuid}: one host per result`);
    for (const r of results) {
      t.false(resultIds.has(r.id), `result id ${r.id} is unique`);
      resultIds.add(r.id);
    }
    // the next batch is the one after the last acknowledged: nothing acknowledged was lost
    const next = await api(via.url, 'POST', '/api/v1/ingest', { seq: w.acked + 2, playbook: { uuid: w.uuid }, events: [] });
    t.is(next.status, 409, `${w.uuid}: ${next.text}`);
    t.is(next.body.detail, `Expected seq ${w.acked + 1}.`);
  }
  // pages past offset 0 over every partition (their rows keyed first, then rendered by the
  // partitions that hold them, local or on other nodes) are slices of one big page
  for (const order of ['', '&order=-id']) {
    const all = (await api(via.url, 'GET', `/api/v1/results?limit=1000${order}`)).body;
    t.true(all.results.length > 30, `results in the cluster: ${all.count}`);
    for (let offset = 7; offset < 70 && offset < all.results.length; offset += 7) {
      const page = (await api(via.url, 'GET', `/api/v1/results?limit=7&offset=${offset}${order}`)).body;
      t.is(page.count, all.count);
      t.deepEqual(page.results, all.results.slice(offset, offset + 7), `offset ${offset}${order}`);
    }
  }
}

(ansibleInstalled ? serial : test.serial.skip)('the e2e playbook recorded through one node (stock ARA callback) reads back identically from every node', async (t) => {
  const [first] = live();
  const run = await runPlaybook(first!.url);
  t.is(run.code, FIXTURE_EXIT, run.stdout + run.stderr);
  const id = await newestPlaybookId(first!.url);
  const snapshots = await Promise.all(live().map((n) => snapshotRun(n.url, id)));
  t.deepEqual(snapshots[0]!.playbook.items, FIXTURE_ITEMS);
  for (const s of snapshots.slice(1)) t.deepEqual(s, snapshots[0]);
  const dumps = await Promise.all(live().map((n) => dumpApi(n.url)));
  for (const d of dumps.slice(1)) t.deepEqual(d, dumps[0], 'every list and detail is the same from every node');
});

serial('the live stream works from any node: every node sends every partition\'s changes, with the same cursors', async (t) => {
  const streams = await Promise.all(live().map((n) => openSse(n.url, '?type=playbook')));
  try {
    await Promise.all(streams.map((s) => s.waitFor((m) => m.some((x) => x.data.op === 'hello'))));
    const writer = live()[1]!;
    const ids: number[] = [];
    for (let i = 0; i < PARTITIONS; i++) {
      const r = await api(writer.url, 'POST', '/api/v1/playbooks', { path: `/stream/${i}.yml`, runner_version: '2.16.0' });
      t.is(r.status, 201, r.text);
      ids.push(r.body.id);
    }
    t.is(new Set(ids.map((id) => id % PARTITIONS)).size, PARTITIONS, 'the playbooks went to every partition');
    const created = (messages: StreamMessage[]) => messages.filter((m) => m.data.op === 'create' && ids.includes(m.data.id));
    const seen = await Promise.all(streams.map((s) => s.waitFor((m) => created(m).length === ids.length)));
    const cursors = seen.map((m) => created(m).map((x) => [x.data.id, x.id]));
    for (const c of cursors.slice(1)) t.deepEqual(c.map(([id]) => id).sort(), cursors[0]!.map(([id]) => id).sort());
    // resumed on another node from one of the first node's cursors: what follows it, nothing before
    const [firstId, firstCursor] = cursors[0]![0]!;
    const resumed = await openSse(live()[2]!.url, `?type=playbook&since=${encodeURIComponent(String(firstCursor))}`);
    try {
      const rest = ids.filter((id) => id !== firstId);
      await resumed.waitFor((m) => rest.every((id) => created(m).some((x) => x.data.id === id)));
      t.false(created(resumed.messages).some((x) => x.data.id === firstId), 'nothing before the cursor');
    } finally { resumed.close(); }
  } finally {
    for (const s of streams) s.close();
  }
});

serial('labels are one catalogue: created on one node, renamed on another, deleted on a third; every node agrees', async (t) => {
  const [a, b, c] = live();
  // the live stream of every node: partition 0's owner logs label changes (src/http/label_changes.ts)
  const streams = await Promise.all(live().map((n) => openSse(n.url, '?type=label')));
  t.teardown(() => { for (const s of streams) s.close(); });
  await Promise.all(streams.map((s) => s.waitFor(1)));
  const created = await api(a!.url, 'POST', '/api/v1/labels', { name: 'cluster-wide' });
  t.is(created.status, 201, created.text);
  const id = created.body.id;
  // every node follows the label stream (a node that has not seen a change yet refuses a conflicting one with 503)
  for (let i = 0; i < 100 && (await api(b!.url, 'GET', `/api/v1/labels/${id}`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 50));
  const taken = await api(b!.url, 'POST', '/api/v1/labels', { name: 'cluster-wide' });
  t.is(taken.status, 400, 'the name is taken on every node');
  const renamed = await api(b!.url, 'PATCH', `/api/v1/labels/${id}`, { name: 'cluster-wide-2' });
  t.is(renamed.status, 200, renamed.text);
  const names = async () => Promise.all(live().map(async (n) => (await listAll(n.url, 'labels')).map((l) => `${l.id}:${l.name}`).sort().join()));
  const until = async (pred: (views: string[]) => boolean) => {
    for (let i = 0; i < 100; i++) { const v = await names(); if (pred(v)) return v; await new Promise((r) => setTimeout(r, 100)); }
    return names();
  };
  let views = await until((v) => v.every((x) => x.includes(`${id}:cluster-wide-2`)));
  t.true(views.every((v) => v === views[0] && v.includes(`${id}:cluster-wide-2`)), JSON.stringify(views));
  t.is((await api(c!.url, 'DELETE', `/api/v1/labels/${id}`)).status, 204);
  views = await until((v) => v.every((x) => !x.includes(`${id}:`)));
  t.true(views.every((v) => v === views[0] && !v.includes(`${id}:`)), JSON.stringify(views));
  // every node streams the three changes, whichever node made them, each with a cursor of its own
  for (const s of streams) {
    const mine = (ms: StreamMessage[]) => ms.filter((m) => m.data.type === 'label' && m.data.id === id);
    await s.waitFor((ms) => mine(ms).length >= 3);
    t.deepEqual(mine(s.messages).map((m) => [m.data.op, m.data.row?.name ?? null]), [['create', 'cluster-wide'], ['update', 'cluster-wide-2'], ['delete', null]]);
    t.is(new Set(s.messages.map((m) => m.data.cursor)).size, s.messages.length);
  }
});

serial('a label change is read only once the label stream has it: its node\'s label reads and playbook rows show the label as stored meanwhile', async (t) => {
  const a = live()[0]!;
  const owned = Object.keys((await api(a.url, 'GET', '/healthz')).body.cluster.owned).map(Number);
  t.true(owned.length > 0, 'the node owns partitions');
  const name = `held-${randomUUID()}`;
  const label = (await api(a.url, 'POST', '/api/v1/labels', { name })).body;
  // a playbook carrying the label in a partition this node owns: its rows are named by this node's replica
  let pb: any = null;
  for (let i = 0; i < 4 * PARTITIONS && pb === null; i++) {
    const r = await api(a.url, 'POST', '/api/v1/playbooks', { path: `/held/${i}.yml`, runner_version: '2.16.0', labels: [name] });
    t.is(r.status, 201, r.text);
    if (owned.includes(r.body.id % PARTITIONS)) pb = r.body;
  }
  t.truthy(pb, 'a playbook in a partition the node owns');
  const named = async () => ((await api(a.url, 'GET', `/api/v1/playbooks/${pb.id}`)).body.labels as Array<{ name: string }>).map((l) => l.name);

  // the node's appends to the label stream take their time to report
  t.is((await api(a.url, 'POST', '/__test__/labels/hold/4000', {})).status, 200);
  let answered = false;
  const renamed = `${name}-renamed`;
  // (a failed assertion below stops the nodes: the request then fails, and is not left unhandled)
  const rename = api(a.url, 'PATCH', `/api/v1/labels/${label.id}`, { name: renamed }).then((r) => { answered = true; return r; }, (err) => ({ status: 0, text: String(err) }));
  await new Promise((r) => setTimeout(r, 300));
  const during = {
    label: (await api(a.url, 'GET', `/api/v1/labels/${label.id}`)).body,
    byNewName: (await api(a.url, 'GET', `/api/v1/labels?name=${renamed}`)).body.count,
    playbook: await named(),
  };
  t.false(answered, 'read while the rename was on its way');
  t.deepEqual(during.label, label, 'the label as stored');
  t.is(during.byNewName, 0);
  t.deepEqual(during.playbook, [name], 'the playbook names the label as stored');

  const r = await rename;
  t.is(r.status, 200, r.text);
  t.is((await api(a.url, 'GET', `/api/v1/labels/${label.id}`)).body.name, renamed);
  t.deepEqual(await named(), [renamed], 'answered: the playbook shows the new name');
});

serial('a node reading back its own earlier rename while a later one is on its way keeps the later name taken; a failed rename is set back everywhere', async (t) => {
  const [a, b] = live();
  const name = `twice-${randomUUID()}`;
  const label = (await api(a!.url, 'POST', '/api/v1/labels', { name })).body;
  // two renames sent at once: the first to arrive is stored at once but reported late, the second
  // is not stored and fails later; both are applied to the node's catalogue before it reads the
  // first back from the label stream
  t.is((await api(a!.url, 'POST', '/__test__/labels/hold/3000', {})).status, 200);
  t.is((await api(a!.url, 'POST', '/__test__/labels/fail/2000/1', {})).status, 200);
  const renames = [`${name}-x`, `${name}-y`].map((to) => ({ to, reply: api(a!.url, 'PATCH', `/api/v1/labels/${label.id}`, { name: to }) }));
  await new Promise((r) => setTimeout(r, 500));
  // meanwhile: both names stay taken (the first read back from the stream does not free the second's)
  for (const { to } of renames) {
    const twin = await api(a!.url, 'POST', '/api/v1/labels', { name: to });
    t.is(twin.status, 400, `a second label of the name a rename on its way takes: ${twin.text}`);
  }
  const statuses = await Promise.all(renames.map(async ({ reply }) => (await reply).status));
  t.deepEqual([...statuses].sort(), [200, 503]);
  const stored = renames[statuses.indexOf(200)]!.to;
  const failed = renames[statuses.indexOf(503)]!.to;
  // set back to what the stream holds, on every node
  for (const node of [a!, b!]) {
    const deadline = Date.now() + 30_000;
    let shown: any;
    for (;;) {
      shown = (await api(node.url, 'GET', `/api/v1/labels/${label.id}`)).body;
      if (shown.name === stored || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    t.is(shown.name, stored, nodeName(node));
    t.is((await api(node.url, 'GET', `/api/v1/labels?name=${failed}`)).body.count, 0, nodeName(node));
  }
});

serial('a label change logged by a partition\'s catch-up reaches subscribers after the label\'s own message (partition 0 logs first)', async (t) => {
  const [a] = live();
  const owners = await Promise.all(live().map(async (n) => [n, Object.keys((await api(n.url, 'GET', '/healthz')).body.cluster.owned).map(Number)] as const));
  const zeroOwner = owners.find(([, owned]) => owned.includes(0))![0];
  const name = `catch-up-${randomUUID()}`;
  t.is((await api(a!.url, 'POST', '/api/v1/labels', { name })).status, 201);
  const label = (await api(a!.url, 'GET', `/api/v1/labels?name=${name}`)).body.results[0];
  let pb: any = null;
  for (let i = 0; i < 4 * PARTITIONS && pb === null; i++) {
    const r = await api(a!.url, 'POST', '/api/v1/playbooks', { path: `/catch-up/${i}.yml`, runner_version: '2.16.0', labels: [name] });
    t.is(r.status, 201, r.text);
    if (r.body.id % PARTITIONS !== 0) pb = r.body;
  }
  t.truthy(pb, 'a playbook outside partition 0');
  const s = await openSse(a!.url);
  t.teardown(() => s.close());
  await s.waitFor(1);

  // partition 0 is held busy: the node making the rename waits for it before it sends the playbooks'
  // partitions the change, but every node's catch-up (about a second later) could log it there first
  t.is((await api(zeroOwner.url, 'POST', '/__test__/shards/0/stall/6000', {})).status, 200);
  const renamed = `${name}-renamed`;
  const answer = api(a!.url, 'PATCH', `/api/v1/labels/${label.id}`, { name: renamed }).catch((err) => ({ status: 0, text: String(err) }));
  const labelMsg = (m: StreamMessage) => m.data.type === 'label' && m.data.id === label.id && m.data.op === 'update';
  const playbookMsg = (m: StreamMessage) => m.data.type === 'playbook' && m.data.id === pb.id && m.data.op === 'update'
    && (m.data.row?.labels ?? []).some((l: { name: string }) => l.name === renamed);
  const ms = await s.waitFor((got) => got.some(labelMsg) && got.some(playbookMsg), 60_000);
  t.is((await answer).status, 200);
  const order = ms.filter((m) => labelMsg(m) || playbookMsg(m)).map((m) => `${m.data.type} ${m.data.op}`);
  t.deepEqual(order, ['label update', 'playbook update'], 'the label\'s message first, then the playbook it changed, once each');
});

serial('batch ingest naming a missing, deleted or other-kind playbook: the same answer as a single process, and nothing changes', async (t) => {
  // the reference: a single-process logbook given the same requests
  const single = await startLogbook({ env: { LOGBOOK_SHARDS: '2' } });
  t.teardown(() => single.stop('SIGKILL'));
  const node = live()[1]!;
  const servers = [single, node];
  const ingest = (s: Logbook, body: unknown) => api(s.url, 'POST', '/api/v1/ingest', body);
  const run = randomUUID();
  /** on each server: a live stream with 4 plays, and a stream whose playbook was deleted */
  const setup = await Promise.all(servers.map(async (s) => {
    const opened = await ingest(s, {
      seq: 1, playbook: { uuid: `${run}-live`, path: '/missing/site.yml', runner_version: '2.16.0' },
      events: [1, 2, 3, 4].map((i) => ({ kind: 'play', uuid: `${run}-p${i}`, name: `play ${i}` })),
    });
    t.is(opened.status, 200, opened.text);
    const gone = await ingest(s, { seq: 1, playbook: { uuid: `${run}-gone`, path: '/missing/gone.yml', runner_version: '2.16.0' }, events: [] });
    t.is(gone.status, 200, gone.text);
    t.is((await api(s.url, 'DELETE', `/api/v1/playbooks/${gone.body.playbook}`)).status, 204);
    // a play's id that is no playbook's id (ids are per type: in a cluster, k·P + p of each),
    // and not the deleted one's (the messages below name each server's ids). In the cluster,
    // earlier tests may have taken a partition's playbook ids well past its play ids: more plays
    // are added until one has an id no playbook has
    let play = 0;
    let last = 1;
    for (let round = 1; play === 0 && round <= 20; round++) {
      if (round > 1) {
        last = round;
        const more = await ingest(s, {
          seq: round, playbook: { uuid: `${run}-live` },
          events: Array.from({ length: 8 }, (_, i) => ({ kind: 'play', uuid: `${run}-r${round}-p${i}`, name: `play ${round}.${i}` })),
        });
        t.is(more.status, 200, more.text);
      }
      for (const p of await listAll(s.url, 'plays', `playbook=${opened.body.playbook}`)) {
        if (p.id !== gone.body.playbook && (await api(s.url, 'GET', `/api/v1/playbooks/${p.id}`)).status === 404) { play = p.id; break; }
      }
    }
    t.true(play > 0, 'a play id that is no playbook id');
    // one more (empty) batch: seq 1 is an older seq on every server, whatever the rounds above took
    last++;
    const moved = await ingest(s, { seq: last, playbook: { uuid: `${run}-live` }, events: [] });
    t.is(moved.status, 200, moved.text);
    return { deleted: gone.body.playbook as number, play, live: opened.body.playbook as number, last };
  }));
  const counts = () => Promise.all(servers.map(async (s) => [
    (await api(s.url, 'GET', '/api/v1/playbooks?limit=1')).body.count, (await api(s.url, 'GET', '/api/v1/plays?limit=1')).body.count,
    (await api(s.url, 'GET', '/api/v1/results?limit=1')).body.count, (await listAll(s.url, 'labels')).map((l) => l.name).sort().join(),
  ]));
  const before = await counts();
  const label = `never-${run}`;
  const result = { kind: 'result', task: 'nope', host: 'web', status: 'ok' };
  const relabel = { kind: 'playbook', labels: [label] };
  // [what the batch names (per server), seq, events]
  const cases: Array<[string, (i: number) => unknown, number, unknown[]]> = [
    ['an id no playbook has', () => ({ id: 999999 }), 1, [result]],
    ['an id no playbook has, as a string, seq 2', () => ({ id: '999999' }), 2, []],
    ['an id no playbook has, with a new label', () => ({ id: 999999 }), 2, [relabel]],
    ['the id of a deleted playbook', (i) => ({ id: setup[i]!.deleted }), 2, [result]],
    ['the id of a play', (i) => ({ id: setup[i]!.play }), 2, [result]],
    ['the id of a deleted playbook, with a new label', (i) => ({ id: setup[i]!.deleted }), 3, [relabel]],
    ['an unknown uuid, seq 2', () => ({ uuid: `${run}-unknown` }), 2, [result]],
    ['an unknown uuid, seq 2, with a new label', () => ({ uuid: `${run}-unknown` }), 2, [relabel]],
    ['the uuid of a deleted playbook, seq 2', () => ({ uuid: `${run}-gone` }), 2, [result]],
    ['the uuid of a deleted playbook, seq 3, with a new label', () => ({ uuid: `${run}-gone` }), 3, [relabel]],
  ];
  const got: string[] = [];
  const want: string[] = [];
  for (const [what, named, seq, events] of cases) {
    const [one, many] = await Promise.all(servers.map((s, i) => ingest(s, { playbook: named(i), seq, events })));
    t.true(one!.status === 400 || one!.status === 409, `${what}: the single process refuses it: ${one!.status} ${one!.text}`);
    // the id in a message is each server's own
    const pk = (id: number) => `Invalid pk \\"${id}\\"`;
    // (in one pass: one server's play id can be the other's deleted playbook id)
    const theirs = new Map([[setup[0]!.deleted, setup[1]!.deleted], [setup[0]!.play, setup[1]!.play]]);
    const expected = one!.text.replace(/Invalid pk \\"(\d+)\\"/g, (_m, id: string) => pk(theirs.get(Number(id)) ?? Number(id)));
    want.push(`${what}: ${one!.status} ${expected}`);
    got.push(`${what}: ${many!.status} ${many!.text}`);
  }
  t.deepEqual(got, want, 'the cluster answers as the single process does');
  // a duplicate (its seq was applied) changes nothing either, on both
  for (const [what, named] of [['by uuid', () => ({ uuid: `${run}-live`, path: '/missing/site.yml', runner_version: '2.16.0' })], ['by id', (i: number) => ({ id: setup[i]!.live })]] as const) {
    const answers = await Promise.all(servers.map((s, i) => ingest(s, { playbook: named(i), seq: 1, events: [relabel] })));
    t.deepEqual(answers.map((r) => r.body), servers.map((_, i) => ({ playbook: setup[i]!.live, seq: 1, applied: 0, duplicate: true })), `a duplicate named ${what}`);
    // the last applied seq with another body: refused (409), on both
    const reused = await Promise.all(servers.map((s, i) => ingest(s, { playbook: named(i), seq: setup[i]!.last, events: [relabel] })));
    t.deepEqual(reused.map((r) => [r.status, r.body]), servers.map((_, i) => [409, { detail: `Batch ${setup[i]!.last} was already applied with other content.` }]),
      `the last seq with another body named ${what}`);
  }
  t.deepEqual(await counts(), before, 'nothing changed: no playbook, play, result or label');
  for (const n of live()) t.is((await api(n.url, 'GET', `/api/v1/labels?name=${label}`)).body.count, 0, 'no node has the label');
  // a deleted stream's uuid starts again with seq 1, on both
  const again = await Promise.all(servers.map((s) => ingest(s, { seq: 1, playbook: { uuid: `${run}-gone`, path: '/missing/gone.yml', runner_version: '2.16.0' }, events: [] })));
  t.deepEqual(again.map((r) => [r.status, r.body.seq, r.body.applied, r.body.duplicate]), [[200, 1, 0, false], [200, 1, 0, false]]);
  t.true(again.every((r, i) => r.body.playbook !== setup[i]!.deleted), 'a new playbook');
});

serial('/metrics of a node has every logbook_cluster_* metric the shipped alert rules name, and /healthz its standbys', async (t) => {
  // a node that is second in rendezvous order for some partition keeps standbys
  // (with these names and 6 partitions one node is second for none)
  const names = live().map((n) => nodeName(n));
  const node = live().find((n) => Array.from({ length: PARTITIONS }, (_, p) => rendezvousRanking(p, names)[1]).includes(nodeName(n)))!;
  const text = (await api(node.url, 'GET', '/metrics')).text;
  const alerts = readFileSync(join(process.cwd(), 'deploy', 'prometheus', 'alerts.yml'), 'utf8').replace(/^\s*#.*$/gm, '');
  const used = new Set([...alerts.matchAll(/\b(logbook_cluster_[a-z_]+)/g)].map((m) => m[1]!));
  t.true(used.size >= 3, [...used].join(' '));
  // the family is declared (a standby's lag has a series once its owner's position was heard)
  for (const name of used) t.regex(text, new RegExp(`^# TYPE ${name} gauge$`, 'm'), `${name} is exported`);
  // a standby starts after its owner is known: wait for it rather than race it
  let health = (await api(node.url, 'GET', '/healthz')).body.cluster;
  for (let i = 0; i < 100 && !(health.standby?.length > 0); i++) {
    await new Promise((r) => setTimeout(r, 100));
    health = (await api(node.url, 'GET', '/healthz')).body.cluster;
  }
  t.true(Array.isArray(health.standby) && health.standby.length > 0, JSON.stringify(health));
  t.true(health.standby.every((s: { lag: number | null }) => s.lag === null || s.lag >= 0));
});

serial('a node started with another LOGBOOK_PARTITIONS stops with a message naming the count the cluster has', async (t) => {
  const err = await t.throwsAsync(startLogbook({
    env: { LOGBOOK_CLUSTER: nats.urls.join(','), LOGBOOK_NODE: 'odd', LOGBOOK_PARTITIONS: String(PARTITIONS + 1) },
  }));
  t.regex(err!.message, /exited with 2/);
  t.regex(err!.message, new RegExp(`LOGBOOK_PARTITIONS=${PARTITIONS + 1} but this cluster was created with ${PARTITIONS} partitions`));
});

serial('kill -9 of a node: its partitions move, writers retrying on 503 succeed, every acknowledged write is there once', async (t) => {
  const victim = nodes.get('node3')!;
  const before = (await api(victim.url, 'GET', '/healthz')).body.cluster.owned;
  const logged = new Map([...nodes.values()].map((n) => [n, n.output().length]));
  await write(6, 12, async () => {
    await new Promise((r) => setTimeout(r, 1500));
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await new Promise((r) => victim.child.once('exit', r));
    nodes.delete('node3');
    await settled();
    t.log(`kill -9 of a node → its ${Object.keys(before).length} partitions owned again after ${Date.now() - killedAt} ms`);
  });
  await settled();
  const owners = await Promise.all(live().map(async (n) => (await api(n.url, 'GET', '/healthz')).body.cluster.owned));
  for (const p of Object.keys(before)) t.true(owners.some((o) => p in o), `partition ${p} moved to a live node`);
  // the nodes second in line kept standbys: the takeover read only the tail after them
  const taken = live().flatMap((n) => n.output().slice(logged.get(n)).split('\n').filter((l) => /"msg":"(partition taken|promoting)/.test(l)));
  const takeovers = taken.filter((l) => l.includes('"from":"node3"'));
  t.true(takeovers.length >= Object.keys(before).length, `node3 owned ${JSON.stringify(before)}:\n${taken.join('\n')}`);
  t.true(takeovers.every((l) => l.includes('"fromStandby":true')), takeovers.join('\n'));
  await checkWriters(t, live()[0]!);
  // the node comes back and takes its share again
  await startNode('node3');
  await settled();
  // it takes its share from the live owners after its join grace (2 s)
  const deadline = Date.now() + 30_000;
  let share: string[] = [];
  while (share.length === 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    share = Object.keys((await api(nodes.get('node3')!.url, 'GET', '/healthz')).body.cluster.owned);
  }
  t.true(share.length > 0, 'the rejoined node took its share');
  await settled();
  await checkWriters(t, nodes.get('node3')!);
});

serial('kill -9 of the NATS server leading a partition stream: nothing acknowledged is lost or duplicated', async (t) => {
  const nc = await connect({ servers: nats.urls });
  const jsm = await jetstreamManager(nc);
  const leader = (await jsm.streams.info(streamName(0))).cluster?.leader;
  await nc.close();
  t.truthy(leader);
  const writes = await write(6, 30, async () => {
    await new Promise((r) => setTimeout(r, 500));
    await nats.kill(leader!);
  });
  t.true(writes.every((w) => w.acked === 30));
  await checkWriters(t, live()[1]!);
});

serial('SIGSTOP of a node past its lease: its partitions move; after SIGCONT it acknowledges nothing for them, and rejoins', async (t) => {
  const paused = nodes.get('node2')!;
  const lost = Object.keys((await api(paused.url, 'GET', '/healthz')).body.cluster.owned);
  t.true(lost.length > 0, 'node2 owns partitions');
  // a label on a playbook in every partition, renamed while node2 is stopped: the partitions it owns
  // cannot log the rename for the live stream then, and must log it once they have moved
  const via = nodes.get('node1')!;
  const label = `paused-${randomUUID()}`;
  const labelled: number[] = [];
  for (let i = 0; i < PARTITIONS; i++) {
    // the label stream may still be electing a leader after the last test's NATS kill: a 503 is retried, as a client would
    let r = await api(via.url, 'POST', '/api/v1/playbooks', { path: `/labelled/${i}.yml`, runner_version: '2.16.0', labels: [label] });
    for (let tries = 0; r.status === 503 && tries < 60; tries++) {
      await new Promise((res) => setTimeout(res, 500));
      r = await api(via.url, 'POST', '/api/v1/playbooks', { path: `/labelled/${i}.yml`, runner_version: '2.16.0', labels: [label] });
    }
    t.is(r.status, 201, r.text);
    labelled.push(r.body.id);
  }
  t.is(new Set(labelled.map((id) => id % PARTITIONS)).size, PARTITIONS, 'a labelled playbook in every partition');
  const labelId: number = (await api(via.url, 'GET', `/api/v1/labels?name=${label}`)).body.results[0].id;
  const watch = await openSse(via.url, '?type=playbook&type=label');
  t.teardown(() => watch.close());
  await watch.waitFor(1);
  let renamed: ReturnType<typeof api> | null = null;
  await write(6, 10, async () => {
    await new Promise((r) => setTimeout(r, 1000));
    const stoppedAt = Date.now();
    paused.child.kill('SIGSTOP');
    renamed = api(via.url, 'PATCH', `/api/v1/labels/${labelId}`, { name: `${label}-2` });
    // the others take its partitions once its lease (3 s) is over
    const others = live().filter((n) => n !== paused);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const owned = await Promise.all(others.map(async (n) => Object.keys((await api(n.url, 'GET', '/healthz')).body.cluster.owned)));
      if (lost.every((p) => owned.some((o) => o.includes(p)))) break;
      if (Date.now() > deadline) {
        const logs = others.map((n) => n.output().split('\n').filter((l) => /partition|standby|warn|error/.test(l)).slice(-15).join('\n'));
        throw new Error(`partitions ${lost} of the paused node were not taken over:\n${logs.join('\n---\n')}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    t.log(`SIGSTOP of a node → its ${lost.length} partitions owned by the others after ${Date.now() - stoppedAt} ms`);
    paused.child.kill('SIGCONT');
  });
  await settled();
  const rename = await renamed!;
  t.is(rename.status, 200, rename.text);
  // the rename reaches the live stream: the label's message and every labelled playbook's update
  const renamedRow = (m: StreamMessage, type: string, id: number) => m.data.op === 'update' && m.data.type === type && m.data.id === id
    && (type === 'label' ? m.data.row.name === `${label}-2` : m.data.row.labels.some((l: { name: string }) => l.name === `${label}-2`));
  const missing = (ms: StreamMessage[]) => [labelId, ...labelled].filter((id, i) => !ms.some((m) => renamedRow(m, i === 0 ? 'label' : 'playbook', id)));
  await watch.waitFor((ms) => missing(ms).length === 0, 30_000).catch(() => {});
  t.deepEqual(missing(watch.messages), [], 'every message of the rename was streamed');
  // writers' batches that node2 held while paused were answered after SIGCONT: either forwarded to the
  // new owner, or refused by the fence; never acknowledged by node2's stale ownership (all are present)
  await checkWriters(t, paused);
  t.regex(paused.output(), /paused longer than the lease|partition (released|lost)/);
  // each once: a partition logs a label change once, however often it is asked to
  const counts = [labelId, ...labelled].map((id, i) => watch.messages.filter((m) => renamedRow(m, i === 0 ? 'label' : 'playbook', id)).length);
  t.deepEqual(counts, counts.map(() => 1));
  // and every node reads the playbooks with the new name (every node's label tail read on after the last test's NATS kill)
  for (const n of live()) {
    const shown = await Promise.all(labelled.map(async (id) => (await api(n.url, 'GET', `/api/v1/playbooks/${id}`)).body.labels.map((l: { name: string }) => l.name).join()));
    t.deepEqual(shown, labelled.map(() => `${label}-2`), nodeName(n));
  }
});

serial('all nodes restarted with empty local disks rebuild everything from the streams', async (t) => {
  t.timeout(240_000); // three nodes replaying every partition with one of three NATS servers gone
  const before = await dumpApi(live()[0]!.url);
  for (const [name, n] of [...nodes]) { await n.stop('SIGKILL'); nodes.delete(name); }
  await Promise.all(['node1', 'node2', 'node3'].map(startNode));
  await settled();
  for (const n of live()) {
    const after = await dumpApi(n.url);
    for (const r of Object.keys(before.lists) as Array<keyof typeof before.lists>) {
      t.deepEqual(after.lists[r].map((x) => x.id), before.lists[r].map((x) => x.id), `${r}: the same rows in the same order`);
      const differs = Object.keys(before.details[r]).filter((id) => JSON.stringify(after.details[r][Number(id)]) !== JSON.stringify(before.details[r][Number(id)]));
      if (differs.length) t.log(r, differs.length, JSON.stringify(before.details[r][Number(differs[0])]), JSON.stringify(after.details[r][Number(differs[0])]));
    }
    t.deepEqual(after, before, 'rebuilt from the streams alone');
  }
  await checkWriters(t, live()[2]!);
});
