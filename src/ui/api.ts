// The UI's only way to the server: the public JSON API (docs/api.md) and the
// live stream (docs/api.md#live-stream). Credentials: a browser that answered the Basic
// prompt sends them itself; a token typed into the sign-in form is kept in
// sessionStorage (gone with the tab) and sent as `Authorization: Bearer`, and
// as `?token=` on the stream (EventSource cannot send headers).

export interface Envelope<T> { count: number; next: string | null; previous: string | null; results: T[] }
export interface LabelRef { id: number; name: string }
export interface Playbook {
  id: number; items: Record<string, number>; arguments?: unknown; labels: LabelRef[]; started: string; ended: string | null;
  duration: string | null; name: string | null; runner_version: string; status: string; path: string;
}
/** A run's results by shown status (GET /api/v1/playbooks/<id>/totals). */
export interface RunTotals {
  ok: number; changed: number; failed: number; skipped: number; unreachable: number; ignored: number; changed_anything: boolean;
}
export interface Play { id: number; items: Record<string, number>; started: string; ended: string | null; duration: string | null; name: string | null; uuid: string; status: string; playbook: number }
export interface Task {
  id: number; items: Record<string, number>; path: string; tags?: unknown; started: string; ended: string | null; duration: string | null;
  name: string | null; action: string; lineno: number; handler: boolean; status: string; play: number; file: number | { id: number }; playbook: number | { id: number };
  /** read with `dialect=ara` (ARA's task fields); absent from logbook's own rows and the stream's */
  warnings?: unknown; deprecations?: unknown; exceptions?: unknown; updated?: string;
}
export interface Host { id: number; playbook: number | Playbook; facts?: Record<string, unknown>; name: string; changed: number; failed: number; ok: number; skipped: number; unreachable: number }
export interface Result {
  id: number; status: string; playbook: number; play: number; task: number; host: number; started: string; ended: string | null;
  duration: string | null; changed: boolean; ignore_errors: boolean;
}
export interface ResultDetail extends Omit<Result, 'playbook' | 'play' | 'task' | 'host'> {
  playbook: Playbook; play: Play; task: Task & { file: number; play: number; playbook: number }; host: Host; content: unknown;
}
export interface FileRow { id: number; sha1: string; playbook: number; path: string }
export interface FileDetail { id: number; sha1: string; playbook: Playbook; content: string; path: string }
export interface RecordRow { id: number; playbook: number; key: string; type: string; value?: unknown }

const AUTH_KEY = 'logbook.authorization';

export function storedAuthorization(): string | null {
  try { return sessionStorage.getItem(AUTH_KEY); } catch { return null; }
}

export function signIn(token: string): void {
  sessionStorage.setItem(AUTH_KEY, `Bearer ${token.trim()}`);
}

export function signOut(): void {
  sessionStorage.removeItem(AUTH_KEY);
}

/** Thrown when the API wants credentials (401): the app shows its sign-in form. */
export class AuthNeeded extends Error {
  constructor(readonly invalid: boolean) { super('sign-in needed'); }
}

export class NotFound extends Error {}

/** What a 400 from get() says is wrong (e.g. a search query: `q: unclosed quote at character 7`), or null for other errors. */
export function badRequestText(error: Error): string | null {
  const m = /^400 on [^:]*: (.*)$/s.exec(error.message);
  if (!m) return null;
  try {
    const body = JSON.parse(m[1]!) as Record<string, string[]>;
    return Object.entries(body).map(([k, v]) => `${k}: ${v.join(' ')}`).join('; ');
  } catch { return m[1]!; }
}

export async function get<T>(path: string, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const auth = storedAuthorization();
  if (auth) headers.Authorization = auth;
  const res = await fetch(`/api/v1/${path}`, { headers, signal, credentials: 'same-origin' });
  if (res.status === 401) {
    window.dispatchEvent(new CustomEvent('logbook:auth', { detail: auth !== null }));
    throw new AuthNeeded(auth !== null);
  }
  if (res.status === 404) throw new NotFound(`Not found: ${path}`);
  if (!res.ok) {
    let detail = res.statusText;
    try { detail = JSON.stringify(await res.json()); } catch { /* not JSON */ }
    throw new Error(`${res.status} on ${path}: ${detail}`);
  }
  return res.json() as Promise<T>;
}

/** Every row of a list (pages of 1000), e.g. a playbook's hosts or tasks. */
export async function getAll<T>(path: string, signal?: AbortSignal, cap = 50_000): Promise<T[]> {
  const sep = path.includes('?') ? '&' : '?';
  const first = await get<Envelope<T>>(`${path}${sep}limit=1000`, signal);
  const out = first.results.slice();
  const pages: Array<Promise<Envelope<T>>> = [];
  for (let offset = 1000; offset < Math.min(first.count, cap); offset += 1000) pages.push(get<Envelope<T>>(`${path}${sep}limit=1000&offset=${offset}`, signal));
  for (const page of await Promise.all(pages)) out.push(...page.results);
  return out;
}

/** A query string from the values that are set. */
export function qs(params: Record<string, string | number | null | undefined | Array<string>>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === '') continue;
    for (const one of Array.isArray(v) ? v : [v]) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(one))}`);
  }
  return parts.join('&');
}

// ---- live stream ---------------------------------------------------------------

export interface Change { op: 'create' | 'update' | 'delete'; type: string; id: number; playbook: number | null; row: Record<string, unknown> | null; cursor: string }
export type StreamMessage = Change | { op: 'hello'; cursor: string } | { op: 'reset' };

export interface Watch {
  /** the stream's subscription */
  playbook?: number;
  types?: string[];
  /** a change arrived (or `reset`: re-read everything) */
  onChange: (m: Change | { op: 'reset' }) => void;
  /** without a stream: is anything shown still running? then `poll` runs every ~2 s */
  running: () => boolean;
  poll: () => void;
}

const POLL_MS = 2000;

/**
 * Follow changes through the stream; while the stream is unavailable (404 on
 * a server without it, a proxy that drops it, a lost connection) fall back to
 * polling the list API every ~2 s as long as something shown is running.
 * Returns the function that stops watching.
 */
export function watch(w: Watch): () => void {
  let live = false;
  let source: EventSource | null = null;
  // the credentials the stream was opened with: a sign-in after a refused stream opens it again
  let usedAuth: string | null = null;
  const onMessage = (e: MessageEvent<string>) => {
    let m: StreamMessage;
    try { m = JSON.parse(e.data) as StreamMessage; } catch { return; }
    if (m.op === 'hello') {
      // (re)connected: the changes missed while polling are re-read once
      if (!live) w.onChange({ op: 'reset' });
      live = true;
      return;
    }
    live = true;
    w.onChange(m);
  };
  const open = () => {
    if (typeof EventSource === 'undefined') return;
    const params: Record<string, string | number | undefined | string[]> = { playbook: w.playbook, type: w.types };
    usedAuth = storedAuthorization();
    if (usedAuth?.startsWith('Bearer ')) params.token = usedAuth.slice(7);
    const es = new EventSource(`/api/v1/stream?${qs(params)}`);
    source = es;
    es.onmessage = onMessage;
    for (const name of ['hello', 'create', 'update', 'delete', 'reset']) es.addEventListener(name, onMessage as EventListener);
    es.onerror = () => {
      live = false;
      // a refused stream (404, 401, not SSE) is not retried by the browser: poll from now on
      if (es.readyState === EventSource.CLOSED && source === es) source = null;
    };
  };
  open();
  const timer = setInterval(() => {
    if (source === null && storedAuthorization() !== usedAuth) open(); // signed in since the stream was refused
    if (!live && w.running()) w.poll();
  }, POLL_MS);
  return () => {
    clearInterval(timer);
    source?.close();
  };
}
