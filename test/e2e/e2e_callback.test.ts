// End to end: logbook's own Ansible callback (src/ansible/callback/logbook.py,
// POST /api/v1/ingest) in real ansible-playbook runs against a real logbook.
// - the fixture run recorded by it reads back like the same run recorded by
//   the stock ARA callback into ARA's own server;
// - the server killed mid-run and started again: the run arrives complete, once;
// - the server unreachable for the whole run: the run waits in the spool and
//   the next run ships it first;
// - a server answering 500 to everything never changes the playbook's outcome;
// - two playbooks on one command line, `serial` plays, output that is not
//   UTF-8, ara_record before the first batch was answered, a batch over the
//   server's body limit, Ctrl-C twice (the spool keeps the run; `ship` with
//   ansible.cfg settings sends it);
// - a run that ends without its stats (Ctrl-C, SIGTERM, a fatal error): the
//   playbook and what was running read back `expired`, with `ended`; after
//   SIGTERM with the server away the run is in the spool;
// - a server that cannot be connected to: the end of the run gives up after
//   unreachable_timeout, not flush_timeout, and `ship` sends the run complete.
//
// Needs ansible-core and python3-ara / ara-server (for the comparison), which CI
// installs; without them these tests are skipped.
import test, { type ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTcpServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { ansibleEnv } from '../helpers/ansible_env.js';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { hashSecret } from '../../src/config/password.js';
import {
  FIXTURE_ITEMS, FIXTURE_EXIT, FIXTURE_RECAP, freePort, hasAnsible, hasAraServer, runPlaybook, snapshotRun, startAraServer, type HostRecap, type PlaybookRun, type RunOptions, type RunSnapshot,
} from '../helpers/ansible.js';


// Generous: a loaded 2-core machine runs the fixture in 20 s or in 150 s.
const RUN_TIMEOUT_MS = 300_000;
const TEST_TIMEOUT_MS = 900_000;

// One ansible-playbook at a time (serial): they are CPU-bound, and the machine has 2 cores.
const withAnsible = hasAnsible() ? test.serial : test.skip;
const withAra = hasAnsible() && hasAraServer() ? test.serial : test.skip;


/** Runs a playbook with logbook's callback (not ARA's) recording into url. */
function runWithLogbook(url: string, spoolDir: string, opts: RunOptions = {}): Promise<PlaybookRun> {
  return runPlaybook(url, {
    timeoutMs: RUN_TIMEOUT_MS,
    ...opts,
    env: {
      ...ansibleEnv(url),
      LOGBOOK_CALLBACK_SPOOL_DIR: spoolDir,
      LOGBOOK_API_TIMEOUT: '10',
      ...opts.env,
    },
  });
}

/** Warnings logbook's callback showed (each kind of problem is shown once). */
function logbookWarnings(run: PlaybookRun): string[] {
  const text = `${run.stdout}\n${run.stderr}`;
  return text.split(/\n(?=\[WARNING\])/).map((b) => b.replace(/\s*\n\s*/g, ' ').trim())
    .filter((b) => /^\[WARNING\]: logbook/.test(b));
}

/**
 * logbook's warnings but the notice that the end of the run is still sending
 * (printed once the end has waited a second: on a loaded machine it may, and
 * what was sent is checked through the spool and the API instead).
 */
function unexpectedWarnings(run: PlaybookRun): string[] {
  return logbookWarnings(run).filter((w) => !/^\[WARNING\]: logbook: sending the rest of the run to /.test(w));
}

function spooled(spoolDir: string): string[] {
  if (!existsSync(spoolDir)) return [];
  const out: string[] = [];
  for (const stream of readdirSync(spoolDir)) {
    for (const f of readdirSync(join(spoolDir, stream))) if (f.endsWith('.json.gz')) out.push(`${stream}/${f}`);
  }
  return out;
}

function checkFixtureRun(t: ExecutionContext, who: string, run: PlaybookRun): void {
  if (run.code !== FIXTURE_EXIT) t.log(`${who}: ansible-playbook output:\n${run.stdout}\n${run.stderr}`);
  t.is(run.code, FIXTURE_EXIT, `${who}: ansible-playbook exit code`);
  t.deepEqual(run.recap, FIXTURE_RECAP, `${who}: PLAY RECAP`);
}

/** Section by section, logging what differs before asserting. */
function compareSnapshots(t: ExecutionContext, got: RunSnapshot, want: RunSnapshot, gotName: string, wantName: string): void {
  for (const key of Object.keys(want) as Array<keyof RunSnapshot>) {
    const g = got[key] as unknown;
    const w = want[key] as unknown;
    if (isDeepStrictEqual(g, w)) continue;
    if (Array.isArray(g) && Array.isArray(w)) {
      const gs = g.map((x) => JSON.stringify(x));
      const ws = w.map((x) => JSON.stringify(x));
      t.log(`${key}: only in ${wantName}:\n  ${ws.filter((x) => !gs.includes(x)).join('\n  ')}\n`
        + `only in ${gotName}:\n  ${gs.filter((x) => !ws.includes(x)).join('\n  ')}`);
    } else {
      t.log(`${key}: ${gotName} ${JSON.stringify(g)}\n${wantName} ${JSON.stringify(w)}`);
    }
    t.deepEqual(g, w, `snapshot section "${key}": ${gotName} differs from ${wantName}`);
  }
}

function tempDir(t: ExecutionContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

withAra('logbook\'s callback records the fixture run the way the stock ARA callback records it into ARA', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const spool = tempDir(t, 'logbook-spool-');
  const [logbook, ara] = await Promise.all([startLogbook({ env: { LOGBOOK_SHARDS: '2' } }), startAraServer()]);
  t.teardown(async () => {
    if (!t.passed) t.log(`logbook output (tail):\n${logbook.output().slice(-4000)}`);
    await Promise.all([logbook.stop(), ara.stop()]);
  });

  const [lbRun, araRun] = await Promise.all([runWithLogbook(logbook.url, spool), runPlaybook(ara.url, { timeoutMs: RUN_TIMEOUT_MS })]);
  checkFixtureRun(t, 'ARA callback', araRun);
  checkFixtureRun(t, 'logbook callback', lbRun);
  t.deepEqual(logbookWarnings(lbRun), [], 'logbook\'s callback warned');
  t.deepEqual(lbRun.callbackErrors, [], 'a callback raised');
  t.deepEqual(spooled(spool), [], 'nothing is left in the spool');

  const [lbSnap, araSnap] = await Promise.all([snapshotRun(logbook.url), snapshotRun(ara.url)]);
  t.deepEqual(araSnap.playbook.items, FIXTURE_ITEMS, 'ARA items (fixture sanity)');
  compareSnapshots(t, lbSnap, araSnap, 'logbook callback → logbook', 'ARA callback → ARA');
});

/** A playbook of `tasks` debug tasks on `hosts` local hosts (results = hosts × tasks, all ok). */
function writeLongPlaybook(dir: string, hosts: number, tasks: number): { playbook: string; inventory: string } {
  const inventory = join(dir, 'inventory.ini');
  writeFileSync(inventory, ['[all]', ...Array.from({ length: hosts }, (_, i) => `h${i} ansible_connection=local ansible_python_interpreter=/usr/bin/python3`)].join('\n') + '\n');
  const lines = ['- name: Long run', '  hosts: all', '  gather_facts: false', '  tasks:'];
  for (let i = 1; i <= tasks; i++) {
    lines.push(`    - name: Step ${i}`, '      ansible.builtin.command: /bin/true', '      changed_when: false');
  }
  const playbook = join(dir, 'long.yml');
  writeFileSync(playbook, lines.join('\n') + '\n');
  return { playbook, inventory };
}

async function count(url: string, what: string, query = ''): Promise<number> {
  const res = await fetch(`${url}/api/v1/${what}?limit=1${query}`);
  const body = await res.json() as { count: number };
  return body.count;
}

/**
 * A TCP pass-through on a fixed port in front of logbook: logbook restarted on
 * the same port fails to bind while the old connections sit in TIME_WAIT
 * (uWebSockets.js listens without SO_REUSEADDR), so the callback talks to this
 * port and the test closes it (down) and reopens it towards the new server (up).
 */
class Relay {
  port = 0;
  private server: Server | null = null;
  private sockets = new Set<Socket>();

  async up(backendPort: number): Promise<void> {
    const server = createTcpServer((client) => {
      const upstream = connect(backendPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => { client.destroy(); upstream.destroy(); });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    const addr = server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

withAnsible('the server killed mid-run and started again: the run arrives complete, exactly once', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-restart-');
  const spool = join(work, 'spool');
  const dataDir = join(work, 'data');
  const [hosts, tasks] = [3, 40];
  const { playbook, inventory } = writeLongPlaybook(work, hosts, tasks);
  let server: Logbook = await startLogbook({ dataDir });
  const relay = new Relay();
  await relay.up(server.port);
  const url = `http://127.0.0.1:${relay.port}`;
  t.teardown(async () => { await relay.down(); await server.stop('SIGKILL'); });

  const running = runWithLogbook(url, spool, { playbook, inventory, cwd: work });
  // Wait until some results are in, then kill the server without warning.
  const deadline = Date.now() + 60_000;
  while (await count(url, 'results').catch(() => 0) < 6 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const before = await count(url, 'results');
  await server.stop('SIGKILL');
  await relay.down();
  t.true(before >= 6 && before < hosts * tasks, `server killed mid-run (after ${before} results)`);
  await new Promise((r) => setTimeout(r, 2_000));
  server = await startLogbook({ dataDir });
  await relay.up(server.port);

  const run = await running;
  if (run.code !== 0) t.log(run.stdout, run.stderr);
  t.is(run.code, 0, 'the playbook succeeds');
  t.deepEqual(run.callbackErrors, []);
  t.regex(logbookWarnings(run).join('\n'), /cannot reach/, 'the outage was noticed (and told once)');
  t.deepEqual(spooled(spool), [], 'everything was shipped by the end of the run');

  t.is(await count(url, 'playbooks'), 1, 'one playbook');
  const snap = await snapshotRun(url);
  t.deepEqual(snap.playbook.items, { plays: 1, tasks, results: hosts * tasks, hosts, files: 1, records: 0 });
  t.is(snap.playbook.status, 'completed');
  t.true(snap.playbook.hasEnded);
  t.true(snap.tasks.every((x) => x.results === hosts && x.status === 'completed'), 'each task has one result per host');
  for (const h of Object.values(snap.hosts)) t.deepEqual(h, { ok: tasks, changed: 0, failed: 0, skipped: 0, unreachable: 0, hasFacts: false });
});

withAnsible('the server unreachable for the whole run: the run is spooled, then shipped first by the next run', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const spool = tempDir(t, 'logbook-spool-');
  const port = await freePort(); // nothing listens there during the first run
  const url = `http://127.0.0.1:${port}`;

  const first = await runWithLogbook(url, spool, { env: { LOGBOOK_CALLBACK_FLUSH_TIMEOUT: '1' } });
  checkFixtureRun(t, 'run while the server is away', first);
  t.deepEqual(first.callbackErrors, []);
  const warnings = logbookWarnings(first).join('\n');
  t.regex(warnings, /cannot reach/, 'the user is told the server is unreachable');
  t.regex(warnings, /wait in .* shipped by the next run/, 'and where the run waits');
  t.true(spooled(spool).length > 0, 'batches are in the spool');

  const server = await startLogbook({ env: { LOGBOOK_PORT: String(port) } });
  t.teardown(async () => { await server.stop(); });
  const second = await runWithLogbook(url, spool);
  checkFixtureRun(t, 'next run', second);
  t.deepEqual(logbookWarnings(second), []);
  t.deepEqual(spooled(spool), [], 'the spool is empty again');

  const page = await (await fetch(`${url}/api/v1/playbooks?order=id`)).json() as { results: Array<{ id: number }> };
  t.is(page.results.length, 2, 'both runs are recorded');
  const [a, b] = await Promise.all([snapshotRun(url, page.results[0]!.id), snapshotRun(url, page.results[1]!.id)]);
  t.deepEqual(a.playbook.items, FIXTURE_ITEMS, 'the spooled run is complete');
  t.is(a.playbook.status, 'failed');
  compareSnapshots(t, a, b, 'spooled run', 'next run');
});

withAnsible('a server that answers 500 to everything never fails the playbook', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const spool = tempDir(t, 'logbook-spool-');
  let requests = 0;
  const broken = createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"detail":"Internal server error."}');
    });
  });
  await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => broken.close(() => resolve())));
  const addr = broken.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

  const run = await runWithLogbook(url, spool, { env: { LOGBOOK_CALLBACK_FLUSH_TIMEOUT: '1' } });
  checkFixtureRun(t, 'run against a server answering 500', run);
  t.deepEqual(run.callbackErrors, [], 'no callback exception');
  t.true(requests > 0, 'the callback tried');
  t.regex(logbookWarnings(run).join('\n'), /answered 500/, 'the user is told, once');
  t.is(logbookWarnings(run).filter((w) => /answered 500/.test(w)).length, 1);
  t.true(spooled(spool).length > 0, 'the run is kept in the spool');
});

withAnsible('credentials: HTTP Basic and Bearer token record; wrong ones keep the run in the spool', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-auth-');
  const users = join(work, 'users');
  const tokens = join(work, 'tokens');
  writeFileSync(users, `alice:${await hashSecret(Buffer.from('alice-pw'), 14)}:write\n`);
  writeFileSync(tokens, `ci:${await hashSecret(Buffer.from('ci-secret'), 14)}:write\n`);
  const server = await startLogbook({ env: { LOGBOOK_WRITE_LOGIN_REQUIRED: 'true', LOGBOOK_USERS_FILE: users, LOGBOOK_TOKENS_FILE: tokens } });
  t.teardown(async () => { await server.stop(); });
  const { playbook, inventory } = writeLongPlaybook(work, 2, 3);
  const run = (spool: string, env: Record<string, string>) =>
    runWithLogbook(server.url, join(work, spool), { playbook, inventory, cwd: work, env: { LOGBOOK_CALLBACK_FLUSH_TIMEOUT: '1', ...env } });

  const [withBasic, withToken, wrong] = await Promise.all([
    run('basic', { LOGBOOK_API_USERNAME: 'alice', LOGBOOK_API_PASSWORD: 'alice-pw' }),
    run('token', { LOGBOOK_API_TOKEN: 'ci.ci-secret' }),
    run('wrong', { LOGBOOK_API_USERNAME: 'alice', LOGBOOK_API_PASSWORD: 'not-her-password' }),
  ]);
  for (const r of [withBasic, withToken, wrong]) t.is(r.code, 0, 'the playbook succeeds');
  t.deepEqual(logbookWarnings(withBasic), []);
  t.deepEqual(logbookWarnings(withToken), []);
  t.regex(logbookWarnings(wrong).join('\n'), /refused our credentials \(401/);
  t.deepEqual(spooled(join(work, 'basic')), []);
  t.deepEqual(spooled(join(work, 'token')), []);
  t.true(spooled(join(work, 'wrong')).length > 0, 'the refused run waits in its spool');
  t.is(await count(server.url, 'playbooks'), 2, 'two runs recorded');
  t.is(await count(server.url, 'results'), 2 * 2 * 3);
});

/** `ship` as the warning's command runs it (LOGBOOK_* variables only, no ansible.cfg): its output. */
function ship(t: ExecutionContext, cwd: string, env: Record<string, string>): string {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(ANSIBLE_|LOGBOOK_)/.test(k)));
  const r = spawnSync('/usr/bin/python3', [join(process.cwd(), 'src', 'ansible', 'callback', 'logbook.py'), 'ship', '60'],
    { cwd, env: { ...clean, ...env }, encoding: 'utf8' });
  t.is(r.status, 0, r.stdout + r.stderr);
  return r.stdout;
}

const LOCAL_HOSTS = ['h1', 'h2'].map((h) => `${h} ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n`).join('');

/** Writes `files` (name → lines) into dir, and an inventory of two local hosts (h1, h2). */
function writeRun(dir: string, files: Record<string, string[]>): { inventory: string; path: (name: string) => string } {
  const inventory = join(dir, 'inventory.ini');
  writeFileSync(inventory, LOCAL_HOSTS);
  for (const [name, lines] of Object.entries(files)) writeFileSync(join(dir, name), lines.join('\n') + '\n');
  return { inventory, path: (name) => join(dir, name) };
}

async function list(url: string, path: string): Promise<Array<Record<string, any>>> {
  const res = await api(url, 'GET', path);
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`);
  return res.body.results;
}

withAnsible('two playbooks on one command line, serial plays, output that is not UTF-8 and an early ara_record: each recorded as the stock callback records it', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-shapes-');
  writeFileSync(join(work, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])); // "café" in Latin-1
  const files = writeRun(work, {
    'one.yml': [
      '- name: first', '  hosts: h1', '  gather_facts: false', '  tasks:',
      '    - name: record early', '      ara_record: {key: k1, value: v1}', '      register: r1',
      '    - name: show id', '      debug: {msg: "id={{ r1.playbook_id }}"}',
      `    - name: latin1 output`, `      command: cat ${join(work, 'latin1.txt')}`,
      '- name: serial', '  hosts: h1,h2', '  serial: 1', '  gather_facts: false', '  tasks:',
      '    - name: in batches', '      debug: {msg: hi}',
    ],
    'two.yml': ['- name: second', '  hosts: h2', '  gather_facts: false', '  tasks:',
      // to the first playbook by id (a fresh server: id 1), before this playbook's first batch is answered
      '    - name: record elsewhere', '      ara_record: {playbook_id: 1, key: from-two, value: v2}',
      '    - name: p2 task', '      debug: {msg: two}'],
  });
  const server = await startLogbook();
  t.teardown(() => server.stop());
  const run = await runWithLogbook(server.url, join(work, 'spool'), {
    playbook: files.path('one.yml'), args: [files.path('two.yml')], inventory: files.inventory, cwd: work,
  });
  if (run.code !== 0) t.log(run.stdout, run.stderr);
  t.is(run.code, 0);
  t.deepEqual(unexpectedWarnings(run), [], 'no warning (a serial play used to be rejected: "Ended must not be earlier than started")');
  t.deepEqual(run.callbackErrors, []);

  const playbooks = await list(server.url, '/api/v1/playbooks?order=id');
  t.deepEqual(playbooks.map((p) => [basename(p.path), p.status]), [['one.yml', 'completed'], ['two.yml', 'completed']], 'both playbooks of the command line');
  const [one, two] = playbooks as [Record<string, any>, Record<string, any>];
  t.is(one.id, 1);
  t.like(two.items, { plays: 1, tasks: 2, results: 2, records: 0 }, 'the record written to playbook 1 is not also in playbook 2');
  t.regex(run.stdout, new RegExp(`"msg": "id=${one.id}"`), 'ara_record in the first task gives the playbook id');
  t.deepEqual((await list(server.url, `/api/v1/records?playbook=${one.id}&order=id`)).map((r) => r.key), ['k1', 'from-two']);

  // like ARA: one play per serial batch, the tasks under the first
  const plays = await list(server.url, `/api/v1/plays?playbook=${one.id}&order=id`);
  t.deepEqual(plays.map((p) => [p.name, p.status, p.items.tasks, p.items.results]),
    [['first', 'completed', 3, 3], ['serial', 'completed', 1, 2], ['serial', 'completed', 0, 0]]);
  t.is(plays[2]!.uuid, `${plays[1]!.uuid}_2`, 'the second batch\'s play: ansible-runner\'s suffix');

  const [task] = await list(server.url, `/api/v1/tasks?playbook=${one.id}&name=latin1%20output`);
  const [result] = await list(server.url, `/api/v1/results?task=${task!.id}`);
  const detail = await api(server.url, 'GET', `/api/v1/results/${result!.id}`);
  t.is(detail.body.content.stdout, 'caf\udce9', 'the undecodable byte as Python (and the stock callback) keeps it');
});

withAnsible('a batch over the server\'s body limit: large contents replaced by a notice, the rest of the run arrives', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-413-');
  const files = writeRun(work, {
    'big.yml': ['- name: big', '  hosts: h1', '  gather_facts: false', '  tasks:',
      '    - name: huge output', '      shell: /usr/bin/python3 -c "print(\'x\' * 3000000)"',
      '    - name: after', '      debug: {msg: after}'],
  });
  const server = await startLogbook({ env: { LOGBOOK_MAX_BODY_BYTES: '1000000' } });
  t.teardown(() => server.stop());
  // one batch for the whole run: the first, which creates the playbook, is the one refused
  const run = await runWithLogbook(server.url, join(work, 'spool'), {
    playbook: files.path('big.yml'), inventory: files.inventory, cwd: work, env: { LOGBOOK_CALLBACK_BATCH_INTERVAL: '60' },
  });
  t.is(run.code, 0);
  const warnings = logbookWarnings(run);
  t.is(warnings.length, 1, warnings.join('\n'));
  t.regex(warnings[0] ?? '', /refused batch 1 of playbook .*\(413: .*\); sent again with contents over 65536 bytes replaced by a notice/);

  const [pb] = await list(server.url, '/api/v1/playbooks');
  t.is(pb?.status, 'completed');
  t.like(pb?.items, { plays: 1, tasks: 2, results: 2 });
  const results = await list(server.url, `/api/v1/results?playbook=${pb!.id}&order=id`);
  const big = (await api(server.url, 'GET', `/api/v1/results/${results[0]!.id}`)).body;
  t.is(big.status, 'changed');
  t.regex(big.content.msg, /^Not saved: \d+ bytes, more than the logbook server took in one request \(413\)$/);
  t.deepEqual(spooled(join(work, 'spool')), []);
});

withAnsible('Ctrl-C twice, the second while the end of the run waits for the server: the run stays in the spool, and `ship` with ansible.cfg settings sends it', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-int-');
  const spool = join(work, 'spool');
  const files = writeRun(work, {
    'slow.yml': ['- name: slow', '  hosts: h1', '  gather_facts: false', '  tasks:',
      '    - name: before', '      debug: {msg: before}', '    - name: sleep', '      command: sleep 60'],
  });
  const port = await freePort(); // nothing listens there during the run
  let interrupts = 0;
  const run = await runWithLogbook(`http://127.0.0.1:${port}`, spool, {
    playbook: files.path('slow.yml'), inventory: files.inventory, cwd: work,
    // the end wait must still be on when the second Ctrl-C comes (the server cannot be connected to)
    env: { LOGBOOK_CALLBACK_FLUSH_TIMEOUT: '300', LOGBOOK_CALLBACK_UNREACHABLE_TIMEOUT: '300' },
    onOutput: (out, signal) => {
      if (interrupts === 0 && /TASK \[sleep\]/.test(out)) { interrupts = 1; setTimeout(() => signal('SIGINT'), 1000); }
      if (interrupts === 1 && /sending the rest of the run/.test(out)) { interrupts = 2; signal('SIGINT'); }
    },
  });
  t.is(interrupts, 2, 'interrupted twice');
  t.is(run.code, 99, 'ansible-playbook: user interrupted');
  t.deepEqual(run.callbackErrors, [], 'no traceback');
  t.regex(logbookWarnings(run).join('\n'), /logbook: interrupted; \d+ batch\(es\) wait in .* LOGBOOK_CALLBACK_SPOOL_DIR=\S+ python3 \S+logbook\.py ship/);
  t.true(spooled(spool).length > 0, 'the run is in the spool');

  // ship it with what ./ansible.cfg says, no LOGBOOK_* variable
  const server = await startLogbook();
  t.teardown(() => server.stop());
  writeFileSync(join(work, 'ansible.cfg'), `[logbook]\napi_server = ${server.url}\nspool_dir = ${spool}\n`);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(ANSIBLE_|LOGBOOK_)/.test(k)));
  const ship = spawnSync('/usr/bin/python3', [join(process.cwd(), 'src', 'ansible', 'callback', 'logbook.py'), 'ship', '60'], { cwd: work, env, encoding: 'utf8' });
  t.is(ship.status, 0, ship.stdout + ship.stderr);
  t.regex(ship.stdout, new RegExp(`shipped [1-9]\\d* batch\\(es\\) from ${spool} to ${server.url}, 0 left`));
  t.deepEqual(spooled(spool), []);
  const [pb] = await list(server.url, '/api/v1/playbooks');
  t.is(basename(pb?.path ?? ''), 'slow.yml');
  t.like(pb?.items, { plays: 1, tasks: 2, results: 1 }, 'everything until the interrupt');
  t.is(pb?.status, 'expired', 'the interrupted run went to the spool marked expired');
});

/** The playbook (newest), its plays and its tasks as [name, status, ended is set]. */
async function readBack(url: string): Promise<{ playbook: Record<string, any>; plays: Array<[string, string, boolean]>; tasks: Array<[string, string, boolean]> }> {
  const [playbook] = await list(url, '/api/v1/playbooks?order=-id&limit=1');
  const plays = await list(url, `/api/v1/plays?playbook=${playbook!.id}&order=id`);
  const tasks = await list(url, `/api/v1/tasks?playbook=${playbook!.id}&order=id`);
  return {
    playbook: playbook!,
    plays: plays.map((p) => [p.name, p.status, p.ended !== null]),
    tasks: tasks.map((x) => [x.name, x.status, x.ended !== null]),
  };
}

withAnsible('Ctrl-C mid-run: the playbook, its running play and task read back expired with ended set; what ran before is there', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-expire-');
  const files = writeRun(work, {
    'done.yml': ['- name: done', '  hosts: h1', '  gather_facts: false', '  tasks:', '    - name: ok', '      debug: {msg: ok}'],
    'slow.yml': [
      '- name: first', '  hosts: h1,h2', '  gather_facts: false', '  tasks:',
      '    - name: quick', '      debug: {msg: quick}',
      '- name: second', '  hosts: h1,h2', '  gather_facts: false', '  tasks:',
      '    - name: before', '      command: /bin/true',
      '    - name: sleep', '      command: sleep 60',
      '    - name: never', '      debug: {msg: never}'],
  });
  const server = await startLogbook();
  t.teardown(() => server.stop());
  let interrupted = false;
  // two playbooks on one command line: the first reaches its stats and stays completed
  const run = await runWithLogbook(server.url, join(work, 'spool'), {
    playbook: files.path('done.yml'), args: [files.path('slow.yml')], inventory: files.inventory, cwd: work,
    onOutput: (out, signal) => {
      if (!interrupted && /TASK \[sleep\]/.test(out)) { interrupted = true; setTimeout(() => signal('SIGINT'), 1000); }
    },
  });
  t.true(interrupted, 'interrupted');
  if (run.code !== 99) t.log(run.stdout, run.stderr);
  t.is(run.code, 99, 'ansible-playbook: user interrupted');
  t.regex(run.stdout + run.stderr, /User interrupted execution/);
  t.deepEqual(run.callbackErrors, [], 'no traceback');
  t.deepEqual(unexpectedWarnings(run), []);
  t.deepEqual(spooled(join(work, 'spool')), [], 'sent by the end of the run');

  t.deepEqual((await list(server.url, '/api/v1/playbooks?order=id')).map((p) => [basename(p.path), p.status]),
    [['done.yml', 'completed'], ['slow.yml', 'expired']]);
  const got = await readBack(server.url);
  t.is(got.playbook.status, 'expired');
  t.truthy(got.playbook.ended, 'the playbook has ended');
  t.deepEqual(got.plays, [['first', 'completed', true], ['second', 'expired', true]]);
  t.deepEqual(got.tasks, [['quick', 'completed', true], ['before', 'completed', true], ['sleep', 'expired', true]]);
  t.like(got.playbook.items, { plays: 2, tasks: 3, results: 4 }, 'the results sent before the interrupt');
  const results = await list(server.url, `/api/v1/results?playbook=${got.playbook.id}&order=id`);
  t.deepEqual(results.map((r) => r.status), ['ok', 'ok', 'changed', 'changed']);
});

// SIGTERM to the process group is how a CI runner cancels a job (and `docker stop`, systemd stop a run)
const TERM_PLAY = (name: string) => [
  `- name: ${name}`, '  hosts: h1,h2', '  gather_facts: false', '  tasks:',
  '    - name: before', '      command: /bin/true',
  '    - name: sleep', '      command: sleep 60',
  '    - name: never', '      debug: {msg: never}'];

withAnsible('SIGTERM mid-run (a cancelled CI job): ansible-playbook exits 143 and the run reads back expired at once', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-term-');
  const files = writeRun(work, { 'term.yml': TERM_PLAY('cancelled') });
  const server = await startLogbook();
  t.teardown(() => server.stop());
  let terminated = false;
  const run = await runWithLogbook(server.url, join(work, 'spool'), {
    playbook: files.path('term.yml'), inventory: files.inventory, cwd: work,
    onOutput: (out, signal) => {
      if (!terminated && /TASK \[sleep\]/.test(out)) { terminated = true; setTimeout(() => signal('SIGTERM'), 1000); }
    },
  });
  t.true(terminated, 'terminated');
  if (run.code !== 143) t.log(run.stdout, run.stderr);
  t.is(run.code, 143, 'ansible-playbook: terminated');
  t.deepEqual(run.callbackErrors, [], 'no traceback');
  t.deepEqual(spooled(join(work, 'spool')), [], 'sent by the end of the run');
  const got = await readBack(server.url);
  t.is(got.playbook.status, 'expired', 'not left running');
  t.truthy(got.playbook.ended);
  t.deepEqual(got.plays, [['cancelled', 'expired', true]]);
  t.deepEqual(got.tasks, [['before', 'completed', true], ['sleep', 'expired', true]]);
  t.like(got.playbook.items, { plays: 1, tasks: 2, results: 2 }, 'the results before the signal');
});

withAnsible('SIGTERM mid-run while the server cannot be reached: what the memory queue held goes to the spool, and `ship` sends it', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-term-spool-');
  const spool = join(work, 'spool');
  const files = writeRun(work, { 'term.yml': TERM_PLAY('cancelled offline') });
  const port = await freePort(); // nothing listens there during the run
  let terminated = false;
  const run = await runWithLogbook(`http://127.0.0.1:${port}`, spool, {
    playbook: files.path('term.yml'), inventory: files.inventory, cwd: work,
    // a long end wait: the SIGTERM one (3 s) must be what ends it
    env: { LOGBOOK_CALLBACK_FLUSH_TIMEOUT: '300', LOGBOOK_CALLBACK_UNREACHABLE_TIMEOUT: '300' },
    onOutput: (out, signal) => {
      if (!terminated && /TASK \[sleep\]/.test(out)) { terminated = true; setTimeout(() => signal('SIGTERM'), 1000); }
    },
  });
  t.true(terminated, 'terminated');
  t.is(run.code, 143, 'ansible-playbook: terminated');
  t.deepEqual(run.callbackErrors, [], 'no traceback');
  t.regex(logbookWarnings(run).join('\n'), /logbook: interrupted; \d+ batch\(es\) wait in /);
  t.true(spooled(spool).length > 0, 'the run is in the spool (it was only in memory when the signal came)');

  const server = await startLogbook();
  t.teardown(() => server.stop());
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(ANSIBLE_|LOGBOOK_)/.test(k)));
  const ship = spawnSync('/usr/bin/python3', [join(process.cwd(), 'src', 'ansible', 'callback', 'logbook.py'), 'ship', '60'],
    { cwd: work, env: { ...env, LOGBOOK_API_SERVER: server.url, LOGBOOK_CALLBACK_SPOOL_DIR: spool }, encoding: 'utf8' });
  t.is(ship.status, 0, ship.stdout + ship.stderr);
  t.deepEqual(spooled(spool), []);
  const got = await readBack(server.url);
  t.is(got.playbook.status, 'expired');
  t.deepEqual(got.plays, [['cancelled offline', 'expired', true]]);
  t.deepEqual(got.tasks, [['before', 'completed', true], ['sleep', 'expired', true]]);
  t.like(got.playbook.items, { plays: 1, tasks: 2, results: 2 });
});

withAnsible('a fatal error after the playbook started: the playbook and what was running read back expired', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-fatal-');
  const files = writeRun(work, {
    'fatal.yml': [
      '- name: first', '  hosts: h1', '  gather_facts: false', '  tasks:', '    - name: one', '      debug: {msg: one}',
      // templated when the play starts: ERROR!, exit 4, no stats
      '- name: second', '  hosts: "{{ not_defined_anywhere }}"', '  gather_facts: false', '  tasks:', '    - name: two', '      debug: {msg: two}'],
  });
  const server = await startLogbook();
  t.teardown(() => server.stop());
  const run = await runWithLogbook(server.url, join(work, 'spool'), { playbook: files.path('fatal.yml'), inventory: files.inventory, cwd: work });
  t.is(run.code, 4, 'ansible-playbook: the error');
  t.regex(run.stdout + run.stderr, /ERROR! .*not_defined_anywhere/);
  t.deepEqual(run.callbackErrors, []);
  t.deepEqual(unexpectedWarnings(run), []);

  const got = await readBack(server.url);
  t.is(got.playbook.status, 'expired');
  t.truthy(got.playbook.ended);
  t.deepEqual(got.plays, [['first', 'expired', true]]);
  t.deepEqual(got.tasks, [['one', 'expired', true]]);
  t.like(got.playbook.items, { plays: 1, tasks: 1, results: 1 });
});

withAnsible('a server that cannot be connected to: the end of the run gives up after unreachable_timeout, not flush_timeout, and `ship` sends the run complete', async (t) => {
  t.timeout(TEST_TIMEOUT_MS);
  const work = tempDir(t, 'logbook-cb-away-');
  const spool = join(work, 'spool');
  const files = writeRun(work, {
    'site.yml': ['- name: site', '  hosts: h1,h2', '  gather_facts: false', '  tasks:',
      '    - name: one', '      debug: {msg: one}', '    - name: two', '      command: /bin/true'],
  });
  const port = await freePort(); // nothing listens there during the run
  const url = `http://127.0.0.1:${port}`;
  let recapAt = 0;
  const run = await runWithLogbook(url, spool, {
    playbook: files.path('site.yml'), inventory: files.inventory, cwd: work,
    // a flush_timeout the run would not outlive: it ends because it gave up on a server it cannot connect to
    timeoutMs: 240_000,
    env: { LOGBOOK_CALLBACK_FLUSH_TIMEOUT: '3600' },
    onOutput: (out) => { if (!recapAt && /PLAY RECAP/.test(out)) recapAt = Date.now(); },
  });
  t.log(`end of the run after PLAY RECAP: ${((Date.now() - recapAt) / 1000).toFixed(1)} s (flush_timeout 3600, unreachable_timeout 5)`);
  t.is(run.code, 0, 'the playbook succeeds');
  t.deepEqual(run.callbackErrors, []);
  const warnings = logbookWarnings(run).join('\n');
  t.regex(warnings, /cannot reach/, 'the user is told the server is unreachable');
  t.regex(warnings, /logbook: cannot connect to the server at \S+; [1-9]\d* batch\(es\) wait in \S+ and are shipped by the next run \(or now: .*python3 \S+logbook\.py ship\)/,
    'one line: gave up on the server, where the run waits, the command that ships it');
  t.true(spooled(spool).length > 0, 'the run is in the spool');

  const server = await startLogbook({ env: { LOGBOOK_PORT: String(port) } });
  t.teardown(() => server.stop());
  t.regex(ship(t, work, { LOGBOOK_API_SERVER: url, LOGBOOK_CALLBACK_SPOOL_DIR: spool }), /shipped [1-9]\d* batch\(es\) .*, 0 left/);
  t.deepEqual(spooled(spool), [], 'the spool is empty again');
  const snap = await snapshotRun(url);
  t.is(snap.playbook.status, 'completed');
  t.true(snap.playbook.hasEnded);
  t.deepEqual(snap.playbook.items, { plays: 1, tasks: 2, results: 4, hosts: 2, files: 1, records: 0 }, 'nothing is lost');
  t.deepEqual(snap.plays.map((p) => p.status), ['completed']);
  t.true(snap.tasks.every((x) => x.status === 'completed' && x.results === 2));
  t.deepEqual(snap.hosts.h1, { ok: 2, changed: 1, failed: 0, skipped: 0, unreachable: 0, hasFacts: false });
});

test('the callback\'s sender and its task messages: same-bytes retries, the spool, the dedupe (Python unit tests)', (t) => {
  // test/python/test_callback_shipper.py: the Shipper class alone against a
  // loopback HTTP server; test_callback_task_messages.py: how the callback keeps
  // a task's warnings, deprecations and exceptions. They need only python3 (the
  // callback imports Ansible lazily).
  const r = spawnSync('/usr/bin/python3', ['-m', 'unittest', 'discover', '-s', join('test', 'python')], {
    encoding: 'utf8', timeout: 120_000,
  });
  if (r.status !== 0) t.log(r.stdout, r.stderr);
  t.is(r.status, 0, 'python3 -m unittest discover -s test/python');
  t.regex(r.stderr, /Ran 12 tests/); // every test of both files ran (none skipped silently by discovery)
});
