/**
 * The multi-tenant experiment (issue 6 §6): the same Philly window replayed under SITS (weighted fair share,
 * quotas with borrowing, reservations, gang-aware preemption) and under one FIFO queue, with the same core
 * scheduler for placement. Virtual time; deterministic for the same input.
 */
import { runCycle, type CycleOptions } from '../../core/actions/queue-cycle.ts';
import { estimateStarts } from '../../core/actions/eta.ts';
import { expectedFromCurve, survival, type SurvivalCurve } from '../../core/estimate/runtime.ts';
import { jobResources, type QueuedJob, type RunningJob } from '../../core/actions/jobs.ts';
import { Scheduler } from '../../core/framework/scheduler.ts';
import { formatProfileError, resolveProfile } from '../../core/framework/registry.ts';
import { makePod, type PodSpec } from '../../core/model/pod.ts';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import type { NodeSpec } from '../../core/model/node.ts';
import { deservedGpu } from '../../core/queue/fair-share.ts';
import { makeQueue, type QueueSpec } from '../../core/queue/model.ts';
import { seededRng } from '../../core/ports.ts';
import { ClusterState } from '../../core/snapshot/cluster-state.ts';
import { Environment } from '../engine.ts';
import { percentile } from '../../core/estimate/stats.ts';
import { TIERS, type TenantJob, type Tier } from './philly-window.ts';

export const TIER_WEIGHT: Readonly<Record<Tier, number>> = { gold: 4, silver: 2, bronze: 1 };

export interface TenantSimOptions {
  readonly mode: 'sits' | 'fifo';
  readonly nodes: number;
  readonly shape: string;
  /** The busy window (utilisation is measured over it). */
  readonly windowMs: number;
  readonly checkpointEveryMs: number;
  /** Jobs (evenly spaced by submission) whose start is estimated when they arrive; SITS only. */
  readonly etaSamples: number;
  readonly seed: number;
  readonly onProgress?: (doneJobs: number, totalJobs: number) => void;
}

export interface TierMetrics {
  readonly sharePct: number;
  readonly entitledPct: number;
  readonly queueDelaySec: { readonly p50: number; readonly p99: number };
  readonly jobs: number;
  readonly neverStarted: number;
}

export interface TenantSimResult {
  readonly tiers: Record<Tier, TierMetrics>;
  readonly jain: number;
  readonly utilizationPct: number;
  readonly preemptions: number;
  readonly etaErrorPct?: { readonly p50: number; readonly p90: number; readonly samples: number };
  readonly contendedHours: number;
}

type Ev = { kind: 'arrive'; job: TenantJob } | { kind: 'finish'; id: string; version: number } | { kind: 'cycle' };

interface Live {
  readonly job: TenantJob;
  remainingMs: number;
  version: number;
  firstStartMs?: number;
}

const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

export function podsFor(job: TenantJob, queue: string): PodSpec[] {
  const sizes: number[] = [];
  for (let left = job.gpus; left > 0; left -= 8) sizes.push(Math.min(8, left));
  return sizes.map((g, k) => makePod(`${job.id}-${k}`, { gpuCount: g, cpuMilli: 8000 * g, memoryMiB: 65_536 * g }, { gang: job.id, queue }));
}

export function runTenantSim(jobs: readonly TenantJob[], opts: TenantSimOptions): TenantSimResult {
  const shape = NODE_SHAPES[opts.shape];
  if (shape === undefined) throw new Error(`unknown shape ${opts.shape}`);
  const specs: NodeSpec[] = Array.from({ length: opts.nodes }, (_, i) => ({
    name: `node-${String(i).padStart(3, '0')}`,
    cpuMilli: shape.cpuMilli,
    memoryMiB: shape.memoryMiB,
    maxPods: shape.maxPods,
    gpus: shape.gpus,
    topology: shape.topology,
    location: { zone: 'z', block: 'b', rack: `rack-${Math.floor(i / 8)}` },
    labels: {},
    taints: [],
    unschedulable: false,
  }));
  const profile = resolveProfile('sits', { typicalShapes: [] });
  if (!profile.ok) throw new Error(formatProfileError(profile.error));
  const state = new ClusterState(specs);
  const scheduler = new Scheduler(profile.value, state, seededRng(opts.seed));
  const capacityMilli = specs.reduce((s, n) => s + n.gpus.length * 1000, 0);
  const totalW = TIERS.reduce((s, t) => s + TIER_WEIGHT[t], 0);
  // Nominal quotas split the cluster by weight; the rounding remainder goes to the first tier so that the
  // quotas add up to exactly the capacity (a lost milli-GPU would strand a whole GPU).
  const nominals = TIERS.map((t) => Math.floor((capacityMilli * TIER_WEIGHT[t]) / totalW));
  nominals[0] = (nominals[0] as number) + capacityMilli - nominals.reduce((a, b) => a + b, 0);
  const queues = new Map<string, QueueSpec>(
    opts.mode === 'fifo'
      ? [['fifo', makeQueue('fifo')]]
      : TIERS.map((t, i) => [t, makeQueue(t, { weight: TIER_WEIGHT[t], cohort: 'cluster', nominal: { gpuMilli: nominals[i] as number, cpuMilli: Infinity, memoryMiB: Infinity } })]),
  );
  const cycleOptions: Partial<CycleOptions> = opts.mode === 'fifo' ? { fairShare: false, backfill: false, preemption: false, explain: false } : { minRuntimeMs: 10 * 60_000, criticalGraceMs: 5 * 60_000, explain: false };
  const queueOf = (t: Tier): string => (opts.mode === 'fifo' ? 'fifo' : t);

  const live = new Map<string, Live>();
  const pending = new Map<string, QueuedJob>();
  const running = new Map<string, RunningJob>();
  const tierOf = new Map(jobs.map((j) => [j.id, j.tier]));
  // Learned runtime estimates (no user estimates in the trace): Kaplan–Meier over finished jobs of the same
  // tier and size class, with running jobs as censored observations, conditioned on the time already run.
  const finished = new Map<string, number[]>();
  const sizeClass = (gpus: number): string => (gpus === 1 ? '1' : gpus <= 8 ? '2-8' : '9+');
  const remember = (t: Tier, gpus: number, d: number): void => {
    for (const k of [`${t}|${sizeClass(gpus)}`, t]) {
      const l = finished.get(k) ?? [];
      l.push(d);
      finished.set(k, l);
    }
  };
  let censored = new Map<string, number[]>();
  let curves = new Map<string, SurvivalCurve>();
  const estimateTotal = (t: Tier, gpus: number, elapsedMs: number): number => {
    const own = finished.get(`${t}|${sizeClass(gpus)}`) ?? [];
    const key = own.length >= 5 ? `${t}|${sizeClass(gpus)}` : t;
    let curve = curves.get(key);
    if (curve === undefined) {
      curve = survival([...(finished.get(key) ?? []).map((d) => ({ durationMs: d, finished: true })), ...(censored.get(key) ?? []).map((d) => ({ durationMs: d, finished: false }))]);
      curves.set(key, curve);
    }
    return expectedFromCurve(curve, elapsedMs) ?? Math.max(3_600_000, 2 * elapsedMs);
  };
  const estimate = (t: Tier, gpus = 1): number => estimateTotal(t, gpus, 0);
  const refreshEstimates = (now: number): void => {
    censored = new Map();
    curves = new Map();
    for (const [id, r] of running) {
      const l = live.get(id) as Live;
      for (const k of [`${l.job.tier}|${sizeClass(l.job.gpus)}`, l.job.tier]) censored.set(k, [...(censored.get(k) ?? []), now - r.startMs]);
    }
    for (const [id, r] of running) {
      // Only what the scheduler could know: the job's size, tier and how long it has run — never its true duration.
      const l = live.get(id) as Live;
      running.set(id, { ...r, estEndMs: r.startMs + Math.max(now - r.startMs + 1000, estimateTotal(l.job.tier, l.job.gpus, now - r.startMs)) });
    }
  };
  const sampleEvery = opts.etaSamples > 0 ? Math.max(1, Math.floor(jobs.length / opts.etaSamples)) : Infinity;
  const etaOf = new Map<string, number>();
  let preemptions = 0;
  let done = 0;

  // Integrals over intervals where ≥ 2 tiers had pending demand.
  const allocTime: Record<Tier, number> = { gold: 0, silver: 0, bronze: 0 };
  const entitledTime: Record<Tier, number> = { gold: 0, silver: 0, bronze: 0 };
  let contendedMs = 0;
  let usedInWindow = 0;
  let lastMs = 0;
  const allocBy = (): Record<Tier, number> => {
    const a: Record<Tier, number> = { gold: 0, silver: 0, bronze: 0 };
    for (const r of running.values()) a[tierOf.get(r.id) as Tier] += r.resources.gpuMilli;
    return a;
  };
  const integrate = (to: number): void => {
    const dt = to - lastMs;
    if (dt <= 0) return;
    const alloc = allocBy();
    const total = alloc.gold + alloc.silver + alloc.bronze;
    const wEnd = Math.min(to, opts.windowMs);
    if (wEnd > lastMs) usedInWindow += total * (wEnd - lastMs);
    const pend: Record<Tier, number> = { gold: 0, silver: 0, bronze: 0 };
    for (const p of pending.values()) pend[tierOf.get(p.id) as Tier] += jobResources(p).gpuMilli;
    const contending = TIERS.filter((t) => pend[t] > 0);
    if (contending.length >= 2 && total > 0) {
      contendedMs += dt;
      const deserved = deservedGpu(
        TIERS.map((t) => ({ queue: makeQueue(t, { weight: TIER_WEIGHT[t] }), demandGpuMilli: alloc[t] + pend[t] })),
        capacityMilli,
      );
      const dsum = TIERS.reduce((s, t) => s + (deserved.get(t) ?? 0), 0);
      for (const t of TIERS) {
        allocTime[t] += alloc[t] * dt;
        entitledTime[t] += (dsum === 0 ? 0 : ((deserved.get(t) ?? 0) / dsum) * total) * dt;
      }
    }
    lastMs = to;
  };

  let cycleQueued = false;
  const env = new Environment<Ev>((e, en) => {
    integrate(en.nowMs);
    const ev = e.payload;
    if (ev.kind === 'arrive') {
      const l: Live = { job: ev.job, remainingMs: ev.job.durationMs, version: 0 };
      live.set(ev.job.id, l);
      pending.set(ev.job.id, toQueued(l, en.nowMs));
      if ((jobs.indexOf(ev.job) + 1) % sampleEvery === 0 && opts.mode === 'sits') {
        refreshEstimates(en.nowMs);
        const eta = estimateStarts({ nowMs: en.nowMs, state, profile: profile.value, queues, pending: [...pending.values()], running, options: cycleOptions, untilStarted: ev.job.id, horizonMs: 14 * 86_400_000 });
        const at = eta.get(ev.job.id);
        if (at !== undefined) etaOf.set(ev.job.id, at);
      }
    } else if (ev.kind === 'finish') {
      const l = live.get(ev.id);
      const r = running.get(ev.id);
      if (l === undefined || r === undefined || l.version !== ev.version) return;
      for (const pod of r.podIds) state.release(pod);
      running.delete(ev.id);
      remember(l.job.tier, l.job.gpus, l.job.durationMs);
      done++;
      opts.onProgress?.(done, jobs.length);
    } else {
      cycleQueued = false;
      refreshEstimates(en.nowMs);
      const res = runCycle({ nowMs: en.nowMs, scheduler, queues, pending: [...pending.values()], running, options: cycleOptions });
      for (const p of res.preempted) {
        const l = live.get(p.victim.id) as Live;
        running.delete(p.victim.id);
        preemptions++;
        // Work since the last checkpoint is lost; the job goes back to its queue with its original submit time.
        const ranMs = en.nowMs - p.victim.startMs;
        const kept = Math.floor(ranMs / opts.checkpointEveryMs) * opts.checkpointEveryMs;
        l.remainingMs = Math.max(1000, l.remainingMs - kept);
        l.version++;
        pending.set(l.job.id, toQueued(l, en.nowMs));
      }
      for (const d of res.deferred) en.at(d.atMs, 8, { kind: 'cycle' });
      for (const s of res.started) {
        const l = live.get(s.job.id) as Live;
        pending.delete(s.job.id);
        l.firstStartMs ??= en.nowMs;
        const model = state.node(s.placements[0]?.node ?? '')?.spec.gpus[0]?.model;
        running.set(s.job.id, {
          id: s.job.id,
          queue: s.job.queue,
          priority: 0,
          startMs: en.nowMs,
          estEndMs: en.nowMs + s.job.estRuntimeMs,
          podIds: s.placements.map((p) => p.podId),
          resources: jobResources(s.job),
          ...(model === undefined ? {} : { gpuModel: model }),
          preemptible: true,
          lastCheckpointMs: en.nowMs,
        });
        en.schedule(l.remainingMs, 0, { kind: 'finish', id: s.job.id, version: l.version });
      }
      // Like the live scheduler's periodic pass: waiting work is looked at again a minute later, so that
      // cooldowns and fair-share reclaim take effect between arrivals and completions.
      if (pending.size > 0 && !cycleQueued) {
        cycleQueued = true;
        en.schedule(60_000, 9, { kind: 'cycle' });
      }
      // Checkpoint windows: a running job spends the first minute of every checkpoint period checkpointing.
      for (const [id, r] of running) {
        const since = en.nowMs - r.startMs;
        const phase = since % opts.checkpointEveryMs;
        const lastCkpt = r.startMs + since - phase;
        running.set(id, { ...r, lastCheckpointMs: lastCkpt, ...(phase < 60_000 && since >= opts.checkpointEveryMs ? { criticalUntilMs: lastCkpt + 60_000 } : {}) });
      }
      return;
    }
    if (!cycleQueued) {
      cycleQueued = true;
      en.schedule(0, 9, { kind: 'cycle' });
    }
  });

  function toQueued(l: Live, nowMs: number): QueuedJob {
    const q = queueOf(l.job.tier);
    const members = podsFor(l.job, q);
    void nowMs;
    return { id: l.job.id, queue: q, priority: 0, arrivalMs: l.job.submitMs, gang: { name: l.job.id, minMember: members.length, members, topology: {}, priority: 0, queue: q }, estRuntimeMs: estimate(l.job.tier, l.job.gpus) };
  }

  for (const j of jobs) env.at(j.submitMs, 1, { kind: 'arrive', job: j });
  const endMs = opts.windowMs * 8;
  env.run(endMs);
  integrate(Math.min(env.nowMs, endMs));

  const tiers = {} as Record<Tier, TierMetrics>;
  const allocSum = TIERS.reduce((s, t) => s + allocTime[t], 0);
  const entSum = TIERS.reduce((s, t) => s + entitledTime[t], 0);
  const ratios: number[] = [];
  for (const t of TIERS) {
    const mine = jobs.filter((j) => j.tier === t);
    const delays = mine
      .map((j) => live.get(j.id)?.firstStartMs)
      .map((s, i) => (s === undefined ? undefined : (s - (mine[i] as TenantJob).submitMs) / 1000))
      .filter((x): x is number => x !== undefined)
      .sort((a, b) => a - b);
    const share = allocSum === 0 ? 0 : (100 * allocTime[t]) / allocSum;
    const entitled = entSum === 0 ? 0 : (100 * entitledTime[t]) / entSum;
    if (entitled > 0) ratios.push(share / entitled);
    tiers[t] = { sharePct: round(share), entitledPct: round(entitled), queueDelaySec: { p50: Math.round(percentile(delays, 50)), p99: Math.round(percentile(delays, 99)) }, jobs: mine.length, neverStarted: mine.length - delays.length };
  }
  const jain = ratios.length === 0 ? 1 : ratios.reduce((s, x) => s + x, 0) ** 2 / (ratios.length * ratios.reduce((s, x) => s + x * x, 0));
  const errors: number[] = [];
  for (const [id, eta] of etaOf) {
    const l = live.get(id);
    if (l?.firstStartMs === undefined) continue;
    const wait = Math.max(60_000, l.firstStartMs - l.job.submitMs);
    errors.push((100 * Math.abs(eta - l.firstStartMs)) / wait);
  }
  errors.sort((a, b) => a - b);
  return {
    tiers,
    jain: round(jain, 4),
    utilizationPct: round((100 * usedInWindow) / (capacityMilli * opts.windowMs)),
    preemptions,
    ...(opts.mode === 'sits' ? { etaErrorPct: { p50: round(percentile(errors, 50)), p90: round(percentile(errors, 90)), samples: errors.length } } : {}),
    contendedHours: round(contendedMs / 3_600_000),
  };
}
