// Seeded randomness for tests that must be replayable from a printed seed.

/** mulberry32: a small, fast, seeded PRNG returning floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed from `name` in the environment (decimal or 0x hex), else a fresh one. */
export function seedFrom(name: string): number {
  const raw = process.env[name];
  if (raw !== undefined && raw.trim() !== '') {
    const n = Number(raw.trim());
    if (!Number.isSafeInteger(n)) throw new Error(`${name}=${raw} is not an integer seed`);
    return n >>> 0;
  }
  return (Date.now() ^ (process.pid << 16) ^ Math.floor(Math.random() * 2 ** 32)) >>> 0;
}

export class Rng {
  readonly next: () => number;
  constructor(seed: number) { this.next = mulberry32(seed); }
  /** integer in [lo, hi] */
  int(lo: number, hi: number): number { return lo + Math.floor(this.next() * (hi - lo + 1)); }
  bool(p = 0.5): boolean { return this.next() < p; }
  pick<T>(items: readonly T[]): T { return items[Math.floor(this.next() * items.length)]!; }
  /** a random subset, in the original order */
  subset<T>(items: readonly T[], max = items.length): T[] {
    const n = this.int(0, Math.min(max, items.length));
    const chosen = new Set<number>();
    while (chosen.size < n) chosen.add(this.int(0, items.length - 1));
    return items.filter((_, i) => chosen.has(i));
  }
  /** index chosen by weight */
  weighted(weights: readonly number[]): number {
    const total = weights.reduce((a, b) => a + b, 0);
    let x = this.next() * total;
    for (let i = 0; i < weights.length; i++) { x -= weights[i]!; if (x < 0) return i; }
    return weights.length - 1;
  }
  /** A JSON value of bounded size: nested objects/arrays, unicode text, exact numbers. */
  json(depth = 2): unknown {
    const kind = depth <= 0 ? this.int(0, 4) : this.int(0, 6);
    switch (kind) {
      case 0: return this.pick(['', 'ok', 'héllo wörld', 'snow ☃ and 𝄞', 'line\nbreak "quoted" \\ slash', 'tab\tx']);
      case 1: return this.int(-1_000_000, 1_000_000);
      case 2: return this.pick([0.5, -2.25, 1e21, 3.125e-7, 123456.789]);
      case 3: return this.pick([true, false, null]);
      case 4: return `v${this.int(0, 1e9)}`;
      case 5: return Array.from({ length: this.int(0, 4) }, () => this.json(depth - 1));
      default: {
        const o: Record<string, unknown> = {};
        const n = this.int(0, 5);
        for (let i = 0; i < n; i++) o[this.pick(['k', 'zeta', 'alpha', 'msg', 'rc', 'ünï', 'b'] as const) + i] = this.json(depth - 1);
        return o;
      }
    }
  }
}
