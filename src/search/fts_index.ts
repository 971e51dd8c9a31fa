// The search index (docs/search.md): SQLite FTS5 through better-sqlite3, in one
// file of the data directory (search.sqlite), written only by the search worker.
// It is derived data: every row can be rebuilt from the shards, so it is
// written with synchronous=NORMAL in WAL mode (a crash may lose the last
// batches, never corrupt the file), and each shard's position (the journal
// number indexed up to) is stored in the same transaction as the rows, so a
// restart knows exactly what it holds.
//
// Rows: `docs` holds what a hit needs (type, id, playbook, created, where each
// field's text starts in the body); `text` is the FTS5 table, one row per
// record with the same rowid. A record keeps the rowid it was first indexed
// with, so rowid order is the order records were first written, and "newest
// first" is FTS5's descending rowid scan (no sort of all matches).
import Database from 'better-sqlite3';
import type { SearchDoc } from '../shard/search_feed.js';
import { textOf, type FieldSpan } from './extract.js';
import { COLUMNS } from './columns.js';

const FORMAT = 1;

export interface SearchFilter {
  match: string;
  type: number | null;
  playbook: number | null;
  after: number | null;
  before: number | null;
  /** keyset: only rows below this rowid (newest first) */
  below: number | null;
  limit: number;
  relevance: boolean;
}

export interface RawHit {
  rowid: number; type: number; id: number; playbook: number;
  body: string; spans: FieldSpan[]; columns: Record<string, string>;
}

export class FtsIndex {
  private readonly db: Database.Database;
  private readonly stmts;

  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    // FTS5 merges its segments as it goes: with a 64 MB page cache and merges of 8 segments at a
    // time (the default is 4) it takes result-like documents 15-50 % faster on this machine
    // (docs/search.md); queries read a few more segments, still far inside their targets
    this.db.pragma('cache_size = -65536');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS positions(shard INTEGER PRIMARY KEY, seq INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS docs(
        rowid INTEGER PRIMARY KEY, shard INTEGER NOT NULL, type INTEGER NOT NULL, id INTEGER NOT NULL,
        playbook INTEGER NOT NULL, created INTEGER NOT NULL, spans TEXT NOT NULL);
      CREATE UNIQUE INDEX IF NOT EXISTS docs_record ON docs(type, id);
      CREATE INDEX IF NOT EXISTS docs_shard ON docs(shard);
      CREATE VIRTUAL TABLE IF NOT EXISTS text USING fts5(body, ${COLUMNS.join(', ')}, tokenize = "unicode61 remove_diacritics 2");
    `);
    this.db.prepare("INSERT INTO text(text, rank) VALUES ('automerge', 8)").run();
    const format = this.db.prepare('SELECT value FROM meta WHERE key = ?').get('format') as { value: number } | undefined;
    if (format === undefined) this.db.prepare('INSERT INTO meta(key, value) VALUES (?, ?)').run('format', FORMAT);
    else if (format.value !== FORMAT) throw new Error(`${path} is search index format ${format.value}; this logbook writes ${FORMAT}: delete the file and it is rebuilt`);
    this.stmts = {
      find: this.db.prepare('SELECT rowid FROM docs WHERE type = ? AND id = ?').pluck(),
      insertDoc: this.db.prepare('INSERT INTO docs(shard, type, id, playbook, created, spans) VALUES (?, ?, ?, ?, ?, ?)'),
      updateDoc: this.db.prepare('UPDATE docs SET playbook = ?, created = ?, spans = ? WHERE rowid = ?'),
      deleteDoc: this.db.prepare('DELETE FROM docs WHERE rowid = ?'),
      insertText: this.db.prepare(`INSERT INTO text(rowid, body, ${COLUMNS.join(', ')}) VALUES (?, ?, ${COLUMNS.map(() => '?').join(', ')})`),
      deleteText: this.db.prepare('DELETE FROM text WHERE rowid = ?'),
      shardRows: this.db.prepare('SELECT rowid FROM docs WHERE shard = ?').pluck(),
      position: this.db.prepare('SELECT seq FROM positions WHERE shard = ?').pluck(),
      setPosition: this.db.prepare('INSERT INTO positions(shard, seq) VALUES (?, ?) ON CONFLICT(shard) DO UPDATE SET seq = excluded.seq'),
      count: this.db.prepare('SELECT count(*) FROM docs').pluck(),
      behind: this.db.prepare('SELECT count(*) FROM positions WHERE seq < 0').pluck(),
    };
  }

  /** The journal number this shard's documents are indexed up to; -1 when none (or a rebuild did not finish). */
  position(shard: number): number {
    const seq = this.stmts.position.get(shard) as number | undefined;
    return seq ?? -1;
  }

  /** Apply one commit's documents and removals, and move the shard's position, in one transaction. */
  apply(shard: number, seq: number | null, docs: readonly SearchDoc[], removed: ReadonlyArray<readonly [number, number]>): void {
    this.db.transaction(() => {
      for (const [type, id] of removed) this.remove(type, id);
      for (const doc of docs) this.put(shard, doc);
      if (seq !== null) this.stmts.setPosition.run(shard, seq);
    })();
  }

  /** Drop every document of a shard before a rebuild; its position is -1 until the rebuild ends. */
  clearShard(shard: number): void {
    this.db.transaction(() => {
      for (const rowid of this.stmts.shardRows.all(shard) as number[]) { this.stmts.deleteText.run(rowid); this.stmts.deleteDoc.run(rowid); }
      this.stmts.setPosition.run(shard, -1);
    })();
  }

  get documents(): number { return this.stmts.count.get() as number; }

  /** Shards whose documents are being rebuilt or are stale (position -1). */
  shardsBehind(): number { return this.stmts.behind.get() as number; }

  private put(shard: number, doc: SearchDoc): void {
    const { body, spans } = textOf(doc);
    const values = [doc.host, doc.task, doc.play, doc.playbook, doc.path, doc.status, doc.label, doc.action];
    const spansJson = JSON.stringify(spans);
    const existing = this.stmts.find.get(doc.t, doc.id) as number | undefined;
    if (existing !== undefined) {
      this.stmts.deleteText.run(existing);
      this.stmts.insertText.run(existing, body, ...values);
      this.stmts.updateDoc.run(doc.p, doc.created, spansJson, existing);
      return;
    }
    const rowid = Number(this.stmts.insertDoc.run(shard, doc.t, doc.id, doc.p, doc.created, spansJson).lastInsertRowid);
    this.stmts.insertText.run(rowid, body, ...values);
  }

  private remove(type: number, id: number): void {
    const rowid = this.stmts.find.get(type, id) as number | undefined;
    if (rowid === undefined) return;
    this.stmts.deleteText.run(rowid);
    this.stmts.deleteDoc.run(rowid);
  }

  /** The hits of one page, and how many match (exact up to `countBound`, else null: more than that). */
  search(f: SearchFilter, countBound: number): { hits: RawHit[]; count: number | null } {
    const where: string[] = ['text MATCH @match'];
    const params: Record<string, unknown> = { match: f.match };
    if (f.type !== null) { where.push('d.type = @type'); params.type = f.type; }
    if (f.playbook !== null) { where.push('d.playbook = @playbook'); params.playbook = f.playbook; }
    if (f.after !== null) { where.push('d.created >= @after'); params.after = f.after; }
    if (f.before !== null) { where.push('d.created < @before'); params.before = f.before; }
    const cond = where.join(' AND ');
    const from = 'FROM text JOIN docs d ON d.rowid = text.rowid';
    const page = [...where];
    if (f.below !== null && !f.relevance) { page.push('text.rowid < @below'); params.below = f.below; }
    const order = f.relevance ? 'ORDER BY rank' : 'ORDER BY text.rowid DESC';
    const rows = this.db.prepare(
      `SELECT text.rowid AS rowid, d.type AS type, d.id AS id, d.playbook AS playbook, d.spans AS spans, text.body AS body, ${COLUMNS.map((c) => `text.${c} AS column_${c}`).join(', ')}
       ${from} WHERE ${page.join(' AND ')} ${order} LIMIT @limit`,
    ).all({ ...params, limit: f.limit }) as Array<Record<string, any>>;
    const counted = this.db.prepare(`SELECT count(*) FROM (SELECT 1 ${from} WHERE ${cond} LIMIT @bound)`).pluck()
      .get({ ...params, bound: countBound + 1 }) as number;
    return {
      count: counted > countBound ? null : counted,
      hits: rows.map((r) => ({
        rowid: r.rowid, type: r.type, id: r.id, playbook: r.playbook, body: r.body, spans: JSON.parse(r.spans) as FieldSpan[],
        columns: Object.fromEntries(COLUMNS.map((c) => [c, r[`column_${c}`] as string])),
      })),
    };
  }

  /** [type, id, playbook] of up to `limit` matches, newest first, without their text. */
  matchingIds(f: { match: string; type: number | null; playbook: number | null; after: number | null; before: number | null; limit: number }): Array<[number, number, number]> {
    const where: string[] = ['text MATCH @match'];
    const params: Record<string, unknown> = { match: f.match, limit: f.limit };
    if (f.type !== null) { where.push('d.type = @type'); params.type = f.type; }
    if (f.playbook !== null) { where.push('d.playbook = @playbook'); params.playbook = f.playbook; }
    if (f.after !== null) { where.push('d.created >= @after'); params.after = f.after; }
    if (f.before !== null) { where.push('d.created < @before'); params.before = f.before; }
    return this.db.prepare(`SELECT d.type, d.id, d.playbook FROM text JOIN docs d ON d.rowid = text.rowid WHERE ${where.join(' AND ')} ORDER BY text.rowid DESC LIMIT @limit`)
      .raw().all(params) as Array<[number, number, number]>;
  }

  close(): void {
    this.db.close();
  }
}
