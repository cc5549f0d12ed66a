/**
 * AdmissionReview (admission.k8s.io/v1) in, AdmissionReview out: the decisions of the SITS webhook as pure
 * functions, so they are tested without a server and the server only moves bytes.
 *
 * Validation runs the guard rules (src/guard) over the object and the related objects the webhook's caches
 * hold. enforce: an error finding denies with every error named by rule id and field; warnings travel as
 * AdmissionReview `warnings` (kubectl prints them). A pod a controller writes (ownerReference with
 * `controller: true`, sent by one of the controller identities) is never denied: its owner was reviewed, and a
 * denial would only make the controller retry. The ownerReference alone proves nothing: anyone may write one.
 * audit: nothing is denied; every finding is recorded
 * (Events, report, metrics) by the caller. DELETE and CONNECT are never linted.
 *
 * Mutation (opted-in namespaces only) sets defaults that are safe to apply twice: the SITS scheduler name on
 * GPU pods still on `default-scheduler`, the namespace's default queue, a TrainingJob's preferred topology
 * level. A second pass over the mutated object produces no patch.
 */
import { lintObjects } from '../guard/engine.ts';
import type { ClusterFacts, Finding, KubeObject, Rule } from '../guard/rule.ts';
import { fieldName } from '../formats/yaml-source.ts';
import { GPU_RESOURCE, LABEL, NAMESPACE_ANNOTATION, NAMESPACE_OPT_IN } from '../api/wire.ts';

export type Mode = 'enforce' | 'audit';

export interface AdmissionRequest {
  readonly uid: string;
  readonly kind: { readonly group: string; readonly version: string; readonly kind: string };
  readonly namespace?: string;
  readonly name?: string;
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  readonly object?: KubeObject;
  /** UPDATE: the stored object before the change. */
  readonly oldObject?: KubeObject;
  readonly dryRun?: boolean;
  /** Who sent the request, as the apiserver authenticated it (the one part of a review a user cannot write). */
  readonly userInfo?: { readonly username?: string; readonly groups?: readonly string[] };
}

export interface AdmissionResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly status?: { readonly code: number; readonly reason?: string; readonly message: string };
  readonly warnings?: readonly string[];
  readonly patchType?: 'JSONPatch';
  readonly patch?: string;
}

export interface ReviewOut {
  readonly apiVersion: 'admission.k8s.io/v1';
  readonly kind: 'AdmissionReview';
  readonly response: AdmissionResponse;
}

/** A review that cannot be read: the server answers 400 and the apiserver applies the failurePolicy. */
export class BadReview extends Error {
  readonly code = 'BadReview';
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads and checks the envelope; the object inside is linted as it is, never trusted. */
export function parseReview(body: unknown): AdmissionRequest {
  if (!isObj(body)) throw new BadReview('body is not a JSON object');
  if (body.apiVersion !== 'admission.k8s.io/v1')
    throw new BadReview(`apiVersion: want admission.k8s.io/v1, got ${JSON.stringify(body.apiVersion) ?? 'nothing'}`);
  if (body.kind !== 'AdmissionReview') throw new BadReview(`kind: want AdmissionReview, got ${JSON.stringify(body.kind) ?? 'nothing'}`);
  const r = body.request;
  if (!isObj(r)) throw new BadReview('request: missing');
  if (typeof r.uid !== 'string' || r.uid === '') throw new BadReview('request.uid: missing');
  const k = r.kind;
  if (!isObj(k) || typeof k.kind !== 'string' || typeof k.version !== 'string') throw new BadReview('request.kind: want {group, version, kind}');
  const op = r.operation;
  if (op !== 'CREATE' && op !== 'UPDATE' && op !== 'DELETE' && op !== 'CONNECT')
    throw new BadReview(`request.operation: unknown ${JSON.stringify(op) ?? 'nothing'}`);
  if (r.object !== undefined && r.object !== null && !isObj(r.object)) throw new BadReview('request.object: not an object');
  if (r.oldObject !== undefined && r.oldObject !== null && !isObj(r.oldObject)) throw new BadReview('request.oldObject: not an object');
  return {
    uid: r.uid,
    kind: { group: typeof k.group === 'string' ? k.group : '', version: k.version, kind: k.kind },
    ...(typeof r.namespace === 'string' ? { namespace: r.namespace } : {}),
    ...(typeof r.name === 'string' ? { name: r.name } : {}),
    operation: op,
    ...(isObj(r.object) ? { object: r.object as KubeObject } : {}),
    ...(isObj(r.oldObject) ? { oldObject: r.oldObject as KubeObject } : {}),
    ...(r.dryRun === true ? { dryRun: true } : {}),
    ...(isObj(r.userInfo) && typeof r.userInfo.username === 'string'
      ? {
          userInfo: {
            username: r.userInfo.username,
            ...(Array.isArray(r.userInfo.groups) ? { groups: (r.userInfo.groups as unknown[]).filter((g): g is string => typeof g === 'string') } : {}),
          },
        }
      : {}),
  };
}

const out = (response: AdmissionResponse): ReviewOut => ({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });

/** The apiserver truncates longer warnings; keep ours whole and readable. */
const MAX_WARNING = 256;
const MAX_WARNINGS = 32;
const MAX_MESSAGE = 4096;

export function findingText(f: Finding): string {
  const field = fieldName(f.path);
  return `[${f.rule}] ${field === '' ? '' : `${field}: `}${f.message}`;
}

const clip = (s: string, n: number): string => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

export interface ValidateDeps {
  readonly rules: readonly Rule[];
  readonly mode: Mode;
  readonly cluster: ClusterFacts;
  readonly disabled?: ReadonlySet<string>;
  /** Objects the rules may look at besides the reviewed one (same namespace, cluster-scoped policy). */
  readonly related?: (req: AdmissionRequest, obj: KubeObject) => readonly KubeObject[];
  /**
   * Users whose controlled pods get warnings instead of denials (the controllers that build pods from reviewed
   * owners). Unset or empty: none, every pod is judged on its own.
   */
  readonly controllerUsers?: ReadonlySet<string>;
}

/**
 * The identities that create pods from owners the webhook reviewed: SITS's controllers (their own
 * ServiceAccount in the chart, the scheduler's under `sits run --controllers`) and kube-controller-manager's
 * (one user, or one ServiceAccount per controller with --use-service-account-credentials).
 */
export function defaultControllerUsers(sitsNamespace: string | undefined): string[] {
  const kcm = ['replicaset-controller', 'job-controller', 'statefulset-controller', 'daemon-set-controller'].map(
    (c) => `system:serviceaccount:kube-system:${c}`,
  );
  const sits =
    sitsNamespace === undefined || sitsNamespace === ''
      ? []
      : ['sits-controllers', 'sits-scheduler'].map((sa) => `system:serviceaccount:${sitsNamespace}:${sa}`);
  return [...sits, 'system:kube-controller-manager', ...kcm];
}

export interface ValidateResult {
  readonly review: ReviewOut;
  /** Findings on the reviewed object (for events, report and metrics). */
  readonly findings: readonly Finding[];
  readonly denied: boolean;
}

/** The object as the rules see it: an AdmissionReview carries the namespace outside metadata on CREATE. */
function withNamespace(req: AdmissionRequest, obj: KubeObject): KubeObject {
  const md = isObj(obj.metadata) ? obj.metadata : {};
  if (req.namespace === undefined || typeof md.namespace === 'string') return obj;
  return { ...obj, metadata: { ...md, namespace: req.namespace } };
}

const controlledBy = (o: KubeObject): boolean =>
  isObj(o.metadata) && Array.isArray(o.metadata.ownerReferences) && (o.metadata.ownerReferences as unknown[]).some((r) => isObj(r) && r.controller === true);
const deleting = (o: KubeObject): boolean => isObj(o.metadata) && o.metadata.deletionTimestamp !== undefined && o.metadata.deletionTimestamp !== null;
const findingKey = (f: Finding): string => `${f.rule}|${JSON.stringify(f.path)}|${f.message}`;

export function validate(req: AdmissionRequest, d: ValidateDeps): ValidateResult {
  // A deleted object's finalizers must always be removable.
  if (req.object === undefined || req.operation === 'DELETE' || req.operation === 'CONNECT' || deleting(req.object))
    return { review: out({ uid: req.uid, allowed: true }), findings: [], denied: false };
  const obj = withNamespace(req, req.object);
  const related = d.related?.(req, obj) ?? [];
  const lint = (o: KubeObject): Finding[] =>
    lintObjects([o, ...related], d.rules, { cluster: d.cluster, ...(d.disabled !== undefined ? { disabled: d.disabled } : {}), only: [0] });
  let findings = lint(obj);
  if (req.operation === 'UPDATE' && req.oldObject !== undefined && findings.some((f) => f.severity === 'error')) {
    // An update is denied only for what it introduces: an error the stored object already had is a warning,
    // so controllers (the scheduler's annotations, status, finalizers) never wedge on objects admitted before.
    const before = new Set(lint(withNamespace(req, req.oldObject)).map(findingKey));
    findings = findings.map((f) =>
      f.severity === 'error' && before.has(findingKey(f))
        ? { ...f, severity: 'warning' as const, message: `${f.message} (already present before this update)` }
        : f,
    );
  }
  if (req.kind.kind === 'Pod' && controlledBy(obj) && d.controllerUsers?.has(req.userInfo?.username ?? '') === true) {
    // Its owner was reviewed when it was applied; denying the controller's pod would only make it retry in a loop.
    // Who sent it decides, not the ownerReference: a user can write one naming any owner, real or made up, and the
    // webhook would have to trust the pod's own claim. The apiserver's userInfo is the one field the user cannot set.
    findings = findings.map((f) =>
      f.severity === 'error' ? { ...f, severity: 'warning' as const, message: `${f.message} (a controller's pod: fix its owner)` } : f,
    );
  }
  const errors = findings.filter((f) => f.severity === 'error');
  const denied = d.mode === 'enforce' && errors.length > 0;
  // In audit mode errors are only warned about, so the user still learns of them at apply time.
  const warned = denied ? findings.filter((f) => f.severity === 'warning') : findings;
  const warnings = warned.slice(0, MAX_WARNINGS).map((f) => clip(`${f.severity === 'error' ? 'audit: would deny: ' : ''}${findingText(f)}`, MAX_WARNING));
  if (warned.length > MAX_WARNINGS) warnings.push(`… and ${warned.length - MAX_WARNINGS} more findings (sits lint shows them all)`);
  const response: AdmissionResponse = denied
    ? {
        uid: req.uid,
        allowed: false,
        status: { code: 403, reason: 'Forbidden', message: clip(`SITS guard rails: ${errors.map(findingText).join('; ')}`, MAX_MESSAGE) },
        ...(warnings.length > 0 ? { warnings } : {}),
      }
    : { uid: req.uid, allowed: true, ...(warnings.length > 0 ? { warnings } : {}) };
  return { review: out(response), findings, denied };
}

// ---- mutation ---------------------------------------------------------------------------------------

/** Namespace label that opts a namespace into SITS defaults (the mutating webhook's namespaceSelector). */
export const OPT_IN_LABEL = NAMESPACE_OPT_IN.label;
export const OPT_IN_VALUE = NAMESPACE_OPT_IN.value;
/** Namespace annotations with the defaults. */
export const DEFAULT_QUEUE_ANNOTATION = NAMESPACE_ANNOTATION.defaultQueue;
export const DEFAULT_PREFERRED_LEVEL_ANNOTATION = NAMESPACE_ANNOTATION.defaultPreferredLevel;

export interface NamespaceInfo {
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface MutateDeps {
  readonly schedulerName: string;
  readonly namespace: (name: string) => NamespaceInfo | undefined;
}

interface PatchOp {
  readonly op: 'add' | 'replace';
  readonly path: string;
  readonly value: unknown;
}

const ptr = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

function requestsGpu(spec: Record<string, unknown>): boolean {
  for (const list of [spec.containers, spec.initContainers]) {
    if (!Array.isArray(list)) continue;
    for (const c of list as unknown[]) {
      if (!isObj(c) || !isObj(c.resources)) continue;
      for (const part of [c.resources.limits, c.resources.requests]) {
        if (!isObj(part)) continue;
        const v = part[GPU_RESOURCE];
        if ((typeof v === 'string' && v !== '0' && v !== '') || (typeof v === 'number' && v > 0)) return true;
      }
    }
  }
  return false;
}

/** Adds a label, creating metadata.labels when missing. */
function labelOps(obj: Record<string, unknown>, key: string, value: string): PatchOp[] {
  const md = isObj(obj.metadata) ? obj.metadata : undefined;
  if (md === undefined) return [{ op: 'add', path: '/metadata', value: { labels: { [key]: value } } }];
  const labels = md.labels;
  if (!isObj(labels)) return [{ op: 'add', path: '/metadata/labels', value: { [key]: value } }];
  if (typeof labels[key] === 'string' && labels[key] !== '') return [];
  return [{ op: 'add', path: `/metadata/labels/${ptr(key)}`, value }];
}

export function mutationOps(req: AdmissionRequest, d: MutateDeps): PatchOp[] {
  const obj = req.object;
  if (obj === undefined || req.operation !== 'CREATE' || req.namespace === undefined) return [];
  const ns = d.namespace(req.namespace);
  if (ns === undefined || ns.labels[OPT_IN_LABEL] !== OPT_IN_VALUE) return [];
  const queue = ns.annotations[DEFAULT_QUEUE_ANNOTATION];
  const ops: PatchOp[] = [];
  if (req.kind.kind === 'Pod' && req.kind.group === '') {
    const spec = isObj(obj.spec) ? obj.spec : undefined;
    if (spec === undefined || !requestsGpu(spec)) return [];
    const sn = spec.schedulerName;
    if (sn === undefined || sn === '' || sn === 'default-scheduler')
      ops.push({ op: sn === undefined ? 'add' : 'replace', path: '/spec/schedulerName', value: d.schedulerName });
    if (queue !== undefined && queue !== '') ops.push(...labelOps(obj, LABEL.queue, queue));
    return ops;
  }
  if (req.kind.kind === 'TrainingJob' && req.kind.group === 'ai.sits2026.dev') {
    const spec = isObj(obj.spec) ? obj.spec : undefined;
    if (spec === undefined) return [];
    if (queue !== undefined && queue !== '' && (typeof spec.queue !== 'string' || spec.queue === ''))
      ops.push({ op: 'add', path: '/spec/queue', value: queue });
    const level = ns.annotations[DEFAULT_PREFERRED_LEVEL_ANNOTATION];
    if (level !== undefined && level !== '') {
      const topo = spec.topology;
      if (!isObj(topo)) ops.push({ op: 'add', path: '/spec/topology', value: { preferredLevel: level } });
      else if (topo.preferredLevel === undefined && topo.requiredLevel === undefined)
        ops.push({ op: 'add', path: '/spec/topology/preferredLevel', value: level });
    }
  }
  return ops;
}

export function mutate(req: AdmissionRequest, d: MutateDeps): ReviewOut {
  const ops = mutationOps(req, d);
  if (ops.length === 0) return out({ uid: req.uid, allowed: true });
  return out({ uid: req.uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') });
}
