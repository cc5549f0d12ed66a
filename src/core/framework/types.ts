/**
 * Extension points of the scheduling framework (after kube-scheduler's): a plugin is a named object that
 * implements any of them. Filter and score are pure functions of (pod, node state); because they see
 * nothing else, their results can be cached per node version and per pod shape (see score-index.ts).
 */
import type { PodSpec, GangSpec } from '../model/pod.ts';
import type { NodeState, ClusterState } from '../snapshot/cluster-state.ts';
import type { ReasonCode } from './reasons.ts';
import type { Rng } from '../ports.ts';
import type { NetworkModel, TrainingModel } from '../estimate/step-time.ts';

export type StatusCode = 'Success' | 'Unschedulable' | 'UnschedulableAndUnresolvable' | 'Wait' | 'Skip' | 'Error';
export interface Status {
  readonly code: StatusCode;
  readonly reasons?: readonly string[];
  readonly plugin?: string;
}
export const SUCCESS: Status = { code: 'Success' };

/** Something waiting in the scheduling queue. */
export interface QueuedUnit {
  readonly key: string;
  readonly priority: number;
  readonly queue: string;
  /** Arrival order (virtual or real ms, then sequence). */
  readonly arrivalMs: number;
  readonly seq: number;
}

/** What a plugin may see of the cycle besides pod and node: read-only cluster and a seeded RNG. */
export interface CycleContext {
  readonly state: ClusterState;
  readonly rng: Rng;
}

export interface Plugin {
  readonly name: string;
  /** Orders the scheduling queue: negative when a goes first. */
  queueSort?(a: QueuedUnit, b: QueuedUnit): number;
  /** Cluster-wide checks before any node is looked at (e.g. no node could ever hold the pod). */
  preFilter?(pod: PodSpec, ctx: CycleContext): Status;
  /**
   * Returns Reason.Fits (0) or the reason the node cannot take the pod. Pure; like `score`, it may not read
   * the node's location (where the node is, is the gang search's business), nor its name unless it says so
   * for the pod (`readsNodeName`, ADR 0050): nodes with equal specs otherwise and equal state must get equal
   * results, so that a score-index build reuses them (ADR 0001).
   */
  filter?(pod: PodSpec, node: NodeState): ReasonCode;
  /**
   * Node score 0..100 (higher is better). Must depend only on the pod's shape and the node's state (not its
   * name or location), so that it can be cached per node version and shared by nodes of one spec class;
   * `normalize` is not offered for that reason (see ADR 0002).
   */
  score?(pod: PodSpec, node: NodeState): number;
  /**
   * kube-scheduler's PreScore Skip: false when `score` would give every node of the state the same value for
   * this pod shape (no preferred terms, no soft taints anywhere), so the score index leaves it out. Decided
   * once per shape index; absent = always scored.
   */
  preScore?(pod: PodSpec, state: ClusterState): boolean;
  /**
   * A score that depends on other pods' topology domains (kube's PodTopologySpread and InterPodAffinity scores,
   * ADR 0054), so no function of the pod and the node alone: the score index computes it in its inter-pod
   * overlay from the shape's domain counts (InterPodState.spreadScore / preferredScore) and weighs it by this
   * plugin's weight in the profile. A scorer has this or `score`.
   */
  readonly interPodScore?: 'spread' | 'affinity';
  /**
   * True when this pod's filter or score reads the node's name (kube's `matchFields: metadata.name`): the
   * score index then evaluates every node instead of sharing results within a spec class (ADR 0049).
   */
  readsNodeName?(pod: PodSpec): boolean;
  /**
   * Chooses the GPU devices on the chosen node; undefined = cannot. With `allowed`, only GPUs g with
   * `allowed[g] === 1` may be chosen (e.g. one NVLink island, for a gang that must stay inside it); the
   * rules are otherwise the same. The node's score never depends on `allowed`: only the choice within it.
   */
  pickGpus?(pod: PodSpec, node: NodeState, ctx: CycleContext, allowed?: GpuMask): readonly number[] | undefined;
  /** Called after a tentative allocation in a statement; a failure rolls the gang back. */
  reserve?(pod: PodSpec, node: NodeState, ctx: CycleContext): Status;
  unreserve?(pod: PodSpec, node: NodeState, ctx: CycleContext): void;
  /** Gang-level gate after every member is reserved: allow, wait (live: until members arrive) or reject. */
  permit?(gang: GangSpec, placed: number, ctx: CycleContext): Status;
}

/**
 * The extension points a host may time (kube-scheduler's scheduler_framework_extension_point_duration_seconds).
 * Filter and Score are one point here: the score index filters and scores a node in one pass (score-index.ts).
 */
export type ExtensionPoint = 'PreFilter' | 'FilterScore' | 'PickGpus' | 'Reserve' | 'Permit';
/** The host's monotonic clock (ms; the core reads no clock of its own) and where each point's time for one pod or gang goes. */
export interface ExtensionTimer {
  readonly nowMs: () => number;
  readonly observe: (point: ExtensionPoint, seconds: number) => void;
}

/** GPUs of one node a pick may use, by device index: 1 = allowed (see `Plugin.pickGpus`). */
export type GpuMask = ArrayLike<number>;

export type Selector = 'best' | 'random' | 'round-robin';

export interface WeightedScorer {
  readonly plugin: Plugin;
  readonly weight: number;
}

/** A named, fully resolved profile. */
export interface Profile {
  readonly name: string;
  readonly description: string;
  readonly queueSort: Plugin;
  readonly preFilters: readonly Plugin[];
  readonly filters: readonly Plugin[];
  readonly scorers: readonly WeightedScorer[];
  readonly devicePicker: Plugin;
  readonly reserves: readonly Plugin[];
  readonly permits: readonly Plugin[];
  readonly selector: Selector;
  /** Gang topology search: try the smallest domains first (topology-aware) or the whole cluster at once. */
  readonly gangSearch: 'topology' | 'flat';
  /** kube's InterPodAffinityArgs.hardPodAffinityWeight (absent: 1). */
  readonly hardPodAffinityWeight?: number;
  /** kube's PodTopologySpreadArgs: the cluster default constraints (absent: the System defaults; ADR 0077). */
  readonly spreadDefaults?: SpreadDefaults;
  /**
   * How a gang's placement is chosen among the candidate domains of a topology level (ADR 0105): absent, the
   * first that fits in best-fit order (link classes rank the GPU sets inside a node); `step-time`, the one with
   * the shortest predicted training step (core/estimate/step-time.ts); `step-aware` (sits's default, ADR 0188),
   * step time and fit weighed together, with a bounded wait for a better placement (framework/gang-choice.ts).
   */
  readonly gangChoice?: 'step-time' | 'step-aware';
  /** What the step-time choice assumes: the network between nodes and each gang's training job. */
  readonly stepTimeArgs?: StepTimeArgs;
  /** The queue cycle's actions in order, as plugins are named (absent: CYCLE_ACTION_NAMES; src/core/actions/queue-cycle.ts). */
  readonly actions?: readonly CycleActionName[];
}

/** The queue cycle's actions, in the default order: admission opens each job's attempt, so it comes first. */
export const CYCLE_ACTION_NAMES = ['admit', 'allocate', 'preempt', 'reserve'] as const;
export type CycleActionName = (typeof CYCLE_ACTION_NAMES)[number];

/** What is wrong with a list of cycle action names, or undefined. */
export function cycleActionsProblem(names: readonly string[]): string | undefined {
  const unknown = names.find((n) => !(CYCLE_ACTION_NAMES as readonly string[]).includes(n));
  if (unknown !== undefined) return `unknown cycle action "${unknown}" (known: ${CYCLE_ACTION_NAMES.join(', ')})`;
  if (names[0] !== 'admit')
    return `the cycle's actions must begin with admit (it opens each job's attempt), not ${names[0] === undefined ? 'nothing' : `"${names[0]}"`}`;
  if (new Set(names).size !== names.length) return `an action is named twice: ${names.join(', ')}`;
  return undefined;
}

/** Inputs of the step-time gang choice; absent fields take the model's defaults. */
export interface StepTimeArgs {
  readonly network?: NetworkModel;
  readonly modelOf?: (gang: GangSpec) => TrainingModel | undefined;
}

/** One cluster default spread constraint (kube's defaultConstraints: no selector; the pod's owners give it). */
export interface DefaultSpreadConstraint {
  readonly maxSkew: number;
  readonly topologyKey: string;
  readonly whenUnsatisfiable: 'DoNotSchedule' | 'ScheduleAnyway';
}

/** kube's PodTopologySpreadArgs.defaultingType with its constraints: `System` = the built-in ones below. */
export interface SpreadDefaults {
  readonly defaultingType: 'System' | 'List';
  readonly constraints: readonly DefaultSpreadConstraint[];
}

/** kube-scheduler's built-in defaults (`systemDefaultConstraints`): hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway. */
export const SYSTEM_DEFAULT_SPREAD: SpreadDefaults = {
  defaultingType: 'System',
  constraints: [
    { topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', maxSkew: 3 },
    { topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', maxSkew: 5 },
  ],
};
