// decide(state, command) → events or a refusal. Reads state, never changes it:
// every check that needs the aggregate (FKs, uniqueness, get-or-create, ended ≥
// started against stored values) lives here; stateless checks were done by the front.
import { createHash } from 'node:crypto';
import { DISPLAY_NAME, FK_FIELDS, TYPE_CODE, WRITE_FIELDS, type ResourceType } from '../api/resources.js';
import type { Ids } from './ids.js';
import { Errors } from '../api/errors.js';
import type { FieldErrors, WriteCommand } from './protocol.js';
import type { Aggregate, Event, EventType, ShardState } from './state.js';

export type Decision =
  | { ok: true; events: Event[]; status: number; type: EventType; id: number }
  | { ok: false; status: number; body: string };

const FK_MAP: Record<string, keyof Aggregate> = {
  play: 'plays', task: 'tasks', host: 'hosts', file: 'files', playbook: 'playbook',
};

/**
 * `ids` allocates the id of a record the command creates when the front sent id 0:
 * a child's always; a playbook's in cluster mode (single-process, the front
 * allocates playbook ids, since it routes by them).
 */
export function decide(state: ShardState, cmd: WriteCommand, now: number, ids: Ids): Decision {
  const { type, op } = cmd;
  if (op !== 'create') {
    const exists = type === 'playbook' ? state.aggregates.has(cmd.id) : state.index(type).has(cmd.id);
    if (!exists) return refuse(404, Errors.notFound());
  }
  const owner = (row: any): number => (type === 'playbook' ? cmd.id : row.playbook);
  if (op === 'delete') {
    return { ok: true, events: [{ e: 'delete', t: type, p: owner(state.index(type).get(cmd.id)), id: cmd.id }], status: 204, type, id: cmd.id };
  }

  const errors: FieldErrors = cmd.errors ? { ...cmd.errors } : {};
  const set = cmd.set;
  const current: any = op === 'update'
    ? (type === 'playbook' ? state.aggregates.get(cmd.id)!.playbook : state.index(type).get(cmd.id))
    : null;

  let agg: Aggregate | undefined;
  if (type === 'playbook') {
    agg = current ? state.aggregates.get(cmd.id) : undefined;
  } else {
    const playbookId: number | undefined = current ? current.playbook : set.playbook;
    if (current && set.playbook !== undefined && set.playbook !== current.playbook) {
      addError(errors, 'playbook', Errors.playbookImmutable(DISPLAY_NAME[type].toLowerCase()));
    }
    agg = playbookId === undefined ? undefined : state.aggregates.get(playbookId);
    if (!current && playbookId !== undefined && !agg && !errors.playbook) {
      addError(errors, 'playbook', Errors.invalidPk(playbookId));
    }
    if (agg) checkForeignKeys(state, agg, cmd, errors);
  }

  // ended must not precede started, using stored values for whichever is not sent
  // (a create without `started` starts now, so an `ended` in the past is refused too)
  const started = set.started !== undefined ? set.started : current ? current.started : now;
  const ended = set.ended !== undefined ? set.ended : current ? current.ended : null;
  if (typeof started === 'number' && typeof ended === 'number' && ended < started && !errors.ended) {
    addError(errors, 'ended', Errors.endedBeforeStarted());
  }

  if (!isEmpty(errors)) return refuse(400, Errors.fields(errors, WRITE_FIELDS[type]));

  // Object.assign, not a spread: V8 copies an object of a dozen properties built
  // by keyed stores (the normalizer's `set`) through a slow runtime path with a
  // spread, ~10x the cost (µs per write); `set` only ever holds field names.
  const d: Record<string, any> = Object.assign({}, set);
  if (type === 'file' && typeof d.content === 'string') d.sha1 = sha1(d.content);

  if (op === 'update') {
    const conflict = agg ? uniqueConflict(type, agg, d, current) : null;
    if (conflict) return refuse(400, conflict);
    d.updated = now;
    return { ok: true, events: [{ e: 'update', t: type, p: owner(current), id: cmd.id, d }], status: 200, type, id: cmd.id };
  }

  // get-or-create and uniqueness on create
  if (agg && type === 'host') {
    const existing = agg.hostByName.get(d.name);
    if (existing) return { ok: true, events: [], status: 201, type, id: existing.id };
  }
  if (agg && type === 'file') {
    const existing = agg.fileByPath.get(d.path);
    if (existing) {
      if (existing.sha1 === d.sha1) return { ok: true, events: [], status: 201, type, id: existing.id };
      return refuse(400, Errors.fields({ content: [Errors.fileContentConflict(d.path, agg.playbook.id)] }, WRITE_FIELDS.file));
    }
  }
  if (agg && type === 'record' && agg.recordByKey.has(d.key)) return refuse(400, Errors.notUnique(['key', 'playbook']));

  // id 0: the shard allocates (children always; a playbook in cluster mode, where the owner of its partition allocates)
  const id = cmd.id === 0 ? ids.allocate(TYPE_CODE[type]) : cmd.id;
  d.id = id;
  d.created = now;
  d.updated = now;
  if (d.started === undefined) d.started = now;
  return { ok: true, events: [{ e: 'create', t: type, p: type === 'playbook' ? id : d.playbook, d }], status: 201, type, id };
}

function checkForeignKeys(state: ShardState, agg: Aggregate, cmd: WriteCommand, errors: FieldErrors): void {
  for (const spec of FK_FIELDS[cmd.type]) {
    if (spec.name === 'playbook' || errors[spec.name]) continue;
    const value = cmd.set[spec.name];
    if (value === undefined) continue;
    if (spec.kind === 'fk') {
      const msg = fkProblem(state, agg, spec.target!, value as number, cmd.elsewhere?.includes(spec.name) ?? false);
      if (msg) addError(errors, spec.name, msg);
    } else if (spec.kind === 'fklist') {
      for (const id of value as number[]) {
        const msg = fkProblem(state, agg, spec.target!, id, cmd.elsewhere?.includes(`${spec.name}:${id}`) ?? false);
        if (msg) { addError(errors, spec.name, msg); break; }
      }
    }
  }
}

function fkProblem(state: ShardState, agg: Aggregate, target: ResourceType, id: number, elsewhere: boolean): string | null {
  const local = (agg[FK_MAP[target]!] as Map<number, unknown>);
  if (local.has(id)) return null;
  const existsHere = state.index(target as EventType).has(id);
  return existsHere || elsewhere
    ? Errors.notInPlaybook(DISPLAY_NAME[target], id, agg.playbook.id)
    : Errors.invalidPk(id);
}

/** A rename onto a (name|path|key, playbook) pair that is taken. */
function uniqueConflict(type: EventType, agg: Aggregate, d: Record<string, any>, current: any): string | null {
  const check = (map: Map<string, { id: number }>, prop: string): string | null => {
    if (d[prop] === undefined) return null;
    const other = map.get(d[prop]);
    return other && other.id !== current.id ? Errors.notUnique([prop, 'playbook']) : null;
  };
  switch (type) {
    case 'host': return check(agg.hostByName, 'name');
    case 'file': return check(agg.fileByPath, 'path');
    case 'record': return check(agg.recordByKey, 'key');
    default: return null;
  }
}

/** No field has an error (Object.keys would build an array of them to count). */
function isEmpty(errors: FieldErrors): boolean {
  for (const _ in errors) return false;
  return true;
}

function addError(errors: FieldErrors, field: string, msg: string): void {
  (errors[field] ??= []).push(msg);
}

function refuse(status: number, body: string): Decision {
  return { ok: false, status, body };
}

export function sha1(text: string): string {
  return createHash('sha1').update(text, 'utf8').digest('hex');
}
