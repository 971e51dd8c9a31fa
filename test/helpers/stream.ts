// Live-stream clients for tests (SPEC §14): Server-Sent Events over fetch
// streaming, and WebSocket with the `ws` package (Node 20 has no global
// WebSocket). Both collect every message, parsed, in arrival order.
import WebSocket from 'ws';

export type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface StreamMessage { data: Json; id: string | null }

export interface StreamClient {
  readonly messages: StreamMessage[];
  /** resolves when the server closed the stream: WebSocket close code, or 0 for the end of an SSE response */
  readonly ended: Promise<number>;
  /** wait until `count` messages arrived (or `pred` holds for the messages so far) */
  waitFor(pred: number | ((messages: StreamMessage[]) => boolean), timeoutMs?: number): Promise<StreamMessage[]>;
  close(): void;
}

class Collector {
  readonly messages: StreamMessage[] = [];
  private waiters: Array<() => void> = [];
  push(m: StreamMessage): void {
    this.messages.push(m);
    const w = this.waiters; this.waiters = [];
    for (const f of w) f();
  }
  wake(): void { const w = this.waiters; this.waiters = []; for (const f of w) f(); }
  async waitFor(pred: number | ((messages: StreamMessage[]) => boolean), timeoutMs = 30_000, ended: () => boolean = () => false): Promise<StreamMessage[]> {
    const test = typeof pred === 'number' ? (m: StreamMessage[]) => m.length >= pred : pred;
    const deadline = Date.now() + timeoutMs;
    while (!test(this.messages)) {
      if (ended()) throw new Error(`stream ended after ${this.messages.length} messages: ${JSON.stringify(this.messages.map((m) => m.data)).slice(0, 2000)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out with ${this.messages.length} messages: ${JSON.stringify(this.messages.map((m) => m.data)).slice(-2000)}`);
      await new Promise<void>((resolve) => { const t = setTimeout(resolve, Math.min(left, 200)); this.waiters.push(() => { clearTimeout(t); resolve(); }); });
    }
    return this.messages;
  }
}

/** Open an SSE stream; rejects with the status and body when the server refuses it. */
export async function openSse(base: string, query = '', headers: Record<string, string> = {}): Promise<StreamClient> {
  const abort = new AbortController();
  const res = await fetch(`${base}/api/v1/stream${query}`, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  if (res.status !== 200) {
    const body = await res.text();
    throw Object.assign(new Error(`stream refused: ${res.status} ${body}`), { status: res.status, body, headers: res.headers });
  }
  const c = new Collector();
  let done = false;
  const ended = (async () => {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { value, done: eof } = await reader.read();
        if (eof) break;
        buf += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          let id: string | null = null;
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (data !== '') c.push({ data: JSON.parse(data), id });
        }
      }
    } catch { /* aborted by close() */ }
    done = true;
    c.wake();
    return 0;
  })();
  return {
    messages: c.messages, ended,
    waitFor: (pred, timeoutMs) => c.waitFor(pred, timeoutMs, () => done),
    close: () => abort.abort(),
  };
}

/** Open a WebSocket stream; rejects with the HTTP status when the upgrade is refused. */
export function openWs(base: string, query = '', headers: Record<string, string> = {}): Promise<StreamClient & { ws: WebSocket }> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/api/v1/stream${query}`, { headers });
  const c = new Collector();
  let done = false;
  const ended = new Promise<number>((resolve) => ws.on('close', (code) => { done = true; c.wake(); resolve(code); }));
  ws.on('message', (data) => c.push({ data: JSON.parse(String(data)), id: null }));
  return new Promise((resolve, reject) => {
    ws.on('open', () => resolve({
      ws, messages: c.messages, ended,
      waitFor: (pred, timeoutMs) => c.waitFor(pred, timeoutMs, () => done),
      close: () => ws.close(),
    }));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode} ${body}`), { status: res.statusCode, body })));
    });
    ws.on('error', (err) => reject(err));
  });
}

/** The changes (not hello/reset) of a message list, as [op, type, id]. */
export const changes = (messages: StreamMessage[]): Array<[string, string, number]> =>
  messages.filter((m) => m.data.op !== 'hello' && m.data.op !== 'reset').map((m) => [m.data.op, m.data.type, m.data.id]);
