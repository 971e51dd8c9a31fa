// A list page carries at most LIMITS.pageBytes of rows (src/http/reads.ts): past
// it, a smaller page whose links go on from its last row. Here the budget is a
// few KB (a test hook), so pages by offset, by cursor both ways and over several
// shards go past it with small rows. (test/e2e/e2e_page_bounds.test.ts: real sizes.)
import test from 'ava';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { SERVER_ENV } from '../helpers/fixtures.js';

let lb: Logbook;
const ROWS = 12;
const PAGE_BYTES = 5000; // about three rows of 1.5 KB arguments
const ids: number[] = [];

test.before(async () => {
  lb = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_PAGE_BYTES: String(PAGE_BYTES), LOGBOOK_MAX_LIST_OFFSET: '4' } });
  for (let i = 0; i < ROWS; i++) {
    const r = await api(lb.url, 'POST', '/api/v1/playbooks', { path: `/bounds/${i}.yml`, runner_version: '2.15.13', arguments: { text: 'x'.repeat(1500) } });
    if (r.status !== 201) throw new Error(r.text);
    ids.push(r.body.id);
  }
});
test.after.always(async () => { await lb?.stop(); });

function pathOf(link: string): string {
  const u = new URL(link);
  return u.pathname + u.search;
}

async function walk(t: import('ava').ExecutionContext, first: string, link: 'next' | 'previous' = 'next') {
  const seen: number[] = [];
  let path: string | null = first;
  let last: any = null;
  for (let pages = 0; path; pages++) {
    t.true(pages < ROWS + 2, 'the walk ends');
    const r = await api(lb.url, 'GET', path);
    t.is(r.status, 200, r.text.slice(0, 300));
    t.is(r.body.count, ROWS);
    t.true(r.body.results.length >= 1 && r.body.results.length <= 4, `a page within the budget (${r.body.results.length} rows)`);
    const got = r.body.results.map((p: any) => p.id);
    if (link === 'next') seen.push(...got); else seen.unshift(...got);
    last = r.body;
    path = r.body[link] === null ? null : pathOf(r.body[link]);
  }
  return { seen, last };
}

for (const order of ['id', '-id']) {
  test(`order=${order}: pages past the byte budget are smaller, and next walks every row once in order`, async (t) => {
    const { seen, last } = await walk(t, `/api/v1/playbooks?order=${order}&limit=100`);
    const want = order === 'id' ? [...ids] : [...ids].reverse();
    t.deepEqual(seen, want);
    // past the deepest offset (4) the links carry cursors; walk back from the end by `previous`
    t.not(last.previous, null);
    const back = await walk(t, pathOf(last.previous), 'previous');
    t.deepEqual(back.seen, want.slice(0, ROWS - last.results.length), 'previous walks back to the first row without gaps');
  });
}

test('a page within the budget is not cut', async (t) => {
  const r = await api(lb.url, 'GET', '/api/v1/playbooks?limit=2');
  t.is(r.body.results.length, 2);
  t.true(r.body.next.includes('limit=2'));
});
