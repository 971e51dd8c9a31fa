// Batch ingest's exactly-once rule for a repeated seq (docs/api.md#batch-ingest): the last applied
// seq with the same bytes is a duplicate; with other bytes it is refused (409) and changes nothing;
// an older seq is a duplicate whatever its body. The digest that tells them apart is kept with the
// seq: it holds after a restart from the journal alone (kill -9) and from a snapshot.
import test from 'ava';
import { gzipSync } from 'node:zlib';
import { rmSync } from 'node:fs';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { list, randomUuid, uniq, type Json } from '../helpers/fixtures.js';

const PATH = '/work/site.yml';

/** Three batches of one stream, as the exact texts a client sends (a spool re-sends these bytes). */
function stream(uuid: string): string[] {
  const play = randomUuid();
  const task = `${uuid}-t1`;
  const result = (host: string) => ({ kind: 'result', task, host, status: 'ok', started: '2026-01-01T00:00:02Z', ended: '2026-01-01T00:00:03Z' });
  return [
    JSON.stringify({
      playbook: { uuid, path: PATH, runner_version: '2.16.0', status: 'running', started: '2026-01-01T00:00:00Z' }, seq: 1,
      events: [
        { kind: 'file', path: PATH, content: '- hosts: all\n' },
        { kind: 'play', uuid: play, name: 'p', status: 'running', started: '2026-01-01T00:00:00Z' },
        { kind: 'task', uuid: task, play, file: PATH, name: 't', action: 'debug', lineno: 1, handler: false, tags: [], status: 'running', started: '2026-01-01T00:00:01Z' },
        result('web-01'),
      ],
    }),
    JSON.stringify({ playbook: { uuid }, seq: 2, events: [result('web-02')] }),
    JSON.stringify({ playbook: { uuid }, seq: 3, events: [result('web-03')] }),
  ];
}

const ingest = (server: Logbook, text: string, headers: Record<string, string> = {}) =>
  api(server.url, 'POST', '/api/v1/ingest', text, headers);

async function ingestGzipped(server: Logbook, text: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${server.url}/api/v1/ingest`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(text),
  });
  return { status: res.status, body: await res.json() };
}

/** Every result of the playbook, as host names (what a batch that changed something would add to). */
async function resultHosts(server: Logbook, playbook: number): Promise<string[]> {
  const hosts = new Map<number, string>((await list(server.url, 'hosts', { playbook, limit: 1000 })).results.map((h: Json) => [h.id, h.name]));
  return (await list(server.url, 'results', { playbook, limit: 1000 })).results.map((r: Json) => hosts.get(r.host)).sort();
}

/** What a repeated seq gets, checked against one server (before and after a restart). */
async function checkRepeats(t: import('ava').ExecutionContext, server: Logbook, batches: string[], playbook: number, when: string): Promise<void> {
  const before = await resultHosts(server, playbook);
  t.deepEqual(before, ['web-01', 'web-02'], when);
  // the last applied seq, the same bytes (plain or gzipped: the digest is of the bytes after gunzip) → duplicate
  const same = await ingest(server, batches[1]!);
  t.is(same.status, 200, `${when}: ${same.text}`);
  t.deepEqual(same.body, { playbook, seq: 2, applied: 0, duplicate: true }, when);
  const gzipped = await ingestGzipped(server, batches[1]!);
  t.deepEqual(gzipped.body, { playbook, seq: 2, applied: 0, duplicate: true }, `${when}: gzipped`);
  // the last applied seq, other bytes → 409, nothing changed
  const other = JSON.stringify({ playbook: { uuid: JSON.parse(batches[1]!).playbook.uuid }, seq: 2,
    events: [{ kind: 'result', task: JSON.parse(batches[2]!).events[0].task, host: 'web-99', status: 'failed' }] });
  const conflict = await ingest(server, other);
  t.is(conflict.status, 409, `${when}: ${conflict.text}`);
  t.deepEqual(conflict.body, { detail: 'Batch 2 was already applied with other content.' }, when);
  // the same JSON spaced otherwise is other bytes: also refused (docs/api.md: the same body is the same bytes)
  const spaced = await ingest(server, JSON.stringify(JSON.parse(batches[1]!), null, 1));
  t.is(spaced.status, 409, `${when}: spaced: ${spaced.text}`);
  // an older seq with other bytes stays a duplicate (only the last batch's digest is kept)
  const older = await ingest(server, JSON.stringify({ playbook: { uuid: JSON.parse(batches[1]!).playbook.uuid }, seq: 1, events: [] }));
  t.is(older.status, 200, `${when}: ${older.text}`);
  t.deepEqual(older.body, { playbook, seq: 1, applied: 0, duplicate: true }, when);
  t.deepEqual(await resultHosts(server, playbook), before, `${when}: the refused and duplicate batches changed nothing`);
  t.is((await list(server.url, 'hosts', { playbook, name: 'web-99' })).count, 0, `${when}: no host from the refused batch`);
}

for (const [how, env, signal] of [
  ['the journal alone (kill -9)', { LOGBOOK_SNAPSHOT_EVERY: '100000' }, 'SIGKILL'],
  ['a snapshot', { LOGBOOK_SNAPSHOT_EVERY: '1' }, 'SIGTERM'],
] as const) {
  test(`the last seq with another body is 409, the same body and older seqs are duplicates; it holds after a restart from ${how}`, async (t) => {
    // a generous start bound: the machine running the suite may be busy (a bound for a hang, not a timing)
    const options = { env: { LOGBOOK_SHARDS: '2', ...env }, keepData: true, startTimeoutMs: 120_000 };
    let server = await startLogbook(options);
    const dataDir = server.dataDir;
    try {
      const batches = stream(uniq('seq'));
      const first = await ingest(server, batches[0]!);
      t.is(first.status, 200, first.text);
      const playbook = first.body.playbook as number;
      const second = await ingest(server, batches[1]!);
      t.like(first.body, { seq: 1, applied: 4, rejected: [] }, first.text);
      t.like(second.body, { seq: 2, applied: 1, duplicate: false }, second.text);
      await checkRepeats(t, server, batches, playbook, 'running');
      await server.stop(signal);
      server = await startLogbook({ ...options, dataDir });
      await checkRepeats(t, server, batches, playbook, 'after a restart');
      // a refused batch did not use up its seq: the stream goes on with seq 3
      const third = await ingest(server, batches[2]!);
      t.like(third.body, { seq: 3, applied: 1, duplicate: false });
      t.deepEqual(await resultHosts(server, playbook), ['web-01', 'web-02', 'web-03']);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
