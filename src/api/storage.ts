/**
 * PersistentVolumes, PersistentVolumeClaims and StorageClasses read from their Kubernetes form (core/v1,
 * storage.k8s.io/v1) into the core's model, for the live cache and for scenario files alike. Only what the volume
 * plugins read (ADR 0070); the apiserver has validated live objects, files get an error naming the field.
 */
import type { LabelSelector, NodeSelectorTerm } from '../core/model/pod.ts';
import type {
  AccessMode,
  InlineDisk,
  PersistentVolume,
  PodClaim,
  PersistentVolumeClaim,
  StorageClass,
  TopologySelectorTerm,
  VolumeMode,
} from '../core/model/volume.ts';
import { err, ok, type Result } from '../core/result.ts';
import { readResourceQuantity } from './pod-resources.ts';
import type { QuantityValue } from './quantity.ts';

interface Meta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly deletionTimestamp?: unknown;
}
interface SelectorTermLike {
  readonly matchExpressions?: readonly { readonly key: string; readonly operator: string; readonly values?: readonly string[] }[];
  readonly matchFields?: readonly { readonly key: string; readonly operator: string; readonly values?: readonly string[] }[];
}
export interface PersistentVolumeLike {
  readonly metadata?: Meta;
  readonly spec?: {
    readonly capacity?: Readonly<Record<string, QuantityValue>>;
    readonly accessModes?: readonly string[];
    readonly storageClassName?: string;
    readonly volumeMode?: string;
    readonly nodeAffinity?: { readonly required?: { readonly nodeSelectorTerms?: readonly SelectorTermLike[] } };
    readonly claimRef?: { readonly namespace?: string; readonly name?: string; readonly uid?: string };
  };
  readonly status?: { readonly phase?: string };
}
export interface PersistentVolumeClaimLike {
  readonly metadata?: Meta;
  readonly spec?: {
    readonly storageClassName?: string;
    readonly accessModes?: readonly string[];
    readonly resources?: { readonly requests?: Readonly<Record<string, QuantityValue>> };
    readonly volumeMode?: string;
    readonly volumeName?: string;
    readonly selector?: LabelSelector;
  };
  readonly status?: { readonly phase?: string };
}
export interface StorageClassLike {
  readonly metadata?: Meta;
  readonly provisioner?: string;
  readonly volumeBindingMode?: string;
  readonly allowedTopologies?: readonly { readonly matchLabelExpressions?: readonly { readonly key: string; readonly values: readonly string[] }[] }[];
}

export const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
export const ANN_BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
export const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
const ANN_BETA_CLASS = 'volume.beta.kubernetes.io/storage-class';

const ACCESS_MODES: readonly AccessMode[] = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'];
const NODE_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'] as const;

function accessModes(modes: readonly string[] | undefined, field: string): Result<AccessMode[], string> {
  const out: AccessMode[] = [];
  for (const [i, m] of (modes ?? []).entries()) {
    if (!(ACCESS_MODES as readonly string[]).includes(m)) return err(`${field}[${i}]: "${m}" is not an access mode (${ACCESS_MODES.join(', ')})`);
    out.push(m as AccessMode);
  }
  return ok(out);
}

function volumeMode(m: string | undefined, field: string): Result<VolumeMode, string> {
  if (m === undefined || m === 'Filesystem') return ok('Filesystem');
  if (m === 'Block') return ok('Block');
  return err(`${field}: "${m}" is not a volume mode (Filesystem, Block)`);
}

function storageBytes(q: Readonly<Record<string, QuantityValue>> | undefined, field: string): Result<number, string> {
  const v = q?.['storage'];
  if (v === undefined) return ok(0);
  // Bytes, rounded up as resource.Quantity.Value() does.
  return readResourceQuantity('ephemeral-storage', v, `${field}[storage]`);
}

function nodeTerms(terms: readonly SelectorTermLike[], field: string): Result<NodeSelectorTerm[], string> {
  const out: NodeSelectorTerm[] = [];
  for (const [i, t] of terms.entries()) {
    const reqs = (list: SelectorTermLike['matchExpressions'], what: string): Result<NodeSelectorTerm['matchExpressions'], string> => {
      if (list === undefined) return ok(undefined);
      const r = [];
      for (const [j, e] of list.entries()) {
        if (!(NODE_OPERATORS as readonly string[]).includes(e.operator))
          return err(`${field}[${i}].${what}[${j}].operator: "${e.operator}" is not one of ${NODE_OPERATORS.join(', ')}`);
        r.push({ key: e.key, operator: e.operator as (typeof NODE_OPERATORS)[number], ...(e.values === undefined ? {} : { values: e.values }) });
      }
      return ok(r);
    };
    const ex = reqs(t.matchExpressions, 'matchExpressions');
    if (!ex.ok) return ex;
    const fi = reqs(t.matchFields, 'matchFields');
    if (!fi.ok) return fi;
    out.push({ ...(ex.value === undefined ? {} : { matchExpressions: ex.value }), ...(fi.value === undefined ? {} : { matchFields: fi.value }) });
  }
  return ok(out);
}

export function readPersistentVolume(o: PersistentVolumeLike, where = 'persistentvolume'): Result<PersistentVolume, string> {
  const name = o.metadata?.name ?? '';
  const at = `${where} ${name}`;
  if (name === '') return err(`${where}: metadata.name is required`);
  const cap = storageBytes(o.spec?.capacity, `${at}: spec.capacity`);
  if (!cap.ok) return cap;
  const modes = accessModes(o.spec?.accessModes, `${at}: spec.accessModes`);
  if (!modes.ok) return modes;
  const mode = volumeMode(o.spec?.volumeMode, `${at}: spec.volumeMode`);
  if (!mode.ok) return mode;
  const req = o.spec?.nodeAffinity?.required;
  const affinity = req === undefined ? undefined : nodeTerms(req.nodeSelectorTerms ?? [], `${at}: spec.nodeAffinity.required.nodeSelectorTerms`);
  if (affinity !== undefined && !affinity.ok) return affinity;
  const ref = o.spec?.claimRef;
  const phase = o.status?.phase ?? 'Pending';
  if (!['Pending', 'Available', 'Bound', 'Released', 'Failed'].includes(phase)) return err(`${at}: status.phase: "${phase}" is not a volume phase`);
  return ok({
    name,
    capacityBytes: cap.value,
    accessModes: modes.value,
    storageClassName: o.metadata?.annotations?.[ANN_BETA_CLASS] ?? o.spec?.storageClassName ?? '',
    volumeMode: mode.value,
    ...(affinity === undefined ? {} : { nodeAffinity: affinity.value }),
    labels: o.metadata?.labels ?? {},
    ...(ref?.name === undefined
      ? {}
      : { claimRef: { namespace: ref.namespace ?? 'default', name: ref.name, ...(ref.uid === undefined || ref.uid === '' ? {} : { uid: ref.uid }) } }),
    phase: phase as PersistentVolume['phase'],
    deleting: o.metadata?.deletionTimestamp !== undefined && o.metadata.deletionTimestamp !== null,
  });
}

export function readPersistentVolumeClaim(o: PersistentVolumeClaimLike, where = 'persistentvolumeclaim'): Result<PersistentVolumeClaim, string> {
  const name = o.metadata?.name ?? '';
  const namespace = o.metadata?.namespace ?? 'default';
  const at = `${where} ${namespace}/${name}`;
  if (name === '') return err(`${where}: metadata.name is required`);
  const req = storageBytes(o.spec?.resources?.requests, `${at}: spec.resources.requests`);
  if (!req.ok) return req;
  const modes = accessModes(o.spec?.accessModes, `${at}: spec.accessModes`);
  if (!modes.ok) return modes;
  const mode = volumeMode(o.spec?.volumeMode, `${at}: spec.volumeMode`);
  if (!mode.ok) return mode;
  const ann = o.metadata?.annotations ?? {};
  const phase = o.status?.phase ?? 'Pending';
  if (!['Pending', 'Bound', 'Lost'].includes(phase)) return err(`${at}: status.phase: "${phase}" is not a claim phase`);
  const vn = o.spec?.volumeName;
  const uid = o.metadata?.uid;
  const sel = ann[ANN_SELECTED_NODE];
  return ok({
    namespace,
    name,
    ...(uid === undefined || uid === '' ? {} : { uid }),
    // kube's GetPersistentVolumeClaimClass: the beta annotation first, then the field.
    storageClassName: ann[ANN_BETA_CLASS] ?? o.spec?.storageClassName ?? '',
    accessModes: modes.value,
    requestBytes: req.value,
    volumeMode: mode.value,
    ...(vn === undefined || vn === '' ? {} : { volumeName: vn }),
    bindCompleted: Object.hasOwn(ann, ANN_BIND_COMPLETED),
    phase: phase as PersistentVolumeClaim['phase'],
    ...(sel === undefined ? {} : { selectedNode: sel }),
    ...(o.spec?.selector === undefined || o.spec.selector === null ? {} : { selector: o.spec.selector }),
    deleting: o.metadata?.deletionTimestamp !== undefined && o.metadata.deletionTimestamp !== null,
  });
}

export function readStorageClass(o: StorageClassLike, where = 'storageclass'): Result<StorageClass, string> {
  const name = o.metadata?.name ?? '';
  const at = `${where} ${name}`;
  if (name === '') return err(`${where}: metadata.name is required`);
  const mode = o.volumeBindingMode ?? 'Immediate';
  if (mode !== 'Immediate' && mode !== 'WaitForFirstConsumer') return err(`${at}: volumeBindingMode: "${mode}" is not Immediate or WaitForFirstConsumer`);
  const topo: TopologySelectorTerm[] | undefined = o.allowedTopologies?.map((t) => ({
    matchLabelExpressions: (t.matchLabelExpressions ?? []).map((e) => ({ key: e.key, values: e.values })),
  }));
  return ok({
    name,
    provisioner: o.provisioner ?? '',
    volumeBindingMode: mode,
    ...(topo === undefined || topo.length === 0 ? {} : { allowedTopologies: topo }),
  });
}

export interface PodVolumeLike {
  readonly name: string;
  readonly persistentVolumeClaim?: { readonly claimName: string; readonly readOnly?: boolean };
  readonly ephemeral?: unknown;
  readonly gcePersistentDisk?: { readonly pdName: string; readonly readOnly?: boolean };
  readonly awsElasticBlockStore?: { readonly volumeID: string; readonly readOnly?: boolean };
  readonly iscsi?: { readonly iqn: string; readonly readOnly?: boolean };
  readonly rbd?: { readonly monitors: readonly string[]; readonly image: string; readonly pool?: string; readonly readOnly?: boolean };
}

/** The inline disks VolumeRestrictions keeps apart on a node (RBD pool defaults to `rbd`, as the apiserver defaults it). */
export function podInlineDisks(volumes: readonly PodVolumeLike[] | undefined): InlineDisk[] {
  const out: InlineDisk[] = [];
  for (const v of volumes ?? []) {
    if (v.gcePersistentDisk != null) out.push({ kind: 'gce', id: v.gcePersistentDisk.pdName, readOnly: v.gcePersistentDisk.readOnly === true });
    if (v.awsElasticBlockStore != null) out.push({ kind: 'aws', id: v.awsElasticBlockStore.volumeID, readOnly: v.awsElasticBlockStore.readOnly === true });
    if (v.iscsi != null) out.push({ kind: 'iscsi', id: v.iscsi.iqn, readOnly: v.iscsi.readOnly === true });
    if (v.rbd != null) out.push({ kind: 'rbd', id: `${v.rbd.pool ?? 'rbd'}/${v.rbd.image}`, readOnly: v.rbd.readOnly === true, monitors: v.rbd.monitors });
  }
  return out;
}

/**
 * The claims a pod's volumes use: `persistentVolumeClaim.claimName`, and for a generic ephemeral volume the claim
 * its controller creates, `<pod name>-<volume name>` (kube's ephemeral.VolumeClaimName). Other volume kinds use none.
 */
export function podClaims(volumes: readonly PodVolumeLike[] | undefined, podName: string): PodClaim[] {
  const out: PodClaim[] = [];
  for (const v of volumes ?? []) {
    if (v.persistentVolumeClaim !== undefined && v.persistentVolumeClaim !== null)
      out.push({ name: v.persistentVolumeClaim.claimName, ...(v.persistentVolumeClaim.readOnly === true ? { readOnly: true as const } : {}) });
    else if (v.ephemeral !== undefined && v.ephemeral !== null) out.push({ name: `${podName}-${v.name}`, ephemeral: true });
  }
  return out;
}
