// docs/configuration.md's option table is generated from src/config.ts's OPTIONS
// (scripts/gen_config_doc.mjs): this fails while the page is stale, so a new or
// changed option cannot land without its documentation.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPTIONS } from '../../src/config.js';

const root = join(import.meta.dirname, '..', '..', '..');

test('docs/configuration.md lists every option of src/config.ts as generated (node scripts/gen_config_doc.mjs)', (t) => {
  const run = spawnSync(process.execPath, [join(root, 'scripts', 'gen_config_doc.mjs'), '--check'], { cwd: root, encoding: 'utf8' });
  t.is(run.status, 0, run.stderr);
  const page = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
  for (const option of OPTIONS) t.true(page.includes(`| \`${option.env}\` | \`${option.flag}\` |`), option.env);
});
