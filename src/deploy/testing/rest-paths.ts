/** The REST path of a manifest the chart renders, for tests that read or apply it on a real apiserver. */

/** Plural and scope of every kind the chart and the plain manifests hold (a kind missing here is a test error). */
const RESOURCES: Readonly<Record<string, { readonly plural: string; readonly namespaced: boolean }>> = {
  CustomResourceDefinition: { plural: 'customresourcedefinitions', namespaced: false },
  Namespace: { plural: 'namespaces', namespaced: false },
  ServiceAccount: { plural: 'serviceaccounts', namespaced: true },
  Service: { plural: 'services', namespaced: true },
  ConfigMap: { plural: 'configmaps', namespaced: true },
  ClusterRole: { plural: 'clusterroles', namespaced: false },
  ClusterRoleBinding: { plural: 'clusterrolebindings', namespaced: false },
  Role: { plural: 'roles', namespaced: true },
  RoleBinding: { plural: 'rolebindings', namespaced: true },
  Deployment: { plural: 'deployments', namespaced: true },
  DaemonSet: { plural: 'daemonsets', namespaced: true },
  PodDisruptionBudget: { plural: 'poddisruptionbudgets', namespaced: true },
  Pod: { plural: 'pods', namespaced: true },
  ValidatingWebhookConfiguration: { plural: 'validatingwebhookconfigurations', namespaced: false },
  MutatingWebhookConfiguration: { plural: 'mutatingwebhookconfigurations', namespaced: false },
  ValidatingAdmissionPolicy: { plural: 'validatingadmissionpolicies', namespaced: false },
  ValidatingAdmissionPolicyBinding: { plural: 'validatingadmissionpolicybindings', namespaced: false },
  ServiceMonitor: { plural: 'servicemonitors', namespaced: true },
  NetworkPolicy: { plural: 'networkpolicies', namespaced: true },
};

/** `/api/v1/namespaces/NS/services/NAME`, `/apis/GROUP/VERSION/…`; a namespaced object without one is in `defaultNamespace`. */
export function objectPath(
  o: { readonly apiVersion: string; readonly kind: string; readonly metadata: { readonly name: string; readonly namespace?: string } },
  defaultNamespace = 'default',
): string {
  const r = RESOURCES[o.kind];
  if (r === undefined) throw new Error(`no REST mapping for ${o.kind} (add it to src/deploy/testing/rest-paths.ts)`);
  const base = o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`;
  return `${base}${r.namespaced ? `/namespaces/${o.metadata.namespace ?? defaultNamespace}` : ''}/${r.plural}/${o.metadata.name}`;
}

/** The collection an object is created in (`objectPath` without the name). */
export function collectionPath(o: Parameters<typeof objectPath>[0], defaultNamespace = 'default'): string {
  return objectPath(o, defaultNamespace).slice(0, -(o.metadata.name.length + 1));
}

/** The kinds a test applies to create a component's identity and admission policies (no workloads). */
export const IDENTITY_KINDS: ReadonlySet<string> = new Set([
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
]);
