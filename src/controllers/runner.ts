/**
 * The thin runner around the pure TrainingJob reconcile: Reflectors (list + watch) on TrainingJobs and on the
 * Pods, Services and PodGroups labelled `LABEL.trainingJob`, a keyed work queue (one reconcile in flight
 * per job; requeue after the delay reconcile asks for), and the apply step: status first (JSON merge patch of the
 * status subresource with a resourceVersion precondition, so a stale cache can never count a restart twice), then
 * the actions in order, consecutive actions of one kind concurrently.
 *
 * After applying, a job waits until the watch shows what it created and deleted ("expectations", as in
 * client-go's controllers) before it is reconciled again, so a slow watch never looks like a vanished replica.
 */
import type { KubeClient } from '../kube/client.ts';
import { KubeApiError } from '../kube/client.ts';
import { modelFromProduct } from '../kube/labels.ts';
import { objectKey, Reflector } from '../kube/reflector.ts';
import { withDefaults } from '../api/validate.ts';
import type { TrainingJobStatus } from '../api/schema/training-job.ts';
import type { ObjectMeta, PodGroupObject, PodObject, ServiceObject } from './kube-objects.ts';
import { DEFAULT_CONTROLLER_CONFIG, type Action, type ApplyError, type ControllerConfig, type ReconcileResult, type TrainingJobObject } from './training-job/model.ts';
import { API_GROUP_VERSION, API_PATH, FINALIZER, KIND, LABEL } from '../api/wire.ts';
import { reconcileTrainingJob } from './training-job/reconcile.ts';
import { WorkQueue } from './work-queue.ts';

export interface ControllerOptions {
  readonly log?: (m: string) => void;
  /** Wall clock in ms (default Date.now); reconcile sees time only through it. */
  readonly clock?: () => number;
  /** Overrides of the controller defaults (backoff, resize cooldown, placeholder image). */
  readonly config?: Partial<ControllerConfig>;
  /** When given, only the leader reconciles (the others keep their caches warm). */
  readonly isLeader?: () => boolean;
  /** Jobs reconciled at once. */
  readonly concurrency?: number;
}

export interface Controllers {
  stop(): Promise<void>;
}

const GROUP_PATH = API_PATH;
const EXPECTATION_TIMEOUT_MS = 15_000;
const CRD_RETRY_MS = 5_000;

interface Expectation {
  readonly created: ReadonlySet<string>;
  readonly deletedUids: ReadonlySet<string>;
  readonly deadline: number;
}

type Keyed = { metadata?: ObjectMeta };

/** Newer-or-same by resourceVersion when both are numbers (etcd revisions); else trust the newcomer. */
function notOlder(incoming: Keyed, existing: Keyed | undefined): boolean {
  const a = Number(incoming.metadata?.resourceVersion);
  const b = Number(existing?.metadata?.resourceVersion);
  return existing === undefined || !Number.isFinite(a) || !Number.isFinite(b) || a >= b;
}

/** Top-level merge patch from `from` to `to` (removed keys become null). */
export function statusPatch(from: TrainingJobStatus, to: TrainingJobStatus): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  const a = from as Record<string, unknown>;
  const b = to as Record<string, unknown>;
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (JSON.stringify(a[k]) !== JSON.stringify(b[k])) patch[k] = b[k] ?? null;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}

class Index<T extends Keyed> {
  private readonly byJob = new Map<string, Map<string, T>>();
  private readonly jobOf = new Map<string, string>();

  constructor(private readonly onChange: (jobKey: string) => void) {}

  upsert(obj: T): void {
    const key = objectKey(obj);
    const label = obj.metadata?.labels?.[LABEL.trainingJob];
    const prev = this.jobOf.get(key);
    if (prev !== undefined) this.byJob.get(prev)?.delete(key);
    if (label === undefined) {
      this.jobOf.delete(key);
      if (prev !== undefined) this.onChange(prev);
      return;
    }
    const jobKey = `${obj.metadata?.namespace ?? 'default'}/${label}`;
    let m = this.byJob.get(jobKey);
    if (m === undefined) this.byJob.set(jobKey, (m = new Map()));
    m.set(key, obj);
    this.jobOf.set(key, jobKey);
    if (prev !== undefined && prev !== jobKey) this.onChange(prev);
    this.onChange(jobKey);
  }

  remove(obj: T): void {
    const key = objectKey(obj);
    const jobKey = this.jobOf.get(key);
    if (jobKey === undefined) return;
    this.jobOf.delete(key);
    this.byJob.get(jobKey)?.delete(key);
    if (this.byJob.get(jobKey)?.size === 0) this.byJob.delete(jobKey);
    this.onChange(jobKey);
  }

  of(jobKey: string): T[] {
    return [...(this.byJob.get(jobKey)?.values() ?? [])];
  }
}

class TrainingJobRunner {
  private readonly jobs = new Map<string, TrainingJobObject>();
  private readonly pods: Index<PodObject>;
  private readonly services: Index<ServiceObject>;
  private readonly groups: Index<PodGroupObject>;
  private readonly expectations = new Map<string, Expectation>();
  private readonly lastErrors = new Map<string, ApplyError[]>();
  private readonly errorStreak = new Map<string, number>();
  private readonly queue: WorkQueue;
  private readonly reflectors: Reflector<Keyed>[] = [];
  private readonly retryTimers = new Set<ReturnType<typeof setTimeout>>();
  private readonly cfg: ControllerConfig;
  private readonly log: (m: string) => void;
  private readonly clock: () => number;
  private synced = false;
  private stopped = false;
  private wasLeader = false;
  private leaderTimer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: ControllerOptions,
  ) {
    this.log = opts.log ?? (() => undefined);
    this.clock = opts.clock ?? (() => Date.now());
    this.cfg = { ...DEFAULT_CONTROLLER_CONFIG, gpuModelAliases: (m) => [modelFromProduct(m)], ...opts.config };
    const enqueue = (k: string): void => this.queue.add(k);
    this.pods = new Index(enqueue);
    this.services = new Index(enqueue);
    this.groups = new Index(enqueue);
    this.queue = new WorkQueue((k) => this.process(k), opts.concurrency ?? 4, (k, e) => this.log(`trainingjob ${k}: ${(e as Error).stack ?? String(e)}`));
  }

  async start(): Promise<void> {
    const sel = { labelSelector: LABEL.trainingJob };
    const owned = <T extends Keyed>(what: string, path: string, index: Index<T>): Reflector<T> =>
      new Reflector<T>(this.client, path, { add: (o) => index.upsert(o), update: (o) => index.upsert(o), delete: (o) => index.remove(o), error: (e) => this.log(`${what} watch: ${e.message}`) }, sel);
    const pods = owned('pods', '/api/v1/pods', this.pods);
    const services = owned('services', '/api/v1/services', this.services);
    const groups = owned('podgroups', `${GROUP_PATH}/podgroups`, this.groups);
    const jobs = new Reflector<TrainingJobObject>(this.client, `${GROUP_PATH}/trainingjobs`, {
      add: (j) => this.upsertJob(j),
      update: (j) => this.upsertJob(j),
      delete: (j) => {
        this.jobs.delete(objectKey(j));
        this.expectations.delete(objectKey(j));
        this.lastErrors.delete(objectKey(j));
        this.errorStreak.delete(objectKey(j));
      },
      error: (e) => this.log(`trainingjobs watch: ${e.message}`),
    });
    this.reflectors.push(pods as Reflector<Keyed>, services as Reflector<Keyed>, groups as Reflector<Keyed>, jobs as Reflector<Keyed>);
    // Owned objects first: a job must never be reconciled against an empty pod cache.
    await Promise.all([this.startReflector(pods, 'pods'), this.startReflector(services, 'services'), this.startReflector(groups, 'podgroups')]);
    await this.startReflector(jobs, 'trainingjobs');
    if (this.opts.isLeader !== undefined) {
      this.leaderTimer = setInterval(() => {
        const leading = this.opts.isLeader?.() ?? true;
        if (leading && !this.wasLeader) for (const k of this.jobs.keys()) this.queue.add(k);
        this.wasLeader = leading;
      }, 1000);
    }
  }

  /** Lists once; without the CRD (404) keeps retrying in the background so that the rest still runs. */
  private async startReflector(r: Reflector<Keyed> | Reflector<TrainingJobObject>, what: string): Promise<void> {
    try {
      await r.start();
      if (what === 'trainingjobs') this.markSynced();
    } catch (e) {
      if (this.stopped) return;
      this.log(`${what}: ${(e as Error).message}; retrying in ${CRD_RETRY_MS / 1000}s`);
      const t = setTimeout(() => {
        this.retryTimers.delete(t);
        void this.startReflector(r, what);
      }, CRD_RETRY_MS);
      this.retryTimers.add(t);
    }
  }

  private markSynced(): void {
    this.synced = true;
    for (const k of this.jobs.keys()) this.queue.add(k);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.leaderTimer !== undefined) clearInterval(this.leaderTimer);
    for (const t of this.retryTimers) clearTimeout(t);
    for (const r of this.reflectors) r.stop();
    await this.queue.stop();
  }

  private upsertJob(j: TrainingJobObject): void {
    const key = objectKey(j);
    if (!notOlder(j, this.jobs.get(key))) return;
    this.jobs.set(key, j);
    this.queue.add(key);
  }

  private expectationsMet(key: string): boolean {
    const e = this.expectations.get(key);
    if (e === undefined) return true;
    const pods = this.pods.of(key);
    const names = new Set(pods.map((p) => p.metadata.name));
    const ok = [...e.created].every((n) => names.has(n)) && pods.every((p) => !e.deletedUids.has(p.metadata.uid ?? '') || p.metadata.deletionTimestamp !== undefined);
    if (ok || performance.now() >= e.deadline) {
      if (!ok) this.log(`trainingjob ${key}: the watch did not confirm the last changes within ${EXPECTATION_TIMEOUT_MS / 1000}s; going on`);
      this.expectations.delete(key);
      return true;
    }
    return false;
  }

  private async process(key: string): Promise<void> {
    if (this.stopped || !this.synced) return;
    if (this.opts.isLeader !== undefined && !this.opts.isLeader()) return;
    const raw = this.jobs.get(key);
    if (raw === undefined) return;
    if (!this.expectationsMet(key)) {
      this.queue.addAfter(key, 500);
      return;
    }
    const job = withDefaults('TrainingJob', raw) as TrainingJobObject;
    const errors = this.lastErrors.get(key);
    const res = reconcileTrainingJob(
      { job, pods: this.pods.of(key), services: this.services.of(key), podGroups: this.groups.of(key), nowMs: this.clock(), ...(errors === undefined ? {} : { lastErrors: errors }) },
      this.cfg,
    );
    await this.apply(key, raw, res);
  }

  private jobPath(job: TrainingJobObject): string {
    return `${GROUP_PATH}/namespaces/${job.metadata.namespace ?? 'default'}/trainingjobs/${job.metadata.name ?? ''}`;
  }

  private async apply(key: string, job: TrainingJobObject, res: ReconcileResult): Promise<void> {
    const ns = job.metadata.namespace ?? 'default';
    if (res.status !== undefined) {
      const patch = statusPatch(job.status ?? {}, res.status);
      if (patch !== undefined) {
        try {
          const updated = await this.client.mergePatch<TrainingJobObject>(`${this.jobPath(job)}/status`, { metadata: { resourceVersion: job.metadata.resourceVersion }, status: patch });
          if (res.status.phase !== job.status?.phase) this.log(`trainingjob ${key}: ${job.status?.phase ?? '(new)'} → ${res.status.phase ?? '?'}`);
          this.upsertJob(updated);
        } catch (e) {
          // 409: our copy is stale; the watch brings the new one and with it another reconcile.
          if (e instanceof KubeApiError && e.status === 409) this.queue.addAfter(key, 200);
          else if (!(e instanceof KubeApiError && e.status === 404)) this.failed(key, [{ action: 'writeStatus', status: e instanceof KubeApiError ? e.status : 0, reason: 'StatusWriteFailed', message: (e as Error).message }]);
          return;
        }
      }
    }
    const errors: ApplyError[] = [];
    const created = new Set<string>();
    const deleted = new Set<string>();
    const groups: Action[][] = [];
    for (const a of res.actions) {
      const last = groups[groups.length - 1];
      if (last !== undefined && last[0]?.kind === a.kind) last.push(a);
      else groups.push([a]);
    }
    for (const group of groups) {
      await Promise.all(
        group.map(async (a) => {
          try {
            await this.act(ns, job, a);
            if (a.kind === 'createPod') created.add(a.pod.metadata.name ?? '');
            if (a.kind === 'deletePod') deleted.add(a.uid);
          } catch (e) {
            if (a.kind === 'event') {
              this.log(`trainingjob ${key}: event ${a.reason}: ${(e as Error).message}`);
              return;
            }
            const err = e instanceof KubeApiError ? e : undefined;
            if (a.kind.startsWith('create') || a.kind === 'applyPodGroup') {
              if (err?.status === 409 && !(a.kind === 'applyPodGroup' && a.exists)) return; // already there
            } else if (err?.status === 404) return; // already gone
            if (err?.status === 409 && (a.kind === 'addFinalizer' || a.kind === 'removeFinalizer')) {
              this.queue.addAfter(key, 200);
              return;
            }
            errors.push({ action: a.kind, ...(actionName(a) === undefined ? {} : { name: actionName(a) as string }), status: err?.status ?? 0, reason: err?.reason || 'Error', message: err === undefined ? (e as Error).message : err.message.replace(/^\S+ \S+: \d+ \S*: /, '') });
          }
        }),
      );
    }
    if (created.size > 0 || deleted.size > 0) this.expectations.set(key, { created, deletedUids: deleted, deadline: performance.now() + EXPECTATION_TIMEOUT_MS });
    if (errors.length > 0) this.failed(key, errors);
    else {
      this.lastErrors.delete(key);
      this.errorStreak.delete(key);
    }
    // Long waits (deadlines, TTLs of days) are re-evaluated hourly: setTimeout cannot hold more than ~24 days.
    if (res.requeueAfterMs !== undefined) this.queue.addAfter(key, Math.min(res.requeueAfterMs + 20, 3_600_000));
  }

  /** Keeps the errors for the next reconcile (status shows them) and retries with backoff (1 s doubling to 60 s). */
  private failed(key: string, errors: ApplyError[]): void {
    for (const e of errors) this.log(`trainingjob ${key}: ${e.action} ${e.name ?? ''}: ${e.status} ${e.message}`);
    this.lastErrors.set(key, errors);
    const n = (this.errorStreak.get(key) ?? 0) + 1;
    this.errorStreak.set(key, n);
    this.queue.addAfter(key, Math.min(1000 * 2 ** (n - 1), 60_000));
  }

  private async act(ns: string, job: TrainingJobObject, a: Action): Promise<void> {
    const name = job.metadata.name ?? '';
    switch (a.kind) {
      case 'addFinalizer':
      case 'removeFinalizer': {
        const have = job.metadata.finalizers ?? [];
        const finalizers = a.kind === 'addFinalizer' ? [...have.filter((f) => f !== FINALIZER.trainingJobCleanup), FINALIZER.trainingJobCleanup] : have.filter((f) => f !== FINALIZER.trainingJobCleanup);
        const updated = await this.client.mergePatch<TrainingJobObject>(this.jobPath(job), { metadata: { resourceVersion: job.metadata.resourceVersion, finalizers } });
        this.upsertJob(updated);
        return;
      }
      case 'createPod':
        await this.client.post(`/api/v1/namespaces/${ns}/pods`, a.pod);
        return;
      case 'deletePod':
        await this.client.request('DELETE', `/api/v1/namespaces/${ns}/pods/${a.name}`, { body: { preconditions: { uid: a.uid } } });
        return;
      case 'createService':
        await this.client.post(`/api/v1/namespaces/${ns}/services`, a.service);
        return;
      case 'deleteService':
        await this.client.request('DELETE', `/api/v1/namespaces/${ns}/services/${a.name}`, { body: { preconditions: { uid: a.uid } } });
        return;
      case 'applyPodGroup': {
        const pg = a.podGroup;
        if (!a.exists) {
          await this.client.post(`${GROUP_PATH}/namespaces/${ns}/podgroups`, pg);
          return;
        }
        const spec = pg.spec;
        await this.client.mergePatch(`${GROUP_PATH}/namespaces/${ns}/podgroups/${pg.metadata.name ?? ''}`, {
          spec: {
            minMember: spec?.minMember,
            queue: spec?.queue ?? null,
            priorityClassName: spec?.priorityClassName ?? null,
            topology: spec?.topology === undefined ? null : { required: spec.topology.required ?? null, preferred: spec.topology.preferred ?? null },
          },
        });
        return;
      }
      case 'deletePodGroup':
        await this.client.request('DELETE', `${GROUP_PATH}/namespaces/${ns}/podgroups/${a.name}`, { body: { preconditions: { uid: a.uid } } });
        return;
      case 'deleteJob':
        await this.client.request('DELETE', this.jobPath(job), { body: { preconditions: { uid: job.metadata.uid } } });
        return;
      case 'event': {
        const now = new Date(this.clock()).toISOString();
        await this.client.post(`/api/v1/namespaces/${ns}/events`, {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { generateName: `${name}.`, namespace: ns },
          involvedObject: { apiVersion: API_GROUP_VERSION, kind: KIND.trainingJob, name, namespace: ns, uid: job.metadata.uid },
          reason: a.reason,
          message: a.message.slice(0, 1000),
          type: a.type,
          source: { component: 'sits-trainingjob-controller' },
          reportingComponent: 'sits-trainingjob-controller',
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

function actionName(a: Action): string | undefined {
  switch (a.kind) {
    case 'createPod':
      return a.pod.metadata.name;
    case 'createService':
      return a.service.metadata.name;
    case 'applyPodGroup':
      return a.podGroup.metadata.name;
    case 'deletePod':
    case 'deleteService':
    case 'deletePodGroup':
      return a.name;
    default:
      return undefined;
  }
}

/**
 * Starts the workload controllers (today: TrainingJob) against the API server behind `client`. Resolves once the
 * caches are filled (or, when a CRD is missing, once that has been logged; the watch then keeps retrying).
 */
export async function startControllers(client: KubeClient, opts: ControllerOptions = {}): Promise<Controllers> {
  const runner = new TrainingJobRunner(client, opts);
  await runner.start();
  return { stop: () => runner.stop() };
}
