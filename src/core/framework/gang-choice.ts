/**
 * The default gang choice (`gangChoice: step-aware`, ADR 0188): which of a gang's candidate placements to take,
 * and whether to wait a bounded time for a better one. Pure: the scheduler hands in the predicted steps.
 *
 * Each candidate is judged by the job's slowdown there against the best the cluster could ever give a job of
 * that size (whole empty nodes of its best shape in one rack, `bestStepSec`; its model, or the default 1.3B DDP
 * job when it declares none), and by what it takes from jobs that need good links: the free NVLink-island
 * capacity it breaks (sum of squared free island sizes lost, so breaking a whole NVSwitch island costs most).
 * The job takes the candidates within `tolerance` of its own best; among them the one breaking the least
 * (Tiresias' consolidation by sensitivity: a job that barely communicates fills the awkward holes and leaves
 * NVSwitch/NVLink islands to the jobs that need them), then the earliest in best-fit order (the fragmentation
 * score's choice). All candidates are of one topology level: the narrowest where the gang fits. Over several nodes the scheduler offers each domain
 * twice: best fit (members fill holes) and packed (members on the emptiest nodes, fewer hops).
 *
 * Delay (Sharma et al. 2024, network-sensitive delay scheduling): a job whose best placement now is more than
 * `delayMinGain` slower than its best possible one anywhere (links or GPU model: ADR 0196) waits for a better one
 * while the wait is below what the faster step would save over an expected run, and never longer than
 * `maxDelayMs`: after that it takes what there is, so no job starves for a better placement.
 *
 * When the slowness is the links, not the GPU model (even on its own GPU models the job's best placement now is
 * more than `delayMinGain` slower than their best layout), the layout it waits for frees as the jobs on those nodes
 * end: it holds as long as that layout is expected before `linkHoldMs` has passed (ADR 0200; the expectation is
 * the caller's, from the running jobs' expected ends).
 */
import { idealShares, stepTime, trainingModelKey, type NetworkModel, type TrainingModel } from '../estimate/step-time.ts';
import { nodeGpuModel, type NodeSpec } from '../model/node.ts';
import { fastGroupsOf, widestFastGroup } from '../model/topology.ts';

/** The choice's constants (ADR 0188 says how they were set, on seeds 1–2 of `sits bench training`; the cap, ADR 0197). */
export const GANG_CHOICE: Readonly<{ tolerance: number; delayMinGain: number; expectedRunMs: number; maxDelayMs: number; linkHoldMs: number }> = {
  /** Candidates whose predicted step is within this share of the job's best one count as equally fast. */
  tolerance: 0.05,
  /** A job waits only when its best placement now is at least this much slower than its best possible one. */
  delayMinGain: 0.15,
  /** The run a job is assumed to have left when it states none (the step-time saving is taken over it). */
  expectedRunMs: 60 * 60_000,
  /** No job waits longer than this for a better placement: the default expected run (ADR 0197; was 20 min). */
  maxDelayMs: 60 * 60_000,
  /** No job slowed by its links holds longer than this for its layout to free (ADR 0200). */
  linkHoldMs: 24 * 60 * 60_000,
};
const TOLERANCE = (): number => GANG_CHOICE.tolerance;

/** One trial placement of a gang, as the choice sees it. */
export interface GangCandidate {
  /** Its position in best-fit order. */
  readonly order: number;
  /** The job's predicted step over its best possible one anywhere (≥ 1 up to rounding). */
  readonly slowdown: number;
  /** What it takes from jobs that need good links: free NVLink island capacity lost (sum of squared sizes). */
  readonly islandLoss: number;
  /** Islands it leaves partly free (0: it fills whole islands, breaking none). */
  readonly splits: number;
  /** Its predicted step over the best its own GPU models could give (≥ 1 up to rounding): the links' part of `slowdown`. */
  readonly linkSlowdown: number;
}

/** The candidate to take (an index into `cands`), or -1 when there is none. */
export function chooseCandidate(cands: readonly GangCandidate[]): number {
  let best = Number.POSITIVE_INFINITY;
  for (const c of cands) best = Math.min(best, c.slowdown);
  if (!Number.isFinite(best)) return -1;
  const near = (i: number): boolean => (cands[i] as GangCandidate).slowdown <= best * (1 + TOLERANCE());
  const pool = cands.map((_, i) => i).filter(near);
  let pick = -1;
  for (const i of pool) {
    const c = cands[i] as GangCandidate;
    const p = pick < 0 ? undefined : (cands[pick] as GangCandidate);
    if (p === undefined || c.islandLoss < p.islandLoss || (c.islandLoss === p.islandLoss && c.order < p.order)) pick = i;
  }
  return pick;
}

/** Why a gang waits for a better placement, and until when. */
export interface GangDelay {
  /** Its best placement now over its best possible one. */
  readonly slowdown: number;
  /** How long it has waited so far, and how long it may (ms since it became schedulable). */
  readonly waitedMs: number;
  readonly capMs: number;
  /** Share of the step time a best placement would save. */
  readonly expectedGain: number;
  /** Slow for its links, not its GPU model: it holds while its layout is expected to free in time (ADR 0200). */
  readonly linkBound?: boolean;
}

/** Whether a best placement now at `slowdown` × the best possible step is worth waiting for at all. */
export const slowEnoughToWait = (slowdown: number): boolean => slowdown > 1 + GANG_CHOICE.delayMinGain;

/**
 * Whether a gang whose best placement now runs `slowdown` × its best possible step should wait, having waited
 * `waitedMs` of an expected run of `runMs`: the wait it may spend is what the better step would save over the
 * run, capped at `maxDelayMs`.
 */
export function delayFor(slowdown: number, waitedMs: number, runMs: number = GANG_CHOICE.expectedRunMs): GangDelay | undefined {
  if (!slowEnoughToWait(slowdown)) return undefined;
  const gain = 1 - 1 / slowdown;
  // Whole seconds: the bound users read (`holds at most 1601 s`) is when the hold ends.
  const capMs = 1000 * Math.round(Math.min(GANG_CHOICE.maxDelayMs, gain * runMs) / 1000);
  if (waitedMs >= capMs) return undefined;
  return { slowdown, waitedMs, capMs, expectedGain: gain };
}

/**
 * Whether a gang whose best placement now runs `slowdown` × its best possible step, `linkSlowdown` × the best its
 * own GPU models could give, should hold for its layout to free, having held `waitedMs`: up to `linkHoldMs`, as long
 * as the caller expects the layout in time.
 */
export function linkDelayFor(slowdown: number, linkSlowdown: number, waitedMs: number): GangDelay | undefined {
  if (!slowEnoughToWait(linkSlowdown) || waitedMs >= GANG_CHOICE.linkHoldMs) return undefined;
  return { slowdown, waitedMs, capMs: GANG_CHOICE.linkHoldMs, expectedGain: 1 - 1 / slowdown, linkBound: true };
}

/** `waits for a better placement: 1.45× its best step here; expects 31 % shorter steps; waited 120 of 560 s`. */
export function describeDelay(d: GangDelay): string {
  return `${delayReason(d)}; waited ${Math.round(d.waitedMs / 1000)} of at most ${Math.round(d.capMs / 1000)} s`;
}

/** The same without the count of seconds waited: `…; expects 31 % shorter steps; holds at most 560 s`. */
export function describeDelaySteady(d: GangDelay): string {
  return `${delayReason(d)}; holds ${d.linkBound === true ? 'while a better one is expected to free, ' : ''}at most ${Math.round(d.capMs / 1000)} s`;
}

const delayReason = (d: GangDelay): string =>
  `waits for a better placement: the best free one now gives ${d.slowdown.toFixed(2)}× its best step time; expects ${Math.round(100 * d.expectedGain)} % shorter steps`;

/** One kind of node: its GPU model and topology, where one of them is, and the most of them in one rack. */
interface Like {
  readonly gpuModel: string;
  readonly topology: NodeSpec['topology'];
  readonly location: NodeSpec['location'];
  perRack: number;
}

/**
 * The layouts of `gpus` GPUs on empty nodes of one kind: whole nodes, and on nodes whose GPUs are in several fast
 * groups (PCIe-only ones) also one widest group per node, as the spread trial places them (ADR 0202).
 */
function layoutsOn(like: Like, gpus: number): ReturnType<typeof idealShares>[] {
  const whole = idealShares(like, gpus);
  const groups = fastGroupsOf(like.topology);
  if (groups.count <= 1) return [whole];
  const { group: widest, size: wide } = widestFastGroup(like.topology);
  const set = groups.of.flatMap((k, g) => (k === widest ? [g] : []));
  const spread: ReturnType<typeof idealShares> = [];
  for (let i = 0, left = gpus; left > 0; i++, left -= wide) {
    spread.push({
      ...like,
      name: `spread-${i}`,
      gpus: set.slice(0, Math.min(wide, left)),
      location: { zone: like.location.zone, block: like.location.block, rack: like.location.rack },
    });
  }
  return [whole, spread];
}

/** A layout's nodes, as many in one rack as the cluster has in one; the others one rack further each. */
function inRacks(like: Like, shares: ReturnType<typeof idealShares>): ReturnType<typeof idealShares> {
  return shares.map((s, i) => (i < like.perRack ? s : { ...s, location: { ...s.location, rack: `${s.location.rack}~${Math.floor(i / like.perRack)}` } }));
}

/**
 * The best step of `model` on `gpus` GPUs anywhere in a cluster of these nodes: whole empty nodes of one shape in
 * one rack, the fastest shape. Memoised per node list, model and size (nodes change rarely; gangs come often).
 */
export class BestStepCache {
  private nodes: readonly { readonly spec: NodeSpec }[] | undefined;
  private likes: Like[] = [];
  private readonly memo = new Map<string, number>();

  bestStepSec(nodes: readonly { readonly spec: NodeSpec }[], model: TrainingModel, gpus: number, net: NetworkModel): number {
    if (nodes !== this.nodes) this.reset(nodes);
    const key = `${trainingModelKey(model)}|${gpus}`;
    let v = this.memo.get(key);
    if (v === undefined) {
      v = Number.POSITIVE_INFINITY;
      for (const like of this.likes) for (const shares of layoutsOn(like, gpus)) v = Math.min(v, stepTime(model, shares, net).stepSec);
      this.memo.set(key, v);
    }
    return v;
  }

  /**
   * The best step of `model` on `gpus` GPUs of these GPU models: each model's best on whole empty nodes of one kind,
   * only as many in one rack as some rack has (a layout the cluster can give), and the slowest of those, the pace a
   * gang over several models runs at.
   */
  bestStepOnModels(nodes: readonly { readonly spec: NodeSpec }[], model: TrainingModel, gpus: number, net: NetworkModel, gpuModels: readonly string[]): number {
    if (nodes !== this.nodes) this.reset(nodes);
    const key = `${trainingModelKey(model)}|${gpus}|${gpuModels.join(',')}`;
    let v = this.memo.get(key);
    if (v === undefined) {
      v = 0;
      for (const m of gpuModels) {
        let best = Number.POSITIVE_INFINITY;
        for (const like of this.likes) {
          if (like.gpuModel !== m) continue;
          for (const shares of layoutsOn(like, gpus)) best = Math.min(best, stepTime(model, inRacks(like, shares), net).stepSec);
        }
        v = Math.max(v, best);
      }
      this.memo.set(key, v);
    }
    return v;
  }

  private reset(nodes: readonly { readonly spec: NodeSpec }[]): void {
    this.nodes = nodes;
    this.memo.clear();
    const seen = new Map<string, Like>();
    const inRack = new Map<string, number>();
    this.likes = [];
    for (const { spec: n } of nodes) {
      const gpuModel = nodeGpuModel(n);
      if (gpuModel === '') continue;
      // One representative per GPU model and topology: nodes of a shape share both.
      const key = `${gpuModel}|${n.topology.gpuCount}|${n.shape ?? JSON.stringify(n.topology)}`;
      const rackKey = `${key}|${n.location.zone}|${n.location.block}|${n.location.rack}`;
      const here = (inRack.get(rackKey) ?? 0) + 1;
      inRack.set(rackKey, here);
      const like = seen.get(key);
      if (like !== undefined) {
        like.perRack = Math.max(like.perRack, here);
        continue;
      }
      const first: Like = { gpuModel, topology: n.topology, location: n.location, perRack: here };
      seen.set(key, first);
      this.likes.push(first);
    }
  }
}
