// Wires the parts together: lock the data directory, check its format, start
// the shards (each recovers its data in parallel), rebuild the front's tables,
// then serve. Used by main.ts and by benchmarks that want a server in-process.
// Before uWebSockets.js loads: it reads its settings from the environment once (see uws_env.ts).
import { SearchService } from './search/search_service.js';
import './http/uws_env.js';
import { App, us_listen_socket_close, us_socket_local_port, type us_listen_socket } from 'uWebSockets.js';
import type { Config } from './config.js';
import { Front } from './http/front.js';
import { log } from './log.js';
import { HTTP } from './metrics.js';
import { Retention, poolTarget } from './retention.js';
import { ShardPool } from './shard/pool.js';
import { checkDataDir } from './store/data_dir.js';
import { FrontStore, lockDataDir } from './store/front_store.js';
import { VERSION } from './version.js';
import type { PoolOptions } from './shard/pool.js';
import type { Shards } from './shard/shards.js';
import type { MaintenanceTarget } from './retention.js';
import { connectNode, natsConnectionOptions } from './cluster/nats_options.js';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { ClusterShards } from './cluster/cluster_shards.js';
import { ClusterDirectory } from './cluster/directory.js';
import { ClusterLabels } from './cluster/labels.js';
import { LabelCatchUp } from './cluster/label_catch_up.js';
import { PartitionLog } from './cluster/partition_log.js';
import { loadWebhookSettings } from './config/webhooks.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';

export interface Server {
  port: number;
  /** Stop accepting, let in-flight requests finish (bounded), flush, release the data dir. */
  close(): Promise<void>;
}

export async function startServer(config: Config): Promise<Server> {
  if (config.cluster) return startClusterNode(config);
  const t0 = performance.now();
  const unlock = lockDataDir(config.dataDir);
  let store: FrontStore | null = null;
  try {
    checkDataDir(config.dataDir, config.shards);
    store = new FrontStore(config.dataDir);
    await store.checkFormat(config.shards, config.dataDir);
    // Accept connections at once: until recovery is done every request gets 503
    // (and /healthz says "recovering"), so orchestrators can tell slow from dead.
    // webhooks (LOGBOOK_WEBHOOKS_FILE, checked when the configuration was read): their outbox is in front.mdb
    let origin = '';
    const webhooks = config.webhooksFile === null ? null : new WebhookDispatcher({
      settings: loadWebhookSettings(config.webhooksFile), table: store.webhooks, origin: () => origin,
    });
    // the search index (docs/search.md): derived data in search.sqlite; null if its worker cannot run
    const search = config.search ? await SearchService.start(config.dataDir, config.logLevel) : null;
    const front = new Front(config, VERSION, store, undefined, webhooks, search);
    const socket = await listen(front, config);
    origin = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${front.port}`;
    log.info('recovering', { host: config.host, port: front.port, dataDir: config.dataDir, shards: config.shards });
    const { pool, ready } = await ShardPool.start({
      ...poolOptions(config, front), shards: config.shards, dataDir: config.dataDir, mapSize: config.mapSize,
      streamOrder: front.stream.order.buffer,
      ...(search ? { searchPortFor: (shard: number) => search.portFor(shard) } : {}),
    });
    front.recover(pool, ready);
    const totals = ready.reduce((a, r) => ({
      results: a.results + r.recovery.results, events: a.events + r.recovery.eventsApplied,
      snapshots: a.snapshots + r.recovery.snapshots, shardMs: Math.max(a.shardMs, r.recovery.ms),
    }), { results: 0, events: 0, snapshots: 0, shardMs: 0 });
    const recoveryMs = performance.now() - t0;
    log.info('recovered', {
      ms: Math.round(recoveryMs), slowestShardMs: Math.round(totals.shardMs), results: totals.results,
      snapshots: totals.snapshots, journalEventsReplayed: totals.events,
    });
    // ---- operations: recovery metrics, retention/expiry ----
    front.metrics.recovery.set(recoveryMs / 1000);
    for (const r of ready) front.metrics.shardRecovery.set({ shard: String(r.shard) }, r.recovery.ms / 1000);
    const retention = startRetention(poolTarget(pool, (deleted) => front.forget(deleted)), front, config);
    const frontStore = store;
    return {
      port: front.port,
      close: () => drain(socket, front, pool, retention, config, async () => {
        await pool.close();
        // after the shards: their last batches are on its ports by now
        await search?.close();
        await frontStore.close();
        unlock();
      }),
    };
  } catch (err) {
    unlock();
    throw err;
  }
}

/**
 * Cluster mode (LOGBOOK_CLUSTER): the journal is the partitions' JetStream
 * streams, the labels a stream of their own; nothing on the local disk must
 * survive, so there is no data directory to lock. Listens at once (503 until
 * this node has joined), then takes its share of the partitions.
 */
async function startClusterNode(config: Config): Promise<Server> {
  const cluster = config.cluster!;
  const t0 = performance.now();
  // throwaway blob stores of this node's partitions; an earlier run's go (the streams hold everything)
  const blobDir = join(config.dataDir, 'cluster', cluster.node);
  rmSync(blobDir, { recursive: true, force: true });
  const nc = await connectNode(natsConnectionOptions(cluster.servers, `logbook ${cluster.node}`, cluster.auth));
  try {
    const plog = await PartitionLog.open(nc, { partitions: cluster.partitions, replicas: cluster.replicas });
    const labels = await ClusterLabels.open(nc, plog);
    const front = new Front(config, VERSION, labels, new ClusterDirectory(cluster.partitions, labels));
    const socket = await listen(front, config);
    log.info('joining the cluster', { node: cluster.node, partitions: cluster.partitions, replicas: cluster.replicas, port: front.port });
    // the partition's stream is the journal: no data directory for the workers (dataDir null)
    const shards = new ClusterShards(cluster, nc, plog, { ...poolOptions(config, front), shards: cluster.partitions, dataDir: null },
      blobDir);
    labels.onChange = (id, stored) => front.labelChanged(id, stored);
    await shards.start();
    front.recover(shards, []);
    // every partition this node owns logs the label stream's changes, also those no node got logged
    const catchUp = new LabelCatchUp(labels, shards);
    catchUp.start();
    const retention = startRetention(shards.maintenanceTarget(), front, config);
    const status = shards.clusterStatus();
    log.info('joined', { node: cluster.node, ms: Math.round(performance.now() - t0), nodes: status.nodes, owned: Object.keys(status.owned).length });
    return {
      port: front.port,
      close: () => drain(socket, front, shards, retention, config, async () => {
        catchUp.close();
        await shards.close();
        labels.close();
        await nc.drain().catch(() => {});
      }),
    };
  } catch (err) {
    await nc.close().catch(() => {});
    throw err;
  }
}

// ---- what both modes share ----

/** The HTTP app: stream WebSocket upgrades before the catch-all; resolves once listening (front.port set). */
async function listen(front: Front, config: Config): Promise<us_listen_socket> {
  const app = App();
  front.stream.register(app); // WebSocket upgrades of /api/v1/stream, before the catch-all
  app.any('/*', (res, req) => front.onRequest(res, req));
  const socket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(config.host, config.port, (s) => (s ? resolve(s) : reject(new Error(`cannot listen on ${config.host}:${config.port}`))));
  });
  front.port = us_socket_local_port(socket);
  return socket;
}

/** Shard worker settings from the configuration (the shard count and data directory are the mode's). */
function poolOptions(config: Config, front: Front): Omit<PoolOptions, 'shards' | 'dataDir'> {
  return {
    durability: config.durability,
    snapshotEvery: config.snapshotEvery, snapshotIntervalMs: config.snapshotInterval * 1000, logLevel: config.logLevel,
    queueLimit: config.shardQueue, queueDelayMs: config.shardQueueDelay, ids: front.ids.buffer,
    ignoredFacts: config.ignoredFacts, ignoredArguments: config.ignoredArguments, streamRetention: config.streamRetention,
    runSeries: { allow: config.metricsSeries, max: config.metricsSeriesMax },
  };
}

function startRetention(target: MaintenanceTarget, front: Front, config: Config): Retention {
  const retention = new Retention(target, {
    retentionDays: config.retentionDays, expireRunningAfter: config.expireRunningAfter,
    intervalMs: config.maintenanceInterval * 1000, sink: front.metrics,
  });
  if (retention.enabled) {
    log.info('retention on', {
      retentionDays: config.retentionDays, expireRunningAfterSeconds: config.expireRunningAfter,
      checkIntervalSeconds: config.maintenanceInterval,
    });
  }
  retention.start();
  return retention;
}

/**
 * Stop accepting: no new connections; requests on open connections get
 * 503 + Connection: close. In-flight requests (bodies still arriving, commands
 * in the shards, label writes) finish within the bound; then `release` closes
 * what the mode holds.
 */
async function drain(socket: us_listen_socket, front: Front, shards: Shards, retention: Retention, config: Config,
  release: () => Promise<void>): Promise<void> {
  const stopAt = performance.now();
  us_listen_socket_close(socket);
  front.draining = true;
  front.close();
  const deadline = Date.now() + config.shutdownTimeout * 1000;
  const stopping = retention.stop();
  while ((HTTP.inFlight > 0 || shards.inFlight > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const abandoned = HTTP.inFlight;
  await Promise.race([stopping, new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())))]);
  await release();
  log.info('drained', { ms: Math.round(performance.now() - stopAt), unfinishedRequests: abandoned });
}
