// The messages that cross the front ↔ shard boundary, and the one msgpackr
// codec both threads use for them. Everything here is plain data: errors travel
// as status + JSON body, never as thrown objects.
import { Packr } from 'msgpackr';
import type { ResourceType, FilterKind } from '../api/resources.js';

export type FieldErrors = Record<string, string[]>;

/** A label the front allocated for a playbook write; it exists once that write commits. */
export interface NewLabel { id: number; name: string }

export interface WriteCommand {
  op: 'create' | 'update' | 'delete';
  type: Exclude<ResourceType, 'label'>;
  /** allocated id (create) or target id (update/delete) */
  id: number;
  /** PUT (full update) rather than PATCH */
  put: boolean;
  /** normalized field values by field name (labels already resolved to ids) */
  set: Record<string, unknown>;
  /** stateless field errors found by the front, merged with the shard's own */
  errors: FieldErrors | null;
  /** FK fields whose id exists but lives on another shard (so: another playbook) */
  elsewhere: string[] | null;
  newLabels: NewLabel[] | null;
  /** `Prefer: return=minimal` */
  minimal: boolean;
}

export interface NormalizedFilter {
  kind: FilterKind;
  column: string;
  /** number (µs, id, counter), lower-cased string, boolean, or list of statuses */
  value: number | string | boolean | string[];
}

export interface ListQuery {
  type: Exclude<ResourceType, 'label'>;
  filters: NormalizedFilter[];
  /** [column, descending] pairs; ties are always broken by ascending id */
  order: Array<[string, boolean]>;
  /** rows to skip and to return, already adjusted for scatter/gather by the front */
  skip: number;
  take: number;
}

export type FrontToShard =
  | { k: 'write'; rid: number; cmd: WriteCommand }
  | { k: 'get'; rid: number; type: Exclude<ResourceType, 'label'>; id: number }
  | { k: 'list'; rid: number; q: ListQuery }
  | { k: 'labels'; upsert: Array<[number, string]>; remove: number[] };

export interface WriteReply {
  k: 'write';
  rid: number;
  status: number;
  body: string | null;
  /** [typeCode, id] of a record that now exists (created, or found by get-or-create) */
  created: [number, number] | null;
  /** ids removed by a delete, per type code (cascades included) */
  deleted: number[][] | null;
  /** labels this write made real, with their creation time */
  labels: Array<[number, string, number]> | null;
}

export interface GetReply { k: 'get'; rid: number; status: number; body: string }

/** One list row: its sort-key values, then its id, then its JSON text. */
export type ListRow = Array<number | string | boolean | null>;
export interface ListReply { k: 'list'; rid: number; count: number; rows: ListRow[]; status: number; body: string | null }

export type ShardToFront = WriteReply | GetReply | ListReply | { k: 'ready'; shard: number };

/** Worker start-up data (workerData). */
export interface ShardInit {
  shard: number;
  shards: number;
  compat: boolean;
}

// Plain maps rather than records: the messages are few and small beside the JSON
// text they carry, and independent encoders on two threads must never disagree.
const packr = new Packr({ useRecords: false, moreTypes: false });

/** Encode into a fresh, exactly sized buffer that can be transferred. msgpackr's
 * pack() returns a view of a reused slab; transferring that would detach the slab. */
export function encode(message: unknown): Uint8Array {
  const view = packr.pack(message);
  const copy = new Uint8Array(view.length);
  copy.set(view);
  return copy;
}

export function decode<T>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}
