// Scenario 3: what recording costs a real ansible-playbook run. A generated
// playbook (20 local hosts × 50 `debug` tasks; quick: 5 × 10), the shape of
// ARA's own benchmark playbook (controller-side tasks, so the callback's cost is
// not hidden behind module execution), run three ways with the stock ARA
// callback: without it, recording into logbook, recording into ARA's server.
// Reuses test/helpers/ansible.ts (isolated ANSIBLE_CONFIG, /usr/bin/python3,
// callback error detection from the Ansible log).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasAnsible, runPlaybook } from '../../test/helpers/ansible.js';
import type { Context } from '../lib/context.js';
import { startAra, startLogbook, type Running } from '../lib/servers.js';

export type Mode = 'none' | 'logbook' | 'ara';

export interface OverheadRun { mode: Mode; seconds: number; code: number; results: number | null; callbackErrors: string[] }

export interface OverheadResult {
  hosts: number;
  tasks: number;
  forks: number;
  runs: OverheadRun[];
  /** wall-time increase over the run without callback, in % */
  overheadPct: Partial<Record<Exclude<Mode, 'none'>, number>>;
}

function writePlaybook(dir: string, hosts: number, tasks: number): void {
  const inventory = ['[bench]', ...Array.from({ length: hosts }, (_, i) => `host-${String(i).padStart(3, '0')} ansible_connection=local ansible_python_interpreter=/usr/bin/python3`)];
  writeFileSync(join(dir, 'inventory.ini'), inventory.join('\n') + '\n');
  const lines = ['- name: Recording overhead benchmark', '  hosts: bench', '  gather_facts: false', '  tasks:'];
  for (let t = 0; t < tasks; t++) {
    lines.push(`    - name: Task ${t + 1}`, '      ansible.builtin.debug:', `        msg: "{{ inventory_hostname }} runs task ${t + 1}/${tasks}"`);
  }
  writeFileSync(join(dir, 'playbook.yml'), lines.join('\n') + '\n');
}

/** Results the newest playbook recorded on a server. */
async function recordedResults(url: string): Promise<number | null> {
  try {
    const pb = await (await fetch(`${url}/api/v1/playbooks?order=-id&limit=1`)).json() as { results: Array<{ id: number }> };
    const id = pb.results[0]?.id;
    if (id === undefined) return 0;
    const rs = await (await fetch(`${url}/api/v1/results?playbook=${id}&limit=1`)).json() as { count: number };
    return rs.count;
  } catch { return null; }
}

export async function overhead(ctx: Context): Promise<OverheadResult | null> {
  if (!hasAnsible()) {
    ctx.step('overhead: skipped: ansible-playbook or the ARA callback plugin is not installed (Debian: ansible-core python3-ara)');
    ctx.note('overhead: skipped (ansible-playbook or the ARA callback plugin not installed)');
    return null;
  }
  const [hosts, tasks, forks] = ctx.quick ? [5, 10, 5] : [20, 50, 5];
  const work = mkdtempSync(join(tmpdir(), 'logbook-overhead-'));
  const noCallbacks = join(work, 'no-callbacks');
  mkdirSync(noCallbacks);
  writePlaybook(work, hosts, tasks);
  const runs: OverheadRun[] = [];
  const once = async (mode: Mode, server: Running | null): Promise<void> => {
    ctx.step(`overhead: ansible-playbook, ${hosts} hosts × ${tasks} tasks, ${forks} forks, ${mode === 'none' ? 'no callback' : `ARA callback → ${mode}`}…`);
    const t0 = performance.now();
    const r = await runPlaybook(server?.url ?? 'http://127.0.0.1:9', {
      playbook: join(work, 'playbook.yml'), inventory: join(work, 'inventory.ini'), cwd: work, timeoutMs: 900_000,
      env: { ANSIBLE_FORKS: String(forks), ...(server ? {} : { ANSIBLE_CALLBACK_PLUGINS: noCallbacks }) },
    });
    const seconds = (performance.now() - t0) / 1000;
    const results = server ? await recordedResults(server.url) : null;
    runs.push({ mode, seconds, code: r.code, results, callbackErrors: r.callbackErrors.slice(0, 5) });
    ctx.step(`overhead: ${mode}: ${seconds.toFixed(1)} s, exit ${r.code}` + (server ? `, ${results} results recorded, ${r.callbackErrors.length} callback errors` : ''));
    if (r.code !== 0) ctx.note(`overhead: ansible-playbook (${mode}) exited with ${r.code}`);
    if (r.callbackErrors.length) ctx.note(`overhead: ${mode}: ${r.callbackErrors.length} callback errors, first: ${r.callbackErrors[0]!.slice(0, 200)}`);
    if (server && results !== hosts * tasks) ctx.note(`overhead: ${mode} recorded ${results} results, expected ${hosts * tasks}`);
  };
  try {
    await once('none', null);
    const lb = await startLogbook({ env: { LOGBOOK_SHARDS: String(ctx.shards) } });
    try { await once('logbook', lb); } finally { await lb.stop(); }
    if (ctx.araSkipped) ctx.step(`overhead: ARA run skipped: ${ctx.araSkipped}`);
    else {
      const ara = await startAra();
      try { await once('ara', ara); } finally { await ara.stop(); }
    }
  } finally { rmSync(work, { recursive: true, force: true }); }
  const base = runs.find((r) => r.mode === 'none')!.seconds;
  const overheadPct: OverheadResult['overheadPct'] = {};
  for (const r of runs) if (r.mode !== 'none') overheadPct[r.mode] = (100 * (r.seconds - base)) / base;
  return { hosts, tasks, forks, runs, overheadPct };
}
