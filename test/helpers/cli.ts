// Where the compiled CLI is (dist/test/helpers → dist/src/cli.js).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI_JS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli.js');
