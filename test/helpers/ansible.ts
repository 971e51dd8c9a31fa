// Runs real Ansible with the stock ARA callback (Debian's python3-ara 1.5.x)
// against an HTTP server, starts ARA's own server for comparison, and reduces
// what a server recorded to a server-independent summary (snapshotRun), so
// that logbook and ARA can be compared field by field.
//
// Node 20 built-ins and fetch only.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { mapLimit } from './dump.js';

/** The fixture lives in the source tree; ava runs with cwd = project root. */
export const FIXTURE_DIR = join(process.cwd(), 'test', 'fixtures', 'e2e');

// The interpreter Ansible itself runs on (ansible-playbook's shebang). A
// `python3` earlier on PATH (pyenv, venv) usually lacks the `ara` package.
const SYSTEM_PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const ARA_PLUGIN_ROOT = '/usr/lib/python3/dist-packages/ara/plugins';

/** An executable named cmd is on PATH. */
export function onPath(cmd: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, cmd), constants.X_OK);
      return true;
    } catch { /* not here */ }
  }
  return false;
}

/** Asks ara where its plugins are (`python3 -m ara.setup.callback_plugins`), falling back to Debian's path. */
function araPluginDir(kind: 'callback' | 'action'): string | null {
  const r = spawnSync(SYSTEM_PYTHON, ['-m', `ara.setup.${kind}_plugins`], { encoding: 'utf8', timeout: 30_000 });
  const dir = r.status === 0 ? r.stdout.trim() : join(ARA_PLUGIN_ROOT, kind);
  return existsSync(dir) ? dir : null;
}

let cached: { callback: string; action: string } | null | undefined;
function araPlugins(): { callback: string; action: string } | null {
  if (cached !== undefined) return cached;
  const callback = araPluginDir('callback');
  const action = araPluginDir('action');
  cached = callback && action && existsSync(join(callback, 'ara_default.py')) ? { callback, action } : null;
  return cached;
}

/** ansible-playbook and the ARA callback + action plugins are installed. */
export function hasAnsible(): boolean {
  return onPath('ansible-playbook') && araPlugins() !== null;
}

/** ARA's own server can be started (ara-manage, from the ara-server package). */
export function hasAraServer(): boolean {
  return hasAnsible() && onPath('ara-manage');
}

/** The `ara` CLI (ara-client package). */
export function hasAraCli(): boolean {
  return onPath('ara');
}

export interface HostRecap {
  ok: number;
  changed: number;
  unreachable: number;
  failed: number;
  skipped: number;
  rescued: number;
  ignored: number;
}

export interface PlaybookRun {
  code: number;
  stdout: string;
  stderr: string;
  /** PLAY RECAP, by inventory host name. */
  recap: Record<string, HostRecap>;
  /**
   * Every sign that an HTTP call of the ARA callback (or ara_record) failed:
   * `ara.*` logger lines from the Ansible log file (the http client logs
   * "Failed to <method> on <url>: <payload>" for any status other than
   * 200/201/204), the same lines when they reach stderr through Python's
   * last-resort handler, callback exceptions ("Failure using method (...) in
   * callback plugin"), and failed ara_record tasks. Empty when all went well.
   */
  callbackErrors: string[];
  /** The Ansible log file's full text (ANSIBLE_LOG_PATH), for debugging. */
  log: string;
}

export interface RunOptions {
  /** Defaults to the e2e fixture's playbook.yml / inventory.ini; inventory null: no -i (Ansible's implicit localhost). */
  playbook?: string;
  inventory?: string | null;
  cwd?: string;
  /** Extra variables for ansible-playbook (ARA_*, ANSIBLE_*), e.g. ARA_CALLBACK_THREADS. */
  env?: Record<string, string>;
  args?: string[];
  timeoutMs?: number;
  /**
   * Called with the output so far (stdout and stderr) whenever more arrives,
   * and a function that sends a signal to ansible-playbook's process group (as
   * Ctrl-C in a terminal reaches it and its workers), or with `only: 'main'` to
   * ansible-playbook alone (as `kill <pid>` does; the workers it leaves behind
   * are killed once it has exited).
   */
  onOutput?: (output: string, signal: (sig: NodeJS.Signals, only?: 'main') => void) => void;
}

const RECAP_LINE =
  /^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)\s*$/;

export function parseRecap(stdout: string): Record<string, HostRecap> {
  const recap: Record<string, HostRecap> = {};
  const at = stdout.lastIndexOf('PLAY RECAP');
  if (at < 0) return recap;
  for (const line of stdout.slice(at).split('\n')) {
    const m = RECAP_LINE.exec(line);
    if (!m) continue;
    const n = m.slice(2).map(Number);
    recap[m[1]!] = {
      ok: n[0]!, changed: n[1]!, unreachable: n[2]!, failed: n[3]!,
      skipped: n[4]!, rescued: n[5]!, ignored: n[6]!,
    };
  }
  return recap;
}

// Patterns that mean "a callback HTTP call went wrong". See the comment on
// PlaybookRun.callbackErrors; the first three are the ara http client's
// own log line and the two ways Ansible reports an exception raised inside a
// callback method (connection refused, non-JSON body, KeyError on a missing
// response field, …).
const ERROR_PATTERNS: RegExp[] = [
  /Failed to (get|post|put|patch|delete) on /,
  /Failure using method \(/,
  /in callback plugin \(/,
  /Record failed to be created or updated in ARA/,
  /Traceback \(most recent call last\)/,
];

export function findCallbackErrors(stdout: string, stderr: string, log: string): string[] {
  const out: string[] = [];
  // Ansible log format: "<date> p=<pid> u=<user> n=<logger> | <message>",
  // messages may span lines. The log is opened at INFO, so ara loggers only
  // reach it with warning/error records (their debug lines are filtered out).
  const entries = log.split(/\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ p=)/);
  for (const entry of entries) {
    const flat = entry.replace(/\s*\n\s*/g, ' ').trim();
    if (/ n=ara[.\s]/.test(flat) || ERROR_PATTERNS.some((p) => p.test(flat))) out.push(flat);
  }
  // stdout/stderr: Ansible wraps warnings at 80 columns; a message starts
  // at a line beginning with "[", "ERROR" or "fatal" and continues until the next.
  for (const text of [stderr, stdout]) {
    for (const block of text.split(/\n(?=\[|ERROR|fatal|ok:|changed:|skipping:|TASK|PLAY|RUNNING|\n)/)) {
      const flat = block.replace(/\s*\n\s*/g, ' ').trim();
      // Everything displayed is also in the log; keep only what the log lacks.
      if (ERROR_PATTERNS.some((p) => p.test(flat)) && !out.some((o) => o.includes(flat))) out.push(flat);
    }
  }
  return [...new Set(out)].filter((l) => l.length > 0);
}

/**
 * Runs `ansible-playbook -i inventory.ini playbook.yml` with the stock ARA
 * callback recording into serverUrl. Isolated from the machine's Ansible and
 * ARA configuration: inherited ANSIBLE_* / ARA_* variables are dropped, and
 * ANSIBLE_CONFIG points at an empty file (so no ./ansible.cfg, ~/.ansible.cfg
 * or /etc/ansible/ansible.cfg is read).
 */
export async function runPlaybook(serverUrl: string, opts: RunOptions = {}): Promise<PlaybookRun> {
  const plugins = araPlugins();
  if (!plugins) throw new Error('ARA callback plugin not found');
  const work = mkdtempSync(join(tmpdir(), 'logbook-ansible-'));
  try {
    const cfg = join(work, 'ansible.cfg');
    writeFileSync(cfg, '');
    const logPath = join(work, 'ansible.log');
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !/^(ANSIBLE_|ARA_)/.test(k)) env[k] = v;
    }
    Object.assign(env, {
      ANSIBLE_CONFIG: cfg,
      ANSIBLE_HOME: join(work, 'home'),
      ANSIBLE_LOCAL_TEMP: join(work, 'local'),
      ANSIBLE_REMOTE_TEMP: join(work, 'remote'),
      ANSIBLE_SSH_CONTROL_PATH_DIR: join(work, 'cp'),
      ANSIBLE_LOG_PATH: logPath,
      ANSIBLE_HOST_KEY_CHECKING: 'False',
      ANSIBLE_RETRY_FILES_ENABLED: 'False',
      ANSIBLE_PYTHON_INTERPRETER: '/usr/bin/python3',
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_FORCE_COLOR: '0',
      ANSIBLE_STDOUT_CALLBACK: 'default',
      ANSIBLE_DEPRECATION_WARNINGS: 'False',
      ANSIBLE_LOCALHOST_WARNING: 'False',
      ANSIBLE_FORKS: '5',
      ANSIBLE_TIMEOUT: '5',
      ANSIBLE_CALLBACK_PLUGINS: plugins.callback,
      ANSIBLE_ACTION_PLUGINS: plugins.action,
      ARA_API_CLIENT: 'http',
      ARA_API_SERVER: serverUrl,
      ARA_API_TIMEOUT: '15',
      PYTHONUNBUFFERED: '1',
      ...opts.env,
    });
    const args = [
      ...(opts.inventory === null ? [] : ['-i', opts.inventory ?? join(FIXTURE_DIR, 'inventory.ini')]),
      opts.playbook ?? join(FIXTURE_DIR, 'playbook.yml'),
      ...(opts.args ?? []),
    ];
    // its own process group, so that a signal can reach the workers too (onOutput)
    const child = spawn('ansible-playbook', args, {
      cwd: opts.cwd ?? FIXTURE_DIR, env, stdio: ['ignore', 'pipe', 'pipe'], detached: opts.onOutput !== undefined,
    });
    let stdout = '';
    let stderr = '';
    const signal = (sig: NodeJS.Signals, only?: 'main'): void => {
      try { process.kill(only === 'main' ? child.pid! : -child.pid!, sig); } catch { /* ended */ }
    };
    // a worker left running (a task's `sleep 30`) keeps the output pipes, and so the run, open
    if (opts.onOutput) child.on('exit', () => signal('SIGKILL'));
    const seen = (): void => opts.onOutput?.(`${stdout}\n${stderr}`, signal);
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; seen(); });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; seen(); });
    const timeoutMs = opts.timeoutMs ?? 180_000; // generous: a loaded 2-core CI machine
    const code = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (opts.onOutput) signal('SIGKILL');
        else child.kill('SIGKILL');
        reject(new Error(`ansible-playbook timed out after ${timeoutMs} ms\n${stdout}\n${stderr}`));
      }, timeoutMs);
      child.on('error', (e) => { clearTimeout(timer); reject(e); });
      child.on('close', (c, sig) => { clearTimeout(timer); resolve(c ?? (sig ? 128 : -1)); });
    });
    const log = existsSync(logPath) ? readFileSync(logPath, 'utf8') : '';
    return { code, stdout, stderr, recap: parseRecap(stdout), callbackErrors: findCallbackErrors(stdout, stderr, log), log };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A free TCP port on 127.0.0.1 (closed again before it is returned). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface AraServer {
  url: string;
  baseDir: string;
  output: () => string;
  stop: () => Promise<void>;
}

function runSync(cmd: string, args: string[], env: Record<string, string>, what: string): void {
  const r = spawnSync(cmd, args, { env, encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
}

/**
 * ARA's own API server (Django `runserver`, sqlite) on a free loopback port
 * with a throw-away ARA_BASE_DIR. Resolves once GET /api/v1/ answers 200.
 */
export interface AraServerOptions {
  /** extra ARA_* settings, e.g. ARA_READ_LOGIN_REQUIRED */
  env?: Record<string, string>;
  /** a Django superuser to create (for ARA's login) */
  user?: { name: string; password: string };
}

export async function startAraServer(options: AraServerOptions = {}): Promise<AraServer> {
  const baseDir = mkdtempSync(join(tmpdir(), 'logbook-ara-'));
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^ARA_/.test(k)) env[k] = v;
  }
  Object.assign(env, {
    ARA_BASE_DIR: baseDir,
    ARA_ALLOWED_HOSTS: "['127.0.0.1', 'localhost']",
    ARA_LOG_LEVEL: 'WARNING',
    ARA_DEBUG: 'false',
    PYTHONUNBUFFERED: '1',
    ...options.env,
  });
  runSync('ara-manage', ['migrate'], env, 'ara-manage migrate');
  if (options.user) {
    runSync('ara-manage', ['createsuperuser', '--noinput', '--username', options.user.name, '--email', 'ara@example.invalid'],
      { ...env, DJANGO_SUPERUSER_PASSWORD: options.user.password }, 'ara-manage createsuperuser');
  }
  const port = await freePort();
  const child = spawn('ara-manage', ['runserver', `127.0.0.1:${port}`, '--noreload'], {
    env, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { out += d; });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  let dead = false;
  void exited.then(() => { dead = true; });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (dead) throw new Error(`ara-manage runserver exited:\n${out}`);
    try {
      const res = await fetch(`${url}/api/v1/`);
      await res.arrayBuffer();
      if (res.status === 200 || res.status === 401) break; // 401: up, with a login required
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`ARA server did not answer on ${url}:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    baseDir,
    output: () => out,
    async stop() {
      if (!dead) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(baseDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------
// Normalized snapshot

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** GETs base + path and parses the JSON body (throws unless 200). */
export type JsonGetter = (base: string, path: string) => Promise<Json>;

async function getJson(base: string, path: string): Promise<Json> {
  const res = await fetch(base.replace(/\/$/, '') + path, { headers: { accept: 'application/json' } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path} → ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

/** Every row of a list endpoint (follows `next` in case a server caps `limit`). */
async function listAll(base: string, resource: string, playbookId: number, get: JsonGetter): Promise<Json[]> {
  const rows: Json[] = [];
  let offset = 0;
  for (;;) {
    const page = await get(base, `/api/v1/${resource}?playbook=${playbookId}&limit=1000&offset=${offset}`);
    rows.push(...page.results);
    if (!page.next || page.results.length === 0) break;
    offset += page.results.length;
  }
  return rows;
}


const byKey = <T>(key: (x: T) => string) => (a: T, b: T) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);

/** Keys whose value a server (logbook §3) or the client may replace with its own notice. */
const IGNORED_ARGUMENTS = ['extra_vars'];

export interface RunSnapshot {
  playbook: {
    status: string;
    name: string | null;
    path: string;
    runner_version: string;
    labels: string[];
    items: Record<string, number>;
    arguments: Record<string, Json>;
    hasEnded: boolean;
  };
  plays: Array<{ name: string; status: string; items: Record<string, number> }>;
  tasks: Array<{
    play: string; name: string; action: string; handler: boolean; status: string;
    path: string; lineno: number; tags: Json; results: number; items: Record<string, number>;
  }>;
  hosts: Record<string, { ok: number; changed: number; failed: number; skipped: number; unreachable: number; hasFacts: boolean }>;
  results: Array<{
    host: string; play: string; task: string; status: string; changed: boolean; ignore_errors: boolean;
    contentKeys: string[]; msg: string | null;
  }>;
  records: Array<{ key: string; type: string; value: Json }>;
  files: Array<{ path: string; sha1: string }>;
}

/** The newest playbook id (highest id) on a server, or undefined when empty. */
export async function newestPlaybookId(serverUrl: string, get: JsonGetter = getJson): Promise<number | undefined> {
  const page = await get(serverUrl, '/api/v1/playbooks?order=-id&limit=1');
  return page.results[0]?.id;
}

/**
 * Everything a server recorded for one playbook (the newest by default),
 * reduced to fields that ARA 1.5.8 and logbook both serve and that do not
 * depend on ids, timestamps or the order of list rows. Two runs of the same
 * deterministic playbook into two servers give equal snapshots. `get` replaces
 * the global fetch (e.g. to read over TLS with a private CA).
 */
export async function snapshotRun(serverUrl: string, playbookId?: number, get: JsonGetter = getJson): Promise<RunSnapshot> {
  const id = playbookId ?? await newestPlaybookId(serverUrl, get);
  if (id === undefined) throw new Error(`no playbook recorded on ${serverUrl}`);
  const pb = await get(serverUrl, `/api/v1/playbooks/${id}`);
  const [plays, tasks, hosts, results, files, records] = await Promise.all(
    ['plays', 'tasks', 'hosts', 'results', 'files', 'records'].map((r) => listAll(serverUrl, r, id, get)),
  ) as [Json[], Json[], Json[], Json[], Json[], Json[]];

  const playName = new Map<number, string>(plays.map((p) => [p.id, p.name ?? '']));
  const fileById = new Map<number, Json>(files.map((f) => [f.id, f]));
  // Task identity across runs: play name + name + file path + line (+ handler).
  const taskKey = new Map<number, string>(tasks.map((t) => [
    t.id, `${playName.get(t.play)} | ${t.name} | ${t.path ?? fileById.get(t.file)?.path}:${t.lineno}${t.handler ? ' (handler)' : ''}`,
  ]));
  const hostName = new Map<number, string>(hosts.map((h) => [h.id, h.name]));

  const resultsPerTask = new Map<number, number>();
  for (const r of results) resultsPerTask.set(r.task, (resultsPerTask.get(r.task) ?? 0) + 1);

  const [resultDetails, hostDetails, recordDetails] = await Promise.all([
    mapLimit(results, 8, (r) => get(serverUrl, `/api/v1/results/${r.id}`)),
    mapLimit(hosts, 8, (h) => get(serverUrl, `/api/v1/hosts/${h.id}`)),
    mapLimit(records, 8, (r) => get(serverUrl, `/api/v1/records/${r.id}`)),
  ]);
  const contentOf = new Map<number, Json>(resultDetails.map((d) => [d.id, d.content]));
  const factsOf = new Map<number, Json>(hostDetails.map((d) => [d.id, d.facts]));

  const args: Record<string, Json> = {};
  for (const [k, v] of Object.entries(pb.arguments ?? {})) {
    if (!IGNORED_ARGUMENTS.includes(k)) args[k] = v;
  }

  const snap: RunSnapshot = {
    playbook: {
      status: pb.status,
      name: pb.name ?? null,
      path: pb.path,
      runner_version: pb.runner_version ?? pb.ansible_version,
      labels: (pb.labels ?? []).map((l: Json) => l.name).sort(),
      items: pb.items,
      arguments: args,
      hasEnded: pb.ended !== null && pb.ended !== undefined,
    },
    plays: plays
      .map((p) => ({ name: p.name ?? '', status: p.status, items: p.items }))
      .sort(byKey((p) => p.name)),
    tasks: tasks
      .map((t) => ({
        play: playName.get(t.play) ?? `?${t.play}`,
        name: t.name ?? '',
        action: t.action,
        handler: Boolean(t.handler),
        status: t.status,
        path: t.path ?? fileById.get(t.file)?.path,
        lineno: t.lineno,
        tags: t.tags,
        results: resultsPerTask.get(t.id) ?? 0,
        items: t.items,
      }))
      .sort(byKey((t) => `${t.play}\u0000${t.path}\u0000${String(t.lineno).padStart(8, '0')}\u0000${t.name}\u0000${t.handler}`)),
    hosts: Object.fromEntries(hosts
      .map((h) => [h.name, {
        ok: h.ok, changed: h.changed, failed: h.failed, skipped: h.skipped, unreachable: h.unreachable,
        hasFacts: (() => { const f = factsOf.get(h.id); return !!f && typeof f === 'object' && Object.keys(f).length > 0; })(),
      }] as const)
      .sort(byKey(([n]) => n))),
    results: results
      .map((r) => {
        const content = contentOf.get(r.id);
        const isObj = content && typeof content === 'object' && !Array.isArray(content);
        return {
          host: hostName.get(r.host) ?? `?${r.host}`,
          play: playName.get(r.play) ?? `?${r.play}`,
          task: taskKey.get(r.task) ?? `?${r.task}`,
          status: r.status,
          changed: Boolean(r.changed),
          ignore_errors: Boolean(r.ignore_errors),
          contentKeys: isObj ? Object.keys(content).sort() : [],
          msg: isObj && typeof content.msg === 'string' ? content.msg : null,
        };
      })
      .sort(byKey((r) => `${r.task}\u0000${r.host}`)),
    records: recordDetails
      .map((r) => ({ key: r.key, type: r.type, value: r.value }))
      .sort(byKey((r) => r.key)),
    files: files
      .map((f) => ({ path: f.path, sha1: f.sha1 }))
      .sort(byKey((f) => f.path)),
  };
  return snap;
}

// ---------------------------------------------------------------------------
// The stock `ara` CLI

export interface CliRun { code: number; stdout: string; stderr: string; json: Json }

/** Runs the stock `ara` CLI (ara-client) with the http client against serverUrl. */
export async function runAraCli(serverUrl: string, args: string[], timeoutMs = 60_000): Promise<CliRun> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^ARA_/.test(k)) env[k] = v;
  }
  // TZ=UTC: `ara playbook prune` and `ara expire` send naive local
  // timestamps (datetime.now().isoformat()) that logbook reads as UTC.
  Object.assign(env, { ARA_API_CLIENT: 'http', ARA_API_SERVER: serverUrl, ARA_API_TIMEOUT: '15', TZ: 'UTC' });
  const child = spawn('ara', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  const code = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`ara ${args.join(' ')} timed out`)); }, timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', (c) => { clearTimeout(timer); resolve(c ?? -1); });
  });
  let json: Json = undefined;
  try { json = JSON.parse(stdout); } catch { /* not JSON output */ }
  return { code, stdout, stderr, json };
}

// test/fixtures/e2e/playbook.yml is deterministic: this is its PLAY RECAP on
// every run. ghost is unreachable (Gathering Facts), web2 fails hard in play 2,
// every host ignores one failure, and web1 also runs the two run_once
// ara_record tasks. Shared by every suite that records the fixture.
export const FIXTURE_RECAP: Record<string, HostRecap> = {
  db1: { ok: 13, changed: 5, unreachable: 0, failed: 0, skipped: 4, rescued: 0, ignored: 1 },
  ghost: { ok: 0, changed: 0, unreachable: 1, failed: 0, skipped: 0, rescued: 0, ignored: 0 },
  web1: { ok: 16, changed: 7, unreachable: 0, failed: 0, skipped: 3, rescued: 0, ignored: 1 },
  web2: { ok: 12, changed: 4, unreachable: 0, failed: 1, skipped: 2, rescued: 0, ignored: 1 },
};
/** ansible-playbook exits 4 (RUN_UNREACHABLE_HOSTS) when a host was unreachable; that takes precedence over 2 (RUN_FAILED_HOSTS). */
export const FIXTURE_EXIT = 4;
/** The fixture's playbook `items`. */
export const FIXTURE_ITEMS = { plays: 3, tasks: 19, results: 52, hosts: 4, files: 4, records: 2 };
