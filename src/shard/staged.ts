// What one command (or one ingest batch) stages on its way to one journal entry
// (src/shard/shard.ts commits it): its events, the large JSON values moved out of
// them into blob puts and removes, file texts, the ids it removed, and what the
// live stream will say about it.
import { BLOB_DEFAULT, BLOB_FIELDS, type BlobKey, type BlobValue } from './blobs.js';
import { ChangeCollector } from './changes.js';
import type { Event, Removed } from './state.js';

/** Changes of one command (or one ingest batch) on their way to one journal entry. */
export class Staged {
  readonly events: Event[] = [];
  readonly puts: Array<[BlobKey, BlobValue]> = [];
  readonly removes: BlobKey[] = [];
  readonly files: Array<[string, string]> = [];
  removed: Removed | null = null;
  /** what the live stream will say about this commit */
  readonly changes = new ChangeCollector();
}


/** Merge the ids removed by one event into those of earlier events (no spread: cascades can be large). */
export function mergeRemoved(into: Removed, more: Removed): Removed {
  for (let code = 0; code < more.length; code++) {
    const target = into[code]!;
    for (const id of more[code]!) target.push(id);
  }
  return into;
}

export function withoutRemoved(puts: Array<[BlobKey, BlobValue]>, removes: BlobKey[]): Array<[BlobKey, BlobValue]> {
  const gone = new Set(removes);
  return puts.filter(([key]) => !gone.has(key));
}

/** Move an event's large JSON values out into blob puts/removes (the journal keeps the rest). */
export function takeBlobs(ev: Event, puts: Array<[BlobKey, BlobValue]>, removes: BlobKey[], files: Array<[string, string]>): void {
  if (ev.e === 'delete') return;
  const spec = BLOB_FIELDS[ev.t];
  if (spec && spec.field in ev.d) {
    // (a value kept as bytes is never the field's short default: api/json_scan.ts keeps long ones only)
    const text = ev.d[spec.field] as BlobValue;
    ev.d = without(ev.d, spec.field);
    const key = spec.key(ev.e === 'create' ? ev.d.id : ev.id);
    if (text !== BLOB_DEFAULT[spec.field]) puts.push([key, text]);
    else if (ev.e === 'update') removes.push(key);
  }
  if (ev.t === 'file' && 'content' in ev.d) {
    files.push([ev.d.sha1, ev.d.content]);
    ev.d = without(ev.d, 'content');
  }
}

/**
 * `d` but `field`, as a new object. A `delete` would turn the row into a
 * dictionary-mode object, which state.apply reads and the journal's msgpack
 * encoder enumerates by hash lookups, for every event.
 */
function without(d: Record<string, any>, field: string): Record<string, any> {
  const out: Record<string, any> = {};
  for (const key in d) if (key !== field) out[key] = d[key];
  return out;
}
