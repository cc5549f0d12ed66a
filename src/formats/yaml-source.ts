/**
 * YAML input with positions: every error names the file, line, column and field, so a person can fix a
 * cluster or workload file without guessing. Parsing and validation are all-or-nothing.
 */
import { LineCounter, parseDocument, isMap, isNode, isScalar, isSeq, visit, type Document } from 'yaml';
import { Value } from '@sinclair/typebox/value';
import type { Static, TSchema } from '@sinclair/typebox';
import { err, ok, type Result } from '../core/result.ts';

export interface InputIssue {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** Dotted field path, e.g. `nodes[3].shape`. */
  readonly field: string;
  readonly message: string;
}

export function formatIssue(i: InputIssue): string {
  return `${i.file}:${i.line}:${i.column}: ${i.field === '' ? '' : `${i.field}: `}${i.message}`;
}

export class InputError extends Error {
  readonly code = 'InvalidInput';
  constructor(readonly issues: readonly InputIssue[]) {
    super(issues.map(formatIssue).join('\n'));
    this.name = 'InputError';
  }
}

export interface YamlSource {
  readonly file: string;
  readonly doc: Document.Parsed;
  readonly lines: LineCounter;
}

/** `/nodes/3/shape` or ['nodes', 3, 'shape'] → `nodes[3].shape`. */
export function fieldName(path: readonly (string | number)[]): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' || /^\d+$/.test(String(p)) ? `[${p}]` : s === '' ? String(p) : `.${p}`;
  return s;
}

export function pointerToPath(pointer: string): (string | number)[] {
  if (pointer === '' || pointer === '/') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
}

/** Position of the deepest YAML node on `path` (falls back to the nearest existing parent). */
export function issueAt(src: YamlSource, path: readonly (string | number)[], message: string): InputIssue {
  let p = [...path];
  for (;;) {
    const node = p.length === 0 ? src.doc.contents : src.doc.getIn(p, true);
    if (isNode(node) && node.range !== undefined && node.range !== null) {
      const pos = src.lines.linePos(node.range[0]);
      return { file: src.file, line: pos.line, column: pos.col, field: fieldName(path), message };
    }
    if (p.length === 0) return { file: src.file, line: 1, column: 1, field: fieldName(path), message };
    p = p.slice(0, -1);
  }
}

/** A 1-based line and column in a YAML text. */
export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

/**
 * Position of the deepest node that exists on `path` in one document of a (possibly multi-document) text,
 * walking the nodes directly (one pass, no alias is followed). With `key`, a path that ends in a map entry
 * points at the entry's key (`nodeSelector:`), which is the line a person looks for; otherwise at its value.
 * A path element matches a map key by its string form, so 3 and '3' both find `3:`.
 */
export function positionAt(doc: Document, lines: LineCounter, path: readonly (string | number)[], opts: { readonly key?: boolean } = {}): SourcePosition {
  let node: unknown = doc.contents;
  let offset = isNode(node) && node.range !== undefined && node.range !== null ? node.range[0] : (doc.range?.[0] ?? 0);
  for (const seg of path) {
    let next: unknown;
    let keyOffset: number | undefined;
    if (isMap(node)) {
      // Keys compare as the strings they become in a plain object (toJS turns `3:` and `true:` into "3" and "true").
      const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value === seg || String(p.key.value) === String(seg) : p.key === seg));
      if (pair === undefined) break;
      next = pair.value;
      if (isNode(pair.key) && pair.key.range !== undefined && pair.key.range !== null) keyOffset = pair.key.range[0];
    } else if (isSeq(node) && (typeof seg === 'number' || /^\d+$/.test(seg))) {
      next = node.items[Number(seg)];
      if (next === undefined) break;
    } else break;
    const valueOffset = isNode(next) && next.range !== undefined && next.range !== null ? next.range[0] : undefined;
    const at = opts.key === true ? (keyOffset ?? valueOffset) : (valueOffset ?? keyOffset);
    if (at !== undefined) offset = at;
    node = next;
  }
  const pos = lines.linePos(offset);
  return { line: pos.line, column: pos.col };
}

export function parseYaml(file: string, text: string): Result<YamlSource, InputError> {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return err(
      new InputError(
        doc.errors.map((e) => {
          const pos = lines.linePos(e.pos[0]);
          return { file, line: pos.line, column: pos.col, field: '', message: `YAML: ${e.message.split('\n')[0] ?? e.code}` };
        }),
      ),
    );
  }
  keepWrittenText(doc);
  return ok({ file, doc, lines });
}

/**
 * Fields whose meaning is the text as written, which a YAML number loses: YAML 1.2 reads `9.0` as 9, and a
 * Hopper-only pod with `minComputeCapability: 9.0` was once placed on a T4 as sm_9 (issue 31).
 */
export const TEXT_FIELDS: ReadonlySet<string> = new Set(['minComputeCapability', 'computeCapability']);

/** A number under a TEXT_FIELDS key becomes the text it was written as (`9.0`, `8.60`), for its parser to read. */
function keepWrittenText(doc: Document.Parsed): void {
  visit(doc, {
    Pair(_, pair) {
      if (
        isScalar(pair.key) &&
        TEXT_FIELDS.has(String(pair.key.value)) &&
        isScalar(pair.value) &&
        typeof pair.value.value === 'number' &&
        typeof pair.value.source === 'string'
      )
        pair.value.value = pair.value.source;
    },
  });
}

/** Validates the document against a TypeBox schema; issues carry YAML positions. */
export function validateYaml<S extends TSchema>(src: YamlSource, schema: S, prefix: readonly (string | number)[] = []): Result<Static<S>, InputError> {
  const value = valueAt(src, prefix);
  if (Value.Check(schema, value)) return ok(value);
  const issues: InputIssue[] = [];
  const seen = new Set<string>();
  for (const e of Value.Errors(schema, value)) {
    const path = [...prefix, ...pointerToPath(e.path)];
    const key = `${e.path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issueAt(src, path, describe(e.message, e.schema, e.value)));
    if (issues.length >= 20) break;
  }
  return err(new InputError(issues));
}

/** The plain value at `prefix` of the document (the whole document for []). */
export function valueAt(src: YamlSource, prefix: readonly (string | number)[]): unknown {
  const all: unknown = src.doc.toJS({ maxAliasCount: 100 });
  let v = all;
  for (const p of prefix) v = v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[p] : undefined;
  return v;
}

function describe(message: string, schema: TSchema, value: unknown): string {
  const allowed = (schema as { enum?: unknown[]; anyOf?: { const?: unknown }[] }).anyOf?.map((s) => s.const).filter((c) => c !== undefined);
  if (allowed !== undefined && allowed.length > 0) return `${JSON.stringify(value)} is not one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`;
  if (message === 'Unexpected property') return 'unknown field';
  // A union of types (string or number): name them, not "Expected union value".
  const types = (schema as { anyOf?: { type?: unknown }[] }).anyOf?.map((s) => s.type).filter((t): t is string => typeof t === 'string');
  const said = message === 'Expected union value' && types !== undefined && types.length > 0 ? `Expected ${types.join(' or ')}` : message;
  return `${said}${value === undefined ? '' : ` (got ${shown(value)})`}`;
}

/** A value as the person wrote it: .nan and .inf are NaN and Infinity, not JSON's null. */
function shown(value: unknown): string {
  return typeof value === 'number' && !Number.isFinite(value) ? String(value) : JSON.stringify(value);
}
