import { existsSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { createControllersApp, CONTROLLERS_LEASE, type ControllersApp } from '../../app/live.ts';
import { selfSignedServing } from '../../kube/secure/certs.ts';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { loadKubeConfig } from '../../app/live.ts';
import { KubeClient } from '../../kube/client/client.ts';
import { ControllerMetrics } from '../../kube/controllers/controller-metrics.ts';
import { ALLOW_ALL, ANONYMOUS_AUTHN, delegatedAuth } from '../../kube/secure/delegated-auth.ts';
import { startSecureServer, type SecureServer } from '../../kube/secure/secure-server.ts';
import { startTracing, type Tracing } from '../../kube/telemetry/tracing.ts';
import { parsePluginLimits } from '../../controllers/batch-inference/wasm-plugin.ts';
import { parseKedaAllowList } from '../../controllers/inference-service/keda.ts';
import { CliError } from '../errors.ts';
import { intOption, numberOption } from '../options.ts';
import { untilSignal } from './run.ts';
import { createLogger, logFormatOption, verbosityOption, type LogOptions } from '../logger.ts';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * /healthz, /livez (alive) and /readyz (caches filled; leader or standby) for the kubelet's probes, open to anyone;
 * /metrics (process metrics and controller-runtime's reconcile and work-queue metrics) for callers the apiserver
 * authenticates (TokenReview) and authorizes (SubjectAccessReview `get /metrics`: the sits-metrics-reader role), as
 * the scheduler's secure port. Off loopback HTTPS with a certificate generated at start; on loopback plain HTTP,
 * unchecked (local use).
 */
async function startHealthServer(
  port: number,
  host: string,
  state: () => ControllersApp | 'stopping' | undefined,
  metrics: Registry,
  kubeconfig: string | undefined,
): Promise<{ server: SecureServer; close: () => Promise<void> }> {
  const loopback = LOOPBACK.has(host);
  const tls = loopback ? undefined : await selfSignedServing([hostname(), 'localhost'], host === '0.0.0.0' || host === '::' ? ['127.0.0.1'] : [host]);
  // Its own small client: a flood of unknown callers must not queue behind the controllers' requests.
  const client = loopback ? undefined : new KubeClient(loadKubeConfig(kubeconfig), { maxInFlight: 4, userAgent: 'sits-controllers-auth' });
  const auth = client === undefined ? undefined : delegatedAuth(client, { paths: ['/metrics'], userAgent: 'sits-controllers-auth' });
  const server = await startSecureServer({
    port,
    host,
    ...(tls === undefined ? {} : { tls }),
    authn: auth?.authn ?? ANONYMOUS_AUTHN,
    authz: auth?.authz ?? ALLOW_ALL,
    handler: (req, res) => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      if (path === '/metrics') {
        void metrics.metrics().then((text) => {
          res.writeHead(200, { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store' });
          res.end(text);
        });
        return;
      }
      const s = state();
      const [status, body] =
        path === '/healthz' || path === '/livez'
          ? [200, 'ok\n']
          : path === '/readyz'
            ? s === undefined
              ? [503, 'not ready: controllers starting\n']
              : s === 'stopping'
                ? [503, 'not ready: shutting down\n']
                : [200, `ok\ncontrollers: synced\nrole: ${s.isLeader() ? 'leader' : 'standby'}\n`]
            : [404, 'not found\n'];
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
      res.end(body);
    },
  });
  return {
    server,
    close: async () => {
      await server.close();
      auth?.close();
      client?.close();
    },
  };
}

export function registerControllers(program: Command): void {
  program
    .command('controllers')
    .description(
      "run the workload controllers alone (TrainingJob, InferenceService, DataPipeline), without the scheduler: the chart's sits-controllers Deployment, under its own ServiceAccount and Lease",
    )
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config)')
    .option('--identity <id>', 'leader-election identity (default: hostname-pid)')
    .option('--lease-namespace <ns>', 'namespace of the leader-election Lease', 'kube-system')
    .option('--lease-name <name>', "the controllers' Lease (not the scheduler's)", CONTROLLERS_LEASE)
    .option('--no-leader-elect', 'run without leader election (one replica only)')
    .option('--lease-duration <sec>', 'lease duration in seconds', numberOption('--lease-duration', 1, 300), 15)
    .option('--max-in-flight <n>', 'API requests in flight at most', intOption('--max-in-flight', 1, 10_000), 64)
    .option(
      '--health-port <port>',
      'port of /healthz, /readyz (open) and /metrics (callers checked by TokenReview/SubjectAccessReview off loopback); 0 = off',
      intOption('--health-port', 0, 65535),
      8081,
    )
    .option('--health-host <addr>', 'address of the health server (off loopback: HTTPS with a certificate generated at start)', '0.0.0.0')
    .option('--gpu-lending', 'an InferenceService replica that finds no free GPU borrows whole workers of an elastic TrainingJob (ADR 0131)')
    .option('--serving-loop', 'load the LoRA adapters of every InferenceService on its replicas and run the SITS token autoscaler')
    .option(
      '--batch-claims-dir <dir>',
      "also run the BatchInferenceJob controller; the jobs' input/output claims are mounted here as <dir>/<namespace>/<claim> (ADR 0102)",
    )
    .option('--batch-plugin-dir <dir>', 'with --batch-claims-dir: where routing plugin files are read (ADR 0165)')
    .option('--batch-plugin-limits <json>', "with --batch-claims-dir: the batch workers' WASM plugin limits {maxMemoryPages, callTimeoutMs, loadTimeoutMs}")
    .option(
      '--keda-allowed-servers <urls>',
      'comma-separated Prometheus addresses an InferenceService in autoscaling mode keda may name; unset: none (no ScaledObject; docs/security.md)',
    )
    .option(
      '--keda-allowed-cluster-auth <names>',
      'comma-separated ClusterTriggerAuthentications such a service may use (a TriggerAuthentication in its own namespace always may)',
    )
    .option(
      '--scheduler-lease <ns/name>',
      "the scheduler's Lease: pods waiting for sits-scheduler while nobody has held it for a lease duration get a NoSchedulerLeader Event (default: <--lease-namespace>/sits-scheduler)",
    )
    .option('--no-scheduler-watch', "do not watch the scheduler's Lease")
    .option('--health-migration', 'move TrainingJobs off GPUs quarantined on their Node (ADR 0129)')
    .option('--otlp-endpoint <url>', 'send OpenTelemetry traces over OTLP/HTTP to this collector (default: $OTEL_EXPORTER_OTLP_ENDPOINT; unset: none)')
    .addOption(verbosityOption())
    .addOption(logFormatOption())
    .action(
      async (
        o: LogOptions & {
          schedulerLease?: string;
          schedulerWatch: boolean;
          kubeconfig?: string;
          identity?: string;
          leaseNamespace: string;
          leaseName: string;
          leaderElect: boolean;
          leaseDuration: number;
          maxInFlight: number;
          healthPort: number;
          healthHost: string;
          gpuLending?: boolean;
          servingLoop?: boolean;
          batchClaimsDir?: string;
          batchPluginDir?: string;
          batchPluginLimits?: string;
          healthMigration?: boolean;
          kedaAllowedServers?: string;
          kedaAllowedClusterAuth?: string;
          otlpEndpoint?: string;
        },
      ) => {
        const signal = untilSignal();
        const log = createLogger('sits-controllers', o).line;
        if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(o.leaseName)) throw new CliError(`--lease-name: "${o.leaseName}" is not a DNS subdomain`);
        const kedaAllow = parseKedaAllowList(o.kedaAllowedServers, o.kedaAllowedClusterAuth);
        if ('error' in kedaAllow) throw new CliError(kedaAllow.error, { hint: 'give http(s) URLs and object names, comma-separated' });
        if (o.batchClaimsDir !== undefined && (!existsSync(o.batchClaimsDir) || !statSync(o.batchClaimsDir).isDirectory()))
          throw new CliError(`--batch-claims-dir: ${o.batchClaimsDir} is not a folder`);
        const limits = o.batchPluginLimits === undefined ? undefined : parsePluginLimits(o.batchPluginLimits, '--batch-plugin-limits');
        if (limits !== undefined && 'error' in limits) throw new CliError(limits.error);
        if ((limits !== undefined || o.batchPluginDir !== undefined) && o.batchClaimsDir === undefined)
          throw new CliError('--batch-plugin-dir and --batch-plugin-limits are for the BatchInferenceJob controller: give --batch-claims-dir too');
        if (o.batchPluginDir !== undefined && (!existsSync(o.batchPluginDir) || !statSync(o.batchPluginDir).isDirectory()))
          throw new CliError(`--batch-plugin-dir: ${o.batchPluginDir} is not a folder`);
        const schedulerLease = o.schedulerLease ?? `${o.leaseNamespace}/sits-scheduler`;
        if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(schedulerLease))
          throw new CliError(`--scheduler-lease: want namespace/name, got "${schedulerLease}"`);
        const identity = o.identity ?? `${hostname()}-${process.pid}`;
        let tracing: Tracing;
        try {
          tracing = startTracing({
            ...(o.otlpEndpoint === undefined ? {} : { endpoint: o.otlpEndpoint }),
            serviceName: 'sits-controllers',
            serviceVersion: program.version() ?? 'unknown',
            instanceId: identity,
            log,
          });
        } catch (e) {
          throw new CliError((e as Error).message);
        }
        let app: ControllersApp | 'stopping' | undefined;
        // Before the caches fill, so the probes answer during start-up (as `sits run`).
        const registry = new Registry();
        collectDefaultMetrics({ register: registry });
        const controllerMetrics = new ControllerMetrics(registry);
        const health = o.healthPort === 0 ? undefined : await startHealthServer(o.healthPort, o.healthHost, () => app, registry, o.kubeconfig);
        try {
          app = await createControllersApp({
            ...(o.kubeconfig === undefined ? {} : { kubeconfig: o.kubeconfig }),
            identity,
            ...(o.leaderElect ? { leaseNamespace: o.leaseNamespace, leaseName: o.leaseName, leaseDurationSec: o.leaseDuration } : {}),
            maxInFlight: o.maxInFlight,
            serving: o.servingLoop === true,
            lending: o.gpuLending === true,
            healthMigration: o.healthMigration === true,
            kedaAllow,
            ...(o.batchClaimsDir === undefined ? {} : { batchClaimsDir: o.batchClaimsDir }),
            ...(limits === undefined ? {} : { batchPluginLimits: limits }),
            ...(o.batchPluginDir === undefined ? {} : { batchPluginDir: o.batchPluginDir }),
            controllerMetrics,
            ...(o.schedulerWatch ? { schedulerLease } : {}),
            log,
            tracing,
          });
        } catch (e) {
          await health?.close();
          await tracing.shutdown();
          throw e;
        }
        const running = app;
        log(
          `sits-controllers running (${o.leaderElect ? `Lease ${o.leaseNamespace}/${o.leaseName}` : 'no leader election'}, controllers ${running.controllers.names.join(', ')}${health === undefined ? '' : `, health and metrics on ${health.server.url}`})`,
        );
        const sig = await signal;
        log(`${sig}: stopping`);
        app = 'stopping';
        await running.stop();
        await health?.close();
        await tracing.shutdown();
      },
    );
}
