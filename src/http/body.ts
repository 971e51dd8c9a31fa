// Reading and parsing request bodies. The size cap is enforced from the
// Content-Length header before a byte is read, and again while chunks arrive
// (chunked uploads); a body over the cap is answered 413 and the connection closed.
import type { HttpResponse } from 'uWebSockets.js';
import { Errors } from '../api/errors.js';
import { pythonType } from '../api/validate.js';

export type BodyResult =
  | { ok: true; value: Record<string, unknown>; text: string }
  | { ok: false; status: number; body: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Collect the body and call `done(bytes)` once, or `tooLarge()` once if it exceeds
 * `limit`. uWS neuters each chunk's ArrayBuffer when the callback returns, so
 * every chunk but a lone last one is copied.
 */
export function readBody(res: HttpResponse, limit: number, done: (bytes: Buffer) => void, tooLarge: () => void): void {
  let parts: Buffer[] | null = null;
  let size = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (over) return;
    size += chunk.byteLength;
    if (size > limit) { over = true; tooLarge(); return; }
    if (isLast) {
      if (parts === null) done(Buffer.from(chunk));
      else { parts.push(Buffer.from(chunk)); done(Buffer.concat(parts, size)); }
      return;
    }
    (parts ??= []).push(Buffer.from(chunk.slice(0)));
  });
}

/** The media type of a Content-Type header value, without parameters. */
export function mediaType(contentType: string): string {
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/**
 * Bytes → a JSON object (SPEC §1, §6). An empty body is `{}` whatever its type;
 * otherwise the media type must be application/json.
 */
export function parseJsonBody(bytes: Buffer, contentType: string): BodyResult {
  if (bytes.length === 0) return { ok: true, value: {}, text: '{}' };
  const type = mediaType(contentType);
  if (type !== 'application/json') {
    return { ok: false, status: 415, body: Errors.unsupportedMediaType(contentType.split(';')[0]!.trim()) };
  }
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { ok: false, status: 400, body: Errors.parse('the body is not valid UTF-8') };
  }
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
  return { ok: true, value: value as Record<string, unknown>, text };
}
