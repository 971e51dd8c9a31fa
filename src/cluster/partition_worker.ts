// The cluster half of a shard worker's start-up: connect to NATS, rebuild the
// partition from its stream up to this node's fence, then append after it.
// Every worker has its own NATS connection: commits leave from the thread
// that decides them, without a hop through the main thread.
//
// A standby (the node second in the partition's rendezvous order) starts the
// same way but keeps tailing the stream instead of appending, so that when it
// is promoted (its node fenced the partition) it only has to read the few
// records between where it is and its fence: failover replays a short tail,
// not the partition's history.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { natsConnectionOptions } from './nats_options.js';
import type { PartitionInit } from '../shard/protocol.js';
import { ShardState } from '../shard/state.js';
import type { RecoveryStats } from '../shard/storage.js';
import { PartitionIds } from './ids.js';
import { PartitionLog, streamName } from './partition_log.js';
import { errText, log as logger } from '../log.js';
import { PartitionStore } from './partition_store.js';
import { LocalBlobs } from './partition_blobs.js';
import { join } from 'node:path';
import { labelStreamEnd, readLabelChanges, type LabelStreamChange } from './labels.js';

export interface OpenedPartition {
  nc: NatsConnection;
  store: PartitionStore;
  state: ShardState;
  ids: PartitionIds;
  recovery: RecoveryStats;
  /** the last sequence appended (owner) or read (standby) */
  position(): number;
  /** standby only: become the owner by the fence at `fenceSeq`; resolves with the records read since ready */
  promote(epoch: number, fenceSeq: number): Promise<{ entries: number; ms: number }>;
  /** the label changes at sequences from..to of the label stream (the ones this partition has not logged: worker.ts) */
  readLabels(from: number, to: number): Promise<LabelStreamChange[]>;
  /** the label stream's last sequence */
  labelsEnd(): Promise<number>;
}

export async function openPartition(k: number, init: PartitionInit): Promise<OpenedPartition> {
  const nc = await connect(natsConnectionOptions(init.servers, `logbook ${init.node} p${k}`, init.auth));
  try {
    const log = await PartitionLog.attach(nc, { partitions: init.partitions, replicas: init.replicas });
    const store = new PartitionStore(init.blobDir === null ? undefined
      : new LocalBlobs(join(init.blobDir, `p${k}${init.standby ? '-standby' : ''}`)));
    const state = new ShardState();
    const ids = new PartitionIds(init.partitions, k);
    const labels = {
      readLabels: (from: number, to: number) => readLabelChanges(log.jsm, from, to),
      labelsEnd: () => labelStreamEnd(log),
    };
    const owned = (epoch: number, fenceSeq: number) => {
      state.releasedFiles = [];
      state.dirty.clear();
      state.maxIds.forEach((id, code) => ids.observe(code, id));
      store.attach(log.writer(k, init.node, epoch, fenceSeq));
    };
    if (!init.standby) {
      const recovery = await store.replay(log, k, init.fenceSeq, state);
      owned(init.epoch, init.fenceSeq);
      return { nc, store, state, ids, recovery, position: () => store.lastSequence, promote: () => Promise.reject(new Error('not a standby')), ...labels };
    }
    const t0 = performance.now();
    const follower = follow(log, k, store, state);
    await follower.caughtUp;
    const recovery = { snapshots: 0, journalEntries: follower.entries, eventsApplied: follower.events, ms: performance.now() - t0 };
    let promoted = false;
    return {
      nc, store, state, ids, recovery, ...labels,
      position: () => (promoted ? store.lastSequence : follower.position),
      async promote(epoch, fenceSeq) {
        const p0 = performance.now();
        const before = follower.entries;
        await follower.reach(fenceSeq);
        follower.stop();
        owned(epoch, fenceSeq);
        promoted = true;
        return { entries: follower.entries - before, ms: performance.now() - p0 };
      },
    };
  } catch (err) {
    await nc.close().catch(() => {});
    throw err;
  }
}

/** a standby behind the stream whose reader has not moved for this long reads again from its position */
const FOLLOW_STALL_MS = 2_000;

/**
 * Tail partition k into `state` and `store`'s blobs, from its first record on. The reader
 * is repaired in place: when its consumer ends or fails (its NATS server died, or the server
 * deleted it while this process was stopped), or it has not moved for FOLLOW_STALL_MS while
 * the stream is ahead of it, a new consumer reads on from the last record applied. A standby
 * never starts over from the stream's start because of a NATS fault, and its promotion
 * reads only the records between it and the fence.
 */
function follow(log: PartitionLog, k: number, store: PartitionStore, state: ShardState) {
  const stopped = new AbortController();
  /** the last message read */
  let position = 0;
  /** where a new reader goes on from: after the last record applied (a split commit is read again whole) */
  let resumeFrom = 1;
  let movedAt = performance.now();
  let round: AbortController | null = null;
  const waiters: Array<{ seq: number; resolve: () => void; reject: (e: Error) => void }> = [];
  let failed: Error | null = null;
  const f = {
    entries: 0, events: 0, restarts: 0,
    get position() { return position; },
    caughtUp: null as unknown as Promise<void>,
    reach(seq: number): Promise<void> {
      if (failed) return Promise.reject(failed);
      if (position >= seq) return Promise.resolve();
      return new Promise<void>((resolve, reject) => waiters.push({ seq, resolve, reject }));
    },
    stop() { stopped.abort(); clearInterval(watchdog); },
  };
  const moved = (seq: number, resume: number) => {
    resumeFrom = resume;
    if (seq <= position) return; // the parts of a split commit, read again
    position = seq;
    movedAt = performance.now();
    for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i]!.seq <= seq) { waiters[i]!.resolve(); waiters.splice(i, 1); }
  };
  const fail = (err: unknown) => {
    failed = err instanceof Error ? err : new Error(String(err));
    for (const w of waiters.splice(0)) w.reject(failed);
    clearInterval(watchdog);
    // a standby that cannot apply its stream is no standby: the worker exits, the node may start another
    setTimeout(() => process.exit(4), 10);
  };
  // A reader that stays at one position while the stream is ahead of it is read again from
  // there. Behind: someone waits for a later record (a promotion), or, after a quiet while,
  // the stream's last sequence (asked at most every FOLLOW_STALL_MS) is past it.
  let checking = false;
  let askedAt = 0;
  /** the position the reader was first seen behind at, and when */
  let stuck: { at: number; since: number } | null = null;
  const watchdog = setInterval(() => {
    if (checking || round === null) return;
    const now = performance.now();
    let behind: Promise<boolean>;
    if (waiters.some((w) => w.seq > position)) behind = Promise.resolve(true);
    else if (now - movedAt >= FOLLOW_STALL_MS && now - askedAt >= FOLLOW_STALL_MS) {
      askedAt = now;
      behind = log.jsm.streams.info(streamName(k)).then((i) => i.state.last_seq > position, () => false);
    } else return;
    checking = true;
    void behind.then((yes) => {
      const t = performance.now();
      if (!yes) { stuck = null; return; }
      if (stuck === null || stuck.at !== position) { stuck = { at: position, since: t }; return; }
      if (t - stuck.since < FOLLOW_STALL_MS || round === null) return;
      logger.warn('standby reader stalled; reading on from its position', { partition: k, position, stalledMs: Math.round(t - stuck.since) });
      stuck = null;
      round.abort();
    }).finally(() => { checking = false; });
  }, 500);
  watchdog.unref();
  const run = async () => {
    for (let attempt = 0; !stopped.signal.aborted; attempt++) {
      const current = round = new AbortController();
      const stop = () => current.abort();
      stopped.signal.addEventListener('abort', stop, { once: true });
      try {
        for await (const record of log.replay(k, resumeFrom, { follow: true, signal: current.signal, onPosition: moved })) {
          if (record.kind !== 'commit') continue;
          try {
            for (const raw of record.entries) {
              f.entries++;
              f.events += store.applyEntry(raw as Uint8Array, state);
            }
          } catch (err) { fail(err); return; }
          attempt = 0;
        }
      } catch (err) {
        if (!stopped.signal.aborted && !current.signal.aborted) logger.warn('standby reader failed; reading on from its position', { partition: k, position, err: errText(err) });
      } finally {
        stopped.signal.removeEventListener('abort', stop);
        round = null;
      }
      if (stopped.signal.aborted) return;
      f.restarts++;
      movedAt = performance.now();
      await new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** Math.min(attempt, 5))));
    }
  };
  f.caughtUp = log.lastSequence(k).then((end) => {
    const done = f.reach(end);
    void run().catch(fail);
    return done;
  });
  return f;
}
