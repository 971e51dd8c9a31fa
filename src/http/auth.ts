// Authentication (docs/security.md#authentication): HTTP Basic against LOGBOOK_USERS_FILE and bearer
// tokens (`Bearer <name>.<secret>`) against LOGBOOK_TOKENS_FILE, both files of
// `name:hash:scope` lines (scope `read` or `write`; write implies read).
//
// Cost. A KDF (scrypt, src/config/password.ts) takes tenths of a second on
// purpose, so it runs at most once per distinct Authorization header:
// - verified headers are remembered in `granted`, keyed by a salted SHA-256 of
//   the header (the plaintext is never kept); a hit costs one hash and one Map
//   lookup, microseconds;
// - refused headers are remembered in `refused` the same way, so repeating a
//   wrong password costs no KDF either; the two maps are bounded and separate,
//   so a flood of wrong passwords cannot evict anyone's grant;
// - concurrent requests with the same uncached header share one verification
//   (`inflight`);
// - scrypt runs on libuv's pool via its callback, never on the event loop, and
//   at most LIMITS.authKdfConcurrency at once with LIMITS.authKdfQueue waiting:
//   past that a new credential gets 503 + Retry-After; and one client address
//   may have at most LIMITS.authKdfPerClient of them running or waiting (503
//   past it), so one client's flood of wrong passwords cannot fill the queue and
//   lock everyone else out;
// - an unknown name is verified against a dummy hash of the same cost, so it
//   takes as long to refuse as a known name with a wrong secret.
// The caches are dropped whenever the files are reloaded: on SIGHUP, and when
// either file changes (stat polled every LIMITS.authFilePollMs). A file that no
// longer parses is reported and the previous credentials stay in force.
// Nothing here logs a credential, a name from a request, or a line of a file.
import { hash, randomBytes } from 'node:crypto';
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { Errors } from '../api/errors.js';
import { LIMITS } from '../limits.js';
import { log } from '../log.js';
import { loadCredentials, type AuthSettings, type Credential, type CredentialKind, type Scope } from '../config/credentials.js';
import { dummyHash, verifySecret, type PasswordHash } from '../config/password.js';

/**
 * Who a verified header is: the credential it matched (its file, name and the
 * stored hash it was verified against), so that a long-lived request (the live
 * stream) can be re-checked after a reload without the secret and without a KDF.
 */
export interface Principal { scope: Scope; kind: CredentialKind; name: string; hash: PasswordHash }

/** A refusal: status, JSON body and the headers that go with it (null: reply()'s defaults). */
export interface Denial { status: number; body: string; headers: Array<[string, string]> | null }

const CHALLENGE: [string, string] = ['WWW-Authenticate', 'Basic realm="api"'];
const unauthorized = (body: string): Denial => ({ status: 401, body, headers: [CHALLENGE] });
const NOT_PROVIDED = () => unauthorized(Errors.noCredentials());
const INVALID = () => unauthorized(Errors.badCredentials());
const FORBIDDEN = (): Denial => ({ status: 403, body: Errors.forbidden(), headers: null });
const BUSY = (): Denial => ({ status: 503, body: Errors.overloaded(), headers: null }); // reply() adds Retry-After

class Table {
  readonly dummy: PasswordHash;
  constructor(readonly entries: Map<string, Credential>) {
    const first = entries.values().next().value as Credential | undefined;
    this.dummy = dummyHash(first?.hash ?? { logN: LIMITS.scryptLogN, r: LIMITS.scryptR, p: LIMITS.scryptP });
  }
}

/** Map with a size bound: the oldest insertion goes first. */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  if (map.size >= max) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

// ---- the authenticator --------------------------------------------------------------

type Verified = Principal | null | 'busy';

export class Authenticator {
  private users: Table;
  private tokens: Table;
  /** salt of the cache keys: makes them useless outside this process */
  private readonly keySalt = randomBytes(16).toString('hex');
  private readonly granted = new Map<string, Principal>();
  private readonly refused = new Map<string, true>();
  private readonly inflight = new Map<string, Promise<Verified>>();
  /** bumped by every reload: verifications started before it are not cached */
  private generation = 0;
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  /** KDF verifications running or waiting, per client address that asked for them */
  private readonly kdfByClient = new Map<string, number>();
  private watching = false;
  /** called after every reload that took effect (the live stream re-checks its subscribers) */
  readonly reloaded: Array<() => void> = [];

  constructor(private readonly settings: AuthSettings) {
    this.users = new Table(settings.usersFile ? loadCredentials(settings.usersFile, 'users') : new Map());
    this.tokens = new Table(settings.tokensFile ? loadCredentials(settings.tokensFile, 'tokens') : new Map());
  }

  /**
   * Decide a request: null lets it through, a Denial refuses it; a Promise only
   * when the header has to be verified first (once per distinct header).
   * `header` is the Authorization header ('' when absent).
   */
  check(header: string, write: boolean, client: () => string = () => ''): Denial | null | Promise<Denial | null> {
    const required = write ? this.settings.writeLoginRequired : this.settings.readLoginRequired;
    if (header === '') return required ? NOT_PROVIDED() : null;
    const space = header.indexOf(' ');
    const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
    // ARA (DRF BasicAuthentication) ignores other schemes: the request is anonymous.
    if (scheme !== 'basic' && scheme !== 'bearer') return required ? NOT_PROVIDED() : null;
    if (header.length > LIMITS.authHeaderBytes) return INVALID();
    const key = hash('sha256', this.keySalt + header, 'base64');
    const principal = this.granted.get(key);
    if (principal !== undefined) return permit(principal, write, required);
    if (this.refused.has(key)) return INVALID();
    const parts = header.trim().split(/\s+/);
    if (parts.length !== 2) {
      const basic = scheme === 'basic';
      if (parts.length === 1) return unauthorized(basic ? Errors.basicNoCredentials() : Errors.tokenNoCredentials());
      return unauthorized(basic ? Errors.basicSpaces() : Errors.tokenSpaces());
    }
    const creds = scheme === 'basic' ? basicCredentials(parts[1]!) : bearerCredentials(parts[1]!);
    if (creds === null) return INVALID();
    let pending = this.inflight.get(key);
    if (pending === undefined) {
      const address = client();
      const mine = this.kdfByClient.get(address) ?? 0;
      if (mine >= LIMITS.authKdfPerClient) return BUSY();
      this.kdfByClient.set(address, mine + 1);
      const settled = () => {
        const n = (this.kdfByClient.get(address) ?? 1) - 1;
        if (n > 0) this.kdfByClient.set(address, n); else this.kdfByClient.delete(address);
      };
      pending = this.verify(key, scheme === 'basic' ? 'users' : 'tokens', creds.name, creds.secret);
      pending.then(settled, settled);
      this.inflight.set(key, pending);
    }
    return pending.then((p) => (p === 'busy' ? BUSY() : p === null ? INVALID() : permit(p, write, required)));
  }

  /**
   * The principal a header was verified as (after check() let it through), or
   * null for an anonymous request (no header, another scheme) or one no longer
   * remembered.
   */
  principalOf(header: string): Principal | null {
    if (header === '' || header.length > LIMITS.authHeaderBytes) return null;
    return this.granted.get(hash('sha256', this.keySalt + header, 'base64')) ?? null;
  }

  /**
   * Is a principal verified earlier still in force: its name still in its file
   * with the same stored hash (so the same secret matches) and a scope that
   * allows `write` if asked? No KDF: the hash is compared, not the secret.
   */
  inForce(p: Principal, write: boolean): boolean {
    const credential = (p.kind === 'users' ? this.users : this.tokens).entries.get(p.name);
    if (credential === undefined) return false;
    const h = credential.hash;
    if (h.logN !== p.hash.logN || h.r !== p.hash.r || h.p !== p.hash.p || !h.salt.equals(p.hash.salt) || !h.key.equals(p.hash.key)) return false;
    return !write || credential.scope === 'write';
  }

  /** Is a login required for reads (or writes)? */
  required(write: boolean): boolean {
    return write ? this.settings.writeLoginRequired : this.settings.readLoginRequired;
  }

  private async verify(key: string, kind: CredentialKind, name: string, secret: Buffer): Promise<Verified> {
    const generation = this.generation;
    const table = kind === 'users' ? this.users : this.tokens;
    const credential = table.entries.get(name);
    let ok: boolean | 'busy';
    try {
      ok = await this.kdf(() => verifySecret(secret, credential?.hash ?? table.dummy));
    } catch (err) {
      log.error('credential verification failed', { err: String((err as Error)?.message ?? err) });
      ok = false;
    }
    // The files were reloaded meanwhile: decide against the new ones (rare; a
    // revoked credential must not slip through on a verification begun earlier).
    if (generation !== this.generation) return ok === 'busy' ? ok : this.verify(key, kind, name, secret);
    this.inflight.delete(key);
    if (ok === 'busy') return ok;
    if (ok && credential) {
      const principal: Principal = { scope: credential.scope, kind, name, hash: credential.hash };
      remember(this.granted, key, principal, LIMITS.authCacheEntries);
      return principal;
    }
    remember(this.refused, key, true, LIMITS.authRefusedEntries);
    return null;
  }

  /** Run a KDF within the concurrency and queue bounds; a finished run hands its slot to the next waiting one. */
  private kdf(task: () => Promise<boolean>): Promise<boolean | 'busy'> {
    if (this.running < LIMITS.authKdfConcurrency) {
      this.running++;
      return this.runKdf(task);
    }
    if (this.waiting.length >= LIMITS.authKdfQueue) return Promise.resolve('busy');
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => this.runKdf(task));
  }

  private runKdf(task: () => Promise<boolean>): Promise<boolean> {
    const done = () => {
      const next = this.waiting.shift();
      if (next) next(); else this.running--;
    };
    const p = task();
    p.then(done, done);
    return p;
  }

  /** Re-read both files; on any error keep the current credentials. */
  reload(why: string): boolean {
    let users: Map<string, Credential>;
    let tokens: Map<string, Credential>;
    const { usersFile, tokensFile } = this.settings;
    try {
      users = usersFile ? loadCredentials(usersFile, 'users') : new Map();
    } catch (err) {
      log.error('credentials not reloaded; the previous ones stay in force', { file: 'LOGBOOK_USERS_FILE', reason: String((err as Error).message) });
      return false;
    }
    try {
      tokens = tokensFile ? loadCredentials(tokensFile, 'tokens') : new Map();
    } catch (err) {
      log.error('credentials not reloaded; the previous ones stay in force', { file: 'LOGBOOK_TOKENS_FILE', reason: String((err as Error).message) });
      return false;
    }
    this.users = new Table(users);
    this.tokens = new Table(tokens);
    this.generation++;
    this.granted.clear();
    this.refused.clear();
    this.inflight.clear();
    log.info('credentials reloaded', { why, users: users.size, tokens: tokens.size });
    for (const listener of this.reloaded) {
      try { listener(); } catch (err) { log.error('after a credentials reload', { err: String((err as Error)?.stack ?? err) }); }
    }
    return true;
  }

  private readonly onSignal = () => { this.reload('SIGHUP'); };
  private readonly onFileChange = (curr: Stats, prev: Stats) => {
    if (curr.mtimeMs !== prev.mtimeMs || curr.size !== prev.size || curr.ino !== prev.ino) this.reload('file changed');
  };

  /** Reload on SIGHUP and when a file changes. */
  watch(): void {
    const files = [this.settings.usersFile, this.settings.tokensFile].filter((f): f is string => f !== null);
    if (this.watching || files.length === 0) return;
    this.watching = true;
    process.on('SIGHUP', this.onSignal);
    for (const f of files) watchFile(f, { interval: LIMITS.authFilePollMs, persistent: false }, this.onFileChange);
  }

  close(): void {
    if (!this.watching) return;
    this.watching = false;
    process.off('SIGHUP', this.onSignal);
    for (const f of [this.settings.usersFile, this.settings.tokensFile]) if (f) unwatchFile(f, this.onFileChange);
  }
}

/** DRF's APIAccessPermission: a method whose login is not required is open to all. */
function permit(p: Principal, write: boolean, required: boolean): Denial | null {
  if (!required) return null;
  return write && p.scope !== 'write' ? FORBIDDEN() : null;
}

interface Presented { name: string; secret: Buffer }

/** `Basic base64(name:password)`; undecodable base64 decodes to junk that matches no one (as in DRF). */
function basicCredentials(b64: string): Presented | null {
  const bytes = Buffer.from(b64, 'base64');
  const colon = bytes.indexOf(0x3a);
  if (colon <= 0) return null;
  return { name: bytes.subarray(0, colon).toString('utf8'), secret: bytes.subarray(colon + 1) };
}

/** `Bearer <name>.<secret>` */
function bearerCredentials(token: string): Presented | null {
  const dot = token.indexOf('.');
  if (dot <= 0 || dot === token.length - 1) return null;
  return { name: token.slice(0, dot), secret: Buffer.from(token.slice(dot + 1), 'utf8') };
}
