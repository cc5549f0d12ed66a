import { describe, expect, it } from 'vitest';
import { podClaims, readPersistentVolume, readPersistentVolumeClaim, readStorageClass } from './storage.ts';

describe('storage objects from their Kubernetes form', () => {
  it('reads what the volume plugins need, with kube defaults and the beta class annotation first', () => {
    const pv = readPersistentVolume({
      metadata: { name: 'v', labels: { 'topology.kubernetes.io/zone': 'a' } },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'local',
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n0'] }] }] } },
        claimRef: { namespace: 'ns', name: 'c', uid: '' },
      },
      status: { phase: 'Available' },
    });
    expect(pv).toEqual({
      ok: true,
      value: {
        name: 'v',
        capacityBytes: 1024 ** 3,
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'local',
        volumeMode: 'Filesystem',
        nodeAffinity: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n0'] }] }],
        labels: { 'topology.kubernetes.io/zone': 'a' },
        claimRef: { namespace: 'ns', name: 'c' },
        phase: 'Available',
        deleting: false,
      },
    });
    const c = readPersistentVolumeClaim({
      metadata: {
        name: 'c',
        namespace: 'ns',
        uid: 'u1',
        annotations: { 'volume.beta.kubernetes.io/storage-class': 'old', 'pv.kubernetes.io/bind-completed': 'yes', 'volume.kubernetes.io/selected-node': 'n1' },
      },
      spec: { storageClassName: 'new', resources: { requests: { storage: '500M' } }, volumeName: 'v' },
      status: { phase: 'Bound' },
    });
    expect(c.ok && c.value).toMatchObject({
      storageClassName: 'old',
      requestBytes: 500_000_000,
      volumeName: 'v',
      bindCompleted: true,
      selectedNode: 'n1',
      uid: 'u1',
      phase: 'Bound',
    });
    expect(readStorageClass({ metadata: { name: 's' }, provisioner: 'p' })).toEqual({
      ok: true,
      value: { name: 's', provisioner: 'p', volumeBindingMode: 'Immediate' },
    });
  });
  it('names the field of bad input', () => {
    expect(readPersistentVolume({ metadata: { name: 'v' }, spec: { accessModes: ['ReadWriteSometimes'] } })).toEqual({
      ok: false,
      error:
        'persistentvolume v: spec.accessModes[0]: "ReadWriteSometimes" is not an access mode (ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod)',
    });
    expect(readPersistentVolumeClaim({ metadata: { name: 'c' }, spec: { resources: { requests: { storage: 'lots' } } } })).toMatchObject({
      ok: false,
      error: expect.stringContaining('persistentvolumeclaim default/c: spec.resources.requests[storage]'),
    });
    expect(readStorageClass({ metadata: { name: 's' }, volumeBindingMode: 'Later' })).toEqual({
      ok: false,
      error: 'storageclass s: volumeBindingMode: "Later" is not Immediate or WaitForFirstConsumer',
    });
  });
  it('a pod uses the claims of its persistentVolumeClaim and generic ephemeral volumes', () => {
    expect(
      podClaims(
        [{ name: 'a', persistentVolumeClaim: { claimName: 'data' } }, { name: 'scratch', ephemeral: { volumeClaimTemplate: {} } }, { name: 'tmp' }],
        'web-0',
      ),
    ).toEqual([{ name: 'data' }, { name: 'web-0-scratch', ephemeral: true }]);
  });
});
