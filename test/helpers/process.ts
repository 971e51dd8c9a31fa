// Runs logbook to completion (for start-ups that must be refused): exit code and
// everything it printed. A process still running after `timeoutMs` is killed and
// reported with code null, so a test can say "it should have exited".
import { spawn } from 'node:child_process';
import { MAIN_JS } from './server.js';

export interface Exit { code: number | null; signal: NodeJS.Signals | null; output: string; timedOut: boolean }

export function runUntilExit(options: { env?: Record<string, string>; dataDir: string; timeoutMs?: number; wrap?: string[] }): Promise<Exit> {
  const env: Record<string, string> = {
    ...process.env as Record<string, string>,
    LOGBOOK_HOST: '127.0.0.1',
    LOGBOOK_PORT: '0',
    LOGBOOK_DATA_DIR: options.dataDir,
    LOGBOOK_LOG_LEVEL: 'info',
    ...options.env,
  };
  const [command, ...args] = [...(options.wrap ?? []), process.execPath, MAIN_JS];
  const child = spawn(command!, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { output += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { output += d; });
  return new Promise((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, options.timeoutMs ?? 15_000);
    // 'close' comes after the exit and after both pipes are drained
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: timedOut ? null : code, signal, output, timedOut });
    });
  });
}
