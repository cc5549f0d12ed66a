import { describe, expect, it } from 'vitest';
import { peerReport, type SideReport } from './bench-live.ts';
import type { KueuePeerResult } from './kueue-peer.ts';
import type { ReplayWorkload } from './workload.ts';

const queues = [
  { name: 'a', weight: 2 },
  { name: 'b', weight: 1 },
];
const w = { queues, jobs: [], nodes: 1, shape: 'dgx-h100' } as unknown as ReplayWorkload;
// Kueue holds a=8 until 4 s, then a=6 b=2 to the end; SITS live goes to 6/2 at 2 s.
const kueueSamples = Array.from({ length: 11 }, (_, t) => (t < 4 ? { t, admitted: { a: 8, b: 0 }, running: { a: 8, b: 0 } } : { t, admitted: { a: 6, b: 2 }, running: { a: 6, b: 2 } }));
const k = {
  kueueVersion: 'v0.17.0',
  fairSharing: { preemptionStrategies: ['LessThanOrEqualToFinalShare'] },
  quotas: 'cohort',
  samples: kueueSamples,
  shares: { timeToSteadySec: 4 },
  utilisation: { running: 1, admitted: 1 },
  preemptions: { total: 2, byQueue: { a: 2, b: 0 }, events: 2 },
  waits: { admitted: { n: 0, p50: null, p99: null }, running: { n: 0, p50: null, p99: null } },
  neverAdmitted: 0,
  podsScheduledByKubeScheduler: 10,
} as unknown as KueuePeerResult;
const liveSamples = Array.from({ length: 11 }, (_, t) => ({ t, gpus: t < 2 ? { a: 8, b: 0 } : { a: 6, b: 2 } }));
const live = { queues: { a: { sharePct: 75 }, b: { sharePct: 25 } } } as unknown as SideReport;

describe('the Kueue peer beside SITS live', () => {
  it('shares of the GPUs in use over the same steady part, the same time-to-steady rule on both sides, differences in pp', () => {
    const r = peerReport(k, w, liveSamples, live, 5, 8);
    expect(r.sharePct).toEqual({ a: 75, b: 25 });
    expect(r.timeToSteadySec).toEqual({ kueue: 4, sitsLive: 2 });
    expect(r.sharePpSitsMinusKueue).toEqual({ a: 0, b: 0 });
    expect(r.preemptions).toBe(2);
    // Over the whole run Kueue's a held more: the steady part starts at 5 s, where both are at 6/2.
    expect(peerReport(k, w, liveSamples, live, 0, 8).sharePct.a).toBeGreaterThan(75);
  });
});
