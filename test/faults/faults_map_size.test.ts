// A shard's storage limit (LOGBOOK_MAP_SIZE) reached by a real logbook process:
// writes get 503 with a JSON body naming the problem, reads and deletes keep
// working, nothing acknowledged is lost (also across a SIGKILL), and a restart
// with a larger limit resumes service with everything acknowledged present.
// (lmdb-js grows an LMDB map on demand, so the limit is logbook's: see
// LmdbShardStore.full().) The option's parsing is checked here too.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { runUntilExit } from '../helpers/process.js';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-mapsize-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('LOGBOOK_MAP_SIZE / --map-size take bytes with k, M, G suffixes; bad values stop start-up naming the option', async (t) => {
  t.is(loadConfig({}, []).mapSize, null);
  t.is(loadConfig({ LOGBOOK_MAP_SIZE: '64M' }, []).mapSize, 64 * 1024 ** 2);
  t.is(loadConfig({ LOGBOOK_MAP_SIZE: '2G' }, []).mapSize, 2 * 1024 ** 3);
  t.is(loadConfig({ LOGBOOK_MAP_SIZE: '1536k' }, []).mapSize, 1536 * 1024);
  t.is(loadConfig({ LOGBOOK_MAP_SIZE: '1048576' }, []).mapSize, 1048576);
  t.is(loadConfig({ LOGBOOK_MAP_SIZE: 'off' }, ['--map-size', '8M']).mapSize, 8 * 1024 ** 2, 'the flag wins');
  for (const bad of ['12x', '-5M', '1.5G', '100k', 'M', '99999999999999999999']) {
    t.throws(() => loadConfig({ LOGBOOK_MAP_SIZE: bad }, []), { message: /LOGBOOK_MAP_SIZE: invalid value/ }, bad);
  }
  const refused = await runUntilExit({ env: { LOGBOOK_MAP_SIZE: 'huge' }, dataDir: tempDir(t) });
  t.is(refused.code, 2);
  t.regex(refused.output, /LOGBOOK_MAP_SIZE: invalid value "huge"/);
});

test('at the storage limit writes get 503 naming it, reads and deletes work, and a larger limit after a restart resumes service with nothing lost', async (t) => {
  t.timeout(120_000);
  const dataDir = tempDir(t);
  const env = { LOGBOOK_SHARDS: '1', LOGBOOK_MAP_SIZE: '2M', LOGBOOK_SNAPSHOT_EVERY: '200' };
  let lb: Logbook = await startLogbook({ env, dataDir });
  t.teardown(async () => { await lb.stop('SIGKILL'); });
  const must = async (method: string, path: string, body?: unknown) => {
    const res = await api(lb.url, method, path, body);
    if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${res.text}`);
    return res.body;
  };
  const pb = await must('POST', '/api/v1/playbooks', { path: '/srv/full.yml', runner_version: '2.16.1' });
  const play = await must('POST', '/api/v1/plays', { playbook: pb.id, uuid: '00000000-0000-4000-8000-000000000001' });
  const file = await must('POST', '/api/v1/files', { playbook: pb.id, path: '/srv/full.yml', content: '- hosts: all\n' });
  const task = await must('POST', '/api/v1/tasks', { playbook: pb.id, play: play.id, file: file.id, action: 'debug', lineno: 1, handler: false });
  const host = await must('POST', '/api/v1/hosts', { playbook: pb.id, name: 'h1' });

  // results with ~6 KB of incompressible-ish content until the limit answers
  const acked = new Map<number, string>();
  let refusal: { status: number; text: string; retryAfter: string | null } | null = null;
  for (let i = 0; i < 2000 && !refusal; i++) {
    const marker = `r${i}-` + Array.from({ length: 400 }, (_, k) => ((i * 7919 + k * 104729) % 1e6).toString(36)).join('');
    const res = await api(lb.url, 'POST', '/api/v1/results', { playbook: pb.id, play: play.id, task: task.id, host: host.id, status: 'ok', content: { marker } });
    if (res.status === 201) acked.set(res.body.id, marker);
    else refusal = { status: res.status, text: res.text, retryAfter: res.headers.get('retry-after') };
  }
  t.log(`${acked.size} results acknowledged before the limit; refusal: ${refusal?.status} ${refusal?.text}`);
  t.truthy(refusal, 'the limit was reached');
  t.is(refusal!.status, 503);
  t.regex(JSON.parse(refusal!.text).detail, /storage is full.*LOGBOOK_MAP_SIZE/);
  t.truthy(refusal!.retryAfter, '503 carries Retry-After');
  t.true(acked.size > 50, 'a fair number of writes fit first');

  // still full: a PATCH is refused too; reads work
  const [first] = acked.keys();
  const patch = await api(lb.url, 'PATCH', `/api/v1/results/${first}`, { status: 'failed' });
  t.is(patch.status, 503);
  const read = await must('GET', `/api/v1/results/${first}`);
  t.is(read.content.marker, acked.get(first!), 'GET of a stored result works at the limit');
  t.is(read.status, 'ok', 'the refused PATCH changed nothing');
  t.is((await must('GET', `/api/v1/results?playbook=${pb.id}&limit=1`)).count, acked.size, 'lists work and count every acknowledged result');
  // deletes make room and are allowed
  const [, second] = acked.keys();
  t.is((await api(lb.url, 'DELETE', `/api/v1/results/${second}`)).status, 204);
  acked.delete(second!);

  // a crash at the limit, then a restart with the same limit: nothing lost, still refusing
  t.is(await lb.stop('SIGKILL'), null);
  lb = await startLogbook({ env, dataDir });
  t.is((await must('GET', `/api/v1/results?playbook=${pb.id}&limit=1`)).count, acked.size);
  t.is((await api(lb.url, 'POST', '/api/v1/records', { playbook: pb.id, key: 'k', type: 'text', value: 'v' })).status, 503, 'still at the limit after a restart');
  t.is(await lb.stop('SIGTERM'), 0);

  // a larger limit: service resumes, everything acknowledged is there
  lb = await startLogbook({ env: { ...env, LOGBOOK_MAP_SIZE: '64M' }, dataDir });
  const missing: string[] = [];
  for (const [id, marker] of acked) {
    const res = await api(lb.url, 'GET', `/api/v1/results/${id}`);
    if (res.status !== 200 || res.body.content.marker !== marker) missing.push(`result ${id}: ${res.status}`);
  }
  t.deepEqual(missing, [], 'every acknowledged result is there with its content');
  t.is((await api(lb.url, 'GET', `/api/v1/results/${second}`)).status, 404, 'the acknowledged delete stayed');
  t.is((await api(lb.url, 'POST', '/api/v1/records', { playbook: pb.id, key: 'k', type: 'text', value: 'v' })).status, 201, 'writes work again');
  t.is((await api(lb.url, 'PATCH', `/api/v1/results/${first}`, { status: 'failed' })).status, 200);
});
