// The batch body scan's skip of one member value (src/api/json_scan.ts
// Scanner.value()), in WebAssembly with SIMD: strings, most of a result's
// content, are passed 16 bytes at a time. Built into src/api/json_skip_wasm.ts
// by scripts/build_json_skip.mjs (clang and lld: `apt-get install clang lld`);
// a test fails when that module was not built from this file as it is.
//
// The grammar is Scanner.value()'s exactly: ASCII strings without control
// characters, every escape one JSON.parse accepts, a space as the only
// whitespace (the scan turns away tabs and newlines), numbers as JSON writes
// them, nesting within `max_depth`. It reports what value() reports: where the
// value ends, whether whitespace was skipped inside it (VALUE_SPACED), and
// whether it is an object with an own key that is, or may be by its escapes,
// `ansible_facts` (VALUE_FACTS). It answers -1 for anything else, and the JS
// scan then walks the value itself and is the judge of it: this is only ever
// a faster way to the same answer.
//
// The body is copied into this module's memory at `buffer()` first; every read
// is bounded by `end`, so a value cut short answers -1.
#include <wasm_simd128.h>

typedef unsigned char u8;

extern u8 __heap_base;

/** Where the caller copies the body (memory past the stack and the data below). */
u8 *buffer(void) { return &__heap_base; }

#define MAX_DEPTH 1024
#define VALUE_SPACED 2
#define VALUE_FACTS 4

static u8 stack[MAX_DEPTH + 2];
static int value_flags;

/** VALUE_SPACED and VALUE_FACTS of the last value skip_value() passed. */
int flags(void) { return value_flags; }

/** The deepest nesting skip_value() can walk (the caller uses JS beyond it). */
int max_depth(void) { return MAX_DEPTH; }

static int spaces_at(const u8 *b, int i, int end) {
  int from = i;
  while (i < end && b[i] == ' ') i++;
  if (i != from) value_flags |= VALUE_SPACED;
  return i;
}

static int is_hex(u8 h) {
  return (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F');
}

/** At an opening quote: the index past the closing one, or -1. */
static int string_at(const u8 *b, int i, int end) {
  i++;
  for (;;) {
    // 16 bytes at a time while none is a quote, a backslash, a control character or beyond ASCII
    while (i + 16 <= end) {
      v128_t v = wasm_v128_load(b + i);
      v128_t stop = wasm_v128_or(
        wasm_v128_or(wasm_i8x16_eq(v, wasm_i8x16_splat('"')), wasm_i8x16_eq(v, wasm_i8x16_splat('\\'))),
        wasm_v128_or(wasm_u8x16_lt(v, wasm_i8x16_splat(0x20)), wasm_u8x16_ge(v, wasm_i8x16_splat((char)0x80))));
      int mask = wasm_i8x16_bitmask(stop);
      if (mask) { i += __builtin_ctz(mask); break; }
      i += 16;
    }
    if (i >= end) return -1;
    u8 c = b[i];
    if (c == '"') return i + 1;
    if (c == '\\') {
      if (i + 1 >= end) return -1;
      u8 e = b[i + 1];
      if (e == 'u') {
        if (i + 6 > end) return -1;
        for (int k = i + 2; k < i + 6; k++) if (!is_hex(b[k])) return -1;
        i += 6;
      } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') i += 2;
      else return -1;
      continue;
    }
    if (c >= 0x20 && c < 0x80) { i++; continue; }
    return -1;
  }
}

static int is_digit(const u8 *b, int i, int end) { return i < end && b[i] >= '0' && b[i] <= '9'; }

/** A string, number, true, false or null at `i`: the index past it, or -1. */
static int scalar_at(const u8 *b, int i, int end) {
  if (i >= end) return -1;
  u8 c = b[i];
  if (c == '"') return string_at(b, i, end);
  if (c == 't') return i + 4 <= end && b[i + 1] == 'r' && b[i + 2] == 'u' && b[i + 3] == 'e' ? i + 4 : -1;
  if (c == 'n') return i + 4 <= end && b[i + 1] == 'u' && b[i + 2] == 'l' && b[i + 3] == 'l' ? i + 4 : -1;
  if (c == 'f') return i + 5 <= end && b[i + 1] == 'a' && b[i + 2] == 'l' && b[i + 3] == 's' && b[i + 4] == 'e' ? i + 5 : -1;
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  if (c == '-') i++;
  if (i >= end) return -1;
  c = b[i];
  if (c == '0') i++;
  else if (c >= '1' && c <= '9') { do i++; while (is_digit(b, i, end)); }
  else return -1;
  if (i < end && b[i] == '.') {
    i++;
    if (!is_digit(b, i, end)) return -1;
    do i++; while (is_digit(b, i, end));
  }
  if (i < end && (b[i] == 'e' || b[i] == 'E')) {
    i++;
    if (i < end && (b[i] == '+' || b[i] == '-')) i++;
    if (!is_digit(b, i, end)) return -1;
    do i++; while (is_digit(b, i, end));
  }
  return i;
}

static const u8 FACTS_KEY[] = "\"ansible_facts\"";
#define FACTS_KEY_LENGTH 15

/** An own key of the value (quotes included) from `start` to `key_end`: note one that is or may be `ansible_facts`. */
static void own_key(const u8 *b, int start, int key_end) {
  int length = key_end - start;
  if (length == FACTS_KEY_LENGTH) {
    for (int k = 0; k < FACTS_KEY_LENGTH; k++) if (b[start + k] != FACTS_KEY[k]) return;
    value_flags |= VALUE_FACTS;
  } else if (length > FACTS_KEY_LENGTH) {
    for (int k = start + 1; k < key_end; k++) if (b[k] == '\\') { value_flags |= VALUE_FACTS; return; }
  }
}

/**
 * At a key's opening quote: the index of its value's first character, or -1.
 * `own`: the key is one of the value's own (nesting 1), noted by own_key().
 */
static int key_at(const u8 *b, int i, int end, int own) {
  if (i >= end || b[i] != '"') return -1;
  int key = i;
  i = string_at(b, i, end);
  if (i < 0) return -1;
  if (own) own_key(b, key, i);
  i = spaces_at(b, i, end);
  if (i >= end || b[i] != ':') return -1;
  return spaces_at(b, i + 1, end);
}

/**
 * The index past the value at `i` of the body copied to buffer() (`end` bytes),
 * nested `depth` deep once opened, or -1; flags() tells the rest.
 */
int skip_value(int i, int end, int depth, int max_depth) {
  const u8 *b = buffer();
  value_flags = 0;
  if (max_depth > MAX_DEPTH || i < 0 || i >= end) return -1;
  u8 c = b[i];
  if (c != '{' && c != '[') return scalar_at(b, i, end);
  int d = 0;
  for (;;) {
    // at the first character of a value, c
    if (c == '{' || c == '[') {
      if (depth + 1 + d > max_depth) return -1;
      int in_object = c == '{';
      stack[d++] = in_object;
      i = spaces_at(b, i + 1, end);
      if (i >= end) return -1;
      if (b[i] == (in_object ? '}' : ']')) { i++; d--; }
      else {
        if (in_object && (i = key_at(b, i, end, d == 1)) < 0) return -1;
        if (i >= end) return -1;
        c = b[i];
        continue;
      }
    } else {
      i = scalar_at(b, i, end);
      if (i < 0) return -1;
    }
    // after a value: close containers or move to the next member or element
    for (;;) {
      if (d == 0) return i;
      i = spaces_at(b, i, end);
      if (i >= end) return -1;
      u8 n = b[i++];
      int in_object = stack[d - 1];
      if (n == ',') {
        i = spaces_at(b, i, end);
        if (in_object && (i = key_at(b, i, end, d == 1)) < 0) return -1;
        if (i >= end) return -1;
        c = b[i];
        break;
      }
      if (n != (in_object ? '}' : ']')) return -1;
      d--;
    }
  }
}
