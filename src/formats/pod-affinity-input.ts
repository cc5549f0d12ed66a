/**
 * Workload-file input for kube's inter-pod fields (ADR 0054): `affinity.podAffinity`/`podAntiAffinity` and
 * `topologySpreadConstraints`, with their Kubernetes names, checked as kube-apiserver validates them (errors
 * name the field), converted into the core model.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { LabelSelector, PodAffinityRules, PodAffinityTerm, TopologySpreadConstraint } from '../core/model/pod.ts';

const LabelRequirementT = Type.Object(
  {
    key: Type.String({ minLength: 1 }),
    operator: Type.Union(['In', 'NotIn', 'Exists', 'DoesNotExist'].map((o) => Type.Literal(o))),
    values: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);
export const LabelSelectorT = Type.Object(
  { matchLabels: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String())), matchExpressions: Type.Optional(Type.Array(LabelRequirementT)) },
  { additionalProperties: false },
);
const PodAffinityTermT = Type.Object(
  {
    labelSelector: Type.Optional(LabelSelectorT),
    namespaces: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    namespaceSelector: Type.Optional(LabelSelectorT),
    topologyKey: Type.String(),
    matchLabelKeys: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    mismatchLabelKeys: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  },
  { additionalProperties: false },
);
export const PodAffinityRulesT = Type.Object(
  {
    requiredDuringSchedulingIgnoredDuringExecution: Type.Optional(Type.Array(PodAffinityTermT)),
    preferredDuringSchedulingIgnoredDuringExecution: Type.Optional(
      Type.Array(Type.Object({ weight: Type.Integer({ minimum: 1, maximum: 100 }), podAffinityTerm: PodAffinityTermT }, { additionalProperties: false })),
    ),
  },
  { additionalProperties: false },
);
export const TopologySpreadT = Type.Object(
  {
    maxSkew: Type.Integer({ minimum: 1 }),
    topologyKey: Type.String(),
    whenUnsatisfiable: Type.Union([Type.Literal('DoNotSchedule'), Type.Literal('ScheduleAnyway')]),
    labelSelector: Type.Optional(LabelSelectorT),
    minDomains: Type.Optional(Type.Integer({ minimum: 1 })),
    nodeAffinityPolicy: Type.Optional(Type.Union([Type.Literal('Honor'), Type.Literal('Ignore')])),
    nodeTaintsPolicy: Type.Optional(Type.Union([Type.Literal('Honor'), Type.Literal('Ignore')])),
    matchLabelKeys: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  },
  { additionalProperties: false },
);

type Bad = (field: string, msg: string) => void;

function selector(s: Static<typeof LabelSelectorT>, field: string, bad: Bad): LabelSelector {
  (s.matchExpressions ?? []).forEach((r, i) => {
    const n = (r.values ?? []).length;
    if ((r.operator === 'In' || r.operator === 'NotIn') && n === 0) bad(`${field}.matchExpressions.${i}.values`, `${r.operator} needs at least one value`);
    if ((r.operator === 'Exists' || r.operator === 'DoesNotExist') && n > 0) bad(`${field}.matchExpressions.${i}.values`, `${r.operator} takes no values`);
  });
  return {
    ...(s.matchLabels === undefined ? {} : { matchLabels: s.matchLabels }),
    ...(s.matchExpressions === undefined
      ? {}
      : {
          matchExpressions: s.matchExpressions.map((r) => ({
            key: r.key,
            operator: r.operator as 'In',
            ...(r.values === undefined ? {} : { values: r.values }),
          })),
        }),
  };
}

/** Keys of matchLabelKeys may not also be keys of the selector (the apiserver rejects the pod). */
function labelKeys(keys: readonly string[] | undefined, sel: Static<typeof LabelSelectorT> | undefined, field: string, bad: Bad): void {
  if (keys === undefined) return;
  if (sel === undefined) bad(field, 'needs labelSelector (keys are merged into it)');
  const inSel = new Set([...Object.keys(sel?.matchLabels ?? {}), ...(sel?.matchExpressions ?? []).map((r) => r.key)]);
  keys.forEach((k, i) => {
    if (inSel.has(k)) bad(`${field}.${i}`, `"${k}" is also a key of labelSelector`);
  });
}

function term(t: Static<typeof PodAffinityTermT>, field: string, bad: Bad): PodAffinityTerm {
  if (t.topologyKey === '') bad(`${field}.topologyKey`, 'must not be empty');
  labelKeys(t.matchLabelKeys, t.labelSelector, `${field}.matchLabelKeys`, bad);
  labelKeys(t.mismatchLabelKeys, t.labelSelector, `${field}.mismatchLabelKeys`, bad);
  for (const k of t.matchLabelKeys ?? []) if ((t.mismatchLabelKeys ?? []).includes(k)) bad(`${field}.mismatchLabelKeys`, `"${k}" is also in matchLabelKeys`);
  return {
    topologyKey: t.topologyKey,
    ...(t.labelSelector === undefined ? {} : { labelSelector: selector(t.labelSelector, `${field}.labelSelector`, bad) }),
    ...(t.namespaces === undefined ? {} : { namespaces: t.namespaces }),
    ...(t.namespaceSelector === undefined ? {} : { namespaceSelector: selector(t.namespaceSelector, `${field}.namespaceSelector`, bad) }),
    ...(t.matchLabelKeys === undefined ? {} : { matchLabelKeys: t.matchLabelKeys }),
    ...(t.mismatchLabelKeys === undefined ? {} : { mismatchLabelKeys: t.mismatchLabelKeys }),
  };
}

export function podAffinityRules(r: Static<typeof PodAffinityRulesT> | undefined, field: string, bad: Bad): PodAffinityRules | undefined {
  if (r === undefined) return undefined;
  const required = r.requiredDuringSchedulingIgnoredDuringExecution?.map((t, i) =>
    term(t, `${field}.requiredDuringSchedulingIgnoredDuringExecution.${i}`, bad),
  );
  const preferred = r.preferredDuringSchedulingIgnoredDuringExecution?.map((p, i) => ({
    weight: p.weight,
    term: term(p.podAffinityTerm, `${field}.preferredDuringSchedulingIgnoredDuringExecution.${i}.podAffinityTerm`, bad),
  }));
  if ((required?.length ?? 0) === 0 && (preferred?.length ?? 0) === 0) return undefined;
  return {
    ...(required === undefined || required.length === 0 ? {} : { required }),
    ...(preferred === undefined || preferred.length === 0 ? {} : { preferred }),
  };
}

export function topologySpread(cs: readonly Static<typeof TopologySpreadT>[] | undefined, field: string, bad: Bad): TopologySpreadConstraint[] | undefined {
  if (cs === undefined || cs.length === 0) return undefined;
  const seen = new Set<string>();
  return cs.map((c, i) => {
    const f = `${field}.${i}`;
    if (c.topologyKey === '') bad(`${f}.topologyKey`, 'must not be empty');
    const pair = `${c.topologyKey}|${c.whenUnsatisfiable}`;
    if (seen.has(pair)) bad(f, `duplicate {topologyKey, whenUnsatisfiable} pair (${c.topologyKey}, ${c.whenUnsatisfiable})`);
    seen.add(pair);
    if (c.minDomains !== undefined && c.whenUnsatisfiable !== 'DoNotSchedule') bad(`${f}.minDomains`, 'may only be set with whenUnsatisfiable: DoNotSchedule');
    labelKeys(c.matchLabelKeys, c.labelSelector, `${f}.matchLabelKeys`, bad);
    return {
      maxSkew: c.maxSkew,
      topologyKey: c.topologyKey,
      whenUnsatisfiable: c.whenUnsatisfiable,
      ...(c.labelSelector === undefined ? {} : { labelSelector: selector(c.labelSelector, `${f}.labelSelector`, bad) }),
      ...(c.minDomains === undefined ? {} : { minDomains: c.minDomains }),
      ...(c.nodeAffinityPolicy === undefined ? {} : { nodeAffinityPolicy: c.nodeAffinityPolicy }),
      ...(c.nodeTaintsPolicy === undefined ? {} : { nodeTaintsPolicy: c.nodeTaintsPolicy }),
      ...(c.matchLabelKeys === undefined ? {} : { matchLabelKeys: c.matchLabelKeys }),
    };
  });
}
