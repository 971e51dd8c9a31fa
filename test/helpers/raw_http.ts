// Raw HTTP/1.1 over node:net, for what fetch cannot send: malformed request
// lines and headers, repeated headers, slow and abandoned bodies, half-open
// connections, pipelining. Responses are parsed just enough to assert on.
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Map<string, string[]>;
  body: string;
}

export interface RawResult {
  responses: RawResponse[];
  /** the server closed the connection (before `waitMs` ran out) */
  closed: boolean;
  ms: number;
}

/** Parse every complete response in `data` (Content-Length framed, or up to the end when closed). */
export function parseResponses(data: Buffer, closed: boolean): RawResponse[] {
  const out: RawResponse[] = [];
  let at = 0;
  while (at < data.length) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const head = data.subarray(at, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0]!);
    if (!m) break;
    const headers = new Map<string, string[]>();
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':');
      const k = line.slice(0, colon).trim().toLowerCase();
      headers.set(k, [...(headers.get(k) ?? []), line.slice(colon + 1).trim()]);
    }
    const length = headers.get('content-length')?.[0];
    let bodyEnd: number;
    if (length !== undefined) bodyEnd = end + 4 + Number(length);
    else if (closed) bodyEnd = data.length;
    else bodyEnd = end + 4;
    if (bodyEnd > data.length) break;
    out.push({ status: Number(m[1]), headers, body: data.subarray(end + 4, bodyEnd).toString('utf8') });
    at = bodyEnd;
  }
  return out;
}

/**
 * Send `chunks` (with `gapMs` between them) on a fresh connection, then wait up to
 * `waitMs` for the server to answer and/or close. The socket is destroyed at the end.
 */
export function rawExchange(port: number, chunks: Array<string | Buffer>, opts: { waitMs?: number; gapMs?: number; untilResponses?: number } = {}): Promise<RawResult> {
  const { waitMs = 3000, gapMs = 0, untilResponses = 1 } = opts;
  return new Promise((resolve) => {
    const t0 = Date.now();
    const socket = connect(port, '127.0.0.1');
    const parts: Buffer[] = [];
    let closed = false;
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const data = Buffer.concat(parts);
      resolve({ responses: parseResponses(data, closed), closed, ms: Date.now() - t0 });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (d) => {
      parts.push(d);
      if (parseResponses(Buffer.concat(parts), false).length >= untilResponses && untilResponses > 0) setTimeout(finish, 50);
    });
    socket.on('close', () => { closed = true; finish(); });
    socket.on('error', () => { /* reset by peer counts as closed */ });
    socket.on('connect', async () => {
      for (let i = 0; i < chunks.length && !socket.destroyed; i++) {
        if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        if (!socket.destroyed) socket.write(chunks[i]!);
      }
    });
  });
}

/** Open a connection, write `data` (may be empty) and leave it hanging; resolves once connected. */
export function openHalf(port: number, data: string): Promise<Socket & { closedAt?: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1') as Socket & { closedAt?: number };
    socket.on('close', () => { socket.closedAt = Date.now(); });
    socket.on('error', () => { /* closed by the server */ });
    socket.once('connect', () => { if (data) socket.write(data); resolve(socket); });
    socket.once('error', reject);
  });
}
