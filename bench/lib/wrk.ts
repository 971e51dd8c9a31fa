// wrk (Debian) as the load generator: a C event loop that is not the bottleneck
// at these rates. We run it under bash's `times` to report its own CPU use, so
// every number comes with the share of a core the generator itself needed.
// Every run is bounded twice: by time (-d) and by a request count (each wrk
// thread stops once it has seen its share of responses).
import { spawn, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Latency { p50: number; p90: number; p99: number; max: number }

export interface LoadResult {
  rps: number;
  requests: number;
  /** socket errors and timeouts (30 s) plus responses with status ≥ 400 */
  errors: number;
  latencyMs: Latency;
  /** CPU seconds wrk itself used per wall second (1.0 = one core) */
  generatorCpu: number;
  seconds: number;
}

export interface LoadSpec {
  url: string;
  method?: 'GET' | 'POST';
  body?: string;
  /** several paths, picked round-robin (for reads) */
  paths?: string[];
  /** several bodies, picked round-robin (writes spread over playbooks); overrides body */
  bodies?: string[];
  connections: number;
  seconds: number;
  /** stop after about this many responses (default: 5 million) */
  maxRequests?: number;
  threads?: number;
}

/** wrk is installed (Debian package `wrk`). */
export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['-v']).error === undefined; // -v exits 1; only a missing binary sets error
}

/** The Lua script: method, headers, body, round-robin paths, a per-thread cap, and a JSON summary line. */
function luaScript(spec: LoadSpec, perThreadCap: number): string {
  const lines = [
    `wrk.method = "${spec.method ?? 'GET'}"`,
    `wrk.headers["Content-Type"] = "application/json"`,
    `wrk.headers["Accept"] = "application/json"`,
  ];
  if (spec.body !== undefined) lines.push(`wrk.body = [==[${spec.body}]==]`);
  if (spec.bodies?.length) {
    lines.push(`local bodies = {${spec.bodies.map((b) => `[==[${b}]==]`).join(',')}}`);
    lines.push('local i = 0');
    lines.push('request = function() i = i % #bodies + 1; return wrk.format(nil, nil, nil, bodies[i]) end');
  } else if (spec.paths?.length) {
    lines.push(`local paths = {${spec.paths.map((p) => JSON.stringify(p)).join(',')}}`);
    lines.push('local i = 0');
    lines.push('request = function() i = i % #paths + 1; return wrk.format(nil, paths[i]) end');
  }
  // counting in response() costs wrk a Lua call per response; the cap is a
  // safety bound (disk, time), set well above what the time bound lets through
  lines.push(`local cap, seen = ${perThreadCap}, 0`);
  lines.push('response = function() seen = seen + 1; if seen >= cap then wrk.thread:stop() end end');
  lines.push('done = function(summary, latency, requests)');
  lines.push('  io.write(string.format("JSON {\\"p50\\":%d,\\"p90\\":%d,\\"p99\\":%d,\\"max\\":%d,\\"requests\\":%d,\\"errors\\":%d,\\"status\\":%d,\\"us\\":%d}\\n",');
  lines.push('    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, summary.requests,');
  lines.push('    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status, summary.duration))');
  lines.push('end');
  return lines.join('\n');
}

function parseTime(t: string): number {
  const m = /(\d+)m([\d.]+)s/.exec(t);
  return m ? Number(m[1]) * 60 + Number(m[2]) : 0;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const host = new URL(spec.url).hostname;
  if (host !== '127.0.0.1' && host !== 'localhost' && host !== '[::1]') throw new Error(`load goes to loopback only, not ${host}`);
  const threads = spec.threads ?? 1;
  const cap = Math.max(1, Math.ceil((spec.maxRequests ?? 5_000_000) / threads));
  const script = join(tmpdir(), `wrk-${process.pid}-${Date.now()}.lua`);
  writeFileSync(script, luaScript(spec, cap));
  const cmd = `wrk -t${threads} -c${spec.connections} -d${spec.seconds}s --timeout 30s -s ${script} ${spec.url}; times`;
  try {
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn('bash', ['-c', cmd], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (d) => { text += d; });
      child.stderr.on('data', (d) => { text += d; });
      // 'close', not 'exit': exit can come before the last of stdout has been read (seen on a loaded box)
      child.on('close', (code) => (code === 0 && text.includes('JSON {') ? resolve(text) : reject(new Error(`wrk failed (${code}): ${text}`))));
    });
    const json = JSON.parse(/JSON (\{.*\})/.exec(out)![1]!);
    const wall = json.us > 0 ? json.us / 1e6 : spec.seconds;
    // `times` prints the shell's then its children's user/sys times
    const timesLines = out.trim().split('\n').slice(-2);
    const [cu, cs] = timesLines[1]!.trim().split(/\s+/).map(parseTime);
    return {
      rps: json.requests / wall,
      requests: json.requests,
      errors: json.errors + json.status,
      latencyMs: { p50: json.p50 / 1000, p90: json.p90 / 1000, p99: json.p99 / 1000, max: json.max / 1000 },
      generatorCpu: ((cu ?? 0) + (cs ?? 0)) / wall,
      seconds: wall,
    };
  } finally {
    rmSync(script, { force: true });
  }
}
