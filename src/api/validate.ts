// Body → normalized field values, or DRF-style field errors (docs/api.md#writes, #errors).
// Everything that needs no stored state is decided here, on the front; the
// shard checks foreign keys and uniqueness. JSON-valued fields keep the client's
// own text (minified) so key order and big numbers survive untouched.
import { LIMITS } from '../limits.js';
import { Errors, Messages } from './errors.js';
import type { JsonBytes } from './json_bytes.js';
import { elementSpans, memberSpans, minify, replaceValues, type MemberSpan } from './json_text.js';
import { WRITE_FIELDS, type FieldSpec, type ResourceType } from './resources.js';
import type { CompiledWrite, WriteMode } from './schemas.js';
import { isSupported, parseTimestamp } from './time.js';
import { normalizeUuid } from './uuid.js';

/** Per field, what is wrong with it (a DRF-style 400 body); decided here and by the shard (shard/decide.ts). */
export type FieldErrors = Record<string, string[]>;

export interface Redaction {
  ignoredFacts: readonly string[];
  ignoredArguments: readonly string[];
}

export interface Normalized {
  set: Record<string, unknown>;
  errors: FieldErrors | null;
}

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

const TRUE = new Set<unknown>(['t', 'T', 'y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON', '1', 1, true]);
const FALSE = new Set<unknown>(['f', 'F', 'n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF', '0', 0, false]);
const INT_TEXT = /^\s*[-+]?\d+(?:\.0*)?\s*$/;
/** A UTF-16 surrogate not part of a pair (JSON allows the escape "\ud800"; UTF-8 cannot carry it). */
const LONE_SURROGATE = /\p{Surrogate}/u;
const ID_TEXT = /^\s*\d+\s*$/;

/** Python's name for a JSON value's type, as DRF puts it in messages. */
export function pythonType(v: unknown): string {
  if (typeof v === 'string') return 'str';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  if (Array.isArray(v)) return 'list';
  if (v === null) return 'NoneType';
  return 'dict';
}

/** Python's str() of a scalar (labels given as numbers or booleans). */
function pythonStr(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

/** Length as Python counts it: a surrogate pair is one character, a lone surrogate also one. */
function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/**
 * `numberAt`: the refused value is a number that is no id, and `msg` must name
 * it as the client wrote it (its JSON text, which normalize() has): as a double
 * 12345678901234567890 prints as 12345678901234567000, another number. -1: the
 * value itself; i ≥ 0: element i of a list.
 */
type FieldResult = { ok: true; value: unknown } | { ok: false; msg: string; numberAt?: number };
const ok = (value: unknown): FieldResult => ({ ok: true, value });
const bad = (msg: string): FieldResult => ({ ok: false, msg });

/**
 * Python's str.strip() with no argument: the characters it takes for
 * whitespace (JavaScript's trim() differs: it keeps U+001C–U+001F and U+0085
 * and strips U+FEFF).
 */
const PY_WHITESPACE = '\t\n\v\f\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000';
const SURROUNDING_WHITESPACE = new RegExp(`^[${PY_WHITESPACE}]+|[${PY_WHITESPACE}]+$`, 'g');
const EDGE_WHITESPACE = new RegExp(`^[${PY_WHITESPACE}]|[${PY_WHITESPACE}]$`);

/**
 * A string field as ARA's server stores it: DRF's CharField (trim_whitespace,
 * the default) strips surrounding whitespace before its length and blank
 * checks, so a 254-character name ending in a space is stored as 253. Both
 * write paths apply it: the per-record API here, batch ingest also to the
 * natural keys it looks rows up by (src/shard/ingest.ts), so both store and
 * find the same text.
 */
export function stripWhitespace(s: string): string {
  return EDGE_WHITESPACE.test(s) ? s.replace(SURROUNDING_WHITESPACE, '') : s;
}

function checkString(spec: FieldSpec, raw: string): FieldResult {
  const v = spec.keepWhitespace ? raw : stripWhitespace(raw);
  if (!spec.blank && v.length === 0) return bad(Messages.notBlank);
  if (spec.maxLength !== undefined && v.length > spec.maxLength && codePoints(v) > spec.maxLength) {
    return bad(Messages.maxLength(spec.maxLength));
  }
  return ok(v);
}

export function parseId(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : undefined;
  if (typeof v === 'string' && ID_TEXT.test(v)) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  return undefined;
}

type FkResult = { ok: true; value: number } | { ok: false; msg: string; numberAt?: number };

/**
 * A foreign key by the per-record API's rules (docs/api.md#writes): an integer, or a
 * string of decimal digits (surrounding whitespace allowed), ≥ 1. Whether the
 * record exists is for the caller to check. Batch ingest names a playbook by id
 * with the same rules (fkId).
 */
function checkFk(v: unknown): FkResult {
  const id = parseId(v);
  if (id !== undefined) return id >= 1 ? { ok: true, value: id } : { ok: false, msg: Errors.invalidPk(id) };
  // a number: 1.5, -0.5, 1e30, or an integer past 2^53 (which only its text names exactly)
  if (typeof v === 'number') return { ok: false, msg: Errors.invalidPk(String(v)), numberAt: -1 };
  if (typeof v === 'string' && INT_TEXT.test(v)) return { ok: false, msg: Errors.invalidPk(v) };
  return { ok: false, msg: Messages.pkType(pythonType(v)) };
}

/**
 * A foreign key given outside a write body (batch ingest's `playbook.id`): its
 * id, or the message refusing it. `numberText`: the value's JSON text, asked
 * for only to name a number that is no id as the client sent it.
 */
export function fkId(v: unknown, numberText: () => string): { ok: true; value: number } | { ok: false; msg: string } {
  if (v === null) return { ok: false, msg: Messages.notNull };
  const r = checkFk(v);
  return r.ok || r.numberAt === undefined ? r : { ok: false, msg: Errors.invalidPk(numberText()) };
}

/** Coerce and check one non-null value (the slow path: anything a client might send). */
function checkValue(spec: FieldSpec, v: unknown): FieldResult {
  switch (spec.kind) {
    case 'string': {
      if (typeof v === 'string') return checkString(spec, v);
      if (typeof v === 'number' && Number.isFinite(v)) return checkString(spec, String(v));
      return bad(Messages.invalidString);
    }
    case 'text': return typeof v === 'string' ? ok(v) : bad(Messages.invalidString);
    case 'int': {
      if (typeof v === 'number') return Number.isSafeInteger(v) ? ok(v) : bad(Messages.invalidInt);
      if (typeof v === 'string' && INT_TEXT.test(v)) {
        const n = Math.trunc(Number(v));
        return Number.isSafeInteger(n) ? ok(n) : bad(Messages.invalidInt);
      }
      return bad(Messages.invalidInt);
    }
    case 'bool':
      if (TRUE.has(v)) return ok(true);
      if (FALSE.has(v)) return ok(false);
      return bad(Messages.invalidBool);
    case 'timestamp': {
      const us = typeof v === 'string' ? parseTimestamp(v) : undefined;
      if (us === undefined) return bad(Messages.invalidDatetime);
      return isSupported(us) ? ok(us) : bad(Messages.datetimeOutOfRange(v as string));
    }
    case 'choice': {
      const s = typeof v === 'string' ? v : pythonStr(v) ?? JSON.stringify(v);
      return spec.choices!.includes(s) ? ok(s) : bad(Messages.invalidChoice(s));
    }
    case 'uuid': {
      const u = typeof v === 'string' ? normalizeUuid(v) : undefined;
      return u === undefined ? bad(Messages.invalidUuid) : ok(u);
    }
    case 'fk': return checkFk(v);
    case 'fklist': {
      if (!Array.isArray(v)) return bad(Messages.notAList(pythonType(v)));
      // a set, as ARA's many-to-many field stores it: an id sent twice is kept once (first place)
      const ids: number[] = [];
      for (let i = 0; i < v.length; i++) {
        const r = checkFk(v[i]);
        if (!r.ok) return r.numberAt === undefined ? r : { ok: false, msg: r.msg, numberAt: i };
        if (!ids.includes(r.value as number)) ids.push(r.value as number);
      }
      return ok(ids);
    }
    case 'labels': {
      if (!Array.isArray(v)) return bad(Messages.notAList(pythonType(v)));
      if (v.length > LIMITS.labelsPerPlaybook) return bad(Messages.maxElements(LIMITS.labelsPerPlaybook));
      const names: string[] = [];
      for (const item of v) {
        const name = pythonStr(item);
        if (name === undefined) return bad(Messages.invalidString);
        if (codePoints(name) > LIMITS.nameLength) return bad(Messages.maxLength(LIMITS.nameLength));
        if (!names.includes(name)) names.push(name);
      }
      return ok(names);
    }
    case 'json': return ok(undefined); // the text is taken from the body below
  }
}

/** Bytes of a JSON value's stored text (UTF-8), counted only when it may be near a bound. */
function jsonBytes(value: string | JsonBytes): number {
  if (typeof value !== 'string') return value.length;
  return value.length * 3 <= LIMITS.playbookArgumentsBytes ? value.length : Buffer.byteLength(value, 'utf8');
}

const isText = (spec: FieldSpec): boolean => spec.kind === 'string' || spec.kind === 'text' || spec.kind === 'labels';

/**
 * Text that storage keeps exactly as acknowledged: no lone UTF-16 surrogate. JSON
 * allows the escape "\ud800", but the journal and snapshots hold UTF-8, which
 * cannot carry it: such a string was served as sent until a restart, then came
 * back as U+FFFD (a batch's host name or play uuid then named another row). Every
 * string a write keeps is checked with this, on both write paths (validated
 * fields here; the batch's keys in src/shard/ingest.ts and src/http/ingest.ts).
 */
export function storableText(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

function hasLoneSurrogate(v: unknown): boolean {
  if (typeof v === 'string') return !storableText(v);
  if (Array.isArray(v)) return v.some((x) => typeof x === 'string' && !storableText(x));
  return false;
}

/**
 * Canonical values (passed the compiled schema) need conversion only; a
 * timestamp or a UUID, which the schema takes as any string, also the check
 * that it is one (FAILED: it is not, its field takes the slow path).
 */
function convertCanonical(spec: FieldSpec, v: unknown): unknown {
  switch (spec.kind) {
    case 'timestamp': {
      const us = parseTimestamp(v as string);
      return isSupported(us) ? us : FAILED;
    }
    case 'uuid': return normalizeUuid(v as string) ?? FAILED;
    case 'labels': return (v as string[]).length > LIMITS.labelsPerPlaybook ? FAILED : [...new Set(v as string[])];
    case 'string': {
      if (spec.keepWhitespace) return v;
      const s = stripWhitespace(v as string);
      // stripped to nothing, or the schema's length check passed on what strip shortened: the slow path decides
      return s === v ? v : FAILED;
    }
    case 'fklist': return [...new Set(v as number[])]; // a set, as in checkValue
    default: return v;
  }
}
const FAILED = Symbol('not canonical');

/** A JSON field whose stored text has members redacted (docs/api.md#writes): which keys, the setting that names them, and the member they are in (null: the value itself). */
interface Redacted { field: string; keys: readonly string[]; setting: string; within: string | null }

export class BodyNormalizer {
  /** per type, its one field with members redacted, if the configuration redacts any */
  private readonly redacted: Partial<Record<ResourceType, Redacted>> = {};

  constructor(
    private readonly validators: Record<ResourceType, Record<WriteMode, CompiledWrite>>,
    redaction: Redaction,
  ) {
    const { ignoredFacts, ignoredArguments } = redaction;
    if (ignoredFacts.length) {
      this.redacted.host = { field: 'facts', keys: ignoredFacts, setting: 'ignored_facts', within: null };
      this.redacted.result = { field: 'content', keys: ignoredFacts, setting: 'ignored_facts', within: 'ansible_facts' };
    }
    if (ignoredArguments.length) this.redacted.playbook = { field: 'arguments', keys: ignoredArguments, setting: 'ignored_arguments', within: null };
  }

  /**
   * `body` is the parsed object, `text[start, end)` the exact JSON text it was
   * parsed from (a batch's event is a span of the batch's text). Members of
   * `body` that are not JSON-valued fields may have been replaced by the caller
   * (batch ingest puts ids where the client named parents by natural key).
   */
  normalize(type: ResourceType, mode: WriteMode, body: Record<string, unknown>, text: string, start = 0, end = text.length,
    members?: Map<string, MemberSpan>): Normalized {
    const canonical = this.validators[type][mode].Check(body);
    const set: Record<string, unknown> = {};
    const errors: FieldErrors = {};
    let hasErrors = false;
    let spans = members;
    for (const spec of WRITE_FIELDS[type]) {
      let key = spec.name;
      let present = hasOwn(body, key);
      if (!present && spec.alias && hasOwn(body, spec.alias)) { key = spec.alias; present = true; }
      if (!present) {
        if (spec.required && mode !== 'patch') { errors[spec.name] = [Messages.required]; hasErrors = true; }
        else if (mode === 'put' && spec.resetTo !== undefined) set[spec.name] = spec.resetTo;
        continue;
      }
      const value = body[key];
      if (value === null) {
        if (spec.nullable) set[spec.name] = null;
        else { errors[key] = [Messages.notNull]; hasErrors = true; }
        continue;
      }
      if (isText(spec) && hasLoneSurrogate(value)) {
        // stored text must survive UTF-8 (msgpackr, LMDB) unchanged; JSON-valued
        // fields are kept as the client's escaped text and are not affected
        errors[key] = [Messages.unpairedSurrogate]; hasErrors = true;
        continue;
      }
      if (spec.kind === 'json') {
        spans ??= memberSpans(text, start, end)!;
        const stored = this.jsonText(type, spec.name, text, spans.get(key)!);
        if (type === 'playbook' && spec.name === 'arguments' && jsonBytes(stored) > LIMITS.playbookArgumentsBytes) {
          errors[key] = [Messages.maxBytes(LIMITS.playbookArgumentsBytes)]; hasErrors = true;
          continue;
        }
        set[spec.name] = stored;
        continue;
      }
      // an alias is not in the schema, so only the field's own name is known canonical
      if (canonical && key === spec.name) {
        const converted = convertCanonical(spec, value);
        if (converted !== FAILED) { set[spec.name] = converted; continue; }
      }
      const r = checkValue(spec, value);
      if (r.ok) set[spec.name] = r.value;
      else {
        let msg = r.msg;
        if (r.numberAt !== undefined) {
          spans ??= memberSpans(text, start, end);
          const sent = numberText(text, spans?.get(key), r.numberAt);
          if (sent !== undefined) msg = Errors.invalidPk(sent);
        }
        errors[key] = [msg];
        hasErrors = true;
      }
    }
    return { set, errors: hasErrors ? errors : null };
  }

  /**
   * The stored text of a JSON field, with the configured facts/arguments
   * redacted; a value given as bytes (MemberSpan) stays bytes when it is stored
   * as sent, else its text is what is stored (minified, redacted).
   */
  private jsonText(type: ResourceType, field: string, text: string, [start, end, compact, noFacts, bytes]: MemberSpan): string | JsonBytes {
    const redacted = this.redacted[type]?.field === field ? this.redacted[type] : undefined;
    if (bytes !== undefined) {
      // stored as sent: compact, and nothing to redact (a content the scan saw no ansible_facts in)
      if (compact && (redacted === undefined || (redacted.within !== null && noFacts === true))) return bytes;
      return this.jsonText(type, field, bytes.text(), [0, bytes.length, compact, noFacts]);
    }
    if (redacted !== undefined) {
      if (redacted.within === null) return redact(text, start, end, redacted.keys, redacted.setting);
      // most results carry no facts: the body scan says so (noFacts false: it saw the key, or an escaped key that may be it),
      // else (no scan flags) a search of the text (native) before a scan of its members
      if (noFacts === false || (noFacts === undefined && mayHaveKey(text, start, end, redacted.within))) {
        const inner = memberSpans(text, start, end)?.get(redacted.within);
        if (inner) {
          const values = redact(text, inner[0], inner[1], redacted.keys, redacted.setting);
          return minify(text, start, inner[0]) + values + minify(text, inner[1], end);
        }
      }
    }
    return compact ? text.slice(start, end) : minify(text, start, end);
  }
}

/**
 * The JSON text of a member's value (`at` -1) or of element `at` of it, as the
 * client wrote it; undefined if it is not there (a member the caller replaced).
 */
function numberText(text: string, member: MemberSpan | undefined, at: number): string | undefined {
  if (member === undefined) return undefined;
  if (at < 0) return text.slice(member[0], member[1]);
  const element = elementSpans(text, member[0], member[1])?.[at];
  return element && text.slice(element[0], element[1]);
}

/**
 * Whether text[start, end) may hold the member name `key`: it appears as
 * written, or the text has a `\u` escape, which can spell any of its letters
 * (`"ansible\u005ffacts"` is `"ansible_facts"`). A cheap test before a scan;
 * a slice is a view, not a copy.
 */
function mayHaveKey(text: string, start: number, end: number, key: string): boolean {
  const slice = text.slice(start, end);
  return slice.includes(`"${key}"`) || slice.includes('\\u');
}

/** Replace the values of the named members of an object, if present (docs/api.md#writes). */
function redact(text: string, start: number, end: number, keys: readonly string[], setting: string): string {
  const members = memberSpans(text, start, end);
  if (!members) return minify(text, start, end);
  const notice = JSON.stringify(`Not saved as configured by '${setting}'`);
  // ARA's callbacks redact on their side with their own words: a value that is
  // already their notice holds nothing to keep out, and stays as ARA's clients show it
  const araNotice = JSON.stringify(`Not saved by ARA as configured by '${setting}'`);
  const replacements = new Map<string, string>();
  for (const key of keys) {
    const span = members.get(key);
    if (span && text.slice(span[0], span[1]) !== araNotice) replacements.set(key, notice);
  }
  return replacements.size ? replaceValues(text, start, end, replacements) : minify(text, start, end);
}
