// `/ui/playbooks/<id>`: one run. A summary, then tabs (in the address as
// `?tab=`): results (failures and unreachable first), tasks, hosts (with a
// tasks × hosts grid), plays, files, records, arguments. Long lists are read
// and drawn a page at a time, so a run of 10,000 results opens as fast as a
// small one. While the playbook runs, every change the stream reports for it
// makes the summary and the open tab re-read (at most every 300 ms).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import {
  badRequestText, get, getAll, watch, type Envelope, type FileRow, type Host, type Play, type Playbook, type RecordRow, type Result, type RunTotals, type Task,
} from '../api.js';
import { Counts, Failure, Loading, Pager, Status, Table, TaskMessages } from '../components.js';
import { pretty, STATUS_RANK, took, when } from '../format.js';
import { useDebounced, useLoad } from '../hooks.js';

const TABS = ['results', 'tasks', 'hosts', 'plays', 'files', 'records', 'arguments'] as const;
type Tab = typeof TABS[number];
const PAGE = 100;
const FAILURES = 'status=failed&status=unreachable';
const OTHERS = 'status=ok&status=changed&status=skipped&status=ignored&status=unknown';

/**
 * A playbook's tasks with ARA's task fields (warnings, deprecations,
 * exceptions), which only ARA's dialect carries; `since`: those updated since.
 */
const TASKS_WITH_MESSAGES = (id: number, since?: string) =>
  `tasks?playbook=${id}&dialect=ara${since ? `&updated_after=${encodeURIComponent(since)}` : ''}`;

/** What every tab needs to name things: the playbook's plays, tasks and hosts by id. */
interface Context { plays: Map<number, Play>; tasks: Map<number, Task>; taskList: Task[]; hosts: Map<number, Host>; hostList: Host[] }

const fileOf = (t: Task): number => (typeof t.file === 'number' ? t.file : t.file.id);
export const taskSource = (t: Task) => `/ui/files/${fileOf(t)}?line=${t.lineno}`;

export function PlaybookPage({ id, query }: { id: number; query: URLSearchParams }) {
  const tab: Tab = (TABS as readonly string[]).includes(query.get('tab') ?? '') ? query.get('tab') as Tab : 'results';
  const pb = useLoad((s) => get<Playbook>(`playbooks/${id}`, s), [id]);
  const ctx = useLoad(async (s): Promise<Context> => {
    const [plays, taskList, hostList] = await Promise.all([
      getAll<Play>(`plays?playbook=${id}`, s), getAll<Task>(TASKS_WITH_MESSAGES(id), s), getAll<Host>(`hosts?playbook=${id}&order=name`, s),
    ]);
    return {
      plays: new Map(plays.map((p) => [p.id, p])), tasks: new Map(taskList.map((t) => [t.id, t])), taskList,
      hosts: new Map(hostList.map((h) => [h.id, h])), hostList,
    };
  }, [id]);
  const [tick, setTick] = useState(0);
  const [gridTick, setGridTick] = useState(0);
  // the run's results by status, kept by the server: re-read (at most every second) as results come
  const [totalsTick, setTotalsTick] = useState(0);
  const totals = useLoad((s) => get<RunTotals>(`playbooks/${id}/totals`, s).catch((): null => null), [id, totalsTick]);
  const rereadTotals = useDebounced(() => setTotalsTick((t) => t + 1), 1000);
  // the playbook's row as the stream last sent it (its list row: counters, status, times)
  const [pbRow, setPbRow] = useState<Playbook | null>(null);
  const running = useRef(false);
  running.current = (pbRow ?? pb.data)?.status === 'running';
  const pbRef = useRef(pb.data);
  pbRef.current = pb.data;
  const ctxRef = useRef(ctx.data);
  ctxRef.current = ctx.data;
  // Everything re-read: polling without a stream, a stream reset, deletions.
  const refresh = useDebounced(() => {
    setPbRow(null); pb.reload(); ctx.reload(); setTick((t) => t + 1); setGridTick((t) => t + 1); setTotalsTick((t) => t + 1);
  }, 300);
  // With the stream, rows come with the changes: only the open tab's page is re-read.
  const rereadTab = useDebounced(() => setTick((t) => t + 1), 300);
  // ARA's callbacks PATCH a task's messages at its end: read the tasks updated since the newest one read
  const rereadTaskMessages = useDebounced(() => {
    const c = ctxRef.current;
    if (!c) return;
    let since = '';
    for (const t of c.taskList) if (t.updated && t.updated > since) since = t.updated;
    getAll<Task>(TASKS_WITH_MESSAGES(id, since || undefined)).then((rows) => {
      if (ctxRef.current !== c) return;
      for (const row of rows) {
        const t = c.tasks.get(row.id);
        if (!t) continue;
        Object.assign(t, { warnings: row.warnings, deprecations: row.deprecations, exceptions: row.exceptions, updated: row.updated });
      }
      setTick((n) => n + 1);
    }, () => { /* the next change or refresh tries again */ });
  }, 1000);
  // the grid reads every result of the run: at most every 3 s
  const rereadGrid = useDebounced(() => setGridTick((t) => t + 1), 3000);
  useEffect(() => watch({
    playbook: id,
    onChange: (m) => {
      const c = ctxRef.current;
      if (m.op === 'reset' || m.op === 'delete' || !m.row || !c) return refresh();
      // the stream's playbook row has no `arguments` (they can be megabytes): keep the ones read
      if (m.type === 'playbook') return setPbRow((prev) => ({ ...(prev ?? pbRef.current), ...(m.row as unknown as Playbook) }));
      if (m.type === 'task') {
        // the stream's rows are logbook's: keep the task messages read, and re-read them once the task ends
        const prev = c.tasks.get(m.id);
        const t = { ...prev, ...(m.row as unknown as Task) };
        if (!prev) c.taskList.push(t);
        else c.taskList[c.taskList.findIndex((x) => x.id === t.id)] = t;
        c.tasks.set(t.id, t);
        if (t.ended) rereadTaskMessages();
      } else if (m.type === 'host') {
        const h = m.row as unknown as Host;
        if (!c.hosts.has(h.id)) c.hostList.push(h);
        else c.hostList[c.hostList.findIndex((x) => x.id === h.id)] = h;
        c.hosts.set(h.id, h);
      } else if (m.type === 'play') c.plays.set(m.id, m.row as unknown as Play);
      else if (m.type === 'result') { rereadGrid(); rereadTotals(); }
      rereadTab();
    },
    running: () => running.current,
    poll: refresh,
  }), [id]);

  if (pb.error) return <Failure error={pb.error} />;
  const p = pbRow ?? pb.data;
  // The open tab loads alongside the summary (not after it): a big run's first
  // result rows arrive as soon as the slowest of a few parallel requests.
  return (
    <article>
      {!p ? <Loading /> : <Summary p={p} totals={totals.data} />}
      <nav class="tabs" aria-label="sections">
        {TABS.map((t) => <a key={t} href={`/ui/playbooks/${id}?tab=${t}`} aria-current={t === tab ? 'page' : undefined}>{t}</a>)}
      </nav>
      {ctx.error && <Failure error={ctx.error} />}
      {tab === 'results' ? <ResultsTab id={id} ctx={ctx.data} tick={tick} />
        : tab === 'arguments' ? (p ? <pre class="json">{pretty(p.arguments)}</pre> : null)
        : !ctx.data ? <Loading />
        : tab === 'tasks' ? <TasksTab ctx={ctx.data} />
        : tab === 'hosts' ? <HostsTab id={id} ctx={ctx.data} tick={gridTick} />
        : tab === 'plays' ? <PlaysTab ctx={ctx.data} />
        : tab === 'files' ? <FilesTab id={id} tick={tick} />
        : <RecordsTab id={id} tick={tick} />}
    </article>
  );
}

const TOTAL_KEYS = ['ok', 'changed', 'failed', 'unreachable', 'skipped', 'ignored'] as const;

function Summary({ p, totals }: { p: Playbook; totals: RunTotals | null }) {
  return (
    <>
      <p class="crumbs"><a href="/ui/">Playbooks</a> / #{p.id}</p>
      <h1><Status value={p.status} /> {p.name || p.path.split('/').pop()}</h1>
      <dl class="summary">
        <div class="span2"><dt>Path</dt><dd class="path">{p.path}</dd></div>
        <div><dt>Started</dt><dd>{when(p.started)}</dd></div>
        <div><dt>Ended</dt><dd>{when(p.ended)}</dd></div>
        <div><dt>Duration</dt><dd>{took(p.duration)}</dd></div>
        <div><dt>Runner</dt><dd>{p.runner_version}</dd></div>
        {p.labels.length > 0 && <div class="span2"><dt>Labels</dt><dd>{p.labels.map((l) => <a key={l.id} class="label" href={`/ui/?label=${encodeURIComponent(l.name)}`}>{l.name}</a>)}</dd></div>}
      </dl>
      <p class="counts" data-counts><Counts items={p.items} keys={['plays', 'tasks', 'hosts', 'results', 'files', 'records']} /></p>
      {totals && (
        <p class="counts totals" data-totals aria-label="results by status">
          {TOTAL_KEYS.map((k) => <span key={k} class={`count s-${k}${totals[k] ? '' : ' none'}`}><b>{totals[k]}</b> {k}</span>)}
          <span class="count">{totals.changed_anything ? 'changed something' : 'changed nothing'}</span>
        </p>
      )}
    </>
  );
}

// ---- results: failures and unreachable first, then the rest, both by id ----

interface ResultsPage { rows: Result[]; count: number; failures: number }

async function resultsPage(id: number, offset: number, text: string, s: AbortSignal): Promise<ResultsPage> {
  // One page spans the failures and then the others. The first page reads both
  // at once; a later page needs the failure count to know where the others start.
  // `text`: only the results full-text search matches (q=, docs/search.md)
  const q = text ? `&q=${encodeURIComponent(text)}` : '';
  const failuresQ = (o: number) => get<Envelope<Result>>(`results?playbook=${id}&${FAILURES}${q}&limit=${PAGE}&offset=${o}`, s);
  const othersQ = (o: number) => get<Envelope<Result>>(`results?playbook=${id}&${OTHERS}${q}&limit=${PAGE}&offset=${o}`, s);
  let bad: Envelope<Result>;
  let rest: Envelope<Result>;
  if (offset === 0) [bad, rest] = await Promise.all([failuresQ(0), othersQ(0)]);
  else {
    bad = await failuresQ(offset);
    rest = await othersQ(Math.max(0, offset - bad.count));
  }
  const rows = bad.results.concat(rest.results).slice(0, PAGE);
  return { rows, count: bad.count + rest.count, failures: bad.count };
}

function ResultsTab({ id, ctx, tick }: { id: number; ctx: Context | null; tick: number }) {
  const [offset, setOffset] = useState(0);
  const [typed, setTyped] = useState('');
  const [text, setText] = useState('');
  const filter = useDebounced(() => { setText(typed.trim()); setOffset(0); }, 300);
  useEffect(filter, [typed]); // eslint-disable-line react-hooks/exhaustive-deps
  const page = useLoad((s) => resultsPage(id, offset, text, s), [id, offset, tick, text]);
  // for bench/ui_render.ts: when the first result rows are in the document
  useEffect(() => {
    if (page.data && ctx && page.data.rows.length && !performance.getEntriesByName('logbook:results-rendered').length) performance.mark('logbook:results-rendered');
  }, [page.data, ctx]);
  const box = (
    <label class="text-filter">Filter by text
      <input type="search" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} placeholder={'words of the output, "a phrase", host:web2, task:"check disk"'} autoComplete="off" />
    </label>
  );
  const bad = page.error ? badRequestText(page.error) : null;
  if (page.error && bad === null) return <Failure error={page.error} />;
  if (bad !== null) return <section aria-label="results">{box}<p class="notice error" role="alert">{bad}</p></section>;
  if (!page.data || !ctx) return <Loading />;
  const { rows, count } = page.data;
  return (
    <section aria-label="results">
      {box}
      {page.data.failures > 0 && <p class="notice error">{page.data.failures} failed or unreachable, listed first.</p>}
      <Table label="results">
        <thead><tr><th>Result</th><th>Status</th><th>Host</th><th>Task</th><th class="wide">Play</th><th class="wide">Started</th><th>Duration</th></tr></thead>
        <tbody>
          {rows.map((r) => {
            const task = ctx.tasks.get(r.task);
            return (
              <tr key={r.id} class={`result r-${r.status}`} data-result={r.id}>
                <td><a href={`/ui/results/${r.id}`}>#{r.id}</a></td>
                <td><Status value={r.status} /></td>
                <td><a href={`/ui/hosts/${r.host}`}>{ctx.hosts.get(r.host)?.name ?? `host ${r.host}`}</a></td>
                <td>{task ? <>{task.name || task.action} <a class="muted src" href={taskSource(task)} title="task source">{task.path.split('/').pop()}:{task.lineno}</a></> : `task ${r.task}`}</td>
                <td class="wide">{ctx.plays.get(r.play)?.name ?? ''}</td>
                <td class="nowrap wide">{when(r.started)}</td>
                <td class="nowrap">{took(r.duration)}</td>
              </tr>
            );
          })}
        </tbody>
      </Table>
      {count === 0 && <p class="muted">{text ? 'No result of this run matches.' : 'No results yet.'}</p>}
      <Pager count={count} offset={offset} limit={PAGE} go={setOffset} />
    </section>
  );
}

// ---- tasks -----------------------------------------------------------------

function TasksTab({ ctx }: { ctx: Context }) {
  const [offset, setOffset] = useState(0);
  const rows = ctx.taskList.slice(offset, offset + PAGE);
  return (
    <section aria-label="tasks">
      <Table label="tasks">
        <thead><tr><th>Status</th><th>Task</th><th class="wide">Action</th><th class="wide">Play</th><th>Source</th><th>Started</th><th>Duration</th><th class="num">Results</th></tr></thead>
        <tbody>
          {rows.map((t) => (
            <tr key={t.id} data-task={t.id}>
              <td><Status value={t.status} /></td>
              <td>{t.name || t.action}{t.handler && <span class="muted"> (handler)</span>}<TaskMessages task={t} /></td>
              <td class="wide"><code>{t.action}</code></td>
              <td class="wide">{ctx.plays.get(t.play)?.name ?? ''}</td>
              <td><a class="src" href={taskSource(t)}>{t.path.split('/').pop()}:{t.lineno}</a></td>
              <td class="nowrap">{when(t.started)}</td>
              <td class="nowrap">{took(t.duration)}</td>
              <td class="num">{t.items.results}</td>
            </tr>
          ))}
        </tbody>
      </Table>
      {ctx.taskList.length === 0 && <p class="muted">No tasks yet.</p>}
      <Pager count={ctx.taskList.length} offset={offset} limit={PAGE} go={setOffset} />
    </section>
  );
}

// ---- hosts and the tasks × hosts grid ---------------------------------------

const GRID_TASKS = 40;
const GRID_HOSTS = 60;

function HostsTab({ id, ctx, tick }: { id: number; ctx: Context; tick: number }) {
  const [offset, setOffset] = useState(0);
  const [hostOffset, setHostOffset] = useState(0);
  const [hostRows, setHostRows] = useState(0);
  // task → host → the worst result of that host in that task
  const cells = useLoad(async (s) => {
    const out = new Map<number, Map<number, Result>>();
    for (const r of await getAll<Result>(`results?playbook=${id}`, s)) {
      let row = out.get(r.task);
      if (!row) out.set(r.task, row = new Map());
      const seen = row.get(r.host);
      if (!seen || (STATUS_RANK[r.status] ?? 9) < (STATUS_RANK[seen.status] ?? 9)) row.set(r.host, r);
    }
    return out;
  }, [id, tick]);
  const tasks = ctx.taskList.slice(offset, offset + GRID_TASKS);
  const hosts = ctx.hostList.slice(hostOffset, hostOffset + GRID_HOSTS);
  return (
    <section aria-label="hosts">
      <Table label="hosts">
        <thead><tr><th>Host</th><th class="num">ok</th><th class="num">changed</th><th class="num">failed</th><th class="num">skipped</th><th class="num">unreachable</th></tr></thead>
        <tbody>
          {ctx.hostList.slice(hostRows, hostRows + PAGE).map((h) => (
            <tr key={h.id} data-host={h.id} class={h.unreachable ? 'r-unreachable' : h.failed ? 'r-failed' : ''}>
              <td><a href={`/ui/hosts/${h.id}`}>{h.name}</a></td>
              <td class="num">{h.ok}</td><td class="num">{h.changed}</td><td class="num">{h.failed}</td><td class="num">{h.skipped}</td><td class="num">{h.unreachable}</td>
            </tr>
          ))}
        </tbody>
      </Table>
      <Pager count={ctx.hostList.length} offset={hostRows} limit={PAGE} go={setHostRows} />
      <h2>Tasks × hosts</h2>
      {cells.error && <Failure error={cells.error} />}
      {!cells.data ? <Loading /> : (
        <>
          <div class="table-wrap" role="region" aria-label="tasks by hosts" tabIndex={0}>
            <table class="grid">
              <thead><tr><th>Task</th>{hosts.map((h) => <th key={h.id} class="vertical" scope="col"><a href={`/ui/hosts/${h.id}`}><span>{h.name}</span></a></th>)}</tr></thead>
              <tbody>
                {tasks.map((t) => {
                  const row = cells.data!.get(t.id);
                  return (
                    <tr key={t.id}>
                      <th scope="row" class="task-name">{t.name || t.action}</th>
                      {hosts.map((h) => {
                        const r = row?.get(h.id);
                        return <td key={h.id}>{r
                          ? <a class={`cell s-${r.status}`} href={`/ui/results/${r.id}`} title={`${h.name} · ${t.name || t.action}: ${r.status}`} aria-label={`${h.name}: ${r.status}`} />
                          : <span class="cell none" />}</td>;
                      })}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          <Pager count={ctx.taskList.length} offset={offset} limit={GRID_TASKS} go={setOffset} />
          {ctx.hostList.length > GRID_HOSTS && <Pager count={ctx.hostList.length} offset={hostOffset} limit={GRID_HOSTS} go={setHostOffset} />}
        </>
      )}
    </section>
  );
}

// ---- plays, files, records ------------------------------------------------------

function PlaysTab({ ctx }: { ctx: Context }) {
  const plays = [...ctx.plays.values()];
  return (
    <Table label="plays">
      <thead><tr><th>Status</th><th>Play</th><th>Started</th><th>Duration</th><th class="num">Tasks</th><th class="num">Results</th></tr></thead>
      <tbody>
        {plays.map((p) => (
          <tr key={p.id}><td><Status value={p.status} /></td><td>{p.name || p.uuid}</td><td class="nowrap">{when(p.started)}</td>
            <td class="nowrap">{took(p.duration)}</td><td class="num">{p.items.tasks}</td><td class="num">{p.items.results}</td></tr>
        ))}
      </tbody>
    </Table>
  );
}

function FilesTab({ id, tick }: { id: number; tick: number }) {
  const files = useLoad((s) => getAll<FileRow>(`files?playbook=${id}&order=path`, s), [id, tick]);
  if (files.error) return <Failure error={files.error} />;
  if (!files.data) return <Loading />;
  return (
    <ul class="files">
      {files.data.map((f) => <li key={f.id}><a href={`/ui/files/${f.id}`}>{f.path}</a></li>)}
      {files.data.length === 0 && <li class="muted">No files.</li>}
    </ul>
  );
}

function RecordsTab({ id, tick }: { id: number; tick: number }) {
  const records = useLoad(async (s) => {
    const rows = await getAll<RecordRow>(`records?playbook=${id}&order=key`, s, 1000);
    // the list row has no value: read the first ones in full
    return Promise.all(rows.slice(0, 100).map((r) => get<RecordRow>(`records/${r.id}`, s)));
  }, [id, tick]);
  const sorted = useMemo(() => records.data ?? [], [records.data]);
  if (records.error) return <Failure error={records.error} />;
  if (!records.data) return <Loading />;
  return (
    <Table label="records">
      <thead><tr><th>Key</th><th>Type</th><th>Value</th></tr></thead>
      <tbody>
        {sorted.map((r) => <tr key={r.id}><td><code>{r.key}</code></td><td>{r.type}</td><td><pre class="json small">{pretty(r.value)}</pre></td></tr>)}
        {sorted.length === 0 && <tr><td colSpan={3} class="muted">No records.</td></tr>}
      </tbody>
    </Table>
  );
}
