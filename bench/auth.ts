// Micro-benchmark of the security gate's per-request cost, in-process:
//   - Authenticator.check: anonymous, cached Basic, cached Bearer, cached refusal
//   - Guard.admit with a stand-in for uWS's HttpRequest (8 headers), anonymous
//     and with cached Basic credentials
//   - uncached: 64 concurrent first checks of one header (one verification,
//     shared) and 200 repeats of a refused one, against one scrypt verification
//   - one scrypt verification at the default cost, for scale
//   - the refusal of a known user's wrong password against an unknown user's
// Run: node dist/bench/auth.js [iterations]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HttpRequest } from 'uWebSockets.js';
import { loadConfig } from '../src/config.js';
import { Authenticator } from '../src/http/auth.js';
import { Guard } from '../src/http/guard.js';
import { hashSecret, parseHash, verifySecret, type PasswordHash } from '../src/config/password.js';
import type { Exchange } from '../src/http/respond.js';

const N = Number(process.argv[2] ?? 1_000_000);
const dir = mkdtempSync(join(tmpdir(), 'logbook-bench-auth-'));
const usersFile = join(dir, 'users');
const tokensFile = join(dir, 'tokens');
const hash = await hashSecret(Buffer.from('pw'));
writeFileSync(usersFile, `alice:${hash}:write\n`);
writeFileSync(tokensFile, `ci:${hash}:write\n`);
const basic = `Basic ${Buffer.from('alice:pw').toString('base64')}`;
const wrong = `Basic ${Buffer.from('alice:nope').toString('base64')}`;
const bearer = 'Bearer ci.pw';

const config = loadConfig({ LOGBOOK_USERS_FILE: usersFile, LOGBOOK_TOKENS_FILE: tokensFile, LOGBOOK_WRITE_LOGIN_REQUIRED: 'true' }, []);
const auth = new Authenticator(config);
for (const h of [basic, wrong, bearer]) await auth.check(h, true); // verify once each

function time(what: string, fn: () => unknown): void {
  for (let i = 0; i < N / 10; i++) fn(); // warm up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) fn();
  const ns = Number(process.hrtime.bigint() - t0) / N;
  console.log(`${what.padEnd(44)} ${(ns / 1000).toFixed(3)} µs`);
}

time('check: anonymous read', () => auth.check('', false));
time('check: cached Basic, write', () => auth.check(basic, true));
time('check: cached Bearer, write', () => auth.check(bearer, true));
time('check: cached refusal (wrong password)', () => auth.check(wrong, false));

// A stand-in for uWS's HttpRequest: what a typical ARA callback request carries.
function request(authorization: string): HttpRequest {
  const headers: Record<string, string> = {
    host: '127.0.0.1:8000', 'user-agent': 'ara-http-client_1.5.8', 'accept-encoding': 'gzip, deflate', accept: 'application/json',
    connection: 'keep-alive', 'content-type': 'application/json', 'content-length': '1600', authorization,
  };
  return {
    getHeader: (k: string) => headers[k] ?? '',
    forEach: (cb: (k: string, v: string) => void) => { for (const k in headers) cb(k, headers[k]!); },
  } as unknown as HttpRequest;
}
const guard = new Guard(config);
await guard.auth.check(basic, true); // verified once, as a first request would
const ex = (): Exchange => ({ res: null as never, method: 'POST', allow: '', aborted: false, done: false, close: false, extraHeaders: null, cors: null, ara: false, varyAgent: false, slot: 0, t0: 0, url: '/api/v1/results' });
const anonReq = request('');
const basicReq = request(basic);
const openGuard = new Guard(loadConfig({}, []));
time('Guard.admit: anonymous, no login required', () => openGuard.admit(ex(), anonReq, false, true));
time('Guard.admit: cached Basic, write login required', () => guard.admit(ex(), basicReq, false, true));
guard.close();

const h = parseHash(hash) as PasswordHash;
const t0 = performance.now();
await verifySecret(Buffer.from('pw'), h);
console.log(`${'scrypt verification (default cost, once)'.padEnd(44)} ${((performance.now() - t0) * 1000).toFixed(0)} µs`);

// Uncached credentials: concurrent first requests with one header share one
// verification (N separate ones, 2 at a time, would take N/2 verifications), and
// a refusal is cached like an acceptance.
const fresh = new Authenticator(config);
const once = `Basic ${Buffer.from('alice:never-sent').toString('base64')}`;
const t1 = performance.now();
await Promise.all(Array.from({ length: 64 }, () => fresh.check(once, false)));
console.log(`${'64 concurrent first checks of one header'.padEnd(44)} ${((performance.now() - t1) * 1000).toFixed(0)} µs`);
const t2 = performance.now();
for (let i = 0; i < 200; i++) await fresh.check(once, false);
console.log(`${'200 repeated refused checks (cached)'.padEnd(44)} ${((performance.now() - t2) * 1000).toFixed(0)} µs`);

// A wrong password of a known user and any password of an unknown one take the
// same time to refuse (an unknown user is verified against a dummy hash), so the
// time of a refusal does not tell which user names exist. Medians of first checks.
const timing = new Authenticator(config);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const refusal = async (user: string, i: number): Promise<number> => {
  const t = performance.now();
  await timing.check(`Basic ${Buffer.from(`${user}:timing-${i}`).toString('base64')}`, false);
  return (performance.now() - t) * 1000;
};
const knownRefusals: number[] = [];
const unknownRefusals: number[] = [];
for (let i = 0; i < 15; i++) { knownRefusals.push(await refusal('alice', i)); unknownRefusals.push(await refusal(`nobody-${i}`, i)); }
console.log(`${'refusal, known user (median of 15)'.padEnd(44)} ${median(knownRefusals).toFixed(0)} µs`);
console.log(`${'refusal, unknown user (median of 15)'.padEnd(44)} ${median(unknownRefusals).toFixed(0)} µs`);
rmSync(dir, { recursive: true, force: true });
