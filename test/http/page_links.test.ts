import test from 'ava';
import { pageLinks, parseQuery } from '../../src/http/page_links.js';

// Expected URLs were produced by DRF's replace_query_param/remove_query_param
// logic (parse_qs + urlencode(sorted(...), doseq=True)) under Python 3.
const BASE = 'http://h/api/v1/results';

test('examples from the ARA reference', (t) => {
  t.deepEqual(pageLinks('http://127.0.0.1:8001/api/v1/results', 'limit=2&status=ok&status=changed&foo=bar', 10, 2, 0), {
    next: 'http://127.0.0.1:8001/api/v1/results?foo=bar&limit=2&offset=2&status=ok&status=changed',
    previous: null,
  });
  t.is(
    pageLinks(BASE, 'created_after=2020-01-01T00:00:00Z&limit=1', 5, 1, 0).next,
    `${BASE}?created_after=2020-01-01T00%3A00%3A00Z&limit=1&offset=1`,
  );
  t.deepEqual(pageLinks(BASE, 'limit=2&offset=2', 10, 2, 2), {
    next: `${BASE}?limit=2&offset=4`,
    previous: `${BASE}?limit=2`,
  });
  t.deepEqual(pageLinks(BASE, 'offset=2', 10, 100, 2), { next: null, previous: `${BASE}?limit=100` });
  // Offset beyond the end: previous is offset - limit as is.
  t.deepEqual(pageLinks(BASE, 'limit=2&offset=100', 10, 2, 100), { next: null, previous: `${BASE}?limit=2&offset=98` });
});

test('next and previous boundaries', (t) => {
  t.deepEqual(pageLinks(BASE, '', 0, 100, 0), { next: null, previous: null });
  t.deepEqual(pageLinks(BASE, '', 100, 100, 0), { next: null, previous: null });
  t.deepEqual(pageLinks(BASE, '', 101, 100, 0), { next: `${BASE}?limit=100&offset=100`, previous: null });
  t.deepEqual(pageLinks(BASE, 'limit=3&offset=3', 7, 3, 3), {
    next: `${BASE}?limit=3&offset=6`,
    previous: `${BASE}?limit=3`,
  });
  t.deepEqual(pageLinks(BASE, 'limit=3&offset=4', 7, 3, 4), { next: null, previous: `${BASE}?limit=3&offset=1` });
  // offset - limit < 0 also drops offset.
  t.deepEqual(pageLinks(BASE, 'limit=5&offset=1', 3, 5, 1), { next: null, previous: `${BASE}?limit=5` });
});

test('every other parameter is kept, sorted by name, repeats in order', (t) => {
  const links = pageLinks(BASE, 'status=failed&order=-started&zeta=&status=ok&Z=1&_=2&limit=2&lim=3&limits=1&offset=5', 20, 2, 5);
  t.is(links.next, `${BASE}?Z=1&_=2&lim=3&limit=2&limits=1&offset=7&order=-started&status=failed&status=ok&zeta=`);
  t.is(links.previous, `${BASE}?Z=1&_=2&lim=3&limit=2&limits=1&offset=3&order=-started&status=failed&status=ok&zeta=`);
  // Parameters sorting after `offset` when offset is dropped.
  t.is(pageLinks(BASE, 'offset=1&p=1&m=2', 20, 1, 1).previous, `${BASE}?limit=1&m=2&p=1`);
});

test('values re-encoded like Python quote_plus', (t) => {
  const q = "name=a+b%20c&x=%zz&y=%E2%82%AC&z=%E2%82&w=caf%C3%A9&&flag&=e&%7E=~!*'()";
  t.is(
    pageLinks(BASE, q, 20, 2, 5).next,
    `${BASE}?=e&flag=&limit=2&name=a+b+c&offset=7&w=caf%C3%A9&x=%25zz&y=%E2%82%AC&z=%EF%BF%BD&~=~%21%2A%27%28%29`,
  );
  t.is(
    pageLinks(BASE, q, 20, 2, 5).previous,
    `${BASE}?=e&flag=&limit=2&name=a+b+c&offset=3&w=caf%C3%A9&x=%25zz&y=%E2%82%AC&z=%EF%BF%BD&~=~%21%2A%27%28%29`,
  );
  t.is(
    pageLinks(BASE, 'q=%2B1&a=é&b=%F0%9F%98%80&c=😀&path=/a/b?c#d&k=%3d%3D', 20, 2, 0).next,
    `${BASE}?a=%C3%A9&b=%F0%9F%98%80&c=%F0%9F%98%80&k=%3D%3D&limit=2&offset=2&path=%2Fa%2Fb%3Fc%23d&q=%2B1`,
  );
  t.is(pageLinks(BASE, 'a=%e2%82%ac%41', 20, 2, 0).next, `${BASE}?a=%E2%82%ACA&limit=2&offset=2`);
  // A lone surrogate cannot come from UTF-8 but must not throw.
  t.is(pageLinks(BASE, 'a=\ud800x', 20, 2, 0).next, `${BASE}?a=%EF%BF%BDx&limit=2&offset=2`);
});

test('names sort by code point, as Python sorts str', (t) => {
  // U+FF5E sorts before U+1F600 by code point, after it by UTF-16 unit.
  t.is(pageLinks(BASE, '%F0%9F%98%80=1&%EF%BD%9E=2', 20, 2, 0).next, `${BASE}?limit=2&offset=2&%EF%BD%9E=2&%F0%9F%98%80=1`);
});

test('parseQuery follows parse_qsl(keep_blank_values=True)', (t) => {
  t.deepEqual(
    [...parseQuery("name=a+b%20c&x=%zz&y=%E2%82%AC&z=%E2%82&w=caf%C3%A9&&flag&=e&%7E=~!*'()")],
    [
      ['name', ['a b c']],
      ['x', ['%zz']],
      ['y', ['€']],
      ['z', ['\ufffd']],
      ['w', ['café']],
      ['flag', ['']],
      ['', ['e']],
      ['~', ["~!*'()"]],
    ],
  );
  t.deepEqual([...parseQuery('status=ok&status=changed&a=1&status=failed')], [
    ['status', ['ok', 'changed', 'failed']],
    ['a', ['1']],
  ]);
  t.deepEqual([...parseQuery('')], []);
  t.deepEqual([...parseQuery('&&&')], []);
  t.deepEqual([...parseQuery('=')], [['', ['']]]);
  t.deepEqual([...parseQuery('a==b=c')], [['a', ['=b=c']]]);
  t.deepEqual([...parseQuery('q=%2B1+2')], [['q', ['+1 2']]]);
  // Malformed or truncated escapes are kept literally.
  t.deepEqual([...parseQuery('a=%&b=%4&c=100%&d=%%41&e=%4g')], [
    ['a', ['%']],
    ['b', ['%4']],
    ['c', ['100%']],
    ['d', ['%A']],
    ['e', ['%4g']],
  ]);
  // Bytes split by `+` or a literal character are decoded separately.
  t.deepEqual([...parseQuery('a=%E2+%82&b=%E2%82%ACx%E2%82%AC')], [
    ['a', ['\ufffd \ufffd']],
    ['b', ['€x€']],
  ]);
  // `;` is not a separator.
  t.deepEqual([...parseQuery('a=1;b=2')], [['a', ['1;b=2']]]);
  // An escape at the very end of a segment does not read into the next one.
  t.deepEqual([...parseQuery('a=%4&1=x')], [
    ['a', ['%4']],
    ['1', ['x']],
  ]);
});

test('long escaped values decode past the reused byte buffer', (t) => {
  const value = 'é'.repeat(1000) + ' ' + '€'.repeat(1000);
  const raw = 'v=' + encodeURIComponent(value).replace(/%20/g, '+');
  t.deepEqual(parseQuery(raw).get('v'), [value]);
  t.is(parseQuery('v=' + '%41'.repeat(5000)).get('v')![0], 'A'.repeat(5000));
});

test('past the offset cap the links carry a cursor naming the boundary row; within it, offsets as before', (t) => {
  const cursorOf = (link: string | null) => JSON.parse(Buffer.from(new URL(link!).searchParams.get('cursor')!, 'base64url').toString());
  const rows = [['b', 7, '{}'], ['c', 3, '{}'], ['c', 9, '{}']];
  // an offset page at the cap: next would pass it
  let l = pageLinks(BASE, 'order=name&offset=6&limit=3', 20, 3, 6, { maxOffset: 6, rows });
  t.deepEqual(cursorOf(l.next), [0, 'c', 9], 'next: after the last row');
  t.is(l.next, `${BASE}?cursor=${new URL(l.next!).searchParams.get('cursor')}&limit=3&order=name`, 'sorted place, no offset');
  t.is(l.previous, `${BASE}?limit=3&offset=3&order=name`);
  // a keyset page deep in the list: both links are cursors, the offset was counted
  l = pageLinks(BASE, 'order=name&cursor=abc&offset=1', 20, 3, 12, { maxOffset: 6, rows, counted: true });
  t.deepEqual(cursorOf(l.next), [0, 'c', 9]);
  t.deepEqual(cursorOf(l.previous), [1, 'b', 7], 'previous: before the first row');
  t.notRegex(l.next! + l.previous!, /offset=|cursor=abc/);
  // a counted page short of `limit` (rows deleted meanwhile): next starts right after it
  l = pageLinks(BASE, 'cursor=abc', 20, 3, 0, { maxOffset: 6, rows: rows.slice(0, 2), counted: true });
  t.is(l.next, `${BASE}?limit=3&offset=2`);
  t.is(l.previous, null);
  // an empty counted page has no next
  t.deepEqual(pageLinks(BASE, 'cursor=abc', 20, 3, 20, { maxOffset: 6, rows: [], counted: true }).next, null);
});
