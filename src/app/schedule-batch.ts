/**
 * Places a batch of pods and gangs on a cluster with one profile, in queue order (priority, then file
 * order), and reports placements with GPU indices and the explanation of everything left pending.
 */
import type { NodeSpec } from '../core/model/node.ts';
import type { PodSpec } from '../core/model/pod.ts';
import type { ClusterState } from '../core/snapshot/cluster-state.ts';
import { placeExisting } from '../core/actions/place-existing.ts';
import { VolumeCatalog, type StorageObjects } from '../core/snapshot/volume-catalog.ts';
import type { Explanation, Placement } from '../core/framework/scheduler.ts';
import { priorityFifo } from '../core/plugins/registry.ts';
import type { TypicalShape } from '../core/estimate/typical-shapes.ts';
import { expectedFromBatch } from '../core/estimate/expected-workload.ts';
import { seededRng } from '../core/ports.ts';
import { err, ok, type Result } from '../core/result.ts';
import type { WorkloadUnit } from '../formats/workload-file.ts';
import { createSimApp } from './sim-app.ts';

export interface BatchResult {
  readonly profile: string;
  readonly placements: readonly (Placement & { readonly gang?: string })[];
  readonly pending: readonly { readonly subject: string; readonly explanation: string; readonly unresolvable: boolean }[];
  /** Rack of every node, for reading placements. */
  readonly racks: Readonly<Record<string, string>>;
  readonly summary: { readonly pods: number; readonly placed: number; readonly gangs: number; readonly gangsPlaced: number; readonly gpuAllocatedPct: number };
}

/** The expected workload for fragmentation scoring: the pod shapes of the batch itself. */
export function expectedWorkload(units: readonly WorkloadUnit[]): TypicalShape[] {
  const pods: PodSpec[] = [];
  for (const u of units) {
    if (u.kind === 'pod') pods.push(u.pod);
    else pods.push(...u.gang.members);
  }
  return expectedFromBatch(pods);
}

/** A pod already running before the batch: on `node`, with the given GPUs or the lowest fitting ones. */
export interface RunningPod {
  readonly pod: PodSpec;
  readonly node: string;
  readonly gpus?: readonly number[];
}

export function scheduleBatch(
  nodes: readonly NodeSpec[],
  units: readonly WorkloadUnit[],
  profileName: string,
  seed = 1,
  running: readonly RunningPod[] = [],
  storage?: StorageObjects,
): Result<BatchResult, string> {
  const app = createSimApp({ nodes, profile: profileName, typicalShapes: expectedWorkload(units), rng: seededRng(seed) });
  if (!app.ok) return err(app.error);
  const { state, scheduler, profile } = app.value;
  // Claims resolve against these (ADR 0070); without them a pod's claims are not found, as in an empty cluster.
  if (storage !== undefined) state.volumes = new VolumeCatalog(storage);
  for (const r of running) {
    const placed = placeRunning(state, r);
    if (placed !== undefined) return err(placed);
  }
  const order = units
    .map((u, seq) => ({
      u,
      q: {
        key: u.kind === 'pod' ? u.pod.id : u.gang.name,
        priority: u.kind === 'pod' ? u.pod.priority : u.gang.priority,
        queue: 'default',
        arrivalMs: u.timing.arrivalSec * 1000,
        seq,
      },
    }))
    .sort((a, b) => (profile.queueSort.queueSort ?? priorityFifo)(a.q, b.q));
  const placements: (Placement & { gang?: string })[] = [];
  const pending: { subject: string; explanation: string; unresolvable: boolean }[] = [];
  let pods = 0;
  let placed = 0;
  let gangs = 0;
  let gangsPlaced = 0;
  const note = (subject: string, e: Explanation): void => {
    pending.push({ subject, explanation: e.message, unresolvable: e.unresolvable });
  };
  for (const { u } of order) {
    if (u.kind === 'pod') {
      pods++;
      // Gated pods are not tried (kube-scheduler keeps them out of its active queue) and are not unschedulable.
      if (u.pod.schedulingGates !== undefined) {
        pending.push({ subject: `pod ${u.pod.id}`, explanation: gatedMessage(`pod ${u.pod.id}`, u.pod.schedulingGates), unresolvable: false });
        continue;
      }
      const r = scheduler.schedulePod(u.pod);
      if (r.ok) {
        placed++;
        placements.push(r.placement);
      } else note(`pod ${u.pod.id}`, r.explanation);
    } else {
      gangs++;
      pods += u.gang.members.length;
      // Only ungated members exist for the scheduler; too few of them and the gang waits for its pods.
      const ungated = u.gang.members.filter((m) => m.schedulingGates === undefined);
      if (ungated.length < u.gang.minMember) {
        const gated = u.gang.members.length - ungated.length;
        pending.push({
          subject: `gang ${u.gang.name}`,
          explanation: `gang ${u.gang.name}: waiting for pods: ${ungated.length} of minMember ${u.gang.minMember} are not gated (${gated} SchedulingGated)`,
          unresolvable: false,
        });
        continue;
      }
      const r = scheduler.scheduleGang(ungated.length === u.gang.members.length ? u.gang : { ...u.gang, members: ungated });
      if (r.ok) {
        gangsPlaced++;
        placed += r.placements.length;
        for (const p of r.placements) placements.push({ ...p, gang: u.gang.name });
      } else note(`gang ${u.gang.name}`, r.explanation);
    }
  }
  let total = 0;
  let free = 0;
  for (const n of state.nodes) {
    total += n.usableGpuCount() * 1000;
    free += n.gpuFreeMilli();
  }
  const gpuAllocatedPct = total === 0 ? 0 : Math.round(((total - free) / total) * 10000) / 100;
  const racks = Object.fromEntries(state.nodes.map((n) => [n.name, n.spec.location.rack]));
  return ok({ profile: profile.name, placements, pending, racks, summary: { pods, placed, gangs, gangsPlaced, gpuAllocatedPct } });
}

/** kube-scheduler's status for a pod with scheduling gates: SchedulingGated, never tried. */
export function gatedMessage(subject: string, gates: readonly string[]): string {
  return `${subject}: SchedulingGated: not tried until its scheduling gates are removed (${gates.join(', ')})`;
}

/** Puts a declared running pod into the state (see placeExisting), or says why the input is wrong. */
export function placeRunning(state: ClusterState, r: RunningPod): string | undefined {
  const placed = placeExisting(state, r.pod, r.node, 'declared', r.gpus);
  if (!placed.ok) return `running ${placed.error}`;
  state.allocate(placed.value.allocation);
  return undefined;
}
