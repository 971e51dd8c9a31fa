// logbook behind real reverse proxies, with the configuration files we ship
// (deploy/nginx/logbook.conf, deploy/haproxy/logbook.cfg) and TLS from a
// throw-away CA: the stock ARA callback records through nginx with
// certificate verification on, reads through the proxy equal direct reads, and
// `next`/`previous` links point at the proxy (https, its host:port). Also the
// HTTP/1.0 → 505 trap the shipped nginx file avoids, body limits through the
// proxy, and the systemd unit (systemd-analyze verify, its health-check line).
//
// Needs nginx and openssl (HAProxy, systemd-analyze, Ansible + ARA for some
// tests); each test skips itself when a program is missing. CI installs them.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import {
  FIXTURE_ITEMS, FIXTURE_RECAP, freePort, hasAnsible, newestPlaybookId, onPath, runPlaybook, snapshotRun, type HostRecap,
} from '../helpers/ansible.js';
import {
  DEPLOY_DIR, haproxyCfgFor, haproxyCheck, httpsFetch, httpsJsonGetter, makeTlsFiles, nginxSiteFor,
  startHaproxy, startNginx, type Proxy, type TlsFiles,
} from '../helpers/proxy.js';

const hasNginx = onPath('nginx') && onPath('openssl');
const nginxTest = hasNginx ? test : test.skip;
const ansibleTest = hasNginx && hasAnsible() ? test : test.skip;
const haproxyTest = onPath('haproxy') && onPath('openssl') ? test : test.skip;
const systemdTest = onPath('systemd-analyze') && onPath('curl') ? test : test.skip;
if (!hasNginx) console.warn('e2e_proxy: nginx or openssl not installed; nginx tests skipped (apt-get install nginx openssl)');

const MAX_BODY = 32 * 1024 * 1024; // LOGBOOK_MAX_BODY_BYTES default

interface Stack { dir: string; tls: TlsFiles; logbook: Logbook; nginx: Proxy; httpPort: number }
let stack: Stack | undefined;

// One logbook (trusting the proxy) behind one nginx for the whole file.
test.before(async () => {
  if (!hasNginx) return;
  const dir = mkdtempSync(join(tmpdir(), 'logbook-proxy-'));
  const tls = makeTlsFiles(dir);
  const logbook = await startLogbook({ env: { LOGBOOK_TRUST_PROXY: 'true', LOGBOOK_SHARDS: '2' } });
  try {
    const [httpPort, httpsPort] = [await freePort(), await freePort()];
    const site = nginxSiteFor({ httpPort, httpsPort, upstream: `127.0.0.1:${logbook.port}`, tls });
    const nginx = await startNginx({ site, dir: join(dir, 'nginx'), port: httpsPort });
    stack = { dir, tls, logbook, nginx, httpPort };
  } catch (err) {
    await logbook.stop();
    throw err;
  }
});

test.after.always(async () => {
  if (!stack) return;
  await Promise.all([stack.nginx.stop(), stack.logbook.stop()]);
  rmSync(stack.dir, { recursive: true, force: true });
});

function needStack(): Stack {
  if (!stack) throw new Error('nginx stack did not start');
  return stack;
}

ansibleTest('the stock ARA callback records through nginx over verified TLS; reads through nginx equal direct reads', async (t) => {
  t.timeout(240_000);
  const s = needStack();
  // Certificate verification stays on (ARA_API_INSECURE is unset: runPlaybook
  // drops inherited ARA_* variables); requests trusts the test CA through
  // REQUESTS_CA_BUNDLE, as an operator with a private CA would configure it.
  const run = await runPlaybook(s.nginx.url, { env: { REQUESTS_CA_BUNDLE: s.tls.ca } });
  if (run.callbackErrors.length > 0 || run.code !== 4) {
    t.log(`ansible-playbook:\n${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`);
    t.log(`nginx:\n${s.nginx.output().slice(-3000)}`);
  }
  t.deepEqual(run.callbackErrors, [], 'no callback HTTP request failed through nginx');
  t.is(run.code, 4, 'ansible-playbook exit code (unreachable host)');
  t.deepEqual(run.recap, FIXTURE_RECAP);

  const https = httpsJsonGetter(s.tls.caPem);
  t.teardown(https.close);
  const id = await newestPlaybookId(s.nginx.url, https.get);
  t.truthy(id, 'the playbook is listed through nginx');
  const throughProxy = await snapshotRun(s.nginx.url, id, https.get);
  const direct = await snapshotRun(s.logbook.url, id);
  t.deepEqual(throughProxy.playbook.items, FIXTURE_ITEMS);
  t.is(throughProxy.playbook.status, 'failed');
  t.deepEqual(throughProxy, direct, 'what nginx serves equals what logbook serves');

  // Pagination links: absolute, https, the proxy's host:port; direct reads keep logbook's own address.
  const page = await https.get(s.nginx.url, `/api/v1/results?playbook=${id}&status=ok&limit=5&offset=5`);
  const base = `https://127.0.0.1:${s.nginx.port}/api/v1/results?`;
  t.is(page.next, `${base}limit=5&offset=10&playbook=${id}&status=ok`);
  t.is(page.previous, `${base}limit=5&playbook=${id}&status=ok`);
  const plain = await api(s.logbook.url, 'GET', `/api/v1/results?playbook=${id}&limit=5`);
  t.is(plain.body.next, `http://127.0.0.1:${s.logbook.port}/api/v1/results?limit=5&offset=5&playbook=${id}`);
});

ansibleTest('the ARA client verifies the proxy certificate: without the CA it refuses, with it it reads', async (t) => {
  const s = needStack();
  const script = 'import sys\nfrom ara.clients.utils import get_client\n'
    + 'c = get_client(client="http", endpoint=sys.argv[1], timeout=10)\n'
    + 'print(c.get("/api/v1/playbooks", limit=1)["count"])\n';
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(ARA_|REQUESTS_CA_BUNDLE$|CURL_CA_BUNDLE$)/.test(k)) env[k] = v;
  const without = spawnSync('/usr/bin/python3', ['-c', script, s.nginx.url], { env, encoding: 'utf8', timeout: 60_000 });
  t.not(without.status, 0, 'a certificate from an unknown CA is refused');
  t.regex(without.stderr, /CERTIFICATE_VERIFY_FAILED/);
  const withCa = spawnSync('/usr/bin/python3', ['-c', script, s.nginx.url], { env: { ...env, REQUESTS_CA_BUNDLE: s.tls.ca }, encoding: 'utf8', timeout: 60_000 });
  t.is(withCa.status, 0, withCa.stderr);
  t.regex(withCa.stdout, /^\d+\n$/);
});

nginxTest('list links through nginx say https and the proxy host:port; the plain port redirects to https', async (t) => {
  const s = needStack();
  const names = ['proxy-a', 'proxy-b', 'proxy-c'];
  for (const name of names) {
    const r = await httpsFetch(`${s.nginx.url}/api/v1/labels`, s.tls.caPem, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }),
    });
    t.is(r.status, 201, r.text);
  }
  const r = await httpsFetch(`${s.nginx.url}/api/v1/labels?name=proxy-&limit=1&offset=1`, s.tls.caPem);
  t.is(r.status, 200, r.text);
  t.is(r.body.count, 3);
  t.is(r.body.next, `https://127.0.0.1:${s.nginx.port}/api/v1/labels?limit=1&name=proxy-&offset=2`);
  t.is(r.body.previous, `https://127.0.0.1:${s.nginx.port}/api/v1/labels?limit=1&name=proxy-`);
  const health = await httpsFetch(`${s.nginx.url}/healthz`, s.tls.caPem);
  t.is(health.status, 200);
  t.is(health.body.status, 'ok');
  // An HTTP/1.0 client (old health checkers) is served too: nginx talks HTTP/1.1 to logbook.
  const http10 = await new Promise<string>((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: s.nginx.port, ca: s.tls.caPem, servername: 'localhost' }, () => {
      socket.write(`GET /healthz HTTP/1.0\r\nHost: 127.0.0.1:${s.nginx.port}\r\n\r\n`);
    });
    let text = '';
    socket.setEncoding('utf8').on('data', (d: string) => { text += d; }).on('end', () => resolve(text)).on('error', reject);
  });
  t.regex(http10, /^HTTP\/1\.1 200 /);

  const redirect = await new Promise<{ status: number; location: string | undefined }>((resolve, reject) => {
    httpRequest(`http://127.0.0.1:${s.httpPort}/api/v1/labels?limit=1`, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, location: res.headers.location });
    }).on('error', reject).end();
  });
  t.is(redirect.status, 301);
  t.is(redirect.location, 'https://127.0.0.1/api/v1/labels?limit=1');
});

/** Reads from a TLS connection until `done(text so far)` or the deadline; the socket is destroyed at the end. */
function tlsExchange(port: number, ca: string, request: string, done: (text: string) => boolean, ms = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = tlsConnect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => socket.write(request));
    const finish = () => { clearTimeout(timer); socket.destroy(); resolve(text); };
    const timer = setTimeout(finish, ms);
    socket.setEncoding('latin1').on('data', (d: string) => { text += d; if (done(text)) finish(); });
    socket.on('end', finish).on('error', (e) => { clearTimeout(timer); reject(e); });
  });
}

const HELLO = /"op"\s*:\s*"hello"/;

nginxTest('the live stream through nginx: WebSocket upgrade and Server-Sent Events reach logbook and its first message arrives unbuffered', async (t) => {
  const s = needStack();
  const host = `127.0.0.1:${s.nginx.port}`;
  const sse = await tlsExchange(s.nginx.port, s.tls.caPem,
    `GET /api/v1/stream HTTP/1.1\r\nHost: ${host}\r\nAccept: text/event-stream\r\n\r\n`, (text) => HELLO.test(text));
  t.regex(sse, /^HTTP\/1\.1 200 /);
  t.regex(sse, /\r\ncontent-type: text\/event-stream/i);
  t.regex(sse, HELLO, 'the hello event arrives while the response is still open (proxy_buffering off)');

  const ws = await tlsExchange(s.nginx.port, s.tls.caPem, [
    'GET /api/v1/stream HTTP/1.1', `Host: ${host}`, 'Upgrade: websocket', 'Connection: Upgrade',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13', '', '',
  ].join('\r\n'), (text) => HELLO.test(text));
  t.regex(ws, /^HTTP\/1\.1 101 /, ws.slice(0, 300));
  t.regex(ws, /\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n/i);
  t.regex(ws, HELLO, 'the hello message arrives in a WebSocket frame');
});

nginxTest('nginx refuses bodies over LOGBOOK_MAX_BODY_BYTES with logbook\'s JSON 413; a body at the limit reaches logbook', async (t) => {
  const s = needStack();
  const post = (body: Buffer) => httpsFetch(`${s.nginx.url}/api/v1/labels`, s.tls.caPem, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body,
  });
  const over = await post(Buffer.alloc(MAX_BODY + 1, 0x20));
  t.is(over.status, 413);
  t.is(over.headers['content-type'], 'application/json');
  t.deepEqual(over.body, { detail: `Request body exceeds ${MAX_BODY} bytes.` }, 'the text logbook itself answers');
  // Exactly at the limit nginx passes it on: logbook parses it (all blanks → its JSON 400).
  const at = await post(Buffer.alloc(MAX_BODY, 0x20));
  t.is(at.status, 400, at.text.slice(0, 300));
  t.is(typeof at.body?.detail, 'string', 'answered by logbook');
});

nginxTest('without `proxy_http_version 1.1` nginx speaks HTTP/1.0 and every request gets 505 (the trap the shipped file avoids)', async (t) => {
  const s = needStack();
  const shipped = readFileSync(join(DEPLOY_DIR, 'nginx', 'logbook.conf'), 'utf8');
  t.is(shipped.match(/^\s*proxy_http_version 1\.1;/gm)?.length, 1, 'the shipped file sets it once, at server level');
  const stock = shipped.replace(/^\s*proxy_http_version 1\.1;\n/m, '');
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const site = nginxSiteFor({ httpPort, httpsPort, upstream: `127.0.0.1:${s.logbook.port}`, tls: s.tls, text: stock });
  const dir = mkdtempSync(join(tmpdir(), 'logbook-proxy10-'));
  const nginx = await startNginx({ site, dir, port: httpsPort });
  t.teardown(async () => { await nginx.stop(); rmSync(dir, { recursive: true, force: true }); });
  const r = await httpsFetch(`${nginx.url}/healthz`, s.tls.caPem);
  t.is(r.status, 505);
});

haproxyTest('the shipped HAProxy config is valid; the stock ARA callback records through it; links point at it', async (t) => {
  t.timeout(240_000);
  const dir = mkdtempSync(join(tmpdir(), 'logbook-haproxy-'));
  const tls = makeTlsFiles(dir);
  const logbook = await startLogbook({ env: { LOGBOOK_TRUST_PROXY: 'true', LOGBOOK_SHARDS: '2' } });
  let haproxy: Proxy | undefined;
  t.teardown(async () => {
    await Promise.all([haproxy?.stop(), logbook.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });
  const pem = join(dir, 'haproxy.pem');
  writeFileSync(pem, readFileSync(tls.cert, 'utf8') + readFileSync(tls.key, 'utf8'));
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const cfg = haproxyCfgFor({ httpPort, httpsPort, upstream: `127.0.0.1:${logbook.port}`, pem });
  writeFileSync(join(dir, 'check.cfg'), cfg);
  const check = haproxyCheck(join(dir, 'check.cfg'));
  t.is(check.code, 0, check.output);

  haproxy = await startHaproxy({ cfg, dir, port: httpsPort });
  for (const name of ['hap-a', 'hap-b']) {
    const r = await httpsFetch(`${haproxy.url}/api/v1/labels`, tls.caPem, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }),
    });
    t.is(r.status, 201, `${r.text}\n${haproxy.output()}`);
  }
  const r = await httpsFetch(`${haproxy.url}/api/v1/labels?name=hap-&limit=1`, tls.caPem);
  t.is(r.status, 200, `${r.text}\n${haproxy.output()}`);
  t.is(r.body.next, `https://127.0.0.1:${httpsPort}/api/v1/labels?limit=1&name=hap-&offset=1`);
  // Unlike nginx, HAProxy forwards the client's HTTP version: HTTP/1.0 clients still meet uWS's 505 (README).
  const http10 = await tlsExchange(httpsPort, tls.caPem, `GET /healthz HTTP/1.0\r\nHost: 127.0.0.1:${httpsPort}\r\n\r\n`, (text) => text.includes('\r\n\r\n'));
  t.regex(http10, /^HTTP\/1\.[01] 505 /);
  // A declared length past LOGBOOK_MAX_BODY_BYTES stops at HAProxy, with logbook's error.
  const over = await httpsFetch(`${haproxy.url}/api/v1/labels`, tls.caPem, {
    method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(MAX_BODY + 1) }, body: '',
  }).catch((e: Error) => ({ status: -1, text: e.message, body: undefined }));
  t.is(over.status, 413);
  t.deepEqual(over.body, { detail: `Request body exceeds ${MAX_BODY} bytes.` });

  if (!hasAnsible()) { t.log('Ansible + ARA not installed: the callback run through HAProxy is skipped'); return; }
  const run = await runPlaybook(haproxy.url, { env: { REQUESTS_CA_BUNDLE: tls.ca } });
  if (run.callbackErrors.length > 0 || run.code !== 4) t.log(`ansible-playbook:\n${run.stdout.slice(-3000)}\n${run.stderr.slice(-3000)}`);
  t.deepEqual(run.callbackErrors, [], 'no callback HTTP request failed through HAProxy');
  t.deepEqual(run.recap, FIXTURE_RECAP);
  const https = httpsJsonGetter(tls.caPem);
  t.teardown(https.close);
  const throughProxy = await snapshotRun(haproxy.url, undefined, https.get);
  t.deepEqual(throughProxy.playbook.items, FIXTURE_ITEMS);
  t.deepEqual(throughProxy, await snapshotRun(logbook.url), 'what HAProxy serves equals what logbook serves');
});

systemdTest('the systemd unit passes systemd-analyze verify and its health check waits for /healthz', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-systemd-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const unit = readFileSync(join(DEPLOY_DIR, 'systemd', 'logbook.service'), 'utf8');
  t.is(unit.match(/\/usr\/bin\/node /g)?.length, 1);
  // verify checks that ExecStart's program exists: point it at this node.
  const file = join(dir, 'logbook.service');
  writeFileSync(file, unit.replace('/usr/bin/node ', `${process.execPath} `));
  const v = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8', timeout: 60_000 });
  const complaints = `${v.stdout}${v.stderr}`.split('\n').filter((l) => l.includes('logbook.service'));
  t.is(v.status, 0, `${v.stdout}${v.stderr}`);
  t.deepEqual(complaints, [], 'no warning about the unit');

  // The ExecStartPost line, as systemd hands it to sh ($$ → $), against a real logbook.
  const line = /^ExecStartPost=\/bin\/sh -c '(.*)'$/m.exec(unit);
  t.truthy(line, 'ExecStartPost runs a sh -c health check');
  if (!line) return;
  const script = line[1]!.replace(/\$\$/g, '$');
  const logbook = stack?.logbook ?? await startLogbook({ env: { LOGBOOK_SHARDS: '1' } });
  t.teardown(async () => { if (!stack) await logbook.stop(); });
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LOGBOOK_HOST: '127.0.0.1', LOGBOOK_PORT: String(logbook.port) };
  const ok = spawnSync('/bin/sh', ['-c', script], { env, encoding: 'utf8', timeout: 60_000 });
  t.is(ok.status, 0, ok.stderr);
  for (const wildcard of ['0.0.0.0', '::']) {
    const r = spawnSync('/bin/sh', ['-c', script], { env: { ...env, LOGBOOK_HOST: wildcard }, encoding: 'utf8', timeout: 60_000 });
    t.is(r.status, 0, `${wildcard}: ${r.stderr}`);
  }
});
