// Live-stream benchmark (SPEC §14): many SSE subscribers on one running
// playbook while results are ingested (POST /api/v1/ingest, SPEC §13).
//   node dist/bench/stream.js [--subs 1000] [--rate 5000] [--seconds 10] [--batch 100] [--all]
// Measures
//   1. delivery latency: from the ingest batch's acknowledgement (its 200) to
//      each subscriber's receipt of the batch's last change (the playbook row
//      update that closes every batch), p50/p99/max over subscribers × batches,
//      with batches paced at --rate results/s;
//   2. ingest throughput at full speed (one stream, batches back to back) without
//      subscribers and with --subs subscribers on that playbook.
// Subscribers are raw sockets in this process that only look for the playbook
// rows: the client side must stay cheap beside the server it measures.
import { connect, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { startLogbook, type Running } from './lib/servers.js';

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const SUBS = arg('subs', 1000);
const RATE = arg('rate', 5000);
const SECONDS = arg('seconds', 10);
const BATCH = arg('batch', 100);
const HOSTS = 20;
/** --all: subscribers take every change of the playbook (as the web UI does), not only its playbook rows */
const ALL = process.argv.includes('--all');

interface Stream { id: number; uuid: string; seq: number; task: string; results: number }

async function post(url: string, body: unknown): Promise<any> {
  const r = await fetch(`${url}/api/v1/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const j = await r.json();
  if (r.status !== 200) throw new Error(`ingest ${r.status}: ${JSON.stringify(j)}`);
  return j;
}

async function openStream(url: string): Promise<Stream> {
  const uuid = randomUUID();
  const play = randomUUID();
  const task = randomUUID();
  const r = await post(url, {
    playbook: { uuid, path: '/bench/site.yml', runner_version: '2.16.0', status: 'running' }, seq: 1,
    events: [
      { kind: 'file', path: '/bench/site.yml', content: '- hosts: all\n' },
      { kind: 'play', uuid: play, name: 'bench', status: 'running' },
      { kind: 'task', uuid: task, play, file: '/bench/site.yml', name: 'ping', action: 'ping', lineno: 1, handler: false, status: 'running' },
      ...Array.from({ length: HOSTS }, (_, i) => ({ kind: 'host', name: `web-${i}` })),
    ],
  });
  return { id: r.playbook, uuid, seq: 1, task, results: 0 };
}

/** One batch of results; resolves with the acknowledgement time and the playbook's result count after it. */
async function batch(url: string, s: Stream): Promise<{ at: number; results: number }> {
  s.seq++;
  const events = Array.from({ length: BATCH }, (_, i) => ({
    kind: 'result', task: s.task, host: `web-${i % HOSTS}`, status: 'ok', changed: i % 7 === 0,
    content: { msg: 'pong', i }, started: '2026-01-01T00:00:00Z', ended: '2026-01-01T00:00:01Z',
  }));
  await post(url, { playbook: { id: s.id }, seq: s.seq, events });
  s.results += BATCH;
  return { at: performance.now(), results: s.results };
}

class Subscriber {
  readonly arrivals = new Map<number, number>();
  private tail = '';
  bytes = 0;
  ended = false;
  private readonly socket: Socket;
  constructor(port: number, playbook: number, ready: () => void) {
    this.socket = connect(port, '127.0.0.1', () => {
      this.socket.write(`GET /api/v1/stream?playbook=${playbook}${ALL ? '' : '&type=playbook'} HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n`);
    });
    this.socket.setEncoding('latin1');
    let first = true;
    this.socket.on('data', (chunk: string) => {
      const now = performance.now();
      this.bytes += chunk.length;
      if (first && chunk.includes('"op":"hello"')) { first = false; ready(); }
      const text = this.tail + chunk;
      const cut = text.lastIndexOf('\n\n');
      this.tail = cut < 0 ? text : text.slice(cut + 2);
      const re = /"results":(\d+),"hosts"/g;
      let m: RegExpExecArray | null;
      const scan = cut < 0 ? '' : text.slice(0, cut);
      while ((m = re.exec(scan)) !== null) {
        const n = Number(m[1]);
        if (!this.arrivals.has(n)) this.arrivals.set(n, now);
      }
    });
    this.socket.on('close', () => { this.ended = true; });
    this.socket.on('error', () => { this.ended = true; });
  }
  close(): void { this.socket.destroy(); }
}

async function subscribe(server: Running, playbook: number, n: number): Promise<Subscriber[]> {
  const port = Number(new URL(server.url).port);
  const subs: Subscriber[] = [];
  let ready = 0;
  for (let i = 0; i < n; i++) {
    subs.push(new Subscriber(port, playbook, () => { ready++; }));
    if (i % 50 === 49) await new Promise((r) => setTimeout(r, 20));
  }
  const deadline = Date.now() + 60_000;
  while (ready < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (ready < n) throw new Error(`only ${ready} of ${n} subscribers got hello`);
  return subs;
}

/** Batches back to back for `seconds`: results per second. */
async function fullSpeed(server: Running, s: Stream, seconds: number): Promise<number> {
  const t0 = performance.now();
  const cpu0 = server.cpuSeconds();
  let n = 0;
  while (performance.now() - t0 < seconds * 1000) { await batch(server.url, s); n += BATCH; }
  const rate = n / ((performance.now() - t0) / 1000);
  console.log(`  (server CPU ${(((server.cpuSeconds() - cpu0) / n) * 1e6).toFixed(0)} µs per result)`);
  return rate;
}

const pct = (sorted: number[], p: number) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]! : NaN;

async function main(): Promise<void> {
  // --url: measure a server started elsewhere (e.g. under --cpu-prof); CPU and RSS then read as 0
  const url = process.argv.includes('--url') ? process.argv[process.argv.indexOf('--url') + 1]! : null;
  const server: Running = url === null ? await startLogbook({ env: { LOGBOOK_LOG_LEVEL: 'warn' } }) : {
    name: 'external', url, pid: 0, dataDir: '', readyMs: 0, output: () => '', drain: async () => 0,
    cpuSeconds: () => 0, rssBytes: () => 0, stop: async () => {},
  };
  try {
    // ---- throughput without subscribers
    const warm = await openStream(server.url);
    await fullSpeed(server, warm, 2);
    const alone = await openStream(server.url);
    const without = await fullSpeed(server, alone, SECONDS);
    console.log(`ingest, no subscribers: ${Math.round(without)} results/s`);

    // ---- latency at a paced rate, SUBS subscribers on the playbook
    const paced = await openStream(server.url);
    const subs = await subscribe(server, paced.id, SUBS);
    console.log(`${SUBS} subscribers connected`);
    const acks = new Map<number, number>();
    const interval = (BATCH / RATE) * 1000;
    const t0 = performance.now();
    let next = t0;
    let sent = 0;
    while (performance.now() - t0 < SECONDS * 1000) {
      const b = await batch(server.url, paced);
      acks.set(b.results, b.at);
      sent += BATCH;
      next += interval;
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const achieved = sent / ((performance.now() - t0) / 1000);
    await new Promise((r) => setTimeout(r, 2000));
    const lat: number[] = [];
    let missing = 0;
    for (const sub of subs) {
      for (const [k, at] of acks) {
        const got = sub.arrivals.get(k);
        if (got === undefined) missing++;
        else lat.push(got - at);
      }
    }
    lat.sort((a, b) => a - b);
    console.log(`paced ingest: ${Math.round(achieved)} results/s (target ${RATE}), ${acks.size} batches × ${SUBS} subscribers`);
    console.log(`delivery after acknowledgement (ms; negative = before the client read its 200): p50 ${pct(lat, 50).toFixed(1)} p99 ${pct(lat, 99).toFixed(1)} max ${lat[lat.length - 1]?.toFixed(1)}; missing ${missing}, cut off ${subs.filter((s) => s.ended).length}`);

    // ---- throughput with the subscribers watching
    const watched = paced;
    const withSubs = await fullSpeed(server, watched, SECONDS);
    await new Promise((r) => setTimeout(r, 2000));
    console.log(`ingest, ${SUBS} subscribers: ${Math.round(withSubs)} results/s (${((withSubs / without - 1) * 100).toFixed(1)} % vs none); cut off ${subs.filter((s) => s.ended).length}`);
    console.log(`server rss ${(server.rssBytes() / 2 ** 20).toFixed(0)} MiB, cpu ${server.cpuSeconds().toFixed(1)} s`);
    for (const s of subs) s.close();
  } finally {
    await server.stop();
  }
}

main().catch((err) => { console.error(err); process.exitCode = 1; });
