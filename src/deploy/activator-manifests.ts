/**
 * The activator in the chart (`activator.enabled`, off by default; ADR 0149): its ServiceAccount and
 * least-privilege ClusterRole (EndpointSlices list/watch, InferenceServices get/patch for the activation stamp,
 * TokenReview/SubjectAccessReview for its callers), the `sits-inference-caller` ClusterRole users bind in their
 * namespaces to let a workload send requests, a Service, and a Deployment running `sits activator`. Every replica
 * serves (no leader): each holds its own requests and stamps the same annotation. The serving certificate comes
 * from a kubernetes.io/tls Secret (`activator.tlsSecret`, keys tls.crt and tls.key: e.g. cert-manager's).
 * Its memory budget (ADR 0176: held requests and buffered body bytes) comes from its own memory limit, handed in by
 * the downward API, so `activator.resources.limits.memory` and the budget cannot disagree.
 */
import { ACTIVATOR_RULES, INFERENCE_CALLER_RULES, ruleYaml, type PolicyRule } from './rbac.ts';
import { block, concat, ifItems, quoted, raw, RELEASE_NAMESPACE, type Doc, type Node } from './tree.ts';
import { image, podMetadata, podPlacement } from './pod.ts';
import { RESTRICTED_CONTAINER, RESTRICTED_POD } from './security.ts';

export const ACTIVATOR_NAMES = {
  serviceAccount: 'sits-activator',
  role: 'sits-activator',
  callerRole: 'sits-inference-caller',
  deployment: 'sits-activator',
  service: 'sits-activator',
} as const;

export const ACTIVATOR_SELECTOR = { 'app.kubernetes.io/name': 'sits', 'app.kubernetes.io/component': 'activator' } as const;
const TLS_DIR = '/etc/sits-activator/tls';
const labels = (): Record<string, Node> => ({ ...ACTIVATOR_SELECTOR, 'app.kubernetes.io/part-of': 'sits', 'app.kubernetes.io/version': quoted('image.tag') });
const meta = (name: string, namespaced = true): Record<string, Node> => ({
  name,
  ...(namespaced ? { namespace: quoted(RELEASE_NAMESPACE) } : {}),
  labels: labels(),
});
const rules = (list: readonly PolicyRule[]): Node[] => list.map(ruleYaml);
const A = 'activator.enabled';

function activatorDeployment(): Doc {
  return {
    file: 'activator-deployment.yaml',
    when: A,
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(ACTIVATOR_NAMES.deployment),
      spec: {
        replicas: raw('activator.replicas'),
        revisionHistoryLimit: 5,
        selector: { matchLabels: { ...ACTIVATOR_SELECTOR } },
        template: {
          metadata: podMetadata(labels(), 'activator.'),
          spec: {
            serviceAccountName: ACTIVATOR_NAMES.serviceAccount,
            automountServiceAccountToken: true,
            securityContext: RESTRICTED_POD,
            ...podPlacement('activator.'),
            // Held requests wait for a model load: let them finish on shutdown, up to the hold timeout.
            terminationGracePeriodSeconds: raw('activator.holdTimeoutSeconds'),
            containers: [
              {
                name: 'activator',
                image: image(),
                imagePullPolicy: raw('image.pullPolicy'),
                args: [
                  'activator',
                  concat('--port=', raw('activator.port')),
                  `--tls-cert-file=${TLS_DIR}/tls.crt`,
                  `--tls-private-key-file=${TLS_DIR}/tls.key`,
                  concat('--hold-timeout=', raw('activator.holdTimeoutSeconds')),
                  concat('--max-held=', raw('activator.maxHeldPerService')),
                  ifItems('activator.apiAudiences', [concat('--api-audiences=', raw('activator.apiAudiences'))]),
                ],
                // The budget's base: half of it for request bodies, 64 KiB of it per held request (ADR 0176).
                env: [{ name: 'SITS_MEMORY_LIMIT', valueFrom: { resourceFieldRef: { containerName: 'activator', resource: 'limits.memory', divisor: '1' } } }],
                ports: [{ name: 'https', containerPort: raw('activator.port'), protocol: 'TCP' }],
                readinessProbe: { httpGet: { path: '/readyz', port: 'https', scheme: 'HTTPS' }, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 2 },
                livenessProbe: { httpGet: { path: '/healthz', port: 'https', scheme: 'HTTPS' }, periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 },
                resources: block('activator.resources'),
                securityContext: RESTRICTED_CONTAINER,
                volumeMounts: [
                  { name: 'tls', mountPath: TLS_DIR, readOnly: true },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'tls', secret: { secretName: raw('activator.tlsSecret') } },
              { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
            ],
          },
        },
      },
    },
  };
}

/** Every activator document, in apply order. */
export function activatorDocs(): Doc[] {
  return [
    {
      file: 'activator-serviceaccount.yaml',
      when: A,
      body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(ACTIVATOR_NAMES.serviceAccount), automountServiceAccountToken: true },
    },
    {
      file: 'activator-clusterrole.yaml',
      when: A,
      body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(ACTIVATOR_NAMES.role, false), rules: rules(ACTIVATOR_RULES) },
    },
    {
      file: 'activator-clusterrolebinding.yaml',
      when: A,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: meta(ACTIVATOR_NAMES.role, false),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ACTIVATOR_NAMES.role },
        subjects: [{ kind: 'ServiceAccount', name: ACTIVATOR_NAMES.serviceAccount, namespace: quoted(RELEASE_NAMESPACE) }],
      },
    },
    // Bound by users (a RoleBinding in their namespace) to the workloads that send requests.
    {
      file: 'activator-caller-clusterrole.yaml',
      when: A,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: meta(ACTIVATOR_NAMES.callerRole, false),
        rules: rules(INFERENCE_CALLER_RULES),
      },
    },
    {
      file: 'activator-service.yaml',
      when: A,
      body: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: meta(ACTIVATOR_NAMES.service),
        spec: { type: 'ClusterIP', selector: { ...ACTIVATOR_SELECTOR }, ports: [{ name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' }] },
      },
    },
    activatorDeployment(),
  ];
}
