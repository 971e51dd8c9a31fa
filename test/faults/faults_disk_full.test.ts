// A disk that fills up, for real: the data directory on a small tmpfs (mounting
// needs root; skipped otherwise). Writes get 503 naming the cause, reads keep
// working and the process lives on (lmdb's prebuilt binary aborted here after a
// few failed page writes: test/store/lmdb_write_errors.test.ts). Once the filesystem
// has room again (remounted larger, as when an operator frees space) writes
// succeed without a restart; SIGTERM on a full disk ends cleanly; a restart on
// the full disk serves what is stored (writes 503) and stores again once there
// is room; and after a restart every acknowledged write is there.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, MAIN_JS, startLogbook } from '../helpers/server.js';
import { createRun, missingResults, must, noise, postOrExplain } from '../helpers/storage_faults.js';
import { failureCause, silentCause } from '../../src/store/lmdb_commit.js';

/** Mounts a tmpfs of `mb` MiB on a new directory; null when this user may not. */
function smallDisk(t: { teardown(fn: () => void): void }, mb: number): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-disk-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', dir], { encoding: 'utf8' }).status === 0;
  t.teardown(() => {
    if (mounted) spawnSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  return mounted ? dir : null;
}

/** Whether this user may mount a tmpfs (root): asked once, so the tests that need one are skipped, not passed. */
function canMountTmpfs(): boolean {
  const probe = mkdtempSync(join(tmpdir(), 'logbook-disk-probe-'));
  try {
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe]).status === 0;
    if (mounted) spawnSync('umount', ['-l', probe]);
    return mounted;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}
const mountable = canMountTmpfs();
if (!mountable) console.warn('faults_disk_full: cannot mount a tmpfs (needs root); skipped');
const withSmallDisk = mountable ? test : test.skip;

// lmdb-js gives no cause for a transaction that fails without an error status
// (a page spill that cannot be written): on a full disk that was the first 503's
// whole text, "Commit failed (see commitError for details)"
withSmallDisk('a commit failure without a cause is named from the free space: a full filesystem is "No space left on device"', async (t) => {
  const disk = smallDisk(t, 1);
  if (disk === null) { t.fail('mounting a tmpfs failed, although the probe at load succeeded'); return; }
  t.regex((await silentCause(disk))!, /LMDB gave no error code \(1 MiB free/, 'room: no guess');
  spawnSync('dd', ['if=/dev/zero', `of=${join(disk, 'filler')}`, 'bs=4k'], { encoding: 'utf8' });
  t.regex((await silentCause(disk))!, /^No space left on device \(0 KiB free/);
  t.is(await silentCause(join(disk, 'missing')), null, 'a directory that cannot be read: nothing to say');
  // only a failed commit without a cause is put down to the disk; other errors keep their own text
  // (commitCause waits on an unref'd timer for a cause that never comes: keep the loop alive meanwhile)
  const alive = setInterval(() => {}, 1000);
  t.teardown(() => clearInterval(alive));
  const silent = Object.assign(new Error('Commit failed (see commitError for details)'), { commitError: new Promise(() => {}) });
  t.regex(await failureCause(silent, disk), /^No space left on device/);
  const told = Object.assign(new Error('Commit failed (see commitError for details)'), { commitError: Promise.reject(new Error('Input/output error')) });
  t.is(await failureCause(told, disk), 'Input/output error', 'the cause lmdb-js gives comes first');
  t.is(await failureCause(new Error('MDB_MAP_FULL: Environment mapsize limit reached'), disk), 'MDB_MAP_FULL: Environment mapsize limit reached');
});

withSmallDisk('a full disk: writes get 503 naming it, reads work, no crash; room again → writes resume without a restart; nothing acknowledged lost', async (t) => {
  t.timeout(180_000);
  const disk = smallDisk(t, 12);
  if (disk === null) { t.fail('mounting a tmpfs failed, although the probe at load succeeded'); return; }
  const dataDir = join(disk, 'data');
  mkdirSync(dataDir);
  const env = { LOGBOOK_SHARDS: '1' };
  let lb = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const { pb, play, task, host } = await createRun(lb, 'disk');
  const post = (path: string, body: unknown) => postOrExplain(t, lb, path, body);
  const result = (marker: string, size: number) => ({ playbook: pb, play, task, host, status: 'ok', content: { marker, data: noise(marker.length * 7919 + size, size) } });

  // fill it: 4 writers of ~8 KB results until 100 refusals
  const acked = new Map<number, string>();
  const refused: Array<{ status: number; detail: string }> = [];
  let n = 0;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (refused.length < 100 && n < 20_000) {
      const marker = `m${n++}`;
      const res = await post('/api/v1/results', result(marker, 1200));
      if (res.status === 201) acked.set(res.body.id, marker);
      else refused.push({ status: res.status, detail: res.body?.detail ?? res.text });
    }
  }));
  const df = spawnSync('df', ['-k', disk], { encoding: 'utf8' }).stdout.trim().split('\n').pop();
  t.log(`${acked.size} results acknowledged, ${refused.length} refused (df: ${df}); first: ${refused[0]?.status} ${refused[0]?.detail}`);
  t.true(refused.length >= 100, 'the disk filled up');
  t.deepEqual([...new Set(refused.map((r) => r.status))], [503], 'refusals are 503s');
  t.regex(refused[0]!.detail, /could not be stored \(the data directory could not be written: .*(No space left on device|Input\/output error).*\)/);
  t.notRegex(refused.map((r) => r.detail).join('\n'), /buffer sizes/, 'without lmdb\'s stale iovec lengths');
  t.deepEqual(refused.filter((r) => /No space left on device.*disk full or/.test(r.detail)), [], 'a cause that names the full disk gets no guess after it');
  t.is(lb.child.exitCode, null, 'the process is alive');
  t.is(lb.child.signalCode, null, 'and was not killed by a signal');
  const health = await api(lb.url, 'GET', '/healthz');
  t.is(health.body.shards_down, undefined, 'no shard is down');
  t.is(health.body.writes?.status, 'refused', '/healthz reports the write path refused (reads go on)');
  t.notRegex(lb.output(), /shard worker exited/, 'no shard worker died');
  t.deepEqual(await missingResults(lb, acked), [], 'reads on the full disk show every acknowledged result');
  t.is((await must(lb, 'GET', `/api/v1/results?playbook=${pb}&limit=1`)).count, acked.size, 'and nothing refused');

  // the other kinds of write on the full disk: a label (the front's own store), a
  // batch, a playbook. Stored if they fit in pages the files already have, else
  // 503 like the results: never a 500, never a crash
  const others: Array<[string, unknown]> = [
    ['/api/v1/labels', { name: 'full-disk' }],
    ['/api/v1/ingest', { playbook: { uuid: '00000000-0000-4000-8000-0000000000aa', path: '/srv/batch.yml', runner_version: '2.16.1', status: 'running' }, seq: 1,
      events: [{ kind: 'play', uuid: '00000000-0000-4000-8000-0000000000ab', name: 'p', status: 'running' }] }],
    ['/api/v1/playbooks', { path: '/srv/full.yml', runner_version: '2.16.1', arguments: { data: noise(1, 3000) } }],
  ];
  const statuses = new Map<string, number>();
  for (const [path, body] of others) {
    const res = await post(path, body);
    statuses.set(path, res.status);
    t.log(`on the full disk: POST ${path} → ${res.status}`);
    t.true(res.status < 300 || (res.status === 503 && /could not be stored|Retry later/.test(res.text)), `POST ${path}: ${res.status} ${res.text.slice(0, 300)}`);
  }
  t.is(lb.child.exitCode, null, 'the process is alive');
  // a refused label is not there (it was applied before its write failed, then set back)
  const listed = ((await api(lb.url, 'GET', '/api/v1/labels?limit=1000')).body.results as Array<{ name: string }>).some((l) => l.name === 'full-disk');
  t.is(listed, statuses.get('/api/v1/labels')! < 300, 'the label is listed exactly when it was stored');

  // room again, while it runs: the next writes are stored (a few may still meet the rebuild after a failure)
  t.is(spawnSync('mount', ['-o', 'remount,size=48m', disk]).status, 0, 'remounted larger');
  let resumed = 0;
  const late: number[] = [];
  for (let i = 0; i < 200 && resumed < 20; i++) {
    const marker = `late${i}`;
    const res = await post('/api/v1/results', result(marker, 1200));
    late.push(res.status);
    if (res.status === 201) { acked.set(res.body.id, marker); resumed++; } else await new Promise((r) => setTimeout(r, 50));
  }
  t.log(`after the remount: ${JSON.stringify(Object.fromEntries([...new Set(late)].map((s) => [s, late.filter((x) => x === s).length])))}`);
  t.is(resumed, 20, 'writes are stored again without a restart');
  t.true(late.every((s) => s === 201 || s === 503), 'only 201 or 503 meanwhile');

  // full again (the filesystem shrunk to what it holds), a write fails, then SIGTERM:
  // the stores' last flush and close never settle in lmdb-js after that, and
  // shutdown used to wait until its bound killed it (exit 1), or end silently
  const used = spawnSync('df', ['-k', '--output=used', disk], { encoding: 'utf8' }).stdout.trim().split('\n').pop()!.trim();
  t.is(spawnSync('mount', ['-o', `remount,size=${used}k`, disk]).status, 0, 'full again');
  const last = await post('/api/v1/results', result('refused-before-stop', 1200));
  t.is(last.status, 503, 'a write on the full disk is refused');
  await post('/api/v1/labels', { name: 'before-stop' }); // front.mdb's last write fails too (or fits)
  t.is(await lb.stop('SIGTERM'), 0, 'SIGTERM on a full disk: exit 0');
  t.regex(lb.output(), /"msg":"stopped"/, 'shutdown ran to its end');
  t.notRegex(lb.output(), /shutdown took too long/);
  t.false(existsSync(join(dataDir, 'logbook.pid')), 'the data directory was released');

  // a restart while the disk is still full (systemd restarting it, an operator
  // checking): it starts and serves every acknowledged write; writes get 503.
  // Another process took the last bytes meanwhile (the usual way a disk fills)
  spawnSync('dd', ['if=/dev/zero', `of=${join(disk, 'filler')}`, 'bs=4k'], { encoding: 'utf8' });
  lb = await startLogbook({ env, dataDir });
  t.regex(lb.output(), /the disk is full: the data directory lock is a symbolic link to the pid/);
  t.true(lstatSync(join(dataDir, 'logbook.pid')).isSymbolicLink(), 'locked by a link (the pid text had no room)');
  const second = spawnSync(process.execPath, [MAIN_JS], { env: { ...process.env, LOGBOOK_DATA_DIR: dataDir, LOGBOOK_PORT: '0' }, encoding: 'utf8', timeout: 30_000 });
  t.regex(second.stdout + second.stderr, /is in use by another logbook \(pid \d+\)/, 'and the link keeps a second logbook off the directory');
  t.deepEqual(await missingResults(lb, acked), [], 'restarted on the full disk: every acknowledged result is there');
  t.is((await must(lb, 'GET', `/api/v1/results?playbook=${pb}&limit=1`)).count, acked.size, 'and only those');
  const onFull = await post('/api/v1/results', result('refused-after-restart', 1200));
  t.is(onFull.status, 503, `a write after the restart on the full disk is refused: ${onFull.text.slice(0, 300)}`);

  rmSync(join(disk, 'filler'));
  t.is(spawnSync('mount', ['-o', 'remount,size=48m', disk]).status, 0, 'room again');
  let stored = 0;
  for (let i = 0; i < 200 && stored < 5; i++) {
    const marker = `restarted${i}`;
    const res = await post('/api/v1/results', result(marker, 1200));
    if (res.status === 201) { acked.set(res.body.id, marker); stored++; } else await new Promise((r) => setTimeout(r, 50));
  }
  t.is(stored, 5, 'writes are stored again without another restart');
  t.is(await lb.stop('SIGTERM'), 0);
  lb = await startLogbook({ env, dataDir });
  t.deepEqual(await missingResults(lb, acked), [], 'after a restart with room every acknowledged result is there');
  t.is((await must(lb, 'GET', `/api/v1/results?playbook=${pb}&limit=1`)).count, acked.size, 'and only those');
});
