/**
 * Runtimes learned live (ADR 0021, issue 6: "user-given or learned from finished jobs of the same queue"):
 * every job SITS bound — a gang, or a pod alone — is followed from the watch while it runs. When none of its
 * pods holds resources any more it becomes one observation of its class (queue × GPU size class, then queue):
 *
 * - finished, if at least one of its pods reached `Succeeded` or `Failed` by itself (the job ended on its own;
 *   a controller deleting the rest afterwards does not change that): duration = the last end (container
 *   `terminated.finishedAt`, else when the watch saw it end) − the first start (`status.startTime`, else when
 *   the watch first saw it bound);
 * - stopped (censored), if every pod was deleted before it ended — preempted, evicted or cancelled: it would
 *   have run at least that long, no more is known.
 *
 * Jobs still running are censored observations at their elapsed time, and their remaining runtime is the
 * model's conditional expectation given that time, as in the simulator (`withLearnedEnds`). A user-given
 * runtime (annotation `expected-runtime-seconds`) still wins for its own job. Memory is bounded: the most
 * recent `perClass` finished and stopped jobs per class, the runs of pods that exist, and a bounded set of
 * ids of runs already recorded. Pods still in the API after they finished (e.g. a completed Job's pods) are
 * learned again when the scheduler restarts.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { QueuedJob, RunningJob } from '../../core/actions/jobs.ts';
import { requeueAfterCheckpoint, runtimeKeys, withLearnedEnds } from '../../core/estimate/job-runtimes.ts';
import { RuntimeModel } from '../../core/estimate/runtime.ts';
import { podKey } from '../cache/labels.ts';

/** Finished (and, apart, stopped) jobs kept per class. */
export const RUNTIME_HISTORY_PER_CLASS = 200;

interface Member {
  startMs: number;
  endMs: number | undefined;
  how: 'running' | 'ended' | 'deleted';
}

interface Run {
  queue: string;
  gpus: number;
  readonly members: Map<string, Member>;
  /** Opening order: flush records runs in it, as it did when it walked every open run. */
  readonly seq: number;
}

const time = (s: unknown): number | undefined => {
  if (s === undefined || s === null) return undefined;
  const t = s instanceof Date ? s.getTime() : Date.parse(String(s));
  return Number.isFinite(t) ? t : undefined;
};

/** When a pod's containers ended (the last `terminated.finishedAt`), if its status says. */
function finishedAt(p: V1Pod): number | undefined {
  let end: number | undefined;
  for (const c of p.status?.containerStatuses ?? []) {
    const t = time(c.state?.terminated?.finishedAt);
    if (t !== undefined) end = Math.max(end ?? t, t);
  }
  return end;
}

export class LiveRuntimes {
  readonly model: RuntimeModel;
  /** Open runs by job id. */
  private readonly runs = new Map<string, Run>();
  /** Pod uids of runs already recorded, so that later events of their pods do not open them again (oldest forgotten first). */
  private readonly closed = new Set<string>();
  /**
   * Jobs one of whose pods stopped running since the last flush: only these can have ended, so flush looks at them
   * and not at every open run (walking 100,000 running one-pod jobs on every view made binding quadratic).
   */
  private readonly stopping = new Set<string>();
  private opened = 0;
  readonly recorded = { finished: 0, stopped: 0 };
  /** Flushes done and open runs they looked at (a test seam: the work must follow the pods that stopped, not the runs open). */
  readonly flushWork = { flushes: 0, visited: 0 };

  constructor(
    perClass = RUNTIME_HISTORY_PER_CLASS,
    private readonly closedCap = 20_000,
  ) {
    this.model = new RuntimeModel({ recent: perClass });
  }

  /**
   * A pod of ours from the watch (added or updated) at `nowMs`: `job` is the job it belongs to, `gpus` its
   * GPUs (a fraction for a shared device). Unbound pods are ignored.
   */
  seen(p: V1Pod, job: { readonly id: string; readonly queue: string }, gpus: () => number, nowMs: number): void {
    const uid = p.metadata?.uid ?? podKey(p);
    if ((p.spec?.nodeName ?? '') === '' || this.closed.has(uid)) return;
    const phase = p.status?.phase;
    const terminal = phase === 'Succeeded' || phase === 'Failed';
    const started = time(p.status?.startTime);
    let run = this.runs.get(job.id);
    if (run !== undefined) run.queue = job.queue;
    let m = run?.members.get(uid);
    if (m === undefined) {
      // A pod that ended before we ever saw it run (e.g. listed after a restart) needs its own times.
      if (terminal && started === undefined) return;
      if (run === undefined) {
        run = { queue: job.queue, gpus: 0, members: new Map(), seq: this.opened++ };
        this.runs.set(job.id, run);
      }
      m = { startMs: started ?? nowMs, endMs: undefined, how: 'running' };
      run.members.set(uid, m);
      run.gpus += gpus();
    } else if (started !== undefined && m.how === 'running') m.startMs = started;
    if (m.how !== 'running') return;
    if (p.metadata?.deletionTimestamp !== undefined && p.metadata.deletionTimestamp !== null) {
      m.how = 'deleted';
      m.endMs = time(p.metadata.deletionTimestamp) ?? nowMs;
      this.stopping.add(job.id);
    } else if (terminal) {
      m.how = 'ended';
      m.endMs = finishedAt(p) ?? nowMs;
      this.stopping.add(job.id);
    }
  }

  /** A pod of ours deleted at `nowMs` (the watch's delete event). */
  gone(p: V1Pod, job: { readonly id: string }, nowMs: number): void {
    const m = this.runs.get(job.id)?.members.get(p.metadata?.uid ?? podKey(p));
    if (m === undefined || m.how !== 'running') return;
    m.how = 'deleted';
    m.endMs = time(p.metadata?.deletionTimestamp) ?? nowMs;
    this.stopping.add(job.id);
  }

  /**
   * Records every run none of whose pods runs any more; returns how many were recorded. `queueOf` may name a
   * job's queue better than its pods did (a pod group seen after its pods).
   */
  flush(queueOf: (jobId: string) => string | undefined = () => undefined): number {
    let n = 0;
    const candidates: [string, Run][] = [];
    for (const id of this.stopping) {
      const run = this.runs.get(id);
      if (run !== undefined) candidates.push([id, run]);
    }
    this.stopping.clear();
    this.flushWork.flushes++;
    this.flushWork.visited += candidates.length;
    candidates.sort((a, b) => a[1].seq - b[1].seq);
    for (const [id, run] of candidates) {
      const ms = [...run.members.values()];
      if (ms.some((m) => m.how === 'running')) continue;
      this.runs.delete(id);
      const start = Math.min(...ms.map((m) => m.startMs));
      const end = Math.max(...ms.map((m) => m.endMs ?? m.startMs));
      const keys = runtimeKeys(queueOf(id) ?? run.queue, run.gpus);
      const duration = Math.max(0, end - start);
      if (ms.some((m) => m.how === 'ended')) {
        this.model.observeFinished(keys, duration);
        this.recorded.finished++;
      } else {
        this.model.observeStopped(keys, duration);
        this.recorded.stopped++;
      }
      for (const uid of run.members.keys()) this.closed.add(uid);
      n++;
    }
    for (const uid of this.closed) {
      if (this.closed.size <= this.closedCap) break;
      this.closed.delete(uid);
    }
    return n;
  }

  /** Open runs (jobs being followed). */
  get following(): number {
    return this.runs.size;
  }

  /** Pod uids remembered as recorded (bounded by `closedCap`). */
  get closedCount(): number {
    return this.closed.size;
  }

  /** Runtime estimate of a waiting job: the user's, else the learned expectation of its class (1 h with nothing learned). */
  pendingRuntime(queue: string, gpus: number, givenMs: number | undefined): number {
    return givenMs ?? this.model.expectedTotal(runtimeKeys(queue, gpus), 0);
  }

  /**
   * The running jobs with their learned estimated ends as of `nowMs` (their elapsed time censors the model);
   * a job whose runtime its user gave (`given`) keeps its own end.
   */
  running(running: ReadonlyMap<string, RunningJob>, given: (r: RunningJob) => boolean, nowMs: number): Map<string, RunningJob> {
    return withLearnedEnds(
      this.model,
      running,
      (r) => ({ keys: runtimeKeys(r.queue, r.resources.gpuMilli / 1000), doneMs: Math.max(0, nowMs - r.startMs), keepEstimate: given(r) }),
      nowMs,
    );
  }
}

/**
 * What a victim of the forward run becomes: only a job whose pods a controller owns comes back (the
 * controller recreates them — new pods, so it queues again as of `atMs`), with the runtime it was expected to
 * run less the work its last checkpoint (annotation `last-checkpoint`) kept; a bare pod deleted by preemption
 * is gone. `base` is the job's queued form (its pending job, or built from its running pods).
 */
export function requeueVictim(base: QueuedJob | undefined, victim: RunningJob, pods: readonly V1Pod[], atMs: number): QueuedJob | undefined {
  if (base === undefined || !pods.some((p) => (p.metadata?.ownerReferences ?? []).some((o) => o.controller === true))) return undefined;
  const kept = victim.lastCheckpointMs !== undefined && victim.lastCheckpointMs > victim.startMs ? Math.min(atMs, victim.lastCheckpointMs) - victim.startMs : 0;
  return requeueAfterCheckpoint({ ...base, arrivalMs: atMs }, victim, kept);
}
