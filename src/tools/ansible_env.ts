// `logbook ansible-env [URL]`: prints the `export` lines that make ansible-playbook record into a
// logbook server with logbook's own callback (as ARA's `python3 -m ara.setup.env` does):
//
//   eval "$(logbook ansible-env http://127.0.0.1:8000)"                     # installed (npm install -g, npm link)
//   eval "$(node /path/to/logbook/dist/src/cli.js ansible-env http://…)"     # from a checkout, any directory
//
// It works from any directory: the plugin paths are found from this file's own location, not
// from the working directory (a playbook's directory usually has no package.json, and there
// `npm run --silent ansible-env` fails with nothing printed: npm's own message is what --silent
// hides). Whatever goes wrong goes to stderr with a non-zero exit, so `eval` never silently
// leaves Ansible without the callback. A server that does not answer is a warning, not a
// failure: the callback spools what it records and a later run ships it.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const USAGE = `Usage: logbook ansible-env [<http(s)://logbook server URL>]   (also: npm run --silent ansible-env -- URL)

Prints the exports that make ansible-playbook record into that server (default: $LOGBOOK_API_SERVER,
else http://127.0.0.1:8000) with logbook's callback and actions, from any directory:
  eval "$(logbook ansible-env http://127.0.0.1:8000)"
A server that does not answer is a warning on stderr (runs are spooled until it does).

Exit codes: 0 ok, 1 failure (the callback is missing), 2 usage (bad arguments or URL).
`;
const PROBE_TIMEOUT_MS = 3000;

/** The package root: this file is <root>/dist/src/tools/ansible_env.js. */
function packageRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
}

/** A value quoted for sh: '…' with each ' written as '\''. */
const shellQuote = (value: string): string => `'${value.replace(/'/g, "'\\''")}'`;

/** Why `url` is not a usable server URL (null: it is). */
function badUrl(url: string): string | null {
  let parsed: URL;
  try { parsed = new URL(url); } catch { return `${JSON.stringify(url)} is not a URL`; }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `${JSON.stringify(url)} is not an http(s) URL`;
  return null;
}

/** Does a logbook (or ARA) server answer at `url`? null when it does, else why not. */
async function probe(url: string): Promise<string | null> {
  try {
    const r = await fetch(`${url.replace(/\/+$/, '')}/api/`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    // 401/403: a server that wants credentials (the callback's LOGBOOK_API_* settings give them)
    if (r.ok || r.status === 401 || r.status === 403) return null;
    return `it answered ${r.status} to GET /api/`;
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') return `no answer within ${PROBE_TIMEOUT_MS / 1000} s`;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? (err as Error).message;
  }
}

export async function main(argv: string[]): Promise<number> {
  if (argv[0] === '--help' || argv[0] === '-h') { process.stdout.write(USAGE); return 0; }
  if (argv.length > 1) { process.stderr.write(`logbook ansible-env: one URL at most\n${USAGE}`); return 2; }
  const url = argv[0] ?? process.env.LOGBOOK_API_SERVER ?? 'http://127.0.0.1:8000';
  const bad = badUrl(url);
  if (bad !== null) { process.stderr.write(`logbook ansible-env: ${bad}\n${USAGE}`); return 2; }
  const root = packageRoot();
  const callback = join(root, 'src', 'ansible', 'callback');
  const action = join(root, 'src', 'ansible', 'action');
  if (!existsSync(join(callback, 'logbook.py'))) {
    process.stderr.write(`logbook ansible-env: the callback is missing (${join(callback, 'logbook.py')}): a damaged install?\n`);
    return 1;
  }
  const unreachable = await probe(url);
  if (unreachable !== null) {
    process.stderr.write(`logbook ansible-env: warning: ${url} does not answer as a logbook server (${unreachable}); `
      + 'runs are spooled and shipped by a later run once it does\n');
  }
  process.stdout.write(`export ANSIBLE_CALLBACK_PLUGINS=${shellQuote(callback)}\n`
    + `export ANSIBLE_ACTION_PLUGINS=${shellQuote(action)}\n`
    + `export LOGBOOK_API_SERVER=${shellQuote(url)}\n`);
  return 0;
}
