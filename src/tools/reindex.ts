// `logbook reindex <data dir>`: drop the search index of a stopped data
// directory, so that the next start rebuilds it from the shards' records
// (docs/search.md). The index is derived data: nothing recorded is touched.
// Refused while a logbook runs on the directory (its lock, logbook.pid): the
// running server owns the file.
import { readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { takeStoppedDataDir } from './stopped_data_dir.js';
import { SEARCH_FILE } from '../search/search_service.js';

const USAGE = 'Usage: logbook reindex <data dir>\n\n'
  + 'Drops the full-text search index (search.sqlite) of a stopped data directory; the next start rebuilds it\n'
  + 'from the recorded runs, a shard at a time (searches find what is indexed so far meanwhile).\n\n'
  + 'Exit codes: 0 dropped (or there was none), 2 usage, not a data directory, or a logbook is running on it.\n';

export async function main(argv: string[]): Promise<number> {
  const taken = takeStoppedDataDir('reindex', argv, USAGE);
  if ('exit' in taken) return taken.exit;
  const { dataDir, unlock } = taken;
  try {
    const files = readdirSync(dataDir).filter((n) => n === SEARCH_FILE || n.startsWith(`${SEARCH_FILE}-`));
    for (const name of files) rmSync(join(dataDir, name), { force: true });
    process.stdout.write(files.length
      ? `dropped the search index (${files.join(', ')}); the next start rebuilds it\n`
      : 'there was no search index; the next start builds it\n');
    return 0;
  } finally {
    unlock();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
