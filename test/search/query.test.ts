// The search query language (src/search/query.ts): each form a person types,
// the errors that say what is wrong, and proof on a real FTS5 table (SQLite
// through better-sqlite3, the engine the index uses) that every expression it
// makes runs and finds exactly the rows a person would expect.
import test from 'ava';
import Database from 'better-sqlite3';
import { parseSearchQuery, SEARCH_QUERY_LIMITS } from '../../src/search/query.js';
import { COLUMNS } from '../../src/search/columns.js';

const ok = (q: string) => {
  const r = parseSearchQuery(q);
  if (!r.ok) throw new Error(`${q}: ${r.error}`);
  return r.query;
};
const error = (q: string) => {
  const r = parseSearchQuery(q);
  if (r.ok) throw new Error(`${q}: parsed as ${r.query.match}`);
  return r.error;
};

test('words, phrases, prefixes, -terms and field terms become FTS5 with every word quoted', (t) => {
  t.is(ok('disk full').match, 'body : "disk" AND body : "full"');
  t.is(ok('"permission denied"').match, 'body : "permission denied"');
  t.is(ok('xyzz*').match, 'body : "xyzz" *');
  t.is(ok('"a b"*').match, 'body : "a b" *');
  t.is(ok('error -timeout -"gave up"').match, '(body : "error") NOT (body : "timeout" OR body : "gave up")');
  t.is(ok('host:web03 Task:"Check disk" status:failed').match, 'host : "web03" AND task : "Check disk" AND status : "failed"');
  t.is(ok('error -host:db*').match, '(body : "error") NOT (host : "db" *)');
  // FTS5 syntax is never syntax here
  t.is(ok('foo:bar').match, 'body : "foo:bar"');
  t.is(ok('AND NOT OR (x)').match, 'body : "AND" AND body : "NOT" AND body : "OR" AND body : "(x)"');
  t.is(ok('a*b').match, 'body : "a*b"');
  // words a tokenizer would drop are dropped
  t.is(ok('*** disk --').match, 'body : "disk"');
  t.deepEqual(ok('Disk "Full Stop" pre*').highlight, [{ text: 'disk', prefix: false }, { text: 'full stop', prefix: false }, { text: 'pre', prefix: true }]);
});

test('after: and before: are filters in microseconds', (t) => {
  const q = ok('error after:2026-11-01 before:2026-11-02T10:00:00.123456+02:00');
  t.is(q.match, 'body : "error"');
  t.is(q.after, Date.UTC(2026, 10, 1) * 1000);
  t.is(q.before, Date.UTC(2026, 10, 2, 8, 0, 0) * 1000 + 123_456);
  t.regex(error('after:2026-02-30 x'), /not a date/);
  t.regex(error('after:yesterday x'), /"after:yesterday" is not a date/);
  t.regex(error('-after:2026-11-01 x'), /cannot be negated/);
  t.regex(error('after:2026-11-01'), /no word to find/);
});

test('a query that cannot be used says what is wrong and where', (t) => {
  t.is(error(''), 'the query is empty');
  t.is(error('   '), 'the query is empty');
  t.is(error('say "hello'), 'unclosed quote at character 5');
  t.regex(error('-timeout'), /at least one term to find/);
  t.regex(error('host: web'), /"host:" has no value after the colon/);
  t.regex(error('x'.repeat(SEARCH_QUERY_LIMITS.maxLength + 1)), /longer than 1000 characters/);
  t.regex(error(Array.from({ length: 33 }, (_, i) => `w${i}`).join(' ')), /more than 32 terms/);
  t.regex(error('*** --'), /no word to find/);
});

test('junk never throws: always a query or an error', (t) => {
  let seed = 7;
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31; };
  const alphabet = 'ab "*-:() \\\'host:after:Ü日\t';
  for (let n = 0; n < 300; n++) {
    const len = Math.floor(rand() * 40);
    let q = '';
    for (let i = 0; i < len; i++) q += alphabet[Math.floor(rand() * alphabet.length)];
    const r = parseSearchQuery(q);
    t.true(r.ok ? r.query.match.length > 0 : r.error.length > 0, q);
  }
});

test('every expression runs on a real FTS5 table and finds what a person expects', (t) => {
  const db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE text USING fts5(body, ${COLUMNS.join(', ')}, tokenize = "unicode61 remove_diacritics 2")`);
  const insert = db.prepare(`INSERT INTO text(rowid, body, ${COLUMNS.join(', ')}) VALUES (?, ?, ${COLUMNS.map(() => '?').join(', ')})`);
  //            rowid body                                        host              task          play  playbook  path       status    label   action
  insert.run(1, 'permission denied on /etc/shadow', 'web03.example.com', 'Check disk', 'web', 'site', 'site.yml', 'failed', 'prod', 'command');
  insert.run(2, 'disk full: timeout after 30s', 'db01', 'Check disk', 'db', 'site', 'site.yml', 'ok', 'prod', 'shell');
  insert.run(3, 'Café Grüße foo:bar AND (x)', 'web04', 'Greet', 'web', 'other', 'other.yml', 'ok', 'dev', 'debug');
  const find = (q: string) => (db.prepare('SELECT rowid FROM text WHERE text MATCH ? ORDER BY rowid').pluck().all(ok(q).match) as number[]);
  t.deepEqual(find('denied'), [1]);
  t.deepEqual(find('DENIED shadow'), [1]);
  t.deepEqual(find('"permission denied"'), [1]);
  t.deepEqual(find('"denied permission"'), []);
  t.deepEqual(find('perm*'), [1]);
  t.deepEqual(find('disk -timeout'), []);
  t.deepEqual(find('disk'), [2], 'a bare word searches the record\'s own text, not its task column');
  t.deepEqual(find('task:disk'), [1, 2]);
  t.deepEqual(find('task:"check disk" -host:db*'), [1]);
  t.deepEqual(find('host:web03'), [1]);
  t.deepEqual(find('host:web*'), [1, 3]);
  t.deepEqual(find('status:failed label:prod action:command path:site.yml playbook:site play:web'), [1]);
  t.deepEqual(find('cafe'), [3], 'diacritics fold');
  t.deepEqual(find('foo:bar'), [3]);
  t.deepEqual(find('AND (x)'), [3]);
});

test('junk that parses is valid FTS5: it runs without an SQL error', (t) => {
  const db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE text USING fts5(body, ${COLUMNS.join(', ')}, tokenize = "unicode61 remove_diacritics 2")`);
  db.prepare(`INSERT INTO text(rowid, body, ${COLUMNS.join(', ')}) VALUES (1, 'a b', ${COLUMNS.map(() => "'x'").join(', ')})`).run();
  const find = db.prepare('SELECT rowid FROM text WHERE text MATCH ?');
  let seed = 11;
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31; };
  const alphabet = ['a', 'b', ' ', '"', '*', '-', ':', '(', ')', 'host:', 'task:', 'NOT', 'AND', 'NEAR', '^', '+', '{', '}', '\u0000', '\t', '😀', '€', 'é', '日', '\u19B0', "'"];
  let parsed = 0;
  for (let n = 0; n < 400; n++) {
    let q = '';
    const len = 1 + Math.floor(rand() * 12);
    for (let i = 0; i < len; i++) q += alphabet[Math.floor(rand() * alphabet.length)];
    const r = parseSearchQuery(q);
    if (!r.ok) continue;
    parsed++;
    t.notThrows(() => find.all(r.query.match), `${JSON.stringify(q)} → ${r.query.match}`);
  }
  t.true(parsed > 50, `${parsed} of 400 parsed`);
});
