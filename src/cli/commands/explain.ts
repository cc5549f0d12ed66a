import type { Command } from 'commander';
import { explainLive } from '../../app/live.ts';
import { resolveKubeConfig } from '../../kube/client/kubeconfig.ts';
import { CliError, EXIT, systemErrorLine } from '../errors.ts';
import { kubeFlags, namespacedName, outputOption, printed } from '../kube-flags.ts';

interface ExplainFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  schedulerName: string;
  profile: string;
  output: string;
  json?: boolean;
}

export function registerExplain(program: Command): void {
  const cmd = program
    .command('explain')
    .description(
      "why a pending pod or pod group waits (a gang's member pod: its gang), which queue holds it, and when it is expected to start, or that it can never fit; for a running one, its expected training step on its GPUs vs an ideal placement; for a BatchInferenceJob worker, its route and why (reads the cluster, writes nothing)",
    )
    .argument('<target>', 'NAME (in -n NAMESPACE) or namespace/name of a pod or of a PodGroup (gang)');
  kubeFlags(cmd)
    .option('--scheduler-name <name>', 'the scheduler whose pods to explain (its sits run --scheduler-name)', 'sits-scheduler')
    .option('--profile <name>', 'scheduling profile the scheduler runs', 'sits')
    .addOption(outputOption(['text', 'json', 'yaml']))
    .option('--json', 'deprecated: -o json')
    .action(async (target: string, o: ExplainFlags) => {
      // A malformed target first, then a missing or broken kubeconfig (or an unknown --context), before any connection.
      let resolved: ReturnType<typeof resolveKubeConfig> | undefined;
      const resolve = (): ReturnType<typeof resolveKubeConfig> => (resolved ??= resolveKubeConfig(o.kubeconfig, process.env, { context: o.context }));
      const key = namespacedName(target, o.namespace, () => resolve().namespace);
      const kube = resolve();
      if (o.json === true) process.stderr.write('sits explain: --json is deprecated, use -o json\n');
      const format = o.json === true ? 'json' : o.output;
      const r = await explainLive(key, {
        ...(o.kubeconfig === undefined ? {} : { kubeconfig: o.kubeconfig }),
        ...(o.context === undefined ? {} : { context: o.context }),
        schedulerName: o.schedulerName,
        profile: o.profile,
        nowMs: Date.now(),
      }).catch((e: unknown) => {
        const sys = systemErrorLine(e);
        if (sys?.network === true)
          throw new CliError(`apiserver ${kube.server}: ${sys.why}`, {
            hint: `is the cluster up? the address comes from ${kube.source}${o.context === undefined ? '' : ` context ${o.context}`}`,
            exitCode: EXIT.runtime,
            cause: e,
          });
        throw e;
      });
      process.stdout.write(printed(r, format) ?? `${r.lines.join('\n')}\n`);
      if (r.state === 'unknown') process.exitCode = 1;
    });
}
