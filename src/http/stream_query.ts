// The live stream's request (docs/api.md#live-stream): its cursors, which name a
// position in every shard's log of changes, its query (`playbook`, `type`,
// `since` or SSE's Last-Event-ID, `token`), and which credential it carries.
// Parsing only: the stream itself (src/http/stream.ts) subscribes, replays and fans out.
import { STREAM_TYPES } from '../shard/changes.js';
import { parseQuery } from './page_links.js';

// ---- cursors ---------------------------------------------------------------------

export function encodeCursor(positions: readonly number[]): string {
  return Buffer.from('1:' + positions.join(','), 'latin1').toString('base64url');
}

/** The positions a cursor names, or null when it is not one of ours for this many shards. */
export function decodeCursor(text: string, shards: number): number[] | null {
  if (text.length === 0 || text.length > 4096 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const plain = Buffer.from(text, 'base64url').toString('latin1');
  const m = /^1:(\d{1,15}(?:,\d{1,15})*)$/.exec(plain);
  if (m === null) return null;
  const positions = m[1]!.split(',').map(Number);
  if (positions.length !== shards) return null;
  return encodeCursor(positions) === text ? positions : null;
}

// ---- query -------------------------------------------------------------------

export interface StreamParams {
  playbook: number | null;
  /** bit per type code; 0 = every type */
  types: number;
  since: number[] | null;
  token: string | null;
}

export type ParsedStream = { ok: true; params: StreamParams } | { ok: false; body: string };

/** `playbook`, `type` (repeatable), `since` (or SSE's Last-Event-ID), `token`. */
export function parseStreamQuery(query: string, lastEventId: string, shards: number): ParsedStream {
  const q = parseQuery(query);
  const errors: Record<string, string[]> = {};
  let playbook: number | null = null;
  const pb = q.get('playbook')?.[0];
  if (pb !== undefined) {
    if (/^[1-9]\d{0,15}$/.test(pb) && Number.isSafeInteger(Number(pb))) playbook = Number(pb);
    else errors.playbook = ['A valid integer is required.'];
  }
  let types = 0;
  for (const value of q.get('type') ?? []) {
    for (const name of value.split(',')) {
      const code = STREAM_TYPES.get(name.trim().toLowerCase());
      if (code === undefined) { (errors.type ??= []).push(`Select a valid choice. ${name} is not one of the available choices.`); break; }
      types |= 1 << code;
    }
  }
  let since: number[] | null = null;
  const cursor = q.get('since')?.[0] ?? (lastEventId !== '' ? lastEventId : undefined);
  if (cursor !== undefined) {
    since = decodeCursor(cursor, shards);
    if (since === null) errors.since = ['Malformed cursor.'];
  }
  if (Object.keys(errors).length) return { ok: false, body: JSON.stringify(errors) };
  return { ok: true, params: { playbook, types, since, token: q.get('token')?.[0] ?? null } };
}

/**
 * The Authorization header to check: a `token` query parameter as a bearer
 * token when there is one (the page put it there on purpose: EventSource cannot
 * send headers, while the browser may still attach Basic credentials it cached
 * for the origin, wrong ones included), else the request's header.
 */
export function streamAuthorization(header: string, query: string): string {
  if (!query.includes('token=')) return header;
  const token = parseQuery(query).get('token')?.[0];
  return token ? 'Bearer ' + token : header;
}
