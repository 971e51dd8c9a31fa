// Scenario 4: recovery and footprint of the read store (1 M results; quick:
// 100 k). Heap per result is measured where it can be isolated: in the builder
// process, after a full GC, through the same Shard code the server runs. Disk
// bytes per result are the data directory's file sizes. Restart time is a real
// server process from spawn until /healthz answers 200 (recovery done), and
// its RSS then, against an empty server's, gives RSS per result.
import type { Context } from '../lib/context.js';
import { fmt } from '../lib/context.js';
import { recoveredLine, rssAnonBytesOf, startLogbook } from '../lib/servers.js';

export interface FootprintResult {
  results: number;
  playbooks: number;
  shards: number;
  buildSeconds: number;
  heapBytesPerResult: number;
  /** builder heap along the build; where sampled, a real server restarted on the store at that size */
  checkpoints: Array<{ results: number; heapBytes: number; server: { readyMs: number; rssBytes: number; rssAnonBytes: number } | null }>;
  diskBytes: number;
  diskBytesPerResult: number;
  /** the data directory minus the stored host facts, per result */
  diskBytesPerResultWithoutFacts: number;
  /** stored bytes of one host's facts (~22 KB of JSON) */
  factsBytesPerHost: number;
  hosts: number;
  tableBytes: Record<string, number>;
  blobBytes: { content: number; facts: number };
  restartMs: number;
  recovery: { ms: number; slowestShardMs: number; results: number; journalEventsReplayed: number } | null;
  empty: { readyMs: number; rssBytes: number; rssAnonBytes: number };
  recovered: { rssBytes: number; rssAnonBytes: number };
  rssBytesPerResult: number;
  rssAnonBytesPerResult: number;
  ara: { results: number; hosts: number; diskBytes: number; diskBytesPerResult: number; diskBytesPerResultWithoutFacts: number; factsBytesPerHost: number; blobBytes: { content: number; facts: number } } | null;
}

const settle = () => new Promise((r) => setTimeout(r, 1000));

export async function footprint(ctx: Context): Promise<FootprintResult> {
  ctx.step('footprint: an empty logbook for the baseline RSS');
  const empty = await startLogbook({ env: { LOGBOOK_SHARDS: String(ctx.shards) } });
  let emptyMem;
  try {
    await settle();
    emptyMem = { readyMs: empty.readyMs, rssBytes: empty.rssBytes(), rssAnonBytes: rssAnonBytesOf(empty.pid) };
  } finally { await empty.stop(); }
  ctx.step(`footprint: empty server ready in ${fmt.int(emptyMem.readyMs)} ms, RSS ${fmt.mib(emptyMem.rssBytes)}`);

  const store = await ctx.store();
  const b = store.build;
  ctx.step(`footprint: restarting logbook on ${fmt.int(b.results)} results (${fmt.mib(b.diskBytes)})`);
  const lb = await startLogbook({ dataDir: store.dir, env: { LOGBOOK_SHARDS: String(store.shards) } });
  let recovered, recovery;
  try {
    recovery = recoveredLine(lb.output());
    await settle();
    recovered = { rssBytes: lb.rssBytes(), rssAnonBytes: rssAnonBytesOf(lb.pid) };
  } finally { await lb.stop(); }
  ctx.step(`footprint: ready after ${fmt.int(lb.readyMs)} ms (recovery ${recovery ? fmt.int(recovery.ms) + ' ms, ' + fmt.int(recovery.journalEventsReplayed) + ' journal events replayed' : 'line not found'}), RSS ${fmt.mib(recovered.rssBytes)} (anonymous ${fmt.mib(recovered.rssAnonBytes)})`);

  let ara: FootprintResult['ara'] = null;
  const a = ctx.araSkipped ? null : await ctx.araStore().catch((err) => { ctx.note(`footprint: ARA store failed: ${(err as Error).message}`); return null; });
  if (a) {
    ara = {
      results: a.results, hosts: a.hosts, diskBytes: a.diskBytes, diskBytesPerResult: a.diskBytes / a.results,
      diskBytesPerResultWithoutFacts: (a.diskBytes - a.blobBytes.facts) / a.results, factsBytesPerHost: a.blobBytes.facts / a.hosts, blobBytes: a.blobBytes,
    };
  }

  const r: FootprintResult = {
    results: b.results, playbooks: b.playbooks, shards: store.shards, buildSeconds: b.seconds,
    heapBytesPerResult: b.heapBytesPerResult,
    checkpoints: b.checkpoints.map(({ results, heapBytes, server }, i) => ({
      results, heapBytes,
      server: i === 0 ? { readyMs: emptyMem.readyMs, rssBytes: emptyMem.rssBytes, rssAnonBytes: emptyMem.rssAnonBytes }
        : i === b.checkpoints.length - 1 ? { readyMs: lb.readyMs, ...recovered }
        : server ? { readyMs: server.readyMs, rssBytes: server.rssBytes, rssAnonBytes: server.rssAnonBytes } : null,
    })),
    diskBytes: b.diskBytes, diskBytesPerResult: b.diskBytes / b.results, tableBytes: b.tableBytes, blobBytes: b.blobBytes, hosts: b.hosts,
    diskBytesPerResultWithoutFacts: (b.diskBytes - b.blobBytes.facts) / b.results, factsBytesPerHost: b.blobBytes.facts / b.hosts,
    restartMs: lb.readyMs, recovery, empty: emptyMem, recovered,
    rssBytesPerResult: (recovered.rssBytes - emptyMem.rssBytes) / b.results,
    rssAnonBytesPerResult: (recovered.rssAnonBytes - emptyMem.rssAnonBytes) / b.results,
    ara,
  };
  ctx.step(`footprint: heap ${fmt.int(r.heapBytesPerResult)} B/result, RSS ${fmt.int(r.rssBytesPerResult)} B/result (anonymous ${fmt.int(r.rssAnonBytesPerResult)}), ` +
    `disk ${fmt.int(r.diskBytesPerResultWithoutFacts)} B/result + ${fmt.int(r.factsBytesPerHost)} B per host's facts` +
    (ara ? ` (ARA/SQLite: ${fmt.int(ara.diskBytesPerResultWithoutFacts)} B/result + ${fmt.int(ara.factsBytesPerHost)} B per host's facts)` : ''));
  return r;
}
