/**
 * kube-scheduler's HTTP extender (k8s.io/kube-scheduler/extender/v1) answered by SITS's core, for teams that
 * keep kube-scheduler (ADR 0057). kube-scheduler runs its own filters, then asks here:
 * - filter: the node SITS's core would place the pod on (GPU topology, fragmentation, models), among the nodes
 *   kube-scheduler offers; the answer is held as a plan until the pod's bind, so the next pod's filter (which
 *   kube-scheduler may send before this bind) sees those GPUs taken;
 * - gangs: the whole gang is planned when its first member is filtered; each member's filter is answered with
 *   its planned node, and the members' bind calls wait for each other, then the gang is bound at once through
 *   the live Binder (ADR 0006) — all or nothing; a plan not bound within its time is dropped;
 * - prioritize: SITS's score mapped onto 0..MaxExtenderPriority (10), the planned node 10;
 * - bind: the planned GPUs (or the core's pick on the node kube-scheduler chose) through the live Binder, which
 *   writes the gpu-indices annotation with the Binding;
 * - preempt: per candidate node the victims SITS would evict (lowest priority first, whole gangs only).
 * The cluster is seen through the live scheduler's informers and ClusterCache (passive), nodeCacheCapable.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { cloneState } from '../../core/actions/eta.ts';
import { REASONS, type ReasonCode } from '../../core/framework/reasons.ts';
import { Scheduler, type Placement } from '../../core/framework/scheduler.ts';
import type { Profile } from '../../core/framework/types.ts';
import type { GangSpec, NodeSelectorRequirement, NodeSelectorTerm, PodSpec } from '../../core/model/pod.ts';
import type { Rng } from '../../core/ports.ts';
import type { ClusterState } from '../../core/snapshot/cluster-state.ts';
import { placeExisting } from '../../core/actions/place-existing.ts';
import { Statement } from '../../core/statement/statement.ts';
import type { KubeBinder } from '../adapters/binder.ts';
import type { KubeClient } from '../client/client.ts';
import type { ClusterCache } from '../cache/cluster-cache.ts';
import { podFromK8s, podHoldsResources, podKey } from '../cache/labels.ts';
import type { PodJobs } from '../cache/pod-jobs.ts';

// ----- The wire types (Go field names: the Go structs have no json tags) -----

export const MAX_EXTENDER_PRIORITY = 10;

export interface ExtenderArgs {
  readonly Pod?: V1Pod | null;
  readonly Nodes?: { readonly items?: readonly V1Node[] } | null;
  readonly NodeNames?: readonly string[] | null;
}

export interface ExtenderFilterResult {
  Nodes?: { items: V1Node[] } | null;
  NodeNames?: string[] | null;
  FailedNodes: Record<string, string>;
  FailedAndUnresolvableNodes: Record<string, string>;
  Error: string;
}

export interface HostPriority {
  readonly Host: string;
  readonly Score: number;
}

export interface ExtenderBindingArgs {
  readonly PodName: string;
  readonly PodNamespace: string;
  readonly PodUID: string;
  readonly Node: string;
}

export interface ExtenderBindingResult {
  readonly Error: string;
}

export interface MetaVictims {
  Pods: { UID: string }[] | null;
  NumPDBViolations: number;
}

export interface ExtenderPreemptionArgs {
  readonly Pod?: V1Pod | null;
  readonly NodeNameToVictims?: Readonly<Record<string, { Pods?: V1Pod[] | null; NumPDBViolations?: number } | null>> | null;
  readonly NodeNameToMetaVictims?: Readonly<Record<string, MetaVictims | null>> | null;
}

export interface ExtenderPreemptionResult {
  readonly NodeNameToMetaVictims: Record<string, MetaVictims>;
}

// ----- Plans -----

interface Waiter {
  readonly resolve: (error: string) => void;
}

interface Plan {
  /** Job id: the pod key, or `gang:<ns>/<name>`. */
  readonly id: string;
  readonly gang: string | undefined;
  readonly placements: ReadonlyMap<string, Placement>;
  readonly expiresAtMs: number;
  /** Gang members whose bind call waits for the others. */
  readonly waiting: Map<string, Waiter>;
  binding: boolean;
}

export interface ExtenderOptions {
  readonly profile: Profile;
  readonly rng: () => Rng;
  readonly nowMs: () => number;
  /** How long a single pod's plan is held between its filter and its bind (default 30 s). */
  readonly planTtlMs?: number;
  /** How long a gang's plan is held from its first member's filter until all members reach bind (default 30 s). */
  readonly gangPlanTtlMs?: number;
  /** How long a filter waits for a pod (or a gang's missing members) to reach the cache (default 2 s). */
  readonly cacheWaitMs?: number;
  readonly log?: (m: string) => void;
}

export interface ExtenderPorts {
  readonly client: KubeClient;
  readonly cache: ClusterCache;
  readonly jobs: PodJobs;
  readonly binder: KubeBinder;
}

/** How long a preemptor's victims are remembered for its retries. */
const PREEMPTION_MEMORY_MS = 5 * 60_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The pod restricted to the named nodes, ANDed with its own required terms. kube's `matchFields` takes one
 * value per requirement: the shorter of "NotIn each other node" (ANDed in every term) and "In one of these"
 * (one term per node, ORed) is used; all nodes offered = no restriction.
 */
export function restrictToNodes(full: PodSpec, names: readonly string[], allNames: readonly string[]): PodSpec {
  // kube-scheduler runs VolumeBinding itself and offers only nodes its volumes fit: the claims are its business.
  const pod = full.claims === undefined ? full : withoutClaims(full);
  const offered = new Set(names);
  const others = allNames.filter((n) => !offered.has(n));
  if (others.length === 0 && names.length > 0) return pod;
  const terms: readonly NodeSelectorTerm[] = pod.nodeAffinity?.required ?? [{}];
  const field = (n: string, operator: 'In' | 'NotIn'): NodeSelectorRequirement => ({ key: 'metadata.name', operator, values: [n] });
  const required =
    others.length <= names.length
      ? terms.map((t) => ({ ...t, matchFields: [...(t.matchFields ?? []), ...others.map((n) => field(n, 'NotIn'))] }))
      : terms.flatMap((t) => names.map((n) => ({ ...t, matchFields: [...(t.matchFields ?? []), field(n, 'In')] })));
  return { ...pod, nodeAffinity: { ...pod.nodeAffinity, required } };
}

function withoutClaims(pod: PodSpec): PodSpec {
  const { claims: _claims, ...rest } = pod;
  return rest;
}

export class SitsExtender {
  private readonly plans = new Map<string, Plan>();
  private readonly planOfPod = new Map<string, string>();
  /** Preemptor → the nodes SITS named victims on, and when (see catchUp). */
  private readonly preemptions = new Map<string, { readonly nodes: readonly string[]; readonly atMs: number }>();
  private readonly log: (m: string) => void;
  readonly stats = { filters: 0, plans: 0, gangPlans: 0, expired: 0, binds: 0, bindErrors: 0, preemptions: 0 };

  constructor(
    private readonly ports: ExtenderPorts,
    private readonly opts: ExtenderOptions,
  ) {
    this.log = opts.log ?? (() => undefined);
  }

  /** Plans held now (tests, metrics). */
  get heldPlans(): number {
    return this.plans.size;
  }

  // ----- filter -----

  async filter(args: ExtenderArgs): Promise<ExtenderFilterResult> {
    this.stats.filters++;
    this.expire();
    const names = nodeNamesOf(args);
    const reply = (chosen: readonly string[], failed: Record<string, string>, unresolvable: Record<string, string>): ExtenderFilterResult => {
      const r: ExtenderFilterResult = { FailedNodes: failed, FailedAndUnresolvableNodes: unresolvable, Error: '' };
      if (args.NodeNames !== undefined && args.NodeNames !== null) r.NodeNames = [...chosen];
      else r.Nodes = { items: (args.Nodes?.items ?? []).filter((n) => chosen.includes(n.metadata?.name ?? '')) };
      return r;
    };
    const allFail = (reason: string, resolvable = true): ExtenderFilterResult => {
      const m = Object.fromEntries(names.map((n) => [n, reason]));
      return resolvable ? reply([], m, {}) : reply([], {}, m);
    };
    const pod = args.Pod ?? undefined;
    if (pod?.metadata?.name === undefined) return { ...reply([], {}, {}), Error: 'ExtenderArgs.Pod: missing pod or metadata.name' };
    const key = podKey(pod);
    const pending = await this.pendingPod(key, pod.metadata.uid);
    if (pending === undefined) return allFail(`SITS has not seen pod ${key} as pending yet`);
    // A gang member with a live plan: its planned node, if kube-scheduler's own filters left it in.
    const held = this.planFor(key);
    if (held !== undefined && held.gang !== undefined) {
      const p = held.placements.get(key);
      if (p !== undefined) {
        if (names.includes(p.node))
          return reply(
            [p.node],
            Object.fromEntries(names.filter((n) => n !== p.node).map((n) => [n, `SITS placed gang ${held.gang ?? ''} with this pod on ${p.node}`])),
            {},
          );
        return allFail(`SITS placed gang ${held.gang} with this pod on ${p.node}, which kube-scheduler's filters rejected`);
      }
    }
    if (held !== undefined) this.drop(held, 'replanned');
    const gangName = pending.gang;
    let gang: GangSpec | undefined;
    let jobId = key;
    if (gangName !== undefined) {
      jobId = `gang:${gangName}`;
      const found = await this.gangJob(jobId);
      if (typeof found === 'string') return allFail(found);
      gang = found;
    } else gang = { name: key, minMember: 1, members: [pending], topology: {}, priority: pending.priority, queue: pending.queue };
    const attempt = (): { state: ClusterState; all: string[]; restricted: GangSpec; sch: Scheduler; r: ReturnType<Scheduler['placeGang']> } => {
      const state = this.trialState();
      const all = state.nodes.map((n) => n.spec.name);
      const restricted: GangSpec = { ...(gang as GangSpec), members: (gang as GangSpec).members.map((m) => restrictToNodes(m, names, all)) };
      const sch = new Scheduler(this.opts.profile, state, this.opts.rng());
      const stmt = new Statement(state);
      const r = sch.placeGang(restricted, stmt);
      stmt.discard();
      return { state, all, restricted, sch, r };
    };
    let tried = attempt();
    // A preemptor retried once its victims are gone: kube-scheduler's informer may have seen the deletion
    // before SITS's did. Failing now would make kube-scheduler preempt again elsewhere (a second victim), so
    // SITS first catches up with the apiserver on the nodes this pod preempted on, then decides.
    if (!tried.r.ok && (await this.catchUp(this.preemptedOn(pod, names)))) tried = attempt();
    const { state, all, restricted, sch, r } = tried;
    if (!r.ok) {
      // Each offered node with the core's own reason for this pod (kube-scheduler counts them in its event).
      const failed: Record<string, string> = {};
      const unresolvable: Record<string, string> = {};
      const mine = restricted.members.find((m) => m.id === key) ?? restrictToNodes(pending, names, all);
      const idx = sch.index(mine);
      idx.refresh();
      const fitOne: string[] = [];
      const perNode = new Set<string>();
      const at = new Map(state.nodes.map((x, i) => [x.spec.name, i]));
      for (const n of names) {
        const i = at.get(n) ?? -1;
        const node = state.nodes[i];
        if (node === undefined) {
          unresolvable[n] = 'node not known to SITS (no valid GPU labels)';
          continue;
        }
        const code = idx.reason[i] as ReasonCode;
        const info = REASONS[code];
        if (code === 0 || info === undefined) {
          fitOne.push(n);
          continue;
        }
        const text = info.detail?.(mine, node) ?? info.text(mine);
        perNode.add(text);
        (info.resolvable ? failed : unresolvable)[n] = text;
      }
      // Nodes that fit this pod alone: the gang-level reason of the explanation (e.g. "could hold single
      // members, but not 5 of them together"), so kube-scheduler's count reads as SITS's.
      const whole = r.explanation.reasons.find((x) => !perNode.has(x.reason))?.reason ?? r.explanation.message;
      for (const n of fitOne) (r.explanation.unresolvable ? unresolvable : failed)[n] = whole;
      return reply([], failed, unresolvable);
    }
    const placements = new Map(r.placements.map((p) => [p.podId, p]));
    const ttl = gangName === undefined ? (this.opts.planTtlMs ?? 30_000) : (this.opts.gangPlanTtlMs ?? 30_000);
    const plan: Plan = { id: jobId, gang: gangName, placements, expiresAtMs: this.opts.nowMs() + ttl, waiting: new Map(), binding: false };
    this.hold(plan);
    const mineAt = placements.get(key);
    if (mineAt === undefined) return allFail(`SITS's plan for gang ${gangName ?? key} places minMember pods without this one`);
    return reply([mineAt.node], Object.fromEntries(names.filter((n) => n !== mineAt.node).map((n) => [n, `SITS places the pod on ${mineAt.node}`])), {});
  }

  // ----- prioritize -----

  async prioritize(args: ExtenderArgs): Promise<HostPriority[]> {
    const names = nodeNamesOf(args);
    const pod = args.Pod ?? undefined;
    const key = pod === undefined ? '' : podKey(pod);
    const pending = pod === undefined ? undefined : await this.pendingPod(key, pod.metadata?.uid, 0);
    if (pending === undefined) return names.map((n) => ({ Host: n, Score: 0 }));
    const planned = this.planFor(key)?.placements.get(key)?.node;
    const state = this.trialState(this.planFor(key)?.id);
    const sch = new Scheduler(this.opts.profile, state, this.opts.rng());
    const idx = sch.index(pending);
    idx.refresh();
    const at = new Map(state.nodes.map((x, i) => [x.spec.name, i]));
    const raw = names.map((n) => {
      const i = at.get(n) ?? -1;
      return i >= 0 && idx.reason[i] === 0 ? (idx.score[i] as number) : undefined;
    });
    const fit = raw.filter((x): x is number => x !== undefined);
    const lo = Math.min(...fit);
    const hi = Math.max(...fit);
    return names.map((n, k) => {
      const s = raw[k];
      if (n === planned) return { Host: n, Score: MAX_EXTENDER_PRIORITY };
      if (s === undefined) return { Host: n, Score: 0 };
      // Min-max onto 0..9: 10 is kept for the node SITS planned.
      const score = hi === lo ? MAX_EXTENDER_PRIORITY - 1 : Math.round(((s - lo) / (hi - lo)) * (MAX_EXTENDER_PRIORITY - 1));
      return { Host: n, Score: score };
    });
  }

  // ----- bind -----

  async bind(args: ExtenderBindingArgs): Promise<ExtenderBindingResult> {
    this.expire();
    const key = `${args.PodNamespace}/${args.PodName}`;
    if (args.PodName === '' || args.Node === '') return { Error: 'ExtenderBindingArgs: PodName and Node are required' };
    const pending = await this.pendingPod(key, args.PodUID);
    if (pending === undefined) return { Error: `pod ${key} (uid ${args.PodUID}) is not pending in SITS's cache` };
    const plan = this.planFor(key);
    if (plan?.gang !== undefined) return this.bindGangMember(plan, key, args.Node);
    // A gang member is never bound alone: without its gang's plan (expired, or made by another replica) it is refused.
    if (pending.gang !== undefined) return this.bindError(`gang ${pending.gang}: no plan held for ${key} (expired or never made here); it is filtered again`);
    let p = plan?.placements.get(key);
    if (p === undefined || p.node !== args.Node) {
      // kube-scheduler chose another node than planned (or the plan expired): the core's pick on that node.
      if (plan !== undefined) this.drop(plan, `bound elsewhere (${args.Node})`);
      const state = this.trialState();
      const sch = new Scheduler(this.opts.profile, state, this.opts.rng());
      const stmt = new Statement(state);
      const r = sch.placePod(
        restrictToNodes(
          pending,
          [args.Node],
          state.nodes.map((n) => n.spec.name),
        ),
        stmt,
      );
      stmt.discard();
      if (!r.ok) return this.bindError(`SITS cannot place ${key} on ${args.Node}: ${r.explanation.message}`);
      p = r.placement;
    } else this.drop(plan as Plan, 'bound');
    return this.commit([p], undefined);
  }

  private bindGangMember(plan: Plan, key: string, node: string): Promise<ExtenderBindingResult> {
    const p = plan.placements.get(key);
    if (p === undefined) return Promise.resolve(this.bindError(`gang ${plan.gang ?? ''}: ${key} has no place in SITS's plan`));
    if (p.node !== node) return Promise.resolve(this.bindError(`gang ${plan.gang ?? ''}: SITS's plan puts ${key} on ${p.node}, not ${node}`));
    return new Promise<ExtenderBindingResult>((resolve) => {
      plan.waiting.get(key)?.resolve(`superseded by a second bind call for ${key}`);
      plan.waiting.set(key, { resolve: (error) => resolve(error === '' ? { Error: '' } : this.bindError(error)) });
      if (plan.waiting.size < plan.placements.size || plan.binding) return;
      // Every member reached bind: the gang goes to the Binder as one batch (plan annotations, then bindings).
      plan.binding = true;
      this.drop(plan, 'bound', false);
      void this.commit([...plan.placements.values()], plan.gang).then((r) => {
        for (const w of plan.waiting.values()) w.resolve(r.Error);
        plan.waiting.clear();
      });
    });
  }

  /** Allocates the placements in the live snapshot (assumed) and binds them; the result as kube-scheduler reads it. */
  private async commit(placements: readonly Placement[], gang: string | undefined): Promise<ExtenderBindingResult> {
    const { cache, binder, client } = this.ports;
    const state = cache.state();
    const done: Placement[] = [];
    for (const p of placements) {
      const spec = cache.pending.get(p.podId)?.spec;
      const placed = spec === undefined ? undefined : placeExisting(state, spec, p.node, 'planned', p.gpus);
      if (placed === undefined || !placed.ok) {
        for (const d of done) state.release(d.podId);
        return this.bindError(`cannot allocate ${p.podId} on ${p.node} GPUs ${p.gpus.join(',')}: ${placed === undefined ? 'no longer pending' : placed.error}`);
      }
      state.allocate(placed.value.allocation);
      done.push(p);
    }
    await binder.bindNow({
      requests: placements.map((p) => ({ podId: p.podId, node: p.node, gpus: p.gpus })),
      after: [],
      ...(gang === undefined ? {} : { gang }),
    });
    // The Binder logs and requeues its failures; the apiserver says whether each binding took.
    const wrong: string[] = [];
    for (const p of placements) {
      const [ns, name] = [p.podId.slice(0, p.podId.indexOf('/')), p.podId.slice(p.podId.indexOf('/') + 1)];
      const got = await client.get<V1Pod>(`/api/v1/namespaces/${ns}/pods/${name}`).catch(() => undefined);
      if (got?.spec?.nodeName !== p.node) wrong.push(p.podId);
    }
    if (wrong.length > 0) return this.bindError(`binding ${wrong.join(', ')} failed${gang === undefined ? '' : ` (gang ${gang} rolled back)`}`);
    this.stats.binds += placements.length;
    return { Error: '' };
  }

  private bindError(message: string): ExtenderBindingResult {
    this.stats.bindErrors++;
    this.log(`bind: ${message}`);
    return { Error: message };
  }

  // ----- preempt -----

  async preempt(args: ExtenderPreemptionArgs): Promise<ExtenderPreemptionResult> {
    const input: Record<string, MetaVictims> = {};
    for (const [n, v] of Object.entries(args.NodeNameToMetaVictims ?? {})) input[n] = { Pods: v?.Pods ?? [], NumPDBViolations: v?.NumPDBViolations ?? 0 };
    for (const [n, v] of Object.entries(args.NodeNameToVictims ?? {}))
      input[n] ??= { Pods: (v?.Pods ?? []).map((p) => ({ UID: p.metadata?.uid ?? '' })), NumPDBViolations: v?.NumPDBViolations ?? 0 };
    const pod = args.Pod ?? undefined;
    const spec = pod === undefined ? undefined : podFromK8s(pod);
    // No opinion (unparseable pod, no GPUs): kube-scheduler's own choice stands.
    if (spec === undefined || !spec.ok || spec.value.request.gpuCount === 0) return { NodeNameToMetaVictims: input };
    this.stats.preemptions++;
    await this.catchUp(Object.keys(input));
    const out: Record<string, MetaVictims> = {};
    for (const [node, given] of Object.entries(input)) {
      const victims = this.victimsOn(node, spec.value, new Set((given.Pods ?? []).map((p) => p.UID)));
      if (victims !== undefined) out[node] = { Pods: victims.map((UID) => ({ UID })), NumPDBViolations: given.NumPDBViolations };
    }
    if (pod !== undefined) this.preemptions.set(podKey(pod), { nodes: Object.keys(out), atMs: this.opts.nowMs() });
    return { NodeNameToMetaVictims: out };
  }

  /**
   * The pods SITS would evict on `node` for `pod`: kube-scheduler's victims, then lower-priority pods, lowest
   * priority and newest first, each with its whole gang — a gang with members on another node cannot be
   * evicted from this one (kube-scheduler evicts on one node), so such a node is no candidate. undefined: the
   * pod does not fit there even then.
   */
  private victimsOn(node: string, pod: PodSpec, given: ReadonlySet<string>): string[] | undefined {
    const { cache } = this.ports;
    const all = [...cache.allPods()].filter((p) => podHoldsResources(p));
    const onNode = all.filter((p) => (p.spec?.nodeName ?? '') === node);
    const groupOf = (p: V1Pod): string | undefined => {
      const s = podFromK8s(p);
      return s.ok ? s.value.gang : undefined;
    };
    const unit = (p: V1Pod): V1Pod[] | undefined => {
      const g = groupOf(p);
      if (g === undefined) return [p];
      const members = all.filter((q) => groupOf(q) === g);
      return members.every((q) => q.spec?.nodeName === node) ? members : undefined;
    };
    const chosen = new Map<string, V1Pod>();
    for (const p of onNode) {
      if (!given.has(p.metadata?.uid ?? '')) continue;
      const u = unit(p);
      if (u === undefined) return undefined;
      for (const q of u) chosen.set(podKey(q), q);
    }
    const candidates = onNode
      .filter((p) => (p.spec?.priority ?? 0) < pod.priority && !chosen.has(podKey(p)))
      .sort(
        (a, b) =>
          (a.spec?.priority ?? 0) - (b.spec?.priority ?? 0) ||
          Date.parse(String(b.metadata?.creationTimestamp ?? '')) - Date.parse(String(a.metadata?.creationTimestamp ?? '')),
      );
    const fits = (): boolean => {
      const state = this.trialState();
      for (const k of chosen.keys()) state.release(k);
      const sch = new Scheduler(this.opts.profile, state, this.opts.rng());
      const stmt = new Statement(state);
      const ok = sch.placePod(
        restrictToNodes(
          pod,
          [node],
          state.nodes.map((n) => n.spec.name),
        ),
        stmt,
      ).ok;
      stmt.discard();
      return ok;
    };
    if (fits()) return [...chosen.values()].map((p) => p.metadata?.uid ?? '');
    for (const c of candidates) {
      if (chosen.has(podKey(c))) continue;
      const u = unit(c);
      if (u === undefined || u.some((q) => (q.spec?.priority ?? 0) >= pod.priority)) continue;
      for (const q of u) chosen.set(podKey(q), q);
      if (fits()) return [...chosen.values()].map((p) => p.metadata?.uid ?? '');
    }
    return undefined;
  }

  // ----- helpers -----

  /** The offered nodes this pod preempted on: its nominated node and the candidates SITS answered in preempt. */
  private preemptedOn(pod: V1Pod, offered: readonly string[]): string[] {
    const rec = this.preemptions.get(podKey(pod));
    const nodes = new Set(rec !== undefined && this.opts.nowMs() - rec.atMs < PREEMPTION_MEMORY_MS ? rec.nodes : []);
    const nominated = pod.status?.nominatedNodeName ?? '';
    if (nominated !== '') nodes.add(nominated);
    return offered.filter((n) => nodes.has(n));
  }

  /**
   * Waits (up to cacheWaitMs) until the cache holds no pod on these nodes that the apiserver says is gone or
   * finished. true: the cache was behind (and has caught up, or the wait ended); false: nothing to wait for.
   */
  private async catchUp(nodes: readonly string[]): Promise<boolean> {
    if (nodes.length === 0) return false;
    const live = new Set<string>();
    try {
      for (const n of nodes) {
        const list = await this.ports.client.get<{ items: V1Pod[] }>('/api/v1/pods', { fieldSelector: `spec.nodeName=${n}` });
        for (const p of list.items) if (podHoldsResources(p)) live.add(p.metadata?.uid ?? '');
      }
    } catch (e) {
      this.log(`catching up with the apiserver on ${nodes.join(', ')}: ${(e as Error).message}`);
      return false;
    }
    const wanted = new Set(nodes);
    const stale = (): boolean =>
      [...this.ports.cache.allPods()].some((p) => wanted.has(p.spec?.nodeName ?? '') && podHoldsResources(p) && !live.has(p.metadata?.uid ?? ''));
    if (!stale()) return false;
    const end = this.opts.nowMs() + (this.opts.cacheWaitMs ?? 2000);
    while (stale() && this.opts.nowMs() < end) await sleep(50);
    return true;
  }

  /** The pod as pending in the cache (waiting up to `waitMs` for the informer to deliver it). */
  private async pendingPod(key: string, uid: string | undefined, waitMs = this.opts.cacheWaitMs ?? 2000): Promise<PodSpec | undefined> {
    const end = this.opts.nowMs() + waitMs;
    for (;;) {
      const p = this.ports.cache.pending.get(key);
      if (p !== undefined && (uid === undefined || uid === '' || p.obj.metadata?.uid === uid)) return p.spec;
      if (this.opts.nowMs() >= end) return undefined;
      await sleep(50);
    }
  }

  /** The gang's job once all its members are in the cache (waiting a little: they are often created together). */
  private async gangJob(jobId: string): Promise<GangSpec | string> {
    const end = this.opts.nowMs() + (this.opts.cacheWaitMs ?? 2000);
    for (;;) {
      const view = this.ports.jobs.view(this.ports.cache.state());
      const job = view.jobs.find((j) => j.id === jobId);
      if (job !== undefined) return job.gang;
      if (this.opts.nowMs() >= end) return view.short.find((s) => s.id === jobId)?.message ?? `${jobId}: not a pending gang of this scheduler`;
      await sleep(100);
    }
  }

  /** A copy of the live snapshot with every held plan's GPUs taken (except the plan `except`). */
  private trialState(except?: string): ClusterState {
    const s = cloneState(this.ports.cache.state());
    for (const plan of this.plans.values()) {
      if (plan.id === except) continue;
      for (const [podId, p] of plan.placements) {
        if (s.allocation(podId) !== undefined) continue;
        const spec = this.ports.cache.pending.get(podId)?.spec;
        if (spec === undefined) continue;
        const placed = placeExisting(s, spec, p.node, 'planned', p.gpus);
        if (placed.ok) s.allocate(placed.value.allocation);
      }
    }
    return s;
  }

  private planFor(key: string): Plan | undefined {
    const id = this.planOfPod.get(key);
    return id === undefined ? undefined : this.plans.get(id);
  }

  private hold(plan: Plan): void {
    this.plans.set(plan.id, plan);
    for (const k of plan.placements.keys()) this.planOfPod.set(k, plan.id);
    this.stats.plans++;
    if (plan.gang !== undefined) this.stats.gangPlans++;
  }

  private drop(plan: Plan, why: string, failWaiters = true): void {
    if (this.plans.get(plan.id) !== plan) return;
    this.plans.delete(plan.id);
    for (const k of plan.placements.keys()) if (this.planOfPod.get(k) === plan.id) this.planOfPod.delete(k);
    if (failWaiters) {
      for (const w of plan.waiting.values())
        w.resolve(`gang ${plan.gang ?? plan.id}: plan ${why} with ${plan.waiting.size} of ${plan.placements.size} members at bind; none bound`);
      plan.waiting.clear();
    }
    if (why !== 'bound') this.log(`plan ${plan.id}: ${why}`);
  }

  /** Drops plans past their time: their GPUs are free again for other pods' filters. */
  expire(): void {
    const now = this.opts.nowMs();
    for (const [k, rec] of this.preemptions) if (now - rec.atMs >= PREEMPTION_MEMORY_MS) this.preemptions.delete(k);
    for (const plan of [...this.plans.values()]) {
      if (plan.expiresAtMs > now || plan.binding) continue;
      this.stats.expired++;
      this.drop(plan, 'expired');
    }
  }

  /** Fails every waiting bind (shutdown, or leadership changed: ADR 0078). */
  close(reason = 'dropped at shutdown'): void {
    for (const plan of [...this.plans.values()]) this.drop(plan, reason);
  }
}

function nodeNamesOf(args: ExtenderArgs): string[] {
  if (args.NodeNames !== undefined && args.NodeNames !== null) return [...args.NodeNames];
  return (args.Nodes?.items ?? []).map((n) => n.metadata?.name ?? '').filter((n) => n !== '');
}
