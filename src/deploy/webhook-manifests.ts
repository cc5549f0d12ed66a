/**
 * The admission webhook in the chart (`webhook.enabled`): its own ServiceAccount and least-privilege RBAC,
 * a Deployment running `sits webhook`, a Service, the ValidatingWebhookConfiguration (guard rails) and the
 * MutatingWebhookConfiguration (defaults for opted-in namespaces). The webhook creates its CA and serving
 * certificate in a Secret and writes the caBundle into both configurations itself (no cert-manager needed).
 */
import { NAMESPACE_OPT_IN } from '../api/wire.ts';
import {
  nonResourceRuleYaml,
  ruleYaml,
  WEBHOOK_CALLER_RULES,
  WEBHOOK_RULES,
  WEBHOOK_SECRET_CREATE_RULE,
  WEBHOOK_SECRET_GET_UPDATE_RULE,
  type PolicyRule,
} from './rbac.ts';
import { block, concat, ifItems, quoted, raw, RELEASE_NAMESPACE, type Doc, type Node } from './tree.ts';
import { image, podMetadata, podPlacement } from './pod.ts';
import { webhookSecretPolicyDocs } from './admission-policies.ts';
import { RESTRICTED_CONTAINER, RESTRICTED_POD } from './security.ts';

export const WEBHOOK_NAMES = {
  serviceAccount: 'sits-webhook',
  role: 'sits-webhook',
  callerRole: 'sits-webhook-caller',
  deployment: 'sits-webhook',
  service: 'sits-webhook',
  secret: 'sits-webhook-tls',
  validating: 'sits-guard-rails',
  mutating: 'sits-defaults',
  validatingHook: 'validate.guard.sits2026.dev',
  mutatingHook: 'mutate.defaults.sits2026.dev',
} as const;

export const WEBHOOK_SELECTOR = { 'app.kubernetes.io/name': 'sits', 'app.kubernetes.io/component': 'webhook' } as const;
const labels = (): Record<string, Node> => ({ ...WEBHOOK_SELECTOR, 'app.kubernetes.io/part-of': 'sits', 'app.kubernetes.io/version': quoted('image.tag') });
const meta = (name: string, namespaced = true): Record<string, Node> => ({
  name,
  ...(namespaced ? { namespace: quoted(RELEASE_NAMESPACE) } : {}),
  labels: labels(),
});
const rules = (list: readonly PolicyRule[]): Node[] => list.map(ruleYaml);
const sa = (): Node[] => [{ kind: 'ServiceAccount', name: WEBHOOK_NAMES.serviceAccount, namespace: quoted(RELEASE_NAMESPACE) }];
const W = 'webhook.enabled';

/** What the validating webhook reviews (CREATE and UPDATE): the objects the guard rules look at. */
export const VALIDATED: readonly { readonly apiGroups: readonly string[]; readonly resources: readonly string[] }[] = [
  { apiGroups: [''], resources: ['pods', 'services', 'persistentvolumeclaims'] },
  { apiGroups: ['apps'], resources: ['deployments', 'statefulsets', 'replicasets', 'daemonsets'] },
  { apiGroups: ['batch'], resources: ['jobs', 'cronjobs'] },
  { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'] },
  { apiGroups: ['scheduling.k8s.io'], resources: ['priorityclasses'] },
  { apiGroups: ['ai.sits2026.dev'], resources: ['trainingjobs', 'inferenceservices', 'batchinferencejobs', 'podgroups'] },
  { apiGroups: ['keda.sh'], resources: ['scaledobjects'] },
  { apiGroups: ['kubeflow.org'], resources: ['pytorchjobs'] },
  { apiGroups: ['batch.volcano.sh'], resources: ['jobs'] },
];

function webhookDeployment(): Doc {
  return {
    file: 'webhook-deployment.yaml',
    when: W,
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(WEBHOOK_NAMES.deployment),
      spec: {
        replicas: raw('webhook.replicas'),
        revisionHistoryLimit: 5,
        selector: { matchLabels: { ...WEBHOOK_SELECTOR } },
        template: {
          metadata: podMetadata(labels(), 'webhook.'),
          spec: {
            serviceAccountName: WEBHOOK_NAMES.serviceAccount,
            automountServiceAccountToken: true,
            securityContext: RESTRICTED_POD,
            ...podPlacement('webhook.'),
            terminationGracePeriodSeconds: 10,
            containers: [
              {
                name: 'webhook',
                image: image(),
                imagePullPolicy: raw('image.pullPolicy'),
                args: [
                  'webhook',
                  concat('--port=', raw('webhook.port')),
                  concat('--mode=', raw('webhook.mode')),
                  concat('--namespace=', raw(RELEASE_NAMESPACE)),
                  `--service=${WEBHOOK_NAMES.service}`,
                  `--cert-secret=${WEBHOOK_NAMES.secret}`,
                  `--validating-config=${WEBHOOK_NAMES.validating}`,
                  `--mutating-config=${WEBHOOK_NAMES.mutating}`,
                  ifItems('webhook.disable', [concat('--disable=', raw('webhook.disable'))]),
                ],
                env: [{ name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }],
                ports: [{ name: 'https', containerPort: raw('webhook.port'), protocol: 'TCP' }],
                // /healthz and /readyz are always allowed (no credentials needed), over HTTPS.
                readinessProbe: { httpGet: { path: '/readyz', port: 'https', scheme: 'HTTPS' }, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 },
                livenessProbe: { httpGet: { path: '/healthz', port: 'https', scheme: 'HTTPS' }, periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 },
                resources: block('webhook.resources'),
                securityContext: RESTRICTED_CONTAINER,
                volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
              },
            ],
            volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
          },
        },
      },
    },
  };
}

// The expressions are ANDed: the excluded namespaces, and always the release's own (the webhook must never review
// the pods that would repair it).
const namespaceSelector = (): Node => ({
  matchExpressions: [
    { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: block('webhook.excludeNamespaces') },
    { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [raw(RELEASE_NAMESPACE)] },
  ],
});

function validatingConfig(): Doc {
  return {
    file: 'webhook-validating.yaml',
    when: W,
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: meta(WEBHOOK_NAMES.validating, false),
      webhooks: [
        {
          name: WEBHOOK_NAMES.validatingHook,
          // caBundle: written by the webhook from its Secret (src/webhook/cert-rotation.ts).
          clientConfig: { service: { name: WEBHOOK_NAMES.service, namespace: quoted(RELEASE_NAMESPACE), path: '/validate', port: 443 } },
          rules: VALIDATED.map((r) => ({
            apiGroups: [...r.apiGroups],
            apiVersions: ['*'],
            operations: ['CREATE', 'UPDATE'],
            resources: [...r.resources],
            scope: '*',
          })),
          namespaceSelector: namespaceSelector(),
          // Ignore by default: a fail-closed webhook without a running pod refuses every matching create (values.ts).
          failurePolicy: raw('webhook.failurePolicy'),
          matchPolicy: 'Equivalent',
          sideEffects: 'NoneOnDryRun',
          timeoutSeconds: raw('webhook.timeoutSeconds'),
          admissionReviewVersions: ['v1'],
        },
      ],
    },
  };
}

function mutatingConfig(): Doc {
  return {
    file: 'webhook-mutating.yaml',
    when: W,
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: meta(WEBHOOK_NAMES.mutating, false),
      webhooks: [
        {
          name: WEBHOOK_NAMES.mutatingHook,
          clientConfig: { service: { name: WEBHOOK_NAMES.service, namespace: quoted(RELEASE_NAMESPACE), path: '/mutate', port: 443 } },
          rules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' },
            { apiGroups: ['ai.sits2026.dev'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['trainingjobs'], scope: 'Namespaced' },
          ],
          // Only namespaces that opt in get SITS defaults.
          namespaceSelector: { matchLabels: { [NAMESPACE_OPT_IN.label]: NAMESPACE_OPT_IN.value } },
          // Defaults are a convenience: a webhook outage must not block pod creation.
          failurePolicy: 'Ignore',
          matchPolicy: 'Equivalent',
          sideEffects: 'None',
          timeoutSeconds: raw('webhook.timeoutSeconds'),
          admissionReviewVersions: ['v1'],
          reinvocationPolicy: 'Never',
        },
      ],
    },
  };
}

/** Every webhook document, in apply order (configurations last: the Service must exist when they are used). */
export function webhookDocs(): Doc[] {
  return [
    {
      file: 'webhook-serviceaccount.yaml',
      when: W,
      body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(WEBHOOK_NAMES.serviceAccount), automountServiceAccountToken: true },
    },
    {
      file: 'webhook-clusterrole.yaml',
      when: W,
      body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(WEBHOOK_NAMES.role, false), rules: rules(WEBHOOK_RULES) },
    },
    {
      file: 'webhook-clusterrolebinding.yaml',
      when: W,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: meta(WEBHOOK_NAMES.role, false),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: WEBHOOK_NAMES.role },
        subjects: sa(),
      },
    },
    {
      file: 'webhook-role.yaml',
      when: W,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: meta(WEBHOOK_NAMES.role),
        // Its own certificate Secret only: create cannot be limited by name, get/update are.
        rules: [...rules([WEBHOOK_SECRET_CREATE_RULE]), { ...ruleYaml(WEBHOOK_SECRET_GET_UPDATE_RULE), resourceNames: [WEBHOOK_NAMES.secret] }],
      },
    },
    {
      file: 'webhook-rolebinding.yaml',
      when: W,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: meta(WEBHOOK_NAMES.role),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: WEBHOOK_NAMES.role },
        subjects: sa(),
      },
    },
    // Who may call /validate and /mutate: the apiserver's admission identity (its AdmissionConfiguration kubeconfig).
    // Create cannot be limited by name in RBAC: the apiserver holds the webhook to its one Secret (ADR 0174).
    ...webhookSecretPolicyDocs(WEBHOOK_NAMES.serviceAccount, WEBHOOK_NAMES.secret),
    {
      file: 'webhook-caller-clusterrole.yaml',
      when: W,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: meta(WEBHOOK_NAMES.callerRole, false),
        rules: WEBHOOK_CALLER_RULES.map(nonResourceRuleYaml),
      },
    },
    {
      file: 'webhook-caller-clusterrolebinding.yaml',
      when: W,
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: meta(WEBHOOK_NAMES.callerRole, false),
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: WEBHOOK_NAMES.callerRole },
        subjects: block('webhook.callers'),
      },
    },
    {
      file: 'webhook-service.yaml',
      when: W,
      body: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: meta(WEBHOOK_NAMES.service),
        spec: { type: 'ClusterIP', selector: { ...WEBHOOK_SELECTOR }, ports: [{ name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' }] },
      },
    },
    webhookDeployment(),
    validatingConfig(),
    mutatingConfig(),
  ];
}
