// GET /api/v1/search?q=… (docs/search.md): the query is parsed here, the search
// worker finds a page of hits (newest first, or by relevance), and the shards
// render each hit's list row, so a hit looks like the row a list shows. A hit
// whose record is gone by then (deleted since it was indexed) is left out.
import { Errors, Messages } from '../api/errors.js';
import { RESOURCE_TYPES, TYPE_CODE, TYPE_TO_PATH, PATH_TO_TYPE, type ResourceType } from '../api/resources.js';
import type { ParsedList } from '../api/list_query.js';
import type { Reply } from '../shard/protocol.js';
import type { Shards } from '../shard/shards.js';
import type { SearchHit } from '../search/protocol.js';
import { parseSearchQuery } from '../search/query.js';
import type { SearchService } from '../search/search_service.js';
import { parseQuery } from './page_links.js';
import { reply } from './respond.js';
import type { Req } from './routes.js';

const PARAMS = new Set(['q', 'type', 'playbook', 'order', 'limit', 'cursor']);
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
const CURSOR = /^[1-9]\d{0,15}$/;
type ParsedPage = Extract<ParsedList, { ok: true }>;

export interface SearchDeps {
  search: SearchService | null;
  pool: () => Shards;
  origin: (ex: Req) => string;
}

export class SearchResource {
  constructor(private readonly deps: SearchDeps) {}

  handle(ex: Req): void {
    const params = parseQuery(ex.query);
    const errors: Record<string, string[]> = {};
    for (const name of params.keys()) if (!PARAMS.has(name)) errors[name] = [Messages.unknownParameter];
    const one = (name: string): string | null => params.get(name)?.at(-1) ?? null;
    const q = one('q');
    let parsed = null;
    if (q === null || q.trim() === '') errors.q = ['This field is required: the words to search for.'];
    else {
      const r = parseSearchQuery(q);
      if (r.ok) parsed = r.query; else errors.q = [r.error];
    }
    const typeName = one('type');
    let type: number | null = null;
    if (typeName !== null) {
      // a type's name or its path: result, results
      const t = PATH_TO_TYPE[typeName] ?? ((RESOURCE_TYPES as readonly string[]).includes(typeName) ? typeName as ResourceType : null);
      if (t === null || t === 'label') errors.type = [`Not a searchable type: ${typeName} (one of playbook, play, task, host, result, file, record).`];
      else type = TYPE_CODE[t];
    }
    const int = (name: string, min: number, max: number): number | null => {
      const text = one(name);
      if (text === null) return null;
      const n = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
      if (!(n >= min && n <= max)) { errors[name] = [`A whole number from ${min} to ${max}.`]; return null; }
      return n;
    };
    const playbook = int('playbook', 1, Number.MAX_SAFE_INTEGER);
    const limit = int('limit', 1, MAX_LIMIT) ?? DEFAULT_LIMIT;
    const order = one('order');
    if (order !== null && order !== 'relevance' && order !== '-created') errors.order = ['One of: -created (newest first, the default), relevance.'];
    const cursorText = one('cursor');
    if (cursorText !== null && !CURSOR.test(cursorText)) errors.cursor = ['Invalid cursor.'];
    if (Object.keys(errors).length > 0 || parsed === null) return reply(ex, 400, JSON.stringify(errors));
    const search = this.deps.search;
    if (search === null || !search.available) {
      return reply(ex, 503, Errors.unavailable('Search is not available on this server (see its start-up log).'));
    }
    const relevance = order === 'relevance';
    void search.query({
      match: parsed.match, highlight: parsed.highlight, type, playbook, after: parsed.after, before: parsed.before,
      below: cursorText === null || relevance ? null : Number(cursorText), limit, relevance,
    }).then((found) => {
      if (found.error !== undefined) return reply(ex, 503, Errors.unavailable(`Search failed: ${found.error}`));
      this.render(ex, found.hits, found.count, limit, relevance, q!);
    }, () => reply(ex, 500, Errors.internal()));
  }

  /**
   * A list with `q=`: the ids the index matches (of this type, of the playbook if
   * one is named) become one more filter, and the list runs as usual: its
   * order, pages, count and other filters are the list's.
   */
  narrowList(ex: Req, type: Exclude<ResourceType, 'label'>, parsed: ParsedPage, run: (parsed: ParsedPage) => void): void {
    const parsedQuery = parseSearchQuery(parsed.search!);
    if (!parsedQuery.ok) return reply(ex, 400, JSON.stringify({ q: [parsedQuery.error] }));
    const search = this.deps.search;
    if (search === null || !search.available) {
      return reply(ex, 503, Errors.unavailable('Search is not available on this server (see its start-up log).'));
    }
    const { match, after, before } = parsedQuery.query;
    void search.query({
      match, highlight: [], type: TYPE_CODE[type], playbook: parsed.playbook, after, before,
      below: null, limit: LIST_SEARCH_MAX + 1, relevance: false, idsOnly: true,
    }).then((found) => {
      if (found.error !== undefined) return reply(ex, 503, Errors.unavailable(`Search failed: ${found.error}`));
      if (found.hits.length > LIST_SEARCH_MAX) {
        return reply(ex, 400, JSON.stringify({ q: [`More than ${LIST_SEARCH_MAX.toLocaleString('en')} ${TYPE_TO_PATH[type]} match: add words or filters, or use /api/v1/search, which pages through any number.`] }));
      }
      run({ ...parsed, filters: [...parsed.filters, { kind: 'id_in', column: 'id', value: found.hits.map((h) => h.id) }] });
    }, () => reply(ex, 500, Errors.internal()));
  }

  /** Ask each hit's shard for its list row; answer once every shard has. */
  private render(ex: Req, hits: SearchHit[], count: number | null, limit: number, relevance: boolean, q: string): void {
    const pool = this.deps.pool();
    const rows = new Map<string, string>();
    const groups = new Map<string, { shard: number; type: ResourceType; ids: number[] }>();
    for (const h of hits) {
      const type = RESOURCE_TYPES[h.type]!;
      const shard = pool.shardOf(h.playbook);
      const key = `${shard}:${type}`;
      let g = groups.get(key);
      if (g === undefined) groups.set(key, g = { shard, type, ids: [] });
      g.ids.push(h.id);
    }
    let waiting = groups.size;
    const finish = () => {
      const results: string[] = [];
      for (const h of hits) {
        const type = RESOURCE_TYPES[h.type]!;
        const row = rows.get(`${type}:${h.id}`);
        if (row === undefined) continue;
        results.push(`{"type":"${type}","id":${h.id},"playbook":${h.playbook},"row":${row},"matches":${JSON.stringify(h.matches)},`
          + `"url":${JSON.stringify(`${this.deps.origin(ex)}/api/v1/${TYPE_TO_PATH[type]}/${h.id}`)}}`);
      }
      const last = hits.at(-1);
      const next = !relevance && hits.length === limit && last !== undefined
        ? `${this.deps.origin(ex)}/api/v1/search?${nextQuery(ex.query, last.rowid)}`
        : null;
      const estimate = count === null;
      reply(ex, 200, `{"count":${estimate ? 10_000 : count},${estimate ? '"count_is_estimate":true,' : ''}"next":${JSON.stringify(next)},"previous":null,"results":[${results.join(',')}]}`);
    };
    if (waiting === 0) return finish();
    for (const g of groups.values()) {
      const q = { type: g.type as Exclude<ResourceType, 'label'>, filters: [], order: [] as Array<[string, boolean]>, skip: 0, take: g.ids.length, ids: g.ids };
      pool.send(g.shard, ex.ara ? { k: 'list', rid: 0, q, ara: true } : { k: 'list', rid: 0, q }, (r: Reply) => {
        if (r.k === 'list' && r.status === 200) {
          for (const row of r.rows) rows.set(`${g.type}:${row[0]}`, String(row[1]));
        }
        if (--waiting === 0) finish();
      }, null);
    }
  }
}

/** Most matches a list's q= takes (their ids go to the shards as a filter); more is a 400 asking for more words. */
export const LIST_SEARCH_MAX = 10_000;

/** The query string of the next page: the same parameters, the cursor at the last hit. */
function nextQuery(raw: string, rowid: number): string {
  const kept = raw.split('&').filter((p) => p !== '' && !p.startsWith('cursor='));
  kept.push(`cursor=${rowid}`);
  return kept.join('&');
}
