/**
 * The live side of `sits bench live`: the workload submitted on its compressed times to a dev cluster (real etcd
 * and kube-apiserver, fake GPU nodes, the fake kubelet, the SITS scheduler and the workload controllers). Each item
 * is a TrainingJob — one trace job is one gang, and a TrainingJob is how a gang that must come back after a
 * preemption is submitted (its controller recreates the whole gang, as the simulator requeues a victim); its
 * replicas carry `dev.sits2026.dev/run-seconds` (the fake kubelet ends them that long after they start) and
 * `expectedRuntimeSeconds` (the runtime the simulator's jobs declare). A watch on the pods records, every second,
 * the GPUs of Running pods per queue and when each job first had every replica Running; a preemption is a gang
 * (job and attempt) whose pods got the scheduler's DisruptionTarget condition (PreemptionByScheduler) within the
 * window, cross-checked by the gang restarts the TrainingJobs report (status.attempt − 1: the only restarts here
 * are SITS's evictions, so there are at most as many, fewer when an eviction at the end is not restarted yet).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { startDevCluster } from '../../app/dev-cluster.ts';
import type { TrainingJobObject } from '../../controllers/training-job/model.ts';
import { API_GROUP_VERSION, LABEL } from '../../api/wire.ts';
import { RUN_SECONDS_ANNOTATION } from '../../harness/fake-kubelet.ts';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import type { QueueObject } from '../../kube/cache/queues.ts';
import { Reflector } from '../../kube/client/reflector.ts';
import { GPU, type ReplaySample, type ReplayTrace } from './replay.ts';
import { gangShape, type ReplayWorkload, type WorkloadItem } from './workload.ts';

export interface LiveReplayOptions {
  readonly nodes: number;
  readonly shape: string;
  readonly queues: readonly QueueObject[];
  readonly namespace: string;
  readonly log?: (m: string) => void;
  /** Every sampled second: seconds into the replay, jobs submitted, GPUs in use. */
  readonly onProgress?: (t: number, submitted: number, usedGpus: number) => void;
}

export interface LiveReplayResult extends ReplayTrace {
  /** Wall seconds: starting the cluster, and submissions that were late by more than 0.5 s (the submitter fell behind). */
  readonly wall: { readonly startupSec: number; readonly lateSubmissions: number };
  /**
   * Seconds after the replay starts that every pod of each job's first gang existed (the watch saw them): when the
   * scheduler could first take the job, its submission delayed by the API server and the TrainingJob controller.
   */
  readonly arrivedSec: ReadonlyMap<string, number>;
  /** Σ (status.attempt − 1) over the TrainingJobs right after the window: a cross-check of `preemptions`. */
  readonly restarts: number;
}

export function trainingJobFor(item: WorkloadItem, perNode: number, namespace: string): Record<string, unknown> {
  const { replicas, gpusPerReplica } = gangShape(item.gpus, perNode);
  return {
    apiVersion: API_GROUP_VERSION,
    kind: 'TrainingJob',
    metadata: { name: item.id, namespace },
    spec: {
      replicas,
      gpusPerReplica,
      queue: item.queue,
      expectedRuntimeSeconds: item.runSeconds,
      // Preemptions restart the gang without counting against it (ADR 0143); a generous limit all the same.
      backoffLimit: 1000,
      podTemplate: { metadata: { annotations: { [RUN_SECONDS_ANNOTATION]: String(item.runSeconds) } }, spec: { containers: [{ name: 'trainer', image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] }] } },
    },
  };
}

const gpusOf = (p: V1Pod): number => (p.spec?.containers ?? []).reduce((s, c) => s + Number(c.resources?.limits?.[GPU] ?? c.resources?.requests?.[GPU] ?? 0), 0);
const isRunning = (p: V1Pod): boolean => p.status?.phase === 'Running' && (p.spec?.nodeName ?? '') !== '' && p.metadata?.deletionTimestamp === undefined;
const evicted = (p: V1Pod): boolean => p.status?.conditions?.some((c) => c.type === 'DisruptionTarget' && c.reason === 'PreemptionByScheduler') === true;
/**
 * A pod holds its GPUs for its queue while Running, until the scheduler marks it a victim: from then on the
 * scheduler counts them for the preemptor (kube/cache/queues.ts runningJobs), as the simulator does in the same step;
 * the eviction's delete is the API server's and the fake kubelet's latency, not the scheduler's division.
 */
const holds = (p: V1Pod): boolean => isRunning(p) && !evicted(p);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export async function runLiveReplay(w: ReplayWorkload, o: LiveReplayOptions): Promise<LiveReplayResult> {
  const shape = NODE_SHAPES[o.shape];
  if (shape === undefined) throw new Error(`shape: unknown "${o.shape}"`);
  const perNode = shape.gpus.length;
  const log = o.log ?? (() => undefined);
  const t0Start = performance.now();
  const cluster = await startDevCluster({ nodes: o.nodes, shape: o.shape, log });
  try {
    const { client } = cluster;
    for (const q of o.queues) await client.post(`/apis/${API_GROUP_VERSION}/queues`, { apiVersion: API_GROUP_VERSION, kind: 'Queue', ...q });
    await client.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.namespace } });
    const byId = new Map(w.jobs.map((j) => [j.id, j]));
    const replicasOf = new Map(w.jobs.map((j) => [j.id, gangShape(j.gpus, perNode).replicas]));
    const firstStartSec = new Map<string, number>();
    const arrivedSec = new Map<string, number>();
    const evictedAt = new Map<string, number>();
    let t0 = 0;
    const since = (): number => (performance.now() - t0) / 1000;
    // Pods by job and attempt (`job/attempt` → name → pod), so that a pod event looks only at its own gang.
    const gangs = new Map<string, Map<string, V1Pod>>();
    const gangOf = (p: V1Pod): string | undefined => {
      const job = p.metadata?.labels?.[LABEL.trainingJob];
      return job === undefined ? undefined : `${job}/${p.metadata?.labels?.[LABEL.attempt] ?? ''}`;
    };
    // A job has started when every replica of one attempt is Running; a victim shows the scheduler's condition first.
    const seen = (p: V1Pod): void => {
      const gang = gangOf(p);
      const job = p.metadata?.labels?.[LABEL.trainingJob];
      if (gang === undefined || job === undefined) return;
      const members = gangs.get(gang) ?? new Map<string, V1Pod>();
      gangs.set(gang, members.set(p.metadata?.name ?? '', p));
      if (t0 === 0) return;
      if (!arrivedSec.has(job) && members.size >= (replicasOf.get(job) ?? Infinity)) arrivedSec.set(job, since());
      if (evicted(p) && !evictedAt.has(gang) && since() <= w.horizonSec) evictedAt.set(gang, Math.round(since() * 100) / 100);
      if (firstStartSec.has(job) || !isRunning(p)) return;
      if ([...members.values()].filter(isRunning).length >= (replicasOf.get(job) ?? Infinity)) firstStartSec.set(job, since());
    };
    // Running GPUs per queue kept up to date on every pod event (O(queues) each: no scan of every pod), and
    // each change recorded at the second the watch delivered it.
    const runningPods = new Map<string, { readonly queue: string; readonly gpus: number }>();
    const totals: Record<string, number> = Object.fromEntries(w.queues.map((q) => [q.name, 0]));
    const changes: ReplaySample[] = [];
    const track = (p: V1Pod, gone: boolean): void => {
      const name = p.metadata?.name ?? '';
      const job = byId.get(p.metadata?.labels?.[LABEL.trainingJob] ?? '');
      const before = runningPods.get(name);
      const now = !gone && job !== undefined && holds(p) ? { queue: job.queue, gpus: gpusOf(p) } : undefined;
      if (before?.queue === now?.queue && before?.gpus === now?.gpus) return;
      if (before !== undefined) totals[before.queue] = (totals[before.queue] ?? 0) - before.gpus;
      if (now === undefined) runningPods.delete(name);
      else {
        runningPods.set(name, now);
        totals[now.queue] = (totals[now.queue] ?? 0) + now.gpus;
      }
      if (t0 !== 0) changes.push({ t: since(), gpus: { ...totals } });
    };
    const pods = new Reflector<V1Pod>(client, `/api/v1/namespaces/${o.namespace}/pods`, {
      add: (p) => {
        seen(p);
        track(p, false);
      },
      update: (p) => {
        seen(p);
        track(p, false);
      },
      delete: (p) => {
        gangs.get(gangOf(p) ?? '')?.delete(p.metadata?.name ?? '');
        track(p, true);
      },
    });
    await pods.start();
    // The scheduler must know the queues before the first job comes.
    await sleep(1500);
    const startupSec = (performance.now() - t0Start) / 1000;
    t0 = performance.now();
    changes.push({ t: 0, gpus: { ...totals } });
    let submitted = 0;
    let late = 0;
    const posts: Promise<unknown>[] = [];
    const submitter = (async () => {
      for (const item of [...w.jobs].sort((a, b) => a.submitAtSec - b.submitAtSec)) {
        if (item.submitAtSec > w.horizonSec) break;
        await sleep(item.submitAtSec * 1000 - (performance.now() - t0));
        if (since() - item.submitAtSec > 0.5) late++;
        posts.push(client.post(`/apis/${API_GROUP_VERSION}/namespaces/${o.namespace}/trainingjobs`, trainingJobFor(item, perNode, o.namespace)).then(() => submitted++, (e: unknown) => log(`submit ${item.id}: ${(e as Error).message}`)));
      }
    })();
    const samples: ReplaySample[] = [];
    for (let t = 0; t <= w.horizonSec; t++) {
      await sleep(t * 1000 - (performance.now() - t0));
      // The running GPUs `track` keeps from every pod event (the Reflector's relist included), as of now.
      const gpus = { ...totals };
      samples.push({ t, gpus });
      o.onProgress?.(t, submitted, Object.values(gpus).reduce((a, b) => a + b, 0));
    }
    await submitter;
    await Promise.all(posts);
    const jobs = await client.get<{ items: TrainingJobObject[] }>(`/apis/${API_GROUP_VERSION}/namespaces/${o.namespace}/trainingjobs`);
    const restarts = jobs.items.reduce((s, j) => s + Math.max(0, (j.status?.attempt ?? 1) - 1), 0);
    pods.stop();
    const preemptionsAtSec = [...evictedAt.values()].sort((a, b) => a - b);
    return { samples, firstStartSec, preemptions: preemptionsAtSec.length, preemptionsAtSec, changes, arrivedSec, wall: { startupSec: Math.round(startupSec * 10) / 10, lateSubmissions: late }, restarts };
  } finally {
    await cluster.stop();
  }
}
