/**
 * Runs the rules over a set of objects. The same function serves `sits lint` and the admission webhook.
 * A rule that throws is a bug in that rule, not in the user's object: it becomes a `rule-failed` warning
 * naming the rule, so one broken rule never denies an object or stops a lint run.
 */
import { DISABLE_ANNOTATION, type ClusterFacts, type Finding, type KubeObject, type Rule, type RuleContext } from './rule.ts';

export interface LintOptions {
  readonly cluster?: ClusterFacts;
  /** Rule ids switched off for this run (`sits lint --disable`, the webhook's `--disable`). */
  readonly disabled?: ReadonlySet<string>;
  /** Only look at these objects (indices into `objects`); the others are context. Default: all. */
  readonly only?: readonly number[];
}

export const DEFAULT_CLUSTER: ClusterFacts = { schedulerNames: ['sits-scheduler'] };

/** Rule ids an object opts out of through its disable annotation ('all' = every rule). */
export function disabledBy(obj: KubeObject): ReadonlySet<string> {
  const md = obj.metadata;
  if (typeof md !== 'object' || md === null) return new Set();
  const ann = (md as { annotations?: unknown }).annotations;
  if (typeof ann !== 'object' || ann === null) return new Set();
  const v = (ann as Record<string, unknown>)[DISABLE_ANNOTATION];
  if (typeof v !== 'string') return new Set();
  return new Set(
    v
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );
}

export function lintObjects(objects: readonly KubeObject[], rules: readonly Rule[], opts: LintOptions = {}): Finding[] {
  const ctx: RuleContext = { objects, cluster: opts.cluster ?? DEFAULT_CLUSTER };
  const byKind = new Map<string, Rule[]>();
  for (const r of rules) {
    if (opts.disabled?.has(r.id) === true) continue;
    for (const k of r.kinds) {
      const list = byKind.get(k);
      if (list === undefined) byKind.set(k, [r]);
      else list.push(r);
    }
  }
  const findings: Finding[] = [];
  const indices = opts.only ?? objects.map((_, i) => i);
  for (const i of indices) {
    const obj = objects[i];
    if (obj === undefined || typeof obj !== 'object' || obj === null) continue;
    const kind = typeof obj.kind === 'string' ? obj.kind : '';
    const candidates = byKind.get(kind);
    if (candidates === undefined) continue;
    const off = disabledBy(obj);
    if (off.has('all')) continue;
    for (const r of candidates) {
      if (off.has(r.id)) continue;
      try {
        for (const h of r.check(obj, ctx)) findings.push({ rule: r.id, severity: r.severity, message: h.message, path: h.path, object: i });
      } catch (e) {
        findings.push({
          rule: 'rule-failed',
          severity: 'warning',
          message: `rule ${r.id} failed on this object: ${(e as Error).message}`,
          path: [],
          object: i,
        });
      }
    }
  }
  return findings;
}

/**
 * Rule ids from `--disable` values (comma lists, repeatable), each checked against the rule set: a typo must
 * not silently keep a rule on. Throws with the unknown ids and the valid ones.
 */
export function disabledRuleIds(values: readonly string[], rules: readonly Rule[]): Set<string> {
  const ids = new Set(
    values.flatMap((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
  );
  const known = new Set(rules.map((r) => r.id));
  const unknown = [...ids].filter((id) => !known.has(id));
  if (unknown.length > 0) {
    const valid = rules.length === 0 ? '(no rules are registered)' : [...known].sort().join(', ');
    throw new Error(`unknown rule ${unknown.map((u) => `"${u}"`).join(', ')}; valid rule ids: ${valid}`);
  }
  return ids;
}
