// Which native lmdb module this process loads, and whether it is the one
// scripts/build_lmdb.mjs built (lmdb's sources with a fix: its prebuilt 3.5.6
// binary overruns a heap buffer when a page write fails, and glibc aborts the
// whole process a few failed commits later: a full disk or a file-size limit
// would take down every shard and the front, instead of answering 503).
// Asked of lmdb's own loader, so it names the file `import 'lmdb'` really
// loaded (PREBUILDS_ONLY=1, for one, makes the loader skip the built one).
// Also which of the script's changes lmdb-js's write.js carries: its other fix
// (committed writes let go of later ones, so that they do not fill V8's old
// generation), and compression in lmdb's write thread (no thread-pool task per
// compressed value).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';

/** written by scripts/build_lmdb.mjs beside the module it built and checked */
const MARKER = 'logbook-patch';

export interface LmdbBinary {
  /** the native module's path (null: the loader could not be asked) */
  path: string | null;
  /** the fix that build carries (null: the prebuilt binary, without it) */
  patch: string | null;
  /** the fix lmdb-js's JavaScript carries (scripts/build_lmdb.mjs: committed writes let go of later ones; null: unpatched) */
  jsPatch: string | null;
  /** its change of where values are compressed (scripts/build_lmdb.mjs: in the write thread; null: unchanged) */
  jsCompress: string | null;
}

const JS_PATCH = /logbook: (resolution-chain-\d+)/;
const JS_COMPRESS = /logbook: (compress-in-writer-\d+)/;

export function lmdbBinary(): LmdbBinary {
  try {
    const require = createRequire(import.meta.url);
    const lmdbDir = dirname(dirname(require.resolve('lmdb'))); // …/lmdb/dist/index.cjs
    const loader = createRequire(join(lmdbDir, 'package.json'))('node-gyp-build-optional-packages') as { resolve(dir: string): string };
    const path = loader.resolve(lmdbDir);
    const buildDir = join(lmdbDir, 'build');
    const marker = join(buildDir, MARKER);
    const patch = path.startsWith(buildDir + sep) && existsSync(marker) ? readFileSync(marker, 'utf8').trim() : null;
    const writeJs = readFileSync(join(lmdbDir, 'write.js'), 'utf8');
    const jsPatch = JS_PATCH.exec(writeJs)?.[1] ?? null;
    const jsCompress = JS_COMPRESS.exec(writeJs)?.[1] ?? null;
    return { path, patch, jsPatch, jsCompress };
  } catch {
    return { path: null, patch: null, jsPatch: null, jsCompress: null };
  }
}
