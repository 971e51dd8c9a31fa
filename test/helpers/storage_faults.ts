// What the storage fault tests (faults_fsize, faults_disk_full) share: a run to
// write results into, content LZ4 cannot shrink, writes that say how the server
// ended when it stops answering, and the read-back of every acknowledged result.
import { api, type Logbook } from './server.js';

export interface Run { pb: number; play: number; task: number; host: number }

export async function must(lb: Logbook, method: string, path: string, body?: unknown): Promise<any> {
  const res = await api(lb.url, method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${res.text}`);
  return res.body;
}

/** A playbook with a play, a file, a task and a host: what a result needs. */
export async function createRun(lb: Logbook, name: string): Promise<Run> {
  const pb = (await must(lb, 'POST', '/api/v1/playbooks', { path: `/srv/${name}.yml`, runner_version: '2.16.1' })).id;
  const play = (await must(lb, 'POST', '/api/v1/plays', { playbook: pb, uuid: '00000000-0000-4000-8000-000000000001' })).id;
  const file = (await must(lb, 'POST', '/api/v1/files', { playbook: pb, path: `/srv/${name}.yml`, content: '- hosts: all\n' })).id;
  const task = (await must(lb, 'POST', '/api/v1/tasks', { playbook: pb, play, file, action: 'debug', lineno: 1, handler: false })).id;
  const host = (await must(lb, 'POST', '/api/v1/hosts', { playbook: pb, name: 'h1' })).id;
  return { pb, play, task, host };
}

/** Content that LZ4 does not shrink much, `n` × ~7 chars. */
export function noise(seed: number, n: number): string {
  let x = seed | 0;
  return Array.from({ length: n }, () => { x = (Math.imul(x, 1103515245) + 12345) | 0; return (x >>> 0).toString(36); }).join('');
}

/**
 * A write. If the server stops answering, say how it ended (a signal: it
 * aborted, as lmdb's prebuilt binary made it do; see
 * test/store/lmdb_write_errors.test.ts) and what it logged last.
 */
export async function postOrExplain(t: { log(...v: unknown[]): void }, lb: Logbook, path: string, body: unknown) {
  try {
    return await api(lb.url, 'POST', path, body);
  } catch (err) {
    await new Promise((r) => setTimeout(r, 500));
    t.log(`the server stopped answering: exit code ${lb.child.exitCode}, signal ${lb.child.signalCode}; its last output:\n${lb.output().slice(-4000)}`);
    throw err;
  }
}

/**
 * Every acknowledged result reads back with its marker; returns those that do
 * not. `waitForShard`: a 503 (a shard being restarted by the stall watchdog) is
 * asked again for up to 10 s: reads must work once it is back.
 */
export async function missingResults(lb: Logbook, acked: Map<number, string>, waitForShard = false): Promise<string[]> {
  const out: string[] = [];
  for (const [id, marker] of acked) {
    let res = await api(lb.url, 'GET', `/api/v1/results/${id}`);
    for (let i = 0; waitForShard && i < 100 && res.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 100));
      res = await api(lb.url, 'GET', `/api/v1/results/${id}`);
    }
    if (res.status !== 200 || res.body.content.marker !== marker) out.push(`result ${id}: ${res.status} ${res.text.slice(0, 100)}`);
  }
  return out;
}
