// Batch ingest in the shard (docs/api.md#batch-ingest): one batch of one playbook's events is
// decided and applied here in one pass. Each event is turned into the command
// the per-record API would have produced (natural keys → ids of this playbook),
// validated by the same normalizer, decided by the same decide() and applied by
// the same apply(), so derived state is by construction what per-record writes
// give. An event that breaks a rule is reported and skipped; the rest apply, and
// the whole batch (with the stream's new `seq`) is one journal entry.
import { createHash } from 'node:crypto';
import { Errors, Messages } from '../api/errors.js';
import { asciiEventSpans, jsonStandIn } from '../api/json_scan.js';
import { arrayMemberSpans, parseSpan, type ElementSpans } from '../api/json_text.js';
import { JSON_FIELDS, TYPE_CODE, WRITE_FIELDS } from '../api/resources.js';
import { normalizeUuid } from '../api/uuid.js';
import { storableText, stripWhitespace, type BodyNormalizer } from '../api/validate.js';
import { LIMITS } from '../limits.js';
import { decide } from './decide.js';
import type { Ids } from './ids.js';
import type { IngestCommand, WriteCommand } from './protocol.js';
import type { Aggregate, Event, EventType, ShardState } from './state.js';

/** Where applied events go (the shard stages them for one journal entry). */
export type Stage = (events: Event[]) => void;

export interface BatchOutcome {
  status: number;
  body: string;
  /** ids created per type code (for the front's directory), null if none */
  created: number[][] | null;
  /** the stream's playbook exists after this batch */
  exists: boolean;
  /** events were staged: the batch must be committed before the reply leaves */
  staged: boolean;
  /** its `seq` was applied before (the answer says so too) */
  duplicate: boolean;
}

/**
 * The digest kept of an applied batch: the first 128 bits of the SHA-256 of its body's bytes as the
 * client sent them (after gunzip), the bytes a spool sends again (docs/api.md#batch-ingest: "the
 * same body" means the same bytes; the same JSON spaced or ordered otherwise is another body).
 * SHA-256 rather than a faster non-cryptographic hash: node:crypto has it (SHA-NI where the CPU has
 * it), and it runs on the shard's thread, not the front's.
 */
export function batchDigest(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest().toString('base64url', 0, 16);
}

/** Event kind → resource type (the kinds docs/api.md#batch-ingest allows, minus `playbook`). */
const KINDS = new Map<string, EventType>([
  ['playbook', 'playbook'], ['play', 'play'], ['task', 'task'], ['host', 'host'],
  ['result', 'result'], ['file', 'file'], ['record', 'record'],
]);
export const EVENT_KINDS: ReadonlySet<string> = new Set(KINDS.keys());

type Obj = Record<string, unknown>;

export class BatchRunner {
  constructor(
    private readonly state: ShardState,
    private readonly normalizer: BodyNormalizer,
    private readonly ids: Ids,
    private readonly stage: Stage,
  ) {}

  /**
   * Where the batch stands in its stream, before any event is read: the refusal
   * of a batch that names no playbook here or leaves a gap, the answer to a
   * duplicate, or null (it applies). Also asked alone (IngestCommand.probe).
   */
  position(cmd: IngestCommand): BatchOutcome | null {
    const agg = this.state.aggregates.get(this.playbookOf(cmd));
    if (agg === undefined) {
      // named by id (the front's directory could not tell, cluster mode; or it was deleted since):
      // refused as the front refuses an id it knows no playbook for
      if (cmd.uuid === null) return refusal(400, JSON.stringify({ playbook: { id: [Errors.invalidPk(cmd.playbook)] } }), false);
      // a stream the front believed new, or one whose playbook was deleted since
      if (cmd.seq !== 1 || cmd.create === null) return refusal(409, Errors.expectedSeq(1), false);
      return null;
    }
    const last = agg.playbook.ingestSeq;
    // The last applied seq again with other bytes is a client bug (two batches numbered alike), not a
    // resend: refused, so that its events are not dropped quietly. Older seqs are not compared (only
    // the last batch's digest is kept): a spool re-shipping them in order gets a string of duplicates.
    // No digest kept (applied before digests were kept): a duplicate whatever its body, as then.
    const kept = agg.playbook.ingestDigest;
    if (cmd.seq === last && kept !== null && cmd.digest !== undefined && cmd.digest !== kept) {
      return refusal(409, Errors.seqReused(cmd.seq), true);
    }
    if (cmd.seq <= last) return answer(agg.playbook.id, cmd.seq, 0, [], true, null, true, false);
    if (cmd.seq !== last + 1) return refusal(409, Errors.expectedSeq(last + 1), true);
    return null;
  }

  /** playbook 0: the front routed the stream by its uuid (cluster mode); its playbook is found here */
  private playbookOf(cmd: IngestCommand): number {
    return cmd.playbook === 0 && cmd.uuid !== null ? this.state.playbookByUuid(cmd.uuid) ?? 0 : cmd.playbook;
  }

  /**
   * Start a batch: its refusal or duplicate answer, or the batch to apply, a
   * slice of events at a time (RunningBatch.step) and then finish. Between
   * slices nothing else may read or change this state (the shard finishes an
   * open batch before it handles anything else).
   */
  start(cmd: IngestCommand, now: number): BatchOutcome | RunningBatch {
    const settled = this.position(cmd);
    if (settled !== null) return settled;
    const pid = this.playbookOf(cmd);
    let agg = this.state.aggregates.get(pid);
    if (agg === undefined) {
      const set = { ...cmd.create!, uuid: cmd.uuid, ingest_seq: cmd.seq, ingest_digest: cmd.digest ?? null };
      const decision = decide(this.state, command('create', 'playbook', pid, set), now, this.ids);
      if (!decision.ok) return refusal(400, JSON.stringify({ playbook: JSON.parse(decision.body) }), false);
      this.stage(decision.events);
      agg = this.state.aggregates.get(decision.id)!;
    }
    return new RunningBatch(this, agg, cmd, now);
  }

  /** The end of a batch: the stream's position moves with it, in the same journal entry. */
  end(batch: RunningBatch): BatchOutcome {
    const pid = batch.agg.playbook.id;
    const seq = batch.cmd.seq;
    const digest = batch.cmd.digest ?? null;
    if (batch.agg.playbook.ingestSeq !== seq || batch.agg.playbook.ingestDigest !== digest) {
      this.stage([{ e: 'update', t: 'playbook', p: pid, id: pid, d: { ingest_seq: seq, ingest_digest: digest } }]);
    }
    return answer(pid, seq, batch.applied, batch.rejected, false, batch.created, true, true);
  }

  /** Normalize, decide and apply one command; its field errors (JSON text) on refusal. */
  apply(type: EventType, mode: 'create' | 'patch', id: number, body: Obj, text: string, at: ElementSpans,
    fix: ((set: Obj) => void) | null, now: number, track: (type: EventType, id: number) => void): string | null {
    const n = this.normalizer.normalize(type, mode, body, text, at.span[0], at.span[1], at.members);
    if (n.errors) return Errors.fields(n.errors, WRITE_FIELDS[type]);
    if (fix) fix(n.set);
    const decision = decide(this.state, command(mode === 'create' ? 'create' : 'update', type, id, n.set), now, this.ids);
    if (!decision.ok) return decision.body;
    if (decision.events.length) {
      this.stage(decision.events);
      if (mode === 'create' && type !== 'playbook') track(type, decision.id);
    }
    return null;
  }

  /** Get or create a host by name (results name their host and delegates by name); null if refused. */
  host(agg: Aggregate, name: string, now: number, track: (type: EventType, id: number) => void): number | null {
    const existing = agg.hostByName.get(name);
    if (existing) return existing.id;
    const decision = decide(this.state, command('create', 'host', 0, { name, playbook: agg.playbook.id }), now, this.ids);
    if (!decision.ok) return null;
    this.stage(decision.events);
    track('host', decision.id);
    return decision.id;
  }
}

/** One batch's events, in order, applied a slice at a time (step), then answered (finish). */
export class RunningBatch {
  applied = 0;
  /** the first rejected events with their errors (JSON text); `applied` counts the rest */
  readonly rejected: Array<[number, string]> = [];
  /** ids created per type code (for the front's directory), null if none */
  created: number[][] | null = null;

  constructor(
    private readonly runner: BatchRunner,
    readonly agg: Aggregate,
    readonly cmd: IngestCommand,
    private readonly now: number,
  ) {}

  private readonly track = (type: EventType, id: number): void => {
    this.created ??= [[], [], [], [], [], [], [], []];
    this.created[TYPE_CODE[type]]!.push(id);
  };

  /** the batch's events, found at the first step */
  private spans: Array<readonly [string, ElementSpans]> | null = null;
  private labels: Map<number, number[]> | null = null;
  /** the next event to apply */
  private next = 0;

  /** Apply up to `max` more events; true once every event is applied. */
  step(max: number): boolean {
    if (this.spans === null) {
      this.labels = new Map(this.cmd.labels);
      const ascii = this.cmd.body;
      if (ascii) {
        // Shard.ingest left an ASCII body as bytes: each event gets a text of its own
        this.spans = asciiEventSpans(Buffer.from(ascii.buffer, ascii.byteOffset, ascii.byteLength), int32s(this.cmd.spans!));
      } else {
        const { text } = this.cmd;
        // The front checked the envelope (an object with an `events` array of objects with known kinds).
        this.spans = arrayMemberSpans(text, 'events')!.map((at) => [text, at] as const);
      }
    }
    const spans = this.spans;
    const end = Math.min(spans.length, this.next + max);
    for (let i = this.next; i < end; i++) this.one(i, spans[i]![0], spans[i]![1], this.labels!.get(i));
    this.next = end;
    return end === spans.length;
  }

  /** Every event applied (step returned true): the answer. */
  finish(): BatchOutcome { return this.runner.end(this); }

  /** Event `index`, found at `at` in `text`: applied, or listed as rejected. */
  private one(index: number, text: string, at: ElementSpans, labelIds: number[] | undefined): void {
    const body: Obj = {};
    const errors = this.event(eventBody(text, at, body), body, text, at, labelIds);
    if (errors === null) this.applied++;
    else if (this.rejected.length < LIMITS.ingestRejectedListed) this.rejected.push([index, errors]);
  }

  /**
   * Apply one event (`body`: its members but `kind`, to be rewritten); null, or
   * its errors as JSON text. The natural keys are read from `body` before the
   * members that hold them are rewritten (a parent's key becomes its id).
   */
  private event(kind: unknown, body: Obj, text: string, span: ElementSpans, labelIds: number[] | undefined): string | null {
    const { agg, now, track, runner } = this;
    const pid = agg.playbook.id;
    switch (KINDS.get(kind as string)) {
      case 'playbook': {
        delete body.uuid; // the stream's key does not change
        const fix = labelIds ? (set: Obj) => { if (set.labels !== undefined) set.labels = labelIds; } : null;
        return runner.apply('playbook', 'patch', pid, body, text, span, fix, now, track);
      }
      case 'play': {
        const key = playKey(body.uuid);
        if (typeof key !== 'string') return fieldError('uuid', key.error);
        const existing = agg.playByUuid.get(key);
        body.playbook = pid;
        // the key is the client's (docs/api.md#batch-ingest), not the per-record API's UUID field: validated here, stored as is
        body.uuid = ANY_UUID;
        const fix = (set: Obj): void => { set.uuid = key; };
        return runner.apply('play', existing ? 'patch' : 'create', existing?.id ?? 0, body, text, span, fix, now, track);
      }
      case 'task': {
        const key = streamKey(body.uuid);
        if (typeof key !== 'string') return fieldError('uuid', key.error);
        const existing = agg.taskByUuid.get(key);
        if ('play' in body) {
          const play = typeof body.play === 'string' ? agg.playByUuid.get(normalizeUuid(body.play) ?? body.play) : undefined;
          if (!play) return fieldError('play', Errors.unknownParent('play', named(body.play, text, span, 'play')));
          body.play = play.id;
        }
        if ('file' in body) {
          const file = typeof body.file === 'string' ? agg.fileByPath.get(stripWhitespace(body.file)) : undefined;
          if (!file) return fieldError('file', Errors.unknownParent('file', named(body.file, text, span, 'file')));
          body.file = file.id;
        }
        body.playbook = pid;
        return runner.apply('task', existing ? 'patch' : 'create', existing?.id ?? 0, body, text, span, null, now, track);
      }
      case 'host': {
        if (typeof body.name !== 'string') return fieldError('name', body.name === undefined ? Messages.required : Messages.invalidString);
        if (!storableText(body.name)) return fieldError('name', Messages.unpairedSurrogate);
        // natural keys are stored stripped (the per-record API's rule): looked up so too
        const nameKey = stripWhitespace(body.name);
        body.name = nameKey;
        const existing = agg.hostByName.get(nameKey);
        if (existing && Object.keys(body).length === 1) return null; // named only: nothing to change
        body.playbook = pid;
        return runner.apply('host', existing ? 'patch' : 'create', existing?.id ?? 0, body, text, span, null, now, track);
      }
      case 'result': return this.result(body, text, span);
      case 'file': {
        if (typeof body.path !== 'string') return fieldError('path', body.path === undefined ? Messages.required : Messages.invalidString);
        if (!storableText(body.path)) return fieldError('path', Messages.unpairedSurrogate);
        const pathKey = stripWhitespace(body.path);
        body.path = pathKey;
        const existing = agg.fileByPath.get(pathKey);
        body.playbook = pid;
        return runner.apply('file', existing ? 'patch' : 'create', existing?.id ?? 0, body, text, span, null, now, track);
      }
      case 'record': {
        if (typeof body.key !== 'string') return fieldError('key', body.key === undefined ? Messages.required : Messages.invalidString);
        if (!storableText(body.key)) return fieldError('key', Messages.unpairedSurrogate);
        const keyKey = stripWhitespace(body.key);
        body.key = keyKey;
        const existing = agg.recordByKey.get(keyKey);
        body.playbook = pid;
        return runner.apply('record', existing ? 'patch' : 'create', existing?.id ?? 0, body, text, span, null, now, track);
      }
      default: return fieldError('kind', Errors.unknownKind(kind as string));
    }
  }

  /** A result always creates; its task by uuid, its host and delegates by name (get-or-create). */
  private result(body: Obj, text: string, span: ElementSpans): string | null {
    const { agg, now, track, runner } = this;
    const key = streamKey(body.task);
    const task = typeof key === 'string' ? agg.taskByUuid.get(key) : undefined;
    if (!task) return fieldError('task', body.task === undefined ? Messages.required : Errors.unknownParent('task', named(body.task, text, span, 'task')));
    const hostName = typeof body.host === 'string' ? stripWhitespace(body.host) : body.host;
    if (typeof hostName !== 'string' || hostName === '') {
      return fieldError('host', hostName === undefined ? Messages.required : Messages.invalidString);
    }
    if (!storableText(hostName)) return fieldError('host', Messages.unpairedSurrogate);
    let delegates: string[] | null = null;
    const delegatedTo = body.delegated_to;
    if (delegatedTo !== undefined && delegatedTo !== null) {
      if (!Array.isArray(delegatedTo) || !delegatedTo.every((h) => typeof h === 'string' && stripWhitespace(h) !== '' && storableText(h))) {
        return fieldError('delegated_to', 'Expected a list of host names.');
      }
      delegates = (delegatedTo as string[]).map(stripWhitespace);
    }
    // Validate with placeholder ids first: hosts are created only for a result that is valid.
    body.playbook = agg.playbook.id;
    body.task = task.id;
    body.play = task.play;
    body.host = 1;
    if (delegates) body.delegated_to = [];
    let hostError: string | null = null;
    const fix = (set: Obj): void => {
      const host = runner.host(agg, hostName, now, track);
      if (host === null) { hostError = Errors.invalidPk(hostName); return; }
      set.host = host;
      if (delegates) {
        const ids: number[] = [];
        for (const name of delegates) {
          const id = runner.host(agg, name, now, track);
          if (id !== null && !ids.includes(id)) ids.push(id);
        }
        set.delegated_to = ids;
      }
    };
    const errors = runner.apply('result', 'create', 0, body, text, span, fix, now, track);
    return hostError !== null ? fieldError('host', hostError) : errors;
  }
}

/** JSON-valued fields per event kind: stored as the client's text, so never parsed here. */
const JSON_FIELDS_OF_KIND = new Map<string, ReadonlySet<string>>([...KINDS].map(([kind, type]) => [kind, JSON_FIELDS[type]]));

/**
 * One event, parsed member by member from its spans: its `kind`, returned, and
 * its other members, put in `body` (what the event writes). JSON-valued fields
 * (result content, host facts…) get a stand-in of the same JSON type, because
 * only their text is stored (the normalizer takes it from the spans). Parsing a
 * batch this way skips building and collecting every content object. `body` is
 * built here rather than copied from a parsed event and trimmed: a spread and a
 * `delete` each cost more than building the object (V8's slow copy path; a
 * delete makes a dictionary object); and it is the only object built (the
 * natural keys are read from it).
 */
function eventBody(text: string, at: ElementSpans, body: Obj): unknown {
  if (at.members === undefined) {
    // not an object (the front lets none through): whatever a spread of it would give
    const ev = JSON.parse(text.slice(at.span[0], at.span[1])) as Obj;
    for (const key of Object.keys(ev ?? {})) {
      if (key !== 'kind') Object.defineProperty(body, key, { value: ev[key], enumerable: true, writable: true, configurable: true });
    }
    return ev.kind;
  }
  const kindSpan = at.members.get('kind');
  const kind = kindSpan ? parseSpan(text, kindSpan[0], kindSpan[1]) : undefined;
  const raw = typeof kind === 'string' ? JSON_FIELDS_OF_KIND.get(kind) : undefined;
  for (const [key, [start, end]] of at.members) {
    if (key === 'kind') continue;
    const value = raw?.has(key) ? jsonStandIn(text.charCodeAt(start)) : parseSpan(text, start, end);
    if (key === '__proto__') Object.defineProperty(body, key, { value, enumerable: true, writable: true, configurable: true });
    else body[key] = value;
  }
  return kind;
}

/** An Int32Array's bytes as received (a view at any offset) → the Int32Array (copied when misaligned). */
function int32s(bytes: Uint8Array): Int32Array {
  if (bytes.byteOffset % 4 === 0) return new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
  const out = new Int32Array(bytes.byteLength >> 2);
  new Uint8Array(out.buffer).set(bytes.subarray(0, out.byteLength));
  return out;
}


function command(op: 'create' | 'update', type: EventType, id: number, set: Obj): WriteCommand {
  return { op, type, id, put: false, set, errors: null, elsewhere: null, minimal: true };
}

/** Stands in for a play's key while the rest of the event is validated by the per-record rules. */
const ANY_UUID = '00000000-0000-0000-0000-000000000000';

/** A play's key: an opaque string of at most 64 characters; a UUID is normalized as the per-record API stores it. */
function playKey(v: unknown): string | { error: string } {
  const key = streamKey(v);
  return typeof key === 'string' ? normalizeUuid(key) ?? key : key;
}

/** A task's or playbook's client key: a non-blank string of at most 64 characters. */
function streamKey(v: unknown): string | { error: string } {
  if (v === undefined || v === null) return { error: Messages.required };
  if (typeof v !== 'string') return { error: Messages.invalidString };
  if (v.length === 0) return { error: Messages.notBlank };
  if (v.length > LIMITS.uuidLength) return { error: Messages.maxLength(LIMITS.uuidLength) };
  if (!storableText(v)) return { error: Messages.unpairedSurrogate };
  return v;
}

/**
 * A parent's key as the client sent it, for a message: a string as itself,
 * anything else as its JSON text (a number as its digits: as a double
 * 12345678901234567890 prints as 12345678901234567000, another number).
 */
function named(v: unknown, text: string, at: ElementSpans, member: string): string {
  if (typeof v === 'string') return v;
  const span = at.members?.get(member);
  return span ? text.slice(span[0], span[1]) : String(v);
}

function fieldError(field: string, message: string): string {
  return JSON.stringify({ [field]: [message] });
}

function refusal(status: number, body: string, exists: boolean): BatchOutcome {
  return { status, body, created: null, exists, staged: false, duplicate: false };
}

/** The 200 answer; a duplicate carries no `rejected` (docs/api.md#batch-ingest: it changed nothing and reports nothing). */
function answer(playbook: number, seq: number, applied: number, rejected: Array<[number, string]>, duplicate: boolean,
  created: number[][] | null, exists: boolean, staged: boolean): BatchOutcome {
  let list = '';
  for (const [index, errors] of rejected) list += (list ? ',' : '') + '{"index":' + index + ',"errors":' + errors + '}';
  const body = '{"playbook":' + playbook + ',"seq":' + seq + ',"applied":' + applied
    + (duplicate ? '' : ',"rejected":[' + list + ']') + ',"duplicate":' + duplicate + '}';
  return { status: 200, body, created, exists, staged, duplicate };
}
