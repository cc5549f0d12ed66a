/**
 * Composition root of every simulated host (the demo, `sits schedule`, scenarios, the benchmarks): the
 * profile resolved with the expected workload, the cluster state in topology order, the simulated cluster
 * behind the ports, a scheduler whose commits reach that cluster, and the scheduling queue and spine that
 * drive queue cycles. Randomness comes in as a port (`rng`); nothing here reads a clock.
 */
import { formatProfileError, resolveProfile } from '../core/plugins/registry.ts';
import { Scheduler } from '../core/framework/scheduler.ts';
import type { Profile } from '../core/framework/types.ts';
import type { NodeSpec } from '../core/model/node.ts';
import type { TypicalShape } from '../core/estimate/typical-shapes.ts';
import type { Rng } from '../core/ports.ts';
import { SchedulingQueue, SIM_QUEUE_TIMING } from '../core/queue/scheduling-queue.ts';
import { err, ok, type Result } from '../core/result.ts';
import { ClusterState } from '../core/snapshot/cluster-state.ts';
import { SchedulingSpine } from '../core/spine/scheduling-spine.ts';
import { commitToPorts } from '../core/statement/commit-to-ports.ts';
import { SimCluster, type SimClusterHooks, type SimClusterOptions } from '../sim/sim-cluster.ts';

export interface SimAppOptions {
  readonly nodes: readonly NodeSpec[];
  /** A profile name (resolved with `typicalShapes`) or a resolved profile. */
  readonly profile: string | Profile;
  /** The expected workload fragmentation-aware plugins score against. */
  readonly typicalShapes?: readonly TypicalShape[];
  readonly rng: Rng;
  /** What the host learns from the simulated cluster (bindings, evictions). */
  readonly hooks?: SimClusterHooks;
  readonly cluster?: SimClusterOptions;
  /** Tie-break rank per node (default name order). */
  readonly rankOf?: (name: string, i: number) => number;
}

export interface SimApp {
  readonly profile: Profile;
  readonly state: ClusterState;
  readonly cluster: SimCluster;
  /** Commits to `cluster` through its ports. */
  readonly scheduler: Scheduler;
  readonly queue: SchedulingQueue;
  readonly spine: SchedulingSpine;
  /** Pods ended or were deleted by the host (the kubelet's part): released in the state, forgotten by the cluster. */
  end(podIds: readonly string[]): void;
}

export function createSimApp(o: SimAppOptions): Result<SimApp, string> {
  let profile: Profile;
  if (typeof o.profile === 'string') {
    const p = resolveProfile(o.profile, { typicalShapes: o.typicalShapes ?? [] });
    if (!p.ok) return err(formatProfileError(p.error));
    profile = p.value;
  } else profile = o.profile;
  const state = new ClusterState(o.nodes, o.rankOf);
  const cluster = new SimCluster(o.hooks ?? {}, o.cluster ?? {});
  const scheduler = new Scheduler(profile, state, o.rng, commitToPorts(cluster.ports));
  const queue = new SchedulingQueue(SIM_QUEUE_TIMING);
  const spine = new SchedulingSpine(queue, { events: cluster.ports.events, status: cluster.ports.status });
  const end = (podIds: readonly string[]): void => {
    for (const p of podIds) state.release(p);
    cluster.remove(podIds);
  };
  return ok({ profile, state, cluster, scheduler, queue, spine, end });
}

/** `createSimApp` for hosts whose inputs were validated already: a profile error is a programmer's error there. */
export function simAppOrThrow(o: SimAppOptions, error: (message: string) => Error = (m) => new Error(m)): SimApp {
  const r = createSimApp(o);
  if (!r.ok) throw error(r.error);
  return r.value;
}
