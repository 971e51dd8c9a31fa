// Copies one ARA playbook, with everything under it, into logbook through
// logbook's per-record API (docs/api.md#writes), in the order the ARA callback writes:
// playbook, files, hosts, plays, tasks, records, results, then each host's
// counters. Rows are read from ARA page by page (ascending id, so logbook's
// ids keep ARA's order) and written before the next page is read: memory
// stays bounded by one page, whatever the size of the playbook. The only
// state kept for the whole playbook is ARA id → logbook id per play, task,
// host and file (numbers), which results need.
import { ApiClient, mapLimit, type Json, type JsonObject } from './http.js';

export interface CopyOptions {
  /** rows per ARA list page */
  pageSize: number;
  /** ARA detail requests in flight (contents, facts, values) */
  readWidth: number;
}

export interface CopyOutcome { logbookId: number; results: number }

const str = (v: Json): string | null => (typeof v === 'string' ? v : v === null || v === undefined ? null : String(v));
const num = (v: Json): number => (typeof v === 'number' ? v : Number(v));

/** Copies only the keys that are present and not null (logbook applies its defaults to the rest). */
function present(row: JsonObject, keys: readonly string[]): JsonObject {
  const out: JsonObject = {};
  for (const k of keys) if (row[k] !== undefined && row[k] !== null) out[k] = row[k];
  return out;
}

function mapped(map: Map<number, number>, what: string, araId: Json): number {
  const id = map.get(num(araId));
  if (id === undefined) throw new Error(`ARA ${what} ${String(araId)} is not part of this playbook (or was not copied)`);
  return id;
}

/**
 * The status to store so that logbook *shows* what ARA shows. ARA lists the
 * derived status (ok + changed → "changed", failed + ignore_errors →
 * "ignored"); logbook derives the same way from the stored value (docs/api.md#derived-state),
 * so storing the underlying value keeps the host counters' rules right too.
 */
export function storedResultStatus(shown: string, changed: boolean, ignoreErrors: boolean): string {
  if (shown === 'changed' && changed) return 'ok';
  if (shown === 'ignored' && ignoreErrors) return 'failed';
  return shown;
}

/** The playbook's own fields, as logbook takes them on POST. */
export function playbookBody(row: JsonObject): JsonObject {
  const body = present(row, ['path', 'name', 'status', 'started', 'ended', 'arguments', 'controller', 'user', 'client_version', 'python_version']);
  body.runner_version = str(row.ansible_version ?? row.runner_version) ?? 'unknown';
  if (Array.isArray(row.labels)) {
    body.labels = row.labels.map((l) => (l && typeof l === 'object' ? str((l as JsonObject).name) : str(l))).filter((n) => n !== null);
  }
  return body;
}

/**
 * Copies ARA playbook `row` into logbook. `onCreated` is told the new
 * logbook id as soon as there is one (before anything under it is copied),
 * so that an interrupted copy can be found and deleted.
 */
export async function copyPlaybook(
  ara: ApiClient, lb: ApiClient, row: JsonObject, opts: CopyOptions, onCreated: (logbookId: number) => void,
): Promise<CopyOutcome> {
  const araId = num(row.id);
  const playbook = await lb.create('playbooks', playbookBody(row));
  onCreated(playbook);
  const of = `playbook=${araId}`;
  const files = new Map<number, number>();
  const hosts = new Map<number, number>();
  const plays = new Map<number, number>();
  const tasks = new Map<number, number>();
  const detail = (resource: string) => (r: JsonObject) => ara.get(`/api/v1/${resource}/${num(r.id)}`);

  for await (const page of ara.pages('files', of, opts.pageSize)) {
    const full = await mapLimit(page, opts.readWidth, detail('files'));
    for (const f of full) {
      files.set(num(f.id), await lb.create('files', { playbook, path: f.path, content: typeof f.content === 'string' ? f.content : '' }));
    }
  }
  // Counters are set at the end: results would add to counters given now.
  const counters: Array<[number, JsonObject]> = [];
  for await (const page of ara.pages('hosts', of, opts.pageSize)) {
    const full = await mapLimit(page, opts.readWidth, detail('hosts'));
    for (const h of full) {
      const id = await lb.create('hosts', { playbook, ...present(h, ['name', 'facts']) });
      hosts.set(num(h.id), id);
      counters.push([id, present(h, ['ok', 'changed', 'failed', 'skipped', 'unreachable'])]);
    }
  }
  for await (const page of ara.pages('plays', of, opts.pageSize)) {
    for (const p of page) {
      plays.set(num(p.id), await lb.create('plays', { playbook, ...present(p, ['uuid', 'name', 'status', 'started', 'ended']) }));
    }
  }
  for await (const page of ara.pages('tasks', of, opts.pageSize)) {
    for (const t of page) {
      tasks.set(num(t.id), await lb.create('tasks', {
        playbook,
        play: mapped(plays, 'play', t.play),
        file: mapped(files, 'file', typeof t.file === 'object' && t.file ? (t.file as JsonObject).id : t.file),
        // warnings, deprecations, exceptions: served by ARA's newest (after 1.7.4), not by older ARA
        ...present(t, ['uuid', 'name', 'action', 'lineno', 'handler', 'tags', 'status', 'started', 'ended', 'warnings', 'deprecations', 'exceptions']),
      }));
    }
  }
  for await (const page of ara.pages('records', of, opts.pageSize)) {
    const full = await mapLimit(page, opts.readWidth, detail('records'));
    for (const r of full) await lb.create('records', { playbook, ...present(r, ['key', 'type', 'value']) });
  }
  let results = 0;
  for await (const page of ara.pages('results', of, opts.pageSize)) {
    const full = await mapLimit(page, opts.readWidth, detail('results'));
    for (const r of full) {
      const changed = r.changed === true;
      const ignoreErrors = r.ignore_errors === true;
      const body: JsonObject = {
        playbook,
        play: mapped(plays, 'play', idOf(r.play)),
        task: mapped(tasks, 'task', idOf(r.task)),
        host: mapped(hosts, 'host', idOf(r.host)),
        status: storedResultStatus(String(r.status), changed, ignoreErrors),
        changed,
        ignore_errors: ignoreErrors,
        ...present(r, ['content', 'started', 'ended']),
      };
      if (Array.isArray(r.delegated_to)) {
        // ids of hosts of the same playbook in ARA; an id that is not (cannot be
        // copied as a reference) is left out
        body.delegated_to = r.delegated_to.map((d) => hosts.get(num(idOf(d)))).filter((d) => d !== undefined);
      }
      await lb.create('results', body);
      results++;
    }
  }
  for (const [id, c] of counters) await lb.patch('hosts', id, c);
  return { logbookId: playbook, results };
}

/** A foreign key as a list row (int) or as a detail (nested object with an id). */
function idOf(v: Json): Json {
  return v && typeof v === 'object' ? (v as JsonObject).id : v;
}
