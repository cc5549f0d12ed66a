// Unit tests of the queue cycle. The behaviours issue 6 names (quota, borrowing and reclaim, Kueue #4329, 4/2/1
// shares, backfill behind a reservation, whole-gang preemption, critical phases, no loops) are declarative
// scenarios in scenarios/queues/, run by src/app/scenario.test.ts; what is here tests finer cases.
import { describe, expect, it } from 'vitest';
import { cycleActions, runCycle, type CycleOptions, type CycleResult } from './queue-cycle.ts';
import { cluster, G, job, mixed, queues, start } from './cycle-testing.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import { Scheduler } from '../framework/scheduler.ts';
import { buildProfile, formatProfileError, profileConfig } from '../plugins/registry.ts';
import { CYCLE_ACTION_NAMES, type CycleActionName } from '../framework/types.ts';
import { seededRng } from '../ports.ts';
import { makePod } from '../model/pod.ts';
import { makeQueue, type QueuePreemption, type QueueSpec } from '../queue/model.ts';

const startedIds = (r: CycleResult): string[] => r.started.map((x) => x.job.id).sort();
const cycle = (
  s: Scheduler,
  qs: Map<string, QueueSpec>,
  pending: QueuedJob[],
  running: RunningJob[] = [],
  nowMs = 10_000_000,
  options: Partial<CycleOptions> = {},
): CycleResult => runCycle({ nowMs, scheduler: s, queues: qs, pending, running: new Map(running.map((r) => [r.id, r])), options });

describe('queue cycle: per GPU model quota', () => {
  it('a model whose quota is used up is taken out of the gang’s choice; a job that needs only it waits for quota', () => {
    const s = mixed(['dgx-h100', 'dgx-h100', 'hgx-a100']);
    const qs = queues(
      makeQueue('a', { models: { 'H100-SXM': { nominalGpuMilli: 8000, borrowingLimitGpuMilli: 0, lendingLimitGpuMilli: 0, guaranteedGpuMilli: 0 } } }),
    );
    const h = job('h', 'a', 1, 8);
    const r0 = s.scheduleGang(h.gang);
    if (!r0.ok) throw new Error('setup');
    expect(r0.placements[0]?.node.startsWith('dgx-h100')).toBe(true);
    const running: RunningJob = {
      id: 'h',
      queue: 'a',
      priority: 0,
      startMs: 0,
      estEndMs: 3_600_000,
      podIds: ['h-0'],
      resources: { gpuMilli: 8000, cpuMilli: 1000, memoryMiB: 1024 },
      gpuModel: 'H100-SXM',
      preemptible: true,
    };
    const anyModel = job('any', 'a', 1, 4);
    const onlyH100: QueuedJob = {
      ...job('only', 'a', 1, 4),
      gang: {
        ...job('only-g', 'a', 1, 4).gang,
        members: [makePod('only-0', { gpuCount: 4, cpuMilli: 1000, memoryMiB: 1024 }, { gang: 'only', queue: 'a', gpuModels: ['H100-SXM'] })],
      },
    };
    const r = cycle(s, qs, [anyModel, onlyH100], [running], 10_000, { preemption: false });
    expect(startedIds(r)).toEqual(['any']);
    expect(r.started[0]?.placements.every((p) => p.node.startsWith('hgx-a100'))).toBe(true); // free H100s exist, but not in a's H100 quota
    expect(r.waiting.get('only')).toEqual({ reason: 'quota', message: 'queue a quota: 12 H100-SXM GPUs would exceed nominal 8' });
  });
});

describe('queue cycle: weighted fair share', () => {
  it('weights 4/2/1 give shares 4/2/1 of a contended cluster', () => {
    const s = cluster('dgx-h100', 2, 4); // 64 GPUs
    const qs = queues(makeQueue('gold', { weight: 4 }), makeQueue('silver', { weight: 2 }), makeQueue('bronze', { weight: 1 }));
    const pending: QueuedJob[] = [];
    for (const q of ['bronze', 'silver', 'gold']) for (let i = 0; i < 64; i++) pending.push(job(`${q}-${i}`, q, 1, 1));
    const r = cycle(s, qs, pending);
    const count = (q: string): number => r.started.filter((x) => x.job.queue === q).length;
    expect(count('gold') + count('silver') + count('bronze')).toBe(64);
    // 64 × 4/7 ≈ 36.6, × 2/7 ≈ 18.3, × 1/7 ≈ 9.1; DRF on unit jobs lands within one job of that.
    expect(Math.abs(count('gold') - (64 * 4) / 7)).toBeLessThanOrEqual(1);
    expect(Math.abs(count('silver') - (64 * 2) / 7)).toBeLessThanOrEqual(1);
    expect(Math.abs(count('bronze') - 64 / 7)).toBeLessThanOrEqual(1);
  });
});

describe('queue cycle: explanations', () => {
  it('jobs of one shape held in one cycle each get the explanation with their own name', () => {
    const s = cluster('dgx-h100', 1, 1);
    const r = cycle(s, queues(makeQueue('a')), [job('big-1', 'a', 2, 8), job('big-2', 'a', 2, 8), job('big-3', 'a', 2, 8)], [], 1_000_000, {
      preemption: false,
      backfill: false,
    });
    expect(startedIds(r)).toEqual([]);
    for (const id of ['big-1', 'big-2', 'big-3']) expect(r.waiting.get(id)?.message).toMatch(new RegExp(`^0/1 nodes fit gang ${id} \\(2×8 GPU\\)`));
  });
});

describe('queue cycle: reservation and backfill', () => {
  it('without backfill (plain FIFO) the long job takes the space and the head waits longer', () => {
    const s = cluster('dgx-h100', 1, 2);
    const now = 1_000_000;
    const run1 = start(s, job('run1', 'a', 1, 4), now - 1000, { estEndMs: now + 600_000 });
    const run2 = start(s, job('run2', 'a', 1, 8), now - 1000, { estEndMs: now + 7_200_000 });
    const r = cycle(s, queues(makeQueue('a')), [job('head', 'a', 1, 8, { arrivalMs: 1 }), job('long', 'a', 1, 4, { arrivalMs: 2 })], [run1, run2], now, {
      preemption: false,
      backfill: false,
    });
    expect(startedIds(r)).toEqual(['long']);
  });
});

describe('queue cycle: a reservation the host holds (a defragmentation plan’s freed domain)', () => {
  const now = 1_000_000;
  const qs = queues(makeQueue('a'));
  const held = [{ jobId: 'big', startMs: now + 90_000, nodes: ['r0-n1'], needs: { 'r0-n1': 8000 } }];
  /** Two 8-GPU nodes, r0-n0 full with two 4-GPU jobs, r0-n1 empty (the freed node). */
  const setup = (): { s: Scheduler; running: Map<string, RunningJob> } => {
    const s = cluster('dgx-h100', 1, 2);
    const rs = [start(s, job('other', 'a', 1, 4), now - 1000), start(s, job('filler', 'a', 1, 4), now - 1000)];
    expect(rs.map((r) => s.state.nodeOfPod(r.podIds[0] as string)?.spec.name)).toEqual(['r0-n0', 'r0-n0']);
    return { s, running: new Map(rs.map((r) => [r.id, r])) };
  };
  const run = (pending: QueuedJob[], withHold: boolean): CycleResult => {
    const { s, running } = setup();
    return runCycle({ nowMs: now, scheduler: s, queues: qs, pending, running, options: { preemption: false }, ...(withHold ? { held } : {}) });
  };

  it('keeps a long job off the held node (it would take it without the hold)', () => {
    expect(startedIds(run([job('moved', 'a', 1, 4)], false))).toEqual(['moved']);
    const r = run([job('moved', 'a', 1, 4)], true);
    expect(startedIds(r)).toEqual([]);
    expect(r.waiting.get('moved')?.reason).toBe('reservation');
    expect(r.waiting.get('moved')?.message).toContain('would delay the reservation of big');
  });

  it('lets a job that ends before the reserved start backfill, and the reserved job itself use the node', () => {
    expect(startedIds(run([job('short', 'a', 1, 4, { estRuntimeMs: 30_000 })], true))).toEqual(['short']);
    const mine = run([job('big', 'a', 1, 8)], true);
    expect(startedIds(mine)).toEqual(['big']);
    expect(mine.started[0]?.placements.map((p) => p.node)).toEqual(['r0-n1']);
  });
});

describe('queue cycle: what a queue accepts', () => {
  const withClass = (j: QueuedJob, priorityClass?: string, namespace?: string): QueuedJob => ({
    ...j,
    ...(priorityClass === undefined ? {} : { priorityClass }),
    ...(namespace === undefined ? {} : { namespace }),
  });

  it('holds a job whose priority class the queue does not accept, and says which it accepts', () => {
    const s = cluster('dgx-h100', 1, 1);
    const qs = queues(makeQueue('a', { priorityClasses: ['train-high', 'train-low'] }));
    const r = cycle(s, qs, [withClass(job('ok', 'a', 1, 1), 'train-low'), withClass(job('other', 'a', 1, 1), 'inference'), job('none', 'a', 1, 1)]);
    expect(startedIds(r)).toEqual(['ok']);
    expect(r.waiting.get('other')).toEqual({
      reason: 'inadmissible',
      message: 'queue a does not accept priority class inference (accepts train-high, train-low)',
    });
    expect(r.waiting.get('none')).toEqual({ reason: 'inadmissible', message: 'queue a accepts priority classes train-high, train-low; the job names none' });
  });

  it('a job naming no priority class is of the queue’s default class', () => {
    const s = cluster('dgx-h100', 1, 1);
    const qs = queues(makeQueue('a', { priorityClasses: ['train-low'], defaultPriorityClass: 'train-low' }));
    expect(startedIds(cycle(s, qs, [job('none', 'a', 1, 1)]))).toEqual(['none']);
  });

  it('holds a job from a namespace the queue does not admit (no namespace means default)', () => {
    const s = cluster('dgx-h100', 1, 1);
    const qs = queues(makeQueue('a', { namespaces: ['team-a'] }));
    const r = cycle(s, qs, [
      withClass(job('mine', 'a', 1, 1), undefined, 'team-a'),
      withClass(job('theirs', 'a', 1, 1), undefined, 'team-b'),
      job('dflt', 'a', 1, 1),
    ]);
    expect(startedIds(r)).toEqual(['mine']);
    expect(r.waiting.get('theirs')).toEqual({ reason: 'inadmissible', message: 'namespace team-b may not submit to queue a (allowed: team-a)' });
    expect(r.waiting.get('dflt')?.message).toBe('namespace default may not submit to queue a (allowed: team-a)');
  });
});

describe('queue cycle: per-queue preemption policy', () => {
  const now = 100_000_000;
  /** Queue b borrows a's 8 GPUs with two gangs of the given priorities; a asks for its 8 back. */
  function reclaimSetup(
    aPolicy: QueuePreemption | undefined,
    bPolicy: QueuePreemption = {},
    prio = { b1: 0, b2: 0, a1: 50 },
    bStartedMs = now - 3_600_000,
  ): { r: CycleResult } {
    const s = cluster('dgx-h100', 1, 2);
    const qs = queues(
      makeQueue('a', { cohort: 'c', nominal: G(8), ...(aPolicy === undefined ? {} : { preemption: aPolicy }) }),
      makeQueue('b', { cohort: 'c', nominal: G(8), preemption: bPolicy }),
    );
    const b1 = start(s, job('b1', 'b', 1, 8, { priority: prio.b1 }), bStartedMs);
    const b2 = start(s, job('b2', 'b', 1, 8, { priority: prio.b2 }), bStartedMs);
    return { r: cycle(s, qs, [job('a1', 'a', 1, 8, { priority: prio.a1 })], [b1, b2], now) };
  }

  it('reclaimWithinCohort Never: a queue under its share does not take its quota back by preemption', () => {
    const { r } = reclaimSetup({ reclaimWithinCohort: 'Never' });
    expect(r.preempted).toEqual([]);
    expect(r.waiting.get('a1')?.reason).toBe('capacity');
  });

  it('reclaimWithinCohort LowerPriority: only another queue’s jobs of lower priority than the preemptor', () => {
    expect(reclaimSetup({ reclaimWithinCohort: 'LowerPriority' }, {}, { b1: 100, b2: 10, a1: 50 }).r.preempted.map((p) => p.victim.id)).toEqual(['b2']);
    expect(reclaimSetup({ reclaimWithinCohort: 'LowerPriority' }, {}, { b1: 100, b2: 100, a1: 50 }).r.preempted).toEqual([]);
    expect(reclaimSetup({ reclaimWithinCohort: 'LowerPriority' }, {}, { b1: 50, b2: 50, a1: 50 }).r.preempted).toEqual([]);
  });

  it('reclaimWithinCohort Any (the default): irrespective of priority', () => {
    expect(reclaimSetup({ reclaimWithinCohort: 'Any' }, {}, { b1: 100, b2: 100, a1: 0 }).r.preempted).toHaveLength(1);
    expect(reclaimSetup(undefined, {}, { b1: 100, b2: 100, a1: 0 }).r.preempted).toHaveLength(1);
  });

  it('withinQueue Never: no preemption of the queue’s own lower-priority jobs', () => {
    const s = cluster('dgx-h100', 1, 1);
    const g1 = start(s, job('g1', 'a', 1, 8), now - 3_600_000);
    const never = cycle(s, queues(makeQueue('a', { preemption: { withinQueue: 'Never' } })), [job('urgent', 'a', 1, 8, { priority: 100 })], [g1], now);
    expect(never.preempted).toEqual([]);
    const lower = cycle(s, queues(makeQueue('a', { preemption: { withinQueue: 'LowerPriority' } })), [job('urgent', 'a', 1, 8, { priority: 100 })], [g1], now);
    expect(lower.preempted.map((p) => p.victim.id)).toEqual(['g1']);
  });

  it('the cooldown is the victim queue’s, not one global value', () => {
    // b's jobs started 10 min ago: b's cooldown of 1 h protects them even though the cycle default is 5 min.
    expect(reclaimSetup({}, { cooldownMs: 3_600_000 }, undefined, now - 600_000).r.preempted).toEqual([]);
    expect(reclaimSetup({}, { cooldownMs: 300_000 }, undefined, now - 600_000).r.preempted).toHaveLength(1);
    // A queue with no cooldown of its own: 1 min old jobs are preempted when the queue says 0, not under the 5 min default.
    expect(reclaimSetup({}, { cooldownMs: 0 }, undefined, now - 60_000).r.preempted).toHaveLength(1);
    expect(reclaimSetup({}, {}, undefined, now - 60_000).r.preempted).toEqual([]);
  });

  it('the critical-phase grace is the victim queue’s: beyond it the preemption is not even deferred', () => {
    const s = cluster('dgx-h100', 1, 1);
    const g1 = start(s, job('g1', 'a', 1, 8), now - 3_600_000, { criticalUntilMs: now + 30_000 });
    const short = cycle(s, queues(makeQueue('a', { preemption: { criticalGraceMs: 10_000 } })), [job('urgent', 'a', 1, 8, { priority: 100 })], [g1], now);
    expect(short.deferred).toEqual([]);
    expect(short.waiting.get('urgent')).toEqual({
      reason: 'critical-victim',
      message: 'preemption of g1 waits for their critical phase (checkpoint/all-reduce) to end in 30 s',
      // What a host writes to the pods: no countdown, so the same wait is not rewritten every cycle.
      steadyMessage: 'preemption of g1 waits for their critical phase (checkpoint/all-reduce) to end',
      retryAtMs: now + 30_000,
    });
    const long = cycle(s, queues(makeQueue('a', { preemption: { criticalGraceMs: 60_000 } })), [job('urgent', 'a', 1, 8, { priority: 100 })], [g1], now);
    expect(long.deferred.map((d) => d.victim.id)).toEqual(['g1']);
  });
});

describe('queues nobody declared', () => {
  it('without any Queue, every job is in its undeclared queue: no quota, only capacity limits it', () => {
    const s = cluster('dgx-h100', 1, 2);
    const r = runCycle({
      nowMs: 0,
      scheduler: s,
      queues: new Map(),
      pending: [job('a', 'team-x', 1, 8), job('b', 'default', 1, 8), job('c', 'default', 1, 8)],
      running: new Map(),
    });
    expect(r.started.map((x) => x.job.id).sort()).toEqual(['a', 'b']);
    expect(r.waiting.get('c')?.reason).toBe('capacity');
  });

  it('with Queues declared, a job naming a queue that does not exist waits for it; the default queue still runs', () => {
    const s = cluster('dgx-h100', 1, 2);
    const r = runCycle({
      nowMs: 0,
      scheduler: s,
      queues: queues(makeQueue('team-a')),
      pending: [job('ghost', 'team-typo', 1, 8), job('plain', 'default', 1, 8)],
      running: new Map(),
    });
    expect(r.started.map((x) => x.job.id)).toEqual(['plain']);
    expect(r.waiting.get('ghost')).toEqual({ reason: 'inadmissible', message: 'queue team-typo does not exist (no Queue object of that name)' });
  });
});

describe('order inside a queue', () => {
  it('the profile queue sort decides: priority, then arrival, then submission order; ties by id', () => {
    // One 8-GPU node: each job needs all of it, so only the first in order starts and the waits show the rest was tried after.
    const s = cluster('dgx-h100', 1, 1);
    const mk = (id: string, o: { priority?: number; arrivalMs: number; seq: number }): QueuedJob => ({
      ...job(id, 'q', 1, 8, { arrivalMs: o.arrivalMs, ...(o.priority === undefined ? {} : { priority: o.priority }) }),
      seq: o.seq,
    });
    const pending = [
      mk('c', { arrivalMs: 5, seq: 2 }),
      mk('b', { arrivalMs: 5, seq: 1 }),
      mk('a', { arrivalMs: 9, seq: 0 }),
      mk('z', { priority: 10, arrivalMs: 100, seq: 3 }),
    ];
    expect(runCycle({ nowMs: 0, scheduler: s, queues: queues(makeQueue('q')), pending, running: new Map() }).started.map((x) => x.job.id)).toEqual(['z']);
    const rest = pending.filter((j) => j.id !== 'z');
    expect(
      runCycle({ nowMs: 0, scheduler: cluster('dgx-h100', 1, 1), queues: queues(makeQueue('q')), pending: rest, running: new Map() }).started.map(
        (x) => x.job.id,
      ),
    ).toEqual(['b']);
    expect(
      runCycle({
        nowMs: 0,
        scheduler: cluster('dgx-h100', 1, 1),
        queues: queues(makeQueue('q')),
        pending: rest.filter((j) => j.id !== 'b'),
        running: new Map(),
      }).started.map((x) => x.job.id),
    ).toEqual(['c']);
  });
});

describe('queue cycle: the actions a profile names (issue 35)', () => {
  const withActions = (s: Scheduler, actions: readonly CycleActionName[]): Scheduler => new Scheduler({ ...s.profile, actions }, s.state, seededRng(1));

  it('without preempt and reserve the cycle only admits and places: a higher-priority job waits on capacity', () => {
    const now = 10_000_000;
    const base = cluster('dgx-h100', 1, 1);
    const low = start(base, job('low', 'a', 1, 8), 0);
    const hi = job('hi', 'a', 1, 8, { priority: 10 });
    const only = cycle(withActions(base, ['admit', 'allocate']), queues(makeQueue('a')), [hi], [low], now);
    expect([only.preempted, only.reservations, only.waiting.get('hi')?.reason]).toEqual([[], [], 'capacity']);
    const all = cycle(withActions(base, CYCLE_ACTION_NAMES), queues(makeQueue('a')), [hi], [low], now);
    expect(all.preempted.map((p) => p.victim.id)).toEqual(['low']);
  });

  it('an unknown action, or a list not beginning with admit, is an error naming it', () => {
    expect(() => cycleActions({ name: 'p', actions: ['admit', 'backfill' as CycleActionName] })).toThrow(
      'profile p: actions: unknown cycle action "backfill" (known: admit, allocate, preempt, reserve)',
    );
    expect(() => cycleActions({ name: 'p', actions: ['allocate', 'admit'] })).toThrow(
      'profile p: actions: the cycle\'s actions must begin with admit (it opens each job\'s attempt), not "allocate"',
    );
    const cfg = profileConfig('sits');
    if (cfg === undefined) throw new Error('sits profile');
    const built = buildProfile({ ...cfg, actions: ['admit', 'reclaim'] }, { typicalShapes: [] });
    expect(built.ok ? 'built' : formatProfileError(built.error)).toBe(
      'profile sits: actions: unknown cycle action "reclaim" (known: admit, allocate, preempt, reserve)',
    );
    const good = buildProfile({ ...cfg, actions: ['admit', 'allocate', 'reserve'] }, { typicalShapes: [] });
    expect(good.ok && good.value.actions).toEqual(['admit', 'allocate', 'reserve']);
  });
});
