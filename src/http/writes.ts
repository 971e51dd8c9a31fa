// Writes on the front: validate and normalize the body (stateless rules), find
// the owning shard, resolve label names (creating new labels durably first),
// send the command, and on the reply update the directory and answer. The
// shard decides everything that needs stored state and allocates child ids.
import { Errors } from '../api/errors.js';
import { JSON_FIELDS, TYPE_CODE, WRITE_FIELDS, type ResourceType } from '../api/resources.js';
import type { WriteMode } from '../api/schemas.js';
import { nowMicros } from '../api/time.js';
import type { BodyNormalizer, Normalized } from '../api/validate.js';
import { log } from '../log.js';
import type { ReplyHandler } from '../shard/shards.js';
import type { Shards } from '../shard/shards.js';
import type { Reply, WriteCommand } from '../shard/protocol.js';
import { parseWriteBody } from '../api/json_body.js';
import type { Directory } from './directory.js';
import type { LabelResource } from './label_resource.js';
import type { LabelCatalogue } from './labels.js';
import { answering, reply } from './respond.js';
import type { Req } from './routes.js';

/** `uuid`: a playbook created with one becomes known to batch ingest as a stream */
interface WriteContext { ex: Req; shard: number; claims: number[] | null; uuid: string | null }

type RecordType = Exclude<ResourceType, 'label'>;


export interface WriteDeps {
  pool: () => Shards;
  dir: Directory;
  labels: LabelCatalogue;
  labelResource: LabelResource;
  normalizer: BodyNormalizer;
  /** a playbook created with a uuid: batch ingest may continue it */
  playbookWithUuid: (uuid: string, id: number) => void;
}

export class Writes {
  // bound once: the pool's pending table keeps the handler and a context, no closure per request
  private readonly onWrite: ReplyHandler<WriteContext> = answering((ctx: WriteContext) => ctx.ex, (r: Reply, ctx: WriteContext) => this.finish(r, ctx));

  constructor(private readonly deps: WriteDeps) {}

  create(ex: Req, type: ResourceType, body: Buffer): void {
    const parsed = parseWriteBody(body, ex.contentType, JSON_FIELDS[type]);
    if (!parsed.ok) return reply(ex, parsed.status, parsed.body);
    const n = this.deps.normalizer.normalize(type, 'create', parsed.value, parsed.text, 0, parsed.text.length, parsed.members);
    if (type === 'label') return this.deps.labelResource.write(ex, null, n);
    if (type === 'playbook') {
      // A new playbook needs no stored state to be judged: every refusal happens
      // here, before its id and its new labels' ids are taken (a refused request
      // must not use up ids). The shard checks `ended` again (decide.ts).
      const started = n.set.started !== undefined ? n.set.started : nowMicros();
      if (typeof n.set.ended === 'number' && typeof started === 'number' && n.set.ended < started && !n.errors?.ended) {
        (n.errors ??= {}).ended = [Errors.endedBeforeStarted()];
      }
      if (n.errors) return reply(ex, 400, Errors.fields(n.errors, WRITE_FIELDS.playbook));
      return this.send(ex, -1, 'create', 'playbook', 0, false, n);
    }
    const playbook = n.set.playbook as number | undefined;
    if (playbook === undefined || this.deps.dir.shardOf('playbook', playbook) < 0) {
      const errors = n.errors ?? {};
      if (playbook !== undefined) errors.playbook = [Errors.invalidPk(playbook)];
      return reply(ex, 400, Errors.fields(errors, WRITE_FIELDS[type]));
    }
    // id 0: the shard allocates a child's id when it creates it (src/shard/ids.ts)
    this.send(ex, this.deps.pool().shardOf(playbook), 'create', type, 0, false, n);
  }

  update(ex: Req, type: ResourceType, id: number, body: Buffer, put: boolean): void {
    const shard = type === 'label' ? (this.deps.labelResource.exists(id) ? 0 : -1) : this.deps.dir.shardOf(type, id);
    if (shard < 0) return reply(ex, 404, Errors.notFound());
    const parsed = parseWriteBody(body, ex.contentType, JSON_FIELDS[type]);
    if (!parsed.ok) return reply(ex, parsed.status, parsed.body);
    const mode: WriteMode = put ? 'put' : 'patch';
    const n = this.deps.normalizer.normalize(type, mode, parsed.value, parsed.text, 0, parsed.text.length, parsed.members);
    if (type === 'label') return this.deps.labelResource.write(ex, id, n);
    if (type === 'playbook' && n.errors) return reply(ex, 400, Errors.fields(n.errors, WRITE_FIELDS.playbook));
    this.send(ex, shard, 'update', type, id, put, n);
  }

  remove(ex: Req, type: ResourceType, id: number): void {
    if (type === 'label') return this.deps.labelResource.remove(ex, id);
    const shard = this.deps.dir.shardOf(type, id);
    if (shard < 0) return reply(ex, 404, Errors.notFound());
    const cmd: WriteCommand = { op: 'delete', type, id, put: false, set: {}, errors: null, elsewhere: null, minimal: false };
    this.deps.pool().send(shard, { k: 'write', rid: 0, cmd }, this.onWrite, { ex, shard, claims: null, uuid: null });
  }

  /**
   * Send a write to its shard. A new playbook gets its id (and so its shard) only
   * when it is sent: a create that first waits for its new labels to be stored
   * must not reach its shard after a playbook with a higher id, because each
   * shard keeps its records in creation order = id order (unordered lists and
   * the front's merge rely on it).
   */
  private send(ex: Req, shard: number, op: 'create' | 'update', type: RecordType, id: number, put: boolean, n: Normalized): void {
    const { pool, dir, labels } = this.deps;
    const ctx: WriteContext = { ex, shard, claims: null, uuid: typeof n.set.uuid === 'string' ? n.set.uuid : null };
    const dispatch = () => {
      if (op === 'create' && type === 'playbook') ({ id, shard: ctx.shard } = dir.placePlaybook(pool()));
      const cmd: WriteCommand = {
        op, type, id, put, set: n.set, errors: n.errors, elsewhere: this.foreignKeys(type, n.set, ctx.shard), minimal: ex.minimal,
      };
      pool().send(ctx.shard, ex.ara ? { k: 'write', rid: 0, cmd, ara: true } : { k: 'write', rid: 0, cmd }, this.onWrite, ctx);
    };
    if (type === 'playbook' && Array.isArray(n.set.labels)) {
      // New label names become labels first (durably), so a committed playbook
      // never names a label that a crash could lose.
      const resolved = labels.resolve(n.set.labels as string[], () => dir.allocate('label'), nowMicros());
      if (resolved.retry) {
        resolved.retry.then(() => this.send(ex, shard, op, type, id, put, n));
        return;
      }
      n.set.labels = resolved.ids;
      ctx.claims = resolved.claims.length ? resolved.claims : null;
      if (resolved.persisted) {
        resolved.persisted.then(dispatch, (err) => { storageFailed(ex, err); this.settleLabels(ctx, false); });
        return;
      }
    }
    dispatch();
  }

  /** FK fields whose id exists on another shard: the shard reports "does not belong to playbook". */
  private foreignKeys(type: ResourceType, set: Record<string, unknown>, shard: number): string[] | null {
    let out: string[] | null = null;
    for (const spec of WRITE_FIELDS[type]) {
      const value = set[spec.name];
      if (spec.name === 'playbook' || value === undefined) continue;
      if (spec.kind === 'fk') {
        const s = this.deps.dir.shardOf(spec.target!, value as number);
        if (s >= 0 && s !== shard) (out ??= []).push(spec.name);
      } else if (spec.kind === 'fklist') {
        for (const id of value as number[]) {
          const s = this.deps.dir.shardOf(spec.target!, id);
          if (s >= 0 && s !== shard) (out ??= []).push(`${spec.name}:${id}`);
        }
      }
    }
    return out;
  }

  private finish(r: Reply, ctx: WriteContext): void {
    // a shard that is down or overloaded answers with an ErrorReply: no labels, no ids
    const succeeded = r.k === 'write' && r.status < 300;
    this.settleLabels(ctx, succeeded);
    if (r.k === 'write') {
      if (r.created) {
        const [code, id] = r.created;
        const created: number[][] = [[], [], [], [], [], [], [], []];
        created[code]!.push(id);
        this.deps.dir.record(ctx.shard, created, null);
        if (ctx.uuid !== null && code === TYPE_CODE.playbook) this.deps.playbookWithUuid(ctx.uuid, id);
      }
      if (r.deleted) this.deps.dir.record(ctx.shard, null, r.deleted);
      return reply(ctx.ex, r.status, r.body);
    }
    reply(ctx.ex, r.status, 'body' in r && typeof r.body === 'string' ? r.body : null);
  }

  private settleLabels(ctx: WriteContext, succeeded: boolean): void {
    if (!ctx.claims) return;
    this.deps.labels.settle(ctx.claims, succeeded); // a label dropped leaves the replicas once its removal is durable
  }
}

function storageFailed(ex: Req, err: unknown): void {
  log.error('label store write failed', { err: String((err as Error)?.stack ?? err) });
  reply(ex, 503, Errors.unavailable('The write could not be stored; nothing was changed. Retry later.'));
}
