// The front's routing tables: the `id → shard` directory, compact (a Uint8Array
// per type, one byte per id) so that a detail request reaches exactly one shard
// without the front holding any record; and the id allocators it shares with
// the shards (src/shard/ids.ts).
import { RESOURCE_TYPES, TYPE_CODE, type ResourceType } from '../api/resources.js';
import { IdAllocator } from '../shard/ids.js';

const ABSENT = 0;

export class Directory {
  private readonly maps: Uint8Array[] = RESOURCE_TYPES.map(() => new Uint8Array(1024));
  readonly ids = new IdAllocator();

  /** A fresh id for a type; ids only grow and are never handed out twice. */
  allocate(type: ResourceType): number {
    return this.ids.allocate(TYPE_CODE[type]);
  }

  /** Ids up to `id` have been handed out (recovery raises the allocator past it). */
  observe(code: number, id: number): void {
    this.ids.observe(code, id);
  }

  /** The shard holding a record, or -1 if the record does not exist. */
  shardOf(type: ResourceType, id: number): number {
    const map = this.maps[TYPE_CODE[type]]!;
    return id < map.length ? map[id]! - 1 : -1;
  }

  set(code: number, id: number, shard: number): void {
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

  clear(code: number, id: number): void {
    const map = this.maps[code]!;
    if (id < map.length) map[id] = ABSENT;
  }
}
