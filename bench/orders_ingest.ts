// What keeping ARA's list orders current costs per-request ingest (issue #45's
// "within 10 %"): two logbooks side by side, the same per-record
// `POST /api/v1/results` load (1.6 KB looped result, wrk, closed loop) on each in
// turn; on one of them ARA's default lists (results by -started, playbooks by
// -started and running ones by started, hosts by -updated) were read first, so
// its shard keeps those orders current with every write. Reports requests/s and
// the server's CPU per request of each, per round; interleaved so that the
// machine's other load falls on both alike.
//   node dist/bench/orders_ingest.js [--rounds 3] [--seconds 8] [--connections 32]
import { loopedResultContent } from './lib/payloads.js';
import { startLogbook, type Running } from './lib/servers.js';
import { runLoad } from './lib/wrk.js';
import { benchArg } from './lib/ingest_stream.js';

const ROUNDS = benchArg('rounds', 3);
const SECONDS = benchArg('seconds', 8);
const CONNECTIONS = benchArg('connections', 32);
const PLAYBOOKS = 8;

async function post(url: string, path: string, body: unknown): Promise<{ id: number }> {
  const r = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (r.status !== 201) throw new Error(`${path} ${r.status}: ${await r.text()}`);
  return await r.json() as { id: number };
}

/** Playbooks with a play, a task and a host each; the result bodies that go to them. */
async function prepare(server: Running): Promise<string[]> {
  const bodies: string[] = [];
  const content = loopedResultContent();
  for (let i = 0; i < PLAYBOOKS; i++) {
    const playbook = (await post(server.url, '/api/v1/playbooks', { path: `/bench/orders-${i}.yml`, runner_version: '2.16.0', status: 'running' })).id;
    const file = (await post(server.url, '/api/v1/files', { playbook, path: `/bench/orders-${i}.yml`, content: '- hosts: all\n' })).id;
    const play = (await post(server.url, '/api/v1/plays', { playbook, uuid: crypto.randomUUID(), name: 'p' })).id;
    const task = (await post(server.url, '/api/v1/tasks', { playbook, play, file, action: 'debug', lineno: 1, handler: false })).id;
    const host = (await post(server.url, '/api/v1/hosts', { playbook, name: `web-${i}` })).id;
    bodies.push(JSON.stringify({ playbook, play, task, host, status: 'ok', content }));
  }
  return bodies;
}

const plain = await startLogbook({ env: { LOGBOOK_SHARDS: '1' } });
const ordered = await startLogbook({ env: { LOGBOOK_SHARDS: '1' } });
try {
  const bodies = new Map<Running, string[]>([[plain, await prepare(plain)], [ordered, await prepare(ordered)]]);
  // ARA's CLI and exporter's lists: from now on this shard keeps their orders
  for (const q of ['results?order=-started', 'playbooks?order=-started', 'playbooks?status=running&order=started', 'hosts?order=-updated&limit=500']) {
    const r = await fetch(`${ordered.url}/api/v1/${q}`);
    if (r.status !== 200) throw new Error(`${q}: ${r.status}`);
  }
  const rows: Array<{ round: number; server: string; rps: number; cpuUsPerRequest: number }> = [];
  for (let round = 1; round <= ROUNDS; round++) {
    // alternate which goes first
    const order = round % 2 ? [plain, ordered] : [ordered, plain];
    for (const server of order) {
      const c0 = server.cpuSeconds();
      const r = await runLoad({ url: `${server.url}/api/v1/results`, method: 'POST', bodies: bodies.get(server)!, connections: CONNECTIONS, seconds: SECONDS });
      await server.drain();
      const cpu = server.cpuSeconds() - c0;
      const row = { round, server: server === plain ? 'no orders' : 'ARA orders', rps: Math.round(r.rps), cpuUsPerRequest: Math.round((cpu / r.requests) * 1e6 * 10) / 10 };
      rows.push(row);
      console.log(JSON.stringify({ ...row, errors: r.errors, p99Ms: r.latencyMs.p99 }));
    }
  }
  const mean = (name: string, key: 'rps' | 'cpuUsPerRequest') => {
    const xs = rows.filter((r) => r.server === name).map((r) => r[key]);
    return xs.reduce((a, b) => a + b, 0) / xs.length;
  };
  const cpuDelta = (mean('ARA orders', 'cpuUsPerRequest') / mean('no orders', 'cpuUsPerRequest') - 1) * 100;
  const rpsDelta = (mean('ARA orders', 'rps') / mean('no orders', 'rps') - 1) * 100;
  console.log(`per-request ingest with ARA's orders kept: server CPU per request ${cpuDelta >= 0 ? '+' : ''}${cpuDelta.toFixed(1)} %, requests/s ${rpsDelta >= 0 ? '+' : ''}${rpsDelta.toFixed(1)} % (means of ${ROUNDS} rounds)`);
} finally {
  await plain.stop();
  await ordered.stop();
}
