// `/ui/records/<id>`: one record of a run (ARA's `ara_record`): its key, type
// and value. ARA's `/records/<id>.html` leads here.
import { get, type Playbook, type RecordRow } from '../api.js';
import { Failure, Loading } from '../components.js';
import { pretty } from '../format.js';
import { useLoad } from '../hooks.js';

export function RecordPage({ id }: { id: number }) {
  const record = useLoad((s) => get<Omit<RecordRow, 'playbook'> & { playbook: Playbook }>(`records/${id}`, s), [id]);
  if (record.error) return <Failure error={record.error} />;
  const r = record.data;
  if (!r) return <Loading />;
  return (
    <article>
      <p class="crumbs"><a href="/ui/">Playbooks</a> / <a href={`/ui/playbooks/${r.playbook.id}?tab=records`}>{r.playbook.name || r.playbook.path}</a> / record</p>
      <h1>{r.key}</h1>
      <p class="muted">type <code>{r.type}</code></p>
      <pre class="json">{typeof r.value === 'string' ? r.value : pretty(r.value)}</pre>
    </article>
  );
}
