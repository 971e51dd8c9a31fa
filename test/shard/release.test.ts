// releaseBuffer (src/shard/release.ts): a batch body the shard is done with is
// freed at once, by detaching its buffer; a view of a larger buffer is left alone.
import test from 'ava';
import { releaseBuffer } from '../../src/shard/release.js';

test('a buffer the bytes span whole is detached; a view of part of one, or of a shared one, is left as it was', (t) => {
  const whole = new Uint8Array(1 << 20).fill(7);
  releaseBuffer(whole);
  t.is(whole.byteLength, 0);
  t.is(whole.buffer.byteLength, 0);

  const larger = new Uint8Array(1024).fill(1);
  const part = larger.subarray(16, 32);
  releaseBuffer(part);
  t.is(part.byteLength, 16);
  t.is(larger[20], 1);

  const pooled = Buffer.from('a small body'); // a slice of Node's shared pool slab
  releaseBuffer(pooled);
  t.is(pooled.toString(), 'a small body');

  const shared = new Uint8Array(new SharedArrayBuffer(64)).fill(3);
  releaseBuffer(shared);
  t.is(shared[0], 3);
});
