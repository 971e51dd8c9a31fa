// In-memory rows of a playbook aggregate. Every field is assigned in the
// constructor so V8 gives each class one stable hidden shape. Timestamps are µs
// since the epoch; JSON values are the client's minified JSON text.

export class PlaybookRow {
  id: number; created: number; updated: number;
  started: number; ended: number | null;
  name: string | null; runnerVersion: string; status: string; path: string;
  arguments: string; labels: number[];
  controller: string | null; user: string | null;
  /** JSON of summary(playbook), rebuilt lazily after any change (null = stale) */
  summaryCache: string | null;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.created = d.created; this.updated = d.updated;
    this.started = d.started; this.ended = d.ended ?? null;
    this.name = d.name ?? null; this.runnerVersion = d.runner_version; this.status = d.status ?? 'unknown';
    this.path = d.path; this.arguments = d.arguments ?? '{}'; this.labels = d.labels ?? [];
    this.controller = d.controller ?? null; this.user = d.user ?? null;
    this.summaryCache = null;
  }
}

export class PlayRow {
  id: number; playbook: number; created: number; updated: number;
  started: number; ended: number | null;
  name: string | null; uuid: string; status: string;
  /** items.tasks and items.results, kept as children come and go */
  tasks: number; results: number;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.created = d.created; this.updated = d.updated;
    this.started = d.started; this.ended = d.ended ?? null;
    this.name = d.name ?? null; this.uuid = d.uuid; this.status = d.status ?? 'unknown';
    this.tasks = 0; this.results = 0;
  }
}

export class TaskRow {
  id: number; playbook: number; play: number; file: number;
  created: number; updated: number; started: number; ended: number | null;
  name: string | null; action: string; lineno: number; handler: boolean;
  tags: string; status: string;
  /** items.results */
  results: number;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.play = d.play; this.file = d.file;
    this.created = d.created; this.updated = d.updated; this.started = d.started; this.ended = d.ended ?? null;
    this.name = d.name ?? null; this.action = d.action; this.lineno = d.lineno; this.handler = d.handler;
    this.tags = d.tags ?? '[]'; this.status = d.status ?? 'unknown';
    this.results = 0;
  }
}

export class HostRow {
  id: number; playbook: number; created: number; updated: number;
  name: string; facts: string;
  changed: number; failed: number; ok: number; skipped: number; unreachable: number;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.created = d.created; this.updated = d.updated;
    this.name = d.name; this.facts = d.facts ?? '{}';
    this.changed = d.changed ?? 0; this.failed = d.failed ?? 0; this.ok = d.ok ?? 0;
    this.skipped = d.skipped ?? 0; this.unreachable = d.unreachable ?? 0;
  }
}

export class ResultRow {
  id: number; playbook: number; play: number; task: number; host: number;
  created: number; updated: number; started: number; ended: number | null;
  /** the stored status; the shown one is derived (see shownStatus) */
  status: string; changed: boolean; ignoreErrors: boolean;
  content: string; delegatedTo: number[];
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.play = d.play; this.task = d.task; this.host = d.host;
    this.created = d.created; this.updated = d.updated; this.started = d.started; this.ended = d.ended ?? null;
    this.status = d.status ?? 'unknown'; this.changed = d.changed ?? false; this.ignoreErrors = d.ignore_errors ?? false;
    this.content = d.content ?? '{}'; this.delegatedTo = d.delegated_to ?? [];
  }
}

export class FileRow {
  id: number; playbook: number; created: number; updated: number;
  path: string; sha1: string; content: string;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.created = d.created; this.updated = d.updated;
    this.path = d.path; this.sha1 = d.sha1; this.content = d.content;
  }
}

export class RecordRow {
  id: number; playbook: number; created: number; updated: number;
  key: string; type: string; value: string;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.created = d.created; this.updated = d.updated;
    this.key = d.key; this.type = d.type; this.value = d.value ?? '""';
  }
}

export type ChildRow = PlayRow | TaskRow | HostRow | ResultRow | FileRow | RecordRow;

/** Result status as every representation shows it (SPEC §4). */
export function shownStatus(r: ResultRow): string {
  if (r.status === 'ok' && r.changed) return 'changed';
  if (r.status === 'failed' && r.ignoreErrors) return 'ignored';
  return r.status;
}

/** Which host counters one result adds to, by Ansible's recap rules (SPEC §4). */
export function addToHost(host: HostRow, r: ResultRow, sign: 1 | -1): void {
  switch (shownStatus(r)) {
    case 'ok': host.ok += sign; break;
    case 'changed': host.ok += sign; host.changed += sign; break;
    case 'ignored': host.ok += sign; if (r.changed) host.changed += sign; break;
    case 'failed': host.failed += sign; if (r.changed) host.changed += sign; break;
    case 'skipped': host.skipped += sign; break;
    case 'unreachable': host.unreachable += sign; break;
    default: break; // 'unknown' counts nowhere
  }
}
