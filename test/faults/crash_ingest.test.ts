// Crash test for batch ingest (SPEC §13 "Atomic and durable"): writers stream
// batches into a real logbook, it is SIGKILLed at a seeded random moment and
// restarted on the same data directory. Every acknowledged batch must be there
// whole, no batch may be there in part, the batch that was in flight when the
// process died is either whole or absent, and re-sending it with its seq then
// applies it exactly once. Host counters must equal a recount.
//
// Each batch opens its own task (uuid w<writer>-s<seq>) with RESULTS results
// (a large batch is applied a slice per turn: the kill may land between two),
// so which batches landed, and whether whole, reads straight off the task list.
// Rerun a failure with CRASH_SEED=<seed>.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { listAll } from '../helpers/dump.js';
import { Rng, seedFrom } from '../helpers/random.js';
import { randomUuid, type Json } from '../helpers/fixtures.js';

const CYCLES = 3;
const WRITERS = 6;
/** more than a shard applies per turn (LIMITS.ingestSliceEvents): a kill can land between two slices of a batch */
const RESULTS = 200;
const HOSTS = ['h0', 'h1', 'h2', 'h3'];
const ENV = { LOGBOOK_SHARDS: '3', LOGBOOK_SNAPSHOT_EVERY: '50', LOGBOOK_SNAPSHOT_INTERVAL: '1' };

interface Writer { uuid: string; play: string; seq: number; acked: Set<number>; inFlight: number | null; playbook: number | null }

function batch(w: number, writer: Writer, seq: number): Json {
  const task = `w${w}-s${seq}`;
  const events: Json[] = [];
  if (seq === 1) {
    events.push({ kind: 'file', path: '/site.yml', content: `- hosts: all # writer ${w}\n` });
    events.push({ kind: 'play', uuid: writer.play, name: 'play', status: 'running' });
  }
  events.push({ kind: 'task', uuid: task, play: writer.play, file: '/site.yml', name: task, action: 'debug', lineno: seq, handler: false });
  for (let i = 0; i < RESULTS; i++) {
    events.push({ kind: 'result', task, host: HOSTS[i % HOSTS.length], status: 'ok', content: { w, seq, i, pad: 'x'.repeat(200) } });
  }
  events.push({ kind: 'task', uuid: task, status: 'completed' });
  const playbook = seq === 1 ? { uuid: writer.uuid, path: `/w${w}/site.yml`, runner_version: '2.16.0' } : { uuid: writer.uuid };
  return { playbook, seq, events };
}

/** Send batches until the server goes away; a batch is acknowledged only by a 200. */
async function write(url: string, w: number, writer: Writer, stop: { dead: boolean }): Promise<void> {
  while (!stop.dead) {
    const seq = writer.inFlight ?? writer.seq + 1;
    writer.inFlight = seq;
    let r;
    try {
      r = await api(url, 'POST', '/api/v1/ingest', batch(w, writer, seq));
    } catch {
      return; // connection refused or reset: the server died with this batch in flight
    }
    if (r.status === 503) continue;
    if (r.status !== 200) throw new Error(`writer ${w} seq ${seq} → ${r.status} ${r.text}`);
    writer.acked.add(seq);
    writer.playbook = r.body.playbook;
    writer.seq = seq;
    writer.inFlight = null;
  }
}

test('SIGKILL during batch ingest: acknowledged batches whole, none in part, the one in flight exactly once after a retry', async (t) => {
  const seed = seedFrom('CRASH_SEED');
  t.log(`seed ${seed} (replay with CRASH_SEED=${seed})`);
  const rng = new Rng(seed);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-crash-ingest-'));
  const writers: Writer[] = Array.from({ length: WRITERS }, () => ({
    uuid: `run-${randomUuid()}`, play: randomUuid(), seq: 0, acked: new Set(), inFlight: null, playbook: null,
  }));
  let lb: Logbook | null = null;
  try {
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      lb = await startLogbook({ dataDir, env: ENV });
      const stop = { dead: false };
      const running = writers.map((writer, w) => write(lb!.url, w, writer, stop));
      await new Promise((r) => setTimeout(r, rng.int(300, 1500)));
      stop.dead = true;
      lb.child.kill('SIGKILL');
      await Promise.all(running);
      await lb.stop();
      lb = null;
    }
    lb = await startLogbook({ dataDir, env: ENV });
    // finish every batch that was in flight: it applies now or is answered as a duplicate, never twice
    for (const [w, writer] of writers.entries()) {
      if (writer.inFlight === null) continue;
      const r = await api(lb.url, 'POST', '/api/v1/ingest', batch(w, writer, writer.inFlight));
      t.is(r.status, 200, r.text);
      writer.acked.add(writer.inFlight);
      writer.playbook = r.body.playbook;
      writer.seq = writer.inFlight;
      writer.inFlight = null;
    }
    const tasks = await listAll(lb.url, 'tasks');
    const hosts = await listAll(lb.url, 'hosts');
    let batches = 0;
    for (const [w, writer] of writers.entries()) {
      if (writer.playbook === null) continue;
      const mine = tasks.filter((task) => task.playbook === writer.playbook);
      const seqs = mine.map((task) => Number(task.name.split('-s')[1])).sort((a, b) => a - b);
      t.deepEqual(seqs, [...writer.acked].sort((a, b) => a - b), `writer ${w}: exactly the acknowledged batches, once each`);
      for (const task of mine) {
        t.is(task.items.results, RESULTS, `writer ${w} ${task.name}: whole`);
        t.is(task.status, 'completed', `writer ${w} ${task.name}: its last event applied`);
      }
      for (const host of hosts.filter((h) => h.playbook === writer.playbook)) {
        t.is(host.ok, (RESULTS / HOSTS.length) * seqs.length, `writer ${w} ${host.name}: counters equal a recount`);
      }
      batches += seqs.length;
    }
    t.true(batches > 0, 'some batches were written');
    t.log(`${batches} batches of ${RESULTS} results across ${CYCLES} crashes`);
  } finally {
    if (lb) await lb.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
