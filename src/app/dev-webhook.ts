/**
 * The admission webhook of a local cluster (`sits dev up`, the anti-pattern suite): the chart's two webhook
 * configurations pointed at a URL on this machine instead of the in-cluster Service, the caller RBAC of the
 * chart, and the webhook itself in this process with its certificate rotation (Secret in `sits-system`).
 */
import { RULES } from '../guard/rules/index.ts';
import type { Rule } from '../guard/rule.ts';
import { grantAdmissionCaller } from '../harness/admission-plane.ts';
import { freePorts } from '../harness/control-plane.ts';
import { createNs } from '../harness/e2e-kit.ts';
import { isStatus, type KubeClient } from '../kube/client/client.ts';
import { WEBHOOK_CALLER_RULES } from '../deploy/rbac.ts';
import { WEBHOOK_NAMES, webhookDocs } from '../deploy/webhook-manifests.ts';
import { evaluateDocs } from '../deploy/tree.ts';
import { resolveValues } from '../deploy/values.ts';
import { defaultControllerUsers, type Mode } from '../webhook/admission.ts';
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

/** The chart's two configurations, exactly as it renders them, with `clientConfig.url` instead of the Service. */
export function devWebhookConfigs(port: number, failurePolicy: 'Fail' | 'Ignore'): { validating: Record<string, unknown>; mutating: Record<string, unknown> } {
  const values = resolveValues({ webhook: { failurePolicy } }, DEV_WEBHOOK_NAMESPACE);
  if (!values.ok) throw new Error(values.errors.join('; '));
  const rendered = evaluateDocs(webhookDocs(), values.value, DEV_WEBHOOK_NAMESPACE).map(
    (d) => d.object as Record<string, unknown> & { kind: string; webhooks?: { clientConfig: { service?: { path?: string } } }[] },
  );
  const withUrl = (kind: string): Record<string, unknown> => {
    const cfg = rendered.find((o) => o.kind === kind);
    if (cfg === undefined) throw new Error(`the chart renders no ${kind}`);
    for (const w of cfg.webhooks ?? []) w.clientConfig = { url: `https://localhost:${port}${w.clientConfig.service?.path ?? ''}` } as typeof w.clientConfig;
    return cfg;
  };
  return { validating: withUrl('ValidatingWebhookConfiguration'), mutating: withUrl('MutatingWebhookConfiguration') };
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
  const port = o.port ?? (await freePorts(1))[0] ?? 0;
  const cfg = devWebhookConfigs(port, o.failurePolicy ?? 'Fail');
  await put(client, 'validatingwebhookconfigurations', cfg.validating);
  await put(client, 'mutatingwebhookconfigurations', cfg.mutating);
  // The local controllers (`sits dev up`) and kube-controller-manager run as this same client: their pods are
  // a controller's pods here, besides the chart's identities.
  const me = await client.post<{ status?: { userInfo?: { username?: string } } }>('/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
  });
  const self = me.status?.userInfo?.username;
  return startWebhook({
    client,
    rules: o.rules ?? RULES,
    controllerUsers: [...defaultControllerUsers(DEV_WEBHOOK_NAMESPACE), ...(self === undefined || self === '' ? [] : [self])],
    mode: o.mode,
    schedulerName: 'sits-scheduler',
    port,
    host: '127.0.0.1',
    tls: {
      rotation: {
        secret: { namespace: DEV_WEBHOOK_NAMESPACE, name: WEBHOOK_NAMES.secret },
        dnsNames: ['localhost'],
        ips: ['127.0.0.1'],
        validatingConfigs: [WEBHOOK_NAMES.validating],
        mutatingConfigs: [WEBHOOK_NAMES.mutating],
      },
    },
    ...(o.log !== undefined ? { log: o.log } : {}),
  });
}
