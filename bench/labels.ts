// Label writes with many new labels (issue 51 item 5): `node dist/bench/labels.js
// [labels=5000] [rounds=3]`, after `npx tsc -p tsconfig.json`. Starts a real
// server (one shard, its own temporary data directory; the labels-per-write
// bound raised to `labels` with the test hook) and, per round:
//   - one playbook write naming `labels` new labels, timed (labels/s);
//   - 50 ms into it, another client's POST /api/v1/labels of one label, timed:
//     how long a label writer is held behind the big write;
//   - the label shard's journal entries the two writes cost (/metrics).
// Then the same as 1,000-label writes from 5 clients at once. Prints one JSON
// line per measurement. Timings on a shared machine are noisy: compare runs of
// the same moment, not across days.
import { api, startLogbook } from '../test/helpers/server.js';
import { scrape } from '../test/helpers/ops.js';
import { sample } from '../test/helpers/prom.js';

const LABELS = Number(process.argv[2] ?? 5000);
const ROUNDS = Number(process.argv[3] ?? 3);
const run = Date.now().toString(36);

async function journal(url: string): Promise<number> {
  return sample(await scrape(url), 'logbook_shard_journal_entries', { shard: '0' }) ?? NaN;
}

const timed = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
  const t0 = performance.now();
  const v = await f();
  return [v, performance.now() - t0];
};

const lb = await startLogbook({
  env: {
    LOGBOOK_SHARDS: '1', LOGBOOK_SNAPSHOT_INTERVAL: '86400', LOGBOOK_SNAPSHOT_EVERY: '100000000',
    LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_WRITE_BOUNDS: `labels=${Math.max(LABELS, 1000)}`,
  },
});
try {
  for (let round = 0; round < ROUNDS; round++) {
    const names = Array.from({ length: LABELS }, (_, i) => `bench-${run}-${round}-${i}`);
    const before = await journal(lb.url);
    const big = timed(() => api(lb.url, 'POST', '/api/v1/playbooks', { path: '/srv/site.yml', runner_version: '2.16.3', labels: names }));
    await new Promise((r) => setTimeout(r, 50));
    const [small, smallMs] = await timed(() => api(lb.url, 'POST', '/api/v1/labels', { name: `other-${run}-${round}` }));
    const [reply, bigMs] = await big;
    if (reply.status !== 201 || small.status !== 201) throw new Error(`writes answered ${reply.status} / ${small.status}: ${reply.text.slice(0, 200)} ${small.text}`);
    const entries = (await journal(lb.url)) - before;
    console.log(JSON.stringify({
      measure: 'one write of new labels', labels: LABELS, writeMs: Math.round(bigMs), labelsPerSecond: Math.round(LABELS / (bigMs / 1000)),
      otherLabelPostMs: Math.round(smallMs), journalEntries: entries,
    }));
  }
  for (let round = 0; round < ROUNDS; round++) {
    const before = await journal(lb.url);
    const clients = 5;
    const [, ms] = await timed(() => Promise.all(Array.from({ length: clients }, (_, c) => api(lb.url, 'POST', '/api/v1/playbooks', {
      path: '/srv/site.yml', runner_version: '2.16.3', labels: Array.from({ length: 1000 }, (_, i) => `many-${run}-${round}-${c}-${i}`),
    }).then((r) => { if (r.status !== 201) throw new Error(`${r.status}: ${r.text.slice(0, 200)}`); }))));
    console.log(JSON.stringify({
      measure: 'writes of 1,000 new labels from 5 clients at once', labels: clients * 1000, ms: Math.round(ms),
      labelsPerSecond: Math.round((clients * 1000) / (ms / 1000)), journalEntries: (await journal(lb.url)) - before,
    }));
  }
} finally {
  await lb.stop();
}
