// Real reverse proxies in front of a real logbook: a throw-away CA and server
// certificate (openssl), the shipped deploy/ configuration files with only
// ports, addresses and file paths replaced, nginx and HAProxy run as
// foreground children, and an HTTPS client that trusts the throw-away CA.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { request as httpsRequest, Agent } from 'node:https';
import { connect } from 'node:net';
import { join } from 'node:path';

/** The shipped files, read from the source tree (ava runs with cwd = project root). */
export const DEPLOY_DIR = join(process.cwd(), 'deploy');

// ---------------------------------------------------------------- TLS

export interface TlsFiles { dir: string; ca: string; cert: string; key: string; caPem: string }

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed (${r.status}):\n${r.stderr}`);
}

/**
 * A CA and a server certificate for 127.0.0.1 / localhost signed by it, in dir.
 * The extensions are those strict verifiers (OpenSSL 3, Python's ssl) insist on.
 */
export function makeTlsFiles(dir: string): TlsFiles {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=logbook test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  openssl(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1'], dir);
  writeFileSync(join(dir, 'server.ext'), [
    'basicConstraints = CA:FALSE',
    'keyUsage = critical, digitalSignature, keyEncipherment',
    'extendedKeyUsage = serverAuth',
    'subjectAltName = IP:127.0.0.1, DNS:localhost',
    'subjectKeyIdentifier = hash',
    'authorityKeyIdentifier = keyid, issuer',
    '',
  ].join('\n'));
  openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext'], dir);
  const ca = join(dir, 'ca.pem');
  return { dir, ca, cert: join(dir, 'server.pem'), key: join(dir, 'server.key'), caPem: readFileSync(ca, 'utf8') };
}

// ---------------------------------------------------------------- HTTPS client

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface HttpsReply { status: number; headers: Record<string, string | string[] | undefined>; text: string; body: Json }

/** One HTTPS request that trusts `ca` only (verification on). */
export function httpsFetch(url: string, ca: string, init: { method?: string; headers?: Record<string, string>; body?: Buffer | string; agent?: Agent } = {}): Promise<HttpsReply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method: init.method ?? 'GET', headers: init.headers, ca, agent: init.agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: Json;
        try { body = text.length ? JSON.parse(text) : undefined; } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/** A JsonGetter (test/helpers/ansible.ts) over HTTPS with a private CA, on kept-alive connections. */
export function httpsJsonGetter(ca: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 8, ca });
  const get = async (base: string, path: string): Promise<Json> => {
    const r = await httpsFetch(base.replace(/\/$/, '') + path, ca, { headers: { accept: 'application/json' }, agent });
    if (r.status !== 200) throw new Error(`GET ${path} → ${r.status}: ${r.text.slice(0, 500)}`);
    return r.body;
  };
  return { get, close: () => agent.destroy() };
}

// ---------------------------------------------------------------- templating

/**
 * Replaces each `from` in text, which must occur exactly `times` times (1 by
 * default): when the shipped file changes so that a replacement no longer
 * applies, the test fails instead of quietly testing something else.
 */
export function substitute(text: string, replacements: Array<[from: string | RegExp, to: string, times?: number]>): string {
  for (const [from, to, times = 1] of replacements) {
    const re = typeof from === 'string' ? new RegExp(from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g') : from;
    const found = text.match(re)?.length ?? 0;
    if (found !== times) throw new Error(`expected ${times} × ${String(from)} in the shipped config, found ${found}`);
    text = text.replace(re, () => to);
  }
  return text;
}

// ---------------------------------------------------------------- processes

export interface Proxy { url: string; port: number; child: ChildProcess; output: () => string; stop: () => Promise<void> }

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
async function waitForPort(port: number, child: ChildProcess, output: () => string, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}):\n${output()}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.on('connect', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (up) return;
    if (Date.now() > deadline) { child.kill('SIGKILL'); throw new Error(`${what} did not listen on ${port}:\n${output()}`); }
    await new Promise((r) => setTimeout(r, 50));
  }
}

function spawnForeground(cmd: string, args: string[], what: string) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.on('error', (e) => { out += `\n${what}: ${e.message}`; });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
  };
  return { child, output: () => out, stop };
}

export interface NginxOptions {
  /** deploy/nginx/logbook.conf's text after substitution (see nginxSiteFor). */
  site: string;
  /** working directory (temp paths, pid, logs) */
  dir: string;
  port: number;
}

/**
 * deploy/nginx/logbook.conf with test ports, logbook's address and the
 * test certificate; nothing else changes.
 */
export function nginxSiteFor(o: { httpPort: number; httpsPort: number; upstream: string; tls: TlsFiles; text?: string }): string {
  const text = o.text ?? readFileSync(join(DEPLOY_DIR, 'nginx', 'logbook.conf'), 'utf8');
  return substitute(text, [
    ['server 127.0.0.1:8000;', `server ${o.upstream};`],
    ['listen 80;', `listen 127.0.0.1:${o.httpPort};`],
    ['listen 443 ssl;', `listen 127.0.0.1:${o.httpsPort} ssl;`],
    ['/etc/ssl/logbook/fullchain.pem', o.tls.cert],
    ['/etc/ssl/logbook/privkey.pem', o.tls.key],
  ]);
}

/**
 * Real nginx in the foreground (`daemon off`), the site included from a
 * minimal main configuration whose temp, pid and log paths are in dir.
 */
export async function startNginx(o: NginxOptions): Promise<Proxy> {
  mkdirSync(join(o.dir, 'temp'), { recursive: true });
  writeFileSync(join(o.dir, 'logbook.conf'), o.site);
  const t = join(o.dir, 'temp');
  writeFileSync(join(o.dir, 'nginx.conf'), [
    'daemon off;',
    'worker_processes 1;',
    // workers would otherwise run as nobody and fail to use the temp dirs
    ...(process.getuid?.() === 0 ? ['user root root;'] : []),
    `pid ${join(o.dir, 'nginx.pid')};`,
    `error_log ${join(o.dir, 'error.log')} info;`,
    'events { worker_connections 256; }',
    'http {',
    `  access_log ${join(o.dir, 'access.log')};`,
    `  client_body_temp_path ${t}/body;`,
    `  proxy_temp_path ${t}/proxy;`,
    `  fastcgi_temp_path ${t}/fastcgi;`,
    `  uwsgi_temp_path ${t}/uwsgi;`,
    `  scgi_temp_path ${t}/scgi;`,
    `  include ${join(o.dir, 'logbook.conf')};`,
    '}',
    '',
  ].join('\n'));
  const p = spawnForeground('nginx', ['-p', o.dir, '-c', join(o.dir, 'nginx.conf'), '-e', join(o.dir, 'error.log')], 'nginx');
  const output = () => {
    let log = '';
    try { log = readFileSync(join(o.dir, 'error.log'), 'utf8'); } catch { /* not yet */ }
    return `${p.output()}\n--- error.log\n${log}`;
  };
  await waitForPort(o.port, p.child, output, 'nginx');
  return { url: `https://127.0.0.1:${o.port}`, port: o.port, child: p.child, output, stop: p.stop };
}

/** deploy/haproxy/logbook.cfg with test ports, logbook's address and the test certificate. */
export function haproxyCfgFor(o: { httpPort: number; httpsPort: number; upstream: string; pem: string }): string {
  const text = readFileSync(join(DEPLOY_DIR, 'haproxy', 'logbook.cfg'), 'utf8');
  return substitute(text, [
    ['server logbook1 127.0.0.1:8000', `server logbook1 ${o.upstream}`],
    ['bind :80', `bind 127.0.0.1:${o.httpPort}`],
    ['bind :443 ssl', `bind 127.0.0.1:${o.httpsPort} ssl`],
    ['/etc/haproxy/certs/logbook.pem', o.pem],
  ]);
}

/** `haproxy -c -f file`: exit code and output. */
export function haproxyCheck(file: string): { code: number | null; output: string } {
  const r = spawnSync('haproxy', ['-c', '-f', file], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}

/** Real HAProxy in the foreground (`-db`: no daemon, no background). */
export async function startHaproxy(o: { cfg: string; dir: string; port: number }): Promise<Proxy> {
  const file = join(o.dir, 'haproxy.cfg');
  writeFileSync(file, o.cfg);
  const p = spawnForeground('haproxy', ['-db', '-f', file], 'haproxy');
  await waitForPort(o.port, p.child, p.output, 'haproxy');
  return { url: `https://127.0.0.1:${o.port}`, port: o.port, child: p.child, output: p.output, stop: p.stop };
}
