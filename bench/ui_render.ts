// How long the web UI takes to show a big run: a playbook with 10,000 results
// (100 tasks × 100 hosts, some failed) is stored through the batch ingest API, then its page
// is opened in headless Chromium, cold (a fresh browser context each time: no
// HTTP cache), and the time from navigation start to the first result rows in
// the document is read from the page's own performance mark
// (`logbook:results-rendered`, set by src/ui/pages/playbook.tsx). Target: < 1 s.
//
//   npm run bench:ui [-- --runs 5 --tasks 100 --hosts 100]
import { buildUi, hasChromium, launchBrowser, openPage } from '../test/helpers/browser.js';
import { startLogbook } from '../test/helpers/server.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const RUNS = arg('runs', 5);
const TASKS = arg('tasks', 100);
const HOSTS = arg('hosts', 100);
if (!hasChromium()) {
  console.error('ui_render: /usr/bin/chromium not found (apt-get install chromium)');
  process.exit(2);
}
buildUi();
const lb = await startLogbook({ env: { LOGBOOK_SHARDS: '2' } });
const browser = await launchBrowser();
try {
  const t0 = performance.now();
  // One stream of batches (POST /api/v1/ingest, SPEC §13): the run's skeleton, then the results.
  const uuid = crypto.randomUUID();
  let seq = 0;
  let playbook = 0;
  const ingest = async (events: unknown[]) => {
    const r = await fetch(`${lb.url}/api/v1/ingest`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ playbook: { uuid, path: '/srv/big.yml', runner_version: '2.16.0', name: 'big run', status: 'completed' }, seq: ++seq, events }),
    });
    const body = await r.json() as { playbook: number; rejected?: unknown[] };
    if (r.status !== 200 || body.rejected?.length) throw new Error(`ingest ${seq}: ${r.status} ${JSON.stringify(body).slice(0, 500)}`);
    playbook = body.playbook;
  };
  const now = new Date().toISOString();
  const playUuid = crypto.randomUUID();
  const taskIds = Array.from({ length: TASKS }, (_, i) => `task-${i}`);
  const hostNames = Array.from({ length: HOSTS }, (_, i) => `host-${String(i).padStart(3, '0')}`);
  await ingest([
    { kind: 'file', path: '/srv/big.yml', content: Array.from({ length: TASKS * 3 }, (_, i) => `# line ${i + 1}`).join('\n') },
    { kind: 'play', uuid: playUuid, name: 'everything', status: 'completed', started: now },
    ...taskIds.map((t, i) => ({ kind: 'task', uuid: t, play: playUuid, file: '/srv/big.yml', name: `task ${i}`, action: 'command', lineno: i * 3 + 1, handler: false, tags: [], status: 'completed', started: now })),
    ...hostNames.map((name) => ({ kind: 'host', name })),
  ]);
  const pairs = taskIds.flatMap((task, ti) => hostNames.map((host, hi) => ({ task, host, failed: (ti * HOSTS + hi) % 997 === 0 })));
  for (let i = 0; i < pairs.length; i += 5000) {
    await ingest(pairs.slice(i, i + 5000).map((p) => ({
      kind: 'result', task: p.task, host: p.host, status: p.failed ? 'failed' : 'ok', changed: false, started: now, ended: now,
      content: { cmd: ['echo', 'hi'], rc: p.failed ? 1 : 0, stdout: 'hi', stderr: '' },
    })));
  }
  const stored = await (await fetch(`${lb.url}/api/v1/playbooks/${playbook}`)).json() as { items: { results: number } };
  if (stored.items.results !== pairs.length) throw new Error(`stored ${stored.items.results} results, expected ${pairs.length}`);
  console.log(`stored ${pairs.length} results (${TASKS} tasks × ${HOSTS} hosts) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const { page, close } = await openPage(browser);
    await page.goto(`${lb.url}/ui/playbooks/${playbook}`);
    await page.locator('tr.result').first().waitFor({ timeout: 30_000 });
    const ms = await page.evaluate('performance.getEntriesByName("logbook:results-rendered")[0].startTime') as number;
    const rows = await page.locator('tr.result').count();
    times.push(ms);
    console.log(`run ${run + 1}: first ${rows} result rows in the document ${ms.toFixed(0)} ms after navigation start`);
    await close();
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  console.log(`ui_render: ${pairs.length} results, median ${median.toFixed(0)} ms, worst ${times[times.length - 1]!.toFixed(0)} ms (target < 1000 ms)`);
} finally {
  await browser.close();
  await lb.stop();
}
