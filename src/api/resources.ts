// The catalogue of resources: what each one is called on the wire, which fields a
// write takes (in serializer order, which is also the order of error keys), which
// filters and `order` keys its list accepts. Front and shards both read this one
// table so that validation, filtering and serialization cannot drift apart.
import { LIMITS } from '../limits.js';

export const RESOURCE_TYPES = ['label', 'playbook', 'play', 'task', 'host', 'result', 'file', 'record'] as const;
export type ResourceType = typeof RESOURCE_TYPES[number];

/** Child types that live inside a playbook aggregate (everything but labels and playbooks). */
export const CHILD_TYPES = ['play', 'task', 'host', 'result', 'file', 'record'] as const;
export type ChildType = typeof CHILD_TYPES[number];

/** Index of a type in RESOURCE_TYPES: used as a compact code in messages and the directory. */
export const TYPE_CODE: Record<ResourceType, number> = {
  label: 0, playbook: 1, play: 2, task: 3, host: 4, result: 5, file: 6, record: 7,
};

/** URL segment (plural) → type; also the key order of GET /api/v1/. */
export const PATH_TO_TYPE: Record<string, ResourceType> = {
  labels: 'label', playbooks: 'playbook', plays: 'play', tasks: 'task',
  hosts: 'host', results: 'result', files: 'file', records: 'record',
};
export const TYPE_TO_PATH: Record<ResourceType, string> = {
  label: 'labels', playbook: 'playbooks', play: 'plays', task: 'tasks',
  host: 'hosts', result: 'results', file: 'files', record: 'records',
};
/** "Playbook" in OPTIONS names and in "<Resource> N does not belong to playbook M." */
export const DISPLAY_NAME: Record<ResourceType, string> = {
  label: 'Label', playbook: 'Playbook', play: 'Play', task: 'Task',
  host: 'Host', result: 'Result', file: 'File', record: 'Record',
};

export const RUN_STATUSES = ['unknown', 'running', 'completed', 'failed', 'expired'] as const;
export const RESULT_STATUSES = ['ok', 'failed', 'skipped', 'unreachable', 'changed', 'ignored', 'unknown'] as const;

export type FieldKind =
  | 'string'      // a short string; numbers are coerced like DRF's CharField
  | 'int'         // integer; integral numbers and decimal strings accepted
  | 'bool'        // DRF boolean literals
  | 'timestamp'   // µs since epoch after parsing
  | 'choice'      // one of `choices`
  | 'fk'          // id of `target`
  | 'json'        // any JSON value but null, stored as its minified client text
  | 'uuid'        // normalized lower-case hyphenated
  | 'labels'      // list of label names
  | 'fklist'      // list of ids of `target`
  | 'text';       // file content: a string that may be empty

export interface FieldSpec {
  readonly name: string;
  readonly kind: FieldKind;
  readonly required?: boolean;
  readonly nullable?: boolean;
  readonly blank?: boolean;
  readonly maxLength?: number;
  readonly choices?: readonly string[];
  readonly target?: ResourceType;
  /** JSON text a PUT resets an omitted field to (DRF serializer defaults). */
  readonly resetTo?: string;
  /** Accepted input alias (ARA's `ansible_version` for `runner_version`). */
  readonly alias?: string;
  /**
   * A string kept as sent: not stripped of surrounding whitespace (every other
   * `string` field is, as ARA's DRF CharFields do; docs/api.md#writes).
   */
  readonly keepWhitespace?: boolean;
}

const NAME = LIMITS.nameLength;
const PATH = LIMITS.pathLength; // ARA caps paths at 255; deep role paths exceed that in real fleets.

const started: FieldSpec = { name: 'started', kind: 'timestamp' };
const ended: FieldSpec = { name: 'ended', kind: 'timestamp', nullable: true };
const runStatus: FieldSpec = { name: 'status', kind: 'choice', choices: RUN_STATUSES };
const playbookFk: FieldSpec = { name: 'playbook', kind: 'fk', target: 'playbook', required: true };
/** Playbook and task `uuid` (docs/api.md#batch-ingest): the client's opaque key, not a UUID. */
const streamKey: FieldSpec = { name: 'uuid', kind: 'string', nullable: true, maxLength: LIMITS.uuidLength, keepWhitespace: true };
const counter = (name: string): FieldSpec => ({ name, kind: 'int' });

/** Write fields per type, in serializer order (= order of keys in a 400 body). */
export const WRITE_FIELDS: Record<ResourceType, readonly FieldSpec[]> = uniformSpecs({
  label: [{ name: 'name', kind: 'string', required: true, maxLength: NAME }],
  playbook: [
    { name: 'arguments', kind: 'json', resetTo: '{}' },
    { name: 'labels', kind: 'labels' },
    started, ended,
    { name: 'name', kind: 'string', nullable: true, maxLength: NAME },
    { name: 'runner_version', kind: 'string', required: true, maxLength: NAME, alias: 'ansible_version' },
    runStatus,
    { name: 'path', kind: 'string', required: true, maxLength: PATH },
    { name: 'controller', kind: 'string', nullable: true, blank: true, maxLength: NAME },
    { name: 'user', kind: 'string', nullable: true, blank: true, maxLength: NAME },
    { name: 'client_version', kind: 'string', nullable: true, blank: true, maxLength: NAME },
    { name: 'python_version', kind: 'string', nullable: true, blank: true, maxLength: NAME },
    streamKey,
  ],
  play: [
    started, ended,
    { name: 'name', kind: 'string', nullable: true, blank: true, maxLength: NAME },
    { name: 'uuid', kind: 'uuid', required: true },
    runStatus,
    playbookFk,
  ],
  task: [
    { name: 'tags', kind: 'json', resetTo: '[]' },
    started, ended,
    { name: 'name', kind: 'string', nullable: true, blank: true },
    { name: 'action', kind: 'string', required: true },
    { name: 'lineno', kind: 'int', required: true },
    { name: 'handler', kind: 'bool', required: true },
    runStatus,
    { name: 'play', kind: 'fk', target: 'play', required: true },
    { name: 'file', kind: 'fk', target: 'file', required: true },
    playbookFk,
    streamKey,
    { name: 'warnings', kind: 'json', resetTo: '[]' },
    { name: 'deprecations', kind: 'json', resetTo: '[]' },
    { name: 'exceptions', kind: 'json', resetTo: '[]' },
  ],
  host: [
    { name: 'facts', kind: 'json', resetTo: '{}' },
    { name: 'name', kind: 'string', required: true, maxLength: NAME },
    counter('changed'), counter('failed'), counter('ok'), counter('skipped'), counter('unreachable'),
    playbookFk,
  ],
  result: [
    { name: 'content', kind: 'json', resetTo: '{}' },
    started, ended,
    { name: 'status', kind: 'choice', choices: RESULT_STATUSES },
    { name: 'changed', kind: 'bool' },
    { name: 'ignore_errors', kind: 'bool' },
    { name: 'host', kind: 'fk', target: 'host', required: true },
    { name: 'task', kind: 'fk', target: 'task', required: true },
    { name: 'play', kind: 'fk', target: 'play', required: true },
    playbookFk,
    { name: 'delegated_to', kind: 'fklist', target: 'host' },
  ],
  file: [
    { name: 'content', kind: 'text', required: true },
    { name: 'path', kind: 'string', required: true, maxLength: PATH },
    playbookFk,
  ],
  record: [
    { name: 'value', kind: 'json', resetTo: '""' },
    { name: 'key', kind: 'string', required: true, maxLength: NAME },
    { name: 'type', kind: 'string', required: true, maxLength: NAME },
    playbookFk,
  ],
});

/**
 * Every spec with the same properties in the same order (those it does not
 * set: undefined). The loops over a type's fields (the normalizer, decide, for
 * every write and every batch event) then read one object shape instead of a
 * dozen, which V8 had to look up in its megamorphic cache at every read.
 */
function uniformSpecs(specs: Record<ResourceType, readonly FieldSpec[]>): Record<ResourceType, readonly FieldSpec[]> {
  const out = {} as Record<ResourceType, readonly FieldSpec[]>;
  for (const type of RESOURCE_TYPES) {
    out[type] = specs[type].map((f): FieldSpec => ({
      name: f.name, kind: f.kind, required: f.required, nullable: f.nullable, blank: f.blank, maxLength: f.maxLength,
      choices: f.choices, target: f.target, resetTo: f.resetTo, alias: f.alias, keepWhitespace: f.keepWhitespace,
    }));
  }
  return out;
}

/** The foreign-key fields (an id, or a list of ids, of another record) of each type, in WRITE_FIELDS order. */
export const FK_FIELDS = Object.fromEntries(RESOURCE_TYPES.map((type) => [
  type, WRITE_FIELDS[type].filter((f) => f.kind === 'fk' || f.kind === 'fklist'),
])) as unknown as Record<ResourceType, readonly FieldSpec[]>;

/**
 * JSON-valued fields per type (result content, host facts…): stored as the
 * client's text, so a write body is scanned for them, never parsed (batch events
 * and per-record bodies alike).
 */
export const JSON_FIELDS = Object.fromEntries(Object.entries(WRITE_FIELDS).map(([type, fields]) => [
  type, new Set(fields.filter((f) => f.kind === 'json').flatMap((f) => (f.alias ? [f.name, f.alias] : [f.name]))),
])) as unknown as Record<ResourceType, ReadonlySet<string>>;

/** Sort keys each list accepts in `order` (docs/api.md#lists). */
export const ORDER_KEYS: Record<ResourceType, readonly string[]> = {
  label: ['id', 'created', 'updated', 'name'],
  playbook: ['id', 'created', 'updated', 'started', 'ended', 'duration', 'name', 'status'],
  play: ['id', 'created', 'updated', 'started', 'ended', 'duration'],
  task: ['id', 'created', 'updated', 'started', 'ended', 'duration'],
  host: ['id', 'created', 'updated', 'name', 'changed', 'failed', 'ok', 'skipped', 'unreachable'],
  result: ['id', 'created', 'updated', 'started', 'ended', 'duration'],
  file: ['id', 'created', 'updated', 'path'],
  record: ['id', 'created', 'updated', 'key'],
};

export type FilterKind =
  | 'date_before' | 'date_after'  // inclusive bounds on a timestamp column
  | 'id'                          // integer id equality
  | 'icontains' | 'iexact' | 'exact'
  | 'status'                      // repeatable; OR of choices
  | 'bool'
  | 'uuid'
  | 'int_gt' | 'int_lt'
  | 'has_id'                      // a list of ids (result delegated_to) holds this one
  | 'label'                       // playbook has a label with this name (case-insensitive)
  | 'id_in';                      // one of these ids: the matches of a list's `q=` (docs/search.md)

export interface FilterSpec {
  readonly param: string;
  readonly kind: FilterKind;
  /** the column the filter reads (a key of the shard's row accessors) */
  readonly column: string;
  readonly choices?: readonly string[];
}

const dates = (cols: readonly string[]): FilterSpec[] => cols.flatMap((c) => [
  { param: `${c}_before`, kind: 'date_before' as const, column: c },
  { param: `${c}_after`, kind: 'date_after' as const, column: c },
]);
const base = dates(['created', 'updated']);
const timed = dates(['created', 'updated', 'started', 'ended']);
const byPlaybook: FilterSpec = { param: 'playbook', kind: 'id', column: 'playbook' };
const counters = ['changed', 'failed', 'ok', 'skipped', 'unreachable'];
/** ARA's filters of tasks and hosts on their playbook's name and path (case-insensitive substring) */
const byPlaybookText: FilterSpec[] = [
  { param: 'playbook_name', kind: 'icontains', column: 'playbook_name' },
  { param: 'playbook_path', kind: 'icontains', column: 'playbook_path' },
];

/**
 * List filters in declaration order (= order of keys in a 400 body): ARA's
 * FilterSets at its newest commit (ara/api/filters.py), in their order, and
 * logbook's own few beside them. A list's other parameters are LIST_PARAMS.
 */
export const FILTERS: Record<ResourceType, readonly FilterSpec[]> = {
  label: [...base, { param: 'name', kind: 'icontains', column: 'name' }],
  playbook: [
    ...timed,
    { param: 'name', kind: 'icontains', column: 'name' },
    { param: 'path', kind: 'icontains', column: 'path' },
    { param: 'status', kind: 'status', column: 'status', choices: RUN_STATUSES },
    { param: 'label', kind: 'label', column: 'labels' },
    { param: 'runner_version', kind: 'icontains', column: 'runner_version' },
    { param: 'ansible_version', kind: 'icontains', column: 'runner_version' },
    { param: 'controller', kind: 'icontains', column: 'controller' },
    { param: 'user', kind: 'icontains', column: 'user' },
    { param: 'uuid', kind: 'exact', column: 'uuid' },
    { param: 'client_version', kind: 'icontains', column: 'client_version' },
    { param: 'server_version', kind: 'icontains', column: 'server_version' },
    { param: 'python_version', kind: 'icontains', column: 'python_version' },
  ],
  play: [
    ...timed, byPlaybook,
    { param: 'uuid', kind: 'uuid', column: 'uuid' },
    { param: 'status', kind: 'status', column: 'status', choices: RUN_STATUSES },
    { param: 'name', kind: 'icontains', column: 'name' },
  ],
  task: [
    ...timed, byPlaybook, ...byPlaybookText,
    { param: 'play', kind: 'id', column: 'play' },
    { param: 'status', kind: 'status', column: 'status', choices: RUN_STATUSES },
    { param: 'name', kind: 'icontains', column: 'name' },
    { param: 'uuid', kind: 'exact', column: 'uuid' },
    { param: 'action', kind: 'iexact', column: 'action' },
    { param: 'path', kind: 'icontains', column: 'path' },
    { param: 'lineno', kind: 'id', column: 'lineno' },
    { param: 'handler', kind: 'bool', column: 'handler' },
    // ARA's counts of a task's JSON lists (a list's length; anything else counts 0)
    ...['exceptions', 'deprecations', 'warnings'].flatMap((c) => [
      { param: `${c}_count__gt`, kind: 'int_gt' as const, column: `${c}_count` },
      { param: `${c}_count__lt`, kind: 'int_lt' as const, column: `${c}_count` },
    ]),
  ],
  host: [
    ...base, byPlaybook, ...byPlaybookText,
    { param: 'name', kind: 'icontains', column: 'name' },
    ...counters.flatMap((c) => [
      { param: `${c}__gt`, kind: 'int_gt' as const, column: c },
      { param: `${c}__lt`, kind: 'int_lt' as const, column: c },
    ]),
  ],
  result: [
    ...timed, byPlaybook,
    { param: 'play', kind: 'id', column: 'play' },
    { param: 'task', kind: 'id', column: 'task' },
    { param: 'task_name', kind: 'icontains', column: 'task_name' },
    { param: 'host', kind: 'id', column: 'host' },
    { param: 'host_name', kind: 'iexact', column: 'host_name' },
    { param: 'delegated_to', kind: 'has_id', column: 'delegated_to' },
    { param: 'status', kind: 'status', column: 'status', choices: RESULT_STATUSES },
    { param: 'changed', kind: 'bool', column: 'changed' },
    { param: 'ignore_errors', kind: 'bool', column: 'ignore_errors' },
  ],
  file: [...base, byPlaybook, { param: 'path', kind: 'icontains', column: 'path' }],
  record: [...base, byPlaybook, { param: 'key', kind: 'exact', column: 'key' }],
};

/**
 * The parameters every list reads besides its filters. `format` is DRF's
 * format override (`?format=json`): every answer is JSON, so it is read and
 * ignored rather than refused. `dialect` (`ara` or `logbook`) asks for a
 * dialect whatever LOGBOOK_ARA_COMPAT says (docs/api.md#the-ara-dialect).
 */
export const LIST_PARAMS: readonly string[] = ['order', 'limit', 'offset', 'cursor', 'format', 'dialect'];
export const DIALECTS: readonly string[] = ['ara', 'logbook'];

/** Which FK of a type names the playbook that owns it (all child types: `playbook`). */
export function isChildType(type: ResourceType): type is ChildType {
  return type !== 'label' && type !== 'playbook';
}
