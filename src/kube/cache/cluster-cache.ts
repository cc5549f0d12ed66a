/**
 * The live scheduler's cache (kube-scheduler's): the objects the watches deliver, the allocations SITS
 * assumed before the watch confirmed them, and the pods waiting for SITS. The core's ClusterState is the
 * per-cycle snapshot: watch events only mark pods dirty, and `snapshot()` — called at the start of a
 * cycle, never during one — applies them (allocate or release per dirty pod; a change in the node set or
 * a node's shape rebuilds the state, rarely). A cycle therefore sees one consistent cluster, whatever
 * arrives while its bindings are in flight.
 */
import type { V1Namespace, V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1StorageClass } from '@kubernetes/client-node';
import type { NodeSpec } from '../../core/model/node.ts';
import type { PodSpec } from '../../core/model/pod.ts';
import { ClusterState, type Allocation } from '../../core/snapshot/cluster-state.ts';
import { defaultNamespaceLabels } from '../../core/model/terms.ts';
import { placeExisting } from '../../core/actions/place-existing.ts';
import { VolumeCatalog, type AllocationVolumes } from '../../core/snapshot/volume-catalog.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../core/model/volume.ts';
import {
  readPersistentVolume,
  readPersistentVolumeClaim,
  readStorageClass,
  type PersistentVolumeClaimLike,
  type PersistentVolumeLike,
  type StorageClassLike,
} from '../../api/storage.ts';
import { ANNOTATION, SCHEDULER_NAME } from '../../api/wire.ts';
import { isOurs, type SchedulerNames } from '../scheduler/scheduler-names.ts';
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
  /** Pods counted on other GPUs than their annotation names (those were taken in the state): retried each snapshot. */
  private readonly misplaced = new Set<string>();
  /** Pods SITS is evicting (key → uid: a pod recreated under the same name is not leaving), until deleted. */
  private readonly leavingPods = new Map<string, string | undefined>();
  readonly pending = new Map<string, PendingPod>();
  private stateDirty = true;
  private current: ClusterState | undefined;
  /** Pods whose objects changed since the last snapshot. */
  private readonly dirty = new Set<string>();
  private seq = 0;
  /** Resources released (or nodes changed) by the last snapshot: waiting jobs may now fit. */
  private freedSinceSnapshot = false;
  readonly problems = new Map<string, string>();
  /** Namespace labels (for namespaceSelector in pod affinity terms), when the namespaces watch runs. */
  private readonly nsLabels = new Map<string, Readonly<Record<string, string>>>();
  /** Storage objects (ADR 0070), when their watches run; `undefined` until then (claims are then not found). */
  private storage:
    | {
        pvs: Map<string, { obj: V1PersistentVolume; pv: PersistentVolume }>;
        pvcs: Map<string, { obj: V1PersistentVolumeClaim; claim: PersistentVolumeClaim }>;
        classes: Map<string, StorageClass>;
      }
    | undefined;
  private storageDirty = false;

  constructor(
    private readonly schedulerName: SchedulerNames = SCHEDULER_NAME,
    private readonly log: (m: string) => void = () => undefined,
  ) {}

  get nodeCount(): number {
    return this.nodeObjs.size;
  }

  /** Entries of each map the cache keeps (`sits bench soak` checks that none grows under steady churn). */
  sizes(): Record<string, number> {
    return {
      nodes: this.nodeObjs.size,
      pods: this.pods.size,
      assumed: this.assumed.size,
      leaving: this.leavingPods.size,
      pending: this.pending.size,
      dirty: this.dirty.size,
      problems: this.problems.size,
    };
  }

  /**
   * The snapshot, for a cycle: the ClusterState with every change since the last call applied (rebuilt if the
   * node set changed). `freed` says whether anything was released (or nodes changed) since the last cycle's
   * snapshot, i.e. whether parked jobs may now fit.
   */
  snapshot(): { readonly state: ClusterState; readonly freed: boolean } {
    const state = this.state();
    const freed = this.freedSinceSnapshot;
    this.freedSinceSnapshot = false;
    return { state, freed };
  }

  /** The state with every change applied (metrics, explain, recovery: outside a cycle); `freed` is kept for the next cycle. */
  state(): ClusterState {
    if (this.current === undefined || this.stateDirty) this.rebuild();
    else {
      if (this.storageDirty) this.applyStorage(this.current);
      for (const key of this.misplaced) this.dirty.add(key);
      // Releases first: a pod bound (by another replica, before a failover) onto the GPUs of a pod that ended must
      // find them free, or it is counted on GPUs it does not hold, and those look free to the next gang.
      for (const key of this.dirty) this.releaseStale(key);
      for (const key of this.dirty) this.reconcile(key);
    }
    this.dirty.clear();
    return this.current as ClusterState;
  }

  /** The storage objects into the state's catalog (assumptions, which follow allocations, stay). */
  private applyStorage(state: ClusterState): void {
    this.storageDirty = false;
    const st = this.storage;
    if (st === undefined) return;
    const objects = { volumes: [...st.pvs.values()].map((v) => v.pv), claims: [...st.pvcs.values()].map((c) => c.claim), classes: [...st.classes.values()] };
    if (state.volumes === undefined) state.volumes = new VolumeCatalog(objects);
    else state.volumes.setObjects(objects);
    // A claim bound, a PV added or a class created may let a waiting pod in (kube's VolumeBinding events).
    this.freedSinceSnapshot = true;
  }

  /** Starts keeping storage objects: from now on claims resolve against them (an empty store until the lists arrive). */
  enableStorage(): void {
    if (this.storage !== undefined) return;
    this.storage = { pvs: new Map(), pvcs: new Map(), classes: new Map() };
    this.storageDirty = true;
  }

  private storageProblem(key: string, r: { ok: false; error: string }): void {
    if (this.problems.get(key) !== r.error) this.log(r.error);
    this.problems.set(key, r.error);
  }

  upsertPersistentVolume(o: V1PersistentVolume): void {
    this.enableStorage();
    const st = this.storage as NonNullable<typeof this.storage>;
    const r = readPersistentVolume(o as PersistentVolumeLike);
    const key = `persistentvolume/${o.metadata?.name ?? ''}`;
    if (!r.ok) {
      this.storageProblem(key, r);
      st.pvs.delete(o.metadata?.name ?? '');
    } else {
      this.problems.delete(key);
      st.pvs.set(r.value.name, { obj: o, pv: r.value });
    }
    this.storageDirty = true;
  }
  deletePersistentVolume(o: V1PersistentVolume): void {
    if (this.storage?.pvs.delete(o.metadata?.name ?? '') === true) this.storageDirty = true;
  }
  upsertPersistentVolumeClaim(o: V1PersistentVolumeClaim): void {
    this.enableStorage();
    const st = this.storage as NonNullable<typeof this.storage>;
    const r = readPersistentVolumeClaim(o as PersistentVolumeClaimLike);
    const key = `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`;
    if (!r.ok) {
      this.storageProblem(`persistentvolumeclaim/${key}`, r);
      st.pvcs.delete(key);
    } else {
      this.problems.delete(`persistentvolumeclaim/${key}`);
      st.pvcs.set(key, { obj: o, claim: r.value });
    }
    this.storageDirty = true;
  }
  deletePersistentVolumeClaim(o: V1PersistentVolumeClaim): void {
    if (this.storage?.pvcs.delete(`${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`) === true) this.storageDirty = true;
  }
  upsertStorageClass(o: V1StorageClass): void {
    this.enableStorage();
    const st = this.storage as NonNullable<typeof this.storage>;
    const r = readStorageClass(o as StorageClassLike);
    const key = `storageclass/${o.metadata?.name ?? ''}`;
    if (!r.ok) {
      this.storageProblem(key, r);
      st.classes.delete(o.metadata?.name ?? '');
    } else {
      this.problems.delete(key);
      st.classes.set(r.value.name, r.value);
    }
    this.storageDirty = true;
  }
  deleteStorageClass(o: V1StorageClass): void {
    if (this.storage?.classes.delete(o.metadata?.name ?? '') === true) this.storageDirty = true;
  }

  /** The claim object as watched (`namespace/name`), for the binder's PreBind. */
  claimObject(key: string): V1PersistentVolumeClaim | undefined {
    return this.storage?.pvcs.get(key)?.obj;
  }
  /** The claim as the core reads it. */
  claim(key: string): PersistentVolumeClaim | undefined {
    return this.storage?.pvcs.get(key)?.claim;
  }
  /** The PV as the core reads it. */
  persistentVolume(name: string): PersistentVolume | undefined {
    return this.storage?.pvs.get(name)?.pv;
  }
  /** The PV object as watched. */
  volumeObject(name: string): V1PersistentVolume | undefined {
    return this.storage?.pvs.get(name)?.obj;
  }
  /** The volume choices of a pod SITS assumed (what the binder must write before binding it). */
  assumedVolumes(podId: string): AllocationVolumes | undefined {
    return this.assumed.get(podId)?.volumes;
  }

  pod(key: string): V1Pod | undefined {
    return this.pods.get(key);
  }
  allPods(): IterableIterator<V1Pod> {
    return this.pods.values();
  }

  /** A namespace's labels changed: inter-pod counters read them, so the next snapshot is rebuilt (rare). */
  upsertNamespace(ns: V1Namespace): void {
    const name = ns.metadata?.name ?? '';
    const labels = ns.metadata?.labels ?? {};
    if (JSON.stringify(this.nsLabels.get(name) ?? null) === JSON.stringify(labels)) return;
    this.nsLabels.set(name, labels);
    this.stateDirty = true;
  }
  deleteNamespace(ns: V1Namespace): void {
    if (this.nsLabels.delete(ns.metadata?.name ?? '')) this.stateDirty = true;
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
    if (old?.sig !== sig) this.stateDirty = true;
  }

  /** The node as last read from its object (no snapshot rebuild): what the binder needs beyond the placement. */
  nodeSpec(name: string): NodeSpec | undefined {
    return this.nodeObjs.get(name)?.spec;
  }

  deleteNode(n: V1Node): void {
    if (this.nodeObjs.delete(n.metadata?.name ?? '')) this.stateDirty = true;
  }

  upsertPod(p: V1Pod): void {
    const key = podKey(p);
    this.pods.set(key, p);
    this.dirty.add(key);
    const ours = isOurs(this.schedulerName, p.spec?.schedulerName);
    const unbound = (p.spec?.nodeName ?? '') === '';
    // A pod with spec.nodeName is never ours to schedule (kube's NodeName: the kubelet runs it where it says);
    // a gated one waits outside the queue until its last gate is removed, which arrives as an update (ungated → pending).
    const gated = (p.spec?.schedulingGates?.length ?? 0) > 0;
    if (
      ours &&
      unbound &&
      !gated &&
      !this.assumed.has(key) &&
      p.metadata?.deletionTimestamp === undefined &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed'
    ) {
      if (!this.pending.has(key)) {
        const spec = podFromK8s(p);
        if (!spec.ok) {
          this.problems.set(key, spec.error);
          this.log(spec.error);
        } else {
          this.problems.delete(key);
          this.pending.set(key, {
            key,
            obj: p,
            spec: spec.value,
            createdMs: Date.parse(p.metadata?.creationTimestamp?.toString() ?? '') || 0,
            seq: this.seq++,
          });
        }
      } else {
        const cur = this.pending.get(key) as PendingPod;
        this.pending.set(key, { ...cur, obj: p });
      }
    } else this.pending.delete(key);
  }

  deletePod(p: V1Pod): void {
    const key = podKey(p);
    this.leavingPods.delete(key);
    this.pods.delete(key);
    this.pending.delete(key);
    this.assumed.delete(key);
    this.dirty.add(key);
  }

  /**
   * Records a decision made by SITS before the watch reports the binding (the allocation is already in the
   * snapshot: the statement made it).
   */
  assume(a: Allocation): void {
    this.assumed.set(a.podId, a);
    this.pending.delete(a.podId);
  }

  /** Assumes the allocation the current snapshot holds for the pod (made by a committed statement); false if none. */
  assumePlaced(podId: string): boolean {
    const a = this.current?.allocation(podId);
    if (a === undefined) return false;
    this.assume(a);
    return true;
  }

  /** The node SITS assumed for a pod it placed, before the watch confirms the binding. */
  assumedNode(podId: string): string | undefined {
    return this.assumed.get(podId)?.node;
  }

  /** SITS decided to evict these pods: the queues stop counting them now, not when the watch reports the delete. */
  markLeaving(podIds: readonly string[]): void {
    for (const id of podIds) {
      const p = this.pods.get(id);
      if (p !== undefined) this.leavingPods.set(id, p.metadata?.uid);
    }
  }

  /** An eviction that failed: the pod counts again. */
  stayed(podId: string): void {
    this.leavingPods.delete(podId);
  }

  /** Whether SITS is evicting the pod (it still holds its node's resources until it is gone). */
  isLeaving(podId: string): boolean {
    return this.leavingPods.has(podId) && this.leavingPods.get(podId) === this.pods.get(podId)?.metadata?.uid;
  }

  /** Whether SITS assumed the pod and the watch has not confirmed it yet. */
  isAssumed(podId: string): boolean {
    return this.assumed.has(podId);
  }

  /** Forgets an assumed allocation whose binding failed; the pod goes back to pending if it still exists. */
  forget(podId: string): void {
    this.assumed.delete(podId);
    this.dirty.add(podId);
    const p = this.pods.get(podId);
    if (p !== undefined) {
      this.pods.delete(podId);
      this.upsertPod(p);
    }
  }

  /** Releases the pod's allocation when its object no longer holds it, holds it elsewhere, or on other GPUs. */
  private releaseStale(key: string): void {
    const have = this.current?.allocation(key);
    if (have === undefined) return;
    const p = this.pods.get(key);
    if (p === undefined || !podHoldsResources(p)) {
      this.misplaced.delete(key);
      if (!this.assumed.has(key)) this.release(key);
      return;
    }
    const node = p.spec?.nodeName ?? p.metadata?.annotations?.[ANNOTATION.assignedNode];
    const gpus = parseGpuIndices(p.metadata?.annotations?.[ANNOTATION.gpuIndices]);
    if (have.node === node && (gpus === undefined || sameGpus(gpus, have.gpus))) return;
    this.release(key);
    this.assumed.delete(key);
  }

  /**
   * After `releaseStale`: counts a resource-holding pod the state does not hold yet, or confirms the allocation it
   * has (then on the pod's node and GPUs). A pod that holds nothing was released there, unless SITS assumed it.
   */
  private reconcile(key: string): void {
    const p = this.pods.get(key);
    if (p === undefined || !podHoldsResources(p)) return;
    if ((this.current as ClusterState).allocation(key) !== undefined) {
      // Confirmed by the watch: an assumed allocation becomes a plain one.
      if ((p.spec?.nodeName ?? '') !== '') this.assumed.delete(key);
      return;
    }
    this.assumed.delete(key);
    this.account(p);
  }

  private release(key: string): void {
    if (this.current?.release(key) !== undefined) this.freedSinceSnapshot = true;
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
    const hint = parseGpuIndices(p.metadata?.annotations?.[ANNOTATION.gpuIndices]);
    const placed = placeExisting(state, spec.value, nodeName, 'observed', hint);
    if (!placed.ok) return;
    const { allocation, withoutDevices } = placed.value;
    // Retried every snapshot while misplaced (see `misplaced`): said once.
    const said = this.misplaced.has(key);
    if (withoutDevices && !said) this.log(`pod ${key} on ${nodeName}: GPUs over-committed; counting it without devices`);
    if (hint !== undefined && !sameGpus(hint, allocation.gpus)) {
      if (!said && !withoutDevices)
        this.log(
          `pod ${key} on ${nodeName}: its GPUs ${hint.join(',')} are held by another pod here; counted on ${allocation.gpus.join(',')} until they are free`,
        );
      this.misplaced.add(key);
    } else this.misplaced.delete(key);
    state.allocate(allocation);
  }

  private rebuild(): void {
    const specs = [...this.nodeObjs.values()].map((n) => n.spec);
    this.current = new ClusterState(specs);
    this.misplaced.clear();
    // Storage first: the pods accounted below record their claims (and assumptions) in its catalog.
    this.applyStorage(this.current);
    const ns = new Map(this.nsLabels);
    if (ns.size > 0) this.current.namespaceLabels = (name) => ns.get(name) ?? defaultNamespaceLabels(name);
    this.stateDirty = false;
    for (const p of this.pods.values()) if (podHoldsResources(p)) this.account(p);
    for (const [key, a] of this.assumed) {
      const node = this.current.node(a.node);
      if (node === undefined || this.current.allocation(key) !== undefined) continue;
      const fits = a.gpus.every((g) => (node.gpuFree[g] as number) >= a.gpuMilli);
      if (fits) this.current.allocate(a);
    }
    this.freedSinceSnapshot = true;
  }
}

function sameGpus(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  const sb = [...b].sort((x, y) => x - y);
  return [...a].sort((x, y) => x - y).every((g, i) => g === sb[i]);
}
