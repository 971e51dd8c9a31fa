// SPEC §5 lists past the offset cap: a client that follows `next` (or
// `previous`) never runs into LOGBOOK_MAX_LIST_OFFSET, because links past it
// carry a keyset cursor (src/api/page_cursor.ts). Walked here across 3 shards
// with a cap of 6 and pages of 4, for the natural order and orders with ties and
// nulls, forward and back, and against rows deleted behind the cursor.
import test, { type ExecutionContext } from 'ava';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { call, del, get, post, uniq, type Json } from '../helpers/fixtures.js';

let lb: Logbook | undefined;
let url: string;
test.after.always(async () => { await lb?.stop(); });

const T0 = Date.parse('2030-01-01T00:00:00Z');
const at = (s: number): string => new Date(T0 + s * 1000).toISOString();

/** One playbook by batch ingest: hosts from a small pool of names (ties), results with repeated and missing times. */
async function ingestRun(tag: string, n: number, label: string): Promise<number> {
  const events: Json[] = [
    { kind: 'file', path: `/p/${tag}.yml`, content: 'x' },
    { kind: 'play', uuid: `${tag}-play`, name: 'play', status: 'running', started: at(0) },
    { kind: 'task', uuid: `${tag}-task`, play: `${tag}-play`, file: `/p/${tag}.yml`, name: 't', action: 'debug', lineno: 1, handler: false, status: 'running', started: at(0) },
  ];
  for (let i = 0; i < n; i++) {
    const host = `host-${i % 5}`;
    // every third result has no `ended` (null sorts first ascending), started repeats every 4
    events.push({ kind: 'result', task: `${tag}-task`, host, status: i % 5 === 0 ? 'failed' : 'ok', started: at(i % 4), ...(i % 3 ? { ended: at(10 + i) } : {}) });
  }
  const r = await call(url, 'POST', '/api/v1/ingest', {
    playbook: { uuid: `${tag}-pb`, path: `/p/${tag}.yml`, runner_version: '2.16', name: tag, labels: [label] }, seq: 1, events,
  }, 200);
  assertNoneRejected(r.body);
  return r.body.playbook as number;
}
function assertNoneRejected(body: Json): void {
  if (body.rejected?.length) throw new Error(`ingest rejected events: ${JSON.stringify(body.rejected)}`);
}

let tok: string;
test.before(async () => {
  lb = await startLogbook({ env: { LOGBOOK_SHARDS: '3', LOGBOOK_MAX_LIST_OFFSET: '6' } });
  url = lb.url;
  tok = uniq('ks');
  // playbooks land on different shards by id; sizes differ so shards hold different shares
  for (const [i, n] of [7, 3, 9, 5].entries()) await ingestRun(`${tok}-${i}`, n, `${tok}-label-${i % 2}`);
  for (let i = 0; i < 13; i++) await post(url, "/api/v1/labels", { name: `${tok}-extra-${(i * 7) % 13}` });
});

interface Page { count: number; next: string | null; previous: string | null; results: Json[] }
async function fetchPage(t: ExecutionContext, link: string): Promise<Page> {
  const r = await api(link, 'GET', '');
  t.is(r.status, 200, `${link}: ${r.text}`);
  return r.body as Page;
}

/** Every page from `first` by `next`, then back again by `previous`: both walks equal one big page. */
async function walk(t: ExecutionContext, resource: string, query: string): Promise<void> {
  const all = (await get(url, `/api/v1/${resource}?${query}&limit=1000`)) as Page;
  const expected = all.results.map((r) => r.id);
  t.true(expected.length > 12, `${resource}?${query}: enough rows to pass the cap (${expected.length})`);
  const pages: Page[] = [];
  let link: string | null = `${url}/api/v1/${resource}?${query}&limit=4`;
  while (link !== null && pages.length < 100) {
    const page = await fetchPage(t, link);
    t.is(page.count, all.count, `${link}: count`);
    pages.push(page);
    link = page.next;
  }
  t.deepEqual(pages.flatMap((p) => p.results.map((r: Json) => r.id)), expected, `${resource}?${query}: the next links walk the whole list once`);
  // links use `offset` up to the cap (6), then a cursor, never an offset past the cap
  t.regex(pages[0]!.next!, /[?&]offset=4(&|$)/);
  for (const p of pages.slice(1, -1)) t.notRegex(p.next!, /offset=/, 'past the cap: no offset');
  t.regex(pages[2]!.previous!, /[?&]offset=4(&|$)/, 'back within the cap: an offset link');
  const kept = [...new URLSearchParams(query)];
  for (const p of pages) {
    for (const l of [p.next, p.previous]) {
      if (l) t.deepEqual([...new URL(l).searchParams].filter(([k]) => k !== 'limit' && k !== 'offset' && k !== 'cursor'), kept, `${l} keeps ${query}`);
    }
  }
  // and back from the last page by `previous`
  const back: Json[][] = [];
  link = pages[pages.length - 1]!.previous;
  back.unshift(pages[pages.length - 1]!.results);
  while (link !== null && back.length < 100) {
    const page = await fetchPage(t, link);
    back.unshift(page.results);
    link = page.previous;
  }
  t.deepEqual(back.map((rows) => rows.map((r: Json) => r.id)), pages.map((p) => p.results.map((r: Json) => r.id)), `${resource}?${query}: previous gives the same pages back`);
}

test.serial('results, natural order: next and previous walk every row past the offset cap', (t) => walk(t, 'results', 'status=ok&status=failed'));
test.serial('results ordered by -started (ties) and ended (nulls first)', async (t) => {
  await walk(t, 'results', 'order=-started');
  await walk(t, 'results', 'order=ended,-started');
});
test.serial('hosts ordered by name (ties across playbooks), results by -ended (nulls last) with a filter', async (t) => {
  await walk(t, 'hosts', 'order=name');
  await walk(t, 'results', 'order=-ended&status=ok');
});
test.serial('labels (listed by the front): natural order and order=-name', async (t) => {
  await walk(t, 'labels', `name=${tok}`);
  await walk(t, 'labels', `name=${tok}&order=-name`);
});

test.serial('a cursor page goes on after its last row when rows before it are deleted (an offset would skip)', async (t) => {
  const first = await fetchPage(t, `${url}/api/v1/results?order=-started&limit=4&offset=4`);
  const deep = await fetchPage(t, first.next!);
  t.regex(first.next!, /cursor=/);
  const expectedNext = (await get(url, `/api/v1/results?order=-started&limit=1000`) as Page).results.map((r) => r.id);
  const lastSeen = deep.results[deep.results.length - 1].id as number;
  const following = expectedNext.slice(expectedNext.indexOf(lastSeen) + 1, expectedNext.indexOf(lastSeen) + 5);
  // delete two rows already seen
  await del(url, `/api/v1/results/${first.results[0].id}`);
  await del(url, `/api/v1/results/${deep.results[0].id}`);
  const after = await fetchPage(t, deep.next!);
  t.deepEqual(after.results.map((r: Json) => r.id), following);
  t.is(after.count, expectedNext.length - 2);
});

test.serial('a cursor that is not ours, or not for this order, is a 400 on cursor and changes nothing', async (t) => {
  const first = await fetchPage(t, `${url}/api/v1/hosts?order=name&limit=4&offset=4`);
  const cursor = new URL(first.next!).searchParams.get('cursor')!;
  t.truthy(cursor);
  for (const path of [`/api/v1/hosts?cursor=garbage`, `/api/v1/hosts?order=name,-ok&cursor=${cursor}`, `/api/v1/hosts?cursor=${cursor}`]) {
    const r = await api(url, 'GET', path);
    t.is(r.status, 400, path);
    t.deepEqual(r.body, { cursor: ['Invalid cursor.'] }, path);
  }
  const r = await api(url, 'GET', '/api/v1/results?offset=7');
  t.is(r.status, 400);
  t.regex(r.body.offset[0], /less than or equal to 6\..*`next` links/);
});

/** The ids of a list (one big page), and of a page. */
const idsOf = (page: Page): number[] => page.results.map((r: Json) => r.id as number);

test.serial('a cursor page that comes back empty (its rows deleted) links back to the page before its cursor', async (t) => {
  // 14 playbooks spread over the shards, listed by a label of their own, by name
  const label = uniq('ks-empty');
  for (let i = 0; i < 14; i++) await post(url, '/api/v1/playbooks', { path: `/p/${label}.yml`, runner_version: '2.16', name: `${label}-${String(i).padStart(2, '0')}`, labels: [label] });
  const list = `${url}/api/v1/playbooks?label=${label}&order=-name&limit=4`;
  const all = idsOf(await fetchPage(t, `${list.replace('limit=4', 'limit=100')}`));
  t.is(all.length, 14);
  const p1 = await fetchPage(t, list);
  const p2 = await fetchPage(t, p1.next!);
  const p3 = await fetchPage(t, p2.next!);
  t.regex(p2.next!, /cursor=/, 'offset 8 is past the cap: a cursor link');
  t.deepEqual(idsOf(p3), all.slice(8, 12));
  // the rows after the cursor's page go (the tail is deleted): its `next` now leads to an empty page
  for (const id of all.slice(12)) await del(url, `/api/v1/playbooks/${id}`);
  const empty = await fetchPage(t, p3.next!);
  t.deepEqual(idsOf(empty), []);
  t.is(empty.count, 12);
  t.is(empty.next, null);
  t.not(empty.previous, null, 'an empty cursor page can be walked back from');
  t.regex(empty.previous!, /cursor=/, 'offset 8 is past the cap');
  const back = await fetchPage(t, empty.previous!);
  t.deepEqual(idsOf(back), all.slice(8, 12), 'the page before the cursor: the one whose next it was');
  t.is(back.next, null, 'the last page now, as an offset page at 8 of 12 would be');
  const back2 = await fetchPage(t, back.previous!);
  t.deepEqual(idsOf(back2), all.slice(4, 8));
  // the cursor's own row goes too: the page before the cursor's position ends one row earlier
  await del(url, `/api/v1/playbooks/${all[11]}`);
  const empty2 = await fetchPage(t, p3.next!);
  t.deepEqual([idsOf(empty2), empty2.count, empty2.next], [[], 11, null]);
  const back3 = await fetchPage(t, empty2.previous!);
  t.deepEqual(idsOf(back3), all.slice(7, 11));
  t.is(back3.count, 11);
  t.regex(back3.previous!, /[?&]offset=3(&|$)/, 'offset 3 is within the cap: an offset link');
});

test.serial('labels: an empty page going back links forward to the rows from its cursor on, an empty one going forward back', async (t) => {
  const tag = uniq('ks-lab');
  const made: number[] = [];
  for (let i = 0; i < 14; i++) made.push((await post(url, '/api/v1/labels', { name: `${tag}-${String(i).padStart(2, '0')}` })).id as number);
  const list = `${url}/api/v1/labels?name=${tag}&limit=4`;
  const p1 = await fetchPage(t, list);
  const p2 = await fetchPage(t, p1.next!);
  const p3 = await fetchPage(t, p2.next!);
  const p4 = await fetchPage(t, p3.next!);
  t.deepEqual(idsOf(p4), made.slice(12));
  t.regex(p4.previous!, /cursor=/);
  // every row before the last page goes: its `previous` now leads to an empty page at offset 0
  for (const id of made.slice(0, 12)) await del(url, `/api/v1/labels/${id}`);
  const empty = await fetchPage(t, p4.previous!);
  t.deepEqual([idsOf(empty), empty.count, empty.previous], [[], 2, null]);
  t.not(empty.next, null, 'an empty page going back can be walked forward from');
  t.notRegex(empty.next!, /offset=|cursor=/, 'the rows from its cursor on are the first page');
  t.deepEqual(idsOf(await fetchPage(t, empty.next!)), made.slice(12));
  // and the last rows go: the forward cursor past them gives an empty page that links back to the first page
  const tail = await fetchPage(t, p3.next!); // rows after made[11], which is gone
  t.deepEqual(idsOf(tail), made.slice(12));
  for (const id of made.slice(12)) await del(url, `/api/v1/labels/${id}`);
  const none = await fetchPage(t, p3.next!);
  t.deepEqual([idsOf(none), none.count, none.next, none.previous], [[], 0, null, null], 'nothing left: no links');
});

test.serial("results of one task, host or play (the shard that holds it answers alone; a task's or host's from its group): next and previous walk every row", async (t) => {
  const pb = await ingestRun(`${tok}-big`, 70, `${tok}-label-0`);
  const task = ((await get(url, `/api/v1/tasks?playbook=${pb}`)) as Page).results[0].id as number;
  const host = ((await get(url, `/api/v1/hosts?playbook=${pb}&name=host-1`)) as Page).results[0].id as number;
  await walk(t, 'results', `task=${task}`);
  await walk(t, 'results', `order=-id&task=${task}`);
  await walk(t, 'results', `host=${host}&order=-started`);
  await walk(t, 'results', `host=${host}&status=ok&status=failed`);
  const play = ((await get(url, `/api/v1/plays?playbook=${pb}`)) as Page).results[0].id as number;
  await walk(t, 'results', `order=-started&play=${play}`);
  t.deepEqual(((await get(url, `/api/v1/tasks?play=${play}`)) as Page).results.map((r: Json) => r.id), [task]);
  // the group is the task's results: the same rows as the playbook's, in the same order
  const byTask = (await get(url, `/api/v1/results?task=${task}&limit=1000`)) as Page;
  const byPlaybook = (await get(url, `/api/v1/results?playbook=${pb}&limit=1000`)) as Page;
  t.is(byTask.count, 70);
  t.deepEqual(byTask.results, byPlaybook.results);
  // a parent that does not exist, or cannot: nothing, not an error
  for (const q of [`task=${task + 1_000_000}`, 'task=0', 'host=-3', 'task=1e300', `host=${host}&task=${task + 1_000_000}`, `play=${play + 1_000_000}`, `play=${play}&task=${task + 1_000_000}`]) {
    const page = await fetchPage(t, `${url}/api/v1/results?${q}`);
    t.deepEqual([page.count, page.results], [0, []], q);
  }
  // a deleted result leaves its task's and its host's lists
  const gone = byTask.results[3].id as number;
  await del(url, `/api/v1/results/${gone}`);
  t.false(((await get(url, `/api/v1/results?task=${task}&limit=1000`)) as Page).results.some((r: Json) => r.id === gone));
  const hostRows = ((await get(url, `/api/v1/results?host=${byTask.results[3].host}&limit=1000`)) as Page);
  t.false(hostRows.results.some((r: Json) => r.id === gone));
});
