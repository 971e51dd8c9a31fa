// TypeBox schemas of every write body, derived from the field catalogue and
// compiled once at start-up. A body that passes its
// compiled check is in canonical form (the shape the ARA callback sends), so the
// normalizer can take the fast path with no coercion and no error bookkeeping.
// The same schemas document the API (OpenAPI comes from them too).
import Type, { type TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Format from 'typebox/format';
import { LIMITS } from '../limits.js';
import { RESOURCE_TYPES, RESULT_STATUSES, RUN_STATUSES, TYPE_TO_PATH, WRITE_FIELDS, type FieldSpec, type ResourceType } from './resources.js';
import { isSupported, parseTimestamp } from './time.js';
import { normalizeUuid } from './uuid.js';

export type WriteMode = 'create' | 'put' | 'patch';

// a write's timestamp: well-formed and in the supported range (anything else takes the slow path, which says why)
Format.Set('logbook-timestamp', (value: string) => isSupported(parseTimestamp(value)));
Format.Set('logbook-uuid', (value: string) => normalizeUuid(value) !== undefined);

const MAX_ID = Number.MAX_SAFE_INTEGER;

/**
 * `check`: the schema compiled to find canonical bodies (compileWriteValidators),
 * where a timestamp or a UUID is any string: the normalizer parses it once, to
 * convert it, and takes the slow path for it if it is not one (validate.ts).
 * Checking the format here parsed every timestamp of a write twice.
 */
function fieldSchema(spec: FieldSpec, check: boolean): TSchema {
  let schema: TSchema;
  switch (spec.kind) {
    case 'string':
      schema = Type.String({ minLength: spec.blank ? 0 : 1, ...(spec.maxLength ? { maxLength: spec.maxLength } : {}) });
      break;
    case 'int': schema = Type.Integer({ minimum: -MAX_ID, maximum: MAX_ID }); break;
    case 'bool': schema = Type.Boolean(); break;
    case 'timestamp': schema = check ? Type.String() : Type.String({ format: 'logbook-timestamp' }); break;
    case 'choice': schema = Type.Union(spec.choices!.map((c) => Type.Literal(c))); break;
    case 'fk': schema = Type.Integer({ minimum: 1, maximum: MAX_ID }); break;
    case 'json': schema = Type.Union([Type.Object({}), Type.Array(Type.Unknown()), Type.String(), Type.Number(), Type.Boolean()]); break;
    case 'uuid': schema = check ? Type.String() : Type.String({ format: 'logbook-uuid' }); break;
    case 'labels': schema = Type.Array(Type.String({ maxLength: LIMITS.nameLength })); break;
    case 'fklist': schema = Type.Array(Type.Integer({ minimum: 1, maximum: MAX_ID })); break;
    case 'text': schema = Type.String(); break;
  }
  return spec.nullable ? Type.Union([schema, Type.Null()]) : schema;
}

/**
 * The canonical body of a write: required fields required except on PATCH.
 * `check`: for compileWriteValidators (see fieldSchema).
 */
export function writeSchema(type: ResourceType, mode: WriteMode, check = false): TSchema {
  const properties: Record<string, TSchema> = {};
  for (const spec of WRITE_FIELDS[type]) {
    const schema = fieldSchema(spec, check);
    // the alias is accepted by the normalizer; canonical bodies use the field name
    properties[spec.name] = spec.required && mode !== 'patch' && !spec.alias ? schema : Type.Optional(schema);
  }
  return Type.Object(properties);
}

export interface CompiledWrite { Check(value: unknown): boolean }

/** One compiled validator per resource and write mode, built at start-up. */
export function compileWriteValidators(): Record<ResourceType, Record<WriteMode, CompiledWrite>> {
  const out = {} as Record<ResourceType, Record<WriteMode, CompiledWrite>>;
  for (const type of RESOURCE_TYPES) {
    out[type] = {} as Record<WriteMode, CompiledWrite>;
    for (const mode of ['create', 'put', 'patch'] as const) {
      try {
        out[type][mode] = Compile(writeSchema(type, mode, true));
      } catch (err) {
        throw new Error(`cannot compile the ${mode} schema of ${type}: ${(err as Error).message}`);
      }
    }
  }
  return out;
}

// ---- response representations (docs/api.md#representations) ---------------------------------------
// One TypeBox schema per representation: list row, detail, write response and
// nested summary of every resource, the list envelope, the minimal write
// response and the error bodies. Properties are declared in the order the
// serializer writes them (src/shard/serialize.ts), and objects admit no other
// keys, so a test that checks real responses against these schemas (and their
// key order) catches any drift. With ARA compatibility on, the extra fields of the
// ARA dialect (docs/api.md#the-ara-dialect) appear where the serializer puts them. Nested representations are
// `$ref`s into the same map (`#/components/schemas/<name>`), which is how the
// OpenAPI document (src/api/openapi.ts) publishes them.

type Fields = Array<[string, TSchema]>;

/** A closed object whose keys are all present, in this order. */
const obj = (fields: Fields, description?: string): TSchema =>
  Type.Object(Object.fromEntries(fields), { additionalProperties: false, ...(description ? { description } : {}) });
const ref = (name: string): TSchema => Type.Ref(`#/components/schemas/${name}`);
const nullable = (schema: TSchema): TSchema => Type.Union([schema, Type.Null()]);

/** Timestamps out: UTC, always six fraction digits (docs/api.md#conventions). */
export const TIMESTAMP_OUT = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}Z$';
/** Durations out: hours not folded into days (docs/api.md#conventions). */
export const DURATION_OUT = '^\\d{2,}:\\d{2}:\\d{2}\\.\\d{6}$';

const id = Type.Integer({ minimum: 1 });
const count = Type.Integer({ minimum: 0 });
const ts = Type.String({ pattern: TIMESTAMP_OUT });
const anyJson = Type.Unknown({ description: 'any JSON value, returned exactly as stored' });
const text = Type.String();
const runStatus = Type.Union(RUN_STATUSES.map((s) => Type.Literal(s)));
const resultStatus = Type.Union(RESULT_STATUSES.map((s) => Type.Literal(s)), { description: 'the shown status (docs/api.md#derived-state)' });

const stampsOf: Fields = [['created', ts], ['updated', ts]];
const timing: Fields = [['started', ts], ['ended', nullable(ts)], ['duration', nullable(Type.String({ pattern: DURATION_OUT }))]];
const counters: Fields = ['changed', 'failed', 'ok', 'skipped', 'unreachable'].map((c) => [c, Type.Integer()]);

/** Capitalized resource name: PlaybookDetail, TaskSummary… */
const cap = (type: ResourceType): string => type[0]!.toUpperCase() + type.slice(1);

/** Every response schema by component name (closed under `$ref`). */
export function responseSchemas(compat: boolean): Record<string, TSchema> {
  const extra = (fields: Fields): Fields => (compat ? fields : []);
  const compatPlaybook = extra([['ansible_version', text], ['controller', nullable(text)], ['user', nullable(text)], ['uuid', nullable(text)],
    ['client_version', nullable(text)], ['server_version', text], ['python_version', nullable(text)]]);
  const compatStamps = extra(stampsOf);
  const pbHead: Fields = [['id', id], ['items', ref('PlaybookItems')]];
  const pbTail: Fields = [...timing, ['name', nullable(text)], ['runner_version', text], ['status', runStatus], ['path', text], ...compatPlaybook];
  const pbFull: Fields = [...pbHead, ['arguments', anyJson], ['labels', Type.Array(ref('LabelRef'))], ...stampsOf, ...pbTail];
  const s: Record<string, TSchema> = {
    PlaybookItems: obj(['plays', 'tasks', 'results', 'hosts', 'files', 'records'].map((k) => [k, count])),
    PlayItems: obj([['tasks', count], ['results', count]]),
    TaskItems: obj([['results', count]]),
    LabelRef: obj([['id', id], ['name', text]], 'a label inside a playbook'),

    PlaybookSummary: compat
      ? obj([...pbHead, ['arguments', anyJson], ['labels', Type.Array(ref('LabelRef'))], ...pbTail], "ARA's nested playbook: with its arguments")
      : obj([...pbHead, ['labels', Type.Array(ref('LabelRef'))], ...pbTail], 'summary(playbook): no arguments'),
    PlaybookListRow: obj(compat ? pbFull : [...pbHead, ['arguments', anyJson], ['labels', Type.Array(ref('LabelRef'))], ...pbTail]),
    PlaybookDetail: obj(pbFull),
    PlaybookWrite: obj(pbFull),

    PlaySummary: obj([['id', id], ['items', ref('PlayItems')], ...timing, ['name', nullable(text)], ['status', runStatus], ['playbook', id]]),
    PlayListRow: obj([['id', id], ['items', ref('PlayItems')], ...timing, ['name', nullable(text)], ['uuid', text], ['status', runStatus], ['playbook', id], ...compatStamps]),
    PlayDetail: obj([['id', id], ['items', ref('PlayItems')], ['playbook', ref('PlaybookSummary')], ...stampsOf, ...timing, ['name', nullable(text)], ['uuid', text], ['status', runStatus]]),
    PlayWrite: obj([['id', id], ['items', ref('PlayItems')], ...stampsOf, ...timing, ['name', nullable(text)], ['uuid', text], ['status', runStatus], ['playbook', id]]),
  };
  const taskBody: Fields = [...timing, ['name', nullable(text)], ['action', text], ['lineno', Type.Integer()], ['handler', Type.Boolean()], ['status', runStatus],
    ...extra([['uuid', nullable(text)], ['warnings', anyJson], ['deprecations', anyJson], ['exceptions', anyJson]])];
  const taskIds: Fields = [['play', id], ['file', id], ['playbook', id]];
  const taskHead: Fields = [['id', id], ['items', ref('TaskItems')], ['path', nullable(text)]];
  Object.assign(s, {
    TaskSummary: obj([...taskHead, ...extra([['tags', anyJson]]), ...taskBody, ...taskIds]),
    TaskListRow: obj([...taskHead, ['tags', anyJson], ...taskBody, ...taskIds, ...compatStamps]),
    TaskDetail: obj([...taskHead, ['tags', anyJson], ['playbook', ref('PlaybookSummary')], ['play', nullable(ref('PlaySummary'))],
      ['file', nullable(ref('FileListRow'))], ...stampsOf, ...taskBody]),
    TaskWrite: obj([...taskHead, ['tags', anyJson], ...stampsOf, ...taskBody, ...taskIds]),

    HostSummary: obj([['id', id], ['name', text], ...counters, ['playbook', id]]),
    HostListRow: obj([['id', id], ['playbook', id], ...stampsOf, ['name', text], ...counters]),
    HostDetail: obj([['id', id], ['playbook', ref('PlaybookSummary')], ['facts', anyJson], ...stampsOf, ['name', text], ...counters]),
    HostWrite: obj([['id', id], ['facts', anyJson], ...stampsOf, ['name', text], ...counters, ['playbook', id]]),
  });
  const flags: Fields = [['changed', Type.Boolean()], ['ignore_errors', Type.Boolean()]];
  const delegated = extra([['delegated_to', Type.Array(id)]]);
  Object.assign(s, {
    ResultListRow: obj([['id', id], ['status', resultStatus], ['playbook', id], ['play', id], ['task', id], ['host', id],
      ...timing, ...flags, ...delegated, ...compatStamps]),
    ResultDetail: obj([['id', id], ['status', resultStatus], ['playbook', ref('PlaybookSummary')], ['play', nullable(ref('PlaySummary'))],
      ['task', nullable(ref('TaskSummary'))], ['host', nullable(ref('HostSummary'))], ['content', anyJson], ...stampsOf, ...timing,
      // the detail shows delegates as it shows `host` (ARA's detail serializer); rows and write answers: ids
      ...flags, ...extra([['delegated_to', Type.Array(ref('HostSummary'))]])]),
    ResultWrite: obj([['id', id], ['status', resultStatus], ['content', anyJson], ...stampsOf, ...timing, ...flags,
      ['host', id], ['task', id], ['play', id], ['playbook', id], ...delegated]),

    FileListRow: obj([['id', id], ['sha1', Type.String({ pattern: '^[0-9a-f]{40}$' })], ['playbook', id], ['path', text], ...compatStamps]),
    FileDetail: obj([['id', id], ['sha1', Type.String({ pattern: '^[0-9a-f]{40}$' })], ['playbook', ref('PlaybookSummary')],
      ['content', text], ...stampsOf, ['path', text]]),
    FileWrite: obj([['id', id], ['sha1', Type.String({ pattern: '^[0-9a-f]{40}$' })], ['content', text], ...stampsOf, ['path', text], ['playbook', id]]),

    RecordListRow: obj([['id', id], ['playbook', id], ['key', text], ['type', text], ...compatStamps]),
    RecordDetail: obj([['id', id], ['playbook', ref('PlaybookSummary')], ['value', anyJson], ...stampsOf, ['key', text], ['type', text]]),
    RecordWrite: obj([['id', id], ['value', anyJson], ...stampsOf, ['key', text], ['type', text], ['playbook', id]]),
  });
  const label = obj([['id', id], ...stampsOf, ['name', text]]);
  Object.assign(s, { LabelListRow: label, LabelDetail: label, LabelWrite: label });

  for (const type of RESOURCE_TYPES) {
    s[`${cap(type)}List`] = obj([
      ['count', count], ['next', nullable(Type.String({ format: 'uri' }))], ['previous', nullable(Type.String({ format: 'uri' }))],
      ['results', Type.Array(ref(`${cap(type)}ListRow`))],
    ], `a page of ${type}s`);
  }
  Object.assign(s, {
    Minimal: obj([['id', id]], 'the write response with `Prefer: return=minimal`'),
    ErrorDetail: obj([['detail', text]]),
    FieldErrors: Type.Record(Type.String(), Type.Array(Type.String()), {
      description: 'every failing field (or non_field_errors, or a list query parameter) with its messages',
    }),
    Options: obj([['name', text], ['renders', Type.Array(text)], ['parses', Type.Array(text)]]),
    ApiIndex: obj([['kind', compat ? Type.Literal('ara') : Type.Literal('logbook')], ['version', text], ['api', Type.Array(Type.String({ format: 'uri' }))]]),
    // ARA's router lists latesthosts after hosts; logbook's root names the resources only
    ApiRoot: obj(RESOURCE_TYPES.flatMap((t): Fields => [[TYPE_TO_PATH[t], Type.String({ format: 'uri' })],
      ...(compat && t === 'host' ? [['latesthosts', Type.String({ format: 'uri' })] as Fields[number]] : [])])),
    Health: Type.Object({
      status: Type.Union([Type.Literal('ok'), Type.Literal('recovering'), Type.Literal('degraded'), Type.Literal('stopping')]),
      version: Type.Optional(text), shards: Type.Optional(count), shards_down: Type.Optional(Type.Array(count)),
      uptime_seconds: Type.Optional(count),
    }, { additionalProperties: false }),
  });
  return s;
}

/** Component name of a representation: `responseName('task', 'detail')` → TaskDetail. */
export function responseName(type: ResourceType, form: 'list' | 'detail' | 'write' | 'summary' | 'page'): string {
  const suffix = { list: 'ListRow', detail: 'Detail', write: 'Write', summary: 'Summary', page: 'List' }[form];
  return cap(type) + suffix;
}
