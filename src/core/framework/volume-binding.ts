/**
 * kube-scheduler's VolumeRestrictions (ReadWriteOncePod), VolumeBinding and VolumeZone for the claims a pod
 * uses, in two steps (ADR 0070):
 *
 * 1. `resolvePodVolumes` — the PreFilters, against the snapshot's VolumeCatalog: a missing claim
 *    (`persistentvolumeclaim "x" not found`), a lost or deleting one, an unbound claim of an Immediate class
 *    (`pod has unbound immediate PersistentVolumeClaims`; a claim of an unknown class or none is Immediate, as
 *    kube's IsDelayBindingMode says) and a bound claim whose PV is gone (VolumeZone's `persistentvolume "x" not
 *    found`) reject the pod. Otherwise the pod's volumes resolve to node-independent facts: the bound PVs (node
 *    affinity, zone labels), the unbound WaitForFirstConsumer claims with the PVs that could take them ignoring
 *    the node (kube's FindMatchingVolume: not claimed by another claim nor assumed for one, big enough, same
 *    volume mode and class, Available, the claim's selector, its access modes; a PV pre-bound to the claim is its
 *    only candidate) and whether their class can provision, and whether another pod holds one of its
 *    ReadWriteOncePod claims. Their key joins the pod's shape key: the score index caches per-node verdicts.
 * 2. `volumesOnNode` — the Filters for one node, reading only its labels: a ReadWriteOncePod conflict; each
 *    bound PV's node affinity (`CheckNodeAffinity`: labels only); the unbound claims, smallest request first,
 *    each taking the smallest candidate whose node affinity matches and that no earlier claim took, the rest
 *    provisioned if the class has a provisioner and its allowedTopologies match (a claim already carrying
 *    `selected-node` fits that node only); then each bound PV's zone and region labels against the node's, when
 *    the node has any (values split on `__`, beta keys matched against GA node labels). The same function makes
 *    the choice at commit: it is what the allocation carries and the binder writes.
 *
 * Not modelled: CSIStorageCapacity (provisioning capacity), in-tree → CSI translation, volume attributes classes.
 */
import type { NodeSelectorRequirement, NodeSelectorTerm, PodSpec } from '../model/pod.ts';
import {
  claimKey,
  disksConflict,
  type InlineDisk,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type PodClaim,
  type StorageClass,
  type BoundVolume,
  type ResolvedVolumes,
  type UnboundClaim,
  type VolumeResolution,
} from '../model/volume.ts';
import { labelsWithPlace, type NodeState } from '../snapshot/cluster-state.ts';
import type { AllocationVolumes, VolumeCatalog, VolumeChoice } from '../snapshot/volume-catalog.ts';
import { Reason, type ReasonCode } from './reasons.ts';
import { requirementMatches } from '../model/node-affinity.ts';
import { compileSelector, selectorMatches } from '../model/terms.ts';

/** kube's no-provisioner marker: a class of pre-created PVs only. */
export const NO_PROVISIONER = 'kubernetes.io/no-provisioner';

const ZONE_LABELS = [
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
] as const;
const GA_OF: Readonly<Record<string, string>> = {
  'failure-domain.beta.kubernetes.io/zone': 'topology.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region': 'topology.kubernetes.io/region',
};

/** kube's PreFilters of the three plugins; see the header. */
export function resolvePodVolumes(pod: PodSpec, catalog: VolumeCatalog | undefined): VolumeResolution {
  const ns = pod.namespace ?? 'default';
  const claims: { readonly c: PodClaim; readonly key: string; readonly pvc: PersistentVolumeClaim }[] = [];
  for (const c of pod.claims ?? []) {
    const key = claimKey(ns, c.name);
    const pvc = catalog?.claim(key);
    if (pvc === undefined)
      return {
        ok: false,
        reason:
          c.ephemeral === true
            ? `waiting for ephemeral volume controller to create the persistentvolumeclaim "${c.name}"`
            : `persistentvolumeclaim "${c.name}" not found`,
      };
    if (pvc.phase === 'Lost')
      return { ok: false, reason: `persistentvolumeclaim "${c.name}" bound to non-existent persistentvolume "${pvc.volumeName ?? ''}"` };
    if (pvc.deleting) return { ok: false, reason: `persistentvolumeclaim "${c.name}" is being deleted` };
    claims.push({ c, key, pvc });
  }
  const cat = catalog as VolumeCatalog;
  // VolumeRestrictions: a ReadWriteOncePod claim another (bound or assumed) pod uses.
  let rwopConflict = false;
  for (const { key, pvc } of claims) if (pvc.accessModes.includes('ReadWriteOncePod') && cat.userCount(key) > 0) rwopConflict = true;
  const bound: BoundVolume[] = [];
  const unbound: UnboundClaim[] = [];
  const seen = new Set<string>();
  for (const { key, pvc } of claims) {
    // A pod may mount one claim twice: it is one claim.
    if (seen.has(key)) continue;
    seen.add(key);
    const assumed = cat.assumption(key);
    if (pvc.volumeName !== undefined && pvc.bindCompleted) {
      const pv = cat.volume(pvc.volumeName);
      if (pv === undefined) return { ok: false, reason: `persistentvolume "${pvc.volumeName}" not found` };
      bound.push(boundVolume(pv));
      continue;
    }
    const cls = pvc.storageClassName === '' ? undefined : cat.storageClass(pvc.storageClassName);
    const delay = cls?.volumeBindingMode === 'WaitForFirstConsumer' && pvc.volumeName === undefined;
    if (!delay) return { ok: false, reason: 'pod has unbound immediate PersistentVolumeClaims' };
    const selectedNode = pvc.selectedNode ?? (assumed?.pv === undefined ? assumed?.node : undefined);
    unbound.push({
      claim: key,
      requestBytes: pvc.requestBytes,
      ...(selectedNode === undefined ? {} : { selectedNode }),
      candidates: selectedNode === undefined ? candidatesFor(pvc, key, cat) : [],
      provision: cls.provisioner === '' || cls.provisioner === NO_PROVISIONER ? undefined : (cls.allowedTopologies ?? null),
    });
  }
  // kube sorts the claims to match by increasing request (a stable sort keeps the pod's order among equals).
  unbound.sort((a, b) => a.requestBytes - b.requestBytes);
  const keys = claims.map((x) => x.key);
  return { ok: true, volumes: { key: JSON.stringify([rwopConflict, bound, unbound]), claims: [...new Set(keys)], rwopConflict, bound, unbound } };
}

function boundVolume(pv: PersistentVolume): BoundVolume {
  const zones: { key: string; values: string[] }[] = [];
  for (const k of ZONE_LABELS) {
    const v = pv.labels[k];
    // volumehelpers.LabelZonesToSet: `a__b` is the set {a, b}; an empty part makes the label unusable (ignored).
    if (v === undefined) continue;
    const parts = v.split('__');
    if (parts.some((p) => p === '')) continue;
    zones.push({ key: k, values: parts });
  }
  return { pv: pv.name, ...(pv.nodeAffinity === undefined ? {} : { nodeAffinity: pv.nodeAffinity }), zones };
}

/** The node-independent part of kube's FindMatchingVolume, smallest first (then by name). */
function candidatesFor(pvc: PersistentVolumeClaim, key: string, cat: VolumeCatalog): UnboundClaim['candidates'] {
  const out: PersistentVolume[] = [];
  const selector = pvc.selector === undefined ? undefined : compileSelector(pvc.selector);
  for (const pv of cat.volumesOfClass(pvc.storageClassName)) {
    const assumedFor = cat.assumedClaimOf(pv.name);
    if (assumedFor !== undefined && assumedFor !== key) continue;
    const ref = pv.claimRef;
    const toThis =
      assumedFor === key || (ref !== undefined && ref.namespace === pvc.namespace && ref.name === pvc.name && (ref.uid === undefined || ref.uid === pvc.uid));
    if (ref !== undefined && !toThis) continue;
    if (pv.capacityBytes < pvc.requestBytes || pv.volumeMode !== pvc.volumeMode || pv.deleting) continue;
    // A PV pre-bound to this claim (by its author or by an assumption) is the claim's only match.
    if (toThis) return [{ name: pv.name, ...(pv.nodeAffinity === undefined ? {} : { nodeAffinity: pv.nodeAffinity }) }];
    if (pv.phase !== 'Available') continue;
    if (selector !== undefined && !selectorMatches(selector, pv.labels)) continue;
    if (!pvc.accessModes.every((m) => pv.accessModes.includes(m))) continue;
    out.push(pv);
  }
  out.sort((a, b) => a.capacityBytes - b.capacityBytes || (a.name < b.name ? -1 : 1));
  return out.map((pv) => ({ name: pv.name, ...(pv.nodeAffinity === undefined ? {} : { nodeAffinity: pv.nodeAffinity }) }));
}

/** kube's CheckNodeAffinity: any required term matches the node's labels (fields read as empty). */
function pvAffinityMatches(terms: readonly NodeSelectorTerm[] | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (terms === undefined) return true;
  for (const t of terms) {
    const exprs = t.matchExpressions ?? [];
    const fields = t.matchFields ?? [];
    if (exprs.length === 0 && fields.length === 0) continue;
    if (exprs.every((r) => requirementMatches(r, labels) === true) && fields.every(emptyFieldMatches)) return true;
  }
  return false;
}

/** A field requirement against a node that has only labels (kube builds one for CheckNodeAffinity): every field is empty. */
function emptyFieldMatches(r: NodeSelectorRequirement): boolean {
  const values = r.values ?? [];
  if (values.length !== 1 || (r.operator !== 'In' && r.operator !== 'NotIn')) return false;
  return r.operator === 'In' ? values[0] === '' : values[0] !== '';
}

/** v1helper.MatchTopologySelectorTerms: no terms = anywhere; otherwise any term whose every expression holds. */
function topologyMatches(terms: StorageClass['allowedTopologies'] | null, labels: Readonly<Record<string, string>>): boolean {
  if (terms === null || terms === undefined || terms.length === 0) return true;
  for (const t of terms) {
    if (t.matchLabelExpressions.every((e) => labels[e.key] !== undefined && e.values.includes(labels[e.key] as string))) return true;
  }
  return false;
}

export interface NodeVolumes {
  readonly reason: ReasonCode;
  readonly binds: readonly VolumeChoice[];
  readonly provisions: readonly string[];
}

const NO_CHOICE: readonly never[] = [];

/** kube's Filters of the three plugins for one node, and the choice VolumeBinding would assume there. */
export function volumesOnNode(v: ResolvedVolumes, node: NodeState): NodeVolumes {
  if (v.rwopConflict) return { reason: Reason.ReadWriteOncePodConflict, binds: NO_CHOICE, provisions: NO_CHOICE };
  // Node labels as the topology plugins read them: a cluster file's nodes have their hostname and zone by place.
  const labels = labelsWithPlace(node.spec);
  for (const b of v.bound)
    if (!pvAffinityMatches(b.nodeAffinity, labels)) return { reason: Reason.VolumeNodeConflict, binds: NO_CHOICE, provisions: NO_CHOICE };
  let binds: VolumeChoice[] | undefined;
  let provisions: string[] | undefined;
  if (v.unbound.length > 0) {
    for (const u of v.unbound)
      if (u.selectedNode !== undefined && u.selectedNode !== node.spec.name)
        return { reason: Reason.VolumeBindConflict, binds: NO_CHOICE, provisions: NO_CHOICE };
    const chosen = new Set<string>();
    for (const u of v.unbound) {
      let pick: string | undefined;
      if (u.selectedNode === undefined) {
        for (const c of u.candidates) {
          if (chosen.has(c.name) || !pvAffinityMatches(c.nodeAffinity, labels)) continue;
          pick = c.name;
          break;
        }
      }
      if (pick !== undefined) {
        chosen.add(pick);
        (binds ??= []).push({ claim: u.claim, pv: pick });
        continue;
      }
      if (u.provision === undefined || !topologyMatches(u.provision, labels))
        return { reason: Reason.VolumeBindConflict, binds: NO_CHOICE, provisions: NO_CHOICE };
      (provisions ??= []).push(u.claim);
    }
  }
  if (v.bound.length > 0 && hasZoneLabel(labels)) {
    for (const b of v.bound) {
      for (const z of b.zones) {
        const nv = labels[z.key] ?? (GA_OF[z.key] === undefined ? undefined : labels[GA_OF[z.key] as string]);
        if (nv === undefined || !z.values.includes(nv)) return { reason: Reason.VolumeZoneConflict, binds: NO_CHOICE, provisions: NO_CHOICE };
      }
    }
  }
  return { reason: Reason.Fits, binds: binds ?? NO_CHOICE, provisions: provisions ?? NO_CHOICE };
}

function hasZoneLabel(labels: Readonly<Record<string, string>>): boolean {
  for (const k of ZONE_LABELS) if (labels[k] !== undefined) return true;
  return false;
}

/** VolumeRestrictions' disk check: one of the pod's inline disks conflicts with a disk of a pod on the node. */
export function diskConflict(disks: readonly InlineDisk[], node: NodeState): boolean {
  const on = node.disks;
  if (on === undefined) return false;
  for (const theirs of on.values()) for (const a of disks) for (const b of theirs) if (disksConflict(a, b)) return true;
  return false;
}

/** The filter's verdict for the node (fit's last step, ADR 0070). */
export const volumeFilter = (v: ResolvedVolumes, node: NodeState): ReasonCode => volumesOnNode(v, node).reason;

/** What the allocation of a pod with these volumes on `node` carries. */
export function allocationVolumes(v: ResolvedVolumes, node: NodeState): AllocationVolumes {
  const r = volumesOnNode(v, node);
  return { claims: v.claims, binds: r.binds, provisions: r.provisions };
}
