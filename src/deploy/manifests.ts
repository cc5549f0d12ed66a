/**
 * The SITS deployment as manifest trees (see tree.ts): Namespace, ServiceAccount, RBAC, the Deployment
 * running `sits run --controllers` with leader election, a metrics Service and a PodDisruptionBudget.
 * Each tree gives both the plain manifest (for given values) and the Helm template.
 */
import { SCHEDULER_NAME } from '../api/wire.ts';
import { BATCH_WORKER_RULES, CONTROLLER_RULES, DASHBOARD_VIEWER_RULES, DEVICE_PLUGIN_RULES, LEASE_CREATE_RULE, METRICS_READER_RULES, NODE_AGENT_RULES, SCHEDULER_RULES, type PolicyRule } from './rbac.ts';
import { block, concat, entriesIf, ifItems, quoted, raw, type Doc, type Node } from './tree.ts';
import { webhookDocs } from './webhook-manifests.ts';
import { DASHBOARD_FILE, dashboardJson } from './grafana-dashboard.ts';
import { activatorDocs } from './activator-manifests.ts';
import { extenderDocs } from './extender-manifests.ts';
import { RESTRICTED_CONTAINER, RESTRICTED_POD } from './security.ts';

export const NAMES = {
  serviceAccount: 'sits-scheduler',
  schedulerRole: 'sits-scheduler',
  controllersRole: 'sits-controllers',
  leaseRole: 'sits-leader-election',
  deployment: 'sits-scheduler',
  metricsService: 'sits-scheduler-metrics',
  metricsReaderRole: 'sits-metrics-reader',
  dashboardViewerRole: 'sits-dashboard-viewer',
  batchWorkerRole: 'sits-batch-worker',
  pdb: 'sits-scheduler',
  container: 'sits',
  schedulerName: SCHEDULER_NAME,
  nodeAgent: 'sits-node-agent',
  grafanaDashboard: 'sits-grafana-dashboard',
} as const;

export const SELECTOR_LABELS = { 'app.kubernetes.io/name': 'sits', 'app.kubernetes.io/component': 'scheduler' } as const;
const labels = (): Record<string, Node> => ({ ...SELECTOR_LABELS, 'app.kubernetes.io/part-of': 'sits', 'app.kubernetes.io/version': quoted('image.tag') });
const meta = (name: string, namespaced = true): Record<string, Node> => ({ name, ...(namespaced ? { namespace: quoted('namespace') } : {}), labels: labels() });

const rules = (list: readonly PolicyRule[]): Node[] =>
  list.map((r) => ({ apiGroups: [...r.apiGroups], resources: [...r.resources], ...(r.resourceNames === undefined ? {} : { resourceNames: [...r.resourceNames] }), verbs: [...r.verbs] }));

const subjects = (): Node[] => [{ kind: 'ServiceAccount', name: NAMES.serviceAccount, namespace: quoted('namespace') }];

function namespace(): Doc {
  return {
    file: 'namespace.yaml',
    when: 'createNamespace',
    body: {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: quoted('namespace'),
        labels: {
          ...labels(),
          // The scheduler's own pods meet the "restricted" Pod Security Standard; enforce it.
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
          'pod-security.kubernetes.io/warn': 'restricted',
          'pod-security.kubernetes.io/audit': 'restricted',
        },
      },
    },
  };
}

const serviceAccount = (): Doc => ({
  file: 'serviceaccount.yaml',
  body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(NAMES.serviceAccount), automountServiceAccountToken: true },
});

const clusterRole = (file: string, name: string, list: readonly PolicyRule[], when?: string): Doc => ({
  file,
  ...(when === undefined ? {} : { when }),
  body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(name, false), rules: rules(list) },
});

const clusterRoleBinding = (file: string, name: string, when?: string): Doc => ({
  file,
  ...(when === undefined ? {} : { when }),
  body: {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: meta(name, false),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: subjects(),
  },
});

const leaseRole = (): Doc => ({
  file: 'role-leader-election.yaml',
  when: 'leaderElection.enabled',
  body: {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: meta(NAMES.leaseRole),
    rules: [...rules([LEASE_CREATE_RULE]), { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: block('leaderElection.leaseNames'), verbs: ['get', 'update'] }],
  },
});

const leaseRoleBinding = (): Doc => ({
  file: 'rolebinding-leader-election.yaml',
  when: 'leaderElection.enabled',
  body: {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: meta(NAMES.leaseRole),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: NAMES.leaseRole },
    subjects: subjects(),
  },
});

// The metrics port is the secure port (TLS, delegated authn/authz); the probe paths need no credentials.
const probe = (path: string, periodSeconds: number, failureThreshold: number): Node => ({ httpGet: { path, port: 'metrics', scheme: 'HTTPS' }, periodSeconds, timeoutSeconds: 2, failureThreshold });

function deployment(): Doc {
  return {
    file: 'deployment.yaml',
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(NAMES.deployment),
      spec: {
        replicas: raw('replicas'),
        revisionHistoryLimit: 5,
        selector: { matchLabels: { ...SELECTOR_LABELS } },
        template: {
          metadata: { labels: labels() },
          spec: {
            serviceAccountName: NAMES.serviceAccount,
            automountServiceAccountToken: true,
            ...entriesIf('priorityClassName', { priorityClassName: quoted('priorityClassName') }),
            securityContext: RESTRICTED_POD,
            // A leader that stops renewing loses the lease within the renew deadline; 30 s covers the release on SIGTERM.
            terminationGracePeriodSeconds: 30,
            affinity: {
              podAntiAffinity: {
                preferredDuringSchedulingIgnoredDuringExecution: [
                  { weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { ...SELECTOR_LABELS } } } },
                ],
              },
            },
            ...entriesIf('nodeSelector', { nodeSelector: block('nodeSelector') }),
            ...entriesIf('tolerations', { tolerations: block('tolerations') }),
            containers: [
              {
                name: NAMES.container,
                image: concat(raw('image.repository'), ':', raw('image.tag')),
                imagePullPolicy: raw('image.pullPolicy'),
                args: [
                  'run',
                  ifItems('controllers.enabled', ['--controllers']),
                  concat('--profile=', raw('profile')),
                  concat('--metrics-port=', raw('metrics.port')),
                  '--identity=$(POD_NAME)',
                  ifItems('leaderElection.enabled', [concat('--lease-namespace=', raw('namespace')), concat('--lease-duration=', raw('leaderElection.leaseDurationSeconds'))], ['--no-leader-elect']),
                ],
                env: [
                  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                ],
                ports: [{ name: 'metrics', containerPort: raw('metrics.port'), protocol: 'TCP' }],
                // The server starts before the informers' first list, so /healthz answers during start-up.
                startupProbe: probe('/healthz', 2, 30),
                livenessProbe: probe('/healthz', 10, 3),
                readinessProbe: probe('/readyz', 5, 3),
                resources: block('resources'),
                securityContext: RESTRICTED_CONTAINER,
                // The TypeScript loader caches compiled modules in the temp dir: the only writable path.
                volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
              },
            ],
            volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '256Mi' } }],
          },
        },
      },
    },
  };
}

const metricsService = (): Doc => ({
  file: 'service-metrics.yaml',
  body: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { ...meta(NAMES.metricsService), annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/scheme': 'https', 'prometheus.io/port': quoted('metrics.port'), 'prometheus.io/path': '/metrics' } },
    spec: { type: 'ClusterIP', selector: { ...SELECTOR_LABELS }, ports: [{ name: 'metrics', port: raw('metrics.port'), targetPort: 'metrics', protocol: 'TCP' }] },
  },
});

const podDisruptionBudget = (): Doc => ({
  file: 'poddisruptionbudget.yaml',
  when: 'podDisruptionBudget.enabled',
  body: {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: meta(NAMES.pdb),
    spec: { minAvailable: raw('podDisruptionBudget.minAvailable'), selector: { matchLabels: { ...SELECTOR_LABELS } } },
  },
});

/** The kubelet's device-plugin folder (fixed by the kubelet; src/node/deviceplugin/proto.ts has the same). */
const DEFAULT_PLUGIN_DIR = '/var/lib/kubelet/device-plugins';

export const NODE_AGENT_SELECTOR = { 'app.kubernetes.io/name': 'sits', 'app.kubernetes.io/component': 'node-agent' } as const;
const agentLabels = (): Record<string, Node> => ({ ...NODE_AGENT_SELECTOR, 'app.kubernetes.io/part-of': 'sits', 'app.kubernetes.io/version': quoted('image.tag') });
const agentMeta = (name: string, namespaced = true): Record<string, Node> => ({ name, ...(namespaced ? { namespace: quoted('nodeAgent.namespace') } : {}), labels: agentLabels() });

/** The node agent's own namespace: its device plugin mounts the kubelet's socket folder, which "restricted" forbids. */
const nodeAgentNamespace = (): Doc => ({
  file: 'namespace-node-agent.yaml',
  when: 'nodeAgent.enabled',
  body: {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: quoted('nodeAgent.namespace'),
      labels: { ...agentLabels(), 'pod-security.kubernetes.io/enforce': 'privileged', 'pod-security.kubernetes.io/warn': 'baseline', 'pod-security.kubernetes.io/audit': 'baseline' },
    },
  },
});

const nodeAgentRbac = (): Doc[] => [
  { file: 'serviceaccount-node-agent.yaml', when: 'nodeAgent.enabled', body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: agentMeta(NAMES.nodeAgent), automountServiceAccountToken: true } },
  {
    file: 'clusterrole-node-agent.yaml',
    when: 'nodeAgent.enabled',
    body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: agentMeta(NAMES.nodeAgent, false), rules: [...rules(NODE_AGENT_RULES), ifItems('nodeAgent.devicePlugin', rules(DEVICE_PLUGIN_RULES))] },
  },
  {
    file: 'clusterrolebinding-node-agent.yaml',
    when: 'nodeAgent.enabled',
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: agentMeta(NAMES.nodeAgent, false),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: NAMES.nodeAgent },
      subjects: [{ kind: 'ServiceAccount', name: NAMES.nodeAgent, namespace: quoted('nodeAgent.namespace') }],
    },
  },
];

function nodeAgentDaemonSet(): Doc {
  return {
    file: 'daemonset-node-agent.yaml',
    when: 'nodeAgent.enabled',
    body: {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: agentMeta(NAMES.nodeAgent),
      spec: {
        selector: { matchLabels: { ...NODE_AGENT_SELECTOR } },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
        template: {
          metadata: { labels: agentLabels() },
          spec: {
            serviceAccountName: NAMES.nodeAgent,
            automountServiceAccountToken: true,
            // As NVIDIA's device plugin: a node's GPUs are not allocatable without it.
            priorityClassName: 'system-node-critical',
            ...entriesIf('nodeAgent.runtimeClassName', { runtimeClassName: quoted('nodeAgent.runtimeClassName') }),
            ...entriesIf('nodeAgent.nodeSelector', { nodeSelector: block('nodeAgent.nodeSelector') }),
            ...entriesIf('nodeAgent.tolerations', { tolerations: block('nodeAgent.tolerations') }),
            securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
            terminationGracePeriodSeconds: 10,
            containers: [
              {
                name: 'node-agent',
                image: concat(raw('image.repository'), ':', raw('image.tag')),
                imagePullPolicy: raw('image.pullPolicy'),
                args: [
                  'node-agent',
                  concat('--interval=', raw('nodeAgent.intervalSeconds')),
                  concat('--nvidia-smi=', raw('nodeAgent.nvidiaSmi')),
                  ifItems('nodeAgent.devicePlugin', [`--plugin-dir=${DEFAULT_PLUGIN_DIR}`], ['--no-device-plugin']),
                ],
                env: [
                  { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                  // The NVIDIA runtime mounts nvidia-smi and the driver's management library (no compute, no GPUs taken).
                  { name: 'NVIDIA_VISIBLE_DEVICES', value: 'all' },
                  { name: 'NVIDIA_DRIVER_CAPABILITIES', value: 'utility' },
                ],
                resources: block('nodeAgent.resources'),
                // Root only for the kubelet's root-owned socket folder; nothing else: no privilege, no capabilities.
                securityContext: {
                  allowPrivilegeEscalation: false,
                  privileged: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                  seccompProfile: { type: 'RuntimeDefault' },
                },
                volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }, ifItems('nodeAgent.devicePlugin', [{ name: 'device-plugins', mountPath: DEFAULT_PLUGIN_DIR }])],
              },
            ],
            volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }, ifItems('nodeAgent.devicePlugin', [{ name: 'device-plugins', hostPath: { path: DEFAULT_PLUGIN_DIR, type: 'Directory' } }])],
          },
        },
      },
    },
  };
}

/** The node side (`sits node-agent`): namespace, RBAC and DaemonSet, all when nodeAgent.enabled. */
export function nodeAgentDocs(): Doc[] {
  return [nodeAgentNamespace(), ...nodeAgentRbac(), nodeAgentDaemonSet()];
}

/** RBAC documents alone (deploy/rbac.yaml), in apply order. */
export function rbacDocs(): Doc[] {
  return [
    serviceAccount(),
    clusterRole('clusterrole-scheduler.yaml', NAMES.schedulerRole, SCHEDULER_RULES),
    clusterRoleBinding('clusterrolebinding-scheduler.yaml', NAMES.schedulerRole),
    clusterRole('clusterrole-controllers.yaml', NAMES.controllersRole, CONTROLLER_RULES, 'controllers.enabled'),
    clusterRoleBinding('clusterrolebinding-controllers.yaml', NAMES.controllersRole, 'controllers.enabled'),
    leaseRole(),
    leaseRoleBinding(),
    // For BatchInferenceJob workers: bind their service account to it with a RoleBinding in the job's namespace.
    clusterRole('clusterrole-batch-worker.yaml', NAMES.batchWorkerRole, BATCH_WORKER_RULES, 'controllers.enabled'),
    // For scrapers: bind a Prometheus ServiceAccount to it (the secure port authorizes `get /metrics`).
    {
      file: 'clusterrole-metrics-reader.yaml',
      body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(NAMES.metricsReaderRole, false), rules: METRICS_READER_RULES.map((r) => ({ nonResourceURLs: [...r.nonResourceURLs], verbs: [...r.verbs] })) },
    },
    // For people and tools that open the dashboard (server/dashboard.ts): bind a user or group to it.
    {
      file: 'clusterrole-dashboard-viewer.yaml',
      body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(NAMES.dashboardViewerRole, false), rules: DASHBOARD_VIEWER_RULES.map((r) => ({ nonResourceURLs: [...r.nonResourceURLs], verbs: [...r.verbs] })) },
    },
  ];
}

/** The Grafana dashboard (grafana-dashboard.ts) for the Grafana sidecar, which loads ConfigMaps labelled `grafana_dashboard: "1"`. */
const grafanaDashboardConfigMap = (): Doc => ({
  file: 'configmap-grafana-dashboard.yaml',
  when: 'grafanaDashboard.enabled',
  body: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: NAMES.grafanaDashboard, namespace: quoted('namespace'), labels: { ...labels(), grafana_dashboard: '1' } },
    data: { [DASHBOARD_FILE]: dashboardJson() },
  },
});

/** Every document except the CRDs, in apply order. */
export function deployDocs(): Doc[] {
  return [namespace(), ...rbacDocs(), metricsService(), deployment(), podDisruptionBudget(), grafanaDashboardConfigMap(), ...webhookDocs(), ...extenderDocs(), ...activatorDocs(), ...nodeAgentDocs()];
}
