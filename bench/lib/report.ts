// Turns one benchmark run (the JSON bench/run.ts writes) into the Markdown
// report bench/results/latest.md and its SVG charts. Every logbook number is
// shown beside ARA's (same machine, same run) and, where there is one, the raw
// limit's.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BatchResult } from '../scenarios/batch.js';
import { clusterSection, type ClusterResult } from '../scenarios/cluster.js';
import type { FootprintResult } from '../scenarios/footprint.js';
import type { IngestResult, IngestRow, LoadRow, PayloadName, ServerName } from '../scenarios/ingest.js';
import { MODE_LABEL, type Mode, type OverheadResult } from '../scenarios/overhead.js';
import { RECOVERED_P99_MS, type OverloadResult } from '../scenarios/overload.js';
import { ENDPOINTS, type Endpoint, type ReadResult, type ReadRow } from '../scenarios/read.js';
import { fmt } from './context.js';
import { barChart, COLORS, lineChart, type Series } from './svg.js';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memBytes: number;
  node: string;
  kernel: string;
  loadAvgStart: number[];
  loadAvgEnd: number[];
  logbookVersion: string;
  commit: string | null;
  shards: number;
}

export interface BenchRun {
  format: 1;
  started: string;
  finished: string;
  seconds: number;
  quick: boolean;
  scenarios: string[];
  machine: Machine;
  notes: string[];
  ingest?: IngestResult | null;
  batch?: BatchResult | null;
  read?: ReadResult | null;
  footprint?: FootprintResult | null;
  overhead?: OverheadResult | null;
  overload?: OverloadResult | null;
  cluster?: ClusterResult | null;
}

/** The p99 bound the capacity figures are given at. */
export const P99_BOUND_MS = 50;

const SHORT: Record<Endpoint, string> = { result: 'result detail', host: 'host detail', playbooks: 'playbook list', results: 'results by pb+status' };
const PAYLOAD: Record<PayloadName, string> = { looped: '1.6 KB looped result', facts: '30 KB facts result' };
const SERVER: Record<ServerName, string> = {
  logbook: 'logbook', 'logbook-nosync': 'logbook (durability none)', raw: 'raw uWS + LMDB put', ara: 'ARA 1.5 (gunicorn 2w, SQLite)',
};

function rowsOf(r: IngestResult, server: ServerName, payload: PayloadName): IngestRow[] {
  return r.rows.filter((x) => x.server === server && x.payload === payload);
}

/** The highest throughput with p99 under the bound and no errors (null: never). */
export function sustained(rows: LoadRow[]): LoadRow | null {
  const ok = rows.filter((r) => r.latencyMs.p99 < P99_BOUND_MS && r.errors === 0);
  return ok.length ? ok.reduce((a, b) => (b.rps > a.rps ? b : a)) : null;
}

function best(rows: LoadRow[]): LoadRow | null {
  return rows.length ? rows.reduce((a, b) => (b.rps > a.rps ? b : a)) : null;
}

function at(rows: LoadRow[], connections: number): LoadRow | undefined {
  return rows.find((r) => r.connections === connections);
}

function perHour(rps: number): string {
  const h = rps * 3600;
  const m = h / 1e6;
  return `${m >= 10 ? m.toFixed(0) : m.toFixed(1)} M results/h ≈ 1 000 hosts × ${fmt.int(h / 1000)} tasks/h`;
}

/** For a cost (lower is better): "2.1× less" / "1.3× more" than the other. */
function lessOrMore(mine: number, theirs: number): string {
  if (!(mine > 0 && theirs > 0)) return '–';
  return mine <= theirs ? `${fmt.ratio(theirs, mine).replace('×', '')}× less` : `${fmt.ratio(mine, theirs).replace('×', '')}× more`;
}

function table(head: string[], rows: string[][]): string {
  const align = head.map((_, i) => (i === 0 ? '---' : '---:'));
  return [`| ${head.join(' | ')} |`, `| ${align.join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

function capacity(run: BenchRun): string {
  const rows: string[][] = [];
  const { ingest, read, footprint, overhead } = run;
  if (ingest) {
    const cell = (r: LoadRow | null) => (r ? `${fmt.int(r.rps)}/s (${r.connections} conn, p99 ${fmt.ms(r.latencyMs.p99)} ms)` : '–');
    const perCore = (r: LoadRow | null) => (r ? r.rps / Math.max(r.serverCpu, 0.01) : NaN);
    for (const payload of ['looped', 'facts'] as const) {
      const lbRows = rowsOf(ingest, 'logbook', payload), araRows = rowsOf(ingest, 'ara', payload);
      const lb = sustained(lbRows), ara = sustained(araRows);
      const lbPeak = best(lbRows), araPeak = best(araRows);
      rows.push([
        `Ingest, ${PAYLOAD[payload]}s, durable, sustained at p99 < ${P99_BOUND_MS} ms`,
        lb ? `**${cell(lb)}**` : 'never at the measured levels',
        ara ? cell(ara) : araRows.length ? 'never at the measured levels' : '–',
        lb && ara ? fmt.ratio(lb.rps, ara.rps) : '–',
      ]);
      rows.push([`… peak, any latency`, lbPeak ? `**${cell(lbPeak)}**` : '–', cell(araPeak), lbPeak && araPeak ? fmt.ratio(lbPeak.rps, araPeak.rps) : '–']);
      if (payload === 'looped') {
        if (lb) rows.push([`… as hosts × tasks per hour, one node, p99 < ${P99_BOUND_MS} ms`, `**${perHour(lb.rps)}**`, ara ? perHour(ara.rps) : araPeak ? `${perHour(araPeak.rps)} at p99 ${fmt.ms(araPeak.latencyMs.p99)} ms` : '–', '']);
        rows.push([`… results/s per server core, at peak`, lbPeak ? `${fmt.int(perCore(lbPeak))} (${lbPeak.serverCpu.toFixed(2)} cores busy)` : '–',
          araPeak ? `${fmt.int(perCore(araPeak))} (${araPeak.serverCpu.toFixed(2)} cores busy)` : '–', fmt.ratio(perCore(lbPeak), perCore(araPeak))]);
      }
    }
  }
  if (read) {
    for (const e of ['result', 'results'] as const) {
      const lb = read.rows.find((r) => r.server === 'logbook' && r.endpoint === e);
      const ara = read.rows.find((r) => r.server === 'ara' && r.endpoint === e);
      if (lb) rows.push([`Reads, ${ENDPOINTS[e]}, ${read.connections} conn`, `**${fmt.int(lb.rps)}/s**, p99 ${fmt.ms(lb.latencyMs.p99)} ms`, ara ? `${fmt.int(ara.rps)}/s, p99 ${fmt.ms(ara.latencyMs.p99)} ms` : '–', ara ? fmt.ratio(lb.rps, ara.rps) : '–']);
    }
  }
  if (footprint) {
    const f = footprint;
    rows.push(['Heap per stored result (live state; content and facts live in LMDB)', `**${fmt.int(f.heapBytesPerResult)} B**`, 'n/a (SQLite on disk)', '']);
    rows.push([`Server memory per stored result (anonymous RSS after restart, minus an empty server's)`, `**${fmt.int(f.rssAnonBytesPerResult)} B** (total RSS ${fmt.int(f.rssBytesPerResult)} B incl. LMDB pages)`, 'n/a', '']);
    rows.push(['Disk per stored result (its 1.6 KB content and row, journal, free pages; host facts apart)', `**${fmt.int(f.diskBytesPerResultWithoutFacts)} B**`, f.ara ? `${fmt.int(f.ara.diskBytesPerResultWithoutFacts)} B` : '–', f.ara ? lessOrMore(f.diskBytesPerResultWithoutFacts, f.ara.diskBytesPerResultWithoutFacts) : '']);
    rows.push(['Disk per host with gathered facts (22 KB of JSON)', `**${fmt.int(f.factsBytesPerHost)} B**`, f.ara ? `${fmt.int(f.ara.factsBytesPerHost)} B` : '–', f.ara ? lessOrMore(f.factsBytesPerHost, f.ara.factsBytesPerHost) : '']);
    rows.push([`Restart with ${fmt.int(f.results)} results (spawn → ready)`, `**${(f.restartMs / 1000).toFixed(1)} s**` + (f.recovery ? ` (${fmt.int(f.results / (f.recovery.ms / 1000))} results/s recovered)` : ''), '', '']);
  }
  if (run.batch?.rows.length) {
    const top = run.batch.rows.reduce((a, b) => (b.resultsPerSecond > a.resultsPerSecond ? b : a));
    rows.push([`Batch ingest (${top.batchSize} results per batch, ${top.streams} streams${top.shards !== undefined && top.shards !== run.machine.shards ? `, LOGBOOK_SHARDS=${top.shards}` : ''}), durable`, `**${fmt.int(top.resultsPerSecond)} results/s** (p99 ${fmt.ms(top.latencyMs.p99)} ms per batch)`, 'n/a (one request per result)', '']);
  }
  if (overhead?.shapes) {  // runs before the two-shape format have no `shapes`
    const pct = (x: number | undefined) => (x !== undefined ? `${x >= 0 ? '+' : ''}${x.toFixed(0)} %` : '–');
    for (const shape of overhead.shapes) {
      const { callback, logbook: lb, ara } = shape.overheadPct;
      rows.push([`ansible-playbook wall time with logbook's callback (${shape.name}; median of ${overhead.repetitions})`, `**${pct(callback)}**`, '', '']);
      rows.push([`ansible-playbook wall time with the stock ARA callback (${shape.name})`, `**${pct(lb)}**`, pct(ara), '']);
    }
  }
  if (run.overload) {
    const d = run.overload.runs.find((r) => r.policy.includes('default')) ?? run.overload.runs[0];
    if (d) rows.push([`Overload: 2× the sustainable write rate, open loop (${d.policy})`, `admitted **${fmt.int(d.overload.admittedRps)}/s at p99 ${fmt.ms(d.overload.admittedMs.p99)} ms**, ${fmt.int(d.overload.shedRps)}/s shed (503), ${d.lost} acknowledged writes lost${run.overload.floor ? ` (the ideal shedder at the same load: p99 ${fmt.ms(run.overload.floor.overload.admittedMs.p99)} ms)` : ''}`, '–', '']);
  }
  return table(['', 'logbook', 'ARA', 'logbook vs ARA'], rows);
}

function overloadSection(r: OverloadResult): string {
  const out: string[] = ['## Overload: twice the sustainable write rate', ''];
  const first = r.runs[0];
  if (first) {
    out.push(`POST /api/v1/results (1.6 KB looped result), ${r.shards} shard(s). The sustainable rate is the best closed-loop throughput at 32 or 128 connections (${first.sustainable.seconds} s each); then an open-loop generator (bench/lib/open_loop.ts: arrivals at a fixed rate whatever the server does, latency counted from when each request was due) offers twice that for ${first.overload.seconds} s, then half of it for ${first.after.seconds} s. "Recovered": time after the drop until every later ${250} ms window has no 503 and an admitted p99 under ${RECOVERED_P99_MS} ms. "Lost": acknowledged (201) writes missing when every result is read back afterwards. One run per admission policy (LOGBOOK_SHARD_QUEUE_DELAY).`, '');
  }
  out.push(table(['policy', 'sustainable/s', 'offered/s', 'admitted/s', 'shed (503)/s', 'admitted p50 / p99 / max ms', 'admitted p99 from the write ms', '503 p99 ms', 'generator lag p99 ms', 'cores: server / generator', 'RSS → peak', 'last 503 after the drop', 'first fast admit after the drop', 'recovered after', 'acknowledged', 'lost'],
    r.runs.map((x) => [x.policy, fmt.int(x.sustainable.rps), fmt.int(x.overload.offeredRps), fmt.int(x.overload.admittedRps), fmt.int(x.overload.shedRps),
      `${fmt.ms(x.overload.admittedMs.p50)} / ${fmt.ms(x.overload.admittedMs.p99)} / ${fmt.ms(x.overload.admittedMs.max)}`,
      x.overload.admittedFromSendMs ? fmt.ms(x.overload.admittedFromSendMs.p99) : '–', fmt.ms(x.overload.shedP99Ms), fmt.ms(x.overload.generatorLagP99Ms),
      x.overload.serverCores === undefined ? '–' : `${x.overload.serverCores.toFixed(2)} / ${x.overload.generatorCores.toFixed(2)} (nice ${x.generatorNice})`,
      `${fmt.mib(x.baseRssBytes)} → ${fmt.mib(x.peakRssBytes)}`, x.sheddingEndedMs === undefined ? '–' : `${(x.sheddingEndedMs / 1000).toFixed(2)} s`,
      x.firstFastMs === undefined || x.firstFastMs === null ? '–' : `${(x.firstFastMs / 1000).toFixed(2)} s`,
      x.recoveryMs === null ? 'not within the phase' : `${(x.recoveryMs / 1000).toFixed(2)} s`, fmt.int(x.acknowledged), String(x.lost)])), '');
  out.push('The generator lag column is the load generator\'s own delay (no free connection, CPU shared with the server): when it is large the machine, not only logbook, was saturated. "Admitted p99 from the write" leaves it out. "First fast admit": the first request due after the drop that got a 2xx within ' + RECOVERED_P99_MS + ' ms.', '');
  if (r.floor) {
    const f = r.floor, o = f.overload;
    const base = r.runs.find((x) => x.policy === f.policy);
    out.push(`The floor: the same open loop against the ideal shedder, bare uWS (bench/raw_server.ts) answering 503 + Retry-After from the request handler beyond a token bucket at logbook's admitted rate, and handling the rest as the raw limit does (JSON.parse, one durable LMDB put). Nothing built on this stack does less per request, so its admitted p99 is what this machine and generator allow at this load${base ? ` (logbook, ${f.policy}: p99 ${fmt.ms(base.overload.admittedMs.p99)} ms; the floor: ${fmt.ms(o.admittedMs.p99)} ms)` : ''}.`, '');
    out.push(table(['repeats', 'offered/s', 'admitted/s', 'shed (503)/s', 'admitted p50 / p99 / max ms', 'admitted p99 from the write ms', '503 p99 ms', 'generator lag p99 ms', 'cores: server / generator', 'connections'],
      [[f.policy, fmt.int(o.offeredRps), fmt.int(o.admittedRps), fmt.int(o.shedRps), `${fmt.ms(o.admittedMs.p50)} / ${fmt.ms(o.admittedMs.p99)} / ${fmt.ms(o.admittedMs.max)}`,
        fmt.ms(o.admittedFromSendMs.p99), fmt.ms(o.shedP99Ms), fmt.ms(o.generatorLagP99Ms), `${o.serverCores.toFixed(2)} / ${o.generatorCores.toFixed(2)} (nice ${f.generatorNice})`, fmt.int(f.peakConnections)]]), '');
  }
  const logged = r.runs.filter((x) => x.shedding);
  if (logged.length) {
    out.push('Where the time went, from the server\'s `shedding` log lines (one per second while it refused):', '');
    out.push(table(['policy', 'refused at the head: front lag / shard queue', 'refused after parsing', 'front event-loop lag p99 (median / worst second) ms', 'server-side admitted p99, head → answer (median / worst second) ms', 'shard round trip mean / max ms'],
      logged.map((x) => [x.policy, `${fmt.int(x.shedding!.refusedFrontLag)} / ${fmt.int(x.shedding!.refusedShardDelay)}`, fmt.int(x.shedding!.refusedAfterParse),
        `${fmt.ms(x.shedding!.eventLoopLagP99MedianMs)} / ${fmt.ms(x.shedding!.eventLoopLagP99MaxMs)}`,
        x.shedding!.serverAdmittedP99MedianMs === undefined ? '–' : `${fmt.ms(x.shedding!.serverAdmittedP99MedianMs)} / ${fmt.ms(x.shedding!.serverAdmittedP99MaxMs)}`, `${fmt.ms(x.shedding!.shardRoundTripMeanMs)} / ${fmt.ms(x.shedding!.shardRoundTripMaxMs)}`])), '');
  }
  return out.join('\n');
}

function ingestSection(r: IngestResult, cpus: number): string {
  const out: string[] = ['## Ingest: `POST /api/v1/results`', ''];
  out.push(`Closed-loop wrk at ${r.connections.join(', ')} connections; ${r.seconds.logbook} s per level for logbook (durable: 201 after the group commit is fsync'd), ${r.seconds.raw} s for the raw limit, ${r.seconds.ara} s for ARA (it is ~100× slower). One warm-up second before each level. Bodies: ${Object.entries(r.bodyBytes).map(([p, b]) => `${PAYLOAD[p as PayloadName]} = ${fmt.int(b)} B`).join(', ')}.`, '');
  out.push('![ingest throughput](ingest-throughput.svg)', '', '![ingest latency](ingest-latency.svg)', '');
  const busiest = r.rows.filter((x) => x.server === 'logbook').reduce<IngestRow | null>((a, b) => (!a || b.serverCpu + b.generatorCpu > a.serverCpu + a.generatorCpu ? b : a), null);
  if (busiest) {
    out.push(`Where the ceiling is: at its busiest (${PAYLOAD[busiest.payload]}, ${busiest.connections} connections) logbook used ${busiest.serverCpu.toFixed(2)} cores and wrk ${busiest.generatorCpu.toFixed(2)}, on a machine of ${cpus} cores shared with the operating system (and, when loaded, with other work); the raw limit shows what one durable LMDB put per request costs here without any of logbook's work.`, '');
  }
  for (const payload of ['looped', 'facts'] as const) {
    const lb = rowsOf(r, 'logbook', payload);
    if (!lb.length) continue;
    const raw = rowsOf(r, 'raw', payload), ara = rowsOf(r, 'ara', payload);
    out.push(`### ${PAYLOAD[payload]}`, '');
    out.push(table(['conn', 'logbook req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'errors', 'server cores', 'wrk cores', 'raw req/s', 'logbook / raw', 'ARA req/s', 'ARA p99 ms', 'logbook / ARA'],
      lb.map((x) => {
        const w = at(raw, x.connections), a = at(ara, x.connections);
        return [String(x.connections), fmt.int(x.rps), fmt.ms(x.latencyMs.p50), fmt.ms(x.latencyMs.p90), fmt.ms(x.latencyMs.p99), fmt.ms(x.latencyMs.max), String(x.errors),
          x.serverCpu.toFixed(2), x.generatorCpu.toFixed(2), w ? fmt.int(w.rps) : '–', w ? fmt.pct(x.rps, w.rps) : '–', a ? fmt.int(a.rps) : '–', a ? fmt.ms(a.latencyMs.p99) : '–', a ? fmt.ratio(x.rps, a.rps) : '–'];
      })), '');
    if (ara.length) {
      out.push(`ARA in detail: ${ara.map((a) => `${a.connections} conn ${fmt.int(a.rps)}/s p50 ${fmt.ms(a.latencyMs.p50)} p99 ${fmt.ms(a.latencyMs.p99)} max ${fmt.ms(a.latencyMs.max)} ms${a.errors ? ` (${a.errors} errors)` : ''}, ${a.serverCpu.toFixed(2)} cores`).join('; ')}.`, '');
    }
  }
  const nosync = r.rows.find((x) => x.server === 'logbook-nosync');
  const durable32 = at(rowsOf(r, 'logbook', 'looped'), 32);
  if (nosync) {
    out.push(`What durability costs: with \`LOGBOOK_DURABILITY=none\` (no fsync) logbook takes ${fmt.int(nosync.rps)} req/s at 32 connections (p99 ${fmt.ms(nosync.latencyMs.p99)} ms)` +
      (durable32 ? `; durable, ${fmt.int(durable32.rps)} req/s (p99 ${fmt.ms(durable32.latencyMs.p99)} ms) = ${fmt.pct(durable32.rps, nosync.rps)} of that${durable32.rps > nosync.rps ? ' — above 100 % only by noise between the two runs' : ''}` : '') + '.', '');
  }
  return out.join('\n');
}

/** Batch ingest beside per-request ingest and the per-request raw limit of the same run. */
function batchSection(r: BatchResult, ingest: IngestResult | null | undefined, shards: number): string {
  const out: string[] = ['## Batch ingest: `POST /api/v1/ingest`', ''];
  const perRequest = ingest ? best(rowsOf(ingest, 'logbook', 'looped')) : null;
  const raw = ingest ? best(rowsOf(ingest, 'raw', 'looped')) : null;
  out.push(`Streams (one playbook each, one batch in flight per stream, as SPEC §13 requires) send batches of ${PAYLOAD.looped}s (${fmt.int(r.rows[0]?.resultBytes ?? 0)} B per event) to a fresh logbook, durable: 200 after the batch's journal entry is fsync'd. The load generator is a Node process (its cores are shown). A batch is decoded and applied by its playbook's shard; rows with 2 shards (\`LOGBOOK_SHARDS=2\`, a fresh server) show what the second core adds where the default (cores − 1) gives one`
    + (perRequest ? ` Per-request ingest of the same result peaked at ${fmt.int(perRequest.rps)}/s in this run` : '') + (raw ? `, the per-request raw limit (bare uWS + JSON.parse + one durable LMDB put) at ${fmt.int(raw.rps)}/s.` : '.'), '');
  out.push(table(['shards', 'batch', 'streams', 'results/s', 'batches/s', 'p50 ms / batch', 'p99 ms / batch', 'server cores', 'client cores', 'errors', 'vs per-request logbook', 'vs per-request raw limit'],
    r.rows.map((x) => [x.shards === undefined ? String(shards) : String(x.shards), String(x.batchSize), String(x.streams), `**${fmt.int(x.resultsPerSecond)}**`, fmt.int(x.batchesPerSecond), fmt.ms(x.latencyMs.p50), fmt.ms(x.latencyMs.p99),
      x.serverCpu.toFixed(2), x.generatorCpu.toFixed(2), String(x.errors), perRequest ? fmt.ratio(x.resultsPerSecond, perRequest.rps) : '–', raw ? fmt.ratio(x.resultsPerSecond, raw.rps) : '–'])), '');
  return out.join('\n');
}

function readSection(r: ReadResult): string {
  const out: string[] = ['## Reads', ''];
  out.push(`${r.connections} connections, ${r.seconds.logbook} s per endpoint for logbook on a store of **${fmt.int(r.store.results)} results** across ${fmt.int(r.store.playbooks)} playbooks (${fmt.int(r.store.hosts)} hosts with ~30 KB of facts each), served by a freshly started server. ` +
    (r.araStore ? `ARA answers the same requests on a **${fmt.int(r.araStore.results)}-result** store (${r.araStore.playbooks} playbooks × 10 hosts × 10 tasks, filled through its ORM) with ${r.seconds.ara} s runs: at its speed a larger store only costs build time. ` : '') +
    `Ids and playbooks are spread over the whole store (1 000 distinct paths per endpoint, round-robin). The raw ceiling is bare uWS answering one LMDB record (the 1.6 KB content) per GET: the bound for a result detail. ARA's latencies at 32 connections are mostly queueing behind its 2 workers, and only requests answered within the run are counted.`, '');
  out.push('![read throughput](read-throughput.svg)', '', '![read latency](read-latency.svg)', '');
  const raw = r.rows.find((x) => x.endpoint === 'raw');
  out.push(table(['endpoint', 'bytes', 'logbook req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'server cores', 'wrk cores', '% of raw GET', 'ARA req/s', 'ARA p50 ms', 'ARA p99 ms', 'logbook / ARA'],
    (Object.keys(ENDPOINTS) as Endpoint[]).flatMap((e) => {
      const x = r.rows.find((y) => y.server === 'logbook' && y.endpoint === e);
      const a = r.rows.find((y) => y.server === 'ara' && y.endpoint === e);
      if (!x) return [];
      return [[`\`${ENDPOINTS[e]}\``, fmt.int(x.responseBytes), fmt.int(x.rps), fmt.ms(x.latencyMs.p50), fmt.ms(x.latencyMs.p90), fmt.ms(x.latencyMs.p99), fmt.ms(x.latencyMs.max),
        x.serverCpu.toFixed(2), x.generatorCpu.toFixed(2), raw && e === 'result' ? fmt.pct(x.rps, raw.rps) : '–', a ? fmt.int(a.rps) : '–', a ? fmt.ms(a.latencyMs.p50) : '–', a ? fmt.ms(a.latencyMs.p99) : '–', a ? fmt.ratio(x.rps, a.rps) : '–']];
    }).concat(raw ? [[`raw: uWS + LMDB get`, fmt.int(raw.responseBytes), fmt.int(raw.rps), fmt.ms(raw.latencyMs.p50), fmt.ms(raw.latencyMs.p90), fmt.ms(raw.latencyMs.p99), fmt.ms(raw.latencyMs.max), raw.serverCpu.toFixed(2), raw.generatorCpu.toFixed(2), '100 %', '', '', '', '']] : [])), '');
  if (r.deep) {
    const d = r.deep;
    out.push(`Deep pages, one request at a time (median of ${d.samples}): \`GET /results?order=-started&limit=100\` first page, the page ${fmt.int(d.depth)} rows deep by \`offset\` (every shard keeps offset + limit rows), and the same page by the keyset \`cursor\` that \`next\` links carry past LOGBOOK_MAX_LIST_OFFSET (every shard keeps limit rows).`, '');
    out.push(table(['page', 'ms'], [['first', fmt.ms(d.firstMs)], [`offset ${fmt.int(d.depth)}`, fmt.ms(d.offsetMs)], ['cursor, same rows', fmt.ms(d.cursorMs)]]), '');
    if (d.idOrder) {
      out.push('Pages in id order (median of the same samples): each shard cuts them out of an array kept in that order; a page past offset 0 over several shards merges their rows by keys, then renders only its own.', '');
      out.push(table(['page', 'ms'], d.idOrder.map((x) => [`\`GET ${x.path}\``, fmt.ms(x.ms)])), '');
    }
  }
  return out.join('\n');
}

function footprintSection(f: FootprintResult): string {
  const out: string[] = ['## Footprint and recovery', ''];
  out.push(`The store (${fmt.int(f.results)} results, ${fmt.int(f.playbooks)} playbooks, ${f.shards} shard(s)) is written in-process through the server's own Shard + LmdbShardStore (${fmt.int(f.results / f.buildSeconds)} results/s, durability none, a snapshot every 100 000 writes as the server does, no final snapshot: a restart replays a journal tail). Heap is sampled after a full GC in that process; RSS is a real server's after it recovered the store. The intermediate server samples run while the builder still holds the store open, so more of its LMDB pages sit in their RSS; the anonymous RSS is the figure to compare.`, '');
  out.push('![memory vs stored results](memory.svg)', '');
  const sampled = f.checkpoints.filter((c) => c.server);
  if (sampled.length > 2) {
    out.push(table(['results stored', 'restart (spawn → ready)', 'server RSS', 'anonymous RSS', 'live state heap'], sampled.map((c) => [
      fmt.int(c.results), `${(c.server!.readyMs / 1000).toFixed(2)} s`, fmt.mib(c.server!.rssBytes), fmt.mib(c.server!.rssAnonBytes), fmt.mib(c.heapBytes),
    ])), '');
  }
  const t = f.tableBytes;
  out.push(table(['what', 'value'], [
    ['heap per stored result', `${fmt.int(f.heapBytesPerResult)} B`],
    ['server RSS: empty → after recovery', `${fmt.mib(f.empty.rssBytes)} → ${fmt.mib(f.recovered.rssBytes)} = ${fmt.int(f.rssBytesPerResult)} B/result`],
    ['… anonymous part (heap, buffers; not LMDB file pages)', `${fmt.mib(f.empty.rssAnonBytes)} → ${fmt.mib(f.recovered.rssAnonBytes)} = ${fmt.int(f.rssAnonBytesPerResult)} B/result`],
    ['data directory', `${fmt.mib(f.diskBytes)} = ${fmt.int(f.diskBytesPerResult)} B/result`],
    ['… pages in use: blobs / snapshots / journal', `${fmt.mib(t.blobs ?? 0)} / ${fmt.mib(t.snapshots ?? 0)} / ${fmt.mib(t.journal ?? 0)} (the rest: free pages LMDB reuses)`],
    ['… stored content (LZ4) per result / facts per host', `${fmt.int(f.blobBytes.content / f.results)} B / ${fmt.int(f.factsBytesPerHost)} B`],
    ['data directory without the host facts', `${fmt.int(f.diskBytesPerResultWithoutFacts)} B/result`],
    ...(f.ara ? [
      ['ARA (SQLite) data file', `${fmt.mib(f.ara.diskBytes)} for ${fmt.int(f.ara.results)} results, ${fmt.int(f.ara.hosts)} hosts = ${fmt.int(f.ara.diskBytesPerResult)} B/result`],
      ['… stored content (zlib) per result / facts per host', `${fmt.int(f.ara.blobBytes.content / f.ara.results)} B / ${fmt.int(f.ara.factsBytesPerHost)} B`],
      ['… without the host facts', `${fmt.int(f.ara.diskBytesPerResultWithoutFacts)} B/result`],
    ] : []),
    ['restart: spawn → /healthz 200', `${(f.restartMs / 1000).toFixed(2)} s (empty data dir: ${(f.empty.readyMs / 1000).toFixed(2)} s)`],
    ...(f.recovery ? [['recovery (server log)', `${fmt.int(f.recovery.ms)} ms, slowest shard ${fmt.int(f.recovery.slowestShardMs)} ms, ${fmt.int(f.recovery.journalEventsReplayed)} journal events replayed = ${fmt.int(f.results / (f.recovery.ms / 1000))} results/s`]] : []),
  ]), '');
  return out.join('\n');
}

function overheadSection(o: OverheadResult): string {
  const out: string[] = ['## Recording overhead on `ansible-playbook`', ''];
  out.push(`Generated playbooks, \`ansible_connection=local\` hosts running \`debug\` tasks — the shape of ARA's own benchmark playbook — run by real \`ansible-playbook\` without a callback, with logbook's own callback (\`src/ansible\`, batch ingest, sender thread) into logbook, and with the stock ARA callback (Debian python3-ara, its defaults: synchronous, no callback threads) into logbook and into ARA's server. The modes run interleaved, ${o.repetitions} times each; the median wall time counts, and "paired" is the median of each run's ratio to the mean of the runs without callback just before and after it (a steady drift of the machine cancels out). "CPU" is the median user + system time of the ansible-playbook process tree plus the recording server's CPU during the run (logbook's idle cost in the run without callback): the run is CPU-bound, so CPU added is wall time added. On a shared VM both drift by ±10 % or more between runs; a few-% difference needs a quiet machine and \`OVERHEAD_RUNS=9\`. ARA publishes +46 % to +82 % for its callback into its own server; the target for logbook's callback is ≤ 5 %.`, '');
  for (const shape of o.shapes) {
    out.push(`### ${shape.name}, ${shape.forks} forks${shape.factsBytes ? ` (facts recorded: ${fmt.int(shape.factsBytes)} B per host)` : ''}`, '');
    const base = shape.medianSeconds.none ?? NaN;
    const modes = (Object.keys(shape.medianSeconds) as Mode[]);
    const cpuBase = shape.medianCpuSeconds?.none;
    out.push(table(['run', 'median wall time', 'overhead', 'paired', 'all runs', 'median CPU (ansible + server)', 'CPU overhead', 'results recorded', 'callback errors'], modes.map((mode) => {
      const runs = shape.runs.filter((r) => r.mode === mode);
      const med = shape.medianSeconds[mode]!;
      const cpu = shape.medianCpuSeconds?.[mode];
      return [
        MODE_LABEL[mode] + (mode === 'ara' ? ' (gunicorn 2w, SQLite)' : ''),
        `${med.toFixed(1)} s`, mode === 'none' ? '' : `${med >= base ? '+' : ''}${((100 * (med - base)) / base).toFixed(1)} %`,
        mode === 'none' || shape.pairedOverheadPct?.[mode] === undefined ? '' : `${shape.pairedOverheadPct[mode]! >= 0 ? '+' : ''}${shape.pairedOverheadPct[mode]!.toFixed(1)} %`,
        runs.map((r) => r.seconds.toFixed(1)).join(' / '),
        cpu === undefined ? '' : `${cpu.toFixed(1)} s`,
        mode === 'none' || cpu === undefined || !cpuBase ? '' : `${cpu >= cpuBase ? '+' : ''}${((100 * (cpu - cpuBase)) / cpuBase).toFixed(1)} %`,
        mode === 'none' ? '' : runs.map((r) => (r.results === null ? '?' : fmt.int(r.results))).join(' / '),
        mode === 'none' ? '' : String(runs.reduce((n, r) => n + r.callbackErrors.length, 0)),
      ];
    })), '');
  }
  return out.join('\n');
}

export function charts(run: BenchRun): Record<string, string> {
  const out: Record<string, string> = {};
  const ing = run.ingest;
  if (ing) {
    const cats = ing.connections.map(String);
    const series = (server: ServerName, payload: PayloadName, pick: (r: LoadRow) => number) =>
      ing.connections.map((c) => { const r = at(rowsOf(ing, server, payload), c); return r ? pick(r) : null; });
    const name = (server: 'logbook' | 'raw' | 'ara') => (server === 'raw' ? 'raw limit' : server === 'ara' ? 'ARA' : 'logbook');
    const tp: Series[] = [];
    for (const server of ['logbook', 'raw', 'ara'] as const) {
      for (const payload of ['looped', 'facts'] as const) {
        const values = series(server, payload, (r) => r.rps);
        if (values.some((v) => v !== null)) tp.push({ name: `${name(server)} ${payload === 'looped' ? '1.6 KB' : '30 KB'}`, values, dashed: payload === 'facts', color: COLORS[server] });
      }
    }
    out['ingest-throughput.svg'] = lineChart({ title: 'Ingest throughput vs connections (POST /results, durable)', categories: cats, xLabel: 'connections (dashed: 30 KB facts body)', yLabel: 'requests / s', series: tp, logY: true });
    const lat: Series[] = [];
    for (const server of ['logbook', 'ara', 'raw'] as const) {
      for (const [p, pick] of [['p50', (r: LoadRow) => r.latencyMs.p50], ['p99', (r: LoadRow) => r.latencyMs.p99]] as const) {
        const values = series(server, 'looped', pick);
        if (values.some((v) => v !== null)) lat.push({ name: `${name(server)} ${p}`, values, dashed: p === 'p50', color: COLORS[server] });
      }
    }
    lat.push({ name: `${P99_BOUND_MS} ms`, values: cats.map(() => P99_BOUND_MS), dashed: true, color: COLORS.bound });
    out['ingest-latency.svg'] = lineChart({ title: 'Ingest latency vs connections (1.6 KB result)', categories: cats, xLabel: 'connections (dashed: p50, solid: p99)', yLabel: 'milliseconds', series: lat, logY: true });
  }
  const rd = run.read;
  if (rd) {
    const eps = Object.keys(ENDPOINTS) as Endpoint[];
    const cats = eps.map((e) => SHORT[e]);
    const val = (server: ServerName, pick: (r: ReadRow) => number) => eps.map((e) => { const r = rd.rows.find((x) => x.server === server && x.endpoint === e); return r ? pick(r) : null; });
    const raw = rd.rows.find((x) => x.endpoint === 'raw');
    const tp: Series[] = [{ name: 'logbook', values: val('logbook', (r) => r.rps), color: COLORS.logbook }];
    if (rd.rows.some((x) => x.server === 'ara')) tp.push({ name: 'ARA', values: val('ara', (r) => r.rps), color: COLORS.ara });
    if (raw) {
      for (const t of tp) t.values.push(null);
      tp.push({ name: 'raw ceiling (uWS + LMDB get)', values: [...eps.map(() => null), raw.rps], color: COLORS.raw });
    }
    out['read-throughput.svg'] = barChart({ title: `Read throughput, ${rd.connections} connections`, categories: raw ? [...cats, 'raw GET'] : cats, xLabel: 'endpoint', yLabel: 'requests / s', series: tp, logY: true });
    const lat: Series[] = [
      { name: 'logbook p50', values: val('logbook', (r) => r.latencyMs.p50), color: '#9ecae1' },
      { name: 'logbook p90', values: val('logbook', (r) => r.latencyMs.p90), color: '#4292c6' },
      { name: 'logbook p99', values: val('logbook', (r) => r.latencyMs.p99), color: '#08519c' },
    ];
    if (rd.rows.some((x) => x.server === 'ara')) {
      lat.push({ name: 'ARA p50', values: val('ara', (r) => r.latencyMs.p50), color: '#fc9272' }, { name: 'ARA p90', values: val('ara', (r) => r.latencyMs.p90), color: '#ef3b2c' }, { name: 'ARA p99', values: val('ara', (r) => r.latencyMs.p99), color: '#a50f15' });
    }
    out['read-latency.svg'] = barChart({ title: `Read latency percentiles, ${rd.connections} connections`, categories: cats, xLabel: 'endpoint', yLabel: 'milliseconds', series: lat, logY: true });
  }
  const fp = run.footprint;
  if (fp) {
    const xs = fp.checkpoints.map((c) => c.results);
    const mib = (b: number) => b / 1048576;
    out['memory.svg'] = lineChart({
      title: 'Memory vs stored results', categories: xs.map((x) => (x >= 1e6 ? `${+(x / 1e6).toFixed(2)}M` : `${Math.round(x / 1000)}k`)), xValues: xs,
      xLabel: 'results stored', yLabel: 'MiB',
      series: [
        { name: 'server RSS after restart', values: fp.checkpoints.map((c) => (c.server ? mib(c.server.rssBytes) : null)), color: COLORS.logbook },
        { name: 'server anonymous RSS (no LMDB pages)', values: fp.checkpoints.map((c) => (c.server ? mib(c.server.rssAnonBytes) : null)), dashed: true, color: COLORS.logbook },
        { name: 'live state heap (after GC)', values: fp.checkpoints.map((c) => mib(c.heapBytes)), color: COLORS.extra },
      ],
    });
  }
  return out;
}

export function markdown(run: BenchRun): string {
  const m = run.machine;
  const loaded = Math.max(m.loadAvgStart[0] ?? 0, m.loadAvgEnd[0] ?? 0) > m.cpus * 0.75;
  const out: string[] = [
    `# logbook capacity benchmark`, '',
    `${run.started.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')} · ${run.quick ? '**quick mode** (short runs, 100 k-result store)' : 'full run'} · scenarios: ${run.scenarios.join(', ')} · ${Math.round(run.seconds / 60)} min`, '',
    `Machine: ${m.cpus} × ${m.cpuModel}, ${fmt.mib(m.memBytes)} RAM, Linux ${m.kernel}, Node ${m.node}; logbook ${m.logbookVersion}${m.commit ? ` (${m.commit})` : ''} with ${m.shards} shard(s). Load average ${m.loadAvgStart.map((x) => x.toFixed(1)).join(' ')} at start, ${m.loadAvgEnd.map((x) => x.toFixed(1)).join(' ')} at end.`, '',
  ];
  if (loaded) out.push(`> **The machine was loaded while this ran** (load average above its ${m.cpus} cores): other work competed for the CPU, so every number here is noisy and lower than on a quiet machine. Compare ratios, not absolutes.`, '');
  out.push('Load generator: Debian `wrk` (one thread, closed loop, loopback only); the `wrk cores` columns show that it was not the bottleneck. Every run is bounded by time and by request count. ARA: Debian ara-server 1.5.8 under gunicorn with 2 workers on SQLite, started fresh in the same run.', '');
  out.push('## Capacity planning (this machine, one node)', '', capacity(run), '');
  out.push(`"Sustained" is the highest throughput among the measured connection counts whose p99 stayed under ${P99_BOUND_MS} ms with no errors. Hosts × tasks per hour counts one \`POST /results\` per host and task; the ARA callback also sends about two requests per task (create, then finish) and a few per playbook, play and host, i.e. a few % more for fleets of 20+ hosts.`, '');
  if (run.ingest) out.push(ingestSection(run.ingest, run.machine.cpus), '');
  if (run.batch) out.push(batchSection(run.batch, run.ingest, run.machine.shards), '');
  if (run.read) out.push(readSection(run.read), '');
  if (run.overhead?.shapes) out.push(overheadSection(run.overhead), '');
  if (run.footprint) out.push(footprintSection(run.footprint), '');
  if (run.overload) out.push(overloadSection(run.overload), '');
  if (run.cluster) out.push(clusterSection(run.cluster), '');
  if (run.notes.length) out.push('## Notes from this run', '', ...run.notes.map((n) => `- ${n}`), '');
  out.push('## Reproduce', '', '```sh', 'npm run bench                  # the whole suite (≤ 15 min on 2 cores)', 'npm run bench -- --quick       # short runs, 100 k-result store (development)', 'npm run bench -- ingest read   # some scenarios: ingest, read, overhead, footprint, overload', '```', '',
    'Needs Debian `wrk`; for the ARA baseline and the overhead scenario `ansible-core python3-ara ara-server gunicorn` (a missing gunicorn is installed with apt-get when run as root, otherwise ARA is skipped with a message). Raw data: the JSON file of the same run beside this report.', '');
  return out.join('\n');
}

/** Write latest.md and the charts into dir; returns the file names written. */
export function writeReport(run: BenchRun, dir: string): string[] {
  const files: string[] = [];
  for (const [name, svg] of Object.entries(charts(run))) { writeFileSync(join(dir, name), svg); files.push(name); }
  writeFileSync(join(dir, 'latest.md'), markdown(run));
  files.push('latest.md');
  return files;
}
