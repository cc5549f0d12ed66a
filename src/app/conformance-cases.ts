/**
 * Which upstream e2e scheduling cases `sits conformance` runs, which it skips and why, and the small subset the
 * test suite runs on every `npm test` (ADR 0073; the results table is docs/conformance.md).
 */

/** Ginkgo focus of the full run: the scheduling families SITS must honour as kube-scheduler does. */
export const FULL_FOCUS = String.raw`\[sig-scheduling\] (SchedulerPredicates|SchedulerPreemption)|PodTopologySpread`;

/** A case left out, matched by a literal part of its ginkgo text, with the reason. */
export interface SkippedCase {
  readonly text: string;
  readonly reason: string;
}

/**
 * Cases that cannot pass without a real kubelet or a real node, whatever the scheduler does. Each reason says
 * what the case needs that the dev cluster (fake nodes, fake kubelet) does not have.
 */
export const SKIPPED_CASES: readonly SkippedCase[] = [
  {
    text: 'validates various priority Pods preempt expectedly with the async preemption',
    reason:
      "needs a kubelet's graceful termination: its victims run a preStop hook sleeping 79 s with an 80 s grace period, so they stay Terminating while the case looks at them; the fake kubelet removes a deleted pod at once (and the case is [Feature:SchedulerAsyncPreemption], outside the conformance set)",
  },
];

/**
 * The subset of `npm test` (src/app/conformance.e2e.test.ts): quick SchedulerPredicates cases (no 5-minute
 * "stays pending" waits, no saturation of every node) covering node selectors, required node affinity, taints
 * and topology spread.
 */
export const CI_CASES: readonly string[] = [
  'validates that NodeSelector is respected if not matching',
  'validates that NodeSelector is respected if matching',
  'validates that required NodeAffinity setting is respected if matching',
  'validates that taints-tolerations is respected if not matching',
  'validates 4 pods with MaxSkew=1 are evenly distributed into 2 nodes',
];
