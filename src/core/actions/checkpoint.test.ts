import { describe, expect, it } from 'vitest';
import { runCycle, type CycleResult } from './queue-cycle.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import { CHECKPOINT_FRESH_MS, checkpointMs, checkpointStep, inCriticalPhase } from './checkpoint.ts';
import { commitMigration, expectedStartMs, planMigration } from './migration.ts';
import { Scheduler } from '../framework/scheduler.ts';
import { resolveProfile } from '../plugins/registry.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod } from '../model/pod.ts';
import { makeQueue, type QueueSpec } from '../queue/model.ts';
import { seededRng } from '../ports.ts';

function cluster(nodes: number): Scheduler {
  const s = NODE_SHAPES['dgx-h100'];
  if (s === undefined) throw new Error('shape');
  const specs: NodeSpec[] = Array.from({ length: nodes }, (_, i) => ({
    name: `n${i}`,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: 110,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: 'r0' },
    labels: {},
    taints: [],
    unschedulable: false,
  }));
  const p = resolveProfile('sits', { typicalShapes: [] });
  if (!p.ok) throw new Error('profile');
  return new Scheduler(p.value, new ClusterState(specs), seededRng(1));
}

function job(id: string, gpus: number, priority = 0, node?: 'node'): QueuedJob {
  const members = [makePod(`${id}-0`, { gpuCount: gpus, cpuMilli: 1000, memoryMiB: 1024 }, { gang: id, queue: 'q', priority })];
  return {
    id,
    queue: 'q',
    priority,
    arrivalMs: 0,
    gang: { name: id, minMember: 1, members, topology: node === undefined ? {} : { required: node }, priority, queue: 'q' },
    estRuntimeMs: 3_600_000,
  };
}

/** Places `j` on node `on` and returns its RunningJob. */
function run(s: Scheduler, j: QueuedJob, on: string, extra: Partial<RunningJob> = {}): RunningJob {
  const pod = j.gang.members[0];
  if (pod === undefined) throw new Error('pod');
  const n = s.state.node(on);
  if (n === undefined) throw new Error(on);
  const gpus: number[] = [];
  for (let g = 0; g < n.gpuFree.length && gpus.length < pod.request.gpuCount; g++) if (n.gpuFree[g] === 1000) gpus.push(g);
  s.state.allocate({ podId: pod.id, node: on, gpus, gpuMilli: 1000, cpuMilli: 1000, memoryMiB: 1024, priority: j.priority, queue: j.queue });
  return {
    id: j.id,
    queue: j.queue,
    priority: j.priority,
    startMs: 0,
    estEndMs: 86_400_000,
    podIds: [pod.id],
    resources: { gpuMilli: pod.request.gpuCount * 1000, cpuMilli: 1000, memoryMiB: 1024 },
    preemptible: true,
    ...extra,
  };
}

const Q: ReadonlyMap<string, QueueSpec> = new Map([['q', makeQueue('q')]]);
const NOW = 7_200_000;
const cyc = (s: Scheduler, pending: QueuedJob[], running: RunningJob[], aware: boolean, nowMs = NOW): CycleResult =>
  runCycle({ nowMs, scheduler: s, queues: Q, pending, running: new Map(running.map((r) => [r.id, r])), options: { checkpointAware: aware, minRuntimeMs: 0 } });

describe('checkpoint step of a victim', () => {
  const base: RunningJob = {
    id: 'v',
    queue: 'q',
    priority: 0,
    startMs: 0,
    estEndMs: 1e9,
    podIds: ['v-0'],
    resources: { gpuMilli: 8000, cpuMilli: 0, memoryMiB: 0 },
    preemptible: true,
  };
  it('goes request → pending → ready on commit, or ready when the grace runs out', () => {
    expect(checkpointStep(base, NOW, 300_000)).toBe('ready');
    const c = { ...base, checkpointable: true };
    expect(checkpointStep(c, NOW, 300_000)).toBe('request');
    const asked = { ...c, checkpointRequestedMs: NOW };
    expect(checkpointStep(asked, NOW + 60_000, 300_000)).toBe('pending');
    expect(checkpointStep({ ...asked, lastCheckpointMs: NOW + 50_000 }, NOW + 60_000, 300_000)).toBe('ready');
    expect(checkpointStep(asked, NOW + 300_000, 300_000)).toBe('ready');
    // A commit long ago, or a request long stale, asks again.
    expect(checkpointStep({ ...asked, lastCheckpointMs: NOW + 1 }, NOW + 2 + CHECKPOINT_FRESH_MS, 300_000)).toBe('request');
    expect(checkpointStep(asked, NOW + 300_001 + CHECKPOINT_FRESH_MS, 300_000)).toBe('request');
  });
  it('a failed checkpoint of this request ends the wait at once; the failure of an earlier request does not', () => {
    const asked: RunningJob = { ...base, checkpointable: true, checkpointRequestedMs: NOW };
    expect(checkpointStep({ ...asked, checkpointFailedMs: NOW }, NOW + 20_000, 300_000)).toBe('ready');
    expect(checkpointStep({ ...asked, checkpointFailedMs: NOW - 60_000 }, NOW + 20_000, 300_000)).toBe('pending');
  });
  it('a self-started checkpoint in flight is critical, a requested one is not', () => {
    expect(inCriticalPhase({ ...base, checkpointInFlight: true }, NOW)).toBe(true);
    expect(inCriticalPhase({ ...base, checkpointInFlight: true, checkpointRequestedMs: NOW }, NOW)).toBe(false);
    expect(inCriticalPhase({ ...base, criticalUntilMs: NOW + 1 }, NOW)).toBe(true);
  });
  it('checkpoint time follows seed 000 §1: 89 s for a node, in parallel across nodes', () => {
    expect(checkpointMs(8)).toBe(89_000);
    expect(checkpointMs(64)).toBe(89_000);
    expect(checkpointMs(4)).toBe(44_500);
  });
});

describe('checkpoint-aware preemption in the queue cycle', () => {
  it('orders plans by lost work before the number of victims; plain preemption takes the fewest victims', () => {
    const setup = (): { s: Scheduler; running: RunningJob[] } => {
      const s = cluster(2);
      // big never checkpointed (counts from its start); the small ones checkpointed a minute ago.
      const running = [
        run(s, job('big', 8), 'n0'),
        run(s, job('sa', 4), 'n1', { lastCheckpointMs: NOW - 60_000 }),
        run(s, job('sb', 4), 'n1', { lastCheckpointMs: NOW - 60_000 }),
      ];
      return { s, running };
    };
    const a = setup();
    expect(
      cyc(a.s, [job('u', 8, 10, 'node')], a.running, true)
        .preempted.map((p) => p.victim.id)
        .sort(),
    ).toEqual(['sa', 'sb']);
    const b = setup();
    expect(cyc(b.s, [job('u', 8, 10, 'node')], b.running, false).preempted.map((p) => p.victim.id)).toEqual(['big']);
  });

  it('asks a checkpointable victim for a checkpoint, evicts nothing, and evicts the whole gang once it committed', () => {
    const s = cluster(1);
    const v = run(s, job('v', 8), 'n0', { checkpointable: true, lastCheckpointMs: 0 });
    const first = cyc(s, [job('u', 8, 10)], [v], true);
    expect(first.preempted).toEqual([]);
    expect(first.checkpointRequests.map((q) => [q.victim.id, q.by, q.deadlineMs])).toEqual([['v', 'u', NOW + 300_000]]);
    expect(first.waiting.get('u')).toMatchObject({
      reason: 'checkpoint-victim',
      message: 'preemption of v waits for the checkpoint asked of them (evicted at the latest in 300 s)',
      steadyMessage: 'preemption of v waits for the checkpoint asked of them',
    });
    expect(s.state.allocation('v-0')).toBeDefined();
    const pending = cyc(s, [job('u', 8, 10)], [{ ...v, checkpointRequestedMs: NOW }], true, NOW + 30_000);
    expect(pending.checkpointRequests).toEqual([]);
    expect(pending.preempted).toEqual([]);
    const done = cyc(s, [job('u', 8, 10)], [{ ...v, checkpointRequestedMs: NOW, lastCheckpointMs: NOW + 89_000 }], true, NOW + 90_000);
    expect(done.preempted.map((p) => p.victim.id)).toEqual(['v']);
    expect(done.preempted[0]?.reason).toContain('after the checkpoint it committed 1 s ago');
    expect(done.started.map((x) => x.job.id)).toEqual(['u']);
  });

  it('a victim whose asked-for checkpoint failed is evicted before its grace, and the reason says so', () => {
    const s = cluster(1);
    const v = run(s, job('v', 8), 'n0', { checkpointable: true, lastCheckpointMs: 0, checkpointRequestedMs: NOW });
    expect(cyc(s, [job('u', 8, 10)], [v], true, NOW + 20_000).preempted).toEqual([]);
    const r = cyc(s, [job('u', 8, 10)], [{ ...v, checkpointFailedMs: NOW }], true, NOW + 20_000);
    expect(r.preempted.map((p) => p.victim.id)).toEqual(['v']);
    expect(r.preempted[0]?.reason).toContain('the checkpoint asked of it failed');
  });

  it('off, the same victim is evicted at once and no checkpoint is asked for', () => {
    const s = cluster(1);
    const v = run(s, job('v', 8), 'n0', { checkpointable: true, lastCheckpointMs: 0 });
    const r = cyc(s, [job('u', 8, 10)], [v], false);
    expect(r.preempted.map((p) => p.victim.id)).toEqual(['v']);
    expect(r.checkpointRequests).toEqual([]);
  });
});

describe('defragmentation by migration', () => {
  const fragmented = (): { s: Scheduler; a: RunningJob; b: RunningJob } => {
    const s = cluster(2);
    return { s, a: run(s, job('a', 4), 'n0', { checkpointable: true }), b: run(s, job('b', 4), 'n1', { checkpointable: true }) };
  };
  const gangOf = (r: RunningJob): QueuedJob['gang'] => job(r.id, r.resources.gpuMilli / 1000).gang;

  it('frees a whole node when the earlier start pays for checkpoint and restore, and commits it in one statement', () => {
    const { s, a, b } = fragmented();
    const g = job('g', 8);
    const expected = expectedStartMs(s, g.gang, [a, b], NOW);
    expect(expected).toBe(86_400_000);
    const plan = planMigration({ nowMs: NOW, scheduler: s, job: g, movable: [a, b].map((r) => ({ job: r, gang: gangOf(r) })), expectedStartMs: expected });
    expect(plan?.moves.map((m) => [m.job.id, m.to.map((x) => x.node)])).toEqual([['a', ['n1']]]);
    expect(plan?.costGpuMs).toBe(4 * (44_500 + 44_500));
    expect(plan?.startMs).toBe(NOW + 44_500);
    // Planning changed nothing.
    expect(s.state.allocation('a-0')?.node).toBe('n0');
    const placed = commitMigration(s, plan as NonNullable<typeof plan>);
    expect(placed.map((p) => p.node)).toEqual(['n0']);
    expect(s.state.allocation('a-0')?.node).toBe('n1');
    expect(s.state.allocation('b-0')?.node).toBe('n1');
  });

  it('does not move when the gang would start soon anyway, when GPUs are short, or when it fits', () => {
    const { s, a, b } = fragmented();
    const movable = [a, b].map((r) => ({ job: r, gang: gangOf(r) }));
    // Starting 10 s earlier is not worth 4 GPU × 89 s.
    expect(planMigration({ nowMs: NOW, scheduler: s, job: job('g', 8), movable, expectedStartMs: NOW + 10_000 + 44_500 })).toBeUndefined();
    // 12 GPUs asked, 8 free: capacity, not fragmentation.
    expect(planMigration({ nowMs: NOW, scheduler: s, job: job('g', 12), movable, expectedStartMs: Infinity })).toBeUndefined();
    expect(planMigration({ nowMs: NOW, scheduler: s, job: job('g', 4), movable, expectedStartMs: Infinity })).toBeUndefined();
  });

  it('says why it gives no plan', () => {
    const { s, a, b } = fragmented();
    const movable = [a, b].map((r) => ({ job: r, gang: gangOf(r) }));
    const why = (j: QueuedJob, expectedStartMs: number, m = movable): string[] => {
      const out: string[] = [];
      expect(planMigration({ nowMs: NOW, scheduler: s, job: j, movable: m, expectedStartMs, onNoPlan: (r) => out.push(r) })).toBeUndefined();
      return out;
    };
    expect(why(job('g', 12), Infinity)).toEqual(['short']);
    expect(why(job('g', 4), Infinity)).toEqual(['fits']);
    expect(why(job('g', 8), NOW + 10_000 + 44_500)).toEqual(['no-gain']);
    expect(why(job('g', 8), Infinity, [])).toEqual(['no-domain']);
    // A plan that pays is not a "no plan".
    const told: string[] = [];
    expect(planMigration({ nowMs: NOW, scheduler: s, job: job('g', 8), movable, expectedStartMs: Infinity, onNoPlan: (r) => told.push(r) })).toBeDefined();
    expect(told).toEqual([]);
  });

  it('a move that would redo work costs that work (a job that cannot checkpoint)', () => {
    const { s, a, b } = fragmented();
    const plain = { ...a, checkpointable: false, lastCheckpointMs: NOW - 3_600_000 };
    const plan = planMigration({
      nowMs: NOW,
      scheduler: s,
      job: job('g', 8),
      movable: [plain, b].map((r) => ({ job: r, gang: gangOf(r) })),
      expectedStartMs: 86_400_000,
    });
    // b (checkpointable) is the cheaper move; a would redo 4 GPU × 1 h.
    expect(plan?.moves.map((m) => m.job.id)).toEqual(['b']);
  });
});
