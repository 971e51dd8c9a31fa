// `/ui/results/<id>`: one result: its status, host, task (with a link to the
// task's line in its file) and its content, pretty-printed.
import { get, type ResultDetail } from '../api.js';
import { Failure, Loading, Status } from '../components.js';
import { pretty, took, when } from '../format.js';
import { useLoad } from '../hooks.js';

export function ResultPage({ id }: { id: number }) {
  const result = useLoad((s) => get<ResultDetail>(`results/${id}`, s), [id]);
  if (result.error) return <Failure error={result.error} />;
  const r = result.data;
  if (!r) return <Loading />;
  const t = r.task;
  return (
    <article>
      <p class="crumbs"><a href="/ui/">Playbooks</a> / <a href={`/ui/playbooks/${r.playbook.id}`}>{r.playbook.name || r.playbook.path}</a> / result #{r.id}</p>
      <h1><Status value={r.status} /> {t.name || t.action} <span class="muted">on</span> {r.host.name}</h1>
      <dl class="summary">
        <div><dt>Host</dt><dd><a href={`/ui/hosts/${r.host.id}`}>{r.host.name}</a></dd></div>
        <div><dt>Task</dt><dd>{t.name || t.action} (<code>{t.action}</code>)</dd></div>
        <div class="span2"><dt>Source</dt><dd><a class="src" href={`/ui/files/${t.file}?line=${t.lineno}`}>{t.path}:{t.lineno}</a></dd></div>
        <div><dt>Play</dt><dd>{r.play.name || r.play.uuid}</dd></div>
        <div><dt>Started</dt><dd>{when(r.started)}</dd></div>
        <div><dt>Duration</dt><dd>{took(r.duration)}</dd></div>
        <div><dt>Changed</dt><dd>{r.changed ? 'yes' : 'no'}</dd></div>
        {r.ignore_errors && <div><dt>Errors</dt><dd>ignored</dd></div>}
      </dl>
      <h2>Content</h2>
      <pre class="json content" tabIndex={0}>{pretty(r.content)}</pre>
    </article>
  );
}
