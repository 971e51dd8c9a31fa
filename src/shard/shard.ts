// A shard: one thread's worth of playbook aggregates. It handles one message at a
// time (no locks), so decide → journal → apply → reply is atomic per command.
import { TYPE_CODE } from '../api/resources.js';
import { Errors } from '../api/errors.js';
import { nowMicros } from '../api/time.js';
import { decide } from './decide.js';
import { runList } from './list.js';
import { Serializer } from './serialize.js';
import { ShardState, type Event, type Removed } from './state.js';
import type { FrontToShard, ShardToFront, WriteCommand, WriteReply } from './protocol.js';

/** Where a shard's events go before their command is acknowledged. */
export interface Journal {
  append(events: Event[]): void;
}

/** Keeps nothing: the in-memory configuration, until the durability layer plugs in. */
export const NO_JOURNAL: Journal = { append() {} };

export interface ShardOptions {
  compat: boolean;
  journal?: Journal;
  clock?: () => number;
}

export class Shard {
  readonly state = new ShardState();
  private readonly serializer: Serializer;
  private readonly journal: Journal;
  private readonly clock: () => number;

  constructor(options: ShardOptions) {
    this.serializer = new Serializer(this.state, options.compat);
    this.journal = options.journal ?? NO_JOURNAL;
    this.clock = options.clock ?? nowMicros;
  }

  handle(msg: FrontToShard): ShardToFront | null {
    switch (msg.k) {
      case 'write': return this.write(msg.rid, msg.cmd);
      case 'get': {
        const { type, id } = msg;
        const row = this.state.index(type).get(id);
        if (row === undefined) return { k: 'get', rid: msg.rid, status: 404, body: Errors.notFound() };
        const agg = type === 'playbook' ? row : this.state.aggregates.get(row.playbook)!;
        return { k: 'get', rid: msg.rid, status: 200, body: this.serializer.any(type, agg, row, 'detail') };
      }
      case 'list': {
        const { count, rows } = runList(this.state, this.serializer, msg.q);
        return { k: 'list', rid: msg.rid, count, rows, status: 200, body: null };
      }
      case 'labels':
        for (const [id, name] of msg.upsert) this.state.labelChanged(id, name);
        for (const id of msg.remove) this.state.labelChanged(id, null);
        return null;
    }
  }

  write(rid: number, cmd: WriteCommand): WriteReply {
    const now = this.clock();
    const decision = decide(this.state, cmd, now);
    const reply: WriteReply = { k: 'write', rid, status: decision.status, body: null, created: null, deleted: null, labels: null };
    if (!decision.ok) { reply.body = decision.body; return reply; }
    if (decision.events.length) this.journal.append(decision.events);
    let removed: Removed | null = null;
    for (const ev of decision.events) {
      const r = this.state.apply(ev);
      if (r) removed = r;
      if (ev.e === 'labels') reply.labels = ev.add;
    }
    if (cmd.op === 'delete') { reply.deleted = removed; return reply; }
    if (cmd.op === 'create') reply.created = [TYPE_CODE[decision.type], decision.id];
    if (cmd.minimal) { reply.body = '{"id":' + decision.id + '}'; return reply; }
    const row = this.state.index(decision.type).get(decision.id);
    const agg = decision.type === 'playbook' ? row : this.state.aggregates.get(row.playbook)!;
    reply.body = this.serializer.any(decision.type, agg, row, 'write');
    return reply;
  }
}
