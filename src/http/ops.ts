// Operations endpoints, outside the resource API:
//   GET /healthz               200 {"status":"ok",…} once recovered, every shard up and writes stored;
//                              503 {"status":"recovering"|"degraded"|"stopping",…} otherwise: degraded
//                              names `shards_down`, `writes` (shards whose last write was refused for
//                              storage: reads still answer) or a NATS connection that is not up (cluster)
//   GET /metrics               Prometheus text format (src/metrics.ts)
//   GET /api/v1/openapi.json   the OpenAPI 3.1 document (src/api/openapi.ts)
//   POST /__test__/shards/<k>/crash   only with LOGBOOK_TEST_HOOKS=1: kill a shard worker
//   POST /__test__/shards/<k>/stall/<ms>   the same: keep a shard worker's thread busy
//   POST /__test__/labels/hold/<ms>   the same: label writes issued in the next <ms> report
//                              their outcome only then (a label store slow to make them durable)
//   POST /__test__/labels/fail/<ms>[/<n>]   the same: the next label write (or the one after
//                              the next n) is not stored and fails <ms> later (a label store
//                              that could not write it)
// They answer while the shards recover (health and metrics matter most then).
import type { Config } from '../config.js';
import { TEST_HOOKS_ON } from '../test_hooks.js';
import { Errors } from '../api/errors.js';
import { buildOpenApi } from '../api/openapi.js';
import { errText, log } from '../log.js';
import { ROUTE, type Metrics } from '../metrics.js';
import type { Shards } from '../shard/shards.js';
import type { ClusterStatus } from '../shard/shards.js';
import type { StatsReply, ShardToFront } from '../shard/protocol.js';
import { reply, replyAs, type Exchange } from './respond.js';

export type OpsRoute =
  | { kind: 'ops'; op: 'healthz' | 'metrics' | 'openapi' }
  | { kind: 'ops'; op: 'crash'; shard: number }
  | { kind: 'ops'; op: 'stall'; shard: number; ms: number }
  | { kind: 'ops'; op: 'holdLabels'; ms: number; fail: boolean; skip: number };

const TEST_CRASH = /^\/__test__\/shards\/(\d{1,2})\/crash$/;
const TEST_STALL = /^\/__test__\/shards\/(\d{1,2})\/stall\/(\d{1,5})$/;
const TEST_HOLD_LABELS = /^\/__test__\/labels\/(hold|fail)\/(\d{1,5})(?:\/(\d{1,2}))?$/;
/** read once: process.env is a slow native getter, and this is checked on the request path */

/** The ops route of a path (trailing slash already removed), or null. */
export function parseOpsRoute(path: string): OpsRoute | null {
  switch (path) {
    case '/healthz': return { kind: 'ops', op: 'healthz' };
    case '/metrics': return { kind: 'ops', op: 'metrics' };
    case '/api/v1/openapi.json': return { kind: 'ops', op: 'openapi' };
  }
  if (TEST_HOOKS_ON && path.startsWith('/__test__/')) {
    const m = TEST_CRASH.exec(path);
    if (m) return { kind: 'ops', op: 'crash', shard: Number(m[1]) };
    const stall = TEST_STALL.exec(path);
    if (stall) return { kind: 'ops', op: 'stall', shard: Number(stall[1]), ms: Number(stall[2]) };
    const hold = TEST_HOLD_LABELS.exec(path);
    if (hold) return { kind: 'ops', op: 'holdLabels', ms: Number(hold[2]), fail: hold[1] === 'fail', skip: Number(hold[3] ?? 0) };
  }
  return null;
}

export function opsAllow(route: OpsRoute): string {
  return route.op === 'crash' || route.op === 'stall' || route.op === 'holdLabels' ? 'POST' : 'GET, HEAD';
}

/** The metrics route index (metrics.ts ROUTE) of an ops route. */
export function opsMetricRoute(route: OpsRoute): number {
  switch (route.op) {
    case 'healthz': return ROUTE.healthz;
    case 'metrics': return ROUTE.metrics;
    case 'openapi': return ROUTE.openapi;
    case 'crash': case 'stall': case 'holdLabels': return ROUTE.test;
  }
}

/** What the ops endpoints read from the front. */
export interface OpsFront {
  ready(): boolean;
  draining(): boolean;
  pool(): Shards | null;
  labelCount(): number;
  /**
   * test hook: label writes issued in the next `ms` report their outcome only then (LabelCatalogue.heldUntil);
   * `fail`: the next one (after `skip` more) instead is not stored and fails `ms` later (LabelCatalogue.failNext)
   */
  holdLabelWrites(ms: number, fail: boolean, skip: number): void;
  /** requests refused for overload since start-up, by where (src/http/admission.ts) */
  refused(): Record<'front_lag' | 'shard_queue' | 'after_parse', number>;
  /** bring gauges kept elsewhere up to date (the webhook queues) */
  beforeScrape?: () => void;
}

/** How long a scrape waits for shard stats before rendering without them. */
const STATS_TIMEOUT_MS = 2000;

export class Ops {
  private readonly openapi: string;
  private readonly startedAt = Date.now();

  constructor(config: Config, private readonly version: string, private readonly metrics: Metrics, private readonly front: OpsFront) {
    this.openapi = JSON.stringify(buildOpenApi(config, version));
  }

  handle(ex: Exchange, route: OpsRoute): void {
    const read = ex.method === 'GET' || ex.method === 'HEAD';
    if (route.op === 'holdLabels') {
      if (ex.method !== 'POST') return reply(ex, 405, Errors.methodNotAllowed(ex.method));
      this.front.holdLabelWrites(route.ms, route.fail, route.skip);
      return reply(ex, 200, JSON.stringify({ holding: route.ms }));
    }
    if (route.op === 'crash' || route.op === 'stall') {
      // test hooks (LOGBOOK_TEST_HOOKS=1): POST to an existing shard
      if (ex.method !== 'POST') return reply(ex, 405, Errors.methodNotAllowed(ex.method));
      const pool = this.front.pool();
      if (!pool || route.shard >= pool.size) return reply(ex, 404, Errors.notFound());
      if (route.op === 'stall') return reply(ex, 200, JSON.stringify({ stalling: pool.stall(route.shard, route.ms) ? route.shard : null }));
      log.warn('test hook: crashing a shard worker', { shard: route.shard });
      return reply(ex, 200, JSON.stringify({ crashing: pool.crash(route.shard) ? route.shard : null }));
    }
    if (!read) return reply(ex, 405, Errors.methodNotAllowed(ex.method));
    switch (route.op) {
      case 'healthz': return this.health(ex);
      case 'openapi': return reply(ex, 200, this.openapi);
      case 'metrics':
        this.scrape().then(
          (text) => replyAs(ex, 200, text, this.metrics.contentType),
          (err) => {
            log.error('metrics scrape failed', { err: errText(err) });
            reply(ex, 500, Errors.internal());
          },
        );
    }
  }

  private health(ex: Exchange): void {
    if (!this.front.ready()) return reply(ex, 503, '{"status":"recovering"}');
    if (this.front.draining()) return reply(ex, 503, '{"status":"stopping"}');
    const pool = this.front.pool()!;
    const down = pool.down();
    const cluster = pool.clusterStatus?.();
    // the write path: shards refusing writes for storage (reads still answer), and NATS (cluster)
    const refused = pool.writesRefused?.() ?? [];
    const natsDown = cluster !== undefined && cluster.nats !== 'connected';
    const degraded = down.length > 0 || refused.length > 0 || natsDown;
    const body = {
      status: degraded ? 'degraded' : 'ok', version: this.version, shards: pool.size,
      ...(down.length ? { shards_down: down } : {}),
      ...(refused.length ? {
        writes: {
          status: 'refused', reads: 'ok',
          shards: refused.map((r) => ({ shard: r.shard, since: new Date(r.since).toISOString(), detail: r.detail })),
        },
      } : {}),
      uptime_seconds: Math.round((Date.now() - this.startedAt) / 1000),
      ...(cluster ? { cluster } : {}),
    };
    reply(ex, degraded ? 503 : 200, JSON.stringify(body));
  }

  /** Ask every shard for its stats (bounded wait), then render everything. */
  private async scrape(): Promise<string> {
    const pool = this.front.ready() ? this.front.pool() : null;
    this.metrics.ready.set(this.front.ready() ? 1 : 0);
    if (pool) this.metrics.updateShards(pool, await shardStats(pool), this.front.labelCount());
    this.metrics.updateRefused(this.front.refused());
    this.front.beforeScrape?.();
    const cluster = pool?.clusterStatus?.();
    return await this.metrics.render() + (cluster ? clusterMetrics(cluster) : '');
  }
}

function shardStats(pool: Shards): Promise<Array<StatsReply | null>> {
  return new Promise((resolve) => {
    const out = new Array<StatsReply | null>(pool.size).fill(null);
    let remaining = pool.size;
    const timer = setTimeout(() => { remaining = -1; resolve(out); }, STATS_TIMEOUT_MS);
    const done = (r: ShardToFront, shard: number) => {
      if (remaining < 0) return;
      if (r.k === 'stats') out[shard] = r;
      if (--remaining === 0) { clearTimeout(timer); resolve(out); }
    };
    for (let shard = 0; shard < pool.size; shard++) pool.send(shard, { k: 'stats', rid: 0 }, done, shard);
  });
}

/** Cluster mode's gauges (per node: what this node sees and owns). */
function clusterMetrics(c: ClusterStatus): string {
  const node = JSON.stringify(c.node);
  const lines = [
    '# HELP logbook_cluster_nodes_live Nodes this node has heard from within the lease (itself included).',
    '# TYPE logbook_cluster_nodes_live gauge',
    `logbook_cluster_nodes_live{node=${node}} ${c.nodes.length}`,
    '# HELP logbook_cluster_partitions_owned Partitions this node owns.',
    '# TYPE logbook_cluster_partitions_owned gauge',
    `logbook_cluster_partitions_owned{node=${node}} ${Object.keys(c.owned).length}`,
    '# HELP logbook_cluster_partitions_unowned Partitions no live node owns (their requests get 503).',
    '# TYPE logbook_cluster_partitions_unowned gauge',
    `logbook_cluster_partitions_unowned{node=${node}} ${c.unowned.length}`,
    '# HELP logbook_cluster_partition_epoch Fence epoch of each partition this node owns.',
    '# TYPE logbook_cluster_partition_epoch gauge',
    ...Object.entries(c.owned).map(([p, epoch]) => `logbook_cluster_partition_epoch{node=${node},partition="${p}"} ${epoch}`),
    '# HELP logbook_cluster_standby_lag Stream messages a standby on this node is behind its partition\'s owner.',
    '# TYPE logbook_cluster_standby_lag gauge',
    ...c.standby.filter((s) => s.lag !== null).map((s) => `logbook_cluster_standby_lag{node=${node},partition="${s.partition}"} ${s.lag}`),
    '# HELP logbook_cluster_nats_connected 1 while this node is connected to NATS.',
    '# TYPE logbook_cluster_nats_connected gauge',
    `logbook_cluster_nats_connected{node=${node}} ${c.nats === 'connected' ? 1 : 0}`,
  ];
  return lines.join('\n') + '\n';
}
