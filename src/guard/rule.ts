/**
 * Guard rails (issue 16): the known ML-on-Kubernetes mistakes of seed 001 as rules. A rule is a pure function
 * over one object and the set it was submitted with; the same rules run in `sits lint` (files, folders,
 * stdin) and in the admission webhook (`sits webhook`), so a finding reads the same in CI and at `kubectl apply`.
 */

export type Severity = 'error' | 'warning';

/** Path of a field inside an object, e.g. ['spec', 'template', 'spec', 'containers', 0, 'env', 2]. */
export type FieldPath = readonly (string | number)[];

/** A Kubernetes object as decoded from YAML or JSON; nothing about its shape is trusted. */
export interface KubeObject {
  readonly apiVersion?: unknown;
  readonly kind?: unknown;
  readonly metadata?: unknown;
  readonly [field: string]: unknown;
}

/** What the cluster looks like, where a rule needs it (the webhook knows it from its informers; lint from flags). */
export interface ClusterFacts {
  /** GPU models present on the cluster's nodes (e.g. ['A100-SXM4-80GB', 'L4']); more than one = mixed cluster. */
  readonly gpuModels?: readonly string[];
  /** Some nodes have RDMA (InfiniBand/RoCE) devices. */
  readonly rdma?: boolean;
  /** Scheduler names SITS serves (default ['sits-scheduler']). */
  readonly schedulerNames: readonly string[];
}

export interface RuleContext {
  /**
   * Every object submitted together: the files of one lint run, or for the webhook the reviewed object
   * plus the related objects it knows (its informer caches). Cross-object rules (an HPA targeting a training
   * Deployment, a gang split across schedulers, a ClusterIP rendezvous Service) look here.
   */
  readonly objects: readonly KubeObject[];
  readonly cluster: ClusterFacts;
}

/** One thing a rule found: what is wrong and what to do instead, at a field of the object. */
export interface RuleHit {
  readonly message: string;
  readonly path: FieldPath;
}

export interface Rule {
  /** kebab-case, stable: it names the rule in findings, disable annotations, metrics and docs/rules.md. */
  readonly id: string;
  /** error denies (webhook enforce mode) and fails `sits lint`; warning warns. */
  readonly severity: Severity;
  /** The seed section the rule comes from, e.g. '001 §4.1'. */
  readonly seed: string;
  /** One line for the rule list. */
  readonly title: string;
  /** Why it matters and what to do instead (markdown, a few sentences), for docs/rules.md. */
  readonly rationale: string;
  /** Kinds the rule looks at (`Pod`, `Deployment`, `TrainingJob`, …); the engine skips the rest. */
  readonly kinds: readonly string[];
  /**
   * Positive and negative fixtures (multi-document YAML): `bad` must produce at least one hit of this rule and
   * `good` none (tested for every rule in rules.test.ts).
   */
  readonly fixtures: { readonly bad: string; readonly good: string };
  check(obj: KubeObject, ctx: RuleContext): readonly RuleHit[];
}

/** A hit attributed to its rule and object, as the engine reports it. */
export interface Finding {
  readonly rule: string;
  readonly severity: Severity;
  readonly message: string;
  readonly path: FieldPath;
  /** Index of the object in RuleContext.objects. */
  readonly object: number;
}

/** Per-object opt-out: `lint.sits2026.dev/disable: "rule-a, rule-b"` (or `all`) on the object's annotations. */
export const DISABLE_ANNOTATION = 'lint.sits2026.dev/disable';
