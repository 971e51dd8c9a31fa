// The `logbook` command (dist/src/cli.js, the package's bin) as an operator runs
// it: help of every subcommand, exit codes, and the subcommands that need no
// external program. import-ara against real ARA is test/e2e/e2e_import_ara.test.ts.
import test from 'ava';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifySecret, parseHash } from '../../src/config/password.js';
import { CLI_JS } from '../helpers/cli.js';
import { watchServeOutput } from '../helpers/server.js';

interface Run { code: number | null; stdout: string; stderr: string }

function cli(args: string[], input?: string, cwd?: string): Promise<Run> {
  const child = spawn(process.execPath, [CLI_JS, ...args], { stdio: ['pipe', 'pipe', 'pipe'], cwd });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  child.stdin.end(input ?? '');
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

const VERSION = JSON.parse(readFileSync('package.json', 'utf8')).version as string;

test('package.json names the CLI as the logbook bin, and npm start runs logbook serve', (t) => {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
  t.is(pkg.bin.logbook, 'dist/src/cli.js');
  t.regex(pkg.scripts.start, /node dist\/src\/cli\.js serve$/);
  t.is(readFileSync(CLI_JS, 'utf8').split('\n')[0], '#!/usr/bin/env node');
});

test('logbook --help lists every subcommand and the exit codes', async (t) => {
  const r = await cli(['--help']);
  t.is(r.code, 0);
  for (const name of ['serve', 'hash-password', 'import-ara']) t.regex(r.stdout, new RegExp(`^  ${name} +\\S`, 'm'));
  t.regex(r.stdout, /Exit codes: 0 ok, 1 failure.*2 usage/);
});

test('no subcommand: usage on stderr, exit 2', async (t) => {
  const r = await cli([]);
  t.is(r.code, 2);
  t.is(r.stdout, '');
  t.regex(r.stderr, /Usage: logbook <command>/);
});

test('an unknown subcommand: usage on stderr naming it, exit 2', async (t) => {
  const r = await cli(['restore-everything']);
  t.is(r.code, 2);
  t.is(r.stdout, '');
  t.regex(r.stderr, /unknown command "restore-everything"/);
  t.regex(r.stderr, /Usage: logbook <command>/);
});

for (const [name, usage] of [
  ['serve', /^Usage: logbook serve/m],
  ['hash-password', /^Usage: logbook hash-password/m],
  ['import-ara', /^Usage: logbook import-ara <ARA URL>/m],
  ['ansible-env', /^Usage: logbook ansible-env/m],
  ['backup', /^Usage: logbook backup <data dir> <target dir>/m],
  ['check', /^Usage: logbook check <data dir>/m],
] as const) {
  test(`logbook ${name} --help: its usage and exit codes on stdout, exit 0`, async (t) => {
    const r = await cli([name, '--help']);
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, usage);
    t.regex(r.stdout, /Exit codes: 0 .*1 .*2 usage/s);
  });
}

test('logbook serve --version prints the version; a bad option exits 2 naming it', async (t) => {
  const v = await cli(['serve', '--version']);
  t.is(v.code, 0);
  t.is(v.stdout, `${VERSION}\n`);
  const bad = await cli(['serve', '--port', 'nope']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /--port/);
});

test('logbook hash-password hashes stdin into a hash the server verifies; bad arguments exit 2', async (t) => {
  const r = await cli(['hash-password', '--ln', '10'], 'correct horse\n');
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^\$scrypt\$ln=10,r=8,p=1\$\S+\$\S+\n$/);
  const parsed = parseHash(r.stdout.trim());
  t.not(typeof parsed, 'string');
  if (typeof parsed === 'string') return;
  t.true(await verifySecret(Buffer.from('correct horse'), parsed), 'the trailing newline is not part of the secret');
  t.false(await verifySecret(Buffer.from('wrong'), parsed));
  t.is((await cli(['hash-password', '--ln', '3'], 'x')).code, 2);
  t.is((await cli(['hash-password'], '')).code, 2, 'an empty secret');
});

test('logbook import-ara: bad arguments exit 2; an unreachable server is a clear message and exit 1', async (t) => {
  const none = await cli(['import-ara']);
  t.is(none.code, 2);
  t.regex(none.stderr, /expected one ARA URL/);
  t.is((await cli(['import-ara', 'ftp://x'])).code, 2);
  t.is((await cli(['import-ara', 'http://127.0.0.1:1', '--bogus'])).code, 2);
  t.is((await cli(['import-ara', 'http://127.0.0.1:1', '--user', 'a'])).code, 2, '--user without --password');
  // a port nobody listens on (bound, then closed)
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
  const r = await cli(['import-ara', `http://127.0.0.1:${port}`, '--timeout', '5']);
  t.is(r.code, 1);
  t.regex(r.stderr, new RegExp(`cannot reach ARA at http://127\\.0\\.0\\.1:${port} .*ECONNREFUSED`));
});

test('logbook ansible-env works from any directory: plugin paths of this package, a warning when the server does not answer, exit 2 on a bad URL', async (t) => {
  const elsewhere = mkdtempSync(join(tmpdir(), 'logbook-playbooks-'));
  t.teardown(() => rmSync(elsewhere, { recursive: true, force: true }));
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  const r = await cli(['ansible-env', url], undefined, elsewhere);
  t.is(r.code, 0, r.stderr);
  const root = process.cwd();
  t.is(r.stdout, `export ANSIBLE_CALLBACK_PLUGINS='${root}/src/ansible/callback'\n`
    + `export ANSIBLE_ACTION_PLUGINS='${root}/src/ansible/action'\nexport LOGBOOK_API_SERVER='${url}'\n`);
  t.regex(r.stderr, new RegExp(`warning: ${url} does not answer .*ECONNREFUSED`));
  const bad = await cli(['ansible-env', 'ftp://x'], undefined, elsewhere);
  t.is(bad.code, 2);
  t.is(bad.stdout, '', 'nothing for eval to run');
  t.regex(bad.stderr, /"ftp:\/\/x" is not an http\(s\) URL/);
});

test('logbook serve runs the server: it answers, and SIGTERM stops it with exit 0', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const child = spawn(process.execPath, [CLI_JS, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--shards', '1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const served = watchServeOutput(child);
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  const port = await served.port(30_000);
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  t.is(health.status, 200);
  t.is((await health.json() as { status: string }).status, 'ok');
  child.kill('SIGTERM');
  t.is(await exited, 0, served.output());
});
