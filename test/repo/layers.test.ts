// src/ imports in one direction (docs/architecture.md#source-layout): dependency-cruiser
// checks the rules of .dependency-cruiser.cjs over src/ (no import cycle; each folder
// imports only from the layers below it), so a new cycle or a backward import fails
// `npm test` as it fails `npm run lint:deps`.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..', '..');
const depcruise = join(root, 'node_modules', '.bin', 'depcruise');
const cruise = (dir: string) => spawnSync(depcruise, ['src', '--config', '.dependency-cruiser.cjs'], { cwd: dir, encoding: 'utf8' });

test('src/ keeps its layers: no import cycle, no import from a layer above', (t) => {
  const run = cruise(root);
  t.is(run.error, undefined, `${depcruise} did not start (\`npm ci\` installs dependency-cruiser): ${run.error?.message}`);
  t.is(run.status, 0, `dependency-cruiser found violations:\n${run.stdout}${run.stderr}`);
  t.regex(run.stdout, /no dependency violations found \([1-9]\d* modules/, 'it cruised the modules of src/');
});

test('the check fails on an import from a layer above and on an import cycle', (t) => {
  const tree = mkdtempSync(join(tmpdir(), 'logbook-layers-'));
  t.teardown(() => rmSync(tree, { recursive: true, force: true }));
  cpSync(join(root, 'src'), join(tree, 'src'), { recursive: true, filter: (path) => !path.startsWith(join(root, 'src', 'ui')) });
  for (const file of ['tsconfig.json', '.dependency-cruiser.cjs']) cpSync(join(root, file), join(tree, file));
  const copy = cruise(tree);
  t.is(copy.status, 0, `the copy of src/ passes as src/ does:\n${copy.stdout}${copy.stderr}`);

  // api/ is below shard/: it may not import from it
  appendFileSync(join(tree, 'src', 'api', 'order.ts'), "\nexport type { Shards } from '../shard/shards.js';\n");
  // two modules of one folder that import each other
  writeFileSync(join(tree, 'src', 'shard', 'loop_a.ts'), "import { b } from './loop_b.js';\nexport const a = (): number => b() + 1;\n");
  writeFileSync(join(tree, 'src', 'shard', 'loop_b.ts'), "import { a } from './loop_a.js';\nexport const b = (): number => a() - 1;\n");
  const broken = cruise(tree);
  t.not(broken.status, 0, `${broken.stdout}${broken.stderr}`);
  t.regex(broken.stdout, /error layer-api: src\/api\/order\.ts → src\/shard\/shards\.ts/);
  t.regex(broken.stdout, /error no-circular: src\/shard\/loop_a\.ts → /);
});
