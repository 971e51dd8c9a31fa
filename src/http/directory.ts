// The front's routing tables: the `id → shard` directory, compact (a Uint8Array
// per type, one byte per id) so that a detail request reaches exactly one shard
// without the front holding any record; and the id allocators it shares with
// the shards (src/shard/ids.ts).
import { RESOURCE_TYPES, TYPE_CODE, type ResourceType } from '../api/resources.js';
import { IdAllocator } from '../shard/ids.js';
import type { ReadyMessage } from '../shard/protocol.js';
import type { Shards } from '../shard/shards.js';

const ABSENT = 0;

export class Directory {
  private readonly maps: Uint8Array[] = RESOURCE_TYPES.map(() => new Uint8Array(1024));
  readonly ids = new IdAllocator();
  /**
   * Whether shardOf() says if a record exists (a single process: the front's
   * directory has every id), or only where it would be (cluster mode: its owner knows).
   */
  get authoritative(): boolean { return true; }

  /** A fresh id for a type; ids only grow and are never handed out twice. */
  allocate(type: ResourceType): number {
    return this.ids.allocate(TYPE_CODE[type]);
  }

  /** Where a new playbook goes: its id (0: the owning shard allocates it, cluster mode) and its shard. */
  placePlaybook(shards: Shards): { id: number; shard: number } {
    const id = this.allocate('playbook');
    return { id, shard: shards.shardOf(id) };
  }

  /**
   * The shard of a batch-ingest stream named by its uuid, when the shard itself
   * finds (or creates) the stream's playbook (cluster mode: ClusterDirectory).
   * null: the front keeps the uuid → playbook map (src/http/ingest.ts).
   */
  streamShard(_uuid: string): number | null { return null; }

  /** Ids up to `id` have been handed out (recovery raises the allocator past it). */
  observe(code: number, id: number): void {
    this.ids.observe(code, id);
  }

  /** The shard holding a record, or -1 if the record does not exist. */
  shardOf(type: ResourceType, id: number): number {
    const map = this.maps[TYPE_CODE[type]]!;
    return id < map.length ? map[id]! - 1 : -1;
  }

  private set(code: number, id: number, shard: number): void {
    let map = this.maps[code]!;
    if (id >= map.length) {
      let size = map.length;
      while (size <= id) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(map);
      this.maps[code] = map = grown;
    }
    map[id] = shard + 1;
  }

  /**
   * The one place records enter and leave the directory: ids a shard reports it
   * created and deleted (per type code), after a write, a batch, or retention.
   */
  record(shard: number, created: number[][] | null, deleted: number[][] | null): void {
    if (created) for (let code = 0; code < created.length; code++) for (const id of created[code]!) this.set(code, id, shard);
    if (deleted) for (let code = 0; code < deleted.length; code++) for (const id of deleted[code]!) this.clear(code, id);
  }

  /** A shard recovered (at start-up or after a restart): its live ids, and the highest ids it ever created. */
  load(ready: ReadyMessage): void {
    ready.maxIds.forEach((id, code) => this.observe(code, id));
    this.record(ready.shard, ready.ids, null);
  }

  private clear(code: number, id: number): void {
    const map = this.maps[code]!;
    if (id < map.length) map[id] = ABSENT;
  }
}
