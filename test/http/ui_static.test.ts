// The web UI's files over plain HTTP (src/http/static.ts): the redirect from /,
// the app at every page address, caching, gzip and ETags of the assets, JSON
// errors for what is not there, and the login challenge for pages. The UI in a
// real browser is test/e2e/e2e_ui.test.ts.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashSecret } from '../../src/config/password.js';
import { buildUi } from '../helpers/browser.js';
import { api, startLogbook, type Logbook } from '../helpers/server.js';

let lb: Logbook;
test.before(async () => {
  buildUi();
  lb = await startLogbook({ env: { LOGBOOK_SHARDS: '1' } });
});
test.after.always(async () => { await lb?.stop(); });

test('/ redirects to /ui/; pages get the app uncached, assets get long caching, gzip and ETags', async (t) => {
  const root = await fetch(`${lb.url}/`, { redirect: 'manual' });
  t.is(root.status, 302);
  t.is(root.headers.get('location'), '/ui/');
  for (const page of ['/ui/', '/ui/playbooks/1', '/ui/hosts/2', '/ui/results/3', '/ui/files/4?line=9']) {
    const r = await fetch(lb.url + page);
    t.is(r.status, 200, page);
    t.regex(r.headers.get('content-type')!, /^text\/html/, page);
    t.is(r.headers.get('cache-control'), 'no-cache', page);
    t.regex(await r.text(), /<script type="module" src="\/ui\/assets\/main-[\w-]+\.js">/, page);
  }
  const html = await (await fetch(`${lb.url}/ui/`)).text();
  const js = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(html)![1]!;
  const asset = await fetch(lb.url + js, { headers: { 'accept-encoding': 'gzip' } });
  t.is(asset.status, 200);
  t.regex(asset.headers.get('content-type')!, /^text\/javascript/);
  t.regex(asset.headers.get('cache-control')!, /max-age=31536000/);
  t.is(asset.headers.get('content-encoding'), 'gzip');
  const etag = asset.headers.get('etag')!;
  t.truthy(etag);
  const again = await fetch(lb.url + js, { headers: { 'if-none-match': etag } });
  t.is(again.status, 304);
  const missing = await api(lb.url, 'GET', '/ui/assets/main-NOPE.js');
  t.is(missing.status, 404);
  t.deepEqual(missing.body, { detail: 'Not found.' });
  const post_ = await api(lb.url, 'POST', '/ui/', { a: 1 });
  t.is(post_.status, 405);
  t.deepEqual(post_.body, { detail: 'Method "POST" not allowed.' });
  // the API is untouched
  t.is((await api(lb.url, 'GET', '/api/v1/')).status, 200);
});

test('HEAD answers like GET without a body; a method other than GET/HEAD is a JSON 405', async (t) => {
  const head = await fetch(`${lb.url}/ui/hosts/1`, { method: 'HEAD' });
  t.is(head.status, 200);
  t.regex(head.headers.get('content-type')!, /^text\/html/);
  t.is(await head.text(), '');
  for (const method of ['PUT', 'DELETE', 'PATCH']) {
    const r = await api(lb.url, method, '/', { a: 1 });
    t.is(r.status, 405, method);
    t.is(r.headers.get('allow'), 'GET, HEAD');
    t.deepEqual(r.body, { detail: `Method "${method}" not allowed.` });
  }
});

test('pages carry a strict Content-Security-Policy (the app loads only its own files)', async (t) => {
  const r = await fetch(`${lb.url}/ui/`);
  t.regex(r.headers.get('content-security-policy')!, /default-src 'self'/);
  t.is(r.headers.get('x-content-type-options'), 'nosniff');
});

test('with read login required: pages answer 401 with a Basic challenge for realm "logbook" and the app as body; credentials open them; assets stay public', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-ui-static-'));
  const users = join(dir, 'users');
  writeFileSync(users, `reader:${await hashSecret(Buffer.from('reader-pw'), 14)}:read\n`);
  const locked = await startLogbook({ env: { LOGBOOK_SHARDS: '1', LOGBOOK_READ_LOGIN_REQUIRED: 'true', LOGBOOK_USERS_FILE: users } });
  try {
    const bare = await fetch(`${locked.url}/ui/results/5`);
    t.is(bare.status, 401);
    t.is(bare.headers.get('www-authenticate'), 'Basic realm="logbook"');
    const html = await bare.text();
    t.regex(html, /<div id="app">/);
    const good = { authorization: `Basic ${Buffer.from('reader:reader-pw').toString('base64')}` };
    const bad = { authorization: `Basic ${Buffer.from('reader:nope').toString('base64')}` };
    t.is((await fetch(`${locked.url}/ui/results/5`, { headers: good })).status, 200);
    t.is((await fetch(`${locked.url}/ui/results/5`, { headers: bad })).status, 401);
    const js = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    t.is((await fetch(locked.url + js)).status, 200);
    // the redirect gives nothing away and needs no login either
    t.is((await fetch(`${locked.url}/`, { redirect: 'manual' })).status, 302);
    // the API keeps its own challenge
    const apiReply = await fetch(`${locked.url}/api/v1/playbooks`);
    t.is(apiReply.status, 401);
    t.is(apiReply.headers.get('www-authenticate'), 'Basic realm="api"');
  } finally {
    await locked.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the UI type-checks against the DOM library (its own tsconfig; npm run build only bundles it)', (t) => {
  const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'src/ui/tsconfig.json'], { encoding: 'utf8', timeout: 120_000 });
  t.is(tsc.status, 0, tsc.stdout + tsc.stderr);
});
