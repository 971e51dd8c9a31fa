// In-memory rows of a playbook aggregate. Every field is assigned in the
// constructor so V8 gives each class one stable hidden shape. Timestamps are µs
// since the epoch. Large JSON values (arguments, facts, content, value, file
// text) are not here: they live in the blob store (keyed by src/shard/blobs.ts).
// Each class also converts to and from a positional array for snapshots.

const NO_IDS: readonly number[] = Object.freeze([]) as readonly number[];

/** Statuses decoded from a snapshot are fresh strings; share the constants instead (16+ bytes a row). */
const STATUS = new Map<string, string>(['ok', 'failed', 'skipped', 'unreachable', 'changed', 'ignored', 'unknown', 'running', 'completed', 'expired'].map((s) => [s, s]));
const intern = (s: string): string => STATUS.get(s) ?? s;

export class PlaybookRow {
  id: number; created: number; updated: number;
  started: number; ended: number | null;
  name: string | null; runnerVersion: string; status: string; path: string;
  labels: number[];
  controller: string | null; user: string | null;
  /** ARA's client_version and python_version: the recording client's versions (null when not sent) */
  clientVersion: string | null; pythonVersion: string | null;
  /** the client's key of a batch-ingest stream (docs/api.md#batch-ingest), or one given on POST */
  uuid: string | null;
  /** last batch `seq` applied by batch ingest (0: none): duplicates and gaps are told from it */
  ingestSeq: number;
  /**
   * digest of the body of that last applied batch (batchDigest): the same `seq` with another body is
   * refused rather than taken for a duplicate. null: none yet, or the batch was applied by a version
   * that kept no digest (journal entries and snapshots from before it); then a repeat of that `seq`
   * is answered as a duplicate whatever its body, as it was then.
   */
  ingestDigest: string | null;
  /** JSON of summary(playbook), rebuilt lazily after any change (null = stale) */
  summaryCache: string | null;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.created = d.created; this.updated = d.updated;
    this.started = d.started; this.ended = d.ended ?? null;
    this.name = d.name ?? null; this.runnerVersion = d.runner_version; this.status = d.status ?? 'unknown';
    this.path = d.path; this.labels = d.labels ?? [];
    this.controller = d.controller ?? null; this.user = d.user ?? null;
    this.uuid = d.uuid ?? null; this.ingestSeq = d.ingest_seq ?? 0;
    this.ingestDigest = d.ingest_digest ?? null;
    this.clientVersion = d.client_version ?? null; this.pythonVersion = d.python_version ?? null;
    this.summaryCache = null;
  }
  toArray(): unknown[] {
    return [this.id, this.created, this.updated, this.started, this.ended, this.name, this.runnerVersion,
      this.status, this.path, this.labels, this.controller, this.user, this.uuid, this.ingestSeq,
      this.clientVersion, this.pythonVersion, this.ingestDigest];
  }
  /** Snapshots written before uuid/ingestSeq existed have 12 elements, before client/python versions 14, before ingestDigest 16: the rest default. */
  static fromArray(a: any[]): PlaybookRow {
    return new PlaybookRow({ id: a[0], created: a[1], updated: a[2], started: a[3], ended: a[4], name: a[5],
      runner_version: a[6], status: a[7], path: a[8], labels: a[9], controller: a[10], user: a[11],
      uuid: a[12], ingest_seq: a[13], client_version: a[14], python_version: a[15], ingest_digest: a[16] });
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
  toArray(): unknown[] {
    return [this.id, this.playbook, this.created, this.updated, this.started, this.ended, this.name, this.uuid, this.status];
  }
  static fromArray(a: any[]): PlayRow {
    return new PlayRow({ id: a[0], playbook: a[1], created: a[2], updated: a[3], started: a[4], ended: a[5],
      name: a[6], uuid: a[7], status: a[8] });
  }
}

export class TaskRow {
  id: number; playbook: number; play: number; file: number;
  created: number; updated: number; started: number; ended: number | null;
  name: string | null; action: string; lineno: number; handler: boolean;
  tags: string; status: string;
  /** ARA's task warnings, deprecations and exceptions: JSON text as sent ('[]' by default) */
  warnings: string; deprecations: string; exceptions: string;
  /** the client's key of one task start (docs/api.md#batch-ingest), null when not given */
  uuid: string | null;
  /** items.results */
  results: number;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.play = d.play; this.file = d.file;
    this.created = d.created; this.updated = d.updated; this.started = d.started; this.ended = d.ended ?? null;
    this.name = d.name ?? null; this.action = d.action; this.lineno = d.lineno; this.handler = d.handler;
    this.tags = d.tags ?? '[]'; this.status = d.status ?? 'unknown'; this.uuid = d.uuid ?? null;
    this.warnings = d.warnings ?? '[]'; this.deprecations = d.deprecations ?? '[]'; this.exceptions = d.exceptions ?? '[]';
    this.results = 0;
  }
  toArray(): unknown[] {
    return [this.id, this.playbook, this.play, this.file, this.created, this.updated, this.started, this.ended,
      this.name, this.action, this.lineno, this.handler, this.tags, this.status, this.uuid,
      this.warnings, this.deprecations, this.exceptions];
  }
  /** Snapshots written before warnings/deprecations/exceptions existed have 15 elements: those default to []. */
  static fromArray(a: any[]): TaskRow {
    return new TaskRow({ id: a[0], playbook: a[1], play: a[2], file: a[3], created: a[4], updated: a[5], started: a[6],
      ended: a[7], name: a[8], action: a[9], lineno: a[10], handler: a[11], tags: a[12], status: intern(a[13]), uuid: a[14],
      warnings: a[15], deprecations: a[16], exceptions: a[17] });
  }
}

/** The host counters a write can set. */
export const HOST_COUNTERS = ['changed', 'failed', 'ok', 'skipped', 'unreachable'] as const;

/** A write's fields set a host counter. */
export function setsCounter(d: Record<string, unknown>): boolean {
  for (const c of HOST_COUNTERS) if (c in d) return true;
  return false;
}

export class HostRow {
  id: number; playbook: number; created: number; updated: number;
  name: string;
  changed: number; failed: number; ok: number; skipped: number; unreachable: number;
  /**
   * A write set a counter (both Ansible callbacks send the final stats): from then
   * on the counters are that value plus later results, not a recount of the results
   * (docs/api.md#derived-state), which `logbook check` must not take for damage.
   */
  countersSet: boolean;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.created = d.created; this.updated = d.updated;
    this.name = d.name;
    this.changed = d.changed ?? 0; this.failed = d.failed ?? 0; this.ok = d.ok ?? 0;
    this.skipped = d.skipped ?? 0; this.unreachable = d.unreachable ?? 0;
    this.countersSet = d.countersSet ?? setsCounter(d);
  }
  toArray(): unknown[] {
    const a: unknown[] = [this.id, this.playbook, this.created, this.updated, this.name,
      this.changed, this.failed, this.ok, this.skipped, this.unreachable];
    if (this.countersSet) a.push(1); // absent in snapshots of rows never set (and in those written before the flag)
    return a;
  }
  static fromArray(a: any[]): HostRow {
    return new HostRow({ id: a[0], playbook: a[1], created: a[2], updated: a[3], name: a[4],
      changed: a[5], failed: a[6], ok: a[7], skipped: a[8], unreachable: a[9], countersSet: a[10] === 1 });
  }
}

export class ResultRow {
  id: number; playbook: number; play: number; task: number; host: number;
  created: number;
  /** null while equal to created (most results are never updated): saves a boxed double */
  private updatedAt: number | null;
  started: number; ended: number | null;
  /** the stored status; the shown one is derived (see shownStatus) */
  status: string; changed: boolean; ignoreErrors: boolean;
  delegatedTo: readonly number[];
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.play = d.play; this.task = d.task; this.host = d.host;
    this.created = d.created; this.updatedAt = d.updated === d.created ? null : d.updated;
    this.started = d.started; this.ended = d.ended ?? null;
    this.status = d.status ?? 'unknown'; this.changed = d.changed ?? false; this.ignoreErrors = d.ignore_errors ?? false;
    // most results are delegated nowhere: share one frozen empty list
    this.delegatedTo = d.delegated_to?.length ? d.delegated_to : NO_IDS;
  }
  get updated(): number { return this.updatedAt ?? this.created; }
  set updated(us: number) { this.updatedAt = us === this.created ? null : us; }
  toArray(): unknown[] {
    return [this.id, this.playbook, this.play, this.task, this.host, this.created, this.updated, this.started,
      this.ended, this.status, this.changed, this.ignoreErrors, this.delegatedTo];
  }
  static fromArray(a: any[]): ResultRow {
    return new ResultRow({ id: a[0], playbook: a[1], play: a[2], task: a[3], host: a[4], created: a[5], updated: a[6],
      started: a[7], ended: a[8], status: intern(a[9]), changed: a[10], ignore_errors: a[11], delegated_to: a[12] });
  }
}

export class FileRow {
  id: number; playbook: number; created: number; updated: number;
  path: string; sha1: string;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.created = d.created; this.updated = d.updated;
    this.path = d.path; this.sha1 = d.sha1;
  }
  toArray(): unknown[] { return [this.id, this.playbook, this.created, this.updated, this.path, this.sha1]; }
  static fromArray(a: any[]): FileRow {
    return new FileRow({ id: a[0], playbook: a[1], created: a[2], updated: a[3], path: a[4], sha1: a[5] });
  }
}

export class RecordRow {
  id: number; playbook: number; created: number; updated: number;
  key: string; type: string;
  constructor(d: Record<string, any>) {
    this.id = d.id; this.playbook = d.playbook; this.created = d.created; this.updated = d.updated;
    this.key = d.key; this.type = d.type;
  }
  toArray(): unknown[] { return [this.id, this.playbook, this.created, this.updated, this.key, this.type]; }
  static fromArray(a: any[]): RecordRow {
    return new RecordRow({ id: a[0], playbook: a[1], created: a[2], updated: a[3], key: a[4], type: a[5] });
  }
}

export type ChildRow = PlayRow | TaskRow | HostRow | ResultRow | FileRow | RecordRow;

/** Result status as every representation shows it (docs/api.md#derived-state). */
export function shownStatus(r: ResultRow): string {
  if (r.status === 'ok' && r.changed) return 'changed';
  if (r.status === 'failed' && r.ignoreErrors) return 'ignored';
  return r.status;
}

/** Which host counters one result adds to, by Ansible's recap rules (docs/api.md#derived-state). */
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
