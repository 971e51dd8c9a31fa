// An HTTP/1.1 load generator on raw sockets for the overload scenario: closed
// loop (N connections, each sends its next request when the last is answered)
// to find the sustainable rate, and open loop (requests at a fixed arrival rate
// whatever the server does, a new connection when none is idle) to overload it.
// Latency is measured from when a request was due, not when it was sent, so a
// generator that falls behind does not hide the server's delay (no coordinated
// omission). One request in flight per connection: uWS closes a connection
// whose next request is pipelined behind one being answered.
import { connect, type Socket } from 'node:net';

export interface Sample {
  /** ms (performance.now()) when the request was due */
  due: number;
  /** ms from due to the complete response (Infinity: none) */
  latency: number;
  /** HTTP status, 0 for a connection error, -1 for a request never sent (LoadGenerator.close) */
  status: number;
  /** ms from due until the request was written (the generator's own lag) */
  lag: number;
}

export interface LoadSpec {
  port: number;
  path: string;
  /** request bodies (JSON), sent in turn */
  bodies: string[];
  /** called with each 2xx body (to collect acknowledged ids) */
  onAck?: (body: string) => void;
}

interface Conn { socket: Socket; busy: boolean; buf: Buffer; current: { due: number; sent: number; resolve: (s: Sample) => void } | null; idleSince: number }
interface Waiter { due: number; resolve: (s: Sample) => void }

/**
 * FIFO of requests due but not yet sent. An array's shift() is O(n) once its
 * backing store is in V8's large-object space (~100 k entries), where it
 * cannot be trimmed in place: with a backlog of a million requests (a
 * generator far behind a length-only server) every send moved megabytes and
 * the generator spent minutes behind on its own queue.
 */
class WaitQueue {
  private items: Array<Waiter | undefined> = [];
  private head = 0;
  get length(): number { return this.items.length - this.head; }
  push(w: Waiter): void { this.items.push(w); }
  shift(): Waiter | undefined {
    if (this.head >= this.items.length) return undefined;
    const w = this.items[this.head];
    this.items[this.head++] = undefined;
    // compact once the consumed prefix is most of the array (amortized O(1))
    if (this.head > 1024 && this.head * 2 > this.items.length) { this.items = this.items.slice(this.head); this.head = 0; }
    return w;
  }
  /** empty the queue, returning what it held */
  drain(): Waiter[] {
    const rest = this.items.slice(this.head) as Waiter[];
    this.items = []; this.head = 0;
    return rest;
  }
}

/**
 * A connection idle this long (ms) is closed instead of reused: uWS closes
 * connections idle for ~10 s, and a request written as it does so fails with
 * the connection (as HTTP clients do, keep-alive ends on the client first).
 */
const IDLE_REUSE_MS = 5000;

/**
 * Connects in flight at most. Without a bound, one stall of the machine (a
 * 100 ms hiccup with 22 k requests/s due) opened thousands of connections
 * within milliseconds: the burst of accepts and handshakes was itself the
 * next stall, and the connections, idle together afterwards, were closed
 * together by uWS's idle timeout ~10 s later, which set off the next burst
 * (measured at 22 k/s against a server that only answers 503: p99 2–5 ms in
 * calm seconds, 150–400 ms in the seconds of a burst, every ~10 s). Clients
 * of a real server do not open connections in such waves; requests beyond the
 * free connections wait in the generator's queue instead, and that wait still
 * counts (latency is from when a request was due).
 */
const MAX_CONNECTING = 64;

export class LoadGenerator {
  private readonly requests: Buffer[];
  private turn = 0;
  private readonly idle: Conn[] = [];
  private readonly all = new Set<Conn>();
  private readonly waiting = new WaitQueue();
  private connecting = 0;
  private closed = false;
  /** the most connections open at once */
  peakConnections = 0;
  /** connection attempts that failed before connecting (refused, no local port free) */
  connectFailures = 0;

  constructor(private readonly spec: LoadSpec, private readonly maxConnections = 2000) {
    this.requests = requestBytes(spec);
  }

  get openConnections(): number { return this.all.size; }
  /** requests due but not yet sent (no connection free) */
  get backlog(): number { return this.waiting.length; }

  /** Send one request (due now or at `due`); resolves with its sample. */
  send(due = performance.now()): Promise<Sample> {
    return new Promise((resolve) => this.request(due, resolve));
  }

  /**
   * Send one request and call `done` with its sample. A callback, not a
   * promise: the open loop has millions of requests outstanding when the
   * server queues (length-only policy), and settling that many promises at
   * once (close() failing the unsent ones, Promise.all over them) kept
   * millions of microtasks queued, which every scavenge walks as roots: the
   * generator spun at full CPU for an hour after the phase had ended.
   */
  request(due: number, done: (s: Sample) => void): void {
    const conn = this.takeIdle();
    if (conn) { this.start(conn, due, done); return; }
    this.waiting.push({ due, resolve: done });
    this.openIfNeeded();
  }

  /** Open a connection for the requests waiting, within both bounds. */
  private openIfNeeded(): void {
    if (!this.closed && this.waiting.length > this.connecting && this.connecting < MAX_CONNECTING && this.all.size + this.connecting < this.maxConnections) this.open();
  }

  private open(): void {
    this.connecting++;
    const socket = connect({ port: this.spec.port, host: '127.0.0.1' });
    socket.setNoDelay(true);
    const conn: Conn = { socket, busy: false, buf: Buffer.alloc(0), current: null, idleSince: 0 };
    socket.on('connect', () => {
      this.connecting--;
      this.all.add(conn);
      this.peakConnections = Math.max(this.peakConnections, this.all.size);
      this.release(conn);
      this.openIfNeeded();
    });
    socket.on('data', (chunk: Buffer) => this.onData(conn, chunk));
    socket.on('error', () => { /* handled on close */ });
    socket.on('close', () => {
      if (!this.all.delete(conn)) {
        this.connecting--;
        // it never connected: the request waiting longest fails with it (status 0).
        // Reconnecting for it instead spun forever at full CPU once connects
        // failed at once (a local port range exhausted, a server gone), and the
        // requests waiting never settled.
        this.connectFailures++;
        const w = this.waiting.shift();
        if (w) { const now = performance.now(); w.resolve({ due: w.due, latency: Infinity, status: 0, lag: now - w.due }); }
        if (!this.closed && this.waiting.length) setTimeout(() => this.openIfNeeded(), 10);
        return;
      }
      const i = this.idle.indexOf(conn);
      if (i >= 0) this.idle.splice(i, 1);
      if (conn.current) { const c = conn.current; conn.current = null; c.resolve({ due: c.due, latency: Infinity, status: 0, lag: c.sent - c.due }); }
      // whoever waits gets another connection
      this.openIfNeeded();
    });
  }

  /** The most recently used idle connection that is not about to be closed by the server. */
  private takeIdle(): Conn | undefined {
    const now = performance.now();
    for (let conn = this.idle.pop(); conn; conn = this.idle.pop()) {
      if (now - conn.idleSince < IDLE_REUSE_MS) return conn;
      this.all.delete(conn);
      conn.socket.removeAllListeners('close');
      conn.socket.destroy();
    }
    return undefined;
  }

  private start(conn: Conn, due: number, resolve: (s: Sample) => void): void {
    conn.busy = true;
    conn.current = { due, sent: performance.now(), resolve };
    conn.socket.write(this.requests[this.turn++ % this.requests.length]!);
  }

  private release(conn: Conn): void {
    conn.busy = false;
    const next = this.waiting.shift();
    if (next) this.start(conn, next.due, next.resolve);
    else { conn.idleSince = performance.now(); this.idle.push(conn); }
  }

  private onData(conn: Conn, chunk: Buffer): void {
    conn.buf = conn.buf.length ? Buffer.concat([conn.buf, chunk]) : chunk;
    for (;;) {
      const headEnd = conn.buf.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = conn.buf.subarray(0, headEnd).toString('latin1');
      const status = Number(head.slice(9, 12));
      const m = /\r\ncontent-length: *(\d+)/i.exec(head);
      const length = m ? Number(m[1]) : 0;
      if (conn.buf.length < headEnd + 4 + length) return;
      const body = conn.buf.subarray(headEnd + 4, headEnd + 4 + length);
      conn.buf = conn.buf.subarray(headEnd + 4 + length);
      const c = conn.current;
      conn.current = null;
      if (status >= 200 && status < 300 && this.spec.onAck) this.spec.onAck(body.toString('utf8'));
      if (/\r\nconnection: *close/i.test(head)) { conn.socket.destroy(); }
      else this.release(conn);
      if (c) c.resolve({ due: c.due, latency: performance.now() - c.due, status, lag: c.sent - c.due });
    }
  }

  /** Closed loop: `connections` loops for `seconds`; returns the samples. */
  async closedLoop(connections: number, seconds: number): Promise<Sample[]> {
    const samples: Sample[] = [];
    const end = performance.now() + seconds * 1000;
    await Promise.all(Array.from({ length: connections }, async () => {
      while (performance.now() < end) samples.push(await this.send());
    }));
    return samples;
  }

  /**
   * Open loop: `rate(t)` requests/s (t = seconds since start) for `seconds`.
   * Resolves when the phase ends, with `settled`: a promise that resolves once
   * every request of it has its sample (later if the server is behind).
   */
  async openLoop(rate: (t: number) => number, seconds: number, onSample: (s: Sample) => void): Promise<{ settled: Promise<void> }> {
    let outstanding = 0;
    let ended = false;
    let allSettled!: () => void;
    const settled = new Promise<void>((r) => { allSettled = r; });
    const done = (s: Sample): void => {
      onSample(s);
      if (--outstanding === 0 && ended) allSettled();
    };
    const t0 = performance.now();
    let sent = 0;
    let due = 0; // requests due so far (fractional)
    let last = t0;
    for (;;) {
      const now = performance.now();
      if (now - t0 >= seconds * 1000) break;
      due += (rate((now - t0) / 1000) * (now - last)) / 1000;
      last = now;
      for (; sent < Math.floor(due); sent++) {
        outstanding++;
        this.request(now, done);
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    ended = true;
    if (outstanding === 0) allSettled();
    return { settled }; // wrapped: an async function returning a promise would wait for it
  }

  /**
   * Stop: requests due but never sent (no connection was free) are dropped and
   * resolve with status -1; those in flight fail with their connections. Without
   * this a backlog of an overload phase kept being sent after it.
   */
  close(): void {
    this.closed = true;
    const unsent = this.waiting.drain();
    for (const w of unsent) w.resolve({ due: w.due, latency: Infinity, status: -1, lag: Infinity });
    for (const c of this.all) c.socket.destroy();
    this.all.clear();
    this.idle.length = 0;
  }
}

/** Each of the spec's bodies as the whole HTTP request that sends it (POST to its path), ready to write. */
export function requestBytes(spec: LoadSpec): Buffer[] {
  return spec.bodies.map((text) => {
    const body = Buffer.from(text);
    return Buffer.concat([Buffer.from(`POST ${spec.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`), body]);
  });
}

/** Percentile of a list of numbers (sorted copy; 0 ≤ q ≤ 1). */
export function percentile(values: number[], q: number): number {
  if (!values.length) return NaN;
  const s = Float64Array.from(values).sort();
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}
