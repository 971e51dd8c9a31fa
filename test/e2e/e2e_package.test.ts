// The package as operators deploy it without a checkout (docs/operations.md#install-without-a-checkout):
// `npm pack` gives a tarball that `npm install -g` installs on this machine (dependencies from the
// registry, lmdb's native module built from source by the package's postinstall) and whose
// `logbook serve` answers, web UI included. Needs the npm registry, as `npm ci` does.
import test from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchServeOutput } from '../helpers/server.js';

/** npm, without blocking this process (ava's worker must keep talking to ava meanwhile) */
function npm(args: string[], cwd: string): Promise<{ status: number | null; stderr: string }> {
  const child = spawn('npm', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 8 * 60_000);
  return new Promise((resolve) => child.on('close', (status) => { clearTimeout(timer); resolve({ status, stderr }); }));
}

test('npm pack → npm install -g → logbook serve: the server answers with its UI and the patched lmdb; ansible-env names the installed callback', async (t) => {
  t.timeout(10 * 60_000);
  const work = mkdtempSync(join(tmpdir(), 'logbook-package-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  // dist/ is built (the test command compiles; npm ci's prepare built the UI)
  const pack = await npm(['pack', '--ignore-scripts', '--pack-destination', work], process.cwd());
  t.is(pack.status, 0, pack.stderr);
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'))!;
  t.truthy(tarball);
  const listing = spawnSync('tar', ['tzf', join(work, tarball)], { encoding: 'utf8' }).stdout.split('\n');
  t.true(listing.includes('package/dist/src/cli.js'));
  t.true(listing.includes('package/dist/ui/index.html'));
  t.true(listing.includes('package/src/ansible/callback/logbook.py'));
  t.false(listing.some((f) => f.startsWith('package/test/')), 'no tests or ARA fixtures in the package');

  const prefix = join(work, 'prefix');
  const install = await npm(['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', join(work, tarball)], work);
  if (install.status !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT/.test(install.stderr)) {
    t.log(`the npm registry is not reachable here: ${install.stderr.split('\n').find((l) => /ERR/.test(l))}`);
    return void t.fail('cannot install the package without the registry');
  }
  t.is(install.status, 0, install.stderr);
  const bin = join(prefix, 'bin', 'logbook');

  const dataDir = join(work, 'data');
  const child = spawn(bin, ['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--shards', '1'], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  const served = watchServeOutput(child);
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  const port = await served.port(60_000);
  const out = served.output();
  const starting = JSON.parse(out.split('\n').find((l) => l.includes('"msg":"starting"'))!);
  t.not(starting.lmdb, 'prebuilt', 'lmdb built from source with logbook\'s fix, not a prebuilt binary');
  t.not(starting.lmdbJs, 'unpatched');
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  t.is(health.status, 200);
  const ui = await fetch(`http://127.0.0.1:${port}/ui/`);
  t.is(ui.status, 200);
  t.regex(await ui.text(), /<script/);
  child.kill('SIGTERM');
  t.is(await new Promise<number | null>((resolve) => child.on('close', resolve)), 0);

  const env = spawnSync(bin, ['ansible-env', `http://127.0.0.1:${port}`], { cwd: work, encoding: 'utf8' });
  t.is(env.status, 0, env.stderr);
  t.true(env.stdout.includes(`export ANSIBLE_CALLBACK_PLUGINS='${join(prefix, 'lib', 'node_modules', 'logbook', 'src', 'ansible', 'callback')}'`), env.stdout);
});
