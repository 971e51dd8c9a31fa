// Holds many idle TCP connections and some slow-loris requests open to a server,
// as a separate process (it needs more file descriptors than a test process may
// have: its parent raises the limit with `ulimit -n` before exec'ing it).
//   node hold_connections.js <port> <idle> <slow>
// Prints JSON lines: {"ready":true,"open":n,"failed":f} once every connection is
// open, then on each "status" line on stdin {"open":n,"reopened":r}. Connections
// the server closes (uWS drops idle ones after ~10 s) are opened again, so the
// pressure stays. Exits, closing everything, when stdin closes or on "close".
import { connect, type Socket } from 'node:net';
import { createInterface } from 'node:readline';

const [port, idleCount, slowCount] = process.argv.slice(2).map(Number) as [number, number, number];
const open = new Set<Socket>();
let failed = 0;
let reopened = 0;
let closing = false;
const BATCH = 256; // connects in flight at once: stays under the listen backlog

function openOne(slow: boolean): Promise<void> {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1' });
    let timer: NodeJS.Timeout | null = null;
    s.setNoDelay(true);
    s.on('connect', () => {
      open.add(s);
      if (slow) {
        // a request head that never ends: one header byte a second
        s.write('POST /api/v1/playbooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Slow: ');
        timer = setInterval(() => { if (!s.destroyed) s.write('a'); }, 1000);
      }
      resolve();
    });
    s.on('error', () => { /* counted on close */ });
    s.on('close', () => {
      if (timer) clearInterval(timer);
      const wasOpen = open.delete(s);
      if (!wasOpen) { failed++; resolve(); return; }
      if (!closing) { reopened++; void openOne(slow); }
    });
  });
}

async function openMany(n: number, slow: boolean): Promise<void> {
  for (let i = 0; i < n; i += BATCH) {
    await Promise.all(Array.from({ length: Math.min(BATCH, n - i) }, () => openOne(slow)));
  }
}

await openMany(idleCount, false);
await openMany(slowCount, true);
process.stdout.write(JSON.stringify({ ready: true, open: open.size, failed }) + '\n');

function shutdown(): void {
  closing = true;
  for (const s of open) s.destroy();
  process.stdout.write(JSON.stringify({ closed: true, open: 0 }) + '\n');
  process.exit(0);
}
const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  if (line === 'status') process.stdout.write(JSON.stringify({ open: open.size, reopened }) + '\n');
  if (line === 'close') shutdown();
});
rl.on('close', shutdown);
process.on('SIGTERM', shutdown);
