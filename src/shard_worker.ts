// Worker-thread entry of a shard: open and recover its store, report to the
// front, then decode messages, let the Shard handle them and encode the replies.
// A bug while handling one message answers that request 500 and the shard keeps
// serving; a failed commit makes the shard rebuild its state from disk.
// It sits above src/shard/ (beside server.ts, the front's entry) because it picks
// the shard's store (src/store/ on disk, or a cluster partition: src/cluster/) and
// renders label rows (src/http/labels.ts): the layers below it do not know each other.
import { join } from 'node:path';
import { TEST_HOOKS, TEST_HOOKS_ON } from './test_hooks.js';
import { parentPort, workerData } from 'node:worker_threads';
import { Errors } from './api/errors.js';
import { TYPE_CODE } from './api/resources.js';
import { MemoryStore } from './shard/memory_store.js';
import { isStorageNoise, openShardStore } from './store/open.js';
import type { DurableShardStore, ShardStore } from './shard/storage.js';
import { SearchFeed, type SearchPort } from './shard/search_feed.js';
import { Shard } from './shard/shard.js';
import { CommitOrder } from './shard/commit_order.js';
import { openPartition, type OpenedPartition } from './cluster/partition_worker.js';
import { IdAllocator } from './shard/ids.js';
import { BodyNormalizer } from './api/validate.js';
import { compileWriteValidators } from './api/schemas.js';
import { ShardState } from './shard/state.js';
import { errText, log, setLogLevel } from './log.js';
import { Outbox, receivedFromFront, type FrontToShard, type LabelChangeCommand, type Posted, type ReadyMessage, type ShardInit, type ShardToFront } from './shard/protocol.js';
import { OP_CREATE } from './shard/changes.js';
import { LABEL_SHARD } from './http/label_changes.js';
import { labelRow } from './http/labels.js';
import { releaseBuffer } from './shard/release.js';

const init = workerData as ShardInit;
const port = parentPort!;

/** replies, changes and reports leave a turn at a time (protocol.ts Outbox) */
const outbox = new Outbox<ShardToFront>(port);

function post(message: ShardToFront): void {
  outbox.post(message);
}

/** Exit the worker; what it has posted leaves first (an exit drops the turn's outbox). */
function exit(code: number): never {
  outbox.flush();
  process.exit(code);
}

setLogLevel(init.logLevel ?? 'info', { shard: init.shard });

function logError(msg: string, err: unknown): void {
  log.error(msg, { err: errText(err) });
}


// The storage engine may reject promises of its own that nobody holds when a
// commit fails (lmdb-js does); the failure reaches the shard through the promises
// it does hold (and the state is rebuilt from disk), so these must not take the
// worker down.
process.on('unhandledRejection', (err) => {
  if (isStorageNoise(err)) return;
  throw err;
});

let store: ShardStore;
let durable: DurableShardStore | null = null;
/** cluster mode: the partition's stream is the journal (src/cluster/partition_worker.ts) */
let partition: OpenedPartition | null = null;
let shard: Shard;
try {
  if (init.cluster) partition = await openPartition(init.shard, init.cluster);
  // test hook: a slow recovery, so tests can watch the 503s that come before it
  const delay = TEST_HOOKS.recoveryDelayMs;
  if (delay > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, delay);
  // test hook: snapshot slices that always yield (and for how long), so a crash test can kill the process inside a round
  const sliceDelay = TEST_HOOKS.snapshotSliceDelayMs;
  // test hook: snapshots split a playbook's results into parts of this many (the default is thousands)
  const partRows = TEST_HOOKS.snapshotPartRows;
  if (!partition) durable = openShardStore({
    dataDir: init.dataDir, shard: init.shard, durability: init.durability, mapSize: init.mapSize ?? null,
    snapshotSliceDelayMs: sliceDelay, step: killAt(TEST_HOOKS.killAt),
    ...(partRows > 0 ? { snapshotPartRows: partRows } : {}),
    // commits stopped settling: the storage engine lost a failed transaction and
    // every later one waits behind it. Exit: the pool restarts the worker, which
    // recovers from disk on a fresh environment; requests it held get 503.
    onStall: (pendingCommits, ms) => {
      log.fatal('storage stalled: commits have not settled; restarting the shard', { pendingCommits, ms });
      setTimeout(() => exit(1), 1000).unref();
      void log.flush().finally(() => exit(1));
    },
    // test hook: a shorter stall bound
    ...(TEST_HOOKS.storageStallMs > 0 ? { stallMs: TEST_HOOKS.storageStallMs } : {}),
  });
  store = partition?.store ?? durable ?? new MemoryStore();
  const searchFeed = init.searchPort && durable ? new SearchFeed(init.searchPort as unknown as SearchPort) : null;
  const order = init.streamOrder ? new CommitOrder(init.streamOrder) : null;
  shard = new Shard({
    store, snapshotEvery: init.snapshotEvery, onReply: post,
    // group commit: the writes of one event-loop pass are one journal entry (src/shard/shard.ts)
    schedule: (flush) => { setImmediate(flush); },
    // batch bodies were moved to this thread: this shard owns them
    releaseBody: releaseBuffer,
    ids: partition?.ids ?? new IdAllocator(init.ids),
    streamRetention: init.streamRetention,
    // the search index (docs/search.md): each durable commit's documents go to the search worker
    search: searchFeed,
    ...(init.runSeries ? { runSeries: init.runSeries } : {}),
    ...(order ? { order: { shard: init.shard, order } } : {}),
    normalizer: new BodyNormalizer(compileWriteValidators(), { ignoredFacts: init.ignoredFacts, ignoredArguments: init.ignoredArguments }),
    onStorageFailure: (err) => {
      if (partition) {
        // fenced (another node took the partition) or the append's outcome is unknown:
        // this node no longer owns it. The replies have been answered 503; exit, and the
        // node's ownership layer decides whether to take the partition again.
        log.warn('partition lost: its commit was not acknowledged by the log', { partition: init.shard, err: errText(err) });
        setTimeout(() => exit(3), 50);
        return;
      }
      logError('commit failed; rebuilding the shard from disk', err);
      if (!durable) return;
      try {
        const state = new ShardState();
        durable.recover(state);
        shard.replaceState(state);
        shard.changes.recover(); // the live stream's numbering continues from what is on disk
      } catch (recoverErr) {
        // memory may hold what the disk does not: stop; the pool restarts the worker from disk
        logError('rebuilding the shard from disk failed; exiting', recoverErr);
        exit(1);
      }
    },
  });
  let recovery = { snapshots: 0, journalEntries: 0, eventsApplied: 0, ms: 0 };
  if (partition) {
    shard.replaceState(partition.state);
    recovery = partition.recovery;
    // the live stream numbers on from the partition's last journaled change
    partition.store.changeSeq = () => shard.changes.seq;
    shard.changes.seq = partition.store.lastChangeSeq;
    partition.store.labelSeq = () => shard.changes.labelSeq;
    if (!init.cluster!.standby) shard.changes.labelSeq = await labelSeqOf(partition);
  } else if (durable) {
    const state = new ShardState();
    recovery = durable.recover(state);
    shard.replaceState(state);
  }
  shard.changes.recover();
  if (order) {
    // stamps continue above the highest this shard logged (no commit is staged before every shard is ready)
    const last = shard.changes.seq;
    const changeLog = durable?.changeLog ?? null;
    const logged = last > 0 && changeLog ? changeLog.readChanges(last - 1, last, 1)[0]?.[6] : undefined;
    order.recovered(init.shard, logged ?? 0);
  }
  const state = shard.state;
  const ids: number[][] = [];
  for (const type of ['label', 'playbook', 'play', 'task', 'host', 'result', 'file', 'record'] as const) {
    ids[TYPE_CODE[type]] = type === 'label' ? [] : Array.from(state.index(type).keys());
  }
  const streams: Array<[string, number]> = [];
  for (const agg of state.aggregates.values()) if (agg.playbook.uuid !== null) streams.push([agg.playbook.uuid, agg.playbook.id]);
  const ready: ReadyMessage = {
    k: 'ready', shard: init.shard, maxIds: state.maxIds.slice(), ids,
    recovery: { ...recovery, results: state.results.size }, streams,
    stream: [shard.changes.seq, shard.changes.oldest],
  };
  post(ready);
  // after ready: a rebuild of the index (when it is behind) goes a slice at a time beside the shard's work
  if (searchFeed !== null && durable !== null) {
    const journal = durable;
    searchFeed.start(() => shard.state, journal, () => journal.journalSeq ?? 0);
  }
} catch (err) {
  logError('shard failed to start', err);
  let error = String((err as Error)?.message ?? err);
  // Reading the data file failed in a way the store's own checks did not name (a damaged
  // page can make a stored record undecodable): say which file, and what to do about it.
  if (!partition && init.dataDir && !error.includes('.mdb')) {
    error = `${join(init.dataDir, `shard-${init.shard}.mdb`)} could not be read (${error}): it may be damaged; `
      + 'run logbook check on the data directory, and restore it from a backup if check reports damage';
  }
  post({ k: 'failed', shard: init.shard, error });
  exit(1);
}

// cluster mode: the node reports standby lag and announces owners' positions (src/cluster/cluster_shards.ts)
if (partition) {
  const opened = partition;
  setInterval(() => post({ k: 'position', shard: init.shard, seq: opened.position() }), 1000).unref();
}

const snapshotTimer = setInterval(() => { if (store.journalLength > 0) shard.snapshotSoon(); }, init.snapshotIntervalMs);
snapshotTimer.unref();

port.on('message', (data: Posted) => {
  let messages: FrontToShard[];
  try {
    messages = receivedFromFront(data);
  } catch (err) {
    logError('shard could not decode a message', err);
    return;
  }
  for (const msg of messages) handle(msg);
});

function handle(msg: FrontToShard): void {
  try {
    if (msg.k === 'close') { void closeStore(); return; }
    if (msg.k === 'stats') { post(shard.stats(msg.rid, init.shard)); return; }
    if (msg.k === 'promote') {
      const { rid, epoch, fenceSeq } = msg;
      if (!partition) { post({ k: 'error', rid, status: 500, body: Errors.internal() }); return; }
      const opened = partition;
      opened.promote(epoch, fenceSeq).then(async (r) => ({ r, labelSeq: await labelSeqOf(opened) })).then(
        ({ r, labelSeq }) => {
          shard.changes.seq = opened.store.lastChangeSeq;
          shard.changes.recover();
          shard.changes.labelSeq = labelSeq;
          post({ k: 'promoted', rid, status: 200, entries: r.entries, ms: r.ms, results: shard.state.results.size });
        },
        (err) => { logError('promotion failed', err); post({ k: 'error', rid, status: 503, body: Errors.unavailable(String((err as Error)?.message ?? err)) }); },
      );
      return;
    }
    if (msg.k === 'stall') {
      // test hook: hold the thread the way a long GC pause does (messages queue up meanwhile)
      if (TEST_HOOKS_ON) { const until = performance.now() + Math.min(msg.ms, 10_000); while (performance.now() < until); }
      return;
    }
    if (msg.k === 'crash') {
      // test hook: die the way a bug would, from an uncaught exception outside any handler
      if (TEST_HOOKS_ON) setImmediate(() => { throw new Error(`shard ${init.shard}: crash requested by a test hook`); });
      return;
    }
    if (partition && msg.k === 'label') { logLabelChanges(partition, msg.rid, msg.changes); return; }
    if (durable && (msg.k === 'ingest' || (msg.k === 'write' && msg.cmd.op !== 'delete')) && durable.full()) {
      // refused before it changes anything (a batch keeps its seq); deletes still go through (they make room)
      post({ k: 'error', rid: msg.rid, status: 503, body: storageFull(durable.sizeLimit!) });
      return;
    }
    const reply = shard.handle(msg);
    if (reply) post(reply);
  } catch (err) {
    logError('shard failed to handle a message', err);
    if ('rid' in msg) {
      post({ k: 'error', rid: msg.rid, status: 500, body: Errors.internal() });
    }
  }
}

// ---- cluster mode: the live stream's label changes (src/http/label_changes.ts, src/cluster/labels.ts) ----

/**
 * Where a partition's label changes stand when it is taken: the label stream's
 * sequence its journal says it has logged up to. A journal written before that
 * was kept says nothing: the partition starts from the stream's end (what came
 * before was logged, or given up, by the code of then).
 */
async function labelSeqOf(opened: OpenedPartition): Promise<number> {
  return opened.store.lastLabelSeq ?? await opened.labelsEnd();
}

/** label changes are logged one request at a time, each after the ones before it */
let labelChain: Promise<void> = Promise.resolve();

/**
 * Label changes (in the stream's order), or "every change up to seq" (catchUp).
 * The partition logs every change of the label stream once, in the stream's
 * order, as one commit: the ones it is sent when they are the next ones, one
 * after another, else each it has not logged up to the last, read from the stream.
 * So a change it could not log when it was made (it was moving, its node was
 * gone) is logged on the next request, whichever node sends it (the one that
 * made the change tries again; every node asks the partitions it owns to catch
 * up with the stream: src/cluster/label_catch_up.ts).
 */
function logLabelChanges(opened: OpenedPartition, rid: number, sent: LabelChangeCommand[]): void {
  labelChain = labelChain.then(async () => {
    const have = shard.changes.labelSeq;
    let list: LabelChangeCommand[] = [];
    const c = sent[sent.length - 1];
    if (c !== undefined && c.seq > have) {
      const fresh = sent.filter((s) => s.seq > have);
      if (fresh.every((s, i) => !s.catchUp && s.seq === have + 1 + i)) list = fresh;
      else {
        const own = init.shard === LABEL_SHARD;
        list = (await opened.readLabels(have + 1, c.seq)).map((l) => ({
          seq: l.seq, op: l.op, id: l.id, row: l.label === null ? null : labelRow(l.id, l.label), own,
        }));
        // the position reaches `seq` also when the range ends with no change (an init record)
        list.push({ seq: c.seq, op: OP_CREATE, id: 0, row: null, own: false, catchUp: true });
      }
    }
    const reply = shard.labelChanges(rid, list);
    if (reply) post(reply);
  }).catch((err: unknown) => {
    log.warn('label changes could not be read from the label stream; they are logged on the next request', { err: errText(err) });
    post({ k: 'error', rid, status: 503, body: Errors.unavailable('The label stream could not be read; retry shortly.') });
  });
}

/**
 * Test hook LOGBOOK_TEST_KILL_AT=<phase>:<count>:<delay ms> (phase snapshot or trim):
 * SIGKILL the whole process `delay` ms after the store issued its <count>th
 * snapshot put, or its <count>th journal trim, counted over the worker's life.
 */
function killAt(spec: string | undefined): ((phase: 'snapshot' | 'trim', count: number) => void) | null {
  const m = /^(snapshot|trim):(\d+):(\d+)$/.exec(spec ?? '');
  if (!m) return null;
  const [, phase, count, delay] = m;
  return (p, n) => {
    if (p !== phase || n !== Number(count)) return;
    log.warn('test hook: killing the process', { phase: p, count: n, delayMs: Number(delay) });
    setTimeout(() => process.kill(process.pid, 'SIGKILL'), Number(delay));
  };
}

function storageFull(limit: number): string {
  return Errors.unavailable(`Shard ${init.shard}'s storage is full: its file reached the LOGBOOK_MAP_SIZE limit `
    + `(${limit} bytes). Writes are refused until logbook is restarted with a larger LOGBOOK_MAP_SIZE; reads and deletes work. Nothing was changed.`);
}

async function closeStore(): Promise<void> {
  clearInterval(snapshotTimer);
  shard.flushGroup(); // writes staged in this pass are stored (and answered) before the store closes
  try { await store.close?.(); } catch (err) { logError('closing the store failed', err); }
  if (partition) await partition.nc.drain().catch(() => {});
  exit(0);
}
