// Structured logs: one JSON object per line, written by pino. Lines up to warn
// go to stdout, error and fatal to stderr. The call shape stays `log.info(msg,
// fields)`; the message is written as the first key after level and time
// (`{"level":"info","time":"…","msg":"listening","port":8000,…}`), which tools
// and tests that wait for `"msg":"listening"` rely on.
//
// Secrets never reach a log line: nothing logs headers or bodies, the config
// summary masks credential options (configSummary in config.ts), and the keys
// in REDACT are censored wherever a caller passes them by mistake.
import { isMainThread } from 'node:worker_threads';
import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

type Fields = Record<string, unknown>;

/** Keys censored in any log line (top level or one level down). */
const REDACT = [
  'authorization', 'password', 'token', 'secret', 'credentials', 'cookie',
  '*.authorization', '*.password', '*.token', '*.secret', '*.credentials', '*.cookie',
];

function build(level: LogLevel): Logger {
  // The main thread writes stdout asynchronously (pino flushes it on exit);
  // shard workers write synchronously, since a worker that dies takes its
  // buffer with it. Errors are rare and always synchronous.
  const streams = pino.multistream([
    { level: 'trace', stream: pino.destination({ dest: 1, minLength: 0, sync: !isMainThread }) },
    { level: 'error', stream: pino.destination({ dest: 2, sync: true }) },
  ], { dedupe: true });
  return pino({
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACT, censor: '[redacted]' },
  }, streams);
}

const root: Logger = build('info');
let logger: Logger = root;
/** debug lines are per request: callers test this flag before building their fields */
export let debugEnabled = false;

/** Set the level (LOGBOOK_LOG_LEVEL); `bindings` go into every line (e.g. a shard number). */
export function setLogLevel(level: LogLevel, bindings: Fields | null = null): void {
  root.level = level;
  logger = bindings ? root.child(bindings) : root;
  debugEnabled = logger.isLevelEnabled('debug');
}

/** Is a level on? */
export function logEnabled(level: Exclude<LogLevel, 'silent'>): boolean {
  return logger.isLevelEnabled(level);
}

function write(level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal', msg: string, fields?: Fields): void {
  if (!logger.isLevelEnabled(level)) return;
  // msg as the first own key puts it before the fields in the line
  logger[level]({ msg, ...fields });
}

/** Error → a string with its stack (pino's serializer would drop non-Error throwables). */
export function errText(err: unknown): string {
  return String((err as Error)?.stack ?? err);
}

export const log = {
  trace: (msg: string, fields?: Fields) => write('trace', msg, fields),
  debug: (msg: string, fields?: Fields) => write('debug', msg, fields),
  info: (msg: string, fields?: Fields) => write('info', msg, fields),
  warn: (msg: string, fields?: Fields) => write('warn', msg, fields),
  error: (msg: string, fields?: Fields) => write('error', msg, fields),
  fatal: (msg: string, fields?: Fields) => write('fatal', msg, fields),
  /** Write out what is buffered (before process.exit). */
  flush: (): Promise<void> => new Promise((resolve) => logger.flush(() => resolve())),
};
