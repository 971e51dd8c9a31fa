// Text is valid Unicode everywhere or refused everywhere: a lone UTF-16
// surrogate ("\ud800" is valid JSON) cannot be stored as UTF-8, and was accepted
// in a batch's host name, play uuid and stream uuid, served as sent, then came
// back from a restart as U+FFFD (and later batches made a second host, play or
// playbook). Random strings, surrogates among them, go through both write paths
// into every kind of field; whatever was acknowledged must read back exactly as
// sent, before and after a restart, and nothing refused may leave a trace.
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, startLogbook, type Logbook } from '../helpers/server.js';
import { dumpApi } from '../helpers/dump.js';
import { SERVER_ENV } from '../helpers/fixtures.js';
import { Rng, seedFrom } from '../helpers/random.js';
import { stripWhitespace } from '../../src/api/validate.js';

const PIECES = ['a', 'Z', '-', ' ', 'é', '☃', '😀', '\ud83d\ude00', '\ud800', '\udfff', '\ud83d', '\ufffd', 'x\u00a0', '中'];
const LONE = /\p{Surrogate}/u;

function text(rng: Rng, surrogates: boolean): string {
  let s = `s${rng.int(0, 1e9)}`;
  const n = rng.int(1, 6);
  for (let i = 0; i < n; i++) {
    const p = rng.pick(PIECES);
    s += LONE.test(p) && !surrogates ? 'q' : p;
  }
  return s;
}

/**
 * JSON values (a result's content, a record's value, arguments, facts, a file's
 * content) are kept as the client's JSON text, escapes and all: Python's json
 * writes output that was not UTF-8 (surrogateescape) as "\udcff", and refusing it
 * would lose the result. The restart comparison below checks that they round-trip.
 */
const JSON_VALUES = new Set(['content', 'value', 'arguments', 'facts']);

/** A string or object key with a lone surrogate anywhere in a row but its JSON values. */
function hasLone(v: unknown): boolean {
  if (typeof v === 'string') return LONE.test(v);
  if (Array.isArray(v)) return v.some(hasLone);
  if (v !== null && typeof v === 'object') return Object.entries(v).some(([k, x]) => !JSON_VALUES.has(k) && (LONE.test(k) || hasLone(x)));
  return false;
}

const post = (lb: Logbook, path: string, body: unknown) => api(lb.url, 'POST', path, body);

test('random text through both write paths: acknowledged exactly as sent (names stripped of surrounding whitespace), before and after a restart; refused leaves nothing', async (t) => {
  t.timeout(240_000);
  const rng = new Rng(seedFrom('unicode-roundtrip'));
  const dataDir = mkdtempSync(join(tmpdir(), 'logbook-unicode-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let lb = await startLogbook({ dataDir, env: SERVER_ENV });
  /** [resource path, id, field, value sent] of every acknowledged string */
  const kept: Array<[string, number, string, string]> = [];
  const streams: Array<{ uuid: string; host: string; task: string; play: string }> = [];
  let refused = 0;
  try {
    for (let round = 0; round < 40; round++) {
      const bad = rng.bool(0.5);
      // ---- per-request writes
      const pb = await post(lb, '/api/v1/playbooks', { path: `/u/${text(rng, bad)}.yml`, name: text(rng, bad), runner_version: '2.16.0', labels: [text(rng, bad)] });
      if (pb.status !== 201) {
        t.is(pb.status, 400, pb.text); t.true(bad, `refused without a surrogate: ${pb.text}`); refused++;
      } else {
        kept.push(['playbooks', pb.body.id, 'name', pb.body.name], ['playbooks', pb.body.id, 'path', pb.body.path]);
        for (const [field, path, body] of [
          ['name', '/api/v1/hosts', { playbook: pb.body.id, name: text(rng, bad) }],
          ['key', '/api/v1/records', { playbook: pb.body.id, key: text(rng, bad), type: 'json', value: { [text(rng, bad)]: text(rng, bad) } }],
          ['path', '/api/v1/files', { playbook: pb.body.id, path: text(rng, bad), content: text(rng, bad) }],
        ] as const) {
          const r = await post(lb, path, body);
          // stored as ARA's DRF CharField stores it: without surrounding whitespace
          const sent = stripWhitespace((body as Record<string, string>)[field]!);
          if (r.status === 201) {
            kept.push([path.slice(8), r.body.id, field, sent]);
            if (!bad) t.is(r.body[field], sent);
          } else { t.is(r.status, 400, r.text); t.true(bad || sent === '', r.text); refused++; }
        }
      }
      // ---- batch ingest: the stream's uuid, a play's and a task's uuid, host names, labels, content keys and values
      const uuid = text(rng, bad && rng.bool());
      const play = text(rng, bad && rng.bool());
      const task = text(rng, bad && rng.bool());
      const host = text(rng, bad && rng.bool());
      const b = await post(lb, '/api/v1/ingest', {
        seq: 1, playbook: { uuid, path: '/u/batch.yml', runner_version: '2.16.0', labels: [text(rng, bad && rng.bool())] },
        events: [
          { kind: 'file', path: '/u/batch.yml', content: text(rng, bad && rng.bool()) },
          { kind: 'play', uuid: play, name: text(rng, bad && rng.bool()) },
          { kind: 'task', uuid: task, play, file: '/u/batch.yml', name: text(rng, bad && rng.bool()), action: 'debug', lineno: 1, handler: false },
          { kind: 'host', name: host },
          { kind: 'result', task, host, status: 'ok', content: { [text(rng, bad && rng.bool())]: text(rng, bad && rng.bool()) } },
          { kind: 'record', key: text(rng, bad && rng.bool()), type: 'text', value: text(rng, bad && rng.bool()) },
        ],
      });
      if (b.status === 200 && b.body.rejected.length === 0) streams.push({ uuid, host, task, play });
      else if (b.status === 200) { t.true(bad, b.text); refused++; t.regex(b.text, /surrogate/, 'a rejected event names the surrogate'); }
      else { t.is(b.status, 400, b.text); t.true(bad, b.text); refused++; }
    }
    t.true(refused > 5, `some writes carried a lone surrogate and were refused (${refused})`);
    t.true(streams.length > 5, `some batches were applied whole (${streams.length})`);

    const before = await dumpApi(lb.url);
    // nothing stored carries a lone surrogate (refused writes left nothing: no label, host, play made by them)
    for (const row of Object.values(before.details).flatMap((d) => Object.values(d))) {
      t.false(hasLone(row), `a stored row carries a lone surrogate: ${JSON.stringify(row).slice(0, 300)}`);
    }
    for (const [resource, id, field, value] of kept) t.is(before.details[resource as keyof typeof before.details][id][field], value, `${resource}/${id}.${field}`);
    await lb.stop();

    lb = await startLogbook({ dataDir, env: SERVER_ENV });
    const after = await dumpApi(lb.url);
    t.deepEqual(after, before, 'a restart changes no text');
    // later batches of each stream name the same playbook, play, task and host
    const hostsBefore = after.lists.hosts.length;
    const playsBefore = after.lists.plays.length;
    for (const s of streams) {
      const r = await post(lb, '/api/v1/ingest', {
        seq: 2, playbook: { uuid: s.uuid },
        events: [{ kind: 'play', uuid: s.play, status: 'completed' }, { kind: 'result', task: s.task, host: s.host, status: 'ok' }],
      });
      t.is(r.status, 200, r.text);
      t.deepEqual(r.body.rejected, [], r.text);
    }
    const later = await dumpApi(lb.url, { details: false });
    t.is(later.lists.hosts.length, hostsBefore, 'no second host');
    t.is(later.lists.plays.length, playsBefore, 'no second play');
    t.is(later.lists.playbooks.length, after.lists.playbooks.length, 'no second playbook');
  } finally {
    await lb.stop();
  }
});
