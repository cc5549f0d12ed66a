// Multi-pod replicas (ADR 0134): a leader and its workers created, readied, rolled and recreated as one unit.
import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import type { PodObject, ServiceObject } from '../kube-objects.ts';
import { NO_ENGINE, type Action, type InferenceServiceObject } from './model.ts';
import { planRollout, reconcileInferenceService } from './reconcile.ts';

const NOW = Date.parse('2026-12-01T12:00:00Z');

function isvc(spec: Record<string, unknown> = {}): InferenceServiceObject {
  return withDefaults('InferenceService', {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'InferenceService',
    metadata: { name: 'big', namespace: 'ml', uid: 'uid-big', generation: 1 },
    spec: {
      runtime: 'vllm',
      model: { uri: 'hf://meta-llama/Llama-3.1-405B-Instruct', name: 'llama' },
      replicas: 2,
      gpusPerReplica: 16,
      podsPerReplica: 2,
      ...spec,
    },
  }) as InferenceServiceObject;
}

const run = (s: InferenceServiceObject, pods: readonly PodObject[] = [], services: readonly ServiceObject[] = []) =>
  reconcileInferenceService({ isvc: s, pods, services, nowMs: NOW, facts: { largestNvlinkIslandGpus: 8 }, engine: NO_ENGINE }, {});
const created = (a: readonly Action[]): PodObject[] => a.flatMap((x) => (x.kind === 'createPod' ? [x.pod] : []));
const deleted = (a: readonly Action[]): string[] => a.flatMap((x) => (x.kind === 'deletePod' ? [x.name] : []));
const envOf = (p: PodObject): Record<string, string> => Object.fromEntries((p.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));

function running(p: PodObject, ready = true, node = 'n0'): PodObject {
  const t = new Date(NOW - 60_000).toISOString();
  return {
    ...p,
    metadata: { ...p.metadata, uid: `uid-${p.metadata.name ?? ''}`, creationTimestamp: t },
    spec: { ...(p.spec ?? { containers: [] }), nodeName: node },
    status: {
      phase: 'Running',
      startTime: t,
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      containerStatuses: [{ name: 'server', restartCount: 0 }],
    },
  };
}

function steady(s: InferenceServiceObject): { pods: PodObject[]; services: ServiceObject[] } {
  const r = run(s);
  return { pods: created(r.actions).map((p) => running(p)), services: r.actions.flatMap((a) => (a.kind === 'createService' ? [a.service] : [])) };
}

describe('multi-pod replicas: created whole', () => {
  it('creates each replica as a leader and its workers: one gang of all its pods, the LWS identity and environment, vLLM over Ray', () => {
    const r = run(isvc({ replicaTopology: { requiredLevel: 'rack' } }));
    const pods = created(r.actions);
    expect(pods).toHaveLength(4);
    const [leader, worker] = pods as [PodObject, PodObject];
    const group = leader.metadata.name ?? '';
    expect(worker.metadata.name).toBe(`${group}-1`);
    for (const p of pods.slice(0, 2)) {
      expect(p.metadata.labels?.[LABEL.podGroup]).toBe(group);
      expect(p.metadata.annotations).toMatchObject({
        [ANNOTATION.minMember]: '2',
        [ANNOTATION.topologyRequired]: 'rack',
        [ANNOTATION.topologyPreferred]: 'rack',
      });
      expect(p.spec?.containers[0]?.resources?.limits?.['nvidia.com/gpu']).toBe('8');
      expect(p.spec?.subdomain).toBe('big-pods');
      expect(p.spec?.hostname).toBe(p.metadata.name);
    }
    expect(leader.metadata.labels).toMatchObject({ [LABEL.role]: 'replica', [LABEL.workerIndex]: '0' });
    expect(worker.metadata.labels).toMatchObject({ [LABEL.role]: 'worker', [LABEL.workerIndex]: '1' });
    expect(envOf(leader)).toMatchObject({ LWS_LEADER_ADDRESS: `${group}.big-pods.ml`, LWS_GROUP_SIZE: '2', LWS_WORKER_INDEX: '0' });
    expect(envOf(worker)).toMatchObject({ LWS_LEADER_ADDRESS: `${group}.big-pods.ml`, LWS_GROUP_SIZE: '2', LWS_WORKER_INDEX: '1' });
    // TP = GPUs of a pod (8), PP = pods (2); the leader starts the Ray head and waits for the group, then serves.
    const script = leader.spec?.containers[0]?.args?.[0] ?? '';
    expect(leader.spec?.containers[0]?.command).toEqual(['/bin/sh', '-c']);
    expect(script).toMatch(
      /^bash \/vllm-workspace\/examples\/online_serving\/multi-node-serving\.sh leader --ray_cluster_size=\$LWS_GROUP_SIZE && exec python3 -m vllm\.entrypoints\.openai\.api_server /,
    );
    expect(script).toContain('--tensor-parallel-size 8 --pipeline-parallel-size 2');
    expect(script).toContain('--distributed-executor-backend ray');
    expect(leader.spec?.containers[0]?.readinessProbe).toMatchObject({ httpGet: { path: '/health' } });
    expect(worker.spec?.containers[0]?.args).toEqual([
      'exec bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker --ray_address=$LWS_LEADER_ADDRESS',
    ]);
    expect(worker.spec?.containers[0]?.readinessProbe).toBeUndefined();
    // Clients reach leaders only (role=replica); the headless Service gives every pod its DNS name.
    const services = r.actions.flatMap((a) => (a.kind === 'createService' ? [a.service] : []));
    expect(services.map((x) => [x.metadata.name, x.spec?.selector, x.spec?.clusterIP ?? '', x.spec?.ports?.map((p) => p.name) ?? []])).toEqual([
      ['big-pods', { [LABEL.inferenceService]: 'big' }, 'None', []],
      ['big', { [LABEL.inferenceService]: 'big', [LABEL.role]: 'replica' }, '', ['http']],
    ]);
  });

  it('tensor parallelism over whole pods requires one NVLink domain; a runtime without multi-node serving is refused by field', () => {
    const tp = created(run(isvc({ tensorParallelSize: 16 })).actions)[0];
    expect(tp?.metadata.annotations?.[ANNOTATION.topologyRequired]).toBe('nvlink-domain');
    expect(tp?.metadata.annotations?.[ANNOTATION.topologyPreferred]).toBeUndefined();
    expect(tp?.spec?.containers[0]?.args?.[0]).toContain('--tensor-parallel-size 16');
    const tgi = run(isvc({ runtime: 'tgi' }));
    expect(created(tgi.actions)).toEqual([]);
    expect(tgi.status?.conditions?.find((c) => c.type === 'InvalidSpec')?.message).toMatch(
      /^spec\.podsPerReplica: Text Generation Inference runs in one pod only/,
    );
  });
});

describe('multi-pod replicas: readiness and status by group', () => {
  it('a replica is ready only when its leader is ready and every worker runs; status counts groups', () => {
    const s = isvc();
    const { pods, services } = steady(s);
    const ok = run(s, pods, services);
    expect(ok.actions).toEqual([]);
    expect(ok.status).toMatchObject({ phase: 'Ready', replicas: 2, readyReplicas: 2, updatedReplicas: 2 });
    expect(ok.status?.replicaStatuses?.map((x) => x.name)).toEqual(
      pods.filter((p) => p.metadata.labels?.[LABEL.role] === 'replica').map((p) => p.metadata.name),
    );
    const pendingWorker = pods.map((p, i) => (i === 1 ? { ...p, status: { ...p.status, phase: 'Pending' } } : p));
    const r = run(s, pendingWorker, services);
    expect(r.status).toMatchObject({ replicas: 2, readyReplicas: 1 });
    const unreadyLeader = pods.map((p, i) => (i === 2 ? running(p, false) : p));
    expect(run(s, unreadyLeader, services).status?.readyReplicas).toBe(1);
  });
});

describe('multi-pod replicas: a failed member recreates its group', () => {
  it.each([
    ['a worker deleted', (ps: PodObject[]) => ps.filter((_, i) => i !== 1), /1 of its 2 pods is gone/],
    ['a worker finished', (ps: PodObject[]) => ps.map((p, i) => (i === 1 ? { ...p, status: { ...p.status, phase: 'Failed' } } : p)), /finished/],
    [
      'a worker restarted',
      (ps: PodObject[]) => ps.map((p, i) => (i === 1 ? { ...p, status: { ...p.status, containerStatuses: [{ name: 'server', restartCount: 1 }] } } : p)),
      /restarted/,
    ],
    ['the leader deleted', (ps: PodObject[]) => ps.filter((_, i) => i !== 0), /its leader is gone/],
  ] as const)('%s: the rest of the group is deleted, the replica no longer counts, the other replica keeps serving', (_n, change, why) => {
    const s = isvc();
    const { pods, services } = steady(s);
    const group = pods[0]?.metadata.name ?? '';
    const after = change(pods);
    const r = run(s, after, services);
    expect(deleted(r.actions).sort()).toEqual(
      after
        .filter((p) => p.metadata.labels?.[LABEL.podGroup] === group)
        .map((p) => p.metadata.name)
        .sort(),
    );
    expect(r.actions.find((a) => a.kind === 'event')).toMatchObject({ reason: 'RecreatingReplica', message: expect.stringMatching(why) });
    expect(r.status).toMatchObject({ replicas: 1, readyReplicas: 1 });
    // Once those pods are gone, a whole new group is made in a fresh slot (no name held by a terminating pod).
    const rest = after.filter((p) => p.metadata.labels?.[LABEL.podGroup] !== group);
    const again = created(run(s, rest, services).actions);
    expect(again).toHaveLength(2);
    expect(new Set(again.map((p) => p.metadata.labels?.[LABEL.podGroup])).size).toBe(1);
  });

  it('a terminating member: the others are deleted with it, and no new pod takes its name', () => {
    const s = isvc();
    const { pods, services } = steady(s);
    const dying = pods.map((p, i) => (i === 1 ? { ...p, metadata: { ...p.metadata, deletionTimestamp: new Date(NOW).toISOString() } } : p));
    const r = run(s, dying, services);
    expect(deleted(r.actions)).toEqual([pods[0]?.metadata.name]);
    const names = new Set(pods.map((p) => p.metadata.name));
    expect(created(r.actions).every((p) => !names.has(p.metadata.name))).toBe(true);
  });
});

describe('multi-pod replicas: rolling update by groups', () => {
  it('surge and unavailability are counted in groups: one new group at a time, an old group deleted whole once the new one is ready', () => {
    const s = isvc();
    const { pods, services } = steady(s);
    const next = isvc({ container: { image: 'vllm/vllm-openai:v0.11.0' } });
    const step1 = run(next, pods, services);
    // maxSurge 1 = one group (2 pods) above replicas; maxUnavailable 0 = nothing old goes yet.
    expect(created(step1.actions)).toHaveLength(2);
    expect(deleted(step1.actions)).toEqual([]);
    const fresh = created(step1.actions).map((p) => running(p, true, 'n9'));
    const step2 = run(next, [...pods, ...fresh], services);
    expect(created(step2.actions)).toEqual([]);
    const gone = deleted(step2.actions);
    expect(gone).toHaveLength(2);
    const groups = new Set(pods.filter((p) => gone.includes(p.metadata.name ?? '')).map((p) => p.metadata.labels?.[LABEL.podGroup]));
    expect(groups.size).toBe(1);
    // A new group whose worker is not running yet is not ready: no old group goes for it.
    const half = created(step1.actions).map((p, i) => (i === 1 ? { ...running(p), status: { phase: 'Pending' } } : running(p)));
    expect(deleted(run(next, [...pods, ...half], services).actions)).toEqual([]);
  });

  it('planRollout sees one unit per group (the leaders)', () => {
    const s = isvc();
    const { pods } = steady(s);
    const leaders = pods.filter((p) => p.metadata.labels?.[LABEL.role] === 'replica');
    expect(planRollout({ replicas: 2, maxSurge: 1, maxUnavailable: 0, current: [], old: leaders, ready: () => true })).toEqual({ create: 1, remove: [] });
  });
});
