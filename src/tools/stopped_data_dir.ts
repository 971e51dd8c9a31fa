// The start every tool that works on a stopped data directory shares (check,
// reindex): `--help`, one argument, a directory that holds front.mdb, and the
// directory's lock, so that no logbook starts on it meanwhile (and one that
// runs there is refused).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { lockDataDir, StoreError } from '../store/front_store.js';

/** The locked directory, or the exit code to return (usage printed: 0 for --help, 2 otherwise). */
export function takeStoppedDataDir(tool: string, argv: string[], usage: string, lockedHint = ''): { dataDir: string; unlock: () => void } | { exit: number } {
  if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(usage); return { exit: 0 }; }
  if (argv.length !== 1 || argv[0]!.startsWith('--')) { process.stderr.write(usage); return { exit: 2 }; }
  const dataDir = resolve(argv[0]!);
  if (!existsSync(join(dataDir, 'front.mdb'))) {
    process.stderr.write(`${tool}: ${dataDir} is not a logbook data directory (no front.mdb)\n`);
    return { exit: 2 };
  }
  try {
    return { dataDir, unlock: lockDataDir(dataDir) };
  } catch (err) {
    if (err instanceof StoreError) { process.stderr.write(`${tool}: ${err.message}${lockedHint}\n`); return { exit: 2 }; }
    throw err;
  }
}
