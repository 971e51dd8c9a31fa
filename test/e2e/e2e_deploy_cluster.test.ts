// deploy/cluster/ as an operator uses it: the three nats-server configs pass
// `nats-server -t`, and started (hosts and ports rewritten to free loopback ports,
// the store directory to a temp dir, and the nodes' partition count to 6 so that
// creating the streams fits a test) they form the JetStream cluster that three
// logbook nodes started from logbook-N.env join;
// every node's /healthz shows the whole cluster (each partition owned once, with a
// standby on another node), and a playbook written through
// one node reads back through another. The template unit passes
// systemd-analyze verify and its health check waits for a cluster node.
//
// Needs nats-server (Debian `nats-server`; CI installs it); skipped without it.
import test from 'ava';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterConfigFromEnv } from '../../src/config/cluster.js';
import { freePort, onPath } from '../helpers/ansible.js';
import { natsServerBinary } from '../helpers/nats.js';
import { DEPLOY_DIR } from '../helpers/proxy.js';
import { api, startLogbook, type Logbook } from '../helpers/server.js';

const DIR = join(DEPLOY_DIR, 'cluster');
const NATS = natsServerBinary();
if (!NATS) console.warn('e2e_deploy_cluster: nats-server not installed; skipped (apt-get install nats-server)');
const natsTest = NATS ? test.serial : test.serial.skip;
const SIZE = 3;
const HOST = (i: number) => `nats-${i}.example.internal`;

const confText = (i: number) => readFileSync(join(DIR, `nats-${i}.conf`), 'utf8');
const envText = (i: number) => readFileSync(join(DIR, `logbook-${i}.env`), 'utf8');

/** An env file as systemd's EnvironmentFile (and docker --env-file) reads these: KEY=value lines, # comments. */
function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (!m) throw new Error(`not a KEY=value line: ${raw}`);
    if (/^["']/.test(m[2]!)) throw new Error(`quoted value (docker --env-file would keep the quotes): ${raw}`);
    env[m[1]!] = m[2]!;
  }
  return env;
}

/** Replace what must be replaced, and fail loudly when the file no longer has it (else a test would run on fixed ports). */
function rewrite(text: string, pattern: RegExp, replacement: string): string {
  if (!pattern.test(text)) throw new Error(`${pattern} not found in:\n${text}`);
  return text.replace(pattern, replacement);
}

test('each nats-N.conf passes `nats-server -t`; the three differ only in server_name', (t) => {
  if (!NATS) { t.log('nats-server not installed: `nats-server -t` not run'); }
  const bodies: string[] = [];
  for (let i = 1; i <= SIZE; i++) {
    const text = confText(i);
    t.regex(text, new RegExp(`^server_name: nats-${i}$`, 'm'));
    t.regex(text, /^\s*store_dir: \S+/m, 'JetStream has a store directory');
    t.regex(text, /^cluster \{[\s\S]*name: logbook[\s\S]*routes: \[[\s\S]*\]/m);
    for (let j = 1; j <= SIZE; j++) t.true(text.includes(`nats-route://${HOST(j)}:6222`), `nats-${i}.conf routes to nats-${j}`);
    // the settings, comments aside, with the server's own name taken out
    bodies.push(text.split('\n').filter((l) => !l.trim().startsWith('#')).map((l) => l.replace(/^server_name: nats-\d$/, 'server_name: X')).join('\n'));
    if (NATS) {
      const r = spawnSync(NATS, ['-t', '-c', join(DIR, `nats-${i}.conf`)], { encoding: 'utf8', timeout: 30_000 });
      t.is(r.status, 0, `nats-${i}.conf: ${r.stdout}${r.stderr}`);
      t.regex(`${r.stdout}${r.stderr}`, /is valid/);
    }
  }
  t.is(new Set(bodies).size, 1, 'apart from the server name, the three files set the same');
});

test('each logbook-N.env is what logbook accepts: the same cluster, partitions and replicas, its own node name', (t) => {
  const configs = [1, 2, 3].map((i) => ({ i, env: parseEnvFile(envText(i)) }));
  for (const { i, env } of configs) {
    const c = clusterConfigFromEnv(env);
    t.truthy(c, `logbook-${i}.env turns cluster mode on`);
    t.deepEqual(c!.servers, [1, 2, 3].map((j) => `nats://${HOST(j)}:4222`), 'every nats-server of deploy/cluster');
    t.is(c!.node, `logbook-${i}`);
    t.is(c!.replicas, 3);
  }
  const same = (k: string) => new Set(configs.map((c) => c.env[k])).size;
  for (const k of ['LOGBOOK_CLUSTER', 'LOGBOOK_PARTITIONS', 'LOGBOOK_REPLICAS', 'LOGBOOK_PORT']) t.is(same(k), 1, `${k} is the same in the three files`);
  t.is(same('LOGBOOK_NODE'), 3, 'node names are unique');
});

// ---- the three nats-servers and three nodes, from the files ----

interface Running { procs: ChildProcess[]; dir: string; urls: string[]; nodes: Logbook[] }
let running: Running | null = null;

async function startNats(dir: string): Promise<{ procs: ChildProcess[]; urls: string[]; logs: () => string }> {
  const client: number[] = [], route: number[] = [], http: number[] = [];
  for (let i = 0; i < SIZE; i++) { client.push(await freePort()); route.push(await freePort()); http.push(await freePort()); }
  const procs: ChildProcess[] = [];
  const out: string[] = Array(SIZE).fill('');
  const ready: Promise<void>[] = [];
  for (let i = 1; i <= SIZE; i++) {
    let text = confText(i);
    text = rewrite(text, /^listen: 0\.0\.0\.0:4222$/m, `listen: 127.0.0.1:${client[i - 1]}`);
    text = rewrite(text, /^http: 127\.0\.0\.1:8222$/m, `http: 127.0.0.1:${http[i - 1]}`);
    text = rewrite(text, /^(\s*)listen: 0\.0\.0\.0:6222$/m, `$1listen: 127.0.0.1:${route[i - 1]}`);
    text = rewrite(text, /^(\s*)store_dir: \S+$/m, `$1store_dir: "${join(dir, `store-${i}`)}"`);
    for (let j = 1; j <= SIZE; j++) text = rewrite(text, new RegExp(`${HOST(j).replaceAll('.', '\\.')}:6222`), `127.0.0.1:${route[j - 1]}`);
    const file = join(dir, `nats-${i}.conf`);
    writeFileSync(file, text);
    mkdirSync(join(dir, `store-${i}`));
    const child = spawn(NATS!, ['-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    procs.push(child);
    ready.push(new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`nats-${i} not ready in 30 s:\n${out[i - 1]}`)), 30_000);
      const onData = (d: Buffer) => { out[i - 1] += d.toString(); if (out[i - 1]!.includes('Server is ready')) { clearTimeout(timer); resolve(); } };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`nats-${i} exited (${code}):\n${out[i - 1]}`)); });
    }));
  }
  const logs = () => out.map((o, i) => `--- nats-${i + 1}\n${o.split('\n').slice(-15).join('\n')}`).join('\n');
  try { await Promise.all(ready); } catch (err) { for (const p of procs) p.kill('SIGKILL'); throw err; }
  return { procs, urls: client.map((p) => `nats://127.0.0.1:${p}`), logs };
}

test.after.always(async () => {
  if (!running) return;
  await Promise.all(running.nodes.map((n) => n.stop('SIGKILL').catch(() => null)));
  await Promise.all(running.procs.map((p) => new Promise<void>((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    p.once('exit', () => resolve());
    p.kill('SIGKILL');
  })));
  rmSync(running.dir, { recursive: true, force: true });
});

natsTest('three nats-servers from nats-N.conf and three nodes from logbook-N.env form a cluster that /healthz shows', async (t) => {
  t.timeout(90_000);
  const dir = mkdtempSync(join(tmpdir(), 'logbook-deploy-cluster-'));
  const nats = await startNats(dir);
  running = { procs: nats.procs, dir, urls: nats.urls, nodes: [] };
  const envs = [1, 2, 3].map((i): Record<string, string> => {
    const env = parseEnvFile(envText(i));
    let cluster = env.LOGBOOK_CLUSTER!;
    for (let j = 1; j <= SIZE; j++) cluster = rewrite(cluster, new RegExp(`nats://${HOST(j).replaceAll('.', '\\.')}:4222`), nats.urls[j - 1]!);
    // the addresses change (loopback, port 0: a free one), and the partition count: the files' 32 R3
    // streams take longer to create on a loaded 2-core box than a test should wait for a node
    return { ...env, LOGBOOK_CLUSTER: cluster, LOGBOOK_HOST: '127.0.0.1', LOGBOOK_PORT: '0', LOGBOOK_PARTITIONS: '6', LOGBOOK_SHUTDOWN_TIMEOUT: '2' };
  });
  const partitions = 6;
  const started = await Promise.allSettled(envs.map((env) => startLogbook({ env })));
  for (const s of started) if (s.status === 'fulfilled') running.nodes.push(s.value);
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw new Error(`${failed.reason}\n${nats.logs()}`);
  const nodes = running.nodes;

  // every node sees all three, and every partition is owned by exactly one of them
  const deadline = Date.now() + 45_000;
  let views: any[] = [];
  for (;;) {
    views = await Promise.all(nodes.map(async (n) => (await api(n.url, 'GET', '/healthz').catch(() => null))?.body));
    const owned = views.reduce((s, v) => s + Object.keys(v?.cluster?.owned ?? {}).length, 0);
    if (views.every((v) => v?.status === 'ok' && v.cluster.nodes.length === SIZE && v.cluster.unowned.length === 0) && owned === partitions) break;
    if (Date.now() > deadline) { t.fail(`cluster did not form: ${JSON.stringify(views)}\n${nats.logs()}`); return; }
    await new Promise((r) => setTimeout(r, 250));
  }
  for (const [i, v] of views.entries()) {
    t.is(v.cluster.node, `logbook-${i + 1}`);
    t.deepEqual([...v.cluster.nodes].sort(), ['logbook-1', 'logbook-2', 'logbook-3']);
    t.is(v.cluster.partitions, partitions);
    t.is(v.cluster.nats, 'connected');
  }
  const all = views.flatMap((v) => Object.keys(v.cluster.owned).map(Number)).sort((a, b) => a - b);
  t.deepEqual(all, Array.from({ length: partitions }, (_, p) => p), 'each partition owned once');
  // and each has a standby (a worker tailing its stream) on another node, once those have caught up
  for (;;) {
    views = await Promise.all(nodes.map(async (n) => (await api(n.url, 'GET', '/healthz')).body));
    const standbyOf = (v: any): number[] => (v.cluster.standby ?? []).map((x: { partition: number }) => x.partition);
    const standbys = views.flatMap(standbyOf).sort((a, b) => a - b);
    if (standbys.length === partitions) {
      t.deepEqual(standbys, Array.from({ length: partitions }, (_, p) => p), 'one standby per partition');
      for (const v of views) for (const p of standbyOf(v)) t.false(String(p) in v.cluster.owned, `${v.cluster.node} is not its own standby for ${p}`);
      break;
    }
    if (Date.now() > deadline) { t.fail(`standbys: ${JSON.stringify(views.map((v) => v.cluster))}`); return; }
    await new Promise((r) => setTimeout(r, 250));
  }
  const metrics = await (await fetch(`${nodes[1]!.url}/metrics`)).text();
  t.regex(metrics, /^logbook_cluster_nodes_live\{node="logbook-2"\} 3$/m);

  // written through one node, read through another
  const created = await api(nodes[0]!.url, 'POST', '/api/v1/playbooks', { ansible_version: '2.16.0', path: '/srv/deploy-cluster.yml', status: 'running' });
  t.is(created.status, 201, created.text);
  const read = await api(nodes[2]!.url, 'GET', `/api/v1/playbooks/${created.body.id}`);
  t.is(read.status, 200, read.text);
  t.is(read.body.path, '/srv/deploy-cluster.yml');
});

const systemdTest = onPath('systemd-analyze') && onPath('curl') ? test.serial : test.serial.skip;

systemdTest('logbook@.service passes systemd-analyze verify and its health check waits for a cluster node', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-systemd-cluster-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const unit = readFileSync(join(DIR, 'logbook@.service'), 'utf8');
  t.regex(unit, /^EnvironmentFile=\/etc\/logbook\/%i\.env$/m, 'an instance reads its own env file');
  t.is(unit.match(/\/usr\/bin\/node /g)?.length, 1);
  // verify checks that ExecStart's program exists: point it at this node; an instance is a link to the template
  writeFileSync(join(dir, 'logbook@.service'), unit.replace('/usr/bin/node ', `${process.execPath} `));
  symlinkSync('logbook@.service', join(dir, 'logbook@logbook-1.service'));
  const v = spawnSync('systemd-analyze', ['verify', join(dir, 'logbook@logbook-1.service')], { encoding: 'utf8', timeout: 60_000 });
  t.is(v.status, 0, `${v.stdout}${v.stderr}`);
  t.deepEqual(`${v.stdout}${v.stderr}`.split('\n').filter((l) => l.includes('logbook@')), [], 'no warning about the unit');

  const line = /^ExecStartPost=\/bin\/sh -c '(.*)'$/m.exec(unit);
  t.truthy(line, 'ExecStartPost runs a sh -c health check');
  const node = running?.nodes[0];
  if (!line || !node) { t.log('no cluster node running (nats-server missing or the cluster test failed): health check not run'); return; }
  const script = line[1]!.replace(/\$\$/g, '$');
  const r = spawnSync('/bin/sh', ['-c', script], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LOGBOOK_HOST: '0.0.0.0', LOGBOOK_PORT: String(node.port) }, encoding: 'utf8', timeout: 60_000 });
  t.is(r.status, 0, r.stderr);
});
