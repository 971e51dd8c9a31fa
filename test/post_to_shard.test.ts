// A batch body crosses to its shard's worker beside the message (src/shard/protocol.ts
// postToShard), moved rather than copied. Only a buffer the body has to itself may
// move: a body that is a view of a larger buffer (a NATS read buffer in cluster
// mode, a Buffer pool slab, zlib's output) is copied, or the larger buffer would be
// detached under its owner. Over a real MessageChannel.
import test from 'ava';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { postToShard, receivedFromFront, type FrontToShard, type Posted } from '../src/shard/protocol.js';

function ingest(body: Uint8Array): FrontToShard {
  return { k: 'ingest', rid: 7, cmd: { playbook: 1, uuid: 'u', seq: 2, create: null, text: '', body, labels: [], spans: null } };
}

function receive(port: MessagePort): Promise<FrontToShard> {
  return new Promise((resolve) => port.once('message', (data: Posted) => resolve(receivedFromFront(data))));
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
