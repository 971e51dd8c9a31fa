// The journal entry writer (src/store/msgpack_writer.ts): a journal entry is
// written as lmdb-js's msgpack encoder of the journal table writes the same
// events (byte for byte), so the table's decoder reads entries of either writer,
// before and after a restart, as the same events. Seeded (JOURNAL_CODEC_SEED
// replays a run).
import test from 'ava';
import { asBinary, open } from 'lmdb';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeJournalEntry } from '../../src/store/msgpack_writer.js';
import { Rng, seedFrom } from '../helpers/random.js';

const seed = seedFrom('JOURNAL_CODEC_SEED');

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-journal-codec-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** the journal table as LmdbShardStore opens it, and its msgpack encoder (which decodes too) */
function journalOf(dir: string) {
  const env = open({ path: join(dir, 'shard-0.mdb'), maxDbs: 8 });
  const journal = env.openDB<unknown, number>({ name: 'journal', keyEncoding: 'uint32', encoding: 'msgpack' });
  const codec = (journal as unknown as { encoder: { encode(v: unknown): Uint8Array; decode(b: Uint8Array): unknown } }).encoder;
  return { env, journal, codec };
}

const NUMBERS = [0, 1, 31, 32, 63, 64, 65, 100, 127, 128, 255, 256, 65535, 65536, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 1_795_588_707_692_000,
  Number.MAX_SAFE_INTEGER, -1, -32, -33, -128, -129, -32768, -32769, -(2 ** 31), -(2 ** 31) - 1, 0.5, -2.25, 1e300, NaN, Infinity, -Infinity];
const STRINGS = ['', 'ok', 'failed', 'a'.repeat(31), 'b'.repeat(32), 'c'.repeat(255), 'd'.repeat(256), 'e'.repeat(70_000),
  'héllo', '日本語のタスク', 'emoji 🎉 ok', 'x'.repeat(30) + 'é', '/srv/site.yml', 'web-01', 'y'.repeat(63), 'z'.repeat(64),
  'é'.repeat(63), '日'.repeat(63), '日'.repeat(64)];
const FIELDS = ['status', 'changed', 'started', 'ended', 'playbook', 'task', 'play', 'host', 'id', 'created', 'updated', 'name',
  'labels', 'delegated_to', 'ignore_errors', 'path', 'sha1', 'ingest_seq', 'lineno', 'tags'];

function value(rng: Rng, depth: number): unknown {
  switch (rng.int(0, depth > 1 ? 5 : 7)) {
    case 0: case 1: return rng.pick(NUMBERS);
    case 2: return rng.pick(STRINGS);
    case 3: return rng.bool();
    case 4: return rng.bool() ? null : undefined;
    case 5: return rng.int(0, 2) === 0 ? Math.floor(rng.next() * 2 ** 53) : rng.int(0, 200);
    case 6: return Array.from({ length: rng.pick([0, 1, 3, 15, 16, 20]) }, () => value(rng, depth + 1));
    default: return object(rng, depth + 1);
  }
}

/** an object of a few shapes (so that records repeat, and shapes share their first keys) */
function object(rng: Rng, depth: number): Record<string, unknown> {
  const shape = rng.int(0, 5);
  const keys = FIELDS.slice(shape, shape + rng.pick([0, 1, 4, 11, 11, 11]));
  if (rng.bool(0.2)) keys.reverse();
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = value(rng, depth);
  return out;
}

function events(rng: Rng): unknown[] {
  return Array.from({ length: rng.pick([0, 1, 2, 15, 16, 100]) }, () => {
    const kind = rng.int(0, 3);
    if (kind === 0) return { e: 'create', t: rng.pick(['result', 'host', 'task']), p: rng.int(1, 300), d: object(rng, 1) };
    if (kind === 1) return { e: 'update', t: 'playbook', p: rng.int(1, 300), id: rng.int(1, 300), d: { ingest_seq: rng.int(1, 1000) } };
    if (kind === 2) return { e: 'delete', t: 'result', p: rng.int(1, 300), id: rng.int(1, 2 ** 40) };
    return object(rng, 1);
  });
}

test(`entries are written as the journal table's encoder writes them, and read back the same (seed ${seed})`, async (t) => {
  const dir = tempDir(t);
  const { env, journal, codec } = journalOf(dir);
  const rng = new Rng(seed);
  const written: unknown[][] = [];
  for (let i = 0; i < 300; i++) {
    const evs = events(rng);
    const mine = encodeJournalEntry(evs);
    if (mine === null) { t.fail(`entry ${i} was not taken`); continue; }
    t.true(Buffer.from(mine).equals(codec.encode(evs)), `entry ${i}: other bytes than the table encoder's (seed ${seed})`);
    t.deepEqual(codec.decode(mine), evs, `entry ${i} (seed ${seed})`);
    // the old writer's entry and the new one's, side by side in the table
    void journal.put(2 * i + 1, evs);
    void journal.put(2 * i + 2, asBinary(mine) as unknown);
    written.push(evs);
  }
  await journal.committed;
  await env.close();
  // read after a reopen, as recovery reads the journal
  const again = journalOf(dir);
  for (const { key, value } of again.journal.getRange()) t.deepEqual(value, written[(key - 1) >> 1], `entry ${(key - 1) >> 1} (seed ${seed})`);
  t.is(again.journal.getKeysCount(), 600);
  await again.env.close();
});

test('an object whose shape turns out to differ midway from one the entry has is written whole (its nested definitions too)', (t) => {
  const { env, codec } = journalOf(tempDir(t));
  t.teardown(() => env.close());
  // the second object starts as the first (and defines a nested shape), then differs
  const evs = [
    { a: 1, b: 2, c: 3 },
    { a: 1, b: { x: 1, y: [{ z: 1 }] }, d: 4 },
    { a: 1, b: { x: 2, y: [] }, d: 5 },
    { a: 1, b: 2 },
    { a: 1, b: 2, c: 3, d: 4 },
    {},
    { b: 2, a: 1 },
    // a value defines (as its own) the shape its record turns out to have: the record defines it first
    { s: 1 },
    { s: { s: 1, c: 2 }, c: 2 },
    { s: { s: 1, c: 2 }, c: 3 },
  ];
  const mine = encodeJournalEntry(evs)!;
  t.deepEqual(Buffer.from(mine), Buffer.from(codec.encode(evs)));
  t.deepEqual(codec.decode(mine), evs);
});

test('values the writer does not take, and more than 64 shapes, are left to the table encoder', (t) => {
  t.is(encodeJournalEntry([{ e: 'create', d: { at: new Date(0) } }]), null);
  t.is(encodeJournalEntry([{ e: 'create', d: { n: 10n } }]), null);
  t.is(encodeJournalEntry([{ e: 'create', d: { m: new Map() } }]), null);
  t.is(encodeJournalEntry([new Uint8Array(3)]), null);
  const many = Array.from({ length: 65 }, (_, i) => ({ [`k${i}`]: i }));
  t.is(encodeJournalEntry(many), null);
  t.not(encodeJournalEntry(many.slice(0, 64)), null);
  // and the writer is fine after a refusal
  t.deepEqual([...encodeJournalEntry([{ a: 1 }])!], [0x91, 0xd4, 0x72, 0x40, 0x91, 0xa1, 0x61, 0x01]);
});

test('a lone surrogate is written as the table encoder writes it (its code unit in 3 bytes, U+FFFD from 64 characters on)', (t) => {
  // the normalizer refuses them in stored text (validate.ts hasLoneSurrogate): the same bytes all the same
  const { env, codec } = journalOf(tempDir(t));
  t.teardown(() => env.close());
  for (const s of ['\ud800', 'a\udc00b', '\ud83c'.repeat(21), '\ud83c'.repeat(40), 'x'.repeat(62) + '\udfff', 'w'.repeat(70) + '\udfff', '\udfff\ud800']) {
    const evs = [{ e: 'create', d: { name: s } }];
    t.true(Buffer.from(encodeJournalEntry(evs)!).equals(codec.encode(evs)), JSON.stringify(s));
  }
});
