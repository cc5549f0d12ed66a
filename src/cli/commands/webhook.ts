import type { Command } from 'commander';
import { loadKubeConfig } from '../../app/live.ts';
import { disabledRuleIds } from '../../guard/engine.ts';
import { RULES } from '../../guard/rules/index.ts';
import { KubeClient } from '../../kube/client/client.ts';
import { ALLOW_ALL, ANONYMOUS_AUTHN } from '../../kube/secure/delegated-auth.ts';
import { defaultControllerUsers } from '../../webhook/admission.ts';
import { startWebhook, type WebhookOptions } from '../../webhook/start.ts';
import { CliError } from '../errors.ts';
import { intOption } from '../options.ts';
import { untilSignal } from './run.ts';
import { createLogger, logFormatOption, verbosityOption, type LogOptions } from '../logger.ts';

interface WebhookFlags {
  kubeconfig?: string;
  port: number;
  host: string;
  mode: string;
  disable: string[];
  schedulerName: string;
  namespace?: string;
  service: string;
  certSecret: string;
  validatingConfig: string[];
  mutatingConfig: string[];
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  insecureLocalhost?: boolean;
  auditEvents?: boolean;
  controllerUser: string[];
}

const collect = (v: string, prev: string[]): string[] => [
  ...prev,
  ...v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== ''),
];

export function registerWebhook(program: Command): void {
  program
    .command('webhook')
    .description('serve the validating and mutating admission webhook (guard rails of docs/rules.md, SITS defaults) over HTTPS')
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config)')
    .option('--port <port>', 'HTTPS port of /validate, /mutate, /metrics, /report, /healthz, /readyz', intOption('--port', 1, 65535), 9443)
    .option('--host <addr>', 'address to listen on', '0.0.0.0')
    .option('--mode <mode>', 'enforce (errors deny) or audit (nothing denied; findings as Events and in /report)', 'enforce')
    .option('--disable <ids>', 'rule ids to switch off (comma list, repeatable)', collect, [])
    .option('--scheduler-name <name>', 'scheduler name the mutating webhook sets on GPU pods of opted-in namespaces', 'sits-scheduler')
    .option('--namespace <ns>', 'namespace of the webhook Service and certificate Secret (default $POD_NAMESPACE)')
    .option('--service <name>', 'name of the webhook Service (the serving certificate is issued for it)', 'sits-webhook')
    .option('--cert-secret <name>', 'Secret that keeps the CA and serving certificate (created and renewed by the webhook)', 'sits-webhook-tls')
    .option('--validating-config <name>', 'ValidatingWebhookConfiguration whose caBundle the webhook keeps (repeatable)', collect, [])
    .option('--mutating-config <name>', 'MutatingWebhookConfiguration whose caBundle the webhook keeps (repeatable)', collect, [])
    .option('--tls-cert-file <file>', 'serve this certificate instead (e.g. from cert-manager; re-read when it changes)')
    .option('--tls-private-key-file <file>', 'key of --tls-cert-file')
    .option('--client-ca-file <file>', 'CA of client certificates the apiserver may present (else bearer tokens, checked by TokenReview)')
    .option('--insecure-localhost', 'plain HTTP on 127.0.0.1 without authentication (local development only)')
    .option('--no-audit-events', 'in audit mode, do not write Events (the report and metrics remain)')
    .option(
      '--controller-user <name>',
      "user whose controller-owned pods are warned about, not denied (repeatable; default: SITS's controllers in --namespace and kube-controller-manager's)",
      collect,
      [],
    )
    .addOption(verbosityOption())
    .addOption(logFormatOption())
    .action(async (o: WebhookFlags & LogOptions) => {
      const signal = untilSignal();
      if (o.mode !== 'enforce' && o.mode !== 'audit') throw new CliError(`--mode: want enforce or audit, got "${o.mode}"`);
      let disabled: Set<string>;
      try {
        disabled = disabledRuleIds(o.disable, RULES);
      } catch (e) {
        throw new CliError(`--disable: ${(e as Error).message}`);
      }
      if ((o.tlsCertFile === undefined) !== (o.tlsPrivateKeyFile === undefined)) throw new CliError('--tls-cert-file and --tls-private-key-file go together');
      const log = createLogger('sits-webhook', o).line;
      const client = new KubeClient(loadKubeConfig(o.kubeconfig), { userAgent: 'sits-webhook/0.1' });
      let tls: WebhookOptions['tls'];
      let host = o.host;
      if (o.insecureLocalhost === true) {
        tls = 'none';
        host = '127.0.0.1';
      } else if (o.tlsCertFile !== undefined && o.tlsPrivateKeyFile !== undefined) tls = { certFile: o.tlsCertFile, keyFile: o.tlsPrivateKeyFile };
      else {
        const ns = o.namespace ?? process.env.POD_NAMESPACE;
        if (ns === undefined || ns === '') throw new CliError('--namespace (or $POD_NAMESPACE) is needed for the certificate Secret and the Service name');
        const svc = o.service;
        tls = {
          rotation: {
            secret: { namespace: ns, name: o.certSecret },
            dnsNames: [`${svc}.${ns}.svc`, `${svc}.${ns}.svc.cluster.local`, `${svc}.${ns}`, svc],
            validatingConfigs: o.validatingConfig,
            mutatingConfigs: o.mutatingConfig,
          },
        };
      }
      const hook = await startWebhook({
        client,
        rules: RULES,
        mode: o.mode,
        disabled,
        schedulerName: o.schedulerName,
        port: o.port,
        host,
        tls,
        ...(o.clientCaFile !== undefined ? { clientCaFile: o.clientCaFile } : {}),
        ...(o.insecureLocalhost === true ? { auth: { authn: ANONYMOUS_AUTHN, authz: ALLOW_ALL } } : {}),
        ...(o.auditEvents === false ? { events: false } : {}),
        controllerUsers: o.controllerUser.length > 0 ? o.controllerUser : defaultControllerUsers(o.namespace ?? process.env.POD_NAMESPACE),
        log,
      });
      log(
        `sits-webhook serving on ${hook.url} (mode ${o.mode}, ${RULES.length - disabled.size} rules${hook.cache.skipped.length > 0 ? `; not watching ${hook.cache.skipped.join(', ')}` : ''})`,
      );
      const sig = await signal;
      log(`${sig}: stopping`);
      await hook.close();
      client.close();
    });
}
