// Offline validation of SITS objects, in the order the apiserver does it: prune nulls and apply
// schema defaults, check the OpenAPI schema (TypeBox Value.Errors), check list-type map/set
// uniqueness, then run the TypeScript mirrors of the CEL rules. Paths read like the apiserver's
// (`spec.replicas`, `spec.resources[nvidia.com/gpu]`, `spec.stages[2]`).
import { FormatRegistry } from '@sinclair/typebox';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import { structuralSchemaOf } from './crd.ts';
import { KINDS, isResourceKind, type ResourceKind } from './kinds.ts';
import type { CelReason } from './schema/common.ts';
import { API_GROUP_VERSION } from './wire.ts';
import type { BatchInferenceJob } from './schema/batch-inference-job.ts';
import type { DataPipeline } from './schema/data-pipeline.ts';
import type { InferenceService } from './schema/inference-service.ts';
import type { PodGroup } from './schema/pod-group.ts';
import type { Queue } from './schema/queue.ts';
import type { TrainingJob } from './schema/training-job.ts';
import type { JSONSchemaProps, StructuralSchema } from './structural.ts';

export interface ResourceTypes {
  TrainingJob: TrainingJob;
  InferenceService: InferenceService;
  DataPipeline: DataPipeline;
  BatchInferenceJob: BatchInferenceJob;
  Queue: Queue;
  PodGroup: PodGroup;
}
export type SitsResource = ResourceTypes[ResourceKind];

/** Error codes named after the apiserver's field.ErrorType. */
export type FieldErrorCode = 'Required' | 'Invalid' | 'NotSupported' | 'TypeInvalid' | 'Forbidden' | 'Duplicate' | 'TooMany' | 'TooLong' | 'UnknownField';

export interface FieldError {
  /** Field path as the apiserver prints it, e.g. `spec.replicas`; '' for the object itself. */
  path: string;
  message: string;
  code: FieldErrorCode;
}

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

// RFC 3339 as the apiserver's date-time format accepts it.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (v) => DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)));

type Json = Record<string, unknown>;

function isPlainObject(x: unknown): x is Json {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function show(v: unknown): string {
  return v === undefined ? 'null' : JSON.stringify(v);
}

// ---------------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------------

function child(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

function pointerTokens(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .split('/')
    .slice(1)
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Converts a JSON pointer into an apiserver field path, using the schema to tell keys from fields. */
function resolvePointer(root: JSONSchemaProps, pointer: string): { path: string; node: JSONSchemaProps | undefined } {
  let node: JSONSchemaProps | undefined = root;
  let path = '';
  for (const tok of pointerTokens(pointer)) {
    const prop: JSONSchemaProps | undefined = node?.properties?.[tok];
    if (prop) {
      path = child(path, tok);
      node = prop;
    } else if (node?.items && /^\d+$/.test(tok)) {
      path += `[${tok}]`;
      node = node.items;
    } else if (node?.additionalProperties) {
      path += `[${tok}]`;
      node = node.additionalProperties;
    } else {
      path = child(path, tok);
      node = undefined;
    }
  }
  return { path, node };
}

/** Appends a CEL fieldPath (`.a.b`, `['key']`) to a field path. */
function joinFieldPath(path: string, fieldPath: string | undefined): string {
  if (!fieldPath) return path;
  let out = path;
  const re = /\.([^.[\]]+)|\['((?:[^'\\]|\\.)*)'\]/g;
  for (let m = re.exec(fieldPath); m !== null; m = re.exec(fieldPath)) {
    if (m[1] !== undefined) out = child(out, m[1]);
    else out += `[${(m[2] ?? '').replace(/\\(.)/g, '$1')}]`;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Defaulting (apiserver: PruneNonNullableNullsWithoutDefaults, then Default)
// ---------------------------------------------------------------------------------------------

function applyDefaults(node: JSONSchemaProps, value: unknown): void {
  if (Array.isArray(value)) {
    const items = node.items;
    if (!items) return;
    value.forEach((item, i) => {
      if (item === null && items.default !== undefined && !items.nullable) value[i] = structuredClone(items.default);
      applyDefaults(items, value[i]);
    });
    return;
  }
  if (!isPlainObject(value)) return;
  const props = node.properties ?? {};
  for (const [key, prop] of Object.entries(props)) {
    const present = Object.hasOwn(value, key);
    if (prop.default !== undefined && (!present || (value[key] === null && !prop.nullable))) value[key] = structuredClone(prop.default);
  }
  for (const key of Object.keys(value)) {
    const sub = props[key] ?? node.additionalProperties;
    if (!sub) continue;
    if (value[key] === null && !sub.nullable) {
      if (sub.default !== undefined) value[key] = structuredClone(sub.default);
      else delete value[key];
      continue;
    }
    applyDefaults(sub, value[key]);
  }
}

/** Returns a copy of `obj` with the schema defaults of `kind` applied, as the apiserver would store it. */
export function withDefaults(kind: ResourceKind, obj: unknown): unknown {
  const copy = structuredClone(obj);
  applyDefaults(structuralSchemaOf(kind).root, copy);
  return copy;
}

// ---------------------------------------------------------------------------------------------
// Schema errors from TypeBox
// ---------------------------------------------------------------------------------------------

function intOrStringProblem(node: JSONSchemaProps, value: unknown): { code: FieldErrorCode; message: string } {
  if (typeof value === 'number' && Number.isInteger(value)) {
    if (node.minimum !== undefined && value < node.minimum)
      return { code: 'Invalid', message: `Invalid value: ${value}: should be greater than or equal to ${node.minimum}` };
    if (node.maximum !== undefined && value > node.maximum)
      return { code: 'Invalid', message: `Invalid value: ${value}: should be less than or equal to ${node.maximum}` };
  }
  if (typeof value === 'string') {
    if (node.maxLength !== undefined && value.length > node.maxLength)
      return { code: 'TooLong', message: `Too long: may not be more than ${node.maxLength} bytes` };
    if (node.pattern !== undefined && !new RegExp(node.pattern).test(value)) {
      return {
        code: 'Invalid',
        message: `Invalid value: ${show(value)}: should be a non-negative quantity such as 1, 500m or 32Gi (pattern '${node.pattern}')`,
      };
    }
  }
  return { code: 'TypeInvalid', message: `Invalid value: ${show(value)}: must be an integer or a string` };
}

function schemaProblem(e: ValueError, node: JSONSchemaProps | undefined): { code: FieldErrorCode; message: string } {
  const s = e.schema as Json;
  const v = e.value;
  switch (e.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return { code: 'Required', message: 'Required value' };
    case ValueErrorType.Union:
      if (node?.enum)
        return { code: 'NotSupported', message: `Unsupported value: ${show(v)}: supported values: ${node.enum.map((x) => JSON.stringify(x)).join(', ')}` };
      if (node?.['x-kubernetes-int-or-string']) return intOrStringProblem(node, v);
      return { code: 'Invalid', message: `Invalid value: ${show(v)}: ${e.message}` };
    case ValueErrorType.Literal:
      return { code: 'NotSupported', message: `Unsupported value: ${show(v)}: supported values: ${JSON.stringify(s.const)}` };
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return { code: 'Invalid', message: `Invalid value: ${show(v)}: should be greater than or equal to ${String(s.minimum)}` };
    case ValueErrorType.IntegerExclusiveMinimum:
    case ValueErrorType.NumberExclusiveMinimum:
      return { code: 'Invalid', message: `Invalid value: ${show(v)}: should be greater than ${String(s.exclusiveMinimum)}` };
    case ValueErrorType.IntegerMaximum:
    case ValueErrorType.NumberMaximum:
      return { code: 'Invalid', message: `Invalid value: ${show(v)}: should be less than or equal to ${String(s.maximum)}` };
    case ValueErrorType.IntegerExclusiveMaximum:
    case ValueErrorType.NumberExclusiveMaximum:
      return { code: 'Invalid', message: `Invalid value: ${show(v)}: should be less than ${String(s.exclusiveMaximum)}` };
    case ValueErrorType.StringMaxLength:
      return { code: 'TooLong', message: `Too long: may not be more than ${String(s.maxLength)} bytes` };
    case ValueErrorType.StringMinLength:
      return { code: 'Invalid', message: `Invalid value: ${show(v)}: should be at least ${String(s.minLength)} chars long` };
    case ValueErrorType.StringPattern:
      return { code: 'Invalid', message: `Invalid value: ${show(v)}: should match '${String(s.pattern)}'` };
    case ValueErrorType.StringFormat:
      return { code: 'Invalid', message: `Invalid value: ${show(v)}: must be a valid ${String(s.format)}` };
    case ValueErrorType.ArrayMaxItems:
      return { code: 'TooMany', message: `Too many: ${Array.isArray(v) ? v.length : '?'}: must have at most ${String(s.maxItems)} items` };
    case ValueErrorType.ArrayMinItems:
      return { code: 'Invalid', message: `Invalid value: ${Array.isArray(v) ? v.length : '?'}: should have at least ${String(s.minItems)} items` };
    case ValueErrorType.ObjectMaxProperties:
      return { code: 'TooMany', message: `Too many: ${isPlainObject(v) ? Object.keys(v).length : '?'}: must have at most ${String(s.maxProperties)} items` };
    case ValueErrorType.Integer:
    case ValueErrorType.Number:
    case ValueErrorType.String:
    case ValueErrorType.Boolean:
    case ValueErrorType.Object:
    case ValueErrorType.Array: {
      const expected = typeof s.type === 'string' ? s.type : 'object';
      return { code: 'TypeInvalid', message: `Invalid value: ${show(v)}: must be of type ${expected}` };
    }
    default:
      return { code: 'Invalid', message: `Invalid value: ${show(v)}: ${e.message}` };
  }
}

function schemaErrors(kind: ResourceKind, value: unknown, root: JSONSchemaProps): FieldError[] {
  const errors: FieldError[] = [];
  const required = new Set<string>();
  for (const e of Value.Errors(KINDS[kind].schema, value)) {
    const { path, node } = resolvePointer(root, e.path);
    if (e.type === ValueErrorType.ObjectAdditionalProperties) {
      errors.push({ path, code: 'UnknownField', message: `unknown field "${path}"` });
      continue;
    }
    if (e.type === ValueErrorType.ObjectRequiredProperty) required.add(path);
    else if (required.has(path)) continue; // TypeBox also reports the missing value's type
    // TypeBox counts UTF-16 units, the apiserver characters (code points): an emoji is two units and one character.
    if (e.type === ValueErrorType.StringMaxLength && typeof e.value === 'string' && [...e.value].length <= Number((e.schema as Json).maxLength)) continue;
    // The CRD bounds enums by their longest value; the apiserver reports that before the enum.
    if (e.type === ValueErrorType.Union && node?.enum && node.maxLength !== undefined && typeof e.value === 'string' && e.value.length > node.maxLength) {
      errors.push({ path, code: 'TooLong', message: `Too long: may not be more than ${node.maxLength} bytes` });
    }
    errors.push({ path, ...schemaProblem(e, node) });
  }
  return errors;
}

// ---------------------------------------------------------------------------------------------
// x-kubernetes-list-type uniqueness and CEL mirrors
// ---------------------------------------------------------------------------------------------

function walk(node: JSONSchemaProps, value: unknown, path: string, visit: (node: JSONSchemaProps, value: unknown, path: string) => void): void {
  if (value === undefined || value === null) return;
  visit(node, value, path);
  if (Array.isArray(value)) {
    const items = node.items;
    if (items) value.forEach((item, i) => walk(items, item, `${path}[${i}]`, visit));
  } else if (isPlainObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      const prop = node.properties?.[key];
      if (prop) walk(prop, v, child(path, key), visit);
      else if (node.additionalProperties) walk(node.additionalProperties, v, `${path}[${key}]`, visit);
    }
  }
}

function listTypeErrors(node: JSONSchemaProps, value: unknown, path: string, errors: FieldError[]): void {
  const listType = node['x-kubernetes-list-type'];
  if (!Array.isArray(value) || (listType !== 'map' && listType !== 'set')) return;
  const keys = node['x-kubernetes-list-map-keys'] ?? [];
  const seen = new Set<string>();
  value.forEach((item, i) => {
    const identity = listType === 'set' ? item : Object.fromEntries(keys.map((k) => [k, isPlainObject(item) ? item[k] : undefined]));
    const id = JSON.stringify(identity);
    if (seen.has(id)) errors.push({ path: `${path}[${i}]`, code: 'Duplicate', message: `Duplicate value: ${id}` });
    seen.add(id);
  });
}

const REASON_CODE: Readonly<Record<CelReason, FieldErrorCode>> = {
  FieldValueInvalid: 'Invalid',
  FieldValueForbidden: 'Forbidden',
  FieldValueRequired: 'Required',
  FieldValueDuplicate: 'Duplicate',
};

function celErrors(structural: StructuralSchema, node: JSONSchemaProps, value: unknown, path: string, errors: FieldError[]): void {
  for (const rule of structural.rules.get(node) ?? []) {
    let ok: boolean;
    try {
      ok = rule.check(value);
    } catch {
      // A value of the wrong shape; the schema errors already say why (CEL would error out too).
      ok = true;
    }
    if (!ok) errors.push({ path: joinFieldPath(path, rule.fieldPath), code: REASON_CODE[rule.reason ?? 'FieldValueInvalid'], message: rule.message });
  }
}

function dedupe(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    const id = `${e.path}\u0000${e.message}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

/**
 * Validates an object of the given kind as the apiserver would (schema, defaults, CEL rules) and
 * returns it with defaults applied, or every problem with the field named.
 */
export function validateResource<K extends ResourceKind>(kind: K, obj: unknown): ValidationResult<ResourceTypes[K]> {
  if (!isPlainObject(obj)) return { ok: false, errors: [{ path: '', code: 'TypeInvalid', message: `Invalid value: ${show(obj)}: must be an object` }] };
  let value: Json;
  try {
    value = structuredClone(obj);
  } catch {
    return { ok: false, errors: [{ path: '', code: 'TypeInvalid', message: 'Invalid value: the object is not plain JSON' }] };
  }
  const structural = structuralSchemaOf(kind);
  applyDefaults(structural.root, value);

  const errors = schemaErrors(kind, value, structural.root);
  walk(structural.root, value, '', (node, v, path) => {
    listTypeErrors(node, v, path, errors);
    celErrors(structural, node, v, path, errors);
  });
  if (errors.length > 0) return { ok: false, errors: dedupe(errors) };
  return { ok: true, value: value as unknown as ResourceTypes[K] };
}

/** Validates any SITS object, choosing the kind from its `kind` field. */
export function validateManifest(obj: unknown): ValidationResult<SitsResource> {
  if (!isPlainObject(obj)) return { ok: false, errors: [{ path: '', code: 'TypeInvalid', message: `Invalid value: ${show(obj)}: must be an object` }] };
  if (obj.apiVersion !== API_GROUP_VERSION) {
    return {
      ok: false,
      errors: [{ path: 'apiVersion', code: 'NotSupported', message: `Unsupported value: ${show(obj.apiVersion)}: supported values: "${API_GROUP_VERSION}"` }],
    };
  }
  if (!isResourceKind(obj.kind)) {
    const kinds = Object.keys(KINDS)
      .map((k) => JSON.stringify(k))
      .join(', ');
    return { ok: false, errors: [{ path: 'kind', code: 'NotSupported', message: `Unsupported value: ${show(obj.kind)}: supported values: ${kinds}` }] };
  }
  return validateResource(obj.kind, obj);
}

/** Formats errors one per line, like kubectl prints the apiserver's causes. */
export function formatErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => (e.path === '' ? e.message : `${e.path}: ${e.message}`)).join('\n');
}
