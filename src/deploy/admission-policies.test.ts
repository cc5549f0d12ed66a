import { describe, expect, it } from 'vitest';
import { buildCrds } from '../api/crd.ts';
import { API_GROUP } from '../api/wire.ts';
import { POD_MAKING_KINDS, POLICY_NAMES } from './admission-policies.ts';
import { plainObjects } from './bundle.ts';
import type { Json } from './tree.ts';
import { resolveValues } from './values.ts';

type Policy = {
  kind: string;
  metadata: { name: string };
  spec: {
    failurePolicy?: string;
    validationActions?: string[];
    policyName?: string;
    matchConstraints?: { resourceRules: { apiGroups: string[]; operations: string[]; resources: string[] }[] };
    matchConditions?: { expression: string }[];
  };
};
const objects = (over: Record<string, unknown>): Policy[] => {
  const r = resolveValues(over);
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return (plainObjects(r.value) as Json[]).filter((o) => (o as Policy).kind.startsWith('ValidatingAdmissionPolicy')) as unknown as Policy[];
};

describe('the chart’s admission policies (ADR 0174)', () => {
  it('the workloads’ policy comes with the controllers, denies (not audits) and fails closed; the node agent’s with the node agent', () => {
    const byDefault = objects({ webhook: { enabled: false } });
    expect(byDefault.map((o) => [o.kind, o.metadata.name])).toEqual([
      ['ValidatingAdmissionPolicy', POLICY_NAMES.workloads],
      ['ValidatingAdmissionPolicyBinding', POLICY_NAMES.workloads],
    ]);
    expect(byDefault[0]?.spec.failurePolicy).toBe('Fail');
    expect(byDefault[1]?.spec).toEqual({ policyName: POLICY_NAMES.workloads, validationActions: ['Deny'] });
    expect(objects({ controllers: { enabled: false }, webhook: { enabled: false } })).toEqual([]);
    // The webhook's Secret policy comes with the webhook (on by default), for its account in the release namespace.
    const hook = objects({ controllers: { enabled: false } });
    expect(hook.map((o) => [o.kind, o.metadata.name])).toEqual([
      ['ValidatingAdmissionPolicy', POLICY_NAMES.webhookSecret],
      ['ValidatingAdmissionPolicyBinding', POLICY_NAMES.webhookSecret],
    ]);
    expect(hook[0]?.spec.failurePolicy).toBe('Fail');
    expect(hook[0]?.spec.matchConditions?.[0]?.expression).toBe("request.userInfo.username == 'system:serviceaccount:sits-system:sits-webhook'");
    expect(hook[1]?.spec.validationActions).toEqual(['Deny']);
    const agent = objects({ controllers: { enabled: false }, webhook: { enabled: false }, nodeAgent: { enabled: true, namespace: 'gpu-agents' } });
    expect(agent.map((o) => o.metadata.name)).toEqual([POLICY_NAMES.nodeAgent, POLICY_NAMES.nodeAgent]);
    expect(agent[0]?.spec.failurePolicy).toBe('Fail');
    expect(agent[0]?.spec.matchConditions?.[0]?.expression).toBe("request.userInfo.username == 'system:serviceaccount:gpu-agents:sits-node-agent'");
    expect(agent[1]?.spec.validationActions).toEqual(['Deny']);
  });

  it('the workloads’ policy covers every SITS kind whose spec holds a container or pod template, and no subresource', () => {
    const makesPods = buildCrds()
      .filter((c) => /"(podTemplate|container)"/.test(JSON.stringify(c.spec.versions)))
      .map((c) => c.spec.names.plural)
      .sort();
    expect(makesPods).toEqual([...POD_MAKING_KINDS].sort());
    const rule = objects({})[0]?.spec.matchConstraints?.resourceRules;
    expect(rule).toEqual([{ apiGroups: [API_GROUP], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [...POD_MAKING_KINDS] }]);
  });
});
