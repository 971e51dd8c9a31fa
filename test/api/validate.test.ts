// Request bodies → normalized field values or DRF-style field errors (SPEC §3, §6),
// with the message catalogue of src/api/errors.ts and the wording of
// reference/ara-1.4-behaviors.md §1.4, §1.9 and §6.
import test from 'ava';
import { BodyNormalizer, type Normalized, type Redaction } from '../../src/api/validate.js';
import { compileWriteValidators, type CompiledWrite, type WriteMode } from '../../src/api/schemas.js';
import { Errors, Messages } from '../../src/api/errors.js';
import { RESOURCE_TYPES, WRITE_FIELDS, type ResourceType } from '../../src/api/resources.js';
import { parseTimestamp } from '../../src/api/time.js';

const DEFAULT_REDACTION: Redaction = { ignoredFacts: ['ansible_env'], ignoredArguments: ['extra_vars'] };
const validators = compileWriteValidators();
const normalizer = new BodyNormalizer(validators, DEFAULT_REDACTION);

/** The same normalizer with every compiled check failing: the slow path for every body. */
const slowValidators = Object.fromEntries(RESOURCE_TYPES.map((type) => [type, {
  create: { Check: () => false }, put: { Check: () => false }, patch: { Check: () => false },
}])) as unknown as Record<ResourceType, Record<WriteMode, CompiledWrite>>;
const slow = new BodyNormalizer(slowValidators, DEFAULT_REDACTION);

const norm = (type: ResourceType, mode: WriteMode, text: string, n: BodyNormalizer = normalizer): Normalized =>
  n.normalize(type, mode, JSON.parse(text), text);
/** The 400 body the front would send for these errors. */
const errorBody = (type: ResourceType, r: Normalized): string | null => (r.errors ? Errors.fields(r.errors, WRITE_FIELDS[type]) : null);

const T = '2026-11-22T06:02:58.934994Z';
const T_US = parseTimestamp(T)!;
const UUID = '5e0c9a5e-1234-4abc-8def-0123456789ab';

// ---- fast path = slow path -----------------------------------------------------------

/** Bodies in the canonical form the ARA callback sends. */
const CANONICAL: Array<[ResourceType, WriteMode, string]> = [
  ['label', 'create', '{"name":"prod"}'],
  ['playbook', 'create', `{"runner_version":"2.14.1","path":"/src/site.yml","name":null,"status":"running","started":"${T}","arguments":{"check":false,"extra_vars":{"pw":"x"}},"labels":["a","b","a"],"controller":"ctl","user":"bob"}`],
  ['playbook', 'patch', `{"status":"completed","ended":"${T}"}`],
  ['playbook', 'patch', '{"labels":[]}'],
  ['playbook', 'put', '{"runner_version":"2.14.1","path":"/src/site.yml"}'],
  ['play', 'create', `{"name":"Deploy","uuid":"${UUID.toUpperCase()}","started":"${T}","playbook":1,"status":"running"}`],
  ['play', 'patch', `{"status":"completed","ended":"2026-11-22 07:00:00+01:00"}`],
  ['task', 'create', `{"name":"copy","action":"ansible.builtin.copy","lineno":12,"tags":["a","b"],"handler":false,"started":"${T}","play":2,"file":3,"playbook":1,"status":"running"}`],
  ['task', 'put', '{"action":"x","lineno":1,"handler":true,"play":2,"file":3,"playbook":1}'],
  ['host', 'create', '{"name":"web1","playbook":1}'],
  ['host', 'patch', '{"facts":{"ansible_env":{"HOME":"/root"},"ansible_os_family":"Debian"}}'],
  ['host', 'patch', '{"changed":1,"failed":0,"ok":5,"skipped":2,"unreachable":0}'],
  ['result', 'create', `{"host":4,"task":3,"play":2,"playbook":1,"content":{"changed":true,"ansible_facts":{"ansible_env":{},"x":1}},"started":"${T}","ended":"${T}","status":"ok","changed":true,"ignore_errors":false,"delegated_to":[4,5]}`],
  ['result', 'put', '{"host":4,"task":3,"play":2,"playbook":1}'],
  ['file', 'create', '{"path":"/src/site.yml","content":"- hosts: all\\n","playbook":1}'],
  ['file', 'create', '{"path":"/e","content":"","playbook":1}'],
  ['record', 'create', '{"key":"k","value":{"b":1,"a":[1,2]},"type":"dict","playbook":1}'],
  ['record', 'put', '{"key":"k","type":"str","playbook":1}'],
];

test('canonical bodies pass the compiled check and give what the slow path gives', (t) => {
  for (const [type, mode, text] of CANONICAL) {
    t.true(validators[type][mode].Check(JSON.parse(text)), `${type} ${mode} ${text} is canonical`);
    const fast = norm(type, mode, text);
    t.is(fast.errors, null, `${type} ${mode} ${text}`);
    t.deepEqual(fast, norm(type, mode, text, slow), `${type} ${mode} ${text}`);
  }
});

test('canonical bodies: converted values', (t) => {
  const pb = norm('playbook', 'create', CANONICAL[1]![2]).set;
  t.deepEqual(pb, {
    arguments: `{"check":false,"extra_vars":"Not saved as configured by 'ignored_arguments'"}`,
    labels: ['a', 'b'],
    started: T_US,
    name: null,
    runner_version: '2.14.1',
    status: 'running',
    path: '/src/site.yml',
    controller: 'ctl',
    user: 'bob',
  });
  t.deepEqual(norm('play', 'create', CANONICAL[5]![2]).set,
    { started: T_US, name: 'Deploy', uuid: UUID, status: 'running', playbook: 1 });
  t.deepEqual(norm('play', 'patch', CANONICAL[6]![2]).set,
    { ended: parseTimestamp('2026-11-22T06:00:00Z'), status: 'completed' });
});

test('non-canonical but valid bodies give the same values by either path', (t) => {
  const bodies: Array<[ResourceType, WriteMode, string]> = [
    ['task', 'create', '{"action":"x","lineno":"12","handler":"yes","play":"3","file":" 4 ","playbook":1,"name":7}'],
    ['playbook', 'create', '{"ansible_version":"2.9","path":123,"labels":[1,true,2.5]}'],
    ['host', 'patch', '{"ok":"12.0","failed":3.0,"changed":"+1"}'],
  ];
  for (const [type, mode, text] of bodies) {
    t.false(validators[type][mode].Check(JSON.parse(text)));
    t.deepEqual(norm(type, mode, text), norm(type, mode, text, slow));
  }
});

// ---- coercions (ara-1.4-behaviors §1.4) ------------------------------------------------------

test('FKs accept integers and decimal strings', (t) => {
  const r = norm('result', 'patch', '{"host":"12","task":" 7 ","play":3,"playbook":"1","delegated_to":["4",5]}');
  t.is(r.errors, null);
  t.deepEqual(r.set, { host: 12, task: 7, play: 3, playbook: 1, delegated_to: [4, 5] });
});

test('integers accept integral numbers and decimal strings; 1.5 is not an integer', (t) => {
  const r = norm('host', 'patch', '{"changed":"12","failed":"12.0","ok":12.0,"skipped":"-3","unreachable":"  4 "}');
  t.is(r.errors, null);
  t.deepEqual(r.set, { changed: 12, failed: 12, ok: 12, skipped: -3, unreachable: 4 });
  for (const v of ['1.5', '"1.5"', '"abc"', 'true', '[]', '{}', '""', '"1e3"', '9007199254740993']) {
    const bad = norm('task', 'patch', `{"lineno":${v}}`);
    t.deepEqual(bad.errors, { lineno: [Messages.invalidInt] }, v);
  }
});

test('booleans accept DRF literals', (t) => {
  for (const v of ['true', '"true"', '"True"', '"TRUE"', '"yes"', '"y"', '"on"', '"t"', '"1"', '1', '1.0']) {
    t.deepEqual(norm('task', 'patch', `{"handler":${v}}`).set, { handler: true }, v);
  }
  for (const v of ['false', '"false"', '"False"', '"no"', '"n"', '"off"', '"f"', '"0"', '0']) {
    t.deepEqual(norm('task', 'patch', `{"handler":${v}}`).set, { handler: false }, v);
  }
  for (const v of ['"maybe"', '2', '"2"', '[]', '{}', '""', '"TRUE "']) {
    t.deepEqual(norm('result', 'patch', `{"changed":${v}}`).errors, { changed: [Messages.invalidBool] }, v);
  }
});

test('strings: numbers are stringified like DRF CharField; booleans and containers are not strings', (t) => {
  t.deepEqual(norm('playbook', 'patch', '{"path":123,"name":1.5}').set, { path: '123', name: '1.5' });
  for (const v of ['true', '[]', '{}']) {
    t.deepEqual(norm('playbook', 'patch', `{"name":${v}}`).errors, { name: [Messages.invalidString] }, v);
  }
  t.deepEqual(norm('file', 'create', '{"path":"/x","content":12,"playbook":1}').errors, { content: [Messages.invalidString] });
});

test('uuids in any standard form come out lower-case hyphenated', (t) => {
  for (const v of [UUID, UUID.toUpperCase(), UUID.replaceAll('-', ''), `{${UUID}}`, `urn:uuid:${UUID}`]) {
    t.deepEqual(norm('play', 'patch', JSON.stringify({ uuid: v })).set, { uuid: UUID }, v);
  }
});

test('labels: a list of names, duplicates collapsed, scalars stringified Python-style', (t) => {
  t.deepEqual(norm('playbook', 'patch', '{"labels":["b","a","b"," a "]}').set, { labels: ['b', 'a', ' a '] });
  t.deepEqual(norm('playbook', 'patch', '{"labels":[1,true,false,2.5]}').set, { labels: ['1', 'True', 'False', '2.5'] });
  t.deepEqual(norm('playbook', 'patch', '{"labels":[]}').set, { labels: [] });
});

// ---- the message catalogue --------------------------------------------------------------------

test('every message of the catalogue, word for word', (t) => {
  const cases: Array<[ResourceType, WriteMode, string, Record<string, string[]>]> = [
    ['playbook', 'create', '{}', { runner_version: ['This field is required.'], path: ['This field is required.'] }],
    ['playbook', 'patch', '{"path":null}', { path: ['This field may not be null.'] }],
    ['playbook', 'patch', '{"path":""}', { path: ['This field may not be blank.'] }],
    ['label', 'create', `{"name":"${'x'.repeat(256)}"}`, { name: ['Ensure this field has no more than 255 characters.'] }],
    ['playbook', 'patch', `{"path":"${'p'.repeat(4097)}"}`, { path: ['Ensure this field has no more than 4096 characters.'] }],
    ['result', 'patch', '{"status":"bogus"}', { status: ['"bogus" is not a valid choice.'] }],
    ['result', 'patch', '{"status":5}', { status: ['"5" is not a valid choice.'] }],
    ['result', 'patch', '{"status":true}', { status: ['"True" is not a valid choice.'] }],
    ['playbook', 'patch', '{"status":"ok"}', { status: ['"ok" is not a valid choice.'] }],
    ['task', 'patch', '{"lineno":"abc"}', { lineno: ['A valid integer is required.'] }],
    ['task', 'patch', '{"handler":"maybe"}', { handler: ['Must be a valid boolean.'] }],
    ['playbook', 'patch', '{"name":true}', { name: ['Not a valid string.'] }],
    ['play', 'patch', '{"uuid":"nope"}', { uuid: ['Must be a valid UUID.'] }],
    ['play', 'patch', '{"uuid":12}', { uuid: ['Must be a valid UUID.'] }],
    ['play', 'patch', '{"started":"2020-01-01"}', { started: [Messages.invalidDatetime] }],
    ['play', 'patch', '{"started":"yesterday"}', { started: [Messages.invalidDatetime] }],
    ['play', 'patch', '{"ended":1577836800}', { ended: [Messages.invalidDatetime] }],
    ['play', 'patch', '{"started":"2400-01-01T00:00:00.000001Z","ended":"1699-12-31 23:59"}', {
      started: ['Datetime out of range: 2400-01-01T00:00:00.000001Z (supported: 1700-01-01 to 2250-12-31 UTC).'],
      ended: ['Datetime out of range: 1699-12-31 23:59 (supported: 1700-01-01 to 2250-12-31 UTC).'],
    }],
    ['play', 'patch', '{"playbook":"abc"}', { playbook: ['Incorrect type. Expected pk value, received str.'] }],
    ['result', 'patch', '{"host":true}', { host: ['Incorrect type. Expected pk value, received bool.'] }],
    ['result', 'patch', '{"task":{}}', { task: ['Incorrect type. Expected pk value, received dict.'] }],
    ['result', 'patch', '{"play":[1]}', { play: ['Incorrect type. Expected pk value, received list.'] }],
    ['result', 'patch', '{"play":0}', { play: ['Invalid pk "0" - object does not exist.'] }],
    ['result', 'patch', '{"play":-4}', { play: ['Invalid pk "-4" - object does not exist.'] }],
    ['result', 'patch', '{"play":"-4"}', { play: ['Invalid pk "-4" - object does not exist.'] }],
    // a number that is no id is named as sent (as doubles these print as 12345678901234567000, 9007199254740992, 1e+30)
    ['result', 'patch', '{"play":12345678901234567890}', { play: ['Invalid pk "12345678901234567890" - object does not exist.'] }],
    ['result', 'patch', '{"play" : 9007199254740993 , "task": 1e30}',
      { task: ['Invalid pk "1e30" - object does not exist.'], play: ['Invalid pk "9007199254740993" - object does not exist.'] }],
    ['result', 'patch', '{"play":1.50}', { play: ['Invalid pk "1.50" - object does not exist.'] }],
    ['result', 'patch', '{"play":"12345678901234567890"}', { play: ['Invalid pk "12345678901234567890" - object does not exist.'] }],
    ['result', 'patch', '{"delegated_to":[3, 4 ,12345678901234567890,"x"]}', { delegated_to: ['Invalid pk "12345678901234567890" - object does not exist.'] }],
    ['playbook', 'patch', '{"labels":"abc"}', { labels: ['Expected a list of items but got type "str".'] }],
    ['playbook', 'patch', '{"path":"/\\udc00"}', { path: ['Not a valid string: it contains an unpaired UTF-16 surrogate.'] }],
    ['result', 'patch', '{"delegated_to":5}', { delegated_to: ['Expected a list of items but got type "int".'] }],
    ['result', 'patch', '{"delegated_to":{}}', { delegated_to: ['Expected a list of items but got type "dict".'] }],
    ['result', 'patch', '{"delegated_to":["x"]}', { delegated_to: ['Incorrect type. Expected pk value, received str.'] }],
    ['playbook', 'patch', `{"labels":["ok","${'l'.repeat(256)}"]}`, { labels: ['Ensure this field has no more than 255 characters.'] }],
    ['playbook', 'patch', '{"labels":[{}]}', { labels: ['Not a valid string.'] }],
    // write bounds (docs/api.md#write-bounds): labels per playbook write, counted as sent (DRF's ListField); arguments as stored, in UTF-8 bytes
    ['playbook', 'patch', JSON.stringify({ labels: Array.from({ length: 1001 }, () => 'same') }), { labels: ['Ensure this field has no more than 1000 elements.'] }],
    ['playbook', 'patch', JSON.stringify({ arguments: { v: 'é'.repeat(524_285) } }), { arguments: ['Ensure this field has no more than 1048576 bytes of JSON.'] }],
    ['playbook', 'patch', '{"labels":null}', { labels: ['This field may not be null.'] }],
    ['result', 'patch', '{"content":null}', { content: ['This field may not be null.'] }],
    ['play', 'patch', '{"started":null}', { started: ['This field may not be null.'] }],
  ];
  for (const [type, mode, text, errors] of cases) {
    t.deepEqual(norm(type, mode, text).errors, errors, `${type} ${mode} ${text.slice(0, 60)}`);
    t.deepEqual(norm(type, mode, text, slow).errors, errors, `slow: ${type} ${mode} ${text.slice(0, 60)}`);
  }
  // every message of the catalogue is exercised: here, or (list parameters) in list_query.test.ts
  const seen = new Set(cases.flatMap(([, , , errors]) => Object.values(errors).flat()));
  const templates: Record<string, string> = {
    required: Messages.required, notNull: Messages.notNull, notBlank: Messages.notBlank, maxLength: Messages.maxLength(255),
    invalidChoice: Messages.invalidChoice('bogus'), invalidInt: Messages.invalidInt, invalidBool: Messages.invalidBool,
    invalidString: Messages.invalidString, invalidUuid: Messages.invalidUuid, invalidDatetime: Messages.invalidDatetime,
    datetimeOutOfRange: Messages.datetimeOutOfRange('2400-01-01T00:00:00.000001Z'),
    pkType: Messages.pkType('str'), notAList: Messages.notAList('str'), unpairedSurrogate: Messages.unpairedSurrogate,
    maxElements: Messages.maxElements(1000), maxBytes: Messages.maxBytes(1_048_576),
  };
  const listOnly = ['enterNumber', 'enterDatetime', 'enterUuid', 'selectChoice', 'minValue', 'offsetTooLarge', 'invalidCursor', 'unknownParameter'];
  t.deepEqual(Object.keys(Messages).filter((k) => !listOnly.includes(k)).sort(), Object.keys(templates).sort(), 'a new message needs a case here');
  for (const [key, msg] of Object.entries(templates)) t.true(seen.has(msg), `Messages.${key} is exercised`);
  // the strings themselves
  t.is(Messages.invalidDatetime, 'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].');
});

test('a playbook\'s arguments may be exactly the bound: 1 MiB of UTF-8, not of characters', (t) => {
  const at = JSON.stringify({ arguments: { v: 'é'.repeat(524_284) } }); // {"v":"…"}: 8 + 2 × 524,284 = 1,048,576 bytes
  t.is(norm('playbook', 'patch', at).errors, null);
});

test('lengths count code points, not UTF-16 units', (t) => {
  t.is(norm('label', 'create', JSON.stringify({ name: '😀'.repeat(255) })).errors, null);
  t.deepEqual(norm('label', 'create', JSON.stringify({ name: '😀'.repeat(256) })).errors, { name: [Messages.maxLength(255)] });
  t.is(norm('label', 'create', JSON.stringify({ name: 'é'.repeat(255) })).errors, null);
  t.is(norm('playbook', 'patch', JSON.stringify({ labels: ['😀'.repeat(255)] })).errors, null);
});

test('a lone surrogate is refused in text fields: UTF-8 (msgpackr, LMDB) cannot carry it', (t) => {
  // JSON allows the escape "\ud800"; stored, it would come back as U+FFFD.
  for (const text of [`{"name":"${'a'.repeat(255)}\\ud800"}`, '{"name":"\\udc00x"}']) {
    t.deepEqual(norm('label', 'create', text).errors, { name: [Messages.unpairedSurrogate] });
  }
  t.deepEqual(norm('playbook', 'patch', '{"labels":["ok","\\ud800"]}').errors, { labels: [Messages.unpairedSurrogate] });
  t.deepEqual(norm('file', 'create', '{"path":"/x","content":"\\ud800","playbook":1}').errors, { content: [Messages.unpairedSurrogate] });
  t.is(norm('label', 'create', '{"name":"\\ud83d\\ude00"}').errors, null, 'a pair is one character');
  t.is(norm('record', 'create', '{"key":"k","type":"t","playbook":1,"value":"\\ud800"}').errors, null, 'JSON fields keep the escaped text');
});

test('nullable fields take null; null where not allowed is refused', (t) => {
  t.deepEqual(norm('playbook', 'patch', '{"name":null,"ended":null,"controller":null,"user":null}'),
    { set: { ended: null, name: null, controller: null, user: null }, errors: null });
  t.deepEqual(norm('play', 'patch', '{"name":null}').set, { name: null });
  t.deepEqual(norm('play', 'patch', '{"name":""}').set, { name: '' }, 'a play name may be blank');
  t.deepEqual(norm('playbook', 'patch', '{"controller":""}').set, { controller: '' });
  t.deepEqual(norm('playbook', 'patch', '{"name":""}').errors, { name: [Messages.notBlank] });
});

// ---- field order and every failing field at once ---------------------------------------------

test('errors come in serializer field order, every failing field at once (ara-1.4-behaviors §6)', (t) => {
  const pb = norm('playbook', 'create', `{"status":"bogus","started":"notadate","ended":"notadate","name":"${'n'.repeat(256)}","runner_version":"2","path":"/p"}`);
  t.is(errorBody('playbook', pb), JSON.stringify({
    started: [Messages.invalidDatetime], ended: [Messages.invalidDatetime],
    name: ['Ensure this field has no more than 255 characters.'], status: ['"bogus" is not a valid choice.'],
  }));
  const alias = norm('playbook', 'create', '{"ansible_version":null,"path":123,"status":null,"labels":"abc"}');
  t.is(errorBody('playbook', alias), '{"labels":["Expected a list of items but got type \\"str\\"."],'
    + '"ansible_version":["This field may not be null."],"status":["This field may not be null."]}');
  const result = norm('result', 'create', '{"ignore_errors":"x","status":"bogus","changed":"notbool","content":null,"host":1,"task":1,"play":1,"playbook":1}');
  t.is(errorBody('result', result), '{"content":["This field may not be null."],"status":["\\"bogus\\" is not a valid choice."],'
    + '"changed":["Must be a valid boolean."],"ignore_errors":["Must be a valid boolean."]}');
  const task = norm('task', 'create', '{"playbook":"x","handler":"x","lineno":"x","tags":null}');
  t.deepEqual(Object.keys(task.errors!), ['tags', 'action', 'lineno', 'handler', 'play', 'file', 'playbook']);
});

// ---- PUT, PATCH, create --------------------------------------------------------------------------

test('PUT resets omitted JSON fields to their defaults; PATCH and create do not', (t) => {
  const defaults: Array<[ResourceType, string, string, string]> = [
    ['playbook', '{"runner_version":"2","path":"/p"}', 'arguments', '{}'],
    ['task', '{"action":"x","lineno":1,"handler":false,"play":1,"file":1,"playbook":1}', 'tags', '[]'],
    ['host', '{"name":"h","playbook":1}', 'facts', '{}'],
    ['result', '{"host":1,"task":1,"play":1,"playbook":1}', 'content', '{}'],
    ['record', '{"key":"k","type":"t","playbook":1}', 'value', '""'],
  ];
  for (const [type, body, field, reset] of defaults) {
    t.is(norm(type, 'put', body).set[field], reset, `PUT ${type}`);
    t.is(norm(type, 'put', body, slow).set[field], reset, `PUT ${type} (slow path)`);
    t.false(field in norm(type, 'patch', body).set, `PATCH ${type}`);
    t.false(field in norm(type, 'create', body).set, `POST ${type} (the row default applies)`);
  }
  // only JSON fields are reset: name, status, started, ended, labels keep their value on PUT
  t.deepEqual(Object.keys(norm('playbook', 'put', '{"runner_version":"2","path":"/p"}').set).sort(), ['arguments', 'path', 'runner_version']);
  // a JSON field that is sent is kept
  t.is(norm('task', 'put', '{"action":"x","lineno":1,"handler":false,"play":1,"file":1,"playbook":1,"tags":["a"]}').set.tags, '["a"]');
});

test('PUT needs every required key; PATCH needs none', (t) => {
  t.deepEqual(norm('task', 'put', '{"action":"x"}').errors, {
    lineno: [Messages.required], handler: [Messages.required], play: [Messages.required], file: [Messages.required], playbook: [Messages.required],
  });
  t.deepEqual(norm('task', 'patch', '{}'), { set: {}, errors: null });
  t.deepEqual(norm('file', 'put', '{"path":"/x","playbook":1}').errors, { content: [Messages.required] });
});

test('ansible_version is accepted for runner_version; runner_version wins when both are sent', (t) => {
  t.deepEqual(norm('playbook', 'create', '{"ansible_version":"2.9.6","path":"/p"}'),
    { set: { runner_version: '2.9.6', path: '/p' }, errors: null });
  t.deepEqual(norm('playbook', 'put', '{"ansible_version":2.9,"path":"/p"}').set, { arguments: '{}', runner_version: '2.9', path: '/p' });
  t.deepEqual(norm('playbook', 'patch', '{"ansible_version":"2.10"}').set, { runner_version: '2.10' });
  t.deepEqual(norm('playbook', 'create', '{"ansible_version":"old","runner_version":"new","path":"/p"}').set.runner_version, 'new');
  t.deepEqual(norm('playbook', 'create', '{"ansible_version":"","path":"/p"}').errors, { ansible_version: [Messages.notBlank] });
  t.deepEqual(norm('playbook', 'create', '{"path":"/p"}').errors, { runner_version: [Messages.required] });
});

test('read-only and unknown keys are ignored', (t) => {
  const r = norm('playbook', 'patch', '{"id":5,"items":{},"created":"x","updated":"y","duration":"z","sha1":"q","bogus":1,"name":"n"}');
  t.deepEqual(r, { set: { name: 'n' }, errors: null });
  t.deepEqual(norm('file', 'patch', '{"sha1":"abc"}'), { set: {}, errors: null });
});

// ---- JSON text and redaction (SPEC §2, §3) -----------------------------------------------------

test('JSON fields keep the client text: key order, integer-like keys, big integers, floats, escapes', (t) => {
  const cases: Array<[string, string]> = [
    ['{"2":"b","1":"a","10":"c"}', '{"2":"b","1":"a","10":"c"}'],
    ['{"big":123456789012345678901234567890,"neg":-9007199254740993}', '{"big":123456789012345678901234567890,"neg":-9007199254740993}'],
    ['{ "f" : 1.0 , "e" : 1E+2 , "z" : -0 }', '{"f":1.0,"e":1E+2,"z":-0}'],
    ['{"s":"a  b\\n\\"c\\" \\u00e9 é"}', '{"s":"a  b\\n\\"c\\" \\u00e9 é"}'],
    ['[ 3 , 2 , 1 ]', '[3,2,1]'],
    ['"just a string"', '"just a string"'],
    ['12345678901234567890', '12345678901234567890'],
    ['false', 'false'],
  ];
  for (const [value, stored] of cases) {
    const text = `{ "key" : "k", "value" : ${value} , "type":"t","playbook":1}`;
    t.is(norm('record', 'create', text).set.value, stored, value);
  }
  t.is(norm('task', 'patch', '{"tags": ["b", "a"]}').set.tags, '["b","a"]');
  t.is(norm('result', 'patch', '{"content": {"msg": "x", "rc": 0}}').set.content, '{"msg":"x","rc":0}');
});

test('ignored_facts replaces host facts members, keeping key order and everything else', (t) => {
  const text = '{"name":"h","playbook":1,"facts":{ "b" : 1 , "ansible_env" : {"PATH":"/bin","HOME":"/root"}, "a":[1, 2], "1": {"ansible_env": 3} }}';
  t.is(norm('host', 'create', text).set.facts,
    '{"b":1,"ansible_env":"Not saved as configured by \'ignored_facts\'","a":[1,2],"1":{"ansible_env":3}}');
  t.is(norm('host', 'patch', '{"facts":{"x":1}}').set.facts, '{"x":1}', 'nothing to redact');
  t.is(norm('host', 'patch', '{"facts":["ansible_env"]}').set.facts, '["ansible_env"]', 'not an object');
});

test('ignored_facts applies to content.ansible_facts of results, and only there', (t) => {
  const text = '{"host":1,"task":1,"play":1,"playbook":1,"content":{"2":0,"ansible_env":"top level stays","ansible_facts":{"z":1,"ansible_env":{"A":"b"},"a":2},"changed":false}}';
  t.is(norm('result', 'create', text).set.content,
    '{"2":0,"ansible_env":"top level stays","ansible_facts":{"z":1,"ansible_env":"Not saved as configured by \'ignored_facts\'","a":2},"changed":false}');
  t.is(norm('result', 'patch', '{"content":{"ansible_facts":"weird"}}').set.content, '{"ansible_facts":"weird"}');
  t.is(norm('result', 'patch', '{"content":[{"ansible_facts":{"ansible_env":1}}]}').set.content, '[{"ansible_facts":{"ansible_env":1}}]');
});

test('ignored_arguments replaces playbook arguments members', (t) => {
  t.is(norm('playbook', 'patch', '{"arguments":{"check":true,"extra_vars":{"password":"s3cret"},"tags":["all"]}}').set.arguments,
    '{"check":true,"extra_vars":"Not saved as configured by \'ignored_arguments\'","tags":["all"]}');
  t.is(norm('playbook', 'patch', '{"arguments":{"extra_vars":null}}').set.arguments,
    '{"extra_vars":"Not saved as configured by \'ignored_arguments\'"}');
  // ARA's callbacks redact on their side: their notice stays as they wrote it (ARA's `playbook show`), anything else is replaced
  t.is(norm('playbook', 'patch', '{"arguments":{"extra_vars":"Not saved by ARA as configured by \'ignored_arguments\'"}}').set.arguments,
    '{"extra_vars":"Not saved by ARA as configured by \'ignored_arguments\'"}');
  t.is(norm('playbook', 'patch', '{"arguments":{"extra_vars":"Not saved by ARA as configured by \'ignored_arguments\' but: s3cret"}}').set.arguments,
    '{"extra_vars":"Not saved as configured by \'ignored_arguments\'"}');
  t.is(norm('host', 'patch', '{"facts":{"ansible_env":"Not saved by ARA as configured by \'ignored_facts\'"}}').set.facts,
    '{"ansible_env":"Not saved by ARA as configured by \'ignored_facts\'"}');
  // facts settings do not touch arguments, nor the other way round
  t.is(norm('playbook', 'patch', '{"arguments":{"ansible_env":1}}').set.arguments, '{"ansible_env":1}');
  t.is(norm('host', 'patch', '{"facts":{"extra_vars":1}}').set.facts, '{"extra_vars":1}');
});

test('redaction follows the configuration: several keys, or none', (t) => {
  const many = new BodyNormalizer(validators, { ignoredFacts: ['ansible_env', 'ansible_all_ipv4_addresses'], ignoredArguments: [] });
  t.is(norm('host', 'patch', '{"facts":{"ansible_all_ipv4_addresses":["10.0.0.1"],"k":1,"ansible_env":{}}}', many).set.facts,
    '{"ansible_all_ipv4_addresses":"Not saved as configured by \'ignored_facts\'","k":1,"ansible_env":"Not saved as configured by \'ignored_facts\'"}');
  t.is(norm('playbook', 'patch', '{"arguments":{"extra_vars":{"a":1}}}', many).set.arguments, '{"extra_vars":{"a":1}}');
  const none = new BodyNormalizer(validators, { ignoredFacts: [], ignoredArguments: [] });
  t.is(norm('result', 'patch', '{"content":{"ansible_facts":{"ansible_env":{"A":1}}}}', none).set.content,
    '{"ansible_facts":{"ansible_env":{"A":1}}}');
});
