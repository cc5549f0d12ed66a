/**
 * One run of the FGD experiment: a policy (any core profile), a trace and a seed. Pods are submitted one
 * at a time in workload order and scheduled before the next; a pod that fits nowhere is dropped (no retry,
 * no preemption). The core's Scheduler makes every decision; this file only feeds pods and measures.
 */
import { simAppOrThrow } from '../../app/sim-app.ts';
import type { Profile } from '../../core/framework/types.ts';
import type { NodeState } from '../../core/snapshot/cluster-state.ts';
import { FragCache } from '../../core/plugins/fgd/fgd.ts';
import type { TypicalShape } from '../../core/estimate/typical-shapes.ts';
import type { TraceNode, TracePod } from '../../sim/trace/types.ts';
import { FgdMeter, type FgdBuckets } from './metrics.ts';
import { capacityGpuMilli, fgdWorkload, toNodeSpec, traceTypicalShapes } from './workload.ts';

/** A trace prepared once for many runs. */
export interface FgdTrace {
  /** Pod list file basename, e.g. `openb_pod_list_default.csv`. */
  readonly name: string;
  readonly nodes: readonly TraceNode[];
  readonly pods: readonly TracePod[];
  readonly typical: readonly TypicalShape[];
  readonly capacityMilli: number;
}

export function prepareFgdTrace(name: string, nodes: readonly TraceNode[], pods: readonly TracePod[]): FgdTrace {
  return { name, nodes, pods, typical: traceTypicalShapes(pods), capacityMilli: capacityGpuMilli(nodes) };
}

export interface FailedShape {
  /** `cpu|milli|count|models` as in the typical-shape key. */
  readonly shape: string;
  readonly pods: number;
  readonly gpuMilli: number;
}

export interface FgdRun {
  readonly policy: string;
  readonly seed: number;
  readonly pods: number;
  readonly placed: number;
  readonly runMs: number;
  readonly buckets: FgdBuckets;
  /** Pods that failed before arrived reached 100 % of capacity, by shape, most GPU first. */
  readonly failedTo100: readonly FailedShape[];
}

export class PolicyError extends Error {
  override readonly name = 'PolicyError';
}

export interface FgdRunOptions {
  readonly tune?: number;
  /** Monotonic clock for runMs (hosts pass performance.now); absent → runMs 0. */
  readonly now?: () => number;
  /** Use this profile instead of resolving `policy` (experiments with unregistered scorers). */
  readonly profile?: Profile;
}

export function runFgd(trace: FgdTrace, policy: string, seed: number, opts: FgdRunOptions = {}): FgdRun {
  const wl = fgdWorkload(trace.nodes, trace.pods, seed, opts.tune ?? 1.3);
  // The workload's randomness (node ranks, random choices of random policies) is the app's Rng port.
  const { state, scheduler } = simAppOrThrow({ nodes: trace.nodes.map((n) => toNodeSpec(n)), rankOf: (name) => wl.rankOf(name), profile: opts.profile ?? policy, typicalShapes: trace.typical, rng: wl.rng }, (m) => new PolicyError(m));
  const meter = new FgdMeter(trace.capacityMilli);
  // The paper's fragmentation measure, whatever the policy: one cached fragment per node version.
  const frag = new FragCache(trace.typical);
  const nodeFrag = new Float64Array(state.size);
  let fragTotal = 0;
  for (const n of state.nodes) {
    nodeFrag[n.idx] = frag.current(n);
    fragTotal += nodeFrag[n.idx] as number;
  }
  const failed = new Map<string, { pods: number; gpuMilli: number }>();
  let arrived = 0;
  let used = 0;
  let placed = 0;
  const t0 = opts.now?.() ?? 0;
  for (const pod of wl.pods) {
    const r = pod.request;
    const demand = r.gpuCount * r.gpuMilli;
    arrived += demand;
    const out = scheduler.schedulePod(pod);
    if (out.ok) {
      placed++;
      used += demand;
      const node = state.node(out.placement.node) as NodeState;
      const f = frag.current(node);
      fragTotal += f - (nodeFrag[node.idx] as number);
      nodeFrag[node.idx] = f;
    } else if (arrived <= trace.capacityMilli) {
      const key = `${r.cpuMilli}|${r.gpuMilli}|${r.gpuCount}|${pod.gpuModels.join('|')}`;
      const f = failed.get(key) ?? { pods: 0, gpuMilli: 0 };
      f.pods++;
      f.gpuMilli += demand;
      failed.set(key, f);
    }
    meter.record(arrived, used, fragTotal);
  }
  const runMs = opts.now === undefined ? 0 : opts.now() - t0;
  const failedTo100 = [...failed.entries()].map(([shape, f]) => ({ shape, ...f })).sort((a, b) => b.gpuMilli - a.gpuMilli || (a.shape < b.shape ? -1 : 1));
  return { policy, seed, pods: wl.pods.length, placed, runMs, buckets: meter.buckets(), failedTo100 };
}
