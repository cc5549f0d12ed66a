/**
 * The storage side of the snapshot: PersistentVolumes, claims and StorageClasses as the host knows them, plus
 * what allocations of the state assume on top (kube-scheduler's PV/PVC assume caches): a PV chosen for an
 * unbound claim, a claim to provision on a node, and how many allocated pods use each claim (ReadWriteOncePod).
 * Assumptions follow the allocations (`ClusterState.allocate`/`release`), so a rolled-back gang member frees
 * the PV it had picked and the next member may take it. Pure data: no I/O.
 */
import { claimKey, type PersistentVolume, type PersistentVolumeClaim, type StorageClass } from '../model/volume.ts';

/** A static PV the scheduler picked for an unbound claim (claim key `namespace/name`). */
export interface VolumeChoice {
  readonly claim: string;
  readonly pv: string;
}

/** What an allocation holds of storage: the claims its pod uses and the choices made for it at commit. */
export interface AllocationVolumes {
  /** Keys of every claim the pod uses. */
  readonly claims: readonly string[];
  /** Unbound WaitForFirstConsumer claims matched to static PVs (kube pre-binds the PV: claimRef). */
  readonly binds: readonly VolumeChoice[];
  /** Unbound WaitForFirstConsumer claims to provision on the node (kube writes selected-node on the claim). */
  readonly provisions: readonly string[];
}

export interface StorageObjects {
  readonly volumes: readonly PersistentVolume[];
  readonly claims: readonly PersistentVolumeClaim[];
  readonly classes: readonly StorageClass[];
}

export class VolumeCatalog {
  private pvs = new Map<string, PersistentVolume>();
  private pvcs = new Map<string, PersistentVolumeClaim>();
  private scs = new Map<string, StorageClass>();
  private byClass = new Map<string, PersistentVolume[]>();
  /** PV name → claim key an allocation assumed it for. */
  private readonly assumedPv = new Map<string, string>();
  /** Claim key → the assumption for it: a PV, or provisioning on a node. */
  private readonly assumedClaim = new Map<string, { readonly pv?: string; readonly node: string }>();
  /** Claim key → allocated pods using it. */
  private readonly users = new Map<string, number>();
  /** Bumped on every change of objects or assumptions. */
  version = 0;

  constructor(objects?: StorageObjects) {
    if (objects !== undefined) this.setObjects(objects);
  }

  /** Replaces the objects (a watch delivered changes); assumptions stay, as they follow allocations. */
  setObjects(o: StorageObjects): void {
    this.pvs = new Map(o.volumes.map((v) => [v.name, v]));
    this.pvcs = new Map(o.claims.map((c) => [claimKey(c.namespace, c.name), c]));
    this.scs = new Map(o.classes.map((c) => [c.name, c]));
    this.byClass = new Map();
    for (const v of [...o.volumes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const list = this.byClass.get(v.storageClassName);
      if (list === undefined) this.byClass.set(v.storageClassName, [v]);
      else list.push(v);
    }
    this.version++;
  }

  claim(key: string): PersistentVolumeClaim | undefined {
    return this.pvcs.get(key);
  }
  volume(name: string): PersistentVolume | undefined {
    return this.pvs.get(name);
  }
  storageClass(name: string): StorageClass | undefined {
    return this.scs.get(name);
  }
  /** PVs of a class, by name (kube's pvCache.ListPVs(class)). */
  volumesOfClass(name: string): readonly PersistentVolume[] {
    return this.byClass.get(name) ?? [];
  }
  /** The claim an allocation assumed this PV for, if any. */
  assumedClaimOf(pv: string): string | undefined {
    return this.assumedPv.get(pv);
  }
  /** The assumption an allocation made for this claim, if any. */
  assumption(claim: string): { readonly pv?: string; readonly node: string } | undefined {
    return this.assumedClaim.get(claim);
  }
  /** Allocated pods using the claim. */
  userCount(claim: string): number {
    return this.users.get(claim) ?? 0;
  }

  /** An allocation with these volumes was made on `node`. */
  take(v: AllocationVolumes, node: string): void {
    for (const c of v.claims) this.users.set(c, (this.users.get(c) ?? 0) + 1);
    for (const b of v.binds) {
      this.assumedPv.set(b.pv, b.claim);
      this.assumedClaim.set(b.claim, { pv: b.pv, node });
    }
    for (const c of v.provisions) this.assumedClaim.set(c, { node });
    this.version++;
  }

  /** The allocation was released (rolled back, finished or deleted). */
  give(v: AllocationVolumes): void {
    for (const c of v.claims) {
      const n = (this.users.get(c) ?? 1) - 1;
      if (n <= 0) this.users.delete(c);
      else this.users.set(c, n);
    }
    for (const b of v.binds) {
      if (this.assumedPv.get(b.pv) === b.claim) this.assumedPv.delete(b.pv);
      this.assumedClaim.delete(b.claim);
    }
    for (const c of v.provisions) this.assumedClaim.delete(c);
    this.version++;
  }
}
