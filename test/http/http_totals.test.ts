// Run totals (docs/api.md#run-totals): GET /api/v1/playbooks/<id>/totals gives a
// run's results by shown status and whether anything changed, kept by the shard as
// results are created, updated and deleted (per record and by batch ingest), and
// the same after a restart from snapshots and the journal.
import test from 'ava';
import { api, startLogbook } from '../helpers/server.js';
import { call, createResult, createTree, del, patch, post, randomUuid, SERVER_ENV, uniq } from '../helpers/fixtures.js';

const ZERO = { ok: 0, changed: 0, failed: 0, skipped: 0, unreachable: 0, ignored: 0 };

test('totals follow results as they are created, updated and deleted, through batch ingest, and over a restart', async (t) => {
  let lb = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_SNAPSHOT_EVERY: '5' }, keepData: true });
  t.teardown(() => lb.stop());
  const totals = async (id: number) => (await call(lb.url, 'GET', `/api/v1/playbooks/${id}/totals`, undefined, 200)).body;

  const tree = await createTree(lb.url, { result: { status: 'skipped' } });
  const refs = { playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host };
  t.deepEqual(await totals(tree.playbook), { ...ZERO, skipped: 1, changed_anything: false });
  await createResult(lb.url, refs, { status: 'ok' });
  const changed = await createResult(lb.url, refs, { status: 'ok', changed: true });
  const ignored = await createResult(lb.url, refs, { status: 'failed', ignore_errors: true });
  await createResult(lb.url, refs, { status: 'unreachable' });
  t.deepEqual(await totals(tree.playbook), { ok: 1, changed: 1, failed: 0, skipped: 1, unreachable: 1, ignored: 1, changed_anything: true });
  // an update moves a result from one status to another; a delete takes it out
  await patch(lb.url, `/api/v1/results/${ignored.id}`, { ignore_errors: false });
  await del(lb.url, `/api/v1/results/${changed.id}`);
  const expected = { ok: 1, changed: 0, failed: 1, skipped: 1, unreachable: 1, ignored: 0, changed_anything: false };
  t.deepEqual(await totals(tree.playbook), expected);

  // batch ingest counts the same
  const uuid = uniq('run');
  const play = randomUuid();
  const batch = await api(lb.url, 'POST', '/api/v1/ingest', {
    playbook: { uuid, path: '/work/site.yml', runner_version: '2.16.0', status: 'running', started: '2026-01-01T00:00:00Z' }, seq: 1, events: [
      { kind: 'file', path: '/work/site.yml', content: '- hosts: all\n' },
      { kind: 'play', uuid: play, name: 'one', status: 'running', started: '2026-01-01T00:00:00Z' },
      { kind: 'task', uuid: `${uuid}-t1`, play, file: '/work/site.yml', name: 'a', action: 'debug', lineno: 1, handler: false, status: 'running', started: '2026-01-01T00:00:01Z' },
      ...['ok', 'ok', 'failed'].map((status, i) => ({ kind: 'result', task: `${uuid}-t1`, host: `h${i}`, status, changed: i === 0, started: '2026-01-01T00:00:02Z', ended: '2026-01-01T00:00:03Z' })),
    ],
  });
  t.is(batch.status, 200, batch.text);
  const batched = batch.body.playbook as number;
  t.deepEqual(await totals(batched), { ...ZERO, ok: 1, changed: 1, failed: 1, changed_anything: true });

  // a restart (snapshots every 5 commands, then the journal's tail) keeps them
  await post(lb.url, '/api/v1/records', { playbook: tree.playbook, key: 'k', value: 'v', type: 'text' });
  t.is(await lb.stop('SIGKILL'), null);
  lb = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_SNAPSHOT_EVERY: '5' }, dataDir: lb.dataDir });
  t.deepEqual(await totals(tree.playbook), expected);
  t.deepEqual(await totals(batched), { ...ZERO, ok: 1, changed: 1, failed: 1, changed_anything: true });

  // unknown and deleted runs: 404; only reads
  t.is((await api(lb.url, 'GET', '/api/v1/playbooks/999999/totals')).status, 404);
  await del(lb.url, `/api/v1/playbooks/${batched}`);
  t.is((await api(lb.url, 'GET', `/api/v1/playbooks/${batched}/totals`)).status, 404);
  t.is((await api(lb.url, 'POST', `/api/v1/playbooks/${tree.playbook}/totals`, {})).status, 405);
});
