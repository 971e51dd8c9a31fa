// What a search document's text is (src/search/extract.ts): every string of its
// JSON values with the path it sits at, its own text fields first, Ansible's
// doubled output (stdout and stdout_lines) once, and snippets that mark the
// words a person searched for.
import test from 'ava';
import { fieldAt, snippet, textOf } from '../../src/search/extract.js';
import type { SearchDoc } from '../../src/shard/search_feed.js';

const doc = (text: Array<[string, string]>, json: Array<[string, string]>): SearchDoc => ({
  t: 5, id: 1, p: 1, created: 0, host: '', task: '', play: '', playbook: '', path: '', status: '', label: '', action: '', text, json,
});

test('every string of the JSON with its path; numbers and booleans as text; stdout_lines not twice', (t) => {
  const content = JSON.stringify({ msg: 'disk full', rc: 2, ok: false, stdout: 'a\nb', stdout_lines: ['a', 'b'], results: [{ item: 'nginx' }], stderr_lines: ['only lines'] });
  const { body, spans } = textOf(doc([['name', 'Check disk']], [['content', content]]));
  t.deepEqual(spans.map(([f]) => f), ['name', 'content.msg', 'content.rc', 'content.ok', 'content.stdout', 'content.results.0.item', 'content.stderr_lines.0']);
  t.is(body, 'Check disk\ndisk full\n2\nfalse\na\nb\nnginx\nonly lines');
  t.is(fieldAt(spans, body.indexOf('nginx')), 'content.results.0.item');
  t.is(fieldAt(spans, 0), 'name');
});

test('text that is not JSON is indexed as it is', (t) => {
  t.is(textOf(doc([], [['value', '{not json']])).body, '{not json');
});

test('snippets mark whole words (or a prefix) and keep some context, on one line', (t) => {
  const text = `${'x '.repeat(50)}the permission was denied\nagain`;
  const s = snippet(text, [{ text: 'denied', prefix: false }])!.snippet;
  t.regex(s, /^…[x ]+the permission was «denied» again$/, 'cut before, the line break a space');
  t.true(s.length < 90, s);
  t.is(snippet('undenied denied', [{ text: 'denied', prefix: false }])!.snippet, 'undenied «denied»');
  t.is(snippet('permissions', [{ text: 'perm', prefix: true }])!.snippet, '«permissions»');
  t.is(snippet('nothing here', [{ text: 'denied', prefix: false }]), null);
  t.is(snippet('Grüße Welt', [{ text: 'grüße', prefix: false }])!.snippet, '«Grüße» Welt');
});
