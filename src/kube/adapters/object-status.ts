/**
 * The status of the Queue and PodGroup objects, as `kubectl get sq` / `kubectl get pg` show it (issue 32): the
 * scheduler is the only one who knows admitted, pending and reserving jobs, usage, borrowing and fair shares, so
 * it writes them. Batched and rate-limited: at most one pass per `intervalMs`, only objects whose status changed
 * (compared with what the watch shows), at most `maxWritesPerPass` writes per pass (the rest next pass), a few
 * writes in flight, never from the scheduling cycle itself. A pending gang's message carries a countdown ("expected
 * start in 8 s") that changes every pass: a change of the message alone is written at most once per `messageHoldMs`
 * per object, and after every change of phase or count (`sits bench status-writes` measured 30 of 39 pending groups
 * never written at all when every countdown was a write, one at a time).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, LABEL } from '../../api/wire.ts';
import type { QueuedJob } from '../../core/actions/jobs.ts';
import { weightedShare } from '../../core/queue/fair-share.ts';
import { borrowedBy } from '../../core/queue/quota.ts';
import { ZERO, type QueueSpec, type Resources } from '../../core/queue/model.ts';
import { clusterCapacity, usageOf } from '../../core/actions/queue-cycle.ts';
import type { KubeClient } from '../client/client.ts';
import type { LiveMetricsView } from '../telemetry/live-observer.ts';

export interface QueueStatusBody {
  effectiveWeight: number;
  pendingWorkloads: number;
  admittedWorkloads: number;
  reservingWorkloads: number;
  usage: { name: string; total: string; borrowed?: string }[];
  fairShare: number;
  headWorkload?: string;
}

export interface PodGroupStatusBody {
  phase: 'Pending' | 'Scheduled' | 'Running' | 'Failed';
  scheduled: number;
  message?: string;
}

/** What one pass reads: the scheduler's view, its reservations, the objects as watched, and the pods. */
export interface StatusSource {
  readonly view: () => LiveMetricsView;
  /** Job ids holding a reservation after the last cycle. */
  readonly reserving: () => ReadonlySet<string>;
  readonly queues: () => Iterable<{ metadata?: { name?: string }; status?: unknown }>;
  readonly podGroups: () => Iterable<{ metadata?: { name?: string; namespace?: string }; spec?: { minMember?: number }; status?: unknown }>;
  readonly pods: () => Iterable<V1Pod>;
}

/** Queue status from one view (pure). `fairShare` is the weighted dominant share the queue order uses. */
export function queueStatuses(v: LiveMetricsView, reserving: ReadonlySet<string>): Map<string, QueueStatusBody> {
  const capacity = clusterCapacity(v);
  const used = usageOf(v.running);
  const admitted = new Map<string, number>();
  for (const r of v.running) admitted.set(r.queue, (admitted.get(r.queue) ?? 0) + 1);
  const pendingOf = new Map<string, QueuedJob[]>();
  for (const j of v.pending) {
    const list = pendingOf.get(j.queue);
    if (list === undefined) pendingOf.set(j.queue, [j]);
    else list.push(j);
  }
  const out = new Map<string, QueueStatusBody>();
  for (const [name, spec] of v.queues) {
    const u = used.get(name)?.total ?? ZERO;
    const waiting = pendingOf.get(name) ?? [];
    const reservers = waiting.filter((j) => reserving.has(j.id));
    const head = reservers[0] ?? [...waiting].sort(headOrder)[0];
    out.set(name, {
      effectiveWeight: spec.weight,
      pendingWorkloads: waiting.length,
      admittedWorkloads: admitted.get(name) ?? 0,
      reservingWorkloads: reservers.length,
      usage: usageRows(spec, u),
      fairShare: round(weightedShare(spec, u, capacity)),
      ...(head === undefined ? {} : { headWorkload: workloadName(head) }),
    });
  }
  return out;
}

const headOrder = (a: QueuedJob, b: QueuedJob): number => b.priority - a.priority || a.arrivalMs - b.arrivalMs || (a.seq ?? 0) - (b.seq ?? 0);

/** `namespace/name` of a job: its pod group, or its single pod. */
function workloadName(j: QueuedJob): string {
  return j.id.startsWith('gang:') ? j.id.slice('gang:'.length) : j.id;
}

const round = (x: number): number => Math.round(x * 1e4) / 1e4;

function usageRows(spec: QueueSpec, u: Resources): QueueStatusBody['usage'] {
  const b = borrowedBy(spec, u);
  const row = (name: string, total: string, borrowed: number, fmt: (x: number) => string): QueueStatusBody['usage'][number] => ({
    name,
    total,
    ...(borrowed > 0 ? { borrowed: fmt(borrowed) } : {}),
  });
  const gpus = (m: number): string => (m % 1000 === 0 ? String(m / 1000) : `${m}m`);
  const cpu = (m: number): string => (m % 1000 === 0 ? String(m / 1000) : `${m}m`);
  const mem = (mi: number): string => `${mi}Mi`;
  return [
    row('nvidia.com/gpu', gpus(u.gpuMilli), b.gpuMilli, gpus),
    row('cpu', cpu(u.cpuMilli), b.cpuMilli, cpu),
    row('memory', mem(u.memoryMiB), b.memoryMiB, mem),
  ];
}

/**
 * PodGroup status from its member pods (pure): Running once minMember members run, Scheduled once minMember are
 * bound, Failed when a member failed and too few are left to reach minMember, else Pending with the scheduler's
 * reason (the PodScheduled condition it wrote on the members).
 */
export function podGroupStatus(minMember: number, members: readonly V1Pod[]): PodGroupStatusBody {
  const live = members.filter((p) => (p.metadata?.deletionTimestamp ?? undefined) === undefined);
  const bound = live.filter((p) => (p.spec?.nodeName ?? '') !== '' && p.status?.phase !== 'Failed');
  const running = bound.filter((p) => p.status?.phase === 'Running' || p.status?.phase === 'Succeeded');
  const failed = live.filter((p) => p.status?.phase === 'Failed');
  if (running.length >= minMember) return { phase: 'Running', scheduled: bound.length };
  if (bound.length >= minMember) return { phase: 'Scheduled', scheduled: bound.length };
  if (failed.length > 0 && live.length - failed.length < minMember)
    return {
      phase: 'Failed',
      scheduled: bound.length,
      message: `${failed.length} member(s) failed; ${live.length - failed.length} of minMember ${minMember} left`,
    };
  const why = live
    .map((p) => p.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')?.message)
    .find((m) => m !== undefined && m !== '');
  return { phase: 'Pending', scheduled: bound.length, ...(why === undefined ? {} : { message: why.slice(0, 4096) }) };
}

/** Whether `want` already holds in `have` (the object's status as watched): only the fields SITS writes count. */
function holds(have: unknown, want: object): boolean {
  if (have === null || typeof have !== 'object') return false;
  const h = have as Record<string, unknown>;
  return (
    Object.entries(want).every(([k, v]) => JSON.stringify(h[k]) === JSON.stringify(v)) &&
    !('headWorkload' in h && !('headWorkload' in want)) &&
    !('message' in h && !('message' in want))
  );
}

export interface ObjectStatusOptions {
  readonly log: (m: string) => void;
  readonly intervalMs?: number;
  readonly maxWritesPerPass?: number;
  /** A change of a PodGroup's message alone waits this long after the object's last write (default 60 s). */
  readonly messageHoldMs?: number;
}

/** Writes in flight at once: a pass of 100 writes one at a time took longer than its period on a busy apiserver. */
const IN_FLIGHT = 4;

export class ObjectStatusWriter {
  readonly stats = { passes: 0, writes: 0, errors: 0 };
  private lastPassMs = Number.NEGATIVE_INFINITY;
  private writing = false;
  private readonly intervalMs: number;
  private readonly maxWrites: number;
  private readonly messageHoldMs: number;
  /** When each object's status was last written (by path), for the message hold. */
  private readonly writtenAt = new Map<string, number>();

  constructor(
    private readonly client: KubeClient,
    private readonly source: StatusSource,
    private readonly opts: ObjectStatusOptions,
  ) {
    this.intervalMs = opts.intervalMs ?? 5000;
    this.maxWrites = opts.maxWritesPerPass ?? 100;
    this.messageHoldMs = opts.messageHoldMs ?? 60_000;
  }

  /** Called on every loop turn; does a pass at most every `intervalMs`, in the background. */
  tick(nowMs: number): void {
    if (this.writing || nowMs - this.lastPassMs < this.intervalMs) return;
    this.lastPassMs = nowMs;
    this.writing = true;
    void this.pass(nowMs).finally(() => {
      this.writing = false;
    });
  }

  /** One pass: computes every status, writes the changed ones (awaitable, for tests). */
  async pass(nowMs = Date.now()): Promise<void> {
    this.stats.passes++;
    const writes: { path: string; status: object }[] = [];
    const statuses = queueStatuses(this.source.view(), this.source.reserving());
    for (const o of this.source.queues()) {
      const name = o.metadata?.name ?? '';
      const want = statuses.get(name);
      if (want === undefined || holds(o.status, want)) continue;
      writes.push({ path: `/apis/${API_GROUP}/${API_VERSION}/queues/${name}/status`, status: { ...want, headWorkload: want.headWorkload ?? null } });
    }
    const members = new Map<string, V1Pod[]>();
    for (const p of this.source.pods()) {
      const g = p.metadata?.labels?.[LABEL.podGroup];
      if (g === undefined) continue;
      const key = `${p.metadata?.namespace ?? 'default'}/${g}`;
      const list = members.get(key);
      if (list === undefined) members.set(key, [p]);
      else list.push(p);
    }
    const messageOnly: { path: string; status: object }[] = [];
    const live = new Set<string>();
    for (const g of this.source.podGroups()) {
      const ns = g.metadata?.namespace ?? 'default';
      const name = g.metadata?.name ?? '';
      const path = `/apis/${API_GROUP}/${API_VERSION}/namespaces/${ns}/podgroups/${name}/status`;
      live.add(path);
      const want = podGroupStatus(Math.max(1, g.spec?.minMember ?? 1), members.get(`${ns}/${name}`) ?? []);
      if (holds(g.status, want)) continue;
      const write = { path, status: { ...want, message: want.message ?? null } };
      const have = g.status as { message?: string } | undefined;
      if (have !== undefined && holds(have, { ...want, ...(have.message === undefined ? {} : { message: have.message }) }) && (want.message ?? '') !== '') {
        // Only the message differs (a countdown, most often): held, then written after the phase changes.
        if (nowMs - (this.writtenAt.get(path) ?? Number.NEGATIVE_INFINITY) >= this.messageHoldMs) messageOnly.push(write);
        continue;
      }
      writes.push(write);
    }
    for (const path of this.writtenAt.keys()) if (path.includes('/podgroups/') && !live.has(path)) this.writtenAt.delete(path);
    const batch = [...writes, ...messageOnly].slice(0, this.maxWrites);
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(IN_FLIGHT, batch.length) }, async () => {
        for (let w = batch[next++]; w !== undefined; w = batch[next++]) await this.write(w, nowMs);
      }),
    );
  }

  private async write(w: { path: string; status: object }, nowMs: number): Promise<void> {
    try {
      await this.client.request('PATCH', w.path, { contentType: 'application/merge-patch+json', body: { status: w.status } });
      this.stats.writes++;
      this.writtenAt.set(w.path, nowMs);
    } catch (e) {
      this.stats.errors++;
      // Gone meanwhile, or no right to write status (an older chart): said once per pass, never fatal.
      if ((e as { status?: number }).status !== 404) this.opts.log(`status ${w.path}: ${(e as Error).message}`);
    }
  }
}
