import { describe, expect, it } from 'vitest';
import { loadWorkloadText, type WorkloadUnit } from './workload-file.ts';
import type { InputIssue } from './yaml-source.ts';
import type { GangSpec, PodSpec } from '../core/model/pod.ts';

const yaml = (...lines: string[]): string => `${lines.join('\n')}\n`;

function units(text: string): WorkloadUnit[] {
  const r = loadWorkloadText('jobs.yaml', text);
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
}

function issues(text: string): readonly InputIssue[] {
  const r = loadWorkloadText('jobs.yaml', text);
  if (r.ok) throw new Error('expected an input error');
  return r.error.issues;
}

const brief = (i: InputIssue): [string, number, number, string] => [i.field, i.line, i.column, i.message];

function pod(u: WorkloadUnit | undefined): PodSpec {
  if (u?.kind !== 'pod') throw new Error('expected a pod');
  return u.pod;
}
function gang(u: WorkloadUnit | undefined): GangSpec {
  if (u?.kind !== 'gang') throw new Error('expected a gang');
  return u.gang;
}

describe('loadWorkloadText: valid files', () => {
  const text = yaml(
    'kind: Workload',
    'pods:',
    '  - {name: infer, count: 2, gpu: 0.5, cpuMilli: 4000, memoryMiB: 16384}',
    '  - {name: big, gpu: 2, gpuModels: [H100-SXM], minComputeCapability: sm_90, priority: 5, queue: prod}',
    '  - {name: milli, gpuMilli: 250, gpuMemoryMiB: 8192, arrivalSec: 30, durationSec: 60}',
    '  - name: cpu',
    '    nodeSelector: {pool: batch}',
    '    tolerations: [{key: spot, operator: Exists}]',
    '  - {gpu: 1, minComputeCapability: "8.0"}',
    'gangs:',
    '  - {name: train-a, replicas: 3, minMember: 2, pod: {gpu: 1}, topology: {required: rack, preferred: node}, priority: 7, queue: research, arrivalSec: 5}',
    '  - {name: train-b, replicas: 2, pod: {gpu: 8, priority: 3, queue: q2}}',
  );

  it('keeps file order: pods (expanded by count) first, then gangs', () => {
    const list = units(text);
    expect(list.map((u) => (u.kind === 'pod' ? u.pod.id : `gang ${u.gang.name}`))).toEqual([
      'infer-0',
      'infer-1',
      'big',
      'milli',
      'cpu',
      'pod-4',
      'gang train-a',
      'gang train-b',
    ]);
  });

  it('a fraction below 1 is one shared device; a whole number is that many devices; gpuMilli is a share of one', () => {
    const list = units(text);
    expect(pod(list[0]).request).toEqual({ cpuMilli: 4000, memoryMiB: 16_384, gpuCount: 1, gpuMilli: 500 });
    expect(pod(list[3]).request).toEqual({ cpuMilli: 1000, memoryMiB: 4096, gpuCount: 1, gpuMilli: 250, gpuMemoryMiB: 8192 });
    expect(pod(list[4]).request).toEqual({ cpuMilli: 1000, memoryMiB: 4096, gpuCount: 0, gpuMilli: 0 });
    const big = pod(list[2]);
    expect(big.request).toMatchObject({ gpuCount: 2, gpuMilli: 1000 });
    expect(big.gpuModels).toEqual(['H100-SXM']);
    expect(big.minComputeCapability).toBe(90);
    expect(big.priority).toBe(5);
    expect(big.queue).toBe('prod');
    expect(pod(list[5]).minComputeCapability).toBe(80);
  });

  it('selectors, tolerations and timing', () => {
    const list = units(text);
    expect(pod(list[4]).nodeSelector).toEqual({ pool: 'batch' });
    expect(pod(list[4]).tolerations).toEqual([{ key: 'spot', operator: 'Exists' }]);
    expect(list[3]?.timing).toEqual({ arrivalSec: 30, durationSec: 60 });
    expect(list[0]?.timing).toEqual({ arrivalSec: 0 });
  });

  it('gangs: members named <gang>-<k>, minMember defaulting to replicas, gang priority and queue over the pod template', () => {
    const list = units(text);
    const a = gang(list[6]);
    expect(a.minMember).toBe(2);
    expect(a.topology).toEqual({ required: 'rack', preferred: 'node' });
    expect(a.members.map((m) => [m.id, m.gang, m.priority, m.queue, m.request.gpuCount])).toEqual([
      ['train-a-0', 'train-a', 7, 'research', 1],
      ['train-a-1', 'train-a', 7, 'research', 1],
      ['train-a-2', 'train-a', 7, 'research', 1],
    ]);
    expect([a.priority, a.queue]).toEqual([7, 'research']);
    expect(list[6]?.timing).toEqual({ arrivalSec: 5 });
    const b = gang(list[7]);
    expect(b.minMember).toBe(2);
    expect(b.topology).toEqual({});
    expect(b.members.map((m) => [m.priority, m.queue])).toEqual([
      [3, 'q2'],
      [3, 'q2'],
    ]);
    expect([b.priority, b.queue]).toEqual([0, 'default']);
  });

  it('an empty workload is valid', () => {
    expect(units(yaml('kind: Workload'))).toEqual([]);
  });
});

describe('loadWorkloadText: errors name file, line, column and field', () => {
  it('schema errors: unknown field, wrong type, value outside an enumeration, unknown field in a gang pod template', () => {
    const found = issues(
      yaml(
        'pods:',
        '  - name: p',
        '    prio: 3',
        '  - name: q',
        '    gpu: two',
        'gangs:',
        '  - {name: g, replicas: 2, pod: {gpu: 1}, topology: {required: galaxy}}',
        '  - {name: h, replicas: 2, pod: {gpu: 1, name: x}}',
      ),
    );
    expect(found.map(brief)).toEqual([
      ['pods[0].prio', 3, 11, 'unknown field'],
      ['pods[1].gpu', 5, 10, 'Expected number (got "two")'],
      ['gangs[0].topology.required', 7, 64, '"galaxy" is not one of "node", "nvlink-domain", "rack", "block", "zone"'],
      ['gangs[1].pod.name', 8, 48, 'unknown field'],
    ]);
    expect(found.every((i) => i.file === 'jobs.yaml')).toBe(true);
  });

  it('pod rules: fractional device counts, gpuMilli with several devices, bad compute capability, duplicate names', () => {
    const found = issues(
      yaml(
        'pods:',
        '  - name: p',
        '    gpu: 1.5',
        '  - name: p',
        '  - {name: q, gpuMilli: 300, gpu: 2}',
        '  - {name: r, minComputeCapability: sm_x}',
        '  - {name: x, count: 2}',
        '  - {name: x-1}',
      ),
    );
    expect(found.map(brief)).toEqual([
      ['pods[0].gpu', 3, 10, '1.5 GPUs: use a whole number of devices, or a fraction below 1 for a shared device'],
      ['pods[1].name', 4, 11, 'duplicate name "p"'],
      ['pods[2].gpuMilli', 5, 25, 'gpuMilli describes one device: use it with gpu: 1 or without gpu'],
      [
        'pods[3].minComputeCapability',
        6,
        37,
        '"sm_x" is not a compute capability (use sm_90, 9.0, 9 or 90; 10 to 19 alone are ambiguous: write 12.0 or sm_120)',
      ],
      ['pods[5].name', 8, 12, 'duplicate name "x-1"'],
    ]);
  });

  it('malformed pod affinity and spread constraints are errors naming the field (ADR 0054)', () => {
    const found = issues(
      yaml(
        'pods:',
        '  - name: a',
        "    affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchExpressions: [{key: app, operator: In}]}, topologyKey: ''}]}}",
        '  - name: b',
        '    affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: x}}, matchLabelKeys: [app], topologyKey: k}]}}',
        '  - name: c',
        '    topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}, {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]',
      ),
    );
    expect(found.map((i) => [i.field, i.line, i.message])).toEqual([
      ['pods[0].affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey', 3, 'must not be empty'],
      [
        'pods[0].affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values',
        3,
        'In needs at least one value',
      ],
      ['pods[1].affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys[0]', 5, '"app" is also a key of labelSelector'],
      ['pods[2].topologySpreadConstraints[0].minDomains', 7, 'may only be set with whenUnsatisfiable: DoNotSchedule'],
      ['pods[2].topologySpreadConstraints[1]', 7, 'duplicate {topologyKey, whenUnsatisfiable} pair (zone, ScheduleAnyway)'],
    ]);
    const skew = issues(yaml('pods:', '  - {name: d, topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}'));
    expect(skew.map((i) => [i.field, i.line, i.message])).toEqual([
      ['pods[0].topologySpreadConstraints[0].maxSkew', 2, 'Expected integer to be greater or equal to 1 (got 0)'],
    ]);
  });

  it('Kubernetes fields the apiserver would reject: bad node selector requirements, matchFields, tolerations, quantities, mixed resource fields', () => {
    const found = issues(
      yaml(
        'pods:',
        '  - name: a',
        '    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: z, operator: In}, {key: g, operator: Gt, values: [x]}], matchFields: [{key: metadata.labels, operator: In, values: [v]}]}]}}}',
        '  - {name: b, tolerations: [{value: x}]}',
        '  - {name: c, containers: [{resources: {requests: {cpu: lots}}}]}',
        '  - {name: d, cpuMilli: 100, containers: [{}]}',
        '  - {name: e, affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelecter: {}, topologyKey: k}]}}}',
      ),
    );
    expect(found.map((i) => [i.field, i.line, i.message])).toEqual([
      ['pods[4].affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelecter', 7, 'unknown field'],
    ]);
    const rest = issues(
      yaml(
        'pods:',
        '  - name: a',
        '    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: z, operator: In}, {key: g, operator: Gt, values: [x]}], matchFields: [{key: metadata.labels, operator: In, values: [v]}]}]}}}',
        '  - {name: b, tolerations: [{value: x}]}',
        '  - {name: c, containers: [{resources: {requests: {cpu: lots}}}]}',
        '  - {name: d, cpuMilli: 100, containers: [{}]}',
      ),
    );
    expect(rest.map((i) => [i.field, i.line, i.message])).toEqual([
      [
        'pods[0].affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]',
        3,
        'In needs at least one value',
      ],
      [
        'pods[0].affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1]',
        3,
        'Gt takes exactly one integer value',
      ],
      [
        'pods[0].affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key',
        3,
        '"metadata.labels" is not a supported field (only metadata.name)',
      ],
      ['pods[1].tolerations[0].operator', 4, 'operator must be Exists when key is empty (it then tolerates every taint)'],
      ['pods[2].containers', 5, 'spec.containers[0].resources.requests[cpu]: "lots" is not a quantity (e.g. 500m, 1.5, 32Gi)'],
      ['pods[3].cpuMilli', 6, 'with containers, cpu comes from their resources'],
    ]);
  });

  it('Kubernetes fields: affinity, ports, gates and summed container resources reach the pod', () => {
    const p = pod(
      units(
        yaml(
          'pods:',
          '  - name: w',
          '    containers: [{resources: {requests: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: 2, rdma/hca: 1}}, ports: [{containerPort: 80, hostPort: 8080}]}]',
          '    overhead: {memory: 64Mi}',
          '    schedulingGates: [{name: g}]',
          '    affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, preference: {matchExpressions: [{key: ssd, operator: Exists}]}}]}}',
        ),
      )[0],
    );
    expect(p.request).toEqual({ cpuMilli: 500, memoryMiB: 1088, gpuCount: 2, gpuMilli: 1000, scalar: { 'rdma/hca': 1 } });
    expect(p.hostPorts).toEqual([{ port: 8080, protocol: 'TCP', ip: '0.0.0.0' }]);
    expect(p.schedulingGates).toEqual(['g']);
    expect(p.nodeAffinity).toEqual({ preferred: [{ weight: 5, preference: { matchExpressions: [{ key: 'ssd', operator: 'Exists' }] } }] });
    // A pod without them has none of the fields.
    const plain = pod(units(yaml('pods:', '  - {name: p, gpu: 1}'))[0]);
    expect([plain.nodeAffinity, plain.hostPorts, plain.schedulingGates, plain.request.scalar]).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('gang rules: minMember above replicas, preferred wider than required, a bad member template', () => {
    const found = issues(
      yaml(
        'gangs:',
        '  - {name: a, replicas: 2, minMember: 3, pod: {gpu: 1}}',
        '  - {name: b, replicas: 2, pod: {gpu: 1}, topology: {required: rack, preferred: zone}}',
        '  - {name: c, replicas: 2, pod: {gpu: 2.5}}',
        '  - {name: a, replicas: 1, pod: {gpu: 1}}',
      ),
    );
    expect(found.map(brief)).toEqual([
      ['gangs[0].minMember', 2, 39, 'minMember 3 exceeds replicas 2'],
      ['gangs[1].topology.preferred', 3, 81, 'preferred level zone is wider than required level rack'],
      ['gangs[2].pod.gpu', 4, 39, '2.5 GPUs: use a whole number of devices, or a fraction below 1 for a shared device'],
      ['gangs[3].name', 5, 12, 'duplicate name "a"'],
    ]);
  });

  it('a gang member id that collides with a pod name is a duplicate, not two pods with one id', () => {
    const found = issues(yaml('pods:', '  - {name: train-0, gpu: 1}', 'gangs:', '  - {name: train, replicas: 2, pod: {gpu: 1}}'));
    expect(found.map(brief)).toEqual([['gangs[0].name', 4, 12, 'duplicate name "train-0"']]);
  });

  it('malformed YAML', () => {
    const found = issues('pods:\n  - {name: a, gpu: 1\n');
    expect(found[0]).toMatchObject({ file: 'jobs.yaml', field: '' });
    expect(found[0]?.line).toBeGreaterThanOrEqual(2);
    expect(found[0]?.message).toMatch(/^YAML: /);
  });

  it('a wrong top-level kind', () => {
    const [i] = issues(yaml('kind: Cluster', 'pods: []'));
    expect(i).toMatchObject({ line: 1, column: 7, field: 'kind' });
  });
});
