// The OpenAPI 3.1 document served at GET /api/v1/openapi.json, generated at
// start-up from the very schemas and tables the server runs on, so it cannot
// drift: request bodies from the TypeBox write schemas that validate them
// (schemas.ts writeSchema), responses from the TypeBox response schemas
// (schemas.ts responseSchemas), list parameters from FILTERS and ORDER_KEYS
// (resources.ts), limits from the configuration. OpenAPI 3.1 schemas are JSON
// Schema 2020-12, which is what TypeBox emits; only our two custom string
// formats are rewritten into portable patterns.
import type { Config } from '../config.js';
import { LIMITS } from '../limits.js';
import {
  DISPLAY_NAME, FILTERS, ORDER_KEYS, RESOURCE_TYPES, TYPE_TO_PATH, WRITE_FIELDS,
  type FilterSpec, type ResourceType,
} from './resources.js';
import { responseName, responseSchemas, writeSchema, type WriteMode } from './schemas.js';
import { SUPPORTED_RANGE } from './time.js';

type Json = Record<string, unknown>;

/** Timestamps in (docs/api.md#conventions): the pattern of what parseTimestamp accepts. */
const TIMESTAMP_IN = '^\\d{4}-\\d{2}-\\d{2}[T ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:?\\d{2})?$';
const TIMESTAMP_HELP = 'YYYY-MM-DD[T| ]hh:mm[:ss[.f{1,9}]][Z|±hh:mm|±hhmm]; no offset means UTC; digits past the sixth are truncated; '
  + `supported: ${SUPPORTED_RANGE} (stored exactly to the microsecond)`;
/** Filters also take a date alone (midnight UTC). */
const FILTER_DATE = '^\\d{4}-\\d{2}-\\d{2}([T ]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:?\\d{2})?)?$';
const BOOL_IN = '^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0)$';

const cap = (type: ResourceType): string => type[0]!.toUpperCase() + type.slice(1);
const schemaRef = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json): Json => ({ 'application/json': { schema } });

/** A TypeBox schema as plain JSON, with the custom formats made portable. */
function portable(schema: unknown): Json {
  return JSON.parse(JSON.stringify(schema), (_key, value) => {
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      if (value.format === 'logbook-timestamp') return { type: 'string', pattern: TIMESTAMP_IN, description: TIMESTAMP_HELP };
      if (value.format === 'logbook-uuid') {
        return { type: 'string', description: 'a UUID in any standard form (hyphens, braces, urn:uuid:); returned lower-case hyphenated' };
      }
    }
    return value;
  }) as Json;
}

/** Write body schema; accepted aliases (ansible_version) are documented as properties too. */
function bodySchema(type: ResourceType, mode: WriteMode): Json {
  const schema = portable(writeSchema(type, mode));
  const properties = schema.properties as Record<string, Json>;
  const notes: string[] = [];
  for (const spec of WRITE_FIELDS[type]) {
    if (!spec.alias) continue;
    properties[spec.alias] = { ...properties[spec.name], description: `alias of ${spec.name}` };
    if (spec.required && mode !== 'patch') notes.push(`${spec.name} (or its alias ${spec.alias}) is required`);
  }
  const base = 'Unknown keys and read-only keys (id, items, sha1, created, updated, duration) are ignored.';
  schema.description = [base, ...notes].join(' ');
  return schema;
}

function filterParam(spec: FilterSpec): Json {
  let schema: Json;
  let description: string;
  switch (spec.kind) {
    case 'date_before': schema = { type: 'string', pattern: FILTER_DATE }; description = `${spec.column} at or before (inclusive); a date alone means midnight UTC`; break;
    case 'date_after': schema = { type: 'string', pattern: FILTER_DATE }; description = `${spec.column} at or after (inclusive); a date alone means midnight UTC`; break;
    case 'id': schema = { type: 'integer' }; description = `${spec.column} id`; break;
    case 'icontains': schema = { type: 'string' }; description = `${spec.column} contains (case-insensitive)`; break;
    case 'iexact': schema = { type: 'string' }; description = `${spec.column} equals (case-insensitive)`; break;
    case 'exact': schema = { type: 'string' }; description = `${spec.column} equals`; break;
    case 'status':
      schema = { type: 'array', items: { type: 'string', enum: [...spec.choices!] } };
      description = 'status; repeat the parameter for any of several (OR)';
      break;
    case 'bool': schema = { type: 'string', pattern: BOOL_IN }; description = `${spec.column}: true/false/1/0, any case`; break;
    case 'uuid': schema = { type: 'string' }; description = 'UUID in any standard form'; break;
    case 'int_gt': schema = { type: 'number' }; description = `${spec.column} greater than`; break;
    case 'int_lt': schema = { type: 'number' }; description = `${spec.column} less than`; break;
    case 'has_id': schema = { type: 'integer' }; description = `${spec.column} includes this host id`; break;
    case 'label': schema = { type: 'string' }; description = 'has a label with this name (case-insensitive)'; break;
    case 'id_in': schema = { type: 'string' }; description = 'one of the search\'s matches'; break;
  }
  return {
    name: spec.param, in: 'query', required: false, description, schema,
    ...(spec.kind === 'status' ? { style: 'form', explode: true } : {}),
  };
}

function listParams(type: ResourceType, config: Config): Json[] {
  const keys = ORDER_KEYS[type].join('|');
  return [
    ...FILTERS[type].map(filterParam),
    ...(type === 'label' ? [] : [{
      name: 'q', in: 'query', required: false, schema: { type: 'string', maxLength: 1000 },
      description: 'full-text search (docs/search.md): only the rows it matches, with the other filters; more than 10,000 matches → 400',
    }]),
    {
      name: 'order', in: 'query', required: false,
      description: `sort keys, comma-separated, '-' for descending; ties by ascending id. Keys: ${ORDER_KEYS[type].join(', ')}`,
      schema: { type: 'string', pattern: `^-?(${keys})(,-?(${keys}))*$` },
    },
    {
      name: 'limit', in: 'query', required: false,
      description: `page size; values above ${config.maxPageSize} are clamped`,
      schema: { type: 'integer', minimum: 1, default: config.pageSize },
    },
    {
      name: 'offset', in: 'query', required: false, schema: { type: 'integer', minimum: 0, maximum: config.maxListOffset, default: 0 },
      description: 'larger offsets are refused (400); the next/previous links go on past it with a cursor',
    },
    {
      name: 'cursor', in: 'query', required: false, schema: { type: 'string' },
      description: 'opaque: a next/previous link past the largest offset carries it instead of offset (same order and filters); a bad one → 400',
    },
    {
      name: 'format', in: 'query', required: false, schema: { type: 'string' },
      description: "DRF's format override, read and ignored: every answer is JSON",
    },
    {
      name: 'dialect', in: 'query', required: false, schema: { type: 'string', enum: ['ara', 'logbook'] },
      description: "answer in ARA's dialect or logbook's, whatever LOGBOOK_ARA_COMPAT would choose (details take it too)",
    },
  ];
}

const PREFER: Json = {
  name: 'Prefer', in: 'header', required: false,
  description: '`return=minimal` answers a write with `{"id": N}` only (same status)',
  schema: { type: 'string' },
};

const detailResponse = (description: string): Json => ({ description, content: json(schemaRef('ErrorDetail')) });

/** Error responses every API operation may give. */
function commonErrors(): Json {
  return {
    401: detailResponse('missing or invalid credentials (when authentication is configured)'),
    403: detailResponse('valid credentials without the needed scope'),
    500: detailResponse('a bug; the server keeps serving'),
    503: {
      description: 'recovering, shutting down, overloaded, or the shard holding the data is restarting',
      headers: { 'Retry-After': { schema: { type: 'integer' } } },
      content: json(schemaRef('ErrorDetail')),
    },
  };
}

function writeErrors(config: Config): Json {
  return {
    400: { description: 'invalid body or field values; nothing was changed', content: json({ anyOf: [schemaRef('FieldErrors'), schemaRef('ErrorDetail')] }) },
    413: detailResponse(`body over ${config.maxBodyBytes} bytes`),
    415: detailResponse('body not application/json'),
  };
}

function operation(id: string, summary: string, rest: Json): Json {
  return { operationId: id, summary, ...rest };
}

function optionsOp(id: string, name: string): Json {
  return operation(id, `Describe ${name}`, { responses: { 200: { description: 'OK', content: json(schemaRef('Options')) } } });
}

function resourcePaths(type: ResourceType, config: Config): Record<string, Json> {
  const name = cap(type);
  const plural = TYPE_TO_PATH[type];
  const display = DISPLAY_NAME[type];
  const tags = [plural];
  const idParam: Json = { name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } };
  const notFound = { 404: detailResponse('no such id') };
  const write = (status: number, description: string): Json => ({
    [status]: { description, content: json({ anyOf: [schemaRef(responseName(type, 'write')), schemaRef('Minimal')] }) },
  });
  const list = {
    tags, parameters: listParams(type, config),
    responses: { 200: { description: `a page of ${plural}`, content: json(schemaRef(responseName(type, 'page'))) },
      400: { description: 'a bad list parameter', content: json(schemaRef('FieldErrors')) }, ...commonErrors() },
  };
  const detail = {
    tags, responses: { 200: { description: display, content: json(schemaRef(responseName(type, 'detail'))) }, ...notFound, ...commonErrors() },
  };
  const body = (mode: WriteMode): Json => ({ required: true, content: json(schemaRef(`${name}${mode === 'create' ? 'Create' : mode === 'put' ? 'Put' : 'Patch'}`)) });
  return {
    [`/api/v1/${plural}`]: {
      get: operation(`list${name}s`, `List ${plural}`, list),
      head: operation(`head${name}s`, `List ${plural} (headers only)`, { ...list, responses: { 200: { description: 'as GET, without a body' } } }),
      post: operation(`create${name}`, `Create a ${type}`, {
        tags, parameters: [PREFER], requestBody: body('create'),
        responses: { ...write(201, 'created (get-or-create resources also answer 201 with the existing record)'), ...writeErrors(config), ...commonErrors() },
      }),
      options: optionsOp(`describe${name}s`, `${display} List`),
    },
    [`/api/v1/${plural}/{id}`]: {
      parameters: [idParam],
      get: operation(`get${name}`, `Get a ${type}`, detail),
      head: operation(`head${name}`, `Get a ${type} (headers only)`, { ...detail, responses: { 200: { description: 'as GET, without a body' }, ...notFound } }),
      put: operation(`replace${name}`, `Replace a ${type} (omitted defaults are reset)`, {
        tags, parameters: [PREFER], requestBody: body('put'),
        responses: { ...write(200, 'updated'), ...notFound, ...writeErrors(config), ...commonErrors() },
      }),
      patch: operation(`update${name}`, `Update some fields of a ${type}`, {
        tags, parameters: [PREFER], requestBody: body('patch'),
        responses: { ...write(200, 'updated'), ...notFound, ...writeErrors(config), ...commonErrors() },
      }),
      delete: operation(`delete${name}`, `Delete a ${type} and what it cascades to (docs/api.md#writes)`, {
        tags, responses: { 204: { description: 'deleted' }, ...notFound, ...commonErrors() },
      }),
      options: optionsOp(`describe${name}`, `${display} Instance`),
    },
  };
}

/** POST /api/v1/ingest (docs/api.md#batch-ingest): the batch and its answer. */
function ingestPaths(config: Config): Record<string, Json> {
  const key = { type: 'string', minLength: 1, maxLength: LIMITS.uuidLength };
  const event = (kind: string, required: string[], description: string): Json => ({
    type: 'object', description, required: ['kind', ...required],
    properties: { kind: { const: kind } }, additionalProperties: true,
  });
  const batch: Json = {
    type: 'object', required: ['playbook', 'seq', 'events'],
    properties: {
      playbook: {
        description: 'the stream: `uuid` (with the create fields of POST /playbooks on seq 1), or the `id` of its playbook',
        anyOf: [{ type: 'object', required: ['uuid'], properties: { uuid: key } }, { type: 'object', required: ['id'], properties: { id: { type: 'integer', minimum: 1 } } }],
      },
      seq: { type: 'integer', minimum: 1, description: '1 for the first batch of a stream, then +1 per batch; a repeated seq is a duplicate (the last applied one with another body: 409)' },
      events: {
        type: 'array', maxItems: LIMITS.ingestEvents,
        items: {
          oneOf: [
            event('playbook', [], 'PATCH of the stream\'s playbook (labels by name)'),
            event('play', ['uuid'], 'upsert by uuid (any string of at most 64 characters; a UUID is normalized); fields of POST /plays'),
            event('task', ['uuid'], 'upsert by uuid (one task start); `play` is a play uuid, `file` a file path already sent'),
            event('host', ['name'], 'upsert by name; facts and counters'),
            event('result', ['task', 'host'], 'always creates; `task` is a task uuid, `host` and `delegated_to` host names (get-or-create)'),
            event('file', ['path'], 'upsert by path; created only with its content'),
            event('record', ['key'], 'upsert by key'),
          ],
        },
      },
    },
  };
  const answer: Json = {
    type: 'object', required: ['playbook', 'seq', 'applied', 'duplicate'], additionalProperties: false,
    description: 'a duplicate (a seq already applied) carries no `rejected`',
    properties: {
      playbook: { type: 'integer' }, seq: { type: 'integer' }, applied: { type: 'integer', minimum: 0 },
      rejected: {
        type: 'array', maxItems: LIMITS.ingestRejectedListed, description: 'the first rejected events, with their field errors',
        items: { type: 'object', required: ['index', 'errors'], properties: { index: { type: 'integer' }, errors: schemaRef('FieldErrors') } },
      },
      duplicate: { type: 'boolean' },
    },
  };
  return {
    '/api/v1/ingest': {
      post: operation('ingest', 'Record a batch of one playbook\'s events (docs/api.md#batch-ingest)', {
        tags: ['ingest'],
        parameters: [{ name: 'Content-Encoding', in: 'header', required: false, schema: { enum: ['identity', 'gzip'] } }],
        requestBody: { required: true, content: json(batch) },
        responses: {
          200: { description: 'applied (or a duplicate): per-event outcomes; durable', content: json(answer) },
          409: detailResponse('seq is not the next one of the stream ("Expected seq N."), or is the last applied one with another body ("Batch N was already applied with other content.")'),
          ...writeErrors(config),
          413: detailResponse(`body over ${config.maxBodyBytes} bytes after gunzip, or more than ${LIMITS.ingestEvents} events`),
          415: detailResponse('body not application/json, or an encoding other than gzip'),
          ...commonErrors(),
        },
      }),
      options: optionsOp('describeIngest', 'Ingest'),
    },
  };
}

/** The whole document (a plain JSON object). */
export function buildOpenApi(config: Config, version: string): Json {
  const schemas: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(responseSchemas(config.araCompat === 'true'))) schemas[key] = portable(schema);
  for (const type of RESOURCE_TYPES) {
    schemas[`${cap(type)}Create`] = bodySchema(type, 'create');
    schemas[`${cap(type)}Put`] = bodySchema(type, 'put');
    schemas[`${cap(type)}Patch`] = bodySchema(type, 'patch');
  }
  const paths: Record<string, Json> = {
    '/api/': {
      get: operation('apiIndex', 'What this server is', { responses: { 200: { description: 'OK', content: json(schemaRef('ApiIndex')) } } }),
      options: optionsOp('describeApiIndex', 'Api Index'),
    },
    '/api/v1/': {
      get: operation('apiRoot', 'The list URL of every resource', { responses: { 200: { description: 'OK', content: json(schemaRef('ApiRoot')) } } }),
      options: optionsOp('describeApiRoot', 'Api Root'),
    },
  };
  for (const type of RESOURCE_TYPES) Object.assign(paths, resourcePaths(type, config));
  Object.assign(paths, ingestPaths(config));
  Object.assign(paths, {
    '/api/v1/playbooks/{id}/junit.xml': {
      get: operation('playbookJunit', 'The run as JUnit XML for CI (docs/api.md#junit-xml): a testsuite per play, a testcase per result', {
        tags: ['playbooks'],
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } }],
        responses: {
          200: { description: 'JUnit XML', content: { 'application/xml': { schema: { type: 'string' } } } },
          404: detailResponse('no such playbook'),
          ...commonErrors(),
        },
      }),
      options: optionsOp('describePlaybookJunit', 'Playbook JUnit XML'),
    },
    '/api/v1/playbooks/{id}/totals': {
      get: operation('playbookTotals', 'The run\'s results by shown status, kept as results arrive (docs/api.md#run-totals)', {
        tags: ['playbooks'],
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } }],
        responses: {
          200: {
            description: 'OK',
            content: json({
              type: 'object',
              required: ['ok', 'changed', 'failed', 'skipped', 'unreachable', 'ignored', 'changed_anything'],
              properties: {
                ok: { type: 'integer' }, changed: { type: 'integer' }, failed: { type: 'integer' }, skipped: { type: 'integer' },
                unreachable: { type: 'integer' }, ignored: { type: 'integer' }, changed_anything: { type: 'boolean' },
              },
            }),
          },
          404: detailResponse('no such playbook'),
          ...commonErrors(),
        },
      }),
      options: optionsOp('describePlaybookTotals', 'Playbook Totals'),
    },
    '/api/v1/search': {
      get: operation('search', 'Full-text search over every type (docs/search.md): words, "phrases", prefix*, -word, field terms host: task: play: playbook: path: status: label: action: after: before:', {
        tags: ['search'],
        parameters: [
          { name: 'q', in: 'query', required: true, schema: { type: 'string', maxLength: 1000 }, description: 'the query (docs/search.md#the-query-language)' },
          { name: 'type', in: 'query', schema: { type: 'string', enum: ['playbook', 'play', 'task', 'host', 'result', 'file', 'record'] } },
          { name: 'playbook', in: 'query', schema: { type: 'integer', minimum: 1 } },
          { name: 'order', in: 'query', schema: { type: 'string', enum: ['-created', 'relevance'] }, description: 'newest first (default) or by relevance' },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
          { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'from a page\'s next link' },
        ],
        responses: {
          200: {
            description: 'OK: a page of hits, newest first; count is exact up to 10,000, then count_is_estimate is true',
            content: json({
              type: 'object', required: ['count', 'next', 'previous', 'results'],
              properties: {
                count: { type: 'integer' }, count_is_estimate: { type: 'boolean' },
                next: { type: ['string', 'null'] }, previous: { type: 'null' },
                results: {
                  type: 'array',
                  items: {
                    type: 'object', required: ['type', 'id', 'playbook', 'row', 'matches', 'url'],
                    properties: {
                      type: { type: 'string' }, id: { type: 'integer' }, playbook: { type: 'integer' },
                      row: { type: 'object', description: 'the record\'s list row' }, url: { type: 'string' },
                      matches: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, snippet: { type: 'string', description: 'the match marked «like this»' } } } },
                    },
                  },
                },
              },
            }),
          },
          400: { description: 'a query or parameter that cannot be used: {"q": ["what is wrong, where"]}', content: json({ type: 'object' }) },
          503: detailResponse('search is not available on this server'),
          ...commonErrors(),
        },
      }),
      options: optionsOp('describeSearch', 'Search'),
    },
    '/api/v1/webhooks': {
      get: operation('webhooks', 'The webhook endpoints of LOGBOOK_WEBHOOKS_FILE, with what each has waiting and its last delivery (docs/webhooks.md#the-api); needs the write scope', {
        tags: ['webhooks'],
        responses: { 200: { description: 'OK: {count, results}; a URL is shown without its path (a Slack URL\'s path is its secret)', content: { 'application/json': { schema: { type: 'object' } } } }, ...commonErrors() },
      }),
      options: optionsOp('describeWebhooks', 'Webhook List'),
    },
    '/api/v1/webhooks/{name}/deliveries': {
      get: operation('webhookDeliveries', 'One endpoint\'s delivery attempts, newest first (docs/webhooks.md#the-api); needs the write scope', {
        tags: ['webhooks'],
        parameters: [
          { name: 'name', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$' } },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
        ],
        responses: {
          200: { description: 'OK: {count, pending, results: [{delivery, event, playbook, attempt, at, outcome, status, error, ms}]}', content: { 'application/json': { schema: { type: 'object' } } } },
          404: detailResponse('no such endpoint'),
          ...commonErrors(),
        },
      }),
      options: optionsOp('describeWebhookDeliveries', 'Webhook Delivery List'),
    },
    '/api/v1/stream': {
      get: operation('stream', 'Live stream of changes (docs/api.md#live-stream): Server-Sent Events, or a WebSocket upgrade on the same path', {
        parameters: [
          { name: 'playbook', in: 'query', schema: { type: 'integer', minimum: 1 }, description: 'only this playbook' },
          { name: 'type', in: 'query', schema: { type: 'array', items: { type: 'string' } }, style: 'form', explode: true, description: 'only these resource types (repeatable)' },
          { name: 'since', in: 'query', schema: { type: 'string' }, description: 'resume after this cursor (SSE: or Last-Event-ID)' },
          { name: 'token', in: 'query', schema: { type: 'string' }, description: 'a bearer token <name>.<secret>, for clients that cannot send headers' },
        ],
        responses: {
          200: {
            description: 'text/event-stream: a hello event, then one event per change ({cursor, op, type, id, playbook, row}); the cursor is the event id',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          400: { description: 'malformed cursor or filter', content: { 'application/json': { schema: { type: 'object' } } } },
          406: { description: 'neither a WebSocket upgrade nor Accept: text/event-stream', content: { 'application/json': { schema: { type: 'object' } } } },
        },
      }),
      options: optionsOp('describeStream', 'Stream'),
    },
    '/api/v1/openapi.json': {
      get: operation('openapi', 'This document', { tags: ['operations'], responses: { 200: { description: 'OpenAPI 3.1', content: { 'application/json': {} } } } }),
    },
    '/healthz': {
      get: operation('health', 'Liveness and readiness', {
        tags: ['operations'],
        responses: {
          200: { description: 'recovered, every shard up', content: json(schemaRef('Health')) },
          503: { description: 'recovering, stopping, or a shard is down (shards_down says which)', content: json(schemaRef('Health')) },
        },
      }),
    },
    '/metrics': {
      get: operation('metrics', 'Prometheus metrics', {
        tags: ['operations'],
        responses: { 200: { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } } },
      }),
    },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'logbook',
      version,
      description: 'Records automation runs (ARA-compatible HTTP JSON API). A trailing slash on any path means the same path.'
        + (config.araCompat === 'true' ? " ARA's dialect is on for every request: representations carry the extra fields ARA's clients read."
          : config.araCompat === 'auto' ? " Requests from ARA's http client (User-Agent ara-http-client_*) are answered in ARA's dialect (docs/ara-dialect.md); these are the shapes everyone else gets." : ''),
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    tags: [...RESOURCE_TYPES.map((t) => ({ name: TYPE_TO_PATH[t] })), { name: 'ingest' }, { name: 'operations' }],
    paths,
    components: {
      schemas,
      securitySchemes: { basic: { type: 'http', scheme: 'basic' }, bearer: { type: 'http', scheme: 'bearer' } },
    },
    // authentication is optional (off by default): no credentials, Basic, or a bearer token
    security: [{}, { basic: [] }, { bearer: [] }],
  };
}
