/**
 * The deployment's settings: one TypeBox schema that gives the TypeScript type, the defaults, the
 * validation of `sits deploy --values FILE`, and the Helm chart's `values.yaml` / `values.schema.json`.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { SCHEDULER_NAME } from '../api/wire.ts';

const Quantity = Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$', maxLength: 32 });
const ResourceList = Type.Object({ cpu: Type.Optional(Quantity), memory: Type.Optional(Quantity), 'ephemeral-storage': Type.Optional(Quantity) }, { additionalProperties: false });
const DnsLabel = Type.String({ pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 });

export const DeployValuesSchema = Type.Object(
  {
    namespace: Type.String({ ...DnsLabel, description: 'Namespace of the scheduler, its ServiceAccount and its leader-election Lease.' }),
    createNamespace: Type.Boolean({ description: 'Create the Namespace (labelled for Pod Security "restricted"). Set false with `helm install --create-namespace`.' }),
    image: Type.Object(
      {
        repository: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\s:@]+(:[0-9]+)?(/[^\\s:@]+)*$' }),
        tag: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]*$' }),
        pullPolicy: Type.Union([Type.Literal('IfNotPresent'), Type.Literal('Always'), Type.Literal('Never')]),
      },
      { additionalProperties: false, description: 'The SITS image; its entrypoint is the `sits` command (node bin/sits.mjs).' },
    ),
    replicas: Type.Integer({ minimum: 1, maximum: 10, description: 'Scheduler replicas; more than 1 needs leader election.' }),
    profile: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9][-a-z0-9]*$', description: 'Scheduling profile (`sits info profiles`).' }),
    controllers: Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false, description: 'Run the workload controllers (TrainingJob, ...) in the same process (`sits run --controllers`), with their RBAC.' }),
    leaderElection: Type.Object(
      {
        enabled: Type.Boolean(),
        leaseDurationSeconds: Type.Integer({ minimum: 1, maximum: 300 }),
        leaseNames: Type.Array(DnsLabel, { minItems: 1, maxItems: 8, uniqueItems: true }),
      },
      { additionalProperties: false, description: 'One active replica at a time, through a Lease in `namespace`; leaseNames are the Leases it may read and renew (Role resourceNames).' },
    ),
    metrics: Type.Object({ port: Type.Integer({ minimum: 1024, maximum: 65535 }) }, { additionalProperties: false, description: 'Port of /metrics, /healthz and /readyz (above 1023: the container runs as non-root).' }),
    resources: Type.Object({ requests: ResourceList, limits: ResourceList }, { additionalProperties: false, description: 'Container requests and limits.' }),
    grafanaDashboard: Type.Object(
      { enabled: Type.Boolean() },
      { additionalProperties: false, description: 'The Grafana dashboard (cluster, queues, scheduler performance, GPU health) as a ConfigMap in `namespace` labelled grafana_dashboard: "1", which the Grafana sidecar (kube-prometheus-stack) loads. Off by default: a cluster without Grafana needs no ConfigMap.' },
    ),
    podDisruptionBudget: Type.Object({ enabled: Type.Boolean(), minAvailable: Type.Integer({ minimum: 0, maximum: 10 }) }, { additionalProperties: false, description: 'Keeps a standby replica through voluntary disruptions (node drains).' }),
    priorityClassName: Type.String({ maxLength: 253, description: 'PriorityClass of the scheduler pods; empty: none.' }),
    nodeSelector: Type.Record(Type.String(), Type.String(), { description: 'Where the scheduler pods may run.' }),
    tolerations: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'Tolerations of the scheduler pods.' }),
    webhook: Type.Object(
      {
        enabled: Type.Boolean(),
        replicas: Type.Integer({ minimum: 1, maximum: 10 }),
        port: Type.Integer({ minimum: 1024, maximum: 65535 }),
        mode: Type.Union([Type.Literal('enforce'), Type.Literal('audit')], { description: 'enforce: error findings deny; audit: nothing is denied, findings become Events and the /report.' }),
        failurePolicy: Type.Union([Type.Literal('Fail'), Type.Literal('Ignore')], { description: 'What the apiserver does when the validating webhook cannot be reached.' }),
        timeoutSeconds: Type.Integer({ minimum: 1, maximum: 30 }),
        disable: Type.String({ maxLength: 1024, pattern: '^[a-z0-9,-]*$', description: 'Rule ids switched off (comma list; docs/rules.md).' }),
        excludeNamespaces: Type.Array(DnsLabel, { maxItems: 64, description: 'Namespaces never reviewed (the webhook\'s own namespace should be one).' }),
        callers: Type.Array(
          Type.Object({ kind: Type.Union([Type.Literal('User'), Type.Literal('Group')]), name: Type.String({ minLength: 1, maxLength: 253 }), apiGroup: Type.Literal('rbac.authorization.k8s.io') }, { additionalProperties: false }),
          { minItems: 1, maxItems: 8, description: 'Who may call /validate and /mutate: the identity the apiserver presents to admission webhooks (its AdmissionConfiguration kubeConfigFile; docs/guard-rails.md).' },
        ),
        resources: Type.Object({ requests: ResourceList, limits: ResourceList }, { additionalProperties: false }),
      },
      { additionalProperties: false, description: 'The admission webhook (`sits webhook`): guard rails and SITS defaults.' },
    ),
    activator: Type.Object(
      {
        enabled: Type.Boolean(),
        replicas: Type.Integer({ minimum: 1, maximum: 20 }),
        port: Type.Integer({ minimum: 1024, maximum: 65535 }),
        holdTimeoutSeconds: Type.Integer({ minimum: 1, maximum: 3600, description: 'How long a request waits for a replica of a service scaled to zero.' }),
        maxHeldPerService: Type.Integer({ minimum: 1, maximum: 1000000 }),
        tlsSecret: Type.String({ ...DnsLabel, description: 'kubernetes.io/tls Secret with tls.crt and tls.key (serving, for the Service name sits-activator.<namespace>.svc), e.g. cert-manager\'s.' }),
        resources: Type.Object({ requests: ResourceList, limits: ResourceList }, { additionalProperties: false }),
      },
      { additionalProperties: false, description: 'The activator (`sits activator`, ADR 0149): routes requests to InferenceServices and holds them while a service scales from zero.' },
    ),
    extender: Type.Object(
      {
        enabled: Type.Boolean(),
        replicas: Type.Integer({ minimum: 1, maximum: 10 }),
        port: Type.Integer({ minimum: 1024, maximum: 65535 }),
        schedulerName: Type.String({ minLength: 1, maxLength: 253, pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$', description: 'schedulerName of the pods kube-scheduler asks about (its profile).' }),
        profile: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9][-a-z0-9]*$' }),
        leaseDurationSeconds: Type.Integer({ minimum: 1, maximum: 300 }),
        tlsSecret: Type.String({ ...DnsLabel, description: 'kubernetes.io/tls Secret with tls.crt and tls.key (serving, for the Service name sits-extender.<namespace>.svc) and ca.crt (the CA of kube-scheduler\'s client certificate).' }),
        callers: Type.Array(
          Type.Object({ kind: Type.Union([Type.Literal('User'), Type.Literal('Group')]), name: Type.String({ minLength: 1, maxLength: 253 }), apiGroup: Type.Literal('rbac.authorization.k8s.io') }, { additionalProperties: false }),
          { minItems: 1, maxItems: 8, description: 'Who may POST the verbs: the CN (User) or O (Group) of kube-scheduler\'s extender client certificate (docs/extender.md).' },
        ),
        resources: Type.Object({ requests: ResourceList, limits: ResourceList }, { additionalProperties: false }),
      },
      { additionalProperties: false, description: 'The extender (`sits extender`) for clusters that keep kube-scheduler: replicas elect a leader, only the leader is Ready behind the Service (ADR 0078).' },
    ),
    nodeAgent: Type.Object(
      {
        enabled: Type.Boolean(),
        namespace: DnsLabel,
        devicePlugin: Type.Boolean(),
        intervalSeconds: Type.Integer({ minimum: 1, maximum: 86_400 }),
        nvidiaSmi: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\s]+$' }),
        runtimeClassName: Type.String({ maxLength: 253 }),
        nodeSelector: Type.Record(Type.String(), Type.String()),
        tolerations: Type.Array(Type.Record(Type.String(), Type.Unknown())),
        resources: Type.Object({ requests: ResourceList, limits: ResourceList }, { additionalProperties: false }),
      },
      {
        additionalProperties: false,
        description:
          'The node side (`sits node-agent`, a DaemonSet in its own namespace, Pod Security "privileged" for the kubelet socket folder): GPU labels and topology annotations on each node, and, with devicePlugin, the nvidia.com/gpu device plugin that gives containers exactly the GPUs SITS chose. It replaces NVIDIA\'s device plugin: disable that one first (GPU operator: devicePlugin.enabled=false), or set devicePlugin false for labels only. runtimeClassName: the runtime that mounts nvidia-smi and the driver ("" for the default runtime).',
      },
    ),
  },
  { additionalProperties: false },
);

export type DeployValues = Static<typeof DeployValuesSchema>;

export const DEFAULT_VALUES: DeployValues = {
  namespace: 'sits-system',
  createNamespace: true,
  image: { repository: 'registry.sits2026.dev/sits/sits', tag: '0.1.0', pullPolicy: 'IfNotPresent' },
  replicas: 2,
  profile: 'sits',
  controllers: { enabled: true },
  // The scheduler's Lease is named after the scheduler (RBAC grants exactly these names).
  leaderElection: { enabled: true, leaseDurationSeconds: 15, leaseNames: [SCHEDULER_NAME] },
  metrics: { port: 8080 },
  resources: { requests: { cpu: '500m', memory: '512Mi' }, limits: { cpu: '2', memory: '2Gi' } },
  grafanaDashboard: { enabled: false },
  podDisruptionBudget: { enabled: true, minAvailable: 1 },
  priorityClassName: '',
  nodeSelector: {},
  tolerations: [],
  webhook: {
    enabled: true,
    replicas: 2,
    port: 9443,
    mode: 'enforce',
    failurePolicy: 'Fail',
    timeoutSeconds: 5,
    disable: '',
    excludeNamespaces: ['kube-system', 'kube-node-lease', 'sits-system'],
    callers: [{ kind: 'User', name: 'sits:kube-apiserver-admission', apiGroup: 'rbac.authorization.k8s.io' }],
    resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } },
  },
  activator: {
    enabled: false,
    replicas: 2,
    port: 8443,
    holdTimeoutSeconds: 300,
    maxHeldPerService: 1000,
    tlsSecret: 'sits-activator-tls',
    resources: { requests: { cpu: '200m', memory: '128Mi' }, limits: { cpu: '2', memory: '512Mi' } },
  },
  extender: {
    enabled: false,
    replicas: 2,
    port: 8888,
    schedulerName: 'default-scheduler',
    profile: 'sits',
    leaseDurationSeconds: 15,
    tlsSecret: 'sits-extender-tls',
    callers: [{ kind: 'User', name: 'sits:kube-scheduler', apiGroup: 'rbac.authorization.k8s.io' }],
    resources: { requests: { cpu: '200m', memory: '256Mi' }, limits: { cpu: '2', memory: '1Gi' } },
  },
  nodeAgent: {
    enabled: false,
    namespace: 'sits-node',
    devicePlugin: true,
    intervalSeconds: 60,
    nvidiaSmi: 'nvidia-smi',
    runtimeClassName: 'nvidia',
    nodeSelector: {},
    // GPU nodes are often tainted so that only GPU pods land there; the agent must run on them.
    tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '256Mi' } },
  },
};

export type ValuesResult = { ok: true; value: DeployValues } | { ok: false; errors: string[] };

/** Overlays `overrides` on the defaults (objects merged, lists and scalars replaced, as Helm does) and validates. */
export function resolveValues(overrides: unknown = {}): ValuesResult {
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) return { ok: false, errors: ['values: must be a mapping'] };
  const merged = mergeValues(structuredClone(DEFAULT_VALUES) as unknown as Record<string, unknown>, overrides as Record<string, unknown>);
  const errors = [...Value.Errors(DeployValuesSchema, merged)].map((e) => `values${e.path.replaceAll('/', '.')}: ${e.message}`);
  const v = merged as unknown as DeployValues;
  if (errors.length === 0 && v.replicas > 1 && !v.leaderElection.enabled) errors.push('values.replicas: more than one replica needs leaderElection.enabled');
  if (errors.length === 0 && v.podDisruptionBudget.enabled && v.podDisruptionBudget.minAvailable >= v.replicas && v.replicas > 1)
    errors.push('values.podDisruptionBudget.minAvailable: must be below replicas, or no pod could ever be evicted');
  if (errors.length === 0 && v.nodeAgent.enabled && v.nodeAgent.namespace === v.namespace)
    errors.push('values.nodeAgent.namespace: must differ from values.namespace (that one enforces Pod Security "restricted", the device plugin needs a hostPath)');
  return errors.length === 0 ? { ok: true, value: v } : { ok: false, errors };
}

function mergeValues(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(over)) {
    const b = base[k];
    if (isMapping(b) && isMapping(v) && Object.keys(b).length > 0) base[k] = mergeValues(b, v);
    else base[k] = v;
  }
  return base;
}

const isMapping = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x);

/** values.schema.json for the chart (Helm validates values against it on install, upgrade, lint and template). */
export function valuesJsonSchema(): Record<string, unknown> {
  return { $schema: 'http://json-schema.org/draft-07/schema#', title: 'SITS Helm chart values', ...(JSON.parse(JSON.stringify(DeployValuesSchema)) as Record<string, unknown>) };
}
