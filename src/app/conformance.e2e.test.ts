// Issue 11 §2: the upstream Kubernetes e2e scheduling cases (k8s.io/kubernetes/test/e2e, built by
// tools/k8s/ensure-e2e.mjs) pass against the dev cluster with SITS as its only scheduler. A small quick subset
// here (CI_CASES); `npm run conformance` runs the families in full (docs/conformance.md, ADR 0073).
import { beforeAll, describe, expect, it } from 'vitest';
import { CI_CASES, SKIPPED_CASES } from './conformance-cases.ts';
import { runConformance } from './conformance.ts';
import { ensureControllerManager, ensureK8sBinaries } from '../harness/control-plane.ts';
import { anyOf, ensureE2eSuite } from '../harness/upstream-e2e.ts';
import { scaled } from '../testing/timeouts.ts';

describe('upstream e2e scheduling cases with SITS as default-scheduler', () => {
  // The first run builds the suite (and kube-controller-manager): minutes, outside the case's own budget.
  beforeAll(async () => {
    await ensureK8sBinaries();
    await ensureControllerManager();
    await ensureE2eSuite();
  }, scaled(1_800_000));

  it(
    'passes the quick SchedulerPredicates and PodTopologySpread cases',
    async () => {
      const lines: string[] = [];
      const summary = await runConformance({
        focus: anyOf(CI_CASES),
        skipped: SKIPPED_CASES,
        nodes: 4,
        shape: 'dgx-h100',
        timeoutMs: scaled(150_000),
        log: (m) => lines.push(m),
      });
      const failed = summary.cases.filter((c) => c.state !== 'passed');
      expect(
        failed,
        `not passed:\n${failed.map((c) => `${c.name}: ${c.message ?? ''}`).join('\n')}\n--- last log lines:\n${lines.slice(-30).join('\n')}`,
      ).toEqual([]);
      // Every subset case ran (a renamed upstream case would silently match nothing).
      expect(summary.cases.map((c) => CI_CASES.find((t) => c.name.includes(t))).sort()).toEqual([...CI_CASES].sort());
    },
    scaled(240_000),
  );
});
