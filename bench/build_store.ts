// Writes a logbook data directory in-process, through the real Shard +
// LmdbShardStore (the server's code path minus HTTP), far faster than over
// HTTP: playbooks of H hosts × T tasks, one result per host and task with a
// ~1.6 KB looped-task content, ~30 KB of facts per host. Playbook p lives in
// shard p mod N, ids are allocated globally per type, as the front does, so a
// real server started with LOGBOOK_SHARDS=N serves the directory unchanged.
//
// Like a server with LOGBOOK_SNAPSHOT_EVERY, each shard snapshots after every
// `snapshotEvery` writes and there is no snapshot at the end: a restart
// replays a journal tail, as it would after a real shutdown.
//
// Run with --expose-gc (heap is measured after a full GC at each checkpoint):
//   node --expose-gc dist/bench/build_store.js '<BuildSpec as JSON>'
// Prints JSON lines: {"checkpoint":…} as it goes, then {"done":…}.
import { open } from 'lmdb';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Shard } from '../src/shard/shard.js';
import { LmdbShardStore } from '../src/store/shard_store.js';
import { blobKind, type BlobKey } from '../src/shard/blobs.js';
import { FORMAT_VERSION, FrontStore } from '../src/store/front_store.js';
import { recoveredLine, rssAnonBytesOf, startLogbook } from './lib/servers.js';
import type { ShardToFront, WriteCommand, WriteReply } from '../src/shard/protocol.js';

export interface BuildSpec {
  dir: string;
  playbooks: number;
  hosts: number;
  tasks: number;
  shards: number;
  snapshotEvery: number;
  /** memory is sampled this many times along the way */
  checkpoints: number;
  /** at this many of the checkpoints (evenly spread, not the last), also start
   * the real server on the directory: restart time and RSS vs stored results */
  serverSamples: number;
  /** result content (JSON text); `@@` is replaced by a per-result tag */
  content: string;
  /** host facts (JSON text) */
  facts: string;
}

export interface ServerSample { readyMs: number; recoveryMs: number | null; rssBytes: number; rssAnonBytes: number }
export interface Checkpoint { results: number; heapBytes: number; rssBytes: number; seconds: number; server?: ServerSample }

export interface BuildResult {
  results: number;
  playbooks: number;
  hosts: number;
  seconds: number;
  /** heap growth per stored result, after full GCs (state only: blobs live in LMDB) */
  heapBytesPerResult: number;
  checkpoints: Checkpoint[];
  /** file sizes of the data directory */
  diskBytes: number;
  /** bytes the LMDB tables' pages take (all shards), by table */
  tableBytes: Record<string, number>;
  /** stored (compressed) bytes of the result contents and of the host facts */
  blobBytes: { content: number; facts: number };
}

const gc = (globalThis as { gc?: () => void }).gc;

function emit(obj: unknown): void { process.stdout.write(JSON.stringify(obj) + '\n'); }

async function build(spec: BuildSpec): Promise<BuildResult> {
  if (!gc) throw new Error('run with node --expose-gc');
  const front = new FrontStore(spec.dir);
  await front.checkFormat(spec.shards, spec.dir);
  await front.close();
  const stores = Array.from({ length: spec.shards }, (_, k) => new LmdbShardStore(spec.dir, k, 'none'));
  // replies leave once a write is committed: counting them tells when nothing
  // is in flight (lmdb-js holds queued values until then, which would count as heap)
  let issued = 0, answered = 0;
  let refused: string | null = null;
  const onReply = (r: ShardToFront) => { answered++; if ('status' in r && r.status >= 300) refused ??= `${r.status} ${String((r as { body?: unknown }).body)}`; };
  const shards = stores.map((store) => new Shard({ store, snapshotEvery: Infinity, onReply }));
  const settled = async () => {
    while (answered < issued) await new Promise((r) => setTimeout(r, 5));
    if (refused) throw new Error(`build: a write was refused: ${refused}`);
  };
  const sinceSnapshot = new Array<number>(spec.shards).fill(0);
  const ids = { playbook: 0, play: 0, task: 0, host: 0, result: 0, file: 0 };
  let rid = 0;
  const write = (k: number, cmd: Pick<WriteCommand, 'type' | 'set'>): number => {
    const id = ++ids[cmd.type as keyof typeof ids];
    const reply = shards[k]!.write(++rid, { op: 'create', id, put: false, errors: null, elsewhere: null, minimal: true, ...cmd }) as WriteReply | null;
    if (reply) { if (reply.status >= 300) throw new Error(`build: ${cmd.type} refused: ${reply.body}`); } else issued++;
    sinceSnapshot[k]!++;
    return id;
  };
  const [before, after] = spec.content.split('@@') as [string, string | undefined];
  const total = spec.playbooks * spec.hosts * spec.tasks;
  const every = Math.max(1, Math.ceil(spec.playbooks / spec.checkpoints));
  const checkpoints: Checkpoint[] = [];
  const t0 = performance.now();
  let paused = 0; // ms spent in server samples, not building
  const sample = (): Checkpoint => {
    gc!();
    gc!();
    const m = process.memoryUsage();
    return { results: ids.result, heapBytes: m.heapUsed, rssBytes: m.rss, seconds: (performance.now() - t0 - paused) / 1000 };
  };
  checkpoints.push(sample());
  emit({ checkpoint: checkpoints[0], total });
  let now = Date.now() * 1000 - total * 1000;
  for (let p = 0; p < spec.playbooks; p++) {
    const k = (ids.playbook + 1) % spec.shards;
    const pb = write(k, { type: 'playbook', set: { runner_version: '2.14.18', path: `/srv/site-${p}.yml`, status: 'completed', started: now, ended: now + total, arguments: '{"check":false}' } });
    const file = write(k, { type: 'file', set: { playbook: pb, path: `/srv/site-${p}.yml`, content: `- hosts: all\n  tasks: []  # ${p % 50}\n` } });
    const play = write(k, { type: 'play', set: { playbook: pb, uuid: '5254000b-5d3f-1b2c-0000-' + String(p).padStart(12, '0'), name: 'site', status: 'completed', started: now } });
    const hosts: number[] = [];
    for (let h = 0; h < spec.hosts; h++) hosts.push(write(k, { type: 'host', set: { playbook: pb, name: `host-${h}.example.org`, facts: spec.facts } }));
    for (let t = 0; t < spec.tasks; t++) {
      const task = write(k, { type: 'task', set: { playbook: pb, play, file, name: `task ${t}`, action: 'ansible.builtin.package', lineno: t + 3, handler: false, status: 'completed', started: now, tags: '[]' } });
      for (let h = 0; h < hosts.length; h++) {
        now += 1000;
        const content = after === undefined ? before : before + `${p}-${t}-${h}` + after;
        const status = t % 7 === 0 ? 'skipped' : (t * 31 + h) % 97 === 0 ? 'failed' : 'ok';
        write(k, { type: 'result', set: { playbook: pb, play, task, host: hosts[h], status, changed: t % 3 === 0, ignore_errors: false, started: now - 900, ended: now, content } });
      }
    }
    // snapshot like the server does (after every snapshotEvery writes), then
    // let lmdb-js commit what this playbook queued
    if (sinceSnapshot[k]! >= spec.snapshotEvery) { sinceSnapshot[k] = 0; await stores[k]!.snapshot(shards[k]!.state); }
    if (p % 10 === 9) await new Promise((r) => setImmediate(r));
    if ((p + 1) % every === 0 || p === spec.playbooks - 1) {
      await settled();
      const c = sample();
      checkpoints.push(c);
      const n = checkpoints.length - 1;
      if (p < spec.playbooks - 1 && spec.serverSamples > 0 && n % Math.max(1, Math.round(spec.checkpoints / spec.serverSamples)) === 0) {
        const t = performance.now();
        c.server = await serverSample(spec);
        paused += performance.now() - t;
      }
      emit({ checkpoint: c, total });
    }
  }
  for (const s of stores) await s.close();
  const seconds = (performance.now() - t0 - paused) / 1000;
  const heapBytesPerResult = slope(checkpoints.slice(1));
  const diskBytes = readdirSync(spec.dir).reduce((sum, f) => sum + statSync(join(spec.dir, f)).size, 0);
  const { tables, blobs } = storedBytes(spec);
  return { results: ids.result, playbooks: ids.playbook, hosts: ids.host, seconds, heapBytesPerResult, checkpoints, diskBytes, tableBytes: tables, blobBytes: blobs };
}

/** Least-squares heap bytes per result over the checkpoints (robust to one noisy sample). */
function slope(cs: Checkpoint[]): number {
  const n = cs.length;
  if (n < 2) return NaN;
  const mx = cs.reduce((s, c) => s + c.results, 0) / n, my = cs.reduce((s, c) => s + c.heapBytes, 0) / n;
  const num = cs.reduce((s, c) => s + (c.results - mx) * (c.heapBytes - my), 0);
  const den = cs.reduce((s, c) => s + (c.results - mx) ** 2, 0);
  return num / den;
}

/**
 * The real server on the directory as it stands (the builder waits, its
 * writes committed): how long until ready, and its memory once recovered.
 * LMDB lets the two processes share the environment; the server only reads.
 */
async function serverSample(spec: BuildSpec): Promise<ServerSample> {
  const lb = await startLogbook({ dataDir: spec.dir, env: { LOGBOOK_SHARDS: String(spec.shards) } });
  try {
    await new Promise((r) => setTimeout(r, 500));
    return { readyMs: lb.readyMs, recoveryMs: recoveredLine(lb.output())?.ms ?? null, rssBytes: lb.rssBytes(), rssAnonBytes: rssAnonBytesOf(lb.pid) };
  } finally { await lb.stop(); }
}

/**
 * Pages in use per table, summed over the shards (the rest of the file is
 * free pages), and the stored size of content and facts blobs: the blobs
 * table opened without its compression setting reads the bytes as stored.
 */
function storedBytes(spec: BuildSpec): { tables: Record<string, number>; blobs: { content: number; facts: number } } {
  const tables: Record<string, number> = { journal: 0, snapshots: 0, blobs: 0 };
  const blobs = { content: 0, facts: 0 };
  for (let k = 0; k < spec.shards; k++) {
    const env = open({ path: join(spec.dir, `shard-${k}.mdb`), maxDbs: 4, readOnly: true });
    for (const name of Object.keys(tables)) {
      const s = env.openDB({ name }).getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
      tables[name]! += s.pageSize * (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages);
    }
    const raw = env.openDB<Buffer, BlobKey>({ name: 'blobs', encoding: 'binary' });
    for (const { key, value } of raw.getRange()) {
      const kind = blobKind(key);
      if (kind === 'content') blobs.content += value.length;
      else if (kind === 'facts') blobs.facts += value.length;
    }
    void env.close();
  }
  return { tables, blobs };
}

const spec = JSON.parse(process.argv[2]!) as BuildSpec;
try {
  emit({ done: await build(spec), format: FORMAT_VERSION });
} catch (err) {
  emit({ error: String((err as Error)?.stack ?? err) });
  process.exitCode = 1;
}
