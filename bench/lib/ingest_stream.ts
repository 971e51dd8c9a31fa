// A running playbook to ingest into, for the live-stream benchmarks
// (bench/stream.ts, bench/stream_memory.ts): batch ingest calls
// (docs/api.md#batch-ingest) and their command-line numbers.
import { randomUUID } from 'node:crypto';

/** `--name N` on the command line, else `dflt`. */
export function benchArg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

/** POST /api/v1/ingest; throws with the answer unless it is 200. */
export async function postIngest(url: string, body: unknown): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const r = await fetch(`${url}/api/v1/ingest`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const j = await r.json();
  if (r.status !== 200) throw new Error(`ingest ${r.status}: ${JSON.stringify(j)}`);
  return j;
}

/** A playbook's batch stream, its one task, and what has been sent so far. */
export interface IngestStream { id: number; uuid: string; seq: number; task: string; results: number }

/** A running playbook with a file, a play, one task and `hosts` hosts named web-0…, in its first batch. */
export async function openIngestStream(url: string, hosts: number): Promise<IngestStream> {
  const uuid = randomUUID();
  const play = randomUUID();
  const task = randomUUID();
  const r = await postIngest(url, {
    playbook: { uuid, path: '/bench/site.yml', runner_version: '2.16.0', status: 'running' }, seq: 1,
    events: [
      { kind: 'file', path: '/bench/site.yml', content: '- hosts: all\n' },
      { kind: 'play', uuid: play, name: 'bench', status: 'running' },
      { kind: 'task', uuid: task, play, file: '/bench/site.yml', name: 'ping', action: 'ping', lineno: 1, handler: false, status: 'running' },
      ...Array.from({ length: hosts }, (_, i) => ({ kind: 'host', name: `web-${i}` })),
    ],
  });
  return { id: r.playbook, uuid, seq: 1, task, results: 0 };
}
