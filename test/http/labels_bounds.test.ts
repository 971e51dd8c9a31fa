// Label writes and the write bounds of what every read multiplies (issue 51:
// items 1 and 5), against the real server:
// - the new labels of one write are created in one step: one journal entry of
//   the label shard (the operator sees it in logbook_shard_journal_entries),
//   where each label used to be one commit after another (~1,250 labels/s,
//   holding every other label writer meanwhile; bench/labels.ts times it);
// - labels per playbook write, distinct labels per batch and `arguments` bytes
//   are bounded: past a bound the answer names it and nothing is stored;
// - what was written under a higher bound still loads, reads and is patched.
// No wall-clock assertion: the step count is what is checked.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { scrape } from '../helpers/ops.js';
import { sample } from '../helpers/prom.js';
import { uniq } from '../helpers/fixtures.js';

/** One shard, and no snapshot during a test: every label change and playbook write is an entry of shard 0's journal. */
const ONE_SHARD = { LOGBOOK_SHARDS: '1', LOGBOOK_SNAPSHOT_INTERVAL: '86400', LOGBOOK_SNAPSHOT_EVERY: '100000000' };
/** Lowered bounds, so refusals are cheap to provoke (test hook, src/limits.ts testBound). */
const LOW_BOUNDS = { ...ONE_SHARD, LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_WRITE_BOUNDS: 'labels=5,batchLabels=8,argumentsBytes=200' };

const names = (n: number, prefix = uniq('many')): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
const newPlaybook = (extra: Record<string, unknown> = {}) => ({ path: `/work/${uniq('pb')}/site.yml`, runner_version: '2.16.3', ...extra });

async function journalEntries(lb: Logbook): Promise<number> {
  const v = sample(await scrape(lb.url), 'logbook_shard_journal_entries', { shard: '0' });
  if (v === undefined) throw new Error('no logbook_shard_journal_entries{shard="0"} in /metrics');
  return v;
}

async function counts(lb: Logbook): Promise<{ labels: number; playbooks: number }> {
  const labels = await api(lb.url, 'GET', '/api/v1/labels?limit=1');
  const playbooks = await api(lb.url, 'GET', '/api/v1/playbooks?limit=1');
  return { labels: labels.body.count, playbooks: playbooks.body.count };
}

async function withServer(env: Record<string, string>, run: (lb: Logbook, restart: (env2?: Record<string, string>) => Promise<Logbook>) => Promise<void>): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-labels-'));
  let lb = await startLogbook({ env, dataDir });
  try {
    await run(lb, async (env2 = env) => {
      await lb.stop();
      lb = await startLogbook({ env: env2, dataDir });
      return lb;
    });
  } finally {
    await lb.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

test.serial('a playbook write naming 1,000 new labels is one step of the label shard, and another client\'s label POST is not held behind 1,000', async (t) => {
  await withServer(ONE_SHARD, async (lb, restart) => {
    const before = await journalEntries(lb);
    const wanted = names(1000);
    const other = uniq('other');
    const [big, small] = await Promise.all([
      api(lb.url, 'POST', '/api/v1/playbooks', newPlaybook({ labels: wanted })),
      api(lb.url, 'POST', '/api/v1/labels', { name: other }),
    ]);
    t.is(big.status, 201, big.text.slice(0, 300));
    t.is(small.status, 201, small.text);
    t.deepEqual(big.body.labels.map((l: any) => l.name).sort(), [...wanted].sort());
    const entries = (await journalEntries(lb)) - before;
    // the playbook's own entry, one for its 1,000 labels, and the other POST's label (alone or in the same step)
    t.true(entries <= 3, `journal entries for the two writes: ${entries} (one per label would be 1,002)`);

    // a batch (POST /api/v1/ingest) naming 1,000 new labels: also one step for them
    const batchNames = names(1000);
    const beforeBatch = await journalEntries(lb);
    const batch = await api(lb.url, 'POST', '/api/v1/ingest', {
      playbook: { uuid: uniq('run'), path: '/srv/site.yml', runner_version: '2.16.3' },
      seq: 1,
      events: [{ kind: 'playbook', labels: batchNames.slice(0, 600) }, { kind: 'playbook', labels: batchNames.slice(400) }],
    });
    t.is(batch.status, 200, batch.text);
    t.deepEqual(batch.body.rejected, []);
    const batchEntries = (await journalEntries(lb)) - beforeBatch;
    t.true(batchEntries <= 2, `journal entries for the batch and its 1,000 new labels: ${batchEntries}`);
    const pb = (await api(lb.url, 'GET', `/api/v1/playbooks/${batch.body.playbook}`)).body;
    t.deepEqual(pb.labels.map((l: any) => l.name).sort(), batchNames.slice(400).sort(), 'the last playbook event\'s labels replace the set');

    // get-or-create: naming them again creates nothing, and ids stay what they were across a restart
    const again = await api(lb.url, 'POST', '/api/v1/playbooks', newPlaybook({ labels: wanted }));
    t.is(again.status, 201);
    t.deepEqual(again.body.labels.map((l: any) => l.id).sort(), big.body.labels.map((l: any) => l.id).sort());
    const { labels } = await counts(lb);
    t.true(labels >= 2001, `labels: ${labels}`);
    const lb2 = await restart();
    t.is((await counts(lb2)).labels, labels, 'every label is there after a restart');
    const reread = (await api(lb2.url, 'GET', `/api/v1/playbooks/${big.body.id}`)).body;
    t.deepEqual(reread.labels, big.body.labels, 'same ids and names after a restart');
  });
});

test.serial('default bounds: 1,001 labels in one playbook write → 400 in DRF\'s wording, nothing stored', async (t) => {
  await withServer(ONE_SHARD, async (lb) => {
    const before = await counts(lb);
    const r = await api(lb.url, 'POST', '/api/v1/playbooks', newPlaybook({ labels: names(1001) }));
    t.is(r.status, 400);
    t.deepEqual(r.body, { labels: ['Ensure this field has no more than 1000 elements.'] });
    const args = await api(lb.url, 'POST', '/api/v1/playbooks', newPlaybook({ arguments: { extra_vars_blob: 'x'.repeat(1024 * 1024) } }));
    t.is(args.status, 400);
    t.deepEqual(args.body, { arguments: ['Ensure this field has no more than 1048576 bytes of JSON.'] });
    t.deepEqual(await counts(lb), before);
  });
});

test.serial('over each bound: the error names it, nothing is stored, and a restart keeps exactly what was', async (t) => {
  await withServer(LOW_BOUNDS, async (lb, restart) => {
    const kept = (await api(lb.url, 'POST', '/api/v1/playbooks', newPlaybook({ labels: ['a', 'b'], arguments: { check: true } }))).body;
    const before = await counts(lb);
    const tooMany = { labels: ['Ensure this field has no more than 5 elements.'] };
    const tooBig = { arguments: ['Ensure this field has no more than 200 bytes of JSON.'] };

    const created = await api(lb.url, 'POST', '/api/v1/playbooks', newPlaybook({ labels: names(6) }));
    t.is(created.status, 400);
    t.deepEqual(created.body, tooMany);
    const patched = await api(lb.url, 'PATCH', `/api/v1/playbooks/${kept.id}`, { labels: names(6) });
    t.is(patched.status, 400);
    t.deepEqual(patched.body, tooMany);
    const put = await api(lb.url, 'PUT', `/api/v1/playbooks/${kept.id}`, newPlaybook({ labels: names(6) }));
    t.is(put.status, 400);
    t.deepEqual(put.body, tooMany);
    const big = await api(lb.url, 'POST', '/api/v1/playbooks', newPlaybook({ arguments: { v: 'y'.repeat(200) } }));
    t.is(big.status, 400);
    t.deepEqual(big.body, tooBig);
    const bigPatch = await api(lb.url, 'PATCH', `/api/v1/playbooks/${kept.id}`, { arguments: { v: 'é'.repeat(100) } });
    t.is(bigPatch.status, 400, 'bytes of UTF-8, not characters');
    t.deepEqual(bigPatch.body, tooBig);

    // batch ingest: a stream's header is refused whole (as every header error); a playbook event is a rejected event
    const header = await api(lb.url, 'POST', '/api/v1/ingest', {
      playbook: { uuid: uniq('run'), path: '/srv/site.yml', runner_version: '2.16.3', labels: names(6) }, seq: 1, events: [],
    });
    t.is(header.status, 400);
    t.deepEqual(header.body, { playbook: tooMany });
    const stream = uniq('run');
    const first = await api(lb.url, 'POST', '/api/v1/ingest', { playbook: { uuid: stream, path: '/srv/site.yml', runner_version: '2.16.3' }, seq: 1, events: [] });
    t.is(first.status, 200, first.text);
    const afterStream = await counts(lb);
    const events = await api(lb.url, 'POST', '/api/v1/ingest', {
      playbook: { uuid: stream }, seq: 2,
      events: [{ kind: 'playbook', labels: names(6) }, { kind: 'playbook', arguments: { v: 'z'.repeat(300) } }, { kind: 'playbook', name: 'ok' }],
    });
    t.is(events.status, 200, events.text);
    t.is(events.body.applied, 1);
    t.deepEqual(events.body.rejected, [{ index: 0, errors: tooMany }, { index: 1, errors: tooBig }]);
    // distinct labels of one batch (each event within its bound): refused whole, its seq not used up
    const wide = await api(lb.url, 'POST', '/api/v1/ingest', {
      playbook: { uuid: stream }, seq: 3,
      events: [{ kind: 'playbook', labels: names(5) }, { kind: 'playbook', labels: names(4) }],
    });
    t.is(wide.status, 413);
    t.deepEqual(wide.body, { detail: 'A batch names at most 8 distinct labels; send the rest in later batches.' });
    t.deepEqual(await counts(lb), afterStream, 'no label was created by a refused write or event');
    t.is(afterStream.labels, before.labels);
    const next = await api(lb.url, 'POST', '/api/v1/ingest', { playbook: { uuid: stream }, seq: 3, events: [{ kind: 'playbook', labels: ['c'] }] });
    t.is(next.status, 200, 'the refused batch did not use up its seq');

    const unchanged = (await api(lb.url, 'GET', `/api/v1/playbooks/${kept.id}`)).body;
    t.deepEqual(unchanged.labels.map((l: any) => l.name).sort(), ['a', 'b']);
    t.deepEqual(unchanged.arguments, { check: true });
    const stored = await counts(lb);
    const lb2 = await restart();
    t.deepEqual(await counts(lb2), stored, 'a restart keeps exactly what was acknowledged');
    t.deepEqual((await api(lb2.url, 'GET', `/api/v1/playbooks/${kept.id}`)).body, unchanged);
  });
});

test.serial('what was written under higher bounds still loads, reads and takes writes that leave it alone', async (t) => {
  const HIGH = { ...ONE_SHARD, LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_WRITE_BOUNDS: 'labels=50,argumentsBytes=100000' };
  await withServer(HIGH, async (lb, restart) => {
    const wanted = names(50);
    const args = { blob: 'q'.repeat(50_000) };
    const pb = await api(lb.url, 'POST', '/api/v1/playbooks', newPlaybook({ labels: wanted, arguments: args }));
    t.is(pb.status, 201, pb.text.slice(0, 300));
    const lb2 = await restart(LOW_BOUNDS); // now 5 labels and 200 bytes
    const read = await api(lb2.url, 'GET', `/api/v1/playbooks/${pb.body.id}`);
    t.is(read.status, 200);
    t.deepEqual(read.body.labels, pb.body.labels);
    t.deepEqual(read.body.arguments, args);
    const page = await api(lb2.url, 'GET', '/api/v1/playbooks?order=-id&limit=100');
    t.is(page.status, 200);
    t.is(page.body.results[0].id, pb.body.id);
    const renamed = await api(lb2.url, 'PATCH', `/api/v1/playbooks/${pb.body.id}`, { name: 'still writable' });
    t.is(renamed.status, 200, renamed.text.slice(0, 300));
    t.is(renamed.body.labels.length, 50, 'a write without `labels` keeps the set it had');
    const refused = await api(lb2.url, 'PATCH', `/api/v1/playbooks/${pb.body.id}`, { labels: wanted });
    t.is(refused.status, 400, 'sending the set again is a new write: the bound applies');
  });
});
