// Small, dependency-free SVG charts for the benchmark report: a line chart
// (categorical or numeric x) and a grouped bar chart, either with a linear or a
// logarithmic y axis. Plain SVG 1.1 with inline styles, so GitHub and any
// browser render them as they are.

export interface Series { name: string; values: Array<number | null>; dashed?: boolean; color?: string }

export interface ChartSpec {
  title: string;
  /** x categories (line chart: points are spaced evenly; bar chart: groups) */
  categories: string[];
  xLabel: string;
  yLabel: string;
  series: Series[];
  logY?: boolean;
  /** numeric x positions instead of evenly spaced categories (line chart) */
  xValues?: number[];
}

const W = 760, H = 420;
const M = { left: 78, right: 20, top: 44, bottom: 92 };
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#17becf', '#7f7f7f'];
/** One colour per server across every chart. */
export const COLORS = { logbook: '#1f77b4', raw: '#2ca02c', ara: '#d62728', bound: '#7f7f7f', extra: '#ff7f0e', extra2: '#9467bd' };

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function short(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return +(v / 1e6).toPrecision(3) + 'M';
  if (a >= 1e3) return +(v / 1e3).toPrecision(3) + 'k';
  if (a >= 1 || a === 0) return String(+v.toPrecision(3));
  return String(+v.toPrecision(2));
}

interface Scale { map(v: number): number; ticks: number[] }

function yScale(values: number[], log: boolean): Scale {
  const plotH = H - M.top - M.bottom;
  const finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (log) {
    const lo = Math.floor(Math.log10(Math.min(...finite, 1)));
    const hi = Math.ceil(Math.log10(Math.max(...finite, 10)));
    const span = Math.max(1, hi - lo);
    const ticks: number[] = [];
    for (let e = lo; e <= hi; e++) {
      ticks.push(10 ** e);
      if (span <= 3 && e < hi) ticks.push(2 * 10 ** e, 5 * 10 ** e);
    }
    return { map: (v) => M.top + plotH * (1 - (Math.log10(Math.max(v, 10 ** lo)) - lo) / span), ticks };
  }
  const max = Math.max(...finite, 0) || 1;
  const raw = max / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw)!;
  const top = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  for (let t = 0; t <= top + step / 2; t += step) ticks.push(t);
  return { map: (v) => M.top + plotH * (1 - v / top), ticks };
}

function frame(spec: ChartSpec, y: Scale, body: string[], legend: Series[]): string {
  const plotW = W - M.left - M.right;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(spec.title)}</text>`,
  ];
  for (const t of y.ticks) {
    const py = y.map(t).toFixed(1);
    out.push(`<line x1="${M.left}" x2="${M.left + plotW}" y1="${py}" y2="${py}" stroke="#e3e3e3"/>`);
    out.push(`<text x="${M.left - 6}" y="${py}" dy="4" text-anchor="end" fill="#444">${short(t)}</text>`);
  }
  out.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}" stroke="#888"/>`);
  out.push(`<line x1="${M.left}" x2="${M.left + plotW}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#888"/>`);
  out.push(`<text transform="translate(18 ${M.top + (H - M.top - M.bottom) / 2}) rotate(-90)" text-anchor="middle" fill="#333">${esc(spec.yLabel)}${spec.logY ? ' (log scale)' : ''}</text>`);
  out.push(`<text x="${M.left + plotW / 2}" y="${H - M.bottom + 38}" text-anchor="middle" fill="#333">${esc(spec.xLabel)}</text>`);
  out.push(...body);
  // legend: one row (or two) under the x label
  let lx = M.left, ly = H - 30;
  legend.forEach((s, i) => {
    const w = 44 + s.name.length * 7;
    if (lx + w > W - M.right) { lx = M.left; ly += 18; }
    const color = s.color ?? PALETTE[i % PALETTE.length];
    out.push(`<line x1="${lx}" x2="${lx + 22}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="3"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    out.push(`<text x="${lx + 27}" y="${ly}" fill="#222">${esc(s.name)}</text>`);
    lx += w;
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

export function lineChart(spec: ChartSpec): string {
  const all = spec.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const y = yScale(all, spec.logY ?? false);
  const plotW = W - M.left - M.right;
  const n = spec.categories.length;
  let xAt: (i: number) => number;
  if (spec.xValues) {
    const xs = spec.xValues;
    const max = Math.max(...xs) || 1;
    xAt = (i) => M.left + 10 + ((plotW - 20) * xs[i]!) / max;
  } else {
    xAt = (i) => M.left + (n === 1 ? plotW / 2 : 30 + ((plotW - 60) * i) / (n - 1));
  }
  const body: string[] = [];
  spec.categories.forEach((c, i) => {
    body.push(`<text x="${xAt(i).toFixed(1)}" y="${H - M.bottom + 18}" text-anchor="middle" fill="#444">${esc(c)}</text>`);
  });
  spec.series.forEach((s, k) => {
    const color = s.color ?? PALETTE[k % PALETTE.length];
    const pts = s.values.map((v, i) => (v === null || !Number.isFinite(v) || (spec.logY && v <= 0) ? null : [xAt(i), y.map(v)] as const));
    // missing points are skipped: the line joins the measured ones
    let d = '';
    for (const p of pts) if (p) d += `${d ? 'L' : 'M'}${p[0].toFixed(1)} ${p[1].toFixed(1)} `;
    if (d) body.push(`<path d="${d.trim()}" fill="none" stroke="${color}" stroke-width="2.5"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    for (const p of pts) if (p) body.push(`<circle cx="${p[0].toFixed(1)}" cy="${p[1].toFixed(1)}" r="3.5" fill="${color}"/>`);
  });
  return frame(spec, y, body, spec.series);
}

export function barChart(spec: ChartSpec): string {
  const all = spec.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const y = yScale(all, spec.logY ?? false);
  const plotW = W - M.left - M.right;
  const groups = spec.categories.length;
  const groupW = plotW / groups;
  const barW = Math.min(28, (groupW * 0.8) / spec.series.length);
  const base = H - M.bottom;
  const body: string[] = [];
  spec.categories.forEach((c, g) => {
    const cx = M.left + groupW * (g + 0.5);
    body.push(`<text x="${cx.toFixed(1)}" y="${H - M.bottom + 18}" text-anchor="middle" fill="#444">${esc(c)}</text>`);
    spec.series.forEach((s, k) => {
      const v = s.values[g];
      if (v === null || v === undefined || !Number.isFinite(v) || (spec.logY && v <= 0)) return;
      const x = cx - (barW * spec.series.length) / 2 + k * barW;
      const top = y.map(v);
      body.push(`<rect x="${x.toFixed(1)}" y="${top.toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${Math.max(0.5, base - top).toFixed(1)}" fill="${s.color ?? PALETTE[k % PALETTE.length]}"><title>${esc(`${s.name} · ${c}: ${short(v)}`)}</title></rect>`);
    });
  });
  return frame(spec, y, body, spec.series);
}
