// Microsecond timestamps. A JS Date only has milliseconds, and ARA clients send
// and compare microseconds, so every instant in logbook is a plain `number`:
// integer microseconds since 1970-01-01T00:00:00Z.
//
// Precision: 2^53 µs covers roughly the years 1685–2255 exactly, which holds
// every real run. Further out a double is spaced 2–32 µs apart, so the
// fraction is rounded to that spacing there. Whole seconds stay exact for every
// year 0001–9999: they are multiples of 10^6 = 2^6 · 15625 µs. A write takes
// only timestamps of the supported range (1700-01-01 to 2250-12-31 UTC, inside
// the exact one: isSupported), so every stored instant keeps its microseconds
// (docs/api.md#conventions); list filters parse the whole 0001–9999 range, which compares
// correctly with every stored value.
//
// Parsing and formatting are hand-written over char codes: they run for every
// timestamp of every request and response, and Date/regex/Intl would allocate
// and still lose the microseconds.

export const TIMESTAMP_FORMAT_MESSAGE =
  'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].';

const US_PER_SECOND = 1_000_000;
const US_PER_DAY = 86_400_000_000;

/** Digit value of s[i], or -1 (also past the end: charCodeAt gives NaN, which fails both tests). */
function digit(s: string, i: number): number {
  const c = s.charCodeAt(i);
  return c >= 48 && c <= 57 ? c - 48 : -1;
}

/** Two-digit number at s[i..i+2), or -1. */
function twoDigits(s: string, i: number): number {
  const a = digit(s, i);
  const b = digit(s, i + 1);
  return a < 0 || b < 0 ? -1 : a * 10 + b;
}

function isLeapYear(y: number): boolean {
  return (y & 3) === 0 && (y % 100 !== 0 || y % 400 === 0);
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return isLeapYear(y) ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

/**
 * Days since 1970-01-01 of a proleptic Gregorian date (y ≥ 0). Howard Hinnant's
 * days_from_civil: branch-light and exact, no Date object needed.
 */
function daysFromCivil(y: number, m: number, d: number): number {
  if (m <= 2) y -= 1;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400; // [0, 399]
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1; // [0, 365]
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy; // [0, 146096]
  return era * 146097 + doe - 719468;
}

// Parsed results are kept inside years 0001–9999 (after applying the offset) so
// that formatTimestamp always has a 4-digit year to print. The bounds are
// checked on whole seconds, which are exact; near year 10000 a fraction can
// still round the double up to END_US, so such values are pulled back to the
// largest double below it (doubles there are 32 apart).
const MIN_SECONDS = daysFromCivil(1, 1, 1) * 86400;
const END_SECONDS = daysFromCivil(10000, 1, 1) * 86400;
const END_US = END_SECONDS * US_PER_SECOND;
const LAST_US = END_US - 32;

// The instants a write may store: [1700-01-01T00:00:00Z, 2251-01-01T00:00:00Z),
// whole years inside ±2^53 µs of the epoch (±285 years), where a double holds
// every microsecond. Outside it µs would be rounded to 2–32 µs, silently.
const SUPPORTED_MIN_US = daysFromCivil(1700, 1, 1) * US_PER_DAY;
const SUPPORTED_END_US = daysFromCivil(2251, 1, 1) * US_PER_DAY;
/** The supported range as messages and documentation name it. */
export const SUPPORTED_RANGE = '1700-01-01 to 2250-12-31 UTC';

/** Whether a parsed timestamp may be stored (in the supported range, so exact to the µs); false for undefined. */
export function isSupported(us: number | undefined): us is number {
  return (us as number) >= SUPPORTED_MIN_US && (us as number) < SUPPORTED_END_US;
}

/**
 * Parses `YYYY-MM-DD[T| ]hh:mm[:ss[.f{1,9}]][Z|z|±hh:mm|±hhmm]` into µs since
 * the epoch. No offset means UTC. Fraction digits past the sixth are truncated.
 * Anything else (a date alone, extra characters, out-of-range fields) gives
 * undefined; the caller reports TIMESTAMP_FORMAT_MESSAGE.
 */
export function parseTimestamp(s: string): number | undefined {
  const n = s.length;
  // Shortest accepted form is YYYY-MM-DDThh:mm (16 chars).
  if (n < 16) return undefined;
  const y1 = twoDigits(s, 0);
  const y2 = twoDigits(s, 2);
  if (y1 < 0 || y2 < 0 || s.charCodeAt(4) !== 45 /* - */ || s.charCodeAt(7) !== 45) return undefined;
  const year = y1 * 100 + y2;
  const month = twoDigits(s, 5);
  const day = twoDigits(s, 8);
  const sep = s.charCodeAt(10);
  if (sep !== 84 /* T */ && sep !== 32 /* space */) return undefined;
  const hour = twoDigits(s, 11);
  const minute = twoDigits(s, 14);
  if (s.charCodeAt(13) !== 58 /* : */) return undefined;
  // twoDigits gives -1 on a non-digit, so these range tests also reject those.
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59) return undefined;

  let i = 16;
  let second = 0;
  let fraction = 0; // µs
  if (s.charCodeAt(i) === 58 /* : */) {
    second = twoDigits(s, i + 1);
    if (second < 0 || second > 59) return undefined;
    i += 3;
    if (s.charCodeAt(i) === 46 /* . */) {
      i++;
      const fracStart = i;
      // Read up to 9 digits; only the first 6 count (truncation, not rounding).
      let scale = US_PER_SECOND;
      for (let d = digit(s, i); d >= 0 && i - fracStart < 9; d = digit(s, ++i)) {
        scale /= 10; // exact: 10^6 / 10^k for k ≤ 6 is an integer
        if (scale >= 1) fraction += d * scale;
      }
      if (i === fracStart) return undefined;
    }
  }

  let offsetMinutes = 0;
  if (i < n) {
    const c = s.charCodeAt(i);
    if (c === 90 /* Z */ || c === 122 /* z */) {
      i++;
    } else if (c === 43 /* + */ || c === 45 /* - */) {
      const oh = twoDigits(s, i + 1);
      let om: number;
      if (s.charCodeAt(i + 3) === 58 /* : */) {
        om = twoDigits(s, i + 4);
        i += 6;
      } else {
        om = twoDigits(s, i + 3);
        i += 5;
      }
      if (oh < 0 || oh > 23 || om < 0 || om > 59) return undefined;
      offsetMinutes = c === 43 ? oh * 60 + om : -(oh * 60 + om);
    }
    // Anything left over (junk, a 10th fraction digit, a short offset) is an error.
    if (i !== n) return undefined;
  }

  const seconds = daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60;
  if (seconds < MIN_SECONDS || seconds >= END_SECONDS) return undefined;
  const us = seconds * US_PER_SECOND + fraction;
  return us < END_US ? us : LAST_US;
}

// "00".."99": formatting pads with a table lookup instead of padStart calls.
const TWO_DIGITS: string[] = [];
for (let i = 0; i < 100; i++) TWO_DIGITS.push(i < 10 ? '0' + i : String(i));

/** Six-digit zero-padded fraction from three table lookups (no number→string conversion). */
function sixDigits(us: number): string {
  return TWO_DIGITS[(us / 10000) | 0]! + TWO_DIGITS[((us / 100) | 0) % 100]! + TWO_DIGITS[us % 100]!;
}

/**
 * Floor-divides µs into [whole seconds, µs remainder in [0, 10^6)]. The float
 * division may round up to the next integer near a boundary (or outside the
 * 2^53 range), so the remainder is corrected rather than trusted.
 */
let splitSeconds = 0;
function splitMicros(us: number): number {
  let sec = Math.floor(us / US_PER_SECOND);
  let rem = us - sec * US_PER_SECOND;
  if (rem < 0) {
    sec -= 1;
    rem += US_PER_SECOND;
  } else if (rem >= US_PER_SECOND) {
    sec += 1;
    rem -= US_PER_SECOND;
  }
  splitSeconds = sec; // second result via module state: avoids a tuple per call
  return rem;
}

/**
 * `YYYY-MM-DDThh:mm:ss.ffffffZ`, always six fraction digits. Correct before
 * 1970 (floor division) and for years 0001–9999. A non-integer input is floored
 * to the microsecond.
 */
export function formatTimestamp(us: number): string {
  const rem = splitMicros(Math.floor(us));
  const sec = splitSeconds;
  // The timestamps of one commit's rows (a batch's results, their created and
  // updated) mostly fall in the same second: its text up to the fraction is kept.
  if (sec === lastSecond) return lastPrefix + sixDigits(rem) + 'Z';
  const days = Math.floor(sec / 86400);
  let sod = sec - days * 86400; // second of day, [0, 86399]

  // Hinnant's civil_from_days. `(x / n) | 0` is floor for these small
  // non-negative values and cheaper than Math.floor.
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097; // [0, 146096]
  const yoe = ((doe - ((doe / 1460) | 0) + ((doe / 36524) | 0) - ((doe / 146096) | 0)) / 365) | 0; // [0, 399]
  const doy = doe - (365 * yoe + ((yoe / 4) | 0) - ((yoe / 100) | 0)); // [0, 365]
  const mp = ((5 * doy + 2) / 153) | 0; // [0, 11], March-based
  const day = doy - (((153 * mp + 2) / 5) | 0) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);

  const hour = (sod / 3600) | 0;
  sod -= hour * 3600;
  const minute = (sod / 60) | 0;
  const second = sod - minute * 60;
  const yy = year >= 0 && year < 10000 ? TWO_DIGITS[(year / 100) | 0]! + TWO_DIGITS[year % 100]! : String(year);
  lastSecond = sec;
  lastPrefix = `${yy}-${TWO_DIGITS[month]}-${TWO_DIGITS[day]}T${TWO_DIGITS[hour]}:${TWO_DIGITS[minute]}:${TWO_DIGITS[second]}.`;
  return lastPrefix + sixDigits(rem) + 'Z';
}

/** The second formatTimestamp formatted last, and its text up to the fraction. */
let lastSecond = NaN;
let lastPrefix = '';

/**
 * `HH:MM:SS.ffffff` with hours not folded into days (at least two digits, so
 * 27 h is `27:00:00.000000`). Negative durations get a leading `-`; they are
 * rejected on input but must never crash output.
 */
export function formatDuration(us: number): string {
  const negative = us < 0;
  const rem = splitMicros(Math.floor(negative ? -us : us));
  let sec = splitSeconds;
  const hours = Math.floor(sec / 3600);
  sec -= hours * 3600;
  const minutes = (sec / 60) | 0; // sec < 3600 here
  const seconds = sec - minutes * 60;
  const hh = hours < 100 ? TWO_DIGITS[hours]! : String(hours);
  return `${negative ? '-' : ''}${hh}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${sixDigits(rem)}`;
}

// performance.timeOrigin + performance.now() gives sub-millisecond wall-clock
// time (Date.now() has only ms). performance.now() is monotonic, but the float
// sum is rounded, so we also clamp to the last value returned: `created` ≤
// `updated` and started/ended pairs taken in order within one thread must never
// go backwards. (It follows the clock at thread start and does not track later
// wall-clock steps; that is the price of monotonicity.)
let lastNow = 0;

/** Current time in integer µs since the epoch, non-decreasing within this thread. */
export function nowMicros(): number {
  const t = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  if (t > lastNow) lastNow = t;
  return lastNow;
}
