// `/ui/files/<id>?line=N`: a file of a run with line numbers; line N is
// highlighted and scrolled into view (tasks and results link here).
import { useEffect, useMemo } from 'preact/hooks';
import { get, type FileDetail } from '../api.js';
import { Failure, Loading } from '../components.js';
import { useLoad } from '../hooks.js';

export function FilePage({ id, line }: { id: number; line: number | null }) {
  const file = useLoad((s) => get<FileDetail>(`files/${id}`, s), [id]);
  const lines = useMemo(() => (file.data ? file.data.content.split('\n') : []), [file.data]);
  useEffect(() => {
    if (line && lines.length) document.getElementById(`L${line}`)?.scrollIntoView({ block: 'center' });
  }, [line, lines]);
  if (file.error) return <Failure error={file.error} />;
  const f = file.data;
  if (!f) return <Loading />;
  return (
    <article>
      <p class="crumbs"><a href="/ui/">Playbooks</a> / <a href={`/ui/playbooks/${f.playbook.id}?tab=files`}>{f.playbook.name || f.playbook.path}</a> / file</p>
      <h1 class="path">{f.path}</h1>
      <p class="muted">{lines.length} lines · sha1 <code>{f.sha1.slice(0, 12)}</code></p>
      <div class="source" role="region" aria-label="source" tabIndex={0}>
        {lines.map((text, i) => {
          const n = i + 1;
          return (
            <div key={n} id={`L${n}`} class={n === line ? 'line hl' : 'line'} aria-current={n === line ? 'true' : undefined}>
              <a class="ln" href={`/ui/files/${id}?line=${n}`} tabIndex={-1}>{n}</a><code>{text || ' '}</code>
            </div>
          );
        })}
      </div>
    </article>
  );
}
