// Durable ingest: POST /api/v1/results with a ~1.6 KB looped-task result at 32
// connections, for logbook (durable, and with LOGBOOK_DURABILITY=none), the raw
// limit (bare uWS + JSON.parse + durable LMDB put) and ARA's own server.
// Run: node dist/bench/ingest.js [seconds] [connections]
import { runLoad, type LoadResult } from './lib/wrk.js';
import { startAra, startLogbook, startRaw, type Running } from './lib/servers.js';
import { createTree, loopedResultContent, resultBody } from './lib/payloads.js';

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 32);

async function measure(server: Running, path: string, body: string): Promise<LoadResult & { serverCpu: number }> {
  // warm up, then measure
  await runLoad({ url: server.url + path, method: 'POST', body, connections, seconds: 2 });
  const cpu0 = server.cpuSeconds();
  const r = await runLoad({ url: server.url + path, method: 'POST', body, connections, seconds });
  return { ...r, serverCpu: (server.cpuSeconds() - cpu0) / seconds };
}

const rows: Array<[string, LoadResult & { serverCpu: number }]> = [];
const log = (name: string, r: LoadResult & { serverCpu: number }) => {
  rows.push([name, r]);
  console.log(`${name.padEnd(28)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.latencyMs.p50.toFixed(2)} ms  p99 ${r.latencyMs.p99.toFixed(2)} ms  errors ${r.errors}  server CPU ${r.serverCpu.toFixed(2)}  wrk CPU ${r.generatorCpu.toFixed(2)}`);
};

for (const [name, env] of [['logbook (durable: flush)', {}], ['logbook (durability none)', { LOGBOOK_DURABILITY: 'none' }]] as const) {
  const lb = await startLogbook(env);
  try {
    const tree = await createTree(lb.url);
    log(name, await measure(lb, '/api/v1/results', resultBody(tree, loopedResultContent())));
  } finally { await lb.stop(); }
}
const raw = await startRaw();
try {
  log('raw uWS+JSON.parse+LMDB put', await measure(raw, '/', resultBody({ playbook: 1, play: 1, task: 1, host: 1, file: 1 }, loopedResultContent())));
} finally { await raw.stop(); }
let ara: Running | null = null;
try {
  ara = await startAra();
  const tree = await createTree(ara.url);
  log('ARA 1.5 (gunicorn 2w, SQLite)', await measure(ara, '/api/v1/results', resultBody(tree, loopedResultContent())));
} catch (err) {
  console.log(`ARA baseline skipped: ${(err as Error).message}`);
} finally { await ara?.stop(); }

const get = (n: string) => rows.find(([k]) => k === n)?.[1].rps ?? NaN;
const durable = get('logbook (durable: flush)');
console.log(`durable logbook = ${(100 * durable / get('raw uWS+JSON.parse+LMDB put')).toFixed(0)} % of the raw limit, ${(durable / get('ARA 1.5 (gunicorn 2w, SQLite)')).toFixed(0)}× ARA`);
console.log(JSON.stringify({ bench: 'ingest', seconds, connections, rows: Object.fromEntries(rows) }));
