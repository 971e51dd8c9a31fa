// Cluster-mode configuration (issue #12): which NATS servers to use and how to
// authenticate to them, this node's name, the partition count and the stream
// replica count. With LOGBOOK_CLUSTER unset the result is `null` and logbook
// runs as a single process.
import { accessSync, constants } from 'node:fs';

/** How a node authenticates to NATS and trusts it (cluster/nats_options.ts opens the connections with it). */
export interface NatsAuth {
  /** user and password (NATS `authorization { users }`) */
  user?: string;
  password?: string;
  /** a token (NATS `authorization { token }`) */
  token?: string;
  /** a .creds file (NATS decentralized auth: a user JWT and its nkey seed) */
  credsFile?: string;
  /** CA certificate(s) to verify the servers with; set alone it also requires TLS */
  tlsCa?: string;
  /** a client certificate and its key, for servers that verify clients (`tls { verify: true }`) */
  tlsCert?: string;
  tlsKey?: string;
}

export interface ClusterConfig {
  /** nats:// URLs of the NATS servers to connect to (any of them will do; the client fails over). */
  servers: string[];
  /** this node's unique name: written into fence records, so two nodes must never share it */
  node: string;
  /** number of partitions; fixed when the cluster is first created (see partition_log.ts meta record) */
  partitions: number;
  /** JetStream replicas of each partition stream (1..5; 3 survives the loss of one server) */
  replicas: number;
  /** credentials and TLS for the NATS connections (LOGBOOK_CLUSTER_USER … _TLS_KEY) */
  auth: NatsAuth;
}

/** The variables that configure cluster mode, besides LOGBOOK_CLUSTER. */
const CLUSTER_VARIABLES = [
  'LOGBOOK_NODE', 'LOGBOOK_PARTITIONS', 'LOGBOOK_REPLICAS', 'LOGBOOK_CLUSTER_USER', 'LOGBOOK_CLUSTER_PASSWORD',
  'LOGBOOK_CLUSTER_TOKEN', 'LOGBOOK_CLUSTER_CREDS', 'LOGBOOK_CLUSTER_TLS_CA', 'LOGBOOK_CLUSTER_TLS_CERT', 'LOGBOOK_CLUSTER_TLS_KEY',
] as const;

export const DEFAULT_PARTITIONS = 32;
export const DEFAULT_REPLICAS = 3;
/** a sanity bound: every partition is a stream (a Raft group on each server it lives on) */
export const MAX_PARTITIONS = 4096;

export class ClusterConfigError extends Error {
  override name = 'ClusterConfigError';
}

/** Node names go into NATS subjects and headers later: keep them to a safe alphabet. */
const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

function parseServers(raw: string): string[] {
  const parts = raw.split(',').map((s) => s.trim());
  if (parts.some((p) => p === '')) {
    throw new ClusterConfigError(`LOGBOOK_CLUSTER=${JSON.stringify(raw)}: empty entry; expected comma-separated nats:// URLs, e.g. nats://10.0.0.1:4222,nats://10.0.0.2:4222`);
  }
  const seen = new Set<string>();
  for (const p of parts) {
    let url: URL;
    try {
      url = new URL(p);
    } catch {
      throw new ClusterConfigError(`LOGBOOK_CLUSTER: ${JSON.stringify(p)} is not a URL; expected nats://host:port`);
    }
    if (url.protocol !== 'nats:' && url.protocol !== 'tls:') {
      throw new ClusterConfigError(`LOGBOOK_CLUSTER: ${JSON.stringify(p)} must use nats:// (or tls://), not ${url.protocol}//`);
    }
    if (url.hostname === '') throw new ClusterConfigError(`LOGBOOK_CLUSTER: ${JSON.stringify(p)} has no host`);
    if (url.pathname !== '' && url.pathname !== '/') {
      throw new ClusterConfigError(`LOGBOOK_CLUSTER: ${JSON.stringify(p)} must not have a path`);
    }
    if (seen.has(p)) throw new ClusterConfigError(`LOGBOOK_CLUSTER: ${JSON.stringify(p)} is listed twice`);
    seen.add(p);
  }
  return parts;
}

function parseIntIn(name: string, raw: string | undefined, def: number, lo: number, hi: number): number {
  if (raw === undefined || raw.trim() === '') return def;
  const t = raw.trim();
  if (!/^[0-9]+$/.test(t)) throw new ClusterConfigError(`${name}=${JSON.stringify(raw)} is not a whole number; expected ${lo}..${hi}`);
  const n = Number(t);
  if (!Number.isSafeInteger(n) || n < lo || n > hi) throw new ClusterConfigError(`${name}=${t} is out of range; expected ${lo}..${hi}`);
  return n;
}

/**
 * The cluster configuration from the environment, or `null` for single-process
 * mode (LOGBOOK_CLUSTER unset or empty). Bad values throw ClusterConfigError with
 * a message naming the variable, for start-up to print and stop.
 */
export function clusterConfigFromEnv(env: Record<string, string | undefined> = process.env): ClusterConfig | null {
  const rawServers = env.LOGBOOK_CLUSTER;
  if (rawServers === undefined || rawServers.trim() === '') {
    // The other cluster variables mean nothing without servers: say so rather than ignore them.
    for (const name of CLUSTER_VARIABLES) {
      const v = env[name];
      if (v !== undefined && v.trim() !== '') {
        throw new ClusterConfigError(`${name} is set but LOGBOOK_CLUSTER is not; set LOGBOOK_CLUSTER to the NATS servers' URLs for cluster mode, or unset ${name}`);
      }
    }
    return null;
  }
  const servers = parseServers(rawServers);
  const node = (env.LOGBOOK_NODE ?? '').trim();
  if (node === '') throw new ClusterConfigError('LOGBOOK_NODE is required in cluster mode (LOGBOOK_CLUSTER is set): a unique name for this node, e.g. logbook-1');
  if (!NODE_NAME.test(node)) {
    throw new ClusterConfigError(`LOGBOOK_NODE=${JSON.stringify(node)}: use 1-63 letters, digits, '-' or '_', starting with a letter or digit`);
  }
  const partitions = parseIntIn('LOGBOOK_PARTITIONS', env.LOGBOOK_PARTITIONS, DEFAULT_PARTITIONS, 1, MAX_PARTITIONS);
  const replicas = parseIntIn('LOGBOOK_REPLICAS', env.LOGBOOK_REPLICAS, DEFAULT_REPLICAS, 1, 5);
  return { servers, node, partitions, replicas, auth: authFromEnv(env) };
}

/** NATS credentials and TLS files from the environment; a file that cannot be read stops start-up naming it. */
function authFromEnv(env: Record<string, string | undefined>): NatsAuth {
  const value = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v === '' ? undefined : v;
  };
  const file = (name: string): string | undefined => {
    const path = value(name)?.trim();
    if (path === undefined) return undefined;
    try {
      accessSync(path, constants.R_OK);
    } catch (err) {
      throw new ClusterConfigError(`${name}=${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    return path;
  };
  const auth: NatsAuth = {};
  const user = value('LOGBOOK_CLUSTER_USER'), password = value('LOGBOOK_CLUSTER_PASSWORD'), token = value('LOGBOOK_CLUSTER_TOKEN');
  if (password !== undefined && user === undefined) throw new ClusterConfigError('LOGBOOK_CLUSTER_PASSWORD is set without LOGBOOK_CLUSTER_USER');
  const ways = [user !== undefined, token !== undefined, value('LOGBOOK_CLUSTER_CREDS') !== undefined].filter(Boolean).length;
  if (ways > 1) throw new ClusterConfigError('set one of LOGBOOK_CLUSTER_USER (with _PASSWORD), LOGBOOK_CLUSTER_TOKEN or LOGBOOK_CLUSTER_CREDS, not several');
  if (user !== undefined) { auth.user = user; auth.password = password ?? ''; }
  if (token !== undefined) auth.token = token;
  const creds = file('LOGBOOK_CLUSTER_CREDS');
  if (creds !== undefined) auth.credsFile = creds;
  const ca = file('LOGBOOK_CLUSTER_TLS_CA');
  if (ca !== undefined) auth.tlsCa = ca;
  const cert = file('LOGBOOK_CLUSTER_TLS_CERT'), key = file('LOGBOOK_CLUSTER_TLS_KEY');
  if ((cert === undefined) !== (key === undefined)) throw new ClusterConfigError('LOGBOOK_CLUSTER_TLS_CERT and LOGBOOK_CLUSTER_TLS_KEY go together (a client certificate and its key)');
  if (cert !== undefined) { auth.tlsCert = cert; auth.tlsKey = key!; }
  return auth;
}
