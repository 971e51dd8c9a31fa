// Batch ingest and the per-record API must store the same thing (SPEC §13:
// "derived state is exactly what the same writes through the per-record API
// produce"). A seeded generator makes random runs (plays, tasks on several files,
// results with every status, delegation, ignore_errors, handlers, records, host
// stats overrides, labels); each run is written both ways into two fresh servers,
// then everything both serve is read back and compared (created/updated aside:
// they are the servers' own clocks). Replay a failure with INGEST_SEED=<seed>.
import test from 'ava';
import { dumpApi } from '../helpers/dump.js';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { Rng, seedFrom } from '../helpers/random.js';
import { randomUuid, type Json } from '../helpers/fixtures.js';

type Op =
  | { k: 'file'; path: string; content: string }
  | { k: 'play'; uuid: string; create: boolean; d: Json }
  | { k: 'task'; uuid: string; create: boolean; play?: string; file?: string; d: Json }
  | { k: 'host'; name: string; d: Json }
  | { k: 'result'; task: string; host: string; delegated: string[]; d: Json }
  | { k: 'record'; key: string; d: Json }
  | { k: 'playbook'; d: Json };

interface Run { header: Json; ops: Op[] }

function stamp(t: number): string {
  return new Date(Date.UTC(2026, 0, 1) + t * 1000).toISOString();
}

function generate(rng: Rng): Run {
  let t = 0;
  const labels = ['web', 'db', 'nightly', 'canary'].filter(() => rng.bool(0.5));
  const header = {
    uuid: `run-${rng.int(0, 1e9)}`, path: '/work/site.yml', runner_version: '2.16.3', status: 'running', started: stamp(t++),
    labels, arguments: { check: rng.bool(), forks: rng.int(1, 50) }, name: rng.bool(0.7) ? 'site' : null,
  };
  const ops: Op[] = [];
  const files = Array.from({ length: rng.int(1, 3) }, (_, i) => `/work/roles/r${i}/tasks/main.yml`);
  files.unshift('/work/site.yml');
  for (const path of files) ops.push({ k: 'file', path, content: `# ${path}\n- debug: msg=${rng.int(0, 99)}\n` });
  const hosts = Array.from({ length: rng.int(1, 5) }, (_, i) => `host-${i}`);
  if (rng.bool(0.5)) ops.push({ k: 'host', name: hosts[0]!, d: { facts: { ansible_os_family: 'Debian', n: rng.int(0, 9) } } });
  for (let p = 0, plays = rng.int(1, 3); p < plays; p++) {
    const play = randomUuid();
    ops.push({ k: 'play', uuid: play, create: true, d: { name: `play ${p}`, status: 'running', started: stamp(t++) } });
    for (let k = 0, tasks = rng.int(1, 4); k < tasks; k++) {
      const task = `${play}-${k}`;
      ops.push({
        k: 'task', uuid: task, create: true, play, file: files[rng.int(0, files.length - 1)]!,
        d: { name: `task ${k}`, action: rng.bool() ? 'debug' : 'command', lineno: rng.int(1, 200), handler: rng.bool(0.2),
          tags: rng.bool() ? ['x'] : [], status: 'running', started: stamp(t++) },
      });
      for (const host of hosts) {
        if (rng.bool(0.2)) continue;
        const status = ['ok', 'ok', 'failed', 'skipped', 'unreachable'][rng.int(0, 4)]!;
        const started = stamp(t++);
        ops.push({
          k: 'result', task, host, delegated: rng.bool(0.2) ? [hosts[rng.int(0, hosts.length - 1)]!, 'delegate-x'] : [],
          d: { status, changed: rng.bool(0.3), ignore_errors: rng.bool(0.2), content: { rc: rng.int(0, 2), msg: `m${rng.int(0, 999)}` },
            started, ended: stamp(t++) },
        });
      }
      ops.push({ k: 'task', uuid: task, create: false, d: { status: 'completed', ended: stamp(t++) } });
    }
    ops.push({ k: 'play', uuid: play, create: false, d: { status: 'completed', ended: stamp(t++) } });
  }
  const records = rng.int(0, 2);
  for (let r = 0; r < records; r++) ops.push({ k: 'record', key: `key-${r}`, d: { value: { r, v: rng.int(0, 9) }, type: 'json' } });
  if (records > 0 && rng.bool(0.5)) ops.push({ k: 'record', key: 'key-0', d: { value: 'patched' } });
  for (const name of hosts) {
    if (rng.bool(0.5)) ops.push({ k: 'host', name, d: { ok: rng.int(0, 20), changed: rng.int(0, 5), failed: 0, skipped: rng.int(0, 3), unreachable: 0 } });
  }
  ops.push({ k: 'playbook', d: { status: rng.bool() ? 'completed' : 'failed', ended: stamp(t++) } });
  return { header, ops };
}

async function must(url: string, method: string, path: string, body: unknown, expect: number): Promise<Json> {
  const r = await api(url, method, path, body);
  if (r.status !== expect) throw new Error(`${method} ${path} ${JSON.stringify(body)} → ${r.status}: ${r.text}`);
  return r.body;
}

/** The run as an ARA-style client writes it: one request per record, ids tracked by the client. */
async function writePerRecord(url: string, run: Run): Promise<void> {
  const pb = (await must(url, 'POST', '/api/v1/playbooks', run.header, 201)).id;
  const ids = { file: new Map<string, number>(), play: new Map<string, number>(), task: new Map<string, number>(),
    host: new Map<string, number>(), record: new Map<string, number>() };
  const host = async (name: string): Promise<number> => {
    const id = (await must(url, 'POST', '/api/v1/hosts', { playbook: pb, name }, 201)).id;
    ids.host.set(name, id);
    return id;
  };
  for (const op of run.ops) {
    switch (op.k) {
      case 'file': ids.file.set(op.path, (await must(url, 'POST', '/api/v1/files', { playbook: pb, path: op.path, content: op.content }, 201)).id); break;
      case 'play':
        if (op.create) ids.play.set(op.uuid, (await must(url, 'POST', '/api/v1/plays', { playbook: pb, uuid: op.uuid, ...op.d }, 201)).id);
        else await must(url, 'PATCH', `/api/v1/plays/${ids.play.get(op.uuid)}`, op.d, 200);
        break;
      case 'task':
        if (op.create) {
          const body = { playbook: pb, uuid: op.uuid, play: ids.play.get(op.play!), file: ids.file.get(op.file!), ...op.d };
          ids.task.set(op.uuid, (await must(url, 'POST', '/api/v1/tasks', body, 201)).id);
        } else await must(url, 'PATCH', `/api/v1/tasks/${ids.task.get(op.uuid)}`, op.d, 200);
        break;
      case 'host':
        if (ids.host.has(op.name)) await must(url, 'PATCH', `/api/v1/hosts/${ids.host.get(op.name)}`, op.d, 200);
        else ids.host.set(op.name, (await must(url, 'POST', '/api/v1/hosts', { playbook: pb, name: op.name, ...op.d }, 201)).id);
        break;
      case 'result': {
        const h = await host(op.host);
        const delegated: number[] = [];
        for (const name of op.delegated) { const id = await host(name); if (!delegated.includes(id)) delegated.push(id); }
        const task = ids.task.get(op.task)!;
        const play = (await must(url, 'GET', `/api/v1/tasks/${task}`, undefined, 200)).play.id;
        await must(url, 'POST', '/api/v1/results', { playbook: pb, task, play, host: h, delegated_to: delegated, ...op.d }, 201);
        break;
      }
      case 'record':
        if (ids.record.has(op.key)) await must(url, 'PATCH', `/api/v1/records/${ids.record.get(op.key)}`, op.d, 200);
        else ids.record.set(op.key, (await must(url, 'POST', '/api/v1/records', { playbook: pb, key: op.key, ...op.d }, 201)).id);
        break;
      case 'playbook': await must(url, 'PATCH', `/api/v1/playbooks/${pb}`, op.d, 200); break;
    }
  }
}

function toEvent(op: Op): Json {
  switch (op.k) {
    case 'file': return { kind: 'file', path: op.path, content: op.content };
    case 'play': return { kind: 'play', uuid: op.uuid, ...op.d };
    case 'task': return { kind: 'task', uuid: op.uuid, ...(op.create ? { play: op.play, file: op.file } : {}), ...op.d };
    case 'host': return { kind: 'host', name: op.name, ...op.d };
    case 'result': return { kind: 'result', task: op.task, host: op.host, ...(op.delegated.length ? { delegated_to: op.delegated } : {}), ...op.d };
    case 'record': return { kind: 'record', key: op.key, ...op.d };
    case 'playbook': return { kind: 'playbook', ...op.d };
  }
}

/** The same run as batches of random sizes, one at a time, seq 1, 2, … */
async function writeBatches(url: string, run: Run, rng: Rng): Promise<void> {
  const events = run.ops.map(toEvent);
  let seq = 0;
  for (let i = 0; i < events.length;) {
    const n = rng.int(1, 25);
    const body = { playbook: seq === 0 ? run.header : { uuid: run.header.uuid }, seq: ++seq, events: events.slice(i, i + n) };
    const r = await must(url, 'POST', '/api/v1/ingest', body, 200);
    if (r.rejected.length) throw new Error(`batch ${seq} rejected events: ${JSON.stringify(r.rejected)}`);
    i += n;
  }
}

/** Everything served, without the servers' own clocks. */
function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (k !== 'created' && k !== 'updated') out[k] = strip(v);
  return out;
}

const ENV = { LOGBOOK_SHARDS: '1', LOGBOOK_ARA_COMPAT: 'true' };

test('random runs written through batch ingest and through the per-record API read back the same', async (t) => {
  const seed = seedFrom('INGEST_SEED');
  t.log(`seed ${seed} (replay with INGEST_SEED=${seed})`);
  const rng = new Rng(seed);
  const servers: Logbook[] = await Promise.all([startLogbook({ env: ENV }), startLogbook({ env: ENV })]);
  try {
    const [perRecord, batched] = servers as [Logbook, Logbook];
    for (let i = 0; i < 4; i++) {
      const run = generate(rng);
      await writePerRecord(perRecord.url, run);
      await writeBatches(batched.url, run, rng);
    }
    const [a, b] = await Promise.all([dumpApi(perRecord.url), dumpApi(batched.url)]);
    t.true(a.lists.results.length > 0);
    t.deepEqual(strip(b), strip(a), `seed ${seed}`);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
});
