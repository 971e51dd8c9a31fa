// Messages between the front and the search worker, and how a query's page of
// hits is made from the index (run in the worker).
import type { MessagePort } from 'node:worker_threads';
import type { FtsIndex } from './fts_index.js';
import { snippet } from './extract.js';

export interface SearchWorkerInit {
  /** the index file (the data directory's search.sqlite) */
  path: string;
  logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
}

export interface SearchRequest {
  k: 'query'; rid: number;
  match: string;
  highlight: Array<{ text: string; prefix: boolean }>;
  type: number | null; playbook: number | null; after: number | null; before: number | null;
  below: number | null; limit: number; relevance: boolean;
  /** only the ids (a list's q=): no text, no snippets */
  idsOnly?: boolean;
}

export type SearchWorkerMessage =
  | { k: 'port'; shard: number; port: MessagePort }
  | SearchRequest
  | { k: 'stats'; rid: number }
  | { k: 'close' };

export interface SearchMatch { field: string; snippet: string }
export interface SearchHit { rowid: number; type: number; id: number; playbook: number; matches: SearchMatch[] }
export interface SearchReply { k: 'hits'; rid: number; hits: SearchHit[]; count: number | null; error?: string }
/** `lagMs`: the longest acknowledgement-to-findable time since the last stats; `shardsBehind`: shards not at their journal number (rebuilding, or stale) */
export interface SearchStats { k: 'stats'; rid: number; documents: number; indexed: number; lagMs: number; shardsBehind: number }

/** Above this many matches `count` is an estimate (the bound itself), flagged count_is_estimate. */
export const COUNT_BOUND = 10_000;
/** at most this many matched fields are shown per hit */
const MATCHES_PER_HIT = 3;

export function hitsOf(index: FtsIndex, req: SearchRequest): SearchReply {
  if (req.idsOnly) {
    const ids = index.matchingIds({ match: req.match, type: req.type, playbook: req.playbook, after: req.after, before: req.before, limit: req.limit });
    return { k: 'hits', rid: req.rid, count: ids.length, hits: ids.map(([type, id, playbook]) => ({ rowid: 0, type, id, playbook, matches: [] })) };
  }
  const { hits, count } = index.search({
    match: req.match, type: req.type, playbook: req.playbook, after: req.after, before: req.before,
    below: req.below, limit: req.limit, relevance: req.relevance,
  }, COUNT_BOUND);
  return {
    k: 'hits', rid: req.rid, count,
    hits: hits.map((h) => {
      const matches: SearchMatch[] = [];
      for (let i = 0; i < h.spans.length && matches.length < MATCHES_PER_HIT; i++) {
        const [field, start] = h.spans[i]!;
        const end = i + 1 < h.spans.length ? h.spans[i + 1]![1] - 1 : h.body.length;
        const s = snippet(h.body.slice(start, end), req.highlight);
        if (s) matches.push({ field, snippet: s.snippet });
      }
      for (const [column, value] of Object.entries(h.columns)) {
        if (matches.length >= MATCHES_PER_HIT) break;
        const s = value ? snippet(value, req.highlight) : null;
        if (s) matches.push({ field: column, snippet: s.snippet });
      }
      return { rowid: h.rowid, type: h.type, id: h.id, playbook: h.playbook, matches };
    }),
  };
}
