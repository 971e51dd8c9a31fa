// `npm run check -- <data dir>` (or `node dist/src/tools/check.js <data dir>`):
// verify a STOPPED logbook data directory. Each shard's state is rebuilt with the
// server's own recovery (LmdbShardStore.recover into a ShardState: snapshots plus
// journal tail), then checked against itself, the blob table and front.mdb:
//   - counters: play/task `items` and host counters equal a recount of the rows
//   - references: play→playbook, task→play/file, result→task/play/host, delegated
//     hosts, playbook labels → front.mdb's label catalogue
//   - placement: each playbook in the shard that owns its id, no id in two shards
//   - blobs: no blob whose row does not exist (orphan), no file without its text;
//     no packed chunk of contents (content_chunks.ts) whose playbook does not exist
//   - journal: no gap between the last snapshot round and the journal tail, none
//     inside it but the numbers writes whose commit failed (a full disk) took: the
//     store records those (LmdbShardStore.skippedRanges); they are noted, never
//     acknowledged, and recovery goes on across them the same way (it logs them)
//   - search index (search.sqlite): where it says it is at a shard's journal, its
//     documents are exactly that shard's records; where not, a note (the next
//     start rebuilds that shard's documents)
// Before anything is mapped, every LMDB file passes the server's start-up guard
// (src/store/data_dir.ts checkLmdbFile: size against its meta page); the check
// itself runs in a child process, so that damage LMDB only finds by faulting
// (SIGBUS, SIGSEGV) ends that child, and the file at fault is named: exit 1.
// Prints a summary and exits 0, or lists what is wrong (at most MAX_LISTED) and
// exits 1. It holds the data directory's lock while it runs, so a logbook cannot
// start on it meanwhile, and refuses a directory a live logbook holds.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { open } from 'lmdb';
import { TYPE_CODE } from '../api/resources.js';
import { HOST_COUNTERS, HostRow, addToHost } from '../shard/rows.js';
import { ShardState, type EventType } from '../shard/state.js';
import { blobKind, type BlobKey } from '../shard/blobs.js';
import { FORMAT_VERSION, StoreError } from '../store/front_store.js';
import { LmdbShardStore } from '../store/shard_store.js';
import { checkLmdbFile, readsCompletely } from '../store/data_dir.js';
import { bytes } from './backup.js';
import { takeStoppedDataDir } from './stopped_data_dir.js';
import { SEARCH_FILE } from '../search/search_service.js';

const USAGE = 'Usage: logbook check <data dir>\n\n'
  + 'Verifies a stopped logbook data directory: journal continuity, counters against a recount,\n'
  + 'references, blobs (no orphans, no missing file text). Prints a summary.\n\n'
  + 'Exit codes: 0 consistent, 1 problems found (listed), 2 usage (bad arguments, or a live server holds the directory).\n';
const MAX_LISTED = 50;
const TYPES = ['playbook', 'play', 'task', 'host', 'result', 'file', 'record'] as const;
const ROW = 2 ** 40;

export interface CheckReport {
  problems: string[];
  notes: string[];
  records: Record<EventType | 'label', number>;
  blobs: Record<string, { count: number; bytes: number }>;
  journalEntries: number;
  snapshots: number;
  fileBytes: number;
  shards: number;
}

/** Front.mdb, read-only: the format record and the label catalogue with its high-water mark. */
async function readFront(dataDir: string): Promise<{ format: { format: number; shards: number } | undefined; labels: Map<number, string>; labelMaxId: number }> {
  const env = open({ path: join(dataDir, 'front.mdb'), readOnly: true, maxDbs: 4 });
  try {
    const meta = env.openDB<any, string>({ name: 'meta', encoding: 'msgpack' });
    const labelsDb = env.openDB<{ name: string }, number>({ name: 'labels', keyEncoding: 'uint32', encoding: 'msgpack' });
    const labels = new Map<number, string>();
    for (const { key, value } of labelsDb.getRange()) labels.set(key, value.name);
    return { format: meta.get('format'), labels, labelMaxId: Number(meta.get('labelMaxId') ?? 0) };
  } finally { await env.close(); }
}

/** Check a data directory (which the caller has locked). */
export async function checkDataDir(dataDir: string): Promise<CheckReport> {
  const report: CheckReport = {
    problems: [], notes: [], records: { label: 0, playbook: 0, play: 0, task: 0, host: 0, result: 0, file: 0, record: 0 },
    blobs: {}, journalEntries: 0, snapshots: 0, fileBytes: 0, shards: 0,
  };
  const problem = (msg: string) => { report.problems.push(msg); };
  const front = await readFront(dataDir);
  report.fileBytes += statSync(join(dataDir, 'front.mdb')).size;
  report.records.label = front.labels.size;
  for (const id of front.labels.keys()) if (id > front.labelMaxId) problem(`front.mdb: label ${id} is above the label id high-water mark ${front.labelMaxId} (a new label could reuse its id)`);
  const shardFiles = readdirSync(dataDir).map((n) => /^shard-(\d+)\.mdb$/.exec(n)).filter((m) => m !== null).map((m) => Number(m![1])).sort((a, b) => a - b);
  if (!front.format) problem('front.mdb: no format record (a logbook never started here, or front.mdb was replaced)');
  else if (typeof front.format.format !== 'number' || front.format.format > FORMAT_VERSION || front.format.format < 1) problem(`front.mdb: on-disk format ${front.format.format}, this check reads formats 1 to ${FORMAT_VERSION}`);
  const shards = front.format?.shards ?? shardFiles.length;
  report.shards = shards;
  for (let k = 0; k < shards; k++) if (!shardFiles.includes(k)) problem(`shard-${k}.mdb is missing (the data was written with ${shards} shards)`);
  for (const k of shardFiles) if (k >= shards) problem(`shard-${k}.mdb: not one of the ${shards} shards the data was written with`);

  const index = await openSearchIndex(dataDir, report);
  const owner = TYPES.map(() => new Map<number, number>()); // per type code - 1: id → shard
  const tally: Tally = { deletedLabelRefs: 0, hostsWithSetCounters: 0 };
  for (const k of shardFiles.filter((x) => x < shards)) {
    const where = `shard-${k}.mdb`;
    report.fileBytes += statSync(join(dataDir, where)).size;
    const store = new LmdbShardStore(dataDir, k, 'none');
    try {
      // journal: entries after the last completed snapshot round must all be there
      const { seqs, snapshotSeq } = store.journalLayout();
      const skipped: string[] = [];
      const recorded = store.skippedRanges();
      for (let i = 1; i < seqs.length; i++) {
        if (seqs[i]! === seqs[i - 1]! + 1) continue;
        const [first, last] = [seqs[i - 1]! + 1, seqs[i]! - 1];
        if (recorded.some(([a, b]) => a <= first && last <= b)) skipped.push(first === last ? `${first}` : `${first}–${last}`);
        else problem(`${where}: journal entries ${first}–${last} are missing`);
      }
      if (skipped.length) {
        report.notes.push(`${where}: journal numbers ${skipped.slice(0, 5).join(', ')}${skipped.length > 5 ? ` and ${skipped.length - 5} more ranges` : ''} were never written: `
          + 'taken by writes whose commit failed (e.g. a full disk), none of them acknowledged; recovery skips them too');
      }
      if (seqs.length && seqs[0]! > (snapshotSeq ?? 0) + 1) {
        problem(`${where}: the journal starts at entry ${seqs[0]} but the last snapshot round covers only up to ${snapshotSeq ?? 0}: entries in between are missing`);
      }
      const state = new ShardState();
      try {
        const stats = store.recover(state);
        report.journalEntries += stats.journalEntries;
        report.snapshots += stats.snapshots;
      } catch (err) {
        problem(`${where}: recovery failed: ${(err as Error).message}`);
        continue;
      }
      for (const t of TYPES) {
        const index = state.index(t);
        report.records[t] += index.size;
        const seen = owner[TYPE_CODE[t] - 1]!;
        for (const id of index.keys()) {
          const other = seen.get(id);
          if (other !== undefined) problem(`${t} ${id} is in both shard-${other}.mdb and ${where}`);
          else seen.set(id, k);
        }
      }
      checkShard(state, k, shards, where, front, problem, tally);
      checkBlobs(store, state, where, report, problem);
      if (index !== null) checkSearchIndex(index, k, store.journalSeq, state, where, report, problem);
    } finally {
      await store.close();
    }
  }
  index?.close();
  if (tally.hostsWithSetCounters) report.notes.push(`${tally.hostsWithSetCounters} host(s) whose counters a write set (an Ansible callback's final stats): not compared with a recount`);
  if (tally.deletedLabelRefs) report.notes.push(`${tally.deletedLabelRefs} label reference(s) to deleted labels (shown without them; a label delete is not journaled per playbook)`);
  return report;
}

/** The search index (search.sqlite, docs/search.md), read-only; null when there is none (or it cannot be read: a note). */
async function openSearchIndex(dataDir: string, report: CheckReport): Promise<SearchIndexReader | null> {
  const path = join(dataDir, SEARCH_FILE);
  if (!existsSync(path)) { report.notes.push('no search index (search.sqlite): the next start builds it'); return null; }
  try {
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(path, { readonly: true, fileMustExist: true });
    return {
      position: (shard) => (db.prepare('SELECT seq FROM positions WHERE shard = ?').pluck().get(shard) as number | undefined) ?? -1,
      documents: (shard) => db.prepare('SELECT type, id FROM docs WHERE shard = ?').raw().all(shard) as Array<[number, number]>,
      close: () => db.close(),
    };
  } catch (err) {
    report.notes.push(`the search index (search.sqlite) cannot be read (${(err as Error).message}): \`logbook reindex\` drops it, the next start rebuilds it`);
    return null;
  }
}

interface SearchIndexReader { position(shard: number): number; documents(shard: number): Array<[number, number]>; close(): void }

/**
 * A shard's documents in the search index: when the index says it is at the
 * shard's journal number, they must be exactly the shard's records (one each);
 * when it is not, the next start rebuilds them (a note).
 */
function checkSearchIndex(index: SearchIndexReader, k: number, journalSeq: number, state: ShardState, where: string, report: CheckReport, problem: (m: string) => void): void {
  const at = index.position(k);
  if (at !== journalSeq) {
    report.notes.push(`the search index is not at ${where}'s journal (${at < 0 ? 'never completed' : `at ${at}`}, the journal at ${journalSeq}): the next start rebuilds that shard's documents`);
    return;
  }
  const missing: string[] = [];
  const extra: string[] = [];
  const indexed = new Set<number>();
  for (const [code, id] of index.documents(k)) {
    const t = TYPES[code - 1];
    indexed.add(code * 2 ** 44 + id);
    if (t === undefined || !state.index(t).has(id)) extra.push(`${t ?? `type ${code}`} ${id}`);
  }
  for (const t of TYPES) for (const id of state.index(t).keys()) if (!indexed.has(TYPE_CODE[t] * 2 ** 44 + id)) missing.push(`${t} ${id}`);
  const remedy = 'stop logbook, run `logbook reindex` on the directory, and start it: the index is rebuilt';
  if (missing.length) problem(`search index, ${where}: ${missing.length} record(s) not findable (${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}); ${remedy}`);
  if (extra.length) problem(`search index, ${where}: ${extra.length} document(s) of records that do not exist (${extra.slice(0, 5).join(', ')}${extra.length > 5 ? ', …' : ''}); ${remedy}`);
}

/** What is normal but worth saying (notes), counted over the shards. */
interface Tally { deletedLabelRefs: number; hostsWithSetCounters: number }

/** References, counters and placement inside one shard's recovered state. */
function checkShard(state: ShardState, k: number, shards: number, where: string, front: { labels: Map<number, string>; labelMaxId: number }, problem: (m: string) => void, tally: Tally): void {
  for (const [pbId, agg] of state.aggregates) {
    if (pbId % shards !== k) problem(`playbook ${pbId} is stored in ${where} but belongs to shard-${pbId % shards}.mdb`);
    for (const label of agg.playbook.labels) {
      if (front.labels.has(label)) continue;
      if (label <= front.labelMaxId) tally.deletedLabelRefs++;
      else problem(`playbook ${pbId}: label ${label} does not exist in front.mdb (never created: above the high-water mark ${front.labelMaxId})`);
    }
    const tasksPerPlay = new Map<number, number>();
    const resultsPerPlay = new Map<number, number>();
    const resultsPerTask = new Map<number, number>();
    const hostTotals = new Map<number, HostRow>();
    const inc = (m: Map<number, number>, id: number) => m.set(id, (m.get(id) ?? 0) + 1);
    for (const type of ['play', 'task', 'host', 'file', 'record'] as const) {
      for (const row of (agg as any)[type + 's'].values() as Iterable<{ id: number; playbook: number }>) {
        if (row.playbook !== pbId) problem(`${type} ${row.id}: says playbook ${row.playbook} but is stored under playbook ${pbId}`);
      }
    }
    for (const task of agg.tasks.values()) {
      if (!agg.plays.has(task.play)) problem(`task ${task.id}: play ${task.play} does not exist in playbook ${pbId}`);
      if (!agg.files.has(task.file)) problem(`task ${task.id}: file ${task.file} does not exist in playbook ${pbId}`);
      inc(tasksPerPlay, task.play);
    }
    for (const r of agg.results.values()) {
      if (r.playbook !== pbId) problem(`result ${r.id}: says playbook ${r.playbook} but is stored under playbook ${pbId}`);
      if (state.results.get(r.id) !== r) problem(`result ${r.id}: in playbook ${pbId} but not in the shard's result index`);
      if (!agg.tasks.has(r.task)) problem(`result ${r.id}: task ${r.task} does not exist in playbook ${pbId}`);
      if (!agg.plays.has(r.play)) problem(`result ${r.id}: play ${r.play} does not exist in playbook ${pbId}`);
      if (!agg.hosts.has(r.host)) problem(`result ${r.id}: host ${r.host} does not exist in playbook ${pbId}`);
      for (const h of r.delegatedTo) if (!agg.hosts.has(h)) problem(`result ${r.id}: delegated host ${h} does not exist in playbook ${pbId}`);
      inc(resultsPerPlay, r.play);
      inc(resultsPerTask, r.task);
      let totals = hostTotals.get(r.host);
      if (!totals) hostTotals.set(r.host, (totals = new HostRow({ id: r.host, playbook: pbId, name: '' })));
      addToHost(totals, r, 1);
    }
    for (const play of agg.plays.values()) {
      const want = { tasks: tasksPerPlay.get(play.id) ?? 0, results: resultsPerPlay.get(play.id) ?? 0 };
      if (play.tasks !== want.tasks || play.results !== want.results) {
        problem(`play ${play.id}: items {tasks: ${play.tasks}, results: ${play.results}}, recount {tasks: ${want.tasks}, results: ${want.results}}`);
      }
    }
    for (const task of agg.tasks.values()) {
      const want = resultsPerTask.get(task.id) ?? 0;
      if (task.results !== want) problem(`task ${task.id}: items {results: ${task.results}}, recount {results: ${want}}`);
    }
    for (const host of agg.hosts.values()) {
      if (host.countersSet) { tally.hostsWithSetCounters++; continue; } // docs/api.md#derived-state: a set counter overrides the recount
      const totals = hostTotals.get(host.id);
      const differs = HOST_COUNTERS.filter((c) => host[c] !== (totals ? totals[c] : 0));
      if (differs.length) {
        problem(`host ${host.id}: counters ${differs.map((c) => `${c} ${host[c]}`).join(', ')}; recount from its results ${differs.map((c) => `${c} ${totals ? totals[c] : 0}`).join(', ')}`);
      }
    }
  }
}

/** Every blob belongs to a row that exists; every file's text is there. */
function checkBlobs(store: LmdbShardStore, state: ShardState, where: string, report: CheckReport, problem: (m: string) => void): void {
  const fileBlobs = new Set<string>();
  /** results whose content is stored alone (a PATCH after a batch: it wins over the chunk's) */
  const alone = new Set<number>();
  for (const { key, bytes: size } of store.blobEntries()) {
    const kind = blobKind(key);
    const tally = (report.blobs[kind ?? 'unknown'] ??= { count: 0, bytes: 0 });
    tally.count++; tally.bytes += size;
    const id = typeof key === 'number' ? key % ROW : 0;
    const orphan = (type: string) => problem(`${where}: orphan blob ${describeKey(key)}: ${type} ${id} does not exist`);
    switch (kind) {
      case 'content': if (!state.results.has(id)) orphan('result'); alone.add(id); break;
      case 'facts': if (!state.hosts.has(id)) orphan('host'); break;
      case 'arguments': if (!state.aggregates.has(id)) orphan('playbook'); break;
      case 'value': if (!state.records.has(id)) orphan('record'); break;
      case 'file': {
        const sha1 = (key as string).slice(1);
        fileBlobs.add(sha1);
        if (!state.fileRefs.has(sha1)) problem(`${where}: orphan blob ${describeKey(key)}: no file has this content`);
        break;
      }
      default: problem(`${where}: blob with an unknown key ${JSON.stringify(key)}`);
    }
  }
  // packed contents of batches: a chunk goes with its playbook; a result deleted alone leaves its content there
  let unreferenced = 0;
  for (const { key, ids, bytes: size } of store.chunkEntries()) {
    const tally = (report.blobs.content ??= { count: 0, bytes: 0 });
    tally.bytes += size;
    const [playbook, first, last] = key;
    if (!state.aggregates.has(playbook)) {
      problem(`${where}: orphan chunk of contents of results ${first}–${last}: playbook ${playbook} does not exist`);
      continue;
    }
    for (const id of ids) {
      if (state.results.has(id) && !alone.has(id)) tally.count++;
      else unreferenced++;
    }
  }
  if (unreferenced) report.notes.push(`${where}: ${unreferenced} content(s) of deleted or rewritten results kept in chunks until their playbook is deleted`);
  for (const file of state.files.values()) {
    if (!fileBlobs.has(file.sha1)) problem(`file ${file.id}: its content (blob f${file.sha1}) is missing from ${where}`);
  }
}

function describeKey(key: BlobKey): string {
  const kind = blobKind(key);
  return typeof key === 'number' ? `${kind ?? '?'}:${key % ROW}` : `${kind ?? '?'}:${key.slice(1)}`;
}

function summary(dataDir: string, r: CheckReport): string {
  const recs = (['playbook', 'play', 'task', 'host', 'result', 'file', 'record', 'label'] as const).map((t) => `${r.records[t].toLocaleString('en-US')} ${t}s`).join(', ');
  const blobCount = Object.values(r.blobs).reduce((a, b) => a + b.count, 0);
  const blobBytes = Object.values(r.blobs).reduce((a, b) => a + b.bytes, 0);
  const kinds = Object.entries(r.blobs).map(([k, v]) => `${k} ${v.count.toLocaleString('en-US')} (${bytes(v.bytes)})`).join(', ');
  return `${dataDir}: ${r.shards} shard(s), ${bytes(r.fileBytes)} on disk\n` +
    `  records: ${recs}\n` +
    `  blobs: ${blobCount.toLocaleString('en-US')}, ${bytes(blobBytes)} of text${kinds ? ': ' + kinds : ''}\n` +
    `  journal entries replayed: ${r.journalEntries.toLocaleString('en-US')}, playbook snapshots: ${r.snapshots.toLocaleString('en-US')}\n` +
    r.notes.map((n) => `  note: ${n}\n`).join('');
}

export async function main(argv: string[]): Promise<number> {
  const taken = takeStoppedDataDir('check', argv, USAGE, '; check a stopped server\'s directory, or a backup (npm run backup)');
  if ('exit' in taken) return taken.exit;
  const { dataDir, unlock } = taken;
  try {
    // the server's guard, before any file is mapped: a truncated file is damage, not a SIGBUS
    for (const name of readdirSync(dataDir).filter((n) => n.endsWith('.mdb')).sort()) {
      try {
        checkLmdbFile(join(dataDir, name), name, dataDir);
      } catch (err) {
        if (!(err instanceof StoreError)) throw err;
        process.stdout.write(`1 problem(s):\n  - ${err.message}\n`);
        return 1;
      }
    }
    return inChild(dataDir);
  } finally {
    unlock();
  }
}

const CHILD_ENV = 'LOGBOOK_CHECK_CHILD';

/**
 * Run the check in a child process (which holds no lock: this one does). A child
 * ended by a signal met damage LMDB faults on: the file whose tables cannot all be
 * read is named.
 */
function inChild(dataDir: string): number {
  const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), dataDir], {
    stdio: 'inherit', env: { ...process.env, [CHILD_ENV]: '1' },
  });
  if (run.signal === null && run.status !== null) return run.status;
  const why = run.signal ?? String(run.error?.message ?? 'no exit status');
  const damaged = readdirSync(dataDir).filter((n) => n.endsWith('.mdb')).sort().filter((n) => !readsCompletely(join(dataDir, n)));
  process.stdout.write('1 problem(s):\n');
  if (damaged.length) for (const n of damaged) process.stdout.write(`  - ${join(dataDir, n)} is damaged: reading it ended the check (${why}); restore it from a backup\n`);
  else process.stdout.write(`  - reading ${dataDir} ended the check (${why}): a file in it is damaged; restore it from a backup\n`);
  return 1;
}

/** The check proper (in the child process). */
async function checkChild(dataDir: string): Promise<number> {
  {
    let report: CheckReport;
    try {
      report = await checkDataDir(dataDir);
    } catch (err) {
      // LMDB reports some damage as an error (MDB_CORRUPTED, MDB_PAGE_NOTFOUND, …)
      process.stdout.write(`1 problem(s):\n  - ${dataDir} could not be read: ${(err as Error)?.message ?? String(err)}; restore the damaged file from a backup\n`);
      return 1;
    }
    process.stdout.write(summary(dataDir, report));
    if (report.problems.length === 0) { process.stdout.write('OK: counters, references, blobs and journal agree\n'); return 0; }
    process.stdout.write(`${report.problems.length} problem(s):\n`);
    for (const p of report.problems.slice(0, MAX_LISTED)) process.stdout.write(`  - ${p}\n`);
    if (report.problems.length > MAX_LISTED) process.stdout.write(`  … and ${report.problems.length - MAX_LISTED} more\n`);
    return 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = process.env[CHILD_ENV] === '1' ? await checkChild(resolve(process.argv[2]!)) : await main(process.argv.slice(2));
}
