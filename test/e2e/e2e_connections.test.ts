// 10 000 idle TCP connections plus slow-loris requests (heads that trickle one
// byte a second and never end) must not stop logbook serving everyone else.
// The connections are held by a helper process (test/helpers/hold_connections.ts)
// that reopens whatever the server closes, so the pressure lasts; both it and
// the server run with a raised file descriptor limit (`ulimit -n`).
import test from 'ava';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { api, MAIN_JS } from '../helpers/server.js';

const here = dirname(fileURLToPath(import.meta.url));
const HOLDER_JS = join(here, '..', 'helpers', 'hold_connections.js');
const IDLE = 10_000;
const SLOW = 200;
const FDS = 12_000; // per process: the connections, plus the runtime's own

/** The hard fd limit a child could raise its soft limit to (bash `ulimit -Hn`). */
function hardFdLimit(): number {
  const r = spawnSync('bash', ['-c', 'ulimit -Hn'], { encoding: 'utf8' });
  const v = r.stdout.trim();
  return v === 'unlimited' ? Infinity : Number(v);
}

/** node <args> with the soft fd limit raised to FDS. */
function spawnWithFds(args: string[], env: Record<string, string>): ChildProcess {
  return spawn('bash', ['-c', `ulimit -n ${FDS} && exec "$0" "$@"`, process.execPath, ...args], { env: { ...process.env as Record<string, string>, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
}

function lines(child: ChildProcess): AsyncIterator<string> {
  return createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
}

async function until(it: AsyncIterator<string>, pred: (line: string) => boolean, what: string): Promise<string> {
  for (;;) {
    const next = await it.next();
    if (next.done) throw new Error(`${what}: output ended`);
    if (pred(next.value)) return next.value;
  }
}

const hardFds = hardFdLimit();
if (hardFds < FDS) console.warn(`e2e_connections: the hard file descriptor limit is ${hardFds}, this test needs ${FDS} (raise it: ulimit -Hn); skipped`);

(hardFds >= FDS ? test : test.skip)('10 000 idle connections and slow-loris requests do not stop the server serving others', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-conns-'));
  const server = spawnWithFds([MAIN_JS], { LOGBOOK_HOST: '127.0.0.1', LOGBOOK_PORT: '0', LOGBOOK_DATA_DIR: dataDir, LOGBOOK_SHARDS: '2', LOGBOOK_LOG_LEVEL: 'info' });
  let holder: ChildProcess | null = null;
  let serverErr = '';
  server.stderr!.setEncoding('utf8').on('data', (d: string) => { serverErr += d; });
  const serverExit = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
  try {
    const serverOut = lines(server);
    const listening = await until(serverOut, (l) => l.includes('"msg":"listening"'), 'server');
    // keep reading its log so the pipe never fills
    void (async () => { for (;;) { const n = await serverOut.next(); if (n.done) return; } })();
    const port = Number(/"port":(\d+)/.exec(listening)![1]);
    const url = `http://127.0.0.1:${port}`;

    holder = spawnWithFds([HOLDER_JS, String(port), String(IDLE), String(SLOW)], {});
    holder.stderr!.setEncoding('utf8').on('data', (d: string) => t.log(`holder: ${d.trim()}`));
    const holderOut = lines(holder);
    const ready = JSON.parse(await until(holderOut, (l) => l.includes('"ready"'), 'holder')) as { open: number; failed: number };
    t.log(`holding ${ready.open} connections (${ready.failed} failed to open)`);
    t.true(ready.open >= IDLE + SLOW - 50, `held ${ready.open} of ${IDLE + SLOW} connections`);

    // everyone else is still served: health, writes and reads, some at once
    t.is((await api(url, 'GET', '/healthz')).status, 200);
    const pb = await api(url, 'POST', '/api/v1/playbooks', { path: '/busy.yml', runner_version: '2.15.13' });
    t.is(pb.status, 201, pb.text);
    const concurrent = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      api(url, 'POST', '/api/v1/hosts', { name: `h${i}`, playbook: pb.body.id })));
    t.deepEqual(concurrent.map((r) => r.status), Array(20).fill(201));
    const listed = await api(url, 'GET', `/api/v1/hosts?playbook=${pb.body.id}`);
    t.is(listed.status, 200);
    t.is(listed.body.count, 20);
    t.is((await api(url, 'GET', `/api/v1/playbooks/${pb.body.id}`)).body.items.hosts, 20);

    // the pressure was still on while they were served
    holder.stdin!.write('status\n');
    const status = JSON.parse(await until(holderOut, (l) => l.includes('"reopened"'), 'holder')) as { open: number; reopened: number };
    t.log(`after the requests: ${status.open} held, ${status.reopened} reopened after the server closed them`);
    t.true(status.open >= IDLE, `still holding ${status.open} connections`);

    holder.stdin!.write('close\n');
    await new Promise((resolve) => holder!.on('exit', resolve));
    holder = null;
    t.is((await api(url, 'GET', '/healthz')).status, 200);
  } finally {
    if (holder && holder.exitCode === null) holder.kill('SIGKILL');
    if (server.exitCode === null) server.kill('SIGTERM');
    const code = await serverExit;
    rmSync(dataDir, { recursive: true, force: true });
    t.is(code, 0, `server exit: ${serverErr.slice(-2000)}`);
  }
});
