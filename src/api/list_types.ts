// The list query a shard answers and the rows it answers with: built by the front
// (list_query.ts), merged and paged by order.ts and page_cursor.ts, carried to the
// shards in shard/protocol.ts messages and answered by shard/list.ts.
import type { FilterKind, ResourceType } from './resources.js';

export interface NormalizedFilter {
  kind: FilterKind;
  column: string;
  /** number (µs, id, counter), lower-cased string, boolean, list of statuses, or ids (id_in) */
  value: number | string | boolean | string[] | number[];
}

export interface ListQuery {
  type: Exclude<ResourceType, 'label'>;
  filters: NormalizedFilter[];
  /** [column, descending] pairs; ties are always broken by ascending id */
  order: Array<[string, boolean]>;
  /** rows to skip and to return, already adjusted for scatter/gather by the front */
  skip: number;
  take: number;
  /**
   * A keyset page (src/api/page_cursor.ts): only rows after `keys` ([sort keys…, id])
   * in the order, or with `back` the ones before it, nearest first. `count` still
   * counts every match; the reply's `beyond` counts those past the boundary.
   */
  bound?: { keys: Array<number | string | null>; back: boolean };
  /**
   * Rows without their JSON (its place in the row is ''): the first pass of a
   * page past offset 0 over several shards, which keeps only the sort keys of
   * the offset + limit rows it merges (src/http/reads.ts).
   */
  keysOnly?: boolean;
  /**
   * Its second pass: render these rows (list form), as [id, json], each one
   * still there; filters, order and window are not used.
   */
  ids?: number[];
}

/** One list row: its sort-key values, then its id, then its JSON text. */
export type ListRow = Array<number | string | boolean | null>;
