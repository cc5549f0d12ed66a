// `sits bench chaos` with the short plan (every fault kind once) on the real control plane: the scheduler keeps every
// invariant through apiserver and etcd SIGKILLs, a leader killed mid-gang, a paused leader, expired watches, APF
// 429s and a slow apiserver, and binds every pod it was given. The full plan is the bench (bench/chaos.md).
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, SHORT_COUNTS } from './plan.ts';
import { runChaos } from './run.ts';
import { scaled } from '../../testing/timeouts.ts';

describe('chaos: the short fault plan on a real control plane', () => {
  it(
    'every fault kind injected and biting; every invariant 0; every submitted pod bound',
    async () => {
      const logs: string[] = [];
      const r = await runChaos({
        seed: 1,
        nodes: 8,
        counts: SHORT_COUNTS,
        gapSec: [1, 1.5],
        windowSec: [3, 3.5],
        leaseDurationSec: 4,
        trainingRunSec: 10,
        quietSec: 3,
        // A crashed or paused leader's gang waits for the lease to expire and the standby to take over: on a loaded
        // machine every timer is late, so the bound grows with the test timeout scale (30 s unloaded).
        gangWindowSec: Math.max(30, scaled(15_000) / 1000),
        settleTimeoutSec: 90,
        progress: { line: (m) => logs.push(m), status: (m) => m !== '' && logs.push(m) },
      });
      console.log(`${logs.join('\n')}\n${JSON.stringify({ faults: r.faults, invariants: r.invariants, pods: r.pods, recoverySec: r.recoverySec, observed: r.observed })}`);
      expect(r.plan.map((f) => f.kind).sort()).toEqual([...FAULT_KINDS].sort());
      expect(r.faults).toMatchObject({ apiserverRestarts: 1, etcdRestarts: 1, schedulerKills: 1, leaderFailovers: 1, watchExpired: 1, throttled: 1 });
      expect(r.faults.slowApiSeconds).toBeGreaterThan(0);
      expect(SHORT_COUNTS.schedulerKill).toBe(1);
      // The faults bit: the kill and the pause landed inside a gang's binding, the bench's own watch was told 410, APF answered 429.
      expect(r.observed.killsMidGang).toBe(1);
      expect(r.observed.pausesMidGang).toBe(1);
      expect(r.observed.watch410).toBeGreaterThan(0);
      expect(r.observed.rejected429).toBeGreaterThan(0);
      expect(r.observed.nonLeaderPodDeletes).toBe(0);
      // A violation is rare and seldom repeats: its pods' records (`evidence`) go into the failure message.
      expect(r.violations, `evidence: ${JSON.stringify(r.evidence)}`).toEqual([]);
      expect(r.invariants).toEqual({ halfBoundGangs: 0, doubleBinds: 0, gpuDoubleAssigned: 0, lostPods: 0, nonLeaderBinds: 0, orphans: 0 });
      expect(r.pods.submitted).toBeGreaterThan(20);
      expect(r.pods.bound).toBe(r.pods.submitted);
      expect(r.recoverySec.max).toBeGreaterThan(0);
    },
    scaled(240_000),
  );
});
