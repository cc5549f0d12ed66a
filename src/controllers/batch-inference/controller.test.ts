import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import type { ControllerAction } from '../../api/controller.ts';
import type { PodObject } from '../kube-objects.ts';
import { BatchCoordinator, OUTPUT } from './coordinator.ts';
import type { BatchJobsPort, JobSession, SessionState } from './controller.ts';
import { reconcileBatchJob, strategyPluginCondition, type BatchControllerConfig } from './controller.ts';
import type { PluginCaller } from './wasm-plugin.ts';
import { DEFAULT_LADDER, type LadderConfig } from './fault-ladder.ts';
import { GpuShare } from './gpu-share.ts';
import { DEFAULT_LONG_TAIL } from './long-tail.ts';
import type { RecordInfo } from './openai-batch.ts';
import { outputCustomId } from './openai-batch.ts';
import { MemoryOutputStore } from './output-store.ts';
import { partLines, writePart } from './part-writer.ts';
import { renderWorkers, type BatchJobObject } from './pods.ts';
import { MemoryQuarantine } from './quarantine.ts';
import { BATCH_PLUGIN_MOUNT, BATCH_PLUGIN_VOLUME, checkpointName, formatReport, parseAssignment, type WireAssignment } from './worker-protocol.ts';

const renderWorkersVolumes = (j: BatchJobObject): string[] => {
  const r = renderWorkers(j);
  return r.ok ? ((r.value.pod(0).spec?.volumes ?? []) as { name: string }[]).map((v) => v.name) : [];
};

const records = (n: number): RecordInfo[] => Array.from({ length: n }, (_, i) => ({ customId: `r-${i}`, promptTokens: 10, maxOutputTokens: 2 }));

const jobOf = (workers: number, extra: Record<string, unknown> = {}): BatchJobObject =>
  withDefaults('BatchInferenceJob', {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'BatchInferenceJob',
    metadata: { name: 'j', namespace: 'ns', uid: 'uid-1', generation: 1 },
    spec: {
      runtime: 'llamacpp',
      model: { uri: 'pvc://models/tiny.gguf' },
      input: { uri: 'pvc://data/in.jsonl' },
      output: { uri: 'pvc://data/out/j' },
      workers,
      gpusPerWorker: 1,
      ...extra,
    },
  }) as BatchJobObject;

/** A port over one memory store, as a controller process would hold it; `restart()` is a new controller process. */
function port(
  n: number,
  shard = 10,
  ladder: LadderConfig = DEFAULT_LADDER,
): { port: BatchJobsPort; store: MemoryOutputStore; restart(): void; state: { s: SessionState } } {
  const store = new MemoryOutputStore();
  const state = { s: { state: 'loading' } as SessionState };
  const open = (nowMs: number): SessionState => {
    const q = new MemoryQuarantine();
    const coordinator = BatchCoordinator.open(
      store,
      { jobUid: 'uid-1', records: records(n), shardRecords: shard, ladder, longTail: { ...DEFAULT_LONG_TAIL, enabled: false }, quarantine: q },
      nowMs,
    );
    const session: JobSession = {
      coordinator,
      startMs: nowMs,
      assigned: new Map(),
      handled: new Set(),
      retries: 0,
      quarantined: (t) => q.active(t).map((e) => e.device),
    };
    return { state: 'ready', session };
  };
  let opened = false;
  return {
    store,
    state,
    port: {
      session: (_job, nowMs) => {
        if (!opened) {
          opened = true;
          state.s = open(nowMs);
          return { state: 'loading' };
        }
        return state.s;
      },
    },
    restart: () => {
      opened = false;
    },
  };
}

/** The cluster as far as the controller sees it: pods by name, changed by the controller's actions. */
class Pods {
  readonly byName = new Map<string, PodObject>();
  private uid = 0;
  private gpu = 0;
  apply(actions: readonly ControllerAction[]): void {
    for (const a of actions) {
      if (a.op === 'create') {
        const p = a.object as PodObject;
        // The scheduler's GPU choice on a pod that asks for one (each pod a fresh GPU of node n1).
        const wantsGpu =
          (p.spec?.containers ?? []).some((c) => c.resources?.requests?.['nvidia.com/gpu'] !== undefined) ||
          p.metadata.annotations?.[ANNOTATION.gpuFraction] !== undefined;
        const annotations = { ...p.metadata.annotations, ...(wantsGpu ? { [ANNOTATION.gpuIndices]: String(this.gpu++) } : {}) };
        this.byName.set(p.metadata.name ?? '', {
          ...p,
          metadata: { ...p.metadata, annotations, uid: `pod-${++this.uid}` },
          spec: { ...(p.spec as PodObject['spec'] & object), nodeName: 'n1' },
          status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
        });
      } else if (a.op === 'delete') this.byName.delete(a.name);
      else if (a.op === 'patch') {
        const p = this.byName.get(a.name) as PodObject;
        const ann = (a.patch.metadata as { annotations: Record<string, string> }).annotations;
        this.byName.set(a.name, { ...p, metadata: { ...p.metadata, annotations: { ...p.metadata.annotations, ...ann } } });
      }
    }
  }
  list(): PodObject[] {
    return [...this.byName.values()];
  }
  assignment(name: string): WireAssignment | undefined {
    const a = parseAssignment(this.byName.get(name)?.metadata.annotations?.[ANNOTATION.batchAssignment]);
    return a === undefined || 'error' in a ? undefined : a;
  }
  report(name: string, r: Parameters<typeof formatReport>[0]): void {
    const p = this.byName.get(name) as PodObject;
    this.byName.set(name, { ...p, metadata: { ...p.metadata, annotations: { ...p.metadata.annotations, [ANNOTATION.batchReport]: formatReport(r) } } });
  }
  fail(name: string): void {
    const p = this.byName.get(name) as PodObject;
    this.byName.set(name, { ...p, status: { phase: 'Failed' } });
  }
}

/** Pods that record what the controller did: creations, deletions, and a deletion of a worker mid-shard (a bug). */
class Watched extends Pods {
  readonly created: PodObject[] = [];
  readonly deleted: string[] = [];
  /** Deleted while other workers still had shards (the job not finishing). */
  readonly deletedBeforeEnd: string[] = [];
  readonly killedMidShard: string[] = [];
  readonly assignedTo: { name: string; uid: string }[] = [];
  override apply(actions: readonly ControllerAction[]): void {
    const finishing = actions.filter((a) => a.op === 'delete').length === this.list().length && this.list().length > 0;
    for (const a of actions) {
      if (a.op !== 'delete') continue;
      this.deleted.push(a.name);
      if (!finishing) this.deletedBeforeEnd.push(a.name);
      const asg = this.assignment(a.name);
      const rep = this.byName.get(a.name)?.metadata.annotations?.[ANNOTATION.batchReport];
      if (asg !== undefined && !finishing && !(rep ?? '').includes(asg.attempt)) this.killedMidShard.push(a.name);
    }
    super.apply(actions);
    for (const a of actions) {
      if (a.op === 'create') this.created.push(this.byName.get((a.object as PodObject).metadata.name ?? '') as PodObject);
      if (a.op === 'patch') {
        const asg = this.assignment(a.name);
        if (asg !== undefined) this.assignedTo.push({ name: a.name, uid: this.byName.get(a.name)?.metadata.uid ?? '' });
      }
    }
  }
}

const ids = (store: MemoryOutputStore): string[] =>
  (store.read(OUTPUT) ?? '')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => outputCustomId(l) as string);

/** Workers finish whatever they hold, one reconcile at a time, until the job is done. Returns the status writes. */
function runToEnd(
  job: BatchJobObject,
  pods: Pods,
  p: ReturnType<typeof port>,
  cfg: BatchControllerConfig,
  t0: number,
  stepMs = 1000,
  extra: (n: number) => Record<string, unknown> = () => ({}),
  hold: (pod: string) => boolean = () => false,
): { t: number; statusWrites: number; job: BatchJobObject } {
  let reports = 0;
  let t = t0;
  let last: unknown;
  let writes = 0;
  let j = job;
  for (let i = 0; i < 500; i++) {
    const step = reconcileBatchJob(j, pods.list(), t, cfg);
    if (step.status !== undefined && JSON.stringify(step.status) !== JSON.stringify(last)) {
      writes++;
      last = step.status;
      j = { ...j, status: step.status };
    }
    pods.apply(step.actions);
    if (j.status?.phase === 'Succeeded' || j.status?.phase === 'Failed') break;
    for (const pod of pods.list()) {
      const name = pod.metadata.name ?? '';
      const a = pods.assignment(name);
      if (a === undefined || hold(name)) continue;
      writePart(p.store, 'uid-1', records(1000), { range: { start: a.start, end: a.end }, part: a.part });
      pods.report(name, {
        attempt: a.attempt,
        start: a.start,
        end: a.end,
        done: a.end - a.start,
        tokens: 12 * (a.end - a.start),
        state: 'done',
        startedMs: t,
        ...extra(reports++),
      });
    }
    t += stepMs;
  }
  return { t, statusWrites: writes, job: j };
}

describe('the BatchInferenceJob reconcile', () => {
  it('reads the input first (Pending, no pods), then creates the workers: engine from the serving runtime, sits batch-worker beside it', () => {
    const p = port(40);
    const cfg = { jobs: p.port };
    const first = reconcileBatchJob(jobOf(2), [], 0, cfg);
    expect(first.status?.phase).toBe('Pending');
    expect(first.actions).toEqual([]);
    const second = reconcileBatchJob(jobOf(2), [], 100, cfg);
    const created = second.actions.filter((a) => a.op === 'create').map((a) => (a as { object: PodObject }).object);
    expect(created.map((c) => c.metadata.name)).toEqual(['j-0', 'j-1']);
    const pod = created[0] as PodObject;
    expect(pod.spec?.schedulerName).toBe('sits-scheduler');
    expect(pod.spec?.restartPolicy).toBe('Never');
    const [server, worker] = pod.spec?.containers ?? [];
    expect(server?.args).toEqual(expect.arrayContaining(['--model', '/mnt/models', '--alias', 'j', '--n-gpu-layers', '999']));
    expect(server?.resources?.limits?.['nvidia.com/gpu']).toBe('1');
    expect(worker?.command).toEqual(['sits', 'batch-worker']);
    expect(worker?.args).toEqual([
      '--input',
      '/mnt/batch/data/in.jsonl',
      '--output',
      '/mnt/batch/data/out/j',
      '--engine',
      'http://$(POD_IP):8080',
      '--model',
      'j',
      '--job-uid',
      'uid-1',
      '--runtime',
      'llamacpp',
      '--checkpoint-interval',
      '300',
    ]);
    expect(pod.spec?.volumes).toEqual([{ name: 'batch-data', persistentVolumeClaim: { claimName: 'data' } }]);
    expect(pod.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'BatchInferenceJob', name: 'j', uid: 'uid-1', controller: true });
  });

  it('makes a worker needing several tensor-parallel GPUs a gang inside one NVLink island', () => {
    const p = port(10);
    reconcileBatchJob(jobOf(1, { gpusPerWorker: 4 }), [], 0, { jobs: p.port });
    const pod = (reconcileBatchJob(jobOf(1, { gpusPerWorker: 4 }), [], 1, { jobs: p.port }).actions[0] as { object: PodObject }).object;
    expect(pod.metadata.labels?.['ai.sits2026.dev/pod-group']).toBe('j-0');
    expect(pod.metadata.annotations).toMatchObject({ [ANNOTATION.minMember]: '1', [ANNOTATION.topologyRequired]: 'nvlink-domain' });
  });

  it('hands out shards by annotation, commits reported parts, and finishes with every custom_id once', () => {
    const p = port(95);
    const pods = new Pods();
    const r = runToEnd(jobOf(3), pods, p, { jobs: p.port }, 0);
    expect(r.job.status?.phase).toBe('Succeeded');
    expect(r.job.status?.progress).toMatchObject({ recordsTotal: 95, recordsProcessed: 95, recordsFailed: 0, tokensProcessed: 95 * 12, percent: 100 });
    expect(r.job.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ status: 'True', reason: 'OutputComplete' });
    expect(ids(p.store)).toEqual(records(95).map((x) => x.customId));
    expect(pods.list()).toEqual([]);
  });

  it('writes status a bounded number of times, not once per record or shard', () => {
    const p = port(1000, 10);
    const pods = new Pods();
    // 100 shards over 2 workers, a commit every second: status follows the 5 %-and-10 s policy.
    const r = runToEnd(jobOf(2), pods, p, { jobs: p.port }, 0);
    expect(r.job.status?.phase).toBe('Succeeded');
    expect(r.statusWrites).toBeLessThan(20);
  });

  it('gives a dead worker’s shard to another attempt and replaces its pod', () => {
    const p = port(30);
    const pods = new Pods();
    const cfg = { jobs: p.port };
    const job = jobOf(2);
    reconcileBatchJob(job, [], 0, cfg);
    pods.apply(reconcileBatchJob(job, [], 1, cfg).actions);
    pods.apply(reconcileBatchJob(job, pods.list(), 2, cfg).actions);
    const lostShard = pods.assignment('j-0') as WireAssignment;
    pods.fail('j-0');
    const del = reconcileBatchJob(job, pods.list(), 3, cfg).actions;
    expect(del).toContainEqual(expect.objectContaining({ op: 'delete', name: 'j-0' }));
    pods.apply(del);
    const create = reconcileBatchJob(job, pods.list(), 4, cfg).actions;
    expect(create).toContainEqual(expect.objectContaining({ op: 'create' }));
    pods.apply(create);
    const r = runToEnd(job, pods, p, cfg, 5);
    expect(r.job.status?.phase).toBe('Succeeded');
    expect(ids(p.store)).toEqual(records(30).map((x) => x.customId));
    expect(pods.assignment('j-0')).toBeUndefined();
    expect(lostShard.attempt).toMatch(/^e1-/);
  });

  it('creates the CPU fallback worker only for rung-3 work: no GPU, outside the GPU share, only that shard, deleted when it is done', () => {
    const p = port(20, 10, { ...DEFAULT_LADDER, cpuFallback: true, splitOnRetry: false });
    const pods = new Pods();
    // One GPU for batch workers in all: the job's one GPU worker holds it, and the CPU worker needs none.
    const cfg = { jobs: p.port, share: new GpuShare({ budgetGpus: 1, quantumMs: 60_000 }) };
    const job = jobOf(1, { faultRecovery: { cpuFallback: true, splitOnRetry: false } });
    const step = (t: number): ControllerAction[] => {
      const r = reconcileBatchJob(job, pods.list(), t, cfg);
      pods.apply(r.actions);
      if (r.status !== undefined) job.status = r.status;
      return r.actions;
    };
    const created = (as: readonly ControllerAction[]): string[] => as.flatMap((a) => (a.op === 'create' ? [(a.object as PodObject).metadata.name ?? ''] : []));
    const failed = (pod: string, t: number): void => {
      const a = pods.assignment(pod) as WireAssignment;
      pods.report(pod, {
        attempt: a.attempt,
        start: a.start,
        end: a.end,
        done: 0,
        tokens: 0,
        state: 'failed',
        startedMs: t,
        failure: { kind: 'crash', message: 'engine 500' },
      });
    };
    const done = (pod: string, t: number): void => {
      const a = pods.assignment(pod) as WireAssignment;
      writePart(p.store, 'uid-1', records(1000), { range: { start: a.start, end: a.end }, part: a.part });
      pods.report(pod, { attempt: a.attempt, start: a.start, end: a.end, done: a.end - a.start, tokens: 0, state: 'done', startedMs: t });
    };
    step(0);
    expect(created(step(1))).toEqual(['j-0']);
    step(2);
    const shard = pods.assignment('j-0') as WireAssignment;
    expect(shard).toMatchObject({ start: 0, end: 10 });
    // Rung 0 fails: rung 1 retries on the same GPU; no CPU worker yet.
    failed('j-0', 3);
    expect(created(step(3))).toEqual([]);
    expect(pods.assignment('j-0')).toMatchObject({ start: 0, end: 10, concurrency: 0.5 });
    // Rung 1 fails: splitOnRetry off, so rung 3: the CPU worker is created in the same reconcile.
    failed('j-0', 4);
    expect(created(step(4))).toEqual(['j-cpu']);
    const cpuPod = pods.byName.get('j-cpu') as PodObject;
    expect(cpuPod.metadata.labels?.[LABEL.batchCpuFallback]).toBe('true');
    expect(JSON.stringify(cpuPod.spec?.containers)).not.toContain('nvidia.com/gpu');
    // j-0 is idle on its quarantined GPU and goes; the CPU worker takes the failed shard, registered as a CPU worker.
    const s5 = step(5);
    expect(s5).toContainEqual(expect.objectContaining({ op: 'delete', name: 'j-0' }));
    expect(pods.assignment('j-cpu')).toMatchObject({ start: shard.start, end: shard.end, concurrency: 1 });
    const session = p.state.s.state === 'ready' ? p.state.s.session : undefined;
    expect(session?.coordinator.runningAttempts().find((a) => a.worker === 'j-cpu')?.range).toEqual({ start: 0, end: 10 });
    expect(created(step(6))).toEqual(['j-0']);
    step(7);
    // The replacement GPU worker takes the normal shard; the CPU worker never does.
    expect(pods.assignment('j-0')).toMatchObject({ start: 10, end: 20 });
    expect(pods.assignment('j-cpu')).toMatchObject({ start: 0, end: 10 });
    expect(job.status?.conditions?.find((x) => x.type === 'FaultRecovery')?.reason).toBe('CpuFallback');
    done('j-cpu', 8);
    const s8 = step(8);
    // No CPU work left: the CPU worker goes while the job still runs, and gets no new assignment.
    expect(s8).toContainEqual(expect.objectContaining({ op: 'delete', name: 'j-cpu' }));
    expect(s8).not.toContainEqual(expect.objectContaining({ op: 'patch', name: 'j-cpu' }));
    expect(pods.byName.has('j-cpu')).toBe(false);
    expect(step(9).map((a) => a.op === 'create' && (a.object as PodObject).metadata.name)).not.toContain('j-cpu');
    expect(job.status?.phase).toBe('Running');
    done('j-0', 10);
    step(10);
    expect(job.status?.phase).toBe('Succeeded');
    expect(ids(p.store)).toEqual(records(20).map((x) => x.customId));
    const fr = job.status?.conditions?.find((x) => x.type === 'FaultRecovery');
    // Nothing left on the CPU rung: the reason is the quarantine again.
    expect(fr?.reason).toBe('DeviceQuarantined');
    expect(fr?.message).toMatch(
      /rung 1: same device at 0.5× concurrency.*rung 3: CPU fallback, waiting for a CPU worker.*\[0,10\): rung 3: CPU fallback on j-cpu \(n1\/cpu\)/,
    );
  });

  it('after a controller restart, the CPU fallback worker keeps its rung-3 shard (adopted, not deleted) and the GPUs never get it', () => {
    const p = port(20, 10, { ...DEFAULT_LADDER, cpuFallback: true, splitOnRetry: false });
    const pods = new Pods();
    const cfg = { jobs: p.port };
    const job = jobOf(1, { faultRecovery: { cpuFallback: true, splitOnRetry: false } });
    const step = (t: number): ControllerAction[] => {
      const r = reconcileBatchJob(job, pods.list(), t, cfg);
      pods.apply(r.actions);
      if (r.status !== undefined) job.status = r.status;
      return r.actions;
    };
    const failed = (pod: string, t: number, kind: 'crash' | 'hardware'): void => {
      const a = pods.assignment(pod) as WireAssignment;
      pods.report(pod, {
        attempt: a.attempt,
        start: a.start,
        end: a.end,
        done: 0,
        tokens: 0,
        state: 'failed',
        startedMs: t,
        failure: { kind, message: 'Xid 79' },
      });
    };
    step(0);
    step(1);
    step(2);
    // A hardware fault skips rung 1, splitOnRetry off skips rung 2: rung 3 at once.
    failed('j-0', 3, 'hardware');
    step(3);
    step(4);
    const onCpu = pods.assignment('j-cpu') as WireAssignment;
    expect(onCpu).toMatchObject({ start: 0, end: 10 });
    pods.report('j-cpu', { attempt: onCpu.attempt, start: onCpu.start, end: onCpu.end, done: 2, tokens: 0, state: 'running', startedMs: 4 });
    // The controller process restarts: a new coordinator over the same volume, which kept the ladder.
    p.restart();
    step(10);
    const s11 = step(11);
    expect(s11).not.toContainEqual(expect.objectContaining({ op: 'delete', name: 'j-cpu' }));
    expect(pods.assignment('j-cpu')).toMatchObject({ attempt: onCpu.attempt, start: 0, end: 10 });
    for (let t = 12; t < 16; t++) step(t);
    // The GPU worker (the replacement of j-0) takes the other shard only.
    const g = pods.assignment('j-0') as WireAssignment;
    expect(g).toMatchObject({ start: 10, end: 20 });
    for (const [pod, a] of [
      ['j-cpu', onCpu],
      ['j-0', g],
    ] as const) {
      writePart(p.store, 'uid-1', records(20), { range: { start: a.start, end: a.end }, part: a.part });
      pods.report(pod, { attempt: a.attempt, start: a.start, end: a.end, done: a.end - a.start, tokens: 0, state: 'done', startedMs: 12 });
    }
    step(16);
    step(17);
    expect(job.status?.phase).toBe('Succeeded');
    expect(ids(p.store)).toEqual(records(20).map((x) => x.customId));
    expect(pods.byName.has('j-cpu')).toBe(false);
  });

  it('with cpuFallback off, a shard past rung 1 gets error lines and no CPU worker is ever created', () => {
    const p = port(20, 10, { ...DEFAULT_LADDER, splitOnRetry: false });
    const pods = new Pods();
    const cfg = { jobs: p.port };
    const job = jobOf(1, { faultRecovery: { splitOnRetry: false } });
    const r0 = renderWorkers(job);
    expect(r0.ok && r0.value.cpuPod).toBe(undefined);
    const names = new Set<string>();
    let t = 0;
    for (; t < 60 && job.status?.phase !== 'Succeeded'; t++) {
      const r = reconcileBatchJob(job, pods.list(), t, cfg);
      for (const a of r.actions) if (a.op === 'create') names.add((a.object as PodObject).metadata.name ?? '');
      pods.apply(r.actions);
      if (r.status !== undefined) job.status = r.status;
      for (const pod of pods.list()) {
        const name = pod.metadata.name ?? '';
        const a = pods.assignment(name);
        if (a === undefined) continue;
        // Shard [0,10) always fails; the rest succeeds.
        if (a.start === 0)
          pods.report(name, {
            attempt: a.attempt,
            start: a.start,
            end: a.end,
            done: 0,
            tokens: 0,
            state: 'failed',
            startedMs: t,
            failure: { kind: 'crash', message: 'engine 500' },
          });
        else {
          writePart(p.store, 'uid-1', records(1000), { range: { start: a.start, end: a.end }, part: a.part });
          pods.report(name, { attempt: a.attempt, start: a.start, end: a.end, done: a.end - a.start, tokens: 0, state: 'done', startedMs: t });
        }
      }
    }
    expect(job.status?.phase).toBe('Succeeded');
    expect(job.status?.progress).toMatchObject({ recordsProcessed: 20, recordsFailed: 10 });
    expect([...names].every((n) => /^j-\d+$/.test(n))).toBe(true);
  });

  it("commits a worker's reported checkpoint while it runs, so its lost shard gives back only the rest (ADR 0159)", () => {
    const p = port(30);
    const pods = new Pods();
    const cfg = { jobs: p.port };
    const job = jobOf(2, { checkpoint: { intervalRecords: 4 } });
    reconcileBatchJob(job, [], 0, cfg);
    pods.apply(reconcileBatchJob(job, [], 1, cfg).actions);
    expect(pods.byName.get('j-0')?.spec?.containers[1]?.args).toEqual(expect.arrayContaining(['--checkpoint-interval', '300', '--checkpoint-records', '4']));
    pods.apply(reconcileBatchJob(job, pods.list(), 2, cfg).actions);
    const a = pods.assignment('j-0') as WireAssignment;
    const file = checkpointName(a.attempt, 1);
    p.store.writeAtomic(file, `${partLines('uid-1', records(30), { range: { start: a.start, end: a.end } }, { upTo: 4 }).join('\n')}\n`);
    pods.report('j-0', { attempt: a.attempt, start: a.start, end: a.end, done: 4, tokens: 48, state: 'running', startedMs: 2, checkpoint: file });
    pods.apply(reconcileBatchJob(job, pods.list(), 3, cfg).actions);
    const c = (p.state.s as { session: JobSession }).session.coordinator;
    expect(c.committedRanges()).toEqual([{ start: a.start, end: a.start + 4 }]);
    pods.fail('j-0');
    pods.apply(reconcileBatchJob(job, pods.list(), 4, cfg).actions);
    expect(c.uncommitted()).toEqual([{ start: a.start + 4, end: 30 }]);
    const r = runToEnd(job, pods, p, cfg, 5);
    expect(r.job.status?.phase).toBe('Succeeded');
    expect(ids(p.store)).toEqual(records(30).map((x) => x.customId));
    expect(JSON.parse(p.store.read('manifest.json') ?? '{}').parts.find((x: { file: string }) => x.file === file)?.accept).toEqual([
      { start: a.start, end: a.start + 4 },
    ]);
  });

  it("sums the workers' stage pipelines into status.stages, keeping a replaced worker's totals (ADR 0167)", () => {
    const p = port(30);
    const pods = new Pods();
    const cfg = { jobs: p.port };
    const job = jobOf(2);
    reconcileBatchJob(job, [], 0, cfg);
    pods.apply(reconcileBatchJob(job, [], 1, cfg).actions);
    pods.apply(reconcileBatchJob(job, pods.list(), 2, cfg).actions);
    const stages = (n: number, queue: number, counter: 'engine' | 'estimated') => [
      { name: 'tokenise' as const, processed: n, busyMs: 10 * n, blockedMs: 100, maxQueue: 0, capacity: 0, promptTokens: 20 * n, counter, refused: 1 },
      { name: 'infer' as const, processed: n - 1, busyMs: 500 * n, blockedMs: 0, maxQueue: queue, capacity: 8 },
      { name: 'postprocess' as const, processed: n - 1, busyMs: n, blockedMs: 0, maxQueue: 1, capacity: 4 },
    ];
    // j-0 finishes its shard (the first commit: a status write is due), j-1 runs on.
    const done0 = pods.assignment('j-0') as WireAssignment;
    writePart(p.store, 'uid-1', records(30), { range: { start: done0.start, end: done0.end }, part: done0.part });
    pods.report('j-0', {
      attempt: done0.attempt,
      start: done0.start,
      end: done0.end,
      done: done0.end - done0.start,
      tokens: 20,
      state: 'done',
      startedMs: 2,
      stages: stages(5, 3, 'engine'),
    });
    const a1 = pods.assignment('j-1') as WireAssignment;
    pods.report('j-1', {
      attempt: a1.attempt,
      start: a1.start,
      end: a1.end,
      done: 2,
      tokens: 20,
      state: 'running',
      startedMs: 2,
      stages: stages(7, 6, 'engine'),
    });
    // That status has both; a worker that dies keeps its totals in the job's.
    const step3 = reconcileBatchJob(job, pods.list(), 3, cfg);
    pods.apply(step3.actions);
    const first = step3.status;
    expect(first?.stages?.map((x) => [x.name, x.device, x.records, x.maxQueue, x.queueCapacity])).toEqual([
      ['tokenise', 'cpu', 12, 0, 0],
      ['infer', 'gpu', 10, 6, 8],
      ['postprocess', 'cpu', 10, 1, 4],
    ]);
    expect(first?.stages?.[0]).toMatchObject({
      promptTokens: 240,
      refused: 2,
      tokenizer: 'engine',
      blockedSeconds: 0.2,
      placement: "cpu: the batch-worker container, with the llamacpp engine's own tokenizer",
    });
    expect(first?.stages?.[1]).toMatchObject({ busySeconds: 6, placement: 'gpu: the llamacpp engine container on 1 GPU a worker' });
    pods.fail('j-1');
    pods.apply(reconcileBatchJob(job, pods.list(), 4, cfg).actions);
    const a0 = pods.assignment('j-0') as WireAssignment;
    pods.report('j-0', {
      attempt: a0.attempt,
      start: a0.start,
      end: a0.end,
      done: 3,
      tokens: 30,
      state: 'running',
      startedMs: 2,
      stages: stages(9, 3, 'estimated'),
    });
    pods.apply(reconcileBatchJob(job, pods.list(), 5, cfg).actions);
    const r = runToEnd(job, pods, p, cfg, 6);
    expect(r.job.status?.phase).toBe('Succeeded');
    expect(r.job.status?.stages?.[0]).toMatchObject({ records: 16, tokenizer: 'estimated', placement: expect.stringContaining('estimated') as unknown });
  });

  it("fails the job naming spec.model.uri when a worker's engine cannot load the model; no device is quarantined, the output says partial", () => {
    const p = port(30);
    const pods = new Pods();
    const cfg = { jobs: p.port };
    const job = jobOf(2);
    reconcileBatchJob(job, [], 0, cfg);
    pods.apply(reconcileBatchJob(job, [], 1, cfg).actions);
    pods.apply(reconcileBatchJob(job, pods.list(), 2, cfg).actions);
    const a = pods.assignment('j-0') as WireAssignment;
    pods.report('j-0', {
      attempt: a.attempt,
      start: a.start,
      end: a.end,
      done: 0,
      tokens: 0,
      state: 'failed',
      startedMs: 2,
      failure: { kind: 'model', message: 'failed to load model /mnt/models: no such file' },
    });
    const step = reconcileBatchJob(job, pods.list(), 3, cfg);
    expect(step.status?.phase).toBe('Failed');
    expect(step.status?.conditions?.find((c) => c.type === 'ModelAvailable')).toMatchObject({
      status: 'False',
      reason: 'ModelUnavailable',
      message: expect.stringMatching(/^spec\.model\.uri pvc:\/\/models\/tiny\.gguf: the engine cannot load it: failed to load model/) as unknown,
    });
    expect(step.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ status: 'False', reason: 'OutputPartial' });
    expect(step.status?.quarantinedGpus).toEqual([]);
    expect(JSON.parse(p.store.read('manifest.json') as string)).toMatchObject({
      state: 'partial',
      reason: expect.stringContaining('spec.model.uri') as unknown,
    });
    expect(
      step.actions
        .filter((x) => x.op === 'delete')
        .map((x) => (x as { name: string }).name)
        .sort(),
    ).toEqual(['j-0', 'j-1']);
  });

  it('passes dynamic batching to the worker (--batching) and shows the largest reported live batch size in status', () => {
    const p = port(40);
    const pods = new Pods();
    const job = jobOf(2, { batching: { batchSize: 16, dynamic: { minBatchSize: 2, maxBatchSize: 64, targetLatencyMs: 900 } } });
    reconcileBatchJob(job, [], 0, { jobs: p.port });
    pods.apply(reconcileBatchJob(job, [], 1, { jobs: p.port }).actions);
    const worker = pods.byName.get('j-0')?.spec?.containers[1];
    expect(worker?.args?.slice(-2)).toEqual(['--batching', JSON.stringify({ start: 16, min: 2, max: 64, targetP99Ms: 900, maxMemoryFraction: 0.9 })]);
    const assigned = reconcileBatchJob(job, pods.list(), 2, { jobs: p.port });
    pods.apply(assigned.actions);
    const a0 = pods.assignment('j-0') as WireAssignment;
    pods.report('j-0', { attempt: a0.attempt, start: a0.start, end: a0.end, done: 1, tokens: 12, state: 'running', startedMs: 2, batchSize: 12 });
    // j-1 finishes its shard: the first commit makes a status write due; the size rides on it (no write of its own).
    const a1 = pods.assignment('j-1') as WireAssignment;
    writePart(p.store, 'uid-1', records(40), { range: { start: a1.start, end: a1.end }, part: a1.part });
    pods.report('j-1', { attempt: a1.attempt, start: a1.start, end: a1.end, done: a1.end - a1.start, tokens: 120, state: 'done', startedMs: 2, batchSize: 7 });
    const st = reconcileBatchJob({ ...job, ...(assigned.status === undefined ? {} : { status: assigned.status }) }, pods.list(), 3, { jobs: p.port }).status;
    expect(st?.currentBatchSize).toBe(12);
  });

  it("mounts a ConfigMap batch-size plugin into the worker and shows the workers' verdict as the StrategyPlugin condition", () => {
    const p = port(40);
    const pods = new Pods();
    const wasm = { configMap: { name: 'plugins', key: 'grow.wasm' }, sha256: 'ab'.repeat(32) };
    const job = jobOf(2, { strategy: { batchSize: { wasm } } });
    reconcileBatchJob(job, [], 0, { jobs: p.port });
    pods.apply(reconcileBatchJob(job, [], 1, { jobs: p.port }).actions);
    const spec = pods.byName.get('j-0')?.spec;
    const worker = spec?.containers[1];
    // The kubelet projects the key as a file (optional: a missing ConfigMap is the worker's refusal, not a stuck pod).
    expect(spec?.volumes).toContainEqual({
      name: BATCH_PLUGIN_VOLUME,
      configMap: { name: 'plugins', items: [{ key: 'grow.wasm', path: 'grow.wasm' }], optional: true },
    });
    expect(worker?.volumeMounts).toContainEqual({ name: BATCH_PLUGIN_VOLUME, mountPath: BATCH_PLUGIN_MOUNT, readOnly: true });
    expect(worker?.args?.slice(-4)).toEqual([
      '--batching',
      JSON.stringify({ start: 32, min: 1, max: 2048, plugin: wasm }),
      '--plugin-configmap-dir',
      BATCH_PLUGIN_MOUNT,
    ]);
    // Without a plugin no such volume.
    expect(renderWorkersVolumes(jobOf(1))).not.toContain(BATCH_PLUGIN_VOLUME);

    const assigned = reconcileBatchJob(job, pods.list(), 2, { jobs: p.port });
    pods.apply(assigned.actions);
    let j: BatchJobObject = { ...job, ...(assigned.status === undefined ? {} : { status: assigned.status }) };
    const a0 = pods.assignment('j-0') as WireAssignment;
    const a1 = pods.assignment('j-1') as WireAssignment;
    const note = "batchSize: plugin configmap/plugins/grow.wasm loaded; start batch size 3 (plugin; the built-in's: 32)";
    pods.report('j-0', {
      attempt: a0.attempt,
      start: a0.start,
      end: a0.end,
      done: 1,
      tokens: 12,
      state: 'running',
      startedMs: 2,
      batchSize: 3,
      batchPlugin: 'active',
      batchNote: note,
    });
    // A verdict is written at once, without waiting for progress.
    const st = reconcileBatchJob(j, pods.list(), 3, { jobs: p.port }).status;
    expect(st?.conditions?.find((c) => c.type === 'StrategyPlugin')).toMatchObject({ status: 'True', reason: 'PluginActive', message: `worker j-0: ${note}` });
    expect(st?.currentBatchSize).toBe(3);
    j = { ...j, ...(st === undefined ? {} : { status: st }) };
    // The same verdict again: no write.
    expect(reconcileBatchJob(j, pods.list(), 4, { jobs: p.port }).status).toBeUndefined();
    // One worker refused it: the worst decides.
    const refused =
      'batchSize: plugin configmap/plugins/grow.wasm rejected: ConfigMap plugins does not exist or has no key grow.wasm; built-in strategies used';
    pods.report('j-1', {
      attempt: a1.attempt,
      start: a1.start,
      end: a1.end,
      done: 1,
      tokens: 12,
      state: 'running',
      startedMs: 2,
      batchSize: 32,
      batchPlugin: 'rejected',
      batchNote: refused,
    });
    const st2 = reconcileBatchJob(j, pods.list(), 5, { jobs: p.port }).status;
    expect(st2?.conditions?.find((c) => c.type === 'StrategyPlugin')).toMatchObject({
      status: 'False',
      reason: 'PluginRejected',
      message: `worker j-1: ${refused}`,
    });
  });

  it("ranks the workers' plugin verdicts: rejected over disabled over active", () => {
    expect(strategyPluginCondition([])).toBeUndefined();
    const r = (pod: string, state: 'active' | 'rejected' | 'disabled') => ({ pod, state, note: `${state} note` });
    expect(strategyPluginCondition([r('a', 'active'), r('b', 'disabled')])).toEqual({
      type: 'StrategyPlugin',
      status: 'False',
      reason: 'PluginDisabled',
      message: 'worker b: disabled note',
    });
    expect(strategyPluginCondition([r('a', 'rejected'), r('b', 'disabled'), r('c', 'active')])).toMatchObject({
      status: 'False',
      reason: 'PluginRejected',
      message: 'worker a: rejected note',
    });
    expect(strategyPluginCondition([r('a', 'active'), r('b', 'active')])).toMatchObject({
      status: 'True',
      reason: 'PluginActive',
      message: 'worker a: active note',
    });
  });

  it('writes no StrategyPlugin condition for a job without a plugin', () => {
    const p = port(20);
    const job = jobOf(1);
    const { job: done } = runToEnd(job, new Pods(), p, { jobs: p.port }, 0);
    expect(done.status?.phase).toBe('Succeeded');
    expect(done.status?.conditions?.some((c) => c.type === 'StrategyPlugin')).toBe(false);
  });

  it('after a controller restart, adopts a worker still on a shard of the earlier epoch and commits it once', () => {
    const p = port(20);
    const pods = new Pods();
    const job = jobOf(1);
    reconcileBatchJob(job, [], 0, { jobs: p.port });
    pods.apply(reconcileBatchJob(job, [], 1, { jobs: p.port }).actions);
    pods.apply(reconcileBatchJob(job, pods.list(), 2, { jobs: p.port }).actions);
    const a = pods.assignment('j-0') as WireAssignment;
    pods.report('j-0', { attempt: a.attempt, start: a.start, end: a.end, done: 3, tokens: 36, state: 'running', startedMs: 2 });
    // The controller process restarts: a new coordinator over the same volume (epoch 2).
    p.restart();
    reconcileBatchJob(job, pods.list(), 10, { jobs: p.port });
    const step = reconcileBatchJob(job, pods.list(), 11, { jobs: p.port });
    // Adopted: the worker keeps its shard (no new assignment is written over it).
    expect(step.actions.filter((x) => x.op === 'patch')).toEqual([]);
    writePart(p.store, 'uid-1', records(20), { range: { start: a.start, end: a.end }, part: a.part });
    pods.report('j-0', { attempt: a.attempt, start: a.start, end: a.end, done: a.end - a.start, tokens: 12 * (a.end - a.start), state: 'done', startedMs: 2 });
    const r = runToEnd(job, pods, p, { jobs: p.port }, 12);
    expect(r.job.status?.phase).toBe('Succeeded');
    expect(ids(p.store)).toEqual(records(20).map((x) => x.customId));
  });

  it('fails a job whose input is rejected, with the errors and the output marked partial', () => {
    const jobs: BatchJobsPort = {
      session: () => ({ state: 'rejected', errors: ['pvc://data/in.jsonl:3:17: not JSON: Unexpected end'], output: 'pvc://data/out/j/manifest.json' }),
    };
    const step = reconcileBatchJob(jobOf(1), [], 0, { jobs });
    expect(step.status?.phase).toBe('Failed');
    expect(step.status?.conditions?.find((c) => c.type === 'InputValid')).toMatchObject({
      status: 'False',
      reason: 'MalformedInput',
      message: 'pvc://data/in.jsonl:3:17: not JSON: Unexpected end',
    });
    expect(step.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ status: 'False', reason: 'OutputPartial' });
    expect(step.actions).toEqual([]);
  });

  it('refuses an input that is not on a claim, naming the field', () => {
    const step = reconcileBatchJob(jobOf(1, { input: { uri: 's3://bucket/in.jsonl' } }), [], 0, { jobs: port(1).port });
    expect(step.status?.phase).toBe('Failed');
    expect(step.status?.conditions?.[0]?.message).toMatch(/^spec\.input\.uri: only pvc:\/\//);
  });

  it('marks the output partial, naming why, when activeDeadlineSeconds passes', () => {
    const p = port(50);
    const pods = new Pods();
    const job = jobOf(1, { activeDeadlineSeconds: 5 });
    reconcileBatchJob(job, [], 0, { jobs: p.port });
    pods.apply(reconcileBatchJob(job, [], 1, { jobs: p.port }).actions);
    const step = reconcileBatchJob(job, pods.list(), 10_000, { jobs: p.port });
    expect(step.status?.phase).toBe('Failed');
    expect(step.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ status: 'False', reason: 'OutputPartial' });
    expect(step.status?.conditions?.find((c) => c.type === 'Complete')?.message).toMatch(/activeDeadlineSeconds 5 passed with 50 records not run/);
    expect(JSON.parse(p.store.read('manifest.json') as string)).toMatchObject({ state: 'partial' });
  });

  describe('profiling and routing (ADR 0165)', () => {
    // Each shard: 10 records, 120 tokens of which 20 generated, 500 ms; the engine's free KV 0.6, 0.5, 0.7, then 0.1.
    const measured = (n: number): Record<string, unknown> => ({ outputTokens: 20, ms: 500, kvFree: [0.6, 0.5, 0.7][n] ?? 0.1 });

    it('profiles the first three committed shards, routes once from spec.sla and the fragmentation, and says why', () => {
      const p = port(95);
      const pods = new Pods();
      let reads = 0;
      const frag = [0.45, 0.9];
      const cfg = { jobs: p.port, fragmentation: () => frag[Math.min(reads++, 1)] };
      const r = runToEnd(jobOf(2, { sla: { class: 'P3', accuracyTolerance: 0.9 } }), pods, p, cfg, 0, 1000, measured);
      expect(r.job.status?.phase).toBe('Succeeded');
      // Read once: the route does not follow the fragmentation (0.9 later would be cpu-elastic) — no flapping.
      expect(reads).toBe(1);
      const routing = r.job.status?.routing;
      expect(routing).toMatchObject({ route: 'gpu-fragments', quantization: 'int8', source: 'builtin', fragmentation: 0.45 });
      // Medians per record of the first three shards; the peak KV use is 1 − the lowest free fraction of those three.
      expect(routing?.profile).toEqual({ shards: 3, promptTokensPerRecord: 10, outputTokensPerRecord: 2, msPerRecord: 50, peakKvFraction: 0.5 });
      expect(routing?.reasons).toEqual([
        'precision: int8 allowed (accuracyTolerance 0.9)',
        'SLA P3: shares GPUs in weighted time slices',
        'fragmentation 0.45 ≥ 0.3: fill fragments (partial GPUs) rather than take whole ones',
        'quantization int8: advisory only, spec.model.quantization is unset and the model is not changed; set it to run quantised',
        'route gpu-fragments: new workers take 0.75 of one GPU (ai.sits2026.dev/gpu-fraction, no whole-GPU request; peak KV use 0.500 × 1.25 headroom, rounded up to 0.25); whole-GPU workers drained at shard boundaries',
      ]);
      const c = r.job.status?.conditions?.find((x) => x.type === 'Routed');
      expect(c).toMatchObject({ status: 'True', reason: 'Routed' });
      expect(c?.message?.startsWith(`gpu-fragments (int8 allowed): ${routing?.reasons.join('; ') ?? ''}; workers now: `)).toBe(true);
      // The model was not changed: the engine container has no quantisation flag.
      expect(JSON.stringify(renderWorkers(jobOf(2, { sla: { class: 'P3', accuracyTolerance: 0.9 } })))).not.toMatch(/int8/);
    });

    it('acts on gpu-fragments: whole-GPU workers drain at shard boundaries, fractional ones replace them, no record lost', () => {
      const p = port(200);
      const pods = new Watched();
      const r = runToEnd(
        jobOf(2, { sla: { class: 'P3' }, gpu: { minMemoryGiB: 20 } }),
        pods,
        p,
        { jobs: p.port, fragmentation: () => 0.45 },
        0,
        1000,
        measured,
      );
      expect(r.job.status?.phase).toBe('Succeeded');
      expect(ids(p.store)).toEqual(records(200).map((x) => x.customId));
      expect(r.job.status?.routing?.route).toBe('gpu-fragments');
      expect(pods.killedMidShard).toEqual([]);
      // Two whole-GPU workers first, then (after the route, each at its shard boundary) two on 0.75 of a GPU whose
      // device must hold 20 GiB in the share.
      const made = pods.created.map((x) => `${x.metadata.name ?? ''}:${x.metadata.annotations?.[ANNOTATION.gpuFraction] ?? 'whole'}`);
      expect(made).toEqual(['j-0:whole', 'j-1:whole', 'j-0:0.75', 'j-1:0.75']);
      const frac = pods.created[2] as PodObject;
      expect(frac.metadata.annotations?.[ANNOTATION.gpuMemory]).toBe('27Gi');
      expect(frac.metadata.labels?.[LABEL.batchRoute]).toBe('gpu-fragments');
      expect(JSON.stringify(frac.spec?.containers)).not.toContain('nvidia.com/gpu');
      // The fractional workers ran shards after the whole ones were gone.
      expect(pods.assignedTo.filter((x) => x.uid === frac.metadata.uid).length).toBeGreaterThan(0);
      expect(r.job.status?.conditions?.find((x) => x.type === 'Routed')?.message).toMatch(/; workers now: 2 on 0\.75 of a GPU$/);
    });

    it('acts on cpu-elastic: GPU workers drain, CPU workers <job>-cpu<n> take every shard, fewer as the work runs out', () => {
      const p = port(200);
      const pods = new Watched();
      const job = jobOf(2, { sla: { class: 'P3', accuracyTolerance: 0.8 } });
      // j-cpu1 is slow: it holds its first shard while j-cpu0 is there, so j-cpu0 runs out of shards first.
      const r = runToEnd(job, pods, p, { jobs: p.port, fragmentation: () => 0.7 }, 0, 1000, measured, (n) => n === 'j-cpu1' && pods.byName.has('j-cpu0'));
      expect(r.job.status?.phase).toBe('Succeeded');
      expect(ids(p.store)).toEqual(records(200).map((x) => x.customId));
      expect(r.job.status?.routing?.route).toBe('cpu-elastic');
      expect(r.job.status?.routing?.reasons.at(-1)).toMatch(
        /^route cpu-elastic: GPU workers drained at shard boundaries and replaced by CPU workers \(the llamacpp CPU build, no GPU\)/,
      );
      expect(pods.killedMidShard).toEqual([]);
      expect(pods.created.map((x) => x.metadata.name)).toEqual(['j-0', 'j-1', 'j-cpu0', 'j-cpu1']);
      const cpu = pods.created[2] as PodObject;
      expect(cpu.metadata.labels?.[LABEL.batchRoute]).toBe('cpu-elastic');
      expect(JSON.stringify(cpu.spec?.containers)).not.toContain('nvidia.com/gpu');
      expect((cpu.spec?.containers?.[0] as { image?: string }).image).toBe('ghcr.io/ggml-org/llama.cpp:server');
      // Once the CPU workers came, every shard went to them (the GPU workers only finished what they held).
      const firstCpu = pods.assignedTo.findIndex((x) => x.name.startsWith('j-cpu'));
      expect(firstCpu).toBeGreaterThan(0);
      expect(pods.assignedTo.slice(firstCpu).filter((x) => !x.name.startsWith('j-cpu'))).toEqual([]);
      // Elastic: no shard open and one running on j-cpu1, so the idle j-cpu0 went while the job ran on.
      expect(pods.deletedBeforeEnd.filter((n) => n.startsWith('j-cpu'))).toEqual(['j-cpu0']);
    });

    it('keeps GPUs for a cpu-elastic route when the runtime has no CPU build, and says so', () => {
      const p = port(60);
      const job = jobOf(1, { runtime: 'tgi', model: { uri: 'pvc://models/m' }, sla: { class: 'P3', accuracyTolerance: 0.8 } });
      const pods = new Watched();
      const r = runToEnd(job, pods, p, { jobs: p.port, fragmentation: () => 0.7 }, 0, 1000, measured);
      expect(r.job.status?.routing?.route).toBe('cpu-elastic');
      expect(r.job.status?.routing?.reasons.at(-1)).toBe(
        'route cpu-elastic not acted on: Text Generation Inference has no CPU build; the workers stay on GPUs',
      );
      expect(pods.created.map((x) => x.metadata.name)).toEqual(['j-0']);
    });

    it('says Profiling until the shards are in, and takes an unknown fragmentation as 0 with that reason', () => {
      const p = port(95);
      const pods = new Pods();
      const cfg = { jobs: p.port };
      const job = jobOf(1);
      reconcileBatchJob(job, [], 0, cfg);
      const s = reconcileBatchJob(job, [], 1, cfg);
      expect(s.status?.conditions?.find((x) => x.type === 'Routed')).toMatchObject({
        status: 'False',
        reason: 'Profiling',
        message: 'profiling the workload: 0 of 3 shards committed',
      });
      expect(s.status?.routing).toBeUndefined();
      const r = runToEnd(job, pods, p, cfg, 2, 1000, measured);
      expect(r.job.status?.routing).toMatchObject({ route: 'gpu-shared', source: 'builtin', fragmentation: 0 });
      expect(r.job.status?.routing?.reasons[0]).toBe('fragmentation unknown (no scheduler view in this controller): taken as 0');
      expect(r.job.status?.routing?.reasons).toContain('precision: full (accuracyTolerance 1)');
    });

    it('a job smaller than three shards is routed from what it had when it ends; the engine without a KV gauge leaves peak KV unset', () => {
      const p = port(20);
      const r = runToEnd(jobOf(1, { sla: { class: 'P1' } }), new Pods(), p, { jobs: p.port, fragmentation: () => 0.2 }, 0, 1000, () => ({
        outputTokens: 20,
        ms: 400,
      }));
      expect(r.job.status?.routing).toMatchObject({ route: 'gpu-exclusive', profile: { shards: 2, msPerRecord: 40 } });
      expect(r.job.status?.routing?.profile.peakKvFraction).toBeUndefined();
    });

    it('keeps the route in status after a controller restart instead of deciding again', () => {
      const p = port(95);
      const pods = new Pods();
      const cfg = { jobs: p.port, fragmentation: () => 0.1 };
      const before = runToEnd(jobOf(2), pods, p, cfg, 0, 1000, measured).job.status?.routing;
      const p2 = port(95);
      let reads = 0;
      const job = {
        ...jobOf(2),
        status: { phase: 'Running' as const, routing: { ...(before as NonNullable<typeof before>), route: 'gpu-fragments' as const } },
      };
      const r = runToEnd(job, new Pods(), p2, { jobs: p2.port, fragmentation: () => (reads++, 0.1) }, 0, 1000, measured);
      expect(reads).toBe(0);
      expect(r.job.status?.routing?.route).toBe('gpu-fragments');
    });

    it('lets a routing plugin file decide, and refuses a ConfigMap plugin with the reason, the built-in deciding', () => {
      const sha256 = 'a'.repeat(64);
      const closed: string[] = [];
      // route code = route index + 256 × quantisation: 0 is gpu-exclusive, full precision.
      const caller = (file: string): PluginCaller & { close(): void } => ({
        name: file,
        call: () => ({ ok: true, value: 0 }),
        close: () => void closed.push(file),
      });
      const loads: string[] = [];
      const routePlugin = (file: string, sha: string) => (
        loads.push(`${file}@${sha.slice(0, 4)}`),
        file === 'bad.wasm' ? { ok: false as const, reason: 'plugin bad.wasm: sha256 mismatch' } : { ok: true as const, value: caller(file) }
      );
      const run = (wasm: Record<string, unknown>) => {
        const p = port(40);
        return runToEnd(
          jobOf(1, { strategy: { routing: { wasm: { ...wasm, sha256 } } } }),
          new Pods(),
          p,
          { jobs: p.port, fragmentation: () => 0.1, routePlugin },
          0,
          1000,
          measured,
        ).job.status;
      };
      const good = run({ file: 'route.wasm' });
      expect(good?.routing).toMatchObject({ route: 'gpu-exclusive', source: 'plugin' });
      expect(good?.routing?.reasons[0]).toBe('plugin route.wasm: route gpu-exclusive');
      expect(good?.conditions?.find((x) => x.type === 'Routed')).toMatchObject({ status: 'True', reason: 'RoutedByPlugin' });
      expect(closed).toEqual(['route.wasm']);
      const bad = run({ file: 'bad.wasm' });
      expect(bad?.routing).toMatchObject({ route: 'gpu-shared', source: 'builtin' });
      expect(bad?.routing?.reasons).toContain('spec.strategy.routing.wasm plugin bad.wasm: sha256 mismatch; built-in route used');
      expect(bad?.conditions?.find((x) => x.type === 'Routed')).toMatchObject({ reason: 'PluginRefused' });
      const cm = run({ configMap: { name: 'plugins', key: 'route.wasm' } });
      expect(cm?.routing?.source).toBe('builtin');
      expect(cm?.routing?.reasons).toContain(
        'spec.strategy.routing.wasm configmap/plugins/route.wasm: the controller reads routing plugins from files under its plugin directory only; built-in route used',
      );
      expect(loads).toEqual(['route.wasm@aaaa', 'bad.wasm@aaaa']);
    });
  });
});

describe('spec.suspend (ADR 0160)', () => {
  it('a job created suspended starts no pods and is phase Suspended with the Suspended condition', () => {
    const p = port(20);
    const job = jobOf(2, { suspend: true });
    reconcileBatchJob(job, [], 0, { jobs: p.port });
    const step = reconcileBatchJob(job, [], 1, { jobs: p.port });
    expect(step.actions).toEqual([]);
    expect(step.status?.phase).toBe('Suspended');
    expect(step.status?.conditions?.find((c) => c.type === 'Suspended')).toMatchObject({ status: 'True', reason: 'Suspended' });
  });

  it('suspending a running job keeps its checkpoint, deletes the pods, releases the share; resume resets startTime and finishes every custom_id once', () => {
    const p = port(30);
    const pods = new Pods();
    const cfg = { jobs: p.port };
    const job = jobOf(2, { checkpoint: { intervalRecords: 4 }, activeDeadlineSeconds: 100 });
    reconcileBatchJob(job, [], 0, cfg);
    pods.apply(reconcileBatchJob(job, [], 1, cfg).actions);
    pods.apply(reconcileBatchJob(job, pods.list(), 2, cfg).actions);
    const a = pods.assignment('j-0') as WireAssignment;
    const file = checkpointName(a.attempt, 1);
    p.store.writeAtomic(file, `${partLines('uid-1', records(30), { range: { start: a.start, end: a.end } }, { upTo: 4 }).join('\n')}\n`);
    pods.report('j-0', { attempt: a.attempt, start: a.start, end: a.end, done: 4, tokens: 48, state: 'running', startedMs: 2, checkpoint: file });
    pods.apply(reconcileBatchJob(job, pods.list(), 3, cfg).actions);
    const suspended = jobOf(2, { checkpoint: { intervalRecords: 4 }, activeDeadlineSeconds: 100, suspend: true });
    const s1 = reconcileBatchJob(suspended, pods.list(), 4, cfg);
    expect(
      s1.actions
        .filter((x) => x.op === 'delete')
        .map((x) => (x as { name: string }).name)
        .sort(),
    ).toEqual(['j-0', 'j-1']);
    expect(s1.actions.some((x) => x.op === 'create')).toBe(false);
    expect(s1.status?.phase).toBe('Suspended');
    expect(s1.status?.progress?.recordsProcessed).toBe(4);
    pods.apply(s1.actions);
    const c = (p.state.s as { session: JobSession }).session.coordinator;
    expect(c.uncommitted()).toEqual([{ start: a.start + 4, end: 30 }]);
    // Long past activeDeadlineSeconds while suspended: nothing starts, nothing fails.
    const s2 = reconcileBatchJob({ ...suspended, status: s1.status as never }, pods.list(), 500_000, cfg);
    expect(s2.actions).toEqual([]);
    expect(s2.status).toBeUndefined();
    const resumed = { ...job, status: s1.status as never };
    const s3 = reconcileBatchJob(resumed, pods.list(), 600_000, cfg);
    expect(s3.actions.filter((x) => x.op === 'create')).toHaveLength(2);
    expect(s3.status?.phase).not.toBe('Failed');
    expect(s3.status?.startTime).toBe('1970-01-01T00:10:00Z');
    expect(s3.status?.conditions?.find((x) => x.type === 'Suspended')).toMatchObject({ status: 'False', reason: 'Resumed' });
    pods.apply(s3.actions);
    const r = runToEnd({ ...resumed, status: s3.status as never }, pods, p, cfg, 601_000);
    expect(r.job.status?.phase).toBe('Succeeded');
    expect(ids(p.store)).toEqual(records(30).map((x) => x.customId));
  });

  it('keeps what the workers reported but the controller had not judged when the suspend arrives: a checkpoint, a finished part', () => {
    const p = port(30);
    const pods = new Pods();
    const cfg = { jobs: p.port };
    const job = jobOf(2, { checkpoint: { intervalRecords: 4 } });
    reconcileBatchJob(job, [], 0, cfg);
    pods.apply(reconcileBatchJob(job, [], 1, cfg).actions);
    pods.apply(reconcileBatchJob(job, pods.list(), 2, cfg).actions);
    const [a0, a1] = [pods.assignment('j-0'), pods.assignment('j-1')] as WireAssignment[];
    const file = checkpointName(a0!.attempt, 1);
    p.store.writeAtomic(file, `${partLines('uid-1', records(30), { range: { start: a0!.start, end: a0!.end } }, { upTo: 4 }).join('\n')}\n`);
    pods.report('j-0', { attempt: a0!.attempt, start: a0!.start, end: a0!.end, done: 4, tokens: 48, state: 'running', startedMs: 2, checkpoint: file });
    writePart(p.store, 'uid-1', records(30), { range: { start: a1!.start, end: a1!.end }, part: a1!.part });
    pods.report('j-1', { attempt: a1!.attempt, start: a1!.start, end: a1!.end, done: a1!.end - a1!.start, tokens: 12, state: 'done', startedMs: 2 });
    // The suspend is seen in the very reconcile that first reads these reports.
    const s1 = reconcileBatchJob(jobOf(2, { checkpoint: { intervalRecords: 4 }, suspend: true }), pods.list(), 3, cfg);
    expect(s1.status?.phase).toBe('Suspended');
    expect(s1.status?.progress?.recordsProcessed).toBe(4 + (a1!.end - a1!.start));
    const c = (p.state.s as { session: JobSession }).session.coordinator;
    expect(c.committedRanges()).toEqual(expect.arrayContaining([{ start: a0!.start, end: a0!.start + 4 }]));
  });
  it('gives the GPU share back while suspended', () => {
    const p = port(30);
    const share = new GpuShare({ budgetGpus: 2, quantumMs: 60_000 });
    const cfg = { jobs: p.port, share };
    reconcileBatchJob(jobOf(2), [], 0, cfg);
    reconcileBatchJob(jobOf(2), [], 1, cfg);
    reconcileBatchJob(jobOf(2, { suspend: true }), [], 2, cfg);
    // The suspended job is no demand: another tenant's job gets the whole budget at once.
    expect(share.workers('other', { name: 'other', weight: 1 }, 2, 1, 3)).toBe(2);
  });

  it('a finished job stays finished when suspended', () => {
    const p = port(10);
    const step = reconcileBatchJob({ ...jobOf(1, { suspend: true }), status: { phase: 'Succeeded' } }, [], 0, { jobs: p.port });
    expect(step.status).toBeUndefined();
  });
});
