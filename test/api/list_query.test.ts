// Query string of a list → normalized filters, order and window (SPEC §5), with
// the django-filter wording of reference/ara-1.4-behaviors.md §1.11 for bad values.
import test from 'ava';
import { parseListQuery, toShardQuery, type ParsedList } from '../../src/api/list_query.js';
import { parseTimestamp } from '../../src/api/time.js';
import type { ResourceType } from '../../src/api/resources.js';

const PAGES = { pageSize: 100, maxPageSize: 1000, maxListOffset: 100_000 };
const EPOCH_2020 = parseTimestamp('2020-01-01T00:00:00Z')!;

/** `a=1&a=2&b=` → the Map the front builds (repeated keys keep every value, in order). */
function params(query: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [k, v] of new URLSearchParams(query)) {
    const list = out.get(k);
    if (list) list.push(v); else out.set(k, [v]);
  }
  return out;
}

type Ok = Extract<ParsedList, { ok: true }>;
function ok(t: { fail(msg: string): void }, type: ResourceType, query: string, pages = PAGES): Ok {
  const r = parseListQuery(type, params(query), pages);
  if (!r.ok) { t.fail(`${type}?${query} → 400 ${r.body}`); throw new Error('unreachable'); }
  return r;
}
function bad(type: ResourceType, query: string, pages = PAGES): string | null {
  const r = parseListQuery(type, params(query), pages);
  return r.ok ? null : r.body;
}

const enterNumber = 'Enter a number.';
const enterDatetime = 'Enter a valid date/time.';
const choice = (v: string) => `Select a valid choice. ${v} is not one of the available choices.`;

// ---- filters, by kind ----------------------------------------------------------

test('no parameters: no filters, natural order, default window', (t) => {
  const r = ok(t, 'result', '');
  t.deepEqual(r, { ok: true, filters: [], order: [], limit: 100, offset: 0, cursor: null, playbook: null, search: null });
});

test('q= is kept for the search index to resolve (docs/search.md); empty is no search; labels refuse it', (t) => {
  t.is(ok(t, 'result', 'q=%22permission%20denied%22&status=failed').search, '"permission denied"');
  t.is(ok(t, 'host', 'q=').search, null);
  t.deepEqual(JSON.parse(bad('label', 'q=prod')!), { q: ['Unknown query parameter.'] });
});

test('date filters: inclusive bounds in µs, any accepted timestamp form, date alone = midnight UTC', (t) => {
  const r = ok(t, 'playbook', 'created_after=2020-01-01T00:00:00Z&updated_before=2020-01-01T01:00:00%2B01:00'
    + '&started_after=2020-01-01 00:00&ended_before=2020-01-01');
  t.deepEqual(r.filters, [
    { kind: 'date_after', column: 'created', value: EPOCH_2020 },
    { kind: 'date_before', column: 'updated', value: EPOCH_2020 },
    { kind: 'date_after', column: 'started', value: EPOCH_2020 },
    { kind: 'date_before', column: 'ended', value: EPOCH_2020 },
  ]);
  t.deepEqual(ok(t, 'host', 'created_before=2020-01-01T00:00:00.0000019').filters,
    [{ kind: 'date_before', column: 'created', value: EPOCH_2020 + 1 }]);
  for (const v of ['yesterday', '2020-13-01', '2020-01-01T25:00', '1577836800', 'now']) {
    t.is(bad('result', `started_before=${v}`), JSON.stringify({ started_before: [enterDatetime] }), v);
  }
  // hosts, files, records and labels have no started/ended filters: not read (ARA's dialect ignores them)
  t.is(bad('host', 'started_after=garbage'), '{"started_after":["Unknown query parameter."]}');
  const ara = parseListQuery('label', params('ended_before=garbage'), PAGES, true);
  t.true(ara.ok && ara.filters.length === 0);
});

test('id filters read a decimal, like django-filter NumberFilter; the playbook is reported', (t) => {
  for (const [v, n] of [['7', 7], [' 7', 7], ['7.0', 7], ['7e0', 7], ['7.9', 7], ['-1', -1], ['0', 0]] as const) {
    const r = ok(t, 'result', `playbook=${encodeURIComponent(v)}`);
    t.deepEqual(r.filters, [{ kind: 'id', column: 'playbook', value: n }], v);
    t.is(r.playbook, n, v);
  }
  const r = ok(t, 'result', 'play=3&task=4&host=5');
  t.deepEqual(r.filters, [
    { kind: 'id', column: 'play', value: 3 }, { kind: 'id', column: 'task', value: 4 }, { kind: 'id', column: 'host', value: 5 },
  ]);
  t.is(r.playbook, null, 'only the playbook filter pins a shard');
  for (const v of ['abc', '1a', 'NaN', 'Infinity', '-Infinity', ' ', '1,5']) {
    t.is(bad('task', `play=${encodeURIComponent(v)}`), JSON.stringify({ play: [enterNumber] }), JSON.stringify(v));
  }
});

test('id filters reject JavaScript-only number forms (hex, binary, octal) as a decimal parser would', (t) => {
  // Python's Decimal('0x10') raises, so django-filter answers "Enter a number." (ara-1.4-behaviors §1.11);
  // JavaScript's Number('0x10') is 16.
  for (const v of ['0x10', '0b1', '0o7']) {
    t.is(bad('result', `playbook=${v}`), JSON.stringify({ playbook: [enterNumber] }), v);
  }
});

test('host counter filters: __gt and __lt for each counter', (t) => {
  const r = ok(t, 'host', 'failed__gt=0&ok__lt=10&changed__gt=1.5&skipped__lt=2&unreachable__gt=3');
  t.deepEqual(r.filters, [
    { kind: 'int_gt', column: 'changed', value: 1.5 },
    { kind: 'int_gt', column: 'failed', value: 0 },
    { kind: 'int_lt', column: 'ok', value: 10 },
    { kind: 'int_lt', column: 'skipped', value: 2 },
    { kind: 'int_gt', column: 'unreachable', value: 3 },
  ]);
  t.is(bad('host', 'failed__gt=x'), JSON.stringify({ failed__gt: [enterNumber] }));
  t.is(bad('result', 'failed__gt=x'), '{"failed__gt":["Unknown query parameter."]}', 'not a result filter');
});

test('text filters: icontains and iexact lower-cased, exact kept as sent', (t) => {
  t.deepEqual(ok(t, 'playbook', 'name=Deploy&path=/SRC/&controller=CTL&user=Bob').filters, [
    { kind: 'icontains', column: 'name', value: 'deploy' },
    { kind: 'icontains', column: 'path', value: '/src/' },
    { kind: 'icontains', column: 'controller', value: 'ctl' },
    { kind: 'icontains', column: 'user', value: 'bob' },
  ]);
  t.deepEqual(ok(t, 'task', 'action=Ansible.Builtin.Copy&path=Roles&name=X').filters, [
    { kind: 'icontains', column: 'name', value: 'x' },
    { kind: 'iexact', column: 'action', value: 'ansible.builtin.copy' },
    { kind: 'icontains', column: 'path', value: 'roles' },
  ]);
  t.deepEqual(ok(t, 'record', 'key=MyKey').filters, [{ kind: 'exact', column: 'key', value: 'MyKey' }]);
  t.deepEqual(ok(t, 'file', 'path=Main.YML').filters, [{ kind: 'icontains', column: 'path', value: 'main.yml' }]);
  t.deepEqual(ok(t, 'label', 'name=Prod').filters, [{ kind: 'icontains', column: 'name', value: 'prod' }]);
  t.deepEqual(ok(t, 'host', 'name=WEB').filters, [{ kind: 'icontains', column: 'name', value: 'web' }]);
});

test('playbook label filter (case-insensitive) and runner_version with its alias ansible_version', (t) => {
  t.deepEqual(ok(t, 'playbook', 'label=Prod').filters, [{ kind: 'label', column: 'labels', value: 'prod' }]);
  t.deepEqual(ok(t, 'playbook', 'runner_version=2.14').filters, [{ kind: 'icontains', column: 'runner_version', value: '2.14' }]);
  t.deepEqual(ok(t, 'playbook', 'ansible_version=2.9').filters, [{ kind: 'icontains', column: 'runner_version', value: '2.9' }]);
});

test('uuid filter normalizes any standard form; a bad one is "Enter a valid UUID."', (t) => {
  const want = [{ kind: 'uuid', column: 'uuid', value: '5e0c9a5e-1234-4abc-8def-0123456789ab' }];
  t.deepEqual(ok(t, 'play', 'uuid=5E0C9A5E-1234-4ABC-8DEF-0123456789AB').filters, want);
  t.deepEqual(ok(t, 'play', 'uuid=5e0c9a5e12344abc8def0123456789ab').filters, want);
  t.deepEqual(ok(t, 'play', 'uuid=%7B5e0c9a5e-1234-4abc-8def-0123456789ab%7D').filters, want);
  t.deepEqual(ok(t, 'play', 'uuid=urn:uuid:5e0c9a5e-1234-4abc-8def-0123456789ab').filters, want);
  t.is(bad('play', 'uuid=nope'), '{"uuid":["Enter a valid UUID."]}');
});

test('boolean filters accept true/false/1/0 in any case; anything else is a choice error', (t) => {
  for (const [v, b] of [['true', true], ['TRUE', true], ['True', true], ['1', true], ['false', false], ['FaLsE', false], ['0', false]] as const) {
    t.deepEqual(ok(t, 'result', `changed=${v}`).filters, [{ kind: 'bool', column: 'changed', value: b }], v);
  }
  t.deepEqual(ok(t, 'result', 'ignore_errors=0').filters, [{ kind: 'bool', column: 'ignore_errors', value: false }]);
  t.deepEqual(ok(t, 'task', 'handler=1').filters, [{ kind: 'bool', column: 'handler', value: true }]);
  t.is(bad('result', 'changed=yes'), JSON.stringify({ changed: [choice('yes')] }));
  t.is(bad('task', 'handler=2'), JSON.stringify({ handler: [choice('2')] }));
});

test('status is repeatable (OR), checked case-sensitively against the resource choices', (t) => {
  t.deepEqual(ok(t, 'result', 'status=changed&status=ignored&status=ok').filters,
    [{ kind: 'status', column: 'status', value: ['changed', 'ignored', 'ok'] }]);
  t.deepEqual(ok(t, 'playbook', 'status=running').filters, [{ kind: 'status', column: 'status', value: ['running'] }]);
  t.is(bad('result', 'status=FAILED'), JSON.stringify({ status: [choice('FAILED')] }));
  t.is(bad('playbook', 'status=ok'), JSON.stringify({ status: [choice('ok')] }), 'ok is a result status, not a run status');
  t.is(bad('task', 'status=completed&status=bogus&status=nope'), JSON.stringify({ status: [choice('bogus')] }));
  // the empty value is the one empty value that is not ignored (two spaces in the message)
  t.is(bad('result', 'status='), '{"status":["Select a valid choice.  is not one of the available choices."]}');
  t.is(bad('play', 'status=running&status='), '{"status":["Select a valid choice.  is not one of the available choices."]}');
});

test('empty values are ignored, except status', (t) => {
  const r = ok(t, 'result', 'playbook=&play=&created_after=&changed=&order=');
  t.deepEqual(r.filters, []);
  t.deepEqual(r.order, []);
  t.is(r.playbook, null);
  t.deepEqual(ok(t, 'playbook', 'name=&label=&path=&ansible_version=').filters, []);
  t.deepEqual(ok(t, 'play', 'uuid=').filters, []);
  t.deepEqual(ok(t, 'host', 'failed__gt=').filters, []);
});

test('a parameter no list reads is a 400 naming it, after the bad values; ARA\'s dialect ignores it', (t) => {
  // `/results?content=x` answered every result: a user took it for a filter that matched
  t.is(bad('result', 'content=x'), '{"content":["Unknown query parameter."]}');
  t.is(bad('result', 'foo=bar&format=json&name=x&status=nope'),
    `{"status":["${choice('nope')}"],"foo":["Unknown query parameter."],"name":["Unknown query parameter."]}`);
  // a filter of another resource is unknown here
  t.is(bad('file', 'key=x'), '{"key":["Unknown query parameter."]}');
  const ara = parseListQuery('result', params('foo=bar&format=json&name=x&status=ok'), PAGES, true);
  t.true(ara.ok);
  if (ara.ok) t.deepEqual(ara.filters, [{ kind: 'status', column: 'status', value: ['ok'] }]);
  // the window and `format` (DRF's format override; every answer is JSON) are read by every list
  t.deepEqual(ok(t, 'label', 'format=json&limit=5&offset=1&order=name').order, [['name', false]]);
});

test('ARA\'s filters through parents and of task lists (ara/api/filters.py)', (t) => {
  t.deepEqual(ok(t, 'task', 'playbook_name=Deploy&playbook_path=site&lineno=12&warnings_count__gt=0&exceptions_count__lt=2.5').filters, [
    { kind: 'icontains', column: 'playbook_name', value: 'deploy' },
    { kind: 'icontains', column: 'playbook_path', value: 'site' },
    { kind: 'id', column: 'lineno', value: 12 },
    { kind: 'int_lt', column: 'exceptions_count', value: 2.5 },
    { kind: 'int_gt', column: 'warnings_count', value: 0 },
  ]);
  t.deepEqual(ok(t, 'host', 'playbook_name=x').filters, [{ kind: 'icontains', column: 'playbook_name', value: 'x' }]);
  t.deepEqual(ok(t, 'result', 'task_name=Ping&host_name=Web1&delegated_to=3').filters, [
    { kind: 'icontains', column: 'task_name', value: 'ping' },
    { kind: 'iexact', column: 'host_name', value: 'web1' },
    { kind: 'has_id', column: 'delegated_to', value: 3 },
  ]);
  t.deepEqual(ok(t, 'playbook', 'server_version=1.').filters, [{ kind: 'icontains', column: 'server_version', value: '1.' }]);
  t.is(bad('task', 'lineno=ten&warnings_count__gt=x'), `{"lineno":["${enterNumber}"],"warnings_count__gt":["${enterNumber}"]}`);
});

test('a repeated parameter takes its last value', (t) => {
  t.deepEqual(ok(t, 'result', 'playbook=1&playbook=2').filters, [{ kind: 'id', column: 'playbook', value: 2 }]);
  t.deepEqual(ok(t, 'playbook', 'order=name&order=-id').order, [['id', true]]);
});

test('every bad parameter at once, keys in the FilterSet declared order then order, limit, offset', (t) => {
  // the example of ara-1.4-behaviors.md §1.11
  t.is(bad('result', 'status=bogus&playbook=abc&created_after=yesterday&order=nope'),
    '{"created_after":["Enter a valid date/time."],"playbook":["Enter a number."],'
    + '"status":["Select a valid choice. bogus is not one of the available choices."],'
    + '"order":["Select a valid choice. nope is not one of the available choices."]}');
  const body = bad('host', 'offset=x&limit=0&order=bad&ok__lt=z&playbook=q&updated_before=w');
  t.deepEqual(Object.keys(JSON.parse(body!)), ['updated_before', 'playbook', 'ok__lt', 'order', 'limit', 'offset']);
});

// ---- order -------------------------------------------------------------------------

test('order: keys per resource, - for descending, several keys, order=id is the natural order', (t) => {
  t.deepEqual(ok(t, 'playbook', 'order=-started,name').order, [['started', true], ['name', false]]);
  t.deepEqual(ok(t, 'playbook', 'order=status,-duration,ended').order, [['status', false], ['duration', true], ['ended', false]]);
  t.deepEqual(ok(t, 'host', 'order=-failed,name').order, [['failed', true], ['name', false]]);
  t.deepEqual(ok(t, 'file', 'order=path').order, [['path', false]]);
  t.deepEqual(ok(t, 'record', 'order=-key').order, [['key', true]]);
  t.deepEqual(ok(t, 'label', 'order=name').order, [['name', false]]);
  t.deepEqual(ok(t, 'result', 'order=-updated').order, [['updated', true]]);
  t.deepEqual(ok(t, 'task', 'order=created').order, [['created', false]]);
  t.deepEqual(ok(t, 'result', 'order=id').order, [], 'ascending id is what the shards return anyway');
  t.deepEqual(ok(t, 'result', 'order=-id').order, [['id', true]]);
  t.deepEqual(ok(t, 'result', 'order=started,id').order, [['started', false], ['id', false]]);
});

test('order: an unknown key, in any position, is a 400 naming it', (t) => {
  t.is(bad('playbook', 'order=nope'), JSON.stringify({ order: [choice('nope')] }));
  t.is(bad('play', 'order=started,-bogus'), JSON.stringify({ order: [choice('bogus')] }), 'the key without its -');
  t.is(bad('result', 'order=name'), JSON.stringify({ order: [choice('name')] }), 'results have no name key');
  t.is(bad('record', 'order=path'), JSON.stringify({ order: [choice('path')] }));
  t.is(bad('host', 'order=started'), JSON.stringify({ order: [choice('started')] }));
  t.is(bad('label', 'order=started'), JSON.stringify({ order: [choice('started')] }));
  t.is(bad('file', 'order=-ID'), JSON.stringify({ order: [choice('ID')] }), 'case-sensitive');
  t.is(bad('file', 'order= id'), JSON.stringify({ order: [choice(' id')] }), 'not trimmed');
});

// ---- limit / offset -------------------------------------------------------------------

test('limit and offset: defaults, values, clamping to max_page_size', (t) => {
  t.deepEqual([ok(t, 'result', 'limit=5&offset=10').limit, ok(t, 'result', 'limit=5&offset=10').offset], [5, 10]);
  t.is(ok(t, 'result', '').limit, 100);
  t.is(ok(t, 'result', '', { pageSize: 25, maxPageSize: 50, maxListOffset: 100_000 }).limit, 25);
  t.is(ok(t, 'result', 'limit=1000').limit, 1000);
  t.is(ok(t, 'result', 'limit=1001').limit, 1000);
  t.is(ok(t, 'result', 'limit=99999999999999999999999').limit, 1000);
  t.is(ok(t, 'result', 'limit=51', { pageSize: 25, maxPageSize: 50, maxListOffset: 100_000 }).limit, 50);
  t.is(ok(t, 'result', 'offset=0').offset, 0);
  t.is(ok(t, 'result', 'offset=100000').offset, 100000);
  t.is(ok(t, 'result', 'limit=007').limit, 7);
});

test('limit and offset: not a non-negative integer (limit ≥ 1) is a 400 on that parameter', (t) => {
  const min = (n: number) => `Ensure this value is greater than or equal to ${n}.`;
  t.is(bad('result', 'limit=0'), JSON.stringify({ limit: [min(1)] }));
  t.is(bad('result', 'limit=-1'), JSON.stringify({ limit: [min(1)] }));
  t.is(bad('result', 'offset=-1'), JSON.stringify({ offset: [min(0)] }));
  for (const v of ['abc', '1.5', '1e2', '0x10']) {
    t.is(bad('result', `limit=${encodeURIComponent(v)}`), JSON.stringify({ limit: ['A valid integer is required.'] }), v);
    t.is(bad('result', `offset=${encodeURIComponent(v)}`), JSON.stringify({ offset: ['A valid integer is required.'] }), v);
  }
  t.is(bad('result', 'limit=x&offset=y'), '{"limit":["A valid integer is required."],"offset":["A valid integer is required."]}');
});

// ---- to the shards ------------------------------------------------------------------------

test('toShardQuery: one shard cuts the page, several each send their first offset+limit rows', (t) => {
  const parsed = ok(t, 'result', 'playbook=3&order=-started&limit=10&offset=20');
  t.deepEqual(toShardQuery('result', parsed, true), {
    type: 'result', filters: [{ kind: 'id', column: 'playbook', value: 3 }], order: [['started', true]], skip: 20, take: 10,
  });
  const all = toShardQuery('result', parsed, false);
  t.is(all.skip, 0);
  t.is(all.take, 30);
});

test('offset above the cap (LOGBOOK_MAX_LIST_OFFSET) is a 400 naming the limit and the ways on', (t) => {
  const body = JSON.parse(bad('result', 'offset=100001')!) as { offset: string[] };
  t.deepEqual(Object.keys(body), ['offset']);
  t.regex(body.offset[0]!, /less than or equal to 100000\..*`next` links.*cursor.*filters.*order=-id/);
  t.truthy(bad('playbook', 'offset=99999999999999999999999'));
  t.is(bad('result', 'offset=100000'), null);
  t.regex(bad('result', 'offset=11', { pageSize: 100, maxPageSize: 1000, maxListOffset: 10 })!, /less than or equal to 10\./);
});

test('cursor: one of ours for this order is a keyset page; anything else is a 400 on cursor; offset beside it is ignored', (t) => {
  const enc = (a: unknown) => Buffer.from(JSON.stringify(a)).toString('base64url');
  const r = ok(t, 'result', `order=-started&cursor=${enc([0, 1700000000000000, 42])}&offset=999999999`);
  t.deepEqual(r.cursor, { back: false, keys: [1700000000000000, 42] });
  t.is(r.offset, 0);
  t.deepEqual(toShardQuery('result', r, false), {
    type: 'result', filters: [], order: [['started', true]], skip: 0, take: 100, bound: { keys: [1700000000000000, 42], back: false },
  });
  t.deepEqual(ok(t, 'host', `order=name,-failed&cursor=${enc([1, 'web', null, 7])}`).cursor, { back: true, keys: ['web', null, 7] });
  t.deepEqual(ok(t, 'result', `cursor=${enc([0, 5])}&order=id`).cursor, { back: false, keys: [5] }, 'order=id is the natural order: one key, the id');
  const invalid = JSON.stringify({ cursor: ['Invalid cursor.'] });
  for (const c of [enc([0, 5]) + '=', 'not json', enc({ back: 0 }), enc([0, 1, 5]), enc([2, 5]), enc([0, 0]), enc([0, 1.5]), enc([0, true, 5].slice(1)), enc([0, [1], 5]), '']) {
    t.is(bad('result', `order=started&cursor=${encodeURIComponent(c)}`) ?? bad('result', `cursor=${encodeURIComponent(c)}`), invalid, c);
  }
  t.is(bad('result', `cursor=${enc([0, 1, 5])}`), invalid, 'a cursor for a one-key order on the natural order');
});
