// Worker-thread entry of a shard: open and recover its store, report to the
// front, then decode messages, let the Shard handle them and encode the replies.
// A bug while handling one message answers that request 500 and the shard keeps
// serving; a failed commit makes the shard rebuild its state from disk.
import { parentPort, workerData } from 'node:worker_threads';
import { Errors } from '../api/errors.js';
import { TYPE_CODE } from '../api/resources.js';
import { LmdbShardStore, MemoryStore, type ShardStore } from '../store/shard_store.js';
import { Shard } from './shard.js';
import { IdAllocator } from './ids.js';
import { BodyNormalizer } from '../api/validate.js';
import { compileWriteValidators } from '../api/schemas.js';
import { ShardState } from './state.js';
import { errText, log, setLogLevel } from '../log.js';
import { decode, encode, type FrontToShard, type ReadyMessage, type ShardInit, type ShardToFront } from './protocol.js';

const init = workerData as ShardInit;
const port = parentPort!;

function post(message: ShardToFront): void {
  const out = encode(message);
  port.postMessage(out, [out.buffer as ArrayBuffer]);
}

setLogLevel(init.logLevel ?? 'info', { shard: init.shard });

function logError(msg: string, err: unknown): void {
  log.error(msg, { err: errText(err) });
}

const testHooks = process.env.LOGBOOK_TEST_HOOKS === '1';

let store: ShardStore;
let shard: Shard;
try {
  // test hook: a slow recovery, so tests can watch the 503s that come before it
  const delay = testHooks ? Number(process.env.LOGBOOK_TEST_RECOVERY_DELAY_MS ?? 0) : 0;
  if (delay > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, delay);
  const lmdb = init.dataDir === null ? null : new LmdbShardStore(init.dataDir, init.shard, init.durability);
  store = lmdb ?? new MemoryStore();
  shard = new Shard({
    compat: init.compat, store, snapshotEvery: init.snapshotEvery, onReply: post,
    ids: new IdAllocator(init.ids),
    normalizer: new BodyNormalizer(compileWriteValidators(), { ignoredFacts: init.ignoredFacts, ignoredArguments: init.ignoredArguments }),
    onStorageFailure: (err) => {
      logError('commit failed; rebuilding the shard from disk', err);
      if (lmdb) { const state = new ShardState(); lmdb.recover(state); shard.replaceState(state); }
    },
  });
  let recovery = { snapshots: 0, journalEntries: 0, eventsApplied: 0, ms: 0 };
  if (lmdb) {
    const state = new ShardState();
    recovery = lmdb.recover(state);
    shard.replaceState(state);
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
  };
  post(ready);
} catch (err) {
  logError('shard failed to start', err);
  post({ k: 'failed', shard: init.shard, error: String((err as Error)?.message ?? err) });
  process.exit(1);
}

const snapshotTimer = setInterval(() => { if (store.journalLength > 0) shard.snapshotSoon(); }, init.snapshotIntervalMs);
snapshotTimer.unref();

port.on('message', (bytes: Uint8Array) => {
  let msg: FrontToShard | undefined;
  try {
    msg = decode<FrontToShard>(bytes);
    if (msg.k === 'close') { void closeStore(); return; }
    if (msg.k === 'stats') { post(shard.stats(msg.rid, init.shard)); return; }
    if (msg.k === 'crash') {
      // test hook: die the way a bug would, from an uncaught exception outside any handler
      if (testHooks) setImmediate(() => { throw new Error(`shard ${init.shard}: crash requested by a test hook`); });
      return;
    }
    const reply = shard.handle(msg);
    if (reply) post(reply);
  } catch (err) {
    logError('shard failed to handle a message', err);
    if (msg && 'rid' in msg) {
      post({ k: 'error', rid: msg.rid, status: 500, body: Errors.internal() });
    }
  }
});

async function closeStore(): Promise<void> {
  clearInterval(snapshotTimer);
  try { await store.close?.(); } catch (err) { logError('closing the store failed', err); }
  process.exit(0);
}
