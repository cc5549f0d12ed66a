/**
 * Composition root of the live scheduler: kubeconfig → client → the collaborators (cache, binder, evictor, event
 * sink, status writers, expected-start publishers, queues and spines, informers, Lease) → the LiveScheduler loop
 * that drives them. The only place that wires the Kubernetes adapters to the core for `sits run` and `sits dev up`.
 */
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { SCHEDULER_NAME } from '../api/wire.ts';
import { KubeClient, isStatus } from '../kube/client/client.ts';
import { resolveKubeConfig } from '../kube/client/kubeconfig.ts';
import { batchWorkerLines } from '../kube/scheduler/explain-batch.ts';
import { API_GROUP_VERSION, LABEL } from '../api/wire.ts';
import type { BatchInferenceJob } from '../api/schema/batch-inference-job.ts';
import { Lane, LiveScheduler, WALL_CLOCK, type ExplainReport, type LiveProfile } from '../kube/scheduler/live-scheduler.ts';
import { seededRng, type Clock, type Rng } from '../core/ports.ts';
import { KubeBinder } from '../kube/adapters/binder.ts';
import { KubeCheckpointRequester } from '../kube/adapters/checkpoint-requester.ts';
import { ClusterCache } from '../kube/cache/cluster-cache.ts';
import { Defragmenter } from '../kube/scheduler/defragmenter.ts';
import { EtaPublisher } from '../kube/scheduler/eta-publisher.ts';
import { KubeEventSink } from '../kube/adapters/event-sink.ts';
import { KubeEvictor } from '../kube/adapters/evictor.ts';
import { startInformers, type Informers } from '../kube/cache/informers.ts';
import { ObjectStatusWriter } from '../kube/adapters/object-status.ts';
import { PodJobs } from '../kube/cache/pod-jobs.ts';
import { KubeStatusWriter } from '../kube/adapters/status-writer.ts';
import type { ControllerMetrics } from '../kube/controllers/controller-metrics.ts';
import { NO_TRACING, withTraceIds, type Tracing } from '../kube/telemetry/tracing.ts';
import type { PluginLimits } from '../controllers/batch-inference/wasm-plugin.ts';
import { claimsUnder } from '../live/batch/batch-jobs.ts';
import { schedulerFragmentation } from '../live/batch/batch-routing.ts';
import type { KedaAllowList } from '../controllers/inference-service/keda.ts';
import { startControllers, type Controllers } from './controllers.ts';
import { LeaderElector, type LeaderOptions } from '../kube/scheduler/leader.ts';

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
  /** Spans of cycles, attempts and reconciles (kube/telemetry/tracing.ts `startTracing`); default off. */
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

/** The options of the live scheduler's wiring (`buildLiveScheduler`). */
export interface LiveOptions {
  readonly profile?: string;
  readonly schedulerName?: string;
  /**
   * Several profiles in one process, as kube-scheduler's `profiles[]` (ADR 0076): one cache, one snapshot per
   * cycle, one queue per profile, tried in this order within a cycle. Given, `profile` and `schedulerName`
   * are not read; the first profile's name is the Lease's and the default event source.
   */
  readonly profiles?: readonly LiveProfile[];
  readonly identity: string;
  /** Lease namespace; undefined = no leader election (single replica). */
  readonly leaseNamespace?: string;
  readonly leaseDurationSec?: number;
  readonly events?: boolean;
  /** Watch only, never schedule or lead (used by `sits explain`). */
  readonly passive?: boolean;
  readonly log?: (msg: string) => void;
  /** Wall clock (default Date.now). */
  readonly clock?: Clock;
  /** How often Queue and PodGroup status is written at most (default 5 s). */
  readonly statusIntervalMs?: number;
  /** Randomness for the scheduler and its forward runs (default seeded: the same choices on every run). */
  readonly rng?: (purpose: 'scheduler' | 'forward-run') => Rng;
  /** Test seam of the binder (see KubeBinderOptions.afterGangMemberBound). */
  readonly afterGangMemberBound?: (count: number) => void;
  /** Spans of cycles, attempts and preemptions (default off); log lines written inside one carry its ids. */
  readonly tracing?: Tracing;
  /**
   * Checkpoint-aware preemption (ADR 0093): a victim whose pods say `checkpointable` is asked for a checkpoint
   * (annotation `checkpoint-requested` on its pods and TrainingJob) and evicted once it commits or its
   * queue's checkpoint grace runs out. Off by default: preemption as before.
   */
  readonly checkpointAware?: boolean;
  /** Defragmentation by migration's timing (ADR 0144; on per Queue, `spec.preemption.defragmentByMigration`). */
  readonly defragment?: { readonly graceMs?: number; readonly announceMs?: number };
}

const DEFAULT_RNG = (purpose: 'scheduler' | 'forward-run'): Rng => seededRng(purpose === 'scheduler' ? 1 : 7);

/** The profiles of the process: `profiles`, else one from `profile` and `schedulerName`; each needs its own schedulerName. */
function liveProfiles(opts: LiveOptions): readonly LiveProfile[] {
  const specs: readonly LiveProfile[] =
    opts.profiles !== undefined && opts.profiles.length > 0
      ? opts.profiles
      : [{ schedulerName: opts.schedulerName ?? SCHEDULER_NAME, config: opts.profile ?? 'sits' }];
  const names = new Set(specs.map((p) => p.schedulerName));
  if (names.size !== specs.length) throw new Error(`profiles: each needs its own schedulerName (${specs.map((p) => p.schedulerName).join(', ')})`);
  return specs;
}

/** Renew deadline and retry period follow the lease duration (as the controllers' elector). */
const leaseTiming = (sec: number | undefined): Partial<LeaderOptions> =>
  sec === undefined ? {} : { leaseDurationSec: sec, renewDeadlineSec: Math.max(1, sec * 0.66), retryPeriodSec: Math.max(0.5, sec / 7) };

/**
 * The composition root of the live scheduler: every collaborator, built from the client and the options, handed
 * to the loop. The collaborators' callbacks into the loop (a requeued binding, a watch event, a new term as
 * leader, the metrics view) are late-bound: they run only once `start` is called, after `scheduler` exists.
 */
export function buildLiveScheduler(client: KubeClient, opts: LiveOptions): LiveScheduler {
  const profiles = liveProfiles(opts);
  const schedulerName = (profiles[0] as LiveProfile).schedulerName;
  const names = new Set(profiles.map((p) => p.schedulerName));
  // One name: exactly the single-profile scheduler of before.
  const ours = names.size === 1 ? schedulerName : names;
  const tracing = opts.tracing ?? NO_TRACING;
  const log = withTraceIds(tracing, opts.log ?? (() => undefined));
  const clock = opts.clock ?? WALL_CLOCK;
  const rng = opts.rng ?? DEFAULT_RNG;
  const nowMs = (): number => clock.nowMs();

  const cache = new ClusterCache(ours, log);
  const checkpoints = new KubeCheckpointRequester(client, { log, nowMs, pod: (k) => cache.pod(k) });
  const jobs = new PodJobs(cache, ours, clock, (running) => checkpoints.withUnseenAsks(running));
  const events = new KubeEventSink(client, cache, {
    component: schedulerName,
    ...(names.size === 1 ? {} : { componentOf: (n: string | undefined) => (n !== undefined && names.has(n) ? n : undefined) }),
    instance: opts.identity,
    enabled: opts.events !== false,
    log,
    nowMs,
  });
  const status = new KubeStatusWriter(client, cache, { log, nowMs });
  const binder = new KubeBinder(client, cache, {
    schedulerName: ours,
    events,
    log,
    nowMs,
    requeued: () => scheduler.noteChange(),
    bound: (seconds, ok) => scheduler.observer?.bound?.(seconds, ok),
    leading: () => scheduler.isLeader(),
    ...(opts.afterGangMemberBound === undefined ? {} : { afterGangMemberBound: opts.afterGangMemberBound }),
  });
  const evictor = new KubeEvictor(client, {
    log,
    nowMs,
    labelsOf: (pod) => cache.pod(pod)?.metadata?.labels,
    leaving: (pods) => cache.markLeaving(pods),
    stayed: (pod) => cache.stayed(pod),
  });
  const defragmenter = new Defragmenter(client, {
    log,
    clock,
    ...(opts.defragment?.graceMs === undefined ? {} : { graceMs: opts.defragment.graceMs }),
    ...(opts.defragment?.announceMs === undefined ? {} : { announceMs: opts.defragment.announceMs }),
  });
  const lanes = profiles.map((p) => new Lane(p.schedulerName, p.config, { events, status }, new EtaPublisher(jobs, status, () => rng('forward-run'))));
  const objectStatus = new ObjectStatusWriter(
    client,
    {
      view: () => scheduler.metricsView(),
      reserving: () => scheduler.reservingJobs(),
      queues: () => jobs.queueObjs.values(),
      podGroups: () => jobs.podGroups.values(),
      pods: () => cache.allPods(),
    },
    { log, ...(opts.statusIntervalMs === undefined ? {} : { intervalMs: opts.statusIntervalMs }) },
  );
  const informers = (): Promise<Informers> =>
    startInformers(client, cache, jobs, { changed: () => scheduler.noteChange(), queuesChanged: () => scheduler.noteQueuesChanged(), log });
  const leader =
    opts.passive === true || opts.leaseNamespace === undefined
      ? undefined
      : new LeaderElector(client, {
          namespace: opts.leaseNamespace,
          name: schedulerName,
          identity: opts.identity,
          ...leaseTiming(opts.leaseDurationSec),
          log,
          onStartedLeading: () => scheduler.startedLeading(),
        });
  const settings = { schedulerName, passive: opts.passive === true, checkpointAware: opts.checkpointAware === true, log, clock, rng, tracing };
  const scheduler: LiveScheduler = new LiveScheduler({
    cache,
    jobs,
    binder,
    evictor,
    checkpoints,
    defragmenter,
    events,
    status,
    objectStatus,
    lanes,
    startInformers: informers,
    leader,
    settings,
  });
  return scheduler;
}

export async function createLiveApp(opts: LiveAppOptions): Promise<LiveApp> {
  const kc = loadKubeConfig(opts.kubeconfig);
  const client = new KubeClient(kc, { maxInFlight: opts.maxInFlight ?? 64 });
  const scheduler = buildLiveScheduler(client, {
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
  const s = buildLiveScheduler(client, {
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
  /** Also the serving loop (LoRA adapters on every replica, SITS token autoscaling; live/serving/serving-loop.ts). */
  readonly serving?: boolean;
  /** Also lend GPUs of elastic TrainingJobs to waiting InferenceService replicas (live/serving/gpu-lending.ts). */
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
          ...leaseTiming(leaseSec),
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
