// `/ui/results/<id>`: one result: its status, host, task (with a link to the
// task's line in its file), what the module printed, and its content,
// pretty-printed.
import { get, type ResultDetail, type Task } from '../api.js';
import { Failure, Loading, Status, TaskMessages } from '../components.js';
import { pretty, took, when } from '../format.js';
import { useLoad } from '../hooks.js';

export function ResultPage({ id }: { id: number }) {
  const result = useLoad((s) => get<ResultDetail>(`results/${id}`, s), [id]);
  // the task's warnings, deprecations and exceptions are ARA's fields: its detail in ARA's dialect has them
  const taskId = result.data?.task.id;
  const task = useLoad((s) => (taskId ? get<Task>(`tasks/${taskId}?dialect=ara`, s) : Promise.resolve(null)), [taskId]);
  if (result.error) return <Failure error={result.error} />;
  const r = result.data;
  if (!r) return <Loading />;
  const t = r.task;
  const run = commandOf(r.content);
  const output = outputOf(r.content);
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
        {run.cmd !== null && <div class="span2"><dt>Command</dt><dd><code>{run.cmd}</code></dd></div>}
        {run.rc !== null && <div><dt>Return code</dt><dd class={run.rc === 0 ? '' : 'bad'}>{run.rc}</dd></div>}
      </dl>
      {task.data && <TaskMessages task={task.data} open />}
      {output.length > 0 && (
        <section class="output">
          <h2>Output</h2>
          {output.map(([field, text]) => (
            <div key={field} class={`out out-${field}`}>
              <h3>{field}</h3>
              <pre class="text" tabIndex={0}>{text}</pre>
            </div>
          ))}
        </section>
      )}
      <h2>Content</h2>
      <pre class="json content" tabIndex={0}>{pretty(r.content)}</pre>
    </article>
  );
}

/**
 * What a reader of a result looks for first, as text with its real line breaks
 * (in the content's JSON, a command's stdout is one long line of `\n`s): the
 * message, the module's output streams and a Python traceback, in that order.
 */
const OUTPUT_FIELDS = ['msg', 'stdout', 'stderr', 'module_stdout', 'module_stderr', 'exception'] as const;

function outputOf(content: unknown): Array<[string, string]> {
  if (content === null || typeof content !== 'object' || Array.isArray(content)) return [];
  const c = content as Record<string, unknown>;
  const out: Array<[string, string]> = [];
  for (const field of OUTPUT_FIELDS) {
    const v = c[field];
    if (typeof v === 'string' && v.trim() !== '') out.push([field, v]);
  }
  return out;
}

/**
 * The command a command/shell/raw task ran (`cmd`: a string, or argv as a list,
 * shown quoted as a shell would need it) and its return code.
 */
function commandOf(content: unknown): { cmd: string | null; rc: number | null } {
  if (content === null || typeof content !== 'object' || Array.isArray(content)) return { cmd: null, rc: null };
  const c = content as Record<string, unknown>;
  const cmd = typeof c.cmd === 'string' ? c.cmd
    : Array.isArray(c.cmd) && c.cmd.every((a) => typeof a === 'string') ? (c.cmd as string[]).map(shellWord).join(' ') : null;
  return { cmd: cmd === '' ? null : cmd, rc: typeof c.rc === 'number' ? c.rc : null };
}

/** One argument as a POSIX shell reads it back: bare when that is safe, else single-quoted. */
function shellWord(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
