// The one error catalogue (fastify lib/errors.js style): every message a client
// can receive, worded like ARA / Django REST framework where ARA has a wording
// (docs/api.md#errors) and as logbook fixes otherwise. Functions
// return the JSON body text.
import type { FieldSpec } from './resources.js';
import { SUPPORTED_RANGE } from './time.js';

const detail = (msg: string): string => JSON.stringify({ detail: msg });
/** built once: every refusal under overload sends it (tens of thousands a second) */
const OVERLOADED = detail('The server is overloaded; retry shortly.');

export const Messages = {
  required: 'This field is required.',
  notNull: 'This field may not be null.',
  notBlank: 'This field may not be blank.',
  maxLength: (n: number) => `Ensure this field has no more than ${n} characters.`,
  /** DRF ListField(max_length=n) */
  maxElements: (n: number) => `Ensure this field has no more than ${n} elements.`,
  /** a JSON field's stored (minified) text past its bound (docs/api.md#write-bounds) */
  maxBytes: (n: number) => `Ensure this field has no more than ${n} bytes of JSON.`,
  invalidChoice: (v: string) => `"${v}" is not a valid choice.`,
  invalidInt: 'A valid integer is required.',
  invalidBool: 'Must be a valid boolean.',
  invalidString: 'Not a valid string.',
  invalidUuid: 'Must be a valid UUID.',
  invalidDatetime: 'Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z].',
  /** a well-formed timestamp a write cannot store exactly (src/api/time.ts isSupported) */
  datetimeOutOfRange: (v: string) => `Datetime out of range: ${v} (supported: ${SUPPORTED_RANGE}).`,
  pkType: (t: string) => `Incorrect type. Expected pk value, received ${t}.`,
  notAList: (t: string) => `Expected a list of items but got type "${t}".`,
  // list query parameters (django-filter wording)
  enterNumber: 'Enter a number.',
  /** a list parameter nobody reads, outside ARA's dialect (docs/api.md#lists) */
  unknownParameter: 'Unknown query parameter.',
  enterDatetime: 'Enter a valid date/time.',
  enterUuid: 'Enter a valid UUID.',
  selectChoice: (v: string) => `Select a valid choice. ${v} is not one of the available choices.`,
  minValue: (n: number) => `Ensure this value is greater than or equal to ${n}.`,
  /** offset past LOGBOOK_MAX_LIST_OFFSET (Django's MaxValueValidator wording, then the way out) */
  invalidCursor: 'Invalid cursor.',
  offsetTooLarge: (n: number) =>
    `Ensure this value is less than or equal to ${n}. Deeper pages are reached by following the \`next\` links, which carry a cursor past this offset; or narrow the list with filters (e.g. playbook=, status=, started_after=) or reverse the order (e.g. order=-id).`,
  // text that could not be stored as sent (a lone UTF-16 surrogate from a \uD800 escape)
  unpairedSurrogate: 'Not a valid string: it contains an unpaired UTF-16 surrogate.',
} as const;

export const Errors = {
  notFound: () => detail('Not found.'),
  methodNotAllowed: (method: string) => detail(`Method "${method}" not allowed.`),
  parse: (what: string) => detail(`JSON parse error - ${what}`),
  notAnObject: (got: string) => JSON.stringify({ non_field_errors: [`Invalid data. Expected a dictionary, but got ${got}.`] }),
  noData: () => JSON.stringify({ non_field_errors: ['No data provided'] }),
  unsupportedMediaType: (type: string) => detail(`Unsupported media type "${type}" in request.`),
  tooLarge: (limit: number) => detail(`Request body exceeds ${limit} bytes.`),
  notAcceptable: () => detail('Could not satisfy the request Accept header.'),
  noCredentials: () => detail('Authentication credentials were not provided.'),
  badCredentials: () => detail('Invalid username/password.'),
  forbidden: () => detail('You do not have permission to perform this action.'),
  forbiddenOrigin: () => detail('This origin may not open the live stream: it is neither the server\'s own nor one LOGBOOK_CORS_ORIGINS allows.'),
  // malformed Authorization headers (DRF BasicAuthentication / TokenAuthentication wording)
  basicNoCredentials: () => detail('Invalid basic header. No credentials provided.'),
  basicSpaces: () => detail('Invalid basic header. Credentials string should not contain spaces.'),
  tokenNoCredentials: () => detail('Invalid token header. No credentials provided.'),
  tokenSpaces: () => detail('Invalid token header. Token string should not contain spaces.'),
  duplicateHeader: (name: string) => detail(`Request has more than one "${name}" header.`),
  tooDeep: (levels: number) => detail(`JSON parse error - nesting deeper than ${levels} levels`),
  overloaded: () => OVERLOADED,
  unavailable: (why: string) => detail(why),
  internal: () => detail('Internal server error.'),

  invalidPk: (id: number | string) => `Invalid pk "${id}" - object does not exist.`,
  notInPlaybook: (resource: string, id: number, playbook: number) => `${resource} ${id} does not belong to playbook ${playbook}.`,
  playbookImmutable: (resource: string) => `The playbook of a ${resource} cannot be changed.`,
  endedBeforeStarted: () => 'Ended must not be earlier than started.',
  fileContentConflict: (path: string, playbook: number) =>
    `A file with path "${path}" already exists in playbook ${playbook} with different content.`,
  notUnique: (fields: string[]) => JSON.stringify({ non_field_errors: [`The fields ${fields.join(', ')} must make a unique set.`] }),
  labelExists: () => JSON.stringify({ name: ['label with this name already exists.'] }),

  // ---- batch ingest (docs/api.md#batch-ingest) ----
  expectedSeq: (seq: number) => detail(`Expected seq ${seq}.`),
  seqReused: (seq: number) => detail(`Batch ${seq} was already applied with other content.`),
  tooManyEvents: (limit: number) => detail(`A batch carries at most ${limit} events.`),
  tooManyBatchLabels: (limit: number) => detail(`A batch names at most ${limit} distinct labels; send the rest in later batches.`),
  unsupportedEncoding: (enc: string) => detail(`Unsupported content encoding "${enc}": send identity or gzip.`),
  badGzip: () => detail('The body is not valid gzip.'),
  /** a parent named by natural key that this playbook does not have (never sent, or its event was rejected) */
  unknownParent: (kind: string, key: string) => `No ${kind} "${key}" in this playbook: it was never sent, or its event was rejected.`,
  unknownKind: (kind: string) => `Unknown event kind "${kind}".`,

  /** A 400 body with field errors ordered as the serializer declares its fields. */
  fields(errors: Record<string, string[]>, order: readonly FieldSpec[]): string {
    const out: Record<string, string[]> = {};
    for (const spec of order) {
      if (errors[spec.name]) out[spec.name] = errors[spec.name]!;
      if (spec.alias && errors[spec.alias]) out[spec.alias] = errors[spec.alias]!;
    }
    for (const key in errors) if (!(key in out)) out[key] = errors[key]!;
    return JSON.stringify(out);
  },
} as const;
