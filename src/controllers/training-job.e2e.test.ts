// Issue 5's acceptance on a real control plane: `sits dev up --nodes 4 --shape a800x4` (etcd + kube-apiserver, 4
// fake 4×A800 NVLink nodes, the SITS scheduler, the fake kubelet and the TrainingJob controller), one namespace
// per test. Objects are created as raw JSON through KubeClient, as `kubectl apply` would send them.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { EXIT_CODE_ANNOTATION } from '../harness/fake-kubelet.ts';
import { createNs, listEvents, listPods, testPod, waitFor, getTable as getTableAt, type KubeTable } from '../harness/e2e-kit.ts';
import { SEED_TRAINING_JOB } from '../api/examples.ts';
import type { TrainingJobObject } from './training-job/model.ts';

const TJ = '/apis/ai.sits2026.dev/v1';
const jobsPath = (ns: string): string => `${TJ}/namespaces/${ns}/trainingjobs`;

let cluster: DevCluster;
let client: DevCluster['client'];
const logs: string[] = [];

beforeAll(async () => {
  cluster = await startDevCluster({
    nodes: 4,
    shape: 'a800x4',
    log: (m) => logs.push(m),
    // Short timers so the file stays quick; the defaults (10 s backoff, 60 s cooldown) are unit-tested.
    controllers: { config: { backoffBaseMs: 1000, backoffMaxMs: 8000, resizeCooldownMs: 1500 }, log: (m) => logs.push(`controller: ${m}`) },
  });
  client = cluster.client;
});

afterAll(async () => {
  await cluster?.stop();
});

const namespaces: string[] = [];
async function newNs(name: string): Promise<string> {
  await createNs(client, name);
  namespaces.push(name);
  return name;
}

// A failed test must not leave GPUs held for the next one: say what was there, then delete it all.
afterEach(async (ctx) => {
  for (const ns of namespaces.splice(0)) {
    const jobs = (await client.get<{ items: TrainingJobObject[] }>(jobsPath(ns))).items;
    if (ctx.task.result?.state === 'fail') {
      for (const j of jobs) console.error(`${ns}/${j.metadata.name}: ${JSON.stringify(j.status)}`);
      for (const p of await listPods(client, ns))
        console.error(
          `pod ${p.metadata?.name} ${p.spec?.nodeName ?? '-'} ${p.status?.phase} ${JSON.stringify(p.status?.conditions?.find((c) => c.type === 'PodScheduled'))}`,
        );
      console.error(logs.filter((l) => l.startsWith('controller')).join('\n'));
    }
    await Promise.allSettled([
      ...jobs.map((j) => client.delete(`${jobsPath(ns)}/${j.metadata.name ?? ''}`)),
      ...(await listPods(client, ns)).map((p) => client.delete(`/api/v1/namespaces/${ns}/pods/${p.metadata?.name ?? ''}`)),
    ]);
    await waitFor(
      `namespace ${ns} emptied`,
      async () => (await listPods(client, ns)).length === 0 && (await client.get<{ items: unknown[] }>(jobsPath(ns))).items.length === 0,
      30_000,
    );
  }
});

const getTable = (path: string): Promise<KubeTable> => getTableAt(cluster.plane, path);

function trainingJob(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'TrainingJob',
    metadata: { name },
    spec: { container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] }, ...spec },
  };
}

const getJob = (ns: string, name: string): Promise<TrainingJobObject> => client.get<TrainingJobObject>(`${jobsPath(ns)}/${name}`);
const envOf = (p: V1Pod): Record<string, string> => Object.fromEntries((p.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value ?? '']));
const replicaPods = async (ns: string, job: string): Promise<V1Pod[]> =>
  (await listPods(client, ns)).filter(
    (p) => p.metadata?.labels?.['ai.sits2026.dev/training-job'] === job && p.metadata.labels['ai.sits2026.dev/role'] === 'replica',
  );

async function deleteJobAndWait(ns: string, name: string): Promise<void> {
  await client.delete(`${jobsPath(ns)}/${name}`);
  await waitFor(
    `job ${ns}/${name} and everything it owns to be gone`,
    async () => {
      const [pods, svcs, pgs] = await Promise.all([
        listPods(client, ns),
        client.get<{ items: unknown[] }>(`/api/v1/namespaces/${ns}/services`),
        client.get<{ items: unknown[] }>(`${TJ}/namespaces/${ns}/podgroups`),
      ]);
      const jobGone = await getJob(ns, name).then(
        () => false,
        () => true,
      );
      return jobGone && pods.length === 0 && svcs.items.length === 0 && pgs.items.length === 0;
    },
    30_000,
  );
}

describe('TrainingJob controller on a real kube-apiserver (4 × a800x4)', () => {
  it('runs the seed example: 8 pods on exactly 2 nodes within 30 s, torchrun and NCCL env, phase Running; deleting it removes everything', async () => {
    const ns = await newNs('seed');
    const t0 = performance.now();
    await client.post(jobsPath(ns), SEED_TRAINING_JOB);
    const pods = await waitFor(
      '8 replicas bound and Running',
      async () => {
        const ps = await replicaPods(ns, 'bert-large-finetune');
        return ps.length === 8 && ps.every((p) => (p.spec?.nodeName ?? '') !== '' && p.status?.phase === 'Running') ? ps : undefined;
      },
      30_000,
    );
    expect(performance.now() - t0).toBeLessThan(30_000);
    expect(new Set(pods.map((p) => p.spec?.nodeName)).size).toBe(2);
    const envs = pods.map(envOf);
    expect(envs.every((e) => e.WORLD_SIZE === '8')).toBe(true);
    expect(envs.map((e) => Number(e.RANK)).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const master = 'bert-large-finetune-0.bert-large-finetune.seed.svc';
    for (const e of envs) {
      expect(e).toMatchObject({
        MASTER_ADDR: master,
        MASTER_PORT: '29500',
        PET_MASTER_ADDR: master,
        PET_NNODES: '8',
        PET_NPROC_PER_NODE: '1',
        NCCL_IB_DISABLE: '0',
        NCCL_SOCKET_TIMEOUT: '1200',
        NCCL_ASYNC_ERROR_HANDLING: '1',
      });
      expect(e.NODE_RANK).toBe(e.RANK);
    }
    // MASTER_ADDR names rank 0 through the headless Service: pod hostname + subdomain = the Service.
    const rank0 = pods.find((p) => envOf(p).RANK === '0');
    expect(rank0?.metadata?.name).toBe('bert-large-finetune-0');
    expect(rank0?.spec?.hostname).toBe('bert-large-finetune-0');
    expect(rank0?.spec?.subdomain).toBe('bert-large-finetune');
    const svc = await client.get<{ spec: { clusterIP: string; selector: Record<string, string>; publishNotReadyAddresses: boolean } }>(
      `/api/v1/namespaces/${ns}/services/bert-large-finetune`,
    );
    expect(svc.spec.clusterIP).toBe('None');
    expect(svc.spec.publishNotReadyAddresses).toBe(true);
    expect(Object.entries(svc.spec.selector).every(([k, v]) => rank0?.metadata?.labels?.[k] === v)).toBe(true);
    for (const p of pods) {
      expect(p.spec?.schedulerName).toBe('sits-scheduler');
      expect(p.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'TrainingJob', name: 'bert-large-finetune', controller: true });
      expect(p.spec?.containers[0]?.resources?.limits?.['nvidia.com/gpu']).toBe('1');
    }
    const pg = await client.get<{ spec: { minMember: number; topology?: { preferred?: string } } }>(`${TJ}/namespaces/${ns}/podgroups/bert-large-finetune`);
    expect(pg.spec.minMember).toBe(8);
    // `kubectl get trainingjobs`: the Phase column reads .status.phase.
    const job = await waitFor(
      'status Running',
      async () => {
        const j = await getJob(ns, 'bert-large-finetune');
        return j.status?.phase === 'Running' && j.status.readyReplicas === 8 ? j : undefined;
      },
      15_000,
    );
    expect(job.status).toMatchObject({ phase: 'Running', replicas: 8, readyReplicas: 8, worldSize: 8, gpus: 8, restartCount: 0 });
    expect(job.status?.nodes).toHaveLength(2);
    expect(job.status?.conditions?.find((c) => c.type === 'Running')?.status).toBe('True');
    const table = await getTable(jobsPath(ns));
    const col = (n: string): unknown => table.rows[0]?.cells[table.columnDefinitions.findIndex((c) => c.name === n)];
    expect([col('Name'), col('Phase'), col('Ready'), col('Replicas'), col('GPUs')]).toEqual(['bert-large-finetune', 'Running', 8, 8, 8]);
    // `kubectl describe tj`: each transition is an Event; startTime is when the gang ran, not when it was created.
    const reasons = await waitFor(
      'the Running event',
      async () => {
        const r = (await listEvents(client, ns)).filter((e) => e.involvedObject?.name === 'bert-large-finetune').map((e) => e.reason);
        return r.includes('Running') ? r : undefined;
      },
      15_000,
    );
    expect(reasons).toEqual(expect.arrayContaining(['Created', 'Running']));
    expect(job.status?.startTime).toBeDefined();

    await deleteJobAndWait(ns, 'bert-large-finetune');
  });

  it("a job that cannot fit: no pod bound, status Pending with the scheduler's explanation", async () => {
    const ns = await newNs('toobig');
    await client.post(jobsPath(ns), trainingJob('huge', { replicas: 2, resources: { 'nvidia.com/gpu': 8 } }));
    const job = await waitFor(
      'status explaining why',
      async () => {
        const j = await getJob(ns, 'huge');
        const c = j.status?.conditions?.find((x) => x.type === 'Scheduled');
        return j.status?.phase === 'Pending' && c?.reason === 'Unschedulable' ? j : undefined;
      },
      30_000,
    );
    const scheduled = job.status?.conditions?.find((c) => c.type === 'Scheduled');
    expect(scheduled?.status).toBe('False');
    expect(scheduled?.message).toMatch(/^0\/4 nodes fit gang toobig\/huge \(2×8 GPU\): 4 with fewer GPUs than the 8 requested/);
    const pods = await replicaPods(ns, 'huge');
    expect(pods).toHaveLength(2);
    expect(pods.filter((p) => (p.spec?.nodeName ?? '') !== '')).toEqual([]);
    expect(job.status).toMatchObject({ replicas: 2, readyReplicas: 0, gpus: 0, restartCount: 0 });
    // Waiting is not running: no startTime (activeDeadlineSeconds does not count the wait), and the Pending Event.
    expect(job.status?.startTime).toBeUndefined();
    await waitFor(
      'the Pending event',
      async () =>
        (await listEvents(client, ns)).some((e) => e.involvedObject?.name === 'huge' && e.reason === 'Pending' && e.message === 'phase Scheduling -> Pending'),
      15_000,
    );
    await deleteJobAndWait(ns, 'huge');
  });

  it('GPU memory reaches the scheduler: 96Gi per GPU does not fit 80 GB A800s, 40Gi does', async () => {
    const ns = await newNs('gpumem');
    await client.post(jobsPath(ns), trainingJob('bigmem', { replicas: 1, resources: { 'nvidia.com/gpu': 1, 'memory-gpu-optimized': '96Gi' } }));
    const job = await waitFor(
      'status explaining why',
      async () => {
        const j = await getJob(ns, 'bigmem');
        const c = j.status?.conditions?.find((x) => x.type === 'Scheduled');
        return c?.reason === 'Unschedulable' ? j : undefined;
      },
      30_000,
    );
    expect(job.status?.conditions?.find((c) => c.type === 'Scheduled')?.message).toMatch(/^0\/4 nodes fit .*: 4 insufficient GPU memory per device/);
    await client.post(jobsPath(ns), trainingJob('fits', { replicas: 1, resources: { 'nvidia.com/gpu': 1 }, gpu: { minMemoryGiB: 40 } }));
    await waitFor(
      'the 40Gi job bound',
      async () => ((await replicaPods(ns, 'fits')).filter((p) => (p.spec?.nodeName ?? '') !== '').length === 1 ? true : undefined),
      30_000,
    );
    expect((await replicaPods(ns, 'bigmem')).filter((p) => (p.spec?.nodeName ?? '') !== '')).toEqual([]);
    // deleteJobAndWait waits for the whole namespace to empty: delete the other job first.
    await client.delete(`${jobsPath(ns)}/fits`);
    await deleteJobAndWait(ns, 'bigmem');
  });

  it('the model a TrainingJob states reaches the scheduler: every replica carries it and the gang is bound (ADR 0188)', async () => {
    const ns = await newNs('model');
    await client.post(jobsPath(ns), trainingJob('gpt', { replicas: 4, resources: { 'nvidia.com/gpu': 1 }, model: { parameters: 2_700_000_000, kind: 'gpt' } }));
    const pods = await waitFor(
      '4 replicas bound',
      async () => {
        const ps = await replicaPods(ns, 'gpt');
        return ps.length === 4 && ps.every((p) => (p.spec?.nodeName ?? '') !== '') ? ps : undefined;
      },
      30_000,
    );
    // The apiserver's default filled in parallelism; the scheduler parsed it (a malformed one would leave them unbound).
    expect(pods.map((p) => p.metadata?.annotations?.['ai.sits2026.dev/training-model'])).toEqual(pods.map(() => 'gpt/2700000000/ddp'));
    // A 4-GPU gang that needs good links on empty 4×A800 NVLink nodes: one node, one island.
    expect(new Set(pods.map((p) => p.spec?.nodeName)).size).toBe(1);
    await deleteJobAndWait(ns, 'gpt');
  });

  it('a failed replica restarts the whole gang with exponential backoff; after backoffLimit the job is Failed with the reason, then deleted by its TTL', async () => {
    const ns = await newNs('flaky');
    await client.post(jobsPath(ns), trainingJob('flaky', { replicas: 2, resources: { 'nvidia.com/gpu': 1 }, backoffLimit: 2, ttlSecondsAfterFinished: 4 }));
    const running = async (attempt: number): Promise<V1Pod[]> =>
      waitFor(
        `attempt ${attempt} running`,
        async () => {
          const ps = await replicaPods(ns, 'flaky');
          return ps.length === 2 && ps.every((p) => p.status?.phase === 'Running' && p.metadata?.labels?.['ai.sits2026.dev/attempt'] === String(attempt))
            ? ps
            : undefined;
        },
        30_000,
      );
    const failRank1 = async (pods: V1Pod[]): Promise<void> => {
      const p = pods.find((x) => x.metadata?.labels?.['ai.sits2026.dev/rank'] === '1');
      await client.mergePatch(`/api/v1/namespaces/${ns}/pods/${p?.metadata?.name ?? ''}`, { metadata: { annotations: { [EXIT_CODE_ANNOTATION]: '1' } } });
    };
    const delays: number[] = [];
    let pods = await running(1);
    for (const attempt of [2, 3]) {
      const before = new Set(pods.map((p) => p.metadata?.uid));
      await failRank1(pods);
      const j = await waitFor(
        `restart ${attempt - 1} recorded`,
        async () => {
          const x = await getJob(ns, 'flaky');
          return x.status?.restartCount === attempt - 1 ? x : undefined;
        },
        20_000,
      );
      expect(j.status?.conditions?.find((c) => c.type === 'Restarting')?.message).toMatch(
        /^replica flaky-1 exited with code 1; restarting the whole gang in \d+s \(restart \d of backoffLimit 2\)$/,
      );
      delays.push(Date.parse(j.status?.nextAttemptTime ?? '') - Date.parse(j.status?.lastRestartTime ?? ''));
      pods = await running(attempt);
      // The whole gang was replaced, rank 0 included.
      expect(pods.some((p) => before.has(p.metadata?.uid))).toBe(false);
      expect(pods.map(envOf).every((e) => e.SITS_ATTEMPT === String(attempt) && e.WORLD_SIZE === '2')).toBe(true);
    }
    expect(delays).toEqual([1000, 2000]);
    await failRank1(pods);
    const failed = await waitFor(
      'job Failed',
      async () => {
        const x = await getJob(ns, 'flaky');
        return x.status?.phase === 'Failed' ? x : undefined;
      },
      20_000,
    );
    const c = failed.status?.conditions?.find((x) => x.type === 'Failed');
    expect(c?.reason).toBe('BackoffLimitExceeded');
    expect(c?.message).toBe('replica flaky-1 exited with code 1; the gang was already restarted 2 time(s), backoffLimit is 2');
    expect(failed.status?.restartCount).toBe(2);
    // No endless loop: no further attempt is created.
    expect((await replicaPods(ns, 'flaky')).every((p) => p.metadata?.labels?.['ai.sits2026.dev/attempt'] === '3')).toBe(true);
    // ttlSecondsAfterFinished: the job and everything it owns go away.
    await waitFor(
      'TTL deletion',
      async () =>
        (await getJob(ns, 'flaky').then(
          () => false,
          () => true,
        )) && (await listPods(client, ns)).length === 0,
      30_000,
    );
  });

  it('elastic min 2 / max 4 with room for 2 runs with 2; when room for 4 appears it resizes to 4 with WORLD_SIZE=4 everywhere', async () => {
    const ns = await newNs('elastic');
    // 14 of the 16 GPUs taken by other pods: three whole nodes and half of the fourth.
    const fillers = [...[0, 1, 2].map((i) => testPod(ns, `filler-${i}`, { gpus: 4 })), testPod(ns, 'filler-half', { gpus: 2 })];
    for (const f of fillers) await client.post(`/api/v1/namespaces/${ns}/pods`, f);
    await waitFor('fillers bound', async () => (await listPods(client, ns)).filter((p) => (p.spec?.nodeName ?? '') !== '').length === 4, 20_000);
    await client.post(jobsPath(ns), trainingJob('grow', { replicas: 4, minReplicas: 2, maxReplicas: 4, resources: { 'nvidia.com/gpu': 1 } }));
    const runningWith = (n: number): Promise<V1Pod[]> =>
      waitFor(
        `${n} replicas running with WORLD_SIZE=${n}`,
        async () => {
          const ps = (await replicaPods(ns, 'grow')).filter((p) => p.metadata?.deletionTimestamp === undefined);
          return ps.length === n && ps.every((p) => p.status?.phase === 'Running' && envOf(p).WORLD_SIZE === String(n)) ? ps : undefined;
        },
        40_000,
      );
    const two = await runningWith(2);
    expect(two.map((p) => envOf(p).RANK).sort()).toEqual(['0', '1']);
    const small = await waitFor(
      'status Running with 2',
      async () => {
        const j = await getJob(ns, 'grow');
        return j.status?.phase === 'Running' && j.status.currentReplicas === 2 ? j : undefined;
      },
      15_000,
    );
    expect(small.status).toMatchObject({ worldSize: 2, restartCount: 0 });
    await client.delete(`/api/v1/namespaces/${ns}/pods/filler-half`);
    const four = await runningWith(4);
    const envs = four.map(envOf);
    expect(envs.map((e) => e.RANK).sort()).toEqual(['0', '1', '2', '3']);
    expect(envs.every((e) => e.WORLD_SIZE === '4' && e.PET_NNODES === '4' && e.MASTER_ADDR === 'grow-0.grow.elastic.svc')).toBe(true);
    expect(new Set(four.map((p) => p.metadata?.labels?.['ai.sits2026.dev/attempt'])).size).toBe(1);
    const big = await waitFor(
      'status Running with 4',
      async () => {
        const j = await getJob(ns, 'grow');
        return j.status?.phase === 'Running' && j.status.currentReplicas === 4 && j.status.readyReplicas === 4 ? j : undefined;
      },
      15_000,
    );
    expect(big.status).toMatchObject({ worldSize: 4, gpus: 4, restartCount: 0 });
    // The placeholders are gone once the gang has its full size.
    await waitFor(
      'no placeholders left',
      async () => (await listPods(client, ns)).every((p) => p.metadata?.labels?.['ai.sits2026.dev/role'] !== 'probe'),
      10_000,
    );
    for (const i of [0, 1, 2]) await client.delete(`/api/v1/namespaces/${ns}/pods/filler-${i}`);
    await deleteJobAndWait(ns, 'grow');
  });
});
