/**
 * Manifests are written once, as trees whose leaves may refer to a value (`.Values.x`). The same tree
 * evaluates to a plain manifest for given values (`evaluate`) and prints as a Helm template (`emitTemplate`),
 * so the chart and the plain YAML cannot drift apart: they come from one builder, and src/deploy/helm.test.ts
 * renders the chart with the real `helm template` and compares.
 *
 * Builders never read values directly, only through these nodes; a builder that branched on a value
 * would make a chart that ignores that value.
 */
import { stringify } from 'yaml';

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** A value from values.yaml: printed raw (numbers, booleans, safe strings), quoted, or as a YAML block. */
export interface Ref {
  readonly $ref: string;
  readonly style: 'raw' | 'quote' | 'yaml';
}
/** A string made of literal parts and values, e.g. `--profile={{ .Values.profile }}`. */
export interface Concat {
  readonly $concat: readonly (string | Ref)[];
}
/** In a list: items present when the value at `$if` is truthy (Go template truthiness), else `else`. */
export interface IfItems {
  readonly $if: string;
  readonly then: readonly Node[];
  readonly else: readonly Node[];
}
/** In a mapping (under any key starting with `$if`): entries present when the value is truthy. */
export interface IfEntries {
  readonly $ifEntries: string;
  readonly then: Readonly<Record<string, Node>>;
}

/** A leaf chosen by a value (Go truthiness): `then` when the value at `$choose` is truthy, else `else`. Leaves only. */
export interface Choose {
  readonly $choose: string;
  readonly then: string | Ref | Concat;
  readonly else: string | Ref | Concat;
}
/** In a mapping (under any key starting with `$spread`): the entries of the mapping value at `$spread`, if any. */
export interface Spread {
  readonly $spread: string;
}

export type Node = string | number | boolean | null | Ref | Concat | Choose | IfItems | IfEntries | Spread | readonly Node[] | { readonly [key: string]: Node };

/** A manifest file: one object, present when `when` (a values path) is truthy, and `alsoWhen` too if given. */
export interface Doc {
  readonly file: string;
  readonly when?: string;
  /** A second values path that must be truthy as well (Helm: `if and A B`). */
  readonly alsoWhen?: string;
  /** Only in the plain manifests, not a chart template (the release's Namespace: Helm's `--create-namespace`). */
  readonly plainOnly?: true;
  readonly body: Node;
}

/**
 * The release's namespace: `{{ .Release.Namespace }}` in the chart (`helm install -n NS`), the namespace the
 * plain manifests are evaluated for (`evaluate`'s `namespace`) otherwise. Use with raw/quoted/concat.
 */
export const RELEASE_NAMESPACE = 'Release.Namespace';
/** The default namespace of the plain manifests (deploy/sits.yaml). */
export const DEFAULT_NAMESPACE = 'sits-system';

export const raw = (path: string): Ref => ({ $ref: path, style: 'raw' });
export const quoted = (path: string): Ref => ({ $ref: path, style: 'quote' });
export const block = (path: string): Ref => ({ $ref: path, style: 'yaml' });
export const concat = (...parts: (string | Ref)[]): Concat => ({ $concat: parts });
export const ifItems = (path: string, then: readonly Node[], otherwise: readonly Node[] = []): IfItems => ({ $if: path, then, else: otherwise });
export const choose = (path: string, then: string | Ref | Concat, otherwise: string | Ref | Concat): Choose => ({ $choose: path, then, else: otherwise });
let ifKeySeq = 0;
/** Use as `{ fixed: 'x', ...spread('podLabels') }`: the value's entries after the fixed ones (they must not repeat a key). */
export const spread = (path: string): Record<string, Spread> => ({ [`$spread${ifKeySeq++}`]: { $spread: path } });
/** Use as `{ ...entriesIf('priorityClassName', { priorityClassName: quoted('priorityClassName') }) }`. */
export const entriesIf = (path: string, then: Record<string, Node>): Record<string, IfEntries> => ({ [`$if${ifKeySeq++}`]: { $ifEntries: path, then } });

const isObj = (n: unknown): n is Record<string, unknown> => n !== null && typeof n === 'object' && !Array.isArray(n);
const isRef = (n: unknown): n is Ref => isObj(n) && typeof n.$ref === 'string';
const isConcat = (n: unknown): n is Concat => isObj(n) && Array.isArray(n.$concat);
const isIfItems = (n: unknown): n is IfItems => isObj(n) && typeof n.$if === 'string';
const isIfEntries = (n: unknown): n is IfEntries => isObj(n) && typeof n.$ifEntries === 'string';
const isChoose = (n: unknown): n is Choose => isObj(n) && typeof n.$choose === 'string';
const isSpread = (n: unknown): n is Spread => isObj(n) && typeof n.$spread === 'string';

export function lookup(values: unknown, path: string): unknown {
  let cur: unknown = values;
  for (const part of path.split('.')) {
    if (!isObj(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/** strconv.FormatFloat(f, 'g', -1, 64): how Helm prints a number of values.yaml (a float64) with `quote`. */
export function goFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (!Number.isFinite(f)) return f > 0 ? '+Inf' : '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mant, expStr] = f.toExponential().split('e') as [string, string];
  const exp = Number(expStr);
  // Shortest %g decides with precision 6: exponent form below 1e-4 and from 1e6 on.
  if (exp < -4 || exp >= 6) return `${mant}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(f);
}

/** Go template truthiness: false, 0, nil and empty strings, lists and maps are false. */
export function truthy(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isObj(v)) return Object.keys(v).length > 0;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Evaluation with values: the plain manifests

/** What a tree is evaluated with: the values, and the namespace standing for `.Release.Namespace`. */
interface Scope {
  readonly values: unknown;
  readonly namespace: string;
}

const get = (scope: Scope, path: string): unknown => (path === RELEASE_NAMESPACE ? scope.namespace : lookup(scope.values, path));

export function evaluate(node: Node, values: unknown, namespace: string = DEFAULT_NAMESPACE): Json {
  return evalNode(node, { values, namespace });
}

function evalNode(node: Node, scope: Scope): Json {
  if (node === null || typeof node !== 'object') return node;
  if (Array.isArray(node)) return evaluateList(node, scope);
  if (isRef(node)) {
    const v = get(scope, node.$ref);
    if (v === undefined) throw new Error(`no value at ${node.$ref}`);
    // `| quote` makes a string of anything, as Helm prints it.
    if (node.style === 'quote') return typeof v === 'number' ? goFloat(v) : String(v);
    return structuredClone(v) as Json;
  }
  if (isConcat(node)) return node.$concat.map((p) => (typeof p === 'string' ? p : String(evalNode(p, scope)))).join('');
  if (isChoose(node)) return evalNode(truthy(get(scope, node.$choose)) ? node.then : node.else, scope);
  if (isIfItems(node) || isIfEntries(node) || isSpread(node)) throw new Error(`conditional ${JSON.stringify(node)} outside a list or mapping`);
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(node as Record<string, Node>)) {
    if (isIfEntries(v)) {
      if (truthy(get(scope, v.$ifEntries))) for (const [k2, v2] of Object.entries(v.then)) out[k2] = evalNode(v2, scope);
    } else if (isSpread(v)) {
      const m = get(scope, v.$spread);
      if (!truthy(m)) continue;
      if (!isObj(m)) throw new Error(`${v.$spread}: a mapping is needed`);
      for (const [k2, v2] of Object.entries(m)) {
        // Helm would print the key twice, which YAML forbids; resolveValues says so first.
        if (k2 in out) throw new Error(`${v.$spread}: ${k2} is set by the chart`);
        out[k2] = structuredClone(v2) as Json;
      }
    } else out[k] = evalNode(v, scope);
  }
  return out;
}

function evaluateList(list: readonly Node[], scope: Scope): Json[] {
  const out: Json[] = [];
  for (const item of list) {
    if (isIfItems(item)) out.push(...evaluateList(truthy(get(scope, item.$if)) ? item.then : item.else, scope));
    else out.push(evalNode(item, scope));
  }
  return out;
}

/** The documents present for `values` (their `when`), evaluated; `target` 'chart' leaves out the plain-only ones. */
export function evaluateDocs(
  docs: readonly Doc[],
  values: unknown,
  namespace: string = DEFAULT_NAMESPACE,
  target: 'plain' | 'chart' = 'plain',
): { file: string; object: Json }[] {
  return docs
    .filter(
      (d) =>
        (target === 'plain' || d.plainOnly !== true) &&
        (d.when === undefined || truthy(lookup(values, d.when))) &&
        (d.alsoWhen === undefined || truthy(lookup(values, d.alsoWhen))),
    )
    .map((d) => ({ file: d.file, object: evaluate(d.body, values, namespace) }));
}

// ---------------------------------------------------------------------------------------------
// Emission as a Helm template (block-style YAML with Go template actions)

export const TEMPLATE_HEADER = '{{/* Generated by scripts/gen-deploy.ts from src/deploy; do not edit by hand. */}}\n';

export function emitTemplate(doc: Doc): string {
  const lines: string[] = [];
  if (!isObj(doc.body) || isRef(doc.body) || isConcat(doc.body)) throw new Error(`${doc.file}: a document must be a mapping`);
  if (doc.when !== undefined) lines.push(doc.alsoWhen === undefined ? `{{- if ${expr(doc.when)} }}` : `{{- if and ${expr(doc.when)} ${expr(doc.alsoWhen)} }}`);
  emitMap(doc.body as Record<string, Node>, 0, lines);
  if (doc.when !== undefined) lines.push('{{- end }}');
  return `${TEMPLATE_HEADER}${lines.join('\n')}\n`;
}

const pad = (n: number): string => ' '.repeat(n);

function scalar(v: string | number | boolean | null): string {
  if (typeof v === 'string' && v.includes('{{')) throw new Error(`literal ${JSON.stringify(v)} would be read as a template action`);
  return stringify(v, { lineWidth: 0 }).trimEnd();
}

/** A multi-line leaf (a block scalar, e.g. a file in a ConfigMap) printed at `indent`: its lines go below the key. */
const indented = (text: string, indent: number): string =>
  text
    .split('\n')
    .map((l, i) => (i === 0 || l === '' ? l : `${pad(indent)}${l}`))
    .join('\n');

/** The Go template expression of a value path. */
const expr = (path: string): string => (path === RELEASE_NAMESPACE ? '.Release.Namespace' : `.Values.${path}`);

function action(r: Ref): string {
  return r.style === 'quote' ? `{{ ${expr(r.$ref)} | quote }}` : `{{ ${expr(r.$ref)} }}`;
}

/** A string with values inside, double-quoted; the values are printed raw, so they must not contain `"` or `\`. */
function emitConcat(c: Concat): string {
  const literal = (p: string): string => {
    if (p.includes('{{')) throw new Error(`literal ${JSON.stringify(p)} would be read as a template action`);
    return JSON.stringify(p).slice(1, -1);
  };
  return `"${c.$concat.map((p) => (typeof p === 'string' ? literal(p) : action({ ...p, style: 'raw' }))).join('')}"`;
}

/** The text after `key:` / `- ` for leaves; undefined for nested structures. */
function inline(n: Node): string | undefined {
  if (n === null || typeof n !== 'object') return scalar(n);
  if (isRef(n)) return n.style === 'yaml' ? undefined : action(n);
  if (isConcat(n)) return emitConcat(n);
  if (isChoose(n)) {
    const leaf = (x: string | Ref | Concat): string => {
      const t = inline(x);
      if (t === undefined) throw new Error('a choice between YAML blocks is not supported');
      return t;
    };
    return `{{ if ${expr(n.$choose)} }}${leaf(n.then)}{{ else }}${leaf(n.else)}{{ end }}`;
  }
  if (Array.isArray(n) && n.length === 0) return '[]';
  if (isObj(n) && !Array.isArray(n) && Object.keys(n).length === 0) return '{}';
  return undefined;
}

function emitMap(map: Readonly<Record<string, Node>>, indent: number, out: string[]): void {
  for (const [k, v] of Object.entries(map)) {
    if (isIfEntries(v)) {
      out.push(`${pad(indent)}{{- if ${expr(v.$ifEntries)} }}`);
      emitMap(v.then, indent, out);
      out.push(`${pad(indent)}{{- end }}`);
      continue;
    }
    if (isSpread(v)) {
      out.push(`${pad(indent)}{{- with ${expr(v.$spread)} }}`, `${pad(indent)}{{- toYaml . | nindent ${indent} }}`, `${pad(indent)}{{- end }}`);
      continue;
    }
    const key = scalar(k);
    const text = inline(v);
    if (text !== undefined) out.push(`${pad(indent)}${key}: ${indented(text, indent + 2)}`);
    else if (isRef(v)) out.push(`${pad(indent)}${key}:`, `${pad(indent + 2)}{{- toYaml ${expr(v.$ref)} | nindent ${indent + 2} }}`);
    else if (Array.isArray(v)) {
      out.push(`${pad(indent)}${key}:`);
      emitList(v, indent + 2, out);
    } else {
      out.push(`${pad(indent)}${key}:`);
      emitMap(v as Record<string, Node>, indent + 2, out);
    }
  }
}

function emitList(list: readonly Node[], indent: number, out: string[]): void {
  for (const item of list) {
    if (isIfItems(item)) {
      out.push(`${pad(indent)}{{- if ${expr(item.$if)} }}`);
      emitList(item.then, indent, out);
      if (item.else.length > 0) {
        out.push(`${pad(indent)}{{- else }}`);
        emitList(item.else, indent, out);
      }
      out.push(`${pad(indent)}{{- end }}`);
      continue;
    }
    const text = inline(item);
    if (text !== undefined) {
      out.push(`${pad(indent)}- ${indented(text, indent + 2)}`);
      continue;
    }
    if (Array.isArray(item) || isRef(item)) throw new Error('lists of lists and YAML blocks as list items are not supported');
    const inner: string[] = [];
    emitMap(item as Record<string, Node>, indent + 2, inner);
    const first = inner[0];
    if (first === undefined || first.trimStart().startsWith('{{')) throw new Error('a mapping in a list must start with a plain entry');
    inner[0] = `${pad(indent)}- ${first.slice(indent + 2)}`;
    out.push(...inner);
  }
}
