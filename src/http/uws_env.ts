// Settings uWebSockets.js takes only from the environment, and only once: its
// native module reads UWS_HTTP_MAX_HEADERS_SIZE (the most bytes a request line
// plus headers may take; more → 431 and the connection closed) in a static
// initializer when it loads. So this module must be evaluated before anything
// imports 'uWebSockets.js' as a value: ESM evaluates a module's imports in
// source order, depth first, so it is the first import of main.ts and of
// server.ts (the only value importer of uWS), and imports nothing itself that
// could load uWS.
//
// logbook's default (LIMITS.headerBytes, 16 KiB) leaves room for list filters
// with many values (`?status=…&status=…`, long name/path substrings) that
// uWS's own 4 KiB would refuse. A value the operator set wins.

import { LIMITS } from '../limits.js';

export const HEADER_BYTES_VARIABLE = 'UWS_HTTP_MAX_HEADERS_SIZE';

const given = process.env[HEADER_BYTES_VARIABLE];
/** The operator set the variable (to anything): logbook leaves it alone. */
export const headerBytesFromOperator = given !== undefined && given !== '';
if (!headerBytesFromOperator) process.env[HEADER_BYTES_VARIABLE] = String(LIMITS.headerBytes);

/** The request-head limit uWS runs with, or null when the operator's value is not a usable byte count. */
export function requestHeadLimit(): number | null {
  const text = process.env[HEADER_BYTES_VARIABLE]!;
  // uWS parses it with atoi: "16k" would silently be 16 and refuse every request.
  if (!/^\d+$/.test(text)) return null;
  const n = Number(text);
  return n >= LIMITS.headerBytesMin && n <= LIMITS.headerBytesMax ? n : null;
}
