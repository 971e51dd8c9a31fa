// Full-text search (docs/search.md), end to end on a real logbook:
// `node dist/bench/search.js [results=200000] [shards=1]`.
//
// 1. Batch ingest of `results` results with varied content (a `msg` from
//    error and status phrases, 2-6 `stdout` lines of Ansible-ish words with
//    numbers and paths, an rc, 500 host names, a rare word in 1 of 20,000),
//    4 streams of 1,000-result batches, once with the index off and once on
//    (fresh servers): results/s of each, the ratio; with it on, the longest
//    acknowledgement-to-findable lag the server reported while ingesting
//    (logbook_search_lag_seconds, sampled) and how long after the last
//    acknowledgement every result was findable.
// 2. Queries, sequential, on the store with the index on: a rare word (≤ 10
//    hits), a common word (first page of 50, newest first), a phrase, a
//    field-filtered query, and a list with q= (results?q=…&status=failed):
//    p50/p99 of each.
// 3. Size of search.sqlite against the result content bytes sent.
// 4. Rebuild: the server stopped, search.sqlite deleted, started again: time
//    until every shard is indexed (logbook_search_shards_behind 0) and the
//    documents are all back.
import { Agent, request } from 'node:http';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLogbook } from './lib/servers.js';

const N = Number(process.argv[2] ?? 200_000);
const SHARDS = process.argv[3] ?? '1';
const BATCH = 1000;
const STREAMS = 4;

const agent = new Agent({ keepAlive: true, maxSockets: 16 });
function http(url: string, method: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers: body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {} }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

let seed = 42;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
const WORDS = 'install package service restart started stopped enabled configuration template copied changed unchanged directory file mode owner group user module python interpreter discovered facts gathered network interface address route gateway firewall rule accept drop port listen socket connection database schema migration applied pending backup snapshot volume mount filesystem kernel version upgrade downgrade repository cache update certificate expired renewed token secret vault password hash checksum mismatch retry attempt delay handler notified skipped conditional loop item'.split(' ');
const ERRORS = ['permission denied', 'connection refused', 'no space left on device', 'timed out waiting for lock', 'unable to resolve host', 'certificate verify failed', 'non-zero return code', 'module not found', 'syntax error near unexpected token', 'broken pipe'];
const PATHS = ['/etc/nginx/nginx.conf', '/var/lib/postgresql/data', '/opt/app/releases', '/etc/ssl/private', '/var/log/syslog', '/srv/www/current', '/usr/local/bin/deploy'];

let contentBytes = 0;
function resultEvent(i: number): string {
  const lines: string[] = [];
  const n = 2 + Math.floor(rnd() * 5);
  for (let l = 0; l < n; l++) {
    let line = '';
    const w = 4 + Math.floor(rnd() * 10);
    for (let k = 0; k < w; k++) line += (k ? ' ' : '') + (rnd() < 0.15 ? String(Math.floor(rnd() * 100000)) : rnd() < 0.08 ? pick(PATHS) : pick(WORDS));
    lines.push(line);
  }
  const failed = rnd() < 0.05;
  const msg = failed ? `${pick(ERRORS)}: ${pick(PATHS)}` : `${pick(WORDS)} ${pick(WORDS)} ok`;
  if (i % 20_000 === 7) lines.push(`rare marker xyzzyrare${Math.floor(i / 20_000)}`);
  const content = JSON.stringify({ msg, stdout: lines.join('\n'), stdout_lines: lines, rc: failed ? 1 : 0, changed: rnd() < 0.3 });
  contentBytes += Buffer.byteLength(content);
  const host = `web${String(Math.floor(rnd() * 500)).padStart(3, '0')}.dc${Math.floor(rnd() * 3)}.example.com`;
  return `{"kind":"result","task":"t${i % 7}","host":"${host}","status":"${failed ? 'failed' : 'ok'}","content":${content}}`;
}

async function ingest(url: string, tag: string): Promise<{ seconds: number; maxLagSeconds: number; lastAckAt: number }> {
  let next = 0;
  let maxLag = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const m = await http(`${url}/metrics`, 'GET');
      const lag = Number(/^logbook_search_lag_seconds (\S+)/m.exec(m.text)?.[1] ?? 0);
      if (lag > maxLag) maxLag = lag;
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: STREAMS }, async (_, s) => {
    const uuid = `bench-${tag}-${s}-${Date.now()}`;
    const tasks = Array.from({ length: 7 }, (_, k) => ({ kind: 'task', uuid: `t${k}`, play: 'p', file: '/srv/site.yml', name: `${pick(WORDS)} ${pick(WORDS)} ${k}`, action: pick(['apt', 'copy', 'template', 'command', 'service']), lineno: k + 1, handler: false }));
    let seq = 1;
    const first = { playbook: { uuid, path: `/srv/${tag}-${s}.yml`, runner_version: '2.16.0', status: 'running' }, seq: seq++, events: [
      { kind: 'file', path: '/srv/site.yml', content: '- hosts: all\n' }, { kind: 'play', uuid: 'p', name: 'site', status: 'running' }, ...tasks] };
    const r = await http(`${url}/api/v1/ingest`, 'POST', JSON.stringify(first));
    if (r.status !== 200) throw new Error(`ingest → ${r.status} ${r.text.slice(0, 200)}`);
    for (;;) {
      const start = next;
      if (start >= N) break;
      next += BATCH;
      const events: string[] = [];
      for (let i = start; i < Math.min(N, start + BATCH); i++) events.push(resultEvent(i));
      const body = `{"playbook":{"uuid":"${uuid}"},"seq":${seq++},"events":[${events.join(',')}]}`;
      const a = await http(`${url}/api/v1/ingest`, 'POST', body);
      if (a.status !== 200) throw new Error(`ingest → ${a.status} ${a.text.slice(0, 200)}`);
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  sampling = false;
  await sampler;
  return { seconds, maxLagSeconds: maxLag, lastAckAt: performance.now() };
}

async function documents(url: string): Promise<{ documents: number; behind: number }> {
  const m = (await http(`${url}/metrics`, 'GET')).text;
  return { documents: Number(/^logbook_search_documents (\d+)/m.exec(m)?.[1] ?? 0), behind: Number(/^logbook_search_shards_behind (\d+)/m.exec(m)?.[1] ?? 1) };
}

async function untilIndexed(url: string, atLeast: number, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const d = await documents(url);
    if (d.documents >= atLeast && d.behind === 0) return (performance.now() - t0) / 1000;
    if (performance.now() - t0 > timeoutMs) throw new Error(`index not caught up after ${timeoutMs / 1000} s: ${JSON.stringify(d)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function latency(url: string, path: string, times: number): Promise<{ p50: number; p99: number; count: number }> {
  const ms: number[] = [];
  let count = 0;
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    const r = await http(url + path, 'GET');
    ms.push(performance.now() - t0);
    if (r.status !== 200) throw new Error(`${path} → ${r.status} ${r.text.slice(0, 200)}`);
    count = JSON.parse(r.text).count;
  }
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(times * 0.5)]!, p99: ms[Math.min(times - 1, Math.floor(times * 0.99))]!, count };
}

const f1 = (x: number) => x.toFixed(1);
const out = (s: string) => process.stdout.write(s + '\n');

// 1. ingest, index off then on
const off = await startLogbook({ env: { LOGBOOK_SEARCH: 'false', LOGBOOK_SHARDS: SHARDS } });
const withoutIndex = await ingest(off.url, 'off');
await off.stop();
contentBytes = 0;
const onDir = mkdtempSync(join(tmpdir(), 'logbook-bench-search-'));
const on = await startLogbook({ env: { LOGBOOK_SHARDS: SHARDS }, dataDir: onDir });
const withIndex = await ingest(on.url, 'on');
const caughtUp = await untilIndexed(on.url, N, 30 * 60_000);
const rateOff = N / withoutIndex.seconds;
const rateOn = N / withIndex.seconds;
out(`search bench: ${N} results, ${SHARDS} shard(s), ${(contentBytes / 1e6).toFixed(1)} MB of result content`);
out(`ingest (4 streams × 1,000/batch): index off ${Math.round(rateOff)} results/s, on ${Math.round(rateOn)} results/s: ${f1(100 * rateOn / rateOff)} %`);
out(`index lag while ingesting (longest reported): ${f1(withIndex.maxLagSeconds)} s; every result findable ${f1(caughtUp)} s after the last acknowledgement`);

// 2. queries
const rare = await latency(on.url, '/api/v1/search?q=xyzzyrare1', 200);
const common = await latency(on.url, '/api/v1/search?q=restart&limit=50', 100);
const phrase = await latency(on.url, `/api/v1/search?q=${encodeURIComponent('"no space left on device"')}&limit=50`, 100);
const field = await latency(on.url, `/api/v1/search?q=${encodeURIComponent('host:web042 status:failed denied')}&limit=50`, 100);
const list = await latency(on.url, `/api/v1/results?q=${encodeURIComponent('"permission denied"')}&status=failed&limit=50`, 50);
for (const [name, r] of [['rare word', rare], ['common word, first page of 50', common], ['phrase', phrase], ['field terms + word', field], ['results?q=phrase&status=failed', list]] as const) {
  out(`query ${name}: ${r.count}${name.startsWith('common') ? '+' : ''} matches, p50 ${f1(r.p50)} ms, p99 ${f1(r.p99)} ms`);
}

// 3. size
const files = readdirSync(on.dataDir).filter((f) => f.startsWith('search.sqlite'));
const indexBytes = files.reduce((a, f) => a + statSync(join(on.dataDir, f)).size, 0);
out(`index size: ${(indexBytes / 1e6).toFixed(1)} MB (search.sqlite*) for ${(contentBytes / 1e6).toFixed(1)} MB of result content: ${(indexBytes / contentBytes).toFixed(2)} ×`);

// 4. rebuild
const before = (await documents(on.url)).documents;
await on.stop();
for (const f of files) rmSync(join(on.dataDir, f), { force: true });
const t0 = performance.now();
const again = await startLogbook({ env: { LOGBOOK_SHARDS: SHARDS }, dataDir: on.dataDir });
const rebuilt = await untilIndexed(again.url, before, 60 * 60_000);
out(`rebuild of ${before} documents from the shards: ${f1((performance.now() - t0) / 1000)} s from start (${f1(rebuilt)} s after ready)`);
await again.stop();
rmSync(on.dataDir, { recursive: true, force: true });
agent.destroy();
