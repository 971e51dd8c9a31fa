// The batch body scan (src/api/json_scan.ts) stands in for JSON.parse on the
// ingest path: whenever it answers, the body must be ASCII, JSON.parse must
// accept its text, give an object nested within the limit, and give the members
// and event kinds/labels the scan reports. A seeded property test compares the
// two on random bodies, valid and mutated (replay with JSON_SCAN_SEED=<seed>).
import test from 'ava';
import { isDeepStrictEqual } from 'node:util';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { asciiEventSpans, scanBatchBody as scanBatchBytes, scanObjectBody as scanObjectBytes } from '../../src/api/json_scan.js';
import { useValueSkip, valueSkip } from '../../src/api/json_skip.js';
import { JSON_SKIP_SOURCE_SHA256 } from '../../src/api/json_skip_wasm.js';
import { arrayMemberSpans, minify, type ElementSpans, type MemberSpan } from '../../src/api/json_text.js';
import { nestedDeeperThan } from '../../src/api/json_body.js';
import { BLOB_FIELDS } from '../../src/shard/blobs.js';
import { mulberry32, seedFrom } from '../helpers/random.js';

const has = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

// the scans read a body's bytes: here, the UTF-8 bytes of a text
const scanBatchBody = (text: string, maxDepth: number) => scanBatchBytes(Buffer.from(text, 'utf8'), maxDepth);
const scanObjectBody = (text: string, maxDepth: number) => scanObjectBytes(Buffer.from(text, 'utf8'), maxDepth);
const isAsciiText = (text: string): boolean => /^[\x00-\x7f]*$/.test(text);
/** the member a content's facts are redacted in (api/validate.ts) */
const hasFacts = (v: unknown): boolean => isObject(v) && has(v, 'ansible_facts');

/** values asciiEventSpans kept as bytes, over every disagreement() call */
let keptSeen = 0;

/** null when the scan is sound for `text`, else what it got wrong. */
function disagreement(text: string, maxDepth: number): string | null {
  const scan = scanBatchBody(text, maxDepth);
  if (scan === null) return null; // the caller falls back to JSON.parse: always correct
  if (!isAsciiText(text)) return 'answered for bytes beyond ASCII';
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { return 'answered for text JSON.parse refuses'; }
  if (!isObject(parsed)) return 'answered for a top level that is not an object';
  if (nestedDeeperThan(text, maxDepth)) return 'answered for text nested too deep';
  if (Object.keys(parsed).length !== scan.members.size) return 'member count';
  for (const [key, [a, b]] of scan.members) {
    if (!has(parsed, key) || !isDeepStrictEqual(JSON.parse(text.slice(a, b)), parsed[key])) return `member ${key}`;
  }
  const events = parsed.events;
  if (Array.isArray(events) !== (scan.events !== null)) return 'events found or not';
  if (scan.events === null) return scan.spans === null ? null : 'spans without events';
  if (scan.events.length !== (events as unknown[]).length) return 'event count';
  // the shard's view (asciiEventSpans: each event's own text, its spans less its start) finds
  // the members its own scan of the body (arrayMemberSpans) finds, with the same value texts;
  // a value kept as bytes leaves only its first character in the event's text
  const shardView = asciiEventSpans(Buffer.from(text, 'latin1'), scan.spans!);
  const own = arrayMemberSpans(text, 'events')!;
  const values = own.map((e) => e.members && [...e.members].map(([k, [a, b]]) => [k, text.slice(a, b)]));
  const valueOf = (own: string, [a, b, , , bytes]: MemberSpan): string => (bytes ? bytes.text() : own.slice(a, b));
  const got = shardView.map(([own, e]) => e.members && [...e.members].map(([k, span]) => [k, valueOf(own, span)]));
  if (!isDeepStrictEqual(got, values)) return 'asciiEventSpans differ from arrayMemberSpans';
  for (let i = 0; i < own.length; i++) {
    const [ownText, e] = shardView[i]!;
    const kept = [...e.members ?? []].filter(([, span]) => span[4] !== undefined);
    if (kept.length === 0 && ownText !== text.slice(own[i]!.span[0], own[i]!.span[1])) return 'event text';
    if (kept.length > 1) return 'more than one value kept as bytes';
    keptSeen += kept.length;
    for (const [key, [a, b, , , bytes]] of kept) {
      if (b !== a + 1 || ownText[a] !== bytes!.text()[0]) return 'a value kept as bytes leaves other than its first character';
      // only the blob field of the event's kind, as JSON.parse reads the kind (the shard parses any other member from the text)
      const kind = ((events as unknown[])[i] as Obj).kind;
      if (typeof kind !== 'string' || BLOB_FIELDS[kind]?.field !== key) return `${key} kept as bytes in an event of kind ${String(kind)}`;
    }
  }
  for (const [own, e] of shardView) {
    for (const [, span] of e.members ?? []) {
      const value = valueOf(own, span);
      if (span[2] && minify(value, 0, value.length) !== value) return 'compact value that is not';
      if (span[3] && hasFacts(JSON.parse(value))) return 'said to have no ansible_facts, has';
    }
  }
  for (let i = 0; i < scan.events.length; i++) {
    const ev = (events as unknown[])[i];
    const at = scan.events[i]!;
    if (at.object !== isObject(ev)) return `event ${i}: object or not`;
    if (!isDeepStrictEqual(JSON.parse(text.slice(at.start, at.end)), ev)) return `event ${i}: span`;
    if (!isObject(ev)) continue;
    for (const [name, span] of [['kind', at.kind], ['labels', at.labels]] as const) {
      if (has(ev, name) !== (span !== null)) return `event ${i}: ${name} found or not`;
      if (span && !isDeepStrictEqual(JSON.parse(text.slice(span[0], span[1])), ev[name])) return `event ${i}: ${name} value`;
    }
  }
  return null;
}

/** The same for the per-record body scan (scanObjectBody): null when sound, else what it got wrong. */
function objectDisagreement(text: string, maxDepth: number): string | null {
  const members = scanObjectBody(text, maxDepth);
  if (members === null) return null;
  if (!isAsciiText(text)) return 'object scan answered for bytes beyond ASCII';
  let parsed: unknown;
  try { parsed = JSON.parse(text); } catch { return 'object scan answered for text JSON.parse refuses'; }
  if (!isObject(parsed)) return 'object scan answered for a top level that is not an object';
  if (nestedDeeperThan(text, maxDepth)) return 'object scan answered for text nested too deep';
  if (Object.keys(parsed).length !== members.size) return 'object scan member count';
  for (const [key, [a, b, compact, noFacts]] of members) {
    if (!has(parsed, key) || !isDeepStrictEqual(JSON.parse(text.slice(a, b)), parsed[key])) return `object scan member ${key}`;
    if (compact && minify(text, a, b) !== text.slice(a, b)) return `object scan: member ${key} said compact, is not`;
    if (noFacts && hasFacts(JSON.parse(text.slice(a, b)))) return `object scan: member ${key} said to have no ansible_facts, has`;
  }
  return null;
}

test('answers for compact and spaced batch bodies, with the members JSON.parse gives', (t) => {
  const body = {
    playbook: { uuid: 'u-1', labels: ['a'] }, seq: 2,
    events: [
      { kind: 'result', task: 't', host: 'h', content: { a: [1, 2.5e-3, -0, true, null], 'k"\\': 'é\u2028😀', '__proto__': {} } },
      { kind: 'playbook', labels: ['x', 'y'] }, 3, [], { kind: 7 }, {},
    ],
  };
  // as Python's json.dumps sends it: beyond ASCII escaped
  const raw = JSON.stringify(body);
  const compact = raw.replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  const spaced = compact.replace(/([,:])(?=[[{"\dtfn-])/g, '$1 ');
  t.is(scanBatchBody(raw, 512), null, 'bytes beyond ASCII are left to JSON.parse');
  for (const text of [compact, spaced, ` ${compact} `, '{}', '{"events":[]}']) {
    t.not(scanBatchBody(text, 512), null, text);
    t.is(disagreement(text, 512), null, text);
  }
  const scan = scanBatchBody(compact, 512)!;
  t.deepEqual([...scan.members.keys()], ['playbook', 'seq', 'events']);
  t.deepEqual(scan.events!.map((e) => e.object), [true, true, false, false, true, true]);
  t.is(compact.slice(...scan.events![1]!.labels!), '["x","y"]');
  // compact values need no minify pass in the shard; spaced ones do
  const content = (text: string) => asciiEventSpans(Buffer.from(text), scanBatchBody(text, 512)!.spans!)[0]![1].members!.get('content')!;
  t.true(content(compact)[2]);
  t.falsy(content(spaced)[2]);
  // a content with an `ansible_facts` member of its own (as the normalizer reads keys: escapes decoded) is said to have one
  const facts = (content: string) => {
    const text = `{"events":[{"kind":"result","content":${content}}]}`;
    return [
      asciiEventSpans(Buffer.from(text), scanBatchBody(text, 512)!.spans!)[0]![1].members!.get('content')![3],
      scanObjectBody(`{"content":${content}}`, 512)!.get('content')![3],
    ];
  };
  for (const own of ['{"ansible_facts":{}}', '{"a":1, "ansible_facts" :[]}', '{"ansible\\u005ffacts":1}', '{"\\u0061nsible_facts":1}']) t.deepEqual(facts(own), [false, false], own);
  for (const not of ['{"a":{"ansible_facts":{}}}', '[{"ansible_facts":1}]', '"ansible_facts"', '{"a":"ansible_facts"}', '{"ansible_fact":1}', '{}']) t.deepEqual(facts(not), [true, true], not);
});

test('leaves to JSON.parse what it does not handle', (t) => {
  for (const text of [
    '{"a":\n1}', '{"a":"\t"}', '[]', '1', '"x"', 'null', '', ' ', '{"a":1', '{"a":1}}', '{"a":01}', '{"a":1.}',
    '{"a":-}', '{"a":tru}', '{"a":"\\x"}', '{"a":"\\u12g4"}', '{"a":[1,]}', '{"a":1,}', '{,}', '{"a" 1}',
    '{"a":1}\u00a0', '\ufeff{}', '{"a":\'x\'}', '{"events":[{"kind":"x",}]}', '{"a":NaN}', '{"a":"x"\u2028}',
    '{"a":fals}', '{"a":falsy}', '{"a":nul}', '{"a":nulls}', '{"a":True}', '{"a":fals', '{"a":tru', '{"a":t', '{"a":[true,f]}',
  ]) t.is(scanBatchBody(text, 512), null, JSON.stringify(text));
  for (const text of ['{"a":true}', '{"a":false}', '{"a":null}', '{"a":[true,false,null]}', '{"a":[false]}']) t.not(scanBatchBody(text, 512), null, text);
  for (const text of ['{"a":\n1}', '[]', '{"a":1', '{"a":[1,]}', '{"a":"\t"}']) t.is(scanObjectBody(text, 512), null, JSON.stringify(text));
  t.is(scanObjectBody('{"a":[[[]]]}', 3), null);
  t.deepEqual([...scanObjectBody('{"a":[[]], "b" : {"c": 1}}', 3)!], [['a', [5, 9, true, true]], ['b', [17, 25, false, true]]]);
  // nesting beyond the limit (the caller answers 400 "too deep" after JSON.parse)
  t.is(scanBatchBody('{"a":[[[]]]}', 3), null);
  t.not(scanBatchBody('{"a":[[]]}', 3), null);
  t.is(scanBatchBody('{"events":[{"a":[]}]}', 3), null);
  t.not(scanBatchBody('{"events":[{"a":1}]}', 3), null);
});

/**
 * Random batch bodies, valid and broken (`longest`: the longest plain string
 * run, to pass the scans' word-at-a-time and 16-byte passes at every offset).
 */
function randomBodies(seed: number, longest: number): () => string {
  const rnd = mulberry32(seed);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
  const strings = ['', 'a', 'kind', 'events', 'seq', 'labels', '__proto__', 'é', '\u2028', 'x"y', 'b\\c', '😀', '\u0001', '\ud800', 'ansible_facts'];
  // strings long enough for the scan's four-bytes-at-a-time pass, with what ends it at every offset
  const alphabet = ['a', 'b', 'z', 'A', '0', ' ', '!', '#', '~', '/', '\u007f', '"', '\\', '\u0001', '\u001f', 'é'];
  const long = (): string => Array.from({ length: Math.floor(rnd() * longest) }, () => (rnd() < 0.8 ? pick(alphabet.slice(0, 10)) : pick(alphabet))).join('');
  const value = (depth: number): unknown => {
    const r = rnd();
    if (depth > 4 || r < 0.4) return pick([0, -1, 1.5, 1e21, 123456789012345678901234567890, true, false, null, pick(strings), long()]);
    if (r < 0.7) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
    const o: Obj = {};
    for (let i = Math.floor(rnd() * 4); i > 0; i--) o[rnd() < 0.8 ? pick(strings) : long()] = value(depth + 1);
    return o;
  };
  // a letter written as an escape, in a string or a key (`ansible\u005ffacts` is `ansible_facts`)
  const escapeSome = (s: string, p: number): string => (rnd() < p ? s.replace(/[a-z_]/, (c) => '\\u00' + c.charCodeAt(0).toString(16)) : s);
  const space = (): string => (rnd() < 0.2 ? ' '.repeat(1 + Math.floor(rnd() * 2)) : '');
  const write = (v: unknown): string => {
    if (Array.isArray(v)) return '[' + space() + v.map((x) => space() + write(x) + space()).join(',') + ']';
    if (isObject(v)) return '{' + space() + Object.entries(v).map(([k, x]) => escapeSome(JSON.stringify(k), 0.1) + space() + ':' + space() + write(x) + space()).join(',') + '}';
    const s = JSON.stringify(v);
    return typeof v === 'string' ? escapeSome(s, 0.3) : s;
  };
  return () => {
    const top: Obj = {};
    if (rnd() < 0.9) top.seq = pick([1, 2, '3', null]);
    if (rnd() < 0.9) top.playbook = rnd() < 0.8 ? { uuid: 'u', x: value(2) } : value(1);
    if (rnd() < 0.9) {
      top.events = rnd() < 0.9
        ? Array.from({ length: Math.floor(rnd() * 5) }, () => (rnd() < 0.85 ? {
          kind: pick(['result', 'result', 'playbook', 'host', 'record', 'file', 3, null]),
          labels: value(3),
          // a blob field (and others), sometimes long enough to be kept as bytes (api/json_scan.ts asciiEventSpans)
          [pick(['content', 'content', 'facts', 'arguments', 'value'])]: rnd() < 0.3 ? [value(3), 'x'.repeat(120 + Math.floor(rnd() * 16)), value(3)] : value(3),
          ...(rnd() < 0.3 ? { task: value(3) } : {}),
        } : value(2)))
        : value(1);
    }
    if (rnd() < 0.3) top[pick(strings)] = value(1);
    let text = write(top);
    if (rnd() < 0.6) text = text.replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
    if (rnd() < 0.1) text = text.replace('"events"', '"events":[],"events"');
    if (rnd() < 0.05) text = text.replace('"kind"', '"k\\u0069nd"');
    for (let m = rnd() < 0.5 ? 0 : 1 + Math.floor(rnd() * 3); m > 0; m--) {
      const p = Math.floor(rnd() * (text.length + 1));
      const r = rnd();
      if (r < 0.3) text = text.slice(0, p) + text.slice(p + 1);
      else if (r < 0.7) text = text.slice(0, p) + pick(['"', '\\', ',', ':', '{', '}', '[', ']', '0', '-', '.', 'e', 't', ' ', '\n', '\\u12', '\u00a0', '\u0001', '\u001f', '\u007f', '\u0080']) + text.slice(p);
      else text = text.slice(0, p) + text.slice(p, p + 5) + text.slice(p);
    }
    return text;
  };
}

test('a long blob value is kept as bytes, only where the event\'s kind and key are read as written', (t) => {
  const long = JSON.stringify({ stdout: 'x'.repeat(200) });
  const kept = (event: string): string[] => {
    const text = `{"events":[${event}]}`;
    t.is(disagreement(text, 512), null, event);
    const [[, at]] = asciiEventSpans(Buffer.from(text), scanBatchBody(text, 512)!.spans!) as [[string, ElementSpans]];
    return [...at.members!].filter(([, span]) => span[4] !== undefined).map(([key]) => key);
  };
  t.deepEqual(kept(`{"kind":"result","task":"t","content":${long},"host":"h"}`), ['content']);
  t.deepEqual(kept(`{"content":${long},"kind":"host","facts":${long}}`), ['facts']);
  t.deepEqual(kept(`{"kind":"record","key":"k","value":${long}}`), ['value']);
  t.deepEqual(kept(`{"kind":"result","content":{"short":1}}`), []);
  t.deepEqual(kept(`{"kind":"file","path":"p","content":${JSON.stringify('x'.repeat(200))}}`), []); // a file's content is text the shard reads
  // an escaped key may spell the kind or the field: the event keeps all of its text
  t.deepEqual(kept(`{"kind":"result","k\\u0069nd":"host","content":${long}}`), []);
  t.deepEqual(kept(`{"kind":"result","content":${long},"c\\u006fntent":{}}`), []);
  // a key given twice: the last one counts, as in JSON.parse
  t.deepEqual(kept(`{"kind":"host","kind":"result","content":${long},"content":${long}}`), ['content']);
});

test('agrees with JSON.parse on random bodies, valid and broken (seeded)', (t) => {
  const seed = seedFrom('JSON_SCAN_SEED');
  t.log(`seed ${seed} (replay with JSON_SCAN_SEED=${seed})`);
  const rnd = mulberry32(seed + 1);
  const next = randomBodies(seed, 24);
  let answered = 0;
  let objects = 0;
  for (let n = 0; n < 20_000; n++) {
    const text = next();
    const maxDepth = rnd() < 0.2 ? 3 : 512;
    const wrong = disagreement(text, maxDepth) ?? objectDisagreement(text, maxDepth);
    if (wrong !== null) return t.fail(`${wrong}: ${JSON.stringify(text)} (depth ${maxDepth})`);
    if (scanBatchBody(text, maxDepth) !== null) answered++;
    if (scanObjectBody(text, maxDepth) !== null) objects++;
  }
  t.true(answered > 5_000, `answered ${answered} of 20000`); // the fast path is taken, not just safe
  t.true(objects > 5_000, `object scan answered ${objects} of 20000`);
  t.true(keptSeen > 100, `values kept as bytes: ${keptSeen}`); // that path is compared too
  t.log(`values kept as bytes: ${keptSeen}`);
});

test('the WebAssembly skip of member values gives the scan the answer JS gives (seeded)', (t) => {
  t.true(useValueSkip(true), 'this Node runs the WebAssembly skip');
  const seed = seedFrom('JSON_SCAN_SEED');
  t.log(`seed ${seed} (replay with JSON_SCAN_SEED=${seed})`);
  const rnd = mulberry32(seed + 2);
  // strings up to 64 characters: the skip passes 16 bytes at a time, ending at every offset
  const next = randomBodies(seed + 3, 64);
  // values nested to around a depth limit, closed or not, with spaces or not
  const nested = (): string => {
    const depth = 1 + Math.floor(rnd() * 12);
    let v = rnd() < 0.5 ? '1' : '"' + 'x'.repeat(Math.floor(rnd() * 40)) + '"';
    for (let d = 0; d < depth; d++) v = rnd() < 0.5 ? `[${rnd() < 0.2 ? ' ' : ''}${v}]` : `{"ansible_facts"${rnd() < 0.2 ? ' ' : ''}:${v}}`;
    const text = `{"seq":2,"events":[{"kind":"result","content":${v}}]}`;
    return rnd() < 0.2 ? text.slice(0, Math.floor(rnd() * text.length)) : text;
  };
  let answered = 0;
  try {
    for (let n = 0; n < 20_000; n++) {
      const bytes = Buffer.from(n % 5 === 4 ? nested() : next());
      const maxDepth = pick(rnd, [3, 5, 8, 512]);
      useValueSkip(true);
      const withSkip = scanBatchBytes(bytes, maxDepth);
      useValueSkip(false);
      const jsAlone = scanBatchBytes(bytes, maxDepth);
      if (!isDeepStrictEqual(withSkip, jsAlone)) return t.fail(`scans differ: ${JSON.stringify(bytes.toString())} (depth ${maxDepth})`);
      if (withSkip !== null) answered++;
    }
  } finally { useValueSkip(true); }
  t.true(answered > 5_000, `answered ${answered} of 20000`);
});

test('the WebAssembly skip takes the values the JS scan accepts: same end, same flags', (t) => {
  t.true(useValueSkip(true));
  const next = randomBodies(seedFrom('JSON_SCAN_SEED') + 4, 64);
  let taken = 0;
  let containers = 0;
  for (let n = 0; n < 5_000; n++) {
    const bytes = Buffer.from(next());
    useValueSkip(false);
    const scan = scanBatchBytes(bytes, 512);
    useValueSkip(true);
    if (scan?.spans == null) continue;
    const skip = valueSkip!.load(bytes, 512)!;
    const spans = scan.spans;
    for (let i = 0; i < spans.length;) {
      const count = spans[i + 2]!;
      i += 3;
      for (let m = 0; m < Math.max(count, 0); m++, i += 5) {
        const at = spans[i + 2]!;
        if (bytes[at] !== 0x7b && bytes[at] !== 0x5b) continue;
        containers++;
        const end = skip.skip(at, bytes.length, 3, 512);
        if (end !== spans[i + 3]) return t.fail(`skip ended at ${end}, the scan at ${spans[i + 3]}: ${JSON.stringify(bytes.toString())}`);
        if (skip.flags() !== (spans[i + 4]! & 6)) return t.fail(`flags ${skip.flags()}, the scan's ${spans[i + 4]! & 6}: ${JSON.stringify(bytes.toString())}`);
        taken++;
      }
    }
  }
  t.true(containers > 1_000, `${containers} container values`);
  t.is(taken, containers);
});

test('the WebAssembly module was built from json_skip.c as it is (node scripts/build_json_skip.mjs)', (t) => {
  const source = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'src', 'api', 'json_skip.c');
  t.is(createHash('sha256').update(readFileSync(source)).digest('hex'), JSON_SKIP_SOURCE_SHA256);
});

function pick<T>(rnd: () => number, a: readonly T[]): T {
  return a[Math.floor(rnd() * a.length)]!;
}
