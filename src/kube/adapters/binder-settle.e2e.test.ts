// Regression (commit 39af3aa; a 6-pod TrainingJob never bound after a 429 window in a `sits bench chaos` run): a gang
// plan written on some members, refused on another, and whose undo is refused too stays written, and its members
// stay out of the queue (pendingUnits skips planned pods). The leader must settle it on its own ticks once the
// apiserver accepts the undo again, not only after its next election.
//
// The refusals come from the real kube-apiserver, through a ValidatingAdmissionPolicy on pods/status: an APF
// throttle (the chaos run's 429s) refuses every request of a user alike, so it cannot leave a plan written on only
// part of a gang; the binder takes any refusal but a 404 the same way.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION, API_GROUP, API_VERSION } from '../../api/wire.ts';
import { applyCrds, devNodes } from '../../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../../app/live.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { KubeClient } from '../client/client.ts';

const NS = 'settle';
const POLICY = 'sits-test-refuse-plan-undo';
const REFUSE_LABEL = 'e2e.sits2026.dev/refuse-plan';
const LEASE = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/sits-scheduler';
const VAP = '/apis/admissionregistration.k8s.io/v1';
const MEMBERS = ['member-0', 'member-1', 'member-2'];

interface LeaseObject {
  readonly spec?: { readonly holderIdentity?: string; readonly leaseTransitions?: number };
}

const has = (field: 'object' | 'oldObject', key: string): string => `has(${field}.metadata.annotations) && '${key}' in ${field}.metadata.annotations`;

/**
 * pods/status updates in NS: no plan on a pod labelled REFUSE_LABEL (the plan write fails on one member), and no
 * plan taken off a pod (its undo, and any later rollback, fail on the others).
 */
const policy = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicy',
  metadata: { name: POLICY },
  spec: {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods/status'] }] },
    validations: [
      {
        expression: `!(${has('object', ANNOTATION.planId)} && has(object.metadata.labels) && '${REFUSE_LABEL}' in object.metadata.labels)`,
        message: 'test: no plan on this member',
      },
      { expression: `!(${has('oldObject', ANNOTATION.planId)}) || (${has('object', ANNOTATION.planId)})`, message: 'test: no plan undone now' },
    ],
  },
};
const binding = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicyBinding',
  metadata: { name: POLICY },
  spec: { policyName: POLICY, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } } } },
};

const bound = (p: V1Pod): boolean => (p.spec?.nodeName ?? '') !== '';
const planOf = (p: V1Pod): string | undefined => p.metadata?.annotations?.[ANNOTATION.planId];

describe('KubeBinder settles a gang plan whose undo was refused (real kube-apiserver)', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let app: LiveApp;
  const log: string[] = [];

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), devNodes(2, 'dgx-h100'));
    await createNs(client, NS);
    await client.post(`${VAP}/validatingadmissionpolicies`, policy);
    await client.post(`${VAP}/validatingadmissionpolicybindings`, binding);
    app = await createLiveApp({
      kubeconfig: plane.kubeconfigPath,
      identity: 'settle',
      leaseNamespace: 'kube-system',
      leaseDurationSec: 5,
      log: (m) => log.push(m),
    });
  });
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
  });

  it('after the refusals end, the leader binds the whole gang within a few ticks, without a new election; no member before', async () => {
    // The policy holds once a probe pod (not SITS's) cannot take a plan: the apiserver loads policies asynchronously.
    await createPods(client, [testPod(NS, 'probe', { schedulerName: 'none', labels: { [REFUSE_LABEL]: 'true' } })]);
    await waitFor('the policy refusing writes', async () => {
      const annotations = { [ANNOTATION.planId]: 'probe' };
      return client.mergePatch(`/api/v1/namespaces/${NS}/pods/probe/status`, { metadata: { annotations } }).then(
        () => false,
        () => true,
      );
    });
    await waitFor('this replica leads', async () => app.scheduler.isLeader());
    const leaseBefore = await client.get<LeaseObject>(LEASE);

    await client.post(`/apis/${API_GROUP}/${API_VERSION}/namespaces/${NS}/podgroups`, {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'PodGroup',
      metadata: { name: 'gang', namespace: NS },
      spec: { minMember: MEMBERS.length },
    });
    const gang = (): Promise<V1Pod[]> => listPods(client, NS).then((ps) => ps.filter((p) => MEMBERS.includes(p.metadata?.name ?? '')));
    // Every sample of the members, from their creation on (stamped when its answer came): none may be bound before the
    // refusals end. A failed list is only a missing sample.
    const samples: { at: number; pods: V1Pod[] }[] = [];
    const sampling = { on: true };
    const sampler = (async () => {
      while (sampling.on) {
        const pods = await gang().catch(() => undefined);
        if (pods !== undefined) samples.push({ at: performance.now(), pods });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    try {
      await createPods(
        client,
        MEMBERS.map((m) => testPod(NS, m, { gpus: 2, group: 'gang', labels: m === 'member-1' ? { [REFUSE_LABEL]: 'true' } : {} })),
      );

      // The plan is written on member-0 and member-2, refused on member-1; its undo is refused: the plan stays.
      const left = await waitFor('the plan left written on two members', async () => {
        const ps = await gang();
        const planned = ps.filter((p) => planOf(p) !== undefined);
        return planned.length === 2 && planOf(planned[0] as V1Pod) === planOf(planned[1] as V1Pod) ? (planOf(planned[0] as V1Pod) as string) : undefined;
      });
      // The list can see the two written members before the binder has member-1's refusal back (under load): wait.
      await waitFor('the binder logged the refused plan', async () => log.some((m) => m.includes('could not write the plan (1 failed); undoing it')));
      // Two ticks of refusals: the plan stays written and nothing is bound.
      await new Promise((r) => setTimeout(r, 2500));
      const during = await gang();
      expect(during.filter(bound)).toEqual([]);
      expect(during.filter((p) => planOf(p) === left).map((p) => p.metadata?.name)).toEqual(['member-0', 'member-2']);

      const windowEnd = performance.now();
      await client.delete(`${VAP}/validatingadmissionpolicybindings/${POLICY}`);
      const done = await waitFor(
        'the gang bound',
        async () => {
          const ps = await gang();
          return ps.length === MEMBERS.length && ps.every(bound) ? ps : undefined;
        },
        8000,
      );

      // Bound as one gang under a new plan (the refused one was cleared), each where its plan put it.
      const plans = new Set(done.map(planOf));
      expect(plans.size).toBe(1);
      expect(plans.has(left)).toBe(false);
      expect(plans.has(undefined)).toBe(false);
      for (const p of done) expect(p.metadata?.annotations?.[ANNOTATION.assignedNode]).toBe(p.spec?.nodeName);
      const before = samples.filter((s) => s.at < windowEnd);
      expect(before.length).toBeGreaterThan(10);
      expect(before.flatMap((s) => s.pods.filter(bound))).toEqual([]);
      // The same leader all along: settled by its ticks, not by the recovery of an election.
      const leaseAfter = await client.get<LeaseObject>(LEASE);
      expect(leaseAfter.spec?.holderIdentity).toBe('settle');
      expect(leaseAfter.spec?.leaseTransitions).toBe(leaseBefore.spec?.leaseTransitions);
      expect(app.scheduler.isLeader()).toBe(true);
    } finally {
      sampling.on = false;
      await sampler;
    }
  });
});
