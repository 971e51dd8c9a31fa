// TypeBox schemas of every write body, derived from the field catalogue and
// compiled once at start-up (STYLE.md example 1). A body that passes its
// compiled check is in canonical form (the shape the ARA callback sends), so the
// normalizer can take the fast path with no coercion and no error bookkeeping.
// The same schemas document the API (OpenAPI comes from them too).
import Type, { type TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Format from 'typebox/format';
import { LIMITS } from '../limits.js';
import { RESOURCE_TYPES, WRITE_FIELDS, type FieldSpec, type ResourceType } from './resources.js';
import { parseTimestamp } from './time.js';
import { normalizeUuid } from './uuid.js';

export type WriteMode = 'create' | 'put' | 'patch';

Format.Set('logbook-timestamp', (value: string) => parseTimestamp(value) !== undefined);
Format.Set('logbook-uuid', (value: string) => normalizeUuid(value) !== undefined);

const MAX_ID = Number.MAX_SAFE_INTEGER;

function fieldSchema(spec: FieldSpec): TSchema {
  let schema: TSchema;
  switch (spec.kind) {
    case 'string':
      schema = Type.String({ minLength: spec.blank ? 0 : 1, ...(spec.maxLength ? { maxLength: spec.maxLength } : {}) });
      break;
    case 'int': schema = Type.Integer({ minimum: -MAX_ID, maximum: MAX_ID }); break;
    case 'bool': schema = Type.Boolean(); break;
    case 'timestamp': schema = Type.String({ format: 'logbook-timestamp' }); break;
    case 'choice': schema = Type.Union(spec.choices!.map((c) => Type.Literal(c))); break;
    case 'fk': schema = Type.Integer({ minimum: 1, maximum: MAX_ID }); break;
    case 'json': schema = Type.Union([Type.Object({}), Type.Array(Type.Unknown()), Type.String(), Type.Number(), Type.Boolean()]); break;
    case 'uuid': schema = Type.String({ format: 'logbook-uuid' }); break;
    case 'labels': schema = Type.Array(Type.String({ maxLength: LIMITS.nameLength })); break;
    case 'fklist': schema = Type.Array(Type.Integer({ minimum: 1, maximum: MAX_ID })); break;
    case 'text': schema = Type.String(); break;
  }
  return spec.nullable ? Type.Union([schema, Type.Null()]) : schema;
}

/** The canonical body of a write: required fields required except on PATCH. */
export function writeSchema(type: ResourceType, mode: WriteMode): TSchema {
  const properties: Record<string, TSchema> = {};
  for (const spec of WRITE_FIELDS[type]) {
    const schema = fieldSchema(spec);
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
        out[type][mode] = Compile(writeSchema(type, mode));
      } catch (err) {
        throw new Error(`cannot compile the ${mode} schema of ${type}: ${(err as Error).message}`);
      }
    }
  }
  return out;
}
