// The search worker (docs/search.md): a thread of its own that owns the search
// index (src/search/fts_index.ts). Each shard talks to it on a port of its own
// (commit batches, and a rebuild when the index is behind the shard's journal);
// the front asks it queries on the parent port. SQLite's work never runs on a
// shard's thread nor on the front's.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { FtsIndex } from './search/fts_index.js';
import { hitsOf, type SearchRequest, type SearchStats, type SearchWorkerInit, type SearchWorkerMessage, type SearchReply } from './search/protocol.js';
import type { ShardToSearch } from './shard/search_feed.js';
import { log, setLogLevel } from './log.js';

const init = workerData as SearchWorkerInit;
if (init.logLevel) setLogLevel(init.logLevel);
const index = new FtsIndex(init.path);
/** the longest acknowledgement-to-findable time of a batch since the last stats message (ms) */
let lagMs = 0;
/** shard ports still open: at shutdown the index is closed once each has delivered its last batch */
const open = new Set<MessagePort>();
let closed = false;
let closing: (() => void) | null = null;
let indexed = 0;
/**
 * Shards whose index lost documents (a write to search.sqlite failed: a full
 * disk, a size limit): later batches must not mark them in step, or the lost
 * documents would never come back. Their position stays -1 until a rebuild of
 * theirs is stored whole; the shard is asked for one (at most every 30 s, while
 * the failure lasts).
 */
const stale = new Set<number>();
const REBUILD_ASK_MS = 30_000;

function attach(shard: number, port: MessagePort): void {
  let rebuilding = false;
  /** the rebuild under way has stored every part so far */
  let rebuildWhole = false;
  let askedAt = 0;
  const askForRebuild = (): void => {
    if (rebuilding || Date.now() - askedAt < REBUILD_ASK_MS) return;
    askedAt = Date.now();
    port.postMessage({ k: 'position', seq: -1 });
  };
  open.add(port);
  // the shard's worker is gone (a restart gets a new port): every message it sent has been delivered before this
  port.on('close', () => { open.delete(port); if (closing !== null && open.size === 0) closing(); });
  port.on('message', (msg: ShardToSearch) => {
    if (closed) return;
    try {
      switch (msg.k) {
        case 'hello':
          port.postMessage({ k: 'position', seq: index.position(shard) });
          break;
        case 'index':
          // batches that come during a rebuild are newer than the parts before them and are applied too;
          // the position moves only when the rebuild ends
          // a batch whose documents the shard left out (backpressure) leaves the index stale: -1 until the rebuild
          index.apply(shard, rebuilding || stale.has(shard) ? null : msg.incomplete ? -1 : msg.seq, msg.docs, msg.removed);
          if (stale.has(shard)) askForRebuild();
          indexed += msg.docs.length;
          if (msg.docs.length) port.postMessage({ k: 'took', docs: msg.docs.length });
          // acknowledged at `at`, findable now that its transaction is committed
          lagMs = Math.max(lagMs, Date.now() - msg.at);
          pushStatsIfDue();
          break;
        case 'rebuild':
          if (msg.phase === 'start') { rebuilding = true; rebuildWhole = true; index.clearShard(shard); log.info('search index: rebuilding a shard', { shard }); }
          // in step at its end only if every part of it was stored
          index.apply(shard, msg.phase === 'end' && rebuildWhole ? msg.seq : null, msg.docs, []);
          if (msg.phase === 'end' && rebuildWhole) stale.delete(shard);
          indexed += msg.docs.length;
          if (msg.docs.length) port.postMessage({ k: 'took', docs: msg.docs.length });
          if (msg.phase === 'end') {
            rebuilding = false;
            if (rebuildWhole) log.info('search index: shard rebuilt', { shard, seq: msg.seq, documents: index.documents });
            else askForRebuild();
          }
          break;
      }
    } catch (err) {
      // the index is derived: what it could not take is logged, and the shard's documents are rebuilt
      // (asked for now and while the failure lasts; at the latest at the next start: the stored
      // position is -1, or older than the shard's journal if even that could not be written)
      log.error('search index: a batch could not be indexed', { shard, err: String((err as Error)?.stack ?? err) });
      if (msg.k !== 'hello' && msg.docs.length) port.postMessage({ k: 'took', docs: msg.docs.length });
      stale.add(shard);
      rebuildWhole = false;
      try { index.apply(shard, -1, [], []); } catch { /* the file itself is failing */ }
      if (msg.k === 'rebuild' && msg.phase === 'end') rebuilding = false;
      askForRebuild();
    }
  });
}

parentPort!.on('message', (msg: SearchWorkerMessage) => {
  switch (msg.k) {
    case 'port': attach(msg.shard, msg.port); break;
    case 'query': {
      if (closed) break;
      let reply: SearchReply;
      try {
        reply = hitsOf(index, msg as SearchRequest);
      } catch (err) {
        reply = { k: 'hits', rid: msg.rid, error: String((err as Error)?.message ?? err), hits: [], count: null };
      }
      parentPort!.postMessage(reply);
      break;
    }
    case 'stats':
      parentPort!.postMessage(stats(msg.rid));
      break;
    case 'close': {
      // the shards have stopped: wait for their ports to deliver what they sent (bounded), then close the file
      const finish = () => {
        if (closed) return;
        closed = true;
        index.close();
        parentPort!.postMessage({ k: 'closed' });
      };
      closing = finish;
      if (open.size === 0) finish(); else setTimeout(finish, 3000).unref();
      break;
    }
  }
});
let lastPush = 0;
/** A worker busy with a long queue of batches may not reach its timer for seconds: the batches push the stats too. */
function pushStatsIfDue(): void {
  const now = Date.now();
  if (now - lastPush < 1000) return;
  lastPush = now;
  parentPort!.postMessage(stats(0));
}

function stats(rid: number): SearchStats {
  const s: SearchStats = { k: 'stats', rid, documents: index.documents, indexed, lagMs, shardsBehind: index.shardsBehind() };
  lagMs = 0;
  return s;
}

// what /metrics shows, pushed each second (rid 0): a scrape reads the last one without waiting for this thread
setInterval(pushStatsIfDue, 1000).unref();
parentPort!.postMessage({ k: 'ready' });
