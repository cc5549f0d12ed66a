/**
 * The live scheduler's view, kept from watch events: nodes and every pod that holds resources, applied
 * incrementally to the core's ClusterState; pods waiting for SITS; gang membership. A change in the node
 * set or a node's shape rebuilds the ClusterState (rare); pod events only allocate or release.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { NodeSpec } from '../core/model/node.ts';
import type { PodSpec } from '../core/model/pod.ts';
import { ClusterState, type Allocation } from '../core/snapshot/cluster-state.ts';
import { placeExisting } from '../core/snapshot/place-existing.ts';
import { ANNOTATION, SCHEDULER_NAME } from '../api/wire.ts';
import { nodeFromK8s, parseGpuIndices, podFromK8s, podHoldsResources, podKey } from './labels.ts';

export interface PendingPod {
  readonly key: string;
  readonly obj: V1Pod;
  readonly spec: PodSpec;
  readonly createdMs: number;
  readonly seq: number;
}

export class ClusterCache {
  private readonly nodeObjs = new Map<string, { obj: V1Node; spec: NodeSpec; sig: string }>();
  private readonly pods = new Map<string, V1Pod>();
  /** Allocations SITS made that the watch has not confirmed yet (pod key → allocation). */
  private readonly assumed = new Map<string, Allocation>();
  readonly pending = new Map<string, PendingPod>();
  private stateDirty = true;
  private current: ClusterState | undefined;
  private seq = 0;
  /** Incremented by any change that could let a waiting pod fit. */
  generation = 0;
  readonly problems = new Map<string, string>();

  constructor(
    private readonly schedulerName = SCHEDULER_NAME,
    private readonly log: (m: string) => void = () => undefined,
  ) {}

  get nodeCount(): number {
    return this.nodeObjs.size;
  }

  /** The ClusterState, rebuilt if the node set changed. */
  state(): ClusterState {
    if (this.current === undefined || this.stateDirty) this.rebuild();
    return this.current as ClusterState;
  }

  pod(key: string): V1Pod | undefined {
    return this.pods.get(key);
  }
  allPods(): IterableIterator<V1Pod> {
    return this.pods.values();
  }

  upsertNode(n: V1Node): void {
    const name = n.metadata?.name ?? '';
    const r = nodeFromK8s(n);
    if (!r.ok) {
      if (this.problems.get(name) !== r.error) this.log(r.error);
      this.problems.set(name, r.error);
      if (this.nodeObjs.delete(name)) this.stateDirty = true;
      return;
    }
    this.problems.delete(name);
    const sig = JSON.stringify(r.value);
    const old = this.nodeObjs.get(name);
    this.nodeObjs.set(name, { obj: n, spec: r.value, sig });
    if (old?.sig !== sig) {
      this.stateDirty = true;
      this.generation++;
    }
  }

  deleteNode(n: V1Node): void {
    if (this.nodeObjs.delete(n.metadata?.name ?? '')) {
      this.stateDirty = true;
      this.generation++;
    }
  }

  upsertPod(p: V1Pod): void {
    const key = podKey(p);
    const old = this.pods.get(key);
    this.pods.set(key, p);
    const ours = p.spec?.schedulerName === this.schedulerName;
    const unbound = (p.spec?.nodeName ?? '') === '';
    if (ours && unbound && !this.assumed.has(key) && p.metadata?.deletionTimestamp === undefined && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed') {
      if (!this.pending.has(key)) {
        const spec = podFromK8s(p);
        if (!spec.ok) {
          this.problems.set(key, spec.error);
          this.log(spec.error);
        } else {
          this.problems.delete(key);
          this.pending.set(key, { key, obj: p, spec: spec.value, createdMs: Date.parse(p.metadata?.creationTimestamp?.toString() ?? '') || 0, seq: this.seq++ });
          this.generation++;
        }
      } else {
        const cur = this.pending.get(key) as PendingPod;
        this.pending.set(key, { ...cur, obj: p });
      }
    } else this.pending.delete(key);
    if (this.current === undefined || this.stateDirty) return;
    const holds = podHoldsResources(p);
    const held = old !== undefined && podHoldsResources(old);
    if (holds) {
      // Confirmed by the watch: an assumed allocation becomes a plain one.
      if (!this.assumed.delete(key) && !held) this.account(p);
    } else if (held) this.release(key);
  }

  deletePod(p: V1Pod): void {
    const key = podKey(p);
    this.pods.delete(key);
    this.pending.delete(key);
    if (this.assumed.has(key)) this.assumed.delete(key);
    if (this.current !== undefined && !this.stateDirty) this.release(key);
  }

  /** Records a decision made by SITS before the watch reports the binding. */
  assume(a: Allocation): void {
    this.assumed.set(a.podId, a);
    this.pending.delete(a.podId);
  }

  /** Forgets an assumed allocation whose binding failed; the pod goes back to pending if it still exists. */
  forget(podId: string): void {
    this.assumed.delete(podId);
    if (this.current !== undefined && !this.stateDirty) this.release(podId);
    const p = this.pods.get(podId);
    if (p !== undefined) {
      this.pods.delete(podId);
      this.upsertPod(p);
    }
  }

  private release(key: string): void {
    if (this.current?.release(key) !== undefined) this.generation++;
  }

  /** Puts a resource-holding pod into the state; GPU indices from its annotation, else the lowest free. */
  private account(p: V1Pod): void {
    const state = this.current as ClusterState;
    const key = podKey(p);
    if (state.allocation(key) !== undefined) return;
    const nodeName = p.spec?.nodeName ?? (p.metadata?.annotations?.[ANNOTATION.assignedNode] as string);
    const spec = podFromK8s(p);
    if (!spec.ok) return;
    // An unknown node is skipped: the pod is counted when its node appears (rebuild).
    const placed = placeExisting(state, spec.value, nodeName, 'observed', parseGpuIndices(p.metadata?.annotations?.[ANNOTATION.gpuIndices]));
    if (!placed.ok) return;
    if (placed.value.withoutDevices) this.log(`pod ${key} on ${nodeName}: GPUs over-committed; counting it without devices`);
    state.allocate(placed.value.allocation);
  }

  private rebuild(): void {
    const specs = [...this.nodeObjs.values()].map((n) => n.spec);
    this.current = new ClusterState(specs);
    this.stateDirty = false;
    for (const p of this.pods.values()) if (podHoldsResources(p)) this.account(p);
    for (const [key, a] of this.assumed) {
      const node = this.current.node(a.node);
      if (node === undefined || this.current.allocation(key) !== undefined) continue;
      const fits = a.gpus.every((g) => (node.gpuFree[g] as number) >= a.gpuMilli);
      if (fits) this.current.allocate(a);
    }
    this.generation++;
  }
}
