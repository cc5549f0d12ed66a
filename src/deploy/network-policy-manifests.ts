/**
 * NetworkPolicies (networkPolicy.enabled, on by default; ADR 0175): each component's pods accept ingress on their
 * one listening port only, from the peers its value lists ([] any source: every listener authenticates its callers,
 * so the default breaks nothing and closes every other port); the node agent listens on nothing (its device plugin
 * is a Unix socket) and accepts no ingress. Who must reach what: Prometheus and dashboard users the scheduler's
 * metrics port and the controllers' health port (metricsFrom), the kube-apiserver the webhook (webhookFrom),
 * kube-scheduler the extender (extenderFrom), users and ingress the activator (activatorFrom). Egress stays open:
 * the apiserver's address is not known to the chart, and the activator proxies to any InferenceService.
 */
import { ACTIVATOR_SELECTOR } from './activator-manifests.ts';
import { EXTENDER_SELECTOR } from './extender-manifests.ts';
import { CONTROLLERS_SELECTOR, NODE_AGENT_SELECTOR, SELECTOR_LABELS } from './manifests.ts';
import { block, quoted, RELEASE_NAMESPACE, type Doc, type Node } from './tree.ts';
import { WEBHOOK_SELECTOR } from './webhook-manifests.ts';

const NP = 'networkPolicy.enabled';

export const NETWORK_POLICY_NAMES = {
  scheduler: 'sits-scheduler',
  controllers: 'sits-controllers',
  webhook: 'sits-webhook',
  extender: 'sits-extender',
  activator: 'sits-activator',
  nodeAgent: 'sits-node-agent',
} as const;

/** One component's policy: its pods (by the Deployment's selector), ingress on the named container port from `from`. */
function policy(
  file: string,
  name: string,
  selector: Record<string, string>,
  when: string | undefined,
  ingress: readonly Node[],
  namespace: Node = quoted(RELEASE_NAMESPACE),
): Doc {
  return {
    file,
    when: NP,
    ...(when === undefined ? {} : { alsoWhen: when }),
    body: {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name, namespace, labels: { ...selector, 'app.kubernetes.io/part-of': 'sits' } },
      spec: { podSelector: { matchLabels: { ...selector } }, policyTypes: ['Ingress'], ingress: [...ingress] },
    },
  };
}

/** Ingress to the container port named `port` (the Deployments' port names), from the peers at values path `from`. */
const allow = (port: string, from: string): Node => ({ from: block(from), ports: [{ protocol: 'TCP', port }] });

export function networkPolicyDocs(): Doc[] {
  const N = NETWORK_POLICY_NAMES;
  return [
    // /metrics and the dashboard (the secure port also serves the kubelet's probes).
    policy('networkpolicy-scheduler.yaml', N.scheduler, SELECTOR_LABELS, undefined, [allow('metrics', 'networkPolicy.metricsFrom')]),
    policy('networkpolicy-controllers.yaml', N.controllers, CONTROLLERS_SELECTOR, 'controllers.enabled', [allow('health', 'networkPolicy.metricsFrom')]),
    policy('networkpolicy-webhook.yaml', N.webhook, WEBHOOK_SELECTOR, 'webhook.enabled', [allow('https', 'networkPolicy.webhookFrom')]),
    policy('networkpolicy-extender.yaml', N.extender, EXTENDER_SELECTOR, 'extender.enabled', [allow('https', 'networkPolicy.extenderFrom')]),
    policy('networkpolicy-activator.yaml', N.activator, ACTIVATOR_SELECTOR, 'activator.enabled', [allow('https', 'networkPolicy.activatorFrom')]),
    // No listener: no ingress at all.
    policy('networkpolicy-node-agent.yaml', N.nodeAgent, NODE_AGENT_SELECTOR, 'nodeAgent.enabled', [], quoted('nodeAgent.namespace')),
  ];
}
