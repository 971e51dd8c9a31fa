// Reading everything a logbook holds through its HTTP API, the way a user or
// an export tool would: every list page (limit=1000) and every detail.
import { api } from './server.js';

export const RESOURCES = ['labels', 'playbooks', 'plays', 'tasks', 'hosts', 'results', 'files', 'records'] as const;
export type Resource = typeof RESOURCES[number];

/** Run `fn` over `items` with at most `limit` calls at a time. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Every row of a list, following offsets; throws if a page fails or the count moves. */
export async function listAll(url: string, resource: Resource, query = ''): Promise<any[]> {
  const rows: any[] = [];
  let count = -1;
  for (let offset = 0; ; offset += 1000) {
    const res = await api(url, 'GET', `/api/v1/${resource}?limit=1000&offset=${offset}${query ? '&' + query : ''}`);
    if (res.status !== 200) throw new Error(`GET ${resource} offset=${offset} → ${res.status} ${res.text}`);
    if (count >= 0 && res.body.count !== count) throw new Error(`${resource}: count changed from ${count} to ${res.body.count} while paging`);
    count = res.body.count;
    rows.push(...res.body.results);
    if (res.body.next === null) break;
  }
  if (rows.length !== count) throw new Error(`${resource}: count says ${count} but the pages held ${rows.length} rows`);
  const ids = new Set(rows.map((r) => r.id));
  if (ids.size !== rows.length) throw new Error(`${resource}: paging returned ${rows.length - ids.size} rows twice (and so left others out)`);
  return rows;
}

export interface Dump {
  /** list rows in list order */
  lists: Record<Resource, any[]>;
  /** detail bodies by id */
  details: Record<Resource, Record<number, any>>;
}

/** All lists of all resources, then the detail of every listed row. */
export async function dumpApi(url: string, options: { details?: boolean; concurrency?: number } = {}): Promise<Dump> {
  const lists = {} as Record<Resource, any[]>;
  const details = {} as Record<Resource, Record<number, any>>;
  for (const r of RESOURCES) lists[r] = await listAll(url, r);
  for (const r of RESOURCES) {
    details[r] = {};
    if (options.details === false) continue;
    const ids = lists[r].map((row) => row.id as number);
    const bodies = await mapLimit(ids, options.concurrency ?? 16, async (id) => {
      const res = await api(url, 'GET', `/api/v1/${r}/${id}`);
      if (res.status !== 200) throw new Error(`GET ${r}/${id} → ${res.status} ${res.text}`);
      return res.body;
    });
    ids.forEach((id, i) => { details[r][id] = bodies[i]; });
  }
  return { lists, details };
}

/** A nested object (summary or list row) replaced by its id; other values as they are. */
export function flatten(body: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(body)) {
    out[k] = ['playbook', 'play', 'task', 'host', 'file'].includes(k) && v !== null && typeof v === 'object' ? v.id : v;
  }
  return out;
}
