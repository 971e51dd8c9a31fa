// How long the web UI takes to show a big run: a playbook with 10,000 results
// (100 tasks × 100 hosts, some failed) is stored through the API, then its page
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
const WIDTH = 32; // concurrent writes while storing

async function post(base: string, path: string, body: unknown): Promise<{ id: number }> {
  const r = await fetch(`${base}/api/v1/${path}`, { method: 'POST', headers: { 'content-type': 'application/json', prefer: 'return=minimal' }, body: JSON.stringify(body) });
  if (r.status !== 201) throw new Error(`POST ${path}: ${r.status} ${await r.text()}`);
  return r.json() as Promise<{ id: number }>;
}

async function pool<T>(items: T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => { while (next < items.length) await fn(items[next++]!); }));
}

if (!hasChromium()) {
  console.error('ui_render: /usr/bin/chromium not found (apt-get install chromium)');
  process.exit(2);
}
buildUi();
const lb = await startLogbook({ env: { LOGBOOK_SHARDS: '2' } });
const browser = await launchBrowser();
try {
  const t0 = performance.now();
  const playbook = (await post(lb.url, 'playbooks', { path: '/srv/big.yml', runner_version: '2.16.0', name: 'big run', status: 'completed' })).id;
  const file = (await post(lb.url, 'files', { playbook, path: '/srv/big.yml', content: Array.from({ length: TASKS * 3 }, (_, i) => `# line ${i + 1}`).join('\n') })).id;
  const play = (await post(lb.url, 'plays', { playbook, uuid: crypto.randomUUID(), name: 'everything', status: 'completed' })).id;
  const tasks: number[] = [];
  for (let i = 0; i < TASKS; i++) tasks.push((await post(lb.url, 'tasks', { playbook, play, file, name: `task ${i}`, action: 'command', lineno: i * 3 + 1, handler: false, status: 'completed' })).id);
  const hosts: number[] = [];
  await pool(Array.from({ length: HOSTS }, (_, i) => i), WIDTH, async (i) => { hosts.push((await post(lb.url, 'hosts', { playbook, name: `host-${String(i).padStart(3, '0')}` })).id); });
  const pairs = tasks.flatMap((task, ti) => hosts.map((host, hi) => ({ task, host, failed: (ti * HOSTS + hi) % 997 === 0 })));
  await pool(pairs, WIDTH, (p) => post(lb.url, 'results', {
    playbook, play, task: p.task, host: p.host, status: p.failed ? 'failed' : 'ok', changed: false,
    content: { cmd: ['echo', 'hi'], rc: p.failed ? 1 : 0, stdout: 'hi', stderr: '' },
  }));
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
