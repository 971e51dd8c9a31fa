// The search query language (docs/search.md#the-query-language): what a person
// types in a search box, turned into an SQLite FTS5 MATCH expression over the
// index's columns (src/search/fts_index.ts), plus time filters and the terms
// to mark in snippets. Every word is quoted for FTS5, so nothing a user types
// is FTS5 syntax (`foo:bar`, `a-b`, `AND`, `(x)` are words); only the forms
// below mean something.
//
//   word            the record's own text holds it (body : "word")
//   "a phrase"      the words in that order
//   pre*            a word starting with pre
//   -term           not (any of the forms, field terms too)
//   host:web03      a field: host task play playbook path status label action
//   after:/before:  a date (UTC midnight) or an ISO 8601 time with Z or an offset
import { COLUMNS } from './columns.js';

export interface SearchQuery {
  /** FTS5 MATCH expression (never empty) */
  match: string;
  /** created at or after / before, microseconds since the epoch; null when not given */
  after: number | null;
  before: number | null;
  /** the positive words and phrases, lower-cased, for marking snippets */
  highlight: Array<{ text: string; prefix: boolean }>;
}

export const SEARCH_QUERY_LIMITS = { maxLength: 1000, maxTerms: 32 } as const;

const FIELDS: ReadonlySet<string> = new Set(COLUMNS);
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;
// A word with no letter or digit is nothing FTS5's tokenizer keeps (`***`, `--`, emoji), and a quoted
// string without a token does not just match nothing: `"x" AND ""` finds no row at all, so such words
// are dropped. unicode61 follows Unicode 6.1, where these New Tai Lue and Vedic signs were not letters yet.
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
const NOT_TOKEN_IN_UNICODE_6_1 = /[\u19B0-\u19C0\u19C8\u19C9\u1CF2\u1CF3]/gu;
const hasToken = (text: string) => LETTER_OR_DIGIT.test(text.replace(NOT_TOKEN_IN_UNICODE_6_1, ''));
// Whitespace separates terms, and so do control characters (FTS5 ends a string at NUL; a tab or a
// NUL pasted from a log is meant as a gap); inside a phrase they become spaces.
const GAP = /[\s\p{Cc}]/u;
const CONTROL = /\p{Cc}/gu;

type Parsed = { ok: true; query: SearchQuery } | { ok: false; error: string };

interface Term { negative: boolean; field: string | null; text: string; phrase: boolean; prefix: boolean; at: number }

export function parseSearchQuery(q: string): Parsed {
  if (q.length > SEARCH_QUERY_LIMITS.maxLength) return fail(`the query is longer than ${SEARCH_QUERY_LIMITS.maxLength} characters`);
  if (q.trim() === '') return fail('the query is empty');
  const terms: Term[] = [];
  let after: number | null = null;
  let before: number | null = null;
  let count = 0;
  let i = 0;
  while (i < q.length) {
    if (GAP.test(q[i]!)) { i++; continue; }
    const at = i;
    const negative = q[i] === '-' && i + 1 < q.length && !GAP.test(q[i + 1]!);
    if (negative) i++;
    // a field name: letters then a colon, only for the known names (else the whole token is a word)
    let field: string | null = null;
    const name = /^([A-Za-z]+):/.exec(q.slice(i));
    if (name !== null) {
      const lower = name[1]!.toLowerCase();
      if (FIELDS.has(lower) || lower === 'after' || lower === 'before') { field = lower; i += name[0].length; }
    }
    let text: string;
    let phrase = false;
    if (q[i] === '"') {
      const close = q.indexOf('"', i + 1);
      if (close < 0) return fail(`unclosed quote at character ${i + 1}`);
      text = q.slice(i + 1, close).replace(CONTROL, ' ');
      phrase = true;
      i = close + 1;
    } else {
      let end = i;
      while (end < q.length && !GAP.test(q[end]!) && q[end] !== '"') end++;
      text = q.slice(i, end);
      i = end;
    }
    let prefix = false;
    if (q[i] === '*') { prefix = true; i++; } // "a phrase"*
    else if (!phrase && text.length > 1 && text.endsWith('*') && !text.endsWith('**')) { prefix = true; text = text.slice(0, -1); }
    count++;
    if (count > SEARCH_QUERY_LIMITS.maxTerms) return fail(`the query has more than ${SEARCH_QUERY_LIMITS.maxTerms} terms`);
    const shown = q.slice(at, i);
    if (field !== null && text === '') return fail(`"${shown}" has no value after the colon`);
    if (field === 'after' || field === 'before') {
      if (negative) return fail(`"${shown}": a time cannot be negated (use after: or before: instead)`);
      const micros = timeOf(text);
      if (micros === null) return fail(`"${shown}" is not a date (2026-11-01) or a time (2026-11-01T10:00:00Z)`);
      if (field === 'after') after = micros; else before = micros;
      continue;
    }
    if (!hasToken(text)) continue; // nothing a tokenizer would keep: `***`, `--`, `:`
    terms.push({ negative, field, text, phrase, prefix, at });
  }
  const positive = terms.filter((t) => !t.negative);
  const negative = terms.filter((t) => t.negative);
  if (positive.length === 0) {
    if (negative.length > 0) return fail('the query needs at least one term to find, not only -terms');
    return fail('the query has no word to find');
  }
  const expr = (t: Term): string => `${t.field ?? 'body'} : "${t.text.replace(/"/g, '""')}"${t.prefix ? ' *' : ''}`;
  const found = positive.map(expr).join(' AND ');
  const match = negative.length === 0 ? found : `(${found}) NOT (${negative.map(expr).join(' OR ')})`;
  return {
    ok: true,
    query: { match, after, before, highlight: positive.map((t) => ({ text: t.text.toLowerCase(), prefix: t.prefix })) },
  };
}

/** A date (UTC midnight) or an ISO 8601 time with a zone, in microseconds; null if it is neither or impossible. */
function timeOf(text: string): number | null {
  const d = DATE.exec(text);
  if (d !== null) {
    const ms = Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3]));
    const back = new Date(ms);
    // Date.UTC rolls 2026-02-30 over into March: an impossible date is refused, not moved
    if (back.getUTCFullYear() !== Number(d[1]) || back.getUTCMonth() !== Number(d[2]) - 1 || back.getUTCDate() !== Number(d[3])) return null;
    return ms * 1000;
  }
  if (!DATETIME.test(text)) return null;
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) return null;
  const [y, m, day] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  const probe = new Date(Date.UTC(y, m - 1, day));
  if (probe.getUTCMonth() !== m - 1 || probe.getUTCDate() !== day) return null;
  // Date.parse keeps milliseconds: the whole seconds from it, the fraction (to the microsecond) from the text
  const fraction = /\.(\d{1,6})/.exec(text)?.[1] ?? '';
  return Math.floor(ms / 1000) * 1_000_000 + Number(fraction.padEnd(6, '0'));
}

function fail(error: string): Parsed {
  return { ok: false, error };
}
