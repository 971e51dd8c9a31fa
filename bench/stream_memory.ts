// Memory held for live-stream subscribers that never read, and whether it comes back when they go.
//   node dist/bench/stream_memory.js [--subs 500] [--batches 40] [--batch 1000] [--ws]
// Opens --subs raw SSE (or WebSocket) connections to one running playbook, pauses them (they never
// read), ingests --batches batches of --batch results, then closes them. Prints the server's RSS
// and anonymous RSS: before, with the subscribers held, right after they go, and 15 s later,
// plus the ingest rate with them and without them. The server is started with its defaults
// (the per-client buffer bound and the subscriber caps).
import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { benchArg as arg, openIngestStream, postIngest as post } from './lib/ingest_stream.js';
import { rssAnonBytesOf, startLogbook } from './lib/servers.js';

const SUBS = arg('subs', 500);
const BATCHES = arg('batches', 40);
const BATCH = arg('batch', 1000);
const WS = process.argv.includes('--ws');
const HOSTS = 20;
const MiB = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MiB`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const server = await startLogbook({ env: { LOGBOOK_SHARDS: '2' } });
const url = server.url;
const port = Number(new URL(url).port);
let heap = '';
/** the front's V8 heap (its /metrics; the shards' heaps are their own) */
const readHeap = async (): Promise<void> => {
  const text = await (await fetch(`${url}/metrics`)).text();
  const total = /^nodejs_heap_size_total_bytes (\S+)$/m.exec(text)?.[1];
  const external = /^nodejs_external_memory_bytes (\S+)$/m.exec(text)?.[1];
  heap = `, front heap ${MiB(Number(total))}, external ${MiB(Number(external))}`;
};
const memory = (): string => `rss ${MiB(server.rssBytes())}, anonymous ${MiB(rssAnonBytesOf(server.pid))}${heap}`;
try {
  const stream = await openIngestStream(url, HOSTS);
  const { task } = stream;
  const first = { playbook: stream.id };
  let seq = 1;
  const ingest = async (n: number): Promise<number> => {
    const t0 = performance.now();
    for (let b = 0; b < n; b++) {
      seq++;
      await post(url, {
        playbook: { id: first.playbook }, seq,
        events: Array.from({ length: BATCH }, (_, i) => ({ kind: 'result', task, host: `web-${i % HOSTS}`, status: 'ok', content: { msg: 'pong', i } })),
      });
    }
    return (n * BATCH) / ((performance.now() - t0) / 1000);
  };
  await ingest(3);
  await readHeap();
  console.log(`before:                 ${memory()}`);
  const alone = await ingest(BATCHES / 2);

  const sockets: Socket[] = [];
  let refused = 0;
  for (let i = 0; i < SUBS; i++) {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => {});
    const key = Buffer.from(randomUUID()).toString('base64').slice(0, 24);
    s.write(WS
      ? `GET /api/v1/stream?playbook=${first.playbook} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`
      : `GET /api/v1/stream?playbook=${first.playbook} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n`);
    s.once('data', (d: Buffer) => { if (!/^HTTP\/1\.1 (101|200)/.test(d.toString('latin1'))) refused++; s.pause(); });
    sockets.push(s);
  }
  await sleep(2000);
  const held = await ingest(BATCHES);
  await readHeap();
  console.log(`${SUBS} idle subscribers (${refused} refused): ${memory()}`);
  console.log(`ingest: ${alone.toFixed(0)} results/s alone, ${held.toFixed(0)} with them`);
  for (const s of sockets) s.destroy();
  await sleep(1000);
  await readHeap();
  console.log(`they went, 1 s later:   ${memory()}`);
  await sleep(15_000);
  await readHeap();
  console.log(`15 s later:             ${memory()}`);
  const after = await ingest(BATCHES / 2);
  console.log(`ingest after: ${after.toFixed(0)} results/s; ${memory()}`);
} finally {
  await server.stop();
}
