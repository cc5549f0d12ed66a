import { describe, expect, it } from 'vitest';
import { disruptionsAllowed, lessCost, pdbViolations, type DisruptionBudget } from './disruption.ts';
import { runCycle } from './queue-cycle.ts';
import type { QueuedJob, RunningJob } from './jobs.ts';
import { Scheduler } from '../framework/scheduler.ts';
import { resolveProfile } from '../plugins/registry.ts';
import { ClusterState } from '../snapshot/cluster-state.ts';
import { NODE_SHAPES } from '../model/presets.ts';
import { makePod } from '../model/pod.ts';
import { makeQueue } from '../queue/model.ts';
import { seededRng } from '../ports.ts';

const budget = (name: string, pods: string[], allowed: number): DisruptionBudget => ({ name, podIds: new Set(pods), disruptionsAllowed: allowed });

describe('pdbViolations (kube filterPodsWithPDBViolation)', () => {
  it('counts the victims that take a budget below zero, in order', () => {
    const b = [budget('ns/a', ['p1', 'p2', 'p3'], 1)];
    expect(pdbViolations(['p1'], b)).toEqual({ count: 0, budgets: [] });
    expect(pdbViolations(['p1', 'p2', 'p3'], b)).toEqual({ count: 2, budgets: ['ns/a'] });
    expect(pdbViolations(['x', 'y'], b).count).toBe(0);
  });
  it('a pod under two budgets is one violation, and names both', () => {
    const b = [budget('ns/b', ['p'], 0), budget('ns/a', ['p'], 0)];
    expect(pdbViolations(['p'], b)).toEqual({ count: 1, budgets: ['ns/a', 'ns/b'] });
  });
  it('no budgets: nothing to violate', () => {
    expect(pdbViolations(['p'], [])).toEqual({ count: 0, budgets: [] });
  });
});

describe('disruptionsAllowed (the disruption controller)', () => {
  it('minAvailable as a number or a percentage (rounded up)', () => {
    expect(disruptionsAllowed({ minAvailable: 2 }, 3, 3)).toBe(1);
    expect(disruptionsAllowed({ minAvailable: 2 }, 3, 2)).toBe(0);
    expect(disruptionsAllowed({ minAvailable: '50%' }, 3, 3)).toBe(1);
  });
  it('maxUnavailable as a number or a percentage (rounded up)', () => {
    expect(disruptionsAllowed({ maxUnavailable: 1 }, 4, 4)).toBe(1);
    expect(disruptionsAllowed({ maxUnavailable: 1 }, 4, 3)).toBe(0);
    expect(disruptionsAllowed({ maxUnavailable: '30%' }, 4, 4)).toBe(2);
    expect(disruptionsAllowed({ maxUnavailable: 0 }, 4, 4)).toBe(0);
  });
  it('never negative; no pods expected = no disruptions', () => {
    expect(disruptionsAllowed({ minAvailable: 5 }, 3, 3)).toBe(0);
    expect(disruptionsAllowed({ maxUnavailable: 1 }, 0, 0)).toBe(0);
  });
});

describe('lessCost (kube pickOneNodeForPreemption order)', () => {
  it('fewest PDB violations beats a lower victim priority; then priority, count, lost work', () => {
    expect(lessCost([0, 10, 1, 0], [1, 0, 1, 0])).toBe(true);
    expect(lessCost([1, 0, 1, 0], [0, 10, 1, 0])).toBe(false);
    expect(lessCost([0, 1, 3, 0], [0, 2, 1, 0])).toBe(true);
    expect(lessCost([0, 1, 1, 5], [0, 1, 2, 0])).toBe(true);
    expect(lessCost([0, 1, 1, 5], [0, 1, 1, 5])).toBe(false);
  });
});

describe('queue cycle: preemptionPolicy Never binds pods outside any Queue only', () => {
  const setup = (): { s: Scheduler; low: RunningJob; urgent: QueuedJob } => {
    const shape = NODE_SHAPES['dgx-h100'];
    if (shape === undefined) throw new Error('shape');
    const p = resolveProfile('sits', { typicalShapes: [] });
    if (!p.ok) throw new Error('profile');
    const s = new Scheduler(
      p.value,
      new ClusterState([
        {
          name: 'n0',
          cpuMilli: shape.cpuMilli,
          memoryMiB: shape.memoryMiB,
          maxPods: 110,
          gpus: shape.gpus,
          topology: shape.topology,
          location: { zone: 'z', block: 'b', rack: 'r' },
          labels: {},
          taints: [],
          unschedulable: false,
        },
      ]),
      seededRng(1),
    );
    const lowPod = makePod('low-0', { gpuCount: 8 }, { gang: 'low', queue: 'team' });
    const placed = s.scheduleGang({ name: 'low', minMember: 1, members: [lowPod], topology: {}, priority: 0, queue: 'team' });
    if (!placed.ok) throw new Error('place');
    const low: RunningJob = {
      id: 'low',
      queue: 'team',
      priority: 0,
      startMs: 0,
      estEndMs: 1e9,
      podIds: ['low-0'],
      resources: { gpuMilli: 8000, cpuMilli: 1000, memoryMiB: 1024 },
      preemptible: true,
    };
    const pod = makePod('urgent-0', { gpuCount: 8 }, { gang: 'urgent', queue: 'team', priority: 100, preemptionPolicy: 'Never' });
    const urgent: QueuedJob = {
      id: 'urgent',
      queue: 'team',
      priority: 100,
      arrivalMs: 0,
      gang: { name: 'urgent', minMember: 1, members: [pod], topology: {}, priority: 100, queue: 'team' },
      estRuntimeMs: 1000,
    };
    return { s, low, urgent };
  };
  it('outside any Queue it waits and says why', () => {
    const { s, low, urgent } = setup();
    const r = runCycle({ nowMs: 1e8, scheduler: s, queues: new Map(), pending: [urgent], running: new Map([['low', low]]) });
    expect(r.preempted).toEqual([]);
    expect(r.waiting.get('urgent')?.message).toContain('preemptionPolicy Never: waits for room, preempts nothing');
  });
  it("in a declared Queue the queue's preemption policy decides (the guard rule's advice stays valid)", () => {
    const { s, low, urgent } = setup();
    const r = runCycle({ nowMs: 1e8, scheduler: s, queues: new Map([['team', makeQueue('team', {})]]), pending: [urgent], running: new Map([['low', low]]) });
    expect(r.preempted.map((p) => p.victim.id)).toEqual(['low']);
  });
});

describe('queue cycle: budgets given as a function', () => {
  it('are computed once, and only when a preemption is planned; a protected victim is avoided', () => {
    const shape = NODE_SHAPES['dgx-h100'];
    if (shape === undefined) throw new Error('shape');
    const p = resolveProfile('sits', { typicalShapes: [] });
    if (!p.ok) throw new Error('profile');
    const node = (name: string) => ({
      name,
      cpuMilli: shape.cpuMilli,
      memoryMiB: shape.memoryMiB,
      maxPods: 110,
      gpus: shape.gpus,
      topology: shape.topology,
      location: { zone: 'z', block: 'b', rack: 'r' },
      labels: {},
      taints: [],
      unschedulable: false,
    });
    const s = new Scheduler(p.value, new ClusterState([node('n0'), node('n1')]), seededRng(1));
    const running = new Map<string, RunningJob>();
    for (const id of ['db', 'web']) {
      const placed = s.scheduleGang({
        name: id,
        minMember: 1,
        members: [makePod(`${id}-0`, { gpuCount: 8 }, { gang: id })],
        topology: {},
        priority: 0,
        queue: 'default',
      });
      if (!placed.ok) throw new Error('place');
      running.set(id, {
        id,
        queue: 'default',
        priority: id === 'db' ? 0 : 5,
        startMs: 0,
        estEndMs: 1e9,
        podIds: [`${id}-0`],
        resources: { gpuMilli: 8000, cpuMilli: 1000, memoryMiB: 1024 },
        preemptible: true,
      });
    }
    const job = (id: string, gpus: number): QueuedJob => ({
      id,
      queue: 'default',
      priority: 100,
      arrivalMs: 0,
      gang: {
        name: id,
        minMember: 1,
        members: [makePod(`${id}-0`, { gpuCount: gpus }, { gang: id, priority: 100 })],
        topology: {},
        priority: 100,
        queue: 'default',
      },
      estRuntimeMs: 1000,
    });
    let calls = 0;
    const budgets = (): DisruptionBudget[] => {
      calls++;
      return [budget('ml/db', ['db-0'], 0)];
    };
    const none = runCycle({ nowMs: 1e8, scheduler: s, queues: new Map(), pending: [], running, disruptionBudgets: budgets });
    expect([none.started.length, calls]).toEqual([0, 0]);
    const r = runCycle({ nowMs: 1e8, scheduler: s, queues: new Map(), pending: [job('u', 8)], running, disruptionBudgets: budgets });
    expect(r.preempted.map((x) => x.victim.id)).toEqual(['web']);
    expect(calls).toBe(1);
  });
});
