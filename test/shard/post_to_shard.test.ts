// A batch body crosses to its shard's worker beside the message (src/shard/protocol.ts
// postToShard), moved rather than copied. Only a buffer the body has to itself may
// move: a body that is a view of a larger buffer (a NATS read buffer in cluster
// mode, a Buffer pool slab, zlib's output) is copied, or the larger buffer would be
// detached under its owner. Over a real MessageChannel.
import test from 'ava';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { decodeAll, Outbox, ShardOutbox, postToShard, receivedFromFront, type FrontToShard, type Posted, type ShardToFront } from '../../src/shard/protocol.js';

function ingest(body: Uint8Array): FrontToShard {
  return { k: 'ingest', rid: 7, cmd: { playbook: 1, uuid: 'u', seq: 2, create: null, text: '', body, labels: [], spans: null } };
}

function receive(port: MessagePort): Promise<FrontToShard> {
  return new Promise((resolve) => port.once('message', (data: Posted) => resolve(receivedFromFront(data)[0]!)));
}

test('a body that is a view of a larger buffer is copied: the larger buffer stays whole', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => { port1.close(); port2.close(); });
  // a Buffer over part of a plain ArrayBuffer, as a NATS message's payload is (Node's own
  // Buffer pool is marked untransferable, so it would not show the harm)
  const slab = Buffer.from(new ArrayBuffer(64));
  slab.write('xx{"playbook":{"uuid":"u"},"seq":2,"events":[]}yy');
  const view = Buffer.from(slab.buffer, 2, 45);
  const size = slab.byteLength;
  const got = receive(port2);
  postToShard(port1, ingest(view));
  const msg = await got;
  t.true(size > 0);
  t.is(slab.byteLength, size, 'the slab is not detached');
  t.is(slab.toString('utf8', 0, 49), 'xx{"playbook":{"uuid":"u"},"seq":2,"events":[]}yy');
  t.is(msg.k, 'ingest');
  t.is(Buffer.from((msg as Extract<FrontToShard, { k: 'ingest' }>).cmd.body!).toString(), '{"playbook":{"uuid":"u"},"seq":2,"events":[]}');
});

test('a body with a buffer of its own is moved, not copied', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => { port1.close(); port2.close(); });
  const own = new Uint8Array(new TextEncoder().encode('{"seq":3}'));
  const got = receive(port2);
  postToShard(port1, ingest(own));
  const msg = await got;
  t.is(own.byteLength, 0, 'moved: detached on this side');
  t.is(new TextDecoder().decode((msg as Extract<FrontToShard, { k: 'ingest' }>).cmd.body!), '{"seq":3}');
});

test('other messages go as one encoded message', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => { port1.close(); port2.close(); });
  const got = receive(port2);
  postToShard(port1, { k: 'get', rid: 3, type: 'result', id: 9 });
  t.deepEqual(await got, { k: 'get', rid: 3, type: 'result', id: 9 });
});

/** every postMessage that arrives within `ms`, as the messages it carried */
async function collect(port: MessagePort, ms: number): Promise<FrontToShard[][]> {
  const posts: FrontToShard[][] = [];
  port.on('message', (data: Posted) => posts.push(receivedFromFront(data)));
  await new Promise((resolve) => setTimeout(resolve, ms));
  return posts;
}

const get = (rid: number): FrontToShard => ({ k: 'get', rid, type: 'result', id: rid });

test('an outbox sends what is posted in one turn as one message, in order; the next turn is another', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => { port1.close(); port2.close(); });
  const outbox = new Outbox<FrontToShard>(port1);
  const arrived = collect(port2, 200);
  for (let rid = 1; rid <= 5; rid++) outbox.post(get(rid));
  setImmediate(() => outbox.post(get(6)));
  const posts = await arrived;
  t.deepEqual(posts, [[1, 2, 3, 4, 5].map(get), [get(6)]]);
});

test('an ingest batch with its body leaves after what was queued before it, and flush() sends at once', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => { port1.close(); port2.close(); });
  const outbox = new ShardOutbox(port1);
  const arrived = collect(port2, 200);
  outbox.post(get(1));
  outbox.post(ingest(new TextEncoder().encode('{"seq":2}')));
  outbox.post(get(3));
  outbox.flush();
  outbox.post(get(4));
  const posts = await arrived;
  t.deepEqual(posts.map((p) => p.map((m) => m.k === 'get' ? m.rid : m.k)), [[1], ['ingest'], [3], [4]]);
  const batch = posts[1]![0] as Extract<FrontToShard, { k: 'ingest' }>;
  t.is(new TextDecoder().decode(batch.cmd.body!), '{"seq":2}');
});

test('a shard\'s outbox posts replies of any kind, an ingest reply too', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => { port1.close(); port2.close(); });
  const outbox = new Outbox<ShardToFront>(port1);
  const got = new Promise<ShardToFront[]>((resolve) => port2.once('message', (bytes: Uint8Array) => resolve(decodeAll<ShardToFront>(bytes))));
  const reply: ShardToFront = { k: 'ingest', rid: 4, status: 200, body: '{}', created: null, exists: true, duplicate: false };
  outbox.post(reply);
  outbox.post({ k: 'error', rid: 5, status: 503, body: '{}' });
  t.deepEqual(await got, [reply, { k: 'error', rid: 5, status: 503, body: '{}' }]);
});
