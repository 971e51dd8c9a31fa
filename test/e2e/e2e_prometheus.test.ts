// Real Prometheus (Debian's) scraping a real logbook with the shipped
// deploy/prometheus/prometheus.yml (only the scrape interval, the target and
// the rule file's path replaced) and the shipped alert rules: the target is up,
// logbook's request counter reaches Prometheus with the exact number of
// requests made, and every alert rule evaluates without error; a run recorded as
// failed through the API reaches Prometheus as logbook_runs_ended_total{status="failed"}
// and fires LogbookRunFailed. promtool checks the rules and runs their unit tests
// (deploy/prometheus/alerts.test.yml, alerts_daily.test.yml); every metric an
// alert names is one logbook exports.
//
// Needs prometheus and promtool (Debian `prometheus`); skipped without them. CI installs it.
import test from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, onPath } from '../helpers/ansible.js';
import { parseProm } from '../helpers/prom.js';
import { DEPLOY_DIR, substitute } from '../helpers/proxy.js';
import { api, startLogbook } from '../helpers/server.js';

const PROM_DIR = join(DEPLOY_DIR, 'prometheus');
const hasPrometheus = onPath('prometheus') && onPath('promtool');
const promTest = hasPrometheus ? test : test.skip;
if (!hasPrometheus) console.warn('e2e_prometheus: prometheus/promtool not installed; skipped (apt-get install prometheus)');

function promtool(args: string[]): { code: number | null; output: string } {
  const r = spawnSync('promtool', args, { cwd: PROM_DIR, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Polls fn until it returns a value (not undefined) or the deadline passes. */
async function eventually<T>(what: string, fn: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) { last = err; }
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${ms} ms${last ? ` (${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

promTest('promtool accepts the shipped rules and config, and the rules\' unit tests pass', (t) => {
  const rules = promtool(['check', 'rules', 'alerts.yml']);
  t.is(rules.code, 0, rules.output);
  t.regex(rules.output, /SUCCESS: \d+ rules found/);
  const config = promtool(['check', 'config', 'prometheus.yml']);
  t.is(config.code, 0, config.output);
  const unit = promtool(['test', 'rules', 'alerts.test.yml', 'alerts_daily.test.yml']);
  t.is(unit.code, 0, unit.output);
});

promTest('Prometheus scrapes logbook with the shipped config: up, the exact request count, every alert rule healthy, a failed run alerts', async (t) => {
  t.timeout(180_000);
  const dir = mkdtempSync(join(tmpdir(), 'logbook-prom-'));
  const logbook = await startLogbook({ env: { LOGBOOK_SHARDS: '2' } });
  const port = await freePort();
  const config = substitute(readFileSync(join(PROM_DIR, 'prometheus.yml'), 'utf8'), [
    ['scrape_interval: 15s', 'scrape_interval: 1s'],
    ['evaluation_interval: 15s', 'evaluation_interval: 1s'],
    ["'127.0.0.1:8000'", `'127.0.0.1:${logbook.port}'`],
    ['  - alerts.yml', `  - ${join(PROM_DIR, 'alerts.yml')}`],
  ]);
  writeFileSync(join(dir, 'prometheus.yml'), config);
  const prom = spawn('prometheus', [
    `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let promOut = '';
  prom.stdout.setEncoding('utf8').on('data', (d: string) => { promOut += d; });
  prom.stderr.setEncoding('utf8').on('data', (d: string) => { promOut += d; });
  const promExited = new Promise<void>((resolve) => prom.on('close', () => resolve()));
  t.teardown(async () => {
    if (!t.passed) t.log(`prometheus output:\n${promOut.slice(-3000)}`);
    if (prom.exitCode === null && prom.signalCode === null) {
      prom.kill('SIGTERM');
      const timer = setTimeout(() => prom.kill('SIGKILL'), 10_000);
      await promExited;
      clearTimeout(timer);
    }
    await logbook.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${port}`;
  const query = async (q: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> => {
    const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = await res.json() as { status: string; data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    if (body.status !== 'success') throw new Error(`query ${q}: ${JSON.stringify(body)}`);
    return body.data.result;
  };

  // Requests Prometheus should count: 7 label creations.
  const POSTS = 7;
  for (let i = 0; i < POSTS; i++) {
    const r = await api(logbook.url, 'POST', '/api/v1/labels', { name: `prom-${i}` });
    t.is(r.status, 201);
  }
  t.is((await api(logbook.url, 'GET', '/api/v1/labels?limit=2')).status, 200);

  const up = await eventually('up{job="logbook"} == 1', async () => {
    const r = await query('up{job="logbook"} == 1');
    return r.length === 1 ? r[0] : undefined;
  });
  t.is(up.metric.instance, `127.0.0.1:${logbook.port}`);

  const counted = await eventually(`${POSTS} label creations counted`, async () => {
    const r = await query('sum(logbook_http_requests_total{job="logbook",route="/api/v1/labels",method="POST",status="201"})');
    return r.length === 1 && Number(r[0]!.value[1]) === POSTS ? Number(r[0]!.value[1]) : undefined;
  });
  t.is(counted, POSTS);
  const total = await query('sum(logbook_http_requests_total{job="logbook"}) > 0');
  t.is(total.length, 1, 'the request counter is > 0');
  const shardsUp = await query('count(logbook_shard_up{job="logbook"} == 1)');
  t.is(Number(shardsUp[0]?.value[1]), 2, 'both shards report up');

  // Every rule of alerts.yml was loaded and evaluates against real data without error.
  const rules = await eventually('every alert rule evaluated', async () => {
    const res = await fetch(`${base}/api/v1/rules`);
    const body = await res.json() as { data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string; state?: string }> }> } };
    const all = body.data.groups.flatMap((g) => g.rules);
    return all.length > 0 && all.every((r) => r.health !== 'unknown') ? all : undefined;
  });
  const shipped = [...readFileSync(join(PROM_DIR, 'alerts.yml'), 'utf8').matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
  t.deepEqual(rules.map((r) => r.name).sort(), shipped.sort());
  for (const r of rules) t.is(r.health, 'ok', `${r.name}: ${r.lastError ?? ''}`);
  t.deepEqual(rules.filter((r) => r.state === 'firing').map((r) => r.name), [], 'nothing fires on a healthy logbook');

  // A run recorded through the API, then ended failed: Prometheus counts one failed
  // run and LogbookRunFailed (no `for:`, evaluated every second here) fires.
  const pb = await api(logbook.url, 'POST', '/api/v1/playbooks', { path: '/srv/prom/site.yml', runner_version: '2.15.13', status: 'running' });
  t.is(pb.status, 201);
  const ended = await api(logbook.url, 'PATCH', `/api/v1/playbooks/${pb.body.id}`, { status: 'failed', ended: new Date().toISOString() });
  t.is(ended.status, 200);
  const failed = await eventually('logbook_runs_ended_total{status="failed"} == 1', async () => {
    const r = await query('sum(logbook_runs_ended_total{job="logbook",status="failed"})');
    return r.length === 1 && Number(r[0]!.value[1]) === 1 ? Number(r[0]!.value[1]) : undefined;
  });
  t.is(failed, 1);
  t.is(Number((await query('sum(logbook_runs_started_total{job="logbook"})'))[0]?.value[1]), 1);
  const alert = await eventually('LogbookRunFailed pending or firing', async () => {
    const res = await fetch(`${base}/api/v1/alerts`);
    const body = await res.json() as { data: { alerts: Array<{ labels: Record<string, string>; state: string }> } };
    return body.data.alerts.find((a) => a.labels.alertname === 'LogbookRunFailed' && (a.state === 'pending' || a.state === 'firing'));
  });
  t.is(alert.labels.instance, `127.0.0.1:${logbook.port}`);
  t.is(alert.labels.severity, 'warning');
});

promTest('every logbook_* metric the alert rules name is one logbook exports', async (t) => {
  const logbook = await startLogbook({ env: { LOGBOOK_SHARDS: '1' } });
  t.teardown(() => logbook.stop());
  const text = (await api(logbook.url, 'GET', '/metrics')).text;
  const families = parseProm(text);
  const alerts = readFileSync(join(PROM_DIR, 'alerts.yml'), 'utf8').replace(/^\s*#.*$/gm, '');
  // logbook_cluster_*: exported in cluster mode only (checked by e2e_cluster_nodes)
  const used = new Set([...alerts.matchAll(/\b(logbook_[a-z_]+)/g)].map((m) => m[1]!.replace(/_bucket$/, '')).filter((n) => !n.startsWith('logbook_cluster_')));
  t.true(used.size >= 8, [...used].join(' '));
  for (const name of used) t.true(families.has(name), `${name} is exported`);
});
