import { describe, expect, it } from 'vitest';
import { validateResource, withDefaults } from '../../api/validate.ts';
import { replicaWriter, sitsMayScale } from './autoscaling.ts';
import { inferenceServiceController, SCALED_OBJECT } from './controller.ts';
import { parseKedaAllowList, SCALED_OBJECT_CONDITION, THRESHOLD_RESYNC_MS, type KedaAllowList } from './keda.ts';
import type { OwnedScaledObject } from './model.ts';
import { NO_ENGINE, type Action, type AutoscalerThresholds, type InferenceServiceObject, type Observed, type ScaledObjectResource } from './model.ts';
import { reconcileInferenceService } from './reconcile.ts';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const UID = 'isvc-uid';
const KEDA = { mode: 'keda', keda: { serverAddress: 'http://prometheus.monitoring:9090' } };
/** The operator's allow-list these tests run under (issue 36): the servers they name, one shared authentication. */
const ALLOW = { servers: ['http://prometheus.monitoring:9090', 'https://prom:9091', 'http://p:9090/'], clusterAuth: ['shared-prom'] };

function isvc(spec: Record<string, unknown> = {}): InferenceServiceObject {
  return withDefaults('InferenceService', {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'InferenceService',
    metadata: { name: 'chat', namespace: 'ml', uid: UID, generation: 1 },
    spec: {
      runtime: 'vllm',
      model: { uri: 'hf://Qwen/Qwen2.5-7B-Instruct', name: 'qwen' },
      replicas: 2,
      minReplicas: 1,
      maxReplicas: 8,
      gpusPerReplica: 1,
      autoscaling: KEDA,
      ...spec,
    },
  }) as InferenceServiceObject;
}

const run = (
  s: InferenceServiceObject,
  o: {
    scaledObjects?: readonly ScaledObjectResource[];
    lastErrors?: Observed['lastErrors'];
    thresholds?: AutoscalerThresholds;
    port?: boolean;
    allow?: KedaAllowList;
  } = {},
) =>
  reconcileInferenceService(
    {
      isvc: s,
      pods: [],
      services: [],
      scaledObjects: o.scaledObjects ?? [],
      nowMs: NOW,
      facts: { largestNvlinkIslandGpus: 4 },
      engine: NO_ENGINE,
      hasThresholdPort: o.port === true,
      ...(o.thresholds === undefined ? {} : { thresholds: o.thresholds }),
      ...(o.lastErrors === undefined ? {} : { lastErrors: o.lastErrors }),
    },
    { kedaAllow: o.allow ?? ALLOW },
  );

const soActions = (actions: readonly Action[]) =>
  actions.filter((a) => a.kind === 'createScaledObject' || a.kind === 'patchScaledObject' || a.kind === 'deleteScaledObject');
const createdSo = (actions: readonly Action[]): OwnedScaledObject => {
  const a = actions.find((x) => x.kind === 'createScaledObject');
  if (a?.kind !== 'createScaledObject') throw new Error('no createScaledObject');
  return a.scaledObject;
};
const cond = (r: ReturnType<typeof run>) => r.status?.conditions?.find((c) => c.type === SCALED_OBJECT_CONDITION);
/** As the apiserver returns it: a uid, maybe fields KEDA's defaults add. */
const stored = (so: OwnedScaledObject, uid = 'so-uid'): ScaledObjectResource =>
  ({ ...so, metadata: { ...so.metadata, uid } }) as unknown as ScaledObjectResource;

describe('KEDA confused deputy (issue 36, finding 2): servers and shared authentications only from the allow-list', () => {
  const events = (r: ReturnType<typeof run>) => r.actions.filter((a) => a.kind === 'event');
  it('a foreign serverAddress gets no ScaledObject, a condition and a Warning event naming the flag', () => {
    for (const serverAddress of ['https://attacker.example:443', 'http://prometheus.monitoring:9091', 'http://prometheus.monitoring.evil:9090']) {
      const r = run(isvc({ autoscaling: { mode: 'keda', keda: { serverAddress } } }));
      expect(soActions(r.actions).filter((a) => a.kind !== 'deleteScaledObject')).toEqual([]);
      expect(cond(r)).toMatchObject({ status: 'False', reason: 'KedaServerNotAllowed' });
      expect(cond(r)?.message).toContain('--keda-allowed-servers');
      expect(events(r)).toEqual([expect.objectContaining({ type: 'Warning', reason: 'KedaServerNotAllowed' })]);
    }
  });
  it('with no allow-list (the default) no server is allowed', () => {
    const r = run(isvc(), { allow: { servers: [], clusterAuth: [] } });
    expect(soActions(r.actions)).toEqual([]);
    expect(cond(r)).toMatchObject({ reason: 'KedaServerNotAllowed' });
  });
  it('a ClusterTriggerAuthentication not listed gets no ScaledObject; a listed one and a namespaced TriggerAuthentication do', () => {
    const foreign = run(
      isvc({ autoscaling: { ...KEDA, keda: { ...KEDA.keda, authenticationRef: { name: 'platform-admin', kind: 'ClusterTriggerAuthentication' } } } }),
    );
    expect(soActions(foreign.actions)).toEqual([]);
    expect(cond(foreign)).toMatchObject({ status: 'False', reason: 'KedaClusterAuthNotAllowed' });
    expect(events(foreign)).toEqual([expect.objectContaining({ reason: 'KedaClusterAuthNotAllowed' })]);
    const listed = createdSo(
      run(isvc({ autoscaling: { ...KEDA, keda: { ...KEDA.keda, authenticationRef: { name: 'shared-prom', kind: 'ClusterTriggerAuthentication' } } } })).actions,
    );
    expect(listed.spec.triggers[0]?.authenticationRef).toEqual({ name: 'shared-prom', kind: 'ClusterTriggerAuthentication' });
    // A namespaced TriggerAuthentication of the same name as an unlisted cluster one: the tenant's own, allowed.
    const own = createdSo(
      run(isvc({ autoscaling: { ...KEDA, keda: { ...KEDA.keda, authenticationRef: { name: 'platform-admin', kind: 'TriggerAuthentication' } } } })).actions,
    );
    expect(own.spec.triggers[0]?.authenticationRef).toEqual({ name: 'platform-admin', kind: 'TriggerAuthentication' });
  });
  it('a ScaledObject kept from before is deleted once its spec names a foreign server; the event is not repeated', () => {
    const so = stored(createdSo(run(isvc()).actions));
    const s = isvc({ autoscaling: { mode: 'keda', keda: { serverAddress: 'https://attacker.example' } } });
    const r = run(s, { scaledObjects: [so] });
    expect(soActions(r.actions)).toEqual([{ kind: 'deleteScaledObject', name: 'chat', uid: 'so-uid' }]);
    const again = run({ ...s, status: { ...s.status, conditions: r.status?.conditions ?? [] } } as InferenceServiceObject, { scaledObjects: [] });
    expect(events(again)).toEqual([]);
  });
  it('the flags parse to the allow-list; addresses match with or without a trailing slash', () => {
    expect(parseKedaAllowList('http://a:9090, https://b/ ', 'x,y')).toEqual({ servers: ['http://a:9090', 'https://b/'], clusterAuth: ['x', 'y'] });
    expect(parseKedaAllowList('prom:9090', undefined)).toMatchObject({ error: expect.stringContaining('--keda-allowed-servers') });
    expect(parseKedaAllowList(undefined, 'Bad_Name')).toMatchObject({ error: expect.stringContaining('--keda-allowed-cluster-auth') });
    expect(
      createdSo(run(isvc({ autoscaling: { mode: 'keda', keda: { serverAddress: 'http://p:9090' } } })).actions).spec.triggers[0]?.metadata.serverAddress,
    ).toBe('http://p:9090');
  });
});

describe('autoscaling.mode keda', () => {
  it("leaves replicas to KEDA: SITS's autoscaler must not write them", () => {
    const s = isvc();
    expect(replicaWriter(s.spec)).toBe('keda');
    expect(sitsMayScale(s.spec)).toBe(false);
  });

  it('creates a ScaledObject targeting the InferenceService /scale with the bounds, owner and the SITS query and threshold', () => {
    const r = run(isvc({ autoscaling: { ...KEDA, tokensPerSecondPerReplica: 2500, scaleDownStabilizationSeconds: 120 } }));
    const so = createdSo(r.actions);
    expect(so.metadata).toMatchObject({ name: 'chat', namespace: 'ml', labels: { 'ai.sits2026.dev/inference-service': 'chat' } });
    expect(so.metadata.ownerReferences).toEqual([
      { apiVersion: 'ai.sits2026.dev/v1', kind: 'InferenceService', name: 'chat', uid: UID, controller: true, blockOwnerDeletion: true },
    ]);
    expect(so.spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'ai.sits2026.dev/v1', kind: 'InferenceService', name: 'chat' },
      minReplicaCount: 1,
      maxReplicaCount: 8,
      pollingInterval: 30,
      cooldownPeriod: 300,
      advanced: { horizontalPodAutoscalerConfig: { behavior: { scaleDown: { stabilizationWindowSeconds: 120 } } } },
    });
    expect(so.spec.triggers).toEqual([
      {
        type: 'prometheus',
        metricType: 'AverageValue',
        metadata: {
          serverAddress: 'http://prometheus.monitoring:9090',
          query:
            'sum(rate(vllm:prompt_tokens_total{namespace="ml",pod=~"chat-.*"}[1m])) + sum(rate(vllm:generation_tokens_total{namespace="ml",pod=~"chat-.*"}[1m]))',
          threshold: '2500',
          activationThreshold: '0',
        },
      },
    ]);
    expect(cond(r)).toMatchObject({ status: 'Unknown', reason: 'Creating' });
    // The replicas themselves are still the controller's job.
    expect(r.actions.filter((a) => a.kind === 'createPod')).toHaveLength(2);
  });

  it('uses the calibrated threshold when SITS has one (else the spec target, else the SITS starting point), and re-reads it every calibration period', () => {
    expect(createdSo(run(isvc(), { thresholds: { tokensPerReplica: 18_432.7 }, port: true }).actions).spec.triggers[0]?.metadata.threshold).toBe('18433');
    expect(createdSo(run(isvc()).actions).spec.triggers[0]?.metadata.threshold).toBe('10000');
    expect(run(isvc(), { port: true }).requeueAfterMs).toBe(THRESHOLD_RESYNC_MS);
    expect(run(isvc()).requeueAfterMs).toBeUndefined();
    const triton = createdSo(
      run(
        isvc({
          runtime: 'triton',
          autoscaling: { ...KEDA, queueDepthPerReplica: 16 },
          model: { uri: 's3://m/engine' },
          gpu: { allowedModels: ['A100-80G'], minComputeCapability: '8.0' },
        }),
      ).actions,
    );
    expect(triton.spec.triggers[0]?.metadata).toMatchObject({
      query: 'sum(nv_inference_pending_request_count{namespace="ml",pod=~"chat-.*"})',
      threshold: '16',
    });
  });

  it('takes the label matchers, polling interval and cooldown from spec.autoscaling.keda', () => {
    const so = createdSo(
      run(
        isvc({
          autoscaling: {
            mode: 'keda',
            keda: { serverAddress: 'https://prom:9091', labelMatchers: 'kubernetes_namespace="ml",app="chat"', pollingInterval: 15, cooldownPeriod: 60 },
          },
        }),
      ).actions,
    );
    expect(so.spec).toMatchObject({ pollingInterval: 15, cooldownPeriod: 60 });
    expect(so.spec.triggers[0]?.metadata.query).toContain('vllm:prompt_tokens_total{kubernetes_namespace="ml",app="chat"}');
    expect(so.spec.triggers[0]?.metadata.serverAddress).toBe('https://prom:9091');
    expect(so.spec.triggers[0]?.authenticationRef).toBeUndefined();
    const auth = createdSo(
      run(isvc({ autoscaling: { mode: 'keda', keda: { serverAddress: 'https://prom:9091', authenticationRef: { name: 'prom-auth' } } } })).actions,
    );
    expect(auth.spec.triggers[0]?.authenticationRef).toEqual({ name: 'prom-auth', kind: 'TriggerAuthentication' });
  });

  it('with minReplicas 0: minReplicaCount 0, and an activation-only trigger on keda.activationQuery; the condition says whether it can come back from zero', () => {
    const ACT = 'sum(gateway_pending_requests{service="chat"})';
    const zero = (keda: Record<string, unknown>) =>
      isvc({ replicas: 0, minReplicas: 0, autoscaling: { mode: 'keda', keda: { serverAddress: 'http://prometheus.monitoring:9090', ...keda } } });
    const so = createdSo(run(zero({ activationQuery: ACT, authenticationRef: { name: 'prom-auth' } })).actions);
    expect(so.spec.minReplicaCount).toBe(0);
    expect(so.spec.triggers).toHaveLength(2);
    expect(so.spec.triggers[0]?.metadata.activationThreshold).toBe('0');
    expect(so.spec.triggers[1]).toEqual({
      type: 'prometheus',
      name: 'activation',
      metricType: 'AverageValue',
      metadata: { serverAddress: 'http://prometheus.monitoring:9090', query: ACT, threshold: '1000000000', activationThreshold: '0' },
      authenticationRef: { name: 'prom-auth', kind: 'TriggerAuthentication' },
    });
    const applied = run(zero({ activationQuery: ACT }), { scaledObjects: [stored(createdSo(run(zero({ activationQuery: ACT })).actions))] });
    expect(cond(applied)?.message).toContain(`activation from zero on ${ACT} > 0`);
    const without = zero({});
    const bare = createdSo(run(without).actions);
    expect(bare.spec.triggers).toHaveLength(1);
    expect(cond(run(without, { scaledObjects: [stored(bare)] }))?.message).toContain('minReplicas 0 without spec.autoscaling.keda.activationQuery');
    // minReplicas >= 1: the activation query is not rendered (KEDA's activation phase only runs from zero).
    expect(
      createdSo(run(isvc({ autoscaling: { mode: 'keda', keda: { serverAddress: 'http://p:9090', activationQuery: ACT } } })).actions).spec.triggers,
    ).toHaveLength(1);
  });

  it('changes nothing when the stored ScaledObject matches (fields KEDA adds are ignored); patches the spec when the bounds change', () => {
    const s = isvc();
    const have = stored(createdSo(run(s).actions));
    const withExtra = { ...have, spec: { ...have.spec, idleReplicaCount: undefined, fallback: undefined } } as ScaledObjectResource;
    const r = run(s, { scaledObjects: [withExtra] });
    expect(soActions(r.actions)).toEqual([]);
    expect(cond(r)).toMatchObject({ status: 'True', reason: 'Applied' });
    expect(cond(r)?.message).toContain('threshold 10000');
    const wider = run(isvc({ minReplicas: 2, maxReplicas: 12 }), { scaledObjects: [have] });
    expect(soActions(wider.actions)).toEqual([
      { kind: 'patchScaledObject', name: 'chat', patch: { spec: expect.objectContaining({ minReplicaCount: 2, maxReplicaCount: 12 }) as unknown } },
    ]);
  });

  it('deletes its ScaledObject when the mode goes back to sits (or autoscaling is removed), never one it does not own', () => {
    const have = stored(createdSo(run(isvc()).actions));
    const foreign = { ...have, metadata: { ...have.metadata, name: 'users-own', uid: 'other', ownerReferences: [] } } as ScaledObjectResource;
    const sits = run(isvc({ autoscaling: { mode: 'sits', tokensPerSecondPerReplica: 2500 } }), { scaledObjects: [have, foreign] });
    expect(soActions(sits.actions)).toEqual([{ kind: 'deleteScaledObject', name: 'chat', uid: 'so-uid' }]);
    expect(soActions(run(isvc({ autoscaling: undefined }), { scaledObjects: [have] }).actions)).toEqual([
      { kind: 'deleteScaledObject', name: 'chat', uid: 'so-uid' },
    ]);
    // The condition of the keda days is turned off, not left behind.
    const prior = run(isvc(), { scaledObjects: [have] }).status;
    const back = isvc({ autoscaling: { mode: 'sits', tokensPerSecondPerReplica: 2500 } });
    const r = run({ ...back, status: prior } as InferenceServiceObject, { scaledObjects: [] });
    expect(cond(r)).toMatchObject({ status: 'False', reason: 'NotKedaMode' });
  });

  it("without KEDA's CRDs (the create answered 404) says so in a condition naming the mode and KEDA; pods and Service go on", () => {
    const r = run(isvc(), {
      lastErrors: [
        { action: 'createScaledObject', name: 'chat', status: 404, reason: 'NotFound', message: 'the server could not find the requested resource' },
      ],
    });
    expect(cond(r)).toMatchObject({ status: 'False', reason: 'KedaNotInstalled' });
    expect(cond(r)?.message).toMatch(/spec\.autoscaling\.mode keda.*keda\.sh\/v1alpha1 ScaledObjects.*KEDA's CRDs are not installed/);
    expect(r.status?.conditions?.find((c) => c.type === 'ReplicaFailure')).toBeUndefined();
    expect(r.actions.filter((a) => a.kind === 'createPod')).toHaveLength(2);
    const rejected = run(isvc(), {
      lastErrors: [{ action: 'patchScaledObject', name: 'chat', status: 422, reason: 'Invalid', message: 'spec.maxReplicaCount: Invalid value' }],
    });
    expect(cond(rejected)).toMatchObject({
      status: 'False',
      reason: 'ScaledObjectRejected',
      message: 'patchScaledObject chat: 422 spec.maxReplicaCount: Invalid value',
    });
  });

  it('leaves the ScaledObject alone while the spec is invalid (nothing half-applied)', () => {
    const have = stored(createdSo(run(isvc()).actions));
    const r = run(isvc({ gpusPerReplica: 8 }), { scaledObjects: [have] });
    expect(r.status?.conditions?.find((c) => c.type === 'InvalidSpec')?.status).toBe('True');
    expect(soActions(r.actions)).toEqual([]);
  });

  it("maps the actions onto the runner's ScaledObject kind (keda.sh/v1alpha1 scaledobjects)", () => {
    const def = inferenceServiceController({
      clusterFacts: () => ({ largestNvlinkIslandGpus: 4 }),
      engine: NO_ENGINE,
      thresholds: () => ({ tokensPerReplica: 3000 }),
      kedaAllow: ALLOW,
    });
    expect(def.owned).toContainEqual(SCALED_OBJECT);
    const out = def.reconcile({ object: isvc(), owned: new Map(), nowMs: NOW });
    const create = out.actions.find((a) => a.op === 'create' && a.kind === 'ScaledObject');
    expect(create).toMatchObject({ op: 'create', kind: 'ScaledObject', object: { spec: { triggers: [{ metadata: { threshold: '3000' } }] } } });
    expect(out.requeueAfterMs).toBe(THRESHOLD_RESYNC_MS);
  });
});

describe('the keda settings in the schema', () => {
  const base = {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'InferenceService',
    metadata: { name: 'chat' },
    spec: { runtime: 'vllm', model: { uri: 'hf://a/b' }, maxReplicas: 4 },
  };
  const errs = (autoscaling: unknown): string[] => {
    const r = validateResource('InferenceService', { ...base, spec: { ...base.spec, autoscaling } });
    return r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`);
  };
  it('needs keda.serverAddress in mode keda, an http(s) URL; needs no target (the threshold is calibrated)', () => {
    expect(errs({ mode: 'keda', keda: { serverAddress: 'http://prom:9090' } })).toEqual([]);
    expect(JSON.stringify(errs({ mode: 'keda' }))).toContain('spec.autoscaling.keda');
    expect(JSON.stringify(errs({ mode: 'keda', keda: { serverAddress: 'prom:9090' } }))).toContain('spec.autoscaling.keda.serverAddress');
    expect(JSON.stringify(errs({ mode: 'sits' }))).toContain('spec.autoscaling.tokensPerSecondPerReplica');
  });
});
