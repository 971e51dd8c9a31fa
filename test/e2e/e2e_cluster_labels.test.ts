// The cluster's label catalogue (src/cluster/labels.ts) against a REAL 3-server
// JetStream cluster (Debian nats-server): every node tails the `logbook-labels`
// stream, and must go on reading it when the NATS server holding its consumer
// dies, or that node would never learn another label change (its catalogue, its
// partitions' replicas and their live-stream messages would miss them).
//
// Needs nats-server (Debian `nats-server`); skipped without it. CI installs it.
import test from 'ava';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { hasNatsServer, startNatsCluster, type NatsCluster } from '../helpers/nats.js';
import { ClusterLabels, LABEL_STREAM } from '../../src/cluster/labels.js';
import { PartitionLog } from '../../src/cluster/partition_log.js';
import { OP_CREATE } from '../../src/shard/changes.js';

const hasNats = hasNatsServer();
if (!hasNats) console.warn('e2e_cluster_labels: nats-server not installed; skipped (apt-get install nats-server)');
const serial = hasNats ? test.serial : test.serial.skip;

let cluster: NatsCluster | null = null;
const connections: NatsConnection[] = [];
const catalogues: ClusterLabels[] = [];

async function node(name: string, servers: string[]): Promise<{ labels: ClusterLabels; plog: PartitionLog }> {
  const nc = await connect({ servers, name, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 10_000 });
  connections.push(nc);
  const plog = await PartitionLog.open(nc, { partitions: 1, replicas: 3, openTimeoutMs: 60_000 });
  const labels = await ClusterLabels.open(nc, plog);
  catalogues.push(labels);
  return { labels, plog };
}

test.before(async () => {
  if (!hasNats) return;
  cluster = await startNatsCluster({ size: 3 });
});

test.after.always(async () => {
  for (const l of catalogues) l.close();
  for (const nc of connections) await nc.close().catch(() => undefined);
  await cluster?.stop();
});

serial('a node reads on from the label stream after the NATS server holding its tail dies', async (t) => {
  const reader = await node('reader', cluster!.urls);
  // the server holding the reader's tail (an ephemeral consumer of the label stream)
  const consumers = [];
  for await (const c of reader.plog.jsm.consumers.list(LABEL_STREAM)) consumers.push(c);
  t.is(consumers.length, 1);
  const victim = consumers[0]!.cluster!.leader!;
  t.truthy(victim);
  // the writer talks to the other servers only
  const writer = await node('writer', cluster!.servers.filter((s) => s.name !== victim).map((s) => s.url));
  const put = async (name: string): Promise<number> => {
    for (let attempt = 0; ; attempt++) {
      const id = writer.labels.allocateId();
      try {
        await writer.labels.putLabel(id, { name, created: 1, updated: 1 }, OP_CREATE);
        return id;
      } catch (err) {
        // the label stream may be electing a leader: the catalogue refuses, a client retries
        if (attempt > 40) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  };
  const before = await put('before');
  const seen = async (id: number, ms: number) => {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) { if (reader.labels.storedLabel(id) !== null) return true; await new Promise((r) => setTimeout(r, 100)); }
    return false;
  };
  t.true(await seen(before, 10_000), 'the reader follows the stream');
  await cluster!.kill(victim);
  const after = await put('after');
  // a bound for a stuck reader, not a speed: the tail's watchdog checks every 5 s, and on a loaded
  // machine each of its stream-info requests may time out (5 s) while the servers elect leaders
  t.true(await seen(after, 60_000), `the reader learned the label created after ${victim} died`);
  t.is(reader.labels.storedLabel(after)?.name, 'after');
});
