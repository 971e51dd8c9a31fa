// Large JSON values live outside the JS heap, in LMDB, and are read on demand
// (DESIGN.md "Persistence"). Aggregates keep only what lists, filters, counters
// and ordering need; the serializer asks a BlobReader for the rest.

/** Which stored field of which row a blob holds. Files are keyed by content hash. */
export const blobKey = {
  content: (resultId: number) => 'r' + resultId,
  facts: (hostId: number) => 'h' + hostId,
  arguments: (playbookId: number) => 'p' + playbookId,
  value: (recordId: number) => 'v' + recordId,
  file: (sha1: string) => 'f' + sha1,
};

/** Value of a field whose blob was never written (the field's default). */
export const BLOB_DEFAULT = { content: '{}', facts: '{}', arguments: '{}', value: '""' } as const;

export interface BlobReader {
  getBlob(key: string): string | undefined;
}

/** Blob fields per event type: the event field and how to key it by row id. */
export const BLOB_FIELDS: Record<string, { field: 'content' | 'facts' | 'arguments' | 'value'; key: (id: number) => string } | undefined> = {
  result: { field: 'content', key: blobKey.content },
  host: { field: 'facts', key: blobKey.facts },
  playbook: { field: 'arguments', key: blobKey.arguments },
  record: { field: 'value', key: blobKey.value },
};
