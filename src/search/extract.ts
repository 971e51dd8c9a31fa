// A search document's text: every string value of its JSON fields (result
// content, facts, arguments, record values) with the path it sits at
// (`content.stdout`, `content.results.0.msg`), and its plain text fields, joined
// into one body. `spans` say where each field starts, so a hit can say which
// field matched, and a snippet can show it.
import type { SearchDoc } from '../shard/search_feed.js';

/** [field path, offset of its text in the body] */
export type FieldSpan = [string, number];

/** A document's body is cut here: the index is for finding, not for storing whole files. */
const MAX_BODY = 1 << 20;

export function textOf(doc: SearchDoc): { body: string; spans: FieldSpan[] } {
  const parts: string[] = [];
  const spans: FieldSpan[] = [];
  let length = 0;
  const add = (field: string, text: string): boolean => {
    if (length >= MAX_BODY) return false;
    const piece = text.length > MAX_BODY - length ? text.slice(0, MAX_BODY - length) : text;
    spans.push([field, length]);
    parts.push(piece);
    length += piece.length + 1;
    return true;
  };
  for (const [field, text] of doc.text) add(field, text);
  for (const [field, json] of doc.json) {
    let value: unknown;
    try { value = JSON.parse(json); } catch { add(field, json); continue; }
    walk(value, field, add);
  }
  return { body: parts.join('\n'), spans };
}

/** Every string (and, as text, every number and boolean) under `value`, with its path. */
function walk(value: unknown, path: string, add: (field: string, text: string) => boolean): boolean {
  if (typeof value === 'string') return value === '' ? true : add(path, value);
  if (typeof value === 'number' || typeof value === 'boolean') return add(path, String(value));
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!walk(value[i], `${path}.${i}`, add)) return false;
    return true;
  }
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      // Ansible sends a command's output twice: `stdout` and `stdout_lines` (stderr too); the text is indexed once
      if (key.endsWith('_lines') && Array.isArray(o[key]) && typeof o[key.slice(0, -6)] === 'string') continue;
      if (!walk(o[key], `${path}.${key}`, add)) return false;
    }
  }
  return true;
}

/** The field a body offset belongs to. */
export function fieldAt(spans: readonly FieldSpan[], offset: number): string {
  let field = spans[0]?.[0] ?? 'text';
  for (const [name, start] of spans) { if (start > offset) break; field = name; }
  return field;
}

const CONTEXT = 60;

/**
 * Where the first of `terms` occurs in `text`, as a snippet with the match
 * marked «like this», or null. Case-insensitive; a prefix term matches the
 * start of a word, a word matches a whole word or the start of a phrase.
 */
export function snippet(text: string, terms: ReadonlyArray<{ text: string; prefix: boolean }>): { at: number; snippet: string } | null {
  const lower = text.toLowerCase();
  let best = -1;
  let bestLength = 0;
  for (const term of terms) {
    const needle = term.text.toLowerCase();
    if (!needle) continue;
    let from = 0;
    for (;;) {
      const at = lower.indexOf(needle, from);
      if (at < 0) break;
      const before = at === 0 ? '' : lower[at - 1]!;
      const after = lower[at + needle.length] ?? '';
      if (!isWordChar(before) && (term.prefix || !isWordChar(after))) {
        if (best < 0 || at < best) { best = at; bestLength = needle.length; }
        break;
      }
      from = at + 1;
    }
  }
  if (best < 0) return null;
  let end = best + bestLength;
  if (terms.some((t) => t.prefix)) while (end < text.length && isWordChar(lower[end]!)) end++;
  const start = Math.max(0, best - CONTEXT);
  const stop = Math.min(text.length, end + CONTEXT);
  const line = (s: string) => s.replace(/\s+/g, ' ');
  return {
    at: best,
    snippet: `${start > 0 ? '…' : ''}${line(text.slice(start, best))}«${text.slice(best, end)}»${line(text.slice(end, stop))}${stop < text.length ? '…' : ''}`,
  };
}

function isWordChar(c: string): boolean {
  return c !== '' && /[\p{L}\p{N}_]/u.test(c);
}
