// The package version, read once from package.json (dist/src/version.js → ../../package.json).
import { readFileSync } from 'node:fs';

export const VERSION: string = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;
