// The front's security gate, run on every request before its body is read and
// before routing decides 404/405 (ARA's order: 401 → 405 → 404 → 415/400).
// Only admission comes first: a request refused for overload gets its 503
// without a credential check (Front.refuse runs this gate with `open` set):
//   1. CORS: mark the exchange for Access-Control-Allow-Origin (and Vary: Origin);
//   2. repeated singleton headers (two Content-Length, two Host, …) → 400 and
//      close: uWS would silently use the first, a proxy in front might use the
//      last (request smuggling);
//   3. CORS preflights from allowed origins are answered at once, without credentials;
//   4. authentication and scope (src/http/auth.ts).
// Everything is read from uWS's HttpRequest synchronously, before any await.
import type { HttpRequest } from 'uWebSockets.js';
import type { Config } from '../config.js';
import { Errors } from '../api/errors.js';
import { Authenticator, type Denial } from './auth.js';
import { Cors } from './cors.js';
import { reply, type Exchange } from './respond.js';

/** Headers that must appear at most once (RFC 9110 §5.3, RFC 9112 §6.3). */
const SINGLETONS = new Map<string, number>([
  ['content-length', 1], ['transfer-encoding', 2], ['host', 4], ['authorization', 8], ['content-type', 16], ['origin', 32],
]);
// req.forEach with one preallocated callback and module state: no closure per request.
let seenHeaders = 0;
let repeatedHeader = '';
function visitHeader(key: string): void {
  const bit = SINGLETONS.get(key);
  if (bit === undefined) return;
  if ((seenHeaders & bit) !== 0 && repeatedHeader === '') repeatedHeader = key;
  seenHeaders |= bit;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export class Guard {
  readonly auth: Authenticator;
  readonly cors: Cors;

  constructor(config: Config) {
    this.auth = new Authenticator(config);
    this.cors = new Cors(config.corsOrigins);
    this.auth.watch();
  }

  /**
   * Screen one request. true: go on; false: it has been answered; a Promise
   * when credentials must be verified first (it settles to true or false).
   * `open`: a route everyone may read (health checks), exempt from login.
   * `authorization`: the credentials to check instead of the header (the live
   * stream's `token` query parameter). `writeScope`: a read that needs the write
   * scope (the webhook endpoints).
   */
  admit(ex: Exchange, req: HttpRequest, open: boolean, hasBody: boolean, authorization?: string, writeScope = false): boolean | Promise<boolean> {
    if (this.cors.enabled) ex.cors = this.cors.match(req.getHeader('origin'));
    seenHeaders = 0;
    repeatedHeader = '';
    req.forEach(visitHeader);
    if (repeatedHeader !== '') {
      ex.close = true;
      reply(ex, 400, Errors.duplicateHeader(repeatedHeader));
      return false;
    }
    if (ex.cors && ex.method === 'OPTIONS' && req.getHeader('access-control-request-method') !== '') {
      ex.extraHeaders = this.cors.preflightHeaders();
      ex.close = hasBody;
      reply(ex, 200, null);
      return false;
    }
    if (open) return true;
    const verdict = this.auth.check(authorization ?? req.getHeader('authorization'), writeScope || !SAFE_METHODS.has(ex.method), () => addressOf(ex));
    if (verdict === null) return true;
    if (!(verdict instanceof Promise)) return deny(ex, verdict, hasBody);
    return verdict.then((v) => (v === null ? true : deny(ex, v, hasBody)));
  }

  close(): void {
    this.auth.close();
  }
}

/** The client's address (who a password check is counted against). */
function addressOf(ex: Exchange): string {
  return Buffer.from(ex.res.getRemoteAddressAsText()).toString();
}

/** Answer a refusal. A body that may still be arriving is left unread: close after. */
function deny(ex: Exchange, d: Denial, hasBody: boolean): false {
  ex.extraHeaders = d.headers;
  if (hasBody) ex.close = true;
  reply(ex, d.status, d.body);
  return false;
}
