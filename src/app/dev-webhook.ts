/**
 * The admission webhook of a local cluster (`sits dev up`, the anti-pattern suite): the chart's two webhook
 * configurations pointed at a URL on this machine instead of the in-cluster Service, the caller RBAC of the
 * chart, and the webhook itself in this process with its certificate rotation (Secret in `sits-system`).
 */
import { createServer } from 'node:net';
import { RULES } from '../guard/rules/index.ts';
import type { Rule } from '../guard/rule.ts';
import { grantAdmissionCaller } from '../harness/admission-plane.ts';
import { createNs } from '../harness/e2e-kit.ts';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { WEBHOOK_CALLER_RULES } from '../deploy/rbac.ts';
import { VALIDATED, WEBHOOK_NAMES } from '../deploy/webhook-manifests.ts';
import { NAMESPACE_OPT_IN } from '../api/wire.ts';
import type { Mode } from '../webhook/admission.ts';
import { startWebhook, type RunningWebhook } from '../webhook/start.ts';

export const DEV_WEBHOOK_NAMESPACE = 'sits-system';
/** The chart's caller rules, for tests that grant them to the apiserver identity themselves. */
export { WEBHOOK_CALLER_RULES };

export interface DevWebhookOptions {
  readonly mode: Mode;
  readonly failurePolicy?: 'Fail' | 'Ignore';
  readonly rules?: readonly Rule[];
  readonly port?: number;
  readonly log?: (m: string) => void;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/** The chart's configurations with `clientConfig.url` (caBundle filled in by the webhook). */
export function devWebhookConfigs(port: number, failurePolicy: 'Fail' | 'Ignore'): { validating: Record<string, unknown>; mutating: Record<string, unknown> } {
  const url = (path: string): { url: string } => ({ url: `https://localhost:${port}${path}` });
  return {
    validating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: WEBHOOK_NAMES.validating },
      webhooks: [
        {
          name: WEBHOOK_NAMES.validatingHook,
          clientConfig: url('/validate'),
          rules: VALIDATED.map((r) => ({ apiGroups: [...r.apiGroups], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [...r.resources], scope: '*' })),
          namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-node-lease', DEV_WEBHOOK_NAMESPACE] }] },
          failurePolicy,
          matchPolicy: 'Equivalent',
          sideEffects: 'NoneOnDryRun',
          timeoutSeconds: 5,
          admissionReviewVersions: ['v1'],
        },
      ],
    },
    mutating: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: WEBHOOK_NAMES.mutating },
      webhooks: [
        {
          name: WEBHOOK_NAMES.mutatingHook,
          clientConfig: url('/mutate'),
          rules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' },
            { apiGroups: ['ai.sits2026.dev'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['trainingjobs'], scope: 'Namespaced' },
          ],
          namespaceSelector: { matchLabels: { [NAMESPACE_OPT_IN.label]: NAMESPACE_OPT_IN.value } },
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          timeoutSeconds: 5,
          admissionReviewVersions: ['v1'],
          reinvocationPolicy: 'Never',
        },
      ],
    },
  };
}

async function put(client: KubeClient, resource: string, obj: Record<string, unknown>): Promise<void> {
  const base = `/apis/admissionregistration.k8s.io/v1/${resource}`;
  const name = (obj.metadata as { name: string }).name;
  try {
    await client.post(base, obj);
  } catch (e) {
    if (!isStatus(e, 409)) throw e;
    const cur = await client.get<{ metadata: { resourceVersion: string } }>(`${base}/${name}`);
    await client.put(`${base}/${name}`, { ...obj, metadata: { ...(obj.metadata as object), resourceVersion: cur.metadata.resourceVersion } });
  }
}

/**
 * Installs the configurations and starts the webhook; resolves once the webhook serves and has published its
 * caBundle. The apiserver picks the configuration up asynchronously: callers that need the first verdict at
 * once wait for it (see the e2e tests).
 */
export async function startDevWebhook(client: KubeClient, o: DevWebhookOptions): Promise<RunningWebhook> {
  await createNs(client, DEV_WEBHOOK_NAMESPACE).catch((e: unknown) => {
    if (!isStatus(e, 409)) throw e;
  });
  await grantAdmissionCaller(client, WEBHOOK_CALLER_RULES);
  const port = o.port ?? (await freePort());
  const cfg = devWebhookConfigs(port, o.failurePolicy ?? 'Fail');
  await put(client, 'validatingwebhookconfigurations', cfg.validating);
  await put(client, 'mutatingwebhookconfigurations', cfg.mutating);
  return startWebhook({
    client,
    rules: o.rules ?? RULES,
    mode: o.mode,
    schedulerName: 'sits-scheduler',
    port,
    host: '127.0.0.1',
    tls: { rotation: { secret: { namespace: DEV_WEBHOOK_NAMESPACE, name: WEBHOOK_NAMES.secret }, dnsNames: ['localhost'], ips: ['127.0.0.1'], validatingConfigs: [WEBHOOK_NAMES.validating], mutatingConfigs: [WEBHOOK_NAMES.mutating] } },
    ...(o.log !== undefined ? { log: o.log } : {}),
  });
}
