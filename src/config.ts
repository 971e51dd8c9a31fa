// Configuration: LOGBOOK_* environment variables and matching --flags (flags win),
// parsed and validated once at start-up into one frozen Config (docs/configuration.md). A bad
// value stops start-up with a message naming the variable.
import { ClusterConfigError, clusterConfigFromEnv, type ClusterConfig } from './config/cluster.js';
import { availableParallelism } from 'node:os';
import { authConfigProblem, loadCredentials, type CredentialKind } from './config/credentials.js';
import { LIMITS } from './limits.js';
import { loadWebhookSettings } from './config/webhooks.js';

export interface Config {
  /** cluster mode on NATS JetStream (null: the single process with its local LMDB journal) */
  readonly cluster: ClusterConfig | null;
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly shards: number;
  readonly pageSize: number;
  readonly maxPageSize: number;
  readonly maxListOffset: number;
  readonly maxBodyBytes: number;
  readonly readLoginRequired: boolean;
  readonly writeLoginRequired: boolean;
  readonly usersFile: string | null;
  readonly tokensFile: string | null;
  readonly corsOrigins: readonly string[];
  readonly ignoredFacts: readonly string[];
  readonly ignoredArguments: readonly string[];
  readonly trustProxy: boolean;
  readonly araCompat: AraDialectMode;
  readonly logLevel: LogLevel;
  /** days; null = off */
  readonly retentionDays: number | null;
  /** seconds; null = off */
  readonly expireRunningAfter: number | null;
  /** when a write is acknowledged: on stable storage (flush), handed to the OS (commit), or not synced (none) */
  readonly durability: 'flush' | 'commit' | 'none';
  /** snapshot a shard after this many journaled commands */
  readonly snapshotEvery: number;
  /** and at least this often (seconds) while anything changed */
  readonly snapshotInterval: number;
  /** bytes each shard's file may grow to before writes are refused; null = no limit */
  readonly mapSize: number | null;
  // ---- operations (retention, shutdown) ----
  /** seconds between retention/expiry checks */
  readonly maintenanceInterval: number;
  /** seconds a shutdown waits for in-flight requests before closing anyway */
  readonly shutdownTimeout: number;
  /** playbook paths (exact, or `*` patterns) whose runs get per-series counters on /metrics; empty: none */
  readonly metricsSeries: string[];
  /** at most this many per-series label sets on /metrics */
  readonly metricsSeriesMax: number;
  /** the webhooks file (src/config/webhooks.ts; checked at start-up); null: no webhooks */
  readonly webhooksFile: string | null;
  /** keep the full-text search index (docs/search.md); single-process mode only */
  readonly search: boolean;
  /** requests in flight per shard before the front answers 503 (src/limits.ts) */
  readonly shardQueue: number;
  /** ms of queueing delay at a shard before the front answers 503 (0: length only; src/limits.ts) */
  readonly shardQueueDelay: number;
  // ---- live stream (src/http/stream.ts) ----
  /** changes each shard keeps for `since` */
  readonly streamRetention: number;
  /** bytes a stream client may have queued before it is cut off */
  readonly streamMaxBuffer: number;
  readonly streamMaxSubscribers: number;
  readonly streamMaxPerClient: number;
  /** seconds between heartbeats (SSE comment lines; WebSocket pings) */
  readonly streamHeartbeat: number;
}

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = typeof LOG_LEVELS[number];

export class ConfigError extends Error {}

type Parse<T> = (raw: string, name: string) => T;

interface Option<T> {
  key: keyof Config;
  env: string;
  flag: string;
  default: T;
  /** shown by --help */
  help: string;
  parse: Parse<T>;
}

const fail = (name: string, raw: string, expected: string): never => {
  throw new ConfigError(`${name}: invalid value ${JSON.stringify(raw)} (expected ${expected})`);
};

const int = (min: number, max: number): Parse<number> => (raw, name) => {
  const t = raw.trim();
  if (!/^\d+$/.test(t)) fail(name, raw, `an integer from ${min} to ${max}`);
  const n = Number(t);
  if (n < min || n > max) fail(name, raw, `an integer from ${min} to ${max}`);
  return n;
};
const optionalInt = (min: number, max: number): Parse<number | null> => (raw, name) =>
  raw.trim() === '' || raw.trim().toLowerCase() === 'off' ? null : int(min, max)(raw, name);

const bool: Parse<boolean> = (raw, name) => {
  const t = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(t)) return true;
  if (['false', '0', 'no', 'off', ''].includes(t)) return false;
  return fail(name, raw, 'true or false');
};
/** LOGBOOK_ARA_COMPAT: auto, or the true/false it was before `auto` existed. */
export type AraDialectMode = 'auto' | 'true' | 'false';
const araDialect: Parse<AraDialectMode> = (raw, name) => {
  if (raw.trim().toLowerCase() === 'auto') return 'auto';
  try { return bool(raw, name) ? 'true' : 'false'; } catch { return fail(name, raw, 'auto, true or false'); }
};
const text: Parse<string> = (raw, name) => (raw.trim() === '' ? fail(name, raw, 'a non-empty value') : raw);
const optionalText: Parse<string | null> = (raw) => (raw.trim() === '' ? null : raw);
const list: Parse<string[]> = (raw) => raw.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
const level: Parse<LogLevel> = (raw, name) => {
  const t = raw.trim().toLowerCase();
  return (LOG_LEVELS as readonly string[]).includes(t) ? t as LogLevel : fail(name, raw, LOG_LEVELS.join(', '));
};
/** "90", "90s", "30m", "12h", "7d" → seconds */
const interval: Parse<number | null> = (raw, name) => {
  const t = raw.trim().toLowerCase();
  if (t === '' || t === 'off') return null;
  const m = /^(\d+)\s*([smhd]?)$/.exec(t);
  if (!m || Number(m[1]) === 0) return fail(name, raw, 'a positive duration such as 3600, 90m, 12h or 7d');
  return Number(m[1]) * ({ '': 1, s: 1, m: 60, h: 3600, d: 86400 } as Record<string, number>)[m[2]!]!;
};

/** "1073741824", "512k", "64M", "2G" (powers of 1024) → bytes; off/empty → no limit */
const MIN_MAP_SIZE = 1024 * 1024;
const byteSize: Parse<number | null> = (raw, name) => {
  const t = raw.trim();
  if (t === '' || t.toLowerCase() === 'off') return null;
  const m = /^(\d+)\s*([kKmMgGtT]?)i?[bB]?$/.exec(t);
  const expected = 'a size in bytes of at least 1M, with an optional k, M, G or T suffix (powers of 1024), or off';
  if (!m) return fail(name, raw, expected);
  const n = Number(m[1]) * 1024 ** ' kmgt'.indexOf(m[2]!.toLowerCase() || ' ');
  if (!Number.isSafeInteger(n) || n < MIN_MAP_SIZE) return fail(name, raw, expected);
  return n;
};

const durability: Parse<'flush' | 'commit' | 'none'> = (raw, name) => {
  const t = raw.trim().toLowerCase();
  return t === 'flush' || t === 'commit' || t === 'none' ? t : fail(name, raw, 'flush, commit or none');
};

/** The webhooks file: must exist and parse at start-up (the dispatcher reads it again when it starts). */
const webhooksFile: Parse<string | null> = (raw, name) => {
  const path = optionalText(raw, name);
  if (path === null) return null;
  try {
    loadWebhookSettings(path);
  } catch (err) {
    fail(name, raw, `a webhooks file (docs/webhooks.md); ${(err as Error).message}`);
  }
  return path;
};

/** A users/tokens file: must exist and parse at start-up (reloads keep the old one on error). */
const credentialsFile = (kind: CredentialKind): Parse<string | null> => (raw, name) => {
  const path = optionalText(raw, name);
  if (path === null) return null;
  try {
    loadCredentials(path, kind);
  } catch (err) {
    fail(name, raw, `a readable ${kind} file of name:hash:scope lines; ${(err as Error).message}`);
  }
  return path;
};

const defaultShards = Math.max(1, availableParallelism() - 1);

const option = <T>(key: keyof Config, suffix: string, def: T, parse: Parse<T>, help: string): Option<T> =>
  ({ key, env: `LOGBOOK_${suffix}`, flag: `--${suffix.toLowerCase().replace(/_/g, '-')}`, default: def, parse, help });

export const OPTIONS: ReadonlyArray<Option<any>> = [
  option('host', 'HOST', '127.0.0.1', text, 'address to listen on'),
  option('port', 'PORT', 8000, int(0, 65535), 'TCP port (0 picks a free one)'),
  option('dataDir', 'DATA_DIR', './snapshots', text, 'data directory (journal, snapshots, blobs)'),
  option('shards', 'SHARDS', defaultShards, int(1, 64), 'shard worker threads (default: cores − 1, at least 1)'),
  option('pageSize', 'PAGE_SIZE', LIMITS.pageSize, int(1, LIMITS.pageSizeCeiling), 'default list page size (limit)'),
  option('maxPageSize', 'MAX_PAGE_SIZE', LIMITS.maxPageSize, int(1, LIMITS.pageSizeCeiling), 'largest limit a list honours'),
  option('maxListOffset', 'MAX_LIST_OFFSET', LIMITS.maxListOffset, int(0, LIMITS.maxListOffsetCeiling), 'deepest list offset served; next/previous links past it carry a cursor'),
  option('maxBodyBytes', 'MAX_BODY_BYTES', LIMITS.maxBodyBytes, int(1, LIMITS.maxBodyBytesCeiling), 'largest request body accepted'),
  option('readLoginRequired', 'READ_LOGIN_REQUIRED', false, bool, 'require credentials for GET/HEAD/OPTIONS'),
  option('writeLoginRequired', 'WRITE_LOGIN_REQUIRED', false, bool, 'require credentials for writes'),
  option('usersFile', 'USERS_FILE', null, credentialsFile('users'), 'users file (name:hash:scope lines) for HTTP Basic; reloaded on change and SIGHUP'),
  option('tokensFile', 'TOKENS_FILE', null, credentialsFile('tokens'), 'tokens file (name:hash:scope lines) for Bearer <name>.<secret>; reloaded on change and SIGHUP'),
  option('corsOrigins', 'CORS_ORIGINS', [], list, 'allowed CORS origins, comma-separated'),
  option('ignoredFacts', 'IGNORED_FACTS', ['ansible_env'], list, 'host facts replaced by a notice before storing'),
  option('ignoredArguments', 'IGNORED_ARGUMENTS', ['extra_vars'], list, 'playbook arguments replaced by a notice before storing'),
  option('trustProxy', 'TRUST_PROXY', false, bool, 'build links from X-Forwarded-Proto/Host'),
  option('araCompat', 'ARA_COMPAT', 'auto', araDialect, "answer in ARA's dialect: auto (requests from ARA's http client), true (every request) or false (none); docs/ara-dialect.md"),
  option('logLevel', 'LOG_LEVEL', 'info', level, `log level: ${LOG_LEVELS.join(', ')}`),
  option('retentionDays', 'RETENTION_DAYS', null, optionalInt(1, 36_500), 'delete playbooks older than N days (off)'),
  option('expireRunningAfter', 'EXPIRE_RUNNING_AFTER', null, interval, 'mark playbooks running longer than this expired (off)'),
  option('durability', 'DURABILITY', 'flush', durability, 'acknowledge writes once flushed to disk (flush), committed to the OS (commit), or unsynced (none)'),
  option('snapshotEvery', 'SNAPSHOT_EVERY', 100_000, int(1, 100_000_000), 'snapshot a shard after this many journaled commands'),
  option('snapshotInterval', 'SNAPSHOT_INTERVAL', 300, int(1, 86_400), 'seconds between snapshots while data changes'),
  option('mapSize', 'MAP_SIZE', null, byteSize, 'bytes each shard file may grow to (k/M/G suffixes); at the limit writes get 503, reads and deletes work (off)'),
  // ---- operations (retention, shutdown) ----
  option('maintenanceInterval', 'MAINTENANCE_INTERVAL', 60, int(1, 86_400), 'seconds between retention and expiry checks'),
  option('shutdownTimeout', 'SHUTDOWN_TIMEOUT', 10, int(1, 3600), 'seconds SIGTERM/SIGINT wait for in-flight requests'),
  option('metricsSeries', 'METRICS_SERIES', [], list, 'playbook paths, comma-separated (`*` matches any characters), whose runs get per-series counters on /metrics (logbook_series_runs_ended_total); empty: none. docs/operations.md#health-metrics-and-logs'),
  option('metricsSeriesMax', 'METRICS_SERIES_MAX', 50, int(1, 10_000), 'per-series label sets (path, name) /metrics exports at most; runs of further series are counted in logbook_series_dropped_total'),
  option('search', 'SEARCH', true, bool, 'keep the full-text search index (search.sqlite in the data directory; docs/search.md)'),
  option('webhooksFile', 'WEBHOOKS_FILE', null, webhooksFile, 'webhooks file (JSON): endpoints told when runs start, end, fail, are fixed, or lose a host (docs/webhooks.md); read at start-up'),
  // ---- security (src/limits.ts, src/http/auth.ts) ----
  option('shardQueue', 'SHARD_QUEUE', LIMITS.shardQueue, int(1, LIMITS.shardQueueCeiling), 'requests in flight per shard before answering 503 + Retry-After'),
  option('shardQueueDelay', 'SHARD_QUEUE_DELAY', LIMITS.shardQueueDelayMs, int(0, LIMITS.shardQueueDelayCeiling), 'queueing delay bound (ms): requests for a shard whose requests wait longer, or while the front lags more than half of it, get 503 + Retry-After (0: only the queue length)'),
  // ---- live stream ----
  option('streamRetention', 'STREAM_RETENTION', 50_000, int(1, 100_000_000), 'changes each shard keeps for resuming a live stream (since=); docs/api.md#live-stream wants at least 10000'),
  option('streamMaxBuffer', 'STREAM_MAX_BUFFER', 1_048_576, int(1024, 1_073_741_824), 'bytes queued for one live-stream client before it is cut off'),
  option('streamMaxSubscribers', 'STREAM_MAX_SUBSCRIBERS', LIMITS.streamSubscribers, int(1, 1_000_000), 'live-stream subscribers at once; past it a new one gets 503 + Retry-After'),
  option('streamMaxPerClient', 'STREAM_MAX_PER_CLIENT', LIMITS.streamSubscribersPerClient, int(1, 1_000_000), 'live-stream subscribers per credential (per client address when anonymous); past it 503 + Retry-After'),
  option('streamHeartbeat', 'STREAM_HEARTBEAT', 15, int(1, 3600), 'seconds between live-stream heartbeats'),
];

/**
 * Build the Config from an environment and argv (without node and script).
 * Throws ConfigError naming the variable or flag at fault.
 */
export function loadConfig(env: NodeJS.ProcessEnv, argv: readonly string[]): Config {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument ${JSON.stringify(arg)} (see --help)`);
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    const opt = OPTIONS.find((o) => o.flag === name);
    if (!opt) throw new ConfigError(`unknown option ${name} (see --help)`);
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if ((opt.parse === bool || opt.parse === araDialect) && (i + 1 >= argv.length || argv[i + 1]!.startsWith('--'))) value = 'true';
    else if (i + 1 < argv.length) value = argv[++i]!;
    else throw new ConfigError(`${name} needs a value`);
    flags.set(name, value);
  }
  const config: Record<string, unknown> = {};
  for (const opt of OPTIONS) {
    const flag = flags.get(opt.flag);
    const raw = flag ?? env[opt.env];
    config[opt.key] = raw === undefined ? opt.default : opt.parse(raw, flag !== undefined ? opt.flag : opt.env);
  }
  const c = config as unknown as Config;
  if (c.pageSize > c.maxPageSize) {
    throw new ConfigError(`LOGBOOK_PAGE_SIZE (${c.pageSize}) must not exceed LOGBOOK_MAX_PAGE_SIZE (${c.maxPageSize})`);
  }
  const authProblem = authConfigProblem(c);
  if (authProblem) throw new ConfigError(authProblem);
  // cluster mode (LOGBOOK_CLUSTER, LOGBOOK_NODE, LOGBOOK_PARTITIONS, LOGBOOK_REPLICAS: src/config/cluster.ts)
  try {
    (c as { cluster: ClusterConfig | null }).cluster = clusterConfigFromEnv(env);
  } catch (err) {
    if (err instanceof ClusterConfigError) throw new ConfigError(err.message);
    throw err;
  }
  if (c.cluster !== null && c.webhooksFile !== null) {
    // the outbox lives in front.mdb, which a cluster node does not keep (docs/webhooks.md#cluster-mode)
    throw new ConfigError('LOGBOOK_WEBHOOKS_FILE: webhooks are not available in cluster mode yet; run them on a single-process logbook');
  }
  return Object.freeze(c);
}

/** A default as --help shows it: `off` for null, `none` for an empty list. */
function defaultText(value: unknown): string {
  if (value === null) return 'off';
  if (Array.isArray(value)) return value.length ? value.join(',') : 'none';
  return String(value);
}

export function helpText(version: string): string {
  const rows = OPTIONS.map((o) => `  ${o.flag.padEnd(26)} ${o.env.padEnd(30)} default: ${defaultText(o.default)}\n      ${o.help}`);
  return `logbook ${version} — records automation runs (ARA-compatible HTTP JSON API)\n\n`
    + `Usage: node dist/src/main.js [--option value]…   (each option can also be set by its environment variable)\n\n`
    + `  --help                     show this help\n  --version                  print the version\n\n${rows.join('\n')}\n`;
}

// ---- operations: what start-up logs about the configuration ----

/** Options whose value may be or lead to a credential: logged as set/unset only. */
const SENSITIVE = /TOKEN|PASSWORD|SECRET|USERS|CREDENTIAL|KEY/;

/** Every option's effective value, with sensitive ones masked, for the start-up log line. */
export function configSummary(config: Config): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const opt of OPTIONS) {
    const value = config[opt.key];
    const unset = value === null || value === '' || (Array.isArray(value) && value.length === 0);
    out[opt.key] = SENSITIVE.test(opt.env) ? (unset ? null : '[set]') : value;
  }
  return out;
}
