/** Test helpers for the queue cycle and its actions: small clusters, jobs, running jobs, sessions. */
import { Scheduler } from '../framework/scheduler.ts';
import { resolveProfile } from '../plugins/registry.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod, type TopologyConstraint } from '../model/pod.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import { seededRng } from '../ports.ts';
import type { QueueSpec } from '../queue/model.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { CycleSession } from '../session/session.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import { DEFAULT_CYCLE_OPTIONS, type CycleInput, type CycleOptions } from './queue-cycle.ts';

function nodeSpec(name: string, shape: string, rack: string): NodeSpec {
  const s = NODE_SHAPES[shape];
  if (s === undefined) throw new Error(`unknown node shape ${shape}`);
  return {
    name,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: 110,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack },
    labels: {},
    taints: [],
    unschedulable: false,
  };
}

function schedulerOn(specs: readonly NodeSpec[]): Scheduler {
  const p = resolveProfile('sits', { typicalShapes: [] });
  if (!p.ok) throw new Error('profile');
  return new Scheduler(p.value, new ClusterState(specs), seededRng(1));
}

/** `racks` × `perRack` nodes of one shape, named r<rack>-n<i>, on the sits profile. */
export function cluster(shape: string, racks: number, perRack: number): Scheduler {
  const specs: NodeSpec[] = [];
  for (let r = 0; r < racks; r++) for (let i = 0; i < perRack; i++) specs.push(nodeSpec(`r${r}-n${i}`, shape, `rack-${r}`));
  return schedulerOn(specs);
}

/** One node per shape, named <shape>-<i>, in one rack. */
export function mixed(shapes: readonly string[]): Scheduler {
  return schedulerOn(shapes.map((shape, i) => nodeSpec(`${shape}-${i}`, shape, 'rack-0')));
}

let seq = 0;
/** A gang of `replicas` pods of `gpus` whole GPUs each, waiting in `queue` (arrivals in call order by default). */
export function job(
  id: string,
  queue: string,
  replicas: number,
  gpus: number,
  o: { priority?: number; arrivalMs?: number; estRuntimeMs?: number; topology?: TopologyConstraint } = {},
): QueuedJob {
  const members = Array.from({ length: replicas }, (_, k) =>
    makePod(`${id}-${k}`, { gpuCount: gpus, cpuMilli: 1000, memoryMiB: 1024 }, { gang: id, queue, priority: o.priority ?? 0 }),
  );
  return {
    id,
    queue,
    priority: o.priority ?? 0,
    arrivalMs: o.arrivalMs ?? seq++,
    gang: { name: id, minMember: replicas, members, topology: o.topology ?? {}, priority: o.priority ?? 0, queue },
    estRuntimeMs: o.estRuntimeMs ?? 3_600_000,
  };
}

/** Runs a job for real: places it and returns the RunningJob record. */
export function start(s: Scheduler, j: QueuedJob, startMs: number, extra: Partial<RunningJob> = {}): RunningJob {
  const r = s.scheduleGang(j.gang);
  if (!r.ok) throw new Error(r.explanation.message);
  const gpuMilli = j.gang.members.reduce((x, m) => x + m.request.gpuCount * m.request.gpuMilli, 0);
  return {
    id: j.id,
    queue: j.queue,
    priority: j.priority,
    startMs,
    estEndMs: startMs + j.estRuntimeMs,
    podIds: r.placements.map((p) => p.podId),
    resources: { gpuMilli, cpuMilli: j.gang.members.length * 1000, memoryMiB: j.gang.members.length * 1024 },
    preemptible: true,
    ...extra,
  };
}

export const queues = (...qs: QueueSpec[]): Map<string, QueueSpec> => new Map(qs.map((q) => [q.name, q]));
export const G = (n: number) => ({ gpuMilli: n * 1000, cpuMilli: Infinity, memoryMiB: Infinity });

/** A session over `s` as runCycle would open it (default options, overridden by `options`). */
export function sessionOf(
  s: Scheduler,
  qs: Map<string, QueueSpec>,
  pending: readonly QueuedJob[],
  running: readonly RunningJob[] = [],
  nowMs = 10_000_000,
  options: Partial<CycleOptions> = {},
  extra: Partial<Pick<CycleInput, 'parked' | 'held'>> = {},
): CycleSession {
  const input: CycleInput = { nowMs, scheduler: s, queues: qs, pending, running: new Map(running.map((r) => [r.id, r])), options, ...extra };
  return new CycleSession(input, { ...DEFAULT_CYCLE_OPTIONS, ...options });
}
