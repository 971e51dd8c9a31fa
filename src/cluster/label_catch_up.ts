// Label changes for the live stream, cluster mode (docs/api.md#live-stream; src/http/label_changes.ts):
// each partition logs every change of the label stream once, in the stream's
// order (src/shard_worker.ts). The node that made a change sends it to the
// partitions and tries again until they have logged it; this is what makes a
// change logged also when that node could not do it (it died, or stopped before
// a partition came back): every node asks each partition it owns, now and then,
// to catch up with the label stream as far as this node has read it.
//
// The ask waits a tick after the node read a change, so the node that made it,
// which sends the label's own message first and the playbook updates after,
// normally gets there first; a partition that has logged the change answers at
// once and is not asked again until the stream moves on or the partition moves.
//
// The same order holds for a catch-up: partition 0 logs the labels' own
// messages, so another partition is asked to catch up to a position only once
// partition 0 has logged up to it (this node asks partition 0 first, wherever
// it is owned; it answers at once when it is there already). So a playbook
// update a catch-up logs never reaches subscribers before its label's message.
// A partition 0 that cannot answer now holds back only these catch-ups, not
// ingest nor the changes their nodes send; it is asked again at the next tick.
import { log } from '../log.js';
import type { Reply } from '../shard/protocol.js';
import { LABEL_SHARD } from '../http/label_changes.js';
import type { ClusterShards } from './cluster_shards.js';
import type { ClusterLabels } from './labels.js';

export class LabelCatchUp {
  /** partition → [epoch, label stream sequence it is known to have logged up to] */
  private readonly reached = new Map<number, [number, number]>();
  private readonly asking = new Set<number>();
  /** partitions whose last ask failed (logged once until one succeeds) */
  private readonly failing = new Set<number>();
  /** the label stream sequence partition 0 has answered that it logged up to (whoever owns it) */
  private zeroReached = 0;
  /** partition 0 is being asked (on behalf of the other partitions) */
  private zeroAsking = false;
  /** the stream position as read at the previous tick */
  private seen = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly labels: ClusterLabels, private readonly shards: ClusterShards, private readonly everyMs = 1000) {}

  start(): void {
    this.seen = this.labels.position;
    this.timer = setInterval(() => this.tick(), this.everyMs);
    this.timer.unref();
  }

  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private tick(): void {
    const target = this.seen;
    this.seen = this.labels.position;
    const behind: Array<[number, number]> = [];
    for (const [partition, epoch] of this.shards.ownedPartitions()) {
      const known = this.reached.get(partition);
      if ((known && known[0] === epoch && known[1] >= target) || this.asking.has(partition)) continue;
      if (partition === LABEL_SHARD || this.zeroReached >= target) this.ask(partition, epoch, target);
      else behind.push([partition, epoch]);
    }
    if (!behind.length || this.zeroAsking) return;
    // the other partitions go once partition 0 has logged the labels' own messages up to there
    this.zeroAsking = true;
    this.send(LABEL_SHARD, target, (ok) => {
      this.zeroAsking = false;
      if (!ok) return; // asked again at the next tick
      if (target > this.zeroReached) this.zeroReached = target;
      for (const [partition, epoch] of behind) if (!this.asking.has(partition)) this.ask(partition, epoch, target);
    });
  }

  private ask(partition: number, epoch: number, target: number): void {
    this.asking.add(partition);
    this.send(partition, target, (ok) => {
      this.asking.delete(partition);
      if (ok) this.reached.set(partition, [epoch, target]);
    });
  }

  /** Ask a partition (wherever it is owned) to log the label stream's changes up to `target`. */
  private send(partition: number, target: number, done: (ok: boolean) => void): void {
    const change = { seq: target, op: 0, id: 0, row: null, own: partition === LABEL_SHARD, catchUp: true };
    this.shards.send(partition, { k: 'label', rid: 0, changes: [change] }, (r: Reply) => {
      const ok = r.k === 'label' && r.status === 200;
      if (ok) {
        if (partition === LABEL_SHARD && target > this.zeroReached) this.zeroReached = target;
        this.failing.delete(partition);
      } else if (!this.failing.has(partition)) {
        this.failing.add(partition);
        log.warn('a partition could not catch up with the label stream; asked again shortly', { partition, why: 'body' in r ? r.body : r.status });
      }
      done(ok);
    }, null, true);
  }
}
