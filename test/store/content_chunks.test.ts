// Result contents a batch writes are stored packed (src/store/content_chunks.ts).
// What a user sees must not change: every content reads back as sent (multi-byte
// text, escapes, a content too large to pack, the default `{}`), also after a
// restart; a later PATCH of one content wins over its chunk, also a PATCH back to
// `{}`; deleting one result or the whole playbook leaves a directory that
// `logbook check` passes, and a chunk whose playbook is gone is reported.
import test from 'ava';
import { rmSync } from 'node:fs';
import { open, type Database } from 'lmdb';
import { ContentChunks, type ChunkKey } from '../../src/store/content_chunks.js';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { runCheck } from '../helpers/cli.js';

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

test('a chunk holds the same bytes whatever its texts: ASCII ones laid out from their lengths, others measured', (t) => {
  // what ContentChunks.pack stored before it took ASCII texts in one pass: each text's UTF-8 length measured first
  const reference = (texts: string[]): Buffer => {
    const lengths = texts.map((s) => Buffer.byteLength(s, 'utf8'));
    const head = 4 + 8 * texts.length;
    const buf = Buffer.alloc(head + lengths.reduce((a, b) => a + b, 0));
    buf.writeUInt32LE(texts.length, 0);
    let end = 0;
    texts.forEach((s, k) => {
      buf.write(s, head + end, lengths[k]!, 'utf8');
      end += lengths[k]!;
      buf.writeUInt32LE(k, 4 + 8 * k);
      buf.writeUInt32LE(end, 8 + 8 * k);
    });
    return buf;
  };
  const ascii = (i: number): string => `{"i":${i},"msg":"${'a'.repeat(i * 37 % 900)}"}`;
  // texts beyond ASCII: 2-, 3- and 4-byte characters, a lone surrogate (3 bytes as U+FFFD), each first, inside and last
  const others = ['{"s":"é"}', '{"s":"✓ ok"}', '{"s":"😀"}', '{"s":"\ud800"}', `{"s":"${'x'.repeat(100)}é"}`];
  const db = { getKeys: () => [] } as unknown as Database<Buffer, ChunkKey>;
  const cases: string[][] = [Array.from({ length: 40 }, (_, i) => ascii(i))];
  for (const other of others) {
    for (const at of [0, 7, 19]) {
      const texts = Array.from({ length: 20 }, (_, i) => ascii(i));
      texts[at] = other;
      cases.push(texts);
    }
  }
  // a chunk closes once its payload reaches CHUNK_BYTES: bytes, not characters, decide where
  cases.push(Array.from({ length: 30 }, (_, i) => `{"s":"${(i % 2 ? 'é' : 'e').repeat(4000)}"}`));
  for (const texts of cases) {
    const packed = new ContentChunks(db).pack(texts.map((text, i) => ({ id: 100 + i, playbook: 1, text })));
    let from = 0;
    for (const [key, value] of packed) {
      const count = value.readUInt32LE(0);
      t.deepEqual(key, [1, 100 + from, 100 + from + count - 1]);
      t.deepEqual(value, reference(texts.slice(from, from + count)));
      from += count;
    }
    t.is(from, texts.length);
  }
});
