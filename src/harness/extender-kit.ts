/**
 * What the extender's e2e tests share (docs/extender.md): our CA with the extender's serving certificate and
 * kube-scheduler's client certificate, the RBAC that lets kube-scheduler's identity POST the verbs, and the
 * KubeSchedulerConfiguration `extenders:` entry.
 */
import { stringify } from 'yaml';
import { createCa, issue, type CertPair } from '../kube/secure/certs.ts';
import type { KubeClient } from '../kube/client/client.ts';
import { EXTENDER_VERBS } from '../kube/extender/extender-server.ts';

export const CALLER = 'sits:kube-scheduler';
const b64 = (s: string): string => Buffer.from(s).toString('base64');

export interface Certs {
  readonly ca: string;
  readonly serving: CertPair;
  readonly scheduler: CertPair;
}

/** Our CA; the extender's serving certificate and kube-scheduler's client certificate (CN = its user). */
export async function issueCerts(): Promise<Certs> {
  const authority = await createCa('sits-extender-ca', 86_400_000);
  const serving = await issue(authority, { commonName: 'sits-extender', ips: ['127.0.0.1'], dnsNames: ['localhost'], lifetimeMs: 86_400_000 });
  const scheduler = await issue(authority, { commonName: CALLER, organizations: ['sits:schedulers'], usage: 'client', lifetimeMs: 86_400_000 });
  return { ca: authority.cert, serving, scheduler };
}

/** RBAC: kube-scheduler's identity may POST the four verbs, nothing else (docs/extender.md). */
export async function grantCaller(client: KubeClient): Promise<void> {
  await client.post('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'sits-extender-caller' },
    rules: [{ nonResourceURLs: EXTENDER_VERBS.map((v) => `/${v}`), verbs: ['post'] }],
  });
  await client.post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'sits-extender-caller' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'sits-extender-caller' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: CALLER }],
  });
}

/** The KubeSchedulerConfiguration of docs/extender.md, for the extender on `port`. */
export function schedulerConfig(port: number, certs: Certs, schedulerName?: string): string {
  return stringify({
    apiVersion: 'kubescheduler.config.k8s.io/v1',
    kind: 'KubeSchedulerConfiguration',
    podInitialBackoffSeconds: 1,
    podMaxBackoffSeconds: 2,
    ...(schedulerName === undefined ? {} : { profiles: [{ schedulerName }] }),
    extenders: [
      {
        urlPrefix: `https://127.0.0.1:${port}`,
        filterVerb: 'filter',
        prioritizeVerb: 'prioritize',
        bindVerb: 'bind',
        preemptVerb: 'preempt',
        weight: 5,
        enableHTTPS: true,
        nodeCacheCapable: true,
        httpTimeout: '60s',
        managedResources: [{ name: 'nvidia.com/gpu', ignoredByScheduler: true }],
        tlsConfig: { caData: b64(certs.ca), certData: b64(certs.scheduler.cert), keyData: b64(certs.scheduler.key) },
      },
    ],
  });
}
