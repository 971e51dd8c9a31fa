// Minimal structured logger: one JSON object per line on stdout, filtered by
// level. (The operations issue replaces this with pino behind the same calls.)
import type { LogLevel } from './config.js';

const RANK: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: 100 };
let threshold = RANK.info;

export function setLogLevel(level: LogLevel): void { threshold = RANK[level]; }

function write(level: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>): void {
  if (RANK[level] < threshold) return;
  const line = JSON.stringify({ level, time: new Date().toISOString(), msg, ...fields });
  (level === 'error' || level === 'fatal' ? process.stderr : process.stdout).write(line + '\n');
}

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
};
