/**
 * The live Binder: carries committed placements to the API server through pods/binding, in the background
 * (kube-scheduler's binding cycle), after recording them as assumed in the cache. A gang is bound in two
 * phases (ADR 0006): the plan (assigned node, GPUs, plan id and size) is written on every member first, then
 * each member is bound; a crash after phase 1 is completed or rolled back by `recover()` on the next leader,
 * a failure in phase 1 undoes the plan before anything is bound. A batch with victims (`after`) waits until
 * their pods are gone — a kubelet would refuse the preemptor while they terminate — or a bounded time;
 * meanwhile each preemptor's `status.nominatedNodeName` names the node it waits for (as kube-scheduler's
 * PostFilter sets it) and its allocation stays assumed in the cache, so no other pod takes the freed room
 * (ADR 0060). A nomination whose binding fails is cleared.
 */
import { isOurs, type SchedulerNames } from '../scheduler/scheduler-names.ts';
import type { V1Pod } from '@kubernetes/client-node';
import type { BindBatch, BindRequest, Binder, EventSink } from '../../core/ports.ts';
import { placeExisting } from '../../core/actions/place-existing.ts';
import { isStatus, type KubeClient } from '../client/client.ts';
import { InFlight, podPath, podStatusPath, splitKey } from '../client/in-flight.ts';
import type { ClusterCache } from '../cache/cluster-cache.ts';
import { ANNOTATION } from '../../api/wire.ts';
import { parseGpuIndices, podKey } from '../cache/labels.ts';
import { ncclTopologyForBinding } from './nccl-topology-binding.ts';
import { VOLUME_BIND_TIMEOUT_MS, VolumePreBinder } from './volume-binder.ts';

/** Longest wait for preempted pods to terminate before their preemptor is bound anyway. */
const NOMINATION_WAIT_MS = 120_000;

export interface BinderStats {
  bound: number;
  bindErrors: number;
  gangsBound: number;
  rollbacks: number;
  recoveries: number;
}

export interface KubeBinderOptions {
  readonly schedulerName: SchedulerNames;
  readonly events: EventSink;
  readonly log: (m: string) => void;
  readonly nowMs: () => number;
  /**
   * Test seam: called after each gang member's binding, in order (members are then bound one at a time).
   * Crash tests end the process here to leave a gang half-bound for the next leader to complete.
   */
  readonly afterGangMemberBound?: (count: number) => void;
  /** Pods went back to waiting (a binding failed or a plan was undone): the host should cycle again. */
  readonly requeued?: () => void;
  /** One pods/binding call took `seconds` (metrics). */
  readonly bound?: (seconds: number, ok: boolean) => void;
  /** Longest wait for the PV controller to bind a pod's claims before it goes back to the queue (kube's bindTimeout, 600 s). */
  readonly volumeBindTimeoutMs?: number;
  /**
   * Whether this replica holds the Lease now (default: always). Checked right before every binding and before a gang
   * plan is written, completed or rolled back (ADR 0187): a replica that lost the Lease while its bindings waited
   * (paused, slowed) leaves them, and any half-done plan, to the leader.
   */
  readonly leading?: () => boolean;
}

/** A binding or plan step refused because this replica does not hold the Lease (ADR 0187). */
export class NotLeadingError extends Error {
  constructor(what: string) {
    super(`${what}: not the leader (left to the replica holding the Lease)`);
  }
}

export class KubeBinder implements Binder {
  readonly stats: BinderStats = { bound: 0, bindErrors: 0, gangsBound: 0, rollbacks: 0, recoveries: 0 };
  private nominated: { batch: BindBatch; sinceMs: number }[] = [];
  /** Pods whose status.nominatedNodeName SITS wrote (cleared if their binding fails). */
  private readonly nominatedPods = new Set<string>();
  private readonly inFlight = new InFlight();
  private readonly queue: { batch: BindBatch; done: () => void }[] = [];
  private binding = 0;
  /** The most batches binding at once so far (a test seam: bounded by 2 × the client's requests in flight). */
  peakBinding = 0;
  private gangMembersBound = 0;
  /**
   * Plans left written without a binding in progress (their undo failed, or they were left while not leading):
   * their members are out of the queue (pendingUnits skips planned pods) until the plan is completed or undone, so
   * the leader retries them on every tick rather than only when it next becomes leader.
   */
  private readonly unsettled = new Map<string, number>();
  private readonly settling = new Set<string>();

  private readonly volumes: VolumePreBinder;

  constructor(
    private readonly client: KubeClient,
    private readonly cache: ClusterCache,
    private readonly opts: KubeBinderOptions,
  ) {
    this.volumes = new VolumePreBinder(client, cache, {
      log: opts.log,
      timeoutMs: opts.volumeBindTimeoutMs ?? VOLUME_BIND_TIMEOUT_MS,
      failed: (podIds, why) => {
        for (const id of podIds) {
          this.cache.forget(id);
          this.opts.events.emit({ kind: 'FailedScheduling', subject: id, message: `running PreBind plugin "VolumeBinding": ${why}` });
        }
        this.stats.bindErrors += podIds.length;
        this.opts.requeued?.();
      },
    });
  }

  bind(batch: BindBatch): void {
    // Assumed now, in the same cycle: the next snapshot keeps these allocations until the watch confirms them.
    for (const r of batch.requests) this.cache.assumePlaced(r.podId);
    if (batch.after.length > 0) {
      this.nominated.push({ batch, sinceMs: this.opts.nowMs() });
      for (const r of batch.requests) this.nominate(r.podId, r.node);
      return;
    }
    this.start(batch);
  }

  /** Binds nominated preemptors whose victims have left (or after a bounded wait: the victims may hang). */
  tick(): void {
    this.settle();
    if (this.nominated.length === 0) return;
    const now = this.opts.nowMs();
    const ready = this.nominated.filter((n) => n.batch.after.every((k) => this.cache.pod(k) === undefined) || now - n.sinceMs > NOMINATION_WAIT_MS);
    if (ready.length === 0) return;
    this.nominated = this.nominated.filter((n) => !ready.includes(n));
    for (const n of ready) this.start(n.batch);
  }

  /** Writes (or with null clears) the pod's status.nominatedNodeName; informative, so a failure is only logged. */
  private nominate(podId: string, node: string | null): void {
    this.nominatedPods[node === null ? 'delete' : 'add'](podId);
    const task = this.client
      .request('PATCH', `${podPath(podId)}/status`, { contentType: 'application/strategic-merge-patch+json', body: { status: { nominatedNodeName: node } } })
      .catch((e: unknown) => this.opts.log(`nominate ${podId} → ${node ?? '(none)'}: ${(e as Error).message}`));
    this.inFlight.track(task);
  }

  /** Completes or undoes the unsettled plans (one attempt each at a time), while leading. */
  private settle(): void {
    if (this.unsettled.size === 0 || this.opts.leading?.() === false) return;
    for (const [id, since] of [...this.unsettled]) {
      if (this.settling.has(id)) continue;
      this.unsettled.delete(id);
      this.settling.add(id);
      this.inFlight.track(this.recoverPlan(id, since).finally(() => this.settling.delete(id)));
    }
  }

  /** Bindings in flight or waiting for victims. */
  get busy(): number {
    return this.inFlight.size + this.nominated.length;
  }

  /** Resolves when every binding started so far has finished. */
  async drain(): Promise<void> {
    await this.inFlight.drain();
  }

  /**
   * Binds a batch without victims now and resolves when its bindings have finished, whatever their outcome
   * (the watch and the cache tell it): the extender answers kube-scheduler's bind call only then.
   */
  bindNow(batch: BindBatch): Promise<void> {
    for (const r of batch.requests) this.cache.assumePlaced(r.podId);
    return this.start(batch);
  }

  /**
   * Queues a batch; at most 2 × the client's requests in flight are binding at once (its slots stay full), the rest wait
   * here as their batches. Started all at once, 50,000 bindings each held a request waiting in the client (≈2 KB).
   */
  private start(batch: BindBatch): Promise<void> {
    const task = new Promise<void>((done) => this.queue.push({ batch, done }));
    this.inFlight.track(task);
    this.pump();
    return task;
  }

  private pump(): void {
    while (this.binding < 2 * this.client.maxInFlight && this.queue.length > 0) {
      const { batch, done } = this.queue.shift() as { batch: BindBatch; done: () => void };
      this.binding++;
      this.peakBinding = Math.max(this.peakBinding, this.binding);
      // Its outcome is the watch's and the cache's to tell (as when the task was tracked whole): settled, never thrown.
      void this.run(batch)
        .catch(() => undefined)
        .finally(() => {
          this.binding--;
          done();
          this.pump();
        });
    }
  }

  /** Bindings queued behind the ones binding (a test seam). */
  get queued(): number {
    return this.queue.length;
  }

  private run(batch: BindBatch): Promise<void> {
    const bind = (): Promise<void> =>
      batch.gang === undefined && batch.requests.length === 1
        ? this.bindOne(batch.requests[0] as BindRequest).catch(() => undefined)
        : this.bindGang(batch.gang ?? batch.requests[0]?.podId ?? 'gang', batch.requests);
    // VolumeBinding's PreBind first, for pods whose claims SITS chose a PV or a node to provision on.
    return this.volumes.needsPreBind(batch.requests) ? this.volumes.preBind(batch.requests).then((ok) => (ok ? bind() : undefined)) : bind();
  }

  private async bindOne(r: BindRequest, event = true): Promise<void> {
    const pod = this.cache.pod(r.podId);
    const [ns, name] = splitKey(r.podId);
    const nccl = ncclTopologyForBinding(pod, this.cache.nodeSpec(r.node), r.gpus);
    const annotations = { [ANNOTATION.gpuIndices]: r.gpus.join(','), ...(nccl === undefined ? {} : { [ANNOTATION.ncclTopology]: nccl.xml }) };
    const t0 = performance.now();
    try {
      if (this.opts.leading?.() === false) throw new NotLeadingError(`bind ${r.podId}`);
      await this.client.post(`/api/v1/namespaces/${ns}/pods/${name}/binding`, {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name, namespace: ns, ...(pod?.metadata?.uid === undefined ? {} : { uid: pod.metadata.uid }), annotations },
        target: { apiVersion: 'v1', kind: 'Node', name: r.node },
      });
      this.opts.bound?.((performance.now() - t0) / 1000, true);
      this.stats.bound++;
      this.nominatedPods.delete(r.podId);
      if (event)
        this.opts.events.emit({
          kind: 'Scheduled',
          subject: r.podId,
          message: `Successfully assigned ${r.podId} to ${r.node} (GPUs ${r.gpus.join(',') || 'none'})`,
        });
      if (nccl?.problem !== undefined) this.opts.log(`pod ${r.podId}: NCCL topology file left to NCCL's own detection: ${nccl.problem}`);
    } catch (e) {
      this.opts.bound?.((performance.now() - t0) / 1000, false);
      this.stats.bindErrors++;
      // 409: already bound (by another replica) or changed; 404: deleted. Either way the watch tells the truth.
      this.opts.log(`bind ${r.podId} → ${r.node}: ${(e as Error).message}`);
      this.cache.forget(r.podId);
      if (this.nominatedPods.has(r.podId) && !isStatus(e, 404) && !(e instanceof NotLeadingError)) this.nominate(r.podId, null);
      this.opts.requeued?.();
      throw e;
    }
  }

  private async bindGang(name: string, plan: readonly BindRequest[]): Promise<void> {
    if (this.opts.leading?.() === false) {
      this.opts.log(`gang ${name}: not the leader; left to the replica holding the Lease`);
      for (const r of plan) this.cache.forget(r.podId);
      this.opts.requeued?.();
      return;
    }
    const planId = `${name.replace('/', '.')}.${this.opts.nowMs().toString(36)}`;
    // Each write is conditional on the pod as this replica last saw it: a write held up in a paused replica and sent
    // after another bound the pod is refused (409), not laid over the binding's GPUs (bench chaos, ADR 0193).
    const annotate = plan.map((r) =>
      this.client.mergePatch<V1Pod>(podStatusPath(r.podId), {
        metadata: {
          ...this.seenVersion(r.podId),
          annotations: {
            [ANNOTATION.assignedNode]: r.node,
            [ANNOTATION.gpuIndices]: r.gpus.join(','),
            [ANNOTATION.planId]: planId,
            [ANNOTATION.planSize]: String(plan.length),
          },
        },
      }),
    );
    const results = await Promise.allSettled(annotate);
    if (results.some((x) => x.status === 'rejected')) {
      this.opts.log(`gang ${name}: could not write the plan (${results.filter((x) => x.status === 'rejected').length} failed); undoing it`);
      // Undone on the version this write made (or, when its answer is unknown, the one seen before): a pod changed
      // since (bound by the leader after this replica lost the Lease) is not touched, the leader settles the rest.
      const undone = await Promise.allSettled(
        plan.map((r, i) => {
          const res = results[i];
          if (res?.status === 'rejected' && isStatus(res.reason, 409)) return Promise.resolve(undefined);
          const version = res?.status === 'fulfilled' ? versionOf(res.value) : this.seenVersion(r.podId);
          return this.client.mergePatch(podStatusPath(r.podId), { metadata: { ...version, annotations: planCleared() } });
        }),
      );
      // Part of the plan still written (the undo failed too, e.g. throttled): settled later, see `unsettled`.
      if (undone.some(failedBut404)) this.leaveUnsettled(planId);
      for (const r of plan) this.cache.forget(r.podId);
      this.opts.requeued?.();
      this.stats.rollbacks++;
      return;
    }
    const seam = this.opts.afterGangMemberBound;
    const bindMember = async (r: BindRequest): Promise<void> => {
      await this.bindOne(r, false);
      this.gangMembersBound++;
      seam?.(this.gangMembersBound);
    };
    // With the seam, one at a time: a crash in it lands between two bindings.
    const binds: PromiseSettledResult<void>[] = [];
    if (seam !== undefined) for (const r of plan) binds.push(...(await Promise.allSettled([bindMember(r)])));
    else binds.push(...(await Promise.allSettled(plan.map(bindMember))));
    if (binds.some((b) => b.status === 'rejected')) {
      this.opts.log(`gang ${name}: some bindings failed; completing or rolling back`);
      await this.recoverPlan(planId);
      return;
    }
    this.stats.gangsBound++;
    for (const r of plan)
      this.opts.events.emit({
        kind: 'Scheduled',
        subject: r.podId,
        message: `Successfully assigned ${r.podId} to ${r.node} (GPUs ${r.gpus.join(',') || 'none'}; gang ${name})`,
      });
  }

  /** After (re)gaining leadership: finish or undo every gang plan left by a previous leader. */
  async recover(): Promise<void> {
    const plans = new Set<string>();
    for (const p of this.cache.allPods()) {
      const id = p.metadata?.annotations?.[ANNOTATION.planId];
      if (id !== undefined && isOurs(this.opts.schedulerName, p.spec?.schedulerName)) plans.add(id);
    }
    for (const id of [...plans].sort()) await this.recoverPlan(id);
  }

  /** The precondition for a write to the pod as this replica's cache last saw it. */
  private seenVersion(podId: string): { resourceVersion?: string } {
    return versionOf(this.cache.pod(podId));
  }

  /** Keeps a plan for `settle`, with when it was first left (kept across attempts). */
  private leaveUnsettled(planId: string, sinceMs = this.opts.nowMs()): void {
    if (!this.unsettled.has(planId)) this.unsettled.set(planId, sinceMs);
  }

  /** Completes a written plan, or rolls it back when it cannot be completed. `sinceMs`: an unsettled plan's age. */
  private async recoverPlan(planId: string, sinceMs?: number): Promise<void> {
    const members = [...this.cache.allPods()].filter((p) => p.metadata?.annotations?.[ANNOTATION.planId] === planId);
    if (this.opts.leading?.() === false) {
      // The plan stays written: the leader's recover() completes or undoes it, from a cache it trusts.
      this.opts.log(`plan ${planId}: not the leader; left to the replica holding the Lease`);
      for (const p of members) if ((p.spec?.nodeName ?? '') === '') this.cache.forget(podKey(p));
      this.leaveUnsettled(planId, sinceMs);
      return;
    }
    // An unsettled plan no pod shows yet (written just before, the watch behind: a slow apiserver) is kept a while;
    // one still unseen after UNSEEN_PLAN_MS was undone meanwhile.
    if (members.length === 0) {
      if (sinceMs !== undefined && this.opts.nowMs() - sinceMs < UNSEEN_PLAN_MS) this.leaveUnsettled(planId, sinceMs);
      return;
    }
    const size = Number(members[0]?.metadata?.annotations?.[ANNOTATION.planSize] ?? '0');
    const bound = members.filter((p) => (p.spec?.nodeName ?? '') !== '');
    const unbound = members.filter((p) => (p.spec?.nodeName ?? '') === '' && p.metadata?.deletionTimestamp === undefined);
    if (unbound.length === 0 && members.length >= size) return;
    let complete = members.length >= size;
    if (complete) {
      const state = this.cache.state();
      for (const p of unbound) {
        const node = p.metadata?.annotations?.[ANNOTATION.assignedNode] ?? '';
        const gpus = parseGpuIndices(p.metadata?.annotations?.[ANNOTATION.gpuIndices]) ?? [];
        const pending = this.cache.pending.get(podKey(p));
        const n = state.node(node);
        if (pending === undefined || n === undefined) {
          complete = false;
          break;
        }
        if (state.allocation(pending.key) === undefined) {
          const placed = placeExisting(state, pending.spec, node, 'planned', gpus);
          if (!placed.ok) {
            complete = false;
            break;
          }
          state.allocate(placed.value.allocation);
          const a = state.allocation(pending.key);
          if (a !== undefined) this.cache.assume(a);
        }
        try {
          await this.bindOne({ podId: pending.key, node, gpus }, false);
        } catch (e) {
          if (!isStatus(e, 409)) {
            complete = false;
            break;
          }
        }
      }
    }
    if (complete) {
      this.stats.recoveries++;
      this.opts.log(`plan ${planId}: completed ${unbound.length} bindings`);
      return;
    }
    // Roll back: bound members are deleted (their owner recreates them), the rest lose the plan.
    this.stats.rollbacks++;
    this.opts.log(`plan ${planId}: rolling back ${bound.length} bound members`);
    // Conditional on the objects as seen: never a pod recreated under the name, nor a plan written since.
    const deleted = await Promise.allSettled(
      bound.map((p: V1Pod) =>
        this.client.request('DELETE', podPath(podKey(p)), {
          body: { apiVersion: 'v1', kind: 'DeleteOptions', ...(p.metadata?.uid === undefined ? {} : { preconditions: { uid: p.metadata.uid } }) },
        }),
      ),
    );
    const cleared = await Promise.allSettled(
      unbound.map((p) => this.client.mergePatch(podStatusPath(podKey(p)), { metadata: { ...versionOf(p), annotations: planCleared() } })),
    );
    if ([...deleted, ...cleared].some(failedBut404)) this.leaveUnsettled(planId);
    for (const p of unbound) this.cache.forget(podKey(p));
    this.opts.requeued?.();
  }
}

/** A merge patch's precondition: the object's resourceVersion (a 409 when it changed since), none when unknown. */
function versionOf(p: V1Pod | undefined): { resourceVersion?: string } {
  const rv = p?.metadata?.resourceVersion;
  return rv === undefined || rv === '' ? {} : { resourceVersion: rv };
}

/** How long an unsettled plan that no pod in the cache shows is kept for another attempt. */
const UNSEEN_PLAN_MS = 60_000;

/** A write that failed for another reason than the pod being gone (then there is nothing left to undo). */
const failedBut404 = (x: PromiseSettledResult<unknown>): boolean => x.status === 'rejected' && !isStatus(x.reason, 404);

// The plan is metadata written through pods/status (a merge patch there writes annotations, never the spec; ADR
// 0175): the scheduler holds kube-scheduler's pods/status patch and no pods patch.
function planCleared(): Record<string, null> {
  return { [ANNOTATION.assignedNode]: null, [ANNOTATION.planId]: null, [ANNOTATION.planSize]: null };
}
