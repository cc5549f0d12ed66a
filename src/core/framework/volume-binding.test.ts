import { describe, expect, it } from 'vitest';
import { makePod, type PodSpec } from '../model/pod.ts';
import { disksConflict, type InlineDisk, type PersistentVolume, type PersistentVolumeClaim, type ResolvedVolumes, type StorageClass } from '../model/volume.ts';
import type { NodeSpec } from '../model/node.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import { ClusterState, type NodeState } from '../snapshot/cluster-state.ts';
import { VolumeCatalog } from '../snapshot/volume-catalog.ts';
import { Reason } from './reasons.ts';
import { allocationVolumes, diskConflict, resolvePodVolumes, volumeFilter } from './volume-binding.ts';

const GI = 1024 ** 3;
const onHost = (h: string): NonNullable<PersistentVolume['nodeAffinity']> => [
  { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [h] }] },
];
const pv = (name: string, o: Partial<PersistentVolume> = {}): PersistentVolume => ({
  name,
  capacityBytes: 10 * GI,
  accessModes: ['ReadWriteOnce'],
  storageClassName: 'local',
  volumeMode: 'Filesystem',
  labels: {},
  phase: 'Available',
  deleting: false,
  ...o,
});
const pvc = (name: string, o: Partial<PersistentVolumeClaim> = {}): PersistentVolumeClaim => ({
  namespace: 'default',
  name,
  storageClassName: 'local',
  accessModes: ['ReadWriteOnce'],
  requestBytes: 5 * GI,
  volumeMode: 'Filesystem',
  bindCompleted: false,
  phase: 'Pending',
  deleting: false,
  ...o,
});
const CLASSES: StorageClass[] = [
  { name: 'local', provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer' },
  {
    name: 'csi',
    provisioner: 'csi.example.com',
    volumeBindingMode: 'WaitForFirstConsumer',
    allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['b'] }] }],
  },
  { name: 'now', provisioner: 'csi.example.com', volumeBindingMode: 'Immediate' },
];

function makeNode(name: string, zone: string, labels: Record<string, string>): NodeSpec {
  const s = NODE_SHAPES['l4x8'];
  if (s === undefined) throw new Error('no preset');
  return {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone, block: '', rack: '' },
    labels,
    taints: [],
    unschedulable: false,
  };
}

function cluster(volumes: PersistentVolume[], claims: PersistentVolumeClaim[]): { state: ClusterState; nodes: NodeState[] } {
  const specs = ['n0', 'n1', 'n2'].map((n, i) => makeNode(n, i < 2 ? 'a' : 'b', { 'kubernetes.io/hostname': n }));
  const state = new ClusterState(specs);
  state.volumes = new VolumeCatalog({ volumes, claims, classes: CLASSES });
  return { state, nodes: [...state.nodes] };
}
const using = (...claims: string[]): PodSpec => makePod('p', {}, { claims: claims.map((name) => ({ name })) });
function resolved(state: ClusterState, pod: PodSpec): ResolvedVolumes {
  const r = resolvePodVolumes(pod, state.volumes);
  if (!r.ok) throw new Error(r.reason);
  return r.volumes;
}
const verdicts = (state: ClusterState, pod: PodSpec): number[] => {
  const v = resolved(state, pod);
  return state.nodes.map((n) => volumeFilter(v, n));
};

describe('VolumeBinding PreFilter', () => {
  it('names a missing, lost or deleting claim, an unbound Immediate one and a bound one whose PV is gone', () => {
    const { state } = cluster(
      [],
      [
        pvc('lost', { phase: 'Lost', volumeName: 'gone' }),
        pvc('del', { deleting: true }),
        pvc('imm', { storageClassName: 'now' }),
        pvc('noclass', { storageClassName: '' }),
        pvc('bound', { volumeName: 'gone', bindCompleted: true, phase: 'Bound' }),
      ],
    );
    const why = (pod: PodSpec): string => {
      const r = resolvePodVolumes(pod, state.volumes);
      return r.ok ? 'ok' : r.reason;
    };
    expect(why(using('nope'))).toBe('persistentvolumeclaim "nope" not found');
    expect(why(makePod('p', {}, { claims: [{ name: 'p-data', ephemeral: true }] }))).toBe(
      'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-data"',
    );
    expect(why(using('lost'))).toBe('persistentvolumeclaim "lost" bound to non-existent persistentvolume "gone"');
    expect(why(using('del'))).toBe('persistentvolumeclaim "del" is being deleted');
    expect(why(using('imm'))).toBe('pod has unbound immediate PersistentVolumeClaims');
    expect(why(using('noclass'))).toBe('pod has unbound immediate PersistentVolumeClaims');
    expect(why(using('bound'))).toBe('persistentvolume "gone" not found');
    expect(resolvePodVolumes(using('x'), undefined)).toEqual({ ok: false, reason: 'persistentvolumeclaim "x" not found' });
  });
  it('a claim pre-bound by volumeName but not bind-completed waits like an Immediate one', () => {
    const { state } = cluster([pv('v')], [pvc('c', { volumeName: 'v' })]);
    expect(resolvePodVolumes(using('c'), state.volumes)).toEqual({ ok: false, reason: 'pod has unbound immediate PersistentVolumeClaims' });
  });
});

describe('VolumeBinding and VolumeZone filters', () => {
  it('a bound PV with node affinity admits only its node', () => {
    const { state } = cluster(
      [pv('v', { nodeAffinity: onHost('n1'), phase: 'Bound', claimRef: { namespace: 'default', name: 'c' } })],
      [pvc('c', { volumeName: 'v', bindCompleted: true, phase: 'Bound' })],
    );
    expect(verdicts(state, using('c'))).toEqual([Reason.VolumeNodeConflict, Reason.Fits, Reason.VolumeNodeConflict]);
  });
  it('unbound WaitForFirstConsumer: the smallest PV that matches class, size, mode, access modes, selector and node', () => {
    const vols = [
      pv('big-n0', { capacityBytes: 100 * GI, nodeAffinity: onHost('n0') }),
      pv('small-n0', { capacityBytes: 6 * GI, nodeAffinity: onHost('n0') }),
      pv('tiny-n1', { capacityBytes: 1 * GI, nodeAffinity: onHost('n1') }),
      pv('block-n1', { volumeMode: 'Block', nodeAffinity: onHost('n1') }),
      pv('rox-n1', { accessModes: ['ReadOnlyMany'], nodeAffinity: onHost('n1') }),
      pv('taken-n1', { claimRef: { namespace: 'default', name: 'other' }, nodeAffinity: onHost('n1') }),
      pv('released-n1', { phase: 'Released', nodeAffinity: onHost('n1') }),
      pv('labelled-n2', { nodeAffinity: onHost('n2'), labels: { tier: 'slow' } }),
    ];
    const { state } = cluster(vols, [pvc('c'), pvc('sel', { selector: { matchLabels: { tier: 'fast' } } })]);
    expect(verdicts(state, using('c'))).toEqual([Reason.Fits, Reason.VolumeBindConflict, Reason.Fits]);
    const v = resolved(state, using('c'));
    expect(allocationVolumes(v, state.nodes[0] as NodeState)).toEqual({
      claims: ['default/c'],
      binds: [{ claim: 'default/c', pv: 'small-n0' }],
      provisions: [],
    });
    // The selector leaves out the only PV on n2.
    expect(verdicts(state, using('sel'))).toEqual([Reason.VolumeBindConflict, Reason.VolumeBindConflict, Reason.VolumeBindConflict]);
  });
  it('two claims of one pod never take the same PV; a PV pre-bound to a claim is its only match', () => {
    const { state } = cluster(
      [
        pv('a', { nodeAffinity: onHost('n0') }),
        pv('b', { nodeAffinity: onHost('n1') }),
        pv('mine', { claimRef: { namespace: 'default', name: 'pre' }, nodeAffinity: onHost('n2') }),
      ],
      [pvc('c1'), pvc('c2'), pvc('pre')],
    );
    expect(verdicts(state, using('c1', 'c2'))).toEqual([Reason.VolumeBindConflict, Reason.VolumeBindConflict, Reason.VolumeBindConflict]);
    expect(verdicts(state, using('pre'))).toEqual([Reason.VolumeBindConflict, Reason.VolumeBindConflict, Reason.Fits]);
  });
  it('provisioning follows the class: a provisioner and allowedTopologies; selected-node pins the node', () => {
    const { state } = cluster([], [pvc('dyn', { storageClassName: 'csi' }), pvc('sel', { storageClassName: 'csi', selectedNode: 'n1' }), pvc('none')]);
    expect(verdicts(state, using('dyn'))).toEqual([Reason.VolumeBindConflict, Reason.VolumeBindConflict, Reason.Fits]);
    expect(allocationVolumes(resolved(state, using('dyn')), state.nodes[2] as NodeState).provisions).toEqual(['default/dyn']);
    // n1 is outside the class's topology: selected-node there cannot be provisioned either.
    expect(verdicts(state, using('sel'))).toEqual([Reason.VolumeBindConflict, Reason.VolumeBindConflict, Reason.VolumeBindConflict]);
    // no-provisioner and no PV: nowhere.
    expect(verdicts(state, using('none'))).toEqual([Reason.VolumeBindConflict, Reason.VolumeBindConflict, Reason.VolumeBindConflict]);
  });
  it('VolumeZone: zone and region labels of bound PVs, `__` sets, beta keys against GA node labels; nodes without any zone label pass', () => {
    const bound = (name: string, labels: Record<string, string>): [PersistentVolume, PersistentVolumeClaim] => [
      pv(name, { labels, phase: 'Bound', claimRef: { namespace: 'default', name } }),
      pvc(name, { volumeName: name, bindCompleted: true, phase: 'Bound' }),
    ];
    const [a, ca] = bound('za', { 'topology.kubernetes.io/zone': 'a' });
    const [ab, cab] = bound('zab', { 'failure-domain.beta.kubernetes.io/zone': 'a__b' });
    const { state } = cluster([a, ab], [ca, cab]);
    expect(verdicts(state, using('za'))).toEqual([Reason.Fits, Reason.Fits, Reason.VolumeZoneConflict]);
    expect(verdicts(state, using('zab'))).toEqual([Reason.Fits, Reason.Fits, Reason.Fits]);
    const bare = new ClusterState([makeNode('x', '', { 'kubernetes.io/hostname': 'x' })]);
    bare.volumes = new VolumeCatalog({ volumes: [a], claims: [ca], classes: CLASSES });
    const v = resolvePodVolumes(using('za'), bare.volumes);
    expect(v.ok && volumeFilter(v.volumes, bare.nodes[0] as NodeState)).toBe(Reason.Fits);
  });
  it('assumptions follow allocations: a PV taken by an allocation is not offered again, and comes back on release', () => {
    const { state } = cluster([pv('a', { nodeAffinity: onHost('n0') })], [pvc('c1'), pvc('c2')]);
    const v1 = resolved(state, using('c1'));
    state.allocate({
      podId: 'p1',
      node: 'n0',
      gpus: [],
      gpuMilli: 0,
      cpuMilli: 0,
      memoryMiB: 0,
      priority: 0,
      queue: 'default',
      volumes: allocationVolumes(v1, state.nodes[0] as NodeState),
    });
    expect(verdicts(state, using('c2'))[0]).toBe(Reason.VolumeBindConflict);
    // The claim that took it sees its PV as pre-bound (kube's assume cache), on that node only.
    expect(verdicts(state, using('c1'))).toEqual([Reason.Fits, Reason.VolumeBindConflict, Reason.VolumeBindConflict]);
    state.release('p1');
    expect(verdicts(state, using('c2'))[0]).toBe(Reason.Fits);
  });
});

describe('VolumeRestrictions', () => {
  it('a ReadWriteOncePod claim another allocated pod uses fails every node (resolvable), and frees with it', () => {
    const { state } = cluster(
      [pv('v', { accessModes: ['ReadWriteOncePod'], phase: 'Bound', claimRef: { namespace: 'default', name: 'once' } })],
      [pvc('once', { accessModes: ['ReadWriteOncePod'], volumeName: 'v', bindCompleted: true, phase: 'Bound' })],
    );
    expect(verdicts(state, using('once'))).toEqual([Reason.Fits, Reason.Fits, Reason.Fits]);
    state.allocate({
      podId: 'holder',
      node: 'n1',
      gpus: [],
      gpuMilli: 0,
      cpuMilli: 0,
      memoryMiB: 0,
      priority: 0,
      queue: 'default',
      volumes: { claims: ['default/once'], binds: [], provisions: [] },
    });
    expect(verdicts(state, using('once'))).toEqual([Reason.ReadWriteOncePodConflict, Reason.ReadWriteOncePodConflict, Reason.ReadWriteOncePodConflict]);
    state.release('holder');
    expect(verdicts(state, using('once'))).toEqual([Reason.Fits, Reason.Fits, Reason.Fits]);
  });
});

describe('VolumeRestrictions disk conflicts (kube isVolumeConflict)', () => {
  it('GCE PD and iSCSI share only read-only, EBS never, RBD when a monitor, the pool and the image are shared', () => {
    const d = (kind: InlineDisk['kind'], id: string, readOnly: boolean, monitors?: string[]): InlineDisk => ({
      kind,
      id,
      readOnly,
      ...(monitors === undefined ? {} : { monitors }),
    });
    expect(disksConflict(d('gce', 'a', true), d('gce', 'a', true))).toBe(false);
    expect(disksConflict(d('gce', 'a', true), d('gce', 'a', false))).toBe(true);
    expect(disksConflict(d('gce', 'a', false), d('gce', 'b', false))).toBe(false);
    expect(disksConflict(d('aws', 'v', true), d('aws', 'v', true))).toBe(true);
    expect(disksConflict(d('iscsi', 'iqn', false), d('iscsi', 'iqn', true))).toBe(true);
    expect(disksConflict(d('rbd', 'rbd/img', false, ['m1', 'm2']), d('rbd', 'rbd/img', false, ['m2']))).toBe(true);
    expect(disksConflict(d('rbd', 'rbd/img', false, ['m1']), d('rbd', 'rbd/img', false, ['m3']))).toBe(false);
    expect(disksConflict(d('gce', 'a', false), d('aws', 'a', false))).toBe(false);
  });
  it('a node holding a pod with the disk read-write refuses another pod using it', () => {
    const { state } = cluster([], []);
    const disk: InlineDisk = { kind: 'gce', id: 'pd', readOnly: false };
    state.allocate({ podId: 'holder', node: 'n0', gpus: [], gpuMilli: 0, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'default', disks: [disk] });
    expect(state.nodes.map((n) => diskConflict([{ ...disk, readOnly: true }], n))).toEqual([true, false, false]);
    state.release('holder');
    expect(diskConflict([disk], state.nodes[0] as NodeState)).toBe(false);
  });
});
