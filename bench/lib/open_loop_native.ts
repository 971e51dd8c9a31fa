// The overload scenario's load generator as a C program (bench/lib/open_loop.c),
// built with the machine's C compiler the first time it is needed, behind the
// interface of the Node one (open_loop.ts) that the scenario uses. Why: on a
// 2-core machine the generator shares the cores with the server it loads, and
// the Node generator needed 0.7 of a core for ~40 k requests/s and lagged its
// own schedule by up to 400 ms at p99. Each loop is one run of the program:
// its samples and acknowledged ids come back through files once it has ended.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { getPriority, setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestBytes, type LoadSpec, type Sample } from './open_loop.js';
import { cpuSecondsOf, SOURCE_ROOT } from './servers.js';

const SOURCE = join(SOURCE_ROOT, 'bench', 'lib', 'open_loop.c');

/** The compiled program (built once per source change, in the temp directory); null: no C compiler here. */
export function nativeGenerator(): string | null {
  const binary = join(tmpdir(), `logbook-open-loop-${statSync(SOURCE).mtimeMs.toFixed(0)}`);
  if (existsSync(binary)) return binary;
  try {
    execFileSync('cc', ['-O2', '-o', binary, SOURCE, '-lm'], { stdio: ['ignore', 'ignore', 'pipe'] });
    return binary;
  } catch {
    return null;
  }
}

/** How many ms performance.now() is ahead of CLOCK_MONOTONIC in ms (what the program's clock reads). */
function monotonicOffset(): number {
  return performance.now() - Number(process.hrtime.bigint()) / 1e6;
}

export class NativeLoadGenerator {
  private readonly dir = mkdtempSync(join(tmpdir(), 'logbook-open-loop-'));
  private readonly requestsFile = join(this.dir, 'requests');
  private child: ChildProcess | null = null;
  /** the most connections open at once (over every loop run) */
  peakConnections = 0;
  connectFailures = 0;

  constructor(private readonly binary: string, private readonly spec: LoadSpec, private readonly maxConnections = 2000,
    /** nice value of the program (null: the same as this process) */
    private readonly nice: number | null = null) {
    const parts: Buffer[] = [];
    for (const request of requestBytes(spec)) {
      const length = Buffer.alloc(4);
      length.writeUInt32LE(request.length);
      parts.push(length, request);
    }
    writeFileSync(this.requestsFile, Buffer.concat(parts));
  }

  /** CPU seconds the program of the current loop has used so far (its last reading once it has ended). */
  cpuSeconds(): number {
    const pid = this.child?.pid;
    if (pid !== undefined) try { this.lastCpu = cpuSecondsOf(pid); } catch { /* it just ended */ }
    return this.lastCpu;
  }
  private lastCpu = 0;

  /** The running program's nice value (null: none runs). */
  niceOf(): number | null {
    const pid = this.child?.pid;
    if (pid === undefined) return null;
    try { return getPriority(pid); } catch { return null; }
  }

  /** Closed loop: `connections` loops for `seconds`; its samples. */
  async closedLoop(connections: number, seconds: number): Promise<Sample[]> {
    const samples: Sample[] = [];
    const run = this.run(['closed', String(connections), String(seconds)], (s) => samples.push(s));
    await run.done;
    return samples;
  }

  /**
   * Open loop at `rate(t)` requests/s for `seconds` (the rate is taken per
   * 10 ms slot). Resolves when the schedule has ended, with `start` (the
   * schedule's t = 0, on performance.now()'s clock) and `settled`, which
   * resolves once every sample has been handed to `onSample`.
   */
  async openLoop(rate: (t: number) => number, seconds: number, onSample: (s: Sample) => void): Promise<{ settled: Promise<void>; start: number }> {
    const SLOT_MS = 10;
    const rates: string[] = [];
    for (let k = 0; k * SLOT_MS < seconds * 1000; k++) rates.push(String(rate((k * SLOT_MS) / 1000)));
    const run = this.run(['open', String(this.maxConnections), String(SLOT_MS), ...rates], onSample);
    const start = await run.started;
    await run.ended;
    return { settled: run.done, start };
  }

  private run(args: string[], onSample: (s: Sample) => void): { started: Promise<number>; ended: Promise<void>; done: Promise<void> } {
    const samplesFile = join(this.dir, 'samples');
    const acksFile = join(this.dir, 'acks');
    const [mode, ...rest] = args;
    const child = spawn(this.binary, [mode!, String(this.spec.port), this.requestsFile, samplesFile, acksFile, ...rest], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.child = child;
    this.lastCpu = 0;
    if (this.nice !== null) {
      try { setPriority(child.pid!, this.nice); } catch { /* not allowed: it runs at this process's priority */ }
    }
    let started!: (t: number) => void;
    let ended!: () => void;
    const startedP = new Promise<number>((r) => { started = r; });
    const endedP = new Promise<void>((r) => { ended = r; });
    let out = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      out += chunk;
      for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        if (line.startsWith('start ')) started(Number(line.slice(6)) + monotonicOffset());
        else if (line === 'ended') ended();
        else if (line.startsWith('{')) {
          const stats = JSON.parse(line) as { peakConnections: number; connectFailures: number };
          this.peakConnections = Math.max(this.peakConnections, stats.peakConnections);
          this.connectFailures += stats.connectFailures;
        }
      }
    });
    const done = new Promise<void>((resolve, reject) => {
      child.on('exit', (code, signal) => {
        this.cpuSeconds();
        this.child = null;
        // a program that failed before its schedule started: openLoop goes on to `settled`, which rejects
        started(performance.now());
        ended();
        if (code !== 0) { reject(new Error(`the load generator exited with ${code ?? signal}`)); return; }
        const offset = monotonicOffset();
        const values = new Float64Array(new Uint8Array(readFileSync(samplesFile)).buffer); // copied: aligned
        for (let i = 0; i + 3 < values.length; i += 4) {
          onSample({ due: values[i]! + offset, lag: values[i + 1]!, latency: values[i + 2]!, status: values[i + 3]! });
        }
        if (this.spec.onAck) {
          const ids = new BigInt64Array(new Uint8Array(readFileSync(acksFile)).buffer);
          for (const id of ids) this.spec.onAck(`{"id":${id}}`);
        }
        resolve();
      });
    });
    return { started: startedP, ended: endedP, done };
  }

  /** Stop a loop still running (its samples are dropped) and remove the files. */
  close(): void {
    this.child?.kill('SIGKILL');
    this.child = null;
    rmSync(this.dir, { recursive: true, force: true });
  }
}
