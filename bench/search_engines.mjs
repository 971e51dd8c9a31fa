// Engine evaluation for the search index (docs/search.md), run once to choose:
// `npm install --no-save minisearch@7.2.0 flexsearch@0.8.212 && node bench/search_engines.mjs [docs=200000]`.
// Result-like documents of 20-60 words from an Ansible-ish vocabulary (some with numbers),
// a rare word in 1 of 20,000: index rate, size, p99 of a first page (newest 50) for a rare and a common term.
// FTS5 keeps its index on disk (bounded memory, survives restarts); the two libraries keep it in the heap.

import Database from 'better-sqlite3';
import MiniSearch from 'minisearch';
import FlexSearch from 'flexsearch';
import { rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const tmp = join(tmpdir(), `search-engines-${process.pid}.sqlite`);
const N = Number(process.argv[2] ?? 200000);
const words = 'install package service restart failed denied permission timeout connection refused disk full memory kernel nginx apache postgres mysql redis docker container image pull push network interface address route firewall rule port open closed user group file directory mode owner changed ok skipped unreachable'.split(' ');
let seed = 1; const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const docs = [];
for (let i = 0; i < N; i++) {
  let t = ''; const n = 20 + Math.floor(rnd() * 40);
  for (let k = 0; k < n; k++) t += words[Math.floor(rnd() * words.length)] + (rnd() < 0.1 ? `-${Math.floor(rnd() * 100000)}` : '') + ' ';
  if (i % 20000 === 7) t += ' xyzzyplugh ';
  docs.push({ id: i + 1, body: t, host: `web${i % 500}` });
}
const bytes = docs.reduce((a, d) => a + d.body.length, 0);
console.log(`${N} docs, ${(bytes / 1e6).toFixed(1)} MB text`);
const time = (f) => { const t0 = performance.now(); const r = f(); return [performance.now() - t0, r]; };
const p99 = (f, n = 50) => { const ts = []; for (let i = 0; i < n; i++) ts.push(time(f)[0]); ts.sort((a, b) => a - b); return ts[Math.floor(n * 0.99)].toFixed(1); };
// FTS5
rmSync(tmp, { force: true });
const db = new Database(tmp); db.pragma('journal_mode = WAL'); db.pragma('synchronous = NORMAL');
db.exec('CREATE VIRTUAL TABLE t USING fts5(body, host, tokenize="unicode61 remove_diacritics 2")');
const ins = db.prepare('INSERT INTO t(rowid, body, host) VALUES (?,?,?)');
let [ms] = time(() => { for (let i = 0; i < N; i += 1000) db.transaction(() => { for (let k = i; k < Math.min(N, i + 1000); k++) ins.run(docs[k].id, docs[k].body, docs[k].host); })(); });
db.pragma('wal_checkpoint(TRUNCATE)');
console.log(`FTS5: ${(N / ms * 1000).toFixed(0)} docs/s, file ${(statSync(tmp).size / 1e6).toFixed(1)} MB`);
const q = db.prepare('SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid DESC LIMIT 50');
console.log(`  rare p99 ${p99(() => q.all('"xyzzyplugh"'))} ms, common p99 ${p99(() => q.all('"failed"'))} ms, phrase ${p99(() => q.all('"permission denied"'))} ms, two common ${p99(() => q.all('"failed" AND "disk"'))} ms`);
// MiniSearch
let h0 = process.memoryUsage().heapUsed;
const mini = new MiniSearch({ fields: ['body', 'host'], storeFields: [] });
[ms] = time(() => mini.addAll(docs));
console.log(`MiniSearch: ${(N / ms * 1000).toFixed(0)} docs/s, heap +${((process.memoryUsage().heapUsed - h0) / 1e6).toFixed(0)} MB (in memory only)`);
console.log(`  rare p99 ${p99(() => mini.search('xyzzyplugh'))} ms, common p99 ${p99(() => mini.search('failed').slice(0, 50), 10)} ms`);
// FlexSearch
h0 = process.memoryUsage().heapUsed;
const flex = new FlexSearch.Index({ tokenize: 'strict' });
[ms] = time(() => { for (const d of docs) flex.add(d.id, d.body); });
console.log(`FlexSearch: ${(N / ms * 1000).toFixed(0)} docs/s, heap +${((process.memoryUsage().heapUsed - h0) / 1e6).toFixed(0)} MB (in memory only)`);
console.log(`  rare p99 ${p99(() => flex.search('xyzzyplugh', 50))} ms, common p99 ${p99(() => flex.search('failed', 50))} ms`);
