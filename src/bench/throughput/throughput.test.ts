import { describe, expect, it } from 'vitest';
import { prepareThroughput, runThroughput } from './run.ts';
import { benchWorkload, WORKLOADS } from './workload.ts';

let t = 0;
const fakeClock = (): number => (t += 0.5);

describe('benchWorkload', () => {
  it.each(WORKLOADS)('%s: about 90 %% of GPU capacity', (kind) => {
    const pods = kind === 'single' ? 576 : kind === 'gang' ? 72 : 640;
    const w = benchWorkload(kind, 80, 8, pods, 1);
    expect(w.pods).toBe(pods);
    expect(w.fillPct).toBeGreaterThan(85);
    expect(w.fillPct).toBeLessThanOrEqual(100);
  });
  it('mixed has single-GPU, fractional and 8-pod × 8-GPU gang pods', () => {
    const w = benchWorkload('mixed', 160, 8, 1280, 1);
    const pods = w.units.flatMap((u) => (u.kind === 'pod' ? [u.pod] : []));
    expect(w.gangs).toBeGreaterThan(0);
    expect(w.units.find((u) => u.kind === 'gang')).toMatchObject({ gang: { minMember: 8 } });
    expect(pods.some((p) => p.request.gpuMilli === 1000)).toBe(true);
    expect(pods.some((p) => p.request.gpuMilli < 1000)).toBe(true);
  });
});

describe('runThroughput', () => {
  it('places the whole mixed workload and reports the contract’s fields', () => {
    const r = runThroughput({ nodes: 64, gpusPerNode: 8, pods: 512, workload: 'mixed', now: fakeClock, rssBytes: () => 3 * 1048576 });
    expect(r.placedPods).toBe(r.pods);
    expect(r.gangsPlaced).toBe(r.gangs);
    expect(r.rssMiB).toBe(3);
    expect(r.podsPerSecond).toBeGreaterThan(0);
    expect(r.gangAttemptMs.p50).not.toBeNull();
  });
  it('records every gang attempt with the work it did: the first use of the gang shape builds its index', () => {
    let wait = 0;
    const r = runThroughput({ nodes: 64, gpusPerNode: 8, pods: 64, workload: 'gang', now: fakeClock, runQueueWaitMs: () => (wait += 0.25) });
    expect(r.attempts).toHaveLength(r.gangs);
    expect(r.attempts.map((a) => a.i)).toEqual(r.attempts.map((_, i) => i));
    expect(r.attempts[0]).toMatchObject({ builds: 1, placed: true, domainTrials: 1, ms: 0.5, waitMs: 0.25 });
    expect(r.attempts.slice(1).every((a) => a.builds === 0 && a.placed && a.evaluations >= 1 && a.evaluations <= 8)).toBe(true);
    // A first build evaluates one node per spec class plus the touched ones: the bench cluster is one class.
    expect(r.attempts[0]?.evaluations).toBeLessThanOrEqual(8);
  });
  it('prepareThroughput does the untimed preparation first; its run() is the same loop as runThroughput', () => {
    const o = { nodes: 64, gpusPerNode: 8, pods: 512, workload: 'mixed' as const, now: fakeClock };
    const prepared = prepareThroughput(o);
    const a = prepared.run();
    const b = runThroughput(o);
    expect(a.placedPods).toBe(b.placedPods);
    expect(a.attempts.map((x) => [x.evaluations, x.builds, x.domainTrials])).toEqual(b.attempts.map((x) => [x.evaluations, x.builds, x.domainTrials]));
  });
});
