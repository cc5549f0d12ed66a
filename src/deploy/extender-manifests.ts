/**
 * The extender in the chart (`extender.enabled`, off by default; docs/extender.md, ADR 0078): its own
 * ServiceAccount and least-privilege RBAC, a Role for its Lease only, the RBAC that lets kube-scheduler's
 * identity POST the four verbs, a Service, and a Deployment running `sits extender --leader-elect`. Only the
 * leader is Ready, so the Service sends kube-scheduler to the replica that holds the plans; the Deployment
 * therefore replaces its pods with the Recreate strategy (a rolling update would wait forever for a standby to
 * become Ready). The serving certificate and the CA of kube-scheduler's client certificate come from a
 * kubernetes.io/tls Secret (`extender.tlsSecret`, keys tls.crt, tls.key, ca.crt: e.g. cert-manager's).
 */
import { EXTENDER_CALLER_RULES, EXTENDER_RULES, LEASE_CREATE_RULE, LEASE_GET_UPDATE_RULE, nonResourceRuleYaml, ruleYaml, type PolicyRule } from './rbac.ts';
import { block, concat, quoted, raw, RELEASE_NAMESPACE, type Doc, type Node } from './tree.ts';
import { image, podMetadata, podPlacement } from './pod.ts';
import { RESTRICTED_CONTAINER, RESTRICTED_POD } from './security.ts';

export const EXTENDER_NAMES = {
  serviceAccount: 'sits-extender',
  role: 'sits-extender',
  callerRole: 'sits-extender-caller',
  deployment: 'sits-extender',
  service: 'sits-extender',
  lease: 'sits-extender',
} as const;

export const EXTENDER_SELECTOR = { 'app.kubernetes.io/name': 'sits', 'app.kubernetes.io/component': 'extender' } as const;
const TLS_DIR = '/etc/sits-extender/tls';
const labels = (): Record<string, Node> => ({ ...EXTENDER_SELECTOR, 'app.kubernetes.io/part-of': 'sits', 'app.kubernetes.io/version': quoted('image.tag') });
const meta = (name: string, namespaced = true): Record<string, Node> => ({
  name,
  ...(namespaced ? { namespace: quoted(RELEASE_NAMESPACE) } : {}),
  labels: labels(),
});
const rules = (list: readonly PolicyRule[]): Node[] => list.map(ruleYaml);
const sa = (): Node[] => [{ kind: 'ServiceAccount', name: EXTENDER_NAMES.serviceAccount, namespace: quoted(RELEASE_NAMESPACE) }];
const E = 'extender.enabled';

function extenderDeployment(): Doc {
  return {
    file: 'extender-deployment.yaml',
    when: E,
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(EXTENDER_NAMES.deployment),
      spec: {
        replicas: raw('extender.replicas'),
        revisionHistoryLimit: 5,
        // Only the leader is Ready: a rolling update would wait for a standby's readiness that never comes.
        strategy: { type: 'Recreate' },
        selector: { matchLabels: { ...EXTENDER_SELECTOR } },
        template: {
          metadata: podMetadata(labels(), 'extender.'),
          spec: {
            serviceAccountName: EXTENDER_NAMES.serviceAccount,
            automountServiceAccountToken: true,
            securityContext: RESTRICTED_POD,
            ...podPlacement('extender.'),
            terminationGracePeriodSeconds: 10,
            containers: [
              {
                name: 'extender',
                image: image(),
                imagePullPolicy: raw('image.pullPolicy'),
                args: [
                  'extender',
                  concat('--port=', raw('extender.port')),
                  concat('--scheduler-name=', raw('extender.schedulerName')),
                  concat('--profile=', raw('extender.profile')),
                  `--tls-cert-file=${TLS_DIR}/tls.crt`,
                  `--tls-private-key-file=${TLS_DIR}/tls.key`,
                  `--client-ca-file=${TLS_DIR}/ca.crt`,
                  '--leader-elect',
                  concat('--lease-namespace=', raw(RELEASE_NAMESPACE)),
                  `--lease-name=${EXTENDER_NAMES.lease}`,
                  concat('--lease-duration=', raw('extender.leaseDurationSeconds')),
                  '--identity=$(POD_NAME)',
                ],
                env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
                ports: [{ name: 'https', containerPort: raw('extender.port'), protocol: 'TCP' }],
                // /readyz: 200 on the leader only (the Service's one endpoint); /healthz: alive, leader or not.
                readinessProbe: { httpGet: { path: '/readyz', port: 'https', scheme: 'HTTPS' }, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 1 },
                livenessProbe: { httpGet: { path: '/healthz', port: 'https', scheme: 'HTTPS' }, periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 },
                resources: block('extender.resources'),
                securityContext: RESTRICTED_CONTAINER,
                volumeMounts: [
                  { name: 'tls', mountPath: TLS_DIR, readOnly: true },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'tls', secret: { secretName: raw('extender.tlsSecret') } },
              { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
            ],
          },
        },
      },
    },
  };
}

/** Every extender document, in apply order. */
export function extenderDocs(): Doc[] {
  return [
    {
      file: 'extender-serviceaccount.yaml',
      when: E,
      body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(EXTENDER_NAMES.serviceAccount), automountServiceAccountToken: true },
    },
    {
      file: 'extender-clusterrole.yaml',
      when: E,
      body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(EXTENDER_NAMES.role, false), rules: rules(EXTENDER_RULES) },
    },
    {
      file: 'extender-clusterrolebinding.yaml',
      when: E,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: meta(EXTENDER_NAMES.role, false),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: EXTENDER_NAMES.role },
        subjects: sa(),
      },
    },
    {
      file: 'extender-role.yaml',
      when: E,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta(EXTENDER_NAMES.role),
        // Its own Lease only: create cannot be limited by name, get/update are.
        rules: [...rules([LEASE_CREATE_RULE]), { ...ruleYaml(LEASE_GET_UPDATE_RULE), resourceNames: [EXTENDER_NAMES.lease] }],
      },
    },
    {
      file: 'extender-rolebinding.yaml',
      when: E,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: meta(EXTENDER_NAMES.role),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: EXTENDER_NAMES.role },
        subjects: sa(),
      },
    },
    {
      file: 'extender-caller-clusterrole.yaml',
      when: E,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: meta(EXTENDER_NAMES.callerRole, false),
        rules: EXTENDER_CALLER_RULES.map(nonResourceRuleYaml),
      },
    },
    {
      file: 'extender-caller-clusterrolebinding.yaml',
      when: E,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: meta(EXTENDER_NAMES.callerRole, false),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: EXTENDER_NAMES.callerRole },
        subjects: block('extender.callers'),
      },
    },
    {
      file: 'extender-service.yaml',
      when: E,
      body: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: meta(EXTENDER_NAMES.service),
        spec: { type: 'ClusterIP', selector: { ...EXTENDER_SELECTOR }, ports: [{ name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' }] },
      },
    },
    extenderDeployment(),
  ];
}
