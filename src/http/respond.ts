// Writing responses: the headers every response carries (SPEC §1) and the HEAD
// rule (GET's status and headers, no body). Replies that arrive from a shard are
// written inside res.cork() so status, headers and body leave in one syscall.
import type { HttpResponse } from 'uWebSockets.js';
import { LIMITS } from '../limits.js';
import { HTTP } from '../metrics.js';

export const ALLOW_LIST = 'GET, POST, HEAD, OPTIONS';
export const ALLOW_DETAIL = 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS';
export const ALLOW_INDEX = 'GET, HEAD, OPTIONS';

const STATUS_LINE: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 204: '204 No Content',
  400: '400 Bad Request', 401: '401 Unauthorized', 403: '403 Forbidden', 404: '404 Not Found',
  405: '405 Method Not Allowed', 406: '406 Not Acceptable', 408: '408 Request Timeout', 409: '409 Conflict',
  413: '413 Content Too Large', 415: '415 Unsupported Media Type', 431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error', 503: '503 Service Unavailable',
};

/** What a response needs to know about its request, copied out of uWS's stack-allocated HttpRequest. */
export interface Exchange {
  res: HttpResponse;
  method: string;
  allow: string;
  aborted: boolean;
  done: boolean;
  /** close the connection after answering (e.g. an oversized body left unread) */
  close: boolean;
  extraHeaders: Array<[string, string]> | null;
  /** CORS (src/http/cors.ts): null when off; '' when on but the Origin is not allowed; else the Origin to echo */
  cors: string | null;
  /** answer in ARA's dialect (LOGBOOK_ARA_COMPAT; docs/ara-dialect.md) */
  ara: boolean;
  /** the dialect follows the User-Agent (LOGBOOK_ARA_COMPAT=auto): caches must key on it */
  varyAgent: boolean;
  // ---- operations: metrics slot (route × method), arrival time, path (metrics.ts) ----
  slot: number;
  t0: number;
  url: string;
}

/** A 503 tells the client when to retry (SPEC §6), unless the handler chose the headers. */
const RETRY_AFTER: Array<[string, string]> = [['Retry-After', String(LIMITS.retryAfterSeconds)]];

export function reply(ex: Exchange, status: number, body: string | null): void {
  replyAs(ex, status, body, 'application/json');
}

/** reply() with another media type (/metrics is text). */
export function replyAs(ex: Exchange, status: number, body: string | null, contentType: string): void {
  if (ex.aborted || ex.done) return;
  ex.done = true;
  if (status === 503 && ex.extraHeaders === null) ex.extraHeaders = RETRY_AFTER;
  const res = ex.res;
  res.cork(() => {
    res.writeStatus(STATUS_LINE[status] ?? String(status));
    if (body !== null) res.writeHeader('Content-Type', contentType);
    res.writeHeader('Vary', ex.varyAgent ? (ex.cors === null ? 'Accept, User-Agent' : 'Accept, Origin, User-Agent')
      : ex.cors === null ? 'Accept' : 'Accept, Origin');
    if (ex.cors) res.writeHeader('Access-Control-Allow-Origin', ex.cors);
    if (ex.allow) res.writeHeader('Allow', ex.allow); // none for a path that is nothing
    if (ex.extraHeaders) for (const [k, v] of ex.extraHeaders) res.writeHeader(k, v);
    if (body === null) res.endWithoutBody(0, ex.close);
    else if (ex.method === 'HEAD') res.endWithoutBody(Buffer.byteLength(body), ex.close);
    else res.end(body, ex.close);
  });
  HTTP.finish(ex, status);
}
