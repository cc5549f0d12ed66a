/**
 * The SITS deployment as manifest trees (see tree.ts): the Namespace (plain manifests only), the scheduler's
 * ServiceAccount, RBAC and Deployment (`sits run` with leader election), the controllers' own ServiceAccount,
 * RBAC and Deployment (`sits controllers`), a metrics Service, a PodDisruptionBudget and an optional
 * ServiceMonitor. Each tree gives both the plain manifest (for given values) and the Helm template.
 */
import { SCHEDULER_NAME } from '../api/wire.ts';
import {
  BATCH_WORKER_RULES,
  CONTROLLER_NODE_QUARANTINE_RULES,
  CONTROLLER_RULES,
  DASHBOARD_VIEWER_RULES,
  DEVICE_PLUGIN_RULES,
  LEASE_CREATE_RULE,
  LEASE_GET_UPDATE_RULE,
  METRICS_READER_RULES,
  SCHEDULER_LEASE_READ_RULE,
  NODE_AGENT_RULES,
  nonResourceRuleYaml,
  ruleYaml,
  SCHEDULER_RULES,
  type PolicyRule,
} from './rbac.ts';
import { block, concat, entriesIf, ifItems, quoted, raw, RELEASE_NAMESPACE, type Doc, type Node } from './tree.ts';
import { webhookDocs } from './webhook-manifests.ts';
import { DASHBOARD_FILE, dashboardJson } from './grafana-dashboard.ts';
import { activatorDocs } from './activator-manifests.ts';
import { extenderDocs } from './extender-manifests.ts';
import { networkPolicyDocs } from './network-policy-manifests.ts';
import { RESTRICTED_CONTAINER, RESTRICTED_POD } from './security.ts';
import { HEAP_NODE_OPTION } from './heap-cap.ts';
import { image, podMetadata, podPlacement } from './pod.ts';
import { spread } from './tree.ts';
import { nodeAgentPolicyDocs, workloadPolicyDocs } from './admission-policies.ts';

const spreadLabels = (): Record<string, Node> => spread('serviceMonitor.labels');

export const NAMES = {
  serviceAccount: 'sits-scheduler',
  schedulerRole: 'sits-scheduler',
  controllersServiceAccount: 'sits-controllers',
  controllersRole: 'sits-controllers',
  /** The controllers' Lease (and the Role that lets them take it). */
  controllersLease: 'sits-controllers',
  controllersDeployment: 'sits-controllers',
  leaseRole: 'sits-leader-election',
  deployment: 'sits-scheduler',
  metricsService: 'sits-scheduler-metrics',
  controllersMetricsService: 'sits-controllers-metrics',
  serviceMonitor: 'sits-scheduler',
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
export const CONTROLLERS_SELECTOR = { 'app.kubernetes.io/name': 'sits', 'app.kubernetes.io/component': 'controllers' } as const;
const labels = (selector: Record<string, string> = SELECTOR_LABELS): Record<string, Node> => ({
  ...selector,
  'app.kubernetes.io/part-of': 'sits',
  'app.kubernetes.io/version': quoted('image.tag'),
});
const meta = (name: string, namespaced = true, selector: Record<string, string> = SELECTOR_LABELS): Record<string, Node> => ({
  name,
  ...(namespaced ? { namespace: quoted(RELEASE_NAMESPACE) } : {}),
  labels: labels(selector),
});

const rules = (list: readonly PolicyRule[]): Node[] => list.map(ruleYaml);

const subjects = (sa: string = NAMES.serviceAccount): Node[] => [{ kind: 'ServiceAccount', name: sa, namespace: quoted(RELEASE_NAMESPACE) }];

/**
 * The Namespace, in the plain manifests only. The chart has none: Helm keeps its release record in the release
 * namespace, so that one exists before any template is applied (`helm install -n sits-system --create-namespace`),
 * and a template for it would clash with it. Its Pod Security labels are then set with kubectl (docs/deploy.md).
 */
function namespace(): Doc {
  return {
    file: 'namespace.yaml',
    plainOnly: true,
    body: {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: quoted(RELEASE_NAMESPACE),
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

const clusterRole = (file: string, name: string, list: readonly Node[], when?: string, selector?: Record<string, string>): Doc => ({
  file,
  ...(when === undefined ? {} : { when }),
  body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(name, false, selector), rules: [...list] },
});

const clusterRoleBinding = (file: string, name: string, when?: string, sa: string = NAMES.serviceAccount, selector?: Record<string, string>): Doc => ({
  file,
  ...(when === undefined ? {} : { when }),
  body: {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: meta(name, false, selector),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: subjects(sa),
  },
});

const leaseRole = (): Doc => ({
  file: 'role-leader-election.yaml',
  when: 'leaderElection.enabled',
  body: {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: meta(NAMES.leaseRole),
    rules: [...rules([LEASE_CREATE_RULE]), { ...ruleYaml(LEASE_GET_UPDATE_RULE), resourceNames: block('leaderElection.leaseNames') }],
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

const C = 'controllers.enabled';

/** The controllers' ServiceAccount, ClusterRole (nodes patch only with controllers.quarantineGpus) and their Lease's Role. */
const controllersRbac = (): Doc[] => [
  {
    file: 'controllers-serviceaccount.yaml',
    when: C,
    body: {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: meta(NAMES.controllersServiceAccount, true, CONTROLLERS_SELECTOR),
      automountServiceAccountToken: true,
    },
  },
  clusterRole(
    'clusterrole-controllers.yaml',
    NAMES.controllersRole,
    [...rules(CONTROLLER_RULES), ifItems('controllers.quarantineGpus', rules(CONTROLLER_NODE_QUARANTINE_RULES))],
    C,
    CONTROLLERS_SELECTOR,
  ),
  clusterRoleBinding('clusterrolebinding-controllers.yaml', NAMES.controllersRole, C, NAMES.controllersServiceAccount, CONTROLLERS_SELECTOR),
  {
    file: 'controllers-role.yaml',
    when: C,
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta(NAMES.controllersRole, true, CONTROLLERS_SELECTOR),
      // Their own Lease only: create cannot be limited by name, get/update are.
      rules: [
        ...rules([LEASE_CREATE_RULE]),
        { ...ruleYaml(LEASE_GET_UPDATE_RULE), resourceNames: [NAMES.controllersLease] },
        { ...ruleYaml(SCHEDULER_LEASE_READ_RULE), resourceNames: [SCHEDULER_NAME] },
      ],
    },
  },
  {
    file: 'controllers-rolebinding.yaml',
    when: C,
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(NAMES.controllersRole, true, CONTROLLERS_SELECTOR),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: NAMES.controllersRole },
      subjects: subjects(NAMES.controllersServiceAccount),
    },
  },
];

// The metrics port is the secure port (TLS, delegated authn/authz); the probe paths need no credentials.
const probe = (path: string, periodSeconds: number, failureThreshold: number): Node => ({
  httpGet: { path, port: 'metrics', scheme: 'HTTPS' },
  periodSeconds,
  timeoutSeconds: 2,
  failureThreshold,
});

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
          metadata: podMetadata(labels(), ''),
          spec: {
            serviceAccountName: NAMES.serviceAccount,
            automountServiceAccountToken: true,
            securityContext: RESTRICTED_POD,
            // A leader that stops renewing loses the lease within the renew deadline; 30 s covers the release on SIGTERM.
            terminationGracePeriodSeconds: 30,
            ...podPlacement(''),
            containers: [
              {
                name: NAMES.container,
                image: image(),
                imagePullPolicy: raw('image.pullPolicy'),
                args: [
                  'run',
                  concat('--profile=', raw('profile')),
                  concat('--metrics-port=', raw('metrics.port')),
                  '--identity=$(POD_NAME)',
                  ifItems(
                    'leaderElection.enabled',
                    [concat('--lease-namespace=', raw(RELEASE_NAMESPACE)), concat('--lease-duration=', raw('leaderElection.leaseDurationSeconds'))],
                    ['--no-leader-elect'],
                  ),
                ],
                env: [
                  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  // The old-space cap as a share of resources.limits.memory (Node reads the cgroup limit): V8 otherwise
                  // sizes its heap from the host and keeps garbage far past the live data (ADR 0190).
                  { name: 'NODE_OPTIONS', value: HEAP_NODE_OPTION },
                ],
                ports: [{ name: 'metrics', containerPort: raw('metrics.port'), protocol: 'TCP' }],
                // The server starts before the informers' first list, so /healthz answers during start-up.
                startupProbe: probe('/healthz', 2, 30),
                livenessProbe: probe('/healthz', 10, 3),
                readinessProbe: probe('/readyz', 5, 3),
                resources: block('resources'),
                securityContext: RESTRICTED_CONTAINER,
                // The root filesystem is read-only: /tmp is the only writable path (Node's and libraries' temp files).
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

/** `sits controllers`: the workload controllers alone, under their own ServiceAccount, with their own Lease. */
function controllersDeployment(): Doc {
  const p = (path: string, periodSeconds: number, failureThreshold: number): Node => ({
    httpGet: { path, port: 'health', scheme: 'HTTPS' },
    periodSeconds,
    timeoutSeconds: 2,
    failureThreshold,
  });
  return {
    file: 'controllers-deployment.yaml',
    when: C,
    body: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(NAMES.controllersDeployment, true, CONTROLLERS_SELECTOR),
      spec: {
        replicas: raw('controllers.replicas'),
        revisionHistoryLimit: 5,
        selector: { matchLabels: { ...CONTROLLERS_SELECTOR } },
        template: {
          metadata: podMetadata(labels(CONTROLLERS_SELECTOR), 'controllers.'),
          spec: {
            serviceAccountName: NAMES.controllersServiceAccount,
            automountServiceAccountToken: true,
            securityContext: RESTRICTED_POD,
            terminationGracePeriodSeconds: 30,
            ...podPlacement('controllers.'),
            containers: [
              {
                name: 'controllers',
                image: image(),
                imagePullPolicy: raw('image.pullPolicy'),
                args: [
                  'controllers',
                  concat('--health-port=', raw('controllers.port')),
                  '--identity=$(POD_NAME)',
                  ifItems(
                    'leaderElection.enabled',
                    [
                      concat('--lease-namespace=', raw(RELEASE_NAMESPACE)),
                      `--lease-name=${NAMES.controllersLease}`,
                      concat('--lease-duration=', raw('leaderElection.leaseDurationSeconds')),
                    ],
                    ['--no-leader-elect', '--no-scheduler-watch'],
                  ),
                  ifItems('controllers.kedaAllowedServers', [concat('--keda-allowed-servers=', raw('controllers.kedaAllowedServers'))]),
                  ifItems('controllers.kedaAllowedClusterAuth', [concat('--keda-allowed-cluster-auth=', raw('controllers.kedaAllowedClusterAuth'))]),
                ],
                env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
                ports: [{ name: 'health', containerPort: raw('controllers.port'), protocol: 'TCP' }],
                // /readyz turns ready once the controllers' caches are filled (leader or standby).
                startupProbe: p('/healthz', 2, 30),
                livenessProbe: p('/healthz', 10, 3),
                readinessProbe: p('/readyz', 5, 3),
                resources: block('controllers.resources'),
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

const metricsService = (): Doc => ({
  file: 'service-metrics.yaml',
  body: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      ...meta(NAMES.metricsService),
      annotations: {
        'prometheus.io/scrape': 'true',
        'prometheus.io/scheme': 'https',
        'prometheus.io/port': quoted('metrics.port'),
        'prometheus.io/path': '/metrics',
      },
    },
    spec: {
      type: 'ClusterIP',
      selector: { ...SELECTOR_LABELS },
      ports: [{ name: 'metrics', port: raw('metrics.port'), targetPort: 'metrics', protocol: 'TCP' }],
    },
  },
});

/** The controllers' /metrics (their health port; controller-runtime's reconcile and work-queue metrics). */
const controllersMetricsService = (): Doc => ({
  file: 'controllers-service-metrics.yaml',
  when: 'controllers.enabled',
  body: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      ...meta(NAMES.controllersMetricsService, true, CONTROLLERS_SELECTOR),
      annotations: {
        'prometheus.io/scrape': 'true',
        'prometheus.io/scheme': 'https',
        'prometheus.io/port': quoted('controllers.port'),
        'prometheus.io/path': '/metrics',
      },
    },
    spec: {
      type: 'ClusterIP',
      selector: { ...CONTROLLERS_SELECTOR },
      ports: [{ name: 'metrics', port: raw('controllers.port'), targetPort: 'health', protocol: 'TCP' }],
    },
  },
});

/**
 * For the Prometheus Operator (serviceMonitor.enabled): both metrics Services (scheduler and controllers) over HTTPS
 * with the Prometheus's own ServiceAccount token, which the secure ports check by TokenReview and
 * SubjectAccessReview (sits-metrics-reader).
 */
const serviceMonitor = (): Doc => ({
  file: 'servicemonitor.yaml',
  when: 'serviceMonitor.enabled',
  body: {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: NAMES.serviceMonitor, namespace: quoted(RELEASE_NAMESPACE), labels: { ...labels(), ...spreadLabels() } },
    spec: {
      selector: {
        matchLabels: { 'app.kubernetes.io/name': 'sits' },
        matchExpressions: [{ key: 'app.kubernetes.io/component', operator: 'In', values: ['scheduler', 'controllers'] }],
      },
      namespaceSelector: { matchNames: [raw(RELEASE_NAMESPACE)] },
      endpoints: [
        {
          port: 'metrics',
          scheme: 'https',
          path: '/metrics',
          interval: raw('serviceMonitor.interval'),
          bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
          tlsConfig: block('serviceMonitor.tlsConfig'),
        },
      ],
    },
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
const agentLabels = (): Record<string, Node> => ({
  ...NODE_AGENT_SELECTOR,
  'app.kubernetes.io/part-of': 'sits',
  'app.kubernetes.io/version': quoted('image.tag'),
});
const agentMeta = (name: string, namespaced = true): Record<string, Node> => ({
  name,
  ...(namespaced ? { namespace: quoted('nodeAgent.namespace') } : {}),
  labels: agentLabels(),
});

/** The node agent's own namespace: its device plugin mounts the kubelet's socket folder, which "restricted" forbids. */
const nodeAgentNamespace = (): Doc => ({
  file: 'namespace-node-agent.yaml',
  when: 'nodeAgent.enabled',
  body: {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: quoted('nodeAgent.namespace'),
      labels: {
        ...agentLabels(),
        'pod-security.kubernetes.io/enforce': 'privileged',
        'pod-security.kubernetes.io/warn': 'baseline',
        'pod-security.kubernetes.io/audit': 'baseline',
      },
    },
  },
});

const nodeAgentRbac = (): Doc[] => [
  {
    file: 'serviceaccount-node-agent.yaml',
    when: 'nodeAgent.enabled',
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: agentMeta(NAMES.nodeAgent), automountServiceAccountToken: true },
  },
  {
    file: 'clusterrole-node-agent.yaml',
    when: 'nodeAgent.enabled',
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: agentMeta(NAMES.nodeAgent, false),
      rules: [...rules(NODE_AGENT_RULES), ifItems('nodeAgent.devicePlugin', rules(DEVICE_PLUGIN_RULES))],
    },
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
          metadata: podMetadata(agentLabels(), 'nodeAgent.'),
          spec: {
            serviceAccountName: NAMES.nodeAgent,
            automountServiceAccountToken: true,
            ...entriesIf('nodeAgent.runtimeClassName', { runtimeClassName: quoted('nodeAgent.runtimeClassName') }),
            // priorityClassName: system-node-critical by default, as NVIDIA's device plugin (no GPU is allocatable without it).
            ...podPlacement('nodeAgent.'),
            securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
            terminationGracePeriodSeconds: 10,
            containers: [
              {
                name: 'node-agent',
                image: image(),
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
                volumeMounts: [
                  { name: 'tmp', mountPath: '/tmp' },
                  ifItems('nodeAgent.devicePlugin', [{ name: 'device-plugins', mountPath: DEFAULT_PLUGIN_DIR }]),
                ],
              },
            ],
            volumes: [
              { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
              ifItems('nodeAgent.devicePlugin', [{ name: 'device-plugins', hostPath: { path: DEFAULT_PLUGIN_DIR, type: 'Directory' } }]),
            ],
          },
        },
      },
    },
  };
}

/** The node side (`sits node-agent`): namespace, RBAC, its admission policy (ADR 0174) and DaemonSet, all when nodeAgent.enabled. */
export function nodeAgentDocs(): Doc[] {
  return [nodeAgentNamespace(), ...nodeAgentRbac(), ...nodeAgentPolicyDocs(NAMES.nodeAgent), nodeAgentDaemonSet()];
}

/** RBAC documents alone (deploy/rbac.yaml), in apply order. */
export function rbacDocs(): Doc[] {
  return [
    serviceAccount(),
    clusterRole('clusterrole-scheduler.yaml', NAMES.schedulerRole, rules(SCHEDULER_RULES)),
    clusterRoleBinding('clusterrolebinding-scheduler.yaml', NAMES.schedulerRole),
    leaseRole(),
    leaseRoleBinding(),
    ...controllersRbac(),
    // For BatchInferenceJob workers: bind their service account to it with a RoleBinding in the job's namespace.
    clusterRole('clusterrole-batch-worker.yaml', NAMES.batchWorkerRole, rules(BATCH_WORKER_RULES), C),
    // For scrapers: bind a Prometheus ServiceAccount to it (the secure port authorizes `get /metrics`).
    {
      file: 'clusterrole-metrics-reader.yaml',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: meta(NAMES.metricsReaderRole, false),
        rules: METRICS_READER_RULES.map(nonResourceRuleYaml),
      },
    },
    // For people and tools that open the dashboard (server/dashboard.ts): bind a user or group to it.
    {
      file: 'clusterrole-dashboard-viewer.yaml',
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: meta(NAMES.dashboardViewerRole, false),
        rules: DASHBOARD_VIEWER_RULES.map(nonResourceRuleYaml),
      },
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
    metadata: { name: NAMES.grafanaDashboard, namespace: quoted(RELEASE_NAMESPACE), labels: { ...labels(), grafana_dashboard: '1' } },
    data: { [DASHBOARD_FILE]: dashboardJson() },
  },
});

/** Every document except the CRDs, in apply order. */
export function deployDocs(): Doc[] {
  return [
    namespace(),
    ...rbacDocs(),
    metricsService(),
    controllersMetricsService(),
    serviceMonitor(),
    deployment(),
    podDisruptionBudget(),
    controllersDeployment(),
    ...workloadPolicyDocs(),
    grafanaDashboardConfigMap(),
    ...webhookDocs(),
    ...extenderDocs(),
    ...activatorDocs(),
    ...nodeAgentDocs(),
    ...networkPolicyDocs(),
  ];
}
