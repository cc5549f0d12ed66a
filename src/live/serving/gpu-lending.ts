/**
 * Live GPU lending (issue 12, Deliver 5; ADR 0131): an InferenceService replica that the scheduler declared
 * unschedulable while the cluster's GPUs are all held borrows whole workers of an elastic TrainingJob, and the job
 * gets them back once GPUs are spare again and its cooldown has passed.
 *
 * Who lends and how much is the core's decision (core/actions/lending.ts, shared with the serving simulator); this
 * module reads the cluster into that decision's inputs (`readLendingView`, `decideLending`: pure) and carries the
 * outcome out (`startGpuLending`: I/O). The lender writes a TrainingJob's desired size — spec.replicas, the field
 * its /scale subresource and elastic resizing use — together with the loan record in its annotations, in one merge
 * patch with a resourceVersion precondition: the record and the size never disagree, and a restarted lender
 * (or a new leader) goes on from what the objects say. The TrainingJob controller does the resize itself: a
 * smaller spec.replicas restarts the gang with fewer workers from its newest checkpoint; a larger one grows it
 * through its placeholder probes (ADR 0083 and the elastic rules of training-job/reconcile.ts).
 *
 * Annotations on the TrainingJob (the loan's state):
 * - `lent-replicas`: workers taken below the job's own size (spec.replicas is that much lower);
 * - `lent-to`: the InferenceService (namespace/name) it last lent to; `lent-at`: the last resize by the lender
 *   (the give-back cooldown runs from it);
 * - `lend-pending`: `<workers>@<RFC 3339>` while the job is asked for a checkpoint (request-checkpoint
 *   `Lending/<ms>`) and shrinks once a checkpoint is Ready after that time. A preemptible job
 *   (annotation `preemptible: "true"`) shrinks at once.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { trainingJobGpusPerReplica, type TrainingJob } from '../../api/schema/training-job.ts';
import type { Queue } from '../../api/schema/queue.ts';
import { withDefaults } from '../../api/validate.ts';
import { ANNOTATION, API_GROUP, API_GROUP_VERSION, GPU_RESOURCE, LABEL, REASON } from '../../api/wire.ts';
import { giveBackWorkers, planLend, type Lender, type ReclaimPolicy } from '../../core/actions/lending.ts';
import type { Clock } from '../../core/ports.ts';
import { isStatus, type KubeClient } from '../../kube/client/client.ts';
import { runPeriodically } from '../periodic.ts';

const API = `/apis/${API_GROUP_VERSION}`;

export const LENDING_ANNOTATION = {
  lentReplicas: `${API_GROUP}/lent-replicas`,
  lentTo: `${API_GROUP}/lent-to`,
  lentAt: `${API_GROUP}/lent-at`,
  lendPending: `${API_GROUP}/lend-pending`,
} as const;

/** Warning event on a waiting replica that no job lends to (the message says why each candidate refused). */
export const NO_LENDER_REASON = 'NoGpuLender';

export interface GpuLendingOptions {
  /** Between two passes (default 5000). */
  readonly intervalMs?: number;
  /** A job gets lent workers back no sooner than this after the lender's last resize of it (default 120 s). */
  readonly cooldownMs?: number;
  readonly clock?: Clock;
  readonly log?: (m: string) => void;
  readonly isLeader?: () => boolean;
}

type Obj<T> = T & {
  readonly metadata: {
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
    readonly annotations?: Readonly<Record<string, string>>;
  };
};
export type JobObject = Obj<TrainingJob> & { readonly metadata: TrainingJob['metadata'] & { readonly resourceVersion?: string; readonly uid?: string } };
type QueueObject = Queue & { readonly metadata: Queue['metadata'] };

/** A TrainingJob as the lender sees it. */
export interface JobView {
  readonly id: string;
  readonly namespace: string;
  readonly name: string;
  readonly resourceVersion: string;
  readonly queue: string;
  readonly priority: number;
  readonly specReplicas: number;
  /** minReplicas; undefined: not elastic, never lends. */
  readonly minReplicas: number | undefined;
  /** The running gang's size (status.currentReplicas). */
  readonly currentReplicas: number;
  readonly gpusPerReplica: number;
  /** Phase Running with the gang of spec.replicas (no resize in flight). */
  readonly settled: boolean;
  readonly running: boolean;
  readonly preemptible: boolean;
  readonly checkpoints: boolean;
  readonly lentReplicas: number;
  readonly lentAtMs: number | undefined;
  readonly pending: { readonly workers: number; readonly requestedMs: number } | undefined;
  /** The newest Ready checkpoint's time. */
  readonly lastReadyMs: number | undefined;
  /** GPUs its pods still hold beyond spec.replicas (a shrink whose old pods are not gone yet). */
  readonly releasingGpus: number;
  /** GPUs its own unbound replicas wait for (a new gang being placed). */
  readonly waitingGpus: number;
}

export interface WaitingReplica {
  readonly pod: string;
  readonly namespace: string;
  readonly uid: string;
  /** namespace/name of the InferenceService. */
  readonly service: string;
  readonly queue: string;
  readonly priority: number;
  readonly gpus: number;
}

export interface LendingView {
  /** GPUs allocatable on schedulable nodes, less those bound pods hold. */
  readonly freeGpus: number;
  readonly waiting: readonly WaitingReplica[];
  readonly jobs: readonly JobView[];
  readonly reclaim: (queue: string) => ReclaimPolicy;
  /** GPUs the queue's bound pods hold above its guaranteed GPUs; undefined: no guarantee. */
  readonly lendable: (queue: string) => number | undefined;
}

export type LendingAction =
  /** Ask for a checkpoint and record the loan as pending. */
  | { readonly kind: 'requestCheckpoint'; readonly job: JobView; readonly workers: number; readonly borrower: string }
  | { readonly kind: 'shrink'; readonly job: JobView; readonly workers: number; readonly to: number; readonly borrower: string }
  /** The replica that asked no longer waits: forget the pending loan (no resize happens). */
  | { readonly kind: 'cancel'; readonly job: JobView }
  | { readonly kind: 'giveBack'; readonly job: JobView; readonly workers: number; readonly to: number }
  | { readonly kind: 'refused'; readonly replica: WaitingReplica; readonly message: string };

const time = (s: string | undefined): number | undefined => {
  if (s === undefined) return undefined;
  const t = Date.parse(s);
  return Number.isFinite(t) ? t : undefined;
};
const count = (v: unknown): number => {
  const n = Number(v ?? 0);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
};

/** Whole GPUs a pod asks for (limits, else requests, of its containers). */
export function podGpus(p: V1Pod): number {
  let n = 0;
  for (const c of p.spec?.containers ?? []) n += count(c.resources?.limits?.[GPU_RESOURCE] ?? c.resources?.requests?.[GPU_RESOURCE]);
  return n;
}

const isBound = (p: V1Pod): boolean => (p.spec?.nodeName ?? '') !== '';
const isFinished = (p: V1Pod): boolean => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
const unschedulable = (p: V1Pod): boolean =>
  !isBound(p) &&
  p.metadata?.annotations?.[ANNOTATION.assignedNode] === undefined &&
  (p.status?.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === REASON.unschedulable);

function parsePending(v: string | undefined): JobView['pending'] {
  const m = /^(\d+)@(.+)$/.exec(v ?? '');
  const at = time(m?.[2]);
  return m === null || at === undefined ? undefined : { workers: Number(m[1]), requestedMs: at };
}

/** The cluster as the lending decision reads it. Pure. */
export function readLendingView(nodes: readonly V1Node[], pods: readonly V1Pod[], jobs: readonly JobObject[], queues: readonly QueueObject[]): LendingView {
  let capacity = 0;
  for (const n of nodes) if (n.spec?.unschedulable !== true) capacity += count(n.status?.allocatable?.[GPU_RESOURCE]);
  let held = 0;
  const queueHeld = new Map<string, number>();
  for (const p of pods) {
    if (!isBound(p) || isFinished(p)) continue;
    const g = podGpus(p);
    held += g;
    const q = p.metadata?.labels?.[LABEL.queue] ?? 'default';
    queueHeld.set(q, (queueHeld.get(q) ?? 0) + g);
  }
  const waiting: WaitingReplica[] = pods
    .filter(
      (p) => p.metadata?.labels?.[LABEL.inferenceService] !== undefined && p.metadata.deletionTimestamp === undefined && unschedulable(p) && podGpus(p) > 0,
    )
    .sort(
      (a, b) =>
        String(a.metadata?.creationTimestamp ?? '').localeCompare(String(b.metadata?.creationTimestamp ?? '')) ||
        (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
    )
    .map((p) => ({
      pod: p.metadata?.name ?? '',
      namespace: p.metadata?.namespace ?? 'default',
      uid: p.metadata?.uid ?? '',
      service: `${p.metadata?.namespace ?? 'default'}/${p.metadata?.labels?.[LABEL.inferenceService] ?? ''}`,
      queue: p.metadata?.labels?.[LABEL.queue] ?? 'default',
      priority: p.spec?.priority ?? 0,
      gpus: podGpus(p),
    }));
  const views: JobView[] = jobs.map((raw) => {
    const j = withDefaults('TrainingJob', raw) as JobObject;
    const ns = j.metadata.namespace ?? 'default';
    const name = j.metadata.name ?? '';
    const ann = j.metadata.annotations ?? {};
    const mine = pods.filter(
      (p) => p.metadata?.namespace === ns && p.metadata.labels?.[LABEL.trainingJob] === name && p.metadata.labels[LABEL.role] === 'replica',
    );
    const g = trainingJobGpusPerReplica(j.spec);
    const holding = mine.filter((p) => isBound(p) && !isFinished(p)).length;
    const current = j.status?.currentReplicas ?? j.spec.replicas;
    const running = j.status?.phase === 'Running';
    return {
      id: `${ns}/${name}`,
      namespace: ns,
      name,
      resourceVersion: j.metadata.resourceVersion ?? '',
      queue: j.spec.queue ?? 'default',
      priority: mine.length === 0 ? 0 : Math.max(...mine.map((p) => p.spec?.priority ?? 0)),
      specReplicas: j.spec.replicas,
      minReplicas: j.spec.minReplicas,
      currentReplicas: current,
      gpusPerReplica: g,
      running,
      settled: running && current === j.spec.replicas,
      preemptible: ann[ANNOTATION.preemptible] === 'true',
      checkpoints: j.spec.checkpoint !== undefined,
      lentReplicas: count(ann[LENDING_ANNOTATION.lentReplicas]),
      lentAtMs: time(ann[LENDING_ANNOTATION.lentAt]),
      pending: parsePending(ann[LENDING_ANNOTATION.lendPending]),
      lastReadyMs: time(j.status?.checkpoint?.lastReady?.readyTime ?? j.status?.lastCheckpointTime),
      releasingGpus: Math.max(0, holding - j.spec.replicas) * g,
      waitingGpus: mine.filter((p) => !isBound(p) && p.metadata?.deletionTimestamp === undefined).length * g,
    };
  });
  const byName = new Map(queues.map((q) => [q.metadata.name ?? '', withDefaults('Queue', q) as QueueObject]));
  return {
    freeGpus: capacity - held,
    waiting,
    jobs: views,
    reclaim: (q) => byName.get(q)?.spec.preemption.reclaimWithinCohort ?? 'Any',
    lendable: (q) => {
      const g = byName.get(q)?.spec.resources?.find((r) => r.name === GPU_RESOURCE)?.guaranteed;
      return g === undefined ? undefined : (queueHeld.get(q) ?? 0) - count(g);
    },
  };
}

/**
 * One pass of the lender over the cluster. Pure.
 * - GPUs coming free (old pods of a shrink, pending loans) and GPUs a job's own new gang waits for are counted, so
 *   that one waiting replica never makes two jobs shrink, and a restarting gang is not mistaken for spare GPUs.
 * - A pending loan shrinks once the job has a Ready checkpoint after the request (or became preemptible); it is
 *   forgotten when no replica waits any more.
 * - Lent workers come back when no replica waits, the job runs settled, and `cooldownMs` has passed since the
 *   lender last resized it: as many whole workers as the spare GPUs hold.
 */
export function decideLending(v: LendingView, nowMs: number, cooldownMs: number): LendingAction[] {
  const actions: LendingAction[] = [];
  const coming = v.jobs.reduce((s, j) => s + j.releasingGpus + (j.pending === undefined ? 0 : j.pending.workers * j.gpusPerReplica), 0);
  const effectiveFree = v.freeGpus - v.jobs.reduce((s, j) => s + j.waitingGpus, 0);
  // Pending loans first: they either complete, or go when nobody waits.
  for (const j of v.jobs) {
    if (j.pending === undefined) continue;
    if (v.waiting.length === 0) actions.push({ kind: 'cancel', job: j });
    else if (j.preemptible || (j.lastReadyMs !== undefined && j.lastReadyMs >= j.pending.requestedMs)) {
      const to = Math.max(j.minReplicas ?? j.specReplicas, j.currentReplicas - j.pending.workers);
      if (to < j.specReplicas) actions.push({ kind: 'shrink', job: j, workers: j.specReplicas - to, to, borrower: v.waiting[0]?.service ?? '' });
    }
  }
  if (v.waiting.length > 0) {
    let available = effectiveFree + coming;
    const promised = new Map<string, number>();
    for (const r of v.waiting) {
      if (available >= r.gpus) {
        available -= r.gpus;
        continue;
      }
      const need = r.gpus - Math.max(0, available);
      const lenders: Lender[] = v.jobs
        .filter((j) => j.minReplicas !== undefined && j.running && j.pending === undefined && j.gpusPerReplica > 0)
        .map((j) => ({
          id: j.id,
          queue: j.queue,
          priority: j.priority,
          workers: j.currentReplicas - (promised.get(j.id) ?? 0),
          minWorkers: j.minReplicas as number,
          gpusPerWorker: j.gpusPerReplica,
          preemptible: j.preemptible,
          checkpoints: j.checkpoints,
          ...(v.lendable(j.queue) === undefined ? {} : { queueLendableGpus: (v.lendable(j.queue) as number) - (promised.get(j.id) ?? 0) * j.gpusPerReplica }),
        }));
      const d = planLend({ id: r.service, queue: r.queue, priority: r.priority, gpus: need, reclaim: v.reclaim(r.queue) }, lenders);
      if (!d.ok) {
        actions.push({ kind: 'refused', replica: r, message: `replica ${r.pod} waits for ${r.gpus} GPU(s): ${d.message}` });
        available = 0;
        continue;
      }
      const j = v.jobs.find((x) => x.id === d.lender) as JobView;
      promised.set(j.id, (promised.get(j.id) ?? 0) + d.workers);
      available += d.gpus - need;
      if (d.when === 'now')
        actions.push({ kind: 'shrink', job: j, workers: d.workers, to: j.currentReplicas - (promised.get(j.id) ?? 0), borrower: r.service });
      else actions.push({ kind: 'requestCheckpoint', job: j, workers: d.workers, borrower: r.service });
    }
    return mergeShrinks(actions);
  }
  let spare = effectiveFree;
  for (const j of v.jobs) {
    if (j.lentReplicas === 0 || j.pending !== undefined || !j.settled || j.releasingGpus > 0) continue;
    if (j.lentAtMs !== undefined && nowMs - j.lentAtMs < cooldownMs) continue;
    const w = giveBackWorkers({ lentWorkers: j.lentReplicas, gpusPerWorker: j.gpusPerReplica, spareGpus: spare });
    if (w === 0) continue;
    spare -= w * j.gpusPerReplica;
    actions.push({ kind: 'giveBack', job: j, workers: w, to: j.specReplicas + w });
  }
  return actions;
}

/** Two replicas served by one job in one pass are one resize (each resize restarts the gang). */
function mergeShrinks(actions: LendingAction[]): LendingAction[] {
  const out: LendingAction[] = [];
  for (const a of actions) {
    const prev =
      a.kind === 'shrink' || a.kind === 'requestCheckpoint'
        ? out.find((b) => (b.kind === 'shrink' || b.kind === 'requestCheckpoint') && b.kind === a.kind && b.job.id === a.job.id)
        : undefined;
    if (prev === undefined) out.push(a);
    else if (prev.kind === 'shrink' && a.kind === 'shrink')
      out[out.indexOf(prev)] = { ...prev, workers: prev.workers + a.workers, to: Math.min(prev.to, a.to) };
    else if (prev.kind === 'requestCheckpoint' && a.kind === 'requestCheckpoint') out[out.indexOf(prev)] = { ...prev, workers: prev.workers + a.workers };
  }
  return out;
}

/** What the lender did, for tests and `why`. */
export interface LendingRecord {
  readonly atMs: number;
  readonly kind: LendingAction['kind'];
  readonly subject: string;
  readonly message: string;
}

export interface GpuLending {
  tick(): Promise<void>;
  /** The last 100 things done, oldest first. */
  readonly records: readonly LendingRecord[];
  stop(): Promise<void>;
}

export function startGpuLending(client: KubeClient, o: GpuLendingOptions = {}): GpuLending {
  const log = o.log ?? (() => undefined);
  const clock = o.clock ?? { nowMs: () => Date.now() };
  const cooldownMs = o.cooldownMs ?? 120_000;
  const records: LendingRecord[] = [];
  // Pod uid → the refusal last reported on it (an event only when the reason changes).
  const told = new Map<string, string>();

  const record = (kind: LendingAction['kind'], subject: string, message: string): void => {
    records.push({ atMs: clock.nowMs(), kind, subject, message });
    if (records.length > 100) records.shift();
    log(`lending: ${subject}: ${message}`);
  };

  async function event(
    involved: { apiVersion: string; kind: string; namespace: string; name: string; uid?: string },
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): Promise<void> {
    const at = new Date(clock.nowMs()).toISOString();
    await client
      .post(`/api/v1/namespaces/${involved.namespace}/events`, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${involved.name}.`, namespace: involved.namespace },
        involvedObject: involved,
        reason,
        message: message.slice(0, 1000),
        type,
        source: { component: 'sits-lending' },
        reportingComponent: 'sits-lending',
        reportingInstance: 'sits',
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      })
      .catch((e: unknown) => log(`lending: event: ${(e as Error).message}`));
  }

  const jobRef = (j: JobView) => ({ apiVersion: API_GROUP_VERSION, kind: 'TrainingJob', namespace: j.namespace, name: j.name });

  /** One merge patch with the resourceVersion it was decided on: a conflict waits for the next pass. */
  async function patchJob(j: JobView, patch: { annotations: Record<string, string | null>; replicas?: number }): Promise<boolean> {
    try {
      await client.mergePatch(`${API}/namespaces/${j.namespace}/trainingjobs/${j.name}`, {
        metadata: { resourceVersion: j.resourceVersion, annotations: patch.annotations },
        ...(patch.replicas === undefined ? {} : { spec: { replicas: patch.replicas } }),
      });
      return true;
    } catch (e) {
      if (!isStatus(e, 409)) log(`lending: patch ${j.id}: ${(e as Error).message}`);
      return false;
    }
  }

  async function apply(a: LendingAction, nowMs: number): Promise<void> {
    const at = new Date(nowMs).toISOString();
    switch (a.kind) {
      case 'requestCheckpoint': {
        const msg = `asked for a checkpoint: ${a.workers} worker(s) (${a.workers * a.job.gpusPerReplica} GPU(s)) go to ${a.borrower} at its boundary`;
        if (
          await patchJob(a.job, { annotations: { [LENDING_ANNOTATION.lendPending]: `${a.workers}@${at}`, [ANNOTATION.requestCheckpoint]: `Lending/${nowMs}` } })
        ) {
          record(a.kind, a.job.id, msg);
          await event(jobRef(a.job), 'Normal', 'GpuLoanPending', msg);
        }
        return;
      }
      case 'shrink': {
        const lent = a.job.lentReplicas + (a.job.specReplicas - a.to);
        const msg = `lends ${a.job.specReplicas - a.to} worker(s) (${(a.job.specReplicas - a.to) * a.job.gpusPerReplica} GPU(s)) to ${a.borrower}: replicas ${a.job.specReplicas} → ${a.to}${a.job.preemptible ? ' (preemptible: at once)' : ' (at its checkpoint boundary)'}`;
        const annotations = {
          [LENDING_ANNOTATION.lentReplicas]: String(lent),
          [LENDING_ANNOTATION.lentTo]: a.borrower,
          [LENDING_ANNOTATION.lentAt]: at,
          [LENDING_ANNOTATION.lendPending]: null,
        };
        if (await patchJob(a.job, { annotations, replicas: a.to })) {
          record(a.kind, a.job.id, msg);
          await event(jobRef(a.job), 'Normal', 'GpusLent', msg);
        }
        return;
      }
      case 'cancel':
        if (await patchJob(a.job, { annotations: { [LENDING_ANNOTATION.lendPending]: null } }))
          record(a.kind, a.job.id, 'the pending loan is no longer needed');
        return;
      case 'giveBack': {
        const left = a.job.lentReplicas - a.workers;
        const msg = `gets ${a.workers} worker(s) back: replicas ${a.job.specReplicas} → ${a.to}${left > 0 ? ` (${left} still lent)` : ''}`;
        const annotations = {
          [LENDING_ANNOTATION.lentReplicas]: left > 0 ? String(left) : null,
          [LENDING_ANNOTATION.lentAt]: at,
          ...(left > 0 ? {} : { [LENDING_ANNOTATION.lentTo]: null }),
        };
        if (await patchJob(a.job, { annotations, replicas: a.to })) {
          record(a.kind, a.job.id, msg);
          await event(jobRef(a.job), 'Normal', 'GpusReturned', msg);
        }
        return;
      }
      case 'refused': {
        if (told.get(a.replica.uid) === a.message) return;
        told.set(a.replica.uid, a.message);
        record(a.kind, `${a.replica.namespace}/${a.replica.pod}`, a.message);
        await event(
          { apiVersion: 'v1', kind: 'Pod', namespace: a.replica.namespace, name: a.replica.pod, uid: a.replica.uid },
          'Warning',
          NO_LENDER_REASON,
          a.message,
        );
        return;
      }
    }
  }

  async function tick(): Promise<void> {
    if (o.isLeader !== undefined && !o.isLeader()) return;
    try {
      const [nodes, pods, jobs, queues] = await Promise.all([
        client.get<{ items: V1Node[] }>('/api/v1/nodes'),
        client.get<{ items: V1Pod[] }>('/api/v1/pods'),
        client.get<{ items: JobObject[] }>(`${API}/trainingjobs`),
        client.get<{ items: QueueObject[] }>(`${API}/queues`).catch((e: unknown) => {
          if (isStatus(e, 404)) return { items: [] };
          throw e;
        }),
      ]);
      const view = readLendingView(nodes.items, pods.items, jobs.items, queues.items);
      const waitingUids = new Set(view.waiting.map((w) => w.uid));
      for (const uid of [...told.keys()]) if (!waitingUids.has(uid)) told.delete(uid);
      const nowMs = clock.nowMs();
      for (const a of decideLending(view, nowMs, cooldownMs)) await apply(a, nowMs);
    } catch (e) {
      log(`lending: ${(e as Error).message}`);
    }
  }

  const periodic = runPeriodically(tick, o.intervalMs ?? 5000);
  return {
    tick,
    records,
    stop: () => periodic.stop(),
  };
}
