/**
 * `sits demo` / `npm start`: the same workload on the same simulated cluster under two profiles — SITS and
 * a kube-scheduler-like default — in virtual time, and the figures that tell them apart.
 * Gangs are all-or-nothing under both profiles (the default gets coscheduling, or it would deadlock);
 * only SITS places them topology-aware and scores for fragmentation.
 */
import { modelMask, nodeFragment } from '../core/plugins/fgd/fragmentation.ts';
import { type TypicalShape } from '../core/estimate/typical-shapes.ts';
import { shapesOf } from '../core/estimate/expected-workload.ts';
import { nearestRank } from '../core/stats.ts';
import { DEFAULT_TRAINING_MODEL, sharesOf, stepTime } from '../core/estimate/step-time.ts';
import { seededRng } from '../core/ports.ts';
import type { NodeSpec } from '../core/model/node.ts';
import type { PodSpec } from '../core/model/pod.ts';
import { Environment } from '../sim/engine.ts';
import { demoCluster, demoWorkload, type DemoJob } from './demo-cluster.ts';
import { idealStepsIn, trainingJct, type TrainingRun } from './demo-jct.ts';
import { simAppOrThrow } from './sim-app.ts';

export interface DemoProfileResult {
  readonly profile: string;
  /** Time-averaged share of GPU capacity allocated while jobs were arriving. */
  readonly gpuAllocationPct: number;
  /** Time-averaged fragmentation rate (FGD measure): share of idle GPU capacity the expected workload cannot use. */
  readonly fragmentationPct: number;
  readonly multiGpuJobs: { readonly started: number; readonly oneNvlinkDomainPct: number; readonly oneRackPct: number };
  readonly gangWaitSec: { readonly p50: number; readonly p99: number };
  readonly jobsStarted: number;
  readonly jobsNeverStarted: number;
  /**
   * What the training gangs' placements are worth by the step-time model (ADR 0103), each gang taken as the
   * default 1.3B-parameter DDP job: its mean tokens/s per job and the GPU-time-weighted compute share of its
   * steps. Durations in the demo stay the workload's (the table's other figures do not depend on the model), so
   * `jctSec` is post hoc (demo-jct.ts, ADR 0192): each started gang's wait + its trace duration × its step time
   * over its ideal step; `meanSlowdown` is the mean of that step ratio.
   */
  readonly training: {
    readonly tokensPerSec: number;
    readonly gpuUtilizationPct: number;
    readonly jctSec: { readonly mean: number; readonly p99: number };
    readonly meanSlowdown: number;
  };
}

export interface DemoResult {
  readonly seed: number;
  readonly cluster: { readonly nodes: number; readonly gpus: number; readonly racks: number };
  readonly workload: { readonly jobs: number; readonly training: number; readonly inference: number; readonly fractional: number; readonly hours: number };
  readonly results: readonly DemoProfileResult[];
}

export interface DemoOptions {
  readonly seed: number;
  readonly hours?: number;
  readonly load?: number;
  readonly profiles?: readonly string[];
}

type Ev = { kind: 'arrive'; job: DemoJob } | { kind: 'finish'; job: DemoJob } | { kind: 'pass' };

const round2 = (x: number): number => Math.round(x * 100) / 100;

export function runDemo(opts: DemoOptions): DemoResult {
  const hours = opts.hours ?? 8;
  const jobs = demoWorkload(seededRng(opts.seed), { hours, load: opts.load ?? 1 });
  const pods: PodSpec[] = jobs.flatMap((j) => (j.unit.kind === 'pod' ? [j.unit.pod] : j.unit.gang.members));
  const typical = shapesOf(pods);
  const nodes = demoCluster();
  const ideal = idealSteps(jobs, nodes);
  const results = (opts.profiles ?? ['sits', 'kube-default']).map((p) => runProfile(p, jobs, typical, ideal, opts.seed, hours));
  return {
    seed: opts.seed,
    cluster: { nodes: nodes.length, gpus: nodes.reduce((s, n) => s + n.gpus.length, 0), racks: new Set(nodes.map((n) => n.location.rack)).size },
    workload: {
      jobs: jobs.length,
      training: jobs.filter((j) => j.kind === 'training').length,
      inference: jobs.filter((j) => j.kind === 'inference').length,
      fractional: jobs.filter((j) => j.kind === 'fractional').length,
      hours,
    },
    results,
  };
}

/** Each training job's step on its ideal placement (the same for every profile). */
function idealSteps(jobs: readonly DemoJob[], nodes: readonly NodeSpec[]): ReadonlyMap<string, number> {
  const idealOf = idealStepsIn(nodes, DEFAULT_TRAINING_MODEL);
  const out = new Map<string, number>();
  for (const j of jobs) if (j.unit.kind === 'gang') out.set(j.id, idealOf(j.gpus, j.unit.gang.members[0]?.gpuModels ?? []));
  return out;
}

function runProfile(
  name: string,
  jobs: readonly DemoJob[],
  typical: readonly TypicalShape[],
  idealStep: ReadonlyMap<string, number>,
  seed: number,
  hours: number,
): DemoProfileResult {
  const { state, scheduler, profile } = simAppOrThrow({ nodes: demoCluster(), profile: name, typicalShapes: typical, rng: seededRng(seed + 1) });
  const masks = state.nodes.map((n) => modelMask(typical, n.spec.gpus[0]?.model ?? ''));
  const totalMilli = state.nodes.reduce((s, n) => s + n.usableGpuCount() * 1000, 0);
  const horizonMs = hours * 3_600_000;
  const endMs = horizonMs * 1.25;

  const pending: DemoJob[] = [];
  const started = new Map<string, { startMs: number; nodes: Set<string>; oneNvlink: boolean; oneRack: boolean }>();
  const trained: { gpuMs: number; tokensPerSec: number; util: number; run: TrainingRun }[] = [];
  let passQueued = false;
  let lastMs = 0;
  let allocIntegral = 0;
  let fragIntegral = 0;
  let allocNow = 0;
  let fragNow = 0;

  const sample = (): void => {
    let used = 0;
    let frag = 0;
    let idle = 0;
    for (const n of state.nodes) {
      const free = n.gpuFreeMilli();
      used += n.usableGpuCount() * 1000 - free;
      idle += free;
      frag += nodeFragment(typical, masks[n.idx] as Uint8Array, n.cpuFreeMilli, n.gpuFree);
    }
    allocNow = used / totalMilli;
    fragNow = idle === 0 ? 0 : frag / idle;
  };
  const advance = (to: number): void => {
    const t = Math.min(to, horizonMs);
    if (t > lastMs) {
      allocIntegral += allocNow * (t - lastMs);
      fragIntegral += fragNow * (t - lastMs);
      lastMs = t;
    }
  };

  const env = new Environment<Ev>((e, en) => {
    advance(en.nowMs);
    const ev = e.payload;
    if (ev.kind === 'arrive') pending.push(ev.job);
    else if (ev.kind === 'finish') {
      if (ev.job.unit.kind === 'pod') state.release(ev.job.unit.pod.id);
      else for (const m of ev.job.unit.gang.members) state.release(m.id);
    } else {
      passQueued = false;
      schedulePass(en);
      sample();
      return;
    }
    if (!passQueued) {
      passQueued = true;
      en.schedule(0, 9, { kind: 'pass' });
    }
  });

  const schedulePass = (en: Environment<Ev>): void => {
    for (let i = 0; i < pending.length;) {
      const job = pending[i] as DemoJob;
      let placedNodes: { node: string; gpus: readonly number[] }[] | undefined;
      if (job.unit.kind === 'pod') {
        const r = scheduler.schedulePod(job.unit.pod);
        if (r.ok) placedNodes = [r.placement];
      } else {
        const r = scheduler.scheduleGang(job.unit.gang);
        if (r.ok) placedNodes = [...r.placements];
      }
      if (placedNodes === undefined) {
        i++;
        continue;
      }
      pending.splice(i, 1);
      const nodeSet = new Set(placedNodes.map((p) => p.node));
      const racks = new Set([...nodeSet].map((n) => state.node(n)?.spec.location.rack));
      let oneNvlink = nodeSet.size === 1;
      if (oneNvlink) {
        const topo = state.node(placedNodes[0]?.node ?? '')?.spec.topology;
        const islands = new Set(placedNodes.flatMap((p) => p.gpus.map((g) => topo?.islandOf[g])));
        oneNvlink = islands.size === 1;
      }
      started.set(job.id, { startMs: en.nowMs, nodes: nodeSet, oneNvlink, oneRack: racks.size === 1 });
      if (job.kind === 'training') {
        const st = stepTime(
          DEFAULT_TRAINING_MODEL,
          sharesOf(placedNodes, (n) => state.node(n)?.spec),
        );
        const idealStepSec = idealStep.get(job.id);
        if (idealStepSec === undefined) throw new Error(`demo: no ideal step for ${job.id}`);
        trained.push({
          gpuMs: job.gpus * job.durationMs,
          tokensPerSec: st.tokensPerSec,
          util: st.gpuUtilization,
          run: { waitMs: en.nowMs - job.arrivalMs, traceMs: job.durationMs, stepSec: st.stepSec, idealStepSec },
        });
      }
      en.schedule(job.durationMs, 0, { kind: 'finish', job });
    }
  };

  for (const j of jobs) env.at(j.arrivalMs, 1, { kind: 'arrive', job: j });
  env.run(endMs);
  advance(horizonMs);

  const multi = jobs.filter((j) => j.gpus > 1 && started.has(j.id));
  const waits = jobs
    .filter((j) => j.kind === 'training' && started.has(j.id))
    .map((j) => ((started.get(j.id)?.startMs ?? 0) - j.arrivalMs) / 1000)
    .sort((a, b) => a - b);
  const pct = (n: number, d: number): number => (d === 0 ? 0 : round2((100 * n) / d));
  return {
    profile: profile.name,
    gpuAllocationPct: round2((100 * allocIntegral) / horizonMs),
    fragmentationPct: round2((100 * fragIntegral) / horizonMs),
    multiGpuJobs: {
      started: multi.length,
      oneNvlinkDomainPct: pct(multi.filter((j) => started.get(j.id)?.oneNvlink === true).length, multi.length),
      oneRackPct: pct(multi.filter((j) => started.get(j.id)?.oneRack === true).length, multi.length),
    },
    gangWaitSec: { p50: Math.round(nearestRank(waits, 50) ?? 0), p99: Math.round(nearestRank(waits, 99) ?? 0) },
    jobsStarted: started.size,
    jobsNeverStarted: jobs.length - started.size,
    training: {
      tokensPerSec: Math.round(trained.reduce((a, t) => a + t.tokensPerSec, 0) / Math.max(1, trained.length)),
      gpuUtilizationPct: round2(
        (100 * trained.reduce((a, t) => a + t.gpuMs * t.util, 0)) /
          Math.max(
            1,
            trained.reduce((a, t) => a + t.gpuMs, 0),
          ),
      ),
      jctSec: trainingJct(trained.map((t) => t.run)),
      meanSlowdown: round2(trained.reduce((a, t) => a + t.run.stepSec / t.run.idealStepSec, 0) / Math.max(1, trained.length)),
    },
  };
}
