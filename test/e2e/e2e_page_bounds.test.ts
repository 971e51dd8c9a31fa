// A list page is one string: rows that add up past V8's maximum string length
// (~512 MiB) used to throw RangeError out of the page's assembly and stop the
// process (18 playbooks with 30 MB `arguments`, then the UI's front page). Now a
// page carries at most LIMITS.pageBytes of rows (a smaller page whose `next` goes
// on), and a reply handler that throws answers 500 and the front keeps serving.
// Real server, real data of that size: named e2e_ (slow, not in test:quick).
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook } from '../helpers/server.js';
import { SERVER_ENV } from '../helpers/fixtures.js';

const PLAYBOOKS = 18;
const ARG_BYTES = 30_000_000;

test('playbooks whose list rows add up past V8\'s string limit: a smaller page, never a dead server', async (t) => {
  t.timeout(300_000);
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-page-bounds-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const big = 'a'.repeat(ARG_BYTES);
  // the page budget raised past the string limit (a test hook): the page's assembly throws, as before the bound;
  // and the bound on `arguments` (1 MiB, docs/api.md#write-bounds) raised, as for data written before it existed
  let lb = await startLogbook({ dataDir, env: {
    ...SERVER_ENV, LOGBOOK_TEST_HOOKS: '1', LOGBOOK_TEST_PAGE_BYTES: String(2 ** 40), LOGBOOK_TEST_WRITE_BOUNDS: `argumentsBytes=${2 * ARG_BYTES}`,
  } });
  try {
    for (let i = 0; i < PLAYBOOKS; i++) {
      const r = await api(lb.url, 'POST', '/api/v1/playbooks', JSON.stringify({ path: `/big/${i}.yml`, runner_version: '2.15.13', arguments: { blob: big } }));
      t.is(r.status, 201, `playbook ${i}: ${r.text.slice(0, 200)}`);
    }
    const thrown = await api(lb.url, 'GET', '/api/v1/playbooks?order=-id&limit=100');
    t.is(thrown.status, 500, 'the page could not be assembled: 500, not a dead process');
    t.deepEqual(thrown.body, { detail: 'Internal server error.' });
    const alive = await api(lb.url, 'GET', '/api/v1/playbooks?limit=1&order=id');
    t.is(alive.status, 200, 'the server still answers');
    t.is(lb.child.exitCode, null);
  } finally {
    await lb.stop();
  }

  // the default budget: pages of fewer rows, and walking `next` gives every playbook once
  lb = await startLogbook({ dataDir, env: SERVER_ENV });
  try {
    const seen: number[] = [];
    let path: string | null = '/api/v1/playbooks?order=-id&limit=100';
    let pages = 0;
    while (path) {
      const r = await api(lb.url, 'GET', path);
      t.is(r.status, 200, r.text.slice(0, 200));
      t.is(r.body.count, PLAYBOOKS);
      t.true(r.body.results.length >= 1 && r.body.results.length < PLAYBOOKS, 'a smaller page');
      for (const pb of r.body.results) {
        t.is(pb.arguments.blob.length, ARG_BYTES, 'rows are whole');
        seen.push(pb.id);
      }
      path = r.body.next === null ? null : new URL(r.body.next).pathname + new URL(r.body.next).search;
      t.true(++pages <= PLAYBOOKS, 'the walk ends');
    }
    const sorted = [...seen].sort((a, b) => b - a);
    t.deepEqual(seen, sorted, 'in the order asked');
    t.is(new Set(seen).size, PLAYBOOKS, 'each playbook once');
  } finally {
    await lb.stop();
  }
});
