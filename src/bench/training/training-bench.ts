/**
 * `sits bench training`: the seed's headline table (000 §1: 14,200 → 21,750 tokens/s, 68 → 92 % GPU
 * utilisation) re-measured with the step-time model (ADR 0103, 0104). One seeded stream of data-parallel
 * training jobs (2–32 GPUs, BERT-large to a 2.7B GPT, arriving over hours) runs on a cluster of NVSwitch,
 * NVLink-mesh and PCIe-only A100-class nodes in four racks, under kube-default, round-robin and sits. Every
 * job has a fixed amount of work (steps); how long it runs follows from the step time on the GPUs it got, so
 * a worse placement also holds its GPUs longer and makes the next jobs wait.
 *
 * The cluster, the network (the seed's own cross-node figure, §2.4) and the job mix were fixed before the
 * first run and are not tuned on the results (ADR 0104).
 */
import { formatProfileError, resolveProfile } from '../../core/plugins/registry.ts';
import { shapesOf } from '../../core/estimate/expected-workload.ts';
import { ddpJob, idealShares, sharesOf, stepTime, type NetworkModel, type TrainingModel } from '../../core/estimate/step-time.ts';
import { makeGpus } from '../../core/model/gpu.ts';
import type { NodeSpec } from '../../core/model/node.ts';
import { makePod, type GangSpec, type PodSpec } from '../../core/model/pod.ts';
import { NODE_SHAPES, nodeOfShape } from '../../core/model/presets.ts';
import { buildTopology } from '../../core/model/topology.ts';
import { seededRng, type Rng } from '../../core/ports.ts';
import { nearestRank } from '../../core/stats.ts';
import { Environment } from '../../sim/engine.ts';
import { simAppOrThrow } from '../../app/sim-app.ts';
import { startedJob, type QueuedJob, type RunningJob } from '../../core/actions/jobs.ts';
import type { CycleOptions } from '../../core/actions/queue-cycle.ts';
import { runtimeKeys, withLearnedEnds } from '../../core/estimate/job-runtimes.ts';
import { DEFAULT_RUNTIME_MODEL, RuntimeModel } from '../../core/estimate/runtime.ts';
import type { QueueSpec } from '../../core/queue/model.ts';

export const TRAINING_POLICIES = ['kube-default', 'round-robin', 'sits'] as const;

/** The seed's table (000 §1): default scheduler vs the ML scheduler. */
export const SEED_TABLE = { 'kube-default': { tokensPerSec: 14_200, gpuUtilizationPct: 68 }, sits: { tokensPerSec: 21_750, gpuUtilizationPct: 92 } } as const;

/**
 * Between nodes: the seed's cross-node figure (000 §2.4: ~16 GB/s, > 80 µs) for one NIC per node under a
 * rack's leaf, half of it across the spine (2:1 oversubscription, as model/topology.ts assumes).
 */
export const TRAINING_NETWORK: NetworkModel = trainingNetwork({});

/** The network between nodes, as a user states it for their own cluster (`--nic-gbps`, `--nics-per-node`, `--oversubscription`). */
export interface TrainingNetworkOptions {
  /** One NIC's line rate in Gb/s (default 128 ≈ the seed's 16 GB/s). */
  readonly nicGbps?: number;
  /** NICs per node one job's traffic can use (default 1). */
  readonly nicsPerNode?: number;
  /** Leaf-to-spine oversubscription: traffic leaving a rack gets the NIC rate divided by this (default 2). */
  readonly oversubscription?: number;
}

export function trainingNetwork(o: TrainingNetworkOptions): NetworkModel {
  const nic = (o.nicGbps ?? 128) / 8;
  const across = nic / (o.oversubscription ?? 2);
  return {
    nicGBps: { 'nvlink-domain': nic, rack: nic, block: across, zone: across, cluster: across },
    latencyUs: { 'nvlink-domain': 80, rack: 80, block: 80, zone: 80, cluster: 80 },
    nicsPerNode: o.nicsPerNode ?? 1,
  };
}

const A100_PCIE = {
  id: 'a100-pcie',
  cpuMilli: 128_000,
  memoryMiB: 1_048_576,
  maxPods: 110,
  gpus: makeGpus(8, 'A100-80G'),
  // PCIe only: pairs under one switch, four per socket.
  topology: buildTopology({ gpuCount: 8, numaOf: [0, 0, 0, 0, 1, 1, 1, 1], pcieSwitchOf: [0, 0, 1, 1, 2, 2, 3, 3] }),
};

/** Racks: [shape, count]. 16 × 8 + 8 × 4 = 128 GPUs… see trainingCluster. */
const RACKS: readonly { rack: string; block: string; groups: readonly [string, number][] }[] = [
  { rack: 'rack-0', block: 'block-0', groups: [['hgx-a100', 4]] },
  { rack: 'rack-1', block: 'block-0', groups: [['a100-pcie', 4]] },
  { rack: 'rack-2', block: 'block-1', groups: [['a800x4', 8]] },
  { rack: 'rack-3', block: 'block-1', groups: [['hgx-a100', 2], ['a100-pcie', 2]] },
];

/** 20 nodes / 128 GPUs: 6 NVSwitch A100 nodes, 8 four-GPU NVLink-mesh A800 nodes, 6 PCIe-only A100 nodes. */
export function trainingCluster(): NodeSpec[] {
  const nodes: NodeSpec[] = [];
  for (const r of RACKS) {
    for (const [id, count] of r.groups) {
      const shape = id === 'a100-pcie' ? A100_PCIE : NODE_SHAPES[id];
      if (shape === undefined) throw new Error(`training bench: unknown shape ${id}`);
      for (let i = 0; i < count; i++) {
        nodes.push(nodeOfShape(`${r.rack}-${id}-${i}`, shape, { zone: 'zone-0', block: r.block, rack: r.rack }));
      }
    }
  }
  return nodes;
}

export interface TrainingJob {
  readonly id: string;
  readonly arrivalMs: number;
  readonly gpus: number;
  readonly model: TrainingModel;
  /** Optimizer steps to run: the job's work. */
  readonly steps: number;
  readonly gang: GangSpec;
}

const HOUR = 3_600_000;
const MINUTE = 60_000;

function normal(rng: Rng): number {
  const u = Math.max(rng.next(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next());
}

function pick<T>(rng: Rng, items: readonly (readonly [T, number])[]): T {
  let x = rng.next() * items.reduce((s, [, w]) => s + w, 0);
  for (const [v, w] of items) {
    x -= w;
    if (x < 0) return v;
  }
  return (items[items.length - 1] as readonly [T, number])[0];
}

/** Models by job size: small jobs fine-tune BERT-large (the seed's example), larger ones pre-train GPTs. */
function modelFor(rng: Rng, gpus: number): TrainingModel {
  if (gpus <= 4) return pick(rng, [[ddpJob('bert-large', 512, 32), 1], [ddpJob('gpt-350m', 2048, 8), 1]] as const);
  if (gpus <= 8) return pick(rng, [[ddpJob('gpt-350m', 2048, 8), 1], [ddpJob('gpt-1b', 2048, 8), 1]] as const);
  return pick(rng, [[ddpJob('gpt-1b', 2048, 8), 1], [ddpJob('gpt-3b', 2048, 4), 1]] as const);
}

export interface TrainingWorkloadOptions {
  readonly hours: number;
  /** Arrival-rate multiplier; 1 ≈ 90 % of the cluster's GPUs asked for on average at ideal step times. */
  readonly load: number;
  /** The cluster the jobs are sized for (default: trainingCluster()). */
  readonly cluster?: readonly NodeSpec[];
  readonly network?: NetworkModel;
  /** The cluster's referenceNode, when the caller has it already. */
  readonly ref?: NodeSpec;
}

/**
 * The node a job's ideal placement is made of: the one on which an 8-GPU GPT-1B step is fastest (on the default
 * cluster the NVSwitch A100 node). A job's work is fixed on it, and the ideal figures are measured on it.
 */
export function referenceNode(nodes: readonly NodeSpec[], network: NetworkModel = TRAINING_NETWORK): NodeSpec {
  let best: { node: NodeSpec; sec: number } | undefined;
  for (const n of nodes) {
    if (n.gpus.length === 0) continue;
    const sec = stepTime(ddpJob('gpt-1b', 2048, 8), idealShares(likeOf(n), 8), network).stepSec;
    if (best === undefined || sec < best.sec) best = { node: n, sec };
  }
  if (best === undefined) throw new Error('training bench: the cluster has no GPU node');
  return best.node;
}

const likeOf = (n: NodeSpec) => ({ gpuModel: n.gpus[0]?.model ?? 'A100-80G', topology: n.topology, location: n.location });

/**
 * Poisson arrivals; sizes 2/4/8/16/32 GPUs (1-GPU replicas, as the seed's torchrun --nproc_per_node=1; a
 * 16- or 32-GPU job uses 8-GPU replicas half the time); the work is a log-normal ideal run time (median 40 min)
 * turned into steps on an ideal placement of the job's size on an NVSwitch A100 node.
 */
export function trainingWorkload(rng: Rng, opts: TrainingWorkloadOptions): TrainingJob[] {
  const cluster = opts.cluster ?? trainingCluster();
  const network = opts.network ?? TRAINING_NETWORK;
  const totalGpus = cluster.reduce((a, n) => a + n.gpus.length, 0);
  // A job larger than the cluster could never start: such sizes are left out of the mix.
  const sizes = ([[2, 25], [4, 25], [8, 25], [16, 15], [32, 10]] as const).filter(([g]) => g <= totalGpus);
  if (sizes.length === 0) throw new Error(`training bench: the cluster has ${totalGpus} GPUs, fewer than the smallest job (2)`);
  const meanGpus = sizes.reduce((s, [g, w]) => s + g * w, 0) / sizes.reduce((s, [, w]) => s + w, 0);
  const medianMs = 40 * MINUTE;
  const sigma = 0.8;
  const meanMs = medianMs * Math.exp((sigma * sigma) / 2);
  const perHour = (opts.load * 0.9 * totalGpus * HOUR) / (meanGpus * meanMs);
  const ref = opts.ref ?? referenceNode(cluster, network);
  const jobs: TrainingJob[] = [];
  let t = 0;
  for (let n = 0; ; n++) {
    t += -Math.log(1 - rng.next()) * (HOUR / perHour);
    if (t >= opts.hours * HOUR) break;
    const gpus = pick(rng, sizes);
    const perPod = gpus >= 16 && rng.next() < 0.5 ? 8 : 1;
    const model = modelFor(rng, gpus);
    const idealMs = Math.round(medianMs * Math.exp(sigma * normal(rng)));
    const ideal = stepTime(model, idealShares(likeOf(ref), gpus), network);
    const steps = Math.max(1, Math.round(idealMs / 1000 / ideal.stepSec));
    const id = `train-${n}`;
    const members: PodSpec[] = Array.from({ length: gpus / perPod }, (_, i) =>
      makePod(`${id}-${i}`, { cpuMilli: 12_000 * perPod, memoryMiB: 65_536 * perPod, gpuCount: perPod, gpuMilli: 1000 }, { gang: id, priority: 0, queue: 'training' }),
    );
    jobs.push({ id, arrivalMs: Math.round(t), gpus, model, steps, gang: { name: id, minMember: members.length, members, topology: {}, priority: 0, queue: 'training' } });
  }
  return jobs;
}

/** The three figures the issue asks for, per policy. */
export interface TrainingPolicyFigures {
  /** Mean over jobs of a job's training throughput (all its GPUs) on the GPUs it got. */
  readonly tokensPerSec: number;
  /** Share of the training jobs' allocated GPU-time spent computing (compute / step, GPU-time weighted). */
  readonly gpuUtilizationPct: number;
  /** Multi-GPU jobs whose GPUs all sit in one NVLink island (one NVSwitch node or one NVLink mesh). */
  readonly gangsInOneNvlinkDomainPct: number;
}

export interface TrainingPolicyDetails {
  readonly jobsStarted: number;
  readonly jobsNeverStarted: number;
  /** Time-averaged share of the cluster's GPUs held by training jobs while jobs were arriving. */
  readonly gpuAllocationPct: number;
  /** Tokens trained per second by the whole cluster while jobs were arriving. */
  readonly clusterTokensPerSec: number;
  /** Mean of each job's step time over its ideal step time. */
  readonly meanSlowdown: number;
  readonly waitSec: { readonly p50: number; readonly p99: number };
  /** Job completion time: arrival to end (wait plus run). */
  readonly jctSec: { readonly mean: number; readonly p50: number; readonly p99: number };
  readonly makespanHours: number;
  /** Jobs by the link class that limited their collective. */
  readonly bottlenecks: Readonly<Record<string, number>>;
  /** Jobs that waited, at least once, by the reason the queue cycle gave (`reservation`, `better-placement`, …). */
  readonly waitedFor: Readonly<Record<string, number>>;
}

export interface TrainingBenchResult {
  readonly policies: Readonly<Record<(typeof TRAINING_POLICIES)[number], TrainingPolicyFigures>>;
  readonly seed: number;
  readonly cluster: { readonly nodes: number; readonly gpus: number; readonly racks: number; readonly shapes: Readonly<Record<string, number>> };
  readonly workload: {
    readonly jobs: number;
    readonly hours: number;
    readonly load: number;
    readonly gpuSizes: Readonly<Record<string, number>>;
    /** Every job on its ideal placement (whole NVSwitch A100 nodes, one rack): the ceiling of any policy. */
    readonly ideal: { readonly tokensPerSec: number; readonly gpuUtilizationPct: number };
  };
  readonly details: Readonly<Record<string, TrainingPolicyDetails>>;
  /** Extra profiles run beside the three (e.g. sits-step, ADR 0105). */
  readonly extra: Readonly<Record<string, TrainingPolicyFigures>>;
  readonly seedTable: typeof SEED_TABLE;
  readonly ratios: {
    readonly tokensPerSec: number;
    readonly gpuUtilizationPp: number;
    readonly seedTokensPerSec: number;
    readonly seedGpuUtilizationPp: number;
    /**
     * sits over kube-default: cluster tokens/s (higher is better), mean JCT and wait p50 (lower is better), and the
     * tails reservations are for, wait p99 and JCT p99 (lower is better).
     */
    readonly clusterTokensPerSec: number | null;
    readonly meanJct: number | null;
    readonly waitP50: number | null;
    readonly waitP99: number | null;
    readonly jctP99: number | null;
  };
  /** The network between nodes the step times were computed with. */
  readonly network: NetworkModel;
}

export interface TrainingBenchOptions {
  readonly seed: number;
  readonly hours?: number;
  readonly load?: number;
  /** Profiles beyond the three, reported under `extra`. */
  readonly extraProfiles?: readonly string[];
  /** A cluster of one's own (the `sits schedule --cluster` format, loaded); default trainingCluster(). */
  readonly cluster?: readonly NodeSpec[];
  readonly network?: TrainingNetworkOptions;
}

const r2 = (x: number): number => Math.round(x * 100) / 100;

export function benchTraining(opts: TrainingBenchOptions): TrainingBenchResult {
  const hours = opts.hours ?? 8;
  const load = opts.load ?? 1;
  const nodes = opts.cluster ?? trainingCluster();
  const network = opts.network === undefined ? TRAINING_NETWORK : trainingNetwork(opts.network);
  const ref = referenceNode(nodes, network);
  const jobs = trainingWorkload(seededRng(opts.seed), { hours, load, cluster: nodes, network, ref });
  const run = (p: string) => runPolicy(p, { jobs, nodes, network, ref }, opts.seed, hours);
  const results = Object.fromEntries(TRAINING_POLICIES.map((p) => [p, run(p)])) as Record<(typeof TRAINING_POLICIES)[number], { figures: TrainingPolicyFigures; details: TrainingPolicyDetails }>;
  const extra = Object.fromEntries((opts.extraProfiles ?? []).map((p) => [p, run(p)]));
  const k = results['kube-default'].figures;
  const s = results.sits.figures;
  const kd = results['kube-default'].details;
  const sd = results.sits.details;
  // Both zero: no difference (1); only the base zero: no finite ratio (null).
  const ratio = (a: number, b: number): number | null => (b === 0 ? (a === 0 ? 1 : null) : r2(a / b));
  const count = (xs: readonly string[]): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const x of xs) out[x] = (out[x] ?? 0) + 1;
    return out;
  };
  return {
    policies: { 'kube-default': k, 'round-robin': results['round-robin'].figures, sits: s },
    seed: opts.seed,
    cluster: { nodes: nodes.length, gpus: nodes.reduce((a, n) => a + n.gpus.length, 0), racks: new Set(nodes.map((n) => n.location.rack)).size, shapes: count(nodes.map((n) => n.shape ?? '')) },
    workload: { jobs: jobs.length, hours, load, gpuSizes: count(jobs.map((j) => String(j.gpus))), ideal: idealFigures(jobs, ref, network) },
    details: { ...Object.fromEntries(TRAINING_POLICIES.map((p) => [p, results[p].details])), ...Object.fromEntries(Object.entries(extra).map(([p, v]) => [p, v.details])) },
    extra: Object.fromEntries(Object.entries(extra).map(([p, v]) => [p, v.figures])),
    seedTable: SEED_TABLE,
    ratios: {
      tokensPerSec: r2(k.tokensPerSec === 0 ? 0 : s.tokensPerSec / k.tokensPerSec),
      gpuUtilizationPp: r2(s.gpuUtilizationPct - k.gpuUtilizationPct),
      seedTokensPerSec: r2(SEED_TABLE.sits.tokensPerSec / SEED_TABLE['kube-default'].tokensPerSec),
      seedGpuUtilizationPp: SEED_TABLE.sits.gpuUtilizationPct - SEED_TABLE['kube-default'].gpuUtilizationPct,
      clusterTokensPerSec: ratio(sd.clusterTokensPerSec, kd.clusterTokensPerSec),
      meanJct: ratio(sd.jctSec.mean, kd.jctSec.mean),
      waitP50: ratio(sd.waitSec.p50, kd.waitSec.p50),
      waitP99: ratio(sd.waitSec.p99, kd.waitSec.p99),
      jctP99: ratio(sd.jctSec.p99, kd.jctSec.p99),
    },
    network,
  };
}

function idealFigures(jobs: readonly TrainingJob[], ref: NodeSpec, network: NetworkModel): { tokensPerSec: number; gpuUtilizationPct: number } {
  let tps = 0;
  let gpuSec = 0;
  let computeSec = 0;
  for (const j of jobs) {
    const st = stepTime(j.model, idealShares(likeOf(ref), j.gpus), network);
    tps += st.tokensPerSec;
    gpuSec += j.gpus * j.steps * st.stepSec;
    computeSec += j.gpus * j.steps * st.computeSec;
  }
  return { tokensPerSec: Math.round(tps / Math.max(1, jobs.length)), gpuUtilizationPct: r2(gpuSec === 0 ? 0 : (100 * computeSec) / gpuSec) };
}

/** An arrival carries the job's submission order (the queue's tie-break among equal arrival times). */
type Ev = { kind: 'arrive'; job: TrainingJob; seq: number } | { kind: 'finish'; job: TrainingJob } | { kind: 'cycle' };

/**
 * SITS's profiles run the queue cycle as the live scheduler does (DEFAULT_CYCLE_OPTIONS): a job that heads the queue
 * without fitting gets a reservation once it has waited 4 h (ADR 0199), and later jobs backfill around it. One queue
 * and one priority, so neither fair share nor preemption has anything to decide; explanations are skipped.
 */
const SITS_CYCLE: Partial<CycleOptions> = { preemption: false, explain: false };
/** kube-scheduler has no reservations: the baselines try every waiting job in arrival order, each on its own. */
const BASELINE_CYCLE: Partial<CycleOptions> = { ...SITS_CYCLE, backfill: false };
const NO_QUEUES: ReadonlyMap<string, QueueSpec> = new Map();

interface PolicyRun {
  readonly jobs: readonly TrainingJob[];
  readonly nodes: readonly NodeSpec[];
  readonly network: NetworkModel;
  /** The node the ideal placements are made of (referenceNode). */
  readonly ref: NodeSpec;
}

/**
 * One policy over the job stream, through the same scheduling spine as the live scheduler: jobs join the scheduling
 * queue as they arrive, a queue cycle runs at every arrival and completion and when a wait can end by itself (a
 * hold for a better placement running out), and the runtimes the cycle plans reservations with are learned from
 * the jobs that finished (as the live scheduler learns them; nothing is known of a job before it ends).
 */
function runPolicy(name: string, w: PolicyRun, seed: number, hours: number): { figures: TrainingPolicyFigures; details: TrainingPolicyDetails } {
  const { jobs, nodes, network, ref: refNode } = w;
  const typical = shapesOf(jobs.flatMap((j) => j.gang.members));
  const resolved = resolveProfile(name, { typicalShapes: typical });
  if (!resolved.ok) throw new Error(formatProfileError(resolved.error));
  // A step-time profile knows each job's model (a TrainingJob declares it) and this cluster's network.
  const models = new Map(jobs.map((j) => [j.gang.name, j.model]));
  const profile = resolved.value.gangChoice !== undefined ? { ...resolved.value, stepTimeArgs: { network, modelOf: (g: GangSpec) => models.get(g.name) } } : resolved.value;
  const { state, scheduler, queue, spine, end } = simAppOrThrow({ nodes, profile, rng: seededRng(seed + 1) });
  const specOf = (n: string): NodeSpec | undefined => state.node(n)?.spec;
  const totalGpus = nodes.reduce((a, n) => a + n.gpus.length, 0);
  const horizonMs = hours * HOUR;
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const runs: { job: TrainingJob; startMs: number; durMs: number; tokensPerSec: number; util: number; oneIsland: boolean; slowdown: number; bottleneck: string }[] = [];
  // Time integrals over [0, horizon]: GPUs held, tokens/s of the cluster.
  let last = 0;
  let gpusNow = 0;
  let tpsNow = 0;
  let gpuInt = 0;
  let tpsInt = 0;
  let endMs = 0;
  const advance = (t: number): void => {
    const to = Math.min(t, horizonMs);
    if (to > last) {
      gpuInt += gpusNow * (to - last);
      tpsInt += tpsNow * (to - last);
      last = to;
    }
  };
  const running = new Map<string, RunningJob>();
  const tpsOf = new Map<string, number>();
  const runtimes = new RuntimeModel(DEFAULT_RUNTIME_MODEL);
  const keysOf = (j: TrainingJob): string[] => runtimeKeys(j.gang.queue, j.gpus);
  const queued = (j: TrainingJob, i: number): QueuedJob => ({
    id: j.id,
    queue: j.gang.queue,
    priority: 0,
    arrivalMs: j.arrivalMs,
    seq: i,
    gang: j.gang,
    estRuntimeMs: runtimes.expectedTotal(keysOf(j), 0),
  });
  const waitedFor = new Map<string, Set<string>>();
  // One cycle per instant: every event of an instant asks for the same one.
  const cycleAt = new Set<number>();
  const cycleOn = (en: Environment<Ev>, atMs: number): void => {
    if (cycleAt.has(atMs)) return;
    cycleAt.add(atMs);
    en.at(atMs, 9, { kind: 'cycle' });
  };
  const env = new Environment<Ev>((e, en) => {
    advance(en.nowMs);
    const ev = e.payload;
    if (ev.kind === 'arrive') {
      queue.add(queued(ev.job, ev.seq), en.nowMs);
      queue.onEvent({ kind: 'arrived', queue: ev.job.gang.queue }, en.nowMs);
      cycleOn(en, en.nowMs);
    } else if (ev.kind === 'finish') {
      const r = running.get(ev.job.id);
      if (r !== undefined) end(r.podIds);
      running.delete(ev.job.id);
      runtimes.observeFinished(keysOf(ev.job), en.nowMs - (r?.startMs ?? en.nowMs));
      gpusNow -= ev.job.gpus;
      tpsNow -= tpsOf.get(ev.job.id) ?? 0;
      tpsOf.delete(ev.job.id);
      endMs = Math.max(endMs, en.nowMs);
      queue.onEvent({ kind: 'freed' }, en.nowMs);
      cycleOn(en, en.nowMs);
    } else {
      cycleAt.delete(en.nowMs);
      // Running jobs' ends as the learned runtimes expect them, given how long they have run.
      const ends = withLearnedEnds(runtimes, running, (r) => ({ keys: keysOf(byId.get(r.id) as TrainingJob), doneMs: en.nowMs - r.startMs }), en.nowMs);
      for (const [id, r] of ends) running.set(id, r);
      // Queued jobs' estimates as of now (the hold for a better placement weighs its wait against it). A new estimate
      // is no change that wakes a parked job, as in the live scheduler's sync.
      for (const q of queue.forCycle().jobs) {
        const j = byId.get(q.id) as TrainingJob;
        queue.add({ ...q, estRuntimeMs: runtimes.expectedTotal(keysOf(j), 0) }, en.nowMs, false);
      }
      const res = spine.cycle({ nowMs: en.nowMs, scheduler, queues: NO_QUEUES, running, options: name.startsWith('sits') ? SITS_CYCLE : BASELINE_CYCLE });
      for (const [id, wt] of res.waiting) {
        const ids = waitedFor.get(wt.reason) ?? new Set<string>();
        ids.add(id);
        waitedFor.set(wt.reason, ids);
      }
      for (const s of res.started) {
        const job = byId.get(s.job.id) as TrainingJob;
        const shares = sharesOf(s.placements, specOf);
        const st = stepTime(job.model, shares, network);
        const ideal = stepTime(job.model, idealShares(likeOf(refNode), job.gpus), network);
        const islands = new Set(shares.flatMap((x) => x.gpus.map((g) => `${x.name}/${x.topology.islandOf[g]}`)));
        const durMs = Math.max(1, Math.round(job.steps * st.stepSec * 1000));
        runs.push({ job, startMs: en.nowMs, durMs, tokensPerSec: st.tokensPerSec, util: st.gpuUtilization, oneIsland: islands.size === 1, slowdown: st.stepSec / ideal.stepSec, bottleneck: st.bottleneck });
        gpusNow += job.gpus;
        tpsNow += st.tokensPerSec;
        tpsOf.set(job.id, st.tokensPerSec);
        running.set(job.id, startedJob(s.job, s.placements, en.nowMs));
        en.schedule(durMs, 0, { kind: 'finish', job });
      }
      // A wait that ends by itself (a hold running out) needs a cycle then, if nothing else brings one before.
      const wake = queue.nextWakeMs();
      if (Number.isFinite(wake) && wake > en.nowMs) cycleOn(en, wake);
    }
  });
  jobs.forEach((j, seq) => env.at(j.arrivalMs, 1, { kind: 'arrive', job: j, seq }));
  // Every job gets to run: the horizon only bounds the time averages.
  env.run(horizonMs * 50);
  advance(horizonMs);

  const multi = runs.filter((x) => x.job.gpus > 1);
  const gpuTime = runs.reduce((a, x) => a + x.job.gpus * x.durMs, 0);
  const waits = runs.map((x) => (x.startMs - x.job.arrivalMs) / 1000).sort((a, b) => a - b);
  const jcts = runs.map((x) => (x.startMs + x.durMs - x.job.arrivalMs) / 1000).sort((a, b) => a - b);
  const bottlenecks: Record<string, number> = {};
  for (const x of runs) bottlenecks[x.bottleneck] = (bottlenecks[x.bottleneck] ?? 0) + 1;
  return {
    figures: {
      tokensPerSec: Math.round(runs.reduce((a, x) => a + x.tokensPerSec, 0) / Math.max(1, runs.length)),
      gpuUtilizationPct: r2(gpuTime === 0 ? 0 : (100 * runs.reduce((a, x) => a + x.job.gpus * x.durMs * x.util, 0)) / gpuTime),
      gangsInOneNvlinkDomainPct: r2(multi.length === 0 ? 0 : (100 * multi.filter((x) => x.oneIsland).length) / multi.length),
    },
    details: {
      jobsStarted: runs.length,
      jobsNeverStarted: jobs.length - runs.length,
      gpuAllocationPct: r2((100 * gpuInt) / (horizonMs * totalGpus)),
      clusterTokensPerSec: Math.round(tpsInt / horizonMs),
      meanSlowdown: r2(runs.reduce((a, x) => a + x.slowdown, 0) / Math.max(1, runs.length)),
      waitSec: { p50: Math.round(nearestRank(waits, 50) ?? 0), p99: Math.round(nearestRank(waits, 99) ?? 0) },
      jctSec: {
        mean: Math.round(jcts.reduce((a, x) => a + x, 0) / Math.max(1, jcts.length)),
        p50: Math.round(nearestRank(jcts, 50) ?? 0),
        p99: Math.round(nearestRank(jcts, 99) ?? 0),
      },
      makespanHours: r2(endMs / HOUR),
      bottlenecks,
      waitedFor: Object.fromEntries([...waitedFor].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, v.size])),
    },
  };
}
