import type { Command } from 'commander';
import { createLiveApp } from '../../app/live.ts';
import { intOption, numberOption } from '../options.ts';

const stamp = (m: string): string => `${new Date().toISOString()} ${m}\n`;

/** Resolves when SIGINT or SIGTERM arrives. */
export function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (s: string): void => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(s);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

export function registerRun(program: Command): void {
  program
    .command('run')
    .description('run the SITS scheduler against a Kubernetes API server (pods with schedulerName sits-scheduler)')
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config)')
    .option('--profile <name>', 'scheduling profile', 'sits')
    .option('--identity <id>', 'leader-election identity (default: hostname-pid)')
    .option('--lease-namespace <ns>', 'namespace of the leader-election Lease', 'kube-system')
    .option('--no-leader-elect', 'run without leader election (one replica only)')
    .option('--lease-duration <sec>', 'lease duration in seconds', numberOption('--lease-duration', 1, 300), 15)
    .option('--max-in-flight <n>', 'API requests in flight at most', intOption('--max-in-flight', 1, 10_000), 64)
    .option('--no-events', 'do not write Scheduled/FailedScheduling events')
    .option('-v, --verbose', 'log every decision problem')
    .action(async (o: { kubeconfig?: string; profile: string; identity?: string; leaseNamespace: string; leaderElect: boolean; leaseDuration: number; maxInFlight: number; events: boolean; verbose?: boolean }) => {
      const failpoint = process.env.SITS_FAILPOINT_CRASH_AFTER_GANG_BINDS;
      const app = await createLiveApp({
        ...(o.kubeconfig === undefined ? {} : { kubeconfig: o.kubeconfig }),
        profile: o.profile,
        ...(o.identity === undefined ? {} : { identity: o.identity }),
        ...(o.leaderElect ? { leaseNamespace: o.leaseNamespace, leaseDurationSec: o.leaseDuration } : {}),
        maxInFlight: o.maxInFlight,
        events: o.events,
        ...(failpoint === undefined ? {} : { crashAfterGangBinds: Number(failpoint) }),
        log: (m) => process.stderr.write(stamp(m)),
      });
      process.stderr.write(stamp(`sits-scheduler running (profile ${o.profile}, ${app.scheduler.cache.nodeCount} nodes)`));
      const sig = await untilSignal();
      process.stderr.write(stamp(`${sig}: stopping`));
      await app.stop();
    });
}
