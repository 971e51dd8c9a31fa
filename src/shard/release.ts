// Give a received buffer's memory back as soon as the shard is done with it,
// not at a garbage collection. A batch body (megabytes, moved to the shard's
// thread: protocol.ts postToShard) is external memory to V8; freed only by the
// collection that finds it dead, it made V8 collect for "external memory
// pressure" ~8 times a second per shard at full batch ingest, and a body still
// alive at two young collections was promoted, to be freed only by a full one
// (bench/HISTORY.md, session 31). Transferring a buffer detaches it, and V8
// stops counting it at once; posted to a port whose other end is closed, the
// message is dropped and its memory freed.
import { MessageChannel, type MessagePort } from 'node:worker_threads';

/** the port freed buffers are posted to, its other end closed (made at the first release) */
let sink: MessagePort | null = null;

/**
 * Free `bytes`' buffer now. Only a buffer the bytes span whole is freed (a view
 * of a larger one, a pool slab, is part of something else); the caller must
 * hold no other view of it: it reads as empty afterwards.
 */
export function releaseBuffer(bytes: Uint8Array): void {
  if (!spansWholeBuffer(bytes)) return;
  if (sink === null) {
    const channel = new MessageChannel();
    channel.port2.close();
    sink = channel.port1;
  }
  sink.postMessage(null, [bytes.buffer]);
}

/** The bytes are all of an ArrayBuffer of their own (one that may be moved or freed), not part of a larger or shared one. */
export function spansWholeBuffer(bytes: Uint8Array): bytes is Uint8Array & { buffer: ArrayBuffer } {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
}
