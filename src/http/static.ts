// The web UI's files (docs/ui.md), served by the front from memory.
//
// The bundle is built by `npm run build` (scripts/build_ui.mjs) into dist/ui:
// index.html plus content-hashed assets under assets/. Everything is read once
// at start-up, with a gzip copy of what compresses and a strong ETag, so a
// request costs a Map lookup and one write. Hashed assets never change under
// their name: a year of caching, `immutable`. index.html is `no-cache`
// (revalidated by ETag) so a new build reaches browsers at once.
//
// Routes: `/` → 302 `/ui/`; `/ui/assets/<file>` → the asset (no login: code,
// no data); any other `/ui/...` address → index.html (the app routes in the
// browser). With read login required a page without valid credentials gets a
// 401 whose challenge (`Basic realm="logbook"`) makes a browser prompt, and
// whose body is still the app, so someone who cancels the prompt can sign in
// with a token instead (the app keeps it in sessionStorage).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { Errors } from '../api/errors.js';
import { log } from '../log.js';
import type { Denial } from './auth.js';
import type { Guard } from './guard.js';

/** dist/src/http/static.js → dist/ui */
export const UI_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'ui');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.map': 'application/json', '.json': 'application/json',
  '.woff2': 'font/woff2', '.txt': 'text/plain; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.map', '.json', '.txt']);

// The app loads only its own files and talks only to this origin.
const SECURITY: Array<[string, string]> = [
  ['X-Content-Type-Options', 'nosniff'],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'same-origin'],
  ['Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"],
];
const CHALLENGE = 'Basic realm="logbook"';
const ALLOW = 'GET, HEAD';

interface StaticFile { type: string; body: Buffer; gzip: Buffer | null; etag: string; cache: string }

/**
 * ARA's web UI paths (ara/ui/urls.py, 1.5 to its newest commit), which ARA's
 * CLI prints as `report:` links and its callback as the playbook's address:
 * the logbook UI page of the same object, or of the list closest to ARA's
 * index pages (logbook has no host or task index: the playbooks). null: not
 * one of ARA's paths.
 */
const ARA_OBJECT_PAGE = /^\/(playbooks|hosts|results|files|records)\/([1-9]\d{0,15})\.html$/;
const ARA_INDEX_PAGES = new Set(['/hosts', '/hosts/', '/tasks', '/tasks/', '/distributed', '/distributed/']);
export function araWebPathTarget(url: string): string | null {
  const m = ARA_OBJECT_PAGE.exec(url);
  if (m) return `/ui/${m[1]}/${m[2]}`;
  return ARA_INDEX_PAGES.has(url) ? '/ui/' : null;
}

/** `/`, `/ui` and everything under `/ui/` belong to the UI (checked before API routing). */
export function isUiPath(url: string): boolean {
  return url === '/' || url === '/ui' || url.startsWith('/ui/');
}

export class UiFiles {
  private readonly assets = new Map<string, StaticFile>();
  private readonly index: StaticFile | null;

  constructor(dir = UI_DIR) {
    this.index = existsSync(join(dir, 'index.html')) ? load(join(dir, 'index.html'), 'no-cache') : null;
    const assetDir = join(dir, 'assets');
    if (existsSync(assetDir)) {
      for (const name of readdirSync(assetDir)) this.assets.set(name, load(join(assetDir, name), 'public, max-age=31536000, immutable'));
    }
    if (!this.index) log.warn('web UI not built: /ui/ answers 404 (run npm run build)', { dir });
  }

  /** Answer a request for a UI path (isUiPath): synchronously, or after its credentials are verified. */
  serve(res: HttpResponse, req: HttpRequest, guard: Guard): void {
    // Attached first, always: uWS aborts the process when a handler returns
    // from a HEAD answered by endWithoutBody(length) without one (uws 20).
    let aborted = false;
    res.onAborted(() => { aborted = true; });
    const method = req.getCaseSensitiveMethod();
    const url = req.getUrl();
    const head = method === 'HEAD';
    if (method !== 'GET' && !head) {
      // uWS frames and drops a body nobody reads: the connection stays usable
      return send(res, '405 Method Not Allowed', json(Errors.methodNotAllowed(method)), [['Allow', ALLOW]], false);
    }
    if (url === '/' || url === '/ui') return send(res, '302 Found', null, [['Location', '/ui/']], head);
    const gzip = /\bgzip\b/.test(req.getHeader('accept-encoding'));
    const ifNoneMatch = req.getHeader('if-none-match');
    if (url.startsWith('/ui/assets/')) {
      const file = this.assets.get(url.slice(11));
      return file ? sendFile(res, file, '200 OK', gzip, ifNoneMatch, head, []) : send(res, '404 Not Found', json(Errors.notFound()), [], head);
    }
    const index = this.index;
    if (!index) return send(res, '404 Not Found', json(Errors.notFound()), [], head);
    const verdict = guard.auth.check(req.getHeader('authorization'), false, () => Buffer.from(res.getRemoteAddressAsText()).toString());
    if (verdict === null) return sendFile(res, index, '200 OK', gzip, ifNoneMatch, head, []);
    if (!(verdict instanceof Promise)) return this.refuse(res, verdict, gzip, head);
    verdict.then((v) => {
      if (aborted) return;
      if (v === null) sendFile(res, index, '200 OK', gzip, '', head, []);
      else this.refuse(res, v, gzip, head);
    }, () => {
      if (!aborted) send(res, '500 Internal Server Error', json(Errors.internal()), [], head);
    });
  }

  /** 302 from one of ARA's web paths to logbook's page (araWebPathTarget): no data, so no login either (as `/` → `/ui/`). */
  redirect(res: HttpResponse, req: HttpRequest, location: string): void {
    res.onAborted(() => {}); // attached first, always (see serve())
    const method = req.getCaseSensitiveMethod();
    if (method !== 'GET' && method !== 'HEAD') {
      return send(res, '405 Method Not Allowed', json(Errors.methodNotAllowed(method)), [['Allow', ALLOW]], false);
    }
    send(res, '302 Found', null, [['Location', location]], method === 'HEAD');
  }

  /** 401: the browser's prompt, and the app as body (its token sign-in); anything else as the API says. */
  private refuse(res: HttpResponse, d: Denial, gzip: boolean, head: boolean): void {
    if (d.status === 401) return sendFile(res, this.index!, '401 Unauthorized', gzip, '', head, [['WWW-Authenticate', CHALLENGE]]);
    const line = d.status === 503 ? '503 Service Unavailable' : d.status === 403 ? '403 Forbidden' : `${d.status} Error`;
    send(res, line, json(d.body), d.status === 503 ? [['Retry-After', '1']] : [], head);
  }
}

function load(path: string, cache: string): StaticFile {
  const body = readFileSync(path);
  const ext = extname(path);
  let gzip: Buffer | null = null;
  if (COMPRESSIBLE.has(ext) && body.length > 512) {
    const z = gzipSync(body, { level: 9 });
    if (z.length < body.length * 0.9) gzip = z;
  }
  const etag = `"${createHash('sha1').update(body).digest('base64url').slice(0, 22)}"`;
  return { type: TYPES[ext] ?? 'application/octet-stream', body, gzip, etag, cache };
}

interface Body { type: string; data: Buffer }
const json = (text: string): Body => ({ type: 'application/json', data: Buffer.from(text) });

function sendFile(res: HttpResponse, f: StaticFile, status: string, gzip: boolean, ifNoneMatch: string, head: boolean, extra: Array<[string, string]>): void {
  const headers: Array<[string, string]> = [['ETag', f.etag], ['Cache-Control', f.cache], ...extra];
  if (f.gzip) headers.push(['Vary', 'Accept-Encoding']);
  if (status === '200 OK' && ifNoneMatch !== '' && ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === f.etag)) {
    return send(res, '304 Not Modified', null, headers, true);
  }
  const zipped = gzip && f.gzip !== null;
  if (zipped) headers.push(['Content-Encoding', 'gzip']);
  send(res, status, { type: f.type, data: zipped ? f.gzip! : f.body }, headers, head);
}

function send(res: HttpResponse, status: string, body: Body | null, headers: Array<[string, string]>, head: boolean): void {
  // one write for status, headers and body, also when answering after an await
  res.cork(() => {
    res.writeStatus(status);
    if (body) res.writeHeader('Content-Type', body.type);
    for (const [k, v] of SECURITY) res.writeHeader(k, v);
    for (const [k, v] of headers) res.writeHeader(k, v);
    if (body === null) res.endWithoutBody(0, false);
    else if (head) res.endWithoutBody(body.data.length, false);
    else res.end(body.data, false);
  });
}
