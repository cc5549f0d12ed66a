/**
 * The cluster facts the InferenceService reconcile judges a spec against (controllers/inference-service/model.ts
 * ClusterFacts), kept from a Node watch: the largest NVLink island any node offers one pod. Computed on read from
 * the reflector's cache (nodes change rarely; a service asks once per reconcile).
 */
import type { V1Node } from '@kubernetes/client-node';
import type { ClusterFacts } from '../../controllers/inference-service/model.ts';
import type { KubeClient } from '../../kube/client/client.ts';
import { nodeFromK8s } from '../../kube/cache/labels.ts';
import type { NodeSpec } from '../../core/model/node.ts';
import { Reflector } from '../../kube/client/reflector.ts';

/** The most healthy GPUs of one node joined by NVLink/NVSwitch (one island), over the nodes; undefined with no node. */
export function largestNvlinkIsland(nodes: Iterable<V1Node>): number | undefined {
  let best: number | undefined;
  for (const n of nodes) {
    const spec = nodeFromK8s(n);
    if (!spec.ok) continue;
    const perIsland = new Map<number, number>();
    for (const g of spec.value.gpus) {
      if (!g.healthy) continue;
      const island = spec.value.topology.islandOf[g.index] ?? g.index;
      perIsland.set(island, (perIsland.get(island) ?? 0) + 1);
    }
    best = Math.max(best ?? 0, ...perIsland.values());
  }
  return best;
}

export interface ClusterFactsSource {
  readonly facts: () => ClusterFacts;
  /** The nodes as SITS reads them (unreadable ones left out), for DataPipeline resource profiles. */
  readonly nodes: () => NodeSpec[];
  stop(): void;
}

/** Watches Nodes; resolves once listed. A failed list (no RBAC for nodes) leaves the facts unknown and is logged. */
export async function watchClusterFacts(client: KubeClient, log: (m: string) => void): Promise<ClusterFactsSource> {
  const r = new Reflector<V1Node>(client, '/api/v1/nodes', {
    add: () => undefined,
    update: () => undefined,
    delete: () => undefined,
    error: (e) => log(`nodes watch: ${e.message}`),
  });
  try {
    await r.start();
  } catch (e) {
    log(`nodes: ${(e as Error).message}; NVLink island sizes unknown, tensor-parallel sizes are not checked`);
  }
  return {
    facts: () => ({ largestNvlinkIslandGpus: r.items.size === 0 ? undefined : largestNvlinkIsland(r.items.values()) }),
    nodes: () =>
      [...r.items.values()].flatMap((n) => {
        const s = nodeFromK8s(n);
        return s.ok ? [s.value] : [];
      }),
    stop: () => r.stop(),
  };
}
