// Cluster-mode partition log benchmark (issue #12): appends/s through a real 3-server
// JetStream cluster (Debian nats-server, R3, loopback), one at a time and with group
// commit at several concurrencies, and the failover time when the stream leader is
// killed with -9 under load. Standalone for now (not in `npm run bench` yet):
//   npm run build && node dist/bench/cluster_log.js [--quick]
// All three servers and the client share this machine, so the numbers are a floor for
// the log itself, not a cluster's throughput.
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { PartitionLog, streamName } from '../src/cluster/partition_log.js';
import { takeOwnership } from '../src/cluster/fence.js';
import { startNatsCluster } from '../test/helpers/nats.js';

const quick = process.argv.includes('--quick');
const seconds = quick ? 2 : 8;
/** about one Ansible result (1.6 KB): 800 B of repetitive text and 800 B of entropy, so deflate gains what it would on real results, not more */
const fixed = 'ok: [web-01] => {"changed": false, "ping": "pong"} '.repeat(16).slice(0, 800);
const entry = () => ({ body: fixed + randomBytes(400).toString('hex') });

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

const cluster = await startNatsCluster({ size: 3 });
try {
  const nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const concurrencies = quick ? [1, 64] : [1, 16, 64, 256];
  const log = await PartitionLog.open(nc, { partitions: concurrencies.length + 1, replicas: 3, openTimeoutMs: 60_000, retryForMs: 60_000 });
  for (const [k, c] of concurrencies.entries()) {
    const own = await takeOwnership(log, k, 'bench');
    const lat: number[] = [];
    const stopAt = performance.now() + seconds * 1000;
    let n = 0;
    await Promise.all(Array.from({ length: c }, async () => {
      while (performance.now() < stopAt) {
        const t0 = performance.now();
        await own.writer.append({ n: n++, ...entry() });
        lat.push(performance.now() - t0);
      }
    }));
    lat.sort((a, b) => a - b);
    console.log(`concurrency ${String(c).padStart(3)}: ${(lat.length / seconds).toFixed(0).padStart(6)} appends/s, ` +
      `${(lat.length / own.writer.messages).toFixed(1)} entries/message, p50 ${pct(lat, 0.5).toFixed(1)} ms, p99 ${pct(lat, 0.99).toFixed(1)} ms`);
  }
  // failover: 32 callers appending; kill -9 the stream's leader; longest wait for an ack
  const k = concurrencies.length;
  const own = await takeOwnership(log, k, 'bench');
  let killedAt = 0;
  let lastAck = 0;
  let maxGap = 0;
  let after = 0;
  await Promise.all([
    ...Array.from({ length: 32 }, async () => {
      while (killedAt === 0 || after < 2000) {
        await own.writer.append(entry());
        const now = performance.now();
        if (killedAt !== 0) { after++; maxGap = Math.max(maxGap, now - Math.max(lastAck, killedAt)); }
        lastAck = now;
      }
    }),
    (async () => {
      await new Promise((r) => setTimeout(r, 1000));
      const leader = (await log.jsm.streams.info(streamName(k))).cluster!.leader!;
      killedAt = performance.now();
      await cluster.kill(leader);
      console.log(`killed stream leader ${leader}`);
    })(),
  ]);
  console.log(`failover: longest wait for an ack after kill -9 of the stream leader ${(maxGap / 1000).toFixed(1)} s`);
  await nc.close();
} finally {
  await cluster.stop();
}
