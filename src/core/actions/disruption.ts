/**
 * PodDisruptionBudgets as preemption sees them (kube-scheduler's DefaultPreemption, ADR 0059): a budget
 * covers some pods and allows so many more disruptions; a victim set violates it by the pods it takes
 * beyond that. Hosts say which pods a budget selects and how many disruptions it allows (the live
 * scheduler computes it as the disruption controller does, the simulator from its scenario file).
 */

export interface DisruptionBudget {
  /** `namespace/name`, for messages. */
  readonly name: string;
  /** Pods the budget's selector matches. */
  readonly podIds: ReadonlySet<string>;
  /** Disruptions it allows now (status.disruptionsAllowed); 0 = none. */
  readonly disruptionsAllowed: number;
}

export interface Violations {
  /** Victim pods whose eviction would take a budget below zero (kube's `numPDBViolations`). */
  readonly count: number;
  /** The budgets they would break, sorted. */
  readonly budgets: readonly string[];
}

const NONE: Violations = { count: 0, budgets: [] };

/**
 * kube's filterPodsWithPDBViolation over `victims` in order: each pod takes one disruption from every budget
 * covering it; a pod that takes a budget below zero is a violating victim.
 */
export function pdbViolations(victims: readonly string[], budgets: readonly DisruptionBudget[]): Violations {
  if (budgets.length === 0) return NONE;
  const left = budgets.map((b) => b.disruptionsAllowed);
  let count = 0;
  const broken = new Set<string>();
  for (const pod of victims) {
    let violating = false;
    for (let i = 0; i < budgets.length; i++) {
      const b = budgets[i] as DisruptionBudget;
      if (!b.podIds.has(pod)) continue;
      left[i] = (left[i] as number) - 1;
      if ((left[i] as number) < 0) {
        violating = true;
        broken.add(b.name);
      }
    }
    if (violating) count++;
  }
  return count === 0 ? NONE : { count, budgets: [...broken].sort() };
}

/**
 * What a preemption plan costs, compared in order (kube's pickOneNodeForPreemption, with SITS's lost work in
 * place of kube's start-time tie-breaks): fewest PDB violations, lowest highest-victim priority, fewest
 * victims, least work lost. Without budgets the first key is 0 for every plan: the order SITS had before.
 */
export type PreemptionCost = readonly [pdbViolations: number, maxVictimPriority: number, victims: number, lostWork: number];

export function lessCost(a: PreemptionCost, b: PreemptionCost): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number);
  return false;
}

/** Disruptions a budget allows (kube's disruption controller): healthy pods above the desired healthy count, never below 0. */
export function disruptionsAllowed(
  spec: { readonly minAvailable?: number | string; readonly maxUnavailable?: number | string },
  expectedPods: number,
  healthyPods: number,
): number {
  // kube rounds percentages up for both fields (GetScaledValueFromIntOrPercent(..., true)).
  const scaled = (v: number | string): number => (typeof v === 'number' ? v : Math.ceil((Number(v.replace(/%$/, '')) * expectedPods) / 100));
  let desiredHealthy: number;
  if (spec.maxUnavailable !== undefined) desiredHealthy = Math.max(0, expectedPods - scaled(spec.maxUnavailable));
  else if (spec.minAvailable !== undefined) desiredHealthy = scaled(spec.minAvailable);
  else desiredHealthy = 0;
  return expectedPods <= 0 ? 0 : Math.max(0, healthyPods - desiredHealthy);
}

/** `10%`, `50%`: the percent form of an IntOrString budget field. */
export const isPercent = (v: string): boolean => /^\d+%$/.test(v);
