// Worker-thread entry of a shard: decode a message, let the Shard handle it,
// encode the reply. A bug while handling one message answers that request 500
// and the shard keeps serving (the front never hangs on it).
import { parentPort, workerData } from 'node:worker_threads';
import { Errors } from '../api/errors.js';
import { Shard } from './shard.js';
import { decode, encode, type FrontToShard, type ShardInit } from './protocol.js';

const init = workerData as ShardInit;
const shard = new Shard({ compat: init.compat });
const port = parentPort!;

port.on('message', (bytes: Uint8Array) => {
  let msg: FrontToShard | undefined;
  try {
    msg = decode<FrontToShard>(bytes);
    const reply = shard.handle(msg);
    if (reply) {
      const out = encode(reply);
      port.postMessage(out, [out.buffer as ArrayBuffer]);
    }
  } catch (err) {
    console.error(JSON.stringify({ level: 'error', msg: 'shard failed to handle a message', shard: init.shard, err: String((err as Error)?.stack ?? err) }));
    if (msg && 'rid' in msg) {
      const out = encode({ k: msg.k, rid: msg.rid, status: 500, body: Errors.internal(), count: 0, rows: [], created: null, deleted: null, labels: null });
      port.postMessage(out, [out.buffer as ArrayBuffer]);
    }
  }
});

const ready = encode({ k: 'ready', shard: init.shard });
port.postMessage(ready, [ready.buffer as ArrayBuffer]);
