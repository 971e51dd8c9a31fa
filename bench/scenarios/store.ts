// The read store: a logbook data directory with 1 M results (quick: 100 k)
// across 1 000 (quick: 100) playbooks of 10 hosts × 100 tasks, written
// in-process by bench/build_store.ts in a child process (with --expose-gc, so
// its heap can be measured), with logbook's snapshot cadence.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BuildResult, BuildSpec } from '../build_store.js';
import type { Context } from '../lib/context.js';
import { fmt } from '../lib/context.js';
import { factsResultContent, loopedResultContent } from '../lib/payloads.js';
import { fillAraDir, prepareAraDir } from '../lib/servers.js';

export const HOSTS = 10;
export const TASKS = 100;

export interface BuiltStore {
  dir: string;
  shards: number;
  hosts: number;
  tasks: number;
  build: BuildResult;
  remove(): void;
}

export async function buildStore(ctx: Context): Promise<BuiltStore> {
  const playbooks = ctx.quick ? 100 : 1000;
  const dir = mkdtempSync(join(tmpdir(), 'logbook-store-'));
  // the looped result, tagged per result so no two contents are equal
  const content = JSON.stringify(loopedResultContent()).replace('All items completed', 'All items completed @@');
  const spec: BuildSpec = {
    dir, playbooks, hosts: HOSTS, tasks: TASKS, shards: ctx.shards, snapshotEvery: 100_000, checkpoints: 10,
    // restart the real server at 20, 40, 60 and 80 % (footprint does 100 %)
    serverSamples: ctx.scenarios.includes('footprint') ? 5 : 0,
    content, facts: JSON.stringify(factsResultContent().ansible_facts),
  };
  ctx.step(`store: writing ${fmt.int(playbooks * HOSTS * TASKS)} results (${playbooks} playbooks × ${HOSTS} hosts × ${TASKS} tasks, ${ctx.shards} shard(s)) in-process through Shard + LmdbShardStore`);
  const script = new URL('../build_store.js', import.meta.url).pathname;
  const child = spawn(process.execPath, ['--expose-gc', '--max-old-space-size=4096', script, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let buf = '';
  const build = await new Promise<BuildResult>((resolve, reject) => {
    let result: BuildResult | null = null;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (line.checkpoint && line.checkpoint.results > 0) {
          const c = line.checkpoint;
          ctx.step(`store: ${fmt.int(c.results)} / ${fmt.int(line.total)} results after ${c.seconds.toFixed(0)} s (heap ${fmt.mib(c.heapBytes)})` +
            (c.server ? `; a server started on it is ready in ${fmt.int(c.server.readyMs)} ms with RSS ${fmt.mib(c.server.rssBytes)}` : ''));
        }
        if (line.done) result = line.done;
        if (line.error) reject(new Error(`store build failed: ${line.error}`));
      }
    });
    child.on('exit', (code) => (result ? resolve(result) : reject(new Error(`store build exited with ${code}`))));
  });
  ctx.step(`store: ${fmt.int(build.results)} results in ${build.seconds.toFixed(0)} s (${fmt.int(build.results / build.seconds)} results/s), ${fmt.mib(build.diskBytes)} on disk`);
  return { dir, shards: ctx.shards, hosts: HOSTS, tasks: TASKS, build, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** ARA's read store: 100 playbooks × 10 hosts × 10 tasks = 10 k results, filled through its ORM. */
export interface AraStore {
  dir: string; results: number; playbooks: number; hosts: number; diskBytes: number; buildSeconds: number;
  /** stored (zlib) bytes of result contents and host facts */
  blobBytes: { content: number; facts: number };
  remove(): void;
}

export async function buildAraStore(ctx: Context): Promise<AraStore> {
  const s = { playbooks: 100, hosts: 10, tasks: 10 };
  ctx.step(`ara store: filling an ARA database through its ORM (${s.playbooks} playbooks × ${s.hosts} hosts × ${s.tasks} tasks, same content and facts)`);
  const dir = prepareAraDir();
  const filled = fillAraDir(dir, s.playbooks, s.hosts, s.tasks, { content: loopedResultContent(), facts: factsResultContent().ansible_facts });
  const diskBytes = readdirSync(dir).filter((f) => f.startsWith('ansible.sqlite')).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
  ctx.step(`ara store: ${fmt.int(filled.results)} results in ${filled.seconds.toFixed(0)} s, ${fmt.mib(diskBytes)} on disk`);
  return { dir, results: filled.results, playbooks: s.playbooks, hosts: s.playbooks * s.hosts, diskBytes, buildSeconds: filled.seconds, blobBytes: filled.blobBytes, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
