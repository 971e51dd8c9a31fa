// A real Shard on a real LmdbShardStore in a temporary directory, driven
// in-process (tests of storage failures and snapshot rounds): writes and reads
// as the front sends them, replies as a client would get them, and what a
// fresh store recovers from the same directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Shard } from '../../src/shard/shard.js';
import { ShardState } from '../../src/shard/state.js';
import type { GetReply, ShardToFront, WriteCommand, WriteReply } from '../../src/shard/protocol.js';
import { LmdbShardStore, type StoreFaults } from '../../src/store/shard_store.js';
import { parseTimestamp } from '../../src/api/time.js';
import { open } from 'lmdb';
import { partSeqOf, resultPartsOf, type AggregateSnapshot } from '../../src/store/snapshot_format.js';

/** Fails the next `n` writes of a kind (journal, snapshot or trim). */
export class Faults implements StoreFaults {
  readonly pending: Record<'journal' | 'snapshot' | 'trim', number> = { journal: 0, snapshot: 0, trim: 0 };
  fail(what: 'journal' | 'snapshot' | 'trim'): boolean {
    if (this.pending[what] <= 0) return false;
    this.pending[what]--;
    return true;
  }
}

const T0 = parseTimestamp('2026-01-01T00:00:00Z')!;

export interface ShardNodeOptions {
  /** group commit as the worker runs it (a pass's writes flushed by setImmediate); default off: a journal entry per write */
  groupCommit?: boolean;
  /** LmdbStoreOptions.snapshotSliceDelayMs (0: every slice yields one setImmediate) */
  sliceDelayMs?: number | null;
  /** LmdbStoreOptions.snapshotPartRows (results per stored snapshot part) */
  partRows?: number;
}

/** A shard on a store in `dir`, rebuilt from disk after a storage failure as the worker does. */
export class ShardNode {
  readonly faults = new Faults();
  readonly store: LmdbShardStore;
  readonly shard: Shard;
  readonly replies = new Map<number, ShardToFront>();
  private rid = 1;
  private now = T0;
  rebuilds = 0;

  constructor(readonly dir: string, options: ShardNodeOptions = {}) {
    this.store = new LmdbShardStore(dir, 0, 'flush', {
      faults: this.faults, snapshotSliceDelayMs: options.sliceDelayMs ?? null,
      ...(options.partRows ? { snapshotPartRows: options.partRows } : {}),
    });
    this.shard = new Shard({
      store: this.store, clock: () => (this.now += 1000),
      ...(options.groupCommit ? { schedule: (flush: () => void) => setImmediate(flush) } : {}),
      onReply: (r) => { if ('rid' in r) this.replies.set(r.rid, r); },
      onStorageFailure: () => { this.rebuilds++; this.recover(); },
    });
    this.recover();
  }

  recover(): void {
    const state = new ShardState();
    this.store.recover(state);
    this.shard.replaceState(state);
  }

  /** Send a write; returns its request id (the reply may come later). */
  send(cmd: Partial<WriteCommand> & Pick<WriteCommand, 'op' | 'type' | 'id'>): number {
    const rid = this.rid++;
    const full: WriteCommand = { put: false, set: {}, errors: null, elsewhere: null, minimal: false, ...cmd };
    const reply = this.shard.handle({ k: 'write', rid, cmd: full });
    if (reply && 'rid' in reply) this.replies.set(rid, reply);
    return rid;
  }

  /** The reply to `rid` once it has left (commits are awaited). */
  async reply(rid: number): Promise<WriteReply | GetReply> {
    for (let i = 0; i < 2000 && !this.replies.has(rid); i++) await new Promise((r) => setTimeout(r, 5));
    const reply = this.replies.get(rid);
    if (!reply) throw new Error(`no reply to request ${rid}`);
    return reply as WriteReply | GetReply;
  }

  async status(rid: number): Promise<number> { return (await this.reply(rid)).status; }

  async get(type: WriteCommand['type'], id: number): Promise<{ status: number; body: any }> {
    const rid = this.rid++;
    const now = this.shard.handle({ k: 'get', rid, type, id });
    const reply = (now ?? await this.reply(rid)) as GetReply;
    return { status: reply.status, body: reply.status === 200 ? JSON.parse(reply.body) : reply.body };
  }

  playbook(id: number): number {
    return this.send({ op: 'create', type: 'playbook', id, set: { path: `/srv/${id}.yml`, runner_version: '2.16.1', arguments: '{}', status: 'running', started: T0 } });
  }

  record(id: number, playbook: number, value: unknown): number {
    return this.send({ op: 'create', type: 'record', id, set: { playbook, key: `k${id}`, type: 'json', value: JSON.stringify(value) } });
  }

  /** A play, file, task and host in playbook `pb`, each with id `pb` (results need them); the last request id. */
  tree(pb: number): number {
    this.send({ op: 'create', type: 'play', id: pb, set: { playbook: pb, uuid: `5e0c9a5e-0000-4000-8000-${String(pb).padStart(12, '0')}`, name: 'play', started: T0 } });
    this.send({ op: 'create', type: 'file', id: pb, set: { playbook: pb, path: '/site.yml', content: '- hosts: all\n' } });
    this.send({ op: 'create', type: 'task', id: pb, set: { playbook: pb, play: pb, file: pb, action: 'ping', lineno: 1, handler: false, started: T0 } });
    return this.send({ op: 'create', type: 'host', id: pb, set: { playbook: pb, name: 'web1' } });
  }

  /** A result in playbook `pb` (after tree(pb)). */
  result(id: number, pb: number, status: string): number {
    return this.send({ op: 'create', type: 'result', id, set: { playbook: pb, play: pb, task: pb, host: pb, status, started: T0 } });
  }

  patchResult(id: number, status: string): number {
    return this.send({ op: 'update', type: 'result', id, set: { status } });
  }

  deleteResult(id: number): number {
    return this.send({ op: 'delete', type: 'result', id });
  }

  patchRecord(id: number, value: unknown): number {
    return this.send({ op: 'update', type: 'record', id, set: { value: JSON.stringify(value) } });
  }

  deleteRecord(id: number): number {
    return this.send({ op: 'delete', type: 'record', id });
  }

  close(): Promise<void> { return this.store.close(); }
}

export function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-shard-node-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * What a fresh store on `dir` recovers: the records shown for the given ids
 * (404 → null); a playbook as its path, or with `items` as its path and record count.
 */
export async function onDisk(dir: string, ids: { playbooks?: number[]; records?: number[]; items?: boolean }): Promise<Record<string, unknown>> {
  const node = new ShardNode(dir);
  const out: Record<string, unknown> = {};
  for (const id of ids.playbooks ?? []) {
    const r = await node.get('playbook', id);
    out[`playbook ${id}`] = r.status !== 200 ? null : ids.items ? `${r.body.path}, ${r.body.items.records} records` : r.body.path;
  }
  for (const id of ids.records ?? []) { const r = await node.get('record', id); out[`record ${id}`] = r.status === 200 ? r.body.value : null; }
  await node.close();
  return out;
}


/**
 * The snapshot result parts stored in a closed shard environment ("seq/k" per
 * playbook) and the ones each playbook's stored snapshot refers to.
 */
export async function snapshotPartsIn(mdbPath: string): Promise<Map<number, { stored: string[]; referred: string[] }>> {
  const env = open({ path: mdbPath, maxDbs: 8, readOnly: true });
  const snapshots = env.openDB<AggregateSnapshot, number>({ name: 'snapshots', keyEncoding: 'uint32', encoding: 'msgpack' });
  const table = env.openDB<unknown, [number, number, number]>({ name: 'snapshot_parts', encoding: 'msgpack' });
  const out = new Map<number, { stored: string[]; referred: string[] }>();
  const of = (pb: number) => {
    let entry = out.get(pb);
    if (!entry) {
      const head = snapshots.get(pb);
      const referred = head ? Array.from({ length: resultPartsOf(head) }, (_, k) => `${partSeqOf(head, k)}/${k}`) : [];
      out.set(pb, entry = { stored: [], referred });
    }
    return entry;
  };
  for (const [pb, seq, k] of table.getKeys()) of(pb).stored.push(`${seq}/${k}`);
  await env.close();
  return out;
}
