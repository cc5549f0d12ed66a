// The queue cycle's spans through the core's Tracer port: one `sits.attempt` per placement attempt with its
// job, pod or gang, queue and result; a `sits.preempt` child when a preemption is planned; nothing else
// changes (the same decisions with and without a tracer).
import { describe, expect, it } from 'vitest';
import { runCycle, type CycleResult } from './queue-cycle.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import { Scheduler } from '../framework/scheduler.ts';
import { resolveProfile } from '../plugins/registry.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod, type PodSpec } from '../model/pod.ts';
import { seededRng, type TraceAttributes, type Tracer } from '../ports.ts';

interface Recorded {
  readonly name: string;
  readonly parent: Recorded | undefined;
  readonly attrs: Record<string, unknown>;
  ended: boolean;
}

/** A tracer that keeps every span with its parent (the innermost open one at start), as the port promises. */
function recorder(): Tracer & { readonly spans: Recorded[] } {
  const spans: Recorded[] = [];
  const open: Recorded[] = [];
  return {
    enabled: true,
    spans,
    start(name: string, attrs: TraceAttributes = {}) {
      const r: Recorded = { name, parent: open[open.length - 1], attrs: { ...attrs }, ended: false };
      spans.push(r);
      open.push(r);
      return {
        set: (a: TraceAttributes) => void Object.assign(r.attrs, a),
        end: () => {
          expect(open[open.length - 1]).toBe(r); // ends in reverse order of start
          open.pop();
          r.ended = true;
        },
      };
    },
  };
}

function scheduler(tracer?: Tracer): Scheduler {
  const s = NODE_SHAPES['dgx-h100'];
  if (s === undefined) throw new Error('shape');
  const specs: NodeSpec[] = [0, 1, 2].map((i) => ({
    name: `n${i}`,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: 110,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: 'rack-0' },
    labels: {},
    taints: [],
    unschedulable: false,
  }));
  const p = resolveProfile('sits', { typicalShapes: [] });
  if (!p.ok) throw new Error('profile');
  return new Scheduler(p.value, new ClusterState(specs), seededRng(1), undefined, tracer);
}

function gangJob(id: string, replicas: number, gpus: number, priority: number, arrivalMs: number): QueuedJob {
  const members = Array.from({ length: replicas }, (_, k) =>
    makePod(`${id}-${k}`, { gpuCount: gpus, cpuMilli: 1000, memoryMiB: 1024 }, { gang: id, queue: 'q', priority }),
  );
  return { id, queue: 'q', priority, arrivalMs, gang: { name: id, minMember: replicas, members, topology: {}, priority, queue: 'q' }, estRuntimeMs: 3_600_000 };
}

function podJob(id: string, gpus: number, arrivalMs: number): QueuedJob {
  const pod: PodSpec = makePod(id, { gpuCount: gpus, cpuMilli: 1000, memoryMiB: 1024 }, { queue: 'q' });
  return {
    id,
    queue: 'q',
    priority: 0,
    arrivalMs,
    gang: { name: id, minMember: 1, members: [pod], topology: {}, priority: 0, queue: 'q' },
    estRuntimeMs: 3_600_000,
  };
}

/** `low` (2×8 GPUs, priority 0) runs on two nodes; `high` (2×8, priority 10) preempts it, `solo` (1 GPU) fits, `big` (4×8) cannot. */
function scenario(tracer?: Tracer): CycleResult {
  const s = scheduler(tracer);
  const low = gangJob('low', 2, 8, 0, 0);
  const placed = s.scheduleGang(low.gang);
  if (!placed.ok) throw new Error(placed.explanation.message);
  const running: RunningJob = {
    id: 'low',
    queue: 'q',
    priority: 0,
    startMs: 0,
    estEndMs: 3_600_000,
    podIds: placed.placements.map((p) => p.podId),
    resources: { gpuMilli: 16_000, cpuMilli: 2000, memoryMiB: 2048 },
    preemptible: true,
  };
  return runCycle({
    nowMs: 10_000_000,
    scheduler: s,
    queues: new Map(),
    pending: [gangJob('high', 2, 8, 10, 1), podJob('solo', 1, 2), gangJob('big', 4, 8, 0, 3)],
    running: new Map([['low', running]]),
  });
}

describe('queue cycle tracing', () => {
  it('one attempt span per job tried, with its pod or gang, queue and result; preemption as its child', () => {
    const t = recorder();
    scenario(t);
    expect(t.spans.every((s) => s.ended)).toBe(true);
    const attempts = new Map(t.spans.filter((s) => s.name === 'sits.attempt').map((s) => [s.attrs['sits.job.id'], s]));
    expect([...attempts.keys()].sort()).toEqual(['big', 'high', 'solo']);
    for (const a of attempts.values()) expect(a.parent).toBeUndefined();

    expect(attempts.get('solo')?.attrs).toMatchObject({
      'sits.job.kind': 'pod',
      'sits.pod': 'solo',
      'sits.queue': 'q',
      'sits.result': 'scheduled',
      'sits.placed': 1,
      'sits.topology.level': 'cluster',
    });
    expect(attempts.get('solo')?.attrs['sits.gang']).toBeUndefined();

    const high = attempts.get('high');
    expect(high?.attrs).toMatchObject({
      'sits.job.kind': 'gang',
      'sits.gang': 'high',
      'sits.gang.members': 2,
      'sits.gang.min_member': 2,
      'sits.priority': 10,
      'sits.result': 'scheduled',
      'sits.placed': 2,
      'sits.preempt.victims': 1,
    });
    expect(high?.attrs['sits.pods']).toEqual(['high-0', 'high-1']);
    const highPreempt = t.spans.filter((s) => s.name === 'sits.preempt' && s.parent === high);
    expect(highPreempt.map((s) => s.attrs)).toEqual([
      {
        'sits.job.id': 'high',
        'sits.queue': 'q',
        'sits.preempt.for_quota': false,
        'sits.result': 'started',
        'sits.preempt.victims': 1,
        'sits.preempt.victim_ids': ['low'],
      },
    ]);

    const big = attempts.get('big');
    expect(big?.attrs['sits.result']).toBe('capacity');
    expect(String(big?.attrs['sits.message'])).toMatch(/^0\/3 nodes fit gang big \(4×8 GPU\)/);
    expect(t.spans.filter((s) => s.name === 'sits.preempt' && s.parent === big).map((s) => s.attrs['sits.result'])).toEqual(['no']);
  });

  it('decides the same with and without a tracer', () => {
    const plain = scenario();
    const traced = scenario(recorder());
    const shape = (r: CycleResult): unknown => ({
      started: r.started.map((s) => [s.job.id, s.placements]),
      preempted: r.preempted.map((p) => [p.victim.id, p.by, p.reason]),
      waiting: [...r.waiting],
      reservations: r.reservations,
      attempted: r.attempted,
    });
    expect(shape(traced)).toEqual(shape(plain));
    expect(plain.started.map((s) => s.job.id).sort()).toEqual(['high', 'solo']);
  });

  it('a list attribute names at most 32 values', () => {
    const t = recorder();
    runCycle({ nowMs: 0, scheduler: scheduler(t), queues: new Map(), pending: [gangJob('wide', 40, 0, 0, 0)], running: new Map() });
    const pods = t.spans.find((s) => s.name === 'sits.attempt')?.attrs['sits.pods'] as string[];
    expect(pods).toHaveLength(33);
    expect(pods[32]).toBe('+8 more');
  });
});
