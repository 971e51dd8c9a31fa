// POST /api/v1/ingest on the front (docs/api.md#batch-ingest): the body decoded (body_encoding.ts: gzip within the body limit),
// check the envelope (seq, playbook, events and their kinds), find or allocate
// the stream's playbook, resolve label names, and hand the batch's JSON text to
// the owning shard, which parses, validates and applies the events itself: the
// front never re-serializes content it does not need.
import { Errors, Messages } from '../api/errors.js';
import { memberSpans, parseSpan } from '../api/json_text.js';
import { TYPE_CODE, WRITE_FIELDS } from '../api/resources.js';
import { nowMicros } from '../api/time.js';
import { fkId, storableText, type BodyNormalizer } from '../api/validate.js';
import { LIMITS } from '../limits.js';
import { log } from '../log.js';
import { EVENT_KINDS, batchDigest } from '../shard/ingest.js';
import type { Shards } from '../shard/shards.js';
import type { IngestCommand, Reply } from '../shard/protocol.js';
import { scanBatchBody } from '../api/json_scan.js';
import { jsonBodyText, mediaType, parseJsonText } from '../api/json_body.js';
import { decodedBody } from './body_encoding.js';
import type { Directory } from './directory.js';
import type { LabelCatalogue } from './labels.js';
import { answering, reply, type Exchange } from './respond.js';

interface IngestContext {
  ex: Exchange;
  shard: number;
  uuid: string | null;
  playbook: number;
  claims: number[] | null;
}

export interface IngestDeps {
  pool: () => Shards;
  dir: Directory;
  labels: LabelCatalogue;
  normalizer: BodyNormalizer;
  maxBodyBytes: number;
}

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export class Ingest {
  /** stream key (`playbook.uuid`) → playbook id; rebuilt from the shards at start-up */
  private readonly streams = new Map<string, number>();
  /** playbooks sent to be created by a first batch and not answered yet (not in the directory yet) */
  private readonly creating = new Set<number>();
  private readonly onReply = answering((ctx: IngestContext) => ctx.ex, (r: Reply, ctx: IngestContext): void => this.finish(r, ctx));

  constructor(private readonly deps: IngestDeps) {}

  /** Playbooks with a uuid (a shard recovered, or POST /playbooks named one); `replace`: false keeps a stream already known. */
  learn(streams: Array<[string, number]>, replace = true): void {
    for (const [uuid, id] of streams) if (replace || this.known(uuid) === null) this.streams.set(uuid, id);
  }

  handle(ex: Exchange, contentType: string, encoding: string, body: Buffer): void {
    decodedBody(ex, encoding, body, this.deps.maxBodyBytes, (bytes) => this.parsed(ex, contentType, bytes));
  }

  private parsed(ex: Exchange, contentType: string, bytes: Buffer): void {
    const parsed = envelopeOf(bytes, contentType);
    if (!parsed.ok) return reply(ex, parsed.status, parsed.body);
    const { value, spans } = parsed;
    const envelope = checkEnvelope(value);
    if (typeof envelope === 'string') return reply(ex, envelope === TOO_MANY ? 413 : 400, envelope === TOO_MANY ? Errors.tooManyEvents(LIMITS.ingestEvents) : envelope);
    const { seq, events } = envelope;
    const header = value.playbook as Obj;

    // which playbook: by id, or by the stream's uuid (created by its first batch)
    let playbook: number;
    let uuid: string | null = null;
    /** the stream's shard when it is routed by uuid (cluster mode) */
    let routed: number | null = null;
    let create: Obj | null = null;
    // label names of `playbook` events, resolved here (the front owns the catalogue); an event
    // whose labels its shard will reject (not strings, too long, too many) gets none created
    const names: string[] = [];
    const eventLabels: Array<[number, string[]]> = [];
    for (let i = 0; i < events.length; i++) {
      const ev = events[i] as Obj;
      if (ev.kind === 'playbook' && Array.isArray(ev.labels) && ev.labels.length <= LIMITS.labelsPerPlaybook
        && ev.labels.every((l) => typeof l === 'string' && l.length <= LIMITS.nameLength && storableText(l))) {
        eventLabels.push([i, ev.labels as string[]]);
        names.push(...(ev.labels as string[]));
      }
    }
    // every new label of a batch is created in one step: that step is bounded (nothing changed yet)
    const tooManyLabels = (): boolean => names.length > LIMITS.labelsPerBatch && new Set(names).size > LIMITS.labelsPerBatch;
    if (tooManyLabels()) return reply(ex, 413, Errors.tooManyBatchLabels(LIMITS.labelsPerBatch));
    if (header.id !== undefined && header.uuid === undefined) {
      // an id as every FK takes one (docs/api.md#writes: an integer or a decimal string, so "2" is 2)
      const id = fkId(header.id, () => {
        const [text, start, end] = parsed.playbookText();
        const [from, to] = memberSpans(text, start, end)!.get('id')!;
        return text.slice(from, to);
      });
      if (!id.ok || this.deps.dir.shardOf('playbook', id.value) < 0) {
        return reply(ex, 400, JSON.stringify({ playbook: { id: [id.ok ? Errors.invalidPk(id.value) : id.msg] } }));
      }
      playbook = id.value;
    } else {
      const key = header.uuid;
      if (typeof key !== 'string' || key.length === 0 || key.length > LIMITS.uuidLength || !storableText(key)) {
        const msg = key === undefined ? Messages.required : typeof key !== 'string' ? Messages.invalidString
          : key.length === 0 ? Messages.notBlank : key.length > LIMITS.uuidLength ? Messages.maxLength(LIMITS.uuidLength)
            : Messages.unpairedSurrogate;
        return reply(ex, 400, JSON.stringify({ playbook: { uuid: [msg] } }));
      }
      uuid = key;
      routed = this.deps.dir.streamShard(key);
      const known = routed === null ? this.known(key) : null;
      if (routed === null && known === null && seq !== 1) return reply(ex, 409, Errors.expectedSeq(1));
      if (routed !== null && seq !== 1) playbook = 0; // the shard finds it (one it does not know answers 409)
      else if (known === null) {
        // seq 1 of a new stream: the playbook's create fields are checked here, like POST /playbooks.
        // Routed by uuid (cluster mode), the front cannot know whether the stream is new: it sends
        // the create fields of every first batch, and the shard creates the playbook or finds it.
        const fields: Obj = { ...header };
        delete fields.uuid;
        delete fields.id;
        const [text, start, end] = parsed.playbookText();
        const n = this.deps.normalizer.normalize('playbook', 'create', fields, text, start, end);
        if (n.errors) return reply(ex, 400, JSON.stringify({ playbook: JSON.parse(Errors.fields(n.errors, WRITE_FIELDS.playbook)) }));
        create = n.set;
        if (Array.isArray(create.labels)) names.push(...(create.labels as string[]));
        if (tooManyLabels()) return reply(ex, 413, Errors.tooManyBatchLabels(LIMITS.labelsPerBatch));
        if (routed === null) {
          playbook = this.deps.dir.allocate('playbook');
          this.streams.set(key, playbook);
          this.creating.add(playbook);
        } else playbook = 0; // the shard finds or creates it
      } else playbook = known;
    }

    const shard = routed ?? this.deps.pool().shardOf(playbook);
    const ctx: IngestContext = { ex, shard, uuid, playbook, claims: null };
    // the shard gets the body's bytes (moved to its worker) rather than the text: see protocol.ts postToShard
    const cmd: IngestCommand = { playbook, uuid, seq, create, text: '', body: bytes, labels: [], spans };
    const send = (): void => this.deps.pool().send(shard, { k: 'ingest', rid: 0, cmd }, this.onReply, ctx);
    if (names.length === 0) return send();
    // A batch that changes nothing must leave no label behind: one refused because its playbook or
    // stream is not there or its seq leaves a gap (a single process refuses most of those above; in
    // cluster mode only the shard can tell), and a duplicate (only the shard knows where the seq
    // stands). So before the front creates a label the shard is asked, unless the batch opens a
    // stream the front knows to be new.
    if (!(create !== null && routed === null) && names.some((name) => !this.deps.labels.byName.has(name))) {
      // a probe carries no body: the digest that tells a resend from another batch of the same seq goes instead
      const probe: IngestCommand = { playbook, uuid, seq, create, text: '', body: null, labels: [], spans: null, probe: true, digest: batchDigest(bytes) };
      this.deps.pool().send(shard, { k: 'ingest', rid: 0, cmd: probe }, (r: Reply) => {
        if (r.k === 'ingest' && r.status === 0) this.resolved(ctx, cmd, names, eventLabels, create, send);
        else this.finish(r, ctx);
      }, null);
      return;
    }
    this.resolved(ctx, cmd, names, eventLabels, create, send);
  }

  /** The batch's label names become ids (new ones are created, provisionally), then it is sent. */
  private resolved(ctx: IngestContext, cmd: IngestCommand, names: string[], eventLabels: Array<[number, string[]]>,
    create: Obj | null, send: () => void): void {
    const resolved = this.deps.labels.resolve([...new Set(names)], () => this.deps.dir.allocate('label'), nowMicros());
    if (resolved.retry) {
      resolved.retry.then(() => this.resolved(ctx, cmd, names, eventLabels, create, send));
      return;
    }
    const byName = new Map<string, number>();
    [...new Set(names)].forEach((name, i) => byName.set(name, resolved.ids[i]!));
    if (create && Array.isArray(create.labels)) create.labels = [...new Set((create.labels as string[]).map((n) => byName.get(n)!))];
    cmd.labels = eventLabels.map(([i, list]) => [i, [...new Set(list.map((n) => byName.get(n)!))]]);
    ctx.claims = resolved.claims.length ? resolved.claims : null;
    if (!resolved.persisted) return send();
    resolved.persisted.then(send, (err) => {
      log.error('label store write failed', { err: String((err as Error)?.stack ?? err) });
      this.finish({ k: 'error', rid: 0, status: 503, body: Errors.unavailable('The write could not be stored; nothing was changed. Retry later.') }, ctx);
    });
  }

  /** The playbook of a stream, if it (still) exists or is being created. */
  private known(uuid: string): number | null {
    const id = this.streams.get(uuid);
    if (id === undefined) return null;
    if (this.creating.has(id) || this.deps.dir.shardOf('playbook', id) >= 0) return id;
    this.streams.delete(uuid); // its playbook was deleted
    return null;
  }

  private finish(r: Reply, ctx: IngestContext): void {
    // a duplicate that raced past the probe (the same seq sent twice at once) keeps no label it created
    const ok = r.k === 'ingest' && r.status === 200 && !r.duplicate;
    if (ctx.claims) {
      this.deps.labels.settle(ctx.claims, ok); // a label dropped leaves the replicas once its removal is durable
    }
    this.creating.delete(ctx.playbook);
    if (r.k === 'ingest') {
      const created = r.created ?? (r.exists ? [[], [], [], [], [], [], [], []] : null);
      if (r.exists) created![TYPE_CODE.playbook]!.push(ctx.playbook);
      this.deps.dir.record(ctx.shard, created, null);
    }
    if (ctx.uuid !== null && !(r.k === 'ingest' && r.exists) && this.streams.get(ctx.uuid) === ctx.playbook
      && this.deps.dir.shardOf('playbook', ctx.playbook) < 0) {
      this.streams.delete(ctx.uuid);
    }
    reply(ctx.ex, r.status, r.k === 'ingest' || r.k === 'error' ? r.body : Errors.internal());
  }
}

/** The body's envelope as the front reads it (envelopeOf). */
interface Envelope {
  ok: true;
  /** `seq`, `playbook` and `events`, each event reduced to its `kind` and `labels` (null: not an object) */
  value: Obj;
  /** every event's member spans, for the shard (api/json_scan.ts ScannedBody.spans), when the body was scanned */
  spans: Uint8Array | null;
  /** the `playbook` member's text, as [text, start, end] (for the normalizer, which keeps JSON fields as text) */
  playbookText: () => [string, number, number];
}

/**
 * What the envelope check needs of the body. Found by one scan of its bytes
 * when the scan can say their text is what JSON.parse accepts (api/json_scan.ts:
 * ASCII without control characters, the bodies clients send); otherwise the
 * body is decoded and parsed, and JSON.parse's errors are the answer. Either
 * way the values are the ones JSON.parse would give. Only the small members the
 * front reads become strings: a batch body is never one string on this path.
 */
function envelopeOf(bytes: Buffer, contentType: string): Envelope | { ok: false; status: number; body: string } {
  const scan = mediaType(contentType) === 'application/json' ? scanBatchBody(bytes, LIMITS.jsonDepth) : null;
  if (scan === null) {
    const decoded = jsonBodyText(bytes, contentType);
    if (!decoded.ok) return decoded;
    const { text } = decoded;
    const parsed = parseJsonText(text);
    if (!parsed.ok) return parsed;
    return {
      ok: true, value: parsed.value, spans: null,
      playbookText: () => { const [start, end] = memberSpans(text)!.get('playbook')!; return [text, start, end]; },
    };
  }
  const slice = ([start, end]: [number, number]): string => bytes.toString('latin1', start, end);
  const value: Obj = {};
  for (const [key, at] of scan.members) {
    if (key === 'events' && scan.events !== null) continue;
    if (key === 'seq' || key === 'playbook' || key === 'events') value[key] = JSON.parse(slice(at));
  }
  if (scan.events !== null) {
    value.events = scan.events.map((ev) => {
      if (!ev.object) return null;
      const stub: Obj = {};
      if (ev.kind) { const kind = slice(ev.kind); stub.kind = parseSpan(kind, 0, kind.length); }
      if (ev.labels) stub.labels = JSON.parse(slice(ev.labels));
      return stub;
    });
  }
  const spans = scan.spans && new Uint8Array(scan.spans.buffer, scan.spans.byteOffset, scan.spans.byteLength);
  return { ok: true, value, spans, playbookText: () => { const text = slice(scan.members.get('playbook')!); return [text, 0, text.length]; } };
}

const TOO_MANY = '\u0000too many';

/** The batch's envelope: seq, a playbook object, an array of events with known kinds. A string: the 400 body (or TOO_MANY). */
function checkEnvelope(value: Obj): { seq: number; events: unknown[] } | string {
  const errors: Record<string, string[]> = {};
  const seq = value.seq;
  if (seq === undefined) errors.seq = [Messages.required];
  else if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) errors.seq = [Messages.invalidInt];
  else if (seq < 1) errors.seq = [Messages.minValue(1)];
  if (value.playbook === undefined) errors.playbook = [Messages.required];
  else if (!isObject(value.playbook)) errors.playbook = [`Invalid data. Expected a dictionary, but got ${typeOf(value.playbook)}.`];
  const events = value.events;
  if (events === undefined) errors.events = [Messages.required];
  else if (!Array.isArray(events)) errors.events = [Messages.notAList(typeOf(events))];
  else if (events.length > LIMITS.ingestEvents) return TOO_MANY;
  else {
    for (let i = 0; i < events.length; i++) {
      const ev = events[i];
      if (!isObject(ev)) { errors.events = [`Event ${i} is not an object.`]; break; }
      if (typeof ev.kind !== 'string' || !EVENT_KINDS.has(ev.kind)) {
        errors.events = [`Event ${i}: ${ev.kind === undefined ? 'kind: ' + Messages.required : Errors.unknownKind(String(ev.kind))}`];
        break;
      }
    }
  }
  if (Object.keys(errors).length) return JSON.stringify(errors);
  return { seq: seq as number, events: events as unknown[] };
}

function typeOf(v: unknown): string {
  if (Array.isArray(v)) return 'list';
  if (v === null) return 'NoneType';
  return typeof v === 'object' ? 'dict' : typeof v === 'string' ? 'str' : typeof v === 'number' ? 'int' : 'bool';
}
