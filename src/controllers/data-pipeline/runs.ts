/**
 * Scheduled pipelines and re-runs (issue 17, Deliver 5; ADR 0121). A DataPipeline with spec.schedule is a template:
 * it runs no stage itself; each run is a child DataPipeline with the template's spec minus the schedule, named
 * scheduledRunName(template, time) for a cron time or `<template>-r<hash of the token>` for a manual re-run (the
 * ai.sits2026.dev/rerun annotation), owned by the template and labelled with its name. schedule.ts decides (CronJob
 * semantics, ADR 0124); history beyond the limits is deleted. The template's status keeps the runs and a bounded
 * step-cache history collected from its runs' stage statuses, which each new run gets in an annotation (ADR 0122).
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type { ControllerAction } from '../../api/controller.ts';
import { STEP_CACHE_MAX, type DataPipelineStatus } from '../../api/schema/data-pipeline.ts';
import { API_GROUP_VERSION, KIND, LABEL } from '../../api/wire.ts';
import { ownerReference, pipelineName, pipelineNamespace } from './children.ts';
import type { CacheEntry, DataPipelineObject } from './model.ts';
import type { ReconcileResult } from './reconcile.ts';
import { nextRuns, scheduledRunName, type RunRef } from './schedule.ts';

export const RERUN_ANNOTATION = 'ai.sits2026.dev/rerun';
export const STEP_CACHE_ANNOTATION = 'ai.sits2026.dev/step-cache';

const iso = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

type Entry = NonNullable<DataPipelineStatus['stepCache']>[number];

/** The step-cache history a run was created with; a malformed annotation is no history (never a crash). */
export function runStepCache(p: DataPipelineObject): CacheEntry[] | undefined {
  const text = p.metadata.annotations?.[STEP_CACHE_ANNOTATION];
  if (text === undefined) return undefined;
  try {
    const xs = JSON.parse(text) as Entry[];
    if (!Array.isArray(xs)) return [];
    return xs.map((e) => ({ key: e.key, run: e.run, step: e.stage, phase: 'Succeeded' as const, finishedAt: new Date(e.finishedAt), outputs: e.outputs }));
  } catch {
    return [];
  }
}

function runRef(r: DataPipelineObject): RunRef {
  const ph = r.status?.phase;
  const phase: RunRef['phase'] = ph === 'Succeeded' || ph === 'Failed' || ph === 'Running' ? ph : 'Pending';
  const st = r.status?.startTime ?? r.metadata.creationTimestamp;
  return { name: r.metadata.name ?? '', phase, ...(st === undefined ? {} : { startTime: new Date(st) }) };
}

export const rerunName = (template: string, token: string): string => `${template}-r${bytesToHex(sha256(utf8ToBytes(token))).slice(0, 8)}`;

/** Annotations are at most 256 KiB together: the history handed to a run is cut, oldest entries first, to this. */
const STEP_CACHE_ANNOTATION_MAX = 128 * 1024;

function runObject(t: DataPipelineObject, name: string, entries: readonly Entry[], rerun?: string): DataPipelineObject {
  const { schedule: _s, ...spec } = t.spec;
  let cache = entries;
  while (cache.length > 0 && JSON.stringify(cache).length > STEP_CACHE_ANNOTATION_MAX) cache = cache.slice(0, -1);
  return {
    apiVersion: API_GROUP_VERSION,
    kind: KIND.dataPipeline,
    metadata: {
      name,
      namespace: pipelineNamespace(t),
      labels: { [LABEL.dataPipeline]: pipelineName(t) },
      annotations: { [STEP_CACHE_ANNOTATION]: JSON.stringify(cache), ...(rerun === undefined ? {} : { [RERUN_ANNOTATION]: rerun }) },
      ownerReferences: [ownerReference(t)],
    },
    spec,
  };
}

/**
 * The template's step: runs to create and delete, its status. `runs` are the DataPipelines labelled with its name.
 * Step-cache entries with artifacts go with their run (its snapshots and claims are owned by it); parameter-only
 * entries outlive it. The newest STEP_CACHE_MAX distinct keys are kept.
 */
export function reconcileTemplate(t: DataPipelineObject, runs: readonly DataPipelineObject[], nowMs: number): ReconcileResult {
  const sched = t.spec.schedule;
  if (sched === undefined) throw new Error('not a template');
  const prev = t.status ?? {};
  const now = new Date(nowMs);
  const live = runs.filter((r) => r.metadata.deletionTimestamp === undefined);
  const refs = live.map(runRef);
  const last = prev.lastScheduleTime ?? t.metadata.creationTimestamp ?? iso(now);
  const d = nextRuns(
    {
      schedule: sched.cron,
      ...(sched.timeZone === undefined ? {} : { timeZone: sched.timeZone }),
      concurrencyPolicy: sched.concurrencyPolicy,
      ...(sched.startingDeadlineSeconds === undefined ? {} : { startingDeadlineSeconds: sched.startingDeadlineSeconds }),
      suspend: sched.suspend,
      successfulRunsHistoryLimit: sched.successfulRunsHistoryLimit,
      failedRunsHistoryLimit: sched.failedRunsHistoryLimit,
    },
    new Date(last),
    now,
    refs,
  );
  if (!d.ok) {
    const message = `${d.error.field.replace(/^spec\.schedule$/, 'spec.schedule.cron')}: ${d.error.message}`;
    return {
      status: { ...prev, phase: 'Failed', message, observedGeneration: t.metadata.generation ?? 0 },
      actions: prev.message === message ? [] : [{ op: 'event', type: 'Warning', reason: 'InvalidSchedule', message }],
    };
  }
  const dec = d.value;

  // Step-cache history from the runs' stage statuses (the first success of a key, not the copies cached from it).
  const names = new Set(live.map((r) => r.metadata.name));
  const byKey = new Map<string, Entry>();
  for (const e of prev.stepCache ?? []) {
    const withArtifacts = ((e.outputs as { artifacts?: unknown[] }).artifacts ?? []).length > 0;
    if (!withArtifacts || names.has(e.run)) byKey.set(e.key, e);
  }
  for (const r of live) {
    for (const s of r.status?.stages ?? []) {
      if (s.phase !== 'Succeeded' || s.cacheKey === undefined || s.cachedFrom !== undefined || s.completionTime === undefined || byKey.has(s.cacheKey))
        continue;
      byKey.set(s.cacheKey, {
        key: s.cacheKey,
        run: r.metadata.name ?? '',
        stage: s.name,
        finishedAt: s.completionTime,
        outputs: (s.outputs ?? {}) as Record<string, unknown>,
      });
    }
  }
  const stepCache = [...byKey.values()].sort((a, b) => b.finishedAt.localeCompare(a.finishedAt)).slice(0, STEP_CACHE_MAX);

  const actions: ControllerAction[] = [];
  const deleted = new Set(dec.deleteRuns);
  for (const n of dec.deleteRuns) {
    const r = live.find((x) => x.metadata.name === n);
    if (r !== undefined) actions.push({ op: 'delete', kind: KIND.dataPipeline, name: n, uid: r.metadata.uid ?? '' });
  }
  if (dec.replaced.length > 0) actions.push({ op: 'event', type: 'Normal', reason: 'RunsReplaced', message: dec.reason });
  for (const w of dec.warnings) actions.push({ op: 'event', type: 'Warning', reason: 'MissedSchedules', message: w });
  let lastScheduleTime = prev.lastScheduleTime;
  const created: string[] = [];
  if (dec.start !== undefined) {
    const n = scheduledRunName(pipelineName(t), dec.start);
    if (!names.has(n)) {
      actions.push({ op: 'create', kind: KIND.dataPipeline, object: runObject(t, n, stepCache) as never });
      created.push(n);
    }
    lastScheduleTime = iso(dec.start);
  }
  const token = t.metadata.annotations?.[RERUN_ANNOTATION];
  let lastRerunToken = prev.lastRerunToken;
  if (token !== undefined && token !== '' && token !== prev.lastRerunToken) {
    const n = rerunName(pipelineName(t), token);
    if (!names.has(n)) {
      actions.push({ op: 'create', kind: KIND.dataPipeline, object: runObject(t, n, stepCache, token) as never });
      created.push(n);
    }
    lastRerunToken = token;
  }
  for (const n of created) actions.push({ op: 'event', type: 'Normal', reason: 'RunCreated', message: `created run ${n}` });

  const kept = refs
    .filter((r) => !deleted.has(r.name))
    .sort((a, b) => (a.startTime?.getTime() ?? 0) - (b.startTime?.getTime() ?? 0) || a.name.localeCompare(b.name));
  const active = kept.filter((r) => r.phase === 'Pending' || r.phase === 'Running').length + created.length;
  const status: DataPipelineStatus = {
    phase: sched.suspend ? 'Suspended' : active > 0 ? 'Running' : 'Pending',
    message: `${created.length > 0 ? `created ${created.join(', ')}; ` : ''}${dec.reason}`.slice(0, 4096),
    observedGeneration: t.metadata.generation ?? 0,
    ...(lastScheduleTime === undefined ? {} : { lastScheduleTime }),
    ...(dec.next === undefined ? {} : { nextScheduleTime: iso(dec.next) }),
    ...(lastRerunToken === undefined ? {} : { lastRerunToken }),
    runs: kept.map((r) => ({ name: r.name, phase: r.phase, ...(r.startTime === undefined ? {} : { startTime: iso(r.startTime) }) })),
    stepCache,
  };
  return { status, actions, ...(dec.next === undefined ? {} : { requeueAfterMs: Math.max(0, dec.next.getTime() - nowMs) }) };
}
