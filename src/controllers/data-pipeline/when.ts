/**
 * `when` conditions of DataPipeline stages, after Argo's `depends`: `train.Succeeded && !(eval.Failed || eval.Skipped)`.
 * Outcomes: Succeeded, Failed, Skipped, Completed (Succeeded or Failed) and Any (finished at all). Lower-case
 * spellings (`train.succeeded`) are accepted too. Parsed into a tree once, evaluated against finished stages.
 */

export const OUTCOMES = ['succeeded', 'failed', 'skipped', 'completed', 'any'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export type WhenExpr =
  | { readonly op: 'ref'; readonly stage: string; readonly outcome: Outcome }
  | { readonly op: 'not'; readonly of: WhenExpr }
  | { readonly op: 'and' | 'or'; readonly left: WhenExpr; readonly right: WhenExpr };

export type ParseResult = { readonly ok: true; readonly expr: WhenExpr } | { readonly ok: false; readonly error: string };

const TOKEN = /\s*(&&|\|\||!|\(|\)|[a-z0-9]([-a-z0-9]*[a-z0-9])?\.[A-Za-z]+)/y;

/** Parses `text`; errors name the column (1-based) of the first bad token. */
export function parseWhen(text: string): ParseResult {
  const tokens: { t: string; col: number }[] = [];
  let at = 0;
  while (at < text.length) {
    if (/^\s*$/.test(text.slice(at))) break;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(text);
    if (m === null) return { ok: false, error: `unexpected input at column ${at + 1 + (text.slice(at).length - text.slice(at).trimStart().length)}` };
    const t = m[1] ?? '';
    tokens.push({ t, col: m.index + m[0].length - t.length + 1 });
    at = TOKEN.lastIndex;
  }
  let i = 0;
  const fail = (what: string): never => {
    throw new Error(i < tokens.length ? `${what} at column ${tokens[i]?.col}` : `${what} at the end`);
  };
  const primary = (): WhenExpr => {
    const tok = tokens[i];
    if (tok === undefined) return fail('expected a stage outcome');
    if (tok.t === '!') {
      i++;
      return { op: 'not', of: primary() };
    }
    if (tok.t === '(') {
      i++;
      const e = or();
      if (tokens[i]?.t !== ')') fail('expected )');
      i++;
      return e;
    }
    const dot = tok.t.lastIndexOf('.');
    if (dot < 0) return fail(`expected a stage outcome, got ${tok.t}`);
    const outcome = tok.t.slice(dot + 1).toLowerCase();
    if (!(OUTCOMES as readonly string[]).includes(outcome))
      return fail(`unknown outcome ${tok.t.slice(dot + 1)} (Succeeded, Failed, Skipped, Completed or Any)`);
    i++;
    return { op: 'ref', stage: tok.t.slice(0, dot), outcome: outcome as Outcome };
  };
  const and = (): WhenExpr => {
    let e = primary();
    while (tokens[i]?.t === '&&') {
      i++;
      e = { op: 'and', left: e, right: primary() };
    }
    return e;
  };
  const or = (): WhenExpr => {
    let e = and();
    while (tokens[i]?.t === '||') {
      i++;
      e = { op: 'or', left: e, right: and() };
    }
    return e;
  };
  try {
    const expr = or();
    if (i < tokens.length) fail(`unexpected ${tokens[i]?.t}`);
    return { ok: true, expr };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

/** The stages an expression names, in order of appearance, without repeats. */
export function stagesOf(e: WhenExpr): string[] {
  const out: string[] = [];
  const walk = (x: WhenExpr): void => {
    if (x.op === 'ref') {
      if (!out.includes(x.stage)) out.push(x.stage);
    } else if (x.op === 'not') walk(x.of);
    else {
      walk(x.left);
      walk(x.right);
    }
  };
  walk(e);
  return out;
}

/** True when `e` names `stage` with an outcome that includes failure (the stage's failure is handled there). */
export function handlesFailureOf(e: WhenExpr, stage: string): boolean {
  if (e.op === 'ref') return e.stage === stage && (e.outcome === 'failed' || e.outcome === 'completed' || e.outcome === 'any');
  if (e.op === 'not') return handlesFailureOf(e.of, stage);
  return handlesFailureOf(e.left, stage) || handlesFailureOf(e.right, stage);
}

export type FinishedPhase = 'Succeeded' | 'Failed' | 'Skipped';

/** Evaluates `e`; every stage it names must be finished (`phaseOf` answers for each). */
export function evalWhen(e: WhenExpr, phaseOf: (stage: string) => FinishedPhase): boolean {
  switch (e.op) {
    case 'ref': {
      const p = phaseOf(e.stage);
      switch (e.outcome) {
        case 'succeeded':
          return p === 'Succeeded';
        case 'failed':
          return p === 'Failed';
        case 'skipped':
          return p === 'Skipped';
        case 'completed':
          return p !== 'Skipped';
        case 'any':
          return true;
      }
      return false;
    }
    case 'not':
      return !evalWhen(e.of, phaseOf);
    case 'and':
      return evalWhen(e.left, phaseOf) && evalWhen(e.right, phaseOf);
    case 'or':
      return evalWhen(e.left, phaseOf) || evalWhen(e.right, phaseOf);
  }
}
