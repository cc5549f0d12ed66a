/**
 * The part of Go's text/template (with Helm's and Sprig's functions) that the SITS chart uses, so that the
 * chart can be rendered and checked here without Helm: text and `{{ }}` actions with `{{-`/`-}}` trimming,
 * comments, `if`/`else if`/`else`/`end`, `with`, pipelines, fields (`.Values.a.b`, `$`), string and number
 * literals, and the functions quote, squote, toYaml, nindent, indent, default, required, not, and, or, eq,
 * ne, lt, le, gt, ge, int, printf (%s %d %v %q), trim, lower, upper. Anything else is an error, never
 * silently wrong: a template this module cannot render is not checked by it.
 *
 * Values behave as Helm's do: numbers from values.yaml are float64 (8080 prints as `8080`, 1000000 as
 * `1e+06`), a missing value prints as an empty string, and `toYaml` sorts keys and drops the final newline.
 */
import { stringify } from 'yaml';

export class TemplateError extends Error {
  readonly code = 'TemplateError';
  constructor(message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}

type Value = unknown;

interface Pipeline {
  readonly cmds: readonly Cmd[];
}
type Arg = { t: 'field'; root: boolean; path: readonly string[] } | { t: 'lit'; v: Value } | { t: 'ident'; name: string } | { t: 'pipe'; p: Pipeline };
interface Cmd {
  readonly args: readonly Arg[];
}

type TNode = { t: 'text'; s: string } | { t: 'out'; p: Pipeline } | { t: 'if' | 'with'; p: Pipeline; then: TNode[]; else: TNode[] };

// ---------------------------------------------------------------------------------------------
// Lexing into text and actions (with trim markers applied)

interface RawAction {
  body: string;
  line: number;
}

function split(src: string): (string | RawAction)[] {
  const out: (string | RawAction)[] = [];
  let i = 0;
  let trimNext = false;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    let text = open < 0 ? src.slice(i) : src.slice(i, open);
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, '');
    trimNext = false;
    if (open < 0) {
      out.push(text);
      break;
    }
    let j = open + 2;
    const leftTrim = src[j] === '-' && /[ \t\r\n]/.test(src[j + 1] ?? '');
    if (leftTrim) {
      text = text.replace(/[ \t\r\n]+$/, '');
      j += 2;
    }
    out.push(text);
    // Find the closing braces outside string literals.
    let k = j;
    let quote: string | undefined;
    for (; k < src.length; k++) {
      const c = src[k];
      if (quote !== undefined) {
        if (c === '\\' && quote === '"') k++;
        else if (c === quote) quote = undefined;
      } else if (c === '"' || c === '`') quote = c;
      else if (c === '}' && src[k + 1] === '}') break;
    }
    if (k >= src.length) throw new TemplateError(`line ${lineOf(src, open)}: unclosed action`);
    let body = src.slice(j, k);
    if (/[ \t\r\n]-$/.test(body)) {
      body = body.slice(0, -2);
      trimNext = true;
    }
    out.push({ body: body.trim(), line: lineOf(src, open) });
    i = k + 2;
  }
  return out;
}

const lineOf = (s: string, pos: number): number => s.slice(0, pos).split('\n').length;

// ---------------------------------------------------------------------------------------------
// Parsing actions

function tokenize(body: string, line: number): string[] {
  const toks: string[] = [];
  let i = 0;
  while (i < body.length) {
    const c = body[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '|' || c === '(' || c === ')') {
      toks.push(c);
      i++;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < body.length && body[j] !== '"') j += body[j] === '\\' ? 2 : 1;
      if (j >= body.length) throw new TemplateError(`line ${line}: unterminated string`);
      toks.push(body.slice(i, j + 1));
      i = j + 1;
      continue;
    }
    if (c === '`') {
      const j = body.indexOf('`', i + 1);
      if (j < 0) throw new TemplateError(`line ${line}: unterminated raw string`);
      toks.push(body.slice(i, j + 1));
      i = j + 1;
      continue;
    }
    let j = i;
    while (j < body.length && !/[\s|()]/.test(body[j] as string)) j++;
    toks.push(body.slice(i, j));
    i = j;
  }
  return toks;
}

function parsePipeline(toks: string[], line: number): Pipeline {
  let pos = 0;
  const pipeline = (): Pipeline => {
    const cmds: Cmd[] = [];
    let args: Arg[] = [];
    while (pos < toks.length) {
      const t = toks[pos] as string;
      if (t === ')') break;
      pos++;
      if (t === '|') {
        if (args.length === 0) throw new TemplateError(`line ${line}: empty command in pipeline`);
        cmds.push({ args });
        args = [];
      } else if (t === '(') {
        const p = pipeline();
        if (toks[pos] !== ')') throw new TemplateError(`line ${line}: unclosed (`);
        pos++;
        args.push({ t: 'pipe', p });
      } else args.push(parseArg(t, line));
    }
    if (args.length === 0) throw new TemplateError(`line ${line}: empty pipeline`);
    cmds.push({ args });
    return { cmds };
  };
  const p = pipeline();
  if (pos !== toks.length) throw new TemplateError(`line ${line}: unexpected ${toks[pos]}`);
  return p;
}

function parseArg(t: string, line: number): Arg {
  if (t === '.') return { t: 'field', root: false, path: [] };
  if (t === '$') return { t: 'field', root: true, path: [] };
  if (t.startsWith('$.')) return { t: 'field', root: true, path: t.slice(2).split('.') };
  if (t.startsWith('.')) {
    const path = t.slice(1).split('.');
    if (path.some((p) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(p))) throw new TemplateError(`line ${line}: bad field ${t}`);
    return { t: 'field', root: false, path };
  }
  if (t.startsWith('"')) return { t: 'lit', v: JSON.parse(t) as string };
  if (t.startsWith('`')) return { t: 'lit', v: t.slice(1, -1) };
  if (t === 'true' || t === 'false') return { t: 'lit', v: t === 'true' };
  if (t === 'nil') return { t: 'lit', v: null };
  if (/^-?\d+(\.\d+)?$/.test(t)) return { t: 'lit', v: Number(t) };
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(t)) return { t: 'ident', name: t };
  throw new TemplateError(`line ${line}: cannot parse ${t}`);
}

/** Parses a template into a tree; throws TemplateError naming the line. */
function parse(src: string): TNode[] {
  const parts = split(src);
  let pos = 0;
  const block = (depth: number): { nodes: TNode[]; end: 'end' | 'else' | 'eof'; elseIf?: RawAction } => {
    const nodes: TNode[] = [];
    while (pos < parts.length) {
      const p = parts[pos++] as string | RawAction;
      if (typeof p === 'string') {
        if (p !== '') nodes.push({ t: 'text', s: p });
        continue;
      }
      const body = p.body;
      if (body.startsWith('/*')) {
        if (!body.endsWith('*/')) throw new TemplateError(`line ${p.line}: unclosed comment`);
        continue;
      }
      const toks = tokenize(body, p.line);
      const head = toks[0];
      if (head === 'end' && toks.length === 1) {
        if (depth === 0) throw new TemplateError(`line ${p.line}: unexpected {{end}}`);
        return { nodes, end: 'end' };
      }
      if (head === 'else') {
        if (depth === 0) throw new TemplateError(`line ${p.line}: unexpected {{else}}`);
        if (toks.length === 1) return { nodes, end: 'else' };
        if (toks[1] === 'if') return { nodes, end: 'else', elseIf: { body: toks.slice(1).join(' '), line: p.line } };
        throw new TemplateError(`line ${p.line}: unsupported ${body}`);
      }
      if (head === 'if' || head === 'with') nodes.push(conditional(head, parsePipeline(toks.slice(1), p.line), p.line, depth));
      else if (head === 'range' || head === 'define' || head === 'template' || head === 'block' || head === 'include' || head === 'tpl' || head === 'lookup') throw new TemplateError(`line ${p.line}: ${head} is not supported here`);
      else nodes.push({ t: 'out', p: parsePipeline(toks, p.line) });
    }
    if (depth > 0) throw new TemplateError('missing {{end}}');
    return { nodes, end: 'eof' };
  };
  const conditional = (kind: 'if' | 'with', p: Pipeline, line: number, depth: number): TNode => {
    const then = block(depth + 1);
    if (then.end === 'eof') throw new TemplateError(`line ${line}: ${kind} without {{end}}`);
    let otherwise: TNode[] = [];
    if (then.end === 'else') {
      if (then.elseIf !== undefined) {
        const toks = tokenize(then.elseIf.body, then.elseIf.line);
        // `else if` shares the outer {{end}}.
        otherwise = [conditional('if', parsePipeline(toks.slice(1), then.elseIf.line), then.elseIf.line, depth)];
      } else {
        const e = block(depth + 1);
        if (e.end !== 'end') throw new TemplateError(`line ${line}: ${kind} … else without {{end}}`);
        otherwise = e.nodes;
      }
    }
    return { t: kind, p, then: then.nodes, else: otherwise };
  };
  return block(0).nodes;
}

// ---------------------------------------------------------------------------------------------
// Evaluation

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Go template truthiness. */
export function goTruthy(v: Value): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === 0n || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isMap(v)) return Object.keys(v).length > 0;
  return true;
}

/** strconv.FormatFloat(f, 'g', -1, 64), which is what fmt's %v prints for a float64. */
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

function goPrint(v: Value): string {
  if (v === undefined || v === null) return ''; // Helm replaces "<no value>" with ""
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return goFloat(v);
  if (typeof v === 'bigint') return v.toString(); // Go int (from the int function)
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(goPrint).join(' ')}]`;
  if (isMap(v))
    return `map[${Object.keys(v)
      .sort()
      .map((k) => `${k}:${goPrint(v[k])}`)
      .join(' ')}]`;
  return String(v);
}

/** Go's %q for the strings a chart prints (JSON escapes agree with Go's for printable text). */
const goQuote = (s: string): string => JSON.stringify(s);

function toYaml(v: Value): string {
  if (v === undefined || v === null) return 'null';
  return stringify(v, { sortMapEntries: true, indentSeq: false, lineWidth: 0 }).replace(/\n$/, '');
}

const indentText = (n: number, s: string): string => {
  const padding = ' '.repeat(n);
  return padding + s.replaceAll('\n', `\n${padding}`);
};

const num = (v: Value, fn: string): number => {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v)) return Number(v);
  throw new TemplateError(`${fn}: not a number: ${JSON.stringify(v)}`);
};

function compare(fn: string, a: Value, b: Value): boolean {
  if (fn === 'eq') return a === b;
  if (fn === 'ne') return a !== b;
  const x = num(a, fn);
  const y = num(b, fn);
  return fn === 'lt' ? x < y : fn === 'le' ? x <= y : fn === 'gt' ? x > y : x >= y;
}

function printf(format: string, args: Value[]): string {
  let i = 0;
  return format.replace(/%([sdvq%])/g, (_m, c: string) => {
    if (c === '%') return '%';
    const a = args[i++];
    if (c === 'd') return String(Math.trunc(num(a, 'printf')));
    if (c === 'q') return goQuote(goPrint(a));
    return goPrint(a);
  });
}

const FUNCS: Record<string, (args: Value[]) => Value> = {
  quote: (a) => a.filter((x) => x !== undefined && x !== null).map((x) => goQuote(goPrint(x))).join(' '),
  squote: (a) => a.filter((x) => x !== undefined && x !== null).map((x) => `'${goPrint(x)}'`).join(' '),
  toYaml: ([v]) => toYaml(v),
  nindent: ([n, s]) => `\n${indentText(num(n, 'nindent'), goPrint(s))}`,
  indent: ([n, s]) => indentText(num(n, 'indent'), goPrint(s)),
  default: ([d, v]) => (goTruthy(v) ? v : d),
  required: ([msg, v]) => {
    if (v === undefined || v === null || v === '') throw new TemplateError(goPrint(msg));
    return v;
  },
  not: ([v]) => !goTruthy(v),
  and: (a) => a.find((x) => !goTruthy(x)) ?? a[a.length - 1],
  or: (a) => a.find((x) => goTruthy(x)) ?? a[a.length - 1],
  eq: ([a, b]) => compare('eq', a, b),
  ne: ([a, b]) => compare('ne', a, b),
  lt: ([a, b]) => compare('lt', a, b),
  le: ([a, b]) => compare('le', a, b),
  gt: ([a, b]) => compare('gt', a, b),
  ge: ([a, b]) => compare('ge', a, b),
  int: ([v]) => BigInt(v === undefined || v === null ? 0 : Math.trunc(num(v, 'int'))),
  printf: ([f, ...rest]) => printf(goPrint(f), rest),
  trim: ([s]) => goPrint(s).trim(),
  lower: ([s]) => goPrint(s).toLowerCase(),
  upper: ([s]) => goPrint(s).toUpperCase(),
};

function field(base: Value, path: readonly string[]): Value {
  let cur = base;
  for (const p of path) {
    if (cur === undefined || cur === null) return undefined;
    if (!isMap(cur)) throw new TemplateError(`can't evaluate field ${p} in ${typeof cur}`);
    cur = cur[p];
  }
  return cur;
}

function evalArg(a: Arg, dot: Value, root: Value): Value {
  switch (a.t) {
    case 'field':
      return field(a.root ? root : dot, a.path);
    case 'lit':
      return a.v;
    case 'pipe':
      return evalPipeline(a.p, dot, root);
    case 'ident': {
      const f = FUNCS[a.name];
      if (f === undefined) throw new TemplateError(`function "${a.name}" not defined`);
      return f([]);
    }
  }
}

function evalPipeline(p: Pipeline, dot: Value, root: Value): Value {
  let prev: Value;
  let first = true;
  for (const cmd of p.cmds) {
    const [head, ...rest] = cmd.args as [Arg, ...Arg[]];
    const args = rest.map((a) => evalArg(a, dot, root));
    if (!first) args.push(prev);
    if (head.t === 'ident') {
      const f = FUNCS[head.name];
      if (f === undefined) throw new TemplateError(`function "${head.name}" not defined`);
      prev = f(args);
    } else {
      if (args.length > 0) throw new TemplateError('a value cannot take arguments');
      prev = evalArg(head, dot, root);
    }
    first = false;
  }
  return prev;
}

function run(nodes: readonly TNode[], dot: Value, root: Value, out: string[]): void {
  for (const n of nodes) {
    if (n.t === 'text') out.push(n.s);
    else if (n.t === 'out') out.push(goPrint(evalPipeline(n.p, dot, root)));
    else {
      const v = evalPipeline(n.p, dot, root);
      if (goTruthy(v)) run(n.then, n.t === 'with' ? v : dot, root, out);
      else run(n.else, dot, root, out);
    }
  }
}

/** Renders one template with the given top-level object (`{ Values, Release, Chart, ... }`). */
export function renderTemplate(src: string, root: Record<string, unknown>): string {
  const out: string[] = [];
  run(parse(src), root, root, out);
  return out.join('');
}
