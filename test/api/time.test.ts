import test from 'ava';
import {
  SUPPORTED_RANGE,
  TIMESTAMP_FORMAT_MESSAGE,
  formatDuration,
  formatTimestamp,
  isSupported,
  nowMicros,
  parseTimestamp,
} from '../../src/api/time.js';
import { mulberry32 } from '../helpers/random.js';

// Expected values were computed with Python's datetime (exact integers).
const EPOCH_2020 = 1_577_836_800_000_000;


test('parses the accepted forms, UTC when no offset', (t) => {
  t.is(parseTimestamp('2020-01-01T00:00:00Z'), EPOCH_2020);
  t.is(parseTimestamp('2020-01-01T00:00:00z'), EPOCH_2020);
  t.is(parseTimestamp('2020-01-01T00:00:00'), EPOCH_2020);
  t.is(parseTimestamp('2020-01-01 00:00:00'), EPOCH_2020);
  t.is(parseTimestamp('2020-01-01T00:00'), EPOCH_2020);
  t.is(parseTimestamp('2020-01-01T00:00Z'), EPOCH_2020);
  t.is(parseTimestamp('2020-01-01T00:00:00.000000+00:00'), EPOCH_2020);
  t.is(parseTimestamp('2020-01-01T00:00:00-00:00'), EPOCH_2020);
  t.is(parseTimestamp('2026-11-22T06:02:58.934994Z'), 1_795_327_378_934_994);
  t.is(parseTimestamp('2020-02-29T12:34:56.789012'), 1_582_979_696_789_012);
});

test('subtracts offsets, with and without the colon', (t) => {
  t.is(parseTimestamp('2020-01-01T01:00:00+01:00'), EPOCH_2020);
  t.is(parseTimestamp('2020-01-01T01:00:00+0100'), EPOCH_2020);
  t.is(parseTimestamp('2019-12-31T16:00:00-08:00'), EPOCH_2020);
  t.is(parseTimestamp('2024-06-15T10:00:00+05:30'), 1_718_425_800_000_000);
  t.is(parseTimestamp('2024-06-15T10:00:00+0530'), 1_718_425_800_000_000);
  t.is(parseTimestamp('2024-06-15T04:30:00Z'), 1_718_425_800_000_000);
  t.is(parseTimestamp('1900-03-01T00:00:00-08:00'), -2_203_862_400_000_000);
  t.is(parseTimestamp('2020-01-01T23:59+23:59'), EPOCH_2020);
  t.is(parseTimestamp('2019-12-31T00:01-23:59'), EPOCH_2020);
});

test('fraction: 1 to 9 digits, past the sixth truncated not rounded', (t) => {
  t.is(parseTimestamp('2020-01-01T00:00:00.5Z'), EPOCH_2020 + 500_000);
  t.is(parseTimestamp('2020-01-01T00:00:00.05'), EPOCH_2020 + 50_000);
  t.is(parseTimestamp('2020-01-01T00:00:00.000001'), EPOCH_2020 + 1);
  t.is(parseTimestamp('2020-01-01T00:00:00.1234567Z'), EPOCH_2020 + 123_456);
  t.is(parseTimestamp('2020-01-01T00:00:00.123456789Z'), EPOCH_2020 + 123_456);
  t.is(parseTimestamp('2020-01-01T00:00:00.999999999+00:00'), EPOCH_2020 + 999_999);
  t.is(parseTimestamp('2020-01-01T00:00:00.999999999'), EPOCH_2020 + 999_999);
});

test('leap days follow the Gregorian rules', (t) => {
  t.truthy(parseTimestamp('2020-02-29T00:00'));
  t.truthy(parseTimestamp('2000-02-29T00:00'));
  t.truthy(parseTimestamp('2400-02-29T00:00'));
  t.is(parseTimestamp('2019-02-29T00:00'), undefined);
  t.is(parseTimestamp('1900-02-29T00:00'), undefined);
  t.is(parseTimestamp('2100-02-29T00:00'), undefined);
  t.is(parseTimestamp('2020-02-30T00:00'), undefined);
  t.is(parseTimestamp('2021-04-31T00:00'), undefined);
  t.truthy(parseTimestamp('2021-12-31T00:00'));
});

test('rejects everything else', (t) => {
  const bad = [
    '',
    '2020-01-01',
    '2020-01-01T',
    '2020-01-01T00',
    '2020-01-01T00:0',
    '2020-01-01t00:00',
    '2020-01-01_00:00',
    '2020-1-01T00:00:00',
    '20200101T000000Z',
    '2020-01-01T24:00:00',
    '2020-01-01T23:60:00',
    '2020-01-01T23:59:60',
    '2020-00-01T00:00',
    '2020-13-01T00:00',
    '2020-01-00T00:00',
    '2020-01-32T00:00',
    '0000-01-01T00:00',
    '2020-01-01T00:00:',
    '2020-01-01T00:00:0',
    '2020-01-01T00:00:00.',
    '2020-01-01T00:00:00.Z',
    '2020-01-01T00:00:00.1234567890',
    '2020-01-01T00:00:00,5',
    '2020-01-01T00:00.5',
    '2020-01-01T00:00:00ZZ',
    '2020-01-01T00:00:00 ',
    ' 2020-01-01T00:00:00',
    '2020-01-01T00:00:00+01',
    '2020-01-01T00:00:00+1:00',
    '2020-01-01T00:00:00+01:0',
    '2020-01-01T00:00:00+01:000',
    '2020-01-01T00:00:00+010',
    '2020-01-01T00:00:00+24:00',
    '2020-01-01T00:00:00+01:60',
    '2020-01-01T00:00:00 +01:00',
    '2020-01-01T00:00:00UTC',
    '+2020-01-01T00:00:00',
    '２０２０-01-01T00:00',
    'not a timestamp at all',
  ];
  for (const s of bad) t.is(parseTimestamp(s), undefined, JSON.stringify(s));
});

test('keeps results inside years 0001-9999', (t) => {
  t.is(parseTimestamp('0001-01-01T00:00:00Z'), -62_135_596_800_000_000);
  t.is(parseTimestamp('0001-01-01T00:00:00+00:01'), undefined);
  t.is(parseTimestamp('9999-12-31T23:59:00Z'), 253_402_300_740_000_000);
  t.is(parseTimestamp('9999-12-31T23:59:00-00:01'), undefined);
  // 253402300799999999 µs is not a double; it must not round into year 10000.
  const last = parseTimestamp('9999-12-31T23:59:59.999999Z')!;
  t.true(last < 253_402_300_800_000_000);
  t.true(formatTimestamp(last).startsWith('9999-12-31T23:59:59.99'));
});

test('writes are limited to 1700-01-01 to 2250-12-31 UTC, where every microsecond is exact', (t) => {
  const first = parseTimestamp('1700-01-01T00:00:00Z')!;
  const last = parseTimestamp('2250-12-31T23:59:59.999999Z')!;
  t.true(isSupported(first));
  t.true(isSupported(last));
  t.false(isSupported(first - 1));
  t.false(isSupported(last + 1));
  t.false(isSupported(parseTimestamp('1700-01-01T00:30+01:00')), 'the range is in UTC');
  t.true(isSupported(parseTimestamp('2250-12-31T23:00-00:59')));
  t.false(isSupported(parseTimestamp('2400-01-01T00:00:00.000001Z')));
  t.false(isSupported(undefined));
  t.is(SUPPORTED_RANGE, '1700-01-01 to 2250-12-31 UTC');
  // the whole range is inside ±2^53 µs: parse and format agree to the µs at both ends
  t.true(-first <= Number.MAX_SAFE_INTEGER && last <= Number.MAX_SAFE_INTEGER);
  t.is(formatTimestamp(first + 1), '1700-01-01T00:00:00.000001Z');
  t.is(formatTimestamp(last - 1), '2250-12-31T23:59:59.999998Z');
  t.is(formatTimestamp(parseTimestamp('2250-06-30T12:00:00.000001Z')!), '2250-06-30T12:00:00.000001Z');
  // past it a double cannot hold the µs: what the range keeps from being stored
  t.is(formatTimestamp(parseTimestamp('2400-01-01T00:00:00.000001Z')!), '2400-01-01T00:00:00.000000Z');
});

test('formats with six fraction digits, before 1970 too', (t) => {
  t.is(formatTimestamp(0), '1970-01-01T00:00:00.000000Z');
  t.is(formatTimestamp(1), '1970-01-01T00:00:00.000001Z');
  t.is(formatTimestamp(-1), '1969-12-31T23:59:59.999999Z');
  t.is(formatTimestamp(-1_000_000), '1969-12-31T23:59:59.000000Z');
  t.is(formatTimestamp(-1_000_001), '1969-12-31T23:59:58.999999Z');
  t.is(formatTimestamp(-14_182_940_000_000), '1969-07-20T20:17:40.000000Z');
  t.is(formatTimestamp(EPOCH_2020 + 123_456), '2020-01-01T00:00:00.123456Z');
  t.is(formatTimestamp(1_582_979_696_789_012), '2020-02-29T12:34:56.789012Z');
  t.is(formatTimestamp(1_795_327_378_934_994), '2026-11-22T06:02:58.934994Z');
  t.is(formatTimestamp(-62_135_596_800_000_000), '0001-01-01T00:00:00.000000Z');
  t.is(formatTimestamp(-2_203_862_400_000_000 - 1), '1900-03-01T07:59:59.999999Z');
  t.is(formatTimestamp(253_402_300_740_000_000), '9999-12-31T23:59:00.000000Z');
  t.is(formatTimestamp(951_782_400_000_000), '2000-02-29T00:00:00.000000Z');
  t.is(formatTimestamp(4_107_542_400_000_000), '2100-03-01T00:00:00.000000Z');
});

test('formats instants of one second, and of seconds in turn, each as its own (the per-second prefix is reused)', (t) => {
  const base = 1_795_327_378_000_000; // 2026-11-22T06:02:58Z
  const seen = [base + 1, base + 999_999, base - 1, base + 2, base + 1_000_000, base + 3, -1, base + 4];
  t.deepEqual(seen.map(formatTimestamp), [
    '2026-11-22T06:02:58.000001Z', '2026-11-22T06:02:58.999999Z', '2026-11-22T06:02:57.999999Z',
    '2026-11-22T06:02:58.000002Z', '2026-11-22T06:02:59.000000Z', '2026-11-22T06:02:58.000003Z',
    '1969-12-31T23:59:59.999999Z', '2026-11-22T06:02:58.000004Z',
  ]);
});

test('format agrees with Date over random instants (seeded)', (t) => {
  const random = mulberry32(1);
  // Whole seconds across all of 0001-9999 (exact as µs doubles everywhere)...
  const lo = -62_135_596_800;
  const hi = 253_402_300_799;
  for (let k = 0; k < 20_000; k++) {
    const sec = lo + Math.floor(random() * (hi - lo + 1));
    const expected = new Date(sec * 1000).toISOString().slice(0, 19) + '.000000Z';
    if (formatTimestamp(sec * 1_000_000) !== expected) t.is(formatTimestamp(sec * 1_000_000), expected);
  }
  // ...and to the millisecond inside ±2^53 µs, with a µs remainder that must
  // not carry into the millisecond.
  const span = 2 ** 53 / 1000;
  for (let k = 0; k < 20_000; k++) {
    const ms = Math.floor((random() * 2 - 1) * span);
    const expected = new Date(ms).toISOString().slice(0, 23);
    if (formatTimestamp(ms * 1000 + 999).slice(0, 23) !== expected) t.is(formatTimestamp(ms * 1000 + 999), expected);
  }
  t.pass();
});

test('parse(format(us)) === us for random µs instants (seeded)', (t) => {
  const random = mulberry32(42);
  // ±2^53 µs is about 1685-2255: inside it every µs is exact.
  const span = 2 ** 53;
  let failures = 0;
  for (let k = 0; k < 50_000; k++) {
    const us = Math.floor((random() * 2 - 1) * span);
    const text = formatTimestamp(us);
    if (parseTimestamp(text) !== us || formatTimestamp(parseTimestamp(text)!) !== text) {
      failures++;
      t.fail(`${us} -> ${text} -> ${parseTimestamp(text)}`);
      if (failures > 5) break;
    }
  }
  t.is(failures, 0);
});

test('random offsets: parse agrees with the Z form shifted by the offset', (t) => {
  const random = mulberry32(7);
  for (let k = 0; k < 5_000; k++) {
    const us = Math.floor(random() * 4e15);
    const offsetMin = Math.floor(random() * (24 * 60 * 2 - 1)) - (24 * 60 - 1); // ±23:59
    const local = formatTimestamp(us + offsetMin * 60_000_000).slice(0, 26); // no Z
    const abs = Math.abs(offsetMin);
    const hh = String(Math.floor(abs / 60)).padStart(2, '0');
    const mm = String(abs % 60).padStart(2, '0');
    const sign = offsetMin < 0 ? '-' : '+';
    t.is(parseTimestamp(`${local}${sign}${hh}:${mm}`), us);
    t.is(parseTimestamp(`${local.replace('T', ' ')}${sign}${hh}${mm}`), us);
  }
});

test('durations: hours not folded into days, sign kept', (t) => {
  t.is(formatDuration(0), '00:00:00.000000');
  t.is(formatDuration(1), '00:00:00.000001');
  t.is(formatDuration(8_887_131), '00:00:08.887131');
  t.is(formatDuration(60_000_000), '00:01:00.000000');
  t.is(formatDuration(3_599_999_999), '00:59:59.999999');
  t.is(formatDuration(86_399_999_999), '23:59:59.999999');
  t.is(formatDuration(27 * 3_600_000_000), '27:00:00.000000');
  t.is(formatDuration(93_784_500_000), '26:03:04.500000');
  t.is(formatDuration(100 * 3_600_000_000), '100:00:00.000000');
  t.is(formatDuration(-1_500_000), '-00:00:01.500000');
  t.is(formatDuration(-27 * 3_600_000_000 - 1), '-27:00:00.000001');
});

test('nowMicros is integer wall-clock time and never goes backwards', (t) => {
  const before = Date.now() * 1000;
  let last = nowMicros();
  t.true(Number.isSafeInteger(last));
  // performance.timeOrigin can be a little off Date.now(); a second is plenty.
  t.true(Math.abs(last - before) < 1_000_000, `${last} vs ${before}`);
  for (let k = 0; k < 100_000; k++) {
    const now = nowMicros();
    if (now < last) t.fail(`${now} < ${last}`);
    last = now;
  }
  t.true(nowMicros() >= last);
  t.regex(formatTimestamp(nowMicros()), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
});

test('format message is ARA word for word', (t) => {
  t.is(
    TIMESTAMP_FORMAT_MESSAGE,
    'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].',
  );
});
