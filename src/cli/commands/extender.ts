import { hostname } from 'node:os';
import type { Command } from 'commander';
import { loadKubeConfig } from '../../app/live.ts';
import { KubeClient } from '../../kube/client/client.ts';
import { ALLOW_ALL, ANONYMOUS_AUTHN } from '../../kube/secure/delegated-auth.ts';
import { KUBE_SCHEDULER_NAME, startExtender } from '../../kube/extender/extender-server.ts';
import { CliError } from '../errors.ts';
import { intOption, numberOption } from '../options.ts';
import { parseAudiences, reloadServingCert, servingOptions, servingTls } from '../serving-flags.ts';
import { untilSignal } from './run.ts';
import { createLogger, logFormatOption, verbosityOption, type LogOptions } from '../logger.ts';

interface ExtenderFlags {
  kubeconfig?: string;
  port: number;
  host: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  schedulerName: string;
  profile: string;
  pathPrefix: string;
  planTtl: number;
  gangPlanTtl: number;
  insecureLocalhost?: boolean;
  apiAudiences?: string;
  leaderElect?: boolean;
  leaseNamespace: string;
  leaseName: string;
  leaseDuration: number;
  identity?: string;
}

export function registerExtender(program: Command): void {
  const cmd = program
    .command('extender')
    .description(
      "serve kube-scheduler's HTTP extender protocol (filter, prioritize, bind, preempt; nodeCacheCapable) over HTTPS with SITS's GPU topology, fragmentation and gang logic, for clusters that keep kube-scheduler (docs/extender.md)",
    );
  servingOptions(
    cmd,
    {
      port: 8888,
      portHelp: 'HTTPS port of the extender verbs and /healthz',
      clientCaHelp: "CA of kube-scheduler's client certificate (its extender tlsConfig certData); else bearer tokens, checked by TokenReview",
      insecureHelp: 'plain HTTP on 127.0.0.1 without authentication (local development only)',
    },
    intOption('--port', 1, 65535),
  )
    .option('--scheduler-name <name>', 'schedulerName of the pods kube-scheduler asks about (its profile)', KUBE_SCHEDULER_NAME)
    .option('--profile <name>', 'SITS scheduling profile', 'sits')
    .option('--path-prefix <path>', "path part of kube-scheduler's urlPrefix, e.g. /sits (the verbs are served under it)", '')
    .option('--plan-ttl <sec>', "seconds a pod's placement is held between its filter and its bind", numberOption('--plan-ttl', 1, 3600), 30)
    .option(
      '--gang-plan-ttl <sec>',
      "seconds a gang's plan is held from its first member's filter until every member reaches bind",
      numberOption('--gang-plan-ttl', 1, 3600),
      30,
    )
    .option(
      '--leader-elect',
      'several replicas: elect a leader on a Lease; only the leader serves the verbs and is Ready, so a Service sends kube-scheduler to it (ADR 0078)',
    )
    .option('--lease-namespace <ns>', 'namespace of the leader-election Lease', 'kube-system')
    .option('--lease-name <name>', 'name of the leader-election Lease', 'sits-extender')
    .option('--lease-duration <sec>', 'lease duration in seconds', numberOption('--lease-duration', 1, 300), 15)
    .option('--identity <id>', 'leader-election identity (default: hostname-pid)')
    .addOption(verbosityOption())
    .addOption(logFormatOption())
    .action(async (o: ExtenderFlags & LogOptions) => {
      const signal = untilSignal();
      const { tls, clientCa } = servingTls(o);
      const audiences = parseAudiences(o.apiAudiences);
      if (o.pathPrefix !== '' && !o.pathPrefix.startsWith('/')) throw new CliError(`--path-prefix: want a path starting with /, got "${o.pathPrefix}"`);
      const log = createLogger('sits-extender', o).line;
      const client = new KubeClient(loadKubeConfig(o.kubeconfig), { userAgent: 'sits-extender/0.1' });
      const ext = await startExtender({
        client,
        port: o.port,
        host: o.insecureLocalhost === true ? '127.0.0.1' : o.host,
        ...(tls === undefined ? {} : { tls }),
        ...(clientCa === undefined ? {} : { clientCa }),
        ...(audiences === undefined ? {} : { audiences }),
        ...(o.insecureLocalhost === true ? { auth: { authn: ANONYMOUS_AUTHN, authz: ALLOW_ALL } } : {}),
        schedulerName: o.schedulerName,
        profile: o.profile,
        pathPrefix: o.pathPrefix,
        planTtlMs: o.planTtl * 1000,
        gangPlanTtlMs: o.gangPlanTtl * 1000,
        ...(o.leaderElect === true
          ? {
              leaderElection: {
                namespace: o.leaseNamespace,
                name: o.leaseName,
                identity: o.identity ?? `${hostname()}-${process.pid}`,
                leaseDurationSec: o.leaseDuration,
              },
            }
          : {}),
        log,
      });
      const stopWatch = reloadServingCert(o, tls !== undefined, (p) => ext.setTls(p), log);
      log(`sits-extender serving on ${ext.url}${o.pathPrefix} for pods of ${o.schedulerName} (profile ${o.profile})`);
      const sig = await signal;
      log(`${sig}: stopping`);
      stopWatch?.();
      await ext.close();
      client.close();
    });
}
