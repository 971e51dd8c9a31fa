// The batch body scan's faster way over an event's member values: json_skip.c
// in WebAssembly with SIMD (built into json_skip_wasm.ts). A result's content
// is most of a batch body, and the JS scan (json_scan.ts Scanner.value()) spent
// ~2.2 µs of the front's CPU per 1.6 KB content on it, a sixth of what a result
// costs the server in all; the skip takes about half that (bench/HISTORY.md).
// It answers what value() answers or turns the value away, and then value()
// walks it: the JS scan stays the judge of what it does not accept, so a body
// gets the same spans, flags and errors with or without it.
import { JSON_SKIP_WASM } from './json_skip_wasm.js';

/** The skip, with one body copied into its memory. */
export interface LoadedSkip {
  /** the index past the value at `i`, or -1 (not taken: value() walks it) */
  skip(i: number, end: number, depth: number, maxDepth: number): number;
  /** VALUE_SPACED | VALUE_FACTS (json_scan.ts) of the value skip() last passed */
  flags(): number;
}

// WebAssembly's types come with TypeScript's DOM library, which this project does not load: the part used here
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: object };
};

interface Exports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  buffer(): number;
  flags(): number;
  max_depth(): number;
  skip_value(i: number, end: number, depth: number, maxDepth: number): number;
}

/**
 * The largest body copied into the module's memory (which keeps its largest
 * size): a larger one is scanned by JS alone. Batches are ~1.6 MB per 1,000
 * results, well under it.
 */
const LARGEST_BODY = 64 * 1024 * 1024;
const PAGE = 64 * 1024;

class ValueSkip {
  private readonly base: number;
  private readonly maxDepth: number;
  private readonly loaded: LoadedSkip;

  constructor(private readonly exports: Exports) {
    this.base = exports.buffer();
    this.maxDepth = exports.max_depth();
    this.loaded = { skip: exports.skip_value, flags: exports.flags };
  }

  /** `bytes` copied into the module's memory, or null when the skip does not take them (too large, or nesting allowed deeper than it walks). */
  load(bytes: Uint8Array, maxDepth: number): LoadedSkip | null {
    if (bytes.length > LARGEST_BODY || maxDepth > this.maxDepth) return null;
    const { memory } = this.exports;
    const missing = this.base + bytes.length - memory.buffer.byteLength;
    if (missing > 0) memory.grow(Math.ceil(missing / PAGE));
    new Uint8Array(memory.buffer, this.base, bytes.length).set(bytes);
    return this.loaded;
  }
}

/** The module, or null where this Node cannot run it (WebAssembly disabled, e.g. --jitless): JS alone then. */
function instantiate(): ValueSkip | null {
  try {
    const module = new WebAssembly.Module(Buffer.from(JSON_SKIP_WASM, 'base64'));
    return new ValueSkip(new WebAssembly.Instance(module).exports as Exports);
  } catch {
    return null;
  }
}

const instance = instantiate();

/** The skip the scan uses, null for JS alone. */
export let valueSkip: ValueSkip | null = instance;

/** Tests: scan with the skip (when this Node runs it) or with JS alone. Returns whether the skip is in use. */
export function useValueSkip(on: boolean): boolean {
  valueSkip = on ? instance : null;
  return valueSkip !== null;
}
