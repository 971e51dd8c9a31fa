// Everything a server serves about one playbook, with ids replaced by natural
// keys and times by microseconds since the epoch, so that ARA's and logbook's
// copies of the same run compare field by field: timestamps, durations,
// statuses, counters, labels, contents, facts, file texts and record values.
// Only what the ARA importer documents as different is left out: created /
// updated (the time of the copy), and the values of the keys both servers
// replace with their own notice (extra_vars, ansible_env).
type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

async function getJson(base: string, path: string, headers: Record<string, string>): Promise<Json> {
  const res = await fetch(base + path, { headers: { accept: 'application/json', ...headers } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${base}${path} → ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

async function listAll(base: string, resource: string, playbook: number, headers: Record<string, string>): Promise<Json[]> {
  const rows: Json[] = [];
  for (let offset = 0; ;) {
    const page = await getJson(base, `/api/v1/${resource}?playbook=${playbook}&order=id&limit=200&offset=${offset}`, headers);
    rows.push(...page.results);
    if (!page.next || page.results.length === 0) return rows;
    offset += page.results.length;
  }
}

/** `2026-11-22T16:02:56.6151Z` / `…:56Z` / `…+01:00` → microseconds since the epoch (a string: exact). */
export function micros(ts: string | null | undefined): string | null {
  if (ts === null || ts === undefined) return null;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(Z|[+-]\d\d:\d\d)$/.exec(ts);
  if (!m) throw new Error(`not a timestamp: ${ts}`);
  return (BigInt(Date.parse(m[1]! + m[3]!)) * 1000n + BigInt((m[2] ?? '').padEnd(6, '0'))).toString();
}

/** `[D ]HH:MM:SS[.ffffff]` → microseconds. */
export function durationMicros(d: string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  const m = /^(?:(-?\d+) )?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?$/.exec(d);
  if (!m) throw new Error(`not a duration: ${d}`);
  const secs = BigInt(m[1] ?? 0) * 86400n + BigInt(m[2]!) * 3600n + BigInt(m[3]!) * 60n + BigInt(m[4]!);
  return (secs * 1_000_000n + BigInt((m[5] ?? '').padEnd(6, '0'))).toString();
}

const times = (x: Json) => ({ started: micros(x.started), ended: micros(x.ended), duration: durationMicros(x.duration) });

/** Values that both servers replace with their own notice text. */
function withoutNotices(obj: Json, keys: string[]): Json {
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return obj;
  const out: Json = {};
  for (const [k, v] of Object.entries(obj)) out[k] = keys.includes(k) ? '(notice)' : v;
  return out;
}

function resultContent(content: Json): Json {
  if (!content || typeof content !== 'object' || Array.isArray(content)) return content;
  if (!content.ansible_facts) return content;
  return { ...content, ansible_facts: withoutNotices(content.ansible_facts, ['ansible_env']) };
}

const sortBy = <T>(rows: T[], key: (x: T) => string): T[] => rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

/** `headers`: e.g. an Authorization for a server that requires a read login. */
export async function fullRun(base: string, id: number, headers: Record<string, string> = {}): Promise<Json> {
  const pb = await getJson(base, `/api/v1/playbooks/${id}`, headers);
  const [plays, tasks, hosts, results, files, records] = await Promise.all(
    ['plays', 'tasks', 'hosts', 'results', 'files', 'records'].map((r) => listAll(base, r, id, headers)),
  );
  const detail = (resource: string) => async (row: Json) => getJson(base, `/api/v1/${resource}/${row.id}`, headers);
  const fileD = await Promise.all(files.map(detail('files')));
  const hostD = await Promise.all(hosts.map(detail('hosts')));
  const recordD = await Promise.all(records.map(detail('records')));
  const resultD: Json[] = [];
  for (let i = 0; i < results.length; i += 16) resultD.push(...await Promise.all(results.slice(i, i + 16).map(detail('results'))));

  const play = new Map<number, string>(plays.map((p: Json) => [p.id, p.uuid]));
  const file = new Map<number, string>(files.map((f: Json) => [f.id, f.path]));
  const host = new Map<number, string>(hosts.map((h: Json) => [h.id, h.name]));
  // a task's identity: its play, file:line, name and start time (a task started twice is two tasks)
  const task = new Map<number, string>(tasks.map((t: Json) => [t.id, `${play.get(t.play)} ${file.get(t.file)}:${t.lineno} ${t.name} @${micros(t.started)}`]));

  return {
    playbook: {
      name: pb.name, path: pb.path, status: pb.status, ...times(pb),
      runner_version: pb.runner_version ?? pb.ansible_version,
      controller: pb.controller ?? null,
      labels: (pb.labels ?? []).map((l: Json) => l.name).sort(),
      items: pb.items,
      arguments: withoutNotices(pb.arguments, ['extra_vars']),
    },
    plays: sortBy(plays.map((p: Json) => ({ uuid: p.uuid, name: p.name, status: p.status, ...times(p), items: p.items })), (p) => `${p.started} ${p.uuid}`),
    tasks: sortBy(tasks.map((t: Json) => ({
      key: task.get(t.id), name: t.name, action: t.action, lineno: t.lineno, handler: t.handler, tags: t.tags,
      status: t.status, ...times(t), path: t.path, file: file.get(t.file), play: play.get(t.play), items: t.items,
    })), (t) => t.key!),
    files: sortBy(fileD.map((f: Json) => ({ path: f.path, sha1: f.sha1, content: f.content })), (f) => f.path),
    hosts: sortBy(hostD.map((h: Json) => ({
      name: h.name, ok: h.ok, changed: h.changed, failed: h.failed, skipped: h.skipped, unreachable: h.unreachable,
      facts: withoutNotices(h.facts, ['ansible_env']),
    })), (h) => h.name),
    results: sortBy(resultD.map((r: Json, i: number) => ({
      task: task.get(r.task?.id ?? r.task), host: host.get(r.host?.id ?? r.host),
      status: r.status, changed: r.changed, ignore_errors: r.ignore_errors, ...times(r),
      // list rows carry delegated_to (ARA 1.5; logbook in compatibility mode)
      delegated_to: (results[i].delegated_to ?? []).map((d: number) => host.get(d)).sort(),
      content: resultContent(r.content),
    })), (r) => `${r.task} ${r.host} ${r.started}`),
    records: sortBy(recordD.map((r: Json) => ({ key: r.key, type: r.type, value: r.value })), (r) => r.key),
  };
}
