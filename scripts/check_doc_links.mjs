#!/usr/bin/env node
// Checks that every relative link in README.md, docs/**/*.md and bench/{README,HISTORY}.md
// resolves inside the repository: the file (or folder) exists, and a `#anchor`
// names a heading of the target page (GitHub's slugs) or an explicit
// `<a id="…">`. Also checks the `docs/<page>.md#anchor` citations in src/
// comments, and that no source cites ../shared, SPEC §N or DESIGN.md. External links (http:, https:, mailto:) are not fetched.
//   node scripts/check_doc_links.mjs      prints each broken link, exit 1 if any
// test/repo/docs_links.test.ts runs it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function walk(dir, keep) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') ? [] : walk(p, keep);
    return keep(p) ? [p] : [];
  });
}

/** GitHub's heading anchor: lower case, punctuation but `-` and `_` dropped, spaces to hyphens, repeats numbered. */
export function slug(heading) {
  return heading.trim().toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[`*~]/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Markdown with fenced code blocks blanked out (links and headings there do not count). */
function prose(text) {
  let fenced = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) { fenced = !fenced; return ''; }
    return fenced ? '' : line;
  }).join('\n');
}

const anchorCache = new Map();
export function anchorsOf(file) {
  if (!anchorCache.has(file)) {
    const text = prose(readFileSync(file, 'utf8'));
    const seen = new Map();
    const anchors = new Set();
    for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
      const base = slug(m[1]);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
    anchorCache.set(file, anchors);
  }
  return anchorCache.get(file);
}

/** One problem per broken link: `where: target (why)`; `from` is the file relative links start at. */
function checkTarget(from, where, target, problems) {
  const [pathPart, anchor] = target.split('#', 2);
  const file = pathPart === '' ? from : resolve(dirname(from), decodeURIComponent(pathPart));
  if (!(file + sep).startsWith(root + sep) && file !== root) { problems.push(`${where}: ${target} (outside the repository)`); return; }
  if (!existsSync(file)) { problems.push(`${where}: ${target} (no such file)`); return; }
  if (anchor && statSync(file).isFile() && file.endsWith('.md') && !anchorsOf(file).has(anchor)) {
    problems.push(`${where}: ${target} (no heading #${anchor} in ${relative(root, file)})`);
  }
}

export function checkLinks() {
  const pages = [join(root, 'README.md'), join(root, 'bench', 'README.md'), join(root, 'bench', 'HISTORY.md'), ...walk(join(root, 'docs'), (p) => p.endsWith('.md'))]
    .filter((p) => existsSync(p));
  const problems = [];
  let links = 0;
  for (const page of pages) {
    const lines = prose(readFileSync(page, 'utf8')).split('\n');
    lines.forEach((text, i) => {
      // inline links and images: [text](target "title"), ignoring `code spans`
      const bare = text.replace(/`[^`]*`/g, '');
      for (const m of bare.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = m[1];
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
        links++;
        checkTarget(page, `${relative(root, page)}:${i + 1}`, target, problems);
      }
    });
  }
  // docs/… citations in source comments (they replaced ../shared SPEC/DESIGN citations)
  const sources = walk(join(root, 'src'), (p) => /\.(ts|tsx|py|mjs|sh|c)$/.test(p));
  for (const src of sources) {
    readFileSync(src, 'utf8').split('\n').forEach((text, i) => {
      if (/SPEC §|\.\.\/shared\/|\bDESIGN\.md\b/.test(text)) {
        problems.push(`${relative(root, src)}:${i + 1}: cites SPEC/DESIGN or ../shared, which a clone does not have: cite docs/… instead`);
      }
      for (const m of text.matchAll(/\bdocs\/([\w.-]+\.md)(#[\w-]+)?/g)) {
        links++;
        checkTarget(join(root, 'README.md'), `${relative(root, src)}:${i + 1}`, `docs/${m[1]}${m[2] ?? ''}`, problems);
      }
    });
  }
  return { pages: pages.length, links, problems };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { pages, links, problems } = checkLinks();
  for (const p of problems) console.error(p);
  console.log(`${links} relative links in ${pages} pages and src/ comments: ${problems.length} broken`);
  process.exit(problems.length ? 1 : 0);
}
