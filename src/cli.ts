#!/usr/bin/env node
// `logbook <subcommand> [options]`: the one command operators run (`npx logbook …`,
// the package's `bin`). Each subcommand is one line of COMMANDS: its name, a
// one-line summary, and a lazy import of a module exporting
// `main(argv: string[]): Promise<number>` that returns the exit code. Lazy, so
// `logbook hash-password` does not load the server, and a new subcommand is
// one more line here.
//
// Exit codes (every subcommand): 0 ok, 1 failure, 2 usage (bad arguments or
// configuration).
import { VERSION } from './version.js';

export interface Subcommand {
  name: string;
  summary: string;
  load: () => Promise<{ main: (argv: string[]) => Promise<number> }>;
}

export const COMMANDS: readonly Subcommand[] = [
  { name: 'serve', summary: 'run the logbook server (what `npm start` runs; `serve --help` lists its options)', load: () => import('./commands/serve.js') },
  { name: 'hash-password', summary: 'hash a password or token secret read on stdin, for a users/tokens file line', load: () => import('./tools/hash_password.js') },
  { name: 'ansible-env', summary: 'print the exports that make ansible-playbook record here with logbook\'s callback: eval "$(logbook ansible-env URL)"', load: () => import('./tools/ansible_env.js') },
  { name: 'import-ara', summary: 'copy every playbook from a running ARA server into logbook, resumably', load: () => import('./tools/import_ara.js') },
  { name: 'backup', summary: 'write a consistent copy of a (running) data directory: backup <data dir> <target dir>', load: () => import('./tools/backup.js') },
  { name: 'reindex', summary: 'drop the full-text search index of a stopped data directory; the next start rebuilds it', load: () => import('./tools/reindex.js') },
  { name: 'check', summary: 'verify a stopped data directory (journal, snapshots, blobs, counters, references)', load: () => import('./tools/check.js') },
];

export const EXIT_CODES = 'Exit codes: 0 ok, 1 failure (e.g. a server unreachable), 2 usage (bad arguments or configuration).';

export function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    `logbook ${VERSION} — records Ansible runs and serves them over ARA's HTTP API`,
    '',
    'Usage: logbook <command> [options]',
    '       logbook <command> --help',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    EXIT_CODES,
    '',
  ].join('\n');
}

export async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) { process.stderr.write(usage()); return 2; }
  if (name === '--help' || name === '-h' || name === 'help') { process.stdout.write(usage()); return 0; }
  if (name === '--version') { process.stdout.write(`${VERSION}\n`); return 0; }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`logbook: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  const { main } = await command.load();
  return main(rest);
}

// process.exit: an HTTP keep-alive socket or a timer left behind must not hold the exit
// (stdout/stderr to files and pipes are synchronous in Node, nothing is cut off).
process.exit(await run(process.argv.slice(2)));
