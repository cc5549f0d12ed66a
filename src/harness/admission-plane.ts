/**
 * A control plane whose kube-apiserver authenticates to admission webhooks, as a production apiserver
 * configured for SITS does (docs/guard-rails.md): an AdmissionConfiguration whose WebhookAdmission kubeconfig
 * presents a bearer token of the user `sits:kube-apiserver-admission` (group `sits:apiservers`) to every
 * webhook; the apiserver itself accepts that token, so the webhook's TokenReview of it succeeds.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { isStatus, type KubeClient } from '../kube/client/client.ts';
import type { ControlPlaneOptions } from './control-plane.ts';

export const ADMISSION_CALLER = { user: 'sits:kube-apiserver-admission', group: 'sits:apiservers' } as const;

export interface AdmissionPlaneSetup {
  readonly apiServerArgs: readonly string[];
  readonly tokens: NonNullable<ControlPlaneOptions['tokens']>;
  /** The token the apiserver presents to webhooks. */
  readonly callerToken: string;
}

/** Writes the admission configuration into `dir`; pass the result's args and tokens to startControlPlane. */
export function admissionPlaneSetup(dir: string): AdmissionPlaneSetup {
  const callerToken = randomBytes(16).toString('hex');
  const kubeconfig = join(dir, 'webhook-kubeconfig.yaml');
  writeFileSync(kubeconfig, stringify({ apiVersion: 'v1', kind: 'Config', users: [{ name: '*', user: { token: callerToken } }] }), { mode: 0o600 });
  const admission = join(dir, 'admission.yaml');
  const plugin = (name: string): unknown => ({
    name,
    configuration: { apiVersion: 'apiserver.config.k8s.io/v1', kind: 'WebhookAdmissionConfiguration', kubeConfigFile: kubeconfig },
  });
  writeFileSync(
    admission,
    stringify({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AdmissionConfiguration',
      plugins: [plugin('ValidatingAdmissionWebhook'), plugin('MutatingAdmissionWebhook')],
    }),
  );
  return {
    apiServerArgs: [`--admission-control-config-file=${admission}`],
    tokens: [{ token: callerToken, user: ADMISSION_CALLER.user, groups: [ADMISSION_CALLER.group] }],
    callerToken,
  };
}

/** What the chart grants the apiserver's admission identity: POST on the two webhook paths, nothing else. */
export async function grantAdmissionCaller(
  client: KubeClient,
  rules: readonly { readonly nonResourceURLs: readonly string[]; readonly verbs: readonly string[] }[],
  name = 'sits-webhook-caller',
): Promise<void> {
  const objects = [
    {
      path: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name },
        rules: rules.map((r) => ({ nonResourceURLs: [...r.nonResourceURLs], verbs: [...r.verbs] })),
      },
    },
    {
      path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: ADMISSION_CALLER.group }],
      },
    },
  ];
  for (const o of objects) {
    try {
      await client.post(o.path, o.body);
    } catch (e) {
      if (!isStatus(e, 409)) throw e;
    }
  }
}
