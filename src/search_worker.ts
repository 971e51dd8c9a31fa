// The search worker (docs/search.md): a thread of its own that owns the search
// index (src/search/fts_index.ts). Each shard talks to it on a port of its own
// (commit batches, and a rebuild when the index is behind the shard's journal);
// the front asks it queries on the parent port. SQLite's work never runs on a
// shard's thread nor on the front's.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { FtsIndex } from './search/fts_index.js';
import { hitsOf, type SearchRequest, type SearchWorkerInit, type SearchWorkerMessage, type SearchReply } from './search/protocol.js';
import type { ShardToSearch } from './shard/search_feed.js';
import { log, setLogLevel } from './log.js';

const init = workerData as SearchWorkerInit;
if (init.logLevel) setLogLevel(init.logLevel);
const index = new FtsIndex(init.path);
/** per shard: when its last batch was acknowledged, for the lag gauge */
const lastLagMs = new Map<number, number>();
let indexed = 0;

function attach(shard: number, port: MessagePort): void {
  let rebuilding = false;
  port.on('message', (msg: ShardToSearch) => {
    try {
      switch (msg.k) {
        case 'hello':
          port.postMessage({ k: 'position', seq: index.position(shard) });
          break;
        case 'index':
          // batches that come during a rebuild are newer than the parts before them and are applied too;
          // the position moves only when the rebuild ends
          // a batch whose documents the shard left out (backpressure) leaves the index stale: -1 until the rebuild
          index.apply(shard, rebuilding ? null : msg.incomplete ? -1 : msg.seq, msg.docs, msg.removed);
          indexed += msg.docs.length;
          if (msg.docs.length) port.postMessage({ k: 'took', docs: msg.docs.length });
          if (msg.at) lastLagMs.set(shard, Date.now() - msg.at);
          break;
        case 'rebuild':
          if (msg.phase === 'start') { rebuilding = true; index.clearShard(shard); log.info('search index: rebuilding a shard', { shard }); }
          index.apply(shard, msg.phase === 'end' ? msg.seq : null, msg.docs, []);
          indexed += msg.docs.length;
          if (msg.docs.length) port.postMessage({ k: 'took', docs: msg.docs.length });
          if (msg.phase === 'end') { rebuilding = false; log.info('search index: shard rebuilt', { shard, seq: msg.seq, documents: index.documents }); }
          break;
      }
    } catch (err) {
      // the index is derived: a batch it cannot take is logged, and the shard is rebuilt at the next start
      log.error('search index: a batch could not be indexed', { shard, err: String((err as Error)?.stack ?? err) });
      if (msg.k !== 'hello' && msg.docs.length) port.postMessage({ k: 'took', docs: msg.docs.length });
      try { index.apply(shard, -1, [], []); } catch { /* the file itself is failing */ }
    }
  });
}

parentPort!.on('message', (msg: SearchWorkerMessage) => {
  switch (msg.k) {
    case 'port': attach(msg.shard, msg.port); break;
    case 'query': {
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
      parentPort!.postMessage({ k: 'stats', rid: msg.rid, documents: index.documents, indexed, lagMs: Math.max(0, ...lastLagMs.values()) });
      break;
    case 'close':
      index.close();
      parentPort!.postMessage({ k: 'closed' });
      break;
  }
});
parentPort!.postMessage({ k: 'ready' });
