import test from 'ava';
import { normalizeUuid } from '../../src/api/uuid.js';

// Expected values checked against Python 3's uuid.UUID(s).
const U = '12345678-1234-5678-1234-567812345678';

test('canonical forms come back lower-case hyphenated', (t) => {
  t.is(normalizeUuid(U), U);
  t.is(normalizeUuid('ABCDEF00-0000-4000-8000-00000000000A'), 'abcdef00-0000-4000-8000-00000000000a');
  t.is(normalizeUuid('AbCdEf00-0000-4000-8000-00000000000a'), 'abcdef00-0000-4000-8000-00000000000a');
});

test('accepts every form Python accepts', (t) => {
  t.is(normalizeUuid('12345678123456781234567812345678'), U);
  t.is(normalizeUuid('urn:uuid:12345678-1234-5678-1234-567812345678'), U);
  t.is(normalizeUuid('uuid:ABCDEF00-0000-0000-0000-000000000000'), 'abcdef00-0000-0000-0000-000000000000');
  t.is(normalizeUuid('{12345678123456781234567812345678}'), U);
  t.is(normalizeUuid('{12345678-1234-5678-1234-567812345678}'), U);
  t.is(normalizeUuid('{{1234-5678-1234-5678-1234-5678-1234-5678}}'), U);
  t.is(normalizeUuid('}{12345678123456781234567812345678{}'), U);
  t.is(normalizeUuid('--12345678123456781234567812345678--'), U);
  t.is(normalizeUuid('1-2-3-4-5-6-7-8-123456781234567812345678'), U);
  // Python removes `urn:` and `uuid:` anywhere, not only as a prefix.
  t.is(normalizeUuid('1234urn:5678123456781234567812345678'), U);
  t.is(normalizeUuid('urn:uuid:{12345678123456781234567812345678}'), U);
  t.is(normalizeUuid('{urn:uuid:12345678123456781234567812345678}'), U);
  // 36 chars with hyphens in the wrong places: still 32 hex digits.
  t.is(normalizeUuid('1234567-81234-5678-1234-567812345678'), U);
});

test('rejects what Python rejects', (t) => {
  const bad = [
    '',
    '12345678-1234-5678-1234-56781234567', // 31 digits
    '12345678-1234-5678-1234-5678123456789', // 33 digits
    ' 12345678123456781234567812345678', // no whitespace stripping
    '12345678123456781234567812345678 ',
    '\n12345678-1234-5678-1234-567812345678',
    'g2345678123456781234567812345678',
    '12345678-1234-5678-1234-56781234567g',
    '12345678-1234-5678-1234-56781234567\u0660', // non-ASCII
    '(12345678123456781234567812345678)',
    '{1234567812345678}1234567812345678',
    'URN:UUID:12345678123456781234567812345678', // prefixes are case-sensitive
    'urn:12345678-1234-5678-1234-5678123456', // too short after the prefix
    '{}',
    '----',
  ];
  for (const s of bad) t.is(normalizeUuid(s), undefined, JSON.stringify(s));
});
