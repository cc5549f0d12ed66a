import type { Command } from 'commander';
import { explainLive } from '../../app/live.ts';
import { resolveKubeConfig } from '../../kube/kubeconfig.ts';
import { CliError, EXIT, systemErrorLine } from '../errors.ts';

export function registerExplain(program: Command): void {
  program
    .command('explain')
    .description('why a pending pod or pod group waits, which queue holds it, and when it is expected to start; for a running one, its expected training step on its GPUs vs an ideal placement; for a BatchInferenceJob worker, its route and why (reads the cluster, writes nothing)')
    .argument('<target>', 'namespace/name of a pod or of a PodGroup (gang)')
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster, else $KUBECONFIG or ~/.kube/config)')
    .option('--profile <name>', 'scheduling profile the scheduler runs', 'sits')
    .option('--json', 'print the report as JSON')
    .action(async (target: string, o: { kubeconfig?: string; profile: string; json?: boolean }) => {
      if (!/^[^/]+\/[^/]+$/.test(target)) throw new CliError(`<target>: must be namespace/name, got "${target}"`, { hint: 'e.g. sits explain default/train-0' });
      // Resolved first: a missing or broken kubeconfig is named before any connection is tried.
      const { source, server } = resolveKubeConfig(o.kubeconfig);
      const r = await explainLive(target, { ...(o.kubeconfig === undefined ? {} : { kubeconfig: o.kubeconfig }), profile: o.profile, nowMs: Date.now() }).catch((e: unknown) => {
        const sys = systemErrorLine(e);
        if (sys?.network === true) throw new CliError(`apiserver ${server}: ${sys.why}`, { hint: `is the cluster up? the address comes from ${source}`, exitCode: EXIT.runtime, cause: e });
        throw e;
      });
      process.stdout.write(o.json === true ? `${JSON.stringify(r, null, 2)}\n` : `${r.lines.join('\n')}\n`);
      if (r.state === 'unknown') process.exitCode = 1;
    });
}
