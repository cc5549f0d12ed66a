import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { activatorResource, DEFAULT_MEMORY_LIMIT, startActivator } from '../../live/activator/activator.ts';
import { budgetFromMemory, checkLimits, detectMemoryLimit } from '../../live/activator/activator-budget.ts';
import { quantityToUnits } from '../../api/quantity.ts';
import { CliError } from '../errors.ts';
import { loadKubeConfig } from '../../app/live.ts';
import { KubeClient } from '../../kube/client/client.ts';
import { delegatedAuth } from '../../kube/secure/delegated-auth.ts';
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
  maxHeld?: number;
  maxHeldRequests?: number;
  maxHeldBytes?: number;
  maxBodyBytes?: number;
  memoryLimit?: number;
  portName: string;
  insecureLocalhost?: boolean;
  apiAudiences?: string;
}

/** A byte count: a whole number or a Kubernetes quantity (256Mi, 1G). */
const bytesOption =
  (min: number) =>
  (v: string): number => {
    const n = /^\d+$/.test(v.trim()) ? Number(v) : quantityToUnits(v.trim());
    if (n === undefined || !Number.isSafeInteger(n))
      throw new InvalidArgumentError(`${JSON.stringify(v)} is not a number of bytes (give e.g. 268435456 or 256Mi)`);
    if (n < min) throw new InvalidArgumentError(`${v} is under ${min} bytes`);
    return n;
  };

/** The budget the flags ask for, checked here so that a bad combination is a usage error naming the flags. */
export function activatorBudgetFlags(
  o: Pick<ActivatorFlags, 'maxHeld' | 'maxHeldRequests' | 'maxHeldBytes' | 'maxBodyBytes' | 'memoryLimit'>,
  env: NodeJS.ProcessEnv = process.env,
): { maxHeldPerService: number; maxHeldRequests: number; maxHeldBytes: number; maxBodyBytes: number; memoryLimitBytes: number } {
  let memory: number;
  try {
    memory = o.memoryLimit ?? detectMemoryLimit(env) ?? DEFAULT_MEMORY_LIMIT;
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  const d = budgetFromMemory(memory, o.maxBodyBytes);
  const maxHeldBytes = o.maxHeldBytes ?? d.maxHeldBytes;
  const limits = {
    ...d,
    maxHeldBytes,
    maxHeldRequests: o.maxHeldRequests ?? d.maxHeldRequests,
    maxHeldPerService: o.maxHeld ?? d.maxHeldPerService,
    maxBodyBytes: o.maxBodyBytes ?? Math.min(16 << 20, Math.floor(maxHeldBytes / 4)),
  };
  try {
    checkLimits(limits);
  } catch (e) {
    const flag: Record<string, string> = {
      maxBodyBytes: '--max-body-bytes',
      maxHeldBytes: '--max-held-bytes',
      maxHeldRequests: '--max-held-requests',
      maxHeldPerService: '--max-held',
    };
    const m = (e as Error).message;
    const field = m.split(':')[0] ?? '';
    throw new CliError(`${flag[field] ?? field}${m.slice(field.length)}`);
  }
  return {
    maxHeldPerService: limits.maxHeldPerService,
    maxHeldRequests: limits.maxHeldRequests,
    maxHeldBytes,
    maxBodyBytes: limits.maxBodyBytes,
    memoryLimitBytes: memory,
  };
}

export function registerActivator(program: Command): void {
  const cmd = program
    .command('activator')
    .description(
      'serve InferenceServices at /namespaces/{ns}/inferenceservices/{name}/proxy/…: route to ready replicas, and hold requests for a service scaled to zero while it activates (docs/inference-service.md, ADR 0149)',
    );
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
    .option(
      '--memory-limit <bytes>',
      'the memory the budget defaults come from (default: $SITS_MEMORY_LIMIT, which the chart sets from limits.memory, else the cgroup limit, else 512Mi)',
      bytesOption(64 << 20),
    )
    .option(
      '--max-held <n>',
      'requests held per service at most (beyond: 429 with Retry-After; default 1000); one namespace holds at most half of --max-held-requests',
      intOption('--max-held', 1, 1_000_000),
    )
    .option(
      '--max-held-requests <n>',
      'requests held across every service (beyond: 503 with Retry-After; default memory limit / 64Ki)',
      intOption('--max-held-requests', 1, 10_000_000),
    )
    .option(
      '--max-held-bytes <bytes>',
      'request body bytes buffered across every service, checked before a body is read (beyond: 503; default half the memory limit; one namespace gets at most half, and the last quarter is kept for namespaces holding nothing)',
      bytesOption(1 << 20),
    )
    .option('--max-body-bytes <bytes>', 'largest request body (413 beyond; default 16Mi, at most a quarter of --max-held-bytes)', bytesOption(1024))
    .option('--port-name <name>', 'the Service port requests go to, by name', 'http')
    .addOption(verbosityOption())
    .addOption(logFormatOption())
    .action(async (o: ActivatorFlags & LogOptions) => {
      const signal = untilSignal();
      const { tls, clientCa } = servingTls(o);
      const audiences = parseAudiences(o.apiAudiences);
      const limits = activatorBudgetFlags(o);
      const log = createLogger('sits-activator', o).line;
      const client = new KubeClient(loadKubeConfig(o.kubeconfig), { userAgent: 'sits-activator/0.1' });
      // Reviews through their own client and gate (ADR 0177); /metrics is the one non-resource path reviewed.
      const auth = delegatedAuth(client, {
        ...(clientCa === undefined ? {} : { clientCa }),
        ...(audiences === undefined ? {} : { audiences }),
        resourceFor: activatorResource,
        paths: ['/metrics'],
        userAgent: 'sits-activator-auth/0.1',
      });
      const act = await startActivator(client, {
        port: o.port,
        host: o.insecureLocalhost === true ? '127.0.0.1' : o.host,
        ...(tls === undefined ? {} : { tls }),
        ...(clientCa === undefined ? {} : { clientCa }),
        authn: auth.authn,
        authz: auth.authz,
        ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
        holdTimeoutMs: o.holdTimeout * 1000,
        ...limits,
        portName: o.portName,
        log,
      });
      log(
        `activator: budget ${limits.maxHeldBytes} body bytes and ${limits.maxHeldRequests} held requests (memory limit ${limits.memoryLimitBytes}), ${limits.maxHeldPerService} held per service, bodies up to ${limits.maxBodyBytes} bytes`,
      );
      const stopWatch = reloadServingCert(o, tls !== undefined, (p) => act.setTls(p), log);
      const sig = await signal;
      log(`${sig}: stopping`);
      stopWatch?.();
      // Held requests may still get their replica: drain for up to the hold (the chart's grace period).
      await act.close({ drainMs: o.holdTimeout * 1000 });
      auth.close();
      client.close();
    });
}
