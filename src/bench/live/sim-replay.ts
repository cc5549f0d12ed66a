/**
 * The simulated side of `sits bench live`: the workload through the simulator's composition root (createSimApp:
 * the same profile, scheduler, scheduling queue and spine the live scheduler runs) under the same Queue objects
 * (queueFromObject, as the live scheduler reads them) and on the same nodes (the dev cluster's Node objects read by
 * nodeFromK8s). Time is the replay's compressed seconds, stepped every `stepSec`: jobs arrive, ended jobs leave,
 * one queue cycle runs. A preempted job goes back to its queue with all its work to do again (the fake kubelet
 * restarts a TrainingJob's replicas with their full run-seconds; there are no checkpoints).
 */
import type { V1Node } from '@kubernetes/client-node';
import { startedJob, type QueuedJob, type RunningJob } from '../../core/actions/jobs.ts';
import type { NodeSpec } from '../../core/model/node.ts';
import { makePod } from '../../core/model/pod.ts';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import { seededRng } from '../../core/ports.ts';
import type { QueueSpec } from '../../core/queue/model.ts';
import { createSimApp } from '../../app/sim-app.ts';
import { devNodes } from '../../app/dev-cluster.ts';
import { gangTopology } from '../../controllers/training-job/pods.ts';
import type { TrainingJobSpec } from '../../api/schema/training-job.ts';
import { fakeNodeStatus } from '../../harness/fake-nodes.ts';
import { nodeFromK8s } from '../../kube/cache/labels.ts';
import { DEFAULT_COOLDOWN_SECONDS, queueFromObject, type QueueObject } from '../../kube/cache/queues.ts';
import type { ReplaySample, ReplayTrace } from './replay.ts';
import { gangShape, type ReplayWorkload, type WorkloadItem } from './workload.ts';

export interface SimReplayOptions {
  readonly nodes: number;
  readonly shape: string;
  readonly queues: readonly QueueObject[];
  readonly seed: number;
  /** Seconds between two cycles (default 0.5: the live scheduler cycles on every watch event, at least every second). */
  readonly stepSec?: number;
  readonly namespace: string;
}

/** The dev cluster's nodes as the live scheduler reads them. */
export function replayNodes(count: number, shape: string): NodeSpec[] {
  return devNodes(count, shape).map((n) => {
    const obj: V1Node = { metadata: { name: n.name, labels: { 'kubernetes.io/hostname': n.name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', ...n.labels }, annotations: n.annotations }, status: fakeNodeStatus({ name: n.name, labels: n.labels, annotations: n.annotations, capacity: n.capacity }) };
    const r = nodeFromK8s(obj);
    if (!r.ok) throw new Error(r.error);
    return r.value;
  });
}

/** The gang a TrainingJob of this item becomes (replicas of equal GPUs, the controller's default topology: ring-allreduce prefers a rack). */
export function replayGang(item: WorkloadItem, perNode: number, namespace: string, arrivalMs: number, seq: number): QueuedJob {
  const { replicas, gpusPerReplica } = gangShape(item.gpus, perNode);
  const topology = gangTopology({ topology: { strategy: 'ring-allreduce' } } as TrainingJobSpec);
  const members = Array.from({ length: replicas }, (_, k) => makePod(`${namespace}/${item.id}-${k}`, { gpuCount: gpusPerReplica, cpuMilli: 0, memoryMiB: 0 }, { gang: item.id, queue: item.queue }));
  return { id: item.id, queue: item.queue, priority: 0, arrivalMs, seq, gang: { name: item.id, minMember: replicas, members, topology, priority: 0, queue: item.queue }, estRuntimeMs: item.runSeconds * 1000, namespace };
}

export function simulateReplay(w: ReplayWorkload, o: SimReplayOptions): ReplayTrace {
  const shape = NODE_SHAPES[o.shape];
  if (shape === undefined) throw new Error(`shape: unknown "${o.shape}"`);
  const perNode = shape.gpus.length;
  const app = createSimApp({ nodes: replayNodes(o.nodes, o.shape), profile: 'sits', rng: seededRng(o.seed) });
  if (!app.ok) throw new Error(app.error);
  const { scheduler, queue, spine } = app.value;
  const queues = new Map<string, QueueSpec>(o.queues.map((q) => [q.metadata?.name ?? '', queueFromObject(q)]));
  const stepMs = Math.round((o.stepSec ?? 0.5) * 1000);
  const templates = new Map(w.jobs.map((j, i) => [j.id, replayGang(j, perNode, o.namespace, Math.round(j.submitAtSec * 1000), i)]));
  const arrivals = [...w.jobs].sort((a, b) => a.submitAtSec - b.submitAtSec);
  const running = new Map<string, RunningJob>();
  const endAt = new Map<string, number>();
  const firstStartSec = new Map<string, number>();
  const samples: ReplaySample[] = [];
  const changes: ReplaySample[] = [];
  let next = 0;
  const preemptionsAtSec: number[] = [];
  const enqueue = (j: QueuedJob, now: number): void => {
    queue.add(j, now);
    queue.onEvent({ kind: 'arrived', queue: j.queue }, now);
  };
  for (let now = 0; now <= w.horizonSec * 1000; now += stepMs) {
    let freed = false;
    for (const [id, r] of running) {
      if ((endAt.get(id) ?? Infinity) > now) continue;
      app.value.end(r.podIds);
      running.delete(id);
      freed = true;
    }
    if (freed) queue.onEvent({ kind: 'freed' }, now);
    while (next < arrivals.length && (arrivals[next] as WorkloadItem).submitAtSec * 1000 <= now) enqueue(templates.get((arrivals[next++] as WorkloadItem).id) as QueuedJob, now);
    const res = spine.cycle({ nowMs: now, scheduler, queues, running, options: { minRuntimeMs: DEFAULT_COOLDOWN_SECONDS * 1000 } });
    for (const p of res.preempted) {
      running.delete(p.victim.id);
      endAt.delete(p.victim.id);
      preemptionsAtSec.push(now / 1000);
      enqueue(templates.get(p.victim.id) as QueuedJob, now);
    }
    for (const s of res.started) {
      const job = s.job;
      running.set(job.id, startedJob(job, s.placements, now));
      endAt.set(job.id, now + job.estRuntimeMs);
      if (!firstStartSec.has(job.id)) firstStartSec.set(job.id, now / 1000);
    }
    const gpus: Record<string, number> = Object.fromEntries(w.queues.map((q) => [q.name, 0]));
    for (const r of running.values()) gpus[r.queue] = (gpus[r.queue] ?? 0) + r.resources.gpuMilli / 1000;
    const last = changes.at(-1)?.gpus;
    if (last === undefined || w.queues.some((q) => last[q.name] !== gpus[q.name])) changes.push({ t: now / 1000, gpus });
    if (now % 1000 === 0) samples.push({ t: now / 1000, gpus });
  }
  return { samples, firstStartSec, preemptions: preemptionsAtSec.length, preemptionsAtSec, changes };
}
