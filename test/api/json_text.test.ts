import test from 'ava';
import { memberSpans, minify, parseSpan, replaceValues, valueSpan } from '../../src/api/json_text.js';
import { mulberry32 } from '../helpers/random.js';

/** memberSpans as plain `key → value text` pairs, in order. */
function members(text: string, start?: number, end?: number): [string, string][] | undefined {
  const spans = memberSpans(text, start, end);
  return spans && Array.from(spans, ([k, [a, b]]) => [k, text.slice(a, b)]);
}


test('memberSpans: spans of each value, whitespace excluded', (t) => {
  t.deepEqual(members('{"a":1,"b":"x","c":null}'), [
    ['a', '1'],
    ['b', '"x"'],
    ['c', 'null'],
  ]);
  const text = ' \n{ "a" :\t[1, {"x": [2,3]}] ,\r\n "b":{ "c" : { } } , "d" : true,"e":-1.5e+3 } \n';
  t.deepEqual(members(text), [
    ['a', '[1, {"x": [2,3]}]'],
    ['b', '{ "c" : { } }'],
    ['d', 'true'],
    ['e', '-1.5e+3'],
  ]);
  const spans = memberSpans(text)!;
  const [a, b] = spans.get('b')!;
  t.deepEqual(members(text, a, b), [['c', '{ }']]);
});

test('memberSpans: non-objects and empty objects', (t) => {
  t.deepEqual(members('{}'), []);
  t.deepEqual(members('  {  \n }  '), []);
  t.is(memberSpans('[]'), undefined);
  t.is(memberSpans('[{"a":1}]'), undefined);
  t.is(memberSpans('"{\\"a\\":1}"'), undefined);
  t.is(memberSpans('null'), undefined);
  t.is(memberSpans('12'), undefined);
  t.is(memberSpans('   '), undefined);
});

test('memberSpans: a sub-span of a larger text', (t) => {
  const text = '[{"skip":1},{"k":"v","n":[{}]},3]';
  const start = text.indexOf('{"k"');
  const end = text.lastIndexOf(',3');
  t.deepEqual(members(text, start, end), [
    ['k', '"v"'],
    ['n', '[{}]'],
  ]);
  t.is(memberSpans(text, text.lastIndexOf('3'), text.length - 1), undefined);
});

test('memberSpans: strings with escapes and brackets inside do not confuse the scan', (t) => {
  const text = String.raw`{"a\"b":"x\"}]{[","\\":"\\","c":"\\\"","d":["]",{"e":"}\\"}],"f":"\\\\"}`;
  const parsed = JSON.parse(text) as Record<string, unknown>;
  const got = members(text)!;
  t.deepEqual(
    got.map(([k]) => k),
    Object.keys(parsed),
  );
  for (const [k, v] of got) t.deepEqual(JSON.parse(v), parsed[k], k);
  t.deepEqual(got.map(([k]) => k), ['a"b', '\\', 'c', 'd', 'f']);
});

test('memberSpans: keys are decoded exactly as JSON.parse does', (t) => {
  const text = String.raw`{"caf\u00e9":1,"\ud83d\ude00":2,"tab\there":3,"slash\/":4,"nl\n":5,"plain":6}`;
  t.deepEqual(
    Array.from(memberSpans(text)!.keys()),
    Object.keys(JSON.parse(text) as object),
  );
  t.deepEqual(Array.from(memberSpans(text)!.keys()), ['café', '😀', 'tab\there', 'slash/', 'nl\n', 'plain']);
  // The escaped and literal forms of a key are the same key.
  t.deepEqual(members('{"\\u0061":1,"a":2}'), [['a', '2']]);
});

test('memberSpans: duplicate keys keep the first position and the last value', (t) => {
  t.deepEqual(members('{"a":1,"b":2,"a":3}'), [
    ['a', '3'],
    ['b', '2'],
  ]);
});

test('memberSpans keeps the text order of integer-like keys', (t) => {
  const text = '{"b":1,"10":2,"a":3,"2":4}';
  t.deepEqual(Object.keys(JSON.parse(text) as object), ['2', '10', 'b', 'a']); // what we avoid
  t.deepEqual(
    members(text)!.map(([k]) => k),
    ['b', '10', 'a', '2'],
  );
});

test('valueSpan trims JSON whitespace only', (t) => {
  t.deepEqual(valueSpan(' \t\r\n{"a":1}\n '), [4, 11]);
  t.deepEqual(valueSpan('x  42  y', 1, 7), [3, 5]);
  t.deepEqual(valueSpan('   '), [3, 3]);
  t.deepEqual(valueSpan('"\u00a0"'), [0, 3]);
});

test('minify removes whitespace outside strings only', (t) => {
  t.is(minify(' { "a" : [ 1 , 2 ] ,\n\t"b c" : " x  y " } '), '{"a":[1,2],"b c":" x  y "}');
  t.is(minify('[ ]'), '[]');
  t.is(minify('{ }'), '{}');
  t.is(minify('  "  spaced  "  '), '"  spaced  "');
  t.is(minify(' 12345678901234567890 '), '12345678901234567890');
  t.is(minify('{"n": 12345678901234567890, "f": 1.0e-7, "z": -0}'), '{"n":12345678901234567890,"f":1.0e-7,"z":-0}');
  t.is(minify(String.raw`{ "q\" ": "\\" , "r": "\\\" x" }`), String.raw`{"q\" ":"\\","r":"\\\" x"}`);
  t.is(minify('{"10": 1, "2": 2}'), '{"10":1,"2":2}');
  t.is(minify('x[ 1, 2 ]y', 1, 9), '[1,2]');
});

test('minify returns already compact text unchanged', (t) => {
  const text = '{"a":[1,{"b":"c d"}],"e":null}';
  t.is(minify(text), text);
  t.is(minify(' ' + text + '\n'), text);
});

test('replaceValues replaces named members, adds nothing', (t) => {
  const text = '{ "ansible_env" : {"HOME": "/root"}, "10": 1, "ansible_os": "Debian", "n": 12345678901234567890 }';
  const msg = JSON.stringify("Not saved as configured by 'ignored_facts'");
  t.is(
    replaceValues(text, 0, text.length, new Map([['ansible_env', msg], ['absent', '0']])),
    `{"ansible_env":${msg},"10":1,"ansible_os":"Debian","n":12345678901234567890}`,
  );
  t.is(replaceValues(text, 0, text.length, new Map()), minify(text));
  t.is(replaceValues(text, 0, text.length, new Map([['nope', '1']])), minify(text));
  t.is(replaceValues('{ }', 0, 3, new Map([['a', '1']])), '{}');
  // Not an object: minified and otherwise unchanged.
  t.is(replaceValues('[ {"a": 1} ]', 0, 12, new Map([['a', '2']])), '[{"a":1}]');
});

test('replaceValues matches decoded keys, keeps the original key text, and hits every duplicate', (t) => {
  const text = String.raw`{"\u0061":1,"b":{"a":2},"a":3}`;
  t.is(replaceValues(text, 0, text.length, new Map([['a', '"x"']])), String.raw`{"\u0061":"x","b":{"a":2},"a":"x"}`);
});

test('replaceValues on a nested object span', (t) => {
  const text = '{"content": {"ansible_facts": {"ansible_env": {"A": 1}, "x": 2}, "rc": 0}}';
  const content = memberSpans(text)!.get('content')!;
  const facts = memberSpans(text, ...content)!.get('ansible_facts')!;
  const replaced = replaceValues(text, facts[0], facts[1], new Map([['ansible_env', '"hidden"']]));
  t.is(replaced, '{"ansible_env":"hidden","x":2}');
  const whole = text.slice(0, facts[0]) + replaced + text.slice(facts[1]);
  t.deepEqual(JSON.parse(whole), { content: { ansible_facts: { ansible_env: 'hidden', x: 2 }, rc: 0 } });
});

// Random JSON, written once compactly and once with random whitespace, from
// the same choices: minify(spaced) must give the compact text, and
// memberSpans must agree with JSON.parse.
function randomJson(random: () => number, depth: number): [string, string] {
  const ws = (): string => {
    const r = random();
    return r < 0.6 ? '' : [' ', '\n', '\t', '\r\n  ', '   '][Math.floor(random() * 5)]!;
  };
  const str = (): string => {
    const parts = ['a', ' ', '\\"', '\\\\', '\\n', '\\u00e9', '{', '}', '[', ']', ',', ':', 'é', '😀', '\\/'];
    let s = '"';
    const n = Math.floor(random() * 6);
    for (let i = 0; i < n; i++) s += parts[Math.floor(random() * parts.length)];
    return s + '"';
  };
  const r = random();
  if (depth <= 0 || r < 0.4) {
    const scalars = ['0', '-1', '12345678901234567890', '1.5e-3', 'true', 'false', 'null'];
    const v = random() < 0.5 ? str() : scalars[Math.floor(random() * scalars.length)]!;
    return [v, v];
  }
  const isObject = r < 0.7;
  const n = Math.floor(random() * 5);
  let compact = isObject ? '{' : '[';
  let spaced = compact + ws();
  for (let i = 0; i < n; i++) {
    if (i > 0) {
      compact += ',';
      spaced += ws() + ',' + ws();
    }
    if (isObject) {
      const key = random() < 0.3 ? `"${Math.floor(random() * 20)}"` : str();
      compact += key + ':';
      spaced += key + ws() + ':' + ws();
    }
    const [c, s] = randomJson(random, depth - 1);
    compact += c;
    spaced += s;
  }
  compact += isObject ? '}' : ']';
  spaced += ws() + (isObject ? '}' : ']');
  return [compact, spaced];
}

test('random nested JSON: minify and memberSpans agree with JSON.parse (seeded)', (t) => {
  const random = mulberry32(2024);
  for (let k = 0; k < 3000; k++) {
    const [compact, body] = randomJson(random, 5);
    const spaced = '  ' + body + '\n';
    t.is(minify(spaced), compact);
    const parsed = JSON.parse(spaced) as unknown;
    const spans = memberSpans(spaced);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      t.is(spans, undefined);
      continue;
    }
    const obj = parsed as Record<string, unknown>;
    t.deepEqual(Array.from(spans!.keys()).sort(), Object.keys(obj).sort());
    for (const [key, [a, b]] of spans!) t.deepEqual(JSON.parse(spaced.slice(a, b)), obj[key]);
  }
});

// No duration is asserted (a loaded CI machine makes any bound flaky): a quadratic scan of
// 10 MB would not finish within ava's timeout, which is what fails then.
test('5 MB values are handled (scan, minify, replace)', (t) => {
  const item = ' { "host" : "web-01" , "msg" : "line with \\"quotes\\" and \\\\ and } ] {" , "n" : [ 1 , 2 , 3 ] }';
  const parts: string[] = [];
  for (let size = 0; size < 5_000_000; size += item.length + 2) parts.push(item);
  const big = `{ "results" : [ ${parts.join(' ,\n')} ] , "huge" : "${'x'.repeat(5_000_000)}" , "last" : 1 }`;
  const compact = JSON.stringify(JSON.parse(big));
  const started = performance.now();
  const spans = memberSpans(big)!;
  const min = minify(big);
  const replaced = replaceValues(big, 0, big.length, new Map([['huge', '"cut"']]));
  const elapsed = performance.now() - started;
  t.deepEqual(Array.from(spans.keys()), ['results', 'huge', 'last']);
  t.is(big.slice(...spans.get('last')!), '1');
  t.is(min, compact);
  t.is(replaced.length, compact.length - 5_000_002 + 5);
  t.true(replaced.endsWith(',"huge":"cut","last":1}'));
  t.log(`10+ MB scanned three times in ${elapsed.toFixed(0)} ms`);
});

test('a long run of backslashes before quotes stays linear and correct', (t) => {
  const s = '"' + '\\\\'.repeat(200_000) + '\\"' + '"';
  const text = `{"a": ${s}, "b": 2}`;
  t.deepEqual(members(text), [
    ['a', s],
    ['b', '2'],
  ]);
});

test('parseSpan gives what JSON.parse gives: scalars of every form, escapes, containers, random values (seeded)', (t) => {
  const cases = ['0', '-0', '7', '-12', '0.1', '1.5e-3', '1E+2', '-2.5E-300', '1e400', '-1e400', '12345678901234567890',
    '9007199254740993', '4.35', '"plain"', '""', '"a\\"b"', '"\\u00e9\\n"', '"é😀"', 'true', 'false', 'null', '[]', '{}',
    '[1,"x",{"a":null}]', '{"__proto__":1}'];
  for (const text of cases) {
    const padded = `{"k": ${text} , "z":1}`;
    const start = padded.indexOf(text, 5);
    t.deepEqual(parseSpan(padded, start, start + text.length), JSON.parse(text), text);
    t.true(Object.is(parseSpan(padded, start, start + text.length), JSON.parse(text)) || typeof JSON.parse(text) === 'object', text);
  }
  const random = mulberry32(77);
  for (let k = 0; k < 3000; k++) {
    const [compact, spaced] = randomJson(random, 3);
    for (const text of [compact, spaced]) {
      const [a, b] = valueSpan(' ' + text + ' ');
      t.deepEqual(parseSpan(' ' + text + ' ', a, b), JSON.parse(text));
    }
  }
});
