// UTF-8 request bodies → strings. Clients' bodies are nearly always ASCII
// (Python's json.dumps escapes everything else by default, and both Ansible
// callbacks use it), and for ASCII bytes UTF-8 and Latin-1 decode to the same
// string: simdutf's isAscii checks a megabyte in tens of µs, and a Latin-1
// slice is a copy into a one-byte string. TextDecoder's validating path costs
// 2-3× that (~1 µs per 1.3 KB in a microbenchmark), paid for every per-record
// write body and, for a batch, by the front and again by the shard.
import { isAscii } from 'node:buffer';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Node's EXTERN_APEX (src/string_bytes.cc): from this length on, a Latin-1
 * string is made external (its bytes outside V8's heap), and V8 answers
 * external megabytes with earlier full collections. Measured on 1,000-result
 * batches (bench/batch_cpu.ts), that cost the shard more in GC than the decode
 * saved; joining pieces gives a cons string, slower to scan. TextDecoder's
 * strings live in the heap, so long bodies keep it.
 */
const EXTERNAL_FROM = 0xfbee9;

/** The text of UTF-8 `bytes`; throws a TypeError when they are not valid UTF-8 (as a fatal TextDecoder). */
export function decodeUtf8(bytes: Uint8Array): string {
  if (bytes.byteLength >= EXTERNAL_FROM || !isAscii(bytes)) return utf8.decode(bytes);
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return buf.toString('latin1');
}

const EMPTY = new Uint32Array(0);

/**
 * Whether UTF-8 `bytes` hold a control character (U+0000-U+001F, which JSON
 * allows only as whitespace outside strings). Such a byte never occurs inside a
 * multi-byte sequence, so the bytes answer for the decoded text. Four bytes are
 * tested at a time ("has a byte less than n", Bit Twiddling Hacks, exact for
 * n ≤ 128): ~2.5× faster than a regex over the text.
 */
export function hasControlCharacter(bytes: Uint8Array): boolean {
  const end = bytes.byteLength;
  let i = 0;
  // unaligned head, byte by byte
  while (i < end && (bytes.byteOffset + i) % 4 !== 0) if (bytes[i++]! < 0x20) return true;
  const words = (end - i) >> 2;
  const u32 = words > 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset + i, words) : EMPTY;
  for (let w = 0; w < words; w++) {
    const v = u32[w]!;
    if (((v - 0x20202020) & ~v & 0x80808080) !== 0) return true;
  }
  for (i += words << 2; i < end; i++) if (bytes[i]! < 0x20) return true;
  return false;
}
