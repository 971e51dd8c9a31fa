// Per event kind, the field whose value can be large JSON that the shards keep
// out of the JS heap, as a blob in LMDB (shard/blobs.ts keys it by row id); the
// front's batch scan (json_scan.ts) keeps that member's bytes out of the event's text.
export const BLOB_FIELD = { result: 'content', host: 'facts', playbook: 'arguments', record: 'value' } as const;
