// Result contents a batch writes are stored packed (src/store/content_chunks.ts).
// What a user sees must not change: every content reads back as sent (multi-byte
// text, escapes, a content too large to pack, the default `{}`), also after a
// restart; a later PATCH of one content wins over its chunk, also a PATCH back to
// `{}`; deleting one result or the whole playbook leaves a directory that
// `logbook check` passes, and a chunk whose playbook is gone is reported.
import test from 'ava';
import { rmSync } from 'node:fs';
import { open } from 'lmdb';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from './helpers/server.js';
import { runCheck } from './helpers/cli.js';

const PATH = '/srv/site.yml';

/** Content texts of every kind a chunk must carry unchanged (as the client's JSON text). */
function contents(n: number): string[] {
  return Array.from({ length: n }, (_, i) => {
    switch (i % 6) {
      case 0: return `{"msg":"package-${i} installed","changed":true,"rc":0}`;
      case 1: return `{"stdout":"héllo wörld ✓ ${i} 日本語 😀","escaped":"tab\\tquote\\"slash\\\\ \\u00e9"}`;
      case 2: return '{}'; // the default: stored nowhere
      case 3: return `{"big":${'9'.repeat(30)},"list":[1,2,{"k":null}],"i":${i}}`;
      case 4: return i === 4 ? `{"stdout":"${'x'.repeat(40_000)}"}` : `{"i":${i},"pad":"${'y'.repeat(i * 50)}"}`; // one too large to pack
      default: return `{"n":${i},"nested":{"a":{"b":{"c":"${i}"}}}}`;
    }
  });
}

async function ingestRun(url: string, uuid: string, texts: string[]): Promise<number> {
  const first = {
    playbook: { uuid, path: PATH, runner_version: '2.16.0', status: 'running' }, seq: 1,
    events: [
      { kind: 'file', path: PATH, content: '- hosts: all\n' },
      { kind: 'play', uuid: `${uuid}-play`, name: 'site', status: 'running' },
      { kind: 'task', uuid: `${uuid}-task`, play: `${uuid}-play`, file: PATH, name: 'packages', action: 'apt', lineno: 1, handler: false },
    ],
  };
  let r = await api(url, 'POST', '/api/v1/ingest', first);
  if (r.status !== 200) throw new Error(r.text);
  // the results, as raw text so that each content is exactly the client's
  const events = texts.map((c, i) => `{"kind":"result","task":"${uuid}-task","host":"web-${i % 5}","status":"ok","content":${c}}`);
  r = await api(url, 'POST', '/api/v1/ingest', `{"playbook":{"uuid":"${uuid}"},"seq":2,"events":[${events.join(',')}]}`);
  if (r.status !== 200 || r.body.applied !== texts.length) throw new Error(r.text);
  return r.body.playbook as number;
}

/** Result id → its content as served (the raw text of the `content` member). */
async function served(url: string, playbook: number): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  const list = await api(url, 'GET', `/api/v1/results?playbook=${playbook}&limit=1000&order=id`);
  for (const row of list.body.results) {
    const r = await api(url, 'GET', `/api/v1/results/${row.id}`);
    const m = /"content":(.*),"created":/s.exec(r.text);
    out.set(row.id, m ? m[1]! : `(no content in ${r.text.slice(0, 200)})`);
  }
  return out;
}

async function withServer(dataDir: string, shards: number, fn: (lb: Logbook) => Promise<void>): Promise<void> {
  const lb = await startLogbook({ dataDir, env: { LOGBOOK_SHARDS: String(shards) } });
  try { await fn(lb); } finally { await lb.stop(); }
}

test('batch contents read back as sent, after a restart too; a PATCH wins over the chunk, also back to {}', async (t) => {
  const lb = await startLogbook({ keepData: true, env: { LOGBOOK_SHARDS: '2' } });
  const dataDir = lb.dataDir;
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const texts = contents(100);
  let playbook = 0;
  let ids: number[] = [];
  try {
    playbook = await ingestRun(lb.url, 'chunks-read', texts);
    const got = await served(lb.url, playbook);
    ids = [...got.keys()].sort((a, b) => a - b);
    t.deepEqual(ids.map((id) => got.get(id)), texts, 'read right after the batch');
  } finally { await lb.stop(); }

  await withServer(dataDir, 2, async (again) => {
    const got = await served(again.url, playbook);
    t.deepEqual(ids.map((id) => got.get(id)), texts, 'read after a restart (from the chunks on disk)');
    // rewrite two packed contents: one to a new value, one back to the default
    let r = await api(again.url, 'PATCH', `/api/v1/results/${ids[0]}`, { content: { rewritten: true } });
    t.is(r.status, 200, r.text);
    r = await api(again.url, 'PATCH', `/api/v1/results/${ids[1]}`, { content: {} });
    t.is(r.status, 200, r.text);
    const after = await served(again.url, playbook);
    t.is(after.get(ids[0]!), '{"rewritten":true}');
    t.is(after.get(ids[1]!), '{}', 'a content set back to {} does not show its chunk\'s value');
    t.is(after.get(ids[3]!), texts[3], 'its neighbours in the chunk are untouched');
  });
  await withServer(dataDir, 2, async (again) => {
    const after = await served(again.url, playbook);
    t.is(after.get(ids[0]!), '{"rewritten":true}', 'after another restart');
    t.is(after.get(ids[1]!), '{}');
  });
});

test('deleting a packed result, then its playbook: check passes and no chunk is left; an orphan chunk is reported', async (t) => {
  const lb = await startLogbook({ keepData: true, env: { LOGBOOK_SHARDS: '1' } });
  const dataDir = lb.dataDir;
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let playbook = 0;
  try {
    playbook = await ingestRun(lb.url, 'chunks-delete', contents(40));
    await ingestRun(lb.url, 'chunks-kept', contents(40));
    const list = await api(lb.url, 'GET', `/api/v1/results?playbook=${playbook}&limit=5`);
    t.is((await api(lb.url, 'DELETE', `/api/v1/results/${list.body.results[0].id}`)).status, 204);
  } finally { await lb.stop(); }
  let r = await runCheck(dataDir);
  t.is(r.code, 0, r.output);
  t.regex(r.output, /1 content\(s\) of deleted or rewritten results kept in chunks until their playbook is deleted/);

  await withServer(dataDir, 1, async (again) => {
    t.is((await api(again.url, 'DELETE', `/api/v1/playbooks/${playbook}`)).status, 204);
  });
  r = await runCheck(dataDir);
  t.is(r.code, 0, r.output);
  t.notRegex(r.output, /kept in chunks/, 'the deleted playbook took its chunks with it');
  t.regex(r.output, /content \d+ /);

  // a chunk naming a playbook that does not exist (as a damaged or hand-edited file would have)
  const env = open({ path: join(dataDir, 'shard-0.mdb'), maxDbs: 8 });
  const chunks = env.openDB<Buffer, number[]>({ name: 'content_chunks', encoding: 'binary' });
  const value = Buffer.alloc(4 + 8 + 2);
  value.writeUInt32LE(1, 0); value.writeUInt32LE(0, 4); value.writeUInt32LE(2, 8); value.write('{}', 12);
  await chunks.put([987654, 5000, 5000], value);
  await env.close();
  r = await runCheck(dataDir);
  t.is(r.code, 1, r.output);
  t.regex(r.output, /orphan chunk of contents of results 5000–5000: playbook 987654 does not exist/);
});
