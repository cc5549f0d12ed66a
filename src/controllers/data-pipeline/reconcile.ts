/**
 * The DataPipeline reconcile: pure, from the pipeline (its status is the memory: retries, backoff deadlines,
 * outputs) and what the caches show, to the next status and the actions that move the stages on.
 *
 * A stage is Pending until its dependencies allow it (all Succeeded — or Running for a streaming one — or, with
 * `when`, all finished and the expression true), then Running while its pods or workload run, then Succeeded
 * (outputs read, artifacts recorded), Failed (retries spent; the reason kept) or Skipped (a dependency failed, or
 * `when` is false). Between two attempts a stage has `nextRetryTime`: the old attempt's children are deleted and
 * the next one starts when the backoff has passed. A failure no `when` handles fails the pipeline; with
 * failurePolicy StopPipeline the other stages are stopped at once and say why.
 */
import type { ApplyFailure, ControllerAction } from '../../api/controller.ts';
import type { DataPipelineStatus, PipelineStage, StageStatus } from '../../api/schema/data-pipeline.ts';
import { ANNOTATION } from '../../api/wire.ts';
import type { PodObject } from '../kube-objects.ts';
import {
  artifactSnapshot,
  MAIN_CONTAINER,
  pipelineName,
  podName,
  restoredClaim,
  restoredClaimName,
  snapshotName,
  stagePod,
  stageWorkload,
  workloadName,
  workloadSpecWithInputs,
  type MountedInput,
} from './children.ts';
import type { Observed, WorkloadKind, WorkloadObject } from './model.ts';
import { parseOutputs, substitute } from './params.ts';
import { decideRetry, effectiveRetry, type AttemptOutcome } from './retry.ts';
import { evalWhen, handlesFailureOf, parseWhen, stagesOf, type WhenExpr } from './when.ts';
import { profiledPod, profiledWorkloadSpec, stageProfile } from './stage-profile.ts';
import type { ResolvedProfile } from './profiles.ts';
import { cacheKey, lookup as cacheLookup, type StepInput } from './step-cache.ts';
import { adapterStep } from './adapter-stage.ts';

export interface ReconcileResult {
  readonly status: DataPipelineStatus;
  readonly actions: readonly ControllerAction[];
  readonly requeueAfterMs?: number;
}

type Phase = StageStatus['phase'];
const FINISHED: readonly Phase[] = ['Succeeded', 'Failed', 'Skipped'];
const isFinished = (p: Phase): boolean => FINISHED.includes(p);
const MESSAGE_MAX = 4096;
const clip = (m: string): string => (m.length > MESSAGE_MAX ? `${m.slice(0, MESSAGE_MAX - 1)}…` : m);
const iso = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
const parseMs = (t: string | undefined): number | undefined => (t === undefined ? undefined : Date.parse(t));
const alive = (o: { readonly metadata: { readonly deletionTimestamp?: string } }): boolean => o.metadata.deletionTimestamp === undefined;

/** Checks the pipeline cannot express in CEL: `when` syntax and names, input artifacts naming real outputs. */
export function specProblems(stages: readonly PipelineStage[]): { whens: Map<string, WhenExpr>; problems: string[] } {
  const whens = new Map<string, WhenExpr>();
  const problems: string[] = [];
  stages.forEach((s, i) => {
    const deps = s.dependsOn ?? [];
    if (s.when !== undefined) {
      const r = parseWhen(s.when);
      if (!r.ok) problems.push(`spec.stages[${i}].when: ${r.error}`);
      else {
        const outside = stagesOf(r.expr).filter((n) => !deps.includes(n));
        if (outside.length > 0) problems.push(`spec.stages[${i}].when: names ${outside.join(', ')}, not in dependsOn`);
        else whens.set(s.name, r.expr);
      }
    }
    (s.inputs?.artifacts ?? []).forEach((a, j) => {
      const from = stages.find((t) => t.name === a.from.stage);
      if (!deps.includes(a.from.stage)) problems.push(`spec.stages[${i}].inputs.artifacts[${j}].from.stage: ${a.from.stage} is not in dependsOn`);
      else if (!(from?.outputs?.artifacts ?? []).some((o) => o.name === a.from.artifact))
        problems.push(`spec.stages[${i}].inputs.artifacts[${j}].from.artifact: stage ${a.from.stage} has no output artifact ${a.from.artifact}`);
    });
  });
  return { whens, problems };
}

interface StageStep {
  status: StageStatus;
  actions: ControllerAction[];
  /** Children still there (to delete when the pipeline stops this stage). */
  live: { kind: string; name: string; uid: string }[];
  requeueAtMs?: number;
  event?: { type: 'Normal' | 'Warning'; reason: string; message: string };
}

/** The failure fed back by the runner for creating `name`, if any. */
function createFailure(errors: readonly ApplyFailure[] | undefined, name: string): ApplyFailure | undefined {
  return errors?.find((e) => e.name === name && e.action.startsWith('create'));
}
const permanent = (e: ApplyFailure): boolean => e.status >= 400 && e.status < 500 && e.status !== 409 && e.status !== 429;

function podOutcome(pod: PodObject): { outcome: AttemptOutcome; message: string } {
  const statuses = pod.status?.containerStatuses ?? [];
  const main = statuses.find((c) => c.name === MAIN_CONTAINER) ?? statuses[0];
  const term = main?.state?.terminated;
  if (term !== undefined && term.exitCode !== 0)
    return {
      outcome: 'failure',
      message: `pod ${pod.metadata.name ?? ''}: exit code ${term.exitCode}${term.reason === undefined ? '' : ` (${term.reason})`}${term.message === undefined || term.message === '' ? '' : `: ${term.message.slice(0, 200)}`}`,
    };
  return {
    outcome: 'error',
    message: `pod ${pod.metadata.name ?? ''} failed${pod.status?.reason === undefined ? '' : ` (${pod.status.reason})`}${pod.status?.message === undefined ? '' : `: ${pod.status.message}`}`,
  };
}

function podOutputs(pod: PodObject | undefined): Record<string, string> {
  const statuses = pod?.status?.containerStatuses ?? [];
  const main = statuses.find((c) => c.name === MAIN_CONTAINER) ?? statuses[0];
  return { ...parseOutputs(main?.state?.terminated?.message), ...parseOutputs(pod?.metadata.annotations?.[ANNOTATION.outputs]) };
}

function workloadMessage(w: WorkloadObject): string {
  const cond =
    (w.status?.conditions ?? []).find((c) => c.status === 'True' && c.message !== undefined) ??
    (w.status?.conditions ?? []).find((c) => c.message !== undefined);
  return w.status?.message ?? cond?.message ?? '';
}

/** Workload phases that count as the stage's success: an InferenceService is done once it serves. */
function workloadSucceeded(kind: WorkloadKind, phase: string | undefined): boolean {
  return kind === 'InferenceService' ? phase === 'Ready' : phase === 'Succeeded';
}

export function reconcileDataPipeline(o: Observed): ReconcileResult {
  const p = o.pipeline;
  const name = pipelineName(p);
  const prevStatus = p.status ?? {};
  const prevStages = new Map((prevStatus.stages ?? []).map((s) => [s.name, s]));
  const now = iso(o.nowMs);
  const stages = p.spec.stages;
  const actions: ControllerAction[] = [];
  const events: StageStep['event'][] = [];
  let requeueAtMs: number | undefined;
  const requeueAt = (ms: number): void => {
    requeueAtMs = requeueAtMs === undefined ? ms : Math.min(requeueAtMs, ms);
  };
  const gcStrategy = p.spec.artifactGC?.strategy ?? 'OnPipelineDeletion';
  const prevPhase = prevStatus.phase;
  const finishedBefore = prevPhase === 'Succeeded' || prevPhase === 'Failed';

  const { whens, problems } = specProblems(stages);
  if (problems.length > 0 && !finishedBefore) {
    const message = clip(`invalid spec: ${problems.join('; ')}`);
    return {
      status: {
        ...prevStatus,
        phase: 'Failed',
        message,
        observedGeneration: p.metadata.generation ?? 0,
        totalStages: stages.length,
        completedStages: 0,
        completionTime: prevStatus.completionTime ?? now,
      },
      actions: prevStatus.message === message ? [] : [{ op: 'event', type: 'Warning', reason: 'InvalidSpec', message }],
    };
  }

  const next = new Map<string, StageStatus>();
  const ancestors = new Map<string, Set<string>>();
  for (const s of stages) ancestors.set(s.name, new Set((s.dependsOn ?? []).flatMap((d) => [d, ...(ancestors.get(d) ?? [])])));
  const phaseOf = (n: string): Phase => next.get(n)?.phase ?? 'Pending';
  const steps = new Map<string, StageStep>();
  const ctx: PipelineContext = { o, name, now, whens, next, ancestors, gcStrategy };

  for (const [index, stage] of stages.entries()) {
    const prev: StageStatus = prevStages.get(stage.name) ?? { name: stage.name, phase: 'Pending' };
    const step = stepStage(ctx, stage, index, prev);
    steps.set(stage.name, step);
    next.set(stage.name, step.status);
  }

  // Unhandled failures and the deadline stop the pipeline.
  const handled = (failed: string): boolean => [...whens.values()].some((w) => handlesFailureOf(w, failed));
  const unhandled = stages.filter((s) => phaseOf(s.name) === 'Failed' && !handled(s.name) && !(next.get(s.name)?.message ?? '').startsWith('stopped:'));
  const startMs = parseMs(prevStatus.startTime);
  const deadline = p.spec.activeDeadlineSeconds === undefined || startMs === undefined ? undefined : startMs + p.spec.activeDeadlineSeconds * 1000;
  const pastDeadline = !finishedBefore && deadline !== undefined && o.nowMs >= deadline;
  const stopBy = pastDeadline
    ? `activeDeadlineSeconds ${p.spec.activeDeadlineSeconds ?? 0} exceeded`
    : unhandled.length > 0 && p.spec.failurePolicy === 'StopPipeline'
      ? `stage ${unhandled[0]?.name ?? ''} failed`
      : undefined;
  if (!pastDeadline && deadline !== undefined && !finishedBefore) requeueAt(deadline);
  for (const s of stages) {
    const step = steps.get(s.name);
    if (step === undefined) continue;
    if (stopBy !== undefined && !isFinished(step.status.phase)) {
      const wasStarted = step.status.phase === 'Running';
      const st: StageStatus = {
        ...step.status,
        phase: wasStarted ? 'Failed' : 'Skipped',
        message: wasStarted ? `stopped: ${stopBy}` : `not run: ${stopBy}`,
        completionTime: now,
        readyReplicas: 0,
      };
      delete (st as { nextRetryTime?: string }).nextRetryTime;
      next.set(s.name, st);
      // A stopped stage's children go (a finished InferenceService stage is not stopped: it keeps serving).
      actions.push(...step.live.map((c): ControllerAction => ({ op: 'delete', kind: c.kind, name: c.name, uid: c.uid })));
      continue;
    }
    actions.push(...step.actions);
    if (step.requeueAtMs !== undefined) requeueAt(step.requeueAtMs);
    if (step.event !== undefined && prevStages.get(s.name)?.message !== step.status.message) events.push(step.event);
  }

  // The pipeline.
  const all = stages.map((s) => next.get(s.name) as StageStatus);
  const failedStage = stages.find((s) => next.get(s.name)?.phase === 'Failed' && !handled(s.name) && !(next.get(s.name)?.message ?? '').startsWith('stopped:'));
  const started = all.some((s) => s.startTime !== undefined);
  const firstStart = all
    .map((s) => s.startTime)
    .filter((t): t is string => t !== undefined)
    .sort()[0];
  const { phase, message } = pipelinePhase(p, all, { pastDeadline, failedStage: failedStage?.name, stopped: stopBy !== undefined, started });
  const finished = phase === 'Succeeded' || phase === 'Failed';
  const completionTime = finished ? (prevStatus.completionTime ?? now) : undefined;
  const status: DataPipelineStatus = {
    phase,
    message: clip(message),
    observedGeneration: p.metadata.generation ?? 0,
    stages: all,
    completedStages: all.filter((s) => s.phase === 'Succeeded').length,
    totalStages: all.length,
    ...(firstStart === undefined ? {} : { startTime: prevStatus.startTime ?? firstStart }),
    ...(completionTime === undefined ? {} : { completionTime }),
  };
  if (finished && !finishedBefore)
    events.push({
      type: phase === 'Succeeded' ? 'Normal' : 'Warning',
      reason: phase === 'Succeeded' ? 'PipelineSucceeded' : 'PipelineFailed',
      message: clip(message),
    });

  // Artifact GC on completion: delete all but the last keepLast snapshots (by stage completion, then list order).
  if (finished && gcStrategy === 'OnPipelineCompletion') actions.push(...collectArtifacts(o, status));

  // ttlSecondsAfterFinished.
  const ttl = p.spec.ttlSecondsAfterFinished;
  if (finished && ttl !== undefined) {
    const at = (parseMs(completionTime) ?? o.nowMs) + ttl * 1000;
    if (at <= o.nowMs) actions.push({ op: 'deleteSelf' });
    else requeueAt(at);
  }

  actions.push(...events.filter((e): e is NonNullable<StageStep['event']> => e !== undefined).map((e): ControllerAction => ({ op: 'event', ...e })));
  return { status, actions, ...(requeueAtMs === undefined ? {} : { requeueAfterMs: Math.max(0, requeueAtMs - o.nowMs) }) };
}

/** What every stage's step reads: the observation, the pipeline's name, now, the when-expressions, the statuses so far (in spec order) and each stage's ancestors. */
interface PipelineContext {
  readonly o: Observed;
  readonly name: string;
  readonly now: string;
  readonly whens: ReturnType<typeof specProblems>['whens'];
  readonly next: Map<string, StageStatus>;
  readonly ancestors: ReadonlyMap<string, ReadonlySet<string>>;
  readonly gcStrategy: string;
}

function byStage<T extends { readonly metadata: { readonly labels?: Readonly<Record<string, string>> } }>(objs: readonly T[], stage: string): T[] {
  return objs.filter((x) => x.metadata.labels?.['ai.sits2026.dev/pipeline-stage'] === stage);
}

function stepStage(c: PipelineContext, stage: PipelineStage, index: number, prev: StageStatus): StageStep {
  const { o, name, now } = c;
  const p = o.pipeline;
  const pods = byStage(o.pods, stage.name);
  const kind = stage.workload?.kind;
  const workloads = kind === undefined ? [] : byStage(o.workloads.get(kind) ?? [], stage.name);
  const live = [
    ...pods.filter(alive).map((x) => ({ kind: 'Pod', name: x.metadata.name ?? '', uid: x.metadata.uid ?? '' })),
    ...workloads.filter(alive).map((x) => ({ kind: kind ?? '', name: x.metadata.name ?? '', uid: x.metadata.uid ?? '' })),
  ];
  const done = (status: StageStatus, event?: StageStep['event']): StageStep => ({ status, actions: [], live, ...(event === undefined ? {} : { event }) });
  if (isFinished(prev.phase)) return done(prev);

  const gated = dependencyGate(c, stage, prev, live);
  if (gated !== undefined) return gated;

  // Parameters and input artifacts.
  const { inputs, inputActions, inputWaits } = mountInputs(c, stage);
  if (inputWaits.length > 0) return done({ ...prev, phase: 'Pending', message: `waiting for ${inputWaits.join(', ')}` });
  const lookup = lookupFor(c, stage, prev, inputs);
  const sub = substitute(
    { container: stage.container, podTemplate: stage.podTemplate, workload: stage.workload, adapter: stage.adapter, outputs: stage.outputs },
    `spec.stages[${index}]`,
    lookup,
  );
  if (!sub.ok)
    return done(
      { ...prev, phase: 'Failed', message: clip(sub.error), completionTime: now },
      { type: 'Warning', reason: 'StageFailed', message: clip(`stage ${stage.name}: ${sub.error}`) },
    );
  const resolved = { ...stage, ...(sub.value as Pick<PipelineStage, 'container' | 'podTemplate' | 'workload' | 'adapter' | 'outputs'>) };
  const retries = prev.retries ?? 0;

  // The resource profile (ADR 0123): a wrong one fails the stage naming the field.
  const prof = stageProfile(stage, index, o.cluster ?? { pools: [] });
  if (prof !== undefined && !prof.ok) {
    const m = clip(`${prof.error.field}: ${prof.error.message}`);
    return done(
      { ...prev, phase: 'Failed', message: m, completionTime: now },
      { type: 'Warning', reason: 'StageFailed', message: clip(`stage ${stage.name}: ${m}`) },
    );
  }
  const profile = prof?.value;

  // Step caching (ADR 0122): a run reuses a success of an earlier run of its template.
  const { cacheMeta, cached } = stepCache(c, stage, prev, sub.value, profile, retries === 0 && live.length === 0);
  if (cached !== undefined) return done(cached.status, cached.event);
  const startedMs = parseMs(prev.startTime) ?? o.nowMs;
  const retry = effectiveRetry(stage.retryStrategy, stage.maxRetries);

  // Between attempts: the old children go first, then the backoff.
  if (prev.nextRetryTime !== undefined) {
    if (live.length > 0 || pods.length + workloads.length > 0)
      return { status: prev, actions: live.map((c) => ({ op: 'delete', kind: c.kind, name: c.name, uid: c.uid })), live };
    const at = parseMs(prev.nextRetryTime) ?? o.nowMs;
    if (at > o.nowMs) return { status: prev, actions: [], live, requeueAtMs: at };
  }
  const fresh: StageStatus = { ...prev, ...cacheMeta, phase: 'Running', startTime: prev.startTime ?? now };
  delete (fresh as { nextRetryTime?: string }).nextRetryTime;

  // The apiserver refusing a child (422, 403, ...) is the spec's or the cluster's problem: retrying cannot help.
  const failNow = (message: string): StageStep => {
    const m = clip(message);
    return {
      status: { ...fresh, phase: 'Failed', message: m, completionTime: now },
      actions: [],
      live,
      event: { type: 'Warning', reason: 'StageFailed', message: `stage ${stage.name}: ${m}` },
    };
  };
  const failAttempt = (outcome: AttemptOutcome, message: string): StageStep => {
    const d = decideRetry(retry, outcome, retries, startedMs, o.nowMs);
    if (d.retry) {
      const m = clip(`attempt ${retries + 1} failed: ${message}; retry ${retries + 1}/${retry.limit} in ${Math.round(d.delayMs / 1000)}s`);
      return {
        status: { ...fresh, retries: retries + 1, nextRetryTime: iso(o.nowMs + d.delayMs), message: m },
        actions: live.map((c) => ({ op: 'delete', kind: c.kind, name: c.name, uid: c.uid })),
        live,
        requeueAtMs: o.nowMs + d.delayMs,
        event: { type: 'Warning', reason: 'StageRetry', message: `stage ${stage.name}: ${m}` },
      };
    }
    const m = clip(`${message}; ${d.why}${retries > 0 ? ` after ${retries} ${retries === 1 ? 'retry' : 'retries'}` : ''}`);
    return {
      status: { ...fresh, phase: 'Failed', message: m, completionTime: now },
      actions: [],
      live,
      event: { type: 'Warning', reason: 'StageFailed', message: `stage ${stage.name}: ${m}` },
    };
  };

  // The attempt: create what is missing, read what finished.
  const wasRunning = prev.phase === 'Running' && prev.nextRetryTime === undefined;
  let outputs: Record<string, string> | undefined;
  const create: ControllerAction[] = [...inputActions];
  let doneMessage: string | undefined;
  if (resolved.adapter !== undefined) {
    const target = resolved.adapter.inferenceService;
    const r = adapterStep(
      p,
      resolved,
      index,
      (o.services ?? []).find((x) => x.metadata.name === target),
      o.lastErrors,
    );
    if (r.kind === 'wait') return { status: { ...fresh, message: clip(r.message) }, actions: r.actions, live };
    if (r.kind === 'fail') return r.permanent ? failNow(r.message) : failAttempt('failure', r.message);
    outputs = { ...r.parameters };
    doneMessage = r.message;
  } else if (kind === undefined) {
    const want = Array.from({ length: resolved.parallelism }, (_, i) => podName(name, stage.name, i));
    let running = 0;
    let succeeded = 0;
    for (const [i, podN] of want.entries()) {
      const pod = pods.find((x) => x.metadata.name === podN);
      if (pod === undefined || !alive(pod)) {
        const err = createFailure(o.lastErrors, podN);
        if (err !== undefined && permanent(err)) return failNow(`cannot create pod ${podN}: ${err.message}`);
        if (pod === undefined && wasRunning && err === undefined) return failAttempt('error', `pod ${podN} disappeared`);
        if (pod === undefined) {
          const pod = stagePod(p, resolved, i, retries, inputs);
          create.push({ op: 'create', kind: 'Pod', object: profile === undefined ? pod : profiledPod(pod, profile) });
        }
        continue;
      }
      const phase = pod.status?.phase;
      if (phase === 'Failed') {
        const f = podOutcome(pod);
        return failAttempt(f.outcome, f.message);
      }
      if (phase === 'Succeeded') succeeded++;
      if (phase === 'Running') running++;
    }
    if (succeeded === want.length) outputs = podOutputs(pods.find((x) => x.metadata.name === want[0]));
    else
      return {
        status: { ...fresh, readyReplicas: running, message: `${running} of ${want.length} pods running, ${succeeded} succeeded` },
        actions: create,
        live,
      };
  } else {
    const wn = workloadName(name, stage.name);
    const w = workloads.find((x) => x.metadata.name === wn);
    if (w === undefined || !alive(w)) {
      const err = createFailure(o.lastErrors, wn);
      if (err !== undefined && permanent(err)) return failNow(`cannot create ${kind} ${wn}: ${err.message}`);
      if (w === undefined && wasRunning && err === undefined) return failAttempt('error', `${kind} ${wn} disappeared`);
      if (w === undefined) {
        const wspec = profile === undefined ? (resolved.workload?.spec ?? {}) : profiledWorkloadSpec(kind, resolved.workload?.spec ?? {}, profile);
        create.push({ op: 'create', kind, object: stageWorkload(p, resolved, kind, workloadSpecWithInputs(kind, wspec, inputs)) });
      }
      return { status: { ...fresh, message: `creating ${kind} ${wn}` }, actions: create, live };
    }
    const phase = w.status?.phase;
    if (phase === 'Failed') return failAttempt('failure', `${kind} ${wn} failed${workloadMessage(w) === '' ? '' : `: ${workloadMessage(w)}`}`);
    if (!workloadSucceeded(kind, phase)) return { status: { ...fresh, message: `${kind} ${wn} is ${phase ?? 'Pending'}` }, actions: create, live };
    outputs = parseOutputs(w.metadata.annotations?.[ANNOTATION.outputs]);
  }

  // Succeeded: declared parameters, then artifacts.
  return recordOutputs(c, { stage, resolved, outputs, fresh, live, doneMessage, retries }, { failNow, failAttempt });
}

/** The pipeline's phase and message from its stages' statuses (in spec order). */
function pipelinePhase(
  p: Observed['pipeline'],
  all: readonly StageStatus[],
  x: { readonly pastDeadline: boolean; readonly failedStage: string | undefined; readonly stopped: boolean; readonly started: boolean },
): { phase: NonNullable<DataPipelineStatus['phase']>; message: string } {
  const { pastDeadline, failedStage, stopped, started } = x;
  const stages = p.spec.stages;
  const allFinished = all.every((s) => isFinished(s.phase));
  let phase: NonNullable<DataPipelineStatus['phase']>;
  let message: string;
  if (pastDeadline) {
    phase = 'Failed';
    message = `activeDeadlineSeconds ${p.spec.activeDeadlineSeconds ?? 0} exceeded`;
  } else if (failedStage !== undefined && (allFinished || stopped)) {
    phase = 'Failed';
    message = `stage ${failedStage} failed: ${all[stages.findIndex((x) => x.name === failedStage)]?.message ?? ''}`;
  } else if (allFinished) {
    phase = 'Succeeded';
    message = `${all.filter((s) => s.phase === 'Succeeded').length} of ${all.length} stages succeeded`;
  } else if (p.spec.suspend) {
    phase = 'Suspended';
    message = 'suspended';
  } else {
    phase = started ? 'Running' : 'Pending';
    const running = all.filter((s) => s.phase === 'Running').map((s) => s.name);
    message = running.length > 0 ? `running ${running.join(', ')}` : 'waiting';
  }
  return { phase, message };
}

/** Artifact GC on completion: all but the last keepLast snapshots (by stage completion, then list order) are deleted and marked so in `status`. */
function collectArtifacts(o: Observed, status: DataPipelineStatus): ControllerAction[] {
  const p = o.pipeline;
  const all = status.stages ?? [];
  const actions: ControllerAction[] = [];
  const produced = all
    .flatMap((s, i) => (s.outputs?.artifacts ?? []).filter((a) => a.volumeSnapshotName !== undefined).map((a) => ({ s, i, a })))
    .sort((x, y) => (x.s.completionTime ?? '').localeCompare(y.s.completionTime ?? '') || x.i - y.i);
  const keep = p.spec.artifactGC?.keepLast ?? 0;
  const drop = produced.slice(0, Math.max(0, produced.length - keep));
  for (const { a } of drop) {
    const snap = o.snapshots.find((x) => x.metadata.name === a.volumeSnapshotName);
    if (snap !== undefined && alive(snap)) actions.push({ op: 'delete', kind: 'VolumeSnapshot', name: snap.metadata.name ?? '', uid: snap.metadata.uid ?? '' });
  }
  const dropped = new Set(drop.map((d) => d.a.volumeSnapshotName));
  status.stages?.forEach((s, i) => {
    if (s.outputs?.artifacts === undefined) return;
    (status.stages as StageStatus[])[i] = {
      ...s,
      outputs: {
        ...s.outputs,
        artifacts: s.outputs.artifacts.map((a) => (dropped.has(a.volumeSnapshotName) ? { ...a, readyToUse: false, deleted: true } : a)),
      },
    };
  });
  return actions;
}

/** Dependencies and suspension: a stage waits for (or is skipped after) its dependencies, and a suspended pipeline runs none. */
function dependencyGate(c: PipelineContext, stage: PipelineStage, prev: StageStatus, live: StageStep['live']): StageStep | undefined {
  const { next, whens, now } = c;
  const p = c.o.pipeline;
  const stages = p.spec.stages;
  const phaseOf = (n: string): Phase => next.get(n)?.phase ?? 'Pending';
  const waitOrSkip = (status: StageStatus): StageStep => ({ status, actions: [], live });
  // Dependencies.
  const deps = stage.dependsOn ?? [];
  const when = whens.get(stage.name);
  if (when !== undefined) {
    const waiting = deps.filter((d) => !isFinished(phaseOf(d)));
    if (waiting.length > 0) return waitOrSkip({ ...prev, phase: 'Pending', message: `waiting for ${waiting.join(', ')} to finish` });
    if (!evalWhen(when, (d) => phaseOf(d) as 'Succeeded' | 'Failed' | 'Skipped'))
      return waitOrSkip({ ...prev, phase: 'Skipped', message: `when "${stage.when ?? ''}" is false`, completionTime: now });
  } else {
    const bad = deps.find((d) => phaseOf(d) === 'Failed' || phaseOf(d) === 'Skipped');
    if (bad !== undefined)
      return waitOrSkip({
        ...prev,
        phase: 'Skipped',
        message: `not run: dependency ${bad} ${phaseOf(bad) === 'Failed' ? 'failed' : 'was skipped'}`,
        completionTime: now,
      });
    const streaming = (d: string): boolean => stages.find((t) => t.name === d)?.mode === 'streaming';
    const waiting = deps.filter((d) => !(phaseOf(d) === 'Succeeded' || (streaming(d) && phaseOf(d) === 'Running')));
    if (waiting.length > 0) return waitOrSkip({ ...prev, phase: 'Pending', message: `waiting for ${waiting.join(', ')}` });
  }
  if (p.spec.suspend)
    return {
      status: { ...prev, phase: 'Pending', message: 'suspended' },
      actions: live.map((c) => ({ op: 'delete', kind: c.kind, name: c.name, uid: c.uid })),
      live,
    };
  return undefined;
}

/** Input artifacts: each mounted from its producer's claim (read-only) or a claim restored from its snapshot, else what it waits for. */
function mountInputs(c: PipelineContext, stage: PipelineStage): { inputs: MountedInput[]; inputActions: ControllerAction[]; inputWaits: string[] } {
  const { o, name, next } = c;
  const p = o.pipeline;
  const inputs: MountedInput[] = [];
  const inputActions: ControllerAction[] = [];
  const inputWaits: string[] = [];
  for (const a of stage.inputs?.artifacts ?? []) {
    const rec = (next.get(a.from.stage)?.outputs?.artifacts ?? []).find((x) => x.name === a.from.artifact);
    if (rec === undefined || !rec.readyToUse) {
      inputWaits.push(`artifact ${a.from.stage}/${a.from.artifact}`);
      continue;
    }
    if (rec.volumeSnapshotName !== undefined) {
      const claim = restoredClaimName(name, stage.name, a.name);
      inputs.push({ name: a.name, claimName: claim, readOnly: false, ...(a.mountPath === undefined ? {} : { mountPath: a.mountPath }) });
      if (!o.claims.some((c) => c.metadata.name === claim)) {
        const snap = o.snapshots.find((x) => x.metadata.name === rec.volumeSnapshotName);
        const size = a.size ?? snap?.status?.restoreSize;
        if (size === undefined) inputWaits.push(`restore size of VolumeSnapshot ${rec.volumeSnapshotName}`);
        else
          inputActions.push({
            op: 'create',
            kind: 'PersistentVolumeClaim',
            object: restoredClaim(p, stage.name, a.name, rec.volumeSnapshotName, size, a.storageClassName, a.accessMode),
          });
      }
    } else if (rec.claimName !== undefined) {
      inputs.push({
        name: a.name,
        claimName: rec.claimName,
        readOnly: true,
        ...(rec.subPath === undefined ? {} : { subPath: rec.subPath }),
        ...(a.mountPath === undefined ? {} : { mountPath: a.mountPath }),
      });
    }
  }
  return { inputs, inputActions, inputWaits };
}

/** What `{{...}}` in a stage may name: the pipeline, the stage, its retries, its ancestors' outputs and its own inputs. */
function lookupFor(c: PipelineContext, stage: PipelineStage, prev: StageStatus, inputs: readonly MountedInput[]): (expr: string) => string | undefined {
  const { name, next, ancestors } = c;
  const p = c.o.pipeline;
  return (expr: string): string | undefined => {
    if (expr === 'pipeline.name') return name;
    if (expr === 'pipeline.namespace') return p.metadata.namespace ?? 'default';
    if (expr === 'pipeline.uid') return p.metadata.uid;
    if (expr === 'stage.name') return stage.name;
    if (expr === 'retries') return String(prev.retries ?? 0);
    const param = /^(?:steps|stages)\.([a-z0-9-]+)\.outputs\.parameters\.([A-Za-z0-9_-]+)$/.exec(expr);
    if (param !== null)
      return ancestors.get(stage.name)?.has(param[1] ?? '') === true ? next.get(param[1] ?? '')?.outputs?.parameters?.[param[2] ?? ''] : undefined;
    const art = /^(?:steps|stages)\.([a-z0-9-]+)\.outputs\.artifacts\.([a-z0-9-]+)\.(volumeSnapshotName|claimName|subPath)$/.exec(expr);
    if (art !== null) {
      if (ancestors.get(stage.name)?.has(art[1] ?? '') !== true) return undefined;
      const rec = (next.get(art[1] ?? '')?.outputs?.artifacts ?? []).find((x) => x.name === art[2]);
      return rec?.[art[3] as 'volumeSnapshotName' | 'claimName' | 'subPath'];
    }
    const inp = /^inputs\.artifacts\.([a-z0-9-]+)\.(claimName|subPath|mountPath)$/.exec(expr);
    if (inp !== null) return inputs.find((i) => i.name === inp[1])?.[inp[2] as 'claimName' | 'subPath' | 'mountPath'];
    return undefined;
  };
}

/**
 * The stage's step-cache key (ADR 0122) covers the resolved stage, the profile's choice and the inputs' identities
 * (an upstream result is identified by its own key). A stage that has not started may be a cache hit: an earlier
 * run's success, reused.
 */
function stepCache(
  c: PipelineContext,
  stage: PipelineStage,
  prev: StageStatus,
  work: unknown,
  profile: ResolvedProfile | undefined,
  idle: boolean,
): { cacheMeta: Pick<StageStatus, 'cacheKey' | 'reasons'>; cached?: { status: StageStatus; event: NonNullable<StageStep['event']> } } {
  const { o, name, next, now } = c;
  const kind = stage.workload?.kind;
  const stepInputs: StepInput[] = (stage.inputs?.artifacts ?? []).map((a) => {
    const producer = next.get(a.from.stage);
    const rec = (producer?.outputs?.artifacts ?? []).find((x) => x.name === a.from.artifact);
    return {
      name: a.name,
      artifact: {
        kind: 'volume',
        claim: rec?.volumeSnapshotName ?? rec?.claimName ?? a.from.artifact,
        path: rec?.subPath === undefined || rec.subPath === '' ? '/' : rec.subPath,
        contentId: producer?.cacheKey ?? `${name}/${a.from.stage}@${producer?.completionTime ?? ''}`,
      },
    };
  });
  const { reasons: _r, ...choice } = profile ?? { reasons: [] };
  const key = cacheKey({
    spec: { stage: stage.name, kind: kind ?? 'pod', parallelism: stage.parallelism, work, profile: choice },
    inputs: stepInputs,
  });
  const cacheMeta = {
    ...(key.ok ? { cacheKey: key.value } : {}),
    ...(profile === undefined ? {} : { reasons: profile.reasons.slice(0, 16).map((r) => r.slice(0, 1024)) }),
  };
  const fresh0 = prev.phase !== 'Running' && idle;
  // An InferenceService stage's result is a running server, not an output: it is never reused.
  // Nor is an adapter stage's: its result is an adapter on a running server.
  if (fresh0 && key.ok && o.stepCache !== undefined && kind !== 'InferenceService' && stage.adapter === undefined) {
    const hit = cacheLookup(key.value, o.stepCache, new Date(o.nowMs), {
      enabled: stage.cache,
      ...(stage.cacheMaxAgeSeconds === undefined ? {} : { maxAgeSeconds: stage.cacheMaxAgeSeconds }),
    });
    if (hit.hit) {
      const m = clip(`cached from run ${hit.entry.run}: ${hit.reason}`);
      const status: StageStatus = {
        ...prev,
        ...cacheMeta,
        phase: 'Succeeded',
        cachedFrom: hit.entry.run,
        outputs: hit.entry.outputs as StageStatus['outputs'] & object,
        message: m,
        startTime: prev.startTime ?? now,
        completionTime: now,
        readyReplicas: 0,
      };
      return { cacheMeta, cached: { status, event: { type: 'Normal', reason: 'StageCached', message: clip(`stage ${stage.name}: ${m}`) } } };
    }
  }
  return { cacheMeta };
}

/** What the attempt left for its outputs to be recorded. */
interface Attempted {
  readonly stage: PipelineStage;
  readonly resolved: PipelineStage;
  readonly outputs: Record<string, string> | undefined;
  readonly fresh: StageStatus;
  readonly live: StageStep['live'];
  readonly doneMessage: string | undefined;
  readonly retries: number;
}

/**
 * The attempt succeeded: its declared output parameters (a default, else the attempt fails) and artifacts (a path
 * as it is, a VolumeSnapshot created and waited for) are recorded, then the stage succeeds.
 */
function recordOutputs(
  c: PipelineContext,
  x: Attempted,
  fail: { readonly failNow: (message: string) => StageStep; readonly failAttempt: (outcome: AttemptOutcome, message: string) => StageStep },
): StageStep {
  const { o, name, now, gcStrategy } = c;
  const p = o.pipeline;
  const { stage, resolved, outputs, fresh, live, doneMessage, retries } = x;
  const { failNow, failAttempt } = fail;
  const kind = stage.workload?.kind;
  const params: Record<string, string> = { ...outputs };
  for (const d of resolved.outputs?.parameters ?? []) {
    if (params[d.name] !== undefined) continue;
    if (d.default !== undefined) params[d.name] = d.default;
    else
      return failAttempt(
        'failure',
        `output parameter ${d.name} not reported (a JSON object in the termination message or the ${ANNOTATION.outputs} annotation)`,
      );
  }
  const records: NonNullable<NonNullable<StageStatus['outputs']>['artifacts']> = [];
  const waits: string[] = [];
  const artActions: ControllerAction[] = [];
  for (const a of resolved.outputs?.artifacts ?? []) {
    if (a.path !== undefined) {
      records.push({ name: a.name, claimName: a.path.claimName, subPath: a.path.subPath, readyToUse: true });
      continue;
    }
    const vs = a.volumeSnapshot;
    if (vs === undefined) continue;
    const sn = snapshotName(name, stage.name, a.name);
    const snap = o.snapshots.find((x) => x.metadata.name === sn);
    if (snap === undefined) {
      const err = createFailure(o.lastErrors, sn);
      if (err !== undefined && permanent(err)) return failNow(`cannot create VolumeSnapshot ${sn}: ${err.message}`);
      artActions.push({
        op: 'create',
        kind: 'VolumeSnapshot',
        object: artifactSnapshot(p, stage.name, a.name, vs.claimName, vs.volumeSnapshotClassName, gcStrategy !== 'Never'),
      });
    } else if (snap.status?.error?.message !== undefined && snap.status.readyToUse !== true) {
      waits.push(`VolumeSnapshot ${sn}: ${snap.status.error.message}`);
    } else if (snap.status?.readyToUse !== true) waits.push(`VolumeSnapshot ${sn}`);
    records.push({ name: a.name, volumeSnapshotName: sn, readyToUse: snap?.status?.readyToUse === true });
  }
  const out = { parameters: params, ...(records.length === 0 ? {} : { artifacts: records }) };
  if (artActions.length > 0 || waits.length > 0) {
    return {
      status: {
        ...fresh,
        readyReplicas: 0,
        outputs: out,
        message: clip(
          `recording artifacts: waiting for ${[...artActions.map((a) => (a.op === 'create' ? `VolumeSnapshot ${a.object.metadata.name ?? ''}` : '')), ...waits].join(', ')}`,
        ),
      },
      actions: artActions,
      live,
      requeueAtMs: o.nowMs + 5000,
    };
  }
  const message =
    doneMessage ??
    (kind === 'InferenceService'
      ? `InferenceService ${workloadName(name, stage.name)} is Ready and keeps serving`
      : `succeeded${retries > 0 ? ` after ${retries} ${retries === 1 ? 'retry' : 'retries'}` : ''}`);
  return {
    status: { ...fresh, phase: 'Succeeded', readyReplicas: 0, outputs: out, message, completionTime: now },
    actions: [],
    live,
    event: { type: 'Normal', reason: 'StageSucceeded', message: `stage ${stage.name}: ${message}` },
  };
}
