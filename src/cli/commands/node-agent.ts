import type { Command } from 'commander';
import { startNodeSide } from '../../app/node-side.ts';
import { DEFAULT_PLUGIN_DIR } from '../../node/deviceplugin/proto.ts';
import { execRunner, readNode } from '../../node/source.ts';
import { CliError } from '../errors.ts';
import { numberOption } from '../options.ts';
import { untilSignal } from './run.ts';
import { createLogger, logFormatOption, verbosityOption, type LogOptions } from '../logger.ts';

interface NodeAgentFlags {
  kubeconfig?: string;
  nodeName?: string;
  interval: number;
  nvidiaSmi: string;
  sysfsRoot: string;
  pluginDir: string;
  devicePlugin: boolean;
  labels: boolean;
  once?: boolean;
  dcgmUrl?: string;
  healthInterval: number;
  quarantine: number;
}

export function registerNodeAgent(program: Command): void {
  program
    .command('node-agent')
    .description(
      "run on each GPU node (the chart's DaemonSet): write the GPU labels and topology annotations SITS reads on this Node, and serve the nvidia.com/gpu device plugin that gives each container exactly the GPUs SITS chose",
    )
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config)')
    .option('--node-name <name>', 'this node (default: $NODE_NAME, set from spec.nodeName in the DaemonSet)')
    .option('--interval <sec>', 'seconds between readings', numberOption('--interval', 1, 86_400), 60)
    .option('--nvidia-smi <path>', 'the nvidia-smi to run', 'nvidia-smi')
    .option('--sysfs-root <dir>', 'folder holding bus/pci/devices/*/numa_node', '/sys')
    .option('--plugin-dir <dir>', 'kubelet device-plugin folder (kubelet.sock and the plugin socket)', DEFAULT_PLUGIN_DIR)
    .option('--no-device-plugin', 'do not serve the device plugin (labels only)')
    .option('--no-labels', 'do not write the Node (device plugin only)')
    .option(
      '--dcgm-url <url>',
      "this node's dcgm-exporter /metrics (e.g. http://localhost:9400/metrics): watch GPU health and quarantine failing GPUs (ADR 0096)",
    )
    .option('--health-interval <sec>', 'seconds between dcgm-exporter scrapes', numberOption('--health-interval', 1, 86_400), 30)
    .option('--quarantine <sec>', 'how long a failing GPU stays out before its health check', numberOption('--quarantine', 1, 7 * 86_400), 900)
    .option('--once', 'read the node once, print what would be written (JSON) and exit; no API server needed')
    .addOption(verbosityOption())
    .addOption(logFormatOption())
    .action(async (o: NodeAgentFlags & LogOptions) => {
      const signal = untilSignal();
      if (o.once === true) {
        const r = await readNode({ nvidiaSmi: o.nvidiaSmi, sysfsRoot: o.sysfsRoot, runner: execRunner });
        if (!r.ok) throw new CliError(r.error);
        const { labels, annotations, gpus, nvlinkIslands, numaGroups, pcieSwitchGroups } = r.value;
        process.stdout.write(`${JSON.stringify({ labels, annotations, gpus, nvlinkIslands, numaGroups, pcieSwitchGroups }, null, 2)}\n`);
        return;
      }
      const nodeName = o.nodeName ?? process.env.NODE_NAME ?? '';
      if (nodeName === '') throw new CliError('node-agent: which node? pass --node-name or set NODE_NAME (the DaemonSet sets it from spec.nodeName)');
      if (!o.labels && !o.devicePlugin) throw new CliError('node-agent: --no-labels and --no-device-plugin together leave nothing to do');
      const log = createLogger('sits-node-agent', o).line;
      const side = await startNodeSide({
        ...(o.kubeconfig === undefined ? {} : { kubeconfig: o.kubeconfig }),
        nodeName,
        intervalMs: o.interval * 1000,
        nvidiaSmi: o.nvidiaSmi,
        sysfsRoot: o.sysfsRoot,
        labels: o.labels,
        ...(o.devicePlugin ? { pluginDir: o.pluginDir } : {}),
        ...(o.dcgmUrl === undefined ? {} : { dcgmUrl: o.dcgmUrl, healthIntervalMs: o.healthInterval * 1000, quarantineMs: o.quarantine * 1000 }),
        log,
      });
      log(
        `sits node-agent running on ${nodeName} (${o.labels ? 'labels' : 'no labels'}, ${o.devicePlugin ? `device plugin in ${o.pluginDir}` : 'no device plugin'}, every ${o.interval} s${o.dcgmUrl === undefined ? '' : `; GPU health from ${o.dcgmUrl} every ${o.healthInterval} s`}; first reading: ${side.first.kind})`,
      );
      const sig = await signal;
      log(`${sig}: stopping`);
      await side.stop();
    });
}
