// A journal entry (a command's events) as msgpack, written here rather than by
// lmdb-js's msgpack encoder of the journal table, byte for byte what that
// encoder writes: objects as msgpackr records defined in the entry itself
// (`0xd4 0x72 id` + the keys at a structure's first use, then its id alone), so
// the table's own decoder reads these entries as it reads the ones lmdb-js
// wrote (recovery has one path, and entries written before this read as ever).
//
// Why: msgpackr's record writer walks every object's keys twice (a for…in with
// hasOwnProperty through a tree of transitions to find the structure, then
// again to write the values): 0.66-0.74 µs of the shard thread per event of a
// batch's entry. Here one for…in writes each value as its key comes (V8 reads
// a fast object's values through its enum cache) and checks the structure on
// the way against the few the entry defined, by identity (property names are
// internalized strings): 0.26-0.32 µs. An object whose keys turn out to be no
// structure defined before it is written again from its start, defining one.
//
// Values: strings, numbers, booleans, null, undefined, arrays and plain
// objects of those (what events hold). Anything else (a Date, a Map, a typed
// array, a bigint), or more than 64 structures in one entry (msgpackr would
// reuse ids), and encodeJournalEntry answers null: the caller has lmdb-js's
// encoder write the events, as before.

/** msgpackr's own-structure ids without shared structures: 0x40..0x7f (one byte each) */
const FIRST_RECORD = 0x40;
const MAX_RECORDS = 64;

class Unencodable extends Error {}
const UNENCODABLE = new Unencodable('not a journal value');

let buf = Buffer.allocUnsafeSlow(64 * 1024);
let view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
let pos = 0;
/** the structures defined in the entry being written (index = id − 0x40) */
const structures: string[][] = [];

function room(bytes: number): void {
  if (pos + bytes <= buf.length) return;
  let size = buf.length * 2;
  while (size < pos + bytes) size *= 2;
  const next = Buffer.allocUnsafeSlow(size);
  buf.copy(next, 0, 0, pos);
  buf = next;
  view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/**
 * The events' msgpack as lmdb-js's journal encoder would read it, in a buffer
 * of its own (lmdb-js keeps it until the write is done), or null when they hold
 * a value this writer does not take.
 */
export function encodeJournalEntry(events: readonly unknown[]): Uint8Array | null {
  pos = 0;
  structures.length = 0;
  try {
    writeArray(events);
  } catch (err) {
    if (err === UNENCODABLE) return null;
    throw err;
  }
  const out = new Uint8Array(pos);
  buf.copy(out, 0, 0, pos);
  return out;
}

function writeValue(v: unknown): void {
  switch (typeof v) {
    case 'string': writeString(v); return;
    case 'number': writeNumber(v); return;
    case 'boolean': room(1); buf[pos++] = v ? 0xc3 : 0xc2; return;
    case 'undefined':
      // as msgpackr writes it (fixext 1, type 0): read back as undefined
      room(3); buf[pos++] = 0xd4; buf[pos++] = 0; buf[pos++] = 0; return;
    case 'object':
      if (v === null) { room(1); buf[pos++] = 0xc0; return; }
      if (Array.isArray(v)) { writeArray(v); return; }
      if ((v as object).constructor === Object) { writeRecord(v as Record<string, unknown>); return; }
      throw UNENCODABLE;
    default: throw UNENCODABLE;
  }
}

function writeArray(a: readonly unknown[]): void {
  const n = a.length;
  room(5);
  if (n < 0x10) buf[pos++] = 0x90 | n;
  else if (n < 0x10000) { buf[pos++] = 0xdc; buf[pos++] = n >> 8; buf[pos++] = n & 0xff; }
  else { buf[pos++] = 0xdd; view.setUint32(pos, n); pos += 4; }
  for (let i = 0; i < n; i++) writeValue(a[i]);
}

/** msgpackr's choices: in records mode 0x40..0x7f are record ids, so a small integer from 0x40 takes 0xcc */
function writeNumber(v: number): void {
  room(9);
  if (v >>> 0 === v) {
    if (v < 0x40) buf[pos++] = v;
    else if (v < 0x100) { buf[pos++] = 0xcc; buf[pos++] = v; }
    else if (v < 0x10000) { buf[pos++] = 0xcd; buf[pos++] = v >> 8; buf[pos++] = v & 0xff; }
    else { buf[pos++] = 0xce; view.setUint32(pos, v); pos += 4; }
  } else if (v >> 0 === v) {
    if (v >= -0x20) buf[pos++] = 0x100 + v;
    else if (v >= -0x80) { buf[pos++] = 0xd0; buf[pos++] = v + 0x100; }
    else if (v >= -0x8000) { buf[pos++] = 0xd1; view.setInt16(pos, v); pos += 2; }
    else { buf[pos++] = 0xd2; view.setInt32(pos, v); pos += 4; }
  } else {
    buf[pos++] = 0xcb; view.setFloat64(pos, v); pos += 8;
  }
}

function writeString(s: string): void {
  const n = s.length;
  if (n < 0x20) {
    // short and ASCII (a name, a status, a path's tail): one byte a character after a 1-byte header
    room(1 + n);
    const at = pos + 1;
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[at + i] = c;
    }
    if (i === n) { buf[pos] = 0xa0 | n; pos = at + n; return; }
  }
  if (n < 0x40) {
    // as msgpackr encodes a string this short: by hand, a lone surrogate as the
    // 3 bytes of its code unit (not U+FFFD as Buffer#write would), written after
    // a 2-byte header's room and moved back when 1 byte is enough
    room(2 + 3 * n);
    let at = pos + 2;
    for (let i = 0; i < n; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) buf[at++] = c;
      else if (c < 0x800) { buf[at++] = c >> 6 | 0xc0; buf[at++] = c & 0x3f | 0x80; }
      else {
        const c2 = (c & 0xfc00) === 0xd800 ? s.charCodeAt(i + 1) : 0;
        if ((c2 & 0xfc00) === 0xdc00) {
          c = 0x10000 + ((c & 0x03ff) << 10) + (c2 & 0x03ff);
          i++;
          buf[at++] = c >> 18 | 0xf0; buf[at++] = c >> 12 & 0x3f | 0x80; buf[at++] = c >> 6 & 0x3f | 0x80; buf[at++] = c & 0x3f | 0x80;
        } else { buf[at++] = c >> 12 | 0xe0; buf[at++] = c >> 6 & 0x3f | 0x80; buf[at++] = c & 0x3f | 0x80; }
      }
    }
    const length = at - pos - 2;
    if (length < 0x20) {
      buf[pos] = 0xa0 | length;
      buf.copyWithin(pos + 1, pos + 2, at);
      pos = at - 1;
    } else { buf[pos] = 0xd9; buf[pos + 1] = length; pos = at; }
    return;
  }
  // longer: as msgpackr's encodeUtf8 (Buffer#write) does
  const bytes = Buffer.byteLength(s, 'utf8');
  room(5 + bytes);
  if (bytes < 0x100) { buf[pos++] = 0xd9; buf[pos++] = bytes; }
  else if (bytes < 0x10000) { buf[pos++] = 0xda; buf[pos++] = bytes >> 8; buf[pos++] = bytes & 0xff; }
  else { buf[pos++] = 0xdb; view.setUint32(pos, bytes); pos += 4; }
  pos += buf.write(s, pos, bytes, 'utf8');
}

function writeRecord(o: Record<string, unknown>): void {
  // one walk: each value is written as its key comes, the structure is checked on
  // the way (for…in reads a fast object's values through V8's enum cache)
  room(1);
  const at = pos++;
  const defined = structures.length;
  let s = -1;
  let known: string[] | null = null;
  let k = 0;
  for (const key in o) {
    if (known === null || known[k] !== key) {
      s = structureLike(known, k, key, defined);
      if (s < 0) break;
      known = structures[s]!;
    }
    k++;
    writeValue(o[key]);
  }
  if (known !== null && s >= 0 && k !== known.length) s = structureLike(known, k, null, defined);
  if (s >= 0) { buf[at] = FIRST_RECORD + s; return; }
  // written again from its start, with the definitions its values made on the way (now dropped)
  pos = at;
  structures.length = defined;
  defineRecord(o);
}

/**
 * One of the first `count` structures of the entry (those defined before the
 * record's first byte: a structure its values define comes after it, too late to
 * be named there) whose first `k` keys are those of `known` (none when `k` is 0)
 * and whose next is `key` (or that ends there, when `key` is null); −1: none.
 */
function structureLike(known: string[] | null, k: number, key: string | null, count: number): number {
  find: for (let s = 0; s < count; s++) {
    const candidate = structures[s]!;
    if (key === null ? candidate.length !== k : candidate.length <= k || candidate[k] !== key) continue;
    for (let i = 0; i < k; i++) if (candidate[i] !== known![i]) continue find;
    return s;
  }
  return -1;
}

/** An object whose keys are no structure of the entry yet (or are: then it is only found): its keys taken once. */
function defineRecord(o: Record<string, unknown>): void {
  const keys = Object.keys(o);
  const n = keys.length;
  let id = structureOf(keys);
  room(3);
  if (id >= 0) buf[pos++] = FIRST_RECORD + id;
  else {
    if (structures.length >= MAX_RECORDS) throw UNENCODABLE;
    id = structures.push(keys) - 1;
    buf[pos++] = 0xd4; buf[pos++] = 0x72; buf[pos++] = FIRST_RECORD + id;
    writeArray(keys);
  }
  for (let k = 0; k < n; k++) writeValue(o[keys[k]!]);
}

function structureOf(keys: string[]): number {
  const n = keys.length;
  find: for (let s = 0; s < structures.length; s++) {
    const known = structures[s]!;
    if (known.length !== n) continue;
    for (let k = 0; k < n; k++) if (known[k] !== keys[k]) continue find;
    return s;
  }
  return -1;
}
