// Large JSON values live outside the JS heap, in LMDB, and are read on demand
// (docs/architecture.md#persistence). Aggregates keep only what lists, filters, counters
// and ordering need; the serializer asks a BlobReader for the rest.
import { BLOB_FIELD } from '../api/blob_fields.js';
import type { JsonBytes } from '../api/json_bytes.js';

/**
 * Which stored field of which row a blob holds. Row blobs have numeric keys,
 * field × 2^40 + id, so a type's blobs sort in creation order: LMDB then appends
 * to the last page instead of splitting pages all over the tree (string keys
 * like 'r123' sort 'r10' < 'r9' and left pages half full). File text is keyed by
 * its content hash (a string: strings sort after numbers), stored once per hash.
 */
export type BlobKey = number | string;
const ROW = 2 ** 40; // ids up to 1.1e12 per type; 4 × 2^40 stays below 2^53
export const blobKey = {
  content: (resultId: number): BlobKey => 1 * ROW + resultId,
  facts: (hostId: number): BlobKey => 2 * ROW + hostId,
  arguments: (playbookId: number): BlobKey => 3 * ROW + playbookId,
  value: (recordId: number): BlobKey => 4 * ROW + recordId,
  file: (sha1: string): BlobKey => 'f' + sha1,
};

/** The result id of a content blob's key, or null for any other key. */
export function contentResultId(key: BlobKey): number | null {
  return typeof key === 'number' && key >= ROW && key < 2 * ROW ? key - ROW : null;
}

const KINDS = [null, 'content', 'facts', 'arguments', 'value'] as const;
/** Which field a blob key is for (tools and tests that walk the blob table). */
export function blobKind(key: BlobKey): 'content' | 'facts' | 'arguments' | 'value' | 'file' | null {
  return typeof key === 'string' ? (key.startsWith('f') ? 'file' : null) : KINDS[Math.floor(key / ROW)] ?? null;
}

/** Value of a field whose blob was never written (the field's default). */
export const BLOB_DEFAULT = { content: '{}', facts: '{}', arguments: '{}', value: '""' } as const;

/**
 * A blob value on its way to the store: its text, or (batch ingest of an ASCII
 * body) the body's bytes that hold it (api/json_bytes.ts). Reads get text.
 */
export type BlobValue = string | JsonBytes;

export interface BlobReader {
  getBlob(key: BlobKey): string | undefined;
}

/** Blob fields per event type: the event field and how to key it by row id. */
export const BLOB_FIELDS: Record<string, { field: 'content' | 'facts' | 'arguments' | 'value'; key: (id: number) => BlobKey } | undefined> = {
  result: { field: BLOB_FIELD.result, key: blobKey.content },
  host: { field: BLOB_FIELD.host, key: blobKey.facts },
  playbook: { field: BLOB_FIELD.playbook, key: blobKey.arguments },
  record: { field: BLOB_FIELD.record, key: blobKey.value },
};
