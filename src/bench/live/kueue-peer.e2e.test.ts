// Kueue v0.17 (tools/kueue/ensure.mjs) as the live bench's peer, on the real control plane: fair sharing with weights
// 2:1 over one node of 8 fake GPUs, batch/v1 Jobs that Kueue admits, whose pods kube-controller-manager's Job
// controller creates and the real kube-scheduler places. Queue a fills the cluster first; b's Jobs arrive 4 s later
// and take GPUs back through Kueue's fair-sharing preemption until neither of its strategies allows another.
import { beforeAll, describe, expect, it } from 'vitest';

import { runKueuePeer, type KueuePeerResult, type PeerJob } from './kueue-peer.ts';
import { ensureKueue } from '../../harness/kueue.ts';

const GPUS = 8;
const WEIGHTS = { a: 2, b: 1 } as const;

/**
 * Kueue's documented fair-sharing stop (its config API, FairSharing.preemptionStrategies): a queue's share is the
 * GPUs it borrows over the cohort's GPUs, divided by its weight; preemptor P may take a 1-GPU job from victim V when
 * share(P with it) <= share(V without it) (LessThanOrEqualToFinalShare) or share(P with it) < share(V)
 * (LessThanInitialShare). Stable: neither holds for any pair.
 */
function preemptionAllowed(admitted: Readonly<Record<string, number>>, weights: Readonly<Record<string, number>>): boolean {
  const share = (q: string, gpus: number): number => gpus / GPUS / (weights[q] as number);
  for (const p of Object.keys(weights)) {
    for (const v of Object.keys(weights)) {
      if (p === v || (admitted[v] ?? 0) === 0) continue;
      const pWith = share(p, (admitted[p] ?? 0) + 1);
      if (pWith <= share(v, (admitted[v] ?? 0) - 1) + 1e-12 || pWith < share(v, admitted[v] ?? 0) - 1e-12) return true;
    }
  }
  return false;
}

let binDir: string;

beforeAll(async () => {
  binDir = await ensureKueue();
}, 1_800_000);

describe('Kueue as the live bench peer', () => {
  it('admits batch/v1 Jobs by fair sharing, preempts the queue above its share, and kube-scheduler places the pods', async () => {
    const jobs: PeerJob[] = [];
    for (let i = 0; i < GPUS; i++) jobs.push({ id: `a-${i}`, queue: 'a', submitAtSec: 0, runSeconds: 600, gpus: 1 });
    for (let i = 0; i < GPUS; i++) jobs.push({ id: `b-${i}`, queue: 'b', submitAtSec: 4, runSeconds: 600, gpus: 1 });
    const r: KueuePeerResult = await runKueuePeer(
      { jobs, queues: [{ name: 'a', weight: WEIGHTS.a }, { name: 'b', weight: WEIGHTS.b }], nodes: 1, shape: 'l4x8' },
      { durationSec: 12, kueueBinDir: binDir },
    );
    process.stderr.write(`[kueue-peer.e2e] ${JSON.stringify({ ...r, samples: r.samples.map((s) => `${s.t}s a=${s.admitted.a}/${s.running.a} b=${s.admitted.b}/${s.running.b}`) })}\n`);

    expect(r.kueueVersion).toBe('v0.17.0');
    expect(r.totalGpus).toBe(GPUS);
    // Before b's Jobs arrive, a borrows the whole cohort.
    expect(r.samples.filter((s) => s.t < 4).some((s) => s.admitted.a === GPUS)).toBe(true);
    const last = r.samples.at(-1);
    expect(last).toBeDefined();
    if (last === undefined) return;
    // The cluster stays full, both queues run, a (weight 2) more than b, and Kueue's strategies allow no further preemption.
    expect((last.admitted.a ?? 0) + (last.admitted.b ?? 0)).toBe(GPUS);
    expect(last.admitted.b ?? 0).toBeGreaterThan(0);
    expect(last.admitted.a ?? 0).toBeGreaterThan(last.admitted.b ?? 0);
    expect(preemptionAllowed(last.admitted, WEIGHTS)).toBe(false);
    // What Kueue admitted is what runs: kube-scheduler placed a pod for each admitted Job.
    expect(last.running).toEqual(last.admitted);
    // b got its GPUs by preempting a's workloads (a's share only), and each preemption is also a Kueue Event.
    expect(r.preemptions.byQueue.a).toBe(last.admitted.b);
    expect(r.preemptions.byQueue.b).toBe(0);
    expect(r.preemptions.events).toBe(r.preemptions.total);
    expect(r.shares.timeToSteadySec).not.toBeNull();
    expect(r.shares.steadyShares.a).toBeCloseTo((last.admitted.a ?? 0) / GPUS, 5);
    // Every pod that ran was bound by kube-scheduler (default-scheduler's Scheduled events): a's 8 and b's.
    expect(r.podsScheduledByKubeScheduler).toBeGreaterThanOrEqual(GPUS + (last.admitted.b ?? 0));
    expect(r.waits.admitted.n).toBe(GPUS + (last.admitted.b ?? 0));
  }, 120_000);
});
