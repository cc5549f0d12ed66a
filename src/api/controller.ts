/**
 * The contract between a workload controller and the runner that drives it (ADR 0038). A controller is a
 * definition — which kind it reconciles, which kinds it owns and how they point back at their owner — plus a pure
 * reconcile from what the caches show (and the time) to a desired status and a list of actions. The runner in
 * kube/controllers/controller-runner.ts does all the I/O: watches, work queue, expectations, status writes, actions, backoff.
 * Plain types and pure helpers only: controllers/ and kube/ both import this module.
 */

/** What the runner needs of any object it watches or writes (a subset of metav1.ObjectMeta). */
export interface WireMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly deletionTimestamp?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly finalizers?: readonly string[];
}

export interface WireObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: WireMeta;
}

/** A namespaced resource type: `v1` (core) or `group/version`, its kind and its plural (the URL segment). */
export interface ResourceType {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
  /** What its absence disables and how to install it, logged once when its API is not served (404). */
  readonly whenAbsent?: string;
}

export interface OwnedResource extends ResourceType {
  /**
   * After creating or deleting one, wait until the watch shows it before reconciling the owner again (client-go's
   * "expectations"), so that a slow watch never looks like a missing object. Needed where reconcile counts the
   * objects (pods of a gang); a no-op risk elsewhere (a second create meets 409 and is ignored).
   */
  readonly awaitWatch?: boolean;
}

/**
 * One step of an apply. Steps on owned objects name a kind from the definition's `owned` list; the `*Self` and
 * finalizer steps act on the reconciled object itself. `label` names the step in ApplyFailure and groups it:
 * consecutive steps with one label run concurrently, the groups in order. Default label: `create<Kind>`,
 * `patch<Kind>`, `delete<Kind>`, or the op itself.
 */
export type ControllerAction =
  /**
   * POST; 409 (already there) counts as done. `withStatus`: sent together with the status write instead of after it
   * (only for a create idempotent by name whose object does not depend on the status landing; ADR 0145).
   */
  | { readonly op: 'create'; readonly kind: string; readonly object: WireObject; readonly label?: string; readonly withStatus?: boolean }
  /** JSON merge patch of the object; every error counts. */
  | { readonly op: 'patch'; readonly kind: string; readonly name: string; readonly patch: Readonly<Record<string, unknown>>; readonly label?: string }
  /**
   * Server-side apply of `object` (an apply configuration: only the fields this manager owns) under `fieldManager`,
   * without force: a field another manager owns with another value is a 409 conflict, fed back. The kind is an
   * owned or a referenced one. Fields the manager owned before and `object` omits are removed.
   */
  | { readonly op: 'apply'; readonly kind: string; readonly name: string; readonly fieldManager: string; readonly object: WireObject; readonly label?: string }
  /** DELETE with a uid precondition; 404 (already gone) counts as done. */
  | { readonly op: 'delete'; readonly kind: string; readonly name: string; readonly uid: string; readonly label?: string }
  /** Merge patch of metadata.finalizers with a resourceVersion precondition; 409 retries soon, 404 is done. */
  | { readonly op: 'addFinalizer' | 'removeFinalizer'; readonly finalizer: string; readonly label?: string }
  /** DELETE of the reconciled object itself (uid precondition); 404 is done. */
  | { readonly op: 'deleteSelf'; readonly label?: string }
  /** A core/v1 Event about the reconciled object; a failure is only logged. */
  | { readonly op: 'event'; readonly type: 'Normal' | 'Warning'; readonly reason: string; readonly message: string };

/** An error met applying the previous outcome, fed back to the next reconcile (so that status can show it). */
export interface ApplyFailure {
  /** The step's label, or `writeStatus`. */
  readonly action: string;
  /** The owned object's name (steps on owned objects only). */
  readonly name?: string;
  /** HTTP status, 0 for a network error. */
  readonly status: number;
  readonly reason: string;
  readonly message: string;
}

export interface ReferencedResource extends ResourceType {
  /** The names of objects of this kind the primary refers to. */
  readonly names: (primary: WireObject) => readonly string[];
}

export interface ControllerInput<P extends WireObject = WireObject> {
  /** As read from the apiserver (no defaults applied). */
  readonly object: P;
  /** Owned objects labelled with the object's name, per owned kind (every owned kind present, maybe empty). */
  readonly owned: ReadonlyMap<string, readonly WireObject[]>;
  /** Objects the primary names (definition.referenced), per kind, those that exist; absent without referenced kinds. */
  readonly referenced?: ReadonlyMap<string, readonly WireObject[]>;
  readonly nowMs: number;
  readonly lastErrors?: readonly ApplyFailure[];
}

export interface ControllerOutcome {
  /** The whole desired status; undefined leaves it alone. Written (merge patch of the changes) before any action. */
  readonly status?: Readonly<Record<string, unknown>>;
  readonly actions: readonly ControllerAction[];
  /** Reconcile again after this long even if nothing changes. */
  readonly requeueAfterMs?: number;
}

export interface ControllerDefinition<P extends WireObject = WireObject> {
  /** The reconciled kind; it has a status subresource. */
  readonly primary: ResourceType;
  readonly owned: readonly OwnedResource[];
  /** Owned objects carry the owner's name under this label (same namespace); the runner watches only those. */
  readonly ownerLabel: string;
  /** Event source component, e.g. `sits-trainingjob-controller`. */
  readonly component: string;
  /**
   * Objects the primary does not own but acts on (a user's InferenceService a DataPipeline adds an adapter to):
   * watched without the owner label; a change to one reconciles the primaries whose `names` list it (same namespace).
   */
  readonly referenced?: readonly ReferencedResource[];
  /** Pure: the same input gives the same outcome. */
  reconcile(input: ControllerInput<P>): ControllerOutcome;
}

/** The step's name in failures and its concurrency group. */
export function actionLabel(a: ControllerAction): string {
  if (a.op === 'event') return 'event';
  if (a.label !== undefined) return a.label;
  return a.op === 'create' || a.op === 'patch' || a.op === 'delete' || a.op === 'apply' ? `${a.op}${a.kind}` : a.op;
}

/** `/api/v1` or `/apis/<group>/<version>`. */
export function apiBase(t: Pick<ResourceType, 'apiVersion'>): string {
  return t.apiVersion.includes('/') ? `/apis/${t.apiVersion}` : `/api/${t.apiVersion}`;
}

/** The cluster-wide collection (list/watch), a namespace's collection, or one object. */
export function resourcePath(t: ResourceType, namespace?: string, name?: string): string {
  const ns = namespace === undefined ? '' : `/namespaces/${namespace}`;
  return `${apiBase(t)}${ns}/${t.plural}${name === undefined ? '' : `/${name}`}`;
}

const isPlainObject = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * JSON merge patch from `from` to `to` (removed keys become null, nested objects are diffed the same way, so a key
 * dropped inside a nested object is removed too); undefined when nothing changed.
 */
export function statusPatch(from: Readonly<Record<string, unknown>>, to: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(from), ...Object.keys(to)])) {
    const [a, b] = [from[k], to[k]];
    if (JSON.stringify(a) === JSON.stringify(b)) continue;
    if (isPlainObject(a) && isPlainObject(b)) patch[k] = statusPatch(a, b) ?? {};
    else patch[k] = b ?? null;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}
