// Users and tokens files (docs/security.md#authentication): `name:hash:scope` lines, parsed at
// start-up by config.ts (a file that does not parse stops start-up) and on every reload by
// http/auth.ts, which verifies requests against them.
import { readFileSync, statSync } from 'node:fs';
import { LIMITS } from '../limits.js';
import { parseHash, type PasswordHash } from './password.js';

export type Scope = 'read' | 'write';
export type CredentialKind = 'users' | 'tokens';

export interface Credential { hash: PasswordHash; scope: Scope }
export interface AuthSettings {
  readonly readLoginRequired: boolean;
  readonly writeLoginRequired: boolean;
  readonly usersFile: string | null;
  readonly tokensFile: string | null;
}

const TOKEN_NAME = /^[A-Za-z0-9_-]{1,64}$/;
// eslint-disable-next-line no-control-regex
const USER_NAME = /^[^:\x00-\x1f\x7f]{1,150}$/;

/** Parse a `name:hash:scope` file. Throws an Error naming the line at fault (never quoting it). */
export function parseCredentials(text: string, kind: CredentialKind): Map<string, Credential> {
  const out = new Map<string, Credential>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fail = (why: string): never => { throw new Error(`line ${i + 1}: ${why}`); };
    const first = line.indexOf(':');
    const last = line.lastIndexOf(':');
    if (first < 0 || last === first) fail('expected name:hash:scope');
    const name = line.slice(0, first);
    const scope = line.slice(last + 1).trim();
    if (kind === 'tokens' ? !TOKEN_NAME.test(name) : !USER_NAME.test(name)) {
      fail(kind === 'tokens' ? 'a token name is 1-64 of A-Z a-z 0-9 _ -' : 'a user name is 1-150 characters, no ":" or control characters');
    }
    if (scope !== 'read' && scope !== 'write') fail('scope must be read or write');
    const parsed = parseHash(line.slice(first + 1, last));
    if (typeof parsed === 'string') fail(parsed);
    if (out.has(name)) fail('duplicate name');
    out.set(name, { hash: parsed as PasswordHash, scope: scope as Scope });
  }
  return out;
}

/** Read and parse a credentials file (size-capped). Throws an Error saying why. */
export function loadCredentials(path: string, kind: CredentialKind): Map<string, Credential> {
  const size = statSync(path).size;
  if (size > LIMITS.authFileBytes) throw new Error(`larger than ${LIMITS.authFileBytes} bytes`);
  return parseCredentials(readFileSync(path, 'utf8'), kind);
}

/** Start-up check (config.ts): logins required but nobody could ever log in. */
export function authConfigProblem(s: AuthSettings): string | null {
  if ((s.readLoginRequired || s.writeLoginRequired) && s.usersFile === null && s.tokensFile === null) {
    return 'LOGBOOK_READ_LOGIN_REQUIRED/LOGBOOK_WRITE_LOGIN_REQUIRED need LOGBOOK_USERS_FILE or LOGBOOK_TOKENS_FILE';
  }
  return null;
}
