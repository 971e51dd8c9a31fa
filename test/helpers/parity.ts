// Everything a logbook server recorded for one playbook, read through the
// API (lists and details), keyed by what identifies each object across two
// recordings of the same run (names, paths, keys, order among equals) instead
// of ids, with the fields that legitimately differ between two runs left out
// (ids, uuids, created/updated, started/ended/duration) and the run-specific
// values inside contents (command timings, async job ids, temp paths, the
// run's own directories) replaced by placeholders. Two recordings of the same
// deterministic run, by two callbacks, give equal dumps; `diffDumps` lists
// where they are not, field by field.
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { listAll, mapLimit, type Resource } from './dump.js';
import { api } from './server.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Per section, natural key → the object as read back, normalised. */
export type ParityDump = Record<string, Record<string, Json>>;

/** Fields left out everywhere: ids (replaced by natural keys), server times, uuids the runner makes up per run. */
const DROPPED = new Set(['id', 'uuid', 'created', 'updated', 'playbook']);

/** Keys inside a result's content whose value differs from one run of the same task to the next. */
const VOLATILE_CONTENT_KEYS = new Set([
  'start', 'end', 'delta', // command, shell
  'ansible_job_id', 'results_file', // async
  'attempts', // until/retries: as many as the timing needed
  'created', 'updated', // ara_record: server times
]);

export interface NormaliseOptions {
  /** strings (directories) that differ between the two runs, each replaced by its placeholder */
  replace?: Array<[string, string]>;
}

/** Strings longer than this are compared by length and digest (a 1 MB output stays readable in a diff). */
const LONG = 2048;

function normaliseValue(v: Json, opts: NormaliseOptions, key?: string): Json {
  if (key !== undefined && VOLATILE_CONTENT_KEYS.has(key) && v !== null && v !== undefined) return `<${key}>`;
  if (typeof v === 'string') {
    let s = v;
    for (const [from, to] of opts.replace ?? []) s = s.split(from).join(to);
    s = s.replace(/\/tmp\/logbook-ansible-[A-Za-z0-9]+/g, '<ansible-work>')
      .replace(/ansible-tmp-[0-9.]+-\d+-\d+/g, 'ansible-tmp-<n>')
      .replace(/ansible-local-\w+\/tmp\w+/g, 'ansible-local-<tmp>');
    if (s.length > LONG) return `<${s.length} chars, sha1 ${createHash('sha1').update(s).digest('hex')}>`;
    return s;
  }
  if (Array.isArray(v)) return v.map((x) => normaliseValue(x, opts));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, Json> = {};
    for (const k of Object.keys(v).sort()) out[k] = normaliseValue(v[k], opts, k);
    return out;
  }
  return v;
}

/** Times that differ from run to run: only whether they are set is compared. */
const TIMES = new Set(['started', 'ended', 'duration']);

function strip(row: Json, also: string[] = []): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(row)) {
    if (also.includes(k)) continue;
    if (TIMES.has(k)) out[k] = v === null || v === undefined ? null : '<set>';
    else if (!DROPPED.has(k)) out[k] = v;
  }
  return out;
}

async function detail(url: string, resource: Resource, id: number): Promise<Json> {
  const res = await api(url, 'GET', `/api/v1/${resource}/${id}`);
  if (res.status !== 200) throw new Error(`GET ${resource}/${id} → ${res.status} ${res.text.slice(0, 300)}`);
  return res.body;
}

/** Key → value, with "#2", "#3"… on keys seen before (in id order: the order the recorder created them). */
function keyed(rows: Json[], key: (row: Json) => string, value: (row: Json) => Json): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const row of [...rows].sort((a, b) => a.id - b.id)) {
    const k = key(row);
    let name = k;
    for (let n = 2; name in out; n++) name = `${k} #${n}`;
    out[name] = value(row);
  }
  return out;
}

/** The playbook (newest by default) and everything under it, as `ParityDump`. */
export async function parityDump(url: string, playbookId?: number, opts: NormaliseOptions = {}): Promise<ParityDump> {
  const id = playbookId ?? (await api(url, 'GET', '/api/v1/playbooks?order=-id&limit=1')).body.results[0]?.id;
  if (id === undefined) throw new Error(`no playbook on ${url}`);
  const q = `playbook=${id}`;
  const [plays, tasks, hosts, results, files, records] = await Promise.all(
    (['plays', 'tasks', 'hosts', 'results', 'files', 'records'] as const).map((r) => listAll(url, r, q)),
  );
  const pb = await detail(url, 'playbooks', id);
  const norm = (v: Json) => normaliseValue(v, opts);

  const playKey = new Map<number, string>();
  const playsOut = keyed(plays, (p) => `${p.name}`, (p) => p);
  for (const [k, p] of Object.entries(playsOut)) playKey.set(p.id, k);
  const fileById = new Map<number, Json>(files.map((f) => [f.id, f]));
  const fileOf = (t: Json) => (typeof t.file === 'object' && t.file !== null ? t.file.path : fileById.get(t.file)?.path);
  const taskKey = new Map<number, string>();
  const tasksOut = keyed(tasks, (t) => `${playKey.get(typeof t.play === 'object' ? t.play.id : t.play)} | ${t.name} | ${norm(fileOf(t))}:${t.lineno}${t.handler ? ' (handler)' : ''}`, (t) => t);
  for (const [k, t] of Object.entries(tasksOut)) taskKey.set(t.id, k);
  const hostName = new Map<number, string>(hosts.map((h) => [h.id, h.name]));
  const ref = (v: Json, names: Map<number, string>) => names.get(typeof v === 'object' && v !== null ? v.id : v) ?? `?${JSON.stringify(v)}`;

  const [resultDetails, hostDetails, recordDetails, fileDetails] = await Promise.all([
    mapLimit(results, 8, (r) => detail(url, 'results', r.id)),
    mapLimit(hosts, 8, (h) => detail(url, 'hosts', h.id)),
    mapLimit(records, 8, (r) => detail(url, 'records', r.id)),
    mapLimit(files, 8, (f) => detail(url, 'files', f.id)),
  ]);

  const dump: ParityDump = {};
  dump.playbook = {
    playbook: norm({ ...strip(pb, ['labels', 'file']), labels: (pb.labels ?? []).map((l: Json) => l.name).sort() }),
  };
  dump.plays = Object.fromEntries(Object.entries(playsOut).map(([k, p]) => [k, norm(strip(p))]));
  dump.tasks = Object.fromEntries(Object.entries(tasksOut).map(([k, t]) => [k, norm({ ...strip(t, ['play', 'file']), path: fileOf(t) })]));
  dump.hosts = keyed(hostDetails, (h) => h.name, (h) => norm(strip(h)));
  dump.files = keyed(fileDetails, (f) => norm(f.path), (f) => norm(strip(f)));
  dump.records = keyed(recordDetails, (r) => r.key, (r) => norm(strip(r)));
  dump.results = keyed(resultDetails,
    (r) => `${taskKey.get(typeof r.task === 'object' ? r.task.id : r.task)} @ ${ref(r.host, hostName)}`,
    (r) => norm({
      ...strip(r, ['task', 'play', 'host']),
      delegated_to: Array.isArray(r.delegated_to) ? r.delegated_to.map((d: Json) => ref(d, hostName)) : r.delegated_to,
    }));
  return dump;
}

/** Where two dumps differ: one line per object only in one of them, per field that differs. */
export function diffDumps(a: ParityDump, b: ParityDump, aName = 'a', bName = 'b'): string[] {
  const out: string[] = [];
  const show = (v: Json) => { const s = JSON.stringify(v); return s === undefined ? 'undefined' : s.length > 400 ? `${s.slice(0, 400)}…` : s; };
  for (const section of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const sa = a[section] ?? {};
    const sb = b[section] ?? {};
    for (const key of new Set([...Object.keys(sa), ...Object.keys(sb)])) {
      if (!(key in sb)) { out.push(`${section} [${key}]: only in ${aName}: ${show(sa[key])}`); continue; }
      if (!(key in sa)) { out.push(`${section} [${key}]: only in ${bName}: ${show(sb[key])}`); continue; }
      diffValue(sa[key], sb[key], `${section} [${key}]`, out, aName, bName, show);
    }
  }
  return out;
}

function diffValue(x: Json, y: Json, at: string, out: string[], aName: string, bName: string, show: (v: Json) => string): void {
  if (isDeepStrictEqual(x, y)) return;
  const isObj = (v: Json) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (isObj(x) && isObj(y)) {
    for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) diffValue(x[k], y[k], `${at}.${k}`, out, aName, bName, show);
    return;
  }
  if (Array.isArray(x) && Array.isArray(y) && x.length === y.length) {
    x.forEach((v, i) => diffValue(v, y[i], `${at}[${i}]`, out, aName, bName, show));
    return;
  }
  out.push(`${at}: ${aName} ${show(x)} | ${bName} ${show(y)}`);
}
