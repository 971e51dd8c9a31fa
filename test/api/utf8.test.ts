// Request bodies are decoded by api/utf8.ts (an ASCII fast path beside
// TextDecoder) and checked for control characters on their bytes (four at a
// time). Both must answer exactly what TextDecoder and a regex over the decoded
// text answer: seeded random bytes around the boundaries that matter (0x1f/0x20,
// 0x7f/0x80, multi-byte and broken sequences), at every alignment.
import test from 'ava';
import { decodeUtf8, hasControlCharacter } from '../../src/api/utf8.js';
import { mulberry32, seedFrom } from '../helpers/random.js';

const reference = new TextDecoder('utf-8', { fatal: true });
const CONTROL = /[\u0000-\u001f]/;

/** what TextDecoder gives, or 'invalid' */
function expected(bytes: Uint8Array): string {
  try { return reference.decode(bytes); } catch { return 'invalid'; }
}
function actual(bytes: Uint8Array): string {
  try { return decodeUtf8(bytes); } catch { return 'invalid'; }
}

const INTERESTING = [0x00, 0x09, 0x0a, 0x1f, 0x20, 0x22, 0x5c, 0x7e, 0x7f, 0x80, 0x9f, 0xa0, 0xbf, 0xc3, 0xe2, 0xf0, 0xff];

test('decodes and finds control characters as TextDecoder and a regex do (seeded)', (t) => {
  const seed = seedFrom('UTF8_SEED');
  t.log(`seed ${seed} (replay with UTF8_SEED=${seed})`);
  const rnd = mulberry32(seed);
  const backing = new Uint8Array(4096 + 8);
  let controls = 0;
  let invalid = 0;
  for (let round = 0; round < 3000; round++) {
    const length = Math.floor(rnd() * (round % 10 === 0 ? 4096 : 40));
    const offset = Math.floor(rnd() * 8);
    const bytes = backing.subarray(offset, offset + length);
    const mode = rnd();
    for (let i = 0; i < length; i++) {
      bytes[i] = mode < 0.5 ? 0x20 + Math.floor(rnd() * 0x5f) // printable ASCII
        : rnd() < 0.97 ? 0x20 + Math.floor(rnd() * 0x5f) : INTERESTING[Math.floor(rnd() * INTERESTING.length)]!;
    }
    // now and then a valid multi-byte character, or a control character at the very end
    if (length > 4 && rnd() < 0.2) bytes.set([0xe2, 0x82, 0xac], Math.floor(rnd() * (length - 3)));
    if (length > 0 && rnd() < 0.1) bytes[length - 1] = 0x1f;
    const want = expected(bytes);
    if (want === 'invalid') invalid++;
    if (actual(bytes) !== want) return t.fail(`decode differs for ${Buffer.from(bytes).toString('hex')}`);
    const control = want === 'invalid' ? bytes.some((b) => b < 0x20) : CONTROL.test(want);
    if (control) controls++;
    if (hasControlCharacter(bytes) !== control) return t.fail(`control check differs for ${Buffer.from(bytes).toString('hex')} at offset ${offset}`);
  }
  // the cases the comparison is about did occur
  t.true(controls > 100);
  t.true(invalid > 100);
});

test('a long ASCII body (past the external-string length) and a long non-ASCII one decode exactly', (t) => {
  const ascii = Buffer.from('{"a":"' + 'x'.repeat(1_100_000) + '"}');
  t.is(decodeUtf8(ascii), ascii.toString('utf8'));
  const text = '{"a":"' + 'é€'.repeat(400_000) + '"}';
  t.is(decodeUtf8(Buffer.from(text)), text);
  t.false(hasControlCharacter(ascii));
  ascii[ascii.length - 3] = 0x0a;
  t.true(hasControlCharacter(ascii));
});
