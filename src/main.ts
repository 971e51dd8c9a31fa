// Entry point: configuration → shards → front. Exits 2 on a bad configuration,
// with a message naming the variable; exits 0 on SIGTERM/SIGINT after closing.
// uws_env first: it sets uWebSockets.js's environment before anything loads uWS.
import { HEADER_BYTES_VARIABLE, requestHeadLimit } from './http/uws_env.js';
import { LIMITS } from './limits.js';
import { ConfigError, configSummary, helpText, loadConfig } from './config.js';
import { errText, log, setLogLevel } from './log.js';
import { startServer } from './server.js';
import { StoreError } from './store/front_store.js';
import { lmdbBinary } from './store/lmdb_build.js';
import { isStorageNoise } from './store/open.js';
import { PartitionCountMismatchError } from './cluster/partition_log.js';
import { NatsAccessError } from './cluster/nats_options.js';
import { VERSION } from './version.js';
import { setV8Flags } from './v8_flags.js';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(helpText(VERSION)); process.exit(0); }
if (argv.includes('--version')) { process.stdout.write(`${VERSION}\n`); process.exit(0); }

let config;
try {
  config = loadConfig(process.env, argv);
} catch (err) {
  if (err instanceof ConfigError) { process.stderr.write(`logbook: ${err.message}\n`); process.exit(2); }
  throw err;
}
const maxHeaderBytes = requestHeadLimit();
if (maxHeaderBytes === null) {
  process.stderr.write(`logbook: ${HEADER_BYTES_VARIABLE} must be a byte count from ${LIMITS.headerBytesMin} to ${LIMITS.headerBytesMax}, got "${process.env[HEADER_BYTES_VARIABLE]}"\n`);
  process.exit(2);
}
setLogLevel(config.logLevel);
// a bug outside any request handler: log it as one JSON line (pino writes errors synchronously), then exit
const die = (what: string) => (err: unknown) => { log.fatal(what, { err: errText(err) }); process.exit(1); };
process.on('uncaughtException', die('uncaught exception'));
// lmdb-js also rejects promises nobody holds when a commit fails (the front's
// own store, front.mdb: a label write on a full disk); the write's own promise
// is answered 503. Those must not take the process down (as in the shards).
const dieOfRejection = die('unhandled promise rejection');
process.on('unhandledRejection', (err) => { if (!isStorageNoise(err)) dieOfRejection(err); });
const lmdb = lmdbBinary();
log.info('starting', { version: VERSION, node: process.version, lmdb: lmdb.patch ?? 'prebuilt', lmdbJs: lmdb.jsPatch ?? 'unpatched', lmdbCompress: lmdb.jsCompress ?? 'thread pool', config: configSummary(config) });
if (lmdb.patch === null) {
  log.warn('lmdb: the prebuilt native module is loaded; it aborts the process when a write to the data directory fails (disk full, a file-size limit). Build the fixed one: node scripts/build_lmdb.mjs (README "Storage engine")', { module: lmdb.path });
}
if (lmdb.jsPatch === null) {
  log.warn('lmdb: its JavaScript lacks the resolution-chain fix (a committed write can keep later ones alive through young-generation collections: more GC work). Apply it: node scripts/build_lmdb.mjs (README "Storage engine")');
}
if (lmdb.jsCompress === null) {
  log.warn('lmdb: its JavaScript hands every compressed value to the thread pool (10–40 µs of the writing thread per blob or chunk of contents). Change it: node scripts/build_lmdb.mjs (README "Storage engine")');
}

const started = performance.now();
let server;
try {
  server = await startServer(config);
  setV8Flags(); // the shards have recovered: from here on
} catch (err) {
  if (err instanceof StoreError || err instanceof PartitionCountMismatchError || err instanceof NatsAccessError) { process.stderr.write(`logbook: ${err.message}\n`); process.exit(2); }
  log.fatal('start-up failed', { err: errText(err) });
  await log.flush();
  process.exit(1);
}
log.info('listening', {
  host: config.host, port: server.port, shards: config.shards, dataDir: config.dataDir,
  araCompat: config.araCompat, maxHeaderBytes, startupMs: Math.round(performance.now() - started),
});

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info('stopping', { signal, timeoutSeconds: config.shutdownTimeout });
  // a bound on the whole shutdown, even if closing the store hangs. Not unref'd:
  // it also keeps the process alive until shutdown ends. A close that waits on a
  // promise nobody will settle (lmdb-js's flush of a failed transaction, raced
  // against unref'd timers) would otherwise let the loop run empty, and Node
  // exit 0 in the middle of it: no "stopped", stores not closed, the pid file left.
  setTimeout(() => {
    log.error('shutdown took too long; exiting', { signal });
    void log.flush().finally(() => process.exit(1));
  }, (config.shutdownTimeout + 15) * 1000);
  await server!.close();
  log.info('stopped', { signal });
  await log.flush();
  process.exit(0);
};
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
