// ARA's /api/v1/latesthosts (docs/api.md#latest-hosts): the newest host row of
// each name, over every playbook, with its playbook. Hosts live in the shard
// of their playbook; each shard keeps its newest row per name
// (src/shard/latest_hosts.ts), the front asks every shard for theirs, keeps the
// newest per name, filters, orders and cuts the page, then reads the page's
// hosts (their detail, facts and playbook included, as ARA's
// DetailedLatestHostSerializer shows them) from the shards that hold them.
import { Errors, Messages } from '../api/errors.js';
import type { PageSettings } from '../api/list_query.js';
import { LIST_PARAMS } from '../api/resources.js';
import { formatTimestamp, parseTimestamp } from '../api/time.js';
import type { ReplyHandler } from '../shard/shards.js';
import type { LatestHostRow, Reply } from '../shard/protocol.js';
import type { Shards } from '../shard/shards.js';
import type { Directory } from './directory.js';
import { pageLinks, parseQuery } from './page_links.js';
import { answering, reply } from './respond.js';
import type { Req } from './routes.js';

// LatestHostRow positions
const NAME = 0, ID = 1, CREATED = 2, UPDATED = 3, PLAYBOOK = 4, PLAYBOOK_NAME = 10, PLAYBOOK_PATH = 11;
const COUNTER_AT: Record<string, number> = { changed: 5, failed: 6, ok: 7, skipped: 8, unreachable: 9 };
/** ARA's LatestHostFilter orders (`id` is not one: the row's key is its name) */
const ORDER_AT: Record<string, number> = { name: NAME, created: CREATED, updated: UPDATED, ...COUNTER_AT };

type Test = (row: LatestHostRow) => boolean;

interface Parsed { tests: Test[]; contains: string | null; order: Array<[number, boolean]>; limit: number; offset: number }

/** ARA's LatestHostFilter: every parameter it takes, and what it tests. */
function parse(params: Map<string, string[]>, pages: PageSettings, ara: boolean): Parsed | { error: string } {
  const errors: Record<string, string[]> = Object.create(null); // a parameter may be called __proto__
  const tests: Test[] = [];
  let contains: string | null = null;
  // every list's own parameters but `cursor` (this list pages by offset: its `next` links say so)
  const known = new Set(LIST_PARAMS.filter((p) => p !== 'cursor'));
  const last = (name: string): string | undefined => {
    known.add(name);
    const v = params.get(name);
    return v === undefined || v[v.length - 1] === '' ? undefined : v[v.length - 1];
  };
  const name = last('name');
  if (name !== undefined) contains = name.toLowerCase();
  const playbook = last('playbook');
  if (playbook !== undefined) {
    const n = decimal(playbook);
    if (n === undefined) errors.playbook = [Messages.enterNumber];
    else tests.push((r) => r[PLAYBOOK] === Math.trunc(n));
  }
  for (const [param, at] of [['playbook_name', PLAYBOOK_NAME], ['playbook_path', PLAYBOOK_PATH]] as const) {
    const v = last(param)?.toLowerCase();
    if (v !== undefined) tests.push((r) => (r[at] ?? '').toLowerCase().includes(v));
  }
  for (const [counter, at] of Object.entries(COUNTER_AT)) {
    for (const [suffix, gt] of [['__gt', true], ['__lt', false]] as const) {
      const v = last(counter + suffix);
      if (v === undefined) continue;
      const n = decimal(v);
      if (n === undefined) { errors[counter + suffix] = [Messages.enterNumber]; continue; }
      tests.push(gt ? (r) => (r[at] as number) > n : (r) => (r[at] as number) < n);
    }
  }
  // the latest-host row's own stamps and its host's are the same here (see docs/api.md#latest-hosts)
  for (const prefix of ['', 'host__']) {
    for (const [field, at] of [['created', CREATED], ['updated', UPDATED]] as const) {
      for (const [suffix, before] of [['_before', true], ['_after', false]] as const) {
        const param = prefix + field + suffix;
        const v = last(param);
        if (v === undefined) continue;
        const us = parseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(v) ? v + 'T00:00:00' : v);
        if (us === undefined) { errors[param] = [Messages.enterDatetime]; continue; }
        tests.push(before ? (r) => (r[at] as number) <= us : (r) => (r[at] as number) >= us);
      }
    }
  }
  const order: Array<[number, boolean]> = [];
  const orderText = params.get('order')?.at(-1) ?? '';
  if (orderText !== '') {
    for (const item of orderText.split(',')) {
      const desc = item.startsWith('-');
      const at = ORDER_AT[desc ? item.slice(1) : item];
      if (at === undefined) { errors.order = [Messages.selectChoice(desc ? item.slice(1) : item)]; break; }
      order.push([at, desc]);
    }
  }
  const limit = window(params.get('limit'), 1, pages.pageSize, errors, 'limit');
  const offset = window(params.get('offset'), 0, 0, errors, 'offset');
  if (!ara) {
    // outside ARA's dialect a parameter nobody reads is an error, not an unfiltered list (docs/api.md#lists)
    for (const param of params.keys()) if (!known.has(param)) errors[param] = [Messages.unknownParameter];
  }
  if (Object.keys(errors).length) return { error: JSON.stringify(errors) };
  return { tests, contains, order, limit: Math.min(limit, pages.maxPageSize), offset };
}

/** django-filter's NumberFilter reads a decimal: "1", " 1", "1.0", "1e0" are all 1. */
const DECIMAL = /^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$/;
function decimal(v: string): number | undefined {
  if (!DECIMAL.test(v)) return undefined;
  const n = Number(v.trim());
  return Number.isFinite(n) ? n : undefined;
}

function window(values: string[] | undefined, min: number, fallback: number, errors: Record<string, string[]>, name: string): number {
  if (!values) return fallback;
  const v = values[values.length - 1]!;
  if (/^\d+$/.test(v)) {
    const n = Number(v);
    if (n < min) { errors[name] = [Messages.minValue(min)]; return fallback; }
    return Number.isSafeInteger(n) ? n : Number.MAX_SAFE_INTEGER;
  }
  errors[name] = [/^-\d+$/.test(v) ? Messages.minValue(min) : Messages.invalidInt];
  return fallback;
}

/** Newest: the later `created`; the same instant, the higher id (the shards' rule, src/shard/latest_hosts.ts). */
function isNewer(a: LatestHostRow, b: LatestHostRow): boolean {
  return a[CREATED] > b[CREATED] || (a[CREATED] === b[CREATED] && a[ID] > b[ID]);
}

function compare(order: Array<[number, boolean]>): (a: LatestHostRow, b: LatestHostRow) => number {
  return (a, b) => {
    for (const [at, desc] of order) {
      const x = a[at]!, y = b[at]!;
      if (x === y) continue;
      return (x < y ? -1 : 1) * (desc ? -1 : 1);
    }
    // ties (and the default order): by name, which is unique
    return a[NAME] < b[NAME] ? -1 : a[NAME] > b[NAME] ? 1 : 0;
  };
}

interface Gather { ex: Req; parsed: Parsed | null; remaining: number; newest: Map<string, LatestHostRow>; failed: Reply | null }
interface Render { ex: Req; rows: LatestHostRow[]; json: Array<string | null>; remaining: number; failed: Reply | null; detail: boolean; count: number; parsed: Parsed | null }

export interface LatestHostDeps {
  pool: () => Shards;
  dir: Directory;
  origin: (ex: Req) => string;
  pages: PageSettings;
}

export class LatestHosts {
  private readonly onLatest: ReplyHandler<Gather> = answering((c: Gather) => c.ex, (r: Reply, c: Gather) => this.gathered(r, c));
  private readonly onHost: ReplyHandler<[Render, number]> = answering((c: [Render, number]) => c[0].ex, (r: Reply, c: [Render, number]) => this.rendered(r, c));

  constructor(private readonly deps: LatestHostDeps) {}

  list(ex: Req): void {
    const parsed = parse(parseQuery(ex.query), this.deps.pages, ex.ara);
    if ('error' in parsed) return reply(ex, 400, parsed.error);
    this.scatter(ex, parsed, null, parsed.contains);
  }

  /** One name's newest host (ARA: the detail route, keyed by name). */
  get(ex: Req, name: string): void {
    this.scatter(ex, null, name, null);
  }

  private scatter(ex: Req, parsed: Parsed | null, name: string | null, contains: string | null): void {
    const pool = this.deps.pool();
    const ctx: Gather = { ex, parsed, remaining: pool.size, newest: new Map(), failed: null };
    for (let shard = 0; shard < pool.size; shard++) {
      pool.send(shard, contains === null ? { k: 'latest', rid: 0, name } : { k: 'latest', rid: 0, name, contains }, this.onLatest, ctx);
    }
  }

  private gathered(r: Reply, ctx: Gather): void {
    if (r.k !== 'latest' || r.status !== 200) ctx.failed ??= r;
    else {
      for (const row of r.rows) {
        const known = ctx.newest.get(row[NAME]);
        if (known === undefined || isNewer(row, known)) ctx.newest.set(row[NAME], row);
      }
    }
    if (--ctx.remaining > 0) return;
    if (ctx.failed) return replyFailed(ctx.ex, ctx.failed);
    const { parsed } = ctx;
    if (parsed === null) {
      const row = ctx.newest.values().next().value as LatestHostRow | undefined;
      if (row === undefined) return reply(ctx.ex, 404, Errors.notFound());
      return this.render({ ex: ctx.ex, rows: [row], json: [null], remaining: 1, failed: null, detail: true, count: 1, parsed: null });
    }
    let rows = [...ctx.newest.values()];
    if (parsed.tests.length) rows = rows.filter((row) => parsed.tests.every((test) => test(row)));
    rows.sort(compare(parsed.order));
    const count = rows.length;
    const page = rows.slice(parsed.offset, parsed.offset + parsed.limit);
    if (page.length === 0) return this.envelope(ctx.ex, parsed, count, []);
    this.render({ ex: ctx.ex, rows: page, json: new Array(page.length).fill(null), remaining: page.length, failed: null, detail: false, count, parsed });
  }

  /** Read each row's host (detail form, in the request's dialect) from the shard that holds it. */
  private render(ctx: Render): void {
    const pool = this.deps.pool();
    for (let i = 0; i < ctx.rows.length; i++) {
      const id = ctx.rows[i]![ID];
      const shard = this.deps.dir.shardOf('host', id);
      if (shard < 0) { this.rendered({ k: 'get', rid: 0, status: 404, body: Errors.notFound() }, [ctx, i]); continue; }
      pool.send(shard, ctx.ex.ara ? { k: 'get', rid: 0, type: 'host', id, ara: true } : { k: 'get', rid: 0, type: 'host', id }, this.onHost, [ctx, i]);
    }
  }

  private rendered(r: Reply, [ctx, i]: [Render, number]): void {
    if (r.k === 'get' && r.status === 200) {
      const row = ctx.rows[i]!;
      ctx.json[i] = '{"name":' + JSON.stringify(row[NAME]) + ',"host":' + r.body + ',"created":"' + formatTimestamp(row[CREATED])
        + '","updated":"' + formatTimestamp(row[UPDATED]) + '"}';
    } else if (r.k !== 'get' || r.status !== 404) ctx.failed ??= r; // 404: deleted since it was found, left out
    if (--ctx.remaining > 0) return;
    if (ctx.failed) return replyFailed(ctx.ex, ctx.failed);
    const json = ctx.json.filter((j): j is string => j !== null);
    if (ctx.detail) return json.length ? reply(ctx.ex, 200, json[0]!) : reply(ctx.ex, 404, Errors.notFound());
    this.envelope(ctx.ex, ctx.parsed!, ctx.count, json);
  }

  private envelope(ex: Req, parsed: Parsed, count: number, rows: string[]): void {
    const { next, previous } = pageLinks(this.deps.origin(ex) + ex.url, ex.query, count, parsed.limit, parsed.offset);
    reply(ex, 200, '{"count":' + count + ',"next":' + JSON.stringify(next) + ',"previous":' + JSON.stringify(previous)
      + ',"results":[' + rows.join(',') + ']}');
  }
}

function replyFailed(ex: Req, failed: Reply): void {
  reply(ex, failed.status, 'body' in failed && typeof failed.body === 'string' ? failed.body : Errors.internal());
}
