// Turns TypeBox schemas into Kubernetes structural OpenAPI v3 schemas (apiextensions.k8s.io/v1
// JSONSchemaProps). TypeBox speaks JSON Schema 2019; the apiserver accepts a stricter dialect, so:
// unions of literals become `enum`, int-or-string unions keep exactly `anyOf: [integer, string]` with
// their value validations hoisted beside it, Records become `additionalProperties`, numeric
// exclusive bounds become OpenAPI's boolean form, and anything without a type is refused unless it
// preserves unknown fields. Unknown keywords ($id, additionalProperties: false...) are dropped.
import type { TSchema } from '@sinclair/typebox';
import { celChecksOf, type CelRule, type ValidationRule } from './schema/common.ts';

export type OpenApiType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** The subset of apiextensions.k8s.io/v1 JSONSchemaProps SITS emits. */
export interface JSONSchemaProps {
  description?: string;
  type?: OpenApiType;
  format?: string;
  enum?: JsonValue[];
  default?: JsonValue;
  minimum?: number;
  exclusiveMinimum?: boolean;
  maximum?: number;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  nullable?: boolean;
  anyOf?: JSONSchemaProps[];
  properties?: Record<string, JSONSchemaProps>;
  required?: string[];
  additionalProperties?: JSONSchemaProps;
  items?: JSONSchemaProps;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-validations'?: ValidationRule[];
}

/** A structural schema plus the TypeScript mirrors of its CEL rules, keyed by schema node. */
export interface StructuralSchema {
  root: JSONSchemaProps;
  rules: WeakMap<JSONSchemaProps, readonly CelRule[]>;
}

const OPENAPI_TYPES: ReadonlySet<string> = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
// TypeBox's key pattern for Type.Record(Type.String(), ...).
const ANY_KEY_PATTERN = '^(.*)$';

type Src = Record<string, unknown>;

function isObject(x: unknown): x is Src {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function num(src: Src, key: string): number | undefined {
  const v = src[key];
  return typeof v === 'number' ? v : undefined;
}

function fail(path: string, what: string): never {
  throw new Error(`structural schema at ${path || '<root>'}: ${what}`);
}

function constType(values: unknown[], path: string): OpenApiType {
  const kinds = new Set(values.map((v) => (typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v)));
  if (kinds.size !== 1) fail(path, 'enum values must share one type');
  const [kind] = [...kinds];
  if (kind === 'string' || kind === 'integer' || kind === 'number' || kind === 'boolean') return kind;
  return fail(path, `enum values of type ${String(kind)} are not supported`);
}

function copyBounds(src: Src, out: JSONSchemaProps): void {
  const minimum = num(src, 'minimum');
  const maximum = num(src, 'maximum');
  const exMin = num(src, 'exclusiveMinimum');
  const exMax = num(src, 'exclusiveMaximum');
  if (exMin !== undefined) {
    out.minimum = exMin;
    out.exclusiveMinimum = true;
  } else if (minimum !== undefined) out.minimum = minimum;
  if (exMax !== undefined) {
    out.maximum = exMax;
    out.exclusiveMaximum = true;
  } else if (maximum !== undefined) out.maximum = maximum;
  for (const key of ['multipleOf', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'] as const) {
    const v = num(src, key);
    if (v !== undefined) out[key] = v;
  }
  if (typeof src.pattern === 'string') out.pattern = src.pattern;
}

function copyExtensions(src: Src, out: JSONSchemaProps, path: string): void {
  const listType = src['x-kubernetes-list-type'];
  if (listType === 'atomic' || listType === 'set' || listType === 'map') out['x-kubernetes-list-type'] = listType;
  else if (listType !== undefined) fail(path, `invalid x-kubernetes-list-type ${String(listType)}`);
  const keys = src['x-kubernetes-list-map-keys'];
  if (Array.isArray(keys)) out['x-kubernetes-list-map-keys'] = keys.map(String);
  const mapType = src['x-kubernetes-map-type'];
  if (mapType === 'atomic' || mapType === 'granular') out['x-kubernetes-map-type'] = mapType;
  if (src['x-kubernetes-preserve-unknown-fields'] === true) out['x-kubernetes-preserve-unknown-fields'] = true;
  if (src['x-kubernetes-embedded-resource'] === true) out['x-kubernetes-embedded-resource'] = true;
  const validations = src['x-kubernetes-validations'];
  if (Array.isArray(validations) && validations.length > 0) {
    out['x-kubernetes-validations'] = validations.map((v: ValidationRule) => {
      const rule: ValidationRule = { rule: v.rule, message: v.message };
      if (v.fieldPath !== undefined) rule.fieldPath = v.fieldPath;
      if (v.reason !== undefined) rule.reason = v.reason;
      return rule;
    });
  }
}

function hasDefault(schema: unknown): boolean {
  return isObject(schema) && schema.default !== undefined;
}

function intOrString(src: Src, members: unknown[], path: string): JSONSchemaProps {
  const int = members.find((m) => isObject(m) && m.type === 'integer');
  const str = members.find((m) => isObject(m) && m.type === 'string');
  if (members.length !== 2 || !isObject(int) || !isObject(str)) fail(path, 'x-kubernetes-int-or-string needs anyOf [integer, string]');
  const out: JSONSchemaProps = {};
  if (typeof src.description === 'string') out.description = src.description;
  // Exactly this anyOf is what the apiserver recognises as int-or-string; validations go beside it.
  out.anyOf = [{ type: 'integer' }, { type: 'string' }];
  if (src.default !== undefined) out.default = src.default as JsonValue;
  copyBounds(int, out);
  copyBounds(str, out);
  out['x-kubernetes-int-or-string'] = true;
  return out;
}

function convert(schema: unknown, path: string, rules: WeakMap<JSONSchemaProps, readonly CelRule[]>): JSONSchemaProps {
  if (!isObject(schema)) return fail(path, 'schema must be an object');
  const src = schema;
  if (src['x-kubernetes-int-or-string'] === true) {
    if (!Array.isArray(src.anyOf)) fail(path, 'x-kubernetes-int-or-string needs anyOf [integer, string]');
    const out = intOrString(src, src.anyOf, path);
    attachRules(src, out, rules);
    return out;
  }
  if (src.uniqueItems === true) fail(path, 'uniqueItems: true is forbidden (use x-kubernetes-list-type: set)');
  for (const forbidden of ['$ref', 'allOf', 'oneOf', 'not', 'dependencies', 'additionalItems', 'definitions', '$defs']) {
    if (src[forbidden] !== undefined) fail(path, `${forbidden} is not supported in SITS schemas`);
  }

  const out: JSONSchemaProps = {};
  if (typeof src.description === 'string') out.description = src.description;
  if (Array.isArray(src.anyOf)) {
    const consts = src.anyOf.map((m) => (isObject(m) ? m.const : undefined));
    if (consts.length === 0 || consts.some((c) => c === undefined)) fail(path, 'anyOf is only supported for enums and int-or-string');
    out.type = constType(consts, path);
    out.enum = consts as JsonValue[];
  } else if (src.const !== undefined) {
    out.type = constType([src.const], path);
    out.enum = [src.const as JsonValue];
  } else if (typeof src.type === 'string' && OPENAPI_TYPES.has(src.type)) {
    out.type = src.type as OpenApiType;
  } else {
    fail(path, 'every field needs a type (or x-kubernetes-int-or-string / x-kubernetes-preserve-unknown-fields on an object)');
  }
  if (typeof src.format === 'string') out.format = src.format;
  if (src.default !== undefined) out.default = src.default as JsonValue;
  copyBounds(src, out);
  // The apiserver's CEL cost estimator assumes unbounded strings are ~3 MB; an enum is never longer
  // than its longest value, and saying so keeps rules that compare enums within budget.
  if (out.enum && out.type === 'string' && out.maxLength === undefined) out.maxLength = Math.max(...out.enum.map((v) => String(v).length));
  if (src.nullable === true) out.nullable = true;

  if (out.type === 'object') {
    const preserve = src['x-kubernetes-preserve-unknown-fields'] === true;
    const srcProps = src.properties;
    if (isObject(srcProps) && Object.keys(srcProps).length > 0) {
      const properties: Record<string, JSONSchemaProps> = {};
      for (const [key, prop] of Object.entries(srcProps)) properties[key] = convert(prop, `${path}.${key}`, rules);
      out.properties = properties;
      // A defaulted field is filled in before validation, so it is never required of the user.
      const required = (Array.isArray(src.required) ? src.required.map(String) : []).filter((k) => !hasDefault(srcProps[k]));
      if (required.length > 0) out.required = required;
    }
    if (isObject(src.patternProperties)) {
      const keys = Object.keys(src.patternProperties);
      if (keys.length !== 1 || keys[0] !== ANY_KEY_PATTERN) fail(path, 'patternProperties are not supported; use Type.Record(Type.String(), ...)');
      const value = src.patternProperties[ANY_KEY_PATTERN];
      const untyped = isObject(value) && value.type === undefined && value.anyOf === undefined && value.const === undefined;
      if (!(preserve && untyped)) out.additionalProperties = convert(value, `${path}[*]`, rules);
    } else if (isObject(src.additionalProperties)) {
      out.additionalProperties = convert(src.additionalProperties, `${path}[*]`, rules);
    }
    if (out.properties && out.additionalProperties) fail(path, 'properties and additionalProperties are mutually exclusive');
  }
  if (out.type === 'array') {
    if (!isObject(src.items)) fail(path, 'arrays need a single items schema');
    out.items = convert(src.items, `${path}[]`, rules);
  }
  copyExtensions(src, out, path);
  attachRules(src, out, rules);
  return out;
}

function attachRules(src: Src, out: JSONSchemaProps, rules: WeakMap<JSONSchemaProps, readonly CelRule[]>): void {
  const checks = celChecksOf(src);
  if (checks.length > 0) rules.set(out, checks);
}

/** Converts one TypeBox schema (a spec, a status, a field) into a structural schema. */
export function toStructural(schema: TSchema, path = ''): StructuralSchema {
  const rules = new WeakMap<JSONSchemaProps, readonly CelRule[]>();
  return { root: convert(schema, path, rules), rules };
}

/**
 * The openAPIV3Schema of a custom resource built from its TypeBox resource schema (apiVersion, kind,
 * metadata, spec, status). Root metadata may only be `type: object` (the apiserver owns ObjectMeta).
 */
export function resourceStructuralSchema(resource: TSchema): StructuralSchema {
  const src = resource as unknown as Src;
  const props = isObject(src.properties) ? src.properties : fail('', 'a resource schema must be an object');
  const rules = new WeakMap<JSONSchemaProps, readonly CelRule[]>();
  const properties: Record<string, JSONSchemaProps> = {
    apiVersion: {
      description:
        'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.',
      type: 'string',
    },
    kind: {
      description: 'Kind is a string value representing the REST resource this object represents. In CamelCase.',
      type: 'string',
    },
    metadata: { type: 'object' },
    spec: convert(props.spec, 'spec', rules),
  };
  if (props.status !== undefined) properties.status = convert(props.status, 'status', rules);
  const root: JSONSchemaProps = {};
  if (typeof src.description === 'string') root.description = src.description;
  root.type = 'object';
  root.properties = properties;
  root.required = ['spec'];
  copyExtensions(src, root, '');
  attachRules(src, root, rules);
  return { root, rules };
}
