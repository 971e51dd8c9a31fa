// The run metrics of /metrics (src/run_metrics.ts, docs/operations.md#metrics):
// exact values after runs and results are written over several shards; after a
// restart on the same data (snapshots + journal replayed) the gauges are the
// same and the counters did not count the replay; deletes keep the gauges exact;
// expiry and batch ingest count as other writes; the per-series counters stay
// within their bound.
import test from 'ava';
import { api, startLogbook } from '../helpers/server.js';
import {
  createFile, createHost, createPlay, createPlaybook, createResult, createTask, del, fromMicros, patch, randomUuid, SERVER_ENV, uniq, type Json,
} from '../helpers/fixtures.js';
import { eventually, scrape } from '../helpers/ops.js';
import { sample, type Family } from '../helpers/prom.js';

type Families = Map<string, Family>;

/** The run gauges of a scrape, to compare before and after a restart. */
function gauges(m: Families) {
  const runs: Record<string, number | undefined> = {};
  for (const s of ['unknown', 'running', 'completed', 'failed', 'expired']) runs[s] = sample(m, 'logbook_runs', { status: s });
  return {
    runs,
    oldest: sample(m, 'logbook_runs_running_oldest_started_timestamp_seconds'),
    unreachable: sample(m, 'logbook_hosts_unreachable'),
  };
}

/** The counters of a scrape. */
function counters(m: Families) {
  const ended: Record<string, number | undefined> = {};
  for (const s of ['completed', 'failed', 'expired']) ended[s] = sample(m, 'logbook_runs_ended_total', { status: s });
  const results: Record<string, number | undefined> = {};
  for (const s of ['ok', 'changed', 'failed', 'ignored', 'skipped', 'unreachable', 'unknown']) results[s] = sample(m, 'logbook_results_total', { status: s });
  return {
    started: sample(m, 'logbook_runs_started_total'), ended, results,
    durationCount: sample(m, 'logbook_run_duration_seconds_count'),
    durationSum: sample(m, 'logbook_run_duration_seconds_sum'),
    series: m.get('logbook_series_runs_ended_total')?.samples.length ?? 0,
  };
}

const ZERO_COUNTERS = {
  started: 0, ended: { completed: 0, failed: 0, expired: 0 },
  results: { ok: 0, changed: 0, failed: 0, ignored: 0, skipped: 0, unreachable: 0, unknown: 0 },
  durationCount: 0, durationSum: 0, series: 0,
};

/** A playbook with a play, a task and one host, whose refs results need. */
async function run(url: string, playbook: Record<string, unknown>) {
  const pb: Json = await createPlaybook(url, playbook);
  const file = (await createFile(url, pb.id)).id as number;
  const play = (await createPlay(url, pb.id)).id as number;
  const task = (await createTask(url, { playbook: pb.id, play, file })).id as number;
  const host = (await createHost(url, pb.id)).id as number;
  return { playbook: pb.id as number, play, task, host };
}

test.serial('run gauges and counters: exact, the same gauges after a restart, no counts from the replay, deletes followed', async (t) => {
  const tag = uniq('rm');
  // a snapshot every 3 journaled commands: the restart loads snapshots and replays a journal tail
  const env = { ...SERVER_ENV, LOGBOOK_SNAPSHOT_EVERY: '3', LOGBOOK_METRICS_SERIES: `/srv/${tag}-*/deploy.yml` };
  let lb = await startLogbook({ env, keepData: true, startTimeoutMs: 120_000 });
  try {
    const empty = await scrape(lb.url);
    t.deepEqual(counters(empty), ZERO_COUNTERS);
    t.deepEqual(gauges(empty), { runs: { unknown: 0, running: 0, completed: 0, failed: 0, expired: 0 }, oldest: 0, unreachable: 0 });

    const now = BigInt(Math.floor(Date.now() / 1000)) * 1_000_000n;
    const at = (secondsAgo: number) => fromMicros(now - BigInt(secondsAgo) * 1_000_000n);
    // A: running since 100 s ago; results of every shown status, one unreachable
    const a = await run(lb.url, { status: 'running', started: at(100) });
    for (const r of [{ status: 'ok' }, { status: 'ok', changed: true }, { status: 'failed' }, { status: 'failed', ignore_errors: true }, { status: 'unreachable' }]) {
      await createResult(lb.url, a, r);
    }
    // B: running since 50 s ago; a host whose counters say unreachable, and one that does not
    const b = await run(lb.url, { status: 'running', started: at(50) });
    await patch(lb.url, `/api/v1/hosts/${b.host}`, { unreachable: 2, ok: 1 });
    await createHost(lb.url, b.playbook, { ok: 3 });
    // C: a series (allowed path), failed after 30 s; D: completed after 5 s; E: created completed (an import: not an end)
    const c = await run(lb.url, { status: 'running', started: at(300), path: `/srv/${tag}-c/deploy.yml`, name: 'deploy' });
    await patch(lb.url, `/api/v1/playbooks/${c.playbook}`, { status: 'failed', ended: at(270) });
    const d = await run(lb.url, { status: 'running', started: at(20) });
    await patch(lb.url, `/api/v1/playbooks/${d.playbook}`, { status: 'completed', ended: at(15) });
    await createPlaybook(lb.url, { status: 'completed', started: at(1000), ended: at(900) });
    // a status PATCHed to the one it has is no end; a PATCH of other fields neither
    await patch(lb.url, `/api/v1/playbooks/${c.playbook}`, { status: 'failed' });
    await patch(lb.url, `/api/v1/playbooks/${d.playbook}`, { name: 'renamed' });

    const live = await scrape(lb.url);
    const expectedGauges = {
      runs: { unknown: 0, running: 2, completed: 2, failed: 1, expired: 0 },
      oldest: Number(now / 1_000_000n) - 100,
      unreachable: 2, // A's host (a result), B's first host (its counter)
    };
    t.deepEqual(gauges(live), expectedGauges);
    t.deepEqual(counters(live), {
      started: 5, ended: { completed: 1, failed: 1, expired: 0 },
      results: { ok: 1, changed: 1, failed: 1, ignored: 1, skipped: 0, unreachable: 1, unknown: 0 },
      durationCount: 2, durationSum: 35, series: 3, // the series' completed, failed, expired
    });
    t.is(sample(live, 'logbook_run_duration_seconds_bucket', { le: '10' }), 1);
    t.is(sample(live, 'logbook_run_duration_seconds_bucket', { le: '30' }), 2);
    t.is(sample(live, 'logbook_series_runs_ended_total', { path: `/srv/${tag}-c/deploy.yml`, name: 'deploy', status: 'failed' }), 1);
    t.is(sample(live, 'logbook_series_runs_ended_total', { path: `/srv/${tag}-c/deploy.yml`, name: 'deploy', status: 'completed' }), 0);
    t.is(sample(live, 'logbook_series_dropped_total'), 0);

    // restart on the same data: the gauges are rebuilt, the counters start at 0
    await lb.stop();
    lb = await startLogbook({ env, dataDir: lb.dataDir, keepData: true, startTimeoutMs: 120_000 });
    const restarted = await scrape(lb.url);
    t.deepEqual(gauges(restarted), expectedGauges);
    t.deepEqual(counters(restarted), ZERO_COUNTERS, 'the replay counted nothing');

    // live writes after the restart count; deletes keep the gauges exact
    await patch(lb.url, `/api/v1/playbooks/${a.playbook}`, { status: 'failed', ended: at(0) });
    const ended = await scrape(lb.url);
    t.is(sample(ended, 'logbook_runs_ended_total', { status: 'failed' }), 1);
    t.is(sample(ended, 'logbook_run_duration_seconds_bucket', { le: '60' }), 0);
    t.is(sample(ended, 'logbook_run_duration_seconds_bucket', { le: '120' }), 1);
    t.deepEqual(gauges(ended), {
      runs: { unknown: 0, running: 1, completed: 2, failed: 2, expired: 0 },
      oldest: Number(now / 1_000_000n) - 50, unreachable: 1, // B's host
    });
    await del(lb.url, `/api/v1/hosts/${b.host}`);
    t.is(sample(await scrape(lb.url), 'logbook_hosts_unreachable'), 0);
    await del(lb.url, `/api/v1/playbooks/${b.playbook}`);
    await del(lb.url, `/api/v1/playbooks/${c.playbook}`);
    const deleted = await scrape(lb.url);
    t.deepEqual(gauges(deleted), { runs: { unknown: 0, running: 0, completed: 2, failed: 1, expired: 0 }, oldest: 0, unreachable: 0 });
    t.is(sample(deleted, 'logbook_runs_ended_total', { status: 'failed' }), 1, 'a delete takes nothing back from a counter');
  } finally {
    await lb.stop();
  }
});

test.serial('expiry and batch ingest end runs; per-series counters stay within LOGBOOK_METRICS_SERIES_MAX', async (t) => {
  const tag = uniq('cap');
  const lb = await startLogbook({
    env: {
      LOGBOOK_SHARDS: '2', LOGBOOK_METRICS_SERIES: `/srv/${tag}/*`, LOGBOOK_METRICS_SERIES_MAX: '2',
      LOGBOOK_EXPIRE_RUNNING_AFTER: '1h', LOGBOOK_MAINTENANCE_INTERVAL: '1',
    },
  });
  try {
    const now = BigInt(Date.now()) * 1000n;
    const started = fromMicros(now - 7200n * 1_000_000n);
    const stale = await createPlaybook(lb.url, { status: 'running', started, path: `/srv/${tag}/stale.yml` });
    const m = await eventually(async () => {
      const s = await scrape(lb.url);
      return sample(s, 'logbook_runs_ended_total', { status: 'expired' }) === 1 ? s : null;
    }, 30_000, 'the stale run expired');
    t.is(sample(m, 'logbook_runs', { status: 'expired' }), 1);
    t.is(sample(m, 'logbook_runs', { status: 'running' }), 0);
    t.is(sample(m, 'logbook_series_runs_ended_total', { path: `/srv/${tag}/stale.yml`, name: '', status: 'expired' }), 1);
    t.true(sample(m, 'logbook_run_duration_seconds_bucket', { le: '3600' })! === 0 && sample(m, 'logbook_run_duration_seconds_count') === 1,
      'an expired run lasted until it was marked');

    // batch ingest counts as per-record writes do: a run with an unreachable host, then ended failed
    const uuid = randomUuid();
    const play = randomUuid();
    const path = `/srv/ingest-${tag}/site.yml`;
    const header = { uuid, path, runner_version: '2.16.0', status: 'running', started: fromMicros(now) };
    const first = await api(lb.url, 'POST', '/api/v1/ingest', {
      playbook: header, seq: 1, events: [
        { kind: 'file', path, content: '- hosts: all\n' },
        { kind: 'play', uuid: play, name: 'p', status: 'running', started: fromMicros(now) },
        { kind: 'task', uuid: `${uuid}-t1`, play, file: path, name: 't', action: 'ping', lineno: 1, handler: false, status: 'running', started: fromMicros(now) },
        { kind: 'result', task: `${uuid}-t1`, host: 'web-01', status: 'unreachable', started: fromMicros(now), ended: fromMicros(now) },
        { kind: 'result', task: `${uuid}-t1`, host: 'web-02', status: 'ok', started: fromMicros(now), ended: fromMicros(now) },
      ],
    });
    t.is(first.status, 200, first.text);
    const running = await scrape(lb.url);
    t.is(sample(running, 'logbook_hosts_unreachable'), 1);
    t.is(sample(running, 'logbook_results_total', { status: 'unreachable' }), 1);
    t.is(sample(running, 'logbook_results_total', { status: 'ok' }), 1);
    t.is(sample(running, 'logbook_runs_started_total'), 2);
    const second = await api(lb.url, 'POST', '/api/v1/ingest', {
      playbook: header, seq: 2, events: [{ kind: 'playbook', status: 'failed', ended: fromMicros(now + 2_000_000n) }],
    });
    t.is(second.status, 200, second.text);
    const ingested = await scrape(lb.url);
    t.is(sample(ingested, 'logbook_runs_ended_total', { status: 'failed' }), 1);
    t.is(sample(ingested, 'logbook_hosts_unreachable'), 0, 'its playbook no longer runs');

    // two more series end (one already is exported): the bound keeps one of them out
    for (const name of ['one', 'two']) {
      const pb = await createPlaybook(lb.url, { status: 'running', path: `/srv/${tag}/${name}.yml` });
      await patch(lb.url, `/api/v1/playbooks/${pb.id}`, { status: 'failed' });
    }
    // a path outside the allowlist is no series
    const other = await createPlaybook(lb.url, { status: 'running', path: `/srv/other-${tag}/x.yml` });
    await patch(lb.url, `/api/v1/playbooks/${other.id}`, { status: 'failed' });
    const capped = await scrape(lb.url);
    const paths = new Set(capped.get('logbook_series_runs_ended_total')!.samples.map((s) => s.labels.path));
    t.is(paths.size, 2);
    t.true(paths.has(`/srv/${tag}/stale.yml`));
    t.is(sample(capped, 'logbook_series_dropped_total'), 1);
    t.is(sample(capped, 'logbook_runs_ended_total', { status: 'failed' }), 4);
    t.is(stale.status, 'running');
  } finally {
    await lb.stop();
  }
});

test.serial('a shard worker that restarts: its counts so far are kept, its recovery counts nothing', async (t) => {
  const lb = await startLogbook({ env: { LOGBOOK_SHARDS: '1', LOGBOOK_TEST_HOOKS: '1' } });
  try {
    const fail = async () => {
      const pb = await createPlaybook(lb.url, { status: 'running' });
      await patch(lb.url, `/api/v1/playbooks/${pb.id}`, { status: 'failed' });
    };
    await fail();
    t.is(sample(await scrape(lb.url), 'logbook_runs_ended_total', { status: 'failed' }), 1);
    t.is((await api(lb.url, 'POST', '/__test__/shards/0/crash', {})).status, 200);
    const back = await eventually(async () => {
      const m = await scrape(lb.url);
      return sample(m, 'logbook_shard_restarts_total', { shard: '0' }) === 1 && sample(m, 'logbook_shard_up', { shard: '0' }) === 1
        && sample(m, 'logbook_runs', { status: 'failed' }) !== undefined ? m : null;
    }, 30_000, 'the shard restarted');
    t.is(sample(back, 'logbook_runs_ended_total', { status: 'failed' }), 1, 'kept, and not counted again by the recovery');
    t.is(sample(back, 'logbook_runs_started_total'), 1);
    await fail();
    const after = await scrape(lb.url);
    t.is(sample(after, 'logbook_runs_ended_total', { status: 'failed' }), 2);
    t.is(sample(after, 'logbook_runs', { status: 'failed' }), 2);
  } finally {
    await lb.stop();
  }
});
