// Every relative link in README.md, docs/**/*.md and bench/README.md resolves to
// a file inside the repository (and a `#anchor` to a heading of that page), and
// so does every docs/… citation in src/ comments: a clone has nothing else.
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..', '..');
const check = (dir: string) => spawnSync(process.execPath, [join(dir, 'scripts', 'check_doc_links.mjs')], { cwd: dir, encoding: 'utf8' });

test('every relative link in the README, docs/ and bench/ resolves inside the repository', (t) => {
  const run = check(root);
  t.log(run.stdout.trim());
  t.is(run.status, 0, run.stderr);
  t.regex(run.stdout, /^[1-9]\d* relative links in \d+ pages/m, 'it found links to check');
});

test('the checker passes good links and fails a missing file, a missing heading, a bad citation and a SPEC citation in src/', (t) => {
  const tree = mkdtempSync(join(tmpdir(), 'logbook-doc-links-'));
  t.teardown(() => rmSync(tree, { recursive: true, force: true }));
  for (const dir of ['docs', 'bench', 'scripts', 'src']) mkdirSync(join(tree, dir));
  cpSync(join(root, 'scripts', 'check_doc_links.mjs'), join(tree, 'scripts', 'check_doc_links.mjs'));
  writeFileSync(join(tree, 'README.md'), '# x\n\n[api](docs/api.md#the-ara-dialect) [bench](bench/README.md) [src](src/) [web](https://example.com/nowhere)\n\n```sh\n[in code](nowhere.md)\n```\n');
  writeFileSync(join(tree, 'docs', 'api.md'), '# API\n\n## The ARA dialect\n\n## Lists\n\n[up](../README.md#x) [here](#lists)\n');
  writeFileSync(join(tree, 'bench', 'README.md'), '# Benchmarks\n\n[api](../docs/api.md)\n');
  writeFileSync(join(tree, 'src', 'cites.ts'), '// see docs/api.md#lists\n');
  const clean = check(tree);
  t.is(clean.status, 0, clean.stderr);
  t.regex(clean.stdout, /^7 relative links/m, 'six in pages (not the external one, not the one in a code block), one in src/');
  appendFileSync(join(tree, 'docs', 'api.md'), '\n[gone](gone.md) [no heading](#no-such-heading)\n');
  appendFileSync(join(tree, 'src', 'cites.ts'), '// and docs/api.md#nowhere\n// as SPEC §13 says\n');
  const run = check(tree);
  t.is(run.status, 1);
  t.regex(run.stderr, /docs\/api\.md:\d+: gone\.md \(no such file\)/);
  t.regex(run.stderr, /#no-such-heading \(no heading/);
  t.regex(run.stderr, /src\/cites\.ts:2: docs\/api\.md#nowhere/);
  t.regex(run.stderr, /src\/cites\.ts:3: cites SPEC\/DESIGN or \.\.\/shared/);
});
