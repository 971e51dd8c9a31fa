// Where the compiled CLI is (dist/test/helpers → dist/src/cli.js), and running its tools as child processes.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI_JS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli.js');

/** `logbook check <dir>` (src/tools/check.ts) as a child process: its exit code and everything it printed. */
export function runCheck(dir: string): Promise<{ code: number | null; output: string }> {
  return runCli(['check', dir]);
}

/** `logbook <args…>` as a child process: its exit code and its output (stdout and stderr together). */
export function runCli(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [CLI_JS, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { output += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { output += d; });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}
