/**
 * Composition of the workload controllers: each is a pure definition (controllers/) driven by the generic runner
 * (kube/controllers/controller-runner.ts). A new controller is one more entry in `definitions` below.
 */
import type { Clock } from '../core/ports.ts';
import type { KubeClient } from '../kube/client/client.ts';
import { runController, type RunningController } from '../kube/controllers/controller-runner.ts';
import { GpuHealthMigrator } from '../kube/scheduler/health-migration.ts';
import { modelFromProduct } from '../kube/cache/labels.ts';
import type { ControllerMetrics } from '../kube/controllers/controller-metrics.ts';
import type { Tracing } from '../kube/telemetry/tracing.ts';
import { trainingJobController } from '../controllers/training-job/controller.ts';
import { DEFAULT_CONTROLLER_CONFIG, type ControllerConfig } from '../controllers/training-job/model.ts';
import { inferenceServiceController } from '../controllers/inference-service/controller.ts';
import { NO_ENGINE, type EnginePort } from '../controllers/inference-service/model.ts';
import type { KedaAllowList } from '../controllers/inference-service/keda.ts';
import { dataPipelineController } from '../controllers/data-pipeline/controller.ts';
import { batchInferenceJobController, type BatchControllerConfig } from '../controllers/batch-inference/controller.ts';
import { fsBatchJobs, type BatchVolumes } from '../live/batch/batch-jobs.ts';
import { routePluginLoader } from '../live/batch/batch-routing.ts';
import { NodeAnnotationQuarantine } from '../live/batch/batch-quarantine.ts';
import { watchQueueTenants, type QueueTenants } from '../live/batch/batch-tenants.ts';
import { startSchedulerWatch, type SchedulerWatchOptions } from '../live/scheduler-watch.ts';
import { watchClusterFacts } from '../live/serving/cluster-facts.ts';
import { startServingLoop, type ServingLoop, type ServingLoopOptions } from '../live/serving/serving-loop.ts';
import { startGpuLending, type GpuLending, type GpuLendingOptions } from '../live/serving/gpu-lending.ts';

export interface ControllerOptions {
  readonly log?: (m: string) => void;
  /** Wall clock (default Date.now); reconcile sees time only through it. */
  readonly clock?: Clock;
  /** Overrides of the TrainingJob controller defaults (backoff, resize cooldown, placeholder image). */
  readonly config?: Partial<ControllerConfig>;
  /** When given, only the leader reconciles (the others keep their caches warm). */
  readonly isLeader?: () => boolean;
  /** Objects reconciled at once, per controller. */
  readonly concurrency?: number;
  /** A span per reconcile and per action (default off). */
  readonly tracing?: Tracing;
  /** controller-runtime's reconcile and work-queue metrics, on the registry the process serves (default none). */
  readonly metrics?: ControllerMetrics;
  /** What the engines report per InferenceService replica (LoRA adapters); default: nothing known yet. */
  readonly engine?: EnginePort;
  /**
   * The live serving loop (live/serving/serving-loop.ts): LoRA adapters on every replica and the SITS token autoscaler
   * writing /scale. Off by default (it dials every replica's engine); when on, its engine view is the controller's.
   */
  readonly serving?: false | ServingLoopOptions;
  /** GPU lending from elastic TrainingJobs to waiting InferenceService replicas (live/serving/gpu-lending.ts, ADR 0131); off by default. */
  readonly lending?: false | GpuLendingOptions;
  /**
   * Move TrainingJobs off quarantined GPUs (kube/scheduler/health-migration.ts, ADR 0129): checkpoint, then evict the gang
   * whole so it restarts elsewhere from the checkpoint. Off by default.
   */
  readonly healthMigration?: false | { readonly graceMs?: number; readonly intervalMs?: number };
  /** The KEDA servers and ClusterTriggerAuthentications an InferenceService may name (issue 36); unset: none. */
  readonly kedaAllow?: KedaAllowList;
  /**
   * The BatchInferenceJob controller (docs/adr/0102): it coordinates each job's output commits, so it runs only
   * where the batch claims are mounted (`volumes`). Off by default.
   */
  /** Events on pods waiting for a scheduler that has no leader (scheduler-watch.ts); off by default. */
  readonly schedulerWatch?: Omit<SchedulerWatchOptions, 'isLeader' | 'log'>;
  readonly batch?: {
    readonly volumes: BatchVolumes;
    /** Where spec.strategy.routing.wasm.file plugins are read (ADR 0165). */ readonly pluginDir?: string;
  } & Omit<BatchControllerConfig, 'jobs'>;
}

export interface Controllers {
  /** What runs, for the start line: the controllers by kind, then the loops asked for. */
  readonly names: readonly string[];
  /** The serving loop, when it was asked for. */
  readonly serving: ServingLoop | undefined;
  /** The GPU lender, when it was asked for. */
  readonly lending: GpuLending | undefined;
  /** The health migrator, when it was asked for. */
  readonly healthMigration: GpuHealthMigrator | undefined;
  stop(): Promise<void>;
}

/**
 * Starts the workload controllers (TrainingJob, InferenceService, DataPipeline) against the API server behind `client`. Resolves once the
 * caches are filled (or, when a CRD is missing, once that has been logged; the runner looks again with backoff up to 5 min).
 */
export async function startControllers(client: KubeClient, opts: ControllerOptions = {}): Promise<Controllers> {
  // The scheduler's GPU model names (kube/cache/labels.ts) are how a job's gpuModels are matched to node products.
  const cfg: ControllerConfig = { ...DEFAULT_CONTROLLER_CONFIG, gpuModelAliases: (m) => [modelFromProduct(m)], ...opts.config };
  const {
    config: _,
    engine: given,
    serving: servingOpts,
    lending: lendingOpts,
    healthMigration: migrationOpts,
    batch,
    kedaAllow,
    schedulerWatch: watchOpts,
    ...runnerOpts
  } = opts;
  const serving =
    servingOpts === undefined || servingOpts === false
      ? undefined
      : startServingLoop(client, {
          ...(opts.log === undefined ? {} : { log: opts.log }),
          ...(opts.isLeader === undefined ? {} : { isLeader: opts.isLeader }),
          ...(opts.clock === undefined ? {} : { clock: opts.clock }),
          ...servingOpts,
        });
  const engine = given ?? serving?.engine;
  // InferenceService specs are judged against the NVLink islands the nodes offer (tensor-parallel size).
  const facts = await watchClusterFacts(client, opts.log ?? (() => undefined));
  // In mode keda the ScaledObject carries the serving loop's calibrated threshold (ADR 0112), when the loop runs; the
  // loop also sets the adapters-loaded condition, so replicas with adapters declare it as a readiness gate (ADR 0125).
  const inference = inferenceServiceController({
    gpuModelAliases: (m) => [modelFromProduct(m)],
    clusterFacts: facts.facts,
    engine: engine ?? NO_ENGINE,
    ...(kedaAllow === undefined ? {} : { kedaAllow }),
    ...(serving === undefined ? {} : { thresholds: serving.thresholds, adapterReadinessGate: true }),
  });
  const running: RunningController[] = [];
  running.push(await runController(client, trainingJobController(cfg), runnerOpts));
  running.push(await runController(client, inference, runnerOpts));
  running.push(await runController(client, dataPipelineController({ nodes: facts.nodes }), runnerOpts));
  let queueTenants: QueueTenants | undefined;
  if (batch !== undefined) {
    const { volumes, pluginDir, ...batchCfg } = batch;
    // The ladder's quarantines go on the Nodes, where the scheduler and the device plugin read them (ADR 0139).
    const jobs = fsBatchJobs(volumes, opts.log, new NodeAnnotationQuarantine(client, opts.log));
    // With a GPU share, a job's tenant is its Queue, weighed as the queue cycle weighs it (ADR 0140).
    queueTenants = batchCfg.share === undefined || batchCfg.tenantOf !== undefined ? undefined : await watchQueueTenants(client, opts.log);
    const tenantOf = queueTenants?.tenantOf;
    running.push(
      await runController(
        client,
        batchInferenceJobController({
          gpuModelAliases: (m) => [modelFromProduct(m)],
          ...(pluginDir === undefined ? {} : { routePlugin: routePluginLoader(pluginDir, batchCfg.pluginLimits) }),
          ...batchCfg,
          ...(tenantOf === undefined ? {} : { tenantOf }),
          jobs,
        }),
        runnerOpts,
      ),
    );
  }
  const lending =
    lendingOpts === undefined || lendingOpts === false
      ? undefined
      : startGpuLending(client, {
          ...(opts.log === undefined ? {} : { log: opts.log }),
          ...(opts.isLeader === undefined ? {} : { isLeader: opts.isLeader }),
          ...(opts.clock === undefined ? {} : { clock: opts.clock }),
          ...lendingOpts,
        });
  const healthMigration =
    migrationOpts === undefined || migrationOpts === false
      ? undefined
      : new GpuHealthMigrator(client, {
          log: opts.log ?? (() => undefined),
          ...(opts.clock === undefined ? {} : { clock: opts.clock }),
          ...(opts.isLeader === undefined ? {} : { isLeader: opts.isLeader }),
          ...migrationOpts,
        });
  await healthMigration?.start();
  const schedulerWatch =
    watchOpts === undefined
      ? undefined
      : await startSchedulerWatch(client, {
          ...watchOpts,
          ...(opts.isLeader === undefined ? {} : { isLeader: opts.isLeader }),
          ...(opts.log === undefined ? {} : { log: opts.log }),
        });
  const names = [
    'TrainingJob',
    'InferenceService',
    'DataPipeline',
    ...(batch === undefined ? [] : ['BatchInferenceJob']),
    ...(serving === undefined ? [] : ['serving loop']),
    ...(lending === undefined ? [] : ['GPU lending']),
    ...(healthMigration === undefined ? [] : ['health migration']),
    ...(schedulerWatch === undefined ? [] : [`scheduler watch (${watchOpts?.lease ?? ''})`]),
  ];
  return {
    names,
    serving,
    lending,
    healthMigration,
    stop: async () => {
      await schedulerWatch?.stop();
      queueTenants?.stop();
      await healthMigration?.stop();
      await lending?.stop();
      await serving?.stop();
      facts.stop();
      await Promise.all(running.map((r) => r.stop()));
    },
  };
}
