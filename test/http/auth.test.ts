// Authentication, scopes and CORS (SPEC §7, ARA behaviours §7), against a real
// server: the 401/403 rules and their order, Basic and Bearer, the cost of
// authenticated requests once verified (cache), de-duplication and bounds of
// KDF work, reload on SIGHUP and on file change, unknown vs known user timing,
// and CORS preflights. Timing assertions are deliberately coarse (2 shared cores).
import test from 'ava';
import { mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { parseCredentials } from '../../src/config/credentials.js';
import { formatHash, hashSecret, parseHash, verifySecret, type PasswordHash } from '../../src/config/password.js';

// Cheaper than the production default (2^15) so the suite stays quick, but still
// tens of milliseconds here: far above the microseconds a cached check costs.
const LN = 14;

const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const NOT_PROVIDED = { detail: 'Authentication credentials were not provided.' };
const INVALID = { detail: 'Invalid username/password.' };
const FORBIDDEN = { detail: 'You do not have permission to perform this action.' };
const PLAYBOOK = { path: '/p.yml', runner_version: '2.16.0' };

const dir = mkdtempSync(join(tmpdir(), 'logbook-auth-'));
const USERS = join(dir, 'users');
const TOKENS = join(dir, 'tokens');
const hashes = new Map<string, string>();
async function hashOf(secret: string): Promise<string> {
  if (!hashes.has(secret)) hashes.set(secret, await hashSecret(Buffer.from(secret), LN));
  return hashes.get(secret)!;
}

let strict: Logbook; // read and write login required, CORS on
let open: Logbook; // no login required; credentials still checked when present

test.before(async () => {
  writeFileSync(USERS, [
    '# name:hash:scope',
    `alice:${await hashOf('alice-pw')}:write`,
    `bob:${await hashOf('bob-pw')}:read`,
    `ünï:${await hashOf('pässwörd')}:write`,
    '',
  ].join('\n'));
  writeFileSync(TOKENS, `ci:${await hashOf('ci-secret')}:write\ndash:${await hashOf('dash-secret')}:read\n`);
  [strict, open] = await Promise.all([
    startLogbook({ env: {
      LOGBOOK_READ_LOGIN_REQUIRED: 'true', LOGBOOK_WRITE_LOGIN_REQUIRED: 'true',
      LOGBOOK_USERS_FILE: USERS, LOGBOOK_TOKENS_FILE: TOKENS,
      LOGBOOK_CORS_ORIGINS: 'http://ui.example, https://dash.example:8443',
    } }),
    startLogbook({ env: { LOGBOOK_USERS_FILE: USERS, LOGBOOK_TOKENS_FILE: TOKENS } }),
  ]);
});

test.after.always(async () => {
  await Promise.all([strict?.stop(), open?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

// ---- hashes and files (in-process) ------------------------------------------------

test('hashes carry their parameters and salt, verify only the right secret', async (t) => {
  const a = await hashSecret(Buffer.from('s3cret'), 10);
  const b = await hashSecret(Buffer.from('s3cret'), 10);
  t.regex(a, /^\$scrypt\$ln=10,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
  t.not(a, b, 'fresh salt each time');
  const h = parseHash(a) as PasswordHash;
  t.is(formatHash(h), a);
  t.true(await verifySecret(Buffer.from('s3cret'), h));
  t.false(await verifySecret(Buffer.from('s3cret '), h));
  t.is(typeof parseHash('$scrypt$ln=40,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), 'string', 'cost bounded');
  t.is(typeof parseHash('$scrypt$ln=20,r=99,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), 'string', 'memory bounded');
  t.is(typeof parseHash('plaintext'), 'string');
});

test('credential files: comments, blank lines, scopes; errors name the line, never quote it', async (t) => {
  const h = await hashOf('alice-pw');
  const table = parseCredentials(`# c\n\n a:${h}:read \r\nb:${h}:write\n`, 'users');
  t.deepEqual([...table.keys()], ['a', 'b']);
  t.is(table.get('a')!.scope, 'read');
  const err = (text: string, kind: 'users' | 'tokens' = 'users') => t.throws(() => parseCredentials(text, kind))!.message;
  t.is(err(`a:${h}:admin`), 'line 1: scope must be read or write');
  t.regex(err(`a:${h}:read\na:${h}:read`), /^line 2: duplicate name/);
  t.regex(err('a:secret:read'), /^line 1: not a \$scrypt/);
  t.regex(err(`a.b:${h}:read`, 'tokens'), /^line 1: a token name/);
  t.regex(err('nocolons'), /^line 1: expected name:hash:scope/);
  t.false(err('x:hunter2:read').includes('hunter2'));
});

// ---- the rules -----------------------------------------------------------------------

test('missing credentials where required: 401 with the challenge, before 404 and 405', async (t) => {
  for (const [method, path] of [
    ['GET', '/api/v1/playbooks'], ['HEAD', '/api/v1/playbooks'], ['OPTIONS', '/api/v1/playbooks'],
    ['GET', '/api/'], ['GET', '/api/v1/'], ['GET', '/api/v1/playbooks/999'], ['DELETE', '/api/v1/playbooks'],
    ['POST', '/api/v1/hosts/1'], ['POST', '/api/v1/playbooks'], ['GET', '/api/v1/nothing-here'], ['BREW', '/api/v1/labels'],
  ] as const) {
    const r = await api(strict.url, method, path, method === 'POST' ? PLAYBOOK : undefined);
    t.is(r.status, 401, `${method} ${path}`);
    t.is(r.headers.get('www-authenticate'), 'Basic realm="api"', `${method} ${path}`);
    if (method !== 'HEAD') t.deepEqual(r.body, NOT_PROVIDED, `${method} ${path}`);
  }
  t.is((await api(strict.url, 'GET', '/healthz')).status, 200, 'health checks need no login');
});

test('Basic: right password passes, wrong password and unknown users get 401 Invalid', async (t) => {
  const ok = await api(strict.url, 'GET', '/api/v1/playbooks', undefined, basic('alice', 'alice-pw'));
  t.is(ok.status, 200);
  t.is(ok.body.count, 0);
  for (const h of [basic('alice', 'nope'), basic('nobody', 'alice-pw'), basic('alice', ''), { authorization: 'Basic !!!notbase64' }]) {
    const r = await api(strict.url, 'GET', '/api/v1/playbooks', undefined, h);
    t.is(r.status, 401);
    t.deepEqual(r.body, INVALID);
    t.is(r.headers.get('www-authenticate'), 'Basic realm="api"');
  }
  const created = await api(strict.url, 'POST', '/api/v1/labels', { name: 'by-alice' }, basic('alice', 'alice-pw'));
  t.is(created.status, 201);
  t.is((await api(strict.url, 'GET', '/api/v1/labels', undefined, basic('ünï', 'pässwörd'))).status, 200, 'UTF-8 names and passwords');
});

test('malformed Basic headers get DRF wording; other schemes are anonymous', async (t) => {
  let r = await api(open.url, 'GET', '/api/v1/labels', undefined, { authorization: 'Basic' });
  t.is(r.status, 401);
  t.deepEqual(r.body, { detail: 'Invalid basic header. No credentials provided.' });
  r = await api(open.url, 'GET', '/api/v1/labels', undefined, { authorization: 'Basic a b' });
  t.deepEqual(r.body, { detail: 'Invalid basic header. Credentials string should not contain spaces.' });
  t.is((await api(open.url, 'GET', '/api/v1/labels', undefined, { authorization: 'Digest abc' })).status, 200);
  r = await api(strict.url, 'GET', '/api/v1/labels', undefined, { authorization: 'Negotiate abc' });
  t.is(r.status, 401);
  t.deepEqual(r.body, NOT_PROVIDED);
  r = await api(open.url, 'GET', '/api/v1/labels', undefined, { authorization: `Basic ${'A'.repeat(3000)}` });
  t.is(r.status, 401, 'oversized credentials are wrong credentials');
  t.deepEqual(r.body, INVALID);
});

test('wrong credentials get 401 even where no login is required', async (t) => {
  t.is((await api(open.url, 'GET', '/api/v1/playbooks')).status, 200);
  t.is((await api(open.url, 'POST', '/api/v1/playbooks', PLAYBOOK)).status, 201);
  for (const h of [basic('alice', 'wrong'), bearer('ci.wrong'), bearer('nobody.x'), bearer('no-dot')]) {
    const r = await api(open.url, 'GET', '/api/v1/playbooks', undefined, h);
    t.is(r.status, 401, h.authorization);
    t.deepEqual(r.body, INVALID);
    t.is(r.headers.get('www-authenticate'), 'Basic realm="api"');
  }
  t.is((await api(open.url, 'GET', '/api/v1/playbooks', undefined, basic('bob', 'bob-pw'))).status, 200);
  t.is((await api(open.url, 'POST', '/api/v1/playbooks', PLAYBOOK, basic('bob', 'bob-pw'))).status, 201,
    'a method whose login is not required is open to all (DRF APIAccessPermission)');
});

test('scopes: read cannot write (403), write implies read; Basic and Bearer alike', async (t) => {
  for (const [who, h] of [['bob', basic('bob', 'bob-pw')], ['dash token', bearer('dash.dash-secret')]] as const) {
    t.is((await api(strict.url, 'GET', '/api/v1/playbooks', undefined, h)).status, 200, who);
    t.is((await api(strict.url, 'HEAD', '/api/v1/playbooks', undefined, h)).status, 200, who);
    t.is((await api(strict.url, 'OPTIONS', '/api/v1/playbooks', undefined, h)).status, 200, who);
    for (const [method, path] of [['POST', '/api/v1/playbooks'], ['DELETE', '/api/v1/playbooks/999'], ['PATCH', '/api/v1/labels/1']] as const) {
      const r = await api(strict.url, method, path, method === 'DELETE' ? undefined : PLAYBOOK, h);
      t.is(r.status, 403, `${who} ${method} ${path}`);
      t.deepEqual(r.body, FORBIDDEN);
    }
  }
  const h = bearer('ci.ci-secret');
  const created = await api(strict.url, 'POST', '/api/v1/playbooks', PLAYBOOK, h);
  t.is(created.status, 201);
  t.is((await api(strict.url, 'GET', `/api/v1/playbooks/${created.body.id}`, undefined, h)).status, 200);
  t.is((await api(strict.url, 'DELETE', `/api/v1/playbooks/${created.body.id}`, undefined, h)).status, 204);
  t.is((await api(strict.url, 'GET', '/api/v1/playbooks', undefined, bearer('ci.ci-secretX'))).status, 401);
  t.is((await api(strict.url, 'GET', '/api/v1/playbooks', undefined, bearer('ci.'))).status, 401);
  t.is((await api(strict.url, 'GET', '/api/v1/playbooks', undefined, bearer('alice.alice-pw'))).status, 401,
    'users are not tokens');
});

test('write login only: anonymous reads pass, anonymous writes get 401', async (t) => {
  const lb = await startLogbook({ env: { LOGBOOK_WRITE_LOGIN_REQUIRED: 'true', LOGBOOK_TOKENS_FILE: TOKENS } });
  try {
    t.is((await api(lb.url, 'GET', '/api/v1/playbooks')).status, 200);
    t.is((await api(lb.url, 'OPTIONS', '/api/v1/playbooks')).status, 200);
    const r = await api(lb.url, 'POST', '/api/v1/playbooks', PLAYBOOK);
    t.is(r.status, 401);
    t.deepEqual(r.body, NOT_PROVIDED);
    t.is((await api(lb.url, 'POST', '/api/v1/playbooks', PLAYBOOK, bearer('ci.ci-secret'))).status, 201);
    t.is((await api(lb.url, 'GET', '/api/v1/playbooks')).body.count, 1, 'the refused write changed nothing');
  } finally {
    await lb.stop();
  }
});

test('a bad auth configuration stops start-up naming the variable', async (t) => {
  const bad = join(dir, 'bad-users');
  writeFileSync(bad, 'alice:plaintext-password:write\n');
  let err = await t.throwsAsync(startLogbook({ env: { LOGBOOK_USERS_FILE: bad } }));
  t.regex(err!.message, /LOGBOOK_USERS_FILE.*line 1: not a \$scrypt/);
  t.false(err!.message.includes('plaintext-password'), 'the file is never quoted');
  err = await t.throwsAsync(startLogbook({ env: { LOGBOOK_TOKENS_FILE: join(dir, 'missing') } }));
  t.regex(err!.message, /LOGBOOK_TOKENS_FILE/);
  err = await t.throwsAsync(startLogbook({ env: { LOGBOOK_READ_LOGIN_REQUIRED: 'true' } }));
  t.regex(err!.message, /LOGBOOK_READ_LOGIN_REQUIRED.*LOGBOOK_USERS_FILE/);
});

// ---- cost ------------------------------------------------------------------------------

// What these cost (a cached verdict, one verification shared by concurrent
// requests, a cached refusal) is measured by bench/auth.ts, not asserted here:
// a test on a loaded machine cannot tell microseconds from a KDF reliably.

test.serial('once verified, Basic and Bearer requests keep being answered like anonymous ones', async (t) => {
  const kinds: Array<[string, Record<string, string>]> = [
    ['anonymous', {}], ['Basic', basic('alice', 'alice-pw')], ['Bearer', bearer('ci.ci-secret')],
  ];
  for (let i = 0; i < 25; i++) {
    for (const [kind, h] of kinds) t.is((await api(open.url, 'GET', '/api/v1/labels', undefined, h)).status, 200, kind);
  }
});

test.serial('concurrent first requests with the same wrong credentials are all refused', async (t) => {
  // a password never sent before is uncached: all the requests need its verdict at once
  const N = 64;
  const wrong = basic('alice', `shared-${Date.now()}`);
  const rs = await Promise.all(Array.from({ length: N }, () => api(open.url, 'GET', '/api/v1/labels', undefined, wrong)));
  t.deepEqual(new Set(rs.map((r) => r.status)), new Set([401]));
});

test.serial('repeated wrong credentials are refused every time (a cached refusal)', async (t) => {
  const h = basic('alice', `wrong-${Date.now()}`);
  for (let i = 0; i < 50; i++) t.is((await api(open.url, 'GET', '/api/v1/labels', undefined, h)).status, 401);
});

test.serial('a flood of distinct wrong passwords is bounded: excess gets 503 + Retry-After, never a crash', async (t) => {
  const rs = await Promise.all(Array.from({ length: 120 }, (_, i) =>
    api(open.url, 'GET', '/api/v1/labels', undefined, basic(i % 2 ? 'alice' : `ghost${i}`, `flood-${i}-${Date.now()}`))));
  const statuses = new Map<number, number>();
  for (const r of rs) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  t.log(Object.fromEntries(statuses));
  t.true([...statuses.keys()].every((s) => s === 401 || s === 503));
  t.true((statuses.get(503) ?? 0) > 0, 'the KDF queue is bounded');
  for (const r of rs.filter((x) => x.status === 503)) {
    t.is(r.headers.get('retry-after'), '1');
    t.deepEqual(r.body, { detail: 'The server is overloaded; retry shortly.' });
  }
  t.is((await api(open.url, 'GET', '/api/v1/labels', undefined, basic('alice', 'alice-pw'))).status, 200, 'cached users unaffected');
});

test.serial('unknown users are verified like known ones: a flood of them meets the bounded verification queue', async (t) => {
  // An unknown user is checked against a dummy hash (the same KDF), so that the
  // time of a refusal does not say which names exist (bench/auth.ts measures the
  // two). Without a verification they would all get 401 at once; with it, the
  // queue of verifications is bounded and a flood is partly refused with 503.
  const rs = await Promise.all(Array.from({ length: 120 }, (_, i) =>
    api(open.url, 'GET', '/api/v1/labels', undefined, basic(`nobody-${i}`, `flood-${i}-${Date.now()}`))));
  const statuses = new Map<number, number>();
  for (const r of rs) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  t.log(Object.fromEntries(statuses));
  t.true([...statuses.keys()].every((s) => s === 401 || s === 503));
  t.true((statuses.get(503) ?? 0) > 0, 'unknown users wait for a verification like known ones');
  t.true((statuses.get(401) ?? 0) > 0);
});

// ---- reload --------------------------------------------------------------------------

test.serial('SIGHUP re-reads the files and drops cached verifications', async (t) => {
  const file = join(dir, 'hup-users');
  const epoch = new Date('2020-01-01T00:00:00Z');
  // Same length hashes (same parameters), file rewritten in place with its mtime
  // restored: the change poller cannot see it, only SIGHUP reloads.
  const write = (pw: string) => { writeFileSync(file, `carol:${hashes.get(pw)}:write\n`); utimesSync(file, epoch, epoch); };
  await hashOf('carol-old');
  await hashOf('carol-new');
  write('carol-old');
  const lb = await startLogbook({ env: { LOGBOOK_READ_LOGIN_REQUIRED: 'true', LOGBOOK_USERS_FILE: file } });
  try {
    const get = (pw: string) => api(lb.url, 'GET', '/api/v1/labels', undefined, basic('carol', pw)).then((r) => r.status);
    t.is(await get('carol-old'), 200);
    t.is(await get('carol-new'), 401);
    write('carol-new');
    t.is(statSync(file).mtimeMs, epoch.getTime());
    await new Promise((r) => setTimeout(r, 2500)); // more than the poll interval
    t.is(await get('carol-old'), 200, 'not reloaded yet: cached grant');
    lb.child.kill('SIGHUP');
    await waitFor(async () => (await get('carol-new')) === 200);
    t.is(await get('carol-old'), 401, 'the old password is gone, cache included');
    t.regex(lb.output(), /"msg":"credentials reloaded","why":"SIGHUP"/);
    writeFileSync(file, 'carol:broken\n');
    utimesSync(file, epoch, epoch);
    lb.child.kill('SIGHUP');
    await waitFor(async () => /credentials not reloaded/.test(lb.output()));
    t.is(await get('carol-new'), 200, 'a broken file keeps the previous credentials');
    t.is(lb.child.exitCode, null, 'still running');
  } finally {
    await lb.stop();
  }
});

test.serial('a changed file is picked up without a signal, and the cache is invalidated', async (t) => {
  const file = join(dir, 'watched-users');
  writeFileSync(file, `dave:${await hashOf('dave-pw')}:write\n`);
  const lb = await startLogbook({ env: { LOGBOOK_WRITE_LOGIN_REQUIRED: 'true', LOGBOOK_USERS_FILE: file } });
  try {
    const post = (user: string, pw: string) =>
      api(lb.url, 'POST', '/api/v1/labels', { name: `${user}-${Math.random()}` }, basic(user, pw)).then((r) => r.status);
    t.is(await post('dave', 'dave-pw'), 201);
    t.is(await post('erin', 'erin-pw'), 401);
    writeFileSync(file, `erin:${await hashOf('erin-pw')}:write\ndave:${await hashOf('dave-pw')}:read\n`);
    await waitFor(async () => (await post('erin', 'erin-pw')) === 201);
    t.is(await post('dave', 'dave-pw'), 403, 'cached write grant dropped: dave is read-only now');
  } finally {
    await lb.stop();
  }
});

// ---- CORS ------------------------------------------------------------------------------

test('CORS: allowed origins get ACAO and Vary: Origin; others get no ACAO; preflights need no credentials', async (t) => {
  const h = basic('alice', 'alice-pw');
  let r = await api(strict.url, 'GET', '/api/v1/labels', undefined, { ...h, origin: 'http://ui.example' });
  t.is(r.status, 200);
  t.is(r.headers.get('access-control-allow-origin'), 'http://ui.example');
  t.is(r.headers.get('vary'), 'Accept, Origin, User-Agent');
  r = await api(strict.url, 'GET', '/api/v1/labels', undefined, { origin: 'https://dash.example:8443' });
  t.is(r.status, 401, 'CORS does not replace authentication');
  t.is(r.headers.get('access-control-allow-origin'), 'https://dash.example:8443', 'errors carry ACAO too, so browsers can read them');
  r = await api(strict.url, 'GET', '/api/v1/labels', undefined, { ...h, origin: 'http://evil.example' });
  t.is(r.status, 200);
  t.is(r.headers.get('access-control-allow-origin'), null);
  t.is(r.headers.get('vary'), 'Accept, Origin, User-Agent');

  r = await api(strict.url, 'OPTIONS', '/api/v1/playbooks/7', undefined, {
    origin: 'http://ui.example', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization, content-type',
  });
  t.is(r.status, 200);
  t.is(r.headers.get('access-control-allow-origin'), 'http://ui.example');
  t.regex(r.headers.get('access-control-allow-methods')!, /\bPATCH\b/);
  const allowed = r.headers.get('access-control-allow-headers')!.split(/,\s*/);
  t.true(allowed.includes('authorization') && allowed.includes('content-type'));
  t.is(r.headers.get('access-control-max-age'), '86400');
  t.is(r.headers.get('vary'), 'Accept, Origin, User-Agent');
  t.is(r.text, '');

  r = await api(strict.url, 'OPTIONS', '/api/v1/playbooks', undefined, { origin: 'http://evil.example', 'access-control-request-method': 'POST' });
  t.is(r.status, 401, 'a preflight from another origin is an ordinary OPTIONS');
  t.is(r.headers.get('access-control-allow-origin'), null);
  r = await api(open.url, 'GET', '/api/v1/labels', undefined, { origin: 'http://ui.example' });
  t.is(r.headers.get('access-control-allow-origin'), null, 'CORS off by default');
  t.is(r.headers.get('vary'), 'Accept, User-Agent');
});

test.serial('credentials never reach the log', async (t) => {
  const log = strict.output() + open.output();
  for (const secret of ['alice-pw', 'bob-pw', 'ci-secret', 'dash-secret', 'pässwörd', Buffer.from('alice:alice-pw').toString('base64')]) {
    t.false(log.includes(secret), secret);
  }
});

async function waitFor(cond: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('condition not met in time');
}

test('the webhook endpoints are read with the write scope: they name receivers and their delivery logs', async (t) => {
  const read = { authorization: 'Bearer dash.dash-secret' };
  const write = { authorization: 'Bearer ci.ci-secret' };
  t.is((await api(strict.url, 'GET', '/api/v1/webhooks')).status, 401);
  const denied = await api(strict.url, 'GET', '/api/v1/webhooks', undefined, read);
  t.is(denied.status, 403);
  t.deepEqual(denied.body, FORBIDDEN);
  t.is((await api(strict.url, 'GET', '/api/v1/webhooks/any/deliveries', undefined, read)).status, 403);
  t.is((await api(strict.url, 'GET', '/api/v1/playbooks', undefined, read)).status, 200); // the same token reads the rest
  t.is((await api(strict.url, 'GET', '/api/v1/webhooks', undefined, write)).status, 200);
  // a server that takes writes from anyone (no write login required) shows them to anyone too
  t.is((await api(open.url, 'GET', '/api/v1/webhooks')).status, 200);
});
