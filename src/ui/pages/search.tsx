// `/ui/search?q=…[&type=…]`: full-text search over every run (docs/search.md).
// Hits newest first with what matched (the match marked), facets by type with
// their counts, and for results by status; each hit links into its run.
import { badRequestText, get, qs, type Envelope } from '../api.js';
import { Failure, Loading, Status } from '../components.js';
import { when } from '../format.js';
import { useLoad } from '../hooks.js';

interface Hit {
  type: string; id: number; playbook: number; url: string;
  row: Record<string, any>;
  matches: Array<{ field: string; snippet: string }>;
}
type Found = Envelope<Hit> & { count_is_estimate?: boolean };

const TYPES = [['result', 'Results'], ['task', 'Tasks'], ['host', 'Hosts'], ['playbook', 'Playbooks'], ['file', 'Files'], ['record', 'Records'], ['play', 'Plays']] as const;
const RESULT_STATUSES = ['failed', 'unreachable', 'ok', 'changed', 'skipped', 'ignored'];
const LIMIT = 50;

/** «match» → <mark>match</mark>, the rest as text. */
function Snippet({ text }: { text: string }) {
  const parts = text.split(/«|»/);
  return <>{parts.map((p, i) => (i % 2 === 1 ? <mark key={i}>{p}</mark> : p))}</>;
}

function link(hit: Hit): string {
  switch (hit.type) {
    case 'result': return `/ui/results/${hit.id}`;
    case 'host': return `/ui/hosts/${hit.id}`;
    case 'file': return `/ui/files/${hit.id}`;
    case 'record': return `/ui/records/${hit.id}`;
    case 'task': return `/ui/playbooks/${hit.playbook}?task=${hit.id}`;
    default: return `/ui/playbooks/${hit.playbook}`;
  }
}

function title(hit: Hit): string {
  const r = hit.row;
  switch (hit.type) {
    case 'result': return `result ${hit.id}`;
    case 'record': return r.key;
    case 'file': return r.path;
    case 'playbook': return r.name ? `${r.name} (${r.path})` : r.path;
    default: return r.name ?? `${hit.type} ${hit.id}`;
  }
}

export function SearchPage({ query }: { query: URLSearchParams }) {
  const q = query.get('q') ?? '';
  const type = query.get('type');
  const cursor = query.get('cursor');
  const key = query.toString();
  const found = useLoad((signal) => (q.trim()
    ? get<Found>(`search?${qs({ q, type, limit: LIMIT, cursor })}`, signal)
    : Promise.resolve(null)), [key]);
  // facet counts: one small query per type (count only)
  const facets = useLoad((signal) => (q.trim()
    ? Promise.all(TYPES.map(([t]) => get<Found>(`search?${qs({ q, type: t, limit: 1 })}`, signal).then((f) => [t, f.count, !!f.count_is_estimate] as const, () => [t, 0, false] as const)))
    : Promise.resolve([])), [q]);
  const href = (params: Record<string, string | null>) => `/ui/search?${qs(params as Record<string, string>)}`;
  const hasStatus = /(^|\s)status:/.test(q);
  const error = found.error ? badRequestText(found.error) : null;
  return (
    <section class="search">
      <h1>Search</h1>
      {!q.trim() && <p class="muted">Words, <code>"a phrase"</code>, <code>prefix*</code>, <code>-word</code>, and fields: <code>host:web03</code> <code>task:"check disk"</code> <code>status:failed</code> <code>label:prod</code> <code>after:2026-11-01</code>. Press <kbd>/</kbd> anywhere to search.</p>}
      {q.trim() && facets.data && (
        <nav class="facets" aria-label="types">
          <a href={href({ q, type: null })} aria-current={type === null ? 'page' : undefined}>All</a>
          {facets.data.filter(([, n]) => n > 0).map(([t, n, estimate]) => (
            <a key={t} href={href({ q, type: t })} aria-current={type === t ? 'page' : undefined}>
              {TYPES.find(([k]) => k === t)![1]} <span class="count">{n.toLocaleString()}{estimate ? '+' : ''}</span>
            </a>
          ))}
        </nav>
      )}
      {q.trim() && type === 'result' && !hasStatus && (
        <nav class="facets" aria-label="result status">
          {RESULT_STATUSES.map((s) => <a key={s} href={href({ q: `${q} status:${s}`, type })}><Status value={s} /></a>)}
        </nav>
      )}
      {error !== null ? <p class="notice error" role="alert">{error}</p> : found.error ? <Failure error={found.error} /> : null}
      {q.trim() && !found.data && !found.error && <Loading />}
      {found.data && (
        <>
          <p class="muted" aria-live="polite">
            {found.data.count_is_estimate ? `More than ${found.data.count.toLocaleString()}` : found.data.count.toLocaleString()} {found.data.count === 1 ? 'match' : 'matches'}, newest first
          </p>
          <ol class="hits">
            {found.data.results.map((hit) => (
              <li key={`${hit.type}:${hit.id}`} data-hit={`${hit.type}:${hit.id}`}>
                <div class="hit-head">
                  <span class="type">{hit.type}</span>
                  <a href={link(hit)}>{title(hit)}</a>
                  {hit.row.status && <Status value={hit.row.status} />}
                  <a class="muted" href={`/ui/playbooks/${hit.playbook}`}>playbook {hit.playbook}</a>
                  {(hit.row.started || hit.row.created) && <span class="muted">{when(hit.row.started ?? hit.row.created)}</span>}
                </div>
                {hit.matches.map((m) => (
                  <p key={m.field} class="snippet"><span class="field">{m.field}</span> <Snippet text={m.snippet} /></p>
                ))}
              </li>
            ))}
          </ol>
          {found.data.next && (
            <nav class="pager" aria-label="pages">
              <a href={href({ q, type, cursor: new URL(found.data.next).searchParams.get('cursor') })}>Older matches →</a>
            </nav>
          )}
        </>
      )}
    </section>
  );
}
