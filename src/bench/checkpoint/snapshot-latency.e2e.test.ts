// The snapshotLatencyMs part of `sits bench checkpoint` end to end on a small run: real control plane, PV binder,
// snapshot-controller, csi-snapshotter, stand-in driver and the TrainingJob controller.
import { describe, expect, it } from 'vitest';

import { measureSnapshotLatency } from './snapshot-latency.ts';

describe('snapshot latency, linked vs independent', () => {
  it('measures every cycle both ways on the real snapshot controller', async () => {
    const r = await measureSnapshotLatency({ cycles: 3, periodMs: 2000, seed: 7 });
    expect(r.samples.linked).toHaveLength(3);
    expect(r.samples.independent).toHaveLength(3);
    for (const x of [...r.samples.linked, ...r.samples.independent]) expect(x).toBeGreaterThan(0);
    for (const l of [r.linked, r.independent]) {
      expect(l.p50).toBeLessThanOrEqual(l.p99);
      expect(l.mean).toBeGreaterThan(0);
    }
  }, 600_000);
});
