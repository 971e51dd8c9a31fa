// `/ui/`: the playbooks, newest first, filtered by what the address says
// (status, label, name, path, started after/before, offset) so a filtered
// view can be shared. Rows of running playbooks follow the stream.
import { useEffect, useRef, useState } from 'preact/hooks';
import { get, qs, watch, type Envelope, type Playbook } from '../api.js';
import { Failure, Loading, Pager, Status, Table } from '../components.js';
import { took, when } from '../format.js';
import { useDebounced, useLoad } from '../hooks.js';
import { navigate } from '../router.js';

const LIMIT = 50;
const STATUSES = ['running', 'completed', 'failed', 'expired', 'unknown'];
const FILTERS = ['status', 'label', 'name', 'path', 'after', 'before'] as const;

/** A date from <input type=date> as the API's timestamp (a date alone is rejected). */
const dayStart = (d: string | null) => (d ? `${d}T00:00:00Z` : null);
const dayEnd = (d: string | null) => (d ? `${d}T23:59:59.999999Z` : null);

export function PlaybooksPage({ query }: { query: URLSearchParams }) {
  const offset = Number(query.get('offset')) || 0;
  const key = query.toString();
  const list = useLoad((signal) => get<Envelope<Playbook>>(`playbooks?${qs({
    order: '-id', limit: LIMIT, offset,
    status: query.get('status'), label: query.get('label'), name: query.get('name'), path: query.get('path'),
    started_after: dayStart(query.get('after')), started_before: dayEnd(query.get('before')),
  })}`, signal), [key]);
  // Rows changed by the stream, shown over the last page read.
  const [patched, setPatched] = useState<Map<number, Playbook>>(new Map());
  useEffect(() => setPatched(new Map()), [list.data]);
  const rows = useRef<Playbook[]>([]);
  rows.current = (list.data?.results ?? []).map((p) => patched.get(p.id) ?? p);
  const refresh = useDebounced(list.reload, 500);

  useEffect(() => watch({
    types: ['playbook'],
    onChange: (m) => {
      if (m.op === 'update' && m.row && rows.current.some((p) => p.id === m.id)) {
        const row = m.row as unknown as Playbook;
        setPatched((prev) => new Map(prev).set(row.id, row));
      } else if (m.op !== 'update') refresh();
    },
    running: () => rows.current.some((p) => p.status === 'running'),
    poll: list.reload,
  }), [key]);

  const go = (params: Record<string, string | number | null>) => navigate(`/ui/?${qs(params as Record<string, string>)}`);
  const current = Object.fromEntries(FILTERS.map((f) => [f, query.get(f)]));
  return (
    <section>
      <h1>Playbooks</h1>
      <form key={key} class="filters" role="search" onSubmit={(e) => {
        e.preventDefault();
        const data = new FormData(e.currentTarget);
        go(Object.fromEntries(FILTERS.map((f) => [f, String(data.get(f) ?? '').trim() || null])));
      }}>
        <label>Status
          <select name="status">
            <option value="">any</option>
            {STATUSES.map((s) => <option key={s} value={s} selected={current.status === s}>{s}</option>)}
          </select>
        </label>
        <label>Name <input name="name" type="search" defaultValue={current.name ?? ''} /></label>
        <label>Path <input name="path" type="search" defaultValue={current.path ?? ''} /></label>
        <label>Label <input name="label" type="search" defaultValue={current.label ?? ''} /></label>
        <label>Started after <input name="after" type="date" defaultValue={current.after ?? ''} /></label>
        <label>Started before <input name="before" type="date" defaultValue={current.before ?? ''} /></label>
        <div class="filter-buttons">
          <button type="submit">Filter</button>
          {FILTERS.some((f) => current[f]) && <a href="/ui/">Clear</a>}
        </div>
      </form>
      {list.error && <Failure error={list.error} />}
      {!list.data && !list.error && <Loading />}
      {list.data && (
        <>
          <Table label="playbooks">
            <thead><tr>
              <th>Status</th><th>Playbook</th><th class="wide">Labels</th><th>Started</th><th>Duration</th>
              <th class="num wide">Plays</th><th class="num">Tasks</th><th class="num">Hosts</th><th class="num">Results</th>
            </tr></thead>
            <tbody>
              {rows.current.map((p) => (
                <tr key={p.id} data-playbook={p.id}>
                  <td><Status value={p.status} /></td>
                  <td class="name">
                    <a href={`/ui/playbooks/${p.id}`}>{p.name || p.path.split('/').pop()}</a>
                    <div class="muted path">{p.path}</div>
                  </td>
                  <td class="wide">{p.labels.map((l) => <a key={l.id} class="label" href={`/ui/?${qs({ label: l.name })}`}>{l.name}</a>)}</td>
                  <td class="nowrap">{when(p.started)}</td>
                  <td class="nowrap">{p.status === 'running' ? 'running' : took(p.duration)}</td>
                  <td class="num wide">{p.items.plays}</td><td class="num">{p.items.tasks}</td>
                  <td class="num">{p.items.hosts}</td><td class="num">{p.items.results}</td>
                </tr>
              ))}
            </tbody>
          </Table>
          {list.data.count === 0 && <p class="muted">No playbooks{FILTERS.some((f) => current[f]) ? ' match these filters' : ' recorded yet'}.</p>}
          <Pager count={list.data.count} offset={offset} limit={LIMIT} go={(o) => go({ ...current, offset: o || null })} />
        </>
      )}
    </section>
  );
}
