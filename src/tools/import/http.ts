// A small JSON client for the two APIs the ARA importer talks to: ARA's (read)
// and logbook's (write). Per request timeout, a few retries where retrying is
// safe (connection failures and 503 on reads; 503 on writes too, since logbook
// answers 503 + Retry-After *before* applying anything when a shard's queue is
// full), and errors that say which server and which request failed.
// Node's fetch only; no dependency.

export type Json = unknown;
export type JsonObject = Record<string, Json>;

/** A server could not be reached or did not answer in time: the run stops (exit 1). */
export class UnreachableError extends Error {}
/** A server answered with an error status. */
export class HttpError extends Error {
  constructor(message: string, readonly status: number, readonly body: string) { super(message); }
}

export interface ClientOptions {
  /** what the server is, for messages: "ARA", "logbook" */
  label: string;
  baseUrl: string;
  /** full Authorization header value, or null */
  authorization: string | null;
  timeoutMs: number;
  retries: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function causeText(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') return 'no answer in time';
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}

export class ApiClient {
  readonly base: string;
  constructor(readonly opts: ClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
  }

  /** An absolute URL for a path under the server's base (`/api/v1/...`). */
  url(path: string): string { return this.base + path; }

  async request(method: string, path: string, body?: Json, headers: Record<string, string> = {}): Promise<{ status: number; json: Json }> {
    const url = this.url(path);
    const init: RequestInit = { method, headers: { accept: 'application/json', ...headers } };
    if (this.opts.authorization) (init.headers as Record<string, string>).authorization = this.opts.authorization;
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      let text: string;
      try {
        res = await fetch(url, { ...init, signal: AbortSignal.timeout(this.opts.timeoutMs) });
        text = await res.text();
      } catch (err) {
        // a POST that failed in flight may have been applied: not repeated (the
        // playbook is then left incomplete, and the next run copies it again)
        if (method !== 'POST' && attempt < this.opts.retries) { await sleep(500 * 2 ** attempt); continue; }
        throw new UnreachableError(`cannot reach ${this.opts.label} at ${this.base} (${method} ${path}: ${causeText(err)})`);
      }
      if (res.status === 503 && attempt < this.opts.retries) {
        const after = Number(res.headers.get('retry-after'));
        await sleep(Number.isFinite(after) && after > 0 ? Math.min(after, 30) * 1000 : 1000 * 2 ** attempt);
        continue;
      }
      if (res.status >= 400) {
        const hint = res.status === 401 || res.status === 403 ? ' (check the credentials for this server)' : '';
        throw new HttpError(`${this.opts.label} answered ${res.status} to ${method} ${path}${hint}: ${text.slice(0, 500)}`, res.status, text);
      }
      let json: Json = null;
      if (text.length > 0) {
        try { json = JSON.parse(text); } catch {
          throw new HttpError(`${this.opts.label} answered ${method} ${path} with something that is not JSON: ${text.slice(0, 200)}`, res.status, text);
        }
      }
      return { status: res.status, json };
    }
  }

  async get(path: string): Promise<JsonObject> {
    return (await this.request('GET', path)).json as JsonObject;
  }

  /** POST with `Prefer: return=minimal` (logbook answers `{"id": N}`); returns the new id. */
  async create(resource: string, body: JsonObject): Promise<number> {
    const { json } = await this.request('POST', `/api/v1/${resource}`, body, { prefer: 'return=minimal' });
    const id = (json as JsonObject | null)?.id;
    if (typeof id !== 'number') throw new HttpError(`${this.opts.label} answered POST /api/v1/${resource} without an id`, 200, JSON.stringify(json));
    return id;
  }

  async patch(resource: string, id: number, body: JsonObject): Promise<void> {
    await this.request('PATCH', `/api/v1/${resource}/${id}`, body, { prefer: 'return=minimal' });
  }

  /** DELETE; a record that is already gone counts as deleted. */
  async delete(resource: string, id: number): Promise<void> {
    try {
      await this.request('DELETE', `/api/v1/${resource}/${id}`);
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) return;
      throw err;
    }
  }

  /**
   * The rows of a list, page by page, ascending id (`order=id`: ARA's default
   * is `-id`). Only one page is held at a time. `query` without `?`.
   */
  async *pages(resource: string, query: string, pageSize: number): AsyncGenerator<JsonObject[]> {
    let offset = 0;
    for (;;) {
      const page = await this.get(`/api/v1/${resource}?${query ? `${query}&` : ''}order=id&limit=${pageSize}&offset=${offset}`);
      const rows = page.results;
      if (!Array.isArray(rows)) throw new HttpError(`${this.opts.label}: /api/v1/${resource} is not a paginated list`, 200, '');
      if (rows.length > 0) yield rows as JsonObject[];
      if (!page.next || rows.length === 0) return;
      offset += rows.length;
    }
  }

  /** `count` of a list (one row fetched). */
  async count(resource: string, query = ''): Promise<number> {
    const page = await this.get(`/api/v1/${resource}?${query ? `${query}&` : ''}limit=1`);
    return typeof page.count === 'number' ? page.count : 0;
  }
}

export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

/** Runs fn over items with at most `width` calls in flight; results in input order. */
export async function mapLimit<T, R>(items: readonly T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  }));
  return out;
}
