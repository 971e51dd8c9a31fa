// More of ARA's API surface (docs/ara-dialect.md): string fields stripped of
// surrounding whitespace on both write paths (DRF's CharField), ARA's web UI
// paths redirected to logbook's UI, and /api/v1/latesthosts.
import test from 'ava';
import { buildUi } from '../helpers/browser.js';
import { api, startLogbook } from '../helpers/server.js';
import {
  call, createFile, createHost, createPlay, createPlaybook, createPlaybookOnShard, createRecord, createResult, createTask, createTree, del, get, list,
  playbooksOnDifferentShards, playbooksOnSameShard, post, randomUuid, SERVER_ENV, serveForFile, uniq, type Json,
} from '../helpers/fixtures.js';

let url: string;
test.before(() => buildUi()); // before the server starts: it reads the UI's files once
serveForFile((server) => { url = server.url; });

const ARA = { 'user-agent': 'ara-http-client_1.7.4' };

// ---- DRF's trim_whitespace ----

test('REST writes: string fields are stripped before the length check (ARA 1.7.4 long_strings.yaml), JSON fields and the uuid key are not', async (t) => {
  // 253 characters and a space: 254 sent, 253 stored, within the 255 limit either way;
  // 255 and a space: stored as 255; 256 without whitespace: refused
  const name = 'n'.repeat(253);
  const pb = await createPlaybook(url, { name: name + ' ', controller: '\tctl\n', path: ' /work/site.yml ' });
  t.is(pb.name, name);
  t.is(pb.path, '/work/site.yml');
  t.is((await createPlaybook(url, { name: 'm'.repeat(255) + '  ' })).name, 'm'.repeat(255));
  const tooLong = await api(url, 'POST', '/api/v1/playbooks', { path: '/x.yml', runner_version: '2.15', name: 'm'.repeat(256) });
  t.is(tooLong.status, 400);
  // read back as stored, in both dialects
  t.is((await get(url, `/api/v1/playbooks/${pb.id}`)).name, name);
  t.like((await call(url, 'GET', `/api/v1/playbooks/${pb.id}`, undefined, 200, ARA)).body, { name, controller: 'ctl' });
  // Python's whitespace, which JavaScript's trim() does not all take (U+001F, U+0085), and one it takes and Python keeps (U+FEFF)
  const host = await createHost(url, pb.id, { name: '\u001f\u0085 web-01 \u3000' });
  t.is(host.name, 'web-01');
  t.is((await createHost(url, pb.id, { name: '\ufeffweb-02' })).name, '\ufeffweb-02');
  // get-or-create finds the stripped name
  t.is((await post(url, '/api/v1/hosts', { name: 'web-01  ', playbook: pb.id })).id, host.id);
  // only whitespace: blank, refused where blank is
  const blank = await api(url, 'POST', '/api/v1/hosts', { name: '   ', playbook: pb.id });
  t.is(blank.status, 400);
  t.deepEqual(blank.body, { name: ['This field may not be blank.'] });
  const file = await createFile(url, pb.id, { path: '/work/a.yml\n', content: '  - hosts: all  \n' });
  t.is(file.path, '/work/a.yml');
  t.is((await get(url, `/api/v1/files/${file.id}`)).content, '  - hosts: all  \n', 'file content is kept as sent');
  const play = await createPlay(url, pb.id, { name: ' play ' });
  t.is(play.name, 'play');
  const task = await createTask(url, { playbook: pb.id, play: play.id, file: file.id }, { name: '  say hi ', action: ' debug ', uuid: ' key ' });
  t.like(task, { name: 'say hi', action: 'debug' });
  const record = await post(url, '/api/v1/records', { key: ' build ', type: ' text ', value: ' v ', playbook: pb.id });
  t.like(record, { key: 'build', type: 'text', value: ' v ' });
  // PATCH strips too
  const patched = (await call(url, 'PATCH', `/api/v1/playbooks/${pb.id}`, { name: ' renamed ' }, 200)).body;
  t.is(patched.name, 'renamed');
  t.is((await call(url, 'GET', `/api/v1/tasks/${task.id}`, undefined, 200, ARA)).body.uuid, ' key ', 'the uuid key is kept as sent');
});

test('batch ingest stores and finds the same stripped text as the per-record API', async (t) => {
  const uuid = uniq('trim');
  const play = randomUuid();
  const r = await api(url, 'POST', '/api/v1/ingest', {
    playbook: { uuid, path: ' /work/site.yml', runner_version: '2.16.0', name: 'run ', status: 'running', started: '2026-01-01T00:00:00Z' },
    seq: 1,
    events: [
      { kind: 'file', path: '/work/site.yml  ', content: '- hosts: all\n' },
      { kind: 'play', uuid: play, name: ' first ', status: 'running', started: '2026-01-01T00:00:00Z' },
      // the task names its file, the result its host and delegate, with other whitespace than they were created with
      { kind: 'task', uuid: 't1', play, file: '\t/work/site.yml', name: ' say hi ', action: 'debug ', lineno: 3, handler: false, status: 'running', started: '2026-01-01T00:00:01Z' },
      { kind: 'host', name: ' web-01 ', facts: { a: 1 } },
      { kind: 'result', task: 't1', host: 'web-01\n', delegated_to: [' db-01', 'db-01 '], status: 'ok', started: '2026-01-01T00:00:01Z', ended: '2026-01-01T00:00:02Z' },
      { kind: 'record', key: ' build ', value: 1, type: 'json ' },
      { kind: 'record', key: 'build', value: 2, type: 'json' },
    ],
  });
  t.is(r.status, 200, r.text);
  t.deepEqual(r.body.rejected, []);
  const pb = await get(url, `/api/v1/playbooks/${r.body.playbook}`);
  t.like(pb, { name: 'run', path: '/work/site.yml', items: { files: 1, hosts: 2, records: 1, results: 1 } });
  const hosts = (await list(url, 'hosts', { playbook: pb.id })).results.map((h: Json) => h.name).sort();
  t.deepEqual(hosts, ['db-01', 'web-01']);
  t.is((await list(url, 'files', { playbook: pb.id })).results[0].path, '/work/site.yml');
  const task = (await list(url, 'tasks', { playbook: pb.id })).results[0];
  t.like(task, { name: 'say hi', action: 'debug' });
  const record = (await list(url, 'records', { playbook: pb.id })).results[0];
  t.like(record, { key: 'build', type: 'json' });
  t.is((await get(url, `/api/v1/records/${record.id}`)).value, 2, 'the second event updated the record the first created');
  t.is((await list(url, 'plays', { playbook: pb.id })).results[0].name, 'first');
});

// ---- ARA's web paths ----

test('ARA\'s web paths (its CLI\'s report: links) redirect to logbook\'s UI page, which loads', async (t) => {
  const pb = await createPlaybook(url);
  const file = await createFile(url, pb.id);
  const play = await createPlay(url, pb.id);
  const task = await createTask(url, { playbook: pb.id, play: play.id, file: file.id });
  const host = await createHost(url, pb.id);
  const result = await createResult(url, { playbook: pb.id, play: play.id, task: task.id, host: host.id });
  const record = await createRecord(url, pb.id);
  const expected: Array<[string, string]> = [
    [`/playbooks/${pb.id}.html`, `/ui/playbooks/${pb.id}`],
    [`/hosts/${host.id}.html`, `/ui/hosts/${host.id}`],
    [`/results/${result.id}.html`, `/ui/results/${result.id}`],
    [`/files/${file.id}.html`, `/ui/files/${file.id}`],
    [`/records/${record.id}.html`, `/ui/records/${record.id}`],
    // ARA's index pages: logbook's nearest is the playbooks list
    ['/hosts', '/ui/'], ['/tasks', '/ui/'], ['/distributed', '/ui/'],
  ];
  for (const [path, location] of expected) {
    const r = await fetch(url + path, { redirect: 'manual', headers: ARA });
    t.is(r.status, 302, path);
    t.is(r.headers.get('location'), location, path);
    const head = await fetch(url + path, { method: 'HEAD', redirect: 'manual' });
    t.is(head.status, 302, `HEAD ${path}`);
    const page = await fetch(url + path); // followed
    t.is(page.status, 200, path);
    t.regex(page.headers.get('content-type')!, /^text\/html/, path);
    t.regex(await page.text(), /<script type="module" src="\/ui\/assets\/main-[\w-]+\.js">/, path);
  }
  // not ARA's paths: an id that cannot be one, another extension, a write
  for (const path of ['/playbooks/0.html', '/playbooks/x.html', '/playbooks/1.htm', '/tasks/1.html', '/playbooks/1.html/']) {
    t.is((await fetch(url + path, { redirect: 'manual' })).status, 404, path);
  }
  const post = await fetch(`${url}/playbooks/${pb.id}.html`, { method: 'POST', redirect: 'manual' });
  t.is(post.status, 405);
  t.is(post.headers.get('allow'), 'GET, HEAD');
});

// ---- /api/v1/latesthosts ----

const latest = (path: string, headers: Record<string, string> = {}) => api(url, 'GET', `/api/v1/latesthosts${path}`, undefined, headers);

test('latesthosts/<name>: the newest host of that name over every shard, with its playbook; a delete falls back to the one before', async (t) => {
  const name = uniq('h');
  const [a, b] = await playbooksOnDifferentShards(url);
  const [, c] = await playbooksOnSameShard(url);
  const ha = await createHost(url, a.id, { name, facts: { os: 'a' } });
  const hb = await createHost(url, b.id, { name, facts: { os: 'b' } });
  await createHost(url, b.id, { name: uniq('other') });
  let r = await latest(`/${name}`, ARA);
  t.is(r.status, 200, r.text);
  t.deepEqual(Object.keys(r.body), ['name', 'host', 'created', 'updated'], 'ARA\'s DetailedLatestHostSerializer');
  t.is(r.body.name, name);
  t.like(r.body.host, { id: hb.id, name, facts: { os: 'b' } });
  t.like(r.body.host.playbook, { id: b.id, ansible_version: '2.15.13' }, 'the playbook nested, in ARA\'s dialect for ARA\'s client');
  t.is(r.body.created, (await get(url, `/api/v1/hosts/${hb.id}`)).created);
  // logbook's shapes for everyone else, the same host
  const plain = await latest(`/${name}`);
  t.is(plain.body.host.id, hb.id);
  t.false('ansible_version' in plain.body.host.playbook);
  // a newer host on a third playbook (the same shard as another): it is the newest
  const hc = await createHost(url, c.id, { name });
  t.is((await latest(`/${name}`)).body.host.id, hc.id);
  // deleting the newest falls back to the newest before it, over the shards
  await del(url, `/api/v1/hosts/${hc.id}`);
  t.is((await latest(`/${name}`)).body.host.id, hb.id);
  await del(url, `/api/v1/playbooks/${b.id}`); // a playbook's delete takes its hosts
  t.is((await latest(`/${name}`)).body.host.id, ha.id);
  // a rename moves a host to its new name
  await call(url, 'PATCH', `/api/v1/hosts/${ha.id}`, { name: `${name}-renamed` }, 200);
  r = await latest(`/${name}`, ARA);
  t.is(r.status, 404);
  t.deepEqual(r.body, { detail: 'Not found.' });
  t.is((await latest(`/${name}-renamed`)).body.host.id, ha.id);
  // any name, percent-encoded in the path (ARA's own route refuses dots; logbook takes them)
  const odd = `${uniq('db')}.example.com:22 é`;
  const ho = await createHost(url, a.id, { name: odd });
  t.is((await latest(`/${encodeURIComponent(odd)}`)).body.host.id, ho.id);
  t.is((await latest('/a%2')).status, 404);
  t.is((await api(url, 'POST', `/api/v1/latesthosts/${name}`, {})).status, 405);
});

test('latesthosts list: one row per name, ARA\'s filters and orders, pages', async (t) => {
  const tag = uniq('lh');
  const [a, b] = await playbooksOnDifferentShards(url);
  await call(url, 'PATCH', `/api/v1/playbooks/${b.id}`, { name: `${tag}-second` }, 200);
  // web-1 in both playbooks (b's is newer), web-2 only in a, with counters set
  await createHost(url, a.id, { name: `${tag}-web-1`, failed: 3 });
  await createHost(url, a.id, { name: `${tag}-web-2`, ok: 5 });
  const newer = await createHost(url, b.id, { name: `${tag}-web-1`, ok: 1 });
  const all = await latest(`?name=${tag.toUpperCase()}`, ARA);
  t.is(all.status, 200, all.text);
  t.is(all.body.count, 2);
  t.deepEqual(all.body.results.map((r: Json) => r.name), [`${tag}-web-1`, `${tag}-web-2`], 'by name by default');
  t.is(all.body.results[0].host.id, newer.id);
  t.deepEqual(all.body.results[0].host.facts, {});
  const ids = async (query: string): Promise<string[]> => {
    const r = await latest(`?name=${tag}&${query}`);
    t.is(r.status, 200, `${query}: ${r.text}`);
    return r.body.results.map((row: Json) => row.name);
  };
  // filters test the newest row: web-1's newest is in b, not a, and has no failures any more
  t.deepEqual(await ids(`playbook=${a.id}`), [`${tag}-web-2`]);
  t.deepEqual(await ids(`playbook=${b.id}`), [`${tag}-web-1`]);
  t.deepEqual(await ids('playbook_name=SECOND'), [`${tag}-web-1`]);
  t.deepEqual(await ids(`playbook_path=${encodeURIComponent(a.path)}`), [`${tag}-web-2`]);
  t.deepEqual(await ids('failed__gt=0'), []);
  t.deepEqual(await ids('ok__gt=2'), [`${tag}-web-2`]);
  t.deepEqual(await ids('ok__lt=2'), [`${tag}-web-1`]);
  t.deepEqual(await ids('order=-name'), [`${tag}-web-2`, `${tag}-web-1`]);
  t.deepEqual(await ids('order=-ok'), [`${tag}-web-2`, `${tag}-web-1`]);
  t.deepEqual(await ids('order=-created'), [`${tag}-web-1`, `${tag}-web-2`]);
  t.deepEqual(await ids(`created_after=${encodeURIComponent(newer.created)}`), [`${tag}-web-1`]);
  t.deepEqual(await ids(`host__created_before=${encodeURIComponent(newer.created)}`), [`${tag}-web-1`, `${tag}-web-2`]);
  const page = await latest(`?name=${tag}&limit=1`);
  t.is(page.body.count, 2);
  t.is(page.body.results.length, 1);
  t.regex(page.body.next, /\/api\/v1\/latesthosts\?limit=1&name=.*&offset=1$/);
  const second = await api(url, 'GET', new URL(page.body.next).pathname + new URL(page.body.next).search);
  t.deepEqual(second.body.results.map((r: Json) => r.name), [`${tag}-web-2`]);
  t.truthy(second.body.previous);
  // bad values; an unknown parameter is an error outside ARA's dialect and ignored inside it, as ARA does
  t.deepEqual((await latest('?order=id')).body, { order: ['Select a valid choice. id is not one of the available choices.'] });
  t.is((await latest('?ok__gt=x')).status, 400);
  t.deepEqual((await latest(`?name=${tag}&colour=blue`)).body, { colour: ['Unknown query parameter.'] });
  t.is((await latest(`?name=${tag}&colour=blue`, ARA)).body.count, 2);
  // `dialect` picks the dialect here as on every list; the dialect's ignoring of unknown parameters comes with it
  t.is((await latest(`?name=${tag}&dialect=logbook`)).body.count, 2);
  t.is((await latest(`?name=${tag}&dialect=ara&colour=blue`)).body.count, 2);
  t.deepEqual((await latest(`?name=${tag}&cursor=abc`)).body, { cursor: ['Unknown query parameter.'] });
  // ARA's API root lists it in the dialect
  t.truthy((await call(url, 'GET', '/api/v1/', undefined, 200, ARA)).body.latesthosts);
});

test('latesthosts after a restart: rebuilt from snapshots and the journal', async (t) => {
  let lb = await startLogbook({ env: { ...SERVER_ENV, LOGBOOK_SNAPSHOT_EVERY: '3' }, keepData: true, startTimeoutMs: 120_000 });
  try {
    const name = uniq('h');
    const [a, b] = await playbooksOnDifferentShards(lb.url);
    const ha = await createHost(lb.url, a.id, { name });
    for (let i = 0; i < 4; i++) await createHost(lb.url, a.id); // past a snapshot
    const hb = await createHost(lb.url, b.id, { name });
    const hc = await createHost(lb.url, (await createPlaybookOnShard(lb.url, a.id % 3)).id, { name });
    await del(lb.url, `/api/v1/hosts/${hc.id}`);
    await lb.stop();
    lb = await startLogbook({ env: SERVER_ENV, dataDir: lb.dataDir, keepData: true, startTimeoutMs: 120_000 });
    t.is((await api(lb.url, 'GET', `/api/v1/latesthosts/${name}`)).body.host?.id, hb.id);
    await del(lb.url, `/api/v1/hosts/${hb.id}`);
    t.is((await api(lb.url, 'GET', `/api/v1/latesthosts/${name}`)).body.host?.id, ha.id);
  } finally { await lb.stop(); }
});

test('a playbook nested in a detail keeps each dialect\'s shape, whichever dialect read it first', async (t) => {
  const pb = await createPlaybook(url);
  const host = await createHost(url, pb.id);
  const ara = (await call(url, 'GET', `/api/v1/hosts/${host.id}`, undefined, 200, ARA)).body;
  t.true('ansible_version' in ara.playbook);
  const plain = (await get(url, `/api/v1/hosts/${host.id}`));
  t.false('ansible_version' in plain.playbook, 'logbook\'s shape, not the summary cached for ARA\'s client');
  t.true('ansible_version' in (await call(url, 'GET', `/api/v1/hosts/${host.id}`, undefined, 200, ARA)).body.playbook);
});

test('ARA\'s nested forms: a detail\'s playbook carries its arguments, a result\'s task its tags (SimplePlaybookSerializer, SimpleTaskSerializer)', async (t) => {
  const tree = await createTree(url, { playbook: { arguments: { check: true, forks: 5 } } });
  await call(url, 'PATCH', `/api/v1/tasks/${tree.task}`, { tags: ['deploy', 'web'] }, 200);
  const ara = (await call(url, 'GET', `/api/v1/results/${tree.result}`, undefined, 200, ARA)).body;
  t.deepEqual(ara.playbook.arguments, { check: true, forks: 5 });
  t.deepEqual(Object.keys(ara.playbook).slice(0, 4), ['id', 'items', 'arguments', 'labels']);
  t.deepEqual(ara.task.tags, ['deploy', 'web']);
  const plain = await get(url, `/api/v1/results/${tree.result}`);
  t.false('arguments' in plain.playbook, 'the seed\'s summary(playbook) has no arguments');
  t.false('tags' in plain.task);
  // a change of the arguments shows at once in ARA's nested form
  await call(url, 'PATCH', `/api/v1/playbooks/${tree.playbook}`, { arguments: { check: false } }, 200);
  t.deepEqual((await call(url, 'GET', `/api/v1/hosts/${tree.host}`, undefined, 200, ARA)).body.playbook.arguments, { check: false });
});

// ---- ARA's filters (ara/api/filters.py at its newest commit) and unknown parameters ----

test('ARA\'s filters through a row\'s parents, task list counts and lineno, delegated_to, over every shard', async (t) => {
  const tag = uniq('flt');
  const [a, b] = await playbooksOnDifferentShards(url, { name: `${tag} Deploy`, path: `/srv/${tag}/deploy.yml` });
  const refs = async (pb: Json) => {
    const file = (await createFile(url, pb.id)).id;
    const play = (await createPlay(url, pb.id)).id;
    return { playbook: pb.id as number, file, play };
  };
  const ra = await refs(a);
  const rb = await refs(b);
  // a: a task with two warnings on line 7; b: one with an exception on line 9 (exceptions as an object counts 0)
  const ta = await createTask(url, ra, { name: `${tag} Install packages`, lineno: 7, warnings: ['w1', 'w2'] });
  const tb = await createTask(url, rb, { name: `${tag} Restart`, lineno: 9, exceptions: [{ msg: 'boom' }], deprecations: { not: 'a list' } });
  const ha = await createHost(url, a.id, { name: `${tag}-Web1` });
  const hb = await createHost(url, b.id, { name: `${tag}-db1` });
  const hb2 = await createHost(url, b.id, { name: `${tag}-proxy` });
  const resA = await createResult(url, { playbook: a.id, play: ra.play, task: ta.id, host: ha.id });
  const resB = await createResult(url, { playbook: b.id, play: rb.play, task: tb.id, host: hb.id }, { delegated_to: [hb2.id] });

  const idsOf = async (resource: string, query: string, headers: Record<string, string> = {}): Promise<number[]> => {
    const r = await api(url, 'GET', `/api/v1/${resource}?${query}`, undefined, headers);
    t.is(r.status, 200, `${resource}?${query}: ${r.text}`);
    return r.body.results.map((row: Json) => row.id).sort((x: number, y: number) => x - y);
  };
  const both = [a.id, b.id].sort((x, y) => x - y);
  t.deepEqual(await idsOf('playbooks', `name=${tag}`), both);
  t.deepEqual(await idsOf('tasks', `playbook_name=${tag.toUpperCase()}%20DEPLOY`), [ta.id, tb.id]);
  t.deepEqual(await idsOf('tasks', `playbook_path=${tag}&lineno=9`), [tb.id]);
  t.deepEqual(await idsOf('tasks', `playbook_path=${tag}&warnings_count__gt=1`), [ta.id]);
  t.deepEqual(await idsOf('tasks', `playbook_path=${tag}&warnings_count__lt=1`), [tb.id]);
  t.deepEqual(await idsOf('tasks', `playbook_path=${tag}&exceptions_count__gt=0`, ARA), [tb.id]);
  t.deepEqual(await idsOf('tasks', `playbook_path=${tag}&deprecations_count__gt=0`), [], 'an object is not a list: counts 0');
  t.deepEqual(await idsOf('hosts', `playbook_name=${tag}&name=db`), [hb.id]);
  t.deepEqual(await idsOf('hosts', `playbook_path=/srv/${tag}/`), [ha.id, hb.id, hb2.id]);
  t.deepEqual(await idsOf('results', `task_name=${tag}%20install`), [resA.id]);
  t.deepEqual(await idsOf('results', `host_name=${tag}-web1`), [resA.id], 'host_name: case-insensitive, whole name');
  t.deepEqual(await idsOf('results', `host_name=${tag}-web`), []);
  t.deepEqual(await idsOf('results', `delegated_to=${hb2.id}`), [resB.id]);
  t.deepEqual(await idsOf('playbooks', `name=${tag}&server_version=${encodeURIComponent((await get(url, '/api/')).version)}`), both);
  t.deepEqual(await idsOf('playbooks', `name=${tag}&server_version=0.0.0-none`), []);
});

test('a parameter no list reads: 400 naming it outside ARA\'s dialect, ignored inside it (SPEC §5, §9)', async (t) => {
  const tree = await createTree(url);
  const plain = await api(url, 'GET', `/api/v1/results?playbook=${tree.playbook}&content=x`);
  t.is(plain.status, 400);
  t.deepEqual(plain.body, { content: ['Unknown query parameter.'] });
  const ara = await api(url, 'GET', `/api/v1/results?playbook=${tree.playbook}&content=x`, undefined, ARA);
  t.is(ara.status, 200, ara.text);
  t.deepEqual(ara.body.results.map((r: Json) => r.id), [tree.result]);
  // a bad value and an unknown name at once: both named
  t.deepEqual((await api(url, 'GET', '/api/v1/hosts?failed__gt=x&colour=blue')).body,
    { failed__gt: ['Enter a number.'], colour: ['Unknown query parameter.'] });
  // what every list reads is not unknown
  t.is((await api(url, 'GET', `/api/v1/files?playbook=${tree.playbook}&format=json&order=-id&limit=2&offset=0`)).status, 200);
});

test('dialect=ara|logbook in the query picks the dialect whatever the User-Agent; another value is a 400 on lists', async (t) => {
  const tree = await createTree(url);
  await call(url, 'PATCH', `/api/v1/tasks/${tree.task}`, { warnings: ['w'] }, 200);
  const asAra = await get(url, `/api/v1/tasks/${tree.task}?dialect=ara`);
  t.deepEqual(asAra.warnings, ['w']);
  t.true('uuid' in asAra);
  const rows = await get(url, `/api/v1/tasks?playbook=${tree.playbook}&dialect=ara`);
  t.deepEqual(rows.results[0].warnings, ['w']);
  t.regex(rows.results[0].updated, /Z$/, 'list rows carry created/updated in the dialect');
  const asLogbook = (await call(url, 'GET', `/api/v1/tasks/${tree.task}?dialect=logbook`, undefined, 200, ARA)).body;
  t.false('warnings' in asLogbook, 'logbook\'s shape for ARA\'s client when it asks for it');
  t.deepEqual((await api(url, 'GET', `/api/v1/tasks?playbook=${tree.playbook}&dialect=django`)).body,
    { dialect: ['Select a valid choice. django is not one of the available choices.'] });
});
