/**
 * `sits lint` input: files, folders and stdin holding plain manifests, `helm template` output, `kind: List`
 * objects and SITS CRs, as multi-document YAML or JSON (JSON is YAML: one code path for both). Every object
 * keeps a way to locate a field path in its file, so a finding maps to file:line:column. Values come from
 * js-yaml where it gives the same answer as the `yaml` package, which is the reference for errors and positions
 * (ADR 0045). Bad input is a finding, never a crash; limits (LIMITS) bound what a hostile or broken file costs.
 */
import { utf8Text } from '../core/utf8-text.ts';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isMap, isNode, isPair, isSeq, LineCounter, parseAllDocuments, type Document } from 'yaml';
import { frameOffset, parseFast } from './fast-positions.ts';
import { fieldName, positionAt, type SourcePosition } from '../formats/yaml-source.ts';
import { lintObjects, type LintOptions } from './engine.ts';
import type { FieldPath, KubeObject, Rule, Severity } from './rule.ts';

export const LIMITS = {
  /** Bytes per file or stdin stream; a bigger input is one `input-too-large` finding, unread. */
  maxInputBytes: 16 * 1024 * 1024,
  /** Nesting of maps and sequences in one document (real manifests stay below ~30; CRD schemas below ~100). */
  maxNesting: 256,
  /** Alias expansions per document (yaml's toJS maxAliasCount: stops billion-laughs documents). */
  maxAliasCount: 100,
  /** Parse errors reported per document; the first ones are what a person fixes first. */
  maxErrorsPerDocument: 10,
} as const;

export type Limits = { readonly [K in keyof typeof LIMITS]: number };

/** What a rule-like input check is, for the rule list of SARIF and `--disable` messages. */
export interface RuleInfo {
  readonly id: string;
  readonly severity: Severity;
  readonly title: string;
  readonly rationale?: string;
  readonly seed?: string;
}

/** Findings about the input itself rather than about an object; they cannot be disabled. */
export const INPUT_RULES: readonly RuleInfo[] = [
  { id: 'yaml-syntax', severity: 'error', title: 'The file is not valid YAML or JSON' },
  { id: 'duplicate-key', severity: 'error', title: 'A mapping has the same key twice (which one wins differs between tools)' },
  { id: 'invalid-object', severity: 'error', title: 'A document is not a Kubernetes object (a mapping with string apiVersion and kind)' },
  { id: 'input-too-large', severity: 'error', title: `An input exceeds a limit of sits lint (size, nesting or alias expansion)` },
  { id: 'rule-failed', severity: 'warning', title: 'A rule failed on an object (a bug in the rule, not in the object)' },
];

/** One input: `text` when it was read, `bytes` alone when it was over the size limit. */
export interface InputSource {
  readonly file: string;
  readonly text?: string;
  readonly bytes: number;
}

/** An object found in the input, with what is needed to place a finding on it. */
export interface LoadedObject {
  readonly obj: KubeObject;
  readonly file: string;
  /** 0-based index of the YAML document in its file. */
  readonly document: number;
  /** Path of the object inside its document: [] or ['items', i] for an item of a List. */
  readonly base: FieldPath;
  /** The `# Source: chart/templates/x.yaml` of `helm template` output, when there is one. */
  readonly template?: string;
  /** File position of the deepest node on `path` (relative to the object). */
  readonly locate: (path: FieldPath) => SourcePosition;
}

/** A finding placed in its file: the shape of `-o json` (docs/rules.md "Output"). */
export interface LocatedFinding {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly rule: string;
  readonly severity: Severity;
  readonly message: string;
  /** Field path inside the object, e.g. `spec.template.spec.containers[0].env[2]` ('' for the whole object). */
  readonly field: string;
  readonly kind: string | null;
  readonly name: string | null;
  readonly namespace: string | null;
  readonly template?: string;
}

export interface Loaded {
  readonly objects: LoadedObject[];
  /** Findings about the input (syntax, shape, limits). */
  readonly problems: LocatedFinding[];
}

const HELM_SOURCE = /^# Source: (.+?)\s*$/gm;

function problem(file: string, lines: LineCounter | null, offset: number, rule: string, message: string, template?: string): LocatedFinding {
  const pos = lines === null ? { line: 1, col: 1 } : lines.linePos(offset);
  const info = INPUT_RULES.find((r) => r.id === rule);
  return {
    file,
    line: pos.line,
    column: pos.col,
    rule,
    severity: info?.severity ?? 'error',
    message,
    field: '',
    kind: null,
    name: null,
    namespace: null,
    ...(template === undefined ? {} : { template }),
  };
}

const MAX_MESSAGE = 200;

/** A parser message cut to a line's worth: it may quote the input, and a minified or binary input is one huge line. */
function clip(message: string): string {
  return message.length <= MAX_MESSAGE ? message : `${message.slice(0, MAX_MESSAGE)}…`;
}

function errorRule(code: string): string {
  if (code === 'DUPLICATE_KEY') return 'duplicate-key';
  if (code === 'RESOURCE_EXHAUSTION') return 'input-too-large';
  return 'yaml-syntax';
}

/** First node nested deeper than `max` (iteratively: the check must not need the stack it protects). */
function tooDeep(root: unknown, max: number): { offset: number } | null {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (!isMap(node) && !isSeq(node)) continue;
    if (depth >= max) return { offset: node.range?.[0] ?? 0 };
    for (const it of node.items as unknown[]) {
      if (isPair(it)) {
        stack.push([it.value, depth + 1]);
        stack.push([it.key, depth + 1]);
      } else stack.push([it, depth + 1]);
    }
  }
  return null;
}

function offsetOf(node: unknown): number {
  return isNode(node) && node.range !== undefined && node.range !== null ? node.range[0] : 0;
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

/** Why `v` is not a Kubernetes object, or null when it is one. */
function notAnObject(v: unknown, what: string): { message: string; path: FieldPath } | null {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    const is = Array.isArray(v) ? 'a sequence' : v === null ? 'null' : `a ${typeof v}`;
    return { message: `${what} is ${is}, not a Kubernetes object (a mapping with apiVersion and kind)`, path: [] };
  }
  const o = v as Record<string, unknown>;
  for (const f of ['apiVersion', 'kind'] as const) {
    if (o[f] === undefined) return { message: `${what} has no ${f}`, path: [] };
    if (typeof o[f] !== 'string' || o[f] === '') return { message: `${f} must be a non-empty string, got ${JSON.stringify(o[f])}`, path: [f] };
  }
  return null;
}

export interface LoadOptions {
  readonly limits?: Limits;
  /**
   * Parse with the `yaml` package only (no js-yaml fast path). The result is the same (tested); the fast path
   * exists because `yaml` composes ~2 MB/s on this machine, too slow for 10,000 manifests (ADR 0045).
   */
  readonly exact?: boolean;
}

/** Parses one input into objects and input findings. Never throws on bad content. */
export function loadSource(src: InputSource, opts: LoadOptions = {}): Loaded {
  const limits = opts.limits ?? LIMITS;
  const { file } = src;
  if (src.text === undefined || src.bytes > limits.maxInputBytes) {
    return {
      objects: [],
      problems: [
        problem(
          file,
          null,
          0,
          'input-too-large',
          `the input has ${src.bytes} bytes, more than the limit of ${limits.maxInputBytes} (maxInputBytes); split it into smaller files`,
        ),
      ],
    };
  }
  return (opts.exact === true ? null : loadFast(file, src.text, limits)) ?? loadExact(file, src.text, limits);
}

/** `# Source:` comments of `helm template` output, in text order. */
function helmSources(text: string): { offset: number; name: string }[] {
  const sources: { offset: number; name: string }[] = [];
  if (text.includes('# Source: ')) for (const m of text.matchAll(HELM_SOURCE)) sources.push({ offset: m.index, name: m[1] ?? '' });
  return sources;
}

/** The template of the document whose text starts at `start`: the last `# Source:` in [from, start). */
function templateIn(sources: readonly { offset: number; name: string }[], from: number, start: number): string | undefined {
  let name: string | undefined;
  for (const s of sources) if (s.offset >= from && s.offset < start) name = s.name;
  return name;
}

/** Turns one document's value into objects (a List into its items) or invalid-object findings. */
function addDocument(
  out: Loaded,
  file: string,
  document: number,
  value: unknown,
  template: string | undefined,
  locate: (path: FieldPath) => SourcePosition,
): void {
  const t = template === undefined ? {} : { template };
  const add = (obj: unknown, base: FieldPath): void => {
    const bad = notAnObject(obj, base.length === 0 ? 'the document' : `List item ${fieldName(base)}`);
    if (bad !== null) {
      const o = obj !== null && typeof obj === 'object' && !Array.isArray(obj) ? (obj as KubeObject) : {};
      out.problems.push({ ...located(file, locate([...base, ...bad.path]), 'invalid-object', 'error', bad.message, bad.path, o), ...t });
      return;
    }
    out.objects.push({ obj: obj as KubeObject, file, document, base, locate: (path) => locate([...base, ...path]), ...t });
  };
  const list = asList(value);
  if (list === null) add(value, []);
  else list.forEach((item, i) => add(item, ['items', i]));
}

/** The whole input through the `yaml` package: exact errors, duplicate keys, limits, positions. */
function loadExact(file: string, text: string, limits: Limits): Loaded {
  const out: Loaded = { objects: [], problems: [] };
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const sources = helmSources(text);
  let prevEnd = 0;
  let d = -1;
  for (const doc of docs) {
    d++;
    const start = offsetOf(doc.contents) || doc.range[0];
    const template = templateIn(sources, prevEnd, start);
    prevEnd = doc.range[1];
    if (doc.errors.length > 0) {
      const seen = new Set<string>();
      for (const e of doc.errors) {
        // yaml reports a stack overflow at every level it unwinds: once is enough.
        if (e.code === 'RESOURCE_EXHAUSTION' && seen.has(e.code)) continue;
        seen.add(e.code);
        const message =
          e.code === 'RESOURCE_EXHAUSTION'
            ? `the document nests maps and sequences too deeply to parse (${e.message}); more than ${limits.maxNesting} levels is refused (maxNesting)`
            : clip(e.message.split('\n')[0] ?? e.code);
        out.problems.push(problem(file, lines, e.pos[0], errorRule(e.code), message, template));
        if (seen.size >= limits.maxErrorsPerDocument) break;
      }
      continue;
    }
    const deep = tooDeep(doc.contents, limits.maxNesting);
    if (deep !== null) {
      out.problems.push(
        problem(
          file,
          lines,
          deep.offset,
          'input-too-large',
          `the document nests maps and sequences deeper than ${limits.maxNesting} levels (maxNesting)`,
          template,
        ),
      );
      continue;
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: limits.maxAliasCount });
    } catch (e) {
      out.problems.push(problem(file, lines, start, 'input-too-large', `${(e as Error).message} (maxAliasCount ${limits.maxAliasCount})`, template));
      continue;
    }
    // An empty document (a trailing `---`, a helm template that rendered nothing) is no object, as for kubectl.
    if (value === null || value === undefined) continue;
    addDocument(out, file, d, value, template, (path) => positionAt(doc, lines, path, { key: true }));
  }
  return out;
}

/**
 * What may be an anchor (`&name` at the start of a line, after white space or a flow indicator; also inside a
 * quoted string, which costs only speed): such inputs take the exact path, which bounds alias expansion.
 */
const ANCHOR = /(?:^|[\s,[{])&[^\s,[\]{}]/m;

/**
 * The fast path: values from js-yaml (~15× faster than `yaml` on manifests), positions from the node frames it
 * reports (fast-positions.ts), checked against the values as they are walked. Returns null, and the caller
 * takes the exact path, for anything where the two could differ: a js-yaml error of any kind (syntax, duplicate
 * key, unknown tag, depth), anchors, a byte-order mark, nesting near the limit.
 */
function loadFast(file: string, text: string, limits: Limits): Loaded | null {
  if (text.charCodeAt(0) === 0xfeff || ANCHOR.test(text)) return null;
  const fast = parseFast(text, limits.maxNesting);
  if (fast === null) return null;
  const { values, roots } = fast;
  const starts = roots.map((r) => r.open);
  const out: Loaded = { objects: [], problems: [] };
  const sources = helmSources(text);
  // Built on the first finding placed in this input: a clean input pays for none of it.
  let newlines: number[] | null = null;
  let exact: { docs: Document[]; lines: LineCounter } | null = null;
  const position = (offset: number): SourcePosition => {
    newlines ??= newlineOffsets(text);
    const line = lineIndex(newlines, offset);
    return { line: line + 1, column: offset - (line === 0 ? 0 : (newlines[line - 1] as number) + 1) + 1 };
  };
  values.forEach((value, d) => {
    if (value === null || value === undefined) return;
    const start = starts[d] as number;
    const locate = (path: FieldPath): SourcePosition => {
      const root = roots[d];
      const at = root === undefined ? null : frameOffset(text, root, path);
      if (at !== null) return position(at);
      // Frames that do not match the values: the whole input through `yaml`, once, is still right.
      if (exact === null) {
        const lines = new LineCounter();
        exact = { docs: parseAllDocuments(text, { lineCounter: lines }) as Document[], lines };
      }
      const doc = exact.docs[d];
      return doc === undefined ? position(start) : positionAt(doc, exact.lines, path, { key: true });
    };
    addDocument(out, file, d, value, templateIn(sources, starts[d - 1] ?? 0, start), locate);
  });
  return out;
}

function newlineOffsets(text: string): number[] {
  const out: number[] = [];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) out.push(i);
  return out;
}

/** 0-based line of `offset`: how many newlines come before it. */
function lineIndex(newlines: readonly number[], offset: number): number {
  let lo = 0;
  let hi = newlines.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((newlines[mid] as number) < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The items of a `kind: List` (kubectl get -o yaml) or a typed list (`PodList` from the API), or null. Items of
 * a typed list carry no kind of their own: it is the list's kind without `List`, in the list's apiVersion.
 */
function asList(v: unknown): unknown[] | null {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (typeof o.kind !== 'string' || !o.kind.endsWith('List') || !Array.isArray(o.items)) return null;
  const itemKind = o.kind === 'List' ? undefined : o.kind.slice(0, -'List'.length);
  return o.items.map((it: unknown) => {
    if (itemKind === undefined || it === null || typeof it !== 'object' || Array.isArray(it)) return it;
    const r = it as Record<string, unknown>;
    return {
      ...(r.apiVersion === undefined && o.apiVersion !== undefined ? { apiVersion: o.apiVersion } : {}),
      ...(r.kind === undefined ? { kind: itemKind } : {}),
      ...r,
    };
  });
}

function located(
  file: string,
  pos: { line: number; column: number },
  rule: string,
  severity: Severity,
  message: string,
  path: FieldPath,
  obj: KubeObject,
): LocatedFinding {
  const md = obj.metadata !== null && typeof obj.metadata === 'object' ? (obj.metadata as Record<string, unknown>) : {};
  return {
    file,
    line: pos.line,
    column: pos.column,
    rule,
    severity,
    message,
    field: fieldName(path),
    kind: str(obj.kind),
    name: str(md.name),
    namespace: str(md.namespace),
  };
}

export interface LintReport {
  readonly findings: LocatedFinding[];
  readonly files: number;
  readonly objects: number;
}

/**
 * Loads every input, lints all objects together (cross-object rules see the whole run, as one `kubectl apply`
 * would submit them) and places each finding at the deepest YAML node on its field path.
 */
export function lintSources(sources: readonly InputSource[], rules: readonly Rule[], opts: LintOptions = {}, load: LoadOptions = {}): LintReport {
  const objects: LoadedObject[] = [];
  const findings: LocatedFinding[] = [];
  for (const s of sources) {
    const l = loadSource(s, load);
    objects.push(...l.objects);
    findings.push(...l.problems);
  }
  for (const f of lintObjects(
    objects.map((o) => o.obj),
    rules,
    opts,
  )) {
    const o = objects[f.object] as LoadedObject;
    const pos = o.locate(f.path);
    findings.push({ ...located(o.file, pos, f.rule, f.severity, f.message, f.path, o.obj), ...(o.template === undefined ? {} : { template: o.template }) });
  }
  return { findings: sortFindings(findings), files: sources.length, objects: objects.length };
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** By file, line, column, rule, then message: the order of every output format. */
export function sortFindings(fs: LocatedFinding[]): LocatedFinding[] {
  return fs.sort((a, b) => cmp(a.file, b.file) || a.line - b.line || a.column - b.column || cmp(a.rule, b.rule) || cmp(a.message, b.message));
}

/** Input findings that mean an input could not be read at all: the run exits 2, as for a missing file. */
export const UNREADABLE_RULES: ReadonlySet<string> = new Set(['yaml-syntax', 'input-too-large']);

/** 2 when an input could not be read (a syntax error, over a limit), else 1 when any finding is an error, else 0 (warnings alone pass). */
export function exitCodeOf(findings: readonly LocatedFinding[]): 0 | 1 | 2 {
  if (findings.some((f) => UNREADABLE_RULES.has(f.rule))) return 2;
  return findings.some((f) => f.severity === 'error') ? 1 : 0;
}

const EXTENSIONS = /\.(ya?ml|json)$/i;

/** An input that is not linted, and why: `sits: <path>: <message>` on stderr, exit 2. */
export interface Unreadable {
  readonly path: string;
  readonly message: string;
}

const cannotRead = (path: string, reason: string): Unreadable => ({ path, message: `cannot read: ${reason} (check the path; the other inputs were linted)` });

/**
 * Go-template actions that only an unrendered Helm template has: `.Values`/`.Release`/`.Chart`/`.Capabilities`/
 * `.Files`/`.Template`, `include`, `tpl`, `toYaml`, or an action at column 0 (`{{- if …}}`, `{{ end }}`). Rendered
 * manifests may hold `{{ }}` too (Prometheus and Alertmanager templates, Argo parameters), but indented inside a
 * string, and without these.
 */
const HELM_ACTION = /\{\{-?\s*(?:\.(?:Values|Release|Chart|Capabilities|Files|Template)\b|include\s|tpl\s|toYaml\s)|^\{\{/m;

export const isHelmTemplate = (text: string): boolean => text.includes('{{') && HELM_ACTION.test(text);

/** The chart folder a file is in (the nearest parent with a Chart.yaml), or undefined. */
function chartRootOf(file: string): string | undefined {
  let dir = dirname(file);
  for (let i = 0; i < 64; i++) {
    if (isChartDir(dir)) return dir;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
  return undefined;
}

function isChartDir(dir: string): boolean {
  try {
    return statSync(join(dir, 'Chart.yaml')).isFile();
  } catch {
    return false;
  }
}

const helmChart = (path: string, dir: string): Unreadable => ({
  path,
  message: `this is a Helm chart: lint its rendered output: helm template NAME ${dir} | sits lint -`,
});

const binary = (path: string): Unreadable => ({
  path,
  message: 'is a binary file, not YAML or JSON: nothing was read from it (give sits lint manifests; the other inputs were linted)',
});

/** Display name of stdin in findings. */
export const STDIN = '<stdin>';

/** UTF-8 text, or null for bytes that are not (a binary file, UTF-16): those are refused rather than decoded to U+FFFD. */
export function decodeText(bytes: Uint8Array): string | null {
  const r = utf8Text(bytes);
  return 'text' in r ? r.text : null;
}

/**
 * Reads the inputs named on the command line: a file (any extension), a folder (recursively, its *.yaml, *.yml
 * and *.json in sorted order, so output never depends on the file system's order) or `-` for stdin. A file
 * over the size limit is not read. What is not linted is returned, named, for the caller to report (exit 2):
 * what cannot be read, binary files, and unrendered Helm charts (a folder with a Chart.yaml, once per chart,
 * or a file with Helm template actions), which would give one syntax error per template action.
 */
export async function readInputs(
  paths: readonly string[],
  readStdin: (maxBytes: number) => Promise<{ text?: string; bytes: number; binary?: boolean }>,
  limits: Limits = LIMITS,
): Promise<{ sources: InputSource[]; unreadable: Unreadable[] }> {
  const sources: InputSource[] = [];
  const unreadable: Unreadable[] = [];
  const charts = new Set<string>();
  const reason = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  const helm = (path: string, dir: string | undefined): void => {
    const key = dir ?? path;
    if (charts.has(key)) return;
    charts.add(key);
    unreadable.push(helmChart(dir ?? path, dir ?? 'DIR'));
  };
  const addText = (file: string, text: string | null, bytes: number, chartDir: () => string | undefined): void => {
    if (text === null) unreadable.push(binary(file));
    else if (isHelmTemplate(text)) helm(file, chartDir());
    else sources.push({ file, text, bytes });
  };
  const readFile = (path: string, size: number): void => {
    if (size > limits.maxInputBytes) {
      sources.push({ file: path, bytes: size });
      return;
    }
    try {
      const buf = readFileSync(path);
      addText(path, decodeText(buf), buf.length, () => chartRootOf(path));
    } catch (e) {
      unreadable.push(cannotRead(path, reason(e)));
    }
  };
  const walk = (dir: string): void => {
    if (isChartDir(dir)) {
      helm(dir, dir);
      return;
    }
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (e) {
      unreadable.push(cannotRead(dir, reason(e)));
      return;
    }
    for (const entry of entries.sort((a, b) => cmp(a.name, b.name))) {
      const path = join(dir, entry.name);
      // Symlinked folders are not followed: a link cycle would never end.
      if (entry.isDirectory()) walk(path);
      else if (EXTENSIONS.test(entry.name) && (entry.isFile() || entry.isSymbolicLink())) {
        try {
          const st = statSync(path);
          if (st.isFile()) readFile(path, st.size);
        } catch (e) {
          unreadable.push(cannotRead(path, reason(e)));
        }
      }
    }
  };
  for (const p of paths) {
    if (p === '-') {
      const s = await readStdin(limits.maxInputBytes);
      if (s.text === undefined) sources.push({ file: STDIN, bytes: s.bytes });
      else addText(STDIN, s.binary === true || s.text.includes('\u0000') ? null : s.text, s.bytes, () => undefined);
      continue;
    }
    let st;
    try {
      st = statSync(p);
    } catch (e) {
      unreadable.push(cannotRead(p, reason(e)));
      continue;
    }
    if (st.isDirectory()) walk(p);
    else readFile(p, st.size);
  }
  return { sources, unreadable };
}
