// Reads on the front: a detail goes to the one shard the directory names; a
// list is scattered to every shard (or the one a `playbook`, `play`, `task`
// or `host` filter pins),
// each answers its count and its first offset+limit rows in the requested
// order, and the front merges the pages (docs/architecture.md#the-front); past offset 0
// the rows come as keys, and the page's own rows are rendered in a second pass.
import { Errors } from '../api/errors.js';
import { toShardQuery, type ParsedList } from '../api/list_query.js';
import { mergePages } from '../api/order.js';
import { isChildType, type ResourceType } from '../api/resources.js';
import type { ReplyHandler } from '../shard/shards.js';
import type { Shards } from '../shard/shards.js';
import type { ListReply, ListRow, Reply } from '../shard/protocol.js';
import type { Directory } from './directory.js';
import { pageLinks } from './page_links.js';
import { answering, reply, replyAs } from './respond.js';
import type { Req } from './routes.js';

export type ParsedPage = Extract<ParsedList, { ok: true }>;

interface ListContext {
  ex: Req; type: Exclude<ResourceType, 'label'>; parsed: ParsedPage; remaining: number; single: boolean;
  count: number; parts: ListRow[][]; failed: ListReply | Reply | null;
  /** a keyset page: matches past its boundary, over all shards */
  beyond: number;
  /** the shards sent rows without their JSON: the page's rows are rendered in a second pass */
  keysOnly: boolean;
}

/** The second pass of a page merged from keys: its rows, whose JSON the shards holding them send. */
interface RenderContext {
  ex: Req; parsed: ParsedPage; count: number; rows: ListRow[]; remaining: number;
  json: Map<number, string>; failed: ListReply | Reply | null;
}

export interface ReadDeps {
  pool: () => Shards;
  dir: Directory;
  /** scheme://host of the links a page carries (X-Forwarded-* when trusted) */
  origin: (ex: Req) => string;
  /** deepest page reached by `offset`; `next`/`previous` past it carry a cursor */
  maxListOffset: number;
  /** bytes of rows one page carries (LIMITS.pageBytes; smaller in tests) */
  pageBytes: number;
}

export class Reads {
  // bound once: the pool's pending table keeps the handler and a context, no closure per request
  private readonly onList: ReplyHandler<ListContext> = answering((ctx: ListContext) => ctx.ex, (r: Reply, ctx: ListContext) => this.gather(r, ctx));
  private readonly onRendered: ReplyHandler<RenderContext> = answering((ctx: RenderContext) => ctx.ex, (r: Reply, ctx: RenderContext) => this.rendered(r, ctx));

  constructor(private readonly deps: ReadDeps) {}

  get(ex: Req, type: Exclude<ResourceType, 'label'>, id: number): void {
    const shard = this.deps.dir.shardOf(type, id);
    if (shard < 0) return reply(ex, 404, Errors.notFound());
    this.deps.pool().send(shard, ex.ara ? { k: 'get', rid: 0, type, id, ara: true } : { k: 'get', rid: 0, type, id }, onSimpleReply, ex);
  }

  /** A run as JUnit XML, rendered by the playbook's shard (src/shard/junit.ts). */
  junit(ex: Req, playbook: number): void {
    const shard = this.deps.dir.shardOf('playbook', playbook);
    if (shard < 0) return reply(ex, 404, Errors.notFound());
    this.deps.pool().send(shard, { k: 'junit', rid: 0, playbook }, onJunitReply, ex);
  }

  /** A run's results by shown status, kept by the playbook's shard as results arrive (docs/api.md#run-totals). */
  totals(ex: Req, playbook: number): void {
    const shard = this.deps.dir.shardOf('playbook', playbook);
    if (shard < 0) return reply(ex, 404, Errors.notFound());
    this.deps.pool().send(shard, { k: 'totals', rid: 0, playbook }, onSimpleReply, ex);
  }

  list(ex: Req, type: Exclude<ResourceType, 'label'>, parsed: ParsedPage): void {
    const pool = this.deps.pool();
    const pinned = this.pinnedShard(type, parsed, pool);
    if (pinned !== null && pinned < 0) return this.envelope(ex, parsed, 0, []);
    const shards = pinned !== null ? [pinned] : Array.from({ length: pool.size }, (_, i) => i);
    const single = shards.length === 1;
    const q = toShardQuery(type, parsed, single);
    // Past offset 0 over several shards, each sends its first offset + limit rows: their
    // keys suffice to merge the page, and only the page's rows are rendered, by a second pass
    // (rendering is most of a row's cost: results?offset=90000 over 2 shards took 518 ms
    // with every row rendered, 48 ms with them keyed).
    const keysOnly = !single && parsed.cursor === null && parsed.offset > 0;
    if (keysOnly) q.keysOnly = true;
    const ctx: ListContext = { ex, type, parsed, remaining: shards.length, single, count: 0, parts: [], failed: null, beyond: 0, keysOnly };
    for (const shard of shards) pool.send(shard, ex.ara ? { k: 'list', rid: 0, q, ara: true } : { k: 'list', rid: 0, q }, this.onList, ctx);
  }

  /**
   * The one shard that can hold a list's rows: the playbook's, for a list of
   * its children; the play's, task's or host's (the directory says), for
   * tasks or results of one. -1: that parent does not exist, nothing matches.
   * null: every shard. One shard also takes only `limit` rows past `offset`,
   * not offset + limit.
   */
  private pinnedShard(type: Exclude<ResourceType, 'label'>, parsed: ParsedPage, pool: Shards): number | null {
    if (!isChildType(type)) return null;
    if (parsed.playbook !== null) return parsed.playbook < 1 ? -1 : pool.shardOf(parsed.playbook);
    for (const f of parsed.filters) {
      if (f.kind !== 'id' || (f.column !== 'play' && f.column !== 'task' && f.column !== 'host')) continue;
      const id = f.value as number;
      return Number.isSafeInteger(id) && id >= 1 ? this.deps.dir.shardOf(f.column, id) : -1;
    }
    return null;
  }

  private gather(r: Reply, ctx: ListContext): void {
    if (r.k !== 'list' || r.status !== 200) ctx.failed ??= r;
    else { ctx.count += r.count; ctx.beyond += r.beyond ?? 0; ctx.parts.push(r.rows); }
    if (--ctx.remaining > 0) return;
    if (ctx.failed) return replyFailed(ctx.ex, ctx.failed);
    const { parsed } = ctx;
    const desc = parsed.order.map(([, d]) => d);
    const { cursor } = parsed;
    if (!cursor) {
      const rows = mergePages(ctx.parts, desc, ctx.single ? 0 : parsed.offset, parsed.limit);
      return ctx.keysOnly ? this.render(ctx, rows) : this.envelope(ctx.ex, parsed, ctx.count, rows);
    }
    // a keyset page: rows nearest the boundary first, so a page going back is reversed
    const rows = mergePages(ctx.parts, desc, 0, parsed.limit, cursor.back);
    if (cursor.back) rows.reverse();
    this.envelope(ctx.ex, parsed, ctx.count, rows, keysetOffset(ctx.count, ctx.beyond, rows.length, cursor.back));
  }

  /** Ask the shards holding a page's rows for their JSON (ListQuery.ids). */
  private render(ctx: ListContext, rows: ListRow[]): void {
    const pool = this.deps.pool();
    const byShard = new Map<number, number[]>();
    for (const row of rows) {
      const id = row[row.length - 2] as number;
      const shard = ctx.type === 'playbook' ? pool.shardOf(id) : this.deps.dir.shardOf(ctx.type, id);
      if (shard < 0) continue; // deleted since the first pass
      let ids = byShard.get(shard);
      if (ids === undefined) byShard.set(shard, ids = []);
      ids.push(id);
    }
    const next: RenderContext = { ex: ctx.ex, parsed: ctx.parsed, count: ctx.count, rows, remaining: byShard.size, json: new Map(), failed: null };
    if (byShard.size === 0) return this.envelope(ctx.ex, ctx.parsed, ctx.count, []);
    for (const [shard, ids] of byShard) {
      const q = { type: ctx.type, filters: [], order: [], skip: 0, take: ids.length, ids };
      pool.send(shard, ctx.ex.ara ? { k: 'list', rid: 0, q, ara: true } : { k: 'list', rid: 0, q }, this.onRendered, next);
    }
  }

  private rendered(r: Reply, ctx: RenderContext): void {
    if (r.k !== 'list' || r.status !== 200) ctx.failed ??= r;
    else for (const row of r.rows) ctx.json.set(row[0] as number, row[1] as string);
    if (--ctx.remaining > 0) return;
    if (ctx.failed) return replyFailed(ctx.ex, ctx.failed);
    // a row deleted between the two passes is left out of the page
    const rows: ListRow[] = [];
    for (const row of ctx.rows) {
      const json = ctx.json.get(row[row.length - 2] as number);
      if (json === undefined) continue;
      row[row.length - 1] = json;
      rows.push(row);
    }
    this.envelope(ctx.ex, ctx.parsed, ctx.count, rows);
  }

  /**
   * The page envelope around rows whose last element is their JSON text.
   * `offset`: the page's position when it is not parsed.offset (a keyset page's, counted by its shards).
   */
  envelope(ex: Req, parsed: ParsedPage, count: number, rows: ListRow[], offset = parsed.offset): void {
    let limit = parsed.limit;
    const fit = rowsThatFit(rows, this.deps.pageBytes);
    if (fit < rows.length) {
      // a smaller page: its links go on from the rows it carries, with `limit` that many rows
      // (a page going back keeps the rows nearest its cursor, the last ones)
      const back = parsed.cursor?.back === true;
      if (back) offset += rows.length - fit;
      rows = back ? rows.slice(rows.length - fit) : rows.slice(0, fit);
      limit = fit;
    }
    const { next, previous } = pageLinks(this.deps.origin(ex) + ex.url, ex.query, count, limit, offset, {
      maxOffset: this.deps.maxListOffset, rows, counted: parsed.cursor !== null, cursor: parsed.cursor,
    });
    let results = '';
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      results += (i ? ',' : '') + (row[row.length - 1] as string);
    }
    reply(ex, 200, '{"count":' + count + ',"next":' + JSON.stringify(next) + ',"previous":' + JSON.stringify(previous)
      + ',"results":[' + results + ']}');
  }
}

/** How many rows, from the first, fit in `bytes` of JSON text (at least one: a row alone is as large as its detail). */
function rowsThatFit(rows: ListRow[], bytes: number): number {
  let total = 0;
  for (let i = 0; i < rows.length; i++) {
    total += (rows[i]![rows[i]!.length - 1] as string).length + 1;
    if (total > bytes && i > 0) return i;
  }
  return rows.length;
}

/**
 * The offset of a keyset page's first row: going forward, the matches before it
 * are the ones not beyond its boundary; going back, the ones beyond (before) the
 * boundary less the page's own rows.
 */
function keysetOffset(count: number, beyond: number, rows: number, back: boolean): number {
  return back ? Math.max(0, beyond - rows) : count - beyond;
}

/** A shard's part of a list failed (down, overloaded, a bug): the list gets its answer. */
function replyFailed(ex: Req, failed: ListReply | Reply): void {
  reply(ex, failed.status, 'body' in failed && typeof failed.body === 'string' ? failed.body : Errors.internal());
}

const onJunitReply = answering((ex: Req) => ex, (r: Reply, ex: Req): void => {
  const body = 'body' in r && typeof r.body === 'string' ? r.body : null;
  if (r.status === 200) replyAs(ex, 200, body, 'application/xml; charset=utf-8');
  else reply(ex, r.status, body);
});

const onSimpleReply = answering((ex: Req) => ex, (r: Reply, ex: Req): void => {
  reply(ex, r.status, 'body' in r && typeof r.body === 'string' ? r.body : null);
});
