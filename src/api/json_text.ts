// Working on raw JSON text without re-serialising it.
//
// Client JSON values (result `content`, host `facts`, playbook `arguments`,
// record `value`) are stored as the client's own text: JSON.parse +
// JSON.stringify would move integer-like keys to the front of objects and
// round integers above 2^53. These helpers find, trim and rewrite parts of such
// text instead.
//
// Every function assumes the text in the span is valid JSON (the request body
// has already been through JSON.parse); on invalid JSON the results are
// unspecified but the functions still terminate. All of them are linear in the
// span: strings are skipped with indexOf, containers by depth counting.

import type { JsonBytes } from './json_bytes.js';

// Char codes used below (and by json_scan.ts).
export const QUOTE = 34; // "
export const BACKSLASH = 92; // \
export const COMMA = 44;
export const COLON = 58;
export const LBRACE = 123;
export const RBRACE = 125;
export const LBRACKET = 91;
export const RBRACKET = 93;

/**
 * JSON.parse(text.slice(start, end)) for a span that holds one valid JSON value
 * (whitespace trimmed: what the scans here and in json_scan.ts give), without
 * JSON.parse for the scalars that fill most request members: a string without
 * escapes is its own text (valid JSON has no raw control characters), a number
 * is what Number() reads (JSON's number grammar is a subset of it, and both
 * round the same way), true/false/null are themselves. Containers and strings
 * with escapes go to JSON.parse. Parsing the ~10 scalar members of a result
 * this way saves the front, and the shard for every batch event, a JSON.parse
 * call (and its slice) per member.
 */
export function parseSpan(text: string, start: number, end: number): unknown {
  const c = text.charCodeAt(start);
  if (c === QUOTE) {
    const inner = text.slice(start + 1, end - 1);
    if (inner.indexOf('\\') < 0) return inner;
  } else if (c === 0x74) return true; // t
  else if (c === 0x66) return false; // f
  else if (c === 0x6e) return null; // n
  else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return Number(text.slice(start, end));
  return JSON.parse(text.slice(start, end));
}

/** JSON whitespace is exactly these four characters. */
function isWs(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

function skipWs(text: string, i: number, end: number): number {
  while (i < end && isWs(text.charCodeAt(i))) i++;
  return i;
}

/**
 * `i` is at an opening quote; returns the index just past the closing quote.
 * indexOf finds the next quote at native speed; a quote preceded by an odd
 * number of backslashes is escaped. Each backslash run is counted once (it
 * precedes exactly one quote candidate), so this stays linear.
 */
function skipString(text: string, i: number): number {
  let q = text.indexOf('"', i + 1);
  while (q >= 0) {
    let b = q - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--;
    if (((q - 1 - b) & 1) === 0) return q + 1;
    q = text.indexOf('"', q + 1);
  }
  return text.length; // unterminated: invalid JSON, stop at the end
}

/** `i` is at the first character of a value; returns the index just past it. */
function skipValue(text: string, i: number, end: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return skipString(text, i);
  if (c === LBRACE || c === LBRACKET) {
    let depth = 0;
    while (i < end) {
      const d = text.charCodeAt(i);
      if (d === QUOTE) {
        i = skipString(text, i);
        continue;
      }
      if (d === LBRACE || d === LBRACKET) depth++;
      else if ((d === RBRACE || d === RBRACKET) && --depth === 0) return i + 1;
      i++;
    }
    return end;
  }
  // number, true, false, null: runs up to a delimiter.
  while (i < end) {
    const d = text.charCodeAt(i);
    if (d === COMMA || d === RBRACE || d === RBRACKET || isWs(d)) break;
    i++;
  }
  return i;
}

// One object member as found by nextMember(). Module-level scratch instead of a
// returned tuple: member scanning runs per key of every stored object, and
// these functions are synchronous, so nothing can interleave.
let keyStart = 0; // at the opening quote
let keyEnd = 0; // just past the closing quote
let keyEscaped = false; // key contains a backslash escape
let valueStart = 0;
let valueEnd = 0;

/**
 * `i` is just past `{` or `,` inside an object. Scans one member into the
 * scratch variables and returns the index of the `,` or `}` that follows it,
 * or -1 at the closing brace of an empty object.
 */
function nextMember(text: string, i: number, end: number): number {
  i = skipWs(text, i, end);
  if (text.charCodeAt(i) !== QUOTE) return -1;
  keyStart = i;
  // Keys are short: scan them char by char, which also tells us whether they
  // need JSON.parse to decode (only then do we pay for it).
  keyEscaped = false;
  for (i++; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) break;
    if (c === BACKSLASH) {
      keyEscaped = true;
      i++;
    }
  }
  keyEnd = ++i;
  i = skipWs(text, i, end);
  if (text.charCodeAt(i) === COLON) i++;
  valueStart = skipWs(text, i, end);
  valueEnd = skipValue(text, valueStart, end);
  return skipWs(text, valueEnd, end);
}

/** The decoded name of the member in the scratch variables. */
function memberKey(text: string): string {
  return keyEscaped ? (JSON.parse(text.slice(keyStart, keyEnd)) as string) : text.slice(keyStart + 1, keyEnd - 1);
}

/** The span of the value in text[start, end) with surrounding whitespace trimmed. */
export function valueSpan(text: string, start = 0, end = text.length): [number, number] {
  start = skipWs(text, start, end);
  while (end > start && isWs(text.charCodeAt(end - 1))) end--;
  return [start, end];
}

/**
 * If the value in text[start, end) is an object: its members' decoded keys →
 * `[valueStart, valueEnd)` of each value (whitespace excluded), in the object's
 * key order. A duplicate key keeps its first position and its last value, as
 * JSON.parse does. Otherwise undefined.
 */
export function memberSpans(
  text: string,
  start = 0,
  end = text.length,
): Map<string, [number, number]> | undefined {
  let i = skipWs(text, start, end);
  if (text.charCodeAt(i) !== LBRACE) return undefined;
  const spans = new Map<string, [number, number]>();
  while (i < end && text.charCodeAt(i) !== RBRACE) {
    i = nextMember(text, i + 1, end);
    if (i < 0) break;
    spans.set(memberKey(text), [valueStart, valueEnd]);
  }
  return spans;
}

/**
 * If the value in text[start, end) is an array: the `[start, end)` span of each
 * element (whitespace excluded), in order. Otherwise undefined.
 */
export function elementSpans(text: string, start = 0, end = text.length): Array<[number, number]> | undefined {
  const i = skipWs(text, start, end);
  return text.charCodeAt(i) === LBRACKET ? scanElements(text, i, end) : undefined;
}

/** `i` is at `[`: the spans of the elements; `scanEnd` is left just past the closing `]`. */
let scanEnd = 0;
function scanElements(text: string, i: number, end: number): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  i = skipWs(text, i + 1, end);
  if (text.charCodeAt(i) === RBRACKET) { scanEnd = i + 1; return spans; }
  while (i < end) {
    const valueEnd = skipValue(text, i, end);
    spans.push([i, valueEnd]);
    i = skipWs(text, valueEnd, end);
    if (text.charCodeAt(i) !== COMMA) break;
    i = skipWs(text, i + 1, end);
  }
  scanEnd = i + 1;
  return spans;
}

/**
 * A member value's span; `compact`: known to hold no whitespace outside strings
 * (its minified text is itself); `noFacts`: known not to be an object with an
 * `ansible_facts` member of its own (only the scans of api/json_scan.ts tell);
 * `bytes`: the value is not in the text but in these bytes (a long blob value
 * of a batch's event, api/json_scan.ts asciiEventSpans), and the span holds
 * only its first character (its JSON type).
 */
export type MemberSpan = [start: number, end: number, compact?: boolean, noFacts?: boolean, bytes?: JsonBytes];

/** An element of an array: its span and, when it is an object, its members' spans (as memberSpans gives them). */
export interface ElementSpans { span: [number, number]; members: Map<string, MemberSpan> | undefined }

/**
 * The elements of the array-valued member `name` of the object in `text`, with
 * the member spans of each object element, in one pass over the text (a batch's
 * `events`: scanned once, not once to skip the array, once to split it and once
 * per event to find its members). A duplicate key keeps its last value, as
 * JSON.parse does. Undefined when there is no such array member.
 */
export function arrayMemberSpans(text: string, name: string): ElementSpans[] | undefined {
  const end = text.length;
  let i = skipWs(text, 0, end);
  if (text.charCodeAt(i) !== LBRACE) return undefined;
  let found: ElementSpans[] | undefined;
  for (i = nextKey(text, i + 1, end); i >= 0; i = nextKey(text, i, end)) {
    const isArray = text.charCodeAt(i) === LBRACKET;
    if (isArray && memberKey(text) === name) { found = scanObjects(text, i, end); i = scanEnd; }
    else i = skipValue(text, i, end);
    i = skipWs(text, i, end);
    if (text.charCodeAt(i) !== COMMA) break;
    i++;
  }
  return found;
}

/** `i` is at `[`: each element with its members' spans; `scanEnd` is left just past the closing `]`. */
function scanObjects(text: string, i: number, end: number): ElementSpans[] {
  const out: ElementSpans[] = [];
  i = skipWs(text, i + 1, end);
  if (text.charCodeAt(i) === RBRACKET) { scanEnd = i + 1; return out; }
  while (i < end) {
    let elementEnd: number;
    let members: Map<string, MemberSpan> | undefined;
    if (text.charCodeAt(i) === LBRACE) {
      members = new Map();
      let j = i;
      while (j < end && text.charCodeAt(j) !== RBRACE) {
        j = nextMember(text, j + 1, end);
        if (j < 0) break;
        members.set(memberKey(text), [valueStart, valueEnd]);
      }
      // j is at the closing brace (or -1 right after `{` of an empty object)
      elementEnd = j < 0 ? skipWs(text, i + 1, end) + 1 : j + 1;
    } else elementEnd = skipValue(text, i, end);
    out.push({ span: [i, elementEnd], members });
    i = skipWs(text, elementEnd, end);
    if (text.charCodeAt(i) !== COMMA) break;
    i = skipWs(text, i + 1, end);
  }
  scanEnd = i + 1;
  return out;
}

/** `i` is just past `{` or `,`: reads a key into the scratch variables; returns the index of its value, or -1. */
function nextKey(text: string, i: number, end: number): number {
  i = skipWs(text, i, end);
  if (text.charCodeAt(i) !== QUOTE) return -1;
  keyStart = i;
  keyEnd = skipString(text, i);
  keyEscaped = text.slice(keyStart, keyEnd).includes('\\');
  i = skipWs(text, keyEnd, end);
  if (text.charCodeAt(i) === COLON) i++;
  return skipWs(text, i, end);
}

/**
 * The value in text[start, end) with every whitespace character outside
 * strings removed. Text that is already compact is returned as a slice of the
 * input (no copy of its parts).
 */
export function minify(text: string, start = 0, end = text.length): string {
  start = skipWs(text, start, end);
  while (end > start && isWs(text.charCodeAt(end - 1))) end--;
  let out = '';
  let chunk = start; // start of the current run of kept characters
  let i = start;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = skipString(text, i);
    } else if (isWs(c)) {
      out += text.slice(chunk, i);
      i = skipWs(text, i, end);
      chunk = i;
    } else {
      i++;
    }
  }
  return chunk === start ? text.slice(start, end) : out + text.slice(chunk, end);
}

/**
 * For an object value in text[start, end): its minified text with the value of
 * each member named in `replacements` (decoded key → JSON text, inserted as
 * given) replaced. Members that are absent are not added; a duplicated key has
 * every occurrence replaced. A value that is not an object is returned
 * minified and otherwise unchanged.
 */
export function replaceValues(
  text: string,
  start: number,
  end: number,
  replacements: Map<string, string>,
): string {
  let i = skipWs(text, start, end);
  if (replacements.size === 0 || text.charCodeAt(i) !== LBRACE) return minify(text, start, end);
  let out = '{';
  while (i < end && text.charCodeAt(i) !== RBRACE) {
    i = nextMember(text, i + 1, end);
    if (i < 0) break;
    if (out.length > 1) out += ',';
    const replacement = replacements.get(memberKey(text));
    out += text.slice(keyStart, keyEnd) + ':';
    out += replacement ?? minify(text, valueStart, valueEnd);
  }
  return out + '}';
}
