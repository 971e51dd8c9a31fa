// The newest host row of each name in a shard, for ARA's /api/v1/latesthosts
// (docs/api.md#latest-hosts). Hosts live in the shard of their playbook, so a
// name's newest row over the whole server is the newest of the shards'
// newest, which the front picks (src/http/latest_hosts.ts). Each shard keeps,
// per name, its rows of that name and the newest of them, changed as hosts are
// created, renamed and deleted: a list costs one entry per name, and deleting
// the newest row falls back to the next newest without a scan of the shard.
import type { HostRow } from './rows.js';

/** Newest: the later `created`; the same instant, the higher id. */
export function isNewer(a: HostRow, b: HostRow): boolean {
  return a.created > b.created || (a.created === b.created && a.id > b.id);
}

interface Named { newest: HostRow; rows: HostRow[] }

export class LatestHosts {
  private readonly byName = new Map<string, Named>();

  added(row: HostRow, name = row.name): void {
    const named = this.byName.get(name);
    if (named === undefined) { this.byName.set(name, { newest: row, rows: [row] }); return; }
    named.rows.push(row);
    if (isNewer(row, named.newest)) named.newest = row;
  }

  removed(row: HostRow, name = row.name): void {
    const named = this.byName.get(name);
    if (named === undefined) return;
    const at = named.rows.indexOf(row);
    if (at >= 0) named.rows.splice(at, 1);
    if (named.rows.length === 0) { this.byName.delete(name); return; }
    if (named.newest !== row) return;
    let newest = named.rows[0]!;
    for (const r of named.rows) if (isNewer(r, newest)) newest = r;
    named.newest = newest;
  }

  renamed(row: HostRow, from: string): void {
    this.removed(row, from);
    this.added(row);
  }

  /** The newest row of a name in this shard. */
  newest(name: string): HostRow | undefined {
    return this.byName.get(name)?.newest;
  }

  /** The newest row of every name in this shard. */
  *all(): IterableIterator<HostRow> {
    for (const named of this.byName.values()) yield named.newest;
  }
}
