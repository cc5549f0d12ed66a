import { existsSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { createControllersApp, CONTROLLERS_LEASE, type ControllersApp } from '../../app/live.ts';
import { selfSignedServing } from '../../kube/certs.ts';
import { ANONYMOUS_AUTHN } from '../../kube/delegated-auth.ts';
import { startSecureServer, type SecureServer } from '../../kube/secure-server.ts';
import { startTracing, type Tracing } from '../../kube/tracing.ts';
import { parsePluginLimits } from '../../controllers/batch-inference/wasm-plugin.ts';
import { parseKedaAllowList } from '../../controllers/inference-service/keda.ts';
import { CliError } from '../errors.ts';
import { intOption, numberOption } from '../options.ts';
import { untilSignal } from './run.ts';

const stamp = (m: string): string => `${new Date().toISOString()} ${m}\n`;
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/**
 * /healthz, /livez (alive) and /readyz (caches filled; leader or standby) for the kubelet's probes. Nothing else is
 * served, so no caller needs authenticating: every other path is refused (403) without asking the apiserver.
 * Off loopback HTTPS with a certificate generated at start, as the scheduler's secure port.
 */
async function startHealthServer(port: number, host: string, state: () => ControllersApp | 'stopping' | undefined): Promise<SecureServer> {
  const tls = LOOPBACK.has(host) ? undefined : await selfSignedServing([hostname(), 'localhost'], host === '0.0.0.0' || host === '::' ? ['127.0.0.1'] : [host]);
  return startSecureServer({
    port,
    host,
    ...(tls === undefined ? {} : { tls }),
    authn: ANONYMOUS_AUTHN,
    authz: { authorize: () => Promise.resolve({ allowed: false, reason: 'only the health paths are served' }) },
    handler: (req, res) => {
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
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
}

export function registerControllers(program: Command): void {
  program
    .command('controllers')
    .description('run the workload controllers alone (TrainingJob, InferenceService, DataPipeline), without the scheduler: the chart\'s sits-controllers Deployment, under its own ServiceAccount and Lease')
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config)')
    .option('--identity <id>', 'leader-election identity (default: hostname-pid)')
    .option('--lease-namespace <ns>', 'namespace of the leader-election Lease', 'kube-system')
    .option('--lease-name <name>', 'the controllers\' Lease (not the scheduler\'s)', CONTROLLERS_LEASE)
    .option('--no-leader-elect', 'run without leader election (one replica only)')
    .option('--lease-duration <sec>', 'lease duration in seconds', numberOption('--lease-duration', 1, 300), 15)
    .option('--max-in-flight <n>', 'API requests in flight at most', intOption('--max-in-flight', 1, 10_000), 64)
    .option('--health-port <port>', 'port of /healthz and /readyz (0 = off); nothing else is served', intOption('--health-port', 0, 65535), 8081)
    .option('--health-host <addr>', 'address of the health server (off loopback: HTTPS with a certificate generated at start)', '0.0.0.0')
    .option('--gpu-lending', 'an InferenceService replica that finds no free GPU borrows whole workers of an elastic TrainingJob (ADR 0131)')
    .option('--serving-loop', 'load the LoRA adapters of every InferenceService on its replicas and run the SITS token autoscaler')
    .option('--batch-claims-dir <dir>', "also run the BatchInferenceJob controller; the jobs' input/output claims are mounted here as <dir>/<namespace>/<claim> (ADR 0102)")
    .option('--batch-plugin-dir <dir>', 'with --batch-claims-dir: where routing plugin files are read (ADR 0165)')
    .option('--batch-plugin-limits <json>', "with --batch-claims-dir: the batch workers' WASM plugin limits {maxMemoryPages, callTimeoutMs, loadTimeoutMs}")
    .option('--keda-allowed-servers <urls>', 'comma-separated Prometheus addresses an InferenceService in autoscaling mode keda may name; unset: none (no ScaledObject; docs/security.md)')
    .option('--keda-allowed-cluster-auth <names>', 'comma-separated ClusterTriggerAuthentications such a service may use (a TriggerAuthentication in its own namespace always may)')
    .option('--health-migration', 'move TrainingJobs off GPUs quarantined on their Node (ADR 0129)')
    .option('--otlp-endpoint <url>', 'send OpenTelemetry traces over OTLP/HTTP to this collector (default: $OTEL_EXPORTER_OTLP_ENDPOINT; unset: none)')
    .action(async (o: { kubeconfig?: string; identity?: string; leaseNamespace: string; leaseName: string; leaderElect: boolean; leaseDuration: number; maxInFlight: number; healthPort: number; healthHost: string; gpuLending?: boolean; servingLoop?: boolean; batchClaimsDir?: string; batchPluginDir?: string; batchPluginLimits?: string; healthMigration?: boolean; kedaAllowedServers?: string; kedaAllowedClusterAuth?: string; otlpEndpoint?: string }) => {
      const log = (m: string): void => void process.stderr.write(stamp(m));
      if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(o.leaseName)) throw new CliError(`--lease-name: "${o.leaseName}" is not a DNS subdomain`);
      const kedaAllow = parseKedaAllowList(o.kedaAllowedServers, o.kedaAllowedClusterAuth);
      if ('error' in kedaAllow) throw new CliError(kedaAllow.error, { hint: 'give http(s) URLs and object names, comma-separated' });
      if (o.batchClaimsDir !== undefined && (!existsSync(o.batchClaimsDir) || !statSync(o.batchClaimsDir).isDirectory())) throw new CliError(`--batch-claims-dir: ${o.batchClaimsDir} is not a folder`);
      const limits = o.batchPluginLimits === undefined ? undefined : parsePluginLimits(o.batchPluginLimits, '--batch-plugin-limits');
      if (limits !== undefined && 'error' in limits) throw new CliError(limits.error);
      if ((limits !== undefined || o.batchPluginDir !== undefined) && o.batchClaimsDir === undefined) throw new CliError('--batch-plugin-dir and --batch-plugin-limits are for the BatchInferenceJob controller: give --batch-claims-dir too');
      if (o.batchPluginDir !== undefined && (!existsSync(o.batchPluginDir) || !statSync(o.batchPluginDir).isDirectory())) throw new CliError(`--batch-plugin-dir: ${o.batchPluginDir} is not a folder`);
      const identity = o.identity ?? `${hostname()}-${process.pid}`;
      let tracing: Tracing;
      try {
        tracing = startTracing({ ...(o.otlpEndpoint === undefined ? {} : { endpoint: o.otlpEndpoint }), serviceName: 'sits-controllers', serviceVersion: program.version() ?? 'unknown', instanceId: identity, log });
      } catch (e) {
        throw new CliError((e as Error).message);
      }
      let app: ControllersApp | 'stopping' | undefined;
      // Before the caches fill, so the probes answer during start-up (as `sits run`).
      const health = o.healthPort === 0 ? undefined : await startHealthServer(o.healthPort, o.healthHost, () => app);
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
          log,
          tracing,
        });
      } catch (e) {
        await health?.close();
        await tracing.shutdown();
        throw e;
      }
      const running = app;
      log(`sits-controllers running (${o.leaderElect ? `Lease ${o.leaseNamespace}/${o.leaseName}` : 'no leader election'}${health === undefined ? '' : `, health on ${health.url}`})`);
      const sig = await untilSignal();
      log(`${sig}: stopping`);
      app = 'stopping';
      await running.stop();
      await health?.close();
      await tracing.shutdown();
    });
}
