// The variables `logbook ansible-env URL` prints (what `npm run ansible-env -- URL` runs): logbook's
// callback and actions instead of ARA's, recording into `url`.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export function ansibleEnv(url: string): Record<string, string> {
  const out = execFileSync(process.execPath, [join(process.cwd(), 'dist', 'src', 'cli.js'), 'ansible-env', url], { encoding: 'utf8' });
  const env: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const m = /^export ([A-Z_]+)='(.*)'$/.exec(line);
    if (m) env[m[1]!] = m[2]!.replace(/'\\''/g, "'");
  }
  return env;
}
