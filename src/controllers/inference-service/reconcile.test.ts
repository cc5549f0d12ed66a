import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { ANNOTATION, LABEL, SCHEDULER_NAME } from '../../api/wire.ts';
import type { PodObject, ServiceObject } from '../kube-objects.ts';
import { replicaWriter, sitsMayScale } from './autoscaling.ts';
import { NO_ENGINE, type Action, type ClusterFacts, type EnginePort, type InferenceServiceObject, type Observed } from './model.ts';
import { CONDITION, planRollout, reconcileInferenceService } from './reconcile.ts';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const UID = 'isvc-uid';
const FACTS: ClusterFacts = { largestNvlinkIslandGpus: 4 };

function isvc(spec: Record<string, unknown> = {}, generation = 1): InferenceServiceObject {
  return withDefaults('InferenceService', {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'InferenceService',
    metadata: { name: 'chat', namespace: 'ml', uid: UID, generation },
    spec: { runtime: 'vllm', model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen' }, replicas: 2, gpusPerReplica: 1, ...spec },
  }) as InferenceServiceObject;
}

interface Opts {
  readonly pods?: readonly PodObject[];
  readonly services?: readonly ServiceObject[];
  readonly facts?: ClusterFacts;
  readonly engine?: EnginePort;
  readonly nowMs?: number;
  readonly lastErrors?: Observed['lastErrors'];
}
const run = (s: InferenceServiceObject, o: Opts = {}) =>
  reconcileInferenceService(
    {
      isvc: s,
      pods: o.pods ?? [],
      services: o.services ?? [],
      nowMs: o.nowMs ?? NOW,
      facts: o.facts ?? FACTS,
      engine: o.engine ?? NO_ENGINE,
      ...(o.lastErrors === undefined ? {} : { lastErrors: o.lastErrors }),
    },
    {},
  );

const created = (actions: readonly Action[]): PodObject[] => actions.flatMap((a) => (a.kind === 'createPod' ? [a.pod] : []));
const deleted = (actions: readonly Action[]): string[] => actions.flatMap((a) => (a.kind === 'deletePod' ? [a.name] : []));
const cond = (r: ReturnType<typeof run>, type: string) => r.status?.conditions?.find((c) => c.type === type);

/** A pod as the apiserver would show it: bound, running, ready or not, started at `startedMs`. */
function asRunning(p: PodObject, ready: boolean, startedMs = NOW - 60_000, node = 'n0'): PodObject {
  const t = new Date(startedMs).toISOString();
  return {
    ...p,
    metadata: { ...p.metadata, uid: `uid-${p.metadata.name ?? ''}`, creationTimestamp: t },
    spec: { ...(p.spec ?? { containers: [] }), nodeName: node },
    status: { phase: 'Running', startTime: t, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

/** The pods and Service a first reconcile creates, all running and ready. */
function steady(s: InferenceServiceObject): { pods: PodObject[]; services: ServiceObject[] } {
  const r = run(s);
  const services = r.actions.flatMap((a) => (a.kind === 'createService' ? [a.service] : []));
  return { pods: created(r.actions).map((p) => asRunning(p, true)), services };
}

describe('InferenceService reconcile: the adapters-loaded readiness gate', () => {
  const withAdapters = (): InferenceServiceObject =>
    isvc({ model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen', adapters: [{ name: 'sql', uri: 'hf://x/sql' }] } });
  const pods = (s: InferenceServiceObject, adapterReadinessGate: boolean): PodObject[] =>
    created(reconcileInferenceService({ isvc: s, pods: [], services: [], nowMs: NOW, facts: FACTS, engine: NO_ENGINE }, { adapterReadinessGate }).actions);

  it("is declared on replicas with adapters when the serving loop sets it, and kept next to the template's own gates", () => {
    expect(pods(withAdapters(), true)[0]?.spec?.readinessGates).toEqual([{ conditionType: 'ai.sits2026.dev/adapters-loaded' }]);
    const own = withAdapters();
    const s = { ...own, spec: { ...own.spec, podTemplate: { spec: { readinessGates: [{ conditionType: 'example.com/lb' }] } } } } as InferenceServiceObject;
    expect(pods(s, true)[0]?.spec?.readinessGates).toEqual([{ conditionType: 'example.com/lb' }, { conditionType: 'ai.sits2026.dev/adapters-loaded' }]);
  });

  it('is not declared without adapters or without a writer: those pods are the same as before', () => {
    expect(pods(isvc(), true)[0]?.spec?.readinessGates).toBeUndefined();
    expect(pods(withAdapters(), false)[0]?.spec?.readinessGates).toBeUndefined();
    expect(pods(isvc(), true)).toEqual(pods(isvc(), false));
  });

  it('is declared on vLLM replicas that reserved adapter slots, so the first adapter keeps the same pod template (ADR 0136)', () => {
    const slots = (adapters: { name: string; uri: string }[]): InferenceServiceObject => {
      const s = isvc({ model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen', adapters } });
      return { ...s, spec: { ...s.spec, engine: { maxLoras: 2 } } } as InferenceServiceObject;
    };
    const none = pods(slots([]), true)[0];
    const one = pods(slots([{ name: 'sql', uri: 'hf://x/sql' }]), true)[0];
    expect(none?.spec?.readinessGates).toEqual([{ conditionType: 'ai.sits2026.dev/adapters-loaded' }]);
    expect(one?.metadata.name).toBe(none?.metadata.name); // same template hash: no roll
    expect(one?.spec).toEqual(none?.spec);
    expect(pods(slots([]), false)[0]?.spec?.readinessGates).toBeUndefined();
  });
});

describe('InferenceService reconcile: replicas, Service, status', () => {
  it('creates one pod per replica for the SITS scheduler and a Service on the runtime port', () => {
    const r = run(isvc());
    const pods = created(r.actions);
    expect(pods).toHaveLength(2);
    const p = pods[0] as PodObject;
    expect(p.spec?.schedulerName).toBe(SCHEDULER_NAME);
    expect(p.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'InferenceService', name: 'chat', uid: UID, controller: true });
    expect(p.metadata.labels).toMatchObject({ [LABEL.inferenceService]: 'chat', [LABEL.role]: 'replica' });
    const c = p.spec?.containers[0];
    expect(c?.resources?.limits?.['nvidia.com/gpu']).toBe('1');
    // Readiness is the engine's health endpoint, from the runtime's data.
    expect(c?.readinessProbe).toMatchObject({ httpGet: { path: '/health', port: 'http' } });
    expect(p.metadata.annotations?.[ANNOTATION.minComputeCapability]).toBe('7.0');
    expect(new Set(pods.map((x) => x.metadata.name)).size).toBe(2);
    const svc = r.actions.find((a) => a.kind === 'createService');
    expect(svc?.kind === 'createService' && svc.service.spec).toEqual({
      selector: { [LABEL.inferenceService]: 'chat', [LABEL.role]: 'replica' },
      ports: [{ name: 'http', port: 8000, targetPort: 'http', protocol: 'TCP' }],
    });
    expect(r.status).toMatchObject({ phase: 'Pending', replicas: 0, readyReplicas: 0, updatedReplicas: 0, desiredReplicas: 2, observedGeneration: 1 });
    expect(cond(r, CONDITION.ready)).toMatchObject({ status: 'False', reason: 'MinimumReplicasUnavailable' });
    expect(cond(r, CONDITION.progressing)).toMatchObject({ status: 'True', reason: 'ScalingUp' });
    // Failure conditions appear only once something failed.
    expect(cond(r, CONDITION.invalidSpec)).toBeUndefined();
  });

  it('reports 2/2 ready, the model, the URL, the selector and desired adapters per replica once the pods are ready', () => {
    const s = isvc({ model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen', adapters: [{ name: 'sql', uri: 's3://a/sql' }] } });
    const { pods, services } = steady(s);
    const r = run(s, { pods, services });
    expect(r.actions).toEqual([]);
    expect(r.status).toMatchObject({
      phase: 'Ready',
      replicas: 2,
      readyReplicas: 2,
      updatedReplicas: 2,
      model: 'qwen',
      url: 'http://chat.ml.svc:8000',
      selector: `${LABEL.inferenceService}=chat,${LABEL.role}=replica`,
    });
    expect(cond(r, CONDITION.ready)).toMatchObject({ status: 'True', reason: 'MinimumReplicasReady', observedGeneration: 1 });
    expect(cond(r, CONDITION.progressing)).toMatchObject({ status: 'False', reason: 'Complete' });
    expect(r.status?.replicaStatuses?.map((x) => x.adapters)).toEqual([[{ name: 'sql', state: 'Desired' }], [{ name: 'sql', state: 'Desired' }]]);
    expect(r.status?.replicaStatuses?.every((x) => x.ready && x.updated && x.node === 'n0')).toBe(true);
  });

  it('takes what the engine port says: adapters per replica, and a replica held out of ready while they load', () => {
    const s = isvc({ model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', adapters: [{ name: 'sql', uri: 's3://a/sql' }] } });
    const { pods, services } = steady(s);
    const first = pods[0]?.metadata.name ?? '';
    const engine: EnginePort = {
      replica: (pod) =>
        pod.metadata.namespace === 'ml' && pod.metadata.name === first
          ? { serving: false, adapters: [{ name: 'sql', state: 'Loading' }] }
          : { adapters: [{ name: 'sql', state: 'Loaded' }] },
    };
    const r = run(s, { pods, services, engine });
    expect(r.status?.readyReplicas).toBe(1);
    expect(r.status?.replicaStatuses?.map((x) => [x.ready, x.adapters?.[0]?.state])).toEqual([
      [false, 'Loading'],
      [true, 'Loaded'],
    ]);
  });

  it('scales with spec.replicas (what /scale writes): up by creating, down by deleting unready pods first', () => {
    const s = isvc();
    const { pods, services } = steady(s);
    const up = run(isvc({ replicas: 3 }), { pods, services });
    expect(created(up.actions)).toHaveLength(1);
    expect(deleted(up.actions)).toEqual([]);
    const three = [...pods, asRunning(created(up.actions)[0] as PodObject, false)];
    const down = run(isvc({ replicas: 1 }), { pods: three, services });
    expect(created(down.actions)).toEqual([]);
    expect(deleted(down.actions)).toHaveLength(2);
    expect(deleted(down.actions)[0]).toBe(three[2]?.metadata.name);
  });

  it('replaces a finished replica (evicted or its engine exited) with a new pod of another name', () => {
    const s = isvc();
    const { pods, services } = steady(s);
    const dead = { ...pods[0], status: { phase: 'Failed' } } as PodObject;
    const r = run(s, { pods: [dead, pods[1] as PodObject], services });
    expect(deleted(r.actions)).toEqual([dead.metadata.name]);
    expect(created(r.actions).map((p) => p.metadata.name)).not.toContain(dead.metadata.name);
    expect(created(r.actions)).toHaveLength(1);
  });

  it('patches the Service when the serving port changes', () => {
    const s = isvc();
    const { pods, services } = steady(s);
    const r = run(isvc({ port: 9000 }), { pods, services });
    const patch = r.actions.find((a) => a.kind === 'patchService');
    expect(patch).toMatchObject({
      kind: 'patchService',
      name: 'chat',
      patch: { spec: { ports: [{ name: 'http', port: 9000, targetPort: 'http', protocol: 'TCP' }] } },
    });
  });
});

describe("planRollout (a Deployment's RollingUpdate on pods)", () => {
  const pod = (name: string, ready: boolean): PodObject => ({ metadata: { name, labels: { ready: String(ready) } } });
  const isReady = (p: PodObject): boolean => p.metadata.labels?.ready === 'true';
  const cases: {
    name: string;
    replicas: number;
    surge: number;
    unavail: number;
    current: [string, boolean][];
    old: [string, boolean][];
    create: number;
    remove: string[];
  }[] = [
    {
      name: 'surge 1: one new pod first, no old one removed while it is not ready',
      replicas: 2,
      surge: 1,
      unavail: 0,
      current: [],
      old: [
        ['o-0', true],
        ['o-1', true],
      ],
      create: 1,
      remove: [],
    },
    {
      name: 'surge 1: the new pod ready, one old pod goes',
      replicas: 2,
      surge: 1,
      unavail: 0,
      current: [['n-0', true]],
      old: [
        ['o-0', true],
        ['o-1', true],
      ],
      create: 0,
      remove: ['o-1'],
    },
    {
      name: 'surge 0, unavailable 1: an old pod goes first',
      replicas: 2,
      surge: 0,
      unavail: 1,
      current: [],
      old: [
        ['o-0', true],
        ['o-1', true],
      ],
      create: 0,
      remove: ['o-1'],
    },
    {
      name: 'old unready pods serve nothing: they go at once',
      replicas: 2,
      surge: 1,
      unavail: 0,
      current: [],
      old: [
        ['o-0', true],
        ['o-1', false],
      ],
      create: 1,
      remove: ['o-1'],
    },
    {
      name: 'scale to zero removes everything',
      replicas: 0,
      surge: 1,
      unavail: 0,
      current: [['n-0', true]],
      old: [['o-0', true]],
      create: 0,
      remove: ['n-0', 'o-0'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planRollout({
        replicas: c.replicas,
        maxSurge: c.surge,
        maxUnavailable: c.unavail,
        current: c.current.map(([n, r]) => pod(n, r)),
        old: c.old.map(([n, r]) => pod(n, r)),
        ready: isReady,
      });
      expect(plan.create).toBe(c.create);
      expect(plan.remove.map((p) => p.metadata.name)).toEqual(c.remove);
    });
  }

  for (const [surge, unavail] of [
    [1, 0],
    [2, 0],
    [0, 1],
    [1, 1],
  ] as const) {
    it(`a whole rollout of 3 replicas (maxSurge ${surge}, maxUnavailable ${unavail}) never drops below ${3 - unavail} ready and ends on the new template`, () => {
      const before = isvc({ replicas: 3, rollout: { maxSurge: surge, maxUnavailable: unavail } });
      const after = isvc({ replicas: 3, rollout: { maxSurge: surge, maxUnavailable: unavail }, container: { image: 'vllm/vllm-openai:v0.11.0' } }, 2);
      let { pods } = steady(before);
      const { services } = steady(before);
      let minReady = Infinity;
      for (let step = 0; step < 30; step++) {
        const r = run(after, { pods, services });
        const gone = new Set(deleted(r.actions));
        // What the cluster does between reconciles: deletions complete, pods created last time become ready.
        pods = [...pods.filter((p) => !gone.has(p.metadata.name ?? '')).map((p) => asRunning(p, true)), ...created(r.actions).map((p) => asRunning(p, false))];
        minReady = Math.min(minReady, pods.filter((p) => p.status?.conditions?.[0]?.status === 'True').length);
        if (r.actions.length === 0 && r.status?.phase === 'Ready') break;
      }
      expect(minReady).toBeGreaterThanOrEqual(3 - unavail);
      expect(pods).toHaveLength(3);
      expect(pods.every((p) => p.spec?.containers[0]?.image === 'vllm/vllm-openai:v0.11.0')).toBe(true);
      const final = run(after, { pods, services });
      expect(final.status).toMatchObject({ phase: 'Ready', updatedReplicas: 3, readyReplicas: 3, observedGeneration: 2 });
    });
  }
});

describe('InferenceService reconcile: bad input changes nothing but the conditions', () => {
  it('an unknown runtime (a CRD newer than the controller) names spec.runtime; the serving replicas stay', () => {
    const good = isvc();
    const { pods, services } = steady(good);
    const bad = { ...good, spec: { ...good.spec, runtime: 'sglang' } } as unknown as InferenceServiceObject;
    const r = run(bad, { pods, services });
    expect(r.actions.filter((a) => a.kind !== 'event')).toEqual([]);
    expect(r.actions).toContainEqual(expect.objectContaining({ kind: 'event', type: 'Warning', reason: 'UnknownRuntime' }));
    expect(cond(r, CONDITION.invalidSpec)).toMatchObject({ status: 'True', reason: 'UnknownRuntime' });
    expect(cond(r, CONDITION.invalidSpec)?.message).toContain('spec.runtime: unknown runtime "sglang"');
    expect(cond(r, CONDITION.ready)).toMatchObject({ status: 'True' });
    expect(r.status).toMatchObject({ phase: 'Degraded', readyReplicas: 2 });
    // Once reported, the same issue is not announced again.
    const again = run({ ...bad, status: r.status } as InferenceServiceObject, { pods, services });
    expect(again.actions).toEqual([]);
  });

  it('a tensor-parallel size larger than every NVLink island names spec.tensorParallelSize and creates nothing', () => {
    const r = run(isvc({ gpusPerReplica: 8, tensorParallelSize: 8 }), { facts: { largestNvlinkIslandGpus: 4 } });
    expect(r.actions.filter((a) => a.kind !== 'event')).toEqual([]);
    expect(cond(r, CONDITION.invalidSpec)).toMatchObject({ status: 'True', reason: 'TensorParallelTooLarge' });
    expect(cond(r, CONDITION.invalidSpec)?.message).toMatch(
      /^spec\.tensorParallelSize: tensor-parallel size 8 fits no NVLink domain of the cluster: the largest NVLink island has 4 GPUs/,
    );
    expect(r.status?.phase).toBe('Failed');
    expect(r.requeueAfterMs).toBe(60_000);
    // Unknown facts (no node listed yet) judge nothing.
    expect(created(run(isvc({ gpusPerReplica: 8, tensorParallelSize: 8 }), { facts: { largestNvlinkIslandGpus: undefined } }).actions)).toHaveLength(2);
  });

  it('a runtime-rejected field names it (Triton with a context length fixed at build time)', () => {
    const r = run(isvc({ runtime: 'triton', model: { uri: 's3://m/engine', maxModelLen: 4096 }, gpu: { allowedModels: ['A100-80G'] } }));
    expect(created(r.actions)).toEqual([]);
    expect(cond(r, CONDITION.invalidSpec)?.message).toContain('spec.model.maxModelLen');
  });

  it('an engine bound to its build GPU (Triton/TensorRT-LLM) needs exactly one model in spec.gpu.allowedModels', () => {
    const bad = run(isvc({ runtime: 'triton', model: { uri: 's3://m/engine' } }));
    expect(cond(bad, CONDITION.invalidSpec)).toMatchObject({ status: 'True', reason: 'GpuModelRequired' });
    expect(cond(bad, CONDITION.invalidSpec)?.message).toContain('spec.gpu.allowedModels');
    const ok = run(isvc({ runtime: 'triton', model: { uri: 's3://m/engine' }, gpu: { allowedModels: ['A100-80G'], minComputeCapability: '8.0' } }), {});
    const p = created(ok.actions)[0];
    expect(p?.metadata.annotations).toMatchObject({ [ANNOTATION.gpuModels]: 'A100-80G', [ANNOTATION.minComputeCapability]: '8.0' });
  });

  it('a replica unready past progressDeadlineSeconds is named; the others keep serving and nothing is deleted', () => {
    const s = isvc({ progressDeadlineSeconds: 600 });
    const { pods, services } = steady(s);
    const late = asRunning(pods[0] as PodObject, false, NOW - 700_000);
    const r = run(s, { pods: [late, pods[1] as PodObject], services });
    expect(deleted(r.actions)).toEqual([]);
    expect(cond(r, CONDITION.replicaFailure)).toMatchObject({ status: 'True', reason: 'ReplicaNotReady' });
    expect(cond(r, CONDITION.replicaFailure)?.message).toContain(
      `${late.metadata.name ?? ''} not ready 700s after it started (spec.progressDeadlineSeconds 600)`,
    );
    expect(cond(r, CONDITION.ready)).toMatchObject({ status: 'False' });
    expect(r.status).toMatchObject({ phase: 'Degraded', readyReplicas: 1 });
    expect(r.actions).toContainEqual(expect.objectContaining({ kind: 'event', reason: 'ReplicaNotReady' }));
    // Before the deadline: no condition, a requeue for the moment it passes.
    const early = run(s, { pods: [asRunning(pods[0] as PodObject, false, NOW - 100_000), pods[1] as PodObject], services });
    expect(cond(early, CONDITION.replicaFailure)).toBeUndefined();
    expect(early.requeueAfterMs).toBe(500_000);
    // Recovered: the condition turns False (it was there), not removed.
    const healed = run({ ...s, status: r.status } as InferenceServiceObject, { pods, services });
    expect(cond(healed, CONDITION.replicaFailure)).toMatchObject({ status: 'False', reason: 'ReplicasHealthy' });
  });

  it('a pod the apiserver refused (422) becomes ReplicaFailure naming the pod', () => {
    const r = run(isvc(), {
      lastErrors: [{ action: 'createPod', name: 'chat-abc-0', status: 422, reason: 'Invalid', message: 'spec.containers[0].image: Required value' }],
    });
    expect(cond(r, CONDITION.replicaFailure)).toMatchObject({ status: 'True', reason: 'FailedCreate' });
    expect(cond(r, CONDITION.replicaFailure)?.message).toContain('createPod chat-abc-0: 422 spec.containers[0].image: Required value');
  });
});

describe('tensor-parallel replicas are gangs in one NVLink domain', () => {
  it('TP=2 on a 2-GPU pod: a gang of that pod that must stay in one NVLink island', () => {
    const p = created(run(isvc({ gpusPerReplica: 2, tensorParallelSize: 2 })).actions)[0] as PodObject;
    expect(p.metadata.labels?.[LABEL.podGroup]).toBe(p.metadata.name);
    expect(p.metadata.annotations).toMatchObject({ [ANNOTATION.minMember]: '1', [ANNOTATION.topologyRequired]: 'nvlink-domain' });
    expect(p.spec?.containers[0]?.args).toEqual(expect.arrayContaining(['--tensor-parallel-size', '2']));
  });

  it('with pipeline stages (TP=2 × PP=2) only one NVLink domain is preferred; a one-GPU replica is no gang', () => {
    const pp = created(run(isvc({ gpusPerReplica: 4, tensorParallelSize: 2 })).actions)[0] as PodObject;
    expect(pp.metadata.annotations?.[ANNOTATION.topologyPreferred]).toBe('nvlink-domain');
    expect(pp.metadata.annotations?.[ANNOTATION.topologyRequired]).toBeUndefined();
    const one = created(run(isvc()).actions)[0] as PodObject;
    expect(one.metadata.labels?.[LABEL.podGroup]).toBeUndefined();
    expect(one.metadata.annotations?.[ANNOTATION.minMember]).toBeUndefined();
  });
});

describe('who writes spec.replicas', () => {
  it('SITS only with autoscaling in mode sits; an external autoscaler or none leaves it alone', () => {
    expect(replicaWriter({})).toBe('manual');
    expect(replicaWriter({ autoscaling: { mode: 'external', scaleUpStabilizationSeconds: 0, scaleDownStabilizationSeconds: 300 } })).toBe('external');
    expect(sitsMayScale({ autoscaling: { mode: 'external', scaleUpStabilizationSeconds: 0, scaleDownStabilizationSeconds: 300 } })).toBe(false);
    expect(
      sitsMayScale({ autoscaling: { mode: 'sits', tokensPerSecondPerReplica: 100, scaleUpStabilizationSeconds: 0, scaleDownStabilizationSeconds: 300 } }),
    ).toBe(true);
  });
});
