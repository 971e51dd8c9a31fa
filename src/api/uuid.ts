// UUID normalisation with the acceptance rules of Python's `uuid.UUID(hex)`
// (which is what ARA's DRF UUIDField calls), so that every form the ARA
// callback or a user could send in is stored the same way:
//
//   hex = hex.replace('urn:', '').replace('uuid:', '')   # anywhere, not just a prefix
//   hex = hex.strip('{}').replace('-', '')               # braces at the ends, hyphens anywhere
//   if len(hex) != 32: raise ValueError
//   int(hex, 16)
//
// No whitespace stripping. One deliberate difference: Python's int() also
// tolerates surrounding whitespace, a sign, a `0x` prefix and `_` between
// digits inside those 32 characters; we require 32 plain hex digits.

/** 1 for 0-9a-fA-F, by char code (< 128). */
const HEX = new Uint8Array(128);
for (const c of '0123456789abcdefABCDEF') HEX[c.charCodeAt(0)] = 1;

function isHex(c: number): boolean {
  return c < 128 && HEX[c] === 1;
}

/** True if s is already `8-4-4-4-12` hex (any case): the form clients send. */
function isCanonical(s: string): boolean {
  if (s.length !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const c = s.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45 /* - */) return false;
    } else if (!isHex(c)) {
      return false;
    }
  }
  return true;
}

/**
 * Lower-case hyphenated `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, or undefined if
 * Python's `uuid.UUID(s)` would raise.
 */
export function normalizeUuid(s: string): string | undefined {
  // Fast path: the canonical form needs no rebuilding (and no allocation when
  // it is already lower case, which toLowerCase detects).
  if (isCanonical(s)) return s.toLowerCase();

  if (s.indexOf(':') >= 0) s = s.replaceAll('urn:', '').replaceAll('uuid:', '');
  let a = 0;
  let b = s.length;
  // strip('{}'): any run of either brace at either end.
  while (a < b && (s.charCodeAt(a) === 123 || s.charCodeAt(a) === 125)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 123 || s.charCodeAt(b - 1) === 125)) b--;

  let hex = '';
  let count = 0;
  let run = a; // start of the current run of hex digits, copied in one slice
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c === 45 /* - */) {
      hex += s.slice(run, i);
      run = i + 1;
    } else if (isHex(c)) {
      if (++count > 32) return undefined;
    } else {
      return undefined;
    }
  }
  if (count !== 32) return undefined;
  hex = (hex + s.slice(run, b)).toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
