/**
 * The deployment's settings: one TypeBox schema that gives the TypeScript type, the defaults, the
 * validation of `sits deploy --values FILE`, and the Helm chart's `values.yaml` / `values.schema.json`.
 */
import { SITS_VERSION } from '../api/version.ts';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { SCHEDULER_NAME } from '../api/wire.ts';
import { DEFAULT_NAMESPACE } from './tree.ts';

const Quantity = Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$', maxLength: 32 });
const ResourceList = Type.Object(
  { cpu: Type.Optional(Quantity), memory: Type.Optional(Quantity), 'ephemeral-storage': Type.Optional(Quantity) },
  { additionalProperties: false },
);
const Resources = (what: string) =>
  Type.Object({ requests: ResourceList, limits: ResourceList }, { additionalProperties: false, description: `Container requests and limits of ${what}.` });
const DnsLabel = Type.String({ pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 });

/** The labels the chart puts on every pod (selectors among them): podLabels may not repeat them. */
export const CHART_POD_LABELS = ['app.kubernetes.io/name', 'app.kubernetes.io/component', 'app.kubernetes.io/part-of', 'app.kubernetes.io/version'] as const;

/**
 * Where and how a component's pods run, the same keys for each Deployment and DaemonSet (as the Kueue and KAI
 * charts have them): annotations and extra labels, resources, placement and priority.
 */
const podSettings = (what: string) => ({
  podAnnotations: Type.Record(Type.String(), Type.String(), { description: `Annotations of ${what}.` }),
  podLabels: Type.Record(Type.String(), Type.String(), {
    description: `Extra labels of ${what} (not the app.kubernetes.io/* ones the chart sets: its selectors use them).`,
  }),
  resources: Resources(what),
  nodeSelector: Type.Record(Type.String(), Type.String(), { description: `Node labels ${what} need.` }),
  tolerations: Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: `Tolerations of ${what}.` }),
  affinity: Type.Record(Type.String(), Type.Unknown(), { description: `Affinity of ${what} (a core/v1 Affinity); {}: none.` }),
  priorityClassName: Type.String({ maxLength: 253, description: `PriorityClass of ${what}; empty: none.` }),
});

const Callers = (description: string) =>
  Type.Array(
    Type.Object(
      {
        kind: Type.Union([Type.Literal('User'), Type.Literal('Group')]),
        name: Type.String({ minLength: 1, maxLength: 253 }),
        apiGroup: Type.Literal('rbac.authorization.k8s.io'),
      },
      { additionalProperties: false },
    ),
    { minItems: 1, maxItems: 8, description },
  );

/** NetworkPolicy `from` peers (networking.k8s.io/v1 NetworkPolicyPeer). */
const Selector = Type.Object(
  {
    matchLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            key: Type.String({ minLength: 1 }),
            operator: Type.Union([Type.Literal('In'), Type.Literal('NotIn'), Type.Literal('Exists'), Type.Literal('DoesNotExist')]),
            values: Type.Optional(Type.Array(Type.String())),
          },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);
const Peers = (who: string) =>
  Type.Array(
    Type.Object(
      {
        podSelector: Type.Optional(Selector),
        namespaceSelector: Type.Optional(Selector),
        ipBlock: Type.Optional(
          Type.Object(
            {
              cidr: Type.String({ minLength: 1, pattern: '^[0-9a-fA-F:.]+/[0-9]{1,3}$' }),
              except: Type.Optional(Type.Array(Type.String({ pattern: '^[0-9a-fA-F:.]+/[0-9]{1,3}$' }))),
            },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false, minProperties: 1 },
    ),
    { maxItems: 32, description: `Who may reach ${who}: NetworkPolicy peers; [] any source.` },
  );

export const DeployValuesSchema = Type.Object(
  {
    image: Type.Object(
      {
        repository: Type.String({
          minLength: 1,
          maxLength: 255,
          pattern: '^[^\\s:@]+(:[0-9]+)?(/[^\\s:@]+)*$',
          description: 'Registry and name, without tag or digest.',
        }),
        tag: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]*$', description: 'Also the app.kubernetes.io/version label.' }),
        digest: Type.String({
          maxLength: 71,
          pattern: '^(sha256:[a-f0-9]{64})?$',
          description: 'When set, the image is repository@digest (the tag is not used for pulling): what was tested is what runs.',
        }),
        pullPolicy: Type.Union([Type.Literal('IfNotPresent'), Type.Literal('Always'), Type.Literal('Never')], {
          description: 'imagePullPolicy of every container.',
        }),
      },
      { additionalProperties: false, description: 'The SITS image of every component; its entrypoint is the `sits` command.' },
    ),
    imagePullSecrets: Type.Array(Type.Object({ name: DnsLabel }, { additionalProperties: false }), {
      maxItems: 16,
      description: "Secrets (in the release namespace; the node agent's: in its own) for pulling the image from a private registry.",
    }),
    replicas: Type.Integer({ minimum: 1, maximum: 10, description: 'Scheduler replicas; more than 1 needs leader election.' }),
    profile: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9][-a-z0-9]*$', description: 'Scheduling profile (`sits info profiles`).' }),
    ...podSettings('the scheduler pods'),
    controllers: Type.Object(
      {
        enabled: Type.Boolean({
          description:
            'The Deployment sits-controllers, its ServiceAccount and ClusterRole (which creates and deletes pods: TrainingJob workers, InferenceService replicas).',
        }),
        replicas: Type.Integer({ minimum: 1, maximum: 10, description: 'More than 1 needs leader election (the Lease sits-controllers).' }),
        port: Type.Integer({ minimum: 1024, maximum: 65535, description: 'Port of /healthz and /readyz (HTTPS, no other path).' }),
        quarantineGpus: Type.Boolean({
          description:
            "Let the BatchInferenceJob fault ladder quarantine a failing GPU in its Node's annotation (ADR 0139): grants nodes patch cluster-wide. Off: the ladder cannot quarantine (the request is refused and logged).",
        }),
        kedaAllowedServers: Type.String({
          maxLength: 4096,
          pattern: '^[^"\\\\\\s]*$',
          description:
            'Comma-separated Prometheus addresses an InferenceService in autoscaling mode keda may name as keda.serverAddress (KEDA queries them with the credentials the service names). Empty: no keda ScaledObject is made (docs/security.md).',
        }),
        kedaAllowedClusterAuth: Type.String({
          maxLength: 4096,
          pattern: '^[-a-z0-9.,]*$',
          description:
            'Comma-separated ClusterTriggerAuthentication names a keda InferenceService may use; a TriggerAuthentication in its own namespace is always allowed. Empty: none.',
        }),
        ...podSettings('the controller pods'),
      },
      {
        additionalProperties: false,
        description:
          'The workload controllers (TrainingJob, InferenceService, DataPipeline; `sits controllers`), in their own Deployment under their own ServiceAccount.',
      },
    ),
    leaderElection: Type.Object(
      {
        enabled: Type.Boolean({ description: 'Off: --no-leader-elect, one replica each.' }),
        leaseDurationSeconds: Type.Integer({
          minimum: 1,
          maximum: 300,
          description: 'How long a standby waits before taking over a Lease that is not renewed.',
        }),
        leaseNames: Type.Array(DnsLabel, {
          minItems: 1,
          maxItems: 8,
          uniqueItems: true,
          description: "The scheduler's Leases (the first: its schedulerName, sits-scheduler).",
        }),
      },
      {
        additionalProperties: false,
        description:
          "One active replica at a time, through a Lease in the release namespace: the scheduler's (leaseNames: the Leases its Role lets it read and renew) and the controllers' (sits-controllers).",
      },
    ),
    metrics: Type.Object(
      {
        port: Type.Integer({
          minimum: 1024,
          maximum: 65535,
          description: 'The secure port (HTTPS; callers checked by TokenReview and SubjectAccessReview; the probe paths open).',
        }),
      },
      { additionalProperties: false, description: 'Port of /metrics, /healthz and /readyz (above 1023: the container runs as non-root).' },
    ),
    serviceMonitor: Type.Object(
      {
        enabled: Type.Boolean({
          description:
            "A ServiceMonitor (monitoring.coreos.com/v1) for the metrics Service; needs the Prometheus Operator's CRD, and its Prometheus bound to the ClusterRole sits-metrics-reader.",
        }),
        interval: Type.String({ pattern: '^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$', maxLength: 32, description: 'Scrape interval.' }),
        labels: Type.Record(Type.String(), Type.String(), {
          description: "Labels of the ServiceMonitor, for the Prometheus's serviceMonitorSelector (e.g. release: kube-prometheus-stack).",
        }),
        tlsConfig: Type.Record(Type.String(), Type.Unknown(), {
          description:
            "The endpoint's tlsConfig. The metrics port serves a certificate the scheduler generates at start (no CA to check it against), hence insecureSkipVerify; the bearer token (Prometheus's own ServiceAccount token) is still checked by TokenReview and SubjectAccessReview.",
        }),
      },
      { additionalProperties: false, description: "Scraping by the Prometheus Operator: HTTPS with the Prometheus ServiceAccount's token file." },
    ),
    grafanaDashboard: Type.Object(
      { enabled: Type.Boolean({ description: 'Render the ConfigMap sits-grafana-dashboard.' }) },
      {
        additionalProperties: false,
        description:
          'The Grafana dashboard (cluster, queues, scheduler performance, GPU health) as a ConfigMap in the release namespace labelled grafana_dashboard: "1", which the Grafana sidecar (kube-prometheus-stack) loads. Off by default: a cluster without Grafana needs no ConfigMap.',
      },
    ),
    podDisruptionBudget: Type.Object(
      {
        enabled: Type.Boolean({ description: 'Render the PodDisruptionBudget sits-scheduler.' }),
        minAvailable: Type.Integer({ minimum: 0, maximum: 10, description: 'Must stay below replicas.' }),
      },
      { additionalProperties: false, description: 'Keeps a standby scheduler replica through voluntary disruptions (node drains).' },
    ),
    webhook: Type.Object(
      {
        enabled: Type.Boolean({ description: "The webhook's Deployment, Service, RBAC and its two webhook configurations." }),
        replicas: Type.Integer({ minimum: 1, maximum: 10, description: 'Every replica serves; two or more before failurePolicy Fail.' }),
        port: Type.Integer({ minimum: 1024, maximum: 65535, description: 'Container port (the Service listens on 443).' }),
        mode: Type.Union([Type.Literal('enforce'), Type.Literal('audit')], {
          description:
            'audit (default): nothing is denied, findings become Events and the /report. enforce: error findings deny the create or update; turn it on once the audit findings are understood.',
        }),
        failurePolicy: Type.Union([Type.Literal('Fail'), Type.Literal('Ignore')], {
          description:
            'What the apiserver does when the validating webhook cannot be reached. Ignore (default): the object is admitted unchecked. Fail: it is refused; while no webhook pod can run (image pull failing, nodes full, namespace deleted) every matching create and update in the cluster is refused, including the pods that would repair it. Choose Fail with enforce only with webhook.replicas >= 2 spread over nodes.',
        }),
        timeoutSeconds: Type.Integer({ minimum: 1, maximum: 30, description: 'How long the apiserver waits for a review before failurePolicy applies.' }),
        disable: Type.String({ maxLength: 1024, pattern: '^[a-z0-9,-]*$', description: 'Rule ids switched off (comma list; docs/rules.md).' }),
        excludeNamespaces: Type.Array(DnsLabel, { maxItems: 64, description: 'Namespaces never reviewed, besides the release namespace (always excluded).' }),
        callers: Callers(
          'Who may call /validate and /mutate: the identity the apiserver presents to admission webhooks (its AdmissionConfiguration kubeConfigFile; docs/guard-rails.md).',
        ),
        ...podSettings('the webhook pods'),
      },
      { additionalProperties: false, description: 'The admission webhook (`sits webhook`): guard rails and SITS defaults.' },
    ),
    activator: Type.Object(
      {
        enabled: Type.Boolean({ description: "The activator's Deployment, Service and RBAC (needs tlsSecret)." }),
        replicas: Type.Integer({ minimum: 1, maximum: 20, description: 'Every replica serves (no leader).' }),
        port: Type.Integer({ minimum: 1024, maximum: 65535, description: 'Container port (the Service listens on 443).' }),
        holdTimeoutSeconds: Type.Integer({ minimum: 1, maximum: 3600, description: 'How long a request waits for a replica of a service scaled to zero.' }),
        maxHeldPerService: Type.Integer({
          minimum: 1,
          maximum: 1000000,
          description: 'Requests held at most per service while it scales from zero (more are refused with 429 and Retry-After).',
        }),
        tlsSecret: Type.String({
          ...DnsLabel,
          description: "kubernetes.io/tls Secret with tls.crt and tls.key (serving, for the Service name sits-activator.<namespace>.svc), e.g. cert-manager's.",
        }),
        apiAudiences: Type.String({
          maxLength: 1024,
          pattern: '^([a-z0-9][-a-z0-9.:/]*(,[a-z0-9][-a-z0-9.:/]*)*)?$',
          description:
            'Token audiences the activator accepts (comma list, --api-audiences); empty: tokens meant for the apiserver, as other delegated-auth servers. Set it (e.g. sits-activator) once callers send projected tokens with that audience, so a token sent to the activator is useless at the apiserver (docs/security.md).',
        }),
        ...podSettings('the activator pods'),
      },
      {
        additionalProperties: false,
        description: 'The activator (`sits activator`, ADR 0149): routes requests to InferenceServices and holds them while a service scales from zero.',
      },
    ),
    extender: Type.Object(
      {
        enabled: Type.Boolean({ description: "The extender's Deployment, Service and RBAC (needs tlsSecret)." }),
        replicas: Type.Integer({ minimum: 1, maximum: 10, description: 'Replicas elect a leader through the Lease sits-extender.' }),
        port: Type.Integer({ minimum: 1024, maximum: 65535, description: 'Container port (the Service listens on 443).' }),
        schedulerName: Type.String({
          minLength: 1,
          maxLength: 253,
          pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
          description: 'schedulerName of the pods kube-scheduler asks about (its profile).',
        }),
        profile: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9][-a-z0-9]*$', description: 'Scheduling profile of its answers.' }),
        leaseDurationSeconds: Type.Integer({ minimum: 1, maximum: 300, description: 'How long a standby waits before taking over.' }),
        tlsSecret: Type.String({
          ...DnsLabel,
          description:
            "kubernetes.io/tls Secret with tls.crt and tls.key (serving, for the Service name sits-extender.<namespace>.svc) and ca.crt (the CA of kube-scheduler's client certificate).",
        }),
        callers: Callers("Who may POST the verbs: the CN (User) or O (Group) of kube-scheduler's extender client certificate (docs/extender.md)."),
        ...podSettings('the extender pods'),
      },
      {
        additionalProperties: false,
        description:
          'The extender (`sits extender`) for clusters that keep kube-scheduler: replicas elect a leader, only the leader is Ready behind the Service (ADR 0078).',
      },
    ),
    nodeAgent: Type.Object(
      {
        enabled: Type.Boolean({ description: 'The DaemonSet sits-node-agent, its namespace and RBAC.' }),
        namespace: Type.String({
          ...DnsLabel,
          description: 'Its own namespace, created by the chart (Pod Security "privileged"); must differ from the release namespace.',
        }),
        devicePlugin: Type.Boolean({ description: 'Serve nvidia.com/gpu to the kubelet (mounts its device-plugin folder); false: labels only.' }),
        intervalSeconds: Type.Integer({ minimum: 1, maximum: 86_400, description: 'How often the GPUs are read again.' }),
        nvidiaSmi: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\s]+$', description: 'The nvidia-smi command in the container.' }),
        runtimeClassName: Type.String({ maxLength: 253, description: 'RuntimeClass of its pods; "": the default runtime.' }),
        ...podSettings('the node agent pods'),
      },
      {
        additionalProperties: false,
        description:
          'The node side (`sits node-agent`, a DaemonSet in its own namespace, Pod Security "privileged" for the kubelet socket folder): GPU labels and topology annotations on each node, and, with devicePlugin, the nvidia.com/gpu device plugin that gives containers exactly the GPUs SITS chose. It replaces NVIDIA\'s device plugin: disable that one first (GPU operator: devicePlugin.enabled=false), or set devicePlugin false for labels only. runtimeClassName: the runtime that mounts nvidia-smi and the driver ("" for the default runtime).',
      },
    ),
    networkPolicy: Type.Object(
      {
        enabled: Type.Boolean({
          description: 'One NetworkPolicy per component: ingress only to its one listening port, from the peers below; the node agent gets none.',
        }),
        metricsFrom: Peers("Prometheus and dashboard users to the scheduler's metrics port and the controllers' health port (/metrics, the dashboard)"),
        webhookFrom: Peers('the kube-apiserver to the admission webhook'),
        extenderFrom: Peers('kube-scheduler to the extender'),
        activatorFrom: Peers('users and ingress controllers to the activator'),
      },
      {
        additionalProperties: false,
        description:
          "NetworkPolicies (ADR 0175). Each list is NetworkPolicy `from` peers (podSelector, namespaceSelector, ipBlock); [] allows any source, as every listener authenticates its callers (TLS and TokenReview or client certificates) — narrow them to your Prometheus, apiserver and ingress. Kubelet probes and port-forward are not pod traffic and need no entry in most network plugins. Egress is not restricted: the apiserver's address is not known to the chart.",
      },
    ),
  },
  { additionalProperties: false },
);

export type DeployValues = Static<typeof DeployValuesSchema>;

const noPodExtras = { podAnnotations: {}, podLabels: {}, nodeSelector: {}, tolerations: [], affinity: {}, priorityClassName: '' };

export const DEFAULT_VALUES: DeployValues = {
  image: { repository: 'registry.sits2026.dev/sits/sits', tag: SITS_VERSION, digest: '', pullPolicy: 'IfNotPresent' },
  imagePullSecrets: [],
  replicas: 2,
  profile: 'sits',
  ...noPodExtras,
  resources: { requests: { cpu: '500m', memory: '512Mi' }, limits: { cpu: '2', memory: '2Gi' } },
  // The standby on another host than the leader, when there is one.
  affinity: {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          podAffinityTerm: {
            topologyKey: 'kubernetes.io/hostname',
            labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'sits', 'app.kubernetes.io/component': 'scheduler' } },
          },
        },
      ],
    },
  },
  controllers: {
    enabled: true,
    replicas: 2,
    port: 8081,
    quarantineGpus: false,
    kedaAllowedServers: '',
    kedaAllowedClusterAuth: '',
    ...noPodExtras,
    resources: { requests: { cpu: '200m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'sits', 'app.kubernetes.io/component': 'controllers' } },
            },
          },
        ],
      },
    },
  },
  // The scheduler's Lease is named after the scheduler (RBAC grants exactly these names).
  leaderElection: { enabled: true, leaseDurationSeconds: 15, leaseNames: [SCHEDULER_NAME] },
  metrics: { port: 8080 },
  serviceMonitor: { enabled: false, interval: '30s', labels: {}, tlsConfig: { insecureSkipVerify: true } },
  grafanaDashboard: { enabled: false },
  podDisruptionBudget: { enabled: true, minAvailable: 1 },
  webhook: {
    enabled: true,
    replicas: 2,
    port: 9443,
    // Safe by default: an install never refuses anything; enforce and Fail are opt-in (docs/guard-rails.md).
    mode: 'audit',
    failurePolicy: 'Ignore',
    timeoutSeconds: 5,
    disable: '',
    excludeNamespaces: ['kube-system', 'kube-node-lease'],
    callers: [{ kind: 'User', name: 'sits:kube-apiserver-admission', apiGroup: 'rbac.authorization.k8s.io' }],
    ...noPodExtras,
    resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } },
  },
  activator: {
    enabled: false,
    replicas: 2,
    port: 8443,
    holdTimeoutSeconds: 300,
    maxHeldPerService: 1000,
    tlsSecret: 'sits-activator-tls',
    apiAudiences: '',
    ...noPodExtras,
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
    ...noPodExtras,
    resources: { requests: { cpu: '200m', memory: '256Mi' }, limits: { cpu: '2', memory: '1Gi' } },
  },
  nodeAgent: {
    enabled: false,
    namespace: 'sits-node',
    devicePlugin: true,
    intervalSeconds: 60,
    nvidiaSmi: 'nvidia-smi',
    runtimeClassName: 'nvidia',
    ...noPodExtras,
    // As NVIDIA's device plugin: a node's GPUs are not allocatable without it.
    priorityClassName: 'system-node-critical',
    // GPU nodes are often tainted so that only GPU pods land there; the agent must run on them.
    tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    resources: { requests: { cpu: '20m', memory: '96Mi' }, limits: { memory: '256Mi' } },
  },
  // On: nothing that works stops working (every listener's port stays open to any source until narrowed), every other port closes.
  networkPolicy: { enabled: true, metricsFrom: [], webhookFrom: [], extenderFrom: [], activatorFrom: [] },
};

export type ValuesResult = { ok: true; value: DeployValues } | { ok: false; errors: string[] };

/**
 * Overlays `overrides` on the defaults (objects merged, lists and scalars replaced, as Helm does) and validates.
 * `namespace`: the release namespace (Helm's `-n`; the plain manifests' namespace), for the checks that need it.
 */
export function resolveValues(overrides: unknown = {}, namespace: string = DEFAULT_NAMESPACE): ValuesResult {
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) return { ok: false, errors: ['values: must be a mapping'] };
  const merged = mergeValues(structuredClone(DEFAULT_VALUES) as unknown as Record<string, unknown>, overrides as Record<string, unknown>);
  const errors = [...Value.Errors(DeployValuesSchema, merged)].map((e) => `values${e.path.replaceAll('/', '.')}: ${e.message}`);
  const v = merged as unknown as DeployValues;
  if (errors.length === 0 && v.replicas > 1 && !v.leaderElection.enabled) errors.push('values.replicas: more than one replica needs leaderElection.enabled');
  if (errors.length === 0 && v.podDisruptionBudget.enabled && v.podDisruptionBudget.minAvailable >= v.replicas && v.replicas > 1)
    errors.push('values.podDisruptionBudget.minAvailable: must be below replicas, or no pod could ever be evicted');
  if (errors.length === 0 && v.controllers.enabled && v.controllers.replicas > 1 && !v.leaderElection.enabled)
    errors.push('values.controllers.replicas: more than one replica needs leaderElection.enabled');
  if (errors.length === 0 && v.nodeAgent.enabled && v.nodeAgent.namespace === namespace)
    errors.push(
      `values.nodeAgent.namespace: must differ from the release namespace ${namespace} (that one enforces Pod Security "restricted", the device plugin needs a hostPath)`,
    );
  if (errors.length === 0)
    for (const [at, labels] of [
      ['podLabels', v.podLabels],
      ...(['controllers', 'webhook', 'activator', 'extender', 'nodeAgent'] as const).map((c) => [`${c}.podLabels`, v[c].podLabels] as const),
    ] as const)
      for (const k of Object.keys(labels))
        if ((CHART_POD_LABELS as readonly string[]).includes(k)) errors.push(`values.${at}: ${k} is set by the chart (its selectors use it)`);
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
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'SITS Helm chart values',
    ...(JSON.parse(JSON.stringify(DeployValuesSchema)) as Record<string, unknown>),
  };
}
