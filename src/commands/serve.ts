// `logbook serve [options]`: exactly what `node dist/src/main.js [options]` does
// (src/main.ts: configuration → shards → front). main.ts is a script that runs
// at import and reads process.argv, so this hands it the subcommand's argv and
// imports it. It owns the process from there: it exits itself on --version
// (0), on a bad configuration (2), on a failed start (1) and after a
// SIGTERM/SIGINT shutdown (0), so the promise returned here never settles.
// Only --help is answered here, to name the command as the operator typed it.
import { helpText } from '../config.js';
import { VERSION } from '../version.js';

export async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(helpText(VERSION).replace(/^Usage: node dist\/src\/main\.js/m, 'Usage: logbook serve')
      + '\nExit codes: 0 stopped cleanly (SIGTERM/SIGINT), 1 failure (start-up failed), 2 usage (a bad option or variable, a data directory it must not open).\n');
    return 0;
  }
  process.argv.splice(2, process.argv.length - 2, ...argv);
  await import('../main.js');
  return new Promise<number>(() => { /* main.js exits the process */ });
}
