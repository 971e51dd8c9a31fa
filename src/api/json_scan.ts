// A batch body (docs/api.md#batch-ingest) checked without building it: one pass over the JSON
// bytes that tells whether JSON.parse would accept their text, and finds what the
// front needs of it (the top-level members, and the `kind` and `labels` of each
// event) as spans. JSON.parse of a batch of 1,000 results builds and then drops
// every content object, a third of the front's CPU per batch; the shard parses
// each event itself anyway.
//
// The scan reads the body's bytes, not a string of them, and handles ASCII
// bodies only: for those a byte offset is a character offset, so the spans hold
// for the text and for the shard's per-event strings (asciiEventSpans). A batch
// of 100 results is ~200 KB; as one string it is allocated in V8's large-object
// space, fresh pages each time, and decoding it cost the front as much as half
// the scan (bench/batch_cpu.ts: decode + scan of the string 6.5 µs per 1.6 KB
// result, this scan of the bytes 3.7 µs). Clients' bodies are ASCII in practice:
// Python's json.dumps escapes everything else by default, and both Ansible
// callbacks use it.
//
// The scan is sound, not complete: when it answers, JSON.parse would have
// accepted the text and given those members; it answers null for anything it
// does not handle (bytes beyond ASCII; raw control characters, tabs and
// newlines included; nesting deeper than the limit; a top level that is not an
// object; invalid JSON), and the caller then takes the JSON.parse path, which
// gives the exact error. So a pretty-printed body costs what it did before, and
// no error message changes.

import { BLOB_FIELD } from './blob_fields.js';
import { JsonBytes } from './json_bytes.js';
import { valueSkip, type LoadedSkip } from './json_skip.js';
import type { ElementSpans, MemberSpan } from './json_text.js';
import { WRITE_FIELDS } from './resources.js';

// Char codes, declared here rather than imported from json_text.ts: an imported
// binding is read through its module cell (with a check that it is initialised)
// on every use, and in the per-byte loops below that cost ~20 % of the scan.
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const SPACE = 0x20;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

/** An event of the batch: where it is, and where its `kind` and `labels` values are (last occurrence, as JSON.parse keeps). */
export interface ScannedEvent {
  start: number;
  end: number;
  /** the element is an object */
  object: boolean;
  kind: [number, number] | null;
  labels: [number, number] | null;
}

export interface ScannedBody {
  /** top-level members: decoded key → value span (last occurrence wins, as in JSON.parse) */
  members: Map<string, [number, number]>;
  /** the elements of the last top-level `events` member, when it is an array */
  events: ScannedEvent[] | null;
  /**
   * The same elements with every member of each, for the shard (which would
   * otherwise scan the events again to find them): see asciiEventSpans().
   */
  spans: Int32Array | null;
}

/*
 * Layout of ScannedBody.spans, per event: start, end, member count (-1: not an
 * object), then per member: key start (at its quote), key end (past its quote),
 * value start, value end, flags (KEY_ESCAPED, VALUE_SPACED, VALUE_FACTS).
 */
const KEY_ESCAPED = 1;
const VALUE_SPACED = 2;
/** the value is an object one of whose own keys is, or may be (it has escapes), `ansible_facts` */
const VALUE_FACTS = 4;

class Invalid extends Error {}
const INVALID = new Invalid();

/**
 * Scan `bytes` as a batch body. Null: not handled here (see above); otherwise
 * the bytes are ASCII and JSON.parse of their text is an object nested at most
 * `maxDepth` deep whose members are `members`.
 */
export function scanBatchBody(bytes: Buffer, maxDepth: number): ScannedBody | null {
  return scanned(bytes, maxDepth, (scanner) => scanner.body(valueSkip?.load(bytes, maxDepth) ?? null));
}

/**
 * Scan `bytes` as a per-record write body: null when not handled here (as for
 * scanBatchBody: the caller takes the JSON.parse path); otherwise JSON.parse of
 * their text is an object nested at most `maxDepth` deep whose members are at
 * these spans, each marked compact when its value holds no whitespace (last
 * occurrence of a key wins, as in JSON.parse).
 */
export function scanObjectBody(bytes: Buffer, maxDepth: number): Map<string, MemberSpan> | null {
  return scanned(bytes, maxDepth, (scanner) => scanner.object());
}

/** Run one scan of `bytes`; null for what the scanner does not handle (it threw INVALID). */
function scanned<T>(bytes: Buffer, maxDepth: number, scan: (scanner: Scanner) => T): T | null {
  try {
    return scan(new Scanner(bytes, maxDepth));
  } catch (err) {
    if (err === INVALID) return null;
    throw err;
  }
}

/**
 * A value of the JSON type that starts with this character: what a JSON-valued
 * field (stored as the client's text, never parsed) is validated as.
 */
export function jsonStandIn(first: number): unknown {
  switch (first) {
    case 0x7b: return {}; // {
    case 0x5b: return []; // [
    case 0x22: return ''; // "
    case 0x6e: return null; // n
    case 0x74: return true; // t
    case 0x66: return false; // f
    default: return 0;
  }
}

/** One scan of a body's bytes. A read past the end gives undefined, which matches no expected byte: every loop stops there. */
class Scanner {
  private i = 0;
  /** container kinds of the value being walked (value()), reused */
  private stack: Uint8Array | null = null;
  private readonly end: number;

  /** the same bytes, read four at a time (stringAt) */
  private readonly view: DataView;

  constructor(private readonly bytes: Buffer, private readonly maxDepth: number) {
    this.end = bytes.length;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** `skip`: the WebAssembly skip of the events' member values, with the body in its memory (null: value() walks them) */
  body(skip: LoadedSkip | null): ScannedBody {
    const { bytes } = this;
    const members = new Map<string, [number, number]>();
    // the last `events` member's elements (and their spans), when it is an array
    const last: { events: ScannedEvent[] | null; spans: SpanWriter | null } = { events: null, spans: null };
    this.topObject((key) => {
      const start = this.i;
      if (key === 'events' && bytes[start] === LBRACKET) { last.spans = new SpanWriter(); last.events = this.events(last.spans, skip); }
      else {
        if (key === 'events') { last.events = null; last.spans = null; }
        this.value(1);
      }
      members.set(key, [start, this.i]);
    });
    return { members, events: last.events, spans: last.spans === null ? null : last.spans.done() };
  }

  object(): Map<string, MemberSpan> {
    const members = new Map<string, MemberSpan>();
    this.topObject((key) => {
      const start = this.i;
      const spaces = this.spaces;
      this.value(1);
      members.set(key, [start, this.i, this.spaces === spaces, !this.factsKey]);
    });
    return members;
  }

  /** The top-level object, to the end of the body: `member(key)` walks each member's value from `i`. */
  private topObject(member: (key: string) => void): void {
    const { bytes } = this;
    this.ws();
    if (bytes[this.i] !== LBRACE) throw INVALID;
    this.i++;
    this.ws();
    if (bytes[this.i] === RBRACE) this.i++;
    else {
      for (;;) {
        member(this.key());
        if (this.afterMember()) break;
      }
    }
    this.ws();
    if (this.i !== this.end) throw INVALID;
  }

  /** At a key's opening quote: its decoded name; leaves `i` at the first character of its value. */
  private key(): string {
    const start = this.i;
    const escaped = this.skipKey();
    const { bytes } = this;
    const end = this.keyEnd;
    return escaped ? JSON.parse(bytes.toString('latin1', start, end)) as string : bytes.toString('latin1', start + 1, end - 1);
  }

  /** just past the closing quote of the key skipKey() passed */
  private keyEnd = 0;

  /** At a key's opening quote: past it, its colon and the whitespace after; whether the key has escapes. */
  private skipKey(): boolean {
    this.escaped = false;
    this.i = this.keyAt(this.i);
    return this.escaped;
  }

  /**
   * At a key's opening quote at `i`: the index of its value's first character
   * (past the key, its colon and the spaces around it); `keyEnd` is set, and
   * `escaped` when the key has escapes. The per-byte work of the scan takes its
   * position as a local (here, stringAt, scalarAt, value), not the field `i`:
   * TurboFan keeps a local in a register, where every `this.i++` is a load and
   * a store.
   */
  private keyAt(i: number): number {
    const { bytes } = this;
    if (bytes[i] !== QUOTE) throw INVALID;
    i = this.stringAt(i);
    this.keyEnd = i;
    if (bytes[i] === SPACE) i = this.spacesAt(i);
    if (bytes[i] !== COLON) throw INVALID;
    i++;
    if (bytes[i] === SPACE) i = this.spacesAt(i);
    return i;
  }

  /** After a member's value: true at the closing brace (consumed), false after a comma (at the next key). */
  private afterMember(): boolean {
    this.ws();
    const c = this.bytes[this.i++];
    if (c === RBRACE) return true;
    if (c !== COMMA) throw INVALID;
    this.ws();
    return false;
  }

  /**
   * At `[` of the top-level `events`: each element, with the spans of an object
   * element's `kind` and `labels`; every member's spans go to `spans`.
   */
  private events(spans: SpanWriter, skip: LoadedSkip | null): ScannedEvent[] {
    const { bytes } = this;
    const out: ScannedEvent[] = [];
    if (2 > this.maxDepth) throw INVALID;
    this.i++;
    this.ws();
    if (bytes[this.i] === RBRACKET) { this.i++; return out; }
    for (;;) {
      const start = this.i;
      const ev: ScannedEvent = { start, end: start, object: false, kind: null, labels: null };
      const head = spans.length;
      spans.push3(start, start, -1);
      if (bytes[start] === LBRACE) {
        if (3 > this.maxDepth) throw INVALID;
        ev.object = true;
        let count = 0;
        this.i++;
        this.ws();
        if (bytes[this.i] === RBRACE) this.i++;
        else {
          for (;;) {
            const keyStart = this.i;
            const escaped = this.skipKey();
            const keyEnd = this.keyEnd;
            const at = this.i;
            const c = bytes[at];
            let skipped = -1;
            if (skip !== null && (c === LBRACE || c === LBRACKET)) skipped = skip.skip(at, this.end, 3, this.maxDepth);
            let flags: number;
            if (skipped >= 0) {
              this.i = skipped;
              flags = skip!.flags();
            } else {
              // a scalar, or a value the skip turned away: value() walks it and is the judge of it
              const spaces = this.spaces;
              this.value(3);
              flags = (this.spaces !== spaces ? VALUE_SPACED : 0) | (this.factsKey ? VALUE_FACTS : 0);
            }
            spans.push5(keyStart, keyEnd, at, this.i, (escaped ? KEY_ESCAPED : 0) | flags);
            count++;
            // only `kind` and `labels` matter here (a key without escapes is compared in place)
            const key = escaped ? JSON.parse(bytes.toString('latin1', keyStart, keyEnd)) as string
              : keyEnd - keyStart === 6 && startsWith(bytes, KIND, keyStart) ? 'kind'
                : keyEnd - keyStart === 8 && startsWith(bytes, LABELS, keyStart) ? 'labels' : '';
            if (key === 'kind') ev.kind = [at, this.i];
            else if (key === 'labels') ev.labels = [at, this.i];
            if (this.afterMember()) break;
          }
        }
        spans.set(head + 2, count);
      } else this.value(2);
      ev.end = this.i;
      spans.set(head + 1, this.i);
      out.push(ev);
      this.ws();
      const c = bytes[this.i++];
      if (c === RBRACKET) return out;
      if (c !== COMMA) throw INVALID;
      this.ws();
    }
  }

  /**
   * One value starting at `i`, nested `depth` deep once opened (the top-level
   * object is depth 1). Containers are walked with an explicit stack of their
   * kinds, so deep nesting costs no recursion.
   */
  private value(depth: number): void {
    const { bytes } = this;
    let i = this.i;
    let c = bytes[i];
    this.factsKey = false;
    if (c !== LBRACE && c !== LBRACKET) { this.i = this.scalarAt(c, i); return; }
    if (depth + 1 > this.maxDepth) throw INVALID;
    // stack[d] = 1 inside an object, 0 inside an array, for nesting below this value
    const stack = this.stack ??= new Uint8Array(this.maxDepth + 2);
    let d = 0;
    for (;;) {
      // at the first character of a value, c
      if (c === QUOTE) i = this.stringAt(i);
      else if (c === LBRACE || c === LBRACKET) {
        if (depth + 1 + d > this.maxDepth) throw INVALID;
        const inObject: boolean = c === LBRACE;
        stack[d++] = inObject ? 1 : 0;
        i++;
        if (bytes[i] === SPACE) i = this.spacesAt(i);
        c = bytes[i];
        if (c === (inObject ? RBRACE : RBRACKET)) { i++; d--; }
        else {
          if (inObject) { const key = i; i = this.keyAt(i); if (d === 1) this.ownKey(key); c = bytes[i]; }
          continue;
        }
      } else i = this.scalarAt(c, i);
      // after a value: close containers or move to the next member/element
      for (;;) {
        if (d === 0) { this.i = i; return; }
        if (bytes[i] === SPACE) i = this.spacesAt(i);
        const n = bytes[i++];
        const inObject = stack[d - 1] === 1;
        if (n === COMMA) {
          if (bytes[i] === SPACE) i = this.spacesAt(i);
          if (inObject) { const key = i; i = this.keyAt(i); if (d === 1) this.ownKey(key); }
          c = bytes[i];
          break;
        }
        if (n !== (inObject ? RBRACE : RBRACKET)) throw INVALID;
        d--;
      }
    }
  }

  /**
   * Set by value(): the value is an object with an own key that is, or may be
   * (escaped), `ansible_facts`. A result's content with such a member has its
   * facts redacted (api/validate.ts); told here, the normalizer need not search
   * every content's text for the key (~0.2-0.7 µs a result, more than this scan
   * spends on the content's keys).
   */
  private factsKey = false;

  /**
   * The key at `start` (to keyEnd) is one of the value's own (value(), nesting
   * 1): note one that is `ansible_facts`, or longer with a backslash (escapes
   * that may spell it).
   */
  private ownKey(start: number): void {
    const { bytes, keyEnd } = this;
    const length = keyEnd - start;
    if (length === FACTS_KEY.length) {
      if (startsWith(bytes, FACTS_KEY, start)) this.factsKey = true;
    } else if (length > FACTS_KEY.length) {
      for (let k = start + 1; k < keyEnd; k++) if (bytes[k] === BACKSLASH) { this.factsKey = true; return; }
    }
  }

  /** A string, number, true, false or null at `i` (its first character `c`): the index past it. */
  private scalarAt(c: number | undefined, i: number): number {
    if (c === QUOTE) return this.stringAt(i);
    const { bytes } = this;
    // true, false, null: a 32-bit read each (false: `fals` then `e`), while four bytes are left
    if (c === 0x74 || c === 0x66 || c === 0x6e) {
      if (i + 4 > this.end) throw INVALID;
      const w = this.view.getInt32(i, true);
      if (w === TRUE) return i + 4;
      if (w === NULL) return i + 4;
      if (w === FALS && bytes[i + 4] === 0x65) return i + 5;
      throw INVALID;
    }
    // number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    if (c === MINUS) i++;
    let d = bytes[i];
    if (d === ZERO) i++;
    else if (d! > ZERO && d! <= NINE) { do i++; while (isDigit(bytes[i])); }
    else throw INVALID;
    if (bytes[i] === 0x2e) {
      i++;
      if (!isDigit(bytes[i])) throw INVALID;
      do i++; while (isDigit(bytes[i]));
    }
    d = bytes[i];
    if (d === 0x65 || d === 0x45) {
      i++;
      d = bytes[i];
      if (d === 0x2b || d === MINUS) i++;
      if (!isDigit(bytes[i])) throw INVALID;
      do i++; while (isDigit(bytes[i]));
    }
    return i;
  }


  /** set by stringAt when a string has escapes (cleared by whoever asks) */
  private escaped = false;

  /**
   * At an opening quote at `i`: the index past the closing one; sets `escaped`
   * when the string has escapes, each of which must be one JSON.parse accepts.
   * A control character or a byte beyond ASCII ends the scan (outside strings,
   * every byte is checked against the grammar anyway: this is where the scan
   * rules out both). A plain loop over the bytes: V8 compiles it to a few
   * instructions per byte, less than a call out to Buffer#indexOf per string.
   * Its first test passes the characters most strings are made of (past the
   * quote, below 0x80, not a backslash) with three comparisons.
   */
  private stringAt(i: number): number {
    const { bytes, view } = this;
    i++;
    // four bytes at a time while none of them is a quote, a backslash, a control character or beyond
    // ASCII (SWAR: a byte of x is zero where x - 0x01 borrows into its top bit and x's top bit is
    // clear; below 0x20 likewise with 0x20): most of a body is the inside of strings, and this
    // passes it at a third of the per-byte loop's cost. The byte loop below takes the rest.
    const last = this.end - 4;
    while (i <= last) {
      const w = view.getInt32(i, true);
      const q = w ^ 0x22222222;
      const b = w ^ 0x5c5c5c5c;
      if (((((q - 0x01010101) | 0) & ~q) | (((b - 0x01010101) | 0) & ~b) | (((w - 0x20202020) | 0) & ~w) | w) & 0x80808080) break;
      i += 4;
    }
    for (;;) {
      const c = bytes[i]!;
      if (c > QUOTE && c < 0x80 && c !== BACKSLASH) { i++; continue; }
      if (c === QUOTE) return i + 1;
      if (c === BACKSLASH) {
        this.escaped = true;
        const e = bytes[i + 1];
        if (e === 0x75 /* u */) {
          for (let k = i + 2; k < i + 6; k++) if (!isHex(bytes[k])) throw INVALID;
          i += 6;
        } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
          i += 2;
        } else throw INVALID;
      } else if (c === SPACE || c === 0x21) i++;
      else throw INVALID; // a control character, a byte beyond ASCII, or the end (undefined)
    }
  }

  /** whitespace characters skipped so far (a value is compact when none were skipped inside it) */
  private spaces = 0;

  private ws(): void {
    this.i = this.spacesAt(this.i);
  }

  /** The index past the spaces at `i`, counted in `spaces`. */
  private spacesAt(i: number): number {
    // tab, newline and CR never reach here (the control-character test), so JSON whitespace is a space
    const from = i;
    while (this.bytes[i] === SPACE) i++;
    this.spaces += i - from;
    return i;
  }
}

/** An Int32Array filled from the front, grown by doubling. */
class SpanWriter {
  private a = new Int32Array(4096);
  length = 0;

  private room(n: number): Int32Array {
    if (this.length + n > this.a.length) {
      const grown = new Int32Array(this.a.length * 2);
      grown.set(this.a);
      this.a = grown;
    }
    return this.a;
  }

  push3(x: number, y: number, z: number): void {
    const a = this.room(3);
    a[this.length] = x; a[this.length + 1] = y; a[this.length + 2] = z;
    this.length += 3;
  }

  push5(x: number, y: number, z: number, u: number, v: number): void {
    const a = this.room(5);
    const n = this.length;
    a[n] = x; a[n + 1] = y; a[n + 2] = z; a[n + 3] = u; a[n + 4] = v;
    this.length = n + 5;
  }

  set(at: number, value: number): void { this.a[at] = value; }

  done(): Int32Array { return this.a.subarray(0, this.length); }
}

const ascii = (word: string): Uint8Array => Buffer.from(word, 'latin1');
/** `true`, `null` and the first four bytes of `false`, as a little-endian 32-bit read gives them */
const word = (text: string): number => Buffer.from(text, 'latin1').readInt32LE(0);
const TRUE = word('true');
const NULL = word('null');
const FALS = word('fals');
const KIND = ascii('"kind"');
const LABELS = ascii('"labels"');
const FACTS_KEY = ascii('"ansible_facts"');

function startsWith(bytes: Buffer, word: Uint8Array, at: number): boolean {
  for (let k = 0; k < word.length; k++) if (bytes[at + k] !== word[k]) return false;
  return true;
}

// (a read past the end gives undefined: neither a digit nor a hex digit)
function isDigit(c: number | undefined): boolean {
  return c! >= ZERO && c! <= NINE;
}

function isHex(c: number | undefined): boolean {
  const h = c!;
  return (h >= ZERO && h <= NINE) || (h >= 0x61 && h <= 0x66) || (h >= 0x41 && h <= 0x46);
}

/**
 * The events of a batch as ScannedBody.spans describes them, in the shape
 * arrayMemberSpans() gives (api/json_text.ts), each with a text of its own: its
 * slice of `bytes` as a string, its spans relative to that slice. The shard's
 * view of the events without a second scan; a member value the scan saw no
 * whitespace in is marked compact (its stored text needs no minify pass).
 * A batch's whole text would be one string of hundreds of kilobytes, which V8
 * allocates in its large-object space, fresh pages every time (~1 µs per KB on
 * this kind of VM, more than the rest of a result's parsing); a 2 KB event is an
 * ordinary young string.
 *
 * An event's long blob value (a result's content, a host's facts…: what the
 * shard stores and does not read) is left out of its text but for its first
 * character, which tells its JSON type; its MemberSpan holds its bytes instead
 * (api/json_bytes.ts). A result's text is then its ~200 bytes of other members.
 */
export function asciiEventSpans(bytes: Buffer, spans: Int32Array): Array<[text: string, at: ElementSpans]> {
  const out: Array<[string, ElementSpans]> = [];
  for (let i = 0; i < spans.length; i = nextEvent(spans, i)) {
    const start = spans[i]!;
    const end = spans[i + 1]!;
    const kept = blobMember(bytes, spans, i);
    if (kept < 0) {
      const text = bytes.toString('latin1', start, end);
      out.push([text, elementAt(text, spans, i, start, bytes, -1)]);
      continue;
    }
    // the event's bytes but the value's after its first character, as one string
    const gapStart = spans[kept + 2]! + 1;
    const gapEnd = spans[kept + 3]!;
    const length = gapStart - start + (end - gapEnd);
    if (scratch.length < length) scratch = Buffer.allocUnsafe(Math.max(length, 2 * scratch.length));
    bytes.copy(scratch, 0, start, gapStart);
    bytes.copy(scratch, gapStart - start, gapEnd, end);
    const text = scratch.toString('latin1', 0, length);
    out.push([text, elementAt(text, spans, i, start, bytes, kept)]);
  }
  return out;
}

let scratch = Buffer.allocUnsafe(4096);

/** A blob value shorter than this stays in its event's text (and never is a field's default, `{}` or `""`). */
const BYTES_MIN = 128;

/** Per event kind with a blob field (blob_fields.ts): its `kind` value and the field's key, as written. */
const BLOB_MEMBERS: Array<[kind: Uint8Array, key: Uint8Array]> = Object.entries(BLOB_FIELD)
  .map(([kind, field]) => [ascii(JSON.stringify(kind)), ascii(JSON.stringify(field))]);

/**
 * Where in ScannedBody.spans the member of event `i` is whose value is kept out
 * of its text: its blob field (the last occurrence, as JSON.parse keeps), when
 * long enough; −1 for none. Keys are compared as written: an event with an
 * escaped key (which may spell `kind` or the field) keeps all of its text.
 */
function blobMember(bytes: Buffer, spans: Int32Array, i: number): number {
  const count = spans[i + 2]!;
  if (count <= 0) return -1;
  let kind = -1;
  for (let m = 0, j = i + 3; m < count; m++, j += 5) {
    if (spans[j + 4]! & KEY_ESCAPED) return -1;
    if (isWord(bytes, spans[j]!, spans[j + 1]!, KIND)) kind = j;
  }
  if (kind < 0) return -1;
  let key: Uint8Array | null = null;
  for (const [k, field] of BLOB_MEMBERS) if (isWord(bytes, spans[kind + 2]!, spans[kind + 3]!, k)) key = field;
  if (key === null) return -1;
  let at = -1;
  for (let m = 0, j = i + 3; m < count; m++, j += 5) if (isWord(bytes, spans[j]!, spans[j + 1]!, key)) at = j;
  return at >= 0 && spans[at + 3]! - spans[at + 2]! >= BYTES_MIN ? at : -1;
}

/** bytes[start, end) is `word` */
function isWord(bytes: Buffer, start: number, end: number, word: Uint8Array): boolean {
  return end - start === word.length && startsWith(bytes, word, start);
}

/** Where the event after the one at `i` starts in ScannedBody.spans. */
function nextEvent(spans: Int32Array, i: number): number {
  const count = spans[i + 2]!;
  return i + 3 + (count < 0 ? 0 : count * 5);
}

/**
 * The names events' members have, by length: every write field of every type
 * (and its alias) and batch ingest's own keys (docs/api.md#batch-ingest). Built here, not read
 * through an imported binding at every use.
 */
const KNOWN_KEYS: string[][] = Array.from({ length: 32 }, () => []);
for (const name of new Set([
  ...Object.values(WRITE_FIELDS).flatMap((fields) => fields.flatMap((f) => (f.alias ? [f.name, f.alias] : [f.name]))),
  'kind', 'playbook', 'play', 'task', 'host', 'file', 'uuid', 'delegated_to',
])) if (name.length < KNOWN_KEYS.length) KNOWN_KEYS[name.length]!.push(name);

/**
 * The unescaped member name at text[start, end): one of KNOWN_KEYS when it is
 * one (the same string), else a slice. A known name is a string V8 has
 * internalized already (a literal), where a slice is a new string that every
 * Map lookup and keyed store with it must hash and look up in V8's string table
 * first: ~9 members per event, each stored in two objects (ingest.ts eventObject).
 */
function memberKey(text: string, start: number, end: number): string {
  const length = end - start;
  if (length < KNOWN_KEYS.length) {
    const names = KNOWN_KEYS[length]!;
    const first = text.charCodeAt(start);
    for (let k = 0; k < names.length; k++) {
      const name = names[k]!;
      if (name.charCodeAt(0) === first && text.startsWith(name, start)) return name;
    }
  }
  return text.slice(start, end);
}

/**
 * The event at `i` of ScannedBody.spans in `text`, which holds its bytes from
 * `base` on; when `kept` is a member's index (blobMember), but for the first
 * character of that member's value, whose MemberSpan holds its bytes instead.
 */
function elementAt(text: string, spans: Int32Array, i: number, base: number, bytes: Buffer, kept: number): ElementSpans {
  // positions after the value left out move back by its length less one
  const gapEnd = kept < 0 ? Infinity : spans[kept + 3]!;
  const shift = kept < 0 ? 0 : gapEnd - spans[kept + 2]! - 1;
  const at = (p: number): number => p - base - (p < gapEnd ? 0 : shift);
  const start = spans[i]! - base;
  const end = at(spans[i + 1]!);
  const count = spans[i + 2]!;
  if (count < 0) return { span: [start, end], members: undefined };
  const members = new Map<string, MemberSpan>();
  i += 3;
  for (let m = 0; m < count; m++, i += 5) {
    const keyStart = at(spans[i]!);
    const keyEnd = at(spans[i + 1]!);
    const flags = spans[i + 4]!;
    const key = flags & KEY_ESCAPED ? JSON.parse(text.slice(keyStart, keyEnd)) as string : memberKey(text, keyStart + 1, keyEnd - 1);
    const valueStart = at(spans[i + 2]!);
    const valueEnd = at(spans[i + 3]!);
    const compact = !(flags & VALUE_SPACED);
    const noFacts = !(flags & VALUE_FACTS);
    members.set(key, i === kept
      ? [valueStart, valueEnd, compact, noFacts, new JsonBytes(bytes, spans[i + 2]!, spans[i + 3]!)]
      : [valueStart, valueEnd, compact, noFacts]);
  }
  return { span: [start, end], members };
}
