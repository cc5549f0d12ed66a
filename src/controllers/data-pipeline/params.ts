/**
 * Parameters between stages, after Argo: a stage reports outputs as a JSON object of strings (its container's
 * termination message, or the `ai.sits2026.dev/outputs` annotation of its pod or workload), and later stages use
 * them as `{{steps.NAME.outputs.parameters.X}}` in any string of their container, podTemplate, workload or adapter spec.
 */

export type Substitution = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: string };

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/**
 * Replaces every `{{expr}}` in the strings of `value` (deeply) with `lookup(expr)`. The first expression that
 * resolves to nothing is an error naming its path under `path` (e.g. `spec.stages[2].container.args[1]`).
 */
export function substitute(value: unknown, path: string, lookup: (expr: string) => string | undefined): Substitution {
  let error: string | undefined;
  const walk = (v: unknown, at: string): unknown => {
    if (error !== undefined) return v;
    if (typeof v === 'string') {
      return v.replace(PLACEHOLDER, (whole, expr: string) => {
        const r = lookup(expr);
        if (r === undefined) {
          error ??= `${at}: ${whole} names no known value`;
          return whole;
        }
        return r;
      });
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, `${at}[${i}]`));
    if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, `${at}.${k}`)]));
    return v;
  };
  const out = walk(value, path);
  return error === undefined ? { ok: true, value: out } : { ok: false, error };
}

const MAX_PARAMETERS = 32;
const MAX_VALUE = 4096;

/**
 * Output parameters from a termination message or annotation: a JSON object whose values are strings, numbers or
 * booleans (kept as strings). Anything else yields no parameters (a plain log line in the message is not an error).
 */
export function parseOutputs(text: string | undefined): Record<string, string> {
  if (text === undefined || text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed).slice(0, MAX_PARAMETERS)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = String(v).slice(0, MAX_VALUE);
  }
  return out;
}
