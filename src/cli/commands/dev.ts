import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { startDevCluster } from '../../app/dev-cluster.ts';
import { startTracing, type Tracing } from '../../kube/telemetry/tracing.ts';
import { CliError } from '../errors.ts';
import { intOption } from '../options.ts';
import { liveViewStream } from '../../server/dashboard.ts';
import { secureServing, startMetricsServer, untilSignal } from './run.ts';

export function registerDev(program: Command): void {
  const dev = program.command('dev').description('a local cluster for people and tools (dev mode, not for production)');
  dev
    .command('up')
    .description(
      'start etcd + kube-apiserver, kube-controller-manager, dev storage (CSI provisioner and snapshots), N fake GPU nodes of one shape, the SITS CRDs, scheduler, every controller (batch included) and a fake kubelet that runs batch workers and engines; print "ready kubeconfig=FILE"; stop on SIGINT/SIGTERM',
    )
    .option('--nodes <n>', 'number of fake nodes', intOption('--nodes', 1, 20_000), 4)
    .option('--shape <preset>', 'node preset (sits presets)', 'dgx-h100')
    .option('--nodes-per-rack <n>', 'nodes per rack', intOption('--nodes-per-rack', 1, 1000), 8)
    .option('--kubeconfig <file>', 'where to write the kubeconfig', 'sits-dev.kubeconfig')
    .option('--profile <name>', 'scheduling profile', 'sits')
    .option('--webhook <mode>', 'the admission webhook with the guard rails: audit (warns, records Events), enforce (errors deny) or off', 'audit')
    .option(
      '--otlp-endpoint <url>',
      'OpenTelemetry traces of the scheduler and controllers over OTLP/HTTP (default: $OTEL_EXPORTER_OTLP_ENDPOINT; unset: none)',
    )
    .option(
      '--scheduler <mode>',
      'in-process: the SITS scheduler runs in dev up, with leader election (a `sits run` against it stands by); none: no scheduler (run your own `sits run` replicas against the cluster)',
      'in-process',
    )
    .option(
      '--metrics-port <port>',
      "the scheduler's /metrics and dashboard on 127.0.0.1: HTTPS, callers checked with the kubeconfig's credentials through the apiserver (TokenReview, SubjectAccessReview), as `sits run` does; 0 = off",
      intOption('--metrics-port', 0, 65535),
      8080,
    )
    .option('--plain-metrics', 'serve the metrics port in plain HTTP without authentication instead (loopback only; for a browser on the dashboard)')
    .option(
      '--no-controller-manager',
      'leave out kube-controller-manager (garbage collection, Deployments, Jobs, EndpointSlices, PV binding; storage and batch need it)',
    )
    .option(
      '--no-storage',
      'leave out the dev storage: csi-provisioner, snapshot-controller and csi-snapshotter over a CSI driver of folders, default StorageClass and VolumeSnapshotClass sits-dev',
    )
    .option('--no-batch', 'leave out the BatchInferenceJob controller and the engines the fake kubelet runs for batch workers and llama.cpp/vLLM servers')
    .option(
      '--pod-run-seconds <n>',
      'seconds a TrainingJob replica, DataPipeline stage or Job pod runs before it succeeds, unless its dev.sits2026.dev/run-seconds annotation says otherwise (0: runs until deleted)',
      intOption('--pod-run-seconds', 0, 86_400 * 365),
      300,
    )
    .option('-v, --verbose', 'print control-plane and scheduler logs')
    .action(
      async (o: {
        plainMetrics?: boolean;
        storage: boolean;
        batch: boolean;
        podRunSeconds: number;
        scheduler: string;
        metricsPort: number;
        controllerManager: boolean;
        otlpEndpoint?: string;
        nodes: number;
        shape: string;
        nodesPerRack: number;
        kubeconfig: string;
        profile: string;
        webhook: string;
        verbose?: boolean;
      }) => {
        const signal = untilSignal();
        if (o.webhook !== 'audit' && o.webhook !== 'enforce' && o.webhook !== 'off')
          throw new CliError(`--webhook: want audit, enforce or off, got "${o.webhook}"`);
        if (o.storage && !o.controllerManager) throw new CliError('--no-controller-manager leaves claims unbound: give --no-storage too (and --no-batch)');
        if (o.batch && !o.storage) throw new CliError('--no-storage leaves batch jobs without claims: give --no-batch too');
        if (o.scheduler !== 'in-process' && o.scheduler !== 'none') throw new CliError(`--scheduler: want in-process or none, got "${o.scheduler}"`);
        const log = (m: string): void => {
          if (o.verbose === true) process.stderr.write(`${m}\n`);
        };
        let tracing: Tracing;
        try {
          tracing = startTracing({
            ...(o.otlpEndpoint === undefined ? {} : { endpoint: o.otlpEndpoint }),
            serviceName: 'sits-dev',
            instanceId: 'sits-dev',
            log: (m) => process.stderr.write(`${m}\n`),
          });
        } catch (e) {
          throw new CliError((e as Error).message);
        }
        const cluster = await startDevCluster({
          nodes: o.nodes,
          shape: o.shape,
          nodesPerRack: o.nodesPerRack,
          kubeconfig: o.kubeconfig,
          profile: o.profile,
          log,
          webhook: o.webhook === 'off' ? false : { mode: o.webhook },
          tracing,
          controllerManager: o.controllerManager,
          withScheduler: o.scheduler === 'in-process',
          leaderElection: true,
          storage: o.storage,
          batch: o.batch,
          ...(o.podRunSeconds === 0 ? {} : { podRunSeconds: o.podRunSeconds }),
        }).catch(async (e: unknown) => {
          await tracing.shutdown();
          throw e;
        });
        // The scheduler's metrics and dashboard, as `sits run` serves them: HTTPS with a self-signed certificate (its CA
        // written beside the kubeconfig) and delegated authn/authz, so the kubeconfig's user is who may read them.
        const serving =
          o.metricsPort === 0 || cluster.app === undefined || o.plainMetrics === true
            ? undefined
            : await secureServing({ kubeconfig: cluster.kubeconfigPath, metricsHost: '127.0.0.1' });
        const server =
          o.metricsPort === 0 || cluster.app === undefined
            ? undefined
            : await startMetricsServer(
                o.metricsPort,
                '127.0.0.1',
                program.version() ?? 'unknown',
                (m) => process.stderr.write(`${m}\n`),
                serving?.secure,
                false,
              );
        if (server !== undefined && cluster.app !== undefined) {
          server.attach(cluster.app.scheduler, cluster.app.client);
          server.attachView(liveViewStream(cluster.app.scheduler, { log }));
          let top = `sits top --server ${server.url}`;
          if (serving?.selfSignedCa !== undefined) {
            const ca = `${o.kubeconfig.replace(/\.kubeconfig$/, '')}.scheduler-ca.crt`;
            writeFileSync(ca, serving.selfSignedCa);
            top += ` --kubeconfig ${o.kubeconfig} --certificate-authority ${ca}`;
          }
          process.stderr.write(`metrics on ${server.url}/metrics, dashboard on ${server.url}/dashboard/ (${top})\n`);
        }
        if (cluster.claimsDir !== undefined) process.stderr.write(`claims (batch input and output) under ${cluster.claimsDir}/<namespace>/<claim>\n`);
        process.stdout.write(`ready kubeconfig=${cluster.kubeconfigPath}\n`);
        const sig = await signal;
        process.stderr.write(`${sig}: stopping the dev cluster\n`);
        await server?.close();
        serving?.close();
        await cluster.stop();
        await tracing.shutdown();
        // Everything is stopped; the stopped clients' pending retry and backoff timers would hold the process ~15 s.
        process.exit(0);
      },
    );
}
