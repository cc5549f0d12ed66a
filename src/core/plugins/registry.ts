/**
 * Explicit plugin registration and named profiles. Every plugin name lives in this file; an unknown name
 * in a profile is an error returned to the caller (a start-up error for hosts), never a log line.
 */
import { err, ok, type Result } from '../result.ts';
import { fitPlugin } from './fit/fit.ts';
import { bestFitGpuPlugin, randomGpuPlugin } from './baselines/gpu-pick.ts';
import { bestFitPlugin, dotProdPlugin, gpuClusteringPlugin, gpuPackingPlugin } from './baselines/paper-scores.ts';
import { balancedAllocationPlugin, leastAllocatedPlugin } from './baselines/kube-default.ts';
import { fgdPlugin } from './fgd/fgd.ts';
import { sitsFragPlugin } from './fgd/sits-frag.ts';
import type { TypicalShape } from '../estimate/typical-shapes.ts';
import { pickTopologyGpus } from './topology/gpu-topology-pick.ts';
import { lowestFreeGpus } from './baselines/gpu-pick.ts';
import { nodeAffinityPlugin } from './node-affinity/node-affinity.ts';
import { taintTolerationPlugin } from './taint-toleration/taint-toleration.ts';
import {
  cycleActionsProblem,
  type CycleActionName,
  type Plugin,
  type Profile,
  type QueuedUnit,
  type Selector,
  type SpreadDefaults,
} from '../framework/types.ts';

export const PLUGIN_NAMES = [
  'priority-fifo',
  'fit',
  'least-allocated',
  'balanced-allocation',
  'dotprod',
  'gpu-clustering',
  'gpu-packing',
  'best-fit',
  'fgd',
  'sits-frag',
  'gpu-best-fit',
  'gpu-random',
  'gpu-first-fit',
  'gpu-topology',
  'node-affinity',
  'taint-toleration',
  'pod-topology-spread',
  'inter-pod-affinity',
] as const;
export type PluginName = (typeof PLUGIN_NAMES)[number];

/** What plugins may be configured with: the expected workload for fragmentation-aware scoring. */
export interface PluginEnv {
  readonly typicalShapes: readonly TypicalShape[];
}

/** Priority first, then arrival, then submission sequence: deterministic FIFO within a priority. */
export function priorityFifo(a: QueuedUnit, b: QueuedUnit): number {
  return b.priority - a.priority || a.arrivalMs - b.arrivalMs || a.seq - b.seq;
}

const FACTORIES: Readonly<Record<PluginName, (env: PluginEnv) => Plugin>> = {
  'priority-fifo': () => ({ name: 'priority-fifo', queueSort: priorityFifo }),
  fit: fitPlugin,
  'least-allocated': leastAllocatedPlugin,
  'balanced-allocation': balancedAllocationPlugin,
  dotprod: dotProdPlugin,
  'gpu-clustering': gpuClusteringPlugin,
  'gpu-packing': gpuPackingPlugin,
  'best-fit': bestFitPlugin,
  fgd: (env) => fgdPlugin(env.typicalShapes),
  'sits-frag': (env) => sitsFragPlugin(env.typicalShapes),
  'gpu-best-fit': bestFitGpuPlugin,
  'gpu-random': randomGpuPlugin,
  // The kubelet device plugin default: the lowest-index free devices.
  'gpu-first-fit': () => ({
    name: 'gpu-first-fit',
    pickGpus: (pod, node, _ctx, allowed) => lowestFreeGpus(node, pod.request.gpuCount, pod.request.gpuMilli, allowed),
  }),
  'node-affinity': nodeAffinityPlugin,
  'taint-toleration': taintTolerationPlugin,
  // Scored by the score index's inter-pod overlay from the shape's domain counts (ADR 0054), with their weights.
  'pod-topology-spread': () => ({ name: 'pod-topology-spread', interPodScore: 'spread' }),
  'inter-pod-affinity': () => ({ name: 'inter-pod-affinity', interPodScore: 'affinity' }),
  'gpu-topology': () => ({
    name: 'gpu-topology',
    pickGpus: (pod, node, _ctx, allowed) =>
      pod.request.gpuMilli < 1000 ? lowestFreeGpus(node, 1, pod.request.gpuMilli, allowed) : pickTopologyGpus(pod, node, allowed),
  }),
};

export interface ProfileConfig {
  readonly name: string;
  readonly description: string;
  readonly queueSort: string;
  readonly filters: readonly string[];
  readonly scorers: readonly { readonly name: string; readonly weight: number }[];
  readonly devicePicker: string;
  readonly selector: Selector;
  readonly gangSearch: 'topology' | 'flat';
  /** kube's InterPodAffinityArgs.hardPodAffinityWeight (absent: 1; ADR 0077). */
  readonly hardPodAffinityWeight?: number;
  /** kube's PodTopologySpreadArgs defaults (absent: System; ADR 0077). */
  readonly spreadDefaults?: SpreadDefaults;
  /** Choose a gang's placement by predicted step time (absent: first fit by link classes; ADR 0105). */
  readonly gangChoice?: 'step-time' | 'step-aware';
  /** The queue cycle's actions in order (absent: admit, allocate, preempt, reserve; ADR 0185). */
  readonly actions?: readonly string[];
}

export type ProfileError =
  | { readonly code: 'UnknownPlugin'; readonly name: string; readonly profile: string; readonly field: string }
  | { readonly code: 'MissingExtensionPoint'; readonly name: string; readonly profile: string; readonly point: string }
  | { readonly code: 'UnknownProfile'; readonly profile: string }
  | { readonly code: 'BadActions'; readonly profile: string; readonly problem: string };

export function formatProfileError(e: ProfileError): string {
  switch (e.code) {
    case 'UnknownPlugin':
      return `profile ${e.profile}: ${e.field}: unknown plugin "${e.name}" (known: ${PLUGIN_NAMES.join(', ')})`;
    case 'MissingExtensionPoint':
      return `profile ${e.profile}: plugin "${e.name}" does not implement ${e.point}`;
    case 'UnknownProfile':
      return `unknown profile "${e.profile}" (known: ${PROFILE_NAMES.join(', ')})`;
    case 'BadActions':
      return `profile ${e.profile}: actions: ${e.problem}`;
  }
}

function isPluginName(n: string): n is PluginName {
  return (PLUGIN_NAMES as readonly string[]).includes(n);
}

/** Resolves a profile configuration into plugin instances. */
export function buildProfile(cfg: ProfileConfig, env: PluginEnv): Result<Profile, ProfileError> {
  const instances = new Map<string, Plugin>();
  const get = (name: string, field: string, point: keyof Plugin, alt?: keyof Plugin): Result<Plugin, ProfileError> => {
    if (!isPluginName(name)) return err({ code: 'UnknownPlugin', name, profile: cfg.name, field });
    let p = instances.get(name);
    if (p === undefined) {
      p = FACTORIES[name](env);
      instances.set(name, p);
    }
    if (p[point] === undefined && (alt === undefined || p[alt] === undefined)) return err({ code: 'MissingExtensionPoint', name, profile: cfg.name, point });
    return ok(p);
  };
  const qs = get(cfg.queueSort, 'queueSort', 'queueSort');
  if (!qs.ok) return qs;
  const filters: Plugin[] = [];
  for (const f of cfg.filters) {
    const p = get(f, 'filters', 'filter');
    if (!p.ok) return p;
    filters.push(p.value);
  }
  const scorers: { plugin: Plugin; weight: number }[] = [];
  for (const s of cfg.scorers) {
    const p = get(s.name, 'scorers', 'score', 'interPodScore');
    if (!p.ok) return p;
    scorers.push({ plugin: p.value, weight: s.weight });
  }
  const dp = get(cfg.devicePicker, 'devicePicker', 'pickGpus');
  if (!dp.ok) return dp;
  const actionsProblem = cfg.actions === undefined ? undefined : cycleActionsProblem(cfg.actions);
  if (actionsProblem !== undefined) return err({ code: 'BadActions', profile: cfg.name, problem: actionsProblem });
  const all = [...instances.values()];
  return ok({
    name: cfg.name,
    description: cfg.description,
    queueSort: qs.value,
    preFilters: all.filter((p) => p.preFilter !== undefined),
    filters,
    scorers,
    devicePicker: dp.value,
    reserves: all.filter((p) => p.reserve !== undefined),
    permits: all.filter((p) => p.permit !== undefined),
    selector: cfg.selector,
    gangSearch: cfg.gangSearch,
    ...(cfg.hardPodAffinityWeight === undefined ? {} : { hardPodAffinityWeight: cfg.hardPodAffinityWeight }),
    ...(cfg.spreadDefaults === undefined ? {} : { spreadDefaults: cfg.spreadDefaults }),
    ...(cfg.gangChoice === undefined ? {} : { gangChoice: cfg.gangChoice }),
    ...(cfg.actions === undefined ? {} : { actions: cfg.actions as readonly CycleActionName[] }),
  });
}

const base = { queueSort: 'priority-fifo', filters: ['fit'], selector: 'best' as Selector, gangSearch: 'flat' as const };
/**
 * kube-scheduler's soft preferences with its default weights: preferred node affinity ×2,
 * PreferNoSchedule taints ×3, ScheduleAnyway spread ×2, preferred pod (anti-)affinity ×2. Both skip (PreScore) pods and clusters without them, so they change nothing else.
 */
const KUBE_PREFERENCES = [
  { name: 'node-affinity', weight: 2 },
  { name: 'taint-toleration', weight: 3 },
  { name: 'pod-topology-spread', weight: 2 },
  { name: 'inter-pod-affinity', weight: 2 },
] as const;
const withPreferences = (
  scorers: readonly { readonly name: string; readonly weight: number }[],
): readonly { readonly name: string; readonly weight: number }[] => [...scorers, ...KUBE_PREFERENCES];

export const PROFILES: Readonly<Record<string, ProfileConfig>> = {
  sits: {
    ...base,
    name: 'sits',
    description: 'SITS default: fit, fragmentation-aware scoring for the expected workload, topology-aware gangs and GPU choice',
    scorers: withPreferences([{ name: 'sits-frag', weight: 1 }]),
    devicePicker: 'sits-frag',
    gangSearch: 'topology',
    // Gangs weigh predicted step time with fit and may wait a bounded time for a better placement (ADR 0188).
    gangChoice: 'step-aware',
  },
  // The same as sits, with gangs placed where their predicted training step is shortest (ADR 0105).
  'sits-step': {
    ...base,
    name: 'sits-step',
    description: 'sits, choosing among a gang’s candidate placements by predicted training step time',
    scorers: withPreferences([{ name: 'sits-frag', weight: 1 }]),
    devicePicker: 'sits-frag',
    gangSearch: 'topology',
    gangChoice: 'step-time',
  },
  'kube-default': {
    ...base,
    name: 'kube-default',
    description: 'kube-scheduler-like: LeastAllocated + BalancedAllocation over CPU and memory; kubelet first-fit GPUs',
    scorers: withPreferences([
      { name: 'least-allocated', weight: 1 },
      { name: 'balanced-allocation', weight: 1 },
    ]),
    devicePicker: 'gpu-first-fit',
  },
  random: {
    ...base,
    name: 'random',
    description: 'uniformly random feasible node and fitting GPU',
    scorers: [],
    selector: 'random',
    devicePicker: 'gpu-random',
  },
  'round-robin': {
    ...base,
    name: 'round-robin',
    description: 'next feasible node after the last one chosen',
    scorers: [],
    selector: 'round-robin',
    devicePicker: 'gpu-best-fit',
  },
  dotprod: {
    ...base,
    name: 'dotprod',
    description: 'FGD paper baseline: smallest dot product of free and requested',
    scorers: withPreferences([{ name: 'dotprod', weight: 1 }]),
    devicePicker: 'gpu-best-fit',
  },
  'gpu-clustering': {
    ...base,
    name: 'gpu-clustering',
    description: 'FGD paper baseline: nodes running the same kind of GPU pod first',
    scorers: withPreferences([{ name: 'gpu-clustering', weight: 1 }]),
    devicePicker: 'gpu-best-fit',
  },
  'gpu-packing': {
    ...base,
    name: 'gpu-packing',
    description: 'FGD paper baseline: partly used GPUs, then used nodes, then idle nodes',
    scorers: withPreferences([{ name: 'gpu-packing', weight: 1 }]),
    devicePicker: 'gpu-best-fit',
  },
  'best-fit': {
    ...base,
    name: 'best-fit',
    description: 'FGD paper baseline: least CPU and GPU left after placement',
    scorers: withPreferences([{ name: 'best-fit', weight: 1 }]),
    devicePicker: 'gpu-best-fit',
  },
  fgd: {
    ...base,
    name: 'fgd',
    description: 'FGD (ATC ’23): least growth of fragmentation for the expected workload',
    scorers: withPreferences([{ name: 'fgd', weight: 1 }]),
    devicePicker: 'fgd',
  },
};

export const PROFILE_NAMES = Object.keys(PROFILES);

/** Policy names of the FGD benchmark's command line, mapped to profiles. */
export const PROFILE_ALIASES: Readonly<Record<string, string>> = {
  gpuclustering: 'gpu-clustering',
  gpupacking: 'gpu-packing',
  bestfit: 'best-fit',
  default: 'kube-default',
  roundrobin: 'round-robin',
};

/** The configuration of a named profile (aliases allowed); undefined when there is none. */
export function profileConfig(name: string): ProfileConfig | undefined {
  return PROFILES[PROFILE_ALIASES[name] ?? name];
}

export function resolveProfile(name: string, env: PluginEnv): Result<Profile, ProfileError> {
  const cfg = profileConfig(name);
  if (cfg === undefined) return err({ code: 'UnknownProfile', profile: name });
  return buildProfile(cfg, env);
}
