/**
 * The BatchInferenceJob controller's routing ports, live (ADR 0165): the cluster's GPU fragmentation as the SITS
 * scheduler measures it for its metrics (sits_cluster_gpu_fragmentation_ratio: clusterFragmentation over the
 * scheduler's node cache and its profile's typical shapes; the same call, not a second measure), and routing
 * plugin files loaded from the controller's plugin directory (wasm/job-plugins.ts, the workers' loader).
 */
import type { BatchControllerConfig } from '../../controllers/batch-inference/controller.ts';
import type { PluginLimits } from '../../controllers/batch-inference/wasm-plugin.ts';
import { clusterFragmentation } from '../../core/plugins/fgd/fragmentation.ts';
import type { LiveScheduler } from '../../kube/scheduler/live-scheduler.ts';
import { loadJobPlugins } from '../../wasm/job-plugins.ts';

/** The scheduler's fragmentation ratio now; undefined while its cache holds no node (nothing measured yet). */
export function schedulerFragmentation(scheduler: Pick<LiveScheduler, 'metricsView'>): () => number | undefined {
  return () => {
    const v = scheduler.metricsView();
    const nodes = [...v.state.nodes];
    return nodes.length === 0 ? undefined : clusterFragmentation(nodes, v.shapes).ratio;
  };
}

/** spec.strategy.routing.wasm.file from `pluginDir`, checked and loaded as the workers load theirs. */
export function routePluginLoader(pluginDir: string, limits?: Partial<PluginLimits>): NonNullable<BatchControllerConfig['routePlugin']> {
  return (file, sha256) => {
    const p = loadJobPlugins({ routing: { wasm: { file, sha256 } } }, { pluginDir, ...(limits === undefined ? {} : { limits }) });
    if (p.routing !== undefined) return { ok: true, value: p.routing };
    const st = p.states.routing;
    return { ok: false, reason: `plugin ${file}: ${st.kind === 'rejected' ? st.reason : 'not loaded'}` };
  };
}
