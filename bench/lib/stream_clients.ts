// The live-stream benchmark's subscribers (bench/stream.ts), run in a worker
// thread so that reading 1,000 sockets does not share an event loop (and thus
// delay acknowledgements, or slow the ingest) with the load generator.
//
// Each subscriber is a raw socket, SSE or WebSocket. It does not parse the
// messages: it counts bytes and scans the text for the playbook row's result
// count (`"results":N,"hosts"`, the last change of every ingest batch) to time
// its arrival. Times are epoch milliseconds (timeOrigin + now) so the main
// thread can compare them with its acknowledgement times.
import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';

export interface ClientsConfig { port: number; playbook: number; subs: number; all: boolean; ws: boolean }
/** main → worker */
export type ClientsRequest = { k: 'collect'; acks: Array<[number, number]> } | { k: 'close' };
/** worker → main */
export type ClientsReport =
  | { k: 'ready'; n: number }
  | { k: 'collected'; latencies: Float64Array; first: Float64Array; missing: number; ended: number; bytes: number };

const MARK = /"results":(\d+),"hosts"/g;
const now = (): number => performance.timeOrigin + performance.now();

class Client {
  readonly arrivals = new Map<number, number>();
  bytes = 0;
  ended = false;
  private tail = '';
  private hello = false;
  private readonly socket: Socket;
  constructor(cfg: ClientsConfig, ready: () => void) {
    const query = `playbook=${cfg.playbook}${cfg.all ? '' : '&type=playbook'}`;
    this.socket = connect(cfg.port, '127.0.0.1', () => {
      this.socket.write(cfg.ws
        ? `GET /api/v1/stream?${query} HTTP/1.1\r\nHost: bench\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
          + `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`
        : `GET /api/v1/stream?${query} HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n`);
    });
    // latin1: one char per byte, so WebSocket frame headers cannot break the text scan
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk: string) => {
      const at = now();
      this.bytes += chunk.length;
      if (!this.hello && chunk.includes('"op":"hello"')) { this.hello = true; ready(); }
      const text = this.tail + chunk;
      MARK.lastIndex = 0;
      let m: RegExpExecArray | null;
      while ((m = MARK.exec(text)) !== null) {
        const n = Number(m[1]);
        if (!this.arrivals.has(n)) this.arrivals.set(n, at);
      }
      // a mark cut in two by a chunk boundary is found with the next chunk
      this.tail = text.length > 40 ? text.slice(-40) : text;
    });
    this.socket.on('close', () => { this.ended = true; });
    this.socket.on('error', () => { this.ended = true; });
  }
  close(): void { this.socket.destroy(); }
}

async function main(): Promise<void> {
  const cfg = workerData as ClientsConfig;
  const port = parentPort!;
  const clients: Client[] = [];
  let ready = 0;
  for (let i = 0; i < cfg.subs; i++) {
    clients.push(new Client(cfg, () => { if (++ready === cfg.subs) port.postMessage({ k: 'ready', n: ready } satisfies ClientsReport); }));
    if (i % 50 === 49) await new Promise((r) => setTimeout(r, 20));
  }
  port.on('message', (req: ClientsRequest) => {
    if (req.k === 'close') { for (const c of clients) c.close(); port.close(); return; }
    const lat: number[] = [];
    /** per batch: the earliest subscriber's latency (the rest is the spread of one fan-out round) */
    const first = new Map<number, number>();
    let missing = 0;
    let bytes = 0;
    for (const c of clients) {
      bytes += c.bytes;
      for (const [k, at] of req.acks) {
        const got = c.arrivals.get(k);
        if (got === undefined) { missing++; continue; }
        lat.push(got - at);
        const f = first.get(k);
        if (f === undefined || got - at < f) first.set(k, got - at);
      }
    }
    const report: ClientsReport = {
      k: 'collected', latencies: Float64Array.from(lat), first: Float64Array.from(first.values()), missing, ended: clients.filter((c) => c.ended).length,
      bytes,
    };
    port.postMessage(report);
  });
}

void main();
