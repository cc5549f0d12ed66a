/**
 * The BatchInferenceJob controller as a definition for kube/controllers/controller-runner.ts (issue 13, Deliver 2). The
 * controller is the job's coordinator: it owns one BatchCoordinator per job (opened through the BatchJobsPort on
 * the output volume, resumed from its manifest after a restart) and talks to the workers only through their pods
 * (docs/adr/0102-batch-worker-protocol.md): it writes each worker's shard into the pod's assignment annotation and
 * reads the worker's bounded-rate report annotation back. It keeps the worker pods there (a dead one is replaced,
 * its shard returned to the coordinator), commits finished parts, and writes status only when shouldWriteStatus
 * says so (status.ts), so status writes do not grow with the records.
 * Pure apart from the coordinator's state, which is the controller's own in-memory cache of the job; files go
 * through the port's OutputStore, time comes in the input.
 */
import { withDefaults } from '../../api/validate.ts';
import { ANNOTATION, API_GROUP_VERSION, KIND, LABEL } from '../../api/wire.ts';
import type { ControllerAction, ControllerDefinition, ControllerInput, ControllerOutcome, OwnedResource, ResourceType } from '../../api/controller.ts';
import type { BatchInferenceJobStatus, BatchRouting } from '../../api/schema/batch-inference-job.ts';
import type { Condition } from '../../api/schema/common.ts';
import { setCondition } from '../conditions.ts';
import type { PodObject } from '../kube-objects.ts';
import type { BatchCoordinator, CommitResult, WorkerInfo } from './coordinator.ts';
import { partName } from './coordinator.ts';
import { cpuWorkerPodName, renderWorkers, workerPodName, type BatchJobObject, type WorkerBuildConfig, type WorkerRender } from './pods.ts';
import type { StatusWritePolicy, WrittenStatus } from './status.ts';
import { DEFAULT_STATUS_POLICY, shouldWriteStatus, toStatus } from './status.ts';
import { formatAssignment, parseReport, STAGE_NAMES, type BatchPluginState, type WireAssignment, type WireStage } from './worker-protocol.ts';
import type { GpuShare, ShareTenant } from './gpu-share.ts';
import { TIER_WEIGHTS } from '../../core/queue/model.ts';
import { decideRoute, profileFromShards, routeEffects, type ShardSample } from './routing.ts';
import { elasticWorkerPodName, elasticWorkers, misplaced, placementOf, workersLine } from './route-placement.ts';
import { decideRoutePlugin, type PluginCaller } from './wasm-plugin.ts';

/** The tenant of a job with no Queue lookup: its queue (bronze weight unless told) or its tier. */
export function defaultTenant(job: BatchJobObject): ShareTenant {
  const tier = job.spec.tier ?? 'bronze';
  return job.spec.queue !== undefined ? { name: job.spec.queue, weight: TIER_WEIGHTS.bronze ?? 1 } : { name: `tier:${tier}`, weight: TIER_WEIGHTS[tier] ?? 1 };
}

export const BATCH_INFERENCE_JOB_RESOURCE: ResourceType = { apiVersion: API_GROUP_VERSION, kind: KIND.batchInferenceJob, plural: 'batchinferencejobs' };
const POD: OwnedResource = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', awaitWatch: true };

/** A job's coordinator and what the controller remembers of its workers, for as long as this process runs. */
export interface JobSession {
  readonly coordinator: BatchCoordinator;
  /** When the job's run (re)started: reset on resume from spec.suspend, so deadlines do not run while suspended. */
  startMs: number;
  /** spec.suspend held the job at the last reconcile (the next unsuspended one is a resume). */
  suspended?: boolean;
  /** Worker pod name → the shard it was given (what its assignment annotation must say). */
  readonly assigned: Map<string, WireAssignment>;
  /**
   * Attempts this session is finished with (committed, failed, cancelled): their reports are history; and the
   * checkpoint files (`parts/…c<n>.jsonl`, never an attempt id) it has judged.
   */
  readonly handled: Set<string>;
  /** The devices the coordinator quarantined, for status. */
  quarantined(nowMs: number): string[];
  /**
   * Whether a quarantined device's quarantine is where the scheduler reads it (its Node); until then an idle worker
   * on it is kept, since its replacement could be placed on the same device. Absent: at once.
   */
  readonly published?: (device: string) => boolean;
  retries: number;
  /** The workers' last reported live batch size, kept in status after they are gone. */
  lastBatchSize?: number;
  /** A worker's engine could not load the model: the job fails naming spec.model.uri (no device is at fault). */
  modelError?: string;
  /** The first committed shards' measurements, for the workload profile (at most PROFILE_SHARDS). */
  shardSamples?: ShardSample[];
  /** The route, decided once (ADR 0165); after a restart, the one in status. */
  routing?: BatchRouting;
  last?: { readonly written: WrittenStatus; readonly status: BatchInferenceJobStatus };
  finished?: { readonly state: 'complete' | 'partial'; readonly records: number; readonly atMs: number; readonly reason?: string };
}

export type SessionState =
  | { readonly state: 'loading' }
  | { readonly state: 'ready'; readonly session: JobSession }
  /** The input is not a valid OpenAI batch file: every error names file:line:column; the output is marked partial. */
  | { readonly state: 'rejected'; readonly errors: readonly string[]; readonly output: string }
  /** The volume cannot be read or written (not mounted here, unreadable): tried again. */
  | { readonly state: 'error'; readonly message: string }
  /** The job may not use its URIs (issue 36): a path out of its claim, an output another job owns. The job fails. */
  | { readonly state: 'refused'; readonly reason: 'PathOutsideClaim' | 'OutputOwnedByAnotherJob'; readonly message: string };

export interface BatchJobsPort {
  /** The job's session, opened in the background on the first call (the input is read and checked, the manifest resumed). */
  session(job: BatchJobObject, nowMs: number): SessionState;
}

export interface BatchControllerConfig extends WorkerBuildConfig {
  readonly jobs: BatchJobsPort;
  /**
   * Weighted-fair GPU time between tenants (gpu-share.ts, ADR 0140): shared by every job of this controller; unset,
   * each job runs all its workers at once.
   */
  readonly share?: GpuShare;
  /** A job's tenant for the share: its Queue's name and weight (default: the queue name, or its tier, by tier weight). */
  readonly tenantOf?: (job: BatchJobObject) => ShareTenant;
  readonly statusPolicy?: Partial<StatusWritePolicy>;
  /** How often a running job is reconciled even if no pod changed (status cadence, the long-tail breaker). */
  readonly tickMs?: number;
  /**
   * The cluster's GPU fragmentation ratio now, 0..1 (the scheduler's, as sits_cluster_gpu_fragmentation_ratio
   * reports it), read once when a job is routed; unset or undefined: unknown, taken as 0 and said so.
   */
  readonly fragmentation?: () => number | undefined;
  /** Loads spec.strategy.routing.wasm.file from the controller's plugin directory; unset: file plugins are refused. */
  readonly routePlugin?: (
    file: string,
    sha256: string,
  ) => { readonly ok: true; readonly value: PluginCaller & { close(): void } } | { readonly ok: false; readonly reason: string };
}

/** Shards the profile is taken from: the first three committed (one is an anecdote), or all of a smaller job. */
export const PROFILE_SHARDS = 3;

const ROUTED_REASON = { builtin: 'Routed', plugin: 'RoutedByPlugin', refused: 'PluginRefused' } as const;

/**
 * The job's route from its profile, spec.sla and the cluster fragmentation (routing.ts), by the job's routing plugin
 * when it names one the controller can load (a file under its plugin directory; a ConfigMap is refused here, the
 * controller reads no ConfigMaps). The reasons say each level, the plugin's refusal and what the route changes.
 */
export function routeJob(
  job: BatchJobObject,
  samples: readonly ShardSample[],
  nowMs: number,
  cfg: Pick<BatchControllerConfig, 'fragmentation' | 'routePlugin'>,
): { routing: BatchRouting; reason: string } | undefined {
  const profile = profileFromShards(samples, Math.max(1, Math.min(PROFILE_SHARDS, samples.length)));
  if (profile === undefined) return undefined;
  const measured = cfg.fragmentation?.();
  const fragmentation = measured === undefined || !Number.isFinite(measured) ? 0 : Math.min(1, Math.max(0, measured));
  const sla = job.spec.sla;
  const input = {
    slaClass: sla?.class ?? 'P2',
    ...(sla?.accuracyTolerance === undefined ? {} : { accuracyTolerance: sla.accuracyTolerance }),
    fragmentation,
    profile,
  };
  const builtin = decideRoute(input);
  const ref = job.spec.strategy?.routing?.wasm;
  let decided: { route: BatchRouting['route']; quantization?: 'fp8' | 'int8'; reasons: readonly string[]; source: 'builtin' | 'plugin' } = {
    ...builtin,
    source: 'builtin',
  };
  let refused: string | undefined;
  if (ref !== undefined) {
    const loaded =
      ref.file === undefined
        ? {
            ok: false as const,
            reason: `configmap/${ref.configMap?.name}/${ref.configMap?.key}: the controller reads routing plugins from files under its plugin directory only`,
          }
        : cfg.routePlugin === undefined
          ? { ok: false as const, reason: `${ref.file}: the controller has no plugin directory` }
          : cfg.routePlugin(ref.file, ref.sha256);
    if (loaded.ok) {
      try {
        decided = decideRoutePlugin(loaded.value, { ...input, ...(job.spec.tier === undefined ? {} : { tier: job.spec.tier }) }, builtin);
      } finally {
        loaded.value.close();
      }
    } else {
      refused = `spec.strategy.routing.wasm ${loaded.reason}; built-in route used`;
    }
  }
  const unknown = measured === undefined ? [`fragmentation unknown (no scheduler view in this controller): taken as 0`] : [];
  const render = renderWorkers(job);
  const acted = render.ok
    ? placementOf(job, { route: decided.route, profile }, render.value).reason
    : `route ${decided.route}: not acted on, the workers cannot be rendered`;
  const reasons = [
    ...unknown,
    ...decided.reasons,
    ...(refused === undefined ? [] : [refused]),
    ...routeEffects(decided, job.spec.model.quantization, acted),
  ].map((r) => r.slice(0, 512));
  const routing: BatchRouting = {
    route: decided.route,
    ...(decided.quantization === undefined ? {} : { quantization: decided.quantization }),
    source: decided.source,
    reasons,
    fragmentation: round(fragmentation),
    decisionTime: iso(nowMs),
    profile: {
      shards: profile.shards,
      promptTokensPerRecord: round(profile.promptTokensPerRecord),
      outputTokensPerRecord: round(profile.outputTokensPerRecord),
      msPerRecord: round(profile.msPerRecord),
      // Four significant digits: a small engine's use is a few thousandths, which three decimals would call 0.
      ...(profile.peakKvFraction === undefined ? {} : { peakKvFraction: Number(profile.peakKvFraction.toPrecision(4)) }),
    },
  };
  return { routing, reason: refused !== undefined ? ROUTED_REASON.refused : ROUTED_REASON[decided.source] };
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

/** The Routed condition's message: the route, every reason, and how many workers are on which shape now. */
const routedMessage = (r: BatchRouting, workers: string): string =>
  `${`${r.route}${r.quantization === undefined ? '' : ` (${r.quantization} allowed)`}: ${r.reasons.join('; ')}`.slice(0, 3800)}; ${workers}`;

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const epochOf = (attempt: string): number => Number(/^e(\d+)-/.exec(attempt)?.[1] ?? '0');
const terminal = (p: PodObject): boolean => p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded' || p.metadata.deletionTimestamp !== undefined;

function deviceOf(p: PodObject): string {
  const node = (p.spec?.nodeName as string | undefined) ?? 'unscheduled';
  const gpus = p.metadata.annotations?.[ANNOTATION.gpuIndices];
  return `${node}/${gpus === undefined || gpus === '' ? 'cpu' : gpus}`;
}

function podReady(p: PodObject): boolean {
  return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

type ConditionUpdate = { type: string; status: 'True' | 'False' | 'Unknown'; reason: string; message: string };

const PLUGIN_RANK: Readonly<Record<BatchPluginState, number>> = { active: 0, disabled: 1, rejected: 2 };
const PLUGIN_REASON: Readonly<Record<BatchPluginState, string>> = { active: 'PluginActive', disabled: 'PluginDisabled', rejected: 'PluginRejected' };

/**
 * The StrategyPlugin condition from the workers' reports (the batch-size plugin runs in the workers, ADR 0156): the
 * worst worker decides (rejected over disabled over active), its note is the message; undefined until one reported.
 */
export function strategyPluginCondition(
  reports: readonly { readonly pod: string; readonly state: BatchPluginState; readonly note?: string }[],
): ConditionUpdate | undefined {
  if (reports.length === 0) return undefined;
  const w = reports.reduce((a, b) => (PLUGIN_RANK[b.state] > PLUGIN_RANK[a.state] ? b : a));
  return {
    type: 'StrategyPlugin',
    status: w.state === 'active' ? 'True' : 'False',
    reason: PLUGIN_REASON[w.state],
    message: `worker ${w.pod}: ${w.note ?? `batch-size plugin ${w.state}`}`.slice(0, 4000),
  };
}

type StatusStage = NonNullable<BatchInferenceJobStatus['stages']>[number];

/** Each worker pod's last reported stage totals, kept after the pod is gone (they count toward the job). */
const stageReports = new WeakMap<JobSession, Map<string, { readonly cpu: boolean; readonly stages: readonly WireStage[] }>>();

/**
 * The job's stage pipeline for status (ADR 0167): the workers' totals summed (records, busy and blocked time,
 * prompt tokens), the deepest queue any worker saw, and where each stage runs.
 */
export function stagesStatus(
  job: BatchJobObject,
  reports: Iterable<{ readonly cpu: boolean; readonly stages: readonly WireStage[] }>,
): StatusStage[] | undefined {
  const all = [...reports];
  if (all.length === 0) return undefined;
  const gpus = job.spec.gpusPerWorker;
  // The CPU workers' inference ran on CPU (fallback ADR 0162, CPU-elastic ADR 0161): said, not counted as another device class.
  const onCpu = all.filter((r) => r.cpu).reduce((a, r) => a + (r.stages.find((x) => x.name === 'infer')?.processed ?? 0), 0);
  return STAGE_NAMES.map((name) => {
    const mine = all.flatMap((r) => r.stages.filter((x) => x.name === name));
    const sum = (f: (x: WireStage) => number | undefined): number => mine.reduce((a, x) => a + (f(x) ?? 0), 0);
    const estimated = mine.some((x) => x.counter === 'estimated');
    const placement =
      name === 'tokenise'
        ? `cpu: the batch-worker container, ${estimated ? "prompt tokens estimated (4 characters a token): the engine's tokenizer was not reachable" : `with the ${job.spec.runtime} engine's own tokenizer`}`
        : name === 'infer'
          ? gpus > 0
            ? `gpu: the ${job.spec.runtime} engine container on ${gpus} GPU${gpus === 1 ? '' : 's'} a worker${onCpu > 0 ? `; ${onCpu} records on CPU workers (the fallback worker, or CPU-elastic ones)` : ''}`
            : `cpu: the ${job.spec.runtime} engine container (gpusPerWorker 0)`
          : 'cpu: the batch-worker container (no NPU post-processing stage is built)';
    return {
      name,
      device: name === 'infer' && gpus > 0 ? 'gpu' : 'cpu',
      placement,
      records: sum((x) => x.processed),
      busySeconds: Math.round(sum((x) => x.busyMs)) / 1000,
      blockedSeconds: Math.round(sum((x) => x.blockedMs)) / 1000,
      maxQueue: Math.max(0, ...mine.map((x) => x.maxQueue)),
      queueCapacity: Math.max(0, ...mine.map((x) => x.capacity)),
      ...(name === 'tokenise'
        ? {
            promptTokens: sum((x) => x.promptTokens),
            refused: sum((x) => x.refused),
            ...(mine.some((x) => x.counter !== undefined) ? { tokenizer: estimated ? ('estimated' as const) : ('engine' as const) } : {}),
          }
        : {}),
    };
  });
}

interface Step {
  readonly status?: BatchInferenceJobStatus;
  readonly actions: ControllerAction[];
  readonly requeueAfterMs?: number;
}

function conditionsWith(prev: readonly Condition[] | undefined, nowMs: number, gen: number | undefined, ...us: ConditionUpdate[]): Condition[] {
  let out = [...(prev ?? [])];
  for (const u of us) out = setCondition(out, u, iso(nowMs), gen);
  return out;
}

const deleteAll = (pods: readonly PodObject[]): ControllerAction[] =>
  pods
    .filter((p) => p.metadata.deletionTimestamp === undefined)
    .map((p) => ({ op: 'delete', kind: POD.kind, name: p.metadata.name ?? '', uid: p.metadata.uid ?? '' }));

export function reconcileBatchJob(job: BatchJobObject, pods: readonly PodObject[], nowMs: number, cfg: BatchControllerConfig): Step {
  const prev = job.status ?? {};
  const gen = job.metadata.generation;
  const shareKey = job.metadata.uid ?? job.metadata.name ?? '';
  const leave = (): void => cfg.share?.done(shareKey, nowMs);
  if ((job.metadata as { deletionTimestamp?: string }).deletionTimestamp !== undefined) {
    leave();
    return { actions: [] };
  }
  // A finished job keeps its status; only leftover workers go.
  if (prev.phase === 'Succeeded' || prev.phase === 'Failed') {
    leave();
    return { actions: deleteAll(pods) };
  }
  const render = renderWorkers(job, cfg);
  if (!render.ok) return invalidSpecStep(job, pods, render.issues, nowMs);
  const open = cfg.jobs.session(job, nowMs);
  if (open.state !== 'ready') return unopenedStep(job, pods, open, nowMs);
  const s = open.session;
  const c = s.coordinator;
  if (job.spec.suspend && s.finished === undefined) return suspendStep(job, pods, s, nowMs, leave);
  const resumed = s.suspended === true || prev.phase === 'Suspended';
  if (resumed) {
    // Like batch/v1 Job: the run restarts its clock, activeDeadlineSeconds counts from the resume.
    s.suspended = false;
    s.startMs = nowMs;
    delete s.last;
  }
  const name = job.metadata.name ?? '';
  const actions: ControllerAction[] = [];
  const byName = new Map(pods.map((p) => [p.metadata.name ?? '', p]));
  const live: { pod: PodObject; worker: WorkerInfo }[] = [];
  const cancelled = new Set<string>();

  // What the decided route does to the workers (ADR 0161): the same on every reconcile and after a restart. A
  // cpu-elastic job wants no GPU worker: each finishes its shard and goes, CPU-elastic workers take the work.
  const routing = s.routing ?? prev.routing;
  const placement = routing === undefined ? undefined : placementOf(job, routing, render.value);
  const gpuWanted = placement?.shape === 'cpu' ? 0 : job.spec.workers;
  // The workers this job may run now under the GPU share; one at index ≥ allowed finishes its shard and goes.
  const allowed =
    cfg.share === undefined || s.finished !== undefined || job.spec.gpusPerWorker === 0
      ? gpuWanted
      : cfg.share.workers(shareKey, (cfg.tenantOf ?? defaultTenant)(job), gpuWanted, job.spec.gpusPerWorker, nowMs);
  const retiring = new Set<string>();
  // Workers deleted at this reconcile's shard boundary (no assignment is written to them).
  const gone = new Set<string>();
  // The workers' live batch sizes (ADR 0102): status shows the largest, the size the engines are driven at.
  const batchSizes: number[] = [];
  const pluginReports: { pod: string; state: BatchPluginState; note?: string }[] = [];
  // The GPU workers, then the CPU fallback worker while work is open or running on the ladder's CPU rung (ADR 0162).
  // It holds no GPU, so the GPU share does not count it, and the coordinator gives it only CPU-rung work.
  const cpuTemplate = render.value.cpuPod;
  const cpuWanted = cpuTemplate !== undefined && c.cpuWorkPending();
  const elasticPod = placement?.shape === 'cpu' && typeof render.value.elasticPod === 'function' ? render.value.elasticPod : undefined;
  const elasticNames = elasticPod === undefined ? [] : Array.from({ length: job.spec.workers }, (_, n) => elasticWorkerPodName(name, n));
  let { create: elasticCreate, surplus: elasticSurplus } = elasticCounts(job, s, elasticNames, byName);
  const slots = workerSlots(job, elasticNames, cpuTemplate !== undefined);
  for (const slot of slots) {
    if (s.finished !== undefined) break;
    const { pn } = slot;
    const cpu = slot.index === undefined;
    const elastic = slot.elastic !== undefined;
    const i = slot.index ?? 0;
    const pod = byName.get(pn);
    // A CPU-elastic worker beyond the shards left goes while idle (elastic: fewer as the work runs out).
    if (elastic && pod !== undefined && !terminal(pod) && !s.assigned.has(pn) && elasticSurplus > 0) {
      elasticSurplus--;
      actions.push({ op: 'delete', kind: POD.kind, name: pn, uid: pod.metadata.uid ?? '' });
      continue;
    }
    // No CPU work left and none on it: the fallback worker goes (it comes back if the ladder sends more).
    if (cpu && !elastic && !cpuWanted && pod !== undefined && !terminal(pod) && !s.assigned.has(pn)) {
      actions.push({ op: 'delete', kind: POD.kind, name: pn, uid: pod.metadata.uid ?? '' });
      continue;
    }
    if (!cpu && i >= allowed) {
      if (pod === undefined) cfg.share?.release(shareKey, i, nowMs);
      else retiring.add(pn);
    }
    // Built for another shape than the route's (a whole GPU under gpu-fragments): drained at its shard boundary.
    if (!cpu && pod !== undefined && !terminal(pod) && misplaced(pod, placement)) retiring.add(pn);
    if (pod === undefined || terminal(pod)) {
      giveBackShard(s, pn);
      if (pod === undefined && elastic) {
        if (elasticPod !== undefined && elasticCreate > 0) {
          elasticCreate--;
          actions.push({ op: 'create', kind: POD.kind, object: elasticPod(slot.elastic ?? 0) });
        }
      } else if (pod === undefined) {
        if (cpu ? cpuWanted : i < allowed)
          actions.push({ op: 'create', kind: POD.kind, object: cpu ? (cpuTemplate as () => PodObject)() : gpuWorkerPod(render.value, placement, i) });
      } else if (pod.metadata.deletionTimestamp === undefined) actions.push({ op: 'delete', kind: POD.kind, name: pn, uid: pod.metadata.uid ?? '' });
      continue;
    }
    if (pod.status?.phase !== 'Running') {
      // Not started yet and its GPU time already given to another tenant: it goes now.
      if (retiring.has(pn)) actions.push({ op: 'delete', kind: POD.kind, name: pn, uid: pod.metadata.uid ?? '' });
      continue;
    }
    const worker: WorkerInfo = { id: pn, device: deviceOf(pod), cpu, ...(elastic ? { elastic: true } : {}) };
    // An idle worker on a device the fault ladder quarantined is replaced: the scheduler places the new pod on a
    // healthy device (the quarantine is on the Node), and the job keeps its width.
    if (!cpu && !s.assigned.has(pn) && s.quarantined(nowMs).includes(worker.device) && (s.published?.(worker.device) ?? true)) {
      actions.push({ op: 'delete', kind: POD.kind, name: pn, uid: pod.metadata.uid ?? '' });
      continue;
    }
    c.register(worker);
    live.push({ pod, worker });
    readWorkerReport({ job, s, nowMs, batchSizes, pluginReports, cancelled }, pn, pod, worker, cpu);
  }
  // Losing copies (their records were committed by another attempt): the worker is told by its next assignment.
  for (const [pn, a] of [...s.assigned]) {
    if (!cancelled.has(a.attempt)) continue;
    s.handled.add(a.attempt);
    s.assigned.delete(pn);
  }
  // The long-tail breaker: a straggler's assignment is cut short (same attempt, smaller end); idle workers take the rest.
  if (s.finished === undefined) assignWork({ s, nowMs, live, retiring, actions, gone, cpuPodName: cpuWorkerPodName(name), cpuTemplate, cpuWanted, byName });

  if (s.finished === undefined) finishIfOver(job, s, nowMs);
  const fin = s.finished;
  if (fin !== undefined) {
    leave();
    actions.push(...deleteAll(pods));
  }

  const progress = c.status(nowMs);
  // Routed once: after PROFILE_SHARDS committed shards (or when a smaller job ends), never again (no flapping); a
  // restarted controller keeps the route its status holds.
  if (s.routing === undefined && prev.routing !== undefined) s.routing = prev.routing;
  const routed = routedCondition(job, pods, s, fin !== undefined, progress.shardsTotal, placement, render.value, nowMs, cfg);
  const phase = fin !== undefined ? (fin.state === 'complete' ? 'Succeeded' : 'Failed') : live.length > 0 ? 'Running' : 'Pending';
  const readyWorkers = fin !== undefined ? 0 : live.filter((l) => podReady(l.pod)).length;
  const quarantined = s.quarantined(nowMs);
  const next = { phase, recordsProcessed: progress.recordsProcessed, percent: progress.percent, quarantined } as const;
  if (batchSizes.length > 0) s.lastBatchSize = Math.max(...batchSizes);
  const plugin = strategyPluginCondition(pluginReports);
  // The status is returned only when a write is due: the runner compares what it returns with the stored copy (whose
  // keys the apiserver reorders), so returning the last status on every tick would write it on every tick. A write
  // that did not land (the stored phase is not the one written) is returned again.
  const due = statusWriteDue(job, s, next, readyWorkers, plugin, nowMs, cfg);
  const landed = s.last === undefined || prev.phase === s.last.status.phase;
  if (due) {
    const stages = stagesStatus(job, stageReports.get(s)?.values() ?? []);
    const status: BatchInferenceJobStatus = {
      ...(stages === undefined ? {} : { stages }),
      ...toStatus(progress, {
        phase,
        startMs: s.startMs,
        nowMs,
        quarantined,
        readyWorkers,
        retries: s.retries,
        ...(s.lastBatchSize === undefined ? {} : { batchSize: s.lastBatchSize }),
        ...(gen === undefined ? {} : { generation: gen }),
        ...(fin === undefined ? {} : { completionMs: fin.atMs }),
      }),
      ...(s.routing === undefined ? {} : { routing: s.routing }),
      conditions: jobConditions({ job, s, nowMs, fin, progress, quarantined, plugin, routed }),
    };
    s.last = { written: { ...next, atMs: nowMs }, status };
  }
  return {
    ...(s.last !== undefined && (due || !landed) ? { status: s.last.status } : {}),
    actions,
    ...(fin === undefined ? { requeueAfterMs: cfg.tickMs ?? 1000 } : {}),
  };
}

/** A checkpoint a worker's report names, committed once (a report is read at every reconcile); undefined when none is new. */
function commitCheckpoint(s: JobSession, attempt: string, file: string | undefined): CommitResult | undefined {
  if (file === undefined || s.handled.has(file)) return undefined;
  s.handled.add(file);
  return s.coordinator.checkpoint(attempt, file);
}

/**
 * spec.suspend on an unfinished job (ADR 0160): no worker runs and no shard is handed out. Each worker's shard goes
 * back to the coordinator (c.lost: what its committed checkpoints hold stays committed, the rest is run again after
 * resume, so no record is lost or done twice), the pods are deleted and the GPU share is given back.
 */
function suspendStep(job: BatchJobObject, pods: readonly PodObject[], s: JobSession, nowMs: number, leave: () => void): Step {
  const prev = job.status ?? {};
  // What the workers reported and the controller has not judged yet is kept first: a checkpoint they named, a part
  // they finished. Only what came after is given back.
  const byName = new Map(pods.map((p) => [p.metadata.name ?? '', p]));
  for (const [pn, a] of [...s.assigned]) {
    const report = parseReport(byName.get(pn)?.metadata.annotations?.[ANNOTATION.batchReport]);
    if (report !== undefined && report.attempt === a.attempt) {
      commitCheckpoint(s, a.attempt, report.checkpoint);
      if (report.state === 'done') s.coordinator.complete(a.attempt, nowMs);
    }
  }
  for (const [pn, a] of [...s.assigned]) {
    s.coordinator.lost(pn);
    s.handled.add(a.attempt);
    s.assigned.delete(pn);
  }
  leave();
  s.suspended = true;
  delete s.last;
  const progress = s.coordinator.status(nowMs);
  const cond = prev.conditions?.find((x) => x.type === 'Suspended');
  const said =
    prev.phase === 'Suspended' && cond?.status === 'True' && prev.progress?.recordsProcessed === progress.recordsProcessed && prev.readyWorkers === 0;
  const gen = job.metadata.generation;
  const status: BatchInferenceJobStatus = {
    ...prev,
    // The progress as committed; startTime stays the last run's start (it is reset on resume).
    ...toStatus(progress, {
      phase: 'Suspended',
      startMs: s.startMs,
      nowMs,
      quarantined: s.quarantined(nowMs),
      readyWorkers: 0,
      retries: s.retries,
      ...(gen === undefined ? {} : { generation: gen }),
    }),
    tokensPerSecond: 0,
    conditions: conditionsWith(prev.conditions, nowMs, gen, {
      type: 'Suspended',
      status: 'True',
      reason: 'Suspended',
      message: `spec.suspend is true: no workers run; ${progress.recordsProcessed} of ${progress.recordsTotal} records committed`,
    }),
  };
  delete status.estimatedCompletionTime;
  return { ...(said ? {} : { status }), actions: deleteAll(pods), requeueAfterMs: 5000 };
}

export function batchInferenceJobController(cfg: BatchControllerConfig): ControllerDefinition<BatchJobObject> {
  return {
    primary: BATCH_INFERENCE_JOB_RESOURCE,
    owned: [POD],
    ownerLabel: LABEL.batchInferenceJob,
    component: 'sits-batchinferencejob-controller',
    reconcile(input: ControllerInput<BatchJobObject>): ControllerOutcome {
      const job = withDefaults('BatchInferenceJob', input.object) as BatchJobObject;
      const step = reconcileBatchJob(job, (input.owned.get(POD.kind) ?? []) as readonly PodObject[], input.nowMs, cfg);
      return {
        ...(step.status === undefined ? {} : { status: step.status as Readonly<Record<string, unknown>> }),
        actions: step.actions,
        ...(step.requeueAfterMs === undefined ? {} : { requeueAfterMs: step.requeueAfterMs }),
      };
    },
  };
}

/** The job's session is not open: its input is being read, is invalid, its URIs are refused, or the volume failed. */
function unopenedStep(job: BatchJobObject, pods: readonly PodObject[], open: Exclude<SessionState, { readonly state: 'ready' }>, nowMs: number): Step {
  const prev = job.status ?? {};
  const gen = job.metadata.generation;
  if (open.state === 'loading') {
    const status =
      prev.phase === undefined
        ? {
            ...prev,
            phase: 'Pending' as const,
            conditions: conditionsWith(prev.conditions, nowMs, gen, {
              type: 'InputValid',
              status: 'Unknown',
              reason: 'Reading',
              message: `reading ${job.spec.input.uri}`,
            }),
          }
        : undefined;
    return { ...(status === undefined ? {} : { status }), actions: [], requeueAfterMs: 250 };
  }
  if (open.state === 'rejected') {
    const message = open.errors.join('; ');
    return {
      status: {
        ...prev,
        phase: 'Failed',
        completionTime: iso(nowMs),
        conditions: conditionsWith(
          prev.conditions,
          nowMs,
          gen,
          { type: 'InputValid', status: 'False', reason: 'MalformedInput', message },
          { type: 'Complete', status: 'False', reason: 'OutputPartial', message: `no record was run: the input is invalid; ${open.output} says partial` },
        ),
      },
      actions: deleteAll(pods),
    };
  }
  if (open.state === 'refused') {
    return {
      status: {
        ...prev,
        phase: 'Failed',
        completionTime: iso(nowMs),
        conditions: conditionsWith(prev.conditions, nowMs, gen, { type: 'Complete', status: 'False', reason: open.reason, message: open.message }),
      },
      actions: deleteAll(pods),
    };
  }
  // The volume failed: said once, tried again.
  const said = prev.conditions?.find((x) => x.type === 'OutputWritable');
  if (said?.status === 'False' && said.message === open.message) return { actions: [], requeueAfterMs: 10_000 };
  const conditions = conditionsWith(prev.conditions, nowMs, gen, {
    type: 'OutputWritable',
    status: 'False',
    reason: 'VolumeUnavailable',
    message: open.message,
  });
  return { status: { ...prev, phase: prev.phase ?? 'Pending', conditions }, actions: [], requeueAfterMs: 10_000 };
}

/** The job is over when the model cannot load, every record is committed, or activeDeadlineSeconds passed: the output is finished. */
function finishIfOver(job: BatchJobObject, s: JobSession, nowMs: number): void {
  const c = s.coordinator;
  const deadline = job.spec.activeDeadlineSeconds;
  if (s.modelError !== undefined) {
    const f = c.finish(s.modelError);
    s.finished = { state: f.state === 'partial' ? 'partial' : 'complete', records: f.records, atMs: nowMs, reason: s.modelError };
  } else if (c.done) {
    const f = c.finish();
    s.finished = { state: f.state === 'partial' ? 'partial' : 'complete', records: f.records, atMs: nowMs };
  } else if (deadline !== undefined && nowMs - s.startMs > deadline * 1000) {
    const reason = `activeDeadlineSeconds ${deadline} passed with ${c.uncommitted().reduce((a, r) => a + r.end - r.start, 0)} records not run`;
    const f = c.finish(reason);
    s.finished = { state: f.state === 'partial' ? 'partial' : 'complete', records: f.records, atMs: nowMs, reason };
  }
}

/**
 * The Routed condition (and the route, decided once): after PROFILE_SHARDS committed shards (or when a smaller job
 * ends) the job is routed from its shards' profile; before, it is profiling.
 */
function routedCondition(
  job: BatchJobObject,
  pods: readonly PodObject[],
  s: JobSession,
  finished: boolean,
  shardsTotal: number,
  placement: ReturnType<typeof placementOf> | undefined,
  rendered: Parameters<typeof placementOf>[2],
  nowMs: number,
  cfg: BatchControllerConfig,
): ConditionUpdate | undefined {
  const prev = job.status ?? {};
  let routed: ConditionUpdate | undefined;
  const samples = s.shardSamples ?? [];
  if (s.routing === undefined && (samples.length >= Math.min(PROFILE_SHARDS, shardsTotal || PROFILE_SHARDS) || (finished && samples.length > 0))) {
    const r = routeJob(job, samples, nowMs, cfg);
    if (r !== undefined) {
      s.routing = r.routing;
      routed = {
        type: 'Routed',
        status: 'True',
        reason: r.reason,
        message: routedMessage(r.routing, workersLine(pods, placementOf(job, r.routing, rendered))),
      };
    }
  } else if (s.routing !== undefined) {
    // Routed before: the reasons stay, the worker counts follow the pods (as of this reconcile's start).
    const said = prev.conditions?.find((x) => x.type === 'Routed' && x.status === 'True');
    routed = {
      type: 'Routed',
      status: 'True',
      reason: said?.reason ?? ROUTED_REASON[s.routing.source],
      message: routedMessage(s.routing, workersLine(pods, placement)),
    };
  }
  if (routed === undefined && s.routing === undefined)
    routed = {
      type: 'Routed',
      status: 'False',
      reason: 'Profiling',
      message: `profiling the workload: ${samples.length} of ${Math.min(PROFILE_SHARDS, shardsTotal || PROFILE_SHARDS)} shards committed`,
    };
  return routed;
}

/** Complete (how far the output is), OutputWritable and FaultRecovery (what the fault ladder did, newest last). */
function progressConditions(
  job: BatchJobObject,
  fin: JobSession['finished'],
  progress: ReturnType<BatchCoordinator['status']>,
  c: BatchCoordinator,
  quarantined: readonly string[],
): { complete: ConditionUpdate; writable: ConditionUpdate; faults: ConditionUpdate } {
  const out = `${job.spec.output.uri.replace(/\/+$/, '')}/output.jsonl`;
  const complete =
    fin === undefined
      ? {
          type: 'Complete',
          status: 'False' as const,
          reason: 'Running',
          message: `${progress.recordsProcessed} of ${progress.recordsTotal} records committed`,
        }
      : fin.state === 'complete'
        ? { type: 'Complete', status: 'True' as const, reason: 'OutputComplete', message: `${fin.records} records, every custom_id once, in ${out}` }
        : {
            type: 'Complete',
            status: 'False' as const,
            reason: 'OutputPartial',
            message: `${fin.records} of ${progress.recordsTotal} records in ${out}, manifest.json says partial: ${fin.reason ?? ''}`,
          };
  const writable =
    c.outputError === undefined
      ? { type: 'OutputWritable', status: 'True' as const, reason: 'Writable', message: `parts and manifest written to ${job.spec.output.uri}` }
      : { type: 'OutputWritable', status: 'False' as const, reason: 'VolumeRefused', message: c.outputError };
  const ladder = c.faultLog();
  // What the fault ladder did, newest last (retries, splits, quarantines): `kubectl describe` shows the walk.
  const faults =
    ladder.length === 0
      ? { type: 'FaultRecovery', status: 'False' as const, reason: 'NoFaults', message: 'no shard failed' }
      : {
          type: 'FaultRecovery',
          status: 'True' as const,
          reason: c.cpuWorkPending() ? 'CpuFallback' : quarantined.length > 0 ? 'DeviceQuarantined' : 'Retried',
          message: ladder.join('; ').slice(-4000),
        };
  return { complete, writable, faults };
}

/** What one reconcile gathers from the workers' reports. */
interface ReportContext {
  readonly job: BatchJobObject;
  readonly s: JobSession;
  readonly nowMs: number;
  readonly batchSizes: number[];
  readonly pluginReports: { pod: string; state: BatchPluginState; note?: string }[];
  /** Attempts whose records another attempt committed. */
  readonly cancelled: Set<string>;
}

/**
 * A running worker's report (its pod's annotation): its batch size, stages and plugin state are noted; a shard of
 * an earlier epoch is adopted; progress, a checkpoint, and a done or failed shard go to the coordinator.
 */
function readWorkerReport(ctx: ReportContext, pn: string, pod: PodObject, worker: WorkerInfo, cpu: boolean): void {
  const { job, s, nowMs, batchSizes, pluginReports, cancelled } = ctx;
  const c = s.coordinator;
  const report = parseReport(pod.metadata.annotations?.[ANNOTATION.batchReport]);
  if (report?.batchSize !== undefined) batchSizes.push(report.batchSize);
  if (report?.stages !== undefined) {
    const m = stageReports.get(s) ?? new Map<string, { cpu: boolean; stages: readonly WireStage[] }>();
    stageReports.set(s, m);
    // Keyed by pod UID: a replacement pod with the same name starts its totals from zero.
    m.set(pod.metadata.uid ?? pn, { cpu, stages: report.stages });
  }
  if (report?.batchPlugin !== undefined)
    pluginReports.push({ pod: pn, state: report.batchPlugin, ...(report.batchNote === undefined ? {} : { note: report.batchNote }) });
  let cur = s.assigned.get(pn);
  // After a coordinator restart: a worker still on (or done with) a shard of an earlier epoch is taken over.
  if (cur === undefined && report !== undefined && report.state !== 'failed' && !s.handled.has(report.attempt) && epochOf(report.attempt) < c.epoch) {
    if (c.adopt(report.attempt, { start: report.start, end: report.end }, worker, report.startedMs, report.done) === 'adopted') {
      cur = { attempt: report.attempt, start: report.start, end: report.end, part: partName(report.attempt), concurrency: 1 };
      s.assigned.set(pn, cur);
    } else s.handled.add(report.attempt);
  }
  if (cur === undefined || report === undefined || report.attempt !== cur.attempt) return;
  c.progress(cur.attempt, report.done, report.tokens);
  // A checkpoint is committed while the attempt runs on (ADR 0159), before a done or failed report is judged, so a
  // failed or lost attempt gives back only what came after it.
  const ck = commitCheckpoint(s, cur.attempt, report.checkpoint);
  if (ck?.kind === 'committed') for (const id of ck.cancel) cancelled.add(id);
  if (report.state === 'running') return;
  s.handled.add(cur.attempt);
  s.assigned.delete(pn);
  if (report.state === 'done') {
    const r = c.complete(cur.attempt, nowMs);
    if (r.kind === 'failed') s.retries++;
    else for (const id of r.cancel) cancelled.add(id);
    // The first committed shards are the workload's profile (ADR 0165); a bounded few, then no more.
    if (r.kind === 'committed' && s.routing === undefined && (s.shardSamples ??= []).length < PROFILE_SHARDS && report.done > 0) {
      const out = report.outputTokens ?? 0;
      s.shardSamples.push({
        records: report.done,
        promptTokens: report.tokens - out,
        outputTokens: out,
        ms: report.ms ?? 0,
        ...(report.kvFree === undefined ? {} : { peakKvFraction: 1 - report.kvFree }),
      });
    }
  } else if (report.failure?.kind === 'model') {
    s.modelError ??= `spec.model.uri ${job.spec.model.uri}: the engine cannot load it: ${report.failure.message}`;
  } else {
    s.retries++;
    c.fail(cur.attempt, { kind: report.failure?.kind ?? 'crash', message: report.failure?.message ?? 'the worker gave up', device: worker.device }, nowMs);
  }
}

/** What handing out work at a reconcile reads and writes. */
interface AssignContext {
  readonly s: JobSession;
  readonly nowMs: number;
  readonly live: readonly { readonly pod: PodObject; readonly worker: WorkerInfo }[];
  /** Workers whose GPU time is over: they go at their shard boundary. */
  readonly retiring: ReadonlySet<string>;
  readonly actions: ControllerAction[];
  /** Workers deleted here (no assignment is written to them). */
  readonly gone: Set<string>;
  readonly cpuPodName: string;
  readonly cpuTemplate: (() => PodObject) | undefined;
  /** The CPU fallback worker was wanted at the start of this reconcile. */
  readonly cpuWanted: boolean;
  readonly byName: ReadonlyMap<string, PodObject>;
}

/**
 * The long-tail breaker cuts stragglers' assignments, idle workers take shards (or go: retiring, or the CPU fallback
 * with no CPU work left), and every live worker's assignment annotation is brought up to date.
 */
function assignWork(ctx: AssignContext): void {
  const { s, nowMs, live, retiring, actions, gone, cpuTemplate, cpuWanted, byName } = ctx;
  const c = s.coordinator;
  // Only GPU workers take a straggler's chunks (they are GPU work).
  const idle = live.filter((l) => (!l.worker.cpu || l.worker.elastic === true) && !s.assigned.has(l.worker.id)).length;
  for (const cut of c.tick(nowMs, idle)) {
    for (const [pn, a] of s.assigned) if (a.attempt === cut.attemptId) s.assigned.set(pn, { ...a, end: cut.cut });
  }
  for (const l of live) {
    if (s.assigned.has(l.worker.id)) continue;
    // Its GPU time is over (the share): at this shard boundary the worker goes instead of taking another shard.
    if (retiring.has(l.worker.id)) {
      actions.push({ op: 'delete', kind: POD.kind, name: l.worker.id, uid: l.pod.metadata.uid ?? '' });
      gone.add(l.worker.id);
      continue;
    }
    const a = c.assign(l.worker, nowMs);
    if (a !== undefined)
      s.assigned.set(l.worker.id, { attempt: a.attemptId, start: a.range.start, end: a.range.end, part: a.part, concurrency: a.concurrencyFactor });
    else if (l.worker.cpu && l.worker.elastic !== true && !c.cpuWorkPending()) {
      // Its last CPU-rung shard is committed: the fallback worker goes now, not a tick later.
      actions.push({ op: 'delete', kind: POD.kind, name: l.worker.id, uid: l.pod.metadata.uid ?? '' });
      gone.add(l.worker.id);
    }
  }
  // A shard reached the CPU rung in this reconcile: its worker is created now, not a tick later.
  const cpuPn = ctx.cpuPodName;
  if (cpuTemplate !== undefined && !cpuWanted && byName.get(cpuPn) === undefined && c.cpuWorkPending())
    actions.push({ op: 'create', kind: POD.kind, object: cpuTemplate() });
  for (const l of live) {
    if (gone.has(l.worker.id)) continue;
    const want = formatAssignment(s.assigned.get(l.worker.id));
    if (l.pod.metadata.annotations?.[ANNOTATION.batchAssignment] !== want) {
      actions.push({ op: 'patch', kind: POD.kind, name: l.worker.id, patch: { metadata: { annotations: { [ANNOTATION.batchAssignment]: want } } } });
    }
  }
}

/** The conditions of a status write: a resumed job's Suspended cleared, then input, output, faults, plugin, route and model. */
function jobConditions(x: {
  readonly job: BatchJobObject;
  readonly s: JobSession;
  readonly nowMs: number;
  readonly fin: JobSession['finished'];
  readonly progress: ReturnType<BatchCoordinator['status']>;
  readonly quarantined: readonly string[];
  readonly plugin: ConditionUpdate | undefined;
  readonly routed: ConditionUpdate | undefined;
}): Condition[] {
  const { job, s, nowMs, fin, progress, quarantined, plugin, routed } = x;
  const prev = job.status ?? {};
  const gen = job.metadata.generation;
  const { complete, writable, faults } = progressConditions(job, fin, progress, s.coordinator, quarantined);
  return conditionsWith(
    prev.conditions?.some((x) => x.type === 'Suspended' && x.status === 'True')
      ? setCondition([...(prev.conditions ?? [])], { type: 'Suspended', status: 'False', reason: 'Resumed', message: 'spec.suspend is false' }, iso(nowMs), gen)
      : prev.conditions,
    nowMs,
    gen,
    { type: 'InputValid', status: 'True', reason: 'Valid', message: `${progress.recordsTotal} requests in ${job.spec.input.uri}` },
    complete,
    writable,
    faults,
    ...(plugin === undefined ? [] : [plugin]),
    ...(routed === undefined ? [] : [routed]),
    ...(s.modelError === undefined ? [] : [{ type: 'ModelAvailable', status: 'False' as const, reason: 'ModelUnavailable', message: s.modelError }]),
  );
}

/** The worker is gone (crash, preemption, node loss): its shard goes back to the coordinator. */
function giveBackShard(s: JobSession, pn: string): void {
  const had = s.assigned.get(pn);
  if (had === undefined) return;
  s.coordinator.lost(pn);
  s.handled.add(had.attempt);
  s.assigned.delete(pn);
}

/** A GPU worker's pod: on a fraction of a GPU when the route says so, else on whole GPUs. */
function gpuWorkerPod(rendered: Extract<WorkerRender, { ok: true }>['value'], placement: ReturnType<typeof placementOf> | undefined, i: number): PodObject {
  return placement?.shape === 'fraction' ? rendered.fractionPod(i, placement.fraction ?? 1, placement.deviceMemoryGiB) : rendered.pod(i);
}

/** CPU-elastic workers by count, not index: as many as the shards left (open, or running on them), at most spec.workers. */
function elasticCounts(
  job: BatchJobObject,
  s: JobSession,
  elasticNames: readonly string[],
  byName: ReadonlyMap<string, PodObject>,
): { create: number; surplus: number } {
  const elasticUp = elasticNames.filter((pn) => byName.get(pn) !== undefined && !terminal(byName.get(pn) as PodObject)).length;
  const elasticWant = elasticWorkers(job.spec.workers, s.coordinator.pendingTasks(), elasticNames.filter((pn) => s.assigned.has(pn)).length);
  return { create: Math.max(0, elasticWant - elasticUp), surplus: Math.max(0, elasticUp - elasticWant) };
}

type WorkerSlot = { readonly pn: string; readonly index?: number; readonly elastic?: number };

/** The GPU workers, then the CPU fallback worker, then the CPU-elastic workers. */
function workerSlots(job: BatchJobObject, elasticNames: readonly string[], cpuFallback: boolean): WorkerSlot[] {
  const name = job.metadata.name ?? '';
  return [
    ...Array.from({ length: job.spec.workers }, (_, i) => ({ pn: workerPodName(name, i), index: i })),
    ...(cpuFallback ? [{ pn: cpuWorkerPodName(name) }] : []),
    ...elasticNames.map((pn, n) => ({ pn, elastic: n })),
  ];
}

/** The spec cannot be rendered into workers: the job fails, naming each field. */
function invalidSpecStep(job: BatchJobObject, pods: readonly PodObject[], issues: Extract<WorkerRender, { ok: false }>['issues'], nowMs: number): Step {
  const prev = job.status ?? {};
  const message = issues.map((i) => `${i.field}: ${i.message}`).join('; ');
  return {
    status: {
      ...prev,
      phase: 'Failed',
      conditions: conditionsWith(prev.conditions, nowMs, job.metadata.generation, { type: 'Complete', status: 'False', reason: 'InvalidSpec', message }),
    },
    actions: deleteAll(pods),
  };
}

/**
 * A status write is due on the first reconcile, when the ready workers, the plugin's verdict or the route changed,
 * while the output refuses writes, or when the write policy says so (progress or time).
 */
function statusWriteDue(
  job: BatchJobObject,
  s: JobSession,
  next: Omit<WrittenStatus, 'atMs'>,
  readyWorkers: number,
  plugin: ConditionUpdate | undefined,
  nowMs: number,
  cfg: BatchControllerConfig,
): boolean {
  const policy = { ...DEFAULT_STATUS_POLICY, maxIntervalMs: job.spec.checkpoint.intervalSeconds * 1000, ...cfg.statusPolicy };
  const workersChanged = s.last !== undefined && s.last.status.readyWorkers !== readyWorkers;
  // A plugin's verdict changing is written at once; its message alone (a fallback's numbers) waits for the next write.
  const saidPlugin = s.last?.status.conditions?.find((x) => x.type === 'StrategyPlugin');
  const pluginChanged = plugin !== undefined && (saidPlugin?.status !== plugin.status || saidPlugin.reason !== plugin.reason);
  const routeChanged = s.routing !== undefined && s.last?.status.routing === undefined;
  return (
    s.last === undefined ||
    workersChanged ||
    pluginChanged ||
    routeChanged ||
    s.coordinator.outputError !== undefined ||
    shouldWriteStatus(s.last.written, next, nowMs, policy)
  );
}
