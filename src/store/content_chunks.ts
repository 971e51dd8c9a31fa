// Result contents of a batch, stored packed: a batch of 1,000 results written
// as 1,000 blob values cost ~15 µs of CPU per result in LMDB (one LZ4 task,
// with lmdb-js's dictionary loaded, and one B-tree insert per value, most of
// the server's CPU per result besides its own JS). Packed by ~32 into one
// value each, the same contents cost ~3 µs per result, and compress better.
//
// A chunk holds contents of results one command created, in id order, of one
// playbook. Its key is [playbook, first id, last id]: a playbook's chunks go
// with it (no per-result bookkeeping), and the index of chunks kept here is
// rebuilt from the keys alone at start-up (no value read). Reading one content
// back decompresses its chunk (≤ CHUNK_BYTES): microseconds.
//
// Precedence: a result's own blob (written by a later PATCH/PUT of its content,
// or by a command too small to pack) wins over its chunk; an update back to the
// default content is stored as that default (LmdbShardStore.packedResets), so a
// chunk never shows through. A result deleted alone leaves its content in the
// chunk until the playbook goes (unreachable: reads go through rows).
//
// Value layout: u32 count, then per content u32 (id − first) and u32 end offset
// of its UTF-8 bytes in the payload, then the payload. Little-endian.
import { isAscii } from 'node:buffer';
import type { Database } from 'lmdb';
import { JsonBytes } from '../api/json_bytes.js';
import type { BlobValue } from '../shard/blobs.js';

export type ChunkKey = [playbook: number, first: number, last: number];

/** contents per chunk, at most */
export const CHUNK_RESULTS = 32;
/** a chunk closes once its payload reaches this many bytes */
export const CHUNK_BYTES = 32 * 1024;
/** a content this long or longer is stored alone (reading a small one must not decompress it) */
export const CHUNK_ALONE_BYTES = 16 * 1024;
/** a command with fewer packable contents stores them alone (per-record writes: as before) */
export const CHUNK_MIN_CONTENTS = 4;

/**
 * One content to pack: result id, its playbook, its text (or the ASCII bytes of
 * it: once packed, a view of those bytes in its chunk instead, so that what it
 * was a view of, a batch's body, is not held with the chunk).
 */
export interface PackableContent { id: number; playbook: number; text: BlobValue }

export class ContentChunks {
  // the index, sorted by first id (ids only grow, so new chunks append)
  private firsts: number[] = [];
  private lasts: number[] = [];
  private owners: number[] = [];

  constructor(private readonly db: Database<Buffer, ChunkKey>) {}

  /** Rebuild the index from the stored keys (start-up, and after a failed write's recovery). */
  load(): void {
    const keys = [...this.db.getKeys()] as ChunkKey[];
    keys.sort((a, b) => a[1] - b[1]);
    this.firsts = keys.map((k) => k[1]);
    this.lasts = keys.map((k) => k[2]);
    this.owners = keys.map((k) => k[0]);
  }

  /** Contents in id order → chunk values, added to the index now (reads of them go to the overlay until durable). */
  pack(contents: PackableContent[]): Array<[ChunkKey, Buffer]> {
    const out: Array<[ChunkKey, Buffer]> = [];
    let from = 0;
    while (from < contents.length) {
      const chunk = chunkFrom(contents, from, true) ?? chunkFrom(contents, from, false)!;
      const to = from + chunk.readUInt32LE(0);
      const key: ChunkKey = [contents[from]!.playbook, contents[from]!.id, contents[to - 1]!.id];
      out.push([key, chunk]);
      this.add(key);
      from = to;
    }
    return out;
  }

  /** The stored content of result `id`, if a chunk holds it. */
  read(id: number): string | undefined {
    const i = this.find(id);
    if (i < 0) return undefined;
    const buf = this.db.getBinaryFast([this.owners[i]!, this.firsts[i]!, this.lasts[i]!]);
    if (buf === undefined) return undefined; // a chunk whose write failed (recovery reloads the index)
    return contentIn(buf, id - this.firsts[i]!);
  }

  /** Whether a chunk's id range covers result `id` (it may hold its content). */
  holds(id: number): boolean {
    return this.find(id) >= 0;
  }

  /** Forget the chunks of dropped playbooks; their stored keys, for the caller to remove in its transaction. */
  drop(playbooks: ReadonlySet<number>): ChunkKey[] {
    const keys: ChunkKey[] = [];
    for (const p of playbooks) for (const key of this.db.getKeys({ start: [p], end: [p + 1] })) keys.push(key as ChunkKey);
    if (this.owners.some((o) => playbooks.has(o))) {
      const keep = this.owners.map((o) => !playbooks.has(o));
      this.firsts = this.firsts.filter((_, i) => keep[i]);
      this.lasts = this.lasts.filter((_, i) => keep[i]);
      this.owners = this.owners.filter((_, i) => keep[i]);
    }
    return keys;
  }

  /** Every stored chunk with the result ids it holds and its payload bytes (tools: check). */
  *entries(): Iterable<{ key: ChunkKey; ids: number[]; bytes: number }> {
    for (const { key, value } of this.db.getRange()) {
      const k = key as ChunkKey;
      const count = value.readUInt32LE(0);
      const ids: number[] = [];
      for (let j = 0; j < count; j++) ids.push(k[1] + value.readUInt32LE(4 + 8 * j));
      yield { key: k, ids, bytes: count ? value.readUInt32LE(8 * count) : 0 };
    }
  }

  private add(key: ChunkKey): void {
    let at = this.firsts.length;
    while (at > 0 && this.firsts[at - 1]! > key[1]) at--; // ids grow: at is the end but after a recovery reused them
    if (at < this.firsts.length && this.firsts[at] === key[1]) {
      this.lasts[at] = key[2]; this.owners[at] = key[0];
      return;
    }
    this.firsts.splice(at, 0, key[1]);
    this.lasts.splice(at, 0, key[2]);
    this.owners.splice(at, 0, key[0]);
  }

  /** Index of the chunk whose id range holds `id`, or −1. */
  private find(id: number): number {
    const { firsts } = this;
    let lo = 0;
    let hi = firsts.length - 1;
    if (hi < 0 || id < firsts[0]!) return -1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (firsts[mid]! <= id) lo = mid; else hi = mid - 1;
    }
    return id <= this.lasts[lo]! ? lo : -1;
  }
}

/**
 * The chunk of the contents from `from` on: up to CHUNK_RESULTS of one
 * playbook, closed once its payload reaches CHUNK_BYTES.
 *
 * `ascii`: lay it out taking each text's length as its UTF-8 length, in one
 * pass (a batch's contents are ASCII unless its body was not: api/json_scan.ts;
 * measuring each with Buffer.byteLength first read every content twice). The
 * written bytes then tell whether that held: a text of n units given n bytes
 * is all there and ASCII exactly when it filled them with ASCII (a unit beyond
 * ASCII takes 2 or 3 bytes, not ASCII, and only whole characters are written).
 * Null when it did not (the caller lays the chunk out again, measured).
 * Contents kept as bytes (api/json_bytes.ts) are ASCII: copied, not checked.
 */
function chunkFrom(contents: PackableContent[], from: number, ascii: boolean): Buffer | null {
  const owner = contents[from]!.playbook;
  let to = from;
  let bytes = 0;
  const lengths: number[] = [];
  let strings = false;
  while (to < contents.length && to - from < CHUNK_RESULTS && bytes < CHUNK_BYTES && contents[to]!.playbook === owner) {
    const text = contents[to]!.text;
    let n: number;
    if (typeof text !== 'string') n = text.length;
    else {
      strings = true;
      n = ascii ? text.length : Buffer.byteLength(text, 'utf8');
    }
    lengths.push(n);
    bytes += n;
    to++;
  }
  const count = to - from;
  const head = 4 + 8 * count;
  const buf = Buffer.allocUnsafe(head + bytes);
  const first = contents[from]!.id;
  buf.writeUInt32LE(count, 0);
  let end = 0;
  for (let k = 0; k < count; k++) {
    const c = contents[from + k]!;
    const n = lengths[k]!;
    const text = c.text;
    if (typeof text !== 'string') {
      text.copyTo(buf, head + end);
      c.text = new JsonBytes(buf, head + end, head + end + n);
    }
    else if (buf.write(text, head + end, n, 'utf8') !== n) return null; // (measured: always n)
    end += n;
    buf.writeUInt32LE(c.id - first, 4 + 8 * k);
    buf.writeUInt32LE(end, 8 + 8 * k);
  }
  return !ascii || !strings || isAscii(buf.subarray(head)) ? buf : null;
}

/** The content at offset `delta` from the chunk's first id, if the chunk holds one. */
function contentIn(buf: Buffer, delta: number): string | undefined {
  const count = buf.readUInt32LE(0);
  let lo = 0;
  let hi = count - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const d = buf.readUInt32LE(4 + 8 * mid);
    if (d === delta) {
      const head = 4 + 8 * count;
      const start = mid === 0 ? 0 : buf.readUInt32LE(8 * mid);
      return buf.toString('utf8', head + start, head + buf.readUInt32LE(8 + 8 * mid));
    }
    if (d < delta) lo = mid + 1; else hi = mid - 1;
  }
  return undefined;
}
