// wrk (Debian) as the load generator: a C event loop that is not the bottleneck
// at these rates. We run it under bash's `times` to report its own CPU use.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LoadResult {
  rps: number;
  requests: number;
  errors: number;
  latencyMs: { p50: number; p75: number; p90: number; p99: number; max: number };
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
  connections: number;
  seconds: number;
  threads?: number;
}

function luaScript(spec: LoadSpec): string {
  const lines = [
    `wrk.method = "${spec.method ?? 'GET'}"`,
    `wrk.headers["Content-Type"] = "application/json"`,
    `wrk.headers["Accept"] = "application/json"`,
  ];
  if (spec.body !== undefined) lines.push(`wrk.body = [==[${spec.body}]==]`);
  if (spec.paths?.length) {
    lines.push(`local paths = {${spec.paths.map((p) => JSON.stringify(p)).join(',')}}`);
    lines.push('local i = 0');
    lines.push('request = function() i = i % #paths + 1; return wrk.format(nil, paths[i]) end');
  }
  lines.push('done = function(summary, latency, requests)');
  lines.push('  io.write(string.format("JSON {\\"p50\\":%d,\\"p75\\":%d,\\"p90\\":%d,\\"p99\\":%d,\\"max\\":%d,\\"requests\\":%d,\\"errors\\":%d,\\"status\\":%d}\\n",');
  lines.push('    latency:percentile(50), latency:percentile(75), latency:percentile(90), latency:percentile(99), latency.max, summary.requests,');
  lines.push('    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status))');
  lines.push('end');
  return lines.join('\n');
}

function parseTime(t: string): number {
  const m = /(\d+)m([\d.]+)s/.exec(t);
  return m ? Number(m[1]) * 60 + Number(m[2]) : 0;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const script = join(tmpdir(), `wrk-${process.pid}-${Date.now()}.lua`);
  writeFileSync(script, luaScript(spec));
  const threads = spec.threads ?? 1;
  const cmd = `wrk -t${threads} -c${spec.connections} -d${spec.seconds}s --timeout 10s -s ${script} ${spec.url}; times`;
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn('bash', ['-c', cmd], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d) => { text += d; });
    child.stderr.on('data', (d) => { text += d; });
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk failed (${code}): ${text}`))));
  });
  const json = JSON.parse(/JSON (\{.*\})/.exec(out)![1]!);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
  // `times` prints the shell's then its children's user/sys times
  const timesLines = out.trim().split('\n').slice(-2);
  const [cu, cs] = timesLines[1]!.trim().split(/\s+/).map(parseTime);
  return {
    rps,
    requests: json.requests,
    errors: json.errors + json.status,
    latencyMs: { p50: json.p50 / 1000, p75: json.p75 / 1000, p90: json.p90 / 1000, p99: json.p99 / 1000, max: json.max / 1000 },
    generatorCpu: ((cu ?? 0) + (cs ?? 0)) / spec.seconds,
    seconds: spec.seconds,
  };
}
