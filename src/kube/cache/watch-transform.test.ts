import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { StringPool, watchTransform } from './watch-transform.ts';

// A bound 1-GPU pod as kube-apiserver returns it (defaults, admission's tolerations, two managers' managedFields).
const podJson = (i: number): string =>
  JSON.stringify({
    metadata: {
      name: `pod-${String(i).padStart(6, '0')}`,
      namespace: 'bench',
      uid: `6f1c2d3e-0000-4000-8000-${String(i).padStart(12, '0')}`,
      resourceVersion: String(1000 + i),
      creationTimestamp: `2026-12-06T16:${String(i % 60).padStart(2, '0')}:00Z`,
      labels: { app: 'sits-bench' },
      annotations: { 'sits2026.dev/gpu-indices': String(i % 16) },
      managedFields: [
        {
          manager: 'sits-bench-creator',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-12-06T16:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
            'f:spec': {
              'f:containers': {
                'k:{"name":"pause"}': {
                  '.': {},
                  'f:image': {},
                  'f:imagePullPolicy': {},
                  'f:name': {},
                  'f:resources': { '.': {}, 'f:limits': { '.': {}, 'f:cpu': {}, 'f:memory': {}, 'f:nvidia.com/gpu': {} } },
                  'f:terminationMessagePath': {},
                  'f:terminationMessagePolicy': {},
                },
              },
              'f:dnsPolicy': {},
              'f:enableServiceLinks': {},
              'f:restartPolicy': {},
              'f:schedulerName': {},
              'f:securityContext': {},
              'f:terminationGracePeriodSeconds': {},
            },
          },
        },
        {
          manager: 'sits-scheduler',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-12-06T16:00:01Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {}, 'f:sits2026.dev/gpu-indices': {} } } },
          subresource: 'binding',
        },
      ],
    },
    spec: {
      containers: [
        {
          name: 'pause',
          image: 'registry.k8s.io/pause:3.10',
          resources: {
            limits: { cpu: '100m', memory: '500Mi', 'nvidia.com/gpu': '1' },
            requests: { cpu: '100m', memory: '500Mi', 'nvidia.com/gpu': '1' },
          },
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 0,
      dnsPolicy: 'ClusterFirst',
      nodeName: `node-${String(i % 500).padStart(5, '0')}`,
      securityContext: {},
      schedulerName: 'sits-scheduler',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    status: {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-12-06T16:00:01Z' }],
      qosClass: 'Guaranteed',
    },
  });

/** Heap bytes that `make()`'s result keeps alive (measured around a full GC; --expose-gc turned on at run time). */
function heldBytes(make: () => unknown[]): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept = make();
  gc();
  const held = process.memoryUsage().heapUsed - before;
  expect(kept.length).toBeGreaterThan(0);
  return held;
}

describe('watchTransform', () => {
  it('drops managedFields and keeps every other field as it was', () => {
    const raw = JSON.parse(podJson(7)) as V1Pod;
    const expected = structuredClone(raw);
    delete expected.metadata?.managedFields;
    const slim = watchTransform(new StringPool())(JSON.parse(podJson(7)) as V1Pod);
    expect(slim).toEqual(expected);
    expect(slim.metadata?.managedFields).toBeUndefined();
  });

  it('3,000 watched pods hold less than 40 % of the heap once transformed', () => {
    const n = 3000;
    const texts = Array.from({ length: n }, (_, i) => podJson(i));
    const raw = heldBytes(() => texts.map((t) => JSON.parse(t) as V1Pod));
    const slim = watchTransform(new StringPool());
    const transformed = heldBytes(() => texts.map((t) => slim(JSON.parse(t) as V1Pod)));
    // Measured: 3.7 KB per raw pod, 2.0 KB without managedFields, 1.5 KB with its strings pooled too but managedFields
    // `delete`d (the metadata object becomes a dictionary), 1.2 KB as done.
    expect(raw / n).toBeGreaterThan(2000);
    expect(transformed).toBeLessThan(raw * 0.4);
  });

  it('shares repeated values but not the unique metadata fields', () => {
    const pool = new StringPool();
    const slim = watchTransform(pool);
    slim(JSON.parse(podJson(1)) as V1Pod);
    const first = pool.size;
    const hitsBefore = pool.hits;
    slim(JSON.parse(podJson(2)) as V1Pod);
    // The second pod finds its image, tolerations, namespace… in the pool; name, uid, resourceVersion, creationTimestamp
    // are never pooled, and only its node name and GPU index are new.
    expect(pool.hits - hitsBefore).toBeGreaterThanOrEqual(20);
    expect(pool.size - first).toBe(2);
  });
});

describe('StringPool', () => {
  it('stays bounded whatever it sees, keeping the strings still in use', () => {
    const pool = new StringPool(1000);
    for (let i = 0; i < 100_000; i++) {
      pool.intern(`unique-${i}`);
      if (i % 500 === 0) pool.intern('hot');
    }
    expect(pool.size).toBeLessThanOrEqual(2000);
    const hits = pool.hits;
    pool.intern('hot');
    expect(pool.hits).toBe(hits + 1);
  });

  it('refuses a capacity that is not a positive integer, naming it', () => {
    expect(() => new StringPool(0)).toThrow(/StringPool capacity must be a positive integer, got 0/);
  });
});
