// Operations endpoints, outside the resource API:
//   GET /healthz               200 {"status":"ok",…} once recovered and every shard is up;
//                              503 {"status":"recovering"|"degraded"|"stopping",…} otherwise
//   GET /metrics               Prometheus text format (src/metrics.ts)
//   GET /api/v1/openapi.json   the OpenAPI 3.1 document (src/api/openapi.ts)
//   POST /__test__/shards/<k>/crash   only with LOGBOOK_TEST_HOOKS=1: kill a shard worker
// They answer while the shards recover (health and metrics matter most then).
import type { Config } from '../config.js';
import { Errors } from '../api/errors.js';
import { buildOpenApi } from '../api/openapi.js';
import { errText, log } from '../log.js';
import { ROUTE, type Metrics } from '../metrics.js';
import type { ShardPool } from '../shard/pool.js';
import type { StatsReply, ShardToFront } from '../shard/protocol.js';
import { reply, replyAs, type Exchange } from './respond.js';

export type OpsRoute =
  | { kind: 'ops'; op: 'healthz' | 'metrics' | 'openapi' }
  | { kind: 'ops'; op: 'crash'; shard: number };

const TEST_CRASH = /^\/__test__\/shards\/(\d{1,2})\/crash$/;
/** read once: process.env is a slow native getter, and this is checked on the request path */
const TEST_HOOKS = process.env.LOGBOOK_TEST_HOOKS === '1';

/** The ops route of a path (trailing slash already removed), or null. */
export function parseOpsRoute(path: string): OpsRoute | null {
  switch (path) {
    case '/healthz': return { kind: 'ops', op: 'healthz' };
    case '/metrics': return { kind: 'ops', op: 'metrics' };
    case '/api/v1/openapi.json': return { kind: 'ops', op: 'openapi' };
  }
  if (TEST_HOOKS && path.startsWith('/__test__/')) {
    const m = TEST_CRASH.exec(path);
    if (m) return { kind: 'ops', op: 'crash', shard: Number(m[1]) };
  }
  return null;
}

export function opsAllow(route: OpsRoute): string {
  return route.op === 'crash' ? 'POST' : 'GET, HEAD';
}

/** The metrics route index (metrics.ts ROUTE) of an ops route. */
export function opsMetricRoute(route: OpsRoute): number {
  switch (route.op) {
    case 'healthz': return ROUTE.healthz;
    case 'metrics': return ROUTE.metrics;
    case 'openapi': return ROUTE.openapi;
    case 'crash': return ROUTE.test;
  }
}

/** What the ops endpoints read from the front. */
export interface OpsFront {
  ready(): boolean;
  draining(): boolean;
  pool(): ShardPool | null;
  labelCount(): number;
  /** requests refused for overload since start-up, by where (src/http/admission.ts) */
  refused(): Record<'front_lag' | 'shard_queue' | 'after_parse', number>;
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
    if (route.op === 'crash') {
      if (ex.method !== 'POST') return reply(ex, 405, Errors.methodNotAllowed(ex.method));
      const pool = this.front.pool();
      if (!pool || route.shard >= pool.size) return reply(ex, 404, Errors.notFound());
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
    const body = {
      status: down.length ? 'degraded' : 'ok', version: this.version, shards: pool.size,
      ...(down.length ? { shards_down: down } : {}),
      uptime_seconds: Math.round((Date.now() - this.startedAt) / 1000),
    };
    reply(ex, down.length ? 503 : 200, JSON.stringify(body));
  }

  /** Ask every shard for its stats (bounded wait), then render everything. */
  private async scrape(): Promise<string> {
    const pool = this.front.ready() ? this.front.pool() : null;
    this.metrics.ready.set(this.front.ready() ? 1 : 0);
    if (pool) this.metrics.updateShards(pool, await shardStats(pool), this.front.labelCount());
    this.metrics.updateRefused(this.front.refused());
    return this.metrics.render();
  }
}

function shardStats(pool: ShardPool): Promise<Array<StatsReply | null>> {
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
