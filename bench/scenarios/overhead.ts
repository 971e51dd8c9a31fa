// Scenario 3: what recording costs a real ansible-playbook run. Generated
// playbooks, the shape of ARA's own benchmark playbook (controller-side
// `debug` tasks on local hosts, so a callback's cost is not hidden behind
// module execution): 20 hosts × 50 tasks (quick: 5 × 10), and the same with
// gather_facts and ~30 KB of facts per host. Each shape runs four ways —
// without a callback, the stock ARA callback into logbook and into ARA's
// server, logbook's own callback (src/ansible, batch ingest) into logbook —
// interleaved, three times (--quick too), and the median wall time counts.
// Besides the ratio of medians, each mode's overhead is also given as the
// median of its per-run ratios to the mean of the no-callback runs just
// before and just after it (paired: the machine's slow and fast stretches,
// and a steady drift, hit both sides of a pair).
// Each run's CPU is measured too, to show where an overhead goes: the
// ansible-playbook process tree (this process's reaped-children time,
// /proc/self/stat cutime + cstime, which includes Ansible's reaped workers)
// and the recording server's CPU over the run. The run is CPU-bound, so CPU
// added is wall time added; on a shared VM CPU drifts with the neighbours as
// wall time does (a slowed vCPU is charged more for the same work).
// OVERHEAD_RUNS=9 repeats more, OVERHEAD_MODES=none,callback and
// OVERHEAD_SHAPES=plain|facts pick what runs, to settle a few-% question.
// Reuses test/helpers/ansible.ts (isolated ANSIBLE_CONFIG, /usr/bin/python3,
// callback error detection from the Ansible log).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasAnsible, runPlaybook } from '../../test/helpers/ansible.js';
import type { Context } from '../lib/context.js';
import { reapedChildrenCpuSecondsOf, startAra, startLogbook, type Running } from '../lib/servers.js';

export type Mode = 'none' | 'logbook' | 'ara' | 'callback';

/** How each mode is shown in progress lines and the report. */
export const MODE_LABEL: Record<Mode, string> = {
  none: 'no callback',
  logbook: 'stock ARA callback → logbook',
  ara: 'stock ARA callback → ARA',
  callback: 'logbook\'s callback → logbook',
};

export interface OverheadRun {
  mode: Mode; rep: number; seconds: number; code: number; results: number | null; callbackErrors: string[];
  /** user + system CPU of ansible-playbook and its workers */
  ansibleCpuSeconds?: number;
  /** CPU the recording server (logbook; ARA's gunicorn) spent during the run; logbook's idle cost for `none` */
  serverCpuSeconds?: number;
}

export interface OverheadShape {
  name: string;
  hosts: number;
  tasks: number;
  forks: number;
  gatherFacts: boolean;
  /** JSON size of one host's facts as gathered (0 without gather_facts) */
  factsBytes: number;
  runs: OverheadRun[];
  /** median wall time per mode, seconds */
  medianSeconds: Partial<Record<Mode, number>>;
  /** median wall-time increase over the median run without callback, in % */
  overheadPct: Partial<Record<Exclude<Mode, 'none'>, number>>;
  /** median over repetitions of (this mode's run / the mean of the runs without callback before and after it − 1), in % */
  pairedOverheadPct?: Partial<Record<Exclude<Mode, 'none'>, number>>;
  /** median CPU per mode (ansible tree + server), seconds */
  medianCpuSeconds?: Partial<Record<Mode, number>>;
  /** median CPU increase over the median run without callback, in % */
  cpuOverheadPct?: Partial<Record<Exclude<Mode, 'none'>, number>>;
}

export interface OverheadResult {
  repetitions: number;
  shapes: OverheadShape[];
}

const CALLBACK_DIR = join(process.cwd(), 'src', 'ansible', 'callback');
const ACTION_DIR = join(process.cwd(), 'src', 'ansible', 'action');

/** ~18 KB of local facts (ansible_local.bench) that bring a host's facts to ~30 KB. */
function writeLocalFacts(dir: string): string {
  const factDir = join(dir, 'facts.d');
  mkdirSync(factDir);
  const fact: Record<string, string> = {};
  for (let i = 0; i < 180; i++) fact[`key_${String(i).padStart(3, '0')}`] = `value ${i} `.padEnd(90, 'x');
  writeFileSync(join(factDir, 'bench.fact'), JSON.stringify(fact));
  return factDir;
}

function writePlaybook(dir: string, hosts: number, tasks: number, factDir: string | null): void {
  const inventory = ['[bench]', ...Array.from({ length: hosts }, (_, i) => `host-${String(i).padStart(3, '0')} ansible_connection=local ansible_python_interpreter=/usr/bin/python3`)];
  writeFileSync(join(dir, 'inventory.ini'), inventory.join('\n') + '\n');
  const lines = ['- name: Recording overhead benchmark', '  hosts: bench', `  gather_facts: ${factDir ? 'true' : 'false'}`];
  if (factDir) lines.push(`  fact_path: ${factDir}`);
  lines.push('  tasks:');
  for (let t = 0; t < tasks; t++) {
    lines.push(`    - name: Task ${t + 1}`, '      ansible.builtin.debug:', `        msg: "{{ inventory_hostname }} runs task ${t + 1}/${tasks}"`);
  }
  writeFileSync(join(dir, 'playbook.yml'), lines.join('\n') + '\n');
}

/** Results and one host's facts size of the newest playbook recorded on a server. */
async function recorded(url: string): Promise<{ results: number | null; factsBytes: number }> {
  try {
    const pb = await (await fetch(`${url}/api/v1/playbooks?order=-id&limit=1`)).json() as { results: Array<{ id: number }> };
    const id = pb.results[0]?.id;
    if (id === undefined) return { results: 0, factsBytes: 0 };
    const rs = await (await fetch(`${url}/api/v1/results?playbook=${id}&limit=1`)).json() as { count: number };
    const hs = await (await fetch(`${url}/api/v1/hosts?playbook=${id}&limit=1`)).json() as { results: Array<{ id: number }> };
    let factsBytes = 0;
    if (hs.results[0]) {
      const h = await (await fetch(`${url}/api/v1/hosts/${hs.results[0].id}`)).json() as { facts: unknown };
      factsBytes = JSON.stringify(h.facts ?? {}).length;
    }
    return { results: rs.count, factsBytes };
  } catch { return { results: null, factsBytes: 0 }; }
}

const fmtPct = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(1)} %`;
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export async function overhead(ctx: Context): Promise<OverheadResult | null> {
  if (!hasAnsible()) {
    ctx.step('overhead: skipped: ansible-playbook or the ARA callback plugin is not installed (Debian: ansible-core python3-ara)');
    ctx.note('overhead: skipped (ansible-playbook or the ARA callback plugin not installed)');
    return null;
  }
  const [hosts, tasks, forks] = ctx.quick ? [5, 10, 5] : [20, 50, 5];
  const repetitions = Math.max(1, Number(process.env.OVERHEAD_RUNS ?? 3) || 3);
  const pickModes = process.env.OVERHEAD_MODES?.split(',');
  const pickShapes = process.env.OVERHEAD_SHAPES?.split(',');
  const work = mkdtempSync(join(tmpdir(), 'logbook-overhead-'));
  const noCallbacks = join(work, 'no-callbacks');
  mkdirSync(noCallbacks);
  const factDir = writeLocalFacts(work);
  const shapes: OverheadShape[] = [];
  let lb: Running | null = null;
  let ara: Running | null = null;
  try {
    lb = await startLogbook({ env: { LOGBOOK_SHARDS: String(ctx.shards) } });
    if (ctx.araSkipped) ctx.step(`overhead: ARA runs skipped: ${ctx.araSkipped}`);
    else ara = await startAra();
    const modes: Mode[] = (['none', 'callback', 'logbook', ...(ara ? ['ara' as const] : [])] as Mode[])
      .filter((m) => m === 'none' || !pickModes || pickModes.includes(m));
    for (const facts of [false, true]) {
      if (pickShapes && !pickShapes.includes(facts ? 'facts' : 'plain')) continue;
      const dir = join(work, facts ? 'facts' : 'plain');
      mkdirSync(dir);
      writePlaybook(dir, hosts, tasks, facts ? factDir : null);
      const shape: OverheadShape = {
        name: facts ? `${hosts} hosts × ${tasks} tasks, gather_facts (~30 KB facts)` : `${hosts} hosts × ${tasks} tasks`,
        hosts, tasks, forks, gatherFacts: facts, factsBytes: 0, runs: [], medianSeconds: {}, overheadPct: {},
      };
      const expected = hosts * (tasks + (facts ? 1 : 0));
      for (let rep = 1; rep <= repetitions; rep++) {
        for (const mode of modes) {
          const server = mode === 'none' ? null : mode === 'ara' ? ara : lb;
          const env: Record<string, string> = { ANSIBLE_FORKS: String(forks) };
          if (mode === 'none') env.ANSIBLE_CALLBACK_PLUGINS = noCallbacks;
          if (mode === 'callback') {
            Object.assign(env, {
              ANSIBLE_CALLBACK_PLUGINS: CALLBACK_DIR, ANSIBLE_ACTION_PLUGINS: ACTION_DIR,
              LOGBOOK_API_SERVER: server!.url, LOGBOOK_CALLBACK_SPOOL_DIR: join(work, 'spool'),
            });
          }
          const cpuServer = mode === 'none' ? lb : server;
          const server0 = cpuServer!.cpuSeconds();
          const children0 = reapedChildrenCpuSecondsOf('self');
          const t0 = performance.now();
          const r = await runPlaybook(server?.url ?? 'http://127.0.0.1:9', {
            playbook: join(dir, 'playbook.yml'), inventory: join(dir, 'inventory.ini'), cwd: dir, timeoutMs: 900_000, env,
          });
          const seconds = (performance.now() - t0) / 1000;
          const ansibleCpuSeconds = reapedChildrenCpuSecondsOf('self') - children0;
          const serverCpuSeconds = cpuServer!.cpuSeconds() - server0;
          const errors = [...r.callbackErrors, ...`${r.stdout}\n${r.stderr}`.split('\n').filter((l) => /^\[WARNING\]: logbook/.test(l))];
          const rec = server ? await recorded(server.url) : { results: null, factsBytes: 0 };
          if (facts && rec.factsBytes) shape.factsBytes = Math.max(shape.factsBytes, rec.factsBytes);
          shape.runs.push({ mode, rep, seconds, code: r.code, results: rec.results, callbackErrors: errors.slice(0, 5), ansibleCpuSeconds, serverCpuSeconds });
          ctx.step(`overhead: ${shape.name}, ${MODE_LABEL[mode]} #${rep}: ${seconds.toFixed(1)} s, CPU ${ansibleCpuSeconds.toFixed(1)} + ${serverCpuSeconds.toFixed(2)} s (ansible + server), exit ${r.code}`
            + (server ? `, ${rec.results} results recorded, ${errors.length} callback errors` : ''));
          if (r.code !== 0) ctx.note(`overhead: ansible-playbook (${MODE_LABEL[mode]}) exited with ${r.code}`);
          if (errors.length) ctx.note(`overhead: ${MODE_LABEL[mode]}: ${errors.length} callback errors, first: ${errors[0]!.slice(0, 200)}`);
          if (server && rec.results !== expected) ctx.note(`overhead: ${MODE_LABEL[mode]} recorded ${rec.results} results, expected ${expected}`);
        }
      }
      for (const mode of modes) shape.medianSeconds[mode] = median(shape.runs.filter((r) => r.mode === mode).map((r) => r.seconds));
      const base = shape.medianSeconds.none!;
      for (const mode of modes) if (mode !== 'none') shape.overheadPct[mode] = (100 * (shape.medianSeconds[mode]! - base)) / base;
      const cpu = (r: OverheadRun): number => (r.ansibleCpuSeconds ?? 0) + (r.serverCpuSeconds ?? 0);
      shape.medianCpuSeconds = {};
      shape.cpuOverheadPct = {};
      for (const mode of modes) shape.medianCpuSeconds[mode] = median(shape.runs.filter((r) => r.mode === mode).map(cpu));
      for (const mode of modes) {
        if (mode !== 'none') shape.cpuOverheadPct[mode] = (100 * (shape.medianCpuSeconds[mode]! - shape.medianCpuSeconds.none!)) / shape.medianCpuSeconds.none!;
      }
      shape.pairedOverheadPct = {};
      for (const mode of modes) {
        if (mode === 'none') continue;
        const ratios = shape.runs.filter((r) => r.mode === mode).map((r) => {
          // Against the no-callback runs on either side of it (this repetition's and the
          // next one's): a machine slowing or speeding up steadily cancels out.
          const around = shape.runs.filter((n) => n.mode === 'none' && (n.rep === r.rep || n.rep === r.rep + 1));
          const none = around.reduce((sum, n) => sum + n.seconds, 0) / around.length;
          return (100 * (r.seconds - none)) / none;
        });
        shape.pairedOverheadPct[mode] = median(ratios);
      }
      ctx.step(`overhead: ${shape.name}: ` + modes.filter((m) => m !== 'none').map((m) =>
        `${MODE_LABEL[m]} ${fmtPct(shape.overheadPct[m as Exclude<Mode, 'none'>]!)} (ratio of medians), ${fmtPct(shape.pairedOverheadPct![m as Exclude<Mode, 'none'>]!)} (median of paired runs), CPU ${fmtPct(shape.cpuOverheadPct![m as Exclude<Mode, 'none'>]!)}`).join('; '));
      shapes.push(shape);
    }
  } finally {
    await Promise.all([lb?.stop(), ara?.stop()]);
    rmSync(work, { recursive: true, force: true });
  }
  return { repetitions, shapes };
}
