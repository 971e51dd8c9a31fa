// The raw limit of this machine: a bare uWS server with no validation, no
// routing and no state — nothing logbook does could be cheaper than this.
//   POST: read the JSON body, parse it, answer 201 once one LMDB put of it is
//         flushed to disk (same lmdb-js settings as logbook's journal).
//   GET /<n>: read record n from LMDB and answer it as JSON (the read ceiling).
// Run: node dist/bench/raw_server.js <port> <dir> [fill count] [fill body file]
//   fill: store that many copies of the body first, so GETs have data.
// RAW_ADMIT_RPS=<n>: the ideal shedder (overload scenario's floor): POSTs
//   beyond n per second (a token bucket, 100 ms of burst) get 503 +
//   Retry-After from the request handler, body unread, as logbook's cheapest
//   refusal; the others are handled as above.
import { App } from 'uWebSockets.js';
import { open } from 'lmdb';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [port, dir] = [Number(process.argv[2]), process.argv[3]!];
const fill = Number(process.argv[4] ?? 0);
const db = open({ path: join(dir, 'raw.mdb'), overlappingSync: true, separateFlushed: true, eventTurnBatching: true, commitDelay: 0 });
let key = 0;
const admitRps = Number(process.env.RAW_ADMIT_RPS ?? 0);
let tokens = admitRps / 10, refilled = performance.now();
/** Take a token if there is one (the bucket holds 100 ms of the admitted rate). */
function admit(): boolean {
  if (admitRps <= 0) return true;
  const now = performance.now();
  tokens = Math.min(admitRps / 10, tokens + ((now - refilled) * admitRps) / 1000);
  refilled = now;
  if (tokens < 1) return false;
  tokens -= 1;
  return true;
}

if (fill > 0) {
  const value = JSON.parse(readFileSync(process.argv[5]!, 'utf8'));
  let last: Promise<boolean> | null = null;
  for (let i = 0; i < fill; i++) {
    last = db.put(++key, value);
    if (i % 5000 === 4999) await last;
  }
  await last;
}

App().any('/*', (res, req) => {
  if (req.getMethod() !== 'post') {
    const n = Number(req.getUrl().slice(1));
    const value = Number.isInteger(n) && n > 0 ? db.get(n) : undefined;
    res.writeStatus(value === undefined ? '404 Not Found' : '200 OK').writeHeader('Content-Type', 'application/json').end(value === undefined ? '{}' : JSON.stringify(value));
    return;
  }
  if (!admit()) {
    res.writeStatus('503 Service Unavailable').writeHeader('Retry-After', '1').writeHeader('Content-Type', 'application/json').end('{"detail":"overloaded"}');
    return;
  }
  let aborted = false;
  res.onAborted(() => { aborted = true; });
  const parts: Buffer[] = [];
  res.onData((chunk, isLast) => {
    parts.push(Buffer.from(chunk.slice(0)));
    if (!isLast) return;
    const value = JSON.parse(Buffer.concat(parts).toString('utf8'));
    const id = ++key;
    const put = db.put(id, value) as Promise<boolean> & { flushed: Promise<void> };
    put.flushed.then(() => {
      if (!aborted) res.cork(() => res.writeStatus('201 Created').writeHeader('Content-Type', 'application/json').end('{"id":' + id + '}'));
    });
  });
}).listen('127.0.0.1', port, (s) => { if (!s) process.exit(1); });
