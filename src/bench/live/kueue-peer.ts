/**
 * The peer half of issue 32's live bench: the same workload run by Kueue (v0.17, fair sharing on, the same weights)
 * on a dev cluster of fake GPU nodes, its Jobs' pods placed by the real kube-scheduler and created by the Job
 * controller of kube-controller-manager, run by the fake kubelet for `runSeconds`. Measured: each queue's admitted
 * and running GPUs every `sampleEverySec`, preemptions, waits, and from the samples the steady shares and the time
 * to reach them (summariseShares).
 *
 * Quotas, and why: Kueue's fair sharing divides only what is borrowed (a ClusterQueue's usage above its nominal
 * quota, weighted by `spec.fairSharing.weight`), and preempts only workloads of borrowing queues. So every
 * ClusterQueue gets a nominal quota of 0 and the one Cohort holds all the cluster's GPUs as its own nominal quota:
 * everything any queue runs is borrowed from the cohort, and the weights alone decide the split, as SITS's weights
 * do. (Quotas split by weight would make Kueue's shares the quotas by construction and leave the weights to the
 * idle remainder.) `reclaimWithinCohort: Any` lets a queue below its fair share preempt one above it, which Kueue's
 * fair sharing requires to preempt at all; within a queue nothing is preempted (`withinClusterQueue: Never`).
 * Jobs go in already suspended with the queue-name label (src/harness/kueue.ts: no webhooks here).
 */
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';

import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { GPU_RESOURCE } from '../../api/wire.ts';
import { mean, percentiles } from '../../core/stats.ts';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import { RUN_SECONDS_ANNOTATION } from '../../harness/fake-kubelet.ts';
import { KUEUE_API, QUEUE_NAME_LABEL, startKueue, type FairSharingStrategy, type RunningKueue } from '../../harness/kueue.ts';
import { waitFor } from '../../harness/e2e-kit.ts';
import type { KubeClient } from '../../kube/client/client.ts';
import { Reflector } from '../../kube/client/reflector.ts';
import type { WorkloadItem, WorkloadQueue } from './workload.ts';

/** The jobs and queues `sits bench live` replays (workload.ts), one type for both sides. */
export type PeerJob = WorkloadItem;
export type PeerQueue = WorkloadQueue;

export interface PeerWorkload {
  readonly jobs: readonly PeerJob[];
  readonly queues: readonly PeerQueue[];
  readonly nodes: number;
  /** Node preset (core/model/presets.ts). Default 'l4x8' (8 GPUs a node). */
  readonly shape?: string;
}

export interface KueuePeerOptions {
  /**
   * Seconds to sample for, from the start of the run. Default: until every job has finished; the steady window is
   * then the drain at the end, so a steady-state measurement gives a duration that ends while the queues are still full.
   */
  readonly durationSec?: number;
  /** Hard cap when durationSec is not given. Default: last submit + the sum of run seconds + 60. */
  readonly maxDurationSec?: number;
  readonly sampleEverySec?: number;
  /** Fraction of the sampled run at its end whose mean is the steady share (default 0.25). */
  readonly steadyWindowFraction?: number;
  /** How close (share of the cluster's GPUs) every queue must stay to its steady share (default 0.03: 3 pp). */
  readonly steadyTolerance?: number;
  readonly preemptionStrategies?: readonly FairSharingStrategy[];
  /** Folder of kueue + crds/ (default tools/kueue/ensure.mjs). */
  readonly kueueBinDir?: string;
  readonly log?: (line: string) => void;
  /**
   * Run on this dev cluster instead of a fresh one: started by the caller with `workload.nodes` nodes of
   * `workload.shape`, `controllerManager: true` and `withScheduler: false` (kube-scheduler is started on its plane
   * when it has none). Kueue is stopped at the end; the cluster, Kueue's CRDs and the run's objects stay.
   */
  readonly cluster?: DevCluster;
  /** Called after each sample (progress on a TTY). */
  readonly onSample?: (s: ShareSample, done: number, total: number) => void;
}

export interface ShareSample {
  /** Seconds since the start of the run. */
  readonly t: number;
  /** GPUs of workloads Kueue has admitted (and not finished), per queue. */
  readonly admitted: Readonly<Record<string, number>>;
  /** GPUs of Running pods, per queue (what kube-scheduler placed and the fake kubelet runs). */
  readonly running: Readonly<Record<string, number>>;
}

export interface ShareSummary {
  /** Mean admitted share of the cluster's GPUs per queue over the steady window. */
  readonly steadyShares: Readonly<Record<string, number>>;
  readonly steadyWindow: { readonly fromSec: number; readonly toSec: number };
  /** First sample time after which every queue stays within `tolerance` of its steady share; null if never. */
  readonly timeToSteadySec: number | null;
  /** weight / sum of weights. */
  readonly weightedShares: Readonly<Record<string, number>>;
}

export interface Quantiles {
  readonly n: number;
  readonly p50: number | null;
  readonly p99: number | null;
}

export interface KueuePeerResult {
  readonly peer: 'kueue';
  readonly kueueVersion: string;
  readonly fairSharing: { readonly preemptionStrategies: readonly FairSharingStrategy[] };
  readonly quotas: string;
  readonly nodes: number;
  readonly shape: string;
  readonly totalGpus: number;
  readonly queues: readonly PeerQueue[];
  readonly jobs: number;
  readonly durationSec: number;
  readonly samples: readonly ShareSample[];
  readonly shares: ShareSummary;
  /** Evictions of admitted workloads by Kueue's preemption, by the queue that lost them; `events` counts Kueue's Preempted Events. */
  readonly preemptions: { readonly total: number; readonly byQueue: Readonly<Record<string, number>>; readonly events: number };
  /** Mean over the samples of Running-pod GPUs (and admitted GPUs) over the cluster's GPUs. */
  readonly utilisation: { readonly running: number; readonly admitted: number };
  /** Seconds from a job's submission to its first admission, and to its first Running pod. */
  readonly waits: { readonly admitted: Quantiles; readonly running: Quantiles };
  readonly finishedJobs: number;
  /** Jobs never admitted within the run. */
  readonly neverAdmitted: number;
  /** The pods' nodes were chosen by kube-scheduler (Scheduled events from default-scheduler), counted. */
  readonly podsScheduledByKubeScheduler: number;
}

interface Cond {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly lastTransitionTime?: string;
}

export interface WorkloadObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly uid?: string; readonly resourceVersion?: string; readonly ownerReferences?: readonly { readonly kind?: string; readonly name?: string }[] };
  readonly spec?: { readonly queueName?: string };
  readonly status?: {
    readonly conditions?: readonly Cond[];
    readonly admission?: { readonly podSetAssignments?: readonly { readonly resourceUsage?: Readonly<Record<string, string | number>> }[] };
  };
}

const NAMESPACE = 'kueue-peer';
const FLAVOR = 'default-flavor';
const COHORT = 'peer';
const JOB_LABEL = 'bench.sits2026.dev/job';
const QUEUE_LABEL = 'bench.sits2026.dev/queue';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const cond = (w: WorkloadObject, type: string): Cond | undefined => w.status?.conditions?.find((c) => c.type === type);
const isTrue = (w: WorkloadObject, type: string): boolean => cond(w, type)?.status === 'True';

/** GPUs a workload holds per Kueue: admitted and not finished. */
export function admittedGpus(w: WorkloadObject): number {
  if (!isTrue(w, 'Admitted') || isTrue(w, 'Finished')) return 0;
  let sum = 0;
  for (const ps of w.status?.admission?.podSetAssignments ?? []) sum += Number(ps.resourceUsage?.[GPU_RESOURCE] ?? 0);
  return sum;
}

/** Whether `now` is an eviction by preemption that `old` was not (Kueue sets Evicted=True, reason Preempted). */
export function isNewPreemption(old: WorkloadObject | undefined, now: WorkloadObject): boolean {
  const c = cond(now, 'Evicted');
  if (c?.status !== 'True' || c.reason !== 'Preempted') return false;
  const o = old === undefined ? undefined : cond(old, 'Evicted');
  return !(o?.status === 'True' && o.reason === 'Preempted' && o.lastTransitionTime === c.lastTransitionTime);
}

/** Checks the workload; throws naming the first bad field. */
export function validatePeerWorkload(w: PeerWorkload): { shape: string; gpusPerNode: number } {
  const shape = w.shape ?? 'l4x8';
  const preset = NODE_SHAPES[shape];
  if (preset === undefined) throw new Error(`workload.shape: unknown preset "${shape}" (presets: ${Object.keys(NODE_SHAPES).join(', ')})`);
  const gpusPerNode = preset.gpus.length;
  if (gpusPerNode === 0) throw new Error(`workload.shape: preset "${shape}" has no GPUs`);
  if (!Number.isInteger(w.nodes) || w.nodes < 1) throw new Error(`workload.nodes: must be a positive integer, got ${String(w.nodes)}`);
  if (w.queues.length === 0) throw new Error('workload.queues: at least one queue is needed');
  const names = new Set<string>();
  w.queues.forEach((q, i) => {
    if (!DNS_LABEL.test(q.name) || q.name.length > 63) throw new Error(`workload.queues[${i}].name: "${q.name}" is not a DNS label`);
    if (names.has(q.name)) throw new Error(`workload.queues[${i}].name: "${q.name}" appears twice`);
    names.add(q.name);
    if (!Number.isFinite(q.weight) || q.weight <= 0) throw new Error(`workload.queues[${i}].weight: must be a positive number, got ${String(q.weight)}`);
  });
  const ids = new Set<string>();
  w.jobs.forEach((j, i) => {
    if (!DNS_LABEL.test(j.id) || j.id.length > 63) throw new Error(`workload.jobs[${i}].id: "${j.id}" is not a DNS label (it names the Job)`);
    if (ids.has(j.id)) throw new Error(`workload.jobs[${i}].id: "${j.id}" appears twice`);
    ids.add(j.id);
    if (!names.has(j.queue)) throw new Error(`workload.jobs[${i}].queue: "${j.queue}" is not one of workload.queues`);
    if (!Number.isFinite(j.submitAtSec) || j.submitAtSec < 0) throw new Error(`workload.jobs[${i}].submitAtSec: must be >= 0, got ${String(j.submitAtSec)}`);
    if (!Number.isFinite(j.runSeconds) || j.runSeconds <= 0) throw new Error(`workload.jobs[${i}].runSeconds: must be > 0, got ${String(j.runSeconds)}`);
    if (!Number.isInteger(j.gpus) || j.gpus < 1 || j.gpus > gpusPerNode) throw new Error(`workload.jobs[${i}].gpus: must be an integer in 1..${gpusPerNode} (a node's GPUs), got ${String(j.gpus)}`);
  });
  return { shape, gpusPerNode };
}

/**
 * Steady shares and the time to reach them from admitted-GPU samples. A queue's share at a sample is its admitted
 * GPUs over the cluster's GPUs; its steady share is the mean of that over the last `windowFraction` of the samples
 * (at least one); the time to steady is the first sample time from which on every queue stays within `tolerance`
 * of its steady share (null when even the last sample does not).
 */
export function summariseShares(samples: readonly ShareSample[], queues: readonly PeerQueue[], totalGpus: number, windowFraction = 0.25, tolerance = 0.03): ShareSummary {
  const weightSum = queues.reduce((s, q) => s + q.weight, 0);
  const weightedShares = Object.fromEntries(queues.map((q) => [q.name, q.weight / weightSum]));
  if (samples.length === 0) return { steadyShares: Object.fromEntries(queues.map((q) => [q.name, 0])), steadyWindow: { fromSec: 0, toSec: 0 }, timeToSteadySec: null, weightedShares };
  const share = (s: ShareSample, q: string): number => (s.admitted[q] ?? 0) / totalGpus;
  const windowLen = Math.max(1, Math.ceil(samples.length * windowFraction));
  const window = samples.slice(samples.length - windowLen);
  const steadyShares = Object.fromEntries(queues.map((q) => [q.name, mean(window.map((s) => share(s, q.name)))]));
  let firstSteady: number | null = null;
  for (let i = samples.length - 1; i >= 0; i--) {
    const s = samples[i] as ShareSample;
    if (queues.every((q) => Math.abs(share(s, q.name) - (steadyShares[q.name] ?? 0)) <= tolerance + 1e-12)) firstSteady = s.t;
    else break;
  }
  return { steadyShares, steadyWindow: { fromSec: (window[0] as ShareSample).t, toSec: (window.at(-1) as ShareSample).t }, timeToSteadySec: firstSteady, weightedShares };
}

function quantiles(xs: readonly number[]): Quantiles {
  const [p50, p99] = percentiles(xs, [50, 99]);
  return { n: xs.length, p50: p50 ?? null, p99: p99 ?? null };
}

function jobObject(j: PeerJob): Record<string, unknown> {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: j.id, namespace: NAMESPACE, labels: { [QUEUE_NAME_LABEL]: j.queue, [JOB_LABEL]: j.id } },
    spec: {
      // What Kueue's Job webhook would do: the Job waits suspended until Kueue admits it.
      suspend: true,
      parallelism: 1,
      completions: 1,
      backoffLimit: 6,
      template: {
        metadata: { labels: { [JOB_LABEL]: j.id, [QUEUE_LABEL]: j.queue }, annotations: { [RUN_SECONDS_ANNOTATION]: String(j.runSeconds) } },
        spec: {
          restartPolicy: 'Never',
          // Only GPUs: the ClusterQueues cover nvidia.com/gpu alone, and Kueue refuses a workload asking for a resource its queue does not cover.
          containers: [{ name: 'main', image: 'example.invalid/kueue-peer:0', resources: { requests: { [GPU_RESOURCE]: String(j.gpus) }, limits: { [GPU_RESOURCE]: String(j.gpus) } } }],
        },
      },
    },
  };
}

async function setUpQueues(client: KubeClient, queues: readonly PeerQueue[], totalGpus: number): Promise<void> {
  await client.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  await client.post(`${KUEUE_API}/resourceflavors`, { apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'ResourceFlavor', metadata: { name: FLAVOR }, spec: {} });
  const gpuGroup = (quota: number): unknown[] => [{ coveredResources: [GPU_RESOURCE], flavors: [{ name: FLAVOR, resources: [{ name: GPU_RESOURCE, nominalQuota: String(quota) }] }] }];
  await client.post(`${KUEUE_API}/cohorts`, { apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'Cohort', metadata: { name: COHORT }, spec: { resourceGroups: gpuGroup(totalGpus) } });
  for (const q of queues) {
    await client.post(`${KUEUE_API}/clusterqueues`, {
      apiVersion: 'kueue.x-k8s.io/v1beta2',
      kind: 'ClusterQueue',
      metadata: { name: q.name },
      spec: {
        cohortName: COHORT,
        namespaceSelector: {},
        resourceGroups: gpuGroup(0),
        preemption: { reclaimWithinCohort: 'Any', withinClusterQueue: 'Never' },
        fairSharing: { weight: String(q.weight) },
      },
    });
    await client.post(`${KUEUE_API}/namespaces/${NAMESPACE}/localqueues`, { apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'LocalQueue', metadata: { name: q.name, namespace: NAMESPACE }, spec: { clusterQueue: q.name } });
  }
  await waitFor(
    'every ClusterQueue Active',
    async () => {
      const list = await client.get<{ items: { metadata: { name: string }; status?: { conditions?: Cond[] } }[] }>(`${KUEUE_API}/clusterqueues`);
      const active = list.items.filter((cq) => cq.status?.conditions?.some((c) => c.type === 'Active' && c.status === 'True') === true).length;
      return active === queues.length;
    },
    30_000,
    200,
  );
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Starts a dev cluster with kube-scheduler, kube-controller-manager and Kueue, runs the workload, and measures it. */
export async function runKueuePeer(workload: PeerWorkload, opts: KueuePeerOptions = {}): Promise<KueuePeerResult> {
  const { shape, gpusPerNode } = validatePeerWorkload(workload);
  const log = opts.log ?? (() => undefined);
  const totalGpus = gpusPerNode * workload.nodes;
  const strategies = opts.preemptionStrategies ?? ['LessThanOrEqualToFinalShare', 'LessThanInitialShare'];
  const every = (opts.sampleEverySec ?? 1) * 1000;
  const lastSubmit = Math.max(0, ...workload.jobs.map((j) => j.submitAtSec));
  const cap = opts.durationSec ?? opts.maxDurationSec ?? lastSubmit + workload.jobs.reduce((s, j) => s + j.runSeconds, 0) + 60;

  const cluster: DevCluster = opts.cluster ?? (await startDevCluster({ nodes: workload.nodes, shape, controllerManager: true, withScheduler: false, controllers: false, log }));
  if (opts.cluster !== undefined && opts.cluster.nodeNames.length !== workload.nodes) throw new Error(`workload.nodes: ${workload.nodes}, but the given cluster has ${opts.cluster.nodeNames.length} nodes`);
  let kueue: RunningKueue | undefined;
  const reflectors: Reflector<WorkloadObject | V1Pod>[] = [];
  try {
    const started = await Promise.all([
      cluster.plane.scheduler === undefined ? cluster.plane.startScheduler() : Promise.resolve(cluster.plane.scheduler),
      startKueue(cluster.plane, { client: cluster.client, fairSharing: { preemptionStrategies: strategies }, log, ...(opts.kueueBinDir === undefined ? {} : { binDir: opts.kueueBinDir }) }),
    ]);
    kueue = started[1];
    const kueueVersion = kueueVersionOf(kueue.binDir);
    await setUpQueues(cluster.client, workload.queues, totalGpus);

    const queueOf = new Map(workload.jobs.map((j) => [j.id, j.queue]));
    const submittedAt = new Map<string, number>();
    const admittedAt = new Map<string, number>();
    const runningAt = new Map<string, number>();
    const finished = new Set<string>();
    const preemptedBy = Object.fromEntries(workload.queues.map((q) => [q.name, 0])) as Record<string, number>;
    const jobOfWorkload = (w: WorkloadObject): string | undefined => w.metadata?.ownerReferences?.find((o) => o.kind === 'Job')?.name;

    const onWorkload = (w: WorkloadObject, old?: WorkloadObject): void => {
      const job = jobOfWorkload(w);
      if (job === undefined || !queueOf.has(job)) return;
      if (isTrue(w, 'Admitted') && !admittedAt.has(job)) admittedAt.set(job, performance.now());
      if (isTrue(w, 'Finished')) finished.add(job);
      if (isNewPreemption(old, w)) preemptedBy[queueOf.get(job) as string] = (preemptedBy[queueOf.get(job) as string] ?? 0) + 1;
    };
    const wlReflector = new Reflector<WorkloadObject>(cluster.client, `${KUEUE_API}/namespaces/${NAMESPACE}/workloads`, { add: (w) => onWorkload(w), update: (w, old) => onWorkload(w, old), delete: () => undefined });
    const onPod = (p: V1Pod): void => {
      const job = p.metadata?.labels?.[JOB_LABEL];
      if (job !== undefined && p.status?.phase === 'Running' && !runningAt.has(job)) runningAt.set(job, performance.now());
    };
    const podReflector = new Reflector<V1Pod>(cluster.client, `/api/v1/namespaces/${NAMESPACE}/pods`, { add: onPod, update: onPod, delete: () => undefined });
    reflectors.push(wlReflector as Reflector<WorkloadObject | V1Pod>, podReflector as Reflector<WorkloadObject | V1Pod>);
    await wlReflector.start();
    await podReflector.start();

    const start = performance.now();
    const submissions = workload.jobs.map(async (j) => {
      const wait = start + j.submitAtSec * 1000 - performance.now();
      if (wait > 0) await sleep(wait);
      submittedAt.set(j.id, performance.now());
      await cluster.client.post(`/apis/batch/v1/namespaces/${NAMESPACE}/jobs`, jobObject(j));
    });
    const submitted = Promise.all(submissions);
    let submitError: unknown;
    submitted.catch((e: unknown) => (submitError = e));

    const samples: ShareSample[] = [];
    const totalSamples = Math.floor((cap * 1000) / every);
    for (let i = 1; ; i++) {
      const due = start + i * every;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      if (submitError !== undefined) throw submitError;
      if (!kueue.process.alive()) throw new Error(`kueue exited (${kueue.process.logPath}):\n${kueue.process.tail().join('\n')}`);
      const admitted = Object.fromEntries(workload.queues.map((q) => [q.name, 0])) as Record<string, number>;
      const running = { ...admitted };
      for (const w of wlReflector.items.values()) {
        const q = w.spec?.queueName;
        if (q !== undefined && q in admitted) admitted[q] = (admitted[q] ?? 0) + admittedGpus(w);
      }
      for (const p of podReflector.items.values()) {
        const q = p.metadata?.labels?.[QUEUE_LABEL];
        if (q === undefined || !(q in running) || p.status?.phase !== 'Running' || p.metadata?.deletionTimestamp !== undefined) continue;
        running[q] = (running[q] ?? 0) + Number(p.spec?.containers[0]?.resources?.requests?.[GPU_RESOURCE] ?? 0);
      }
      const sample: ShareSample = { t: Math.round((due - start) / 10) / 100, admitted, running };
      samples.push(sample);
      opts.onSample?.(sample, i, totalSamples);
      const elapsedSec = (performance.now() - start) / 1000;
      if (opts.durationSec !== undefined ? elapsedSec >= opts.durationSec : finished.size === workload.jobs.length || elapsedSec >= cap) break;
    }
    await submitted;

    const events = await cluster.client.get<{ items: { reason?: string; count?: number; involvedObject?: { kind?: string }; source?: { component?: string }; reportingComponent?: string }[] }>(`/api/v1/namespaces/${NAMESPACE}/events`);
    const preemptionEvents = events.items.filter((e) => e.reason === 'Preempted' && e.involvedObject?.kind === 'Workload').reduce((s, e) => s + (e.count ?? 1), 0);
    const scheduledByKube = events.items.filter((e) => e.reason === 'Scheduled' && e.involvedObject?.kind === 'Pod' && (e.source?.component === 'default-scheduler' || e.reportingComponent === 'default-scheduler')).length;

    const waitsOf = (at: Map<string, number>): number[] => [...at].map(([id, t]) => (t - (submittedAt.get(id) ?? t)) / 1000);
    const preemptionsTotal = Object.values(preemptedBy).reduce((s, n) => s + n, 0);
    return {
      peer: 'kueue',
      kueueVersion,
      fairSharing: { preemptionStrategies: strategies },
      quotas: `cohort "${COHORT}" holds all ${totalGpus} GPUs as its nominal quota; each ClusterQueue has 0 and borrows everything, so fair sharing splits all of it by weight`,
      nodes: workload.nodes,
      shape,
      totalGpus,
      queues: workload.queues,
      jobs: workload.jobs.length,
      durationSec: samples.at(-1)?.t ?? 0,
      samples,
      shares: summariseShares(samples, workload.queues, totalGpus, opts.steadyWindowFraction, opts.steadyTolerance),
      preemptions: { total: preemptionsTotal, byQueue: preemptedBy, events: preemptionEvents },
      utilisation: {
        running: mean(samples.map((s) => Object.values(s.running).reduce((a, b) => a + b, 0) / totalGpus)),
        admitted: mean(samples.map((s) => Object.values(s.admitted).reduce((a, b) => a + b, 0) / totalGpus)),
      },
      waits: { admitted: quantiles(waitsOf(admittedAt)), running: quantiles(waitsOf(runningAt)) },
      finishedJobs: finished.size,
      neverAdmitted: workload.jobs.length - admittedAt.size,
      podsScheduledByKubeScheduler: scheduledByKube,
    };
  } finally {
    for (const r of reflectors) r.stop();
    await kueue?.stop();
    if (opts.cluster === undefined) await cluster.stop();
  }
}

/** The Kueue version the binary folder was built from (its BUILD-INFO.json; the folder name when that is missing). */
function kueueVersionOf(binDir: string): string {
  try {
    const info = JSON.parse(readFileSync(join(binDir, 'BUILD-INFO.json'), 'utf8')) as { kueue?: string };
    if (typeof info.kueue === 'string') return info.kueue;
  } catch {
    // a SITS_KUEUE_BIN folder without build info
  }
  return basename(binDir);
}
