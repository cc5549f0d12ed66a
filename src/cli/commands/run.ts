import { existsSync, readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { createLiveApp, loadKubeConfig } from '../../app/live.ts';
import { selfSignedServing } from '../../kube/secure/certs.ts';
import { KubeClient } from '../../kube/client/client.ts';
import { ControllerMetrics } from '../../kube/controllers/controller-metrics.ts';
import { startTracing, type Tracing } from '../../kube/telemetry/tracing.ts';
import { delegatedAuth, type DelegatedAuth } from '../../kube/secure/delegated-auth.ts';
import { liveViewStream } from '../../server/dashboard.ts';
import { SitsMetrics } from '../../server/metrics.ts';
import { SERVER_PATHS, startServer, type ServerOptions, type SitsServer } from '../../server/server.ts';
import { SCHEDULER_NAME } from '../../api/wire.ts';
import { parsePluginLimits, type PluginLimits } from '../../controllers/batch-inference/wasm-plugin.ts';
import { loadSchedulerConfig, type SchedulerProfileSpec } from '../../formats/scheduler-config.ts';
import { parseKedaAllowList, type KedaAllowList } from '../../controllers/inference-service/keda.ts';
import { CliError } from '../errors.ts';
import { intOption, numberOption } from '../options.ts';
import { API_AUDIENCES_HELP, parseAudiences, reloadServingCert } from '../serving-flags.ts';
import { createLogger, logFormatOption, verbosityOption, type LogOptions } from '../logger.ts';

let signalled: Promise<string> | undefined;
/** How close two deliveries of one signal must be to count as one (bin/sits.mjs forwards after 200 ms). */
const DUPLICATE_SIGNAL_MS = 1_000;

/**
 * Resolves when SIGINT or SIGTERM arrives. A long-running command calls it first thing, before its start-up, so a
 * signal during start-up is kept and answered by a clean stop once start-up ends (it used to kill the process with
 * the default action). A second signal exits at once, for a start-up that hangs; the same signal again within
 * DUPLICATE_SIGNAL_MS is the first one twice: a terminal's Ctrl-C reaches both `bin/sits.mjs` run under an older Node
 * and the Node 24 child it started, and the wrapper passes on what it gets.
 */
export function untilSignal(): Promise<string> {
  signalled ??= new Promise((resolve) => {
    let first: { signal: string; at: number } | undefined;
    const on = (s: NodeJS.Signals): void => {
      if (first !== undefined) {
        if (s === first.signal && performance.now() - first.at < DUPLICATE_SIGNAL_MS) return;
        process.exit(s === 'SIGINT' ? 130 : 143);
      }
      first = { signal: s, at: performance.now() };
      resolve(s);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
  return signalled;
}

export function registerRun(program: Command): void {
  program
    .command('run')
    .description('run the SITS scheduler against a Kubernetes API server (pods with schedulerName sits-scheduler)')
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config)')
    .option(
      '--config <file>',
      'several profiles in one process, each with its own schedulerName and plugins (a SchedulerConfiguration file, docs/kubernetes.md); instead of --profile and --scheduler-name',
    )
    .option('--profile <name>', 'scheduling profile', 'sits')
    .option(
      '--scheduler-name <name>',
      "schedule the pods with this spec.schedulerName (default-scheduler: SITS as the cluster's only scheduler); also its event source and Lease name",
      SCHEDULER_NAME,
    )
    .option('--identity <id>', 'leader-election identity (default: hostname-pid)')
    .option('--lease-namespace <ns>', 'namespace of the leader-election Lease', 'kube-system')
    .option('--no-leader-elect', 'run without leader election (one replica only)')
    .option('--lease-duration <sec>', 'lease duration in seconds', numberOption('--lease-duration', 1, 300), 15)
    .option('--max-in-flight <n>', 'API requests in flight at most', intOption('--max-in-flight', 1, 10_000), 64)
    .option('--no-events', 'do not write Scheduled/FailedScheduling events')
    .option('--metrics-port <port>', 'port of /metrics, /healthz and /readyz (0 = off)', intOption('--metrics-port', 0, 65535), 8080)
    .option(
      '--metrics-host <addr>',
      'address the metrics server listens on (off loopback: HTTPS, callers checked by TokenReview/SubjectAccessReview; /healthz, /readyz, /livez open)',
      '0.0.0.0',
    )
    .option('--metrics-per-gpu', 'also one series per GPU (sits_gpu_allocated_ratio, sits_gpu_healthy: 2 series per GPU; off by default, docs/metrics.md)')
    .option('--tls-cert-file <file>', 'serving certificate of the metrics server (default: a self-signed one generated at start, as kube-scheduler does)')
    .option('--tls-private-key-file <file>', 'key of --tls-cert-file (both re-read when they change)')
    .option('--api-audiences <list>', API_AUDIENCES_HELP)
    .option('--client-ca-file <file>', 'CA of client certificates accepted from scrapers (else bearer tokens, checked by TokenReview)')
    .option(
      '--controllers',
      'also run the workload controllers (TrainingJob); they act only while this replica leads. A development mode (sits dev, one process): scheduler and controllers then share one identity, which needs both roles; installs run `sits controllers` under its own ServiceAccount (docs/rbac.md)',
    )
    .option('--no-controllers', 'run the scheduler only (the default)')
    .option(
      '--gpu-lending',
      'with --controllers: an InferenceService replica that finds no free GPU borrows whole workers of an elastic TrainingJob, given back after a cooldown (ADR 0131)',
    )
    .option(
      '--serving-loop',
      'with --controllers: also load the LoRA adapters of every InferenceService on its replicas and run the SITS token autoscaler (writes /scale unless autoscaling.mode is external)',
    )
    .option(
      '--keda-allowed-servers <urls>',
      'comma-separated Prometheus addresses with --controllers: an InferenceService in autoscaling mode keda may name; unset: none (no ScaledObject; docs/security.md)',
    )
    .option(
      '--keda-allowed-cluster-auth <names>',
      'comma-separated ClusterTriggerAuthentications such a service may use (a TriggerAuthentication in its own namespace always may)',
    )
    .option(
      '--batch-claims-dir <dir>',
      "with --controllers: also run the BatchInferenceJob controller, which commits each job's output; the jobs' input/output claims are mounted here as <dir>/<namespace>/<claim> (ADR 0102)",
    )
    .option(
      '--batch-plugin-dir <dir>',
      'with --batch-claims-dir: where the BatchInferenceJob controller reads routing plugin files (spec.strategy.routing.wasm.file; ADR 0165)',
    )
    .option(
      '--batch-plugin-limits <json>',
      "with --batch-claims-dir: the batch workers' WASM strategy plugin limits {maxMemoryPages, callTimeoutMs, loadTimeoutMs} (default 16 pages, 1000 ms, 5000 ms; ADR 0117, 0156)",
    )
    .option(
      '--checkpoint-aware-preemption',
      "ask a checkpointable preemption victim (a TrainingJob with a checkpoint policy) for a checkpoint and evict it once the checkpoint is Ready or its queue's grace runs out; it resumes from that checkpoint (ADR 0093, 0143)",
    )
    .option(
      '--health-migration',
      'with --controllers: move TrainingJobs off GPUs quarantined on their Node (checkpoint, then evict the gang whole so it restarts elsewhere from the checkpoint; ADR 0129)',
    )
    .option(
      '--otlp-endpoint <url>',
      'send OpenTelemetry traces (cycles, attempts, reconciles) over OTLP/HTTP to this collector, e.g. http://localhost:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT; unset: no tracing)',
    )
    .addOption(verbosityOption())
    .addOption(logFormatOption())
    .action((o: RunFlags) => runScheduler(program, o));
}

/** The profiles of a SchedulerConfiguration file; a bad file is a usage error naming file:line:column and field. */
function readSchedulerConfig(file: string): readonly SchedulerProfileSpec[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(`--config: ${(e as Error).message}`);
  }
  const r = loadSchedulerConfig(file, text);
  if (!r.ok) throw new CliError(r.error.message);
  return r.value;
}

/**
 * Starts /metrics, /healthz and /readyz before the informers sync, so probes answer during start-up. A port
 * in use is reported and the scheduler runs without them (several `sits run` on one machine); in a pod the
 * failing probes make it visible.
 */
export async function startMetricsServer(
  port: number,
  host: string,
  version: string,
  log: (m: string) => void,
  secure: ServerOptions['secure'],
  perGpu: boolean,
): Promise<SitsServer | undefined> {
  try {
    return await startServer({
      port,
      host,
      metrics: new SitsMetrics({ version, startTimeSeconds: Date.now() / 1000 - process.uptime(), perGpu, processMetrics: true }),
      log,
      ...(secure !== undefined ? { secure } : {}),
    });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
    log(`metrics server: ${host}:${port} is in use; running without /metrics, /healthz and /readyz (--metrics-port to choose another, 0 for none)`);
    return undefined;
  }
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** The secure port's certificate (given, or self-signed for this host) and delegated authn/authz through the apiserver. */
export async function secureServing(o: {
  kubeconfig?: string;
  metricsHost: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  apiAudiences?: string;
}): Promise<{ secure: NonNullable<ServerOptions['secure']>; close: () => void; selfSignedCa: string | undefined }> {
  const audiences = parseAudiences(o.apiAudiences);
  const client = new KubeClient(loadKubeConfig(o.kubeconfig), { maxInFlight: 4, userAgent: 'sits-scheduler-auth/0.1' });
  const tls =
    o.tlsCertFile !== undefined && o.tlsPrivateKeyFile !== undefined
      ? { cert: readFileSync(o.tlsCertFile, 'utf8'), key: readFileSync(o.tlsPrivateKeyFile, 'utf8') }
      : await selfSignedServing([hostname(), 'localhost'], o.metricsHost === '0.0.0.0' || o.metricsHost === '::' ? ['127.0.0.1'] : [o.metricsHost]);
  const clientCa = o.clientCaFile === undefined ? undefined : readFileSync(o.clientCaFile, 'utf8');
  // Reviews through their own client and gate; only the routes served are reviewed (ADR 0177).
  const auth: DelegatedAuth = delegatedAuth(client, {
    ...(clientCa !== undefined ? { clientCa } : {}),
    ...(audiences === undefined ? {} : { audiences }),
    paths: SERVER_PATHS,
    userAgent: 'sits-scheduler-auth/0.1',
  });
  return {
    close: () => {
      auth.close();
      client.close();
    },
    selfSignedCa: 'ca' in tls ? tls.ca : undefined,
    secure: { tls, ...(clientCa !== undefined ? { clientCa } : {}), authn: auth.authn, authz: auth.authz },
  };
}

type RunFlags = LogOptions & {
  otlpEndpoint?: string;
  kubeconfig?: string;
  config?: string;
  profile: string;
  schedulerName: string;
  identity?: string;
  leaseNamespace: string;
  leaderElect: boolean;
  leaseDuration: number;
  maxInFlight: number;
  events: boolean;
  metricsPort: number;
  metricsHost: string;
  metricsPerGpu?: boolean;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  apiAudiences?: string;
  controllers?: boolean;
  servingLoop?: boolean;
  gpuLending?: boolean;
  healthMigration?: boolean;
  kedaAllowedServers?: string;
  kedaAllowedClusterAuth?: string;
  checkpointAwarePreemption?: boolean;
  batchClaimsDir?: string;
  batchPluginDir?: string;
  batchPluginLimits?: string;
};

/** The flags that depend on each other or on the file system; a wrong combination is a usage error before anything starts. */
function checkRunFlags(o: RunFlags): { kedaAllow: KedaAllowList; batchPluginLimits: Partial<PluginLimits> | undefined } {
  if ((o.tlsCertFile === undefined) !== (o.tlsPrivateKeyFile === undefined)) throw new CliError('--tls-cert-file and --tls-private-key-file go together');
  if (o.servingLoop === true && o.controllers !== true) throw new CliError('--serving-loop runs with the controllers: give --controllers too');
  if (o.gpuLending === true && o.controllers !== true) throw new CliError('--gpu-lending runs with the controllers: give --controllers too');
  const kedaAllow = parseKedaAllowList(o.kedaAllowedServers, o.kedaAllowedClusterAuth);
  if ('error' in kedaAllow) throw new CliError(kedaAllow.error, { hint: 'give http(s) URLs and object names, comma-separated' });
  if ((o.kedaAllowedServers !== undefined || o.kedaAllowedClusterAuth !== undefined) && o.controllers !== true)
    throw new CliError('--keda-allowed-servers and --keda-allowed-cluster-auth are for the controllers: give --controllers too');
  if (o.healthMigration === true && o.controllers !== true) throw new CliError('--health-migration runs with the controllers: give --controllers too');
  if (o.batchClaimsDir !== undefined) {
    if (o.controllers !== true) throw new CliError('--batch-claims-dir runs with the controllers: give --controllers too');
    if (!existsSync(o.batchClaimsDir) || !statSync(o.batchClaimsDir).isDirectory())
      throw new CliError(`--batch-claims-dir: ${o.batchClaimsDir} is not a folder`);
  }
  const batchPluginLimits = o.batchPluginLimits === undefined ? undefined : parsePluginLimits(o.batchPluginLimits, '--batch-plugin-limits');
  if (batchPluginLimits !== undefined) {
    if ('error' in batchPluginLimits) throw new CliError(batchPluginLimits.error);
    if (o.batchClaimsDir === undefined) throw new CliError('--batch-plugin-limits is for the batch workers: give --batch-claims-dir too');
  }
  if (o.batchPluginDir !== undefined && (o.batchClaimsDir === undefined || !existsSync(o.batchPluginDir) || !statSync(o.batchPluginDir).isDirectory()))
    throw new CliError(
      o.batchClaimsDir === undefined
        ? '--batch-plugin-dir is for the BatchInferenceJob controller: give --batch-claims-dir too'
        : `--batch-plugin-dir: ${o.batchPluginDir} is not a folder`,
    );
  if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(o.schedulerName))
    throw new CliError(`--scheduler-name: "${o.schedulerName}" is not a DNS subdomain (lower-case letters, digits, '-' and '.')`);
  return { kedaAllow, batchPluginLimits };
}

/** `sits run`'s action: the secure metrics port, the live app, and a clean stop on the first signal. */
async function runScheduler(program: Command, o: RunFlags): Promise<void> {
  const signal = untilSignal();
  const log = createLogger('sits-scheduler', o).line;
  const { kedaAllow, batchPluginLimits } = checkRunFlags(o);
  const identity = o.identity ?? `${hostname()}-${process.pid}`;
  let tracing: Tracing;
  try {
    tracing = startTracing({
      ...(o.otlpEndpoint === undefined ? {} : { endpoint: o.otlpEndpoint }),
      serviceName: 'sits-scheduler',
      serviceVersion: program.version() ?? 'unknown',
      instanceId: identity,
      log,
    });
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  const run = program.commands.find((c) => c.name() === 'run');
  const given = (k: string): boolean => run?.getOptionValueSource(k) === 'cli';
  if (o.config !== undefined && (given('profile') || given('schedulerName')))
    throw new CliError('--config names the profiles and their scheduler names: give it without --profile and --scheduler-name');
  const profiles = o.config === undefined ? undefined : readSchedulerConfig(o.config);
  const auth = o.metricsPort === 0 || LOOPBACK.has(o.metricsHost) ? undefined : await secureServing(o);
  const server =
    o.metricsPort === 0
      ? undefined
      : await startMetricsServer(o.metricsPort, o.metricsHost, program.version() ?? 'unknown', log, auth?.secure, o.metricsPerGpu === true);
  // A renewed --tls-cert-file pair is served from the next handshake; a broken one is logged and the old kept.
  const stopCertWatch = server === undefined || auth === undefined ? undefined : reloadServingCert(o, true, (p) => server.setTls(p), log);
  const app = await createLiveApp({
    ...(o.kubeconfig === undefined ? {} : { kubeconfig: o.kubeconfig }),
    profile: o.profile,
    schedulerName: o.schedulerName,
    ...(profiles === undefined ? {} : { profiles }),
    identity,
    ...(o.leaderElect ? { leaseNamespace: o.leaseNamespace, leaseDurationSec: o.leaseDuration } : {}),
    maxInFlight: o.maxInFlight,
    events: o.events,
    controllers: o.controllers === true,
    serving: o.servingLoop === true,
    lending: o.gpuLending === true,
    healthMigration: o.healthMigration === true,
    kedaAllow,
    checkpointAware: o.checkpointAwarePreemption === true,
    ...(o.batchClaimsDir === undefined ? {} : { batchClaimsDir: o.batchClaimsDir }),
    ...(batchPluginLimits === undefined ? {} : { batchPluginLimits }),
    ...(o.batchPluginDir === undefined ? {} : { batchPluginDir: o.batchPluginDir }),
    ...(server === undefined ? {} : { controllerMetrics: new ControllerMetrics(server.metrics.registry) }),
    log,
    tracing,
  }).catch(async (e: unknown) => {
    stopCertWatch?.();
    await server?.close();
    auth?.close();
    await tracing.shutdown();
    throw e;
  });
  server?.attach(app.scheduler, app.client);
  // The dashboard's view follows the scheduler's cache (watch events, cycles); same port, same authn/authz as /metrics.
  server?.attachView(liveViewStream(app.scheduler, { log }));
  const serving =
    profiles === undefined
      ? `${o.schedulerName} running (profile ${o.profile}`
      : `${profiles.map((p) => p.schedulerName).join(', ')} running (profiles ${profiles.map((p) => p.config.name).join(', ')}`;
  log(
    `${serving}, ${app.scheduler.cache.nodeCount} nodes${app.controllers === undefined ? '' : `, controllers ${app.controllers.names.join(', ')}`}${server === undefined ? '' : `, metrics on ${server.url}, dashboard on ${server.url}/dashboard/`}${tracing.enabled ? ', traces over OTLP' : ''})`,
  );
  const sig = await signal;
  log(`${sig}: stopping`);
  server?.draining();
  await app.stop();
  stopCertWatch?.();
  await server?.close();
  auth?.close();
  // The last spans (the stop's own cycle, reconciles) are sent before the process exits.
  await tracing.shutdown();
}
