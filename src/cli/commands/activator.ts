import type { Command } from 'commander';
import { activatorResource, startActivator } from '../../app/activator.ts';
import { loadKubeConfig } from '../../app/live.ts';
import { KubeClient } from '../../kube/client.ts';
import { delegatedAuth } from '../../kube/delegated-auth.ts';
import { intOption, numberOption } from '../options.ts';
import { parseAudiences, reloadServingCert, servingOptions, servingTls } from '../serving-flags.ts';
import { untilSignal } from './run.ts';
import { createLogger, logFormatOption, verbosityOption, type LogOptions } from '../logger.ts';

interface ActivatorFlags {
  kubeconfig?: string;
  port: number;
  host: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  namespace?: string;
  holdTimeout: number;
  maxHeld: number;
  maxBodyBytes: number;
  portName: string;
  insecureLocalhost?: boolean;
  apiAudiences?: string;
}


export function registerActivator(program: Command): void {
  const cmd = program
    .command('activator')
    .description('serve InferenceServices at /namespaces/{ns}/inferenceservices/{name}/proxy/…: route to ready replicas, and hold requests for a service scaled to zero while it activates (docs/inference-service.md, ADR 0149)');
  servingOptions(
    cmd,
    {
      port: 8443,
      portHelp: 'HTTPS port',
      clientCaHelp: 'CA of client certificates to accept; bearer tokens are checked by TokenReview either way',
      insecureHelp: 'plain HTTP on 127.0.0.1 (local development only; callers are still authenticated and authorized)',
    },
    intOption('--port', 1, 65535),
  )
    .option('--namespace <ns>', 'serve only this namespace (a namespaced Role suffices)')
    .option('--hold-timeout <sec>', 'seconds a request waits for a ready replica before a 503', numberOption('--hold-timeout', 1, 3600), 300)
    .option('--max-held <n>', 'requests held per service at most (beyond: 503 with Retry-After)', intOption('--max-held', 1, 1_000_000), 1000)
    .option('--max-body-bytes <n>', 'largest request body', intOption('--max-body-bytes', 1024, 1 << 30), 16 << 20)
    .option('--port-name <name>', "the Service port requests go to, by name", 'http')
    .addOption(verbosityOption())
    .addOption(logFormatOption())
    .action(async (o: ActivatorFlags & LogOptions) => {
      const { tls, clientCa } = servingTls(o);
      const audiences = parseAudiences(o.apiAudiences);
      const log = createLogger('sits-activator', o).line;
      const client = new KubeClient(loadKubeConfig(o.kubeconfig), { userAgent: 'sits-activator/0.1' });
      // Reviews through their own client and gate (ADR 0177); /metrics is the one non-resource path reviewed.
      const auth = delegatedAuth(client, { ...(clientCa === undefined ? {} : { clientCa }), ...(audiences === undefined ? {} : { audiences }), resourceFor: activatorResource, paths: ['/metrics'], userAgent: 'sits-activator-auth/0.1' });
      const act = await startActivator(client, {
        port: o.port,
        host: o.insecureLocalhost === true ? '127.0.0.1' : o.host,
        ...(tls === undefined ? {} : { tls }),
        ...(clientCa === undefined ? {} : { clientCa }),
        authn: auth.authn,
        authz: auth.authz,
        ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
        holdTimeoutMs: o.holdTimeout * 1000,
        maxHeldPerService: o.maxHeld,
        maxBodyBytes: o.maxBodyBytes,
        portName: o.portName,
        log,
      });
      const stopWatch = reloadServingCert(o, tls !== undefined, (p) => act.setTls(p), log);
      const sig = await untilSignal();
      log(`${sig}: stopping`);
      stopWatch?.();
      // Held requests may still get their replica: drain for up to the hold (the chart's grace period).
      await act.close({ drainMs: o.holdTimeout * 1000 });
      auth.close();
      client.close();
    });
}
