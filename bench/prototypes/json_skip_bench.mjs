// Prototype measurement (see json_skip.c): per result of a 1,000-result batch
// body as the `batch` benchmark sends it, the JS scan of the whole body
// (scanBatchBody) against the wasm skip of each result's content, and checks
// that both end each content at the same byte.
import { readFileSync } from 'node:fs';
import { streamBodies } from '../../dist/bench/scenarios/batch.js';
import { scanBatchBody } from '../../dist/src/api/json_scan.js';
const { instance } = await WebAssembly.instantiate(readFileSync(process.argv[2] ?? '/tmp/json_skip.wasm'));
const { skip_value, buffer, memory } = instance.exports;
const b = streamBodies('x', 1000);
const body = Buffer.from(b.nextBytes(2));
const base = buffer();
new Uint8Array(memory.buffer, base, body.length).set(body);
const starts = []; let at = 0;
for (;;) { const k = body.indexOf('"content":', at); if (k < 0) break; starts.push(k + 10); at = k + 10; }
// check: the wasm skip ends where the JS scanner's span for content ends
const scan = scanBatchBody(body, 32);
const ends = starts.map((s) => skip_value(s, body.length, 3, 32));
const spans = scan.spans; let ok = 0;
for (let i = 0; i < spans.length; i++) if (spans[i] === ends[ok] && spans[i - 1] === starts[ok]) ok++;
console.log('results', starts.length, 'ends matching the JS scanner', ok);
const N = 300;
let t0 = performance.now();
for (let r = 0; r < N; r++) scanBatchBody(body, 32);
const js = (performance.now() - t0) / N / 1000 * 1000;
t0 = performance.now();
for (let r = 0; r < N; r++) new Uint8Array(memory.buffer, base, body.length).set(body);
const copy = (performance.now() - t0) / N / 1000 * 1000;
t0 = performance.now();
let sink = 0;
for (let r = 0; r < N; r++) for (const s of starts) sink += skip_value(s, body.length, 3, 32);
const wasm = (performance.now() - t0) / N / 1000 * 1000;
// the same body with every content `{}`: what the JS scan spends outside the contents
let lean = ''; let from = 0;
for (let k = 0; k < starts.length; k++) { lean += body.toString('latin1', from, starts[k]) + '{}'; from = ends[k]; }
const leanBody = Buffer.from(lean + body.toString('latin1', from));
t0 = performance.now();
for (let r = 0; r < N; r++) scanBatchBody(leanBody, 32);
const jsLean = (performance.now() - t0) / N / 1000 * 1000;
console.log(`per result: JS scan of the contents ${(js - jsLean).toFixed(2)} µs (whole body ${js.toFixed(2)}, with empty contents ${jsLean.toFixed(2)})`);
console.log(`per result: JS scanBatchBody ${js.toFixed(2)} µs (whole body); wasm skip of the content ${wasm.toFixed(2)} µs + copy into wasm memory ${copy.toFixed(2)} µs; content ${body.length / 1000 | 0} bytes/result`, sink > 0);
