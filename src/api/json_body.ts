// Request bodies → JSON objects (docs/api.md#conventions, #errors): the media type, UTF-8, the
// parse and its errors, and nesting depth (LIMITS.jsonDepth). Plain functions
// of bytes, apart from the HTTP layer that reads the bodies (http/body.ts):
// per-record writes (http/writes.ts) and batch bodies (http/ingest.ts).
import { Errors } from './errors.js';
import { pythonType } from './validate.js';
import { LIMITS } from '../limits.js';
import { jsonStandIn, scanObjectBody } from './json_scan.js';
import { parseSpan, type MemberSpan } from './json_text.js';
import { decodeUtf8 } from './utf8.js';

export type BodyResult =
  | { ok: true; value: Record<string, unknown>; text: string }
  | { ok: false; status: number; body: string };

/** The media type of a Content-Type header value, without parameters. */
export function mediaType(contentType: string): string {
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/**
 * The text of a JSON body, before it is parsed: `{}` for an empty body, a 415
 * unless the media type is application/json, a 400 unless it is UTF-8.
 */
export function jsonBodyText(bytes: Buffer, contentType: string): { ok: true; text: string } | { ok: false; status: number; body: string } {
  if (bytes.length === 0) return { ok: true, text: '{}' };
  const type = mediaType(contentType);
  if (type !== 'application/json') {
    return { ok: false, status: 415, body: Errors.unsupportedMediaType(contentType.split(';')[0]!.trim()) };
  }
  try {
    return { ok: true, text: decodeUtf8(bytes) };
  } catch {
    return { ok: false, status: 400, body: Errors.parse('the body is not valid UTF-8') };
  }
}

/**
 * A per-record write body → a JSON object (docs/api.md#conventions, #errors; an empty body is `{}`
 * whatever its type, otherwise the media type must be application/json), plus
 * where each member is in the text. The text is scanned once (api/json_scan.ts) and
 * only members that are not JSON-valued fields (`jsonFields`: result content,
 * host facts…) are parsed: those are stored as the client's text, so their
 * value here is a stand-in of the same JSON type, as batch events have it. A
 * body the scan does not handle (pretty-printed, invalid, too deep) takes the
 * JSON.parse path: every answer is the same.
 */
export function parseWriteBody(bytes: Buffer, contentType: string, jsonFields: ReadonlySet<string>): BodyResult & { members?: Map<string, MemberSpan> } {
  const decoded = jsonBodyText(bytes, contentType);
  if (!decoded.ok) return decoded;
  const { text } = decoded;
  // the scan reads the bytes, ASCII only (api/json_scan.ts): there a byte offset is the text's character offset
  const members = jsonFields.size ? scanObjectBody(bytes, LIMITS.jsonDepth) : null;
  if (members === null) return parseJsonText(text);
  const value: Record<string, unknown> = {};
  for (const [key, [start, end]] of members) {
    const v = jsonFields.has(key) ? jsonStandIn(text.charCodeAt(start)) : parseSpan(text, start, end);
    if (key === '__proto__') Object.defineProperty(value, key, { value: v, enumerable: true, writable: true, configurable: true });
    else value[key] = v;
  }
  return { ok: true, value, text, members };
}

/** A JSON body's text → an object (docs/api.md#conventions, #errors), or the 400 that says why not. */
export function parseJsonText(text: string): BodyResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, status: 400, body: Errors.parse((err as Error).message) };
  }
  if (value === null) return { ok: false, status: 400, body: Errors.noData() };
  if (typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, status: 400, body: Errors.notAnObject(pythonType(value)) };
  }
  if (nestedDeeperThan(text, LIMITS.jsonDepth)) return { ok: false, status: 400, body: Errors.tooDeep(LIMITS.jsonDepth) };
  return { ok: true, value: value as Record<string, unknown>, text };
}

/**
 * Whether valid JSON `text` nests arrays/objects deeper than `max`. V8 parses any
 * depth, but what is stored is served to Python clients, which fail near 1000
 * levels. One pass; strings are skipped with indexOf.
 */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // find the closing quote: one not preceded by an odd run of backslashes
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return false; // unreachable for valid JSON
        let k = j - 1;
        while (text.charCodeAt(k) === 0x5c /* \\ */) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}
