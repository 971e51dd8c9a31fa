// End to end: a task's `warnings`, `deprecations` and `exceptions` (ARA's
// dialect) as real ansible-playbook runs record them, with
// test/fixtures/task_messages (a module in its library/ that warns, deprecates
// and fails with an exception, on two hosts):
// - logbook's callback sends them on the task's end event of batch ingest:
//   each without repeats, in the order first seen; a task without any has [];
//   under the free strategy, a host's result that arrives after another host
//   started the next task adds to what the task's end event sent;
// - ARA's newest callback (test/fixtures/ara-17968ed) recording the same run
//   into logbook stores the same elements (it removes repeats with set(), in
//   an order of its own);
// - Debian's ARA 1.5.8 callback, which does not send them, still records the
//   run, and they stay [].
//
// Needs ansible-core and python3-ara; skipped without them.
import test, { type ExecutionContext } from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ansibleEnv } from '../helpers/ansible_env.js';
import { hasAnsible, newestPlaybookId, runPlaybook, type PlaybookRun, type RunOptions } from '../helpers/ansible.js';
import { ARA_NEWEST, ARA_VERSIONS, recordingEnv } from '../helpers/ara_versions.js';
import { api, startLogbook, type Logbook } from '../helpers/server.js';

const FIXTURE = join(process.cwd(), 'test', 'fixtures', 'task_messages');
const RUN_TIMEOUT_MS = 300_000; // a loaded 2-core machine
const ARA_DIALECT = { 'user-agent': 'ara-http-client_1.7.4' };
const withAnsible = hasAnsible() ? test.serial : test.skip;

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
interface Messages { warnings: Json[]; deprecations: Json[]; exceptions: Json[] }

const traceback = (error: string): string => `Traceback (most recent call last):\n  File "noisy.py", line 26, in main\nRuntimeError: ${error}\n`;
const deprecation = (msg: string) => ({ msg, version: '9.99', collection_name: 'logbook.test' });
const FREE_PLAY_TASKS = ['Warn late', 'After'];
const none: Messages = { warnings: [], deprecations: [], exceptions: [] };

function tempDir(t: ExecutionContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function server(t: ExecutionContext): Promise<Logbook> {
  const lb = await startLogbook();
  t.teardown(async () => {
    if (!t.passed) t.log(`logbook output, tail:\n${lb.output().slice(-3000)}`);
    await lb.stop();
  });
  return lb;
}

/** Runs the fixture recording into url with `env` (a callback's settings); returns the playbook recorded. */
async function record(t: ExecutionContext, who: string, url: string, env: Record<string, string>): Promise<number> {
  const before = await newestPlaybookId(url);
  const opts: RunOptions = {
    playbook: join(FIXTURE, 'playbook.yml'), inventory: join(FIXTURE, 'inventory.ini'), cwd: FIXTURE, timeoutMs: RUN_TIMEOUT_MS, env,
  };
  const run: PlaybookRun = await runPlaybook(url, opts);
  if (run.code !== 0 || run.callbackErrors.length > 0) t.log(`${who}: ansible-playbook output:\n${run.stdout}\n${run.stderr}`);
  t.is(run.code, 0, `${who}: exit code`);
  t.deepEqual(run.callbackErrors, [], `${who}: callback errors`);
  t.deepEqual(run.recap.alpha, { ok: 8, changed: 0, unreachable: 0, failed: 0, skipped: 0, rescued: 0, ignored: 2 }, `${who}: alpha's recap`);
  const id = await newestPlaybookId(url);
  if (id === undefined || id === before) throw new Error(`${who}: no playbook was recorded`);
  return id;
}

/** The playbook's tasks by name, read in ARA's dialect: their warnings, deprecations, exceptions. */
async function messagesByTask(url: string, playbook: number): Promise<Record<string, Messages>> {
  const res = await api(url, 'GET', `/api/v1/tasks?playbook=${playbook}&limit=100`, undefined, ARA_DIALECT);
  if (res.status !== 200) throw new Error(`tasks of playbook ${playbook}: ${res.status} ${res.text}`);
  const out: Record<string, Messages> = {};
  for (const task of res.body.results) {
    out[task.name] = { warnings: task.warnings, deprecations: task.deprecations, exceptions: task.exceptions };
  }
  return out;
}

/** The same elements in a known order (ARA's set() lists them in any). */
function asSets(byTask: Record<string, Messages>): Record<string, Record<string, string[]>> {
  const out: Record<string, Record<string, string[]>> = {};
  for (const [name, m] of Object.entries(byTask)) {
    out[name] = Object.fromEntries(Object.entries(m).map(([field, values]) => [field, (values as Json[]).map((v) => JSON.stringify(v)).sort()]));
  }
  return out;
}

withAnsible('logbook\'s callback records each task\'s warnings, deprecations and exceptions; ARA\'s newest callback records the same; ARA 1.5.8 leaves them []', async (t) => {
  t.timeout(3 * RUN_TIMEOUT_MS);
  const lb = await server(t);
  const spool = tempDir(t, 'task-messages-spool-');

  const ours = await messagesByTask(lb.url, await record(t, 'logbook\'s callback', lb.url,
    { ...ansibleEnv(lb.url), LOGBOOK_CALLBACK_SPOOL_DIR: spool, LOGBOOK_API_TIMEOUT: '10' }));
  // which host's result came first is up to Ansible: the hosts' own lines are compared as sets
  const warned = ours.Warn?.warnings ?? [];
  t.is(warned[0], 'first warning', 'the first warning first');
  t.deepEqual([...warned].sort(), ['first warning', 'second warning from alpha', 'second warning from beta'], 'Warn: each warning once');
  const lateWarnings = ours['Warn late']?.warnings ?? [];
  t.deepEqual([...lateWarnings].sort(), ['late from alpha', 'late from beta'], 'Warn late (free strategy): both hosts\' warnings');
  const crashedDifferently = ours['Crash differently']?.exceptions ?? [];
  t.deepEqual([...crashedDifferently].sort(), [traceback('boom on alpha'), traceback('boom on beta')], 'Crash differently: each host\'s exception');
  t.deepEqual(ours, {
    Quiet: none,
    Warn: { ...none, warnings: warned },
    // each result's deprecations replace the task's (ARA keeps the last result's), without repeats
    Deprecate: { ...none, deprecations: [deprecation('the old way'), deprecation('the other old way')] },
    Crash: { warnings: ['about to crash'], deprecations: [], exceptions: [traceback('boom')] },
    'Crash differently': { ...none, exceptions: crashedDifferently },
    // Ansible gathers the items' warnings into the loop's result: in the items' order
    'Warn in a loop': { ...none, warnings: ['item one', 'every item', 'item two'] },
    'Warn late': { ...none, warnings: lateWarnings },
    After: none,
  }, 'logbook\'s callback');

  const newest = ARA_VERSIONS[ARA_NEWEST]!;
  const araNewest = await messagesByTask(lb.url, await record(t, `ARA ${ARA_NEWEST}'s callback`, lb.url, recordingEnv(newest, lb.url)));
  // Under the free strategy ARA's callback sends what it collected to whichever task ends next
  // (a host starting a task ends the one before): compared on the linear play only.
  const linear = (byTask: Record<string, Messages>) => Object.fromEntries(Object.entries(byTask).filter(([name]) => !FREE_PLAY_TASKS.includes(name)));
  t.deepEqual(asSets(linear(araNewest)), asSets(linear(ours)), `ARA ${ARA_NEWEST}'s callback records the same elements`);
  t.log(`ARA ${ARA_NEWEST}'s callback, free strategy: ${JSON.stringify(Object.fromEntries(FREE_PLAY_TASKS.map((name) => [name, araNewest[name]])))}`);

  const ara158 = await messagesByTask(lb.url, await record(t, 'ARA 1.5.8\'s callback', lb.url, {}));
  t.deepEqual(ara158, Object.fromEntries(Object.keys(ours).map((name) => [name, none])), 'ARA 1.5.8\'s callback sends none of them');
});
