/**
 * The generic runner around a pure controller definition (api/controller.ts, ADR 0038): Reflectors (list + watch)
 * on the primary kind and on each owned kind (only objects carrying the owner label, indexed by it), a keyed work
 * queue (one reconcile in flight per object; requeue after the delay reconcile asks for), and the apply step:
 * status first (JSON merge patch of the status subresource with a resourceVersion precondition, so a stale cache
 * can never count a restart twice), then the actions in order, consecutive actions of one label concurrently.
 *
 * After applying, an object waits until the watch shows what it created and deleted of the owned kinds marked
 * `awaitWatch` ("expectations", as in client-go's controllers) before it is reconciled again, so a slow watch never
 * looks like a vanished replica. Failed actions are fed back to the next reconcile and retried with backoff.
 */
import type { Clock, TraceAttributes, TraceSpan } from '../../core/ports.ts';
import {
  actionLabel,
  resourcePath,
  statusPatch,
  type ApplyFailure,
  type ControllerAction,
  type ControllerDefinition,
  type ControllerOutcome,
  type OwnedResource,
  type ReferencedResource,
  type ResourceType,
  type WireObject,
} from '../../api/controller.ts';
import { KubeApiError, type KubeClient } from '../client/client.ts';
import type { ControllerMetrics, ReconcileResult } from './controller-metrics.ts';
import { objectKey, Reflector } from '../client/reflector.ts';
import { NO_TRACING, withTraceIds, type Tracing } from '../telemetry/tracing.ts';
import { WorkQueue } from '../client/work-queue.ts';

export interface RunnerOptions {
  readonly log?: (m: string) => void;
  /** Wall clock (default Date.now); reconcile sees time only through it. */
  readonly clock?: Clock;
  /** When given, only the leader reconciles (the others keep their caches warm). */
  readonly isLeader?: () => boolean;
  /** Objects reconciled at once. */
  readonly concurrency?: number;
  /** A span per reconcile and per action (default off); log lines written inside one carry its ids. */
  readonly tracing?: Tracing;
  /** controller-runtime's reconcile and work-queue metrics (kube/controllers/controller-metrics.ts); default none. */
  readonly metrics?: ControllerMetrics;
}

export interface RunningController {
  stop(): Promise<void>;
}

const EXPECTATION_TIMEOUT_MS = 15_000;
const CRD_RETRY_MS = 5_000;
/** A kind whose API is not installed (404) is looked for again with backoff from CRD_RETRY_MS up to this. */
const ABSENT_RETRY_MAX_MS = 300_000;

const systemClock: Clock = { nowMs: () => Date.now() };

/** Per owned kind: names created and uids deleted that the watch has yet to show. */
interface Expectation {
  readonly created: ReadonlyMap<string, ReadonlySet<string>>;
  readonly deletedUids: ReadonlyMap<string, ReadonlySet<string>>;
  readonly deadline: number;
}

type Primary = WireObject & { readonly status?: Readonly<Record<string, unknown>> };

/** Newer-or-same by resourceVersion when both are numbers (etcd revisions); else trust the newcomer. */
function notOlder(incoming: WireObject, existing: WireObject | undefined): boolean {
  const a = Number(incoming.metadata?.resourceVersion);
  const b = Number(existing?.metadata?.resourceVersion);
  return existing === undefined || !Number.isFinite(a) || !Number.isFinite(b) || a >= b;
}

/** Owned objects of one kind by owner key (`namespace/name` of the primary), from the owner label. */
class OwnerIndex {
  private readonly byOwner = new Map<string, Map<string, WireObject>>();
  private readonly ownerOf = new Map<string, string>();

  constructor(
    private readonly label: string,
    private readonly onChange: (ownerKey: string) => void,
  ) {}

  upsert(obj: WireObject): void {
    const key = objectKey(obj);
    const owner = obj.metadata?.labels?.[this.label];
    const prev = this.ownerOf.get(key);
    if (prev !== undefined) this.byOwner.get(prev)?.delete(key);
    if (owner === undefined) {
      this.ownerOf.delete(key);
      if (prev !== undefined) this.onChange(prev);
      return;
    }
    const ownerKey = `${obj.metadata?.namespace ?? 'default'}/${owner}`;
    let m = this.byOwner.get(ownerKey);
    if (m === undefined) this.byOwner.set(ownerKey, (m = new Map()));
    m.set(key, obj);
    this.ownerOf.set(key, ownerKey);
    if (prev !== undefined && prev !== ownerKey) this.onChange(prev);
    this.onChange(ownerKey);
  }

  remove(obj: WireObject): void {
    const key = objectKey(obj);
    const ownerKey = this.ownerOf.get(key);
    if (ownerKey === undefined) return;
    this.ownerOf.delete(key);
    this.byOwner.get(ownerKey)?.delete(key);
    if (this.byOwner.get(ownerKey)?.size === 0) this.byOwner.delete(ownerKey);
    this.onChange(ownerKey);
  }

  of(ownerKey: string): WireObject[] {
    return [...(this.byOwner.get(ownerKey)?.values() ?? [])];
  }
}

/** The `KubeApiError` message without its `METHOD path: status reason: ` prefix (the status carries those). */
const apiMessage = (e: unknown): string => (e instanceof KubeApiError ? e.message.replace(/^\S+ \S+: \d+ \S*: /, '') : (e as Error).message);

/** The last failed actions of each object (the next reconcile sees them) and how many reconciles in a row failed. */
class FailureMemory {
  private readonly lastErrors = new Map<string, ApplyFailure[]>();
  private readonly streak = new Map<string, number>();

  of(key: string): ApplyFailure[] | undefined {
    return this.lastErrors.get(key);
  }

  /** Keeps the errors; returns how many reconciles of the object in a row have now failed. */
  record(key: string, errors: ApplyFailure[]): number {
    this.lastErrors.set(key, errors);
    const n = (this.streak.get(key) ?? 0) + 1;
    this.streak.set(key, n);
    return n;
  }

  forget(key: string): void {
    this.lastErrors.delete(key);
    this.streak.delete(key);
  }
}

/** Timers of the reflectors' next looks at a kind that could not be listed. */
class RetryTimers {
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  /** Kinds whose API was not served at the last look, with the look to take now when an action proves it is back. */
  private readonly absent = new Map<string, () => void>();

  /** Calls `look` after `delayMs`; for an absent kind also at once on `lookNow(kind)`. */
  schedule(kind: string, absent: boolean, delayMs: number, look: () => void): void {
    const again = (): void => {
      clearTimeout(t);
      this.timers.delete(t);
      this.absent.delete(kind);
      look();
    };
    const t = setTimeout(again, delayMs);
    this.timers.add(t);
    if (absent) this.absent.set(kind, again);
  }

  /** A write of `kind` succeeded: if its API was absent, it has been installed since, so look now. */
  lookNow(kind: string): void {
    if (this.absent.has(kind)) this.absent.get(kind)?.();
  }

  clear(): void {
    for (const t of this.timers) clearTimeout(t);
  }
}

export class ControllerRunner<P extends Primary = Primary> {
  private readonly objects = new Map<string, P>();
  private readonly indexes = new Map<string, { readonly type: OwnedResource; readonly index: OwnerIndex }>();
  /** Referenced kinds: every object of the kind by `namespace/name` (watched without the owner label). */
  private readonly refs = new Map<string, { readonly type: ReferencedResource; readonly objects: Map<string, WireObject> }>();
  private readonly expectations = new Map<string, Expectation>();
  private readonly failures = new FailureMemory();
  private readonly queue: WorkQueue;
  private readonly reflectors: Reflector<WireObject>[] = [];
  private readonly retries = new RetryTimers();
  private readonly log: (m: string) => void;
  private readonly clock: Clock;
  private readonly tracing: Tracing;
  /** Log prefix, e.g. `trainingjob`. */
  private readonly noun: string;
  private synced = false;
  private stopped = false;
  private wasLeader = false;
  private leaderTimer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly def: ControllerDefinition<P>,
    private readonly opts: RunnerOptions = {},
  ) {
    this.tracing = opts.tracing ?? NO_TRACING;
    this.log = withTraceIds(this.tracing, opts.log ?? (() => undefined));
    this.clock = opts.clock ?? systemClock;
    this.noun = def.primary.kind.toLowerCase();
    const enqueue = (k: string): void => this.queue.add(k);
    for (const type of def.owned) this.indexes.set(type.kind, { type, index: new OwnerIndex(def.ownerLabel, enqueue) });
    for (const type of def.referenced ?? []) this.refs.set(type.kind, { type, objects: new Map() });
    const observer = opts.metrics?.register(this.noun, () => this.queue.depth);
    this.queue = new WorkQueue(
      (k) => this.process(k),
      opts.concurrency ?? 4,
      (k, e) => this.log(`${this.noun} ${k}: ${(e as Error).stack ?? String(e)}`),
      observer,
    );
  }

  async start(): Promise<void> {
    const sel = { labelSelector: this.def.ownerLabel };
    const owned = [...this.indexes.values()].map(({ type, index }) => ({
      type: type as ResourceType,
      r: new Reflector<WireObject>(
        this.client,
        resourcePath(type),
        {
          add: (o) => index.upsert(o),
          update: (o) => index.upsert(o),
          delete: (o) => index.remove(o),
          error: (e) => this.log(`${type.plural} watch: ${e.message}`),
        },
        sel,
      ),
    }));
    const referenced = [...this.refs.values()].map(({ type, objects }) => {
      const changed = (o: WireObject): void => {
        const ns = o.metadata.namespace ?? 'default';
        for (const [k, p] of this.objects) if ((p.metadata.namespace ?? 'default') === ns && type.names(p).includes(o.metadata.name ?? '')) this.queue.add(k);
      };
      const upsert = (o: WireObject): void => {
        objects.set(objectKey(o), o);
        changed(o);
      };
      return {
        type: type as ResourceType,
        r: new Reflector<WireObject>(this.client, resourcePath(type), {
          add: upsert,
          update: upsert,
          delete: (o) => (objects.delete(objectKey(o)), changed(o)),
          error: (e) => this.log(`${type.plural} watch: ${e.message}`),
        }),
      };
    });
    owned.push(...referenced);
    const what = this.def.primary.plural;
    const primary = new Reflector<P>(this.client, resourcePath(this.def.primary), {
      add: (o) => this.upsert(o),
      update: (o) => this.upsert(o),
      delete: (o) => {
        const key = objectKey(o);
        this.objects.delete(key);
        this.expectations.delete(key);
        this.failures.forget(key);
      },
      error: (e) => this.log(`${what} watch: ${e.message}`),
    });
    this.reflectors.push(...owned.map((o) => o.r), primary as unknown as Reflector<WireObject>);
    // Owned objects first: an object must never be reconciled against an empty cache of what it owns.
    await Promise.all(owned.map((o) => this.startReflector(o.r, o.type, false)));
    await this.startReflector(primary as unknown as Reflector<WireObject>, this.def.primary, true);
    if (this.opts.isLeader !== undefined) {
      this.leaderTimer = setInterval(() => {
        const leading = this.opts.isLeader?.() ?? true;
        if (leading && !this.wasLeader) for (const k of this.objects.keys()) this.queue.add(k);
        this.wasLeader = leading;
      }, 1000);
    }
  }

  /**
   * Lists once; without the CRD (404) keeps looking in the background so that the rest still runs. An optional kind
   * (KEDA's ScaledObject where KEDA is not installed, VolumeSnapshot without the CSI snapshot CRDs) may be missing for
   * ever: that is said once, with what it disables, and looked for again with backoff from 5 s to 5 min rather than
   * every 5 s; a successful write of that kind (it has been installed since) looks at once. Other errors are logged when they change and retried every 5 s.
   */
  private async startReflector(r: Reflector<WireObject>, type: ResourceType, isPrimary: boolean, lastError?: string, delayMs = CRD_RETRY_MS): Promise<void> {
    const what = type.plural;
    try {
      await r.start();
      if (lastError !== undefined) this.log(`${what}: listed after all, watching`);
      if (isPrimary) this.markSynced();
    } catch (e) {
      if (this.stopped) return;
      const absent = e instanceof KubeApiError && e.status === 404;
      const message = absent ? 'absent' : (e as Error).message;
      if (message !== lastError) {
        if (absent)
          this.log(
            `warning: ${type.kind} API not installed (${type.apiVersion} ${what}: 404)${type.whenAbsent === undefined ? '' : `: ${type.whenAbsent}`}; looking again with backoff up to ${ABSENT_RETRY_MAX_MS / 60_000} min`,
          );
        else this.log(`${what}: ${message}; retrying in ${CRD_RETRY_MS / 1000}s`);
      }
      this.retries.schedule(type.kind, absent, absent ? delayMs : CRD_RETRY_MS, () => {
        void this.startReflector(r, type, isPrimary, message, absent ? Math.min(delayMs * 2, ABSENT_RETRY_MAX_MS) : CRD_RETRY_MS);
      });
    }
  }

  private markSynced(): void {
    this.synced = true;
    for (const k of this.objects.keys()) this.queue.add(k);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.leaderTimer !== undefined) clearInterval(this.leaderTimer);
    this.retries.clear();
    for (const r of this.reflectors) r.stop();
    await this.queue.stop();
  }

  private upsert(o: P): void {
    const key = objectKey(o);
    if (!notOlder(o, this.objects.get(key))) return;
    this.objects.set(key, o);
    this.queue.add(key);
  }

  private expectationsMet(key: string): boolean {
    const e = this.expectations.get(key);
    if (e === undefined) return true;
    let ok = true;
    for (const [kind, { index }] of this.indexes) {
      const created = e.created.get(kind);
      const deleted = e.deletedUids.get(kind);
      if (created === undefined && deleted === undefined) continue;
      const objs = index.of(key);
      const names = new Set(objs.map((o) => o.metadata.name));
      ok &&=
        [...(created ?? [])].every((n) => names.has(n)) &&
        objs.every((o) => !(deleted?.has(o.metadata.uid ?? '') ?? false) || o.metadata.deletionTimestamp !== undefined);
    }
    if (ok || performance.now() >= e.deadline) {
      if (!ok) this.log(`${this.noun} ${key}: the watch did not confirm the last changes within ${EXPECTATION_TIMEOUT_MS / 1000}s; going on`);
      this.expectations.delete(key);
      return true;
    }
    return false;
  }

  private async process(key: string): Promise<void> {
    if (this.stopped || !this.synced) return;
    if (this.opts.isLeader !== undefined && !this.opts.isLeader()) return;
    const obj = this.objects.get(key);
    if (obj === undefined) return;
    if (!this.expectationsMet(key)) {
      this.queue.addAfter(key, 500);
      return;
    }
    const owned = new Map<string, readonly WireObject[]>();
    for (const [kind, { index }] of this.indexes) owned.set(kind, index.of(key));
    const ns = obj.metadata.namespace ?? 'default';
    const referenced = new Map<string, readonly WireObject[]>();
    for (const [kind, { type, objects }] of this.refs)
      referenced.set(
        kind,
        type.names(obj).flatMap((n) => objects.get(`${ns}/${n}`) ?? []),
      );
    const errors = this.failures.of(key);
    const reconcile = async (span: TraceSpan | undefined): Promise<void> => {
      const started = performance.now();
      let outcome: ReconcileResult = 'error';
      try {
        outcome = await reconcileOnce(span);
      } finally {
        this.opts.metrics?.reconciled(this.noun, outcome, (performance.now() - started) / 1000);
      }
    };
    const reconcileOnce = async (span: TraceSpan | undefined): Promise<ReconcileResult> => {
      const res = this.def.reconcile({
        object: obj,
        owned,
        ...(this.refs.size === 0 ? {} : { referenced }),
        nowMs: this.clock.nowMs(),
        ...(errors === undefined ? {} : { lastErrors: errors }),
      });
      const phase = res.status?.phase;
      span?.set({
        'sits.actions': res.actions.length,
        ...(typeof phase === 'string' ? { 'sits.phase': phase } : {}),
        ...(res.requeueAfterMs === undefined ? {} : { 'sits.requeue_after_ms': res.requeueAfterMs }),
      });
      const result = await this.apply(key, obj, res);
      span?.set({ 'sits.result': result });
      // controller-runtime's result labels: a stale copy (409) is a requeue, a wait asked for is requeue_after.
      return result === 'error'
        ? 'error'
        : result === 'conflict'
          ? 'requeue'
          : result === 'ok' && res.requeueAfterMs !== undefined
            ? 'requeue_after'
            : 'success';
    };
    if (!this.tracing.enabled) return reconcile(undefined);
    const attrs = {
      'sits.controller': this.def.primary.kind,
      'k8s.namespace.name': obj.metadata.namespace ?? 'default',
      'sits.object': obj.metadata.name ?? '',
      ...(errors === undefined ? {} : { 'sits.last_errors': errors.length }),
    };
    await this.tracing.run('sits.reconcile', attrs, reconcile);
  }

  private selfPath(o: WireObject): string {
    return resourcePath(this.def.primary, o.metadata.namespace ?? 'default', o.metadata.name ?? '');
  }

  private ownedType(kind: string): OwnedResource | ReferencedResource {
    const t = this.indexes.get(kind)?.type ?? this.refs.get(kind)?.type;
    if (t === undefined) throw new Error(`${this.def.primary.kind} controller: ${kind} is not among its owned kinds`);
    return t;
  }

  /** Writes status and carries out the actions; says how it went (`ok`, `error`: fed back, `conflict`: stale copy, `gone`). */
  private async apply(key: string, obj: P, res: ControllerOutcome): Promise<'ok' | 'error' | 'conflict' | 'gone'> {
    const ns = obj.metadata.namespace ?? 'default';
    const errors: ApplyFailure[] = [];
    const created = new Map<string, Set<string>>();
    const deleted = new Map<string, Set<string>>();
    const note = (m: Map<string, Set<string>>, kind: string, v: string): void => {
      if (this.indexes.get(kind)?.type.awaitWatch !== true) return;
      let s = m.get(kind);
      if (s === undefined) m.set(kind, (s = new Set()));
      s.add(v);
    };
    const run = async (a: ControllerAction): Promise<void> => {
      try {
        await (this.tracing.enabled ? this.tracing.run('sits.action', actionAttributes(a), () => this.act(ns, obj, a)) : this.act(ns, obj, a));
        // A write to a kind whose API was absent succeeded: it has been installed, so watch it now, not at the next look.
        if (a.op === 'create' || a.op === 'patch' || a.op === 'apply') this.retries.lookNow(a.kind);
        if (a.op === 'create') note(created, a.kind, a.object.metadata.name ?? '');
        if (a.op === 'delete') note(deleted, a.kind, a.uid);
      } catch (e) {
        if (a.op === 'event') {
          this.log(`${this.noun} ${key}: event ${a.reason}: ${(e as Error).message}`);
          return;
        }
        const status = e instanceof KubeApiError ? e.status : undefined;
        if (a.op === 'create' && status === 409) return; // already there
        if ((a.op === 'delete' || a.op === 'deleteSelf' || a.op === 'addFinalizer' || a.op === 'removeFinalizer') && status === 404) return; // already gone
        if ((a.op === 'addFinalizer' || a.op === 'removeFinalizer') && status === 409) {
          this.queue.addAfter(key, 200);
          return;
        }
        const name = a.op === 'create' ? a.object.metadata.name : a.op === 'patch' || a.op === 'delete' || a.op === 'apply' ? a.name : undefined;
        errors.push({
          action: actionLabel(a),
          ...(name === undefined ? {} : { name }),
          status: status ?? 0,
          reason: (e instanceof KubeApiError ? e.reason : '') || 'Error',
          message: apiMessage(e),
        });
      }
    };
    // Creates marked `withStatus` go out together with the status write instead of after it (a snapshot asked for
    // the moment a commit is seen, ADR 0145): they are idempotent by name, so a status conflict only repeats them.
    const early = res.actions.filter((a) => a.op === 'create' && a.withStatus === true);
    const earlyDone = Promise.all(early.map(run));
    const expect = (): void => {
      if (created.size > 0 || deleted.size > 0)
        this.expectations.set(key, { created, deletedUids: deleted, deadline: performance.now() + EXPECTATION_TIMEOUT_MS });
    };
    if (res.status !== undefined) {
      const patch = statusPatch(obj.status ?? {}, res.status);
      if (patch !== undefined) {
        try {
          const updated = await this.client.mergePatch<P>(`${this.selfPath(obj)}/status`, {
            metadata: { resourceVersion: obj.metadata.resourceVersion },
            status: patch,
          });
          const [from, to] = [obj.status?.phase, res.status.phase];
          if (to !== from) this.log(`${this.noun} ${key}: ${typeof from === 'string' ? from : '(new)'} → ${typeof to === 'string' ? to : '?'}`);
          this.upsert(updated);
        } catch (e) {
          await earlyDone;
          expect();
          // 409: our copy is stale; the watch brings the new one and with it another reconcile.
          if (e instanceof KubeApiError && e.status === 409) {
            this.queue.addAfter(key, 200);
            return 'conflict';
          }
          if (e instanceof KubeApiError && e.status === 404) return 'gone';
          this.failed(key, [
            ...errors,
            { action: 'writeStatus', status: e instanceof KubeApiError ? e.status : 0, reason: 'StatusWriteFailed', message: (e as Error).message },
          ]);
          return 'error';
        }
      }
    }
    await earlyDone;
    const groups: ControllerAction[][] = [];
    for (const a of res.actions) {
      if (early.includes(a)) continue;
      const last = groups[groups.length - 1];
      if (last?.[0] !== undefined && actionLabel(last[0]) === actionLabel(a)) last.push(a);
      else groups.push([a]);
    }
    for (const group of groups) await Promise.all(group.map(run));
    expect();
    if (errors.length > 0) this.failed(key, errors);
    else this.failures.forget(key);
    // Long waits (deadlines, TTLs of days) are re-evaluated hourly: setTimeout cannot hold more than ~24 days.
    if (res.requeueAfterMs !== undefined) this.queue.addAfter(key, Math.min(res.requeueAfterMs + 20, 3_600_000));
    return errors.length > 0 ? 'error' : 'ok';
  }

  /** Keeps the errors for the next reconcile (status shows them) and retries with backoff (1 s doubling to 60 s). */
  private failed(key: string, errors: ApplyFailure[]): void {
    for (const e of errors) this.log(`${this.noun} ${key}: ${e.action} ${e.name ?? ''}: ${e.status} ${e.message}`);
    const n = this.failures.record(key, errors);
    this.queue.addAfter(key, Math.min(1000 * 2 ** (n - 1), 60_000));
  }

  private async act(ns: string, obj: P, a: ControllerAction): Promise<void> {
    switch (a.op) {
      case 'addFinalizer':
      case 'removeFinalizer': {
        const have = obj.metadata.finalizers ?? [];
        const finalizers = a.op === 'addFinalizer' ? [...have.filter((f) => f !== a.finalizer), a.finalizer] : have.filter((f) => f !== a.finalizer);
        const updated = await this.client.mergePatch<P>(this.selfPath(obj), { metadata: { resourceVersion: obj.metadata.resourceVersion, finalizers } });
        this.upsert(updated);
        return;
      }
      case 'create':
        await this.client.post(resourcePath(this.ownedType(a.kind), ns), a.object);
        return;
      case 'patch':
        await this.client.mergePatch(resourcePath(this.ownedType(a.kind), ns, a.name), a.patch);
        return;
      case 'apply':
        await this.client.request('PATCH', resourcePath(this.ownedType(a.kind), ns, a.name), {
          body: a.object,
          contentType: 'application/apply-patch+yaml',
          query: { fieldManager: a.fieldManager },
        });
        return;
      case 'delete':
        await this.client.request('DELETE', resourcePath(this.ownedType(a.kind), ns, a.name), { body: { preconditions: { uid: a.uid } } });
        return;
      case 'deleteSelf':
        await this.client.request('DELETE', this.selfPath(obj), { body: { preconditions: { uid: obj.metadata.uid } } });
        return;
      case 'event': {
        const name = obj.metadata.name ?? '';
        const now = new Date(this.clock.nowMs()).toISOString();
        const { apiVersion, kind } = this.def.primary;
        await this.client.post(`/api/v1/namespaces/${ns}/events`, {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { generateName: `${name}.`, namespace: ns },
          involvedObject: { apiVersion, kind, name, namespace: ns, uid: obj.metadata.uid },
          reason: a.reason,
          message: a.message.slice(0, 1000),
          type: a.type,
          source: { component: this.def.component },
          reportingComponent: this.def.component,
          reportingInstance: 'sits',
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        });
        return;
      }
    }
  }
}

/** Starts one controller; resolves once its caches are filled (or a missing CRD has been logged and is retried). */
export async function runController<P extends Primary>(client: KubeClient, def: ControllerDefinition<P>, opts: RunnerOptions = {}): Promise<RunningController> {
  const runner = new ControllerRunner(client, def, opts);
  await runner.start();
  return { stop: () => runner.stop() };
}

/** What an action span says: the op, its label and the object it acts on. */
function actionAttributes(a: ControllerAction): TraceAttributes {
  const kind = a.op === 'create' || a.op === 'patch' || a.op === 'delete' || a.op === 'apply' ? { 'sits.kind': a.kind } : {};
  const name = a.op === 'create' ? a.object.metadata.name : a.op === 'patch' || a.op === 'delete' || a.op === 'apply' ? a.name : undefined;
  return {
    'sits.op': a.op,
    'sits.action': actionLabel(a),
    ...kind,
    ...(name === undefined ? {} : { 'sits.name': name }),
    ...(a.op === 'event' ? { 'sits.reason': a.reason } : {}),
  };
}
