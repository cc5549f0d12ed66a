/**
 * What each SITS process may do, and why; manifests.ts and the *-manifests.ts files turn these rules into one
 * ServiceAccount and ClusterRole per process (scheduler, controllers, webhook, extender, activator, node agent).
 * Least privilege: no wildcards, no configmaps, no RBAC or CRD management, no escalating verbs; Secrets only for
 * the webhook's own certificate (a Role, by name); Leases only in the release namespace (a Role per process) and,
 * for get/update, only the named ones. Cluster-wide pods create/delete and nodes patch only where a feature
 * enabled in the values needs them: pods delete for the scheduler (preemption, gang rollback, as kube-scheduler's
 * own role) and the extender; pods create/delete for the controllers (controllers.enabled); nodes patch for the
 * controllers with controllers.quarantineGpus and for the node agent (nodeAgent.enabled). The scheduler never patches
 * pods: what it records goes through pods/binding and pods/status, as kube-scheduler's own role (ADR 0175).
 * Every rule carries its reason (`why`), which the generator strips from the YAML and writes into the audit table
 * (rbac-table.ts: rbac.md and rbac.json next to the manifests, docs/rbac.md).
 */
import { API_GROUP } from '../api/wire.ts';

export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
  /** Why the process needs this rule: the audit table's (rbac-table.ts) reason; stripped from the YAML. */
  readonly why: string;
  /** A values path: the rule is in its role only when that value is truthy (the role's own condition aside). */
  readonly when?: string;
}

/** A rule on non-resource URLs (the secure ports' paths, checked by SubjectAccessReview). */
export interface NonResourceRule {
  readonly nonResourceURLs: readonly string[];
  readonly verbs: readonly string[];
  readonly why: string;
}

/** The RBAC rule as the apiserver takes it: the audit fields (`why`, `when`) left out. */
export const ruleYaml = (r: PolicyRule): { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] } => ({
  apiGroups: [...r.apiGroups],
  resources: [...r.resources],
  ...(r.resourceNames === undefined ? {} : { resourceNames: [...r.resourceNames] }),
  verbs: [...r.verbs],
});
export const nonResourceRuleYaml = (r: NonResourceRule): { nonResourceURLs: string[]; verbs: string[] } => ({
  nonResourceURLs: [...r.nonResourceURLs],
  verbs: [...r.verbs],
});

/** src/kube/scheduler/live-scheduler.ts, cluster-cache.ts and reflector.ts. */
export const SCHEDULER_RULES: readonly PolicyRule[] = [
  {
    apiGroups: [''],
    resources: ['nodes'],
    verbs: ['get', 'list', 'watch'],
    why: 'Node informer: topology labels, GPU capacity, taints and conditions for placement.',
  },
  {
    apiGroups: [''],
    resources: ['namespaces'],
    verbs: ['get', 'list', 'watch'],
    why: 'Namespace labels, for namespaceSelector in pod affinity terms (kube-scheduler reads them too).',
  },
  {
    apiGroups: [''],
    resources: ['pods'],
    verbs: ['get', 'list', 'watch', 'delete'],
    why: 'Pod informer (what holds resources, what waits for us); delete: preemption victims and rolling back a half-bound gang (their owners recreate them), as system:kube-scheduler. No create, no patch: it never makes pods and writes onto them only through pods/binding and pods/status (ADR 0175).',
  },
  {
    apiGroups: [''],
    resources: ['pods/binding'],
    verbs: ['create'],
    why: 'Binds a pod to its node; the Binding carries the GPU indices and NCCL topology annotations, which the apiserver copies onto the pod.',
  },
  {
    apiGroups: [''],
    resources: ['pods/status'],
    verbs: ['patch'],
    why: 'PodScheduled=False/Unschedulable with the explanation, status.nominatedNodeName, and by merge patch the annotations it records before or without a binding (gang plan, expected-start, held-since, checkpoint-requested), as system:kube-scheduler (ADR 0175).',
  },
  {
    apiGroups: [''],
    resources: ['events'],
    verbs: ['create', 'patch'],
    why: "Scheduled / FailedScheduling / WaitingForGang events (patch: a repeated event's count).",
  },
  { apiGroups: [API_GROUP], resources: ['podgroups'], verbs: ['get', 'list', 'watch'], why: 'Gang definitions (minMember, timeouts) for gang scheduling.' },
  {
    apiGroups: ['policy'],
    resources: ['poddisruptionbudgets'],
    verbs: ['get', 'list', 'watch'],
    why: 'Preemption avoids victims whose PodDisruptionBudget allows no disruption (read only: SITS computes the allowed disruptions itself, src/kube/cache/disruption-budgets.ts).',
  },
  {
    apiGroups: [''],
    resources: ['services', 'replicationcontrollers'],
    verbs: ['get', 'list', 'watch'],
    why: "The default spread constraints' selectors (kube's DefaultSelector; ADR 0077), read only as kube-scheduler reads them.",
  },
  {
    apiGroups: ['apps'],
    resources: ['replicasets', 'statefulsets'],
    verbs: ['get', 'list', 'watch'],
    why: "The default spread constraints' selectors (kube's DefaultSelector; ADR 0077), read only as kube-scheduler reads them.",
  },
  {
    apiGroups: [''],
    resources: ['persistentvolumeclaims', 'persistentvolumes'],
    verbs: ['get', 'list', 'watch', 'patch'],
    why: "VolumeBinding (ADR 0070), as kube's system:volume-scheduler: patch (merge patches with a resourceVersion precondition) writes selected-node on a claim to provision and pre-binds a static PV (claimRef) before the pod's Binding.",
  },
  {
    apiGroups: ['storage.k8s.io'],
    resources: ['storageclasses'],
    verbs: ['get', 'list', 'watch'],
    why: "VolumeBinding: the claims' classes (binding mode, provisioner), as system:volume-scheduler.",
  },
  {
    apiGroups: [API_GROUP],
    resources: ['queues'],
    verbs: ['get', 'list', 'watch'],
    why: 'Quotas, weights and cohorts for the queue cycle (src/kube/cache/queues.ts).',
  },
  {
    apiGroups: [API_GROUP],
    resources: ['queues/status', 'podgroups/status'],
    verbs: ['patch'],
    why: "Queue and PodGroup status: kubectl's Weight/Admitted/Pending and Phase columns (src/kube/adapters/object-status.ts).",
  },
  {
    apiGroups: [API_GROUP],
    resources: ['trainingjobs'],
    verbs: ['get', 'patch'],
    why: "Checkpoint-aware preemption and defragmentation (ADR 0093, 0143, 0144): request-checkpoint and gang-evicted on a victim's TrainingJob; get: its checkpoint status before a defragmentation move.",
  },
  {
    apiGroups: ['authentication.k8s.io'],
    resources: ['tokenreviews'],
    verbs: ['create'],
    why: 'The secure metrics port authenticates its callers by delegation (system:auth-delegator).',
  },
  {
    apiGroups: ['authorization.k8s.io'],
    resources: ['subjectaccessreviews'],
    verbs: ['create'],
    why: 'The secure metrics port authorizes its callers by delegation (system:auth-delegator).',
  },
];

/**
 * `sits extender` (src/kube/extender/extender-server.ts): the scheduler's reads and its binder (Bindings, gang plan
 * annotations through pods/status, rollback), not its events (kube-scheduler reports) — and its own Lease (in the chart's Role).
 */
export const EXTENDER_RULES: readonly PolicyRule[] = SCHEDULER_RULES.filter(
  (r) => !r.resources.includes('events') && !r.resources.includes('trainingjobs') && !r.resources.includes('queues/status'),
);

/** Who may call the extender's verbs: kube-scheduler's identity (its client certificate's CN), by SubjectAccessReview. */
export const EXTENDER_CALLER_RULES: readonly NonResourceRule[] = [
  {
    nonResourceURLs: ['/filter', '/prioritize', '/bind', '/preempt'],
    verbs: ['post'],
    why: "kube-scheduler calls the extender's four verbs; the extender authorizes its client certificate's identity by SubjectAccessReview.",
  },
];

/**
 * The workload controllers of src/app/controllers.ts (TrainingJob, InferenceService, DataPipeline; more kinds get
 * their rules here when their controllers land), run by `sits controllers` under their own ServiceAccount: the
 * chart grants them only with controllers.enabled.
 */
export const CONTROLLER_RULES: readonly PolicyRule[] = [
  {
    apiGroups: [API_GROUP],
    resources: ['trainingjobs'],
    verbs: ['get', 'list', 'watch', 'patch', 'delete'],
    why: 'TrainingJob controller: patch the finalizer; delete at ttlSecondsAfterFinished.',
  },
  { apiGroups: [API_GROUP], resources: ['trainingjobs/status'], verbs: ['get', 'patch'], why: 'TrainingJob status and conditions.' },
  {
    apiGroups: [API_GROUP],
    resources: ['trainingjobs/finalizers'],
    verbs: ['update'],
    why: "Owned objects carry ownerReferences with blockOwnerDeletion, which needs update on the owner's finalizers.",
  },
  { apiGroups: [API_GROUP], resources: ['inferenceservices'], verbs: ['get', 'list', 'watch'], why: 'InferenceService controller: read only (no finalizer).' },
  { apiGroups: [API_GROUP], resources: ['inferenceservices/status'], verbs: ['get', 'patch'], why: 'InferenceService status and conditions.' },
  {
    apiGroups: [API_GROUP],
    resources: ['inferenceservices/scale'],
    verbs: ['get', 'patch'],
    why: 'Replicas only ever through /scale, by the SITS token autoscaler when spec.autoscaling.mode is sits (never by the controller, never with an external autoscaler).',
  },
  { apiGroups: [API_GROUP], resources: ['inferenceservices/finalizers'], verbs: ['update'], why: 'Replica pods own-referenced with blockOwnerDeletion.' },
  { apiGroups: [API_GROUP], resources: ['batchinferencejobs'], verbs: ['get', 'list', 'watch'], why: 'BatchInferenceJob controller (ADR 0102): read only.' },
  { apiGroups: [API_GROUP], resources: ['batchinferencejobs/status'], verbs: ['get', 'patch'], why: 'BatchInferenceJob status and progress.' },
  { apiGroups: [API_GROUP], resources: ['batchinferencejobs/finalizers'], verbs: ['update'], why: 'Worker pods own-referenced with blockOwnerDeletion.' },
  {
    apiGroups: [API_GROUP],
    resources: ['podgroups'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    why: 'The PodGroup of each TrainingJob gang (and of multi-pod replicas), made, resized and removed with it.',
  },
  {
    apiGroups: [API_GROUP],
    resources: ['datapipelines'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    why: 'DataPipeline controller: delete at ttlSecondsAfterFinished; patch the adapters finalizer (children go by ownerReference).',
  },
  { apiGroups: [API_GROUP], resources: ['datapipelines/status'], verbs: ['get', 'patch'], why: 'DataPipeline status: stages, parameters handed on.' },
  { apiGroups: [API_GROUP], resources: ['datapipelines/finalizers'], verbs: ['update'], why: 'Stage objects own-referenced with blockOwnerDeletion.' },
  {
    apiGroups: [API_GROUP],
    resources: ['trainingjobs', 'batchinferencejobs'],
    verbs: ['get', 'list', 'watch', 'create', 'delete'],
    why: "A DataPipeline's workload stages create and, between retries, delete TrainingJobs and BatchInferenceJobs.",
  },
  {
    apiGroups: [API_GROUP],
    resources: ['inferenceservices'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    why: "A DataPipeline's serving stages create and delete InferenceServices; its adapter stages patch (server-side apply, own field manager) users' InferenceServices.",
  },
  {
    apiGroups: [''],
    resources: ['pods'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    why: "TrainingJob workers, InferenceService replicas and DataPipeline stage pods are made and removed here; patch: the checkpoint request annotation on rank 0 (docs/checkpoints.md), the serving loop's engine-state annotation (ADR 0110) and a batch worker's shard (ADR 0102).",
  },
  {
    apiGroups: [''],
    resources: ['pods/status'],
    verbs: ['patch'],
    why: "Pod conditions: the serving loop's adapters-loaded readiness gate (ADR 0125), and DisruptionTarget on a replica the health migrator moves off a quarantined GPU (ADR 0129).",
  },
  {
    apiGroups: ['keda.sh'],
    resources: ['scaledobjects'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    why: "An InferenceService with autoscaling.mode keda owns one ScaledObject (ADR 0112); KEDA's own HPA writes /scale.",
  },
  {
    apiGroups: [''],
    resources: ['services'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    why: "Headless Services for the rendezvous (MASTER_ADDR); an InferenceService's Service, patched when its ports change.",
  },
  {
    apiGroups: [''],
    resources: ['nodes'],
    verbs: ['get', 'list', 'watch'],
    why: "NVLink islands per node: an InferenceService's tensor-parallel size is judged against them (read only).",
  },
  {
    apiGroups: [''],
    resources: ['persistentvolumeclaims'],
    verbs: ['get', 'list', 'watch', 'create', 'delete'],
    why: "spec.checkpoint: the claim of claimTemplate; a DataPipeline's claims restored from artifact snapshots.",
  },
  {
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshots'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    why: "Checkpoint VolumeSnapshots of a job (patch: the committed label) and a DataPipeline's artifact snapshots.",
  },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'], why: "Events on the reconciled objects (patch: a repeated event's count)." },
  {
    apiGroups: [API_GROUP],
    resources: ['queues'],
    verbs: ['get', 'list', 'watch'],
    why: "GPU lending (ADR 0131): the queues' reclaim policy and guaranteed GPUs decide who lends; the BatchInferenceJob GPU share weighs each job by its Queue (ADR 0140).",
  },
  {
    apiGroups: ['authentication.k8s.io'],
    resources: ['tokenreviews'],
    verbs: ['create'],
    why: '/metrics on the health port authenticates its callers by delegation (system:auth-delegator).',
  },
  {
    apiGroups: ['authorization.k8s.io'],
    resources: ['subjectaccessreviews'],
    verbs: ['create'],
    why: '/metrics on the health port authorizes its callers by delegation (system:auth-delegator).',
  },
];

/**
 * With controllers.quarantineGpus only: the BatchInferenceJob fault ladder writes a failing GPU into its Node's
 * quarantine annotation (ADR 0139, live/batch/batch-quarantine.ts). RBAC cannot limit it to that annotation.
 */
export const CONTROLLER_NODE_QUARANTINE_RULES: readonly PolicyRule[] = [
  {
    apiGroups: [''],
    resources: ['nodes'],
    verbs: ['patch'],
    when: 'controllers.quarantineGpus',
    why: "The BatchInferenceJob fault ladder writes a failing GPU into its Node's gpu-quarantine annotation (ADR 0139).",
  },
];

/**
 * `sits node-agent` (src/node/agent.ts, device-plugin.ts). RBAC cannot say "only your own node": the agent
 * patches the Node named by its NODE_NAME, and the device plugin lists the pods of that node (a field selector,
 * which RBAC cannot require) and annotates the one it allocated for (gpu-allocated). The writes are held to its
 * own Node, its keys and its node's pods by the ValidatingAdmissionPolicy sits-node-agent-restriction
 * (admission-policies.ts, ADR 0174); the reads are not (as the rules say).
 */
export const NODE_AGENT_RULES: readonly PolicyRule[] = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'], why: 'GPU labels and topology annotations on its own Node (NODE_NAME).' },
];
export const DEVICE_PLUGIN_RULES: readonly PolicyRule[] = [
  {
    apiGroups: [''],
    resources: ['pods'],
    verbs: ['list', 'patch'],
    when: 'nodeAgent.devicePlugin',
    why: 'The device plugin lists the pods of its node (field selector; never get) to find the one it allocated GPUs for, and annotates it (gpu-allocated).',
  },
  // The plugin watches its own Node's gpu-quarantine annotation (a metadata.name field selector) and reports those
  // GPUs Unhealthy to the kubelet (ADR 0128); get alone cannot watch.
  {
    apiGroups: [''],
    resources: ['nodes'],
    verbs: ['list', 'watch'],
    when: 'nodeAgent.devicePlugin',
    why: "The device plugin watches its own Node's gpu-quarantine annotation and reports those GPUs Unhealthy (ADR 0128).",
  },
];

/**
 * `sits batch-worker` (ADR 0102): reads its shard from its own pod and reports there. RBAC cannot say "only your
 * own pod": bind this ClusterRole with a RoleBinding in the job's namespace to the workers' service account.
 */
export const BATCH_WORKER_RULES: readonly PolicyRule[] = [
  {
    apiGroups: [''],
    resources: ['pods'],
    verbs: ['get', 'patch'],
    why: "A batch worker reads its shard from its own pod and writes its report annotation there (ADR 0102); bound by a RoleBinding in the job's namespace only.",
  },
];

/**
 * Leader election (src/kube/scheduler/leader.ts): get → create when missing, else update. create cannot be limited by
 * name; get/update are, to `leaderElection.leaseNames` (manifests.ts).
 */
export const LEASE_CREATE_RULE: PolicyRule = {
  apiGroups: ['coordination.k8s.io'],
  resources: ['leases'],
  verbs: ['create'],
  why: 'Leader election: creates its Lease when missing (create cannot be limited by name; the Role is in the release namespace only).',
};
/** The controllers read the scheduler's Lease, by name, to tell waiting pods when no scheduler leads (scheduler-watch.ts). */
export const SCHEDULER_LEASE_READ_RULE: PolicyRule = {
  apiGroups: ['coordination.k8s.io'],
  resources: ['leases'],
  resourceNames: [],
  verbs: ['get'],
  why: "Reads the scheduler's Lease, by name: pods waiting while no scheduler replica has led for a lease duration get a NoSchedulerLeader Event (issue 34).",
};
/** Leader election's get and update of its own Lease; resourceNames are set where the Role is made. */
export const LEASE_GET_UPDATE_RULE: PolicyRule = {
  apiGroups: ['coordination.k8s.io'],
  resources: ['leases'],
  resourceNames: [],
  verbs: ['get', 'update'],
  why: 'Leader election: reads and renews its own Lease, by name.',
};

/** Resources the process must never be able to touch (checked by a unit test and, for real, by the e2e test). */
export const FORBIDDEN_RESOURCES = [
  'secrets',
  'configmaps',
  'serviceaccounts/token',
  'clusterroles',
  'clusterrolebindings',
  'roles',
  'rolebindings',
  'customresourcedefinitions',
];
/** Verbs that would let the holder gain more rights than it has. */
export const FORBIDDEN_VERBS = ['*', 'escalate', 'bind', 'impersonate', 'deletecollection'];

/**
 * The admission webhook (src/webhook/): delegated authn/authz of its callers, the informer caches its rules
 * read (read-only), audit Events, and the caBundle of its own two configurations (by name).
 */
export const WEBHOOK_RULES: readonly PolicyRule[] = [
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'], why: "Authenticates the apiserver's admission calls by delegation." },
  {
    apiGroups: ['authorization.k8s.io'],
    resources: ['subjectaccessreviews'],
    verbs: ['create'],
    why: "Authorizes the apiserver's admission calls (sits-webhook-caller) by delegation.",
  },
  {
    apiGroups: [''],
    resources: ['services', 'persistentvolumeclaims', 'namespaces', 'nodes'],
    verbs: ['get', 'list', 'watch'],
    why: 'Informer caches (webhook/context-cache.ts) the cross-object guard rules read: Services for rendezvous, PVCs for checkpoint and model volumes, Namespaces (opt-in, defaults), Nodes (cluster facts: GPU models, RDMA). Read only.',
  },
  {
    apiGroups: ['apps'],
    resources: ['deployments', 'statefulsets', 'daemonsets'],
    verbs: ['get', 'list', 'watch'],
    why: 'Informer caches: the workloads an autoscaler targets, for cross-object guard rules (read only).',
  },
  {
    apiGroups: ['autoscaling'],
    resources: ['horizontalpodautoscalers'],
    verbs: ['get', 'list', 'watch'],
    why: 'Informer cache: HPAs targeting training workloads, for cross-object guard rules (read only).',
  },
  {
    apiGroups: ['keda.sh'],
    resources: ['scaledobjects'],
    verbs: ['get', 'list', 'watch'],
    why: 'Informer cache: KEDA ScaledObjects targeting training workloads, for cross-object guard rules (read only).',
  },
  {
    apiGroups: ['kubeflow.org'],
    resources: ['pytorchjobs'],
    verbs: ['get', 'list', 'watch'],
    why: 'Informer cache: Kubeflow PyTorchJobs, for cross-object guard rules (read only).',
  },
  {
    apiGroups: [API_GROUP],
    resources: ['trainingjobs', 'podgroups'],
    verbs: ['get', 'list', 'watch'],
    why: "Informer cache: TrainingJobs, and PodGroups a gang's pods are checked against (gang-without-min-member). Read only.",
  },
  {
    apiGroups: ['scheduling.k8s.io'],
    resources: ['priorityclasses'],
    verbs: ['get', 'list', 'watch'],
    why: "Informer cache: the cluster's PriorityClasses, for the priority guard rules (read only).",
  },
  { apiGroups: [''], resources: ['events'], verbs: ['create'], why: 'Audit mode: PolicyViolation events on the reviewed objects.' },
  {
    apiGroups: ['admissionregistration.k8s.io'],
    resources: ['validatingwebhookconfigurations'],
    resourceNames: ['sits-guard-rails'],
    verbs: ['get', 'update'],
    why: 'Publishes its serving CA into the caBundle of its own validating configuration, by name.',
  },
  {
    apiGroups: ['admissionregistration.k8s.io'],
    resources: ['mutatingwebhookconfigurations'],
    resourceNames: ['sits-defaults'],
    verbs: ['get', 'update'],
    why: 'Publishes its serving CA into the caBundle of its own mutating configuration, by name.',
  },
];

/** The webhook's certificate Secret (a Role in its namespace; get/update by name in the manifest). */
export const WEBHOOK_SECRET_CREATE_RULE: PolicyRule = {
  apiGroups: [''],
  resources: ['secrets'],
  verbs: ['create'],
  why: 'Creates its serving-certificate Secret when missing (create cannot be limited by name; a Role in the release namespace only).',
};
/** get/update of that Secret, by name (resourceNames set in webhook-manifests.ts). */
export const WEBHOOK_SECRET_GET_UPDATE_RULE: PolicyRule = {
  apiGroups: [''],
  resources: ['secrets'],
  resourceNames: [],
  verbs: ['get', 'update'],
  why: 'Reads and renews its own serving-certificate Secret, by name.',
};

/** What the apiserver's admission identity may do on the webhook: POST its two paths, nothing else. */
export const WEBHOOK_CALLER_RULES: readonly NonResourceRule[] = [
  { nonResourceURLs: ['/validate', '/mutate'], verbs: ['post'], why: "The apiserver's admission identity POSTs reviews to the webhook's two paths." },
];

/**
 * `sits activator` (live/activator/activator.ts, ADR 0149): the EndpointSlices of InferenceServices (list+watch, its cache),
 * the activation stamp (get, patch on inferenceservices), and delegated authn/authz of its callers.
 */
export const ACTIVATOR_RULES: readonly PolicyRule[] = [
  {
    apiGroups: ['discovery.k8s.io'],
    resources: ['endpointslices'],
    verbs: ['list', 'watch'],
    why: "Its cache of the InferenceServices' ready endpoints, to route or hold requests.",
  },
  {
    apiGroups: [API_GROUP],
    resources: ['inferenceservices'],
    verbs: ['get', 'patch'],
    why: 'The activation stamp on an InferenceService scaled to zero, which wakes it (ADR 0149).',
  },
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'], why: 'Authenticates its callers by delegation.' },
  {
    apiGroups: ['authorization.k8s.io'],
    resources: ['subjectaccessreviews'],
    verbs: ['create'],
    why: 'Authorizes its callers (inferenceservices/proxy) by delegation.',
  },
];

/**
 * Who may send requests to an InferenceService through the activator (the `inferenceservices/proxy` subresource
 * with the method's verb, as `services/proxy`); bound by users in their namespaces with a RoleBinding.
 */
export const INFERENCE_CALLER_RULES: readonly PolicyRule[] = [
  {
    apiGroups: [API_GROUP],
    resources: ['inferenceservices/proxy'],
    verbs: ['get', 'create'],
    why: 'Callers of an InferenceService through the activator (GET, POST), checked by SubjectAccessReview; users bind it in their namespaces.',
  },
];

/**
 * The dashboard on the secure port (server/dashboard.ts): the page, the view and its stream, nothing else (not
 * /metrics). Bound by the chart's sits-dashboard-viewer ClusterRole.
 */
export const DASHBOARD_VIEWER_RULES: readonly NonResourceRule[] = [
  {
    nonResourceURLs: ['/', '/dashboard', '/dashboard/*'],
    verbs: ['get'],
    why: 'Opens the dashboard (page, view and live stream) on the secure port; users bind it to people and tools.',
  },
];

/** Who may scrape the secure metrics ports (bound by the user to their Prometheus). */
export const METRICS_READER_RULES: readonly NonResourceRule[] = [
  { nonResourceURLs: ['/metrics', '/report'], verbs: ['get'], why: 'Scrapes /metrics (and /report) on the secure ports; users bind it to their Prometheus.' },
];
