// The raw limit of this machine for durable ingest: a bare uWS server that
// reads a JSON body, parses it, and answers 201 once one LMDB put of it is
// flushed to disk (same lmdb-js settings as logbook's journal). No validation,
// no routing, no state: nothing logbook could do is cheaper than this.
import { App } from 'uWebSockets.js';
import { open } from 'lmdb';
import { join } from 'node:path';

const [port, dir] = [Number(process.argv[2]), process.argv[3]!];
const db = open({ path: join(dir, 'raw.mdb'), overlappingSync: true, separateFlushed: true, eventTurnBatching: true, commitDelay: 0 });
let key = 0;

App().any('/*', (res, req) => {
  if (req.getMethod() !== 'post') { res.end('{}'); return; }
  let aborted = false;
  res.onAborted(() => { aborted = true; });
  const parts: Buffer[] = [];
  res.onData((chunk, isLast) => {
    parts.push(Buffer.from(chunk.slice(0)));
    if (!isLast) return;
    const value = JSON.parse(Buffer.concat(parts).toString('utf8'));
    const put = db.put(++key, value) as Promise<boolean> & { flushed: Promise<void> };
    put.flushed.then(() => {
      if (!aborted) res.cork(() => res.writeStatus('201 Created').writeHeader('Content-Type', 'application/json').end('{"id":' + key + '}'));
    });
  });
}).listen('127.0.0.1', port, (s) => { if (!s) process.exit(1); });
