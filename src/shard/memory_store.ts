// Blobs in a Map, nothing on disk: the in-memory configuration and unit tests.
import type { Event } from './state.js';
import { jsonTextOf } from '../api/json_bytes.js';
import type { BlobKey, BlobValue } from './blobs.js';
import type { ShardStore } from './storage.js';

export class MemoryStore implements ShardStore {
  readonly blobs = new Map<BlobKey, string>();
  readonly journalLength = 0;
  getBlob(key: BlobKey): string | undefined { return this.blobs.get(key); }
  write(_events: Event[], puts: Array<[BlobKey, BlobValue]>, removes: BlobKey[]): null {
    for (const key of removes) this.blobs.delete(key);
    for (const [key, value] of puts) this.blobs.set(key, jsonTextOf(value));
    return null;
  }
}
