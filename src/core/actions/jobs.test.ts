import { describe, expect, it } from 'vitest';
import { makePod } from '../model/pod.ts';
import { jobResources, startedJob, type QueuedJob } from './jobs.ts';

const job = (): QueuedJob => {
  const members = [0, 1].map((i) => makePod(`j-${i}`, { gpuCount: 4, cpuMilli: 8000, memoryMiB: 4096 }, { gang: 'j', queue: 'team', priority: 5 }));
  return {
    id: 'j',
    queue: 'team',
    priority: 5,
    arrivalMs: 100,
    gang: { name: 'j', minMember: 2, members, topology: {}, priority: 5, queue: 'team' },
    estRuntimeMs: 60_000,
  };
};

describe('jobResources', () => {
  it('sums the members the gang needs', () => {
    expect(jobResources(job())).toEqual({ gpuMilli: 8000, cpuMilli: 16_000, memoryMiB: 8192 });
  });
});

describe('startedJob', () => {
  const placements = [
    { podId: 'j-0', node: 'a', gpus: [0, 1, 2, 3] },
    { podId: 'j-1', node: 'b', gpus: [0, 1, 2, 3] },
  ];

  it('runs until its runtime estimate says, with its queue, priority, pods and resources', () => {
    expect(startedJob(job(), placements, 1000)).toEqual({
      id: 'j',
      queue: 'team',
      priority: 5,
      startMs: 1000,
      estEndMs: 61_000,
      podIds: ['j-0', 'j-1'],
      resources: { gpuMilli: 8000, cpuMilli: 16_000, memoryMiB: 8192 },
      preemptible: true,
    });
  });

  it('keeps what the host knows besides: its end, GPU model and checkpoints', () => {
    const r = startedJob(job(), placements, 1000, { estEndMs: 5000, gpuModel: 'H100-SXM', lastCheckpointMs: 1000, checkpointable: true });
    expect(r).toMatchObject({ estEndMs: 5000, gpuModel: 'H100-SXM', lastCheckpointMs: 1000, checkpointable: true });
  });

  it('leaves out what is unknown or false, so that records compare equal', () => {
    const r = startedJob(job(), placements, 1000, { gpuModel: undefined, checkpointable: false });
    expect(Object.keys(r)).not.toContain('gpuModel');
    expect(Object.keys(r)).not.toContain('checkpointable');
    expect(Object.keys(r)).not.toContain('lastCheckpointMs');
  });
});
