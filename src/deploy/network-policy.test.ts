// The chart's NetworkPolicies (finding 6; ADR 0175): each selects exactly its component's pods, opens only the
// port its container listens on, to the peers of its value; the node agent gets no ingress.
import { describe, expect, it } from 'vitest';
import { plainObjects } from './bundle.ts';
import { NETWORK_POLICY_NAMES } from './network-policy-manifests.ts';
import { allOn } from './rbac-table.ts';
import { DEFAULT_VALUES, resolveValues, type DeployValues } from './values.ts';

type Labels = Record<string, string>;
type Workload = {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec: { template: { metadata: { labels: Labels }; spec: { containers: { ports?: { name: string; containerPort: number }[] }[] } } };
};
type Policy = {
  kind: string;
  metadata: { name: string; namespace: string };
  spec: { podSelector: { matchLabels: Labels }; policyTypes: string[]; ingress: { from: unknown[]; ports: { protocol: string; port: string }[] }[] };
};

const withValues = (over: Record<string, unknown>): DeployValues => {
  const r = resolveValues(over);
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return r.value;
};
const policies = (v: DeployValues): Policy[] => (plainObjects(v) as unknown as Policy[]).filter((o) => o.kind === 'NetworkPolicy');
const workloads = (v: DeployValues): Workload[] => (plainObjects(v) as unknown as Workload[]).filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet');
const selects = (sel: Labels, labels: Labels): boolean => Object.entries(sel).every(([k, x]) => labels[k] === x);

describe('NetworkPolicies in the chart', () => {
  it('are on by default, one for each component that is enabled', () => {
    expect(policies(DEFAULT_VALUES).map((p) => p.metadata.name)).toEqual([
      NETWORK_POLICY_NAMES.scheduler,
      NETWORK_POLICY_NAMES.controllers,
      NETWORK_POLICY_NAMES.webhook,
    ]);
    expect(policies(allOn(DEFAULT_VALUES)).map((p) => p.metadata.name)).toEqual(Object.values(NETWORK_POLICY_NAMES));
    expect(policies(withValues({ networkPolicy: { enabled: false } }))).toEqual([]);
  });

  it('each selects exactly the pods of one workload, in its namespace, and opens only the port that workload listens on', () => {
    const v = allOn(DEFAULT_VALUES);
    const ws = workloads(v);
    for (const p of policies(v)) {
      const selected = ws.filter(
        (w) => w.metadata.namespace === p.metadata.namespace && selects(p.spec.podSelector.matchLabels, w.spec.template.metadata.labels),
      );
      expect(
        selected.map((w) => w.metadata.name),
        p.metadata.name,
      ).toEqual([p.metadata.name]);
      // Pods of other workloads are not selected, whatever their namespace.
      expect(ws.filter((w) => w.metadata.name !== p.metadata.name && selects(p.spec.podSelector.matchLabels, w.spec.template.metadata.labels))).toEqual([]);
      expect(p.spec.policyTypes).toEqual(['Ingress']);
      const ports = (selected[0]?.spec.template.spec.containers ?? []).flatMap((c) => c.ports ?? []).map((x) => x.name);
      expect(
        p.spec.ingress.flatMap((i) => i.ports.map((x) => x.port)),
        p.metadata.name,
      ).toEqual(ports);
    }
    // The node agent listens on nothing (the device plugin is a Unix socket): no ingress at all.
    expect(policies(v).find((p) => p.metadata.name === NETWORK_POLICY_NAMES.nodeAgent)?.spec.ingress).toEqual([]);
    expect(policies(v).find((p) => p.metadata.name === NETWORK_POLICY_NAMES.nodeAgent)?.metadata.namespace).toBe(v.nodeAgent.namespace);
  });

  it('by default any source may reach each listener (each authenticates its callers); the values narrow it', () => {
    for (const p of policies(allOn(DEFAULT_VALUES))) for (const i of p.spec.ingress) expect(i.from, p.metadata.name).toEqual([]);
    const prom = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }];
    const apiserver = [{ ipBlock: { cidr: '10.0.0.0/24' } }];
    const ingress = [{ namespaceSelector: { matchLabels: { ingress: 'yes' } }, podSelector: { matchLabels: { app: 'nginx' } } }];
    const scheduler = [{ ipBlock: { cidr: '10.0.1.0/24', except: ['10.0.1.7/32'] } }];
    const v = allOn(withValues({ networkPolicy: { metricsFrom: prom, webhookFrom: apiserver, activatorFrom: ingress, extenderFrom: scheduler } }));
    const from = Object.fromEntries(policies(v).map((p) => [p.metadata.name, p.spec.ingress[0]?.from]));
    expect(from).toEqual({
      [NETWORK_POLICY_NAMES.scheduler]: prom,
      [NETWORK_POLICY_NAMES.controllers]: prom,
      [NETWORK_POLICY_NAMES.webhook]: apiserver,
      [NETWORK_POLICY_NAMES.extender]: scheduler,
      [NETWORK_POLICY_NAMES.activator]: ingress,
      [NETWORK_POLICY_NAMES.nodeAgent]: undefined,
    });
  });

  it('bad peers are refused, naming the value', () => {
    const bad = (over: Record<string, unknown>): string => {
      const r = resolveValues(over);
      return r.ok ? '' : r.errors.join('\n');
    };
    expect(bad({ networkPolicy: { webhookFrom: [{ ipBlock: { cidr: 'everyone' } }] } })).toMatch(/values\.networkPolicy\.webhookFrom\.0\.ipBlock\.cidr/);
    expect(bad({ networkPolicy: { metricsFrom: [{ podSelectr: {} }] } })).toMatch(/values\.networkPolicy\.metricsFrom\.0/);
    expect(bad({ networkPolicy: { activatorFrom: [{}] } })).toMatch(/values\.networkPolicy\.activatorFrom\.0/);
    expect(bad({ networkPolicy: { extenderFrom: [{ namespaceSelector: { matchExpressions: [{ key: 'a', operator: 'Is' }] } }] } })).toMatch(
      /values\.networkPolicy\.extenderFrom/,
    );
  });
});
