// The label resource (/api/v1/labels): labels are unique by name across all
// playbooks, so the front owns them (LabelCatalogue, persisted in front.mdb)
// and answers their requests itself; a reply leaves only once the change is
// durable, in the shards' replicas and logged for the live stream by the shards
// (label_changes.ts, which sends the replicas each change once it is durable).
// Reads show only what is durable (LabelCatalogue.shown): a change still on its
// way, which may yet fail and be set back, is not shown until it is stored.
import { compareRows } from '../api/order.js';
import { Errors } from '../api/errors.js';
import { WRITE_FIELDS } from '../api/resources.js';
import { nowMicros } from '../api/time.js';
import type { Normalized } from '../api/validate.js';
import { log } from '../log.js';
import type { ListRow } from '../shard/protocol.js';
import type { Directory } from './directory.js';
import { labelRow, type Label, type LabelCatalogue } from './labels.js';
import type { StoredLabel } from '../store/label_store.js';
import type { ParsedPage } from './reads.js';
import { reply } from './respond.js';
import type { Req } from './routes.js';

export interface LabelDeps {
  labels: LabelCatalogue;
  dir: Directory;
  /** `offset`: a keyset page's position (default parsed.offset) */
  envelope: (ex: Req, parsed: ParsedPage, count: number, rows: ListRow[], offset?: number) => void;
}

export class LabelResource {
  constructor(private readonly deps: LabelDeps) {}

  exists(id: number): boolean { return this.deps.labels.byId.has(id); }

  /** A label as durable: without a change still on its way (LabelCatalogue.shown). */
  get(ex: Req, id: number): void {
    const label = this.deps.labels.shown(id);
    return label ? reply(ex, 200, labelRow(id, label)) : reply(ex, 404, Errors.notFound());
  }

  /** POST (label null) or PUT/PATCH of a label. */
  write(ex: Req, id: number | null, n: Normalized): void {
    const { labels, dir } = this.deps;
    if (n.errors) return reply(ex, 400, Errors.fields(n.errors, WRITE_FIELDS.label));
    let label: Label | null = id === null ? null : labels.byId.get(id)!;
    const name = n.set.name as string | undefined;
    if (name !== undefined && labels.taken(name, label?.id ?? 0)) return reply(ex, 400, Errors.labelExists());
    const now = nowMicros();
    let persisted: Promise<unknown> | null;
    if (label === null) ({ label, persisted } = labels.create(dir.allocate('label'), name!, now));
    else persisted = labels.touch(label, name ?? label.name, now);
    const body = ex.minimal ? `{"id":${label.id}}` : label.toJSON();
    afterDurable(persisted, () => reply(ex, ex.method === 'POST' ? 201 : 200, body), ex);
  }

  remove(ex: Req, id: number): void {
    const label = this.deps.labels.byId.get(id);
    if (!label) return reply(ex, 404, Errors.notFound());
    const persisted = this.deps.labels.remove(label);
    afterDurable(persisted, () => reply(ex, 204, null), ex);
  }

  /** The labels as durable (LabelCatalogue.shown): filtered, ordered and paged by what they show. */
  list(ex: Req, parsed: ParsedPage): void {
    const value = (id: number, l: StoredLabel, col: string): number | string =>
      col === 'created' ? l.created : col === 'updated' ? l.updated : col === 'name' ? l.name : id;
    const rows: ListRow[] = [];
    for (const [id, label] of this.deps.labels.shownAll()) {
      const keep = parsed.filters.every((f) => {
        const v = value(id, label, f.column);
        switch (f.kind) {
          case 'date_before': return (v as number) <= (f.value as number);
          case 'date_after': return (v as number) >= (f.value as number);
          case 'icontains': return (v as string).toLowerCase().includes(f.value as string);
          default: return true;
        }
      });
      if (keep) rows.push([...parsed.order.map(([col]) => value(id, label, col)), id, labelRow(id, label)]);
    }
    const desc = parsed.order.map(([, d]) => d);
    rows.sort((a, b) => compareRows(a, b, desc));
    const { cursor } = parsed;
    if (!cursor) return this.deps.envelope(ex, parsed, rows.length, rows.slice(parsed.offset, parsed.offset + parsed.limit));
    // a keyset page (src/api/page_cursor.ts): the rows after its boundary, or going back the ones before it
    const bound = cursor.keys as ListRow;
    let at = 0;
    while (at < rows.length && compareRows(rows[at]!, bound, desc) < 0) at++;
    if (at < rows.length && compareRows(rows[at]!, bound, desc) === 0) at += cursor.back ? 0 : 1;
    const start = cursor.back ? Math.max(0, at - parsed.limit) : at;
    this.deps.envelope(ex, parsed, rows.length, rows.slice(start, cursor.back ? at : at + parsed.limit), start);
  }
}

/** Answer once `persisted` is on disk (at once when there is nothing to wait for); 503 if it failed. */
function afterDurable(persisted: Promise<unknown> | null, answer: () => void, ex: Req): void {
  if (!persisted) return answer();
  persisted.then(answer, (err) => {
    log.error('label store write failed', { err: String((err as Error)?.stack ?? err) });
    reply(ex, 503, Errors.unavailable('The write could not be stored; nothing was changed. Retry later.'));
  });
}
