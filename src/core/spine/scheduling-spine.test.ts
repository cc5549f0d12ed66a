import { describe, expect, it } from 'vitest';
import { jobResources, type QueuedJob, type RunningJob } from '../actions/jobs.ts';
import { runCycle, type CycleResult } from '../actions/queue-cycle.ts';
import { resolveProfile } from '../plugins/registry.ts';
import { Scheduler } from '../framework/scheduler.ts';
import type { NodeSpec } from '../model/node.ts';
import { makePod } from '../model/pod.ts';
import { ddpJob } from '../estimate/step-time.ts';
import { nvswitchAndPcieNodes } from '../framework/gang-choice-testing.ts';
import { GANG_CHOICE } from '../framework/gang-choice.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import { seededRng, type BindBatch, type SchedulingEvent } from '../ports.ts';
import { makeQueue, type QueueSpec } from '../queue/model.ts';
import { SchedulingQueue, SIM_QUEUE_TIMING } from '../queue/scheduling-queue.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { commitToPorts } from '../statement/commit-to-ports.ts';
import { SchedulingSpine } from './scheduling-spine.ts';

const H = 3_600_000;

function nodes(n: number): NodeSpec[] {
  const s = NODE_SHAPES['dgx-h100'];
  if (s === undefined) throw new Error('no preset');
  return Array.from({ length: n }, (_, i) => ({
    name: `n-${i}`,
    cpuMilli: s.cpuMilli,
    memoryMiB: s.memoryMiB,
    maxPods: s.maxPods,
    gpus: s.gpus,
    topology: s.topology,
    location: { zone: 'z', block: 'b', rack: `r-${i % 2}` },
    labels: {},
    taints: [],
    unschedulable: false,
  }));
}

const gpu = (g: number): { gpuMilli: number; cpuMilli: number; memoryMiB: number } => ({ gpuMilli: g * 1000, cpuMilli: Infinity, memoryMiB: Infinity });
const QUEUES = new Map<string, QueueSpec>([
  // Quota enough for the whole cluster each: the waits are for capacity, fair share and reservations.
  ['a', makeQueue('a', { weight: 2, cohort: 'c', nominal: gpu(64) })],
  ['b', makeQueue('b', { weight: 1, cohort: 'c', nominal: gpu(64) })],
  ['c', makeQueue('c', { weight: 1, cohort: 'c', nominal: gpu(64) })],
]);

/**
 * Seeded jobs: gangs of 1–4 pods of 1, 2, 4 or 8 GPUs, three queues, a few priorities, arrivals over the
 * first `arrivalH` hours, runs of 1–4 h: a busy phase, then long quiet stretches between completions.
 */
function workload(seed: number, count: number, arrivalH = 2): { job: QueuedJob; runMs: number }[] {
  const rng = seededRng(seed);
  const out: { job: QueuedJob; runMs: number }[] = [];
  for (let i = 0; i < count; i++) {
    const queue = ['a', 'b', 'c'][rng.int(3)] as string;
    const per = [1, 2, 4, 8][rng.int(4)] as number;
    const members = 1 + (per === 8 ? rng.int(4) : 0);
    const priority = rng.int(3) * 10;
    const id = `j-${i}`;
    const pods = Array.from({ length: members }, (_, k) =>
      makePod(`${id}-${k}`, { gpuCount: per, cpuMilli: 1000 * per, memoryMiB: 4096 * per }, { gang: id, queue, priority }),
    );
    const runMs = (1 + rng.next() * 3) * H;
    out.push({
      job: {
        id,
        queue,
        priority,
        arrivalMs: Math.floor(rng.next() * arrivalH * H),
        seq: i,
        gang: { name: id, minMember: members, members: pods, topology: members > 1 ? { preferred: 'rack' } : {}, priority, queue },
        estRuntimeMs: runMs,
      },
      runMs,
    });
  }
  return out.sort((x, y) => x.job.arrivalMs - y.job.arrivalMs || x.job.seq! - y.job.seq!);
}

interface Run {
  readonly decisions: string[];
  readonly attempted: number;
  readonly binds: readonly BindBatch[];
  readonly evicted: readonly string[];
  readonly events: readonly SchedulingEvent[];
}

/**
 * Cycles every minute for 10 h over the workload: with the spine (parked jobs not tried again), or, as the
 * reference, with the queue cycle run over every waiting job each time.
 */
function simulate(seed: number, viaSpine: boolean): Run {
  const profile = resolveProfile('sits', { typicalShapes: [] });
  if (!profile.ok) throw new Error('profile');
  const state = new ClusterState(nodes(8));
  const binds: BindBatch[] = [];
  const events: SchedulingEvent[] = [];
  const evicted: string[] = [];
  const scheduler = new Scheduler(
    profile.value,
    state,
    seededRng(1),
    commitToPorts({ binder: { bind: (b) => binds.push(b) }, evictor: { evict: (p) => evicted.push(...p) } }),
  );
  const queue = new SchedulingQueue(SIM_QUEUE_TIMING);
  const spine = new SchedulingSpine(queue, {
    events: { emit: (e) => events.push(e) },
    status: { unschedulable: () => undefined, expectedStart: () => undefined },
  });
  const jobs = workload(seed, 120);
  const runOf = new Map(jobs.map((j) => [j.job.id, j.runMs]));
  const pending = new Map<string, QueuedJob>();
  const running = new Map<string, RunningJob>();
  const decisions: string[] = [];
  let attempted = 0;
  let next = 0;
  const add = (j: QueuedJob, now: number): void => {
    pending.set(j.id, j);
    queue.add(j, now);
    queue.onEvent({ kind: 'arrived', queue: j.queue }, now);
  };
  for (let now = 0; now <= 10 * H; now += 60_000) {
    for (const [id, r] of running) {
      if (r.estEndMs > now) continue;
      for (const p of r.podIds) state.release(p);
      running.delete(id);
      queue.onEvent({ kind: 'freed' }, now);
    }
    while (next < jobs.length && (jobs[next]?.job.arrivalMs as number) <= now) add((jobs[next++] as { job: QueuedJob }).job, now);
    const options = { minRuntimeMs: 20 * 60_000 };
    const res: CycleResult = viaSpine
      ? spine.cycle({ nowMs: now, scheduler, queues: QUEUES, running, options })
      : runCycle({ nowMs: now, scheduler, queues: QUEUES, pending: [...pending.values()], running, options });
    attempted += res.attempted;
    for (const p of res.preempted) {
      running.delete(p.victim.id);
      const back = jobs.find((j) => j.job.id === p.victim.id)?.job as QueuedJob;
      add(back, now);
      decisions.push(`${now} preempt ${p.victim.id} by ${p.by}`);
    }
    for (const s of res.started) {
      pending.delete(s.job.id);
      running.set(s.job.id, {
        id: s.job.id,
        queue: s.job.queue,
        priority: s.job.priority,
        startMs: now,
        estEndMs: now + (runOf.get(s.job.id) as number),
        podIds: s.placements.map((p) => p.podId),
        resources: jobResources(s.job),
        preemptible: true,
      });
      decisions.push(`${now} start ${s.job.id} on ${s.placements.map((p) => `${p.node}:${p.gpus.join('.')}`).join(' ')}`);
    }
    for (const [id, w] of [...res.waiting].sort(([x], [y]) => (x < y ? -1 : 1))) decisions.push(`${now} wait ${id} ${w.reason}: ${w.message}`);
  }
  return { decisions, attempted, binds, evicted, events };
}

describe('SchedulingSpine', () => {
  it.each([3, 11, 29])('parking jobs the cycle could not help never changes a decision (seed %i), and saves work', (seed) => {
    const reference = simulate(seed, false);
    const spine = simulate(seed, true);
    expect(spine.decisions.length).toBeGreaterThan(500);
    expect(spine.decisions.some((d) => d.includes(' preempt '))).toBe(true);
    expect(spine.decisions).toEqual(reference.decisions);
    // Placements tried: the parked jobs are not tried again until something could help them.
    expect(spine.attempted).toBeLessThan(reference.attempted * 0.8);
  });

  it('every start reaches the Binder (gang members in one batch, victims to wait for), waits reach the EventSink once per message', () => {
    const run = simulate(3, true);
    const starts = run.decisions.filter((d) => / start /.test(d) && !d.includes(' wait '));
    expect(run.binds).toHaveLength(starts.length);
    for (const b of run.binds) expect(new Set(b.requests.map((r) => r.podId.replace(/-\d+$/, ''))).size).toBe(1);
    // A preemptor's batch waits for exactly the pods of its victims, which were evicted.
    const preempting = run.binds.filter((b) => b.after.length > 0);
    expect(preempting.length).toBeGreaterThan(0);
    for (const b of preempting) for (const v of b.after) expect(run.evicted).toContain(v);
    // A wait is told once: never the same message twice in a row for a pod.
    const last = new Map<string, string>();
    for (const e of run.events) {
      // After a preemption the job waits afresh: its first wait is told again.
      if (e.kind === 'Preempted') last.delete(e.subject);
      if (e.kind !== 'FailedScheduling') continue;
      expect(last.get(e.subject)).not.toBe(e.message);
      last.set(e.subject, e.message);
    }
    expect(run.events.some((e) => e.kind === 'Preempted')).toBe(true);
  });
});

describe('SchedulingSpine reports', () => {
  it('tells a waiting job once per message, and again when its pods were recreated', () => {
    const profile = resolveProfile('sits', { typicalShapes: [] });
    if (!profile.ok) throw new Error('profile');
    const state = new ClusterState(nodes(1));
    const scheduler = new Scheduler(
      profile.value,
      state,
      seededRng(1),
      commitToPorts({ binder: { bind: () => undefined }, evictor: { evict: () => undefined } }),
    );
    const told: string[] = [];
    const queue = new SchedulingQueue(SIM_QUEUE_TIMING);
    const spine = new SchedulingSpine(queue, {
      events: { emit: () => undefined },
      status: { unschedulable: (pods, m) => told.push(`${pods.join(',')}: ${m}`), expectedStart: () => undefined },
    });
    const big = workload(3, 1)[0]?.job as QueuedJob;
    const tooBig: QueuedJob = {
      ...big,
      id: 'x',
      gang: { ...big.gang, name: 'x', minMember: 2, members: [0, 1].map((k) => makePod(`x-${k}`, { gpuCount: 8 }, { gang: 'x', queue: big.queue })) },
    };
    queue.add(tooBig, 0);
    const input = { scheduler, queues: QUEUES, running: new Map<string, RunningJob>(), options: { preemption: false } };
    spine.cycle({ nowMs: 0, ...input });
    queue.onEvent({ kind: 'freed' }, 1);
    spine.cycle({ nowMs: 1, ...input });
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/^x-0,x-1: queue .+ holds x \(capacity\): 0\/1 nodes fit gang x/);
    spine.forgetReported(tooBig.id);
    queue.onEvent({ kind: 'freed' }, 2);
    spine.cycle({ nowMs: 2, ...input });
    expect(told).toHaveLength(2);
  });
});

describe('SchedulingSpine: the hold for a better placement (ADR 0191)', () => {
  /**
   * One NVSwitch A100 node, busy with a job expected to end at 1 h, and one PCIe-only A100 node, free; a 2.7B GPT job
   * of 8 GPUs that arrived at 0. Its slowness on the PCIe node is the links: it holds for the NVSwitch node to free
   * for up to a day (ADR 0200), as long as that is expected in time (a job past its expected end is expected to end now).
   */
  function setup(): { scheduler: Scheduler; job: QueuedJob } {
    const p = resolveProfile('sits', { typicalShapes: [] });
    if (!p.ok) throw new Error('profile');
    const profile = { ...p.value, stepTimeArgs: { modelOf: () => ddpJob('gpt-3b', 2048, 4) } };
    const state = new ClusterState(nvswitchAndPcieNodes());
    state.allocate({ podId: 'busy', node: 'a-nvswitch', gpus: [0, 1, 2, 3, 4, 5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'a' });
    const scheduler = new Scheduler(profile, state, seededRng(1), commitToPorts({ binder: { bind: () => undefined }, evictor: { evict: () => undefined } }));
    const members = Array.from({ length: 8 }, (_, k) => makePod(`g-${k}`, { gpuCount: 1, cpuMilli: 1000, memoryMiB: 1024 }, { gang: 'g', queue: 'a' }));
    const job: QueuedJob = {
      id: 'g',
      queue: 'a',
      priority: 0,
      arrivalMs: 0,
      gang: { name: 'g', minMember: 8, members, topology: {}, priority: 0, queue: 'a' },
      estRuntimeMs: H,
    };
    return { scheduler, job };
  }
  const busy: RunningJob = {
    id: 'busy',
    queue: 'a',
    priority: 0,
    startMs: 0,
    estEndMs: H,
    podIds: ['busy'],
    resources: { gpuMilli: 8000, cpuMilli: 0, memoryMiB: 0 },
    preemptible: true,
  };
  const input = { queues: QUEUES, running: new Map<string, RunningJob>([['busy', busy]]), options: { preemption: false } };

  it('a gang that queued longer than the cap is still held once it fits, and placed when the cap from then runs out', () => {
    const { scheduler, job } = setup();
    const queue = new SchedulingQueue(SIM_QUEUE_TIMING);
    const spine = new SchedulingSpine(queue, { events: { emit: () => undefined }, status: { unschedulable: () => undefined, expectedStart: () => undefined } });
    const t0 = 2 * H;
    queue.add(job, t0);
    const first = spine.cycle({ nowMs: t0, scheduler, ...input });
    expect(first.started).toEqual([]);
    const w = first.waiting.get('g');
    expect(w?.reason).toBe('better-placement');
    expect(w?.message).toMatch(/waited 0 of at most \d+ s; a better one expected free in 0 s$/);
    const capMs = 1000 * Number(/at most (\d+) s/.exec(w?.message ?? '')?.[1]);
    expect(capMs).toBe(GANG_CHOICE.linkHoldMs);
    // A host that runs cycles only on events (the simulator, `sits bench training`) learns when the hold runs out.
    expect(w?.retryAtMs).toBe(t0 + capMs);
    expect(queue.nextWakeMs()).toBe(t0 + capMs);
    // Just before the cap, counted from the first hold (not from arrival, two hours back), it still waits.
    const before = spine.cycle({ nowMs: t0 + capMs - 1000, scheduler, ...input });
    expect(before.started).toEqual([]);
    expect(before.waiting.get('g')?.message).toMatch(new RegExp(`waited ${capMs / 1000 - 1} of at most ${capMs / 1000} s;`));
    expect(queue.nextWakeMs()).toBe(t0 + capMs);
    // At the cap it takes the PCIe node: no gang starves for a better placement.
    const at = spine.cycle({ nowMs: t0 + capMs, scheduler, ...input });
    expect(at.started.map((s) => [...new Set(s.placements.map((p) => p.node))])).toEqual([['b-pcie']]);
  });

  it('a held gang retried every cycle is written to the API once: the status and Events say the hold without the seconds waited', () => {
    const { scheduler, job } = setup();
    const queue = new SchedulingQueue(SIM_QUEUE_TIMING);
    const writes: { pods: readonly string[]; message: string }[] = [];
    const events: SchedulingEvent[] = [];
    const holds: { pods: readonly string[]; atMs: number }[] = [];
    const spine = new SchedulingSpine(queue, {
      events: { emit: (e) => events.push(e) },
      status: {
        unschedulable: (pods, message) => writes.push({ pods, message }),
        expectedStart: () => undefined,
        heldSince: (pods, atMs) => holds.push({ pods, atMs }),
      },
    });
    queue.add(job, 0);
    const messages: string[] = [];
    for (let t = 0; t < 5_000; t += 1_000) {
      const r = spine.cycle({ nowMs: t, scheduler, ...input });
      expect(r.started).toEqual([]);
      messages.push(r.waiting.get('g')?.message ?? '');
    }
    // The cycle's own message counts the seconds (explain and the simulator show it)...
    expect(messages.map((m) => /waited (\d+) of/.exec(m)?.[1])).toEqual(['0', '1', '2', '3', '4']);
    // ...the API gets one write per pod for the whole hold, in words that stay true while it lasts.
    expect(writes).toHaveLength(1);
    expect(writes[0]?.pods).toHaveLength(8);
    expect(writes[0]?.message).toMatch(
      /^queue a holds g \(better-placement\): gang g \(8×1 GPU\) waits for a better placement: .*; holds while a better one is expected to free, at most \d+ s$/,
    );
    expect(events).toHaveLength(8);
    // The hold's clock is recorded once, at the first hold, for every member.
    expect(holds).toEqual([{ pods: job.gang.members.map((m) => m.id), atMs: 0 }]);
  });

  it('a hold recorded by an earlier leader keeps its clock: the gang is placed when the cap from that first hold runs out', () => {
    const { scheduler, job } = setup();
    // The cap of this gang's hold, as a fresh spine reports it.
    const probe = new SchedulingSpine(new SchedulingQueue(SIM_QUEUE_TIMING), {
      events: { emit: () => undefined },
      status: { unschedulable: () => undefined, expectedStart: () => undefined },
    });
    probe.queue.add(job, 0);
    const capS = Number(/at most (\d+) s/.exec(probe.cycle({ nowMs: 0, scheduler, ...input }).waiting.get('g')?.message ?? '')?.[1]);
    expect(capS).toBeGreaterThan(10);
    const queue = new SchedulingQueue(SIM_QUEUE_TIMING);
    const holds: number[] = [];
    const spine = new SchedulingSpine(queue, {
      events: { emit: () => undefined },
      status: { unschedulable: () => undefined, expectedStart: () => undefined, heldSince: (_, atMs) => holds.push(atMs) },
    });
    const t0 = 5 * H;
    queue.add(job, t0);
    // Held since 10 s short of its cap (another leader's record), and a record for a job not in the queue (ignored).
    const recordedHolds = new Map([
      ['g', t0 - (capS - 10) * 1000],
      ['gone', 0],
    ]);
    const before = spine.cycle({ nowMs: t0, scheduler, ...input, recordedHolds });
    expect(before.waiting.get('g')?.message).toMatch(new RegExp(`waited ${capS - 10} of at most ${capS} s;`));
    expect(holds).toEqual([]);
    const at = spine.cycle({ nowMs: t0 + 10_000, scheduler, ...input, recordedHolds });
    expect(at.started.map((x) => x.job.id)).toEqual(['g']);
  });

  it('a host that tracks no hold times counts from arrival: the same gang, a day old, is placed at once', () => {
    const { scheduler, job } = setup();
    expect(runCycle({ nowMs: 2 * H, scheduler, pending: [job], ...input }).started).toEqual([]);
    const r = runCycle({ nowMs: GANG_CHOICE.linkHoldMs, scheduler, pending: [job], ...input });
    expect(r.started.map((s) => s.job.id)).toEqual(['g']);
  });

  it('gangs alike held in one cycle share one plan of when their layout frees', () => {
    const trials = (n: number): { trials: number; messages: string[] } => {
      const { scheduler, job } = setup();
      const jobs = Array.from({ length: n }, (_, i) => {
        const id = `g${i}`;
        const members = job.gang.members.map((m, k) => ({ ...m, id: `${id}-${k}`, gang: id }));
        return { ...job, id, seq: i, gang: { ...job.gang, name: id, members } };
      });
      const before = scheduler.counters.domainTrials;
      const r = runCycle({ nowMs: 0, scheduler, pending: jobs, ...input });
      return { trials: scheduler.counters.domainTrials - before, messages: jobs.map((j) => r.waiting.get(j.id)?.message ?? '') };
    };
    const [one, two, three] = [trials(1), trials(2), trials(3)];
    expect(three.messages.every((m) => m.endsWith('; a better one expected free in 3600 s'))).toBe(true);
    // Each gang tries its own placements; the plan's trial placements are made for the first gang only.
    const own = three.trials - two.trials;
    expect(two.trials - one.trials).toBe(own);
    expect(own).toBeLessThan(one.trials / 2);
  });

  it('holds only while its layout is expected to free in time: with the NVSwitch node busy past the hold, it takes the PCIe node at once', () => {
    const { scheduler, job } = setup();
    const running = new Map([['busy', { ...busy, estEndMs: 2 * GANG_CHOICE.linkHoldMs }]]);
    const r = runCycle({ nowMs: 0, scheduler, pending: [job], ...input, running });
    expect(r.started.map((s) => [...new Set(s.placements.map((p) => p.node))])).toEqual([['b-pcie']]);
  });
});
