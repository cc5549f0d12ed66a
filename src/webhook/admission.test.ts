import { describe, expect, it } from 'vitest';
import jsonpatch from 'fast-json-patch';
import type { Rule } from '../guard/rule.ts';
import {
  BadReview,
  DEFAULT_PREFERRED_LEVEL_ANNOTATION,
  DEFAULT_QUEUE_ANNOTATION,
  OPT_IN_LABEL,
  defaultControllerUsers,
  mutate,
  parseReview,
  validate,
  type AdmissionRequest,
  type NamespaceInfo,
} from './admission.ts';

// Two real rules over Pods: one error (a hand-set CUDA_VISIBLE_DEVICES), one warning (no limits).
const rules: Rule[] = [
  {
    id: 'test-visible-devices',
    severity: 'error',
    seed: '001 §2.2',
    title: 't',
    rationale: 'r',
    kinds: ['Pod'],
    fixtures: { bad: '', good: '' },
    check: (obj) => {
      const cs = (obj.spec as { containers?: { env?: { name: string }[] }[] } | undefined)?.containers ?? [];
      return cs.flatMap((c, i) =>
        (c.env ?? []).flatMap((e, j) =>
          e.name === 'CUDA_VISIBLE_DEVICES' ? [{ message: 'let the allocation set it', path: ['spec', 'containers', i, 'env', j] }] : [],
        ),
      );
    },
  },
  {
    id: 'test-no-limits',
    severity: 'warning',
    seed: '001 §1',
    title: 't',
    rationale: 'r',
    kinds: ['Pod'],
    fixtures: { bad: '', good: '' },
    check: (obj) =>
      ((obj.spec as { containers?: { resources?: unknown }[] } | undefined)?.containers ?? []).flatMap((c, i) =>
        c.resources === undefined ? [{ message: 'set limits', path: ['spec', 'containers', i] }] : [],
      ),
  },
];

const pod = (env: { name: string; value: string }[], resources?: unknown): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p' },
  spec: { containers: [{ name: 'c', image: 'i', env, ...(resources !== undefined ? { resources } : {}) }] },
});
const request = (object: Record<string, unknown> | undefined, extra: Partial<AdmissionRequest> = {}): AdmissionRequest =>
  parseReview({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'u1', kind: { group: '', version: 'v1', kind: 'Pod' }, namespace: 'team', operation: 'CREATE', object, ...extra },
  });
const cluster = { schedulerNames: ['sits-scheduler'] };

describe('validate', () => {
  it('enforce: an error denies, naming the rule and the field; warnings still travel', () => {
    const v = validate(request(pod([{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }])), { rules, mode: 'enforce', cluster });
    expect(v.denied).toBe(true);
    expect(v.review.response.allowed).toBe(false);
    expect(v.review.response.uid).toBe('u1');
    expect(v.review.response.status?.code).toBe(403);
    expect(v.review.response.status?.message).toContain('[test-visible-devices] spec.containers[0].env[0]: let the allocation set it');
    expect(v.review.response.warnings).toEqual(['[test-no-limits] spec.containers[0]: set limits']);
  });
  it('enforce: warnings only are allowed with warnings; a clean object is allowed without', () => {
    const w = validate(request(pod([])), { rules, mode: 'enforce', cluster });
    expect(w.review.response).toEqual({ uid: 'u1', allowed: true, warnings: ['[test-no-limits] spec.containers[0]: set limits'] });
    const ok = validate(request(pod([], { limits: {} })), { rules, mode: 'enforce', cluster });
    expect(ok.review.response).toEqual({ uid: 'u1', allowed: true });
    expect(ok.findings).toEqual([]);
  });
  it('audit: nothing is denied; errors come back as warnings and as findings to record', () => {
    const v = validate(request(pod([{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }])), { rules, mode: 'audit', cluster });
    expect(v.denied).toBe(false);
    expect(v.review.response.allowed).toBe(true);
    expect(v.review.response.warnings).toContain('audit: would deny: [test-visible-devices] spec.containers[0].env[0]: let the allocation set it');
    expect(v.findings.map((f) => f.rule).sort()).toEqual(['test-no-limits', 'test-visible-devices']);
  });
  it('honours the disable annotation and the per-run disable list', () => {
    const annotated = pod([{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }]);
    (annotated.metadata as Record<string, unknown>).annotations = { 'lint.sits2026.dev/disable': 'test-visible-devices' };
    expect(validate(request(annotated), { rules, mode: 'enforce', cluster }).denied).toBe(false);
    expect(
      validate(request(pod([{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }])), { rules, mode: 'enforce', cluster, disabled: new Set(['test-visible-devices']) })
        .denied,
    ).toBe(false);
  });
  it('DELETE is never linted; related objects are context, not reviewed', () => {
    expect(
      validate(request(pod([{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }]), { operation: 'DELETE' }), { rules, mode: 'enforce', cluster }).review.response,
    ).toEqual({ uid: 'u1', allowed: true });
    const v = validate(request(pod([], { limits: {} })), {
      rules,
      mode: 'enforce',
      cluster,
      related: () => [pod([{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }])],
    });
    expect(v.denied).toBe(false);
  });
  it('an UPDATE is denied only for an error it introduces; a deleting object is never held', () => {
    const bad = pod([{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }], { limits: {} });
    const upd = (object: Record<string, unknown>, oldObject: Record<string, unknown>): AdmissionRequest =>
      request(object, { operation: 'UPDATE', oldObject } as Partial<AdmissionRequest>);
    const kept = validate(upd({ ...bad, metadata: { name: 'p', annotations: { x: 'y' } } }, bad), { rules, mode: 'enforce', cluster });
    expect(kept.denied).toBe(false);
    expect(kept.review.response.warnings).toEqual([
      '[test-visible-devices] spec.containers[0].env[0]: let the allocation set it (already present before this update)',
    ]);
    const introduced = validate(upd(bad, pod([], { limits: {} })), { rules, mode: 'enforce', cluster });
    expect(introduced.denied).toBe(true);
    const gone = validate(upd({ ...bad, metadata: { name: 'p', deletionTimestamp: '2026-12-01T00:00:00Z' } }, bad), { rules, mode: 'enforce', cluster });
    expect(gone.review.response).toEqual({ uid: 'u1', allowed: true });
  });
  it("never denies a controller's pod (its owner was reviewed): errors become warnings", () => {
    const owned = pod([{ name: 'CUDA_VISIBLE_DEVICES', value: '0' }], { limits: {} });
    (owned.metadata as Record<string, unknown>).ownerReferences = [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u', controller: true }];
    const controllerUsers = new Set(defaultControllerUsers('sits-system'));
    const v = validate(
      { ...request(owned), userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' } },
      { rules, mode: 'enforce', cluster, controllerUsers },
    );
    expect(v.denied).toBe(false);
    expect(v.review.response.warnings).toEqual([
      "[test-visible-devices] spec.containers[0].env[0]: let the allocation set it (a controller's pod: fix its owner)",
    ]);
    // Issue 36: the ownerReference is the user's own writing; sent by anyone else, the same pod is denied.
    for (const username of ['alice', 'system:serviceaccount:team:sits-controllers', 'system:serviceaccount:team:replicaset-controller']) {
      const forged = validate({ ...request(owned), userInfo: { username } }, { rules, mode: 'enforce', cluster, controllerUsers });
      expect(forged.denied, username).toBe(true);
    }
    expect(validate(request(owned), { rules, mode: 'enforce', cluster, controllerUsers }).denied).toBe(true);
    expect(validate({ ...request(owned), userInfo: { username: 'system:kube-controller-manager' } }, { rules, mode: 'enforce', cluster }).denied).toBe(true);
  });
  it('keeps warnings within what the apiserver shows whole', () => {
    const many = { ...pod([]), spec: { containers: Array.from({ length: 40 }, (_, i) => ({ name: `c${i}`, image: 'i' })) } };
    const w = validate(request(many), { rules, mode: 'enforce', cluster }).review.response.warnings ?? [];
    expect(w).toHaveLength(33);
    expect(w[32]).toContain('and 8 more findings');
    for (const s of w) expect(s.length).toBeLessThanOrEqual(256);
  });
});

describe('parseReview', () => {
  const base = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'u', kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE' },
  };
  it.each([
    [null, 'body is not a JSON object'],
    [{ ...base, apiVersion: 'admission.k8s.io/v1beta1' }, 'apiVersion: want admission.k8s.io/v1'],
    [{ ...base, kind: 'Review' }, 'kind: want AdmissionReview'],
    [{ ...base, request: undefined }, 'request: missing'],
    [{ ...base, request: { ...base.request, uid: '' } }, 'request.uid: missing'],
    [{ ...base, request: { ...base.request, kind: 'Pod' } }, 'request.kind'],
    [{ ...base, request: { ...base.request, operation: 'PATCH' } }, 'request.operation: unknown "PATCH"'],
    [{ ...base, request: { ...base.request, object: [1] } }, 'request.object: not an object'],
  ])('rejects %j with a message naming the field', (body, msg) => {
    expect(() => parseReview(body)).toThrow(BadReview);
    expect(() => parseReview(body)).toThrow(msg);
  });
});

describe('mutate', () => {
  const ns =
    (labels: Record<string, string>, annotations: Record<string, string> = {}): ((n: string) => NamespaceInfo | undefined) =>
    (n) =>
      n === 'team' ? { labels, annotations } : undefined;
  const gpuPod = (schedulerName?: string): Record<string, unknown> => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p' },
    spec: {
      ...(schedulerName !== undefined ? { schedulerName } : {}),
      containers: [{ name: 'c', image: 'i', resources: { limits: { 'nvidia.com/gpu': '2' } } }],
    },
  });
  const apply = (obj: Record<string, unknown>, patch: string | undefined): Record<string, unknown> =>
    patch === undefined
      ? obj
      : (jsonpatch.applyPatch(structuredClone(obj), JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as jsonpatch.Operation[]).newDocument as Record<
          string,
          unknown
        >);
  const optIn = ns({ [OPT_IN_LABEL]: 'enabled' }, { [DEFAULT_QUEUE_ANNOTATION]: 'research' });

  it('sets the SITS scheduler and the default queue on GPU pods of opted-in namespaces, and a second pass changes nothing', () => {
    const first = mutate(request(gpuPod('default-scheduler')), { schedulerName: 'sits-scheduler', namespace: optIn });
    expect(first.response.patchType).toBe('JSONPatch');
    const mutated = apply(gpuPod('default-scheduler'), first.response.patch);
    expect((mutated.spec as { schedulerName: string }).schedulerName).toBe('sits-scheduler');
    expect((mutated.metadata as { labels: Record<string, string> }).labels).toEqual({ 'ai.sits2026.dev/queue': 'research' });
    const second = mutate(request(mutated), { schedulerName: 'sits-scheduler', namespace: optIn });
    expect(second.response).toEqual({ uid: 'u1', allowed: true });
  });
  it('leaves pods alone outside opted-in namespaces, without GPUs, or with another scheduler chosen', () => {
    expect(mutate(request(gpuPod()), { schedulerName: 's', namespace: ns({}) }).response.patch).toBeUndefined();
    expect(mutate(request(pod([])), { schedulerName: 's', namespace: optIn }).response.patch).toBeUndefined();
    const other = mutate(request(gpuPod('volcano')), { schedulerName: 's', namespace: ns({ [OPT_IN_LABEL]: 'enabled' }) });
    expect(other.response.patch).toBeUndefined();
  });
  it('defaults a TrainingJob queue and preferred topology level, idempotently, never over a required level', () => {
    const tj = {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      metadata: { name: 't' },
      spec: { replicas: 4, topology: { strategy: 'ring-allreduce' } },
    };
    const deps = {
      schedulerName: 's',
      namespace: ns({ [OPT_IN_LABEL]: 'enabled' }, { [DEFAULT_QUEUE_ANNOTATION]: 'q', [DEFAULT_PREFERRED_LEVEL_ANNOTATION]: 'rack' }),
    };
    const req = (o: Record<string, unknown>): AdmissionRequest => ({ ...request(o), kind: { group: 'ai.sits2026.dev', version: 'v1', kind: 'TrainingJob' } });
    const once = apply(tj, mutate(req(tj), deps).response.patch);
    expect(once.spec).toEqual({ replicas: 4, queue: 'q', topology: { strategy: 'ring-allreduce', preferredLevel: 'rack' } });
    expect(mutate(req(once), deps).response.patch).toBeUndefined();
    const required = { ...tj, spec: { replicas: 4, queue: 'mine', topology: { requiredLevel: 'nvlink-domain' } } };
    expect(mutate(req(required), deps).response.patch).toBeUndefined();
  });
});
