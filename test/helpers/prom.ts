// A small parser of the Prometheus text exposition format (0.0.4), strict
// enough to catch what a scraper would reject: every sample belongs to a family
// declared by # TYPE before it, families are not split, names and label sets
// are well-formed, values are numbers, histogram buckets are cumulative and end
// with +Inf equal to _count.

export interface Sample { name: string; labels: Record<string, string>; value: number }
export interface Family { name: string; type: string; help: string; samples: Sample[] }

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  const n = Number(text);
  if (text.trim() === '' || Number.isNaN(n)) throw new Error(`bad sample value ${JSON.stringify(text)}`);
  return n;
}

function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const m = LABEL.exec(text);
    if (!m) throw new Error(`bad label set {${text}}`);
    if (m[1]! in out) throw new Error(`duplicate label ${m[1]} in {${text}}`);
    out[m[1]!] = m[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    if (m[3] === '') break;
  }
  return out;
}

/** The family a sample name belongs to (histogram/summary suffixes stripped when declared so). */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const direct = families.get(name);
  if (direct) return direct;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const f = families.get(name.slice(0, -suffix.length));
    if (f && (f.type === 'histogram' || f.type === 'summary')) return f;
  }
  return undefined;
}

export function parseProm(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const closed = new Set<string>();
  let current: Family | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE)\s+(\S+)\s*(.*)$/.exec(line);
      if (!m) continue; // a comment
      const [, kind, name, rest] = m;
      if (!NAME.test(name!)) throw new Error(`bad metric name ${name}`);
      let f = families.get(name!);
      if (!f) {
        if (closed.has(name!)) throw new Error(`family ${name} declared twice`);
        f = { name: name!, type: 'untyped', help: '', samples: [] };
        families.set(name!, f);
      }
      if (current && current !== f) closed.add(current.name);
      current = f;
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest!)) throw new Error(`bad type ${rest} for ${name}`);
        if (f.samples.length) throw new Error(`TYPE after samples for ${name}`);
        f.type = rest!;
      } else f.help = rest!;
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/.exec(line);
    if (!m) throw new Error(`bad sample line ${JSON.stringify(line)}`);
    const family = familyOf(m[1]!, families);
    if (!family) throw new Error(`sample ${m[1]} without a # TYPE`);
    if (family !== current) throw new Error(`family ${family.name} is split`);
    family.samples.push({ name: m[1]!, labels: m[2] ? parseLabels(m[2]) : {}, value: parseValue(m[3]!) });
  }
  for (const f of families.values()) {
    if (f.type === 'counter') for (const s of f.samples) if (!(s.value >= 0)) throw new Error(`negative counter ${s.name}`);
    if (f.type === 'histogram') checkHistogram(f);
  }
  return families;
}

function checkHistogram(f: Family): void {
  const series = new Map<string, { buckets: Array<[number, number]>; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    let h = series.get(key);
    if (!h) series.set(key, h = { buckets: [] });
    if (s.name.endsWith('_bucket')) h.buckets.push([parseValue(le!), s.value]);
    else if (s.name.endsWith('_count')) h.count = s.value;
  }
  for (const [key, h] of series) {
    for (let i = 1; i < h.buckets.length; i++) {
      if (h.buckets[i]![0] <= h.buckets[i - 1]![0]) throw new Error(`${f.name}${key}: bucket bounds not increasing`);
      if (h.buckets[i]![1] < h.buckets[i - 1]![1]) throw new Error(`${f.name}${key}: buckets not cumulative`);
    }
    const last = h.buckets[h.buckets.length - 1];
    if (!last || last[0] !== Infinity) throw new Error(`${f.name}${key}: no +Inf bucket`);
    if (last[1] !== h.count) throw new Error(`${f.name}${key}: +Inf bucket ${last[1]} != _count ${h.count}`);
  }
}

/** The value of one sample (labels must match exactly the given subset), or undefined. */
export function sample(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name !== name) continue;
      if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return undefined;
}
