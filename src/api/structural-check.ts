// Checks a generated openAPIV3Schema against the apiserver's rules for CRD schemas (structural
// schema, list types, CEL field paths) and SITS's own conventions (every field described, defaults
// documented, every string/list/map bounded so CEL stays within the cost budget). The generator
// refuses to write a CRD with issues; the tests assert there are none.
import type { JSONSchemaProps, JsonValue } from './structural.ts';

const ALLOWED_KEYS: ReadonlySet<string> = new Set([
  'description',
  'type',
  'format',
  'enum',
  'default',
  'minimum',
  'exclusiveMinimum',
  'maximum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'nullable',
  'anyOf',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
]);
const TYPES: ReadonlySet<string> = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
const REASONS: ReadonlySet<string> = new Set(['FieldValueInvalid', 'FieldValueForbidden', 'FieldValueRequired', 'FieldValueDuplicate']);
const SCALARS: ReadonlySet<string> = new Set(['string', 'integer', 'number', 'boolean']);

type Level = 'root' | 'field' | 'item' | 'value';

/**
 * Resolves a CEL fieldPath (`.a.b`, `['key']`) from a schema node the way the apiserver's
 * ValidFieldPath does: fields must exist in properties, map keys need additionalProperties, no indices.
 */
export function resolveFieldPath(node: JSONSchemaProps, fieldPath: string): JSONSchemaProps | undefined {
  const re = /\.([^.[\]']+)|\['((?:[^'\\]|\\.)*)'\]/gy;
  let cur: JSONSchemaProps | undefined = node;
  let consumed = 0;
  for (let m = re.exec(fieldPath); m !== null && cur; m = re.exec(fieldPath)) {
    consumed = re.lastIndex;
    const name = m[1] ?? (m[2] ?? '').replace(/\\(.)/g, '$1');
    if (cur.properties) cur = cur.properties[name];
    else if (cur.additionalProperties) cur = cur.additionalProperties;
    else return undefined;
  }
  return consumed === fieldPath.length && fieldPath.length > 0 ? cur : undefined;
}

function typeOfJson(v: JsonValue): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function defaultIssues(node: JSONSchemaProps, value: JsonValue, path: string): string[] {
  const issues: string[] = [];
  const t = typeOfJson(value);
  if (node.type && !(t === node.type || (node.type === 'number' && t === 'integer')))
    issues.push(`${path}: default ${JSON.stringify(value)} is not of type ${node.type}`);
  if (node.enum && !node.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) issues.push(`${path}: default ${JSON.stringify(value)} is not in enum`);
  if (typeof value === 'number') {
    if (node.minimum !== undefined && value < node.minimum) issues.push(`${path}: default below minimum`);
    if (node.maximum !== undefined && value > node.maximum) issues.push(`${path}: default above maximum`);
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const key of Object.keys(value)) {
      if (!node.properties?.[key] && !node.additionalProperties && !node['x-kubernetes-preserve-unknown-fields'])
        issues.push(`${path}: default has unknown field ${key} (defaults must be pruned)`);
    }
  }
  return issues;
}

function describeDefault(value: JsonValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function check(node: JSONSchemaProps, path: string, level: Level, underPreserve: boolean, issues: string[]): void {
  for (const key of Object.keys(node)) if (!ALLOWED_KEYS.has(key)) issues.push(`${path}: keyword ${key} is not allowed in a CRD schema`);

  const intOrString = node['x-kubernetes-int-or-string'] === true;
  const preserve = node['x-kubernetes-preserve-unknown-fields'] === true;

  // Structural: every node typed, except int-or-string and preserve-unknown-fields.
  if (node.type === undefined && !intOrString && !preserve) issues.push(`${path}: missing type`);
  if (node.type !== undefined && !TYPES.has(node.type)) issues.push(`${path}: invalid type ${String(node.type)}`);
  if (level === 'root' && node.type !== 'object') issues.push(`${path}: root must be type object`);
  if (intOrString) {
    if (node.type !== undefined) issues.push(`${path}: int-or-string must not have a type`);
    if (preserve) issues.push(`${path}: int-or-string cannot preserve unknown fields`);
    if (JSON.stringify(node.anyOf) !== JSON.stringify([{ type: 'integer' }, { type: 'string' }]))
      issues.push(`${path}: int-or-string needs exactly anyOf [integer, string]`);
  } else if (node.anyOf !== undefined) {
    issues.push(`${path}: anyOf is only allowed for int-or-string`);
  }
  if (node.properties && node.additionalProperties) issues.push(`${path}: properties and additionalProperties are mutually exclusive`);
  if (level === 'root' && node.additionalProperties) issues.push(`${path}: additionalProperties is not allowed at the root`);
  if (node.type === 'array' && !node.items) issues.push(`${path}: array without items`);
  for (const r of node.required ?? []) if (!node.properties?.[r]) issues.push(`${path}: required field ${r} is not a property`);
  if (node.pattern !== undefined) {
    if (/\(\?[=!<]|\\[1-9]/.test(node.pattern)) issues.push(`${path}: pattern uses lookaround or backreferences (not RE2)`);
    try {
      new RegExp(node.pattern);
    } catch {
      issues.push(`${path}: pattern does not compile`);
    }
  }

  // Documentation: one line per field; defaults spelled out.
  if (level === 'field' && path !== 'metadata') {
    if (!node.description || node.description.trim() === '') issues.push(`${path}: missing description`);
    else if (/[\r\n]/.test(node.description)) issues.push(`${path}: description must be one line`);
  }
  if (node.default !== undefined) {
    if (!node.description?.includes(`Default: ${describeDefault(node.default)}`))
      issues.push(`${path}: description must say "Default: ${describeDefault(node.default)}"`);
    issues.push(...defaultIssues(node, node.default, path));
  }

  // CEL cost: bound every string, list and map (preserved subtrees are invisible to CEL).
  // Root apiVersion/kind are the apiserver's own and never read by SITS rules.
  const typeMeta = path === 'apiVersion' || path === 'kind';
  if (!underPreserve && !typeMeta) {
    if (node.type === 'string' && node.maxLength === undefined && node.enum === undefined && node.format !== 'date-time')
      issues.push(`${path}: string without maxLength`);
    if (node.type === 'array' && node.maxItems === undefined) issues.push(`${path}: array without maxItems`);
    if (node.type === 'object' && node.additionalProperties && node.maxProperties === undefined) issues.push(`${path}: map without maxProperties`);
  }

  // List types.
  const listType = node['x-kubernetes-list-type'];
  if (listType !== undefined && node.type !== 'array') issues.push(`${path}: x-kubernetes-list-type on a non-array`);
  if (listType === 'map') {
    const keys = node['x-kubernetes-list-map-keys'] ?? [];
    if (keys.length === 0) issues.push(`${path}: list-type map needs x-kubernetes-list-map-keys`);
    const item = node.items;
    if (item?.type !== 'object') issues.push(`${path}: list-type map items must be objects`);
    for (const k of keys) {
      const prop = item?.properties?.[k];
      if (!prop) issues.push(`${path}: map key ${k} is not an item property`);
      else {
        if (!prop.type || !SCALARS.has(prop.type)) issues.push(`${path}: map key ${k} must be scalar`);
        if (!(item?.required ?? []).includes(k) && prop.default === undefined) issues.push(`${path}: map key ${k} must be required or defaulted`);
      }
    }
  } else if (node['x-kubernetes-list-map-keys'] !== undefined) {
    issues.push(`${path}: x-kubernetes-list-map-keys needs list-type map`);
  }
  if (listType === 'set' && node.items?.type && !SCALARS.has(node.items.type)) issues.push(`${path}: list-type set items must be scalar`);

  // CEL rules.
  for (const [i, v] of (node['x-kubernetes-validations'] ?? []).entries()) {
    const at = `${path}.x-kubernetes-validations[${i}]`;
    if (!v.rule.trim()) issues.push(`${at}: empty rule`);
    if (!v.message.trim() || /[\r\n]/.test(v.message)) issues.push(`${at}: message must be one non-empty line`);
    if (v.reason !== undefined && !REASONS.has(v.reason)) issues.push(`${at}: invalid reason ${v.reason}`);
    if (v.fieldPath !== undefined && !resolveFieldPath(node, v.fieldPath)) issues.push(`${at}: fieldPath ${v.fieldPath} does not resolve`);
  }

  // Recurse.
  if (level === 'root') {
    const meta = node.properties?.metadata;
    if (meta && JSON.stringify(meta) !== JSON.stringify({ type: 'object' })) issues.push('metadata: root metadata may only be {type: object}');
    for (const k of ['apiVersion', 'kind']) if (node.properties?.[k] && node.properties[k].type !== 'string') issues.push(`${k}: must be a string`);
  }
  const childPreserve = underPreserve || preserve;
  for (const [key, prop] of Object.entries(node.properties ?? {})) {
    if (level === 'root' && key === 'metadata') continue;
    check(prop, path ? `${path}.${key}` : key, 'field', childPreserve, issues);
  }
  if (node.additionalProperties) check(node.additionalProperties, `${path}[*]`, 'value', childPreserve, issues);
  if (node.items) check(node.items, `${path}[]`, 'item', childPreserve, issues);
}

/** Every problem found in an openAPIV3Schema; empty when the schema is fit for the apiserver. */
export function structuralIssues(root: JSONSchemaProps): string[] {
  const issues: string[] = [];
  check(root, '', 'root', false, issues);
  return issues;
}
