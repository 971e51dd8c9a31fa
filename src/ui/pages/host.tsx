// `/ui/hosts/<id>`: a host of one run: its counters, its facts (searchable by
// key or value), and its results.
import { useMemo, useState } from 'preact/hooks';
import { get, getAll, type Envelope, type Host, type Playbook, type Result, type Task } from '../api.js';
import { Failure, Loading, Pager, Status, Table } from '../components.js';
import { pretty, took, when } from '../format.js';
import { useLoad } from '../hooks.js';
import { taskSource } from './playbook.js';

const PAGE = 100;

export function HostPage({ id }: { id: number }) {
  const host = useLoad((s) => get<Host & { playbook: Playbook; facts: Record<string, unknown> }>(`hosts/${id}`, s), [id]);
  const [search, setSearch] = useState('');
  const [offset, setOffset] = useState(0);
  const pbId = host.data?.playbook.id ?? 0;
  const tasks = useLoad(async (s) => (pbId ? new Map((await getAll<Task>(`tasks?playbook=${pbId}`, s)).map((t) => [t.id, t])) : null), [pbId]);
  const results = useLoad((s) => get<Envelope<Result>>(`results?host=${id}&limit=${PAGE}&offset=${offset}`, s), [id, offset]);
  const facts = useMemo(() => {
    const all = Object.entries(host.data?.facts ?? {});
    const q = search.trim().toLowerCase();
    if (!q) return all;
    return all.filter(([k, v]) => k.toLowerCase().includes(q) || JSON.stringify(v).toLowerCase().includes(q));
  }, [host.data, search]);

  if (host.error) return <Failure error={host.error} />;
  const h = host.data;
  if (!h) return <Loading />;
  const factCount = Object.keys(h.facts ?? {}).length;
  return (
    <article>
      <p class="crumbs"><a href="/ui/">Playbooks</a> / <a href={`/ui/playbooks/${h.playbook.id}?tab=hosts`}>{h.playbook.name || h.playbook.path}</a> / host</p>
      <h1>{h.name}</h1>
      <p class="counts">
        {(['ok', 'changed', 'failed', 'skipped', 'unreachable'] as const).map((k) => <span key={k} class={`count c-${k}`}><b>{h[k]}</b> {k}</span>)}
      </p>
      <h2>Results</h2>
      {results.error && <Failure error={results.error} />}
      {results.data && (
        <>
          <Table label="results of this host">
            <thead><tr><th>Result</th><th>Status</th><th>Task</th><th>Started</th><th>Duration</th></tr></thead>
            <tbody>
              {results.data.results.map((r) => {
                const t = tasks.data?.get(r.task);
                return (
                  <tr key={r.id} class={`r-${r.status}`}>
                    <td><a href={`/ui/results/${r.id}`}>#{r.id}</a></td><td><Status value={r.status} /></td>
                    <td>{t ? <>{t.name || t.action} <a class="muted src" href={taskSource(t)}>{t.path.split('/').pop()}:{t.lineno}</a></> : `task ${r.task}`}</td>
                    <td class="nowrap">{when(r.started)}</td><td class="nowrap">{took(r.duration)}</td>
                  </tr>
                );
              })}
            </tbody>
          </Table>
          <Pager count={results.data.count} offset={offset} limit={PAGE} go={setOffset} />
        </>
      )}
      <h2>Facts</h2>
      {factCount === 0 ? <p class="muted">No facts recorded.</p> : (
        <>
          <label class="search">Search facts <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} placeholder="key or value" /></label>
          <p class="muted">{facts.length} of {factCount}</p>
          <dl class="facts">
            {facts.map(([k, v]) => <div key={k}><dt><code>{k}</code></dt><dd><pre class="json small">{pretty(v)}</pre></dd></div>)}
          </dl>
        </>
      )}
    </article>
  );
}
