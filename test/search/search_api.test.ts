// Full-text search (docs/search.md) on a real server with its real index
// (SQLite FTS5 in search.sqlite): a word is found exactly where it was written;
// phrases, prefixes, -words, field terms and the type filter narrow as a person
// expects; a bad query is a 400 saying what is wrong; a deleted playbook's text
// is gone; the index survives a restart, and a deleted index file is rebuilt
// from the shards.
import test from 'ava';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { runCli } from '../helpers/cli.js';
import Database from 'better-sqlite3';

const ENV = { LOGBOOK_SHARDS: '2' };

/** Poll a search until `want(body)` holds (a write is findable shortly after its acknowledgement), or give the last answer. */
async function searchUntil(url: string, query: string, want: (body: any) => boolean): Promise<any> {
  let last: any = null;
  for (let i = 0; i < 100; i++) {
    const r = await api(url, 'GET', `/api/v1/search?${query}`);
    last = { status: r.status, ...r.body };
    if (r.status === 200 && want(r.body)) return last;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return last;
}

async function post(url: string, path: string, body: unknown): Promise<any> {
  const r = await api(url, 'POST', path, body);
  if (r.status !== 201) throw new Error(`${path}: ${r.status} ${r.text}`);
  return r.body;
}

interface Run { playbook: number; result: number; other: number; host: number; task: number; file: number }

async function record(url: string, path: string, word: string): Promise<Run> {
  const pb = await post(url, '/api/v1/playbooks', { path, name: `deploy ${word}`, runner_version: '2.16.1', labels: ['prod'], arguments: { limit: 'web*' } });
  const file = await post(url, '/api/v1/files', { playbook: pb.id, path, content: `- hosts: web\n  tasks:\n    - name: Check disk ${word}\n` });
  const play = await post(url, '/api/v1/plays', { playbook: pb.id, name: 'Configure web servers', uuid: crypto.randomUUID() });
  const task = await post(url, '/api/v1/tasks', { playbook: pb.id, play: play.id, file: file.id, name: 'Check disk space', action: 'ansible.builtin.command', lineno: 3, handler: false });
  const host = await post(url, '/api/v1/hosts', { playbook: pb.id, name: `web03-${word}`, facts: { ansible_distribution: 'Debian', kernel: 'Café Grüße 6.1' } });
  const other = await post(url, '/api/v1/hosts', { playbook: pb.id, name: `db01-${word}` });
  const result = await post(url, '/api/v1/results', {
    playbook: pb.id, play: play.id, task: task.id, host: host.id, status: 'failed',
    content: { msg: 'permission denied on /etc/shadow', stdout: `${word} found in the output`, rc: 1, results: [{ item: 'nested-needle' }] },
  });
  await post(url, '/api/v1/results', {
    playbook: pb.id, play: play.id, task: task.id, host: other.id, status: 'ok', content: { msg: 'all good here', stdout: 'disk at 40%' },
  });
  return { playbook: pb.id, result: result.id, other: other.id, host: host.id, task: task.id, file: file.id };
}

const ids = (body: any) => (body.results ?? []).map((h: any) => `${h.type}:${h.id}`).sort();

let lb: Logbook;
let dataDir: string;
let a: Run;
let b: Run;
test.before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'logbook-search-'));
  lb = await startLogbook({ env: ENV, dataDir });
  a = await record(lb.url, '/srv/site.yml', 'xyzzyplugh');
  b = await record(lb.url, '/srv/other.yml', 'frobnicate');
});
test.after.always(async () => {
  await lb?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

test.serial('a word is found exactly where it was written, with the field and a marked snippet', async (t) => {
  const found = await searchUntil(lb.url, 'q=xyzzyplugh', (body) => body.count >= 5);
  t.is(found.status, 200, JSON.stringify(found));
  // the result's stdout, the playbook's name, the file's text and the hosts' names hold it: nothing of run b,
  // nor the records that only belong to that playbook (its task, play, other result)
  t.deepEqual(ids(found), [`file:${a.file}`, `host:${a.host}`, `host:${a.other}`, `playbook:${a.playbook}`, `result:${a.result}`].sort());
  t.is(found.count, 5);
  const hit = found.results.find((h: any) => h.type === 'result');
  t.is(hit.playbook, a.playbook);
  t.is(hit.row.id, a.result, 'the hit carries the list row');
  t.is(hit.row.status, 'failed');
  t.regex(hit.url, new RegExp(`/api/v1/results/${a.result}$`));
  t.deepEqual(hit.matches.find((m: any) => m.field === 'content.stdout'), { field: 'content.stdout', snippet: '«xyzzyplugh» found in the output' });
  // /metrics shows the index: its documents, and how long a write took to be findable
  // (the search worker pushes them each second)
  let metrics = '';
  for (let i = 0; i < 50; i++) {
    metrics = await (await fetch(`${lb.url}/metrics`)).text();
    if (Number(/^logbook_search_documents (\d+)/m.exec(metrics)?.[1]) >= 9) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.true(Number(/^logbook_search_documents (\d+)/m.exec(metrics)?.[1]) >= 9, metrics.split('\n').filter((l) => l.startsWith('logbook_search')).join('\n'));
  t.regex(metrics, /^logbook_search_documents_indexed_total \d+/m);
  t.regex(metrics, /^logbook_search_shards_behind 0$/m);
  // newest first: the result was written after the playbook
  t.true(found.results.findIndex((h: any) => h.type === 'result') < found.results.findIndex((h: any) => h.type === 'playbook'));
});

test.serial('phrases, prefixes, -words, field terms and the type filter narrow as typed', async (t) => {
  await searchUntil(lb.url, 'q=frobnicate', (body) => body.count >= 5);
  const q = async (query: string) => ids((await api(lb.url, 'GET', `/api/v1/search?${query}`)).body);
  const results = [`result:${a.result}`, `result:${b.result}`].sort();
  t.deepEqual(await q(`q=${encodeURIComponent('"permission denied"')}`), results);
  t.deepEqual(await q(`q=${encodeURIComponent('"denied permission"')}`), []);
  t.deepEqual(await q('q=xyzzy*'), [`file:${a.file}`, `host:${a.host}`, `host:${a.other}`, `playbook:${a.playbook}`, `result:${a.result}`].sort());
  t.deepEqual(await q(`q=${encodeURIComponent('permission -xyzzyplugh')}`), [`result:${b.result}`]);
  t.deepEqual(await q(`q=${encodeURIComponent('host:web03-frobnicate denied')}`), [`result:${b.result}`]);
  t.deepEqual(await q(`q=${encodeURIComponent('status:failed task:"check disk"')}`), results);
  t.deepEqual(await q(`q=nested-needle&playbook=${a.playbook}`), [`result:${a.result}`], 'a string inside a list of the content');
  // facts are text of the host; diacritics fold
  t.deepEqual(await q('q=cafe&type=host'), [`host:${a.host}`, `host:${b.host}`].sort());
  t.deepEqual(await q('q=debian&type=results'), []);
  // labels and arguments of the playbook
  t.deepEqual(await q(`q=${encodeURIComponent('label:prod frobnicate')}&type=playbook`), [`playbook:${b.playbook}`]);
});

test.serial('q= on a list: the ordinary list, only the rows the search matches, with its other filters, order and pages', async (t) => {
  const list = async (query: string) => api(lb.url, 'GET', `/api/v1/${query}`);
  const both = await list('results?q=permission');
  t.is(both.status, 200, both.text);
  t.deepEqual(both.body.results.map((r: any) => r.id), [a.result, b.result].sort((x, y) => x - y), 'the list\'s own order: ascending id');
  t.is(both.body.count, 2);
  t.truthy(both.body.results[0].started, 'list rows, as without q=');
  t.deepEqual((await list(`results?q=permission&playbook=${b.playbook}`)).body.results.map((r: any) => r.id), [b.result]);
  t.deepEqual((await list('results?q=permission&status=ok')).body.results, []);
  t.deepEqual((await list('results?q=permission&order=-id&limit=1')).body.results.map((r: any) => r.id), [Math.max(a.result, b.result)]);
  t.deepEqual((await list('hosts?q=cafe')).body.results.map((h: any) => h.id).sort(), [a.host, b.host].sort());
  t.is((await list('results?q=')).body.count, 4, 'an empty q= is no search');
  const bad = await list(`results?q=${encodeURIComponent('"unclosed')}`);
  t.is(bad.status, 400);
  t.regex(bad.body.q[0], /unclosed quote/);
  t.is((await list('labels?q=prod')).status, 400, 'labels are not searched');
});

test.serial('a bad query is a 400 that says what is wrong, and nothing else changes', async (t) => {
  const bad = async (query: string) => api(lb.url, 'GET', `/api/v1/search?${query}`);
  for (const query of [`q=${encodeURIComponent('"unclosed')}`, `q=${encodeURIComponent('-only')}`, 'q=', '', `q=${'a%20'.repeat(40)}`, `q=x&type=label`, 'q=x&limit=0', 'q=x&colour=red', 'q=x&cursor=abc']) {
    const r = await bad(query);
    t.is(r.status, 400, `${query}: ${r.text}`);
    t.true(typeof r.body === 'object' && Object.values(r.body).every((v) => Array.isArray(v) && typeof v[0] === 'string'), r.text);
  }
  const r = await bad(`q=${encodeURIComponent('"unclosed')}`);
  t.regex(r.body.q[0], /quote/);
  const still = await bad('q=xyzzyplugh');
  t.is(still.status, 200);
  t.is(still.body.count, 5);
});

test.serial('pages: limit and the next link walk every hit once', async (t) => {
  const all = (await api(lb.url, 'GET', '/api/v1/search?q=permission')).body;
  t.is(all.count, 2);
  const first = (await api(lb.url, 'GET', '/api/v1/search?q=permission&limit=1')).body;
  t.is(first.results.length, 1);
  t.truthy(first.next);
  const second = (await api(lb.url, 'GET', new URL(first.next).pathname + new URL(first.next).search)).body;
  t.is(second.results.length, 1);
  t.deepEqual([...first.results, ...second.results].map((h: any) => h.id), all.results.map((h: any) => h.id));
});

test.serial('a deleted playbook\'s text is gone; the index survives a restart; logbook reindex drops it and the next start rebuilds it', async (t) => {
  t.is((await api(lb.url, 'DELETE', `/api/v1/playbooks/${b.playbook}`)).status, 204);
  const gone = await searchUntil(lb.url, 'q=frobnicate', (body) => body.count === 0);
  t.is(gone.count, 0, JSON.stringify(gone));

  t.is(await lb.stop(), 0);
  lb = await startLogbook({ env: ENV, dataDir });
  const after = await searchUntil(lb.url, 'q=xyzzyplugh', (body) => body.count === 5);
  t.is(after.count, 5, 'found after a restart');
  t.false(/rebuilding a shard/.test(lb.output()), 'a clean stop leaves the index where the journal is: no rebuild');

  // logbook reindex: refused while the server runs; on the stopped directory it drops the index
  const busy = await runCli(['reindex', dataDir]);
  t.is(busy.code, 2, busy.output);
  t.regex(busy.output, /in use by another logbook/);
  t.is(await lb.stop(), 0);
  // logbook check: the index holds exactly the records (a clean stop left it at every shard's journal)
  const clean = await runCli(['check', dataDir]);
  t.is(clean.code, 0, clean.output);
  t.notRegex(clean.output, /search index/);
  // a record taken out of the index behind logbook's back is reported, with the remedy
  const db = new Database(join(dataDir, 'search.sqlite'));
  const rowid = db.prepare('SELECT rowid FROM docs WHERE type = 5 AND id = ?').pluck().get(a.result) as number;
  db.prepare('DELETE FROM text WHERE rowid = ?').run(rowid);
  db.prepare('DELETE FROM docs WHERE rowid = ?').run(rowid);
  db.close();
  const damaged = await runCli(['check', dataDir]);
  t.is(damaged.code, 1, damaged.output);
  t.regex(damaged.output, new RegExp(`search index, shard-\\d\\.mdb: 1 record\\(s\\) not findable \\(result ${a.result}\\); stop logbook, run \`logbook reindex\``));
  const dropped = await runCli(['reindex', dataDir]);
  t.is(dropped.code, 0, dropped.output);
  t.regex(dropped.output, /dropped the search index \(search\.sqlite/);
  t.false(existsSync(join(dataDir, 'search.sqlite')));
  lb = await startLogbook({ env: ENV, dataDir });
  const rebuilt = await searchUntil(lb.url, 'q=xyzzyplugh', (body) => body.count === 5);
  t.is(rebuilt.count, 5, 'rebuilt from the shards');
  t.true(existsSync(join(dataDir, 'search.sqlite')));
  t.regex(lb.output(), /shard rebuilt/);
  // new writes are indexed after the rebuild
  const c = await record(lb.url, '/srv/third.yml', 'quuxwidget');
  const fresh = await searchUntil(lb.url, 'q=quuxwidget&type=result', (body) => body.count === 1);
  t.deepEqual(ids(fresh), [`result:${c.result}`]);
});
