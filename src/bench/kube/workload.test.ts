import { describe, expect, it } from 'vitest';
import { BENCH_TAINT, benchConstraint, benchNodes, benchPod, constraintViolations } from './workload.ts';

describe('the constraints mix of sits bench kube', () => {
  it('every second pod carries one of six constraints in rotation; the others none', () => {
    const kinds = Array.from({ length: 24 }, (_, i) => {
      const c = benchConstraint(i, 10).spec;
      if (c.tolerations !== undefined) return 'toleration';
      if (c.affinity?.podAntiAffinity !== undefined) return 'anti';
      if (c.topologySpreadConstraints !== undefined) return 'spread';
      const na = c.affinity?.nodeAffinity;
      if (na?.preferredDuringSchedulingIgnoredDuringExecution !== undefined) return 'preferred';
      const op = na?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]?.matchExpressions?.[0]?.operator;
      return op ?? 'none';
    });
    expect(kinds).toEqual(['none', 'In', 'none', 'preferred', 'none', 'toleration', 'none', 'NotIn', 'none', 'anti', 'none', 'spread', 'none', 'In', 'none', 'preferred', 'none', 'toleration', 'none', 'NotIn', 'none', 'anti', 'none', 'spread']);
    expect(benchConstraint(1, 10).spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]?.matchExpressions?.[0]?.values).toEqual(['rack-0', 'rack-1', 'rack-2', 'rack-3', 'rack-4']);
    const pod = benchPod('ns', 'p', 'sits-scheduler', benchConstraint(5, 10));
    expect(pod.spec?.tolerations).toEqual([{ key: 'dedicated', operator: 'Equal', value: 'bench', effect: 'NoSchedule' }]);
    expect(pod.spec?.schedulerName).toBe('sits-scheduler');
  });
  it('taints every 8th node only in the constraints mix', () => {
    const shape = { gpusPerNode: 8, gpuModel: 'H100-SXM', nodesPerRack: 4 };
    expect(benchNodes(16, shape).filter((n) => (n.spec?.taints ?? []).length > 0)).toEqual([]);
    const tainted = benchNodes(16, shape, 'constraints').filter((n) => (n.spec?.taints ?? []).length > 0);
    expect(tainted.map((n) => n.metadata?.name)).toEqual(['node-00007', 'node-00015']);
    expect(tainted[0]?.spec?.taints).toEqual([{ ...BENCH_TAINT }]);
  });
});

describe('constraintViolations', () => {
  it('counts pods bound against their required affinity or on a tainted node without the toleration', () => {
    const shape = { gpusPerNode: 8, gpuModel: 'H100-SXM', nodesPerRack: 2 };
    const nodes = benchNodes(8, shape, 'constraints'); // racks 0..3; node-00007 (rack-3) tainted
    const name = (i: number): string => `p${i}`;
    // pod 1: In rack-0/1; pod 7: NotIn rack-0; pod 0: none; pod 5: tolerates.
    const ok = new Map([['p0', 'node-00000'], ['p1', 'node-00002'], ['p5', 'node-00007'], ['p7', 'node-00004']]);
    expect(constraintViolations(ok, nodes, 4, 8, name)).toBe(0);
    const bad = new Map([['p0', 'node-00007'], ['p1', 'node-00004'], ['p7', 'node-00001']]);
    expect(constraintViolations(bad, nodes, 4, 8, name)).toBe(3);
    // pods 9 and 57 (k = 4 and 28) share anti-affinity group g4; 11 and 59 (k = 5 and 29) spread group g5 over 8 nodes.
    const anti = new Map([['p9', 'node-00000'], ['p57', 'node-00000']]);
    expect(constraintViolations(anti, nodes, 4, 64, name)).toBe(1);
    const skewed = new Map([['p11', 'node-00000'], ['p59', 'node-00000']]);
    expect(constraintViolations(skewed, nodes, 4, 64, name)).toBe(1);
    expect(constraintViolations(new Map([['p11', 'node-00000'], ['p59', 'node-00001']]), nodes, 4, 64, name)).toBe(0);
  });
});
