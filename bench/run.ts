// The benchmark suite: `npm run bench [-- [--quick] [--no-ara] [scenario…]]`.
// Scenarios: ingest, batch, read, footprint, overhead, overload, cluster (default: all, in that order).
// Prints a progress line per step; writes bench/results/<UTC timestamp>.json,
// bench/results/latest.md and the SVG charts it links.
//   --quick        short runs and a 100 k-result store (for development)
//   --no-ara       skip ARA's server (baselines and the overhead run into ARA)
//   --report FILE  only re-render latest.md and the charts from a run's JSON
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { VERSION } from '../src/version.js';
import { defaultShards, elapsed, type Context } from './lib/context.js';
import { writeReport, type BenchRun } from './lib/report.js';
import { araUnavailable, SOURCE_ROOT } from './lib/servers.js';
import { wrkAvailable } from './lib/wrk.js';
import { natsServerBinary } from '../test/helpers/nats.js';
import { batch } from './scenarios/batch.js';
import { clusterScenario } from './scenarios/cluster.js';
import { footprint } from './scenarios/footprint.js';
import { ingest } from './scenarios/ingest.js';
import { overhead } from './scenarios/overhead.js';
import { overloadScenario } from './scenarios/overload.js';
import { read } from './scenarios/read.js';
import { buildAraStore, buildStore, type AraStore, type BuiltStore } from './scenarios/store.js';

const SCENARIOS = ['ingest', 'batch', 'read', 'footprint', 'overhead', 'overload', 'cluster'] as const;
type Scenario = (typeof SCENARIOS)[number];
const ALIASES: Record<string, Scenario> = { ingest_batch: 'batch', batches: 'batch', recovery: 'footprint', memory: 'footprint', reads: 'read', write: 'ingest', writes: 'ingest', ansible: 'overhead', shedding: 'overload', overloaded: 'overload', nats: 'cluster', failover: 'cluster', nodes: 'cluster' };
const RESULTS_DIR = join(SOURCE_ROOT, 'bench', 'results');

function usage(code: number): never {
  (code ? process.stderr : process.stdout).write(`usage: npm run bench -- [--quick] [--no-ara] [${SCENARIOS.join('|')}]…\n       npm run bench -- --report bench/results/<run>.json\n`);
  process.exit(code);
}

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) usage(0);
if (args[0] === '--report') {
  const run = JSON.parse(readFileSync(args[1] ?? usage(2), 'utf8')) as BenchRun;
  console.log(`wrote ${writeReport(run, RESULTS_DIR).map((f) => join('bench/results', f)).join(', ')}`);
  process.exit(0);
}
const quick = args.includes('--quick');
const noAra = args.includes('--no-ara');
const picked = new Set<Scenario>();
for (const a of args.filter((x) => !x.startsWith('--'))) {
  const s = (SCENARIOS as readonly string[]).includes(a) ? (a as Scenario) : ALIASES[a];
  if (!s) { process.stderr.write(`unknown scenario "${a}"\n`); usage(2); }
  picked.add(s);
}
for (const a of args.filter((x) => x.startsWith('--'))) if (a !== '--quick' && a !== '--no-ara') { process.stderr.write(`unknown option ${a}\n`); usage(2); }
const scenarios = SCENARIOS.filter((s) => picked.size === 0 || picked.has(s));

const step = (msg: string) => console.log(`[${elapsed()}] ${msg}`);
const notes: string[] = [];
// built on first use, shared by the scenarios, removed at the end
const fixtures: { store?: Promise<BuiltStore>; araStore?: Promise<AraStore | null> } = {};
const ctx: Context = {
  quick,
  scenarios,
  shards: defaultShards(),
  araSkipped: noAra ? 'skipped with --no-ara' : araUnavailable(step),
  step,
  note: (msg) => { notes.push(msg); },
  store: () => (fixtures.store ??= buildStore(ctx)),
  araStore: () => (fixtures.araStore ??= ctx.araSkipped ? Promise.resolve(null) : buildAraStore(ctx)),
};
if (ctx.araSkipped) { step(`ARA baseline: ${ctx.araSkipped}`); notes.push(`ARA baseline not measured: ${ctx.araSkipped}`); }

function commit(): string | null {
  try { return execFileSync('git', ['-C', SOURCE_ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(); } catch { return null; }
}

const started = new Date();
const run: BenchRun = {
  format: 1, started: started.toISOString(), finished: '', seconds: 0, quick, scenarios: [...scenarios],
  machine: {
    cpus: availableParallelism(), cpuModel: cpus()[0]?.model.trim() ?? 'unknown', memBytes: totalmem(), node: process.versions.node, kernel: release(),
    loadAvgStart: loadavg(), loadAvgEnd: [], logbookVersion: VERSION, commit: commit(), shards: ctx.shards,
  },
  notes,
};
step(`logbook ${VERSION} benchmark, ${quick ? 'quick' : 'full'} mode: ${scenarios.join(', ')} (${run.machine.cpus} cores, load average ${run.machine.loadAvgStart.map((x) => x.toFixed(1)).join(' ')}, ${ctx.shards} shard(s))`);
if (run.machine.loadAvgStart[0]! > run.machine.cpus * 0.75) step('warning: the machine is busy (load average above its cores): numbers will be noisy');

const needsWrk: Scenario[] = ['ingest', 'read', 'cluster'];
let failed = false;
try {
  for (const s of scenarios) {
    if (needsWrk.includes(s) && !wrkAvailable()) {
      step(`${s}: skipped: wrk is not installed (Debian: apt-get install wrk)`);
      notes.push(`${s}: skipped (wrk not installed)`);
      continue;
    }
    if (s === 'cluster' && !natsServerBinary()) {
      step('cluster: skipped: nats-server is not installed (Debian: apt-get install nats-server)');
      notes.push('cluster: skipped (nats-server not installed)');
      continue;
    }
    step(`== ${s}`);
    try {
      switch (s) {
        case 'ingest': run.ingest = await ingest(ctx); break;
        case 'batch': run.batch = await batch(ctx); break;
        case 'read': run.read = await read(ctx); break;
        case 'footprint': run.footprint = await footprint(ctx); break;
        case 'overhead': run.overhead = await overhead(ctx); break;
        case 'overload': run.overload = await overloadScenario(ctx); break;
        case 'cluster': run.cluster = await clusterScenario(ctx); break;
      }
    } catch (err) {
      failed = true;
      step(`${s}: FAILED: ${(err as Error).stack ?? err}`);
      notes.push(`${s}: failed: ${(err as Error).message}`);
    }
  }
} finally {
  (await fixtures.store?.catch(() => null))?.remove();
  (await fixtures.araStore?.catch(() => null))?.remove();
}

const finished = new Date();
run.finished = finished.toISOString();
run.seconds = (finished.getTime() - started.getTime()) / 1000;
run.machine.loadAvgEnd = loadavg();
mkdirSync(RESULTS_DIR, { recursive: true });
const jsonName = `${run.started.replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z')}.json`;
writeFileSync(join(RESULTS_DIR, jsonName), JSON.stringify(run, null, 1) + '\n');
const files = writeReport(run, RESULTS_DIR);
step(`done in ${elapsed()}: bench/results/${jsonName}, ${files.map((f) => 'bench/results/' + f).join(', ')}`);
process.exitCode = failed ? 1 : 0;
