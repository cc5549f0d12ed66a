/**
 * What each SITS process may do, and why; manifests.ts and the *-manifests.ts files turn these rules into one
 * ServiceAccount and ClusterRole per process (scheduler, controllers, webhook, extender, activator, node agent).
 * Least privilege: no wildcards, no configmaps, no RBAC or CRD management, no escalating verbs; Secrets only for
 * the webhook's own certificate (a Role, by name); Leases only in the release namespace (a Role per process) and,
 * for get/update, only the named ones. Cluster-wide pods create/delete and nodes patch only where a feature
 * enabled in the values needs them: pods delete for the scheduler (preemption, gang rollback, as kube-scheduler's
 * own role) and the extender; pods create/delete for the controllers (controllers.enabled); nodes patch for the
 * controllers with controllers.quarantineGpus and for the node agent (nodeAgent.enabled).
 */
import { API_GROUP } from '../api/wire.ts';

export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
}

/** src/kube/live-scheduler.ts, cluster-cache.ts and reflector.ts. */
export const SCHEDULER_RULES: readonly PolicyRule[] = [
  // Informers: nodes (topology labels, capacity) and every pod (what holds resources, what waits for us).
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
  // Namespace labels, for namespaceSelector in pod affinity terms (kube-scheduler reads them too).
  { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
  // patch: the gang plan annotations; delete: preemption victims and rolling back a half-bound gang (their owners
  // recreate them), as kube-scheduler's system:kube-scheduler role deletes pods. No create: it never makes pods.
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['pods/binding'], verbs: ['create'] },
  // PodScheduled=False/Unschedulable with the explanation.
  { apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] },
  // Scheduled / FailedScheduling / WaitingForGang.
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  { apiGroups: [API_GROUP], resources: ['podgroups'], verbs: ['get', 'list', 'watch'] },
  // Preemption avoids victims whose PodDisruptionBudget allows no disruption (read only: SITS computes the
  // allowed disruptions itself, src/kube/disruption-budgets.ts).
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['get', 'list', 'watch'] },
  // The default spread constraints' selectors (kube's DefaultSelector; ADR 0077), read only as kube-scheduler reads them.
  { apiGroups: [''], resources: ['services', 'replicationcontrollers'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['apps'], resources: ['replicasets', 'statefulsets'], verbs: ['get', 'list', 'watch'] },
  // VolumeBinding (ADR 0070), as kube's system:volume-scheduler: claims, volumes and classes are watched; patch (SITS
  // uses merge patches with a resourceVersion precondition, not update) writes selected-node on a claim to provision
  // and pre-binds a static PV (claimRef) before the pod's Binding.
  { apiGroups: [''], resources: ['persistentvolumeclaims', 'persistentvolumes'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
  // Quotas, weights and cohorts for the queue cycle (src/kube/queues.ts); preemption deletes victims (pods above).
  { apiGroups: [API_GROUP], resources: ['queues'], verbs: ['get', 'list', 'watch'] },
  // Queue and PodGroup status: kubectl's Weight/Admitted/Pending and Phase columns (src/kube/object-status.ts).
  { apiGroups: [API_GROUP], resources: ['queues/status', 'podgroups/status'], verbs: ['patch'] },
  // Checkpoint-aware preemption and defragmentation (ADR 0093, 0143, 0144): request-checkpoint and gang-evicted on a
  // victim's TrainingJob; get: its checkpoint status, before a defragmentation move.
  { apiGroups: [API_GROUP], resources: ['trainingjobs'], verbs: ['get', 'patch'] },
  // The secure metrics port checks its callers by delegation (system:auth-delegator's two rules).
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

/**
 * `sits extender` (src/kube/extender-server.ts): the scheduler's reads and its binder (Bindings, gang plan
 * annotations, rollback), not its events (kube-scheduler reports) — and its own Lease (in the chart's Role).
 */
export const EXTENDER_RULES: readonly PolicyRule[] = SCHEDULER_RULES.filter((r) => !r.resources.includes('events') && !r.resources.includes('trainingjobs') && !r.resources.includes('queues/status'));

/** Who may call the extender's verbs: kube-scheduler's identity (its client certificate's CN), by SubjectAccessReview. */
export const EXTENDER_CALLER_RULES: readonly { readonly nonResourceURLs: readonly string[]; readonly verbs: readonly string[] }[] = [{ nonResourceURLs: ['/filter', '/prioritize', '/bind', '/preempt'], verbs: ['post'] }];

/**
 * The workload controllers of src/app/controllers.ts (TrainingJob, InferenceService, DataPipeline; more kinds get
 * their rules here when their controllers land), run by `sits controllers` under their own ServiceAccount: the
 * chart grants them only with controllers.enabled.
 */
export const CONTROLLER_RULES: readonly PolicyRule[] = [
  // patch: the finalizer; delete: ttlSecondsAfterFinished.
  { apiGroups: [API_GROUP], resources: ['trainingjobs'], verbs: ['get', 'list', 'watch', 'patch', 'delete'] },
  { apiGroups: [API_GROUP], resources: ['trainingjobs/status'], verbs: ['get', 'patch'] },
  // Owned objects carry ownerReferences with blockOwnerDeletion, which needs update on the owner's finalizers.
  { apiGroups: [API_GROUP], resources: ['trainingjobs/finalizers'], verbs: ['update'] },
  // InferenceService: read only (no finalizer); status written; replicas only ever through /scale, by the SITS
  // token autoscaler when spec.autoscaling.mode is sits (never by the controller, never with an external autoscaler).
  { apiGroups: [API_GROUP], resources: ['inferenceservices'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: ['inferenceservices/status'], verbs: ['get', 'patch'] },
  { apiGroups: [API_GROUP], resources: ['inferenceservices/scale'], verbs: ['get', 'patch'] },
  { apiGroups: [API_GROUP], resources: ['inferenceservices/finalizers'], verbs: ['update'] },
  // BatchInferenceJob (ADR 0102): read only; status written; worker pods own it (blockOwnerDeletion).
  { apiGroups: [API_GROUP], resources: ['batchinferencejobs'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: ['batchinferencejobs/status'], verbs: ['get', 'patch'] },
  { apiGroups: [API_GROUP], resources: ['batchinferencejobs/finalizers'], verbs: ['update'] },
  { apiGroups: [API_GROUP], resources: ['podgroups'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  // DataPipeline: status written; delete: ttlSecondsAfterFinished; patch: the adapters finalizer (children go by
  // ownerReference). Its workload stages create and, between retries, delete TrainingJobs, BatchInferenceJobs and
  // InferenceServices; its adapter stages patch (server-side apply, own field manager) users' InferenceServices.
  { apiGroups: [API_GROUP], resources: ['datapipelines'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  { apiGroups: [API_GROUP], resources: ['datapipelines/status'], verbs: ['get', 'patch'] },
  { apiGroups: [API_GROUP], resources: ['datapipelines/finalizers'], verbs: ['update'] },
  { apiGroups: [API_GROUP], resources: ['trainingjobs', 'batchinferencejobs'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
  { apiGroups: [API_GROUP], resources: ['inferenceservices'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  // create/delete: TrainingJob workers, InferenceService replicas, DataPipeline stage pods are made and removed
  // here. patch: the checkpoint request annotation on rank 0 (docs/checkpoints.md), the serving loop's
  // engine-state annotation on InferenceService replicas (LoRA adapters, ADR 0110) and a batch worker's shard (ADR 0102).
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  // Pod conditions: the serving loop's adapters-loaded readiness gate (ADR 0125), and the health migrator's
  // DisruptionTarget on a replica it moves off a quarantined GPU before it deletes it (ADR 0129).
  { apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] },
  // An InferenceService with autoscaling.mode keda owns one ScaledObject (ADR 0112); KEDA's own HPA writes /scale.
  { apiGroups: ['keda.sh'], resources: ['scaledobjects'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  // Headless services for the rendezvous (MASTER_ADDR); an InferenceService's Service, patched when its ports change.
  { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  // NVLink islands per node: an InferenceService's tensor-parallel size is judged against them (read only).
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
  // spec.checkpoint: the claim of claimTemplate and the job's VolumeSnapshots (patch: the committed label); a
  // DataPipeline's artifact snapshots and the claims restored from them.
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
  { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshots'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  // GPU lending (app/gpu-lending.ts, ADR 0131): the queues' reclaim policy and guaranteed GPUs decide who lends
  // (read only; the lender writes only TrainingJobs, with the patch above).
  // watch: the BatchInferenceJob GPU share weighs each job by its Queue (ADR 0140).
  { apiGroups: [API_GROUP], resources: ['queues'], verbs: ['get', 'list', 'watch'] },
  // /metrics on the health port (`sits controllers`) checks its callers by delegation (system:auth-delegator's two rules).
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

/**
 * With controllers.quarantineGpus only: the BatchInferenceJob fault ladder writes a failing GPU into its Node's
 * quarantine annotation (ADR 0139, app/batch-quarantine.ts). RBAC cannot limit it to that annotation.
 */
export const CONTROLLER_NODE_QUARANTINE_RULES: readonly PolicyRule[] = [{ apiGroups: [''], resources: ['nodes'], verbs: ['patch'] }];

/**
 * `sits node-agent` (src/node/agent.ts, device-plugin.ts). RBAC cannot say "only your own node": the agent
 * patches the Node named by its NODE_NAME, and the device plugin lists the pods of that node (a field selector,
 * which RBAC cannot require) and annotates the one it allocated for (gpu-allocated). The writes are held to its
 * own Node, its keys and its node's pods by the ValidatingAdmissionPolicy sits-node-agent-restriction
 * (admission-policies.ts, ADR 0174); the reads are not (as the rules say).
 */
export const NODE_AGENT_RULES: readonly PolicyRule[] = [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] }];
export const DEVICE_PLUGIN_RULES: readonly PolicyRule[] = [
  // list (never get): the pods of its node by field selector; patch: the one it allocated for.
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'patch'] },
  // The plugin watches its own Node's gpu-quarantine annotation (a metadata.name field selector) and reports those
  // GPUs Unhealthy to the kubelet (ADR 0128); get alone cannot watch.
  { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch'] },
];

/**
 * `sits batch-worker` (ADR 0102): reads its shard from its own pod and reports there. RBAC cannot say "only your
 * own pod": bind this ClusterRole with a RoleBinding in the job's namespace to the workers' service account.
 */
export const BATCH_WORKER_RULES: readonly PolicyRule[] = [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] }];

/**
 * Leader election (src/kube/leader.ts): get → create when missing, else update. create cannot be limited by
 * name; get/update are, to `leaderElection.leaseNames` (manifests.ts).
 */
export const LEASE_CREATE_RULE: PolicyRule = { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] };

/** Resources the process must never be able to touch (checked by a unit test and, for real, by the e2e test). */
export const FORBIDDEN_RESOURCES = ['secrets', 'configmaps', 'serviceaccounts/token', 'clusterroles', 'clusterrolebindings', 'roles', 'rolebindings', 'customresourcedefinitions'];
/** Verbs that would let the holder gain more rights than it has. */
export const FORBIDDEN_VERBS = ['*', 'escalate', 'bind', 'impersonate', 'deletecollection'];

/**
 * The admission webhook (src/webhook/): delegated authn/authz of its callers, the informer caches its rules
 * read (read-only), audit Events, and the caBundle of its own two configurations (by name).
 */
export const WEBHOOK_RULES: readonly PolicyRule[] = [
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  { apiGroups: [''], resources: ['services', 'persistentvolumeclaims', 'namespaces', 'nodes'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['apps'], resources: ['deployments', 'statefulsets', 'daemonsets'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['autoscaling'], resources: ['horizontalpodautoscalers'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['keda.sh'], resources: ['scaledobjects'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['kubeflow.org'], resources: ['pytorchjobs'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: ['trainingjobs', 'podgroups'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['scheduling.k8s.io'], resources: ['priorityclasses'], verbs: ['get', 'list', 'watch'] },
  // Audit mode: PolicyViolation events on the reviewed objects.
  { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  { apiGroups: ['admissionregistration.k8s.io'], resources: ['validatingwebhookconfigurations'], resourceNames: ['sits-guard-rails'], verbs: ['get', 'update'] },
  { apiGroups: ['admissionregistration.k8s.io'], resources: ['mutatingwebhookconfigurations'], resourceNames: ['sits-defaults'], verbs: ['get', 'update'] },
];

/** The webhook's certificate Secret (a Role in its namespace; get/update by name in the manifest). */
export const WEBHOOK_SECRET_CREATE_RULE: PolicyRule = { apiGroups: [''], resources: ['secrets'], verbs: ['create'] };

/** What the apiserver's admission identity may do on the webhook: POST its two paths, nothing else. */
export const WEBHOOK_CALLER_RULES: readonly { readonly nonResourceURLs: readonly string[]; readonly verbs: readonly string[] }[] = [{ nonResourceURLs: ['/validate', '/mutate'], verbs: ['post'] }];

/**
 * `sits activator` (app/activator.ts, ADR 0149): the EndpointSlices of InferenceServices (list+watch, its cache),
 * the activation stamp (get, patch on inferenceservices), and delegated authn/authz of its callers.
 */
export const ACTIVATOR_RULES: readonly PolicyRule[] = [
  { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
  { apiGroups: [API_GROUP], resources: ['inferenceservices'], verbs: ['get', 'patch'] },
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

/**
 * Who may send requests to an InferenceService through the activator (the `inferenceservices/proxy` subresource
 * with the method's verb, as `services/proxy`); bound by users in their namespaces with a RoleBinding.
 */
export const INFERENCE_CALLER_RULES: readonly PolicyRule[] = [{ apiGroups: [API_GROUP], resources: ['inferenceservices/proxy'], verbs: ['get', 'create'] }];

/** Who may scrape the secure metrics ports (bound by the user to their Prometheus). */
/**
 * The dashboard on the secure port (server/dashboard.ts): the page, the view and its stream, nothing else (not
 * /metrics). Bound by the chart's sits-dashboard-viewer ClusterRole.
 */
export const DASHBOARD_VIEWER_RULES: readonly { readonly nonResourceURLs: readonly string[]; readonly verbs: readonly string[] }[] = [
  { nonResourceURLs: ['/', '/dashboard', '/dashboard/*'], verbs: ['get'] },
];

export const METRICS_READER_RULES: readonly { readonly nonResourceURLs: readonly string[]; readonly verbs: readonly string[] }[] = [{ nonResourceURLs: ['/metrics', '/report'], verbs: ['get'] }];
