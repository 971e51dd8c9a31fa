// Prototype, not used by logbook: how fast WebAssembly SIMD could skip (and
// validate) a result's content JSON, against the front's JS scan
// (src/api/json_scan.ts). Same grammar as Scanner.value(): ASCII strings
// without control characters, escapes checked, a space as the only whitespace,
// a nesting bound. Not covered: the `ansible_facts` own-key flag and the
// spaces flag that value() also reports (VALUE_FACTS, VALUE_SPACED).
//
// Build (Debian: apt-get install clang lld) and run from the repository root,
// after `npx tsc`:
//   clang --target=wasm32 -O3 -msimd128 -nostdlib -Wl,--no-entry \
//     -Wl,--export=skip_value -Wl,--export=buffer -Wl,--initial-memory=33554432 \
//     -o /tmp/json_skip.wasm bench/prototypes/json_skip.c
//   node bench/prototypes/json_skip_bench.mjs /tmp/json_skip.wasm
#include <wasm_simd128.h>
typedef unsigned char u8;
extern unsigned char __heap_base;
u8 *buffer(void) { return &__heap_base; }

static int string_at(const u8 *b, int i, int end) {
  i++;
  for (;;) {
    while (i + 16 <= end) {
      v128_t v = wasm_v128_load(b + i);
      v128_t bad = wasm_v128_or(wasm_v128_or(wasm_i8x16_eq(v, wasm_i8x16_splat('"')), wasm_i8x16_eq(v, wasm_i8x16_splat('\\'))),
                                wasm_u8x16_lt(v, wasm_i8x16_splat(0x20)));
      bad = wasm_v128_or(bad, wasm_u8x16_ge(v, wasm_i8x16_splat((char)0x80)));
      int m = wasm_i8x16_bitmask(bad);
      if (m) { i += __builtin_ctz(m); break; }
      i += 16;
    }
    if (i >= end) return -1;
    u8 c = b[i];
    if (c == '"') return i + 1;
    if (c == '\\') {
      u8 e = b[i + 1];
      if (e == 'u') {
        for (int k = i + 2; k < i + 6; k++) { u8 h = b[k]; if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) return -1; }
        i += 6;
      } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') i += 2;
      else return -1;
      continue;
    }
    if (c >= 0x20 && c < 0x80) { i++; continue; }
    return -1;
  }
}

static int scalar_at(const u8 *b, int i, int end) {
  u8 c = b[i];
  if (c == '"') return string_at(b, i, end);
  if (c == 't') return (i + 4 <= end && b[i+1]=='r' && b[i+2]=='u' && b[i+3]=='e') ? i + 4 : -1;
  if (c == 'n') return (i + 4 <= end && b[i+1]=='u' && b[i+2]=='l' && b[i+3]=='l') ? i + 4 : -1;
  if (c == 'f') return (i + 5 <= end && b[i+1]=='a' && b[i+2]=='l' && b[i+3]=='s' && b[i+4]=='e') ? i + 5 : -1;
  if (c == '-') i++;
  if (i >= end) return -1;
  c = b[i];
  if (c == '0') i++;
  else if (c >= '1' && c <= '9') { do i++; while (i < end && b[i] >= '0' && b[i] <= '9'); }
  else return -1;
  if (i < end && b[i] == '.') { i++; if (i >= end || b[i] < '0' || b[i] > '9') return -1; do i++; while (i < end && b[i] >= '0' && b[i] <= '9'); }
  if (i < end && (b[i] == 'e' || b[i] == 'E')) { i++; if (i < end && (b[i] == '+' || b[i] == '-')) i++; if (i >= end || b[i] < '0' || b[i] > '9') return -1; do i++; while (i < end && b[i] >= '0' && b[i] <= '9'); }
  return i;
}

static u8 stack[256];
/** the index past the value at `i`, or -1 */
int skip_value(int i, int end, int depth, int max_depth) {
  const u8 *b = buffer();
  int d = 0;
  u8 c = b[i];
  if (c != '{' && c != '[') return scalar_at(b, i, end);
  for (;;) {
    if (i >= end) return -1;
    c = b[i];
    if (c == '{' || c == '[') {
      if (depth + 1 + d > max_depth) return -1;
      int obj = c == '{';
      stack[d++] = obj;
      i++;
      while (i < end && b[i] == ' ') i++;
      if (i >= end) return -1;
      if (b[i] == (obj ? '}' : ']')) { i++; d--; }
      else {
        if (obj) { if (b[i] != '"') return -1; i = string_at(b, i, end); if (i < 0) return -1; while (i < end && b[i] == ' ') i++; if (i >= end || b[i] != ':') return -1; i++; while (i < end && b[i] == ' ') i++; }
        continue;
      }
    } else { i = scalar_at(b, i, end); if (i < 0) return -1; }
    for (;;) {
      if (d == 0) return i;
      while (i < end && b[i] == ' ') i++;
      if (i >= end) return -1;
      u8 n = b[i++];
      int obj = stack[d - 1];
      if (n == ',') {
        while (i < end && b[i] == ' ') i++;
        if (obj) { if (i >= end || b[i] != '"') return -1; i = string_at(b, i, end); if (i < 0) return -1; while (i < end && b[i] == ' ') i++; if (i >= end || b[i] != ':') return -1; i++; while (i < end && b[i] == ' ') i++; }
        break;
      }
      if (n != (obj ? '}' : ']')) return -1;
      d--;
    }
  }
}
