/**
 * Test helpers for the TrainingJob reconcile: jobs with the apiserver's defaults, and a tiny in-memory "cluster"
 * that applies a ReconcileResult the way the runner would (status, then actions), so multi-step scenarios read as
 * a sequence of observed states. Used by unit tests only.
 */
import { withDefaults } from '../../api/validate.ts';
import type { PodCondition, PodGroupObject, PodObject, ServiceObject } from '../kube-objects.ts';
import { DEFAULT_CONTROLLER_CONFIG, type Action, type ControllerConfig, type ReconcileResult, type TrainingJobObject } from './model.ts';
import { ANNOTATION, API_GROUP_VERSION, FINALIZER, KIND, LABEL } from '../../api/wire.ts';
import { reconcileTrainingJob } from './reconcile.ts';

export const T0 = Date.parse('2026-11-29T10:00:00Z');

export function makeJob(
  spec: Record<string, unknown>,
  opts: { name?: string; status?: Record<string, unknown>; finalizer?: boolean; deleting?: boolean } = {},
): TrainingJobObject {
  const manifest = {
    apiVersion: API_GROUP_VERSION,
    kind: KIND.trainingJob,
    metadata: {
      name: opts.name ?? 'bert',
      namespace: 'ml',
      uid: 'job-uid',
      resourceVersion: '1',
      generation: 1,
      creationTimestamp: new Date(T0).toISOString(),
      ...(opts.finalizer === false ? {} : { finalizers: [FINALIZER.trainingJobCleanup] }),
      ...(opts.deleting === true ? { deletionTimestamp: new Date(T0).toISOString() } : {}),
    },
    spec: { container: { image: 'pytorch:2.3', command: ['torchrun', 'train.py'] }, ...spec },
    ...(opts.status === undefined ? {} : { status: opts.status }),
  };
  return withDefaults('TrainingJob', manifest) as TrainingJobObject;
}

export interface PodState {
  node?: string;
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  exitCode?: number;
  reason?: string;
  unschedulable?: string;
  assigned?: string;
  /** The scheduler's expected start (annotation ANNOTATION.expectedStart), RFC 3339. */
  expectedStart?: string;
  deleting?: boolean;
  startTime?: number;
}

/** A fake cluster: holds the job and its objects, applies reconcile results, and lets tests play scheduler/kubelet. */
export class FakeCluster {
  job: TrainingJobObject;
  pods = new Map<string, PodObject>();
  services = new Map<string, ServiceObject>();
  groups = new Map<string, PodGroupObject>();
  events: { type: string; reason: string; message: string }[] = [];
  now = T0;
  last: ReconcileResult = { actions: [] };
  deletedJob = false;
  private uid = 0;

  constructor(
    job: TrainingJobObject,
    readonly cfg: ControllerConfig = DEFAULT_CONTROLLER_CONFIG,
  ) {
    this.job = job;
  }

  observe(lastErrors?: Parameters<typeof reconcileTrainingJob>[0]['lastErrors']): ReconcileResult {
    return reconcileTrainingJob(
      {
        job: this.job,
        pods: [...this.pods.values()],
        services: [...this.services.values()],
        podGroups: [...this.groups.values()],
        nowMs: this.now,
        ...(lastErrors === undefined ? {} : { lastErrors }),
      },
      this.cfg,
    );
  }

  /** One reconcile, applied. */
  step(lastErrors?: Parameters<typeof reconcileTrainingJob>[0]['lastErrors']): ReconcileResult {
    const r = this.observe(lastErrors);
    this.apply(r);
    return r;
  }

  /** Reconciles until nothing changes (at most 10 rounds). */
  settle(): ReconcileResult {
    for (let i = 0; i < 10; i++) {
      const before = JSON.stringify([this.job, [...this.pods.values()], [...this.services.values()], [...this.groups.values()]]);
      this.step();
      const after = JSON.stringify([this.job, [...this.pods.values()], [...this.services.values()], [...this.groups.values()]]);
      if (before === after) return this.last;
    }
    throw new Error('reconcile did not settle');
  }

  apply(r: ReconcileResult): void {
    this.last = r;
    if (r.status !== undefined) this.job = { ...this.job, status: r.status };
    for (const a of r.actions) this.act(a);
  }

  private nextUid(kind: string): string {
    return `${kind}-${++this.uid}`;
  }

  private act(a: Action): void {
    const meta = (m: PodObject['metadata']) => ({ ...m, uid: this.nextUid('uid'), creationTimestamp: new Date(this.now).toISOString() });
    switch (a.kind) {
      case 'addFinalizer':
        this.job = { ...this.job, metadata: { ...this.job.metadata, finalizers: [...(this.job.metadata.finalizers ?? []), FINALIZER.trainingJobCleanup] } };
        return;
      case 'removeFinalizer':
        this.job = {
          ...this.job,
          metadata: { ...this.job.metadata, finalizers: (this.job.metadata.finalizers ?? []).filter((f) => f !== FINALIZER.trainingJobCleanup) },
        };
        return;
      case 'createPod':
        if (!this.pods.has(a.pod.metadata.name ?? ''))
          this.pods.set(a.pod.metadata.name ?? '', { ...a.pod, metadata: meta(a.pod.metadata), status: { phase: 'Pending' } });
        return;
      case 'deletePod':
        this.pods.delete(a.name);
        return;
      case 'createService':
        this.services.set(a.service.metadata.name ?? '', { ...a.service, metadata: meta(a.service.metadata) });
        return;
      case 'deleteService':
        this.services.delete(a.name);
        return;
      case 'applyPodGroup': {
        const old = this.groups.get(a.podGroup.metadata.name ?? '');
        this.groups.set(
          a.podGroup.metadata.name ?? '',
          old === undefined
            ? { ...a.podGroup, metadata: meta(a.podGroup.metadata) }
            : { ...old, ...(a.podGroup.spec === undefined ? {} : { spec: a.podGroup.spec }) },
        );
        return;
      }
      case 'deletePodGroup':
        this.groups.delete(a.name);
        return;
      case 'deleteJob':
        this.deletedJob = true;
        return;
      case 'event':
        this.events.push({ type: a.type, reason: a.reason, message: a.message });
        return;
    }
  }

  /** Plays the scheduler and the kubelet on one pod. */
  setPod(name: string, s: PodState): void {
    const p = this.pods.get(name);
    if (p === undefined) throw new Error(`no pod ${name}`);
    const conditions: PodCondition[] =
      s.unschedulable === undefined ? [] : [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: s.unschedulable }];
    if (s.phase === 'Running') conditions.push({ type: 'Ready', status: 'True' });
    const phase = s.phase ?? (s.node === undefined ? 'Pending' : 'Pending');
    this.pods.set(name, {
      ...p,
      metadata: {
        ...p.metadata,
        ...(s.deleting === true ? { deletionTimestamp: new Date(this.now).toISOString() } : {}),
        ...(s.assigned === undefined ? {} : { annotations: { ...p.metadata.annotations, [ANNOTATION.assignedNode]: s.assigned } }),
        ...(s.expectedStart === undefined ? {} : { annotations: { ...p.metadata.annotations, [ANNOTATION.expectedStart]: s.expectedStart } }),
      },
      spec: { ...(p.spec ?? { containers: [] }), ...(s.node === undefined ? {} : { nodeName: s.node }) },
      status: {
        phase,
        conditions,
        ...(s.reason === undefined ? {} : { reason: s.reason }),
        ...(phase === 'Pending' ? {} : { startTime: new Date(s.startTime ?? this.now).toISOString() }),
        ...(s.exitCode === undefined
          ? {}
          : { containerStatuses: [{ name: p.spec?.containers[0]?.name ?? 'trainer', state: { terminated: { exitCode: s.exitCode } } }] }),
      },
    });
  }

  /** Binds and starts every replica pod of the current attempt (nodes n0, n1, ... four per node). */
  runAll(perNode = 4): void {
    const replicas = this.replicaPods();
    replicas.forEach((p, i) => this.setPod(p.metadata.name ?? '', { node: `n${Math.floor(i / perNode)}`, phase: 'Running' }));
  }

  replicaPods(): PodObject[] {
    return [...this.pods.values()]
      .filter((p) => p.metadata.labels?.[LABEL.role] === 'replica')
      .sort((a, b) => Number(a.metadata.labels?.[LABEL.rank]) - Number(b.metadata.labels?.[LABEL.rank]));
  }

  probePods(): PodObject[] {
    return [...this.pods.values()].filter((p) => p.metadata.labels?.[LABEL.role] === 'probe');
  }

  /** A foreign pod (not owned by the job) carrying the job's label. */
  addForeign(pod: PodObject): void {
    this.pods.set(pod.metadata.name ?? '', pod);
  }
}

export const envOf = (p: PodObject | undefined): Record<string, string> =>
  Object.fromEntries((p?.spec?.containers.find((c) => c.name === 'trainer')?.env ?? p?.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));
export const kinds = (r: ReconcileResult): string[] => r.actions.map((a) => a.kind);
export const condition = (job: TrainingJobObject, type: string) => job.status?.conditions?.find((c) => c.type === type);
