/**
 * Composition root of the live scheduler: kubeconfig → client → LiveScheduler (+ leader election). The
 * only place that wires the Kubernetes adapters to the core for `sits run` and `sits dev up`.
 */
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { SCHEDULER_NAME } from '../api/wire.ts';
import { KubeClient, isStatus } from '../kube/client.ts';
import { resolveKubeConfig } from '../kube/kubeconfig.ts';
import { batchWorkerLines } from '../kube/explain-batch.ts';
import { API_GROUP_VERSION, LABEL } from '../api/wire.ts';
import type { BatchInferenceJob } from '../api/schema/batch-inference-job.ts';
import { LiveScheduler, type ExplainReport, type LiveProfile } from '../kube/live-scheduler.ts';
import type { ControllerMetrics } from '../kube/controller-metrics.ts';
import type { Tracing } from '../kube/tracing.ts';
import type { PluginLimits } from '../controllers/batch-inference/wasm-plugin.ts';
import { claimsUnder } from './batch-jobs.ts';
import { schedulerFragmentation } from './batch-routing.ts';
import type { KedaAllowList } from '../controllers/inference-service/keda.ts';
import { startControllers, type Controllers } from './controllers.ts';
import { LeaderElector } from '../kube/leader.ts';

export interface LiveAppOptions extends ControllerFeatures {
  /** Path to a kubeconfig; undefined = in-cluster service account, else $KUBECONFIG / ~/.kube/config. */
  readonly kubeconfig?: string;
  readonly profile?: string;
  /** Pods with this spec.schedulerName are ours (default sits-scheduler; `default-scheduler` makes SITS the cluster's scheduler). */
  readonly schedulerName?: string;
  /** Several profiles in one process (ADR 0076); given, profile and schedulerName are not read. */
  readonly profiles?: readonly LiveProfile[];
  readonly identity?: string;
  /** Namespace of the leader-election Lease; undefined disables leader election. */
  readonly leaseNamespace?: string;
  readonly leaseDurationSec?: number;
  readonly events?: boolean;
  readonly maxInFlight?: number;
  /** Test seam of the binder (crash tests): see KubeBinderOptions.afterGangMemberBound. */
  readonly afterGangMemberBound?: (count: number) => void;
  /** Also run the workload controllers (TrainingJob, InferenceService, DataPipeline, and the ControllerFeatures asked for); they act only while this replica leads. */
  readonly controllers?: boolean;
  /** Checkpoint-aware preemption (ADR 0093): checkpointable victims are asked for a checkpoint before eviction. */
  readonly checkpointAware?: boolean;
  readonly log?: (m: string) => void;
  /** Spans of cycles, attempts and reconciles (kube/tracing.ts `startTracing`); default off. */
  readonly tracing?: Tracing;
  /** controller-runtime's reconcile and work-queue metrics of the controllers (with `controllers`). */
  readonly controllerMetrics?: ControllerMetrics;
}

export interface LiveApp {
  readonly scheduler: LiveScheduler;
  readonly client: KubeClient;
  readonly controllers: Controllers | undefined;
  stop(): Promise<void>;
}

/** The kubeconfig at `path`, else as kubectl finds one; a KubeConfigError says which file and what to do. */
export function loadKubeConfig(path?: string, context?: string): KubeConfig {
  return resolveKubeConfig(path, process.env, { context }).kc;
}

export async function createLiveApp(opts: LiveAppOptions): Promise<LiveApp> {
  const kc = loadKubeConfig(opts.kubeconfig);
  const client = new KubeClient(kc, { maxInFlight: opts.maxInFlight ?? 64 });
  const scheduler = new LiveScheduler(client, {
    identity: opts.identity ?? `${hostname()}-${process.pid}`,
    ...(opts.profile === undefined ? {} : { profile: opts.profile }),
    ...(opts.schedulerName === undefined ? {} : { schedulerName: opts.schedulerName }),
    ...(opts.profiles === undefined ? {} : { profiles: opts.profiles }),
    ...(opts.leaseNamespace === undefined ? {} : { leaseNamespace: opts.leaseNamespace }),
    ...(opts.leaseDurationSec === undefined ? {} : { leaseDurationSec: opts.leaseDurationSec }),
    ...(opts.events === undefined ? {} : { events: opts.events }),
    ...(opts.afterGangMemberBound === undefined ? {} : { afterGangMemberBound: opts.afterGangMemberBound }),
    ...(opts.log === undefined ? {} : { log: opts.log }),
    ...(opts.tracing === undefined ? {} : { tracing: opts.tracing }),
    ...(opts.checkpointAware === true ? { checkpointAware: true } : {}),
  });
  await scheduler.start();
  const controllers =
    opts.controllers === true
      ? await startControllers(client, {
          isLeader: () => scheduler.isLeader(),
          ...(opts.log === undefined ? {} : { log: opts.log }),
          ...(opts.tracing === undefined ? {} : { tracing: opts.tracing }),
          ...(opts.controllerMetrics === undefined ? {} : { metrics: opts.controllerMetrics }),
          ...(opts.serving === true ? { serving: {} } : {}),
          ...(opts.lending === true ? { lending: {} } : {}),
          ...(opts.healthMigration === true ? { healthMigration: {} } : {}),
          ...(opts.kedaAllow === undefined ? {} : { kedaAllow: opts.kedaAllow }),
          ...(opts.batchClaimsDir === undefined
            ? {}
            : {
                batch: {
                  volumes: claimsUnder(opts.batchClaimsDir),
                  fragmentation: schedulerFragmentation(scheduler),
                  ...(opts.batchPluginDir === undefined ? {} : { pluginDir: opts.batchPluginDir }),
                  ...(opts.batchPluginLimits === undefined ? {} : { pluginLimits: opts.batchPluginLimits }),
                },
              }),
        })
      : undefined;
  return {
    scheduler,
    client,
    controllers,
    stop: async () => {
      await controllers?.stop();
      await scheduler.stop();
      client.close();
    },
  };
}

/**
 * `sits explain`: a passive live scheduler (informers only: never leads, binds or writes) answers for one
 * pending pod or pod group, then stops.
 */
export async function explainLive(
  target: string,
  opts: { readonly kubeconfig?: string; readonly context?: string; readonly schedulerName?: string; readonly profile?: string; readonly nowMs: number },
): Promise<ExplainReport> {
  const client = new KubeClient(loadKubeConfig(opts.kubeconfig, opts.context));
  const s = new LiveScheduler(client, {
    identity: 'sits-explain',
    passive: true,
    ...(opts.profile === undefined ? {} : { profile: opts.profile }),
    ...(opts.schedulerName === undefined ? {} : { schedulerName: opts.schedulerName }),
  });
  try {
    await s.start();
    const r = s.explain(target, opts.nowMs);
    // A BatchInferenceJob worker: its job's route and why (ADR 0161), read from the job's status.
    const [ns = '', name = ''] = target.split('/');
    const pod = await client.get<V1Pod>(`/api/v1/namespaces/${ns}/pods/${name}`).catch((e: unknown) => (isStatus(e, 404) ? undefined : Promise.reject(e)));
    const jobName = pod?.metadata?.labels?.[LABEL.batchInferenceJob];
    if (pod === undefined || jobName === undefined) return r;
    const job = await client
      .get<BatchInferenceJob>(`/apis/${API_GROUP_VERSION}/namespaces/${ns}/batchinferencejobs/${jobName}`)
      .catch((e: unknown) => (isStatus(e, 404) ? undefined : Promise.reject(e)));
    return { ...r, lines: [...r.lines, ...batchWorkerLines(pod, job)] };
  } finally {
    await s.stop();
    client.close();
  }
}

/** What the workload controllers run besides the TrainingJob, InferenceService and DataPipeline controllers. */
export interface ControllerFeatures {
  /** Also the serving loop (LoRA adapters on every replica, SITS token autoscaling; app/serving-loop.ts). */
  readonly serving?: boolean;
  /** Also lend GPUs of elastic TrainingJobs to waiting InferenceService replicas (app/gpu-lending.ts). */
  readonly lending?: boolean;
  /** Move TrainingJobs off quarantined GPUs (checkpoint, then evict the gang; ADR 0129). */
  readonly healthMigration?: boolean;
  /** The KEDA servers and ClusterTriggerAuthentications services may name (issue 36); unset: none. */
  readonly kedaAllow?: KedaAllowList;
  /** The BatchInferenceJob controller, with the jobs' claims mounted as `<dir>/<namespace>/<claim>` (ADR 0102). */
  readonly batchClaimsDir?: string;
  /** The batch workers' WASM plugin limits (ADR 0117/0156: the operator's); unset: the defaults. */
  readonly batchPluginLimits?: Partial<PluginLimits>;
  /** With `batchClaimsDir`: where the jobs' routing plugin files (spec.strategy.routing.wasm.file) are read (ADR 0165). */
  readonly batchPluginDir?: string;
  /** Events on pods left waiting while the scheduler's Lease (`namespace/name`) has no holder (scheduler-watch.ts). */
  readonly schedulerLease?: string;
}

export interface ControllersAppOptions extends ControllerFeatures {
  /** controller-runtime's reconcile and work-queue metrics, on the registry the health port serves. */
  readonly controllerMetrics?: ControllerMetrics;
  /** Path to a kubeconfig; undefined = in-cluster service account, else $KUBECONFIG / ~/.kube/config. */
  readonly kubeconfig?: string;
  readonly identity?: string;
  /** Namespace of the controllers' Lease; undefined disables leader election (one replica only). */
  readonly leaseNamespace?: string;
  /** The controllers' own Lease, apart from the scheduler's (default sits-controllers). */
  readonly leaseName?: string;
  readonly leaseDurationSec?: number;
  readonly maxInFlight?: number;
  readonly log?: (m: string) => void;
  readonly tracing?: Tracing;
}

export interface ControllersApp {
  readonly client: KubeClient;
  readonly controllers: Controllers;
  isLeader(): boolean;
  stop(): Promise<void>;
}

/** The default Lease of `sits controllers` (the chart's Role grants exactly this name). */
export const CONTROLLERS_LEASE = 'sits-controllers';

/**
 * `sits controllers`: the workload controllers without a scheduler, in their own process under their own
 * ServiceAccount (the chart's sits-controllers Deployment), leading through their own Lease. Without the scheduler's
 * view the BatchInferenceJob routing takes the fragmentation as unknown (0; it says so in the job's status).
 */
export async function createControllersApp(opts: ControllersAppOptions): Promise<ControllersApp> {
  const client = new KubeClient(loadKubeConfig(opts.kubeconfig), { maxInFlight: opts.maxInFlight ?? 64, userAgent: 'sits-controllers/0.1' });
  const leaseSec = opts.leaseDurationSec;
  const elector =
    opts.leaseNamespace === undefined
      ? undefined
      : new LeaderElector(client, {
          namespace: opts.leaseNamespace,
          name: opts.leaseName ?? CONTROLLERS_LEASE,
          identity: opts.identity ?? `${hostname()}-${process.pid}`,
          // As the scheduler's elector: renew deadline and retry period follow the lease duration.
          ...(leaseSec === undefined
            ? {}
            : { leaseDurationSec: leaseSec, renewDeadlineSec: Math.max(1, leaseSec * 0.66), retryPeriodSec: Math.max(0.5, leaseSec / 7) }),
          ...(opts.log === undefined ? {} : { log: opts.log }),
        });
  elector?.start();
  const isLeader = (): boolean => elector?.isLeader() ?? true;
  try {
    const controllers = await startControllers(client, {
      isLeader,
      ...(opts.log === undefined ? {} : { log: opts.log }),
      ...(opts.tracing === undefined ? {} : { tracing: opts.tracing }),
      ...(opts.controllerMetrics === undefined ? {} : { metrics: opts.controllerMetrics }),
      ...(opts.serving === true ? { serving: {} } : {}),
      ...(opts.lending === true ? { lending: {} } : {}),
      ...(opts.healthMigration === true ? { healthMigration: {} } : {}),
      ...(opts.kedaAllow === undefined ? {} : { kedaAllow: opts.kedaAllow }),
      ...(opts.batchClaimsDir === undefined
        ? {}
        : {
            batch: {
              volumes: claimsUnder(opts.batchClaimsDir),
              ...(opts.batchPluginDir === undefined ? {} : { pluginDir: opts.batchPluginDir }),
              ...(opts.batchPluginLimits === undefined ? {} : { pluginLimits: opts.batchPluginLimits }),
            },
          }),
      ...(opts.schedulerLease === undefined ? {} : { schedulerWatch: { lease: opts.schedulerLease, schedulerNames: [SCHEDULER_NAME] } }),
    });
    return {
      client,
      controllers,
      isLeader,
      stop: async () => {
        await controllers.stop();
        await elector?.stop(true);
        client.close();
      },
    };
  } catch (e) {
    await elector?.stop(true);
    client.close();
    throw e;
  }
}
