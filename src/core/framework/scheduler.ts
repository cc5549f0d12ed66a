/**
 * One scheduling cycle for a pod or a gang over the cluster state, under one profile. Decisions are made
 * in a Statement; the caller commits (and binds) or discards. Nothing here does I/O.
 */
import { nodeGpuModel } from '../model/node.ts';
import type { GangSpec, PodSpec } from '../model/pod.ts';
import { fastGroupsOf, TOPOLOGY_LEVELS, type TopologyLevel, widestFastGroup } from '../model/topology.ts';
import { DEFAULT_NETWORK, DEFAULT_TRAINING_MODEL, sharesOf, stepTime, type TrainingModel } from '../estimate/step-time.ts';
import {
  BestStepCache,
  chooseCandidate,
  delayFor,
  describeDelay,
  GANG_CHOICE,
  linkDelayFor,
  slowEnoughToWait,
  type GangCandidate,
  type GangDelay,
} from './gang-choice.ts';
import { allocationFor, type ClusterState, type NodeState } from '../snapshot/cluster-state.ts';
import { Statement, type CommitTarget } from '../statement/statement.ts';
import { NO_TRACER, type Rng, type Tracer } from '../ports.ts';
import { Reason, REASONS, type ReasonCode } from './reasons.ts';
import { podMetaKey, ScoreIndex, shapeKey, type IndexCounters } from './score-index.ts';
import { hasInterPodFields } from '../model/terms.ts';
import { allocationVolumes, resolvePodVolumes } from './volume-binding.ts';
import type { CycleContext, ExtensionPoint, ExtensionTimer, GpuMask, Plugin, Profile } from './types.ts';

export interface Placement {
  readonly podId: string;
  readonly node: string;
  /** GPU device indices the pod was given; what its container must see. */
  readonly gpus: readonly number[];
}

export interface ReasonCount {
  readonly reason: string;
  readonly count: number;
}

export interface Explanation {
  readonly subject: string;
  readonly nodes: number;
  readonly fitting: number;
  readonly reasons: readonly ReasonCount[];
  /** `0/32 nodes fit gang train-a (16×1 GPU): 20 insufficient nvidia.com/gpu, ...` */
  readonly message: string;
  /** True when only a cluster change (not preemption or waiting) could help. */
  readonly unresolvable: boolean;
}

export type PodOutcome = { readonly ok: true; readonly placement: Placement } | { readonly ok: false; readonly explanation: Explanation };
export type GangOutcome =
  | { readonly ok: true; readonly placements: readonly Placement[]; readonly level: TopologyLevel | 'cluster'; readonly pending: readonly string[] }
  | { readonly ok: false; readonly explanation: Explanation; readonly delay?: GangDelay };

/** How a gang attempt runs: with an explanation when it fails, and how long the gang has waited (delay scheduling). */
export interface GangAttemptOptions {
  readonly explain?: boolean;
  /**
   * Time since the gang became schedulable (ms). Only with it may a `step-aware` choice hold the gang back for a
   * better placement (ADR 0188); trial runs (preemption, reservations, explanations) leave it out.
   */
  readonly waitedMs?: number;
  /** The gang's expected run (ms), when known: the wait it may spend is weighed against it. */
  readonly runMs?: number;
}

export interface Range {
  readonly start: number;
  readonly end: number;
}

const MAX_INDICES = 192;
/**
 * Candidate domains tried per topology level, above the gang's preferred/required level, before widening;
 * bounds a gang attempt's cost. At or below that level every candidate is tried.
 */
const MAX_DOMAIN_TRIALS = 24;
/** Candidate domains a step-time gang choice compares at most (each is a trial placement, rolled back). */
const MAX_STEP_TIME_TRIALS = 16;
/** Candidate domains the step-aware choice compares at most (ADR 0188): it runs for every gang, so fewer. */
const MAX_AWARE_TRIALS = 8;
/** How a trial spreads the gang over a domain: best fit, packed onto the emptiest nodes, or one fast group per node. */
type TrialLayout = 'fit' | 'packed' | 'spread';

/** Domains wider than this get no packed trial: finding the emptiest nodes scans the range (ADR 0188). */
const MAX_PACKED_NODES = 64;

/** The least slowdown among trial placements: what the gang gets now at best. */
function leastSlowdown(trials: readonly { readonly cand: GangCandidate }[], of: 'slowdown' | 'linkSlowdown' = 'slowdown'): number {
  let least = Number.POSITIVE_INFINITY;
  for (const x of trials) least = Math.min(least, x.cand[of]);
  return least;
}

/**
 * The hold of a gang whose best trial placements are `trials`, having waited `waitedMs` of an expected run of
 * `runMs`: for its layout to free when even its own GPU models' best layout is far (ADR 0200), else for a better
 * placement anywhere (ADR 0188).
 */
function holdFor(trials: readonly { readonly cand: GangCandidate }[], waitedMs: number, runMs: number | undefined): GangDelay | undefined {
  const least = leastSlowdown(trials);
  return linkDelayFor(least, leastSlowdown(trials, 'linkSlowdown'), waitedMs) ?? delayFor(least, waitedMs, runMs);
}

export class Scheduler {
  private readonly indices = new Map<string, ScoreIndex>();
  /** Work done so far: node evaluations and index builds of every shape, candidate domains tried by gangs. */
  readonly counters: IndexCounters & { domainTrials: number } = { evaluations: 0, builds: 0, domainTrials: 0 };
  private tick = 0;
  private rrCursor = 0;
  readonly ctx: CycleContext;
  /** Times the extension points when set (the live host's metrics); unset (simulations, trial runs) nothing is timed. */
  timer: ExtensionTimer | undefined;

  /**
   * @param commits where committed statements go (the host's ports, `commitToPorts`); without it the
   *   scheduler is a trial one (a forward run or an explanation over a copy): commits reach no cluster.
   * @param tracer where the queue cycle reports its attempts (the live scheduler's OpenTelemetry adapter);
   *   `NO_TRACER` by default, so the simulator and the benchmarks trace nothing.
   */
  constructor(
    readonly profile: Profile,
    readonly state: ClusterState,
    rng: Rng,
    readonly commits?: CommitTarget,
    readonly tracer: Tracer = NO_TRACER,
  ) {
    this.ctx = { state, rng };
  }

  /** A statement over this scheduler's state whose commit goes to its commit target. */
  statement(): Statement {
    return new Statement(this.state, this.commits);
  }

  /** Places one pod and commits it; returns the placement or why not. */
  schedulePod(pod: PodSpec): PodOutcome {
    const stmt = this.statement();
    const r = this.placePod(pod, stmt);
    if (r.ok) stmt.commit();
    else stmt.discard();
    return r;
  }

  /** Places a gang all-or-nothing and commits it. */
  scheduleGang(gang: GangSpec, opts: GangAttemptOptions = {}): GangOutcome {
    const stmt = this.statement();
    const r = this.placeGang(gang, stmt, opts);
    if (r.ok) stmt.commit();
    else stmt.discard();
    return r;
  }

  /** Tentatively places a pod inside `stmt`, optionally restricted to a node index range. */
  placePod(pod: PodSpec, stmt: Statement, range?: Range): PodOutcome {
    const t0 = this.timer === undefined ? 0 : this.timer.nowMs();
    for (const p of this.profile.preFilters) {
      const s = (p.preFilter as NonNullable<typeof p.preFilter>)(pod, this.ctx);
      if (s.code !== 'Success') {
        this.timed('PreFilter', t0);
        return { ok: false, explanation: this.preFilterExplanation(pod, s.reasons ?? []) };
      }
    }
    const v = this.withVolumes(pod);
    this.timed('PreFilter', t0);
    if (!v.ok) return { ok: false, explanation: this.preFilterExplanation(pod, [v.reason]) };
    return this.placeFiltered(v.pod, stmt, range);
  }

  /** The pod with resolved volumes; a pod its pre-filters rejected (checked before) is returned as it is. */
  private volumesOf(pod: PodSpec): PodSpec {
    const v = this.withVolumes(pod);
    return v.ok ? v.pod : pod;
  }

  private readonly resolved = new WeakMap<PodSpec, { readonly version: number; readonly r: { ok: true; pod: PodSpec } | { ok: false; reason: string } }>();

  /**
   * The pod with its claims resolved against the snapshot's storage (VolumeBinding's and VolumeZone's PreFilters,
   * ADR 0070), or why it cannot be placed anywhere. Pods without claims are returned as they are. Resolved
   * again whenever the storage or its assumptions changed (a gang member took a PV).
   */
  private withVolumes(pod: PodSpec): { ok: true; pod: PodSpec } | { ok: false; reason: string } {
    if (pod.claims === undefined) return { ok: true, pod };
    const version = this.state.volumes?.version ?? -1;
    const hit = this.resolved.get(pod);
    if (hit !== undefined && hit.version === version) return hit.r;
    const res = resolvePodVolumes(pod, this.state.volumes);
    const r: { ok: true; pod: PodSpec } | { ok: false; reason: string } = res.ok
      ? { ok: true, pod: { ...pod, volumes: res.volumes } }
      : { ok: false, reason: res.reason };
    this.resolved.set(pod, { version, r });
    return r;
  }

  /** `placePod` after its pre-filters passed: the profile's selector over the shape's index. */
  private placeFiltered(pod: PodSpec, stmt: Statement, range?: Range): PodOutcome {
    const idx = this.index(pod);
    const start = range?.start ?? 0;
    const end = range?.end ?? this.state.size;
    const i = this.select(idx, start, end);
    if (i < 0) return { ok: false, explanation: this.explainIndex(`pod ${pod.id}`, pod, idx, start, end) };
    const node = this.state.nodes[i] as NodeState;
    return this.commitTo(pod, node, stmt)
      ? { ok: true, placement: this.lastPlacement }
      : { ok: false, explanation: this.explainIndex(`pod ${pod.id}`, pod, idx, start, end) };
  }

  private lastPlacement: Placement = { podId: '', node: '', gpus: [] };

  /** Allocates pod on node inside stmt (GPU pick, only among `allowed` GPUs if given, + reserve plugins); false if a plugin refuses. */
  private commitTo(pod: PodSpec, node: NodeState, stmt: Statement, allowed?: GpuMask): boolean {
    let gpus: readonly number[] = [];
    if (pod.request.gpuCount > 0) {
      const t0 = this.timer === undefined ? 0 : this.timer.nowMs();
      const picked = (this.profile.devicePicker.pickGpus as NonNullable<typeof this.profile.devicePicker.pickGpus>)(pod, node, this.ctx, allowed);
      this.timed('PickGpus', t0);
      if (picked === undefined) return false;
      gpus = picked;
    }
    const cp = stmt.checkpoint();
    const a = allocationFor(pod, node.name, gpus);
    // The PVs and provisioning VolumeBinding assumes on this node (its Reserve), carried to the binder.
    stmt.allocate(pod.volumes === undefined ? a : { ...a, volumes: allocationVolumes(pod.volumes, node) });
    const t1 = this.timer === undefined ? 0 : this.timer.nowMs();
    for (const r of this.profile.reserves) {
      const s = (r.reserve as NonNullable<typeof r.reserve>)(pod, node, this.ctx);
      if (s.code !== 'Success') {
        for (const u of this.profile.reserves) u.unreserve?.(pod, node, this.ctx);
        stmt.rollback(cp);
        this.timed('Reserve', t1);
        return false;
      }
    }
    this.timed('Reserve', t1);
    this.lastPlacement = { podId: pod.id, node: node.name, gpus };
    return true;
  }

  private select(idx: ScoreIndex, start: number, end: number): number {
    switch (this.profile.selector) {
      case 'best':
        return idx.best(start, end);
      case 'random': {
        const c = idx.feasibleCount(start, end);
        return c === 0 ? -1 : idx.kthFeasibleFrom(start, this.ctx.rng.int(c));
      }
      case 'round-robin': {
        const c = idx.feasibleCount(start, end);
        if (c === 0) return -1;
        const from = this.rrCursor >= start && this.rrCursor < end ? this.rrCursor : start;
        let i = idx.feasibleCount(from, end) > 0 ? idx.kthFeasibleFrom(from, 0) : idx.kthFeasibleFrom(start, 0);
        if (i >= end) i = idx.kthFeasibleFrom(start, 0);
        this.rrCursor = i + 1;
        return i;
      }
    }
  }

  /** The up-to-date index for the pod's shape. */
  index(pod: PodSpec): ScoreIndex {
    // While some bound pod's required anti-affinity matches this pod's namespace and labels, they decide where it
    // may go (the symmetric check), so they join the key of shapes that do not carry them already.
    const own = hasInterPodFields(pod);
    const symmetric =
      !own &&
      this.state.antiPodCount > 0 &&
      this.state.antiAffinityMatches({ namespace: pod.namespace ?? 'default', ...(pod.labels === undefined ? {} : { labels: pod.labels }) });
    const key = symmetric ? this.metaKey(pod) : shapeKey(pod);
    let idx = this.indices.get(key);
    if (idx === undefined) {
      if (this.indices.size >= MAX_INDICES) this.evictIndex();
      idx = new ScoreIndex(this.state, this.profile, pod, this.counters, own || symmetric);
      this.indices.set(key, idx);
    }
    idx.lastUsed = ++this.tick;
    const t0 = this.timer === undefined ? 0 : this.timer.nowMs();
    idx.refresh();
    this.timed('FilterScore', t0);
    return idx;
  }

  /** Shape keys with the pod's namespace and labels; made once for pods in `default` without labels (most pods of a simulation). */
  private readonly plainMetaKeys = new Map<string, string>();
  private metaKey(pod: PodSpec): string {
    const base = shapeKey(pod);
    if (pod.labels !== undefined || pod.namespace !== undefined) return `${base}|m${podMetaKey(pod)}`;
    let k = this.plainMetaKeys.get(base);
    if (k === undefined) {
      if (this.plainMetaKeys.size >= 4096) this.plainMetaKeys.clear();
      k = `${base}|m${podMetaKey(pod)}`;
      this.plainMetaKeys.set(base, k);
    }
    return k;
  }

  private evictIndex(): void {
    let oldestKey = '';
    let oldest = Number.POSITIVE_INFINITY;
    for (const [k, v] of this.indices) {
      if (v.lastUsed < oldest) {
        oldest = v.lastUsed;
        oldestKey = k;
      }
    }
    this.indices.delete(oldestKey);
  }

  /**
   * Places a gang: all members or (at least minMember) nothing. With topology search, the smallest domain
   * level that can hold the whole gang wins (node, NVLink domain, rack, block, zone, then the cluster), and
   * inside a level the domain that leaves the least free capacity (best fit), so large free domains stay whole.
   * A required level is a hard limit: the gang waits rather than span wider. `required: nvlink-domain` on a
   * node outside any multi-node NVLink domain means one NVLink island of that node (see `placeInIsland`).
   */
  placeGang(gang: GangSpec, stmt: Statement, opts: GangAttemptOptions = {}): GangOutcome {
    const members = gang.members;
    const explain = opts.explain !== false;
    // Built only when an explanation is returned: a placed gang needs none.
    const subject = (): string => (explain ? `gang ${gang.name} (${describeMembers(members)})` : `gang ${gang.name}`);
    if (members.length < gang.minMember) {
      return {
        ok: false,
        explanation: simpleExplanation(subject(), this.state.size, `only ${members.length} of minMember ${gang.minMember} pods exist`, false),
      };
    }
    const preFilters = this.profile.preFilters;
    const t0 = this.timer === undefined ? 0 : this.timer.nowMs();
    for (let i = 0; i < members.length; i++) {
      const m = members[i] as PodSpec;
      for (let j = 0; j < preFilters.length; j++) {
        const p = preFilters[j] as Plugin;
        const s = (p.preFilter as NonNullable<typeof p.preFilter>)(m, this.ctx);
        if (s.code !== 'Success') {
          this.timed('PreFilter', t0);
          return { ok: false, explanation: this.preFilterExplanation(m, s.reasons ?? [], subject()) };
        }
      }
      if (m.claims !== undefined) {
        const v = this.withVolumes(m);
        if (!v.ok) {
          this.timed('PreFilter', t0);
          return { ok: false, explanation: this.preFilterExplanation(m, [v.reason], subject()) };
        }
      }
    }
    this.timed('PreFilter', t0);
    const required = gang.topology.required;
    // A gang of one pod with nothing to keep together is placed as a pod (its pre-filters passed above), by the profile's selector too.
    if (members.length === 1 && required === undefined && this.profile.selector !== 'best') {
      const r = this.placeFiltered(this.volumesOf(members[0] as PodSpec), stmt);
      return r.ok ? { ok: true, placements: [r.placement], level: 'cluster', pending: [] } : { ok: false, explanation: r.explanation };
    }
    const levels = this.gangLevels(required, members.length === 1);
    const need = demand(members, gang.minMember);
    const allNodeDomains = this.state.domains['nvlink-domain'].length === this.state.size;
    // Only a gang that must stay in one NVLink domain and asks for GPUs can be bound to one island.
    const islandGang = required === 'nvlink-domain' && usesGpus(members);
    // The default choice (ADR 0188): every trial placement is kept and judged by step time and fit together.
    const aware = this.profile.gangChoice === 'step-aware' && members.length > 1 && usesGpus(members);
    const trials: { level: TopologyLevel | 'cluster'; d: Range; islandOnly: boolean; how: TrialLayout; cand: GangCandidate }[] = [];
    for (let li = 0; li < levels.length; li++) {
      const level = levels[li] as TopologyLevel | 'cluster';
      if (level === 'nvlink-domain' && allNodeDomains && required !== 'nvlink-domain') continue;
      // No domain of this level is large enough, even empty: skip the scan of all its domains.
      if (level !== 'cluster' && !this.levelCanHold(level, need)) continue;
      const domains: readonly Range[] = level === 'cluster' ? [this.clusterRange()] : this.state.domains[level];
      const nCand = this.collectCandidates(level, domains, need);
      // Up to the preferred (or required) level every candidate domain is tried; wider levels are capped.
      const exhaustive = levelRank(level) <= Math.max(levelRank(gang.topology.preferred), levelRank(required));
      const limit = exhaustive ? nCand : Math.min(nCand, MAX_DOMAIN_TRIALS);
      // By predicted step time (ADR 0105): every candidate of the level is tried, the fastest is placed again.
      const byStep = this.profile.gangChoice === 'step-time';
      let bestT = -1;
      let bestStep = Number.POSITIVE_INFINITY;
      // The step-aware choice compares the first candidates in best-fit order. When the best of them would make the
      // gang wait for a better placement, it also tries one domain of each kind of node not among them (ADR 0196):
      // best fit alone offers a 4-GPU job sixteen 4-GPU L40S nodes and never the free H100 node, and the job would
      // wait for what is already free.
      const firstTrials = Math.min(limit, MAX_AWARE_TRIALS);
      // The first trials' domains; their kinds are worked out only if the search goes on past them.
      const firstDomains: Range[] = [];
      let kindsTried: Set<string> | undefined;
      let otherKinds = 0;
      for (let t = 0; t < (aware ? nCand : limit); t++) {
        const d = domains[this.candidate(t, nCand, domains.length)] as Range;
        if (aware) {
          if (t >= limit || (t >= firstTrials && trials.length > 0)) {
            if (trials.length === 0 || otherKinds >= MAX_AWARE_TRIALS) break;
            if (kindsTried === undefined) {
              if (!slowEnoughToWait(leastSlowdown(trials))) break;
              kindsTried = new Set(firstDomains.map((f) => this.domainKind(f)));
            }
            const kind = this.domainKind(d);
            if (kindsTried.has(kind)) continue;
            kindsTried.add(kind);
            otherKinds++;
          } else firstDomains.push(d);
        }
        // A node outside any multi-node NVLink domain is its own domain: then "one NVLink domain" means one island,
        // at the node level as well as at the nvlink-domain level (both ranges are then that one node).
        const islandOnly = islandGang && this.state.nodes[d.start]?.spec.location.nvlinkDomain === undefined;
        // Such a node's islands were all tried at the node level already (every candidate, same free counts).
        if (islandOnly && level === 'nvlink-domain' && levels[0] === 'node') continue;
        this.counters.domainTrials++;
        const cp = stmt.checkpoint();
        const placed = islandOnly ? this.placeInIsland(members, gang.minMember, stmt, d.start, need) : this.placeMembers(members, gang.minMember, stmt, d);
        if (placed !== undefined && this.permitted(gang, placed.placements.length)) {
          if (aware) {
            const cand = this.candidateOf(gang, placed.placements, t);
            // The best-fit domain, as fast as anywhere and filling whole islands (none left partly free): take it now.
            if (t === 0 && cand.slowdown <= 1 + GANG_CHOICE.tolerance && cand.splits === 0)
              return { ok: true, placements: placed.placements, level, pending: placed.pending };
            trials.push({ level, d, islandOnly, how: 'fit', cand });
          } else if (!byStep) return { ok: true, placements: placed.placements, level, pending: placed.pending };
          const step = byStep ? this.predictedStep(gang, placed.placements) : Number.POSITIVE_INFINITY;
          if (step < bestStep) {
            bestStep = step;
            bestT = t;
          }
        }
        stmt.rollback(cp);
        // Over several nodes, the members packed onto the emptiest nodes too: fewer nodes, fewer hops for the
        // all-reduce; the best-fit placement above fills holes instead (ADR 0188).
        if (aware && !islandOnly && d.end - d.start > 1 && d.end - d.start <= MAX_PACKED_NODES) {
          const packed = this.placeMembers(members, gang.minMember, stmt, d, undefined, true);
          if (packed !== undefined && this.permitted(gang, packed.placements.length))
            trials.push({ level, d, islandOnly, how: 'packed', cand: this.candidateOf(gang, packed.placements, t + 0.5) });
          stmt.rollback(cp);
          // And spread one fast group per node, where nodes have several (PCIe-only ones): packing puts the ring
          // across sockets, often slower than the network between nodes (ADR 0202).
          if (this.hasSplitNodes(d)) {
            const spread = this.placeSpread(members, gang.minMember, stmt, d);
            if (spread !== undefined && this.permitted(gang, spread.placements.length))
              trials.push({ level, d, islandOnly, how: 'spread', cand: this.candidateOf(gang, spread.placements, t + 0.75) });
            stmt.rollback(cp);
          }
        }
        if (byStep && bestT >= 0 && t + 1 >= Math.min(limit, MAX_STEP_TIME_TRIALS)) break;
      }
      // The narrowest level with a placement decides, as in first fit (locality first).
      if (trials.length > 0) break;
      if (bestT >= 0) {
        // The state is as it was before the trials: the same domain gives the same placement again.
        const d = domains[this.candidate(bestT, nCand, domains.length)] as Range;
        const islandOnly = islandGang && this.state.nodes[d.start]?.spec.location.nvlinkDomain === undefined;
        const cp = stmt.checkpoint();
        const placed = islandOnly ? this.placeInIsland(members, gang.minMember, stmt, d.start, need) : this.placeMembers(members, gang.minMember, stmt, d);
        if (placed !== undefined && this.permitted(gang, placed.placements.length))
          return { ok: true, placements: placed.placements, level, pending: placed.pending };
        stmt.rollback(cp);
      }
    }
    if (trials.length > 0) {
      const pick = trials[chooseCandidate(trials.map((x) => x.cand))];
      const delay = opts.waitedMs === undefined ? undefined : holdFor(trials, opts.waitedMs, opts.runMs);
      if (delay !== undefined) {
        // It fits: not a node problem, so no per-node reasons, only the wait and what it expects from it.
        const why = describeDelay(delay);
        return {
          ok: false,
          explanation: { subject: subject(), nodes: this.state.size, fitting: 0, reasons: [], message: `${subject()} ${why}`, unresolvable: false },
          delay,
        };
      }
      if (pick !== undefined) {
        const cp = stmt.checkpoint();
        const placed = pick.islandOnly
          ? this.placeInIsland(members, gang.minMember, stmt, pick.d.start, need)
          : pick.how === 'spread'
            ? this.placeSpread(members, gang.minMember, stmt, pick.d)
            : this.placeMembers(members, gang.minMember, stmt, pick.d, undefined, pick.how === 'packed');
        if (placed !== undefined && this.permitted(gang, placed.placements.length))
          return { ok: true, placements: placed.placements, level: pick.level, pending: placed.pending };
        stmt.rollback(cp);
      }
    }
    // Trial placements (preemption, reservations, ETAs) skip the O(nodes) explanation.
    return { ok: false, explanation: explain ? this.explainGang(gang, subject()) : simpleExplanation(subject(), this.state.size, 'not placed (trial)', false) };
  }

  /** Predicted step time (s) of the gang's training job on these placements (ADR 0103). */
  private predictedStep(gang: GangSpec, placements: readonly Placement[]): number {
    const args = this.profile.stepTimeArgs;
    const model = args?.modelOf?.(gang) ?? DEFAULT_TRAINING_MODEL;
    return stepTime(
      model,
      sharesOf(placements, (n) => this.state.node(n)?.spec),
      args?.network ?? DEFAULT_NETWORK,
    ).stepSec;
  }

  private readonly bestSteps = new BestStepCache();

  /** Whether some node of the range has its GPUs in several fast groups (a spread trial differs from packing there). */
  private hasSplitNodes(d: Range): boolean {
    for (let i = d.start; i < d.end; i++) if (fastGroupsOf((this.state.nodes[i] as NodeState).spec.topology).count > 1) return true;
    return false;
  }

  /**
   * The members spread over the range's nodes, each node's share inside one fast group (fastGroupsOf): the next node
   * is the unused one whose widest fully free group is widest (then the earliest), and its members stay in that group.
   */
  private placeSpread(members: readonly PodSpec[], minMember: number, stmt: Statement, d: Range): { placements: Placement[]; pending: string[] } | undefined {
    const placements: Placement[] = [];
    const pending: string[] = [];
    const used = new Set<number>();
    let cur = -1;
    let mask: Uint8Array | undefined;
    for (let m = 0; m < members.length; m++) {
      const v = this.withVolumes(members[m] as PodSpec);
      const pod = v.ok ? v.pod : (members[m] as PodSpec);
      const idx = this.index(pod);
      let ok = v.ok && cur >= 0 && idx.best(cur, cur + 1) === cur && this.commitTo(pod, this.state.nodes[cur] as NodeState, stmt, mask);
      if (!ok && v.ok) {
        const next = this.widestGroup(idx, d, used, pod.request.gpuCount);
        if (next !== undefined) {
          cur = next.node;
          mask = next.mask;
          used.add(cur);
          ok = this.commitTo(pod, this.state.nodes[cur] as NodeState, stmt, mask);
        }
      }
      if (!ok) {
        if (placements.length + (members.length - m - 1) < minMember) return undefined;
        pending.push(pod.id);
        continue;
      }
      placements.push(this.lastPlacement);
    }
    return placements.length >= minMember ? { placements, pending } : undefined;
  }

  /** The unused feasible node of the range whose widest fully free fast group is widest (at least `gpus`), and that group. */
  private widestGroup(idx: ScoreIndex, d: Range, used: ReadonlySet<number>, gpus: number): { node: number; mask: Uint8Array } | undefined {
    let node = -1;
    let group = -1;
    let most = Math.max(1, gpus) - 1;
    for (let i = d.start; i < d.end; i++) {
      if (used.has(i)) continue;
      const n = this.state.nodes[i] as NodeState;
      const { group: widest, size: wide } = widestFastGroup(n.spec.topology, (g) => n.gpuUsable[g] === 1 && n.gpuFree[g] === 1000);
      if (wide > most && idx.best(i, i + 1) === i) {
        node = i;
        group = widest;
        most = wide;
      }
    }
    if (node < 0) return undefined;
    const groups = fastGroupsOf((this.state.nodes[node] as NodeState).spec.topology);
    return { node, mask: Uint8Array.from(groups.of, (k) => (k === group ? 1 : 0)) };
  }

  /** The feasible node of the range with the most whole free GPUs (then the earliest): a packed gang spans few nodes. */
  private emptiestFeasible(idx: ScoreIndex, d: Range): number {
    let chosen = -1;
    let most = -1;
    for (let i = d.start; i < d.end; i++) {
      const free = this.state.fullyFreeGpusIn(i, i + 1);
      if (free > most && idx.best(i, i + 1) === i) {
        chosen = i;
        most = free;
      }
    }
    return chosen;
  }

  /** The training job a gang runs, as the step-aware choice sees it: the host's knowledge, its pods' statement, the default job. */
  trainingModelOf(gang: GangSpec): TrainingModel {
    return this.profile.stepTimeArgs?.modelOf?.(gang) ?? gang.members[0]?.trainingModel ?? DEFAULT_TRAINING_MODEL;
  }

  /** How a trial placement of the gang looks to the step-aware choice: its slowdown and a heavy job's (ADR 0188). */
  private candidateOf(gang: GangSpec, placements: readonly Placement[], order: number): GangCandidate {
    const args = this.profile.stepTimeArgs;
    // The host's knowledge first, then what the job's pods state (TrainingJob spec.model), then the default job.
    const model = this.trainingModelOf(gang);
    const net = args?.network ?? DEFAULT_NETWORK;
    const shares = sharesOf(placements, (n) => this.state.node(n)?.spec);
    let gpus = 0;
    for (const s of shares) gpus += s.gpus.length;
    const step = stepTime(model, shares, net).stepSec;
    const own = step / this.bestSteps.bestStepSec(this.state.nodes, model, gpus, net);
    const gpuModels = [...new Set(shares.map((x) => x.gpuModel))].sort();
    const linkSlowdown = step / this.bestSteps.bestStepOnModels(this.state.nodes, model, gpus, net, gpuModels);
    // What the placement takes from others: whole free NVLink islands are what communication-heavy jobs need,
    // so breaking a large one costs more than taking from a small one (sum of squared free island sizes lost).
    let islandLoss = 0;
    let splits = 0;
    for (const s of shares) {
      const node = this.state.node(s.name);
      if (node === undefined) continue;
      const islandOf = s.topology.islandOf;
      const used = new Map<number, number>();
      for (const g of s.gpus) used.set(islandOf[g] as number, (used.get(islandOf[g] as number) ?? 0) + 1);
      for (const [k, u] of used) {
        let after = 0;
        for (let g = 0; g < islandOf.length; g++) if (islandOf[g] === k && node.gpuUsable[g] === 1 && node.gpuFree[g] === 1000) after++;
        islandLoss += (after + u) * (after + u) - after * after;
        if (after > 0) splits++;
      }
    }
    return { order, slowdown: own, islandLoss, splits, linkSlowdown };
  }

  /** The kinds of node in a domain (shape, or GPU model and count): what a gang's step time there depends on, links aside. */
  private domainKind(d: Range): string {
    const kindOf = (i: number): string => {
      const spec = this.state.nodes[i]?.spec;
      return spec === undefined ? '' : (spec.shape ?? `${nodeGpuModel(spec)}×${spec.topology.gpuCount}`);
    };
    if (d.end - d.start === 1) return kindOf(d.start);
    const kinds = new Set<string>();
    for (let i = d.start; i < d.end; i++) kinds.add(kindOf(i));
    return [...kinds].sort().join('+');
  }

  private readonly levelLists = new Map<string, readonly (TopologyLevel | 'cluster')[]>();

  /** The levels a gang search walks, narrowest first (one list per required level, made once). */
  private gangLevels(required: TopologyLevel | undefined, single: boolean): readonly (TopologyLevel | 'cluster')[] {
    const key = `${required ?? ''}${single ? '1' : ''}`;
    let levels = this.levelLists.get(key);
    if (levels === undefined) {
      const list: (TopologyLevel | 'cluster')[] = [];
      // A gang of one pod has nothing to keep together: it is placed like a pod, by the profile's scores.
      if (single && required === undefined) list.push('cluster');
      else if (this.profile.gangSearch === 'topology') {
        for (const l of TOPOLOGY_LEVELS) {
          list.push(l);
          if (l === required) break;
        }
        if (required === undefined) list.push('cluster');
      } else {
        list.push(required ?? 'cluster');
      }
      levels = list;
      this.levelLists.set(key, levels);
    }
    return levels;
  }

  /** Reports the time since t0 to the timer, if any. */
  private timed(point: ExtensionPoint, t0: number): void {
    if (this.timer !== undefined) this.timer.observe(point, (this.timer.nowMs() - t0) / 1000);
  }

  private permitted(gang: GangSpec, placed: number): boolean {
    const permits = this.profile.permits;
    const t0 = this.timer === undefined ? 0 : this.timer.nowMs();
    for (let i = 0; i < permits.length; i++) {
      const p = permits[i] as Plugin;
      if ((p.permit as NonNullable<typeof p.permit>)(gang, placed, this.ctx).code !== 'Success') {
        this.timed('Permit', t0);
        return false;
      }
    }
    this.timed('Permit', t0);
    return true;
  }

  private clusterRangeCache: Range | undefined;
  private clusterRange(): Range {
    if (this.clusterRangeCache?.end !== this.state.size) this.clusterRangeCache = { start: 0, end: this.state.size };
    return this.clusterRangeCache;
  }

  /** Candidate domains of the current level: sort keys (left × domains + domain index), `sorted` once past the first. */
  private candKeys = new Float64Array(64);
  private candSorted = false;

  /**
   * Collects the domains that could hold the demand (free whole GPUs and free milli, from the cluster
   * state's per-domain counts, O(1) each) with their best-fit key: least free milli left, then index order.
   * Nothing is sorted yet: most gangs are placed in their first candidate (see `candidate`).
   */
  private collectCandidates(level: TopologyLevel | 'cluster', domains: readonly Range[], need: Demand): number {
    if (this.candKeys.length < domains.length) this.candKeys = new Float64Array(Math.max(domains.length, 2 * this.candKeys.length));
    const keys = this.candKeys;
    const nd = domains.length;
    this.candSorted = false;
    if (level === 'cluster') {
      const d = domains[0] as Range;
      const full = this.state.fullyFreeGpusIn(d.start, d.end);
      const milli = this.state.gpuFreeMilliIn(d.start, d.end);
      if (full < need.wholeGpus || milli < need.gpuMilli) return 0;
      keys[0] = (milli - need.gpuMilli) * nd;
      return 1;
    }
    const { fullyFreeGpus, gpuFreeMilli } = this.state.domainFreeCounts(level);
    const wholeGpus = need.wholeGpus;
    const gpuMilli = need.gpuMilli;
    let n = 0;
    for (let di = 0; di < nd; di++) {
      const milli = gpuFreeMilli[di] as number;
      if ((fullyFreeGpus[di] as number) < wholeGpus || milli < gpuMilli) continue;
      // Exact: left ≤ 2^31 milli and nd ≤ 2^21 domains keep the key below 2^53.
      keys[n++] = (milli - gpuMilli) * nd + di;
    }
    return n;
  }

  /**
   * Domain index of the t-th candidate in best-fit order (least free capacity left, then index order).
   * The first is found by a linear scan; only when it fails are the candidates sorted.
   */
  private candidate(t: number, n: number, nd: number): number {
    const keys = this.candKeys;
    if (t === 0) {
      let min = 0;
      for (let i = 1; i < n; i++) if ((keys[i] as number) < (keys[min] as number)) min = i;
      return (keys[min] as number) % nd;
    }
    if (!this.candSorted) {
      keys.subarray(0, n).sort();
      this.candSorted = true;
    }
    return (keys[t] as number) % nd;
  }

  /** Whether the largest domain of the level, with every GPU free, could hold the demand. */
  private levelCanHold(level: TopologyLevel, need: Demand): boolean {
    const cap = this.state.maxDomainGpus(level);
    return need.wholeGpus <= cap && need.gpuMilli <= cap * 1000;
  }

  /**
   * Places the whole gang inside one NVLink island of node `ni`. The islands that could hold the demand
   * (free whole GPUs and free milli) are tried best fit first: fewest free whole GPUs left, then island
   * order; each with every member's GPU pick restricted to that island. The next island is tried when the
   * members do not fit after all (CPU, memory, pods per node or a reserve step). Node scores are not touched:
   * the island only narrows the GPU choice on the node, so the score index stays valid.
   */
  private placeInIsland(
    members: readonly PodSpec[],
    minMember: number,
    stmt: Statement,
    ni: number,
    need: Demand,
  ): { placements: Placement[]; pending: string[] } | undefined {
    const node = this.state.nodes[ni] as NodeState;
    const islandOf = node.spec.topology.islandOf;
    const n = islandOf.length;
    let islands = 0;
    for (let g = 0; g < n; g++) islands = Math.max(islands, (islandOf[g] as number) + 1);
    const full = new Array<number>(islands).fill(0);
    const milli = new Array<number>(islands).fill(0);
    for (let g = 0; g < n; g++) {
      if (node.gpuUsable[g] !== 1) continue;
      const k = islandOf[g] as number;
      const f = node.gpuFree[g] as number;
      if (f === 1000) full[k] = (full[k] as number) + 1;
      milli[k] = (milli[k] as number) + f;
    }
    const order: number[] = [];
    for (let k = 0; k < islands; k++) if ((full[k] as number) >= need.wholeGpus && (milli[k] as number) >= need.gpuMilli) order.push(k);
    order.sort((a, b) => (full[a] as number) - (full[b] as number) || a - b);
    const range = { start: ni, end: ni + 1 };
    const mask = new Uint8Array(n);
    for (let t = 0; t < order.length; t++) {
      const k = order[t] as number;
      for (let g = 0; g < n; g++) mask[g] = islandOf[g] === k ? 1 : 0;
      const cp = stmt.checkpoint();
      const placed = this.placeMembers(members, minMember, stmt, range, mask);
      if (placed !== undefined) return placed;
      stmt.rollback(cp);
    }
    return undefined;
  }

  /**
   * Places members inside range `d`; a member first tries the nodes the gang already uses (fewest nodes,
   * best ring bandwidth), then the best-scoring node of the range. With `allowed`, every GPU pick is
   * restricted to those GPUs (for one node: `d` is then that node).
   */
  private placeMembers(
    members: readonly PodSpec[],
    minMember: number,
    stmt: Statement,
    d: Range,
    allowed?: GpuMask,
    packed = false,
  ): { placements: Placement[]; pending: string[] } | undefined {
    const placements: Placement[] = [];
    const pending: string[] = [];
    const used: number[] = [];
    for (let m = 0; m < members.length; m++) {
      // Resolved per member: the members placed before it may have taken PVs (kube's assume cache), so two
      // members never pick the same static PV.
      const v = this.withVolumes(members[m] as PodSpec);
      const pod = v.ok ? v.pod : (members[m] as PodSpec);
      const idx = this.index(pod);
      let chosen = -1;
      for (let u = v.ok ? used.length - 1 : -1; u >= 0; u--) {
        const i = used[u] as number;
        if (idx.best(i, i + 1) === i) {
          chosen = i;
          break;
        }
      }
      if (chosen < 0 && v.ok) chosen = packed ? this.emptiestFeasible(idx, d) : idx.best(d.start, d.end);
      const ok = chosen >= 0 && this.commitTo(pod, this.state.nodes[chosen] as NodeState, stmt, allowed);
      if (!ok) {
        // Members past minMember may stay pending (elastic gangs); below it the gang fails here.
        if (placements.length + (members.length - m - 1) < minMember) return undefined;
        pending.push(pod.id);
        continue;
      }
      placements.push(this.lastPlacement);
      if (!used.includes(chosen)) used.push(chosen);
    }
    return placements.length >= minMember ? { placements, pending } : undefined;
  }

  /** Why a pod cannot be placed in [start, end), from the shape index's cached filter results. */
  explainPod(original: PodSpec, range?: Range): Explanation {
    const v = this.withVolumes(original);
    if (!v.ok) return this.preFilterExplanation(original, [v.reason]);
    const pod = v.pod;
    const idx = this.index(pod);
    return this.explainIndex(`pod ${pod.id}`, pod, idx, range?.start ?? 0, range?.end ?? this.state.size);
  }

  private explainIndex(subject: string, pod: PodSpec, idx: ScoreIndex, start: number, end: number, extra: ReasonCount[] = []): Explanation {
    const counts = idx.reasonCounts(start, end);
    const fitting = counts[Reason.Fits] as number;
    const reasons: ReasonCount[] = [];
    let unresolvable = fitting === 0;
    for (let code = 1; code < counts.length; code++) {
      const c = counts[code] as number;
      if (c === 0) continue;
      const info = REASONS[code];
      if (info === undefined) continue;
      if (info.resolvable) unresolvable = false;
      for (const r of info.detail === undefined ? [{ reason: info.text(pod), count: c }] : this.detailed(pod, idx, code, info.detail, start, end)) {
        // Codes with one text (nodeSelector and node affinity, as in kube-scheduler) count together.
        const k = reasons.findIndex((x) => x.reason === r.reason);
        if (k < 0) reasons.push(r);
        else reasons[k] = { reason: r.reason, count: (reasons[k] as ReasonCount).count + r.count };
      }
    }
    reasons.push(...extra);
    reasons.sort((a, b) => b.count - a.count || (a.reason < b.reason ? -1 : 1));
    const total = end - start;
    const head = `${fitting}/${total} nodes fit ${subject}`;
    const message =
      reasons.length === 0
        ? `${head}: a device plugin or reserve step refused the best node`
        : `${head}: ${reasons.map((r) => `${r.count} ${r.reason}`).join(', ')}`;
    return { subject, nodes: total, fitting, reasons, message, unresolvable };
  }

  /** Nodes of one reason counted per node-dependent text (which taint, which resource), in first-seen order. */
  private detailed(pod: PodSpec, idx: ScoreIndex, code: number, detail: (p: PodSpec, n: NodeState) => string, start: number, end: number): ReasonCount[] {
    const byText = new Map<string, number>();
    for (let i = start; i < end; i++) {
      if (idx.reason[i] !== code) continue;
      const t = detail(pod, this.state.nodes[i] as NodeState);
      byText.set(t, (byText.get(t) ?? 0) + 1);
    }
    return [...byText].map(([reason, count]) => ({ reason, count }));
  }

  private explainGang(gang: GangSpec, subject: string): Explanation {
    const member = gang.members[0];
    if (member === undefined) return simpleExplanation(subject, this.state.size, 'the gang has no members', true);
    const first = this.volumesOf(member);
    const idx = this.index(first);
    const fitOne = idx.feasibleCount();
    const extra: ReasonCount[] = [];
    if (fitOne > 0) {
      const required = gang.topology.required;
      if (required === 'nvlink-domain' && usesGpus(gang.members)) {
        // On a node outside any multi-node NVLink domain, the gang had to fit one NVLink island of it.
        let island = 0;
        for (let i = 0; i < this.state.size; i++)
          if (idx.reason[i] === Reason.Fits && (this.state.nodes[i] as NodeState).spec.location.nvlinkDomain === undefined) island++;
        if (island > 0) extra.push({ reason: 'would split the NVLink domain (required: no NVLink island of the node holds the whole gang)', count: island });
        if (fitOne > island) extra.push({ reason: 'would split the NVLink domain (required)', count: fitOne - island });
      } else {
        const what =
          required === undefined
            ? `could hold single members, but not ${gang.minMember} of them together`
            : `would split the ${required === 'nvlink-domain' ? 'NVLink domain' : required} (required)`;
        extra.push({ reason: what, count: fitOne });
      }
    }
    const base = this.explainIndex(subject, first, idx, 0, this.state.size, extra);
    // Nodes that fit one member do not fit the gang: report 0 fitting for the gang as a whole.
    const reasons = base.reasons;
    const message = `0/${base.nodes} nodes fit ${subject}: ${reasons.map((r) => `${r.count} ${r.reason}`).join(', ')}`;
    return { ...base, fitting: 0, message, unresolvable: base.unresolvable && fitOne === 0 };
  }

  private preFilterExplanation(pod: PodSpec, reasons: readonly string[], subject = `pod ${pod.id}`): Explanation {
    return simpleExplanation(subject, this.state.size, reasons.join('; ') || 'rejected before filtering', true);
  }
}

/** Position of a level from the narrowest (0); undefined or cluster → -1 (no level asked). */
function levelRank(level: TopologyLevel | 'cluster' | undefined): number {
  return level === undefined || level === 'cluster' ? -1 : TOPOLOGY_LEVELS.indexOf(level);
}

interface Demand {
  readonly wholeGpus: number;
  readonly gpuMilli: number;
}

function usesGpus(members: readonly PodSpec[]): boolean {
  for (let i = 0; i < members.length; i++) if ((members[i] as PodSpec).request.gpuCount > 0) return true;
  return false;
}

function demand(members: readonly PodSpec[], minMember: number): Demand {
  // Capacity pre-check uses the cheapest minMember members, so elastic extras never block a domain.
  const first = members[0];
  if (first !== undefined && members.every((m) => m.request.gpuCount === first.request.gpuCount && m.request.gpuMilli === first.request.gpuMilli)) {
    const k = Math.min(minMember, members.length);
    const r = first.request;
    return { wholeGpus: k * (r.gpuMilli >= 1000 ? r.gpuCount : 0), gpuMilli: k * r.gpuCount * r.gpuMilli };
  }
  const per = members.map((m) => ({ whole: m.request.gpuMilli >= 1000 ? m.request.gpuCount : 0, milli: m.request.gpuCount * m.request.gpuMilli }));
  per.sort((a, b) => a.milli - b.milli);
  let wholeGpus = 0;
  let gpuMilli = 0;
  for (let i = 0; i < minMember && i < per.length; i++) {
    wholeGpus += (per[i] as { whole: number }).whole;
    gpuMilli += (per[i] as { milli: number }).milli;
  }
  return { wholeGpus, gpuMilli };
}

export function describeMembers(members: readonly PodSpec[]): string {
  const groups = new Map<string, number>();
  for (const m of members) {
    const r = m.request;
    const g = r.gpuCount === 0 ? 'no GPU' : r.gpuMilli < 1000 ? `${(r.gpuMilli / 1000).toFixed(2).replace(/0+$/, '')} GPU` : `${r.gpuCount} GPU`;
    groups.set(g, (groups.get(g) ?? 0) + 1);
  }
  return [...groups].map(([g, c]) => `${c}×${g}`).join(' + ');
}

function simpleExplanation(subject: string, nodes: number, why: string, unresolvable: boolean): Explanation {
  return { subject, nodes, fitting: 0, reasons: [{ reason: why, count: nodes }], message: `0/${nodes} nodes fit ${subject}: ${why}`, unresolvable };
}

export type { ReasonCode };
