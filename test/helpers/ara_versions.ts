// ARA's own clients and servers of several versions, side by side, for the
// tests that prove each ARA version works unchanged against a default logbook:
// - 1.5.8: Debian's python3-ara (callback, action, lookup plugins), ara-client
//   (the `ara` CLI) and ara-server (the reference server, `ara-manage runserver`);
//   ARA's integration playbooks of that tag come from test/fixtures/ara-1.5.8.
// - 1.7.4 and ARA's newest commit: ARA's files, unmodified, in
//   test/fixtures/ara-<version>/ (see its README.md). They run on Debian's
//   Python, Django 3.2 and gunicorn with PYTHONPATH=<fixture>; the fixture's
//   ara-<version>.dist-info tells ARA its own version (ARA reads it with pbr,
//   which would otherwise find Debian's installed 1.5.8).
//
// Node 20 built-ins and fetch only.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freePort, hasAnsible, hasAraCli, hasAraServer, onPath, runAraCli, runPlaybook, startAraServer,
  type AraServer, type CliRun, type PlaybookRun,
} from './ansible.js';

const SYSTEM_PYTHON = '/usr/bin/python3';
const FIXTURES = join(process.cwd(), 'test', 'fixtures');
const DEBIAN_PLUGINS = '/usr/lib/python3/dist-packages/ara/plugins';

export interface AraVersion {
  /** '1.5.8', '1.7.4' or the newest commit's short hash */
  name: string;
  /** the folder that holds ARA's `ara` package (PYTHONPATH), or null for Debian's installed 1.5.8 */
  source: string | null;
  /** ARA's tests/integration of that version */
  integrationDir: string;
  plugins: { callback: string; action: string; lookup: string };
  /** the playbooks ARA's own CI runs, as it runs them */
  integration: IntegrationCase[];
}

export interface IntegrationCase {
  /** file name under tests/integration */
  file: string;
  /** extra environment the ARA test sets for this playbook */
  env?: Record<string, string>;
  args?: string[];
  /**
   * ok: ARA's CI requires exit 0; failed: ARA's CI runs it with ignore_errors
   * (the playbook fails on purpose); interrupted: ARA's CI kills it mid-run.
   */
  expect: 'ok' | 'failed' | 'interrupted';
}

// ARA's tests/test_tasks.yaml (and tests/basic.yaml, the same list with
// ansible.cfg settings) at 1.7.4: the order, the per-playbook environment and
// arguments, and which are allowed to fail.
const INTEGRATION_1_7: IntegrationCase[] = [
  { file: 'smoke.yaml', expect: 'ok' },
  { file: 'lookups.yaml', env: { ARA_LOCALHOST_AS_HOSTNAME: 'true' }, expect: 'ok' },
  {
    file: 'record_settings.yaml',
    env: { ARA_RECORD_USER_NAME: 'test-user', ARA_RECORD_CONTROLLER_NAME: 'test-controller', ARA_RECORD_TASK_CONTENT: 'false' },
    expect: 'ok',
  },
  { file: 'delegate_to.yaml', expect: 'ok' },
  { file: 'free_strategy.yaml', expect: 'ok' },
  { file: 'hosts.yaml', expect: 'ok' },
  { file: 'import.yaml', expect: 'ok' },
  { file: 'facts.yaml', expect: 'ok' },
  { file: 'long_strings.yaml', expect: 'ok' },
  { file: 'failed.yaml', args: ['-e', 'ara_playbook_name=Failed playbook'], expect: 'failed' },
  { file: 'incomplete.yaml', expect: 'interrupted' },
  { file: 'ignored_files.yaml', env: { ANSIBLE_VAULT_PASSWORD_FILE: 'vault_password_file' }, expect: 'ok' },
  { file: 'ignored_facts.yaml', env: { ARA_IGNORED_FACTS: 'all' }, expect: 'ok' },
];

// tests/test_tasks.yaml at 1.5.8.
const INTEGRATION_1_5: IntegrationCase[] = [
  { file: 'smoke.yaml', expect: 'ok' },
  { file: 'lookups.yaml', expect: 'ok' },
  { file: 'delegate_to.yaml', expect: 'ok' },
  { file: 'free_strategy.yaml', expect: 'ok' },
  { file: 'hosts.yaml', expect: 'ok' },
  { file: 'import.yaml', expect: 'ok' },
  { file: 'failed.yaml', args: ['-e', 'ara_playbook_name=Failed playbook'], expect: 'failed' },
  { file: 'incomplete.yaml', expect: 'interrupted' },
];

function sourceVersion(name: string, extra: IntegrationCase[] = []): AraVersion {
  const source = join(FIXTURES, `ara-${name}`);
  const plugins = join(source, 'ara', 'plugins');
  return {
    name,
    source,
    integrationDir: join(source, 'tests', 'integration'),
    plugins: { callback: join(plugins, 'callback'), action: join(plugins, 'action'), lookup: join(plugins, 'lookup') },
    integration: [...INTEGRATION_1_7, ...extra],
  };
}

/** The short hash of ARA's newest commit kept as a fixture. */
export const ARA_NEWEST = '17968ed';

export const ARA_VERSIONS: Record<string, AraVersion> = {
  '1.5.8': {
    name: '1.5.8',
    source: null,
    integrationDir: join(FIXTURES, 'ara-1.5.8', 'tests', 'integration'),
    plugins: { callback: join(DEBIAN_PLUGINS, 'callback'), action: join(DEBIAN_PLUGINS, 'action'), lookup: join(DEBIAN_PLUGINS, 'lookup') },
    integration: INTEGRATION_1_5,
  },
  '1.7.4': sourceVersion('1.7.4'),
  // tests/basic.yaml at the newest commit adds notes.yaml (task warnings, deprecations, exceptions)
  [ARA_NEWEST]: sourceVersion(ARA_NEWEST, [{ file: 'notes.yaml', expect: 'ok' }]),
};

/** What this machine lacks to run a version's clients and server, or null when it has it all. */
export function missingFor(version: AraVersion): string | null {
  if (!hasAnsible()) return 'ansible-playbook or Debian\'s python3-ara is not installed';
  if (version.source === null) {
    if (!hasAraServer()) return 'Debian\'s ara-server (ara-manage) is not installed';
    if (!hasAraCli()) return 'Debian\'s ara-client (ara) is not installed';
    return null;
  }
  if (!existsSync(join(version.source, 'ara'))) return `the fixture ${version.source} is missing`;
  if (!onPath('gunicorn')) return 'gunicorn (Debian package gunicorn) is not installed';
  const django = spawnSync(SYSTEM_PYTHON, ['-c', 'import django, rest_framework, django_filters, corsheaders, health_check, dynaconf'], { encoding: 'utf8' });
  if (django.status !== 0) return `ARA's server dependencies are missing (Debian's ara-server pulls them): ${django.stderr.trim().split('\n').pop()}`;
  return null;
}

function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(ANSIBLE_|ARA_|PYTHON|DJANGO_)/.test(k)) env[k] = v;
  }
  return env;
}

/** ARA's own server of `version`: Debian's ara-server for 1.5.8, else the fixture's on gunicorn. */
export async function startAraOf(version: AraVersion): Promise<AraServer> {
  if (version.source === null) return startAraServer();
  const baseDir = mkdtempSync(join(tmpdir(), `logbook-ara-${version.name}-`));
  const env: Record<string, string> = {
    ...cleanEnv(),
    PYTHONPATH: version.source,
    ARA_BASE_DIR: baseDir,
    ARA_ALLOWED_HOSTS: "['127.0.0.1', 'localhost']",
    ARA_LOG_LEVEL: 'WARNING',
    ARA_DEBUG: 'false',
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1', // no __pycache__ inside the fixture
  };
  // `ara-manage migrate`, as ARA's console script runs it
  const migrate = spawnSync(SYSTEM_PYTHON, ['-c', 'import sys; sys.argv = ["ara-manage", "migrate"]; from ara.server.__main__ import main; main()'],
    { env, cwd: baseDir, encoding: 'utf8', timeout: 120_000 });
  if (migrate.status !== 0) {
    rmSync(baseDir, { recursive: true, force: true });
    throw new Error(`ARA ${version.name} migrate failed (${migrate.status}):\n${migrate.stdout}\n${migrate.stderr}`);
  }
  const port = await freePort();
  const child = spawn('gunicorn', ['--bind', `127.0.0.1:${port}`, '--workers', '2', '--timeout', '120', 'ara.server.wsgi'],
    { env, cwd: baseDir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { out += d; });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  let dead = false;
  void exited.then(() => { dead = true; });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000; // a loaded 2-core machine starts Django slowly
  for (;;) {
    if (dead) throw new Error(`ARA ${version.name} gunicorn exited:\n${out}`);
    try {
      const res = await fetch(`${url}/api/v1/`);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`ARA ${version.name} did not answer on ${url}:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  return {
    url,
    baseDir,
    output: () => out,
    async stop() {
      if (!dead) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(baseDir, { recursive: true, force: true });
    },
  };
}

/**
 * The environment that makes ansible-playbook record with `version`'s own
 * callback, action and lookup plugins into serverUrl. ARA's CI writes these
 * into ansible.cfg (tests/basic.yaml); the variables are the same settings.
 * ARA_RECORD_CONTROLLER_NAME: lookups.yaml compares the recorded controller
 * with `hostname`, the callback records socket.getfqdn(); the two differ on
 * machines whose /etc/hosts maps the host name to localhost.
 */
export function recordingEnv(version: AraVersion, serverUrl: string): Record<string, string> {
  return {
    ANSIBLE_CALLBACK_PLUGINS: version.plugins.callback,
    ANSIBLE_ACTION_PLUGINS: version.plugins.action,
    ANSIBLE_LOOKUP_PLUGINS: version.plugins.lookup,
    ARA_API_CLIENT: 'http',
    ARA_API_SERVER: serverUrl,
    ARA_DEFAULT_LABELS: 'basic-tests',
    ARA_IGNORED_FILES: '.ansible/tmp,ignored_task_file.yaml',
    ARA_RECORD_CONTROLLER_NAME: hostname(),
    ...(version.source ? { PYTHONPATH: version.source, PYTHONDONTWRITEBYTECODE: '1' } : {}),
  };
}

/** `ara <args>` of `version` against serverUrl (Debian's ara-client for 1.5.8). */
export async function runAraCliOf(version: AraVersion, serverUrl: string, args: string[], timeoutMs = 60_000): Promise<CliRun> {
  if (version.source === null) return runAraCli(serverUrl, args, timeoutMs);
  const env: Record<string, string> = {
    ...cleanEnv(), PYTHONPATH: version.source, PYTHONDONTWRITEBYTECODE: '1', ARA_API_CLIENT: 'http', ARA_API_SERVER: serverUrl, ARA_API_TIMEOUT: '15', TZ: 'UTC',
  };
  const child = spawn(SYSTEM_PYTHON, ['-c', 'import sys; from ara.cli.base import main; sys.exit(main(sys.argv[1:]))', ...args],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  const code = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`ara ${args.join(' ')} timed out`)); }, timeoutMs);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', (c) => { clearTimeout(timer); resolve(c ?? -1); });
  });
  let json: unknown = undefined;
  try { json = JSON.parse(stdout); } catch { /* not JSON output */ }
  return { code, stdout, stderr, json };
}

// ---------------------------------------------------------------------------
// ARA's integration playbooks

/** A callback error is only a warning in Ansible: these lines in a run's output mean data was lost. */
const CALLBACK_FAILURE = [
  /Failure using method \(/,
  /Callback Exception/,
  /in callback plugin \(/,
  /Failed to (get|post|put|patch|delete) on /,
  /Record failed to be created or updated in ARA/,
];

export function callbackFailures(run: PlaybookRun): string[] {
  const all: string[] = [];
  for (const text of [run.stdout, run.stderr, run.log]) {
    for (const block of text.split(/\n(?=\[|\d{4}-\d\d-\d\d |ERROR|fatal|ok:|changed:|TASK|PLAY|Callback Exception|\n)/)) {
      const flat = block.replace(/\s*\n\s*/g, ' ').trim();
      if (CALLBACK_FAILURE.some((p) => p.test(flat))) all.push(flat);
    }
  }
  // Ansible's warning names the callback method and the error; at -vvv a
  // "Callback Exception:" traceback precedes it (kept only when no warning says it)
  const warnings = all.filter((l) => /Failure using method/.test(l))
    .map((l) => l.replace(/^.*?Failure using method/, 'Failure using method').replace(/ in callback plugin \(<[^>]*>\)/, ''));
  const other = all.filter((l) => !/Failure using method|Callback Exception/.test(l))
    .map((l) => l.replace(/^\d{4}-\d\d-\d\d [\d:,]+ p=\d+ u=\S+ n=\S+ \| /, '').slice(0, 500));
  const out = warnings.length || other.length ? [...warnings, ...other] : all.map((l) => l.slice(0, 700));
  return [...new Set(out)];
}

/** The tasks that failed without being ignored or rescued: "TASK [name] host: assertion / msg". */
export function failedTasks(stdout: string): string[] {
  const out: string[] = [];
  const sections = stdout.split(/\n(?=TASK \[|RUNNING HANDLER \[|PLAY \[|PLAY RECAP)/);
  for (const section of sections) {
    const task = /^(?:TASK|RUNNING HANDLER) \[([^\]]*)\]/.exec(section)?.[1];
    if (!task || !/\nfatal: /.test(section) || /\.\.\.ignoring/.test(section)) continue;
    const host = /\nfatal: \[([^\]]+)\]/.exec(section)?.[1] ?? '?';
    const assertion = /"assertion": "((?:[^"\\]|\\.)*)"/.exec(section)?.[1];
    const msg = /"msg": "((?:[^"\\]|\\.)*)"/.exec(section)?.[1];
    out.push(`TASK [${task}] ${host}: ${assertion ? `assertion ${assertion}` : (msg ?? 'failed').slice(0, 400)}`);
  }
  return out;
}

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface PlaybookOutcome {
  file: string;
  code: number;
  callbackFailures: string[];
  failedTasks: string[];
  /** the recorded playbook's status and items on the server, or why they could not be read */
  recorded: { status: string; items: Record<string, number> } | string;
  /** ARA's CI verdict on this run (exit code as expected), before the callback check */
  ciVerdict: boolean;
  /** wall-clock seconds of the run (for the report; noisy on a shared machine) */
  seconds: number;
  run: PlaybookRun;
}

async function newestPlaybook(serverUrl: string): Promise<PlaybookOutcome['recorded']> {
  try {
    const res = await fetch(`${serverUrl}/api/v1/playbooks?order=-id&limit=1`, { headers: { accept: 'application/json' } });
    const body: Json = await res.json();
    const row = body?.results?.[0];
    if (!row) return `no playbook recorded (HTTP ${res.status})`;
    return { status: row.status, items: row.items };
  } catch (err) {
    return `reading the recorded playbook failed: ${String(err)}`;
  }
}

/** Runs one of ARA's integration playbooks as ARA's CI does, recording with `version`'s plugins into serverUrl. */
export async function runIntegrationCase(version: AraVersion, serverUrl: string, c: IntegrationCase): Promise<PlaybookOutcome> {
  const env = { ...recordingEnv(version, serverUrl), ...c.env };
  if (env.ANSIBLE_VAULT_PASSWORD_FILE) env.ANSIBLE_VAULT_PASSWORD_FILE = join(version.integrationDir, env.ANSIBLE_VAULT_PASSWORD_FILE);
  let interrupted = false;
  const started = Date.now();
  const run = await runPlaybook(serverUrl, {
    playbook: join(version.integrationDir, c.file),
    inventory: null, // ARA's CI runs them on Ansible's implicit localhost
    cwd: version.integrationDir,
    args: ['-vvv', ...(c.args ?? [])],
    env,
    timeoutMs: 240_000,
    // ARA's CI starts incomplete.yaml in the background and kills it 5 s later,
    // in its 30 s sleep (`kill $!`: ansible-playbook alone, not its workers);
    // here the kill comes once that task has started. A signal to the whole
    // process group also reaches the forked worker, which inherited ARA's
    // SIGTERM handler and its open connection: both processes then PATCH
    // `expired` on the same socket at once and the interleaved bytes make
    // no request (a race ARA's CI never runs).
    onOutput: c.expect !== 'interrupted' ? undefined : (output, signal) => {
      if (interrupted || !output.includes('TASK [Sleep for thirty seconds]')) return;
      interrupted = true;
      setTimeout(() => signal('SIGTERM', 'main'), 2_000);
    },
  });
  const ciVerdict = c.expect === 'ok' ? run.code === 0 : c.expect === 'failed' ? run.code === 2 : interrupted;
  return {
    file: c.file, code: run.code, callbackFailures: callbackFailures(run), failedTasks: failedTasks(run.stdout),
    recorded: await newestPlaybook(serverUrl), ciVerdict, seconds: Math.round((Date.now() - started) / 1000), run,
  };
}

/** The playbooks ARA's CI runs for `version`, one after the other (as its CI does). */
export async function runIntegrationSuite(version: AraVersion, serverUrl: string): Promise<PlaybookOutcome[]> {
  const out: PlaybookOutcome[] = [];
  for (const c of version.integration) out.push(await runIntegrationCase(version, serverUrl, c));
  return out;
}
