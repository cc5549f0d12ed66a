/**
 * Composition root of `sits node-agent`: the topology agent (labels and annotations of its own Node) and the
 * device plugin, sharing one reading loop (src/node/).
 */
import { KubeClient } from '../kube/client/client.ts';
import { GpuHealthWatcher } from '../kube/scheduler/gpu-health.ts';
import { NodeAgent, type TickResult } from '../node/agent.ts';
import { SitsDevicePlugin } from '../node/device-plugin.ts';
import { NodeQuarantineWatch } from '../node/quarantine-watch.ts';
import { execRunner, type CommandRunner } from '../node/source.ts';
import { loadKubeConfig } from './live.ts';

export interface NodeSideOptions {
  readonly kubeconfig?: string;
  readonly nodeName: string;
  readonly intervalMs: number;
  readonly nvidiaSmi: string;
  readonly sysfsRoot: string;
  /** Write the Node's labels and annotations. */
  readonly labels: boolean;
  /** Serve the device plugin in this folder; undefined: no device plugin. */
  readonly pluginDir?: string;
  readonly runner?: CommandRunner;
  readonly log: (m: string) => void;
  /** The node's dcgm-exporter /metrics: GPU health is watched and failing GPUs quarantined (ADR 0096). */
  readonly dcgmUrl?: string;
  readonly healthIntervalMs?: number;
  readonly quarantineMs?: number;
}

export interface NodeSide {
  readonly agent: NodeAgent;
  readonly plugin: SitsDevicePlugin | undefined;
  readonly health: GpuHealthWatcher | undefined;
  /** The first round's result (the loop goes on whatever it was). */
  readonly first: TickResult;
  stop(): Promise<void>;
}

export async function startNodeSide(o: NodeSideOptions): Promise<NodeSide> {
  const client = new KubeClient(loadKubeConfig(o.kubeconfig), { maxInFlight: 4, userAgent: 'sits-node-agent/0.1' });
  const agent = new NodeAgent({
    source: { nvidiaSmi: o.nvidiaSmi, sysfsRoot: o.sysfsRoot, runner: o.runner ?? execRunner },
    ...(o.labels ? { node: { client, name: o.nodeName } } : {}),
    intervalMs: o.intervalMs,
    log: o.log,
  });
  const plugin = o.pluginDir === undefined ? undefined : new SitsDevicePlugin({ pluginDir: o.pluginDir, nodeName: o.nodeName, client, log: o.log });
  if (plugin !== undefined) agent.onReading((r) => plugin.update(r));
  // The plugin reports quarantined GPUs Unhealthy, whoever quarantined them (ADR 0128).
  const quarantine = plugin === undefined ? undefined : new NodeQuarantineWatch(client, o.nodeName, (q) => plugin.setQuarantined(q), o.log);
  // One reading (and the quarantine) before the plugin registers, so the kubelet's first device list is the node's.
  const first = await agent.once();
  await quarantine?.start();
  await plugin?.start();
  agent.start(true);
  const health =
    o.dcgmUrl === undefined
      ? undefined
      : new GpuHealthWatcher({
          client,
          targets: [{ node: o.nodeName, url: o.dcgmUrl }],
          intervalMs: o.healthIntervalMs ?? 30_000,
          clock: { nowMs: () => Date.now() },
          log: o.log,
          ...(o.quarantineMs === undefined ? {} : { quarantineMs: o.quarantineMs }),
          // No controller in this process: the intent is logged for the operator (and the controller's seam).
          onIntent: (i) =>
            o.log(
              `gpu health: GPU ${i.gpu} (${i.uuid}): ${i.mode === 'checkpoint-first' ? 'checkpoint then move' : 'restore elsewhere'} the work on it: ${i.reason}`,
            ),
        });
  health?.start();
  return {
    agent,
    plugin,
    health,
    first,
    stop: async () => {
      await health?.stop();
      quarantine?.stop();
      await agent.stop();
      await plugin?.stop();
      client.close();
    },
  };
}
