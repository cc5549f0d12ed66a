import { describe, expect, it } from 'vitest';
import { SEED_TRAINING_JOB } from '../../api/examples.ts';
import { ANNOTATION } from '../../api/wire.ts';
import type { PodGroupObject } from '../kube-objects.ts';
import { DEFAULT_CONTROLLER_CONFIG } from './model.ts';
import { backoffDelayMs, exitCodeOf, isRetryableExitCode, isUnschedulable, reconcileTrainingJob, sizes } from './reconcile.ts';
import { FakeCluster, T0, condition, envOf, kinds, makeJob } from './testing.ts';

const SEED_SPEC = SEED_TRAINING_JOB.spec as Record<string, unknown>;
const sec = (s: number): number => s * 1000;

describe('a new TrainingJob', () => {
  it('first gets the finalizer, and nothing else', () => {
    const c = new FakeCluster(makeJob(SEED_SPEC, { finalizer: false }));
    const r = c.step();
    expect(r.actions).toEqual([{ kind: 'addFinalizer' }]);
    expect(r.status).toBeUndefined();
  });

  it('then attempt 1: the Service, the PodGroup and one pod per replica with stable names', () => {
    const c = new FakeCluster(makeJob(SEED_SPEC));
    const r = c.step();
    expect(kinds(r)).toEqual(['createService', 'applyPodGroup', ...Array<string>(8).fill('createPod'), 'event']);
    expect(r.status).toMatchObject({
      phase: 'Scheduling',
      attempt: 1,
      currentReplicas: 8,
      restartCount: 0,
      worldSize: 8,
      selector: 'ai.sits2026.dev/training-job=bert,ai.sits2026.dev/role=replica',
    });
    // Queued is not started: startTime comes when the gang runs.
    expect(r.status?.startTime).toBeUndefined();
    expect(c.replicaPods().map((p) => p.metadata.name)).toEqual(['bert-0', 'bert-1', 'bert-2', 'bert-3', 'bert-4', 'bert-5', 'bert-6', 'bert-7']);
    expect([...c.groups.values()][0]?.spec).toEqual({ minMember: 8, topology: { preferred: 'rack' } });
    expect(condition(c.job, 'Scheduled')).toMatchObject({ status: 'False', reason: 'Creating' });
  });

  it('is deterministic and does not mutate what it observes', () => {
    const c = new FakeCluster(makeJob(SEED_SPEC));
    c.step();
    c.runAll();
    const observed = { job: c.job, pods: [...c.pods.values()], services: [...c.services.values()], podGroups: [...c.groups.values()], nowMs: T0 + 5000 };
    const frozen = JSON.stringify(observed);
    const a = reconcileTrainingJob(observed, DEFAULT_CONTROLLER_CONFIG);
    const b = reconcileTrainingJob(observed, DEFAULT_CONTROLLER_CONFIG);
    expect(a).toEqual(b);
    expect(JSON.stringify(observed)).toBe(frozen);
  });
});

describe('replica pods', () => {
  const seedPods = () => {
    const c = new FakeCluster(makeJob(SEED_SPEC));
    c.step();
    return c.replicaPods();
  };

  it('carry the torchrun / DDP environment, MASTER_ADDR being rank 0 through the headless Service', () => {
    const pods = seedPods();
    const e3 = envOf(pods[3]);
    expect(e3).toMatchObject({
      MASTER_ADDR: 'bert-0.bert.ml.svc',
      MASTER_PORT: '29500',
      WORLD_SIZE: '8',
      RANK: '3',
      NODE_RANK: '3',
      LOCAL_WORLD_SIZE: '1',
      PET_NNODES: '8',
      PET_NODE_RANK: '3',
      PET_NPROC_PER_NODE: '1',
      PET_MASTER_ADDR: 'bert-0.bert.ml.svc',
      PET_MASTER_PORT: '29500',
      SITS_TRAINING_JOB: 'bert',
      SITS_ATTEMPT: '1',
    });
    expect(pods.map((p) => envOf(p).RANK)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
    expect(pods.map((p) => [p.spec?.hostname, p.spec?.subdomain])).toEqual(pods.map((_, i) => [`bert-${i}`, 'bert']));
  });

  it('carry the NCCL settings of seed 000 and seed 001 §3.2', () => {
    expect(envOf(seedPods()[0])).toMatchObject({
      NCCL_IB_DISABLE: '0',
      NCCL_SOCKET_TIMEOUT: '1200',
      NCCL_ASYNC_ERROR_HANDLING: '1',
      TORCH_NCCL_ASYNC_ERROR_HANDLING: '1',
      NCCL_TIMEOUT: '1800',
    });
    const c = new FakeCluster(
      makeJob({
        ...SEED_SPEC,
        nccl: { ibDisable: true, socketTimeout: 600, asyncErrorHandling: false, timeoutSeconds: 60, netGdrLevel: 2, socketIfname: 'eth0', debug: 'WARN' },
      }),
    );
    c.step();
    const e = envOf(c.replicaPods()[0]);
    expect(e).toMatchObject({
      NCCL_IB_DISABLE: '1',
      NCCL_SOCKET_TIMEOUT: '600',
      NCCL_TIMEOUT: '60',
      NCCL_NET_GDR_LEVEL: '2',
      NCCL_SOCKET_IFNAME: 'eth0',
      NCCL_DEBUG: 'WARN',
    });
    expect(e.NCCL_ASYNC_ERROR_HANDLING).toBeUndefined();
  });

  it('are for sits-scheduler, in the gang, owned by the job, never restarted in place', () => {
    const p = seedPods()[0];
    expect(p?.spec).toMatchObject({ schedulerName: 'sits-scheduler', restartPolicy: 'Never' });
    expect(p?.metadata.labels).toMatchObject({
      'ai.sits2026.dev/pod-group': 'bert',
      'ai.sits2026.dev/training-job': 'bert',
      'ai.sits2026.dev/role': 'replica',
      'ai.sits2026.dev/rank': '0',
      'ai.sits2026.dev/attempt': '1',
    });
    expect(p?.metadata.ownerReferences).toEqual([
      { apiVersion: 'ai.sits2026.dev/v1', kind: 'TrainingJob', name: 'bert', uid: 'job-uid', controller: true, blockOwnerDeletion: true },
    ]);
    expect(p?.metadata.annotations?.['ai.sits2026.dev/world-size']).toBe('8');
  });

  it('request the GPUs per replica; scheduling hints such as memory-gpu-optimized stay off the pod', () => {
    const c = p0(seedPods()[0]);
    expect(c?.resources).toEqual({ requests: { 'nvidia.com/gpu': '1' }, limits: { 'nvidia.com/gpu': '1' } });
    expect(c?.ports).toEqual([{ name: 'rendezvous', containerPort: 29500, protocol: 'TCP' }]);
    expect(c?.command).toEqual(['torchrun', '--nproc_per_node=1', 'train.py']);
  });

  it('let the user override any injected variable, in place', () => {
    const c = new FakeCluster(
      makeJob({
        ...SEED_SPEC,
        container: {
          image: 'x',
          env: [
            { name: 'NCCL_SOCKET_TIMEOUT', value: '600' },
            { name: 'MASTER_PORT', value: '1234' },
            { name: 'HF_HOME', value: '/cache' },
          ],
        },
      }),
    );
    c.step();
    const env = p0(c.replicaPods()[0])?.env ?? [];
    expect(env.filter((e) => e.name === 'NCCL_SOCKET_TIMEOUT')).toEqual([{ name: 'NCCL_SOCKET_TIMEOUT', value: '600' }]);
    expect(env.find((e) => e.name === 'MASTER_PORT')?.value).toBe('1234');
    expect(env.findIndex((e) => e.name === 'MASTER_PORT')).toBe(1);
    expect(env[env.length - 1]).toEqual({ name: 'HF_HOME', value: '/cache' });
  });

  it('derive the DataLoader worker hint from the CPU limit (seed 001 §1: 1 → 0, 2 → 1, 4 → 2)', () => {
    const hint = (cpu: string | undefined, extra: Record<string, unknown> = {}) => {
      const c = new FakeCluster(makeJob({ ...SEED_SPEC, resources: { 'nvidia.com/gpu': 1, ...(cpu === undefined ? {} : { cpu }) }, ...extra }));
      c.step();
      const e = envOf(c.replicaPods()[0]);
      return [e.SITS_DATALOADER_NUM_WORKERS, e.SITS_DATALOADER_PIN_MEMORY];
    };
    expect(hint('1')).toEqual(['0', 'false']);
    expect(hint('2')).toEqual(['1', 'true']);
    expect(hint('4')).toEqual(['2', 'true']);
    expect(hint('1500m')).toEqual(['0', 'false']);
    expect(hint('16', { nprocPerNode: 4 })).toEqual(['2', 'true']);
    expect(hint(undefined)).toEqual([undefined, undefined]);
  });

  it('put cpu and memory on the pod as requests = limits', () => {
    const c = new FakeCluster(
      makeJob({ ...SEED_SPEC, resources: { 'nvidia.com/gpu': 2, cpu: 8, memory: '64Gi', 'rdma/hca': 1, 'memory-gpu-optimized': '32Gi' } }),
    );
    c.step();
    const want = { 'nvidia.com/gpu': '2', cpu: '8', memory: '64Gi', 'rdma/hca': '1' };
    expect(p0(c.replicaPods()[0])?.resources).toEqual({ requests: want, limits: want });
  });

  it("with several GPUs per replica run one process per GPU: WORLD_SIZE counts processes, RANK is the node's first", () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2, resources: { 'nvidia.com/gpu': 4 } }));
    c.step();
    expect(envOf(c.replicaPods()[1])).toMatchObject({
      WORLD_SIZE: '8',
      RANK: '4',
      NODE_RANK: '1',
      LOCAL_WORLD_SIZE: '4',
      PET_NPROC_PER_NODE: '4',
      PET_NNODES: '2',
    });
    expect(c.job.status?.worldSize).toBe(8);
  });

  it('carry the GPU model and compute-capability constraints as the scheduler reads them', () => {
    const cfg = { ...DEFAULT_CONTROLLER_CONFIG, gpuModelAliases: (m: string) => (m.includes('A800') ? ['A800'] : []) };
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, gpu: { allowedModels: ['NVIDIA-A800-SXM4-80GB', 'H100-SXM'], minComputeCapability: '8.0' } }), cfg);
    c.step();
    expect(c.replicaPods()[0]?.metadata.annotations).toMatchObject({
      'ai.sits2026.dev/gpu-models': 'NVIDIA-A800-SXM4-80GB,A800,H100-SXM',
      'ai.sits2026.dev/min-compute-capability': '8.0',
    });
  });

  it("carry the user's runtime estimate (spec.expectedRuntimeSeconds) as the scheduler reads it, and none when unset", () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, expectedRuntimeSeconds: 7200 }));
    c.step();
    expect(c.replicaPods().map((p) => p.metadata.annotations?.['ai.sits2026.dev/expected-runtime-seconds'])).toEqual(c.replicaPods().map(() => '7200'));
    const d = new FakeCluster(makeJob(SEED_SPEC));
    d.step();
    expect(d.replicaPods()[0]?.metadata.annotations?.['ai.sits2026.dev/expected-runtime-seconds']).toBeUndefined();
  });

  it('carry the model the job states (spec.model) as the scheduler reads it, and none when unset (ADR 0188)', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, model: { parameters: 2.7e9, kind: 'gpt', parallelism: 'fsdp' } }));
    c.step();
    expect(c.replicaPods().map((p) => p.metadata.annotations?.['ai.sits2026.dev/training-model'])).toEqual(c.replicaPods().map(() => 'gpt/2700000000/fsdp'));
    const d = new FakeCluster(makeJob(SEED_SPEC));
    d.step();
    expect(d.replicaPods()[0]?.metadata.annotations?.['ai.sits2026.dev/training-model']).toBeUndefined();
  });

  it("carry the GPU memory each device needs: minMemoryGiB, or memory-gpu-optimized spread over the replica's GPUs", () => {
    const ann = (spec: Record<string, unknown>) => {
      const c = new FakeCluster(makeJob({ ...SEED_SPEC, ...spec }));
      c.step();
      return c.replicaPods()[0]?.metadata.annotations?.['ai.sits2026.dev/gpu-memory'];
    };
    expect(ann({})).toBe('32768Mi'); // the seed example: 32Gi on 1 GPU
    expect(ann({ resources: { 'nvidia.com/gpu': 2, 'memory-gpu-optimized': '32Gi' } })).toBe('16384Mi');
    expect(ann({ resources: { 'nvidia.com/gpu': 2, 'memory-gpu-optimized': '32Gi' }, gpu: { minMemoryGiB: 40 } })).toBe('40960Mi');
    expect(ann({ resources: { 'nvidia.com/gpu': 1 } })).toBeUndefined();
  });

  it('with a pod template: the SITS environment goes into the "trainer" container, the template\'s own values win', () => {
    const c = new FakeCluster(
      makeJob({
        replicas: 2,
        resources: { 'nvidia.com/gpu': 1, cpu: 4 },
        queue: 'research',
        priorityClassName: 'training-high',
        podTemplate: {
          metadata: { labels: { team: 'nlp' }, annotations: { note: 'x' } },
          spec: {
            schedulerName: 'default-scheduler',
            containers: [
              { name: 'sidecar', image: 'log:1' },
              { name: 'trainer', image: 'pt:2', env: [{ name: 'NCCL_SOCKET_TIMEOUT', value: '600' }], resources: { limits: { cpu: '2' } } },
            ],
            volumes: [{ name: 'ckpt', emptyDir: {} }],
          },
        },
      }),
    );
    c.step();
    const p = c.replicaPods()[1];
    expect(p?.spec?.schedulerName).toBe('sits-scheduler');
    expect(p?.spec?.priorityClassName).toBe('training-high');
    expect(p?.spec?.volumes).toEqual([{ name: 'ckpt', emptyDir: {} }, NCCL_VOLUME, SHM_VOLUME]);
    expect(p?.metadata.labels).toMatchObject({ team: 'nlp', 'ai.sits2026.dev/queue': 'research' });
    expect(p?.metadata.annotations?.note).toBe('x');
    const [sidecar, trainer] = p?.spec?.containers ?? [];
    expect(sidecar?.env).toBeUndefined();
    expect(trainer?.resources).toEqual({ requests: { 'nvidia.com/gpu': '1', cpu: '4' }, limits: { 'nvidia.com/gpu': '1', cpu: '2' } });
    expect(envOf(p)).toMatchObject({ NCCL_SOCKET_TIMEOUT: '600', RANK: '1', SITS_DATALOADER_NUM_WORKERS: '1' });
    expect([...c.groups.values()][0]?.spec).toMatchObject({ queue: 'research', priorityClassName: 'training-high' });
  });
});

const p0 = (p: ReturnType<FakeCluster['replicaPods']>[number] | undefined) => p?.spec?.containers[0];

const NCCL_VOLUME = {
  name: 'sits-nccl-topology',
  downwardAPI: { items: [{ path: 'topo.xml', fieldRef: { fieldPath: "metadata.annotations['ai.sits2026.dev/nccl-topology']" } }] },
};
const SHM_VOLUME = { name: 'sits-dshm', emptyDir: { medium: 'Memory' } };
const SHM_MOUNT = { name: 'sits-dshm', mountPath: '/dev/shm' };

describe('the NCCL topology file', () => {
  it('every GPU replica asks the scheduler for it and reads it from its annotations at /etc/sits/nccl/topo.xml (NCCL_TOPO_FILE)', () => {
    const c = new FakeCluster(makeJob(SEED_SPEC));
    c.step();
    for (const p of c.replicaPods()) {
      expect(p.metadata.annotations?.['ai.sits2026.dev/nccl-topology-file']).toBe('generate');
      expect(p.spec?.volumes).toEqual([NCCL_VOLUME, SHM_VOLUME]);
      expect(p0(p)?.['volumeMounts']).toEqual([{ name: 'sits-nccl-topology', mountPath: '/etc/sits/nccl', readOnly: true }, SHM_MOUNT]);
      expect(envOf(p).NCCL_TOPO_FILE).toBe('/etc/sits/nccl/topo.xml');
    }
  });

  it('is left out with nccl.topologyFile: false, for replicas without GPUs, and a user NCCL_TOPO_FILE wins', () => {
    const off = new FakeCluster(makeJob({ ...SEED_SPEC, nccl: { topologyFile: false } }));
    off.step();
    const cpuOnly = new FakeCluster(makeJob({ ...SEED_SPEC, resources: { cpu: 2 } }));
    cpuOnly.step();
    for (const p of [...off.replicaPods(), ...cpuOnly.replicaPods()]) {
      expect(p.metadata.annotations?.['ai.sits2026.dev/nccl-topology-file']).toBeUndefined();
      expect(p.spec?.volumes).toEqual([SHM_VOLUME]);
      expect(envOf(p).NCCL_TOPO_FILE).toBeUndefined();
    }
    const own = new FakeCluster(makeJob({ ...SEED_SPEC, container: { image: 'x', env: [{ name: 'NCCL_TOPO_FILE', value: '/opt/topo.xml' }] } }));
    own.step();
    expect(envOf(own.replicaPods()[0]).NCCL_TOPO_FILE).toBe('/opt/topo.xml');
  });
});

describe("the gang's PodGroup", () => {
  const topo = (topology: Record<string, unknown>) => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, topology }));
    c.step();
    return ([...c.groups.values()][0] as PodGroupObject).spec?.topology;
  };
  it("asks ring/tree/hierarchical all-reduce for one rack (searched exhaustively, fewest nodes first), the user's levels win", () => {
    expect(topo({ strategy: 'ring-allreduce' })).toEqual({ preferred: 'rack' });
    expect(topo({ strategy: 'tree-allreduce' })).toEqual({ preferred: 'rack' });
    expect(topo({ strategy: 'hierarchical-allreduce', requiredLevel: 'zone' })).toEqual({ required: 'zone', preferred: 'rack' });
    expect(topo({ strategy: 'ring-allreduce', requiredLevel: 'node' })).toEqual({ required: 'node', preferred: 'node' });
    expect(topo({ strategy: 'ring-allreduce', preferredLevel: 'nvlink-domain' })).toEqual({ preferred: 'nvlink-domain' });
    expect(topo({ strategy: 'parameter-server' })).toBeUndefined();
    expect(topo({ strategy: 'none', requiredLevel: 'block' })).toEqual({ required: 'block' });
  });
});

describe('status while the gang is placed and started', () => {
  it('Scheduling until every replica is bound and running, then Running with the nodes, GPUs and ready count', () => {
    const c = new FakeCluster(makeJob(SEED_SPEC));
    c.step();
    c.step();
    expect(c.job.status).toMatchObject({ phase: 'Scheduling', replicas: 8, readyReplicas: 0, gpus: 0 });
    expect(condition(c.job, 'Scheduled')).toMatchObject({
      status: 'False',
      reason: 'WaitingForScheduler',
      message: '0 of 8 replicas bound; waiting for the scheduler',
    });
    c.replicaPods().forEach((p, i) => c.setPod(p.metadata.name ?? '', { node: `n${Math.floor(i / 4)}` }));
    c.step();
    expect(c.job.status).toMatchObject({ phase: 'Scheduling', gpus: 8, nodes: ['n0', 'n1'] });
    expect(condition(c.job, 'Scheduled')).toMatchObject({ status: 'True', reason: 'AllReplicasBound', message: '8 replicas bound to 2 node(s): n0, n1' });
    c.now += 2000;
    c.runAll();
    const r = c.step();
    expect(r.actions).toEqual([{ kind: 'event', type: 'Normal', reason: 'Running', message: 'phase Scheduling -> Running' }]);
    expect(c.job.status).toMatchObject({
      phase: 'Running',
      replicas: 8,
      readyReplicas: 8,
      gpus: 8,
      nodes: ['n0', 'n1'],
      worldSize: 8,
      startTime: new Date(c.now).toISOString(),
    });
    expect(condition(c.job, 'Running')).toMatchObject({ status: 'True', reason: 'AllReplicasRunning' });
    // Conditions keep their transition time while nothing changes.
    const t = condition(c.job, 'Running')?.lastTransitionTime;
    c.now += 60_000;
    expect(c.step().status).toEqual(c.job.status);
    expect(condition(c.job, 'Running')?.lastTransitionTime).toBe(t);
  });

  it("Pending with the scheduler's explanation when it cannot place the gang; no pod is bound", () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2, resources: { 'nvidia.com/gpu': 8 } }));
    c.step();
    const why = '0/4 nodes fit gang ml/bert (2×8 GPU): 4 with fewer GPUs than the 8 requested';
    for (const p of c.replicaPods()) c.setPod(p.metadata.name ?? '', { unschedulable: why });
    const r = c.step();
    expect(c.job.status?.phase).toBe('Pending');
    expect(condition(c.job, 'Scheduled')).toMatchObject({ status: 'False', reason: 'Unschedulable', message: why });
    expect(r.actions).toEqual([{ kind: 'event', type: 'Normal', reason: 'Pending', message: 'phase Scheduling -> Pending' }]);
    expect(c.job.status?.startTime).toBeUndefined();
  });

  it('estimatedStartTime is the latest expected start the scheduler wrote on the waiting replicas', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2, resources: { 'nvidia.com/gpu': 8 } }));
    c.step();
    const [a, b] = c.replicaPods().map((p) => p.metadata.name ?? '');
    c.setPod(a ?? '', { unschedulable: 'queue q holds it (capacity): full', expectedStart: '2026-11-29T11:00:00.000Z' });
    c.step();
    expect(c.job.status?.estimatedStartTime).toBeUndefined(); // not every waiting replica has an estimate yet
    c.setPod(b ?? '', { unschedulable: 'queue q holds it (capacity): full', expectedStart: '2026-11-29T11:30:00.000Z' });
    c.step();
    expect(c.job.status?.estimatedStartTime).toBe('2026-11-29T11:30:00.000Z');
  });
});

describe('failures restart the whole gang', () => {
  const running = (spec: Record<string, unknown> = {}) => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 4, ...spec }));
    c.step();
    c.runAll();
    c.step();
    expect(c.job.status?.phase).toBe('Running');
    return c;
  };

  it('a replica that exits non-zero: every pod deleted, attempt 2 after the backoff, counted against backoffLimit', () => {
    const c = running();
    c.now += 60_000;
    c.setPod('bert-2', { node: 'n0', phase: 'Failed', exitCode: 1 });
    const r = c.step();
    expect(
      r.actions
        .filter((a) => a.kind === 'deletePod')
        .map((a) => (a as { name: string }).name)
        .sort(),
    ).toEqual(['bert-0', 'bert-1', 'bert-2', 'bert-3']);
    expect(c.job.status).toMatchObject({
      phase: 'Restarting',
      restartCount: 1,
      attempt: 2,
      replicas: 0,
      gpus: 0,
      lastRestartTime: new Date(c.now).toISOString(),
      nextAttemptTime: new Date(c.now + 10_000).toISOString(),
    });
    expect(condition(c.job, 'Restarting')).toMatchObject({
      status: 'True',
      reason: 'ReplicaFailed',
      message: 'replica bert-2 exited with code 1; restarting the whole gang in 10s (restart 1 of backoffLimit 3)',
    });
    expect(condition(c.job, 'Running')?.status).toBe('False');
    expect(c.events.at(-1)).toMatchObject({ type: 'Warning', reason: 'ReplicaFailed' });
    expect(r.requeueAfterMs).toBe(10_000);
    // During the backoff nothing is created.
    c.now += 9_000;
    const wait = c.step();
    expect(kinds(wait)).toEqual([]);
    expect(wait.requeueAfterMs).toBe(1_000);
    c.now += 1_000;
    c.step();
    expect(c.replicaPods().map((p) => p.metadata.labels?.['ai.sits2026.dev/attempt'])).toEqual(['2', '2', '2', '2']);
    expect(envOf(c.replicaPods()[0]).SITS_ATTEMPT).toBe('2');
    expect(c.job.status).toMatchObject({ phase: 'Scheduling', attempt: 2, restartCount: 1 });
    expect(c.job.status?.nextAttemptTime).toBeUndefined();
    expect(condition(c.job, 'Restarting')).toMatchObject({ status: 'False', reason: 'GangCreated' });
  });

  it('waits for the old pods to be gone before the new gang is created (same names)', () => {
    const c = running();
    c.setPod('bert-0', { node: 'n0', phase: 'Failed', exitCode: 137 });
    const r = c.observe();
    c.apply({ ...r, actions: r.actions.filter((a) => !(a.kind === 'deletePod' && a.name === 'bert-3')) });
    c.now += 20_000;
    const again = c.step();
    expect(kinds(again)).toEqual(['deletePod']);
    expect(c.job.status?.phase).toBe('Restarting');
    c.step();
    expect(c.replicaPods()).toHaveLength(4);
  });

  it('backs off exponentially, then fails with BackoffLimitExceeded — no endless loop', () => {
    const c = running({ backoffLimit: 2 });
    const delays: number[] = [];
    for (let i = 1; i <= 2; i++) {
      c.setPod('bert-1', { node: 'n0', phase: 'Failed', exitCode: 2 });
      const r = c.step();
      delays.push(r.requeueAfterMs ?? -1);
      c.now += r.requeueAfterMs ?? 0;
      c.step();
      c.runAll();
      c.step();
    }
    expect(delays).toEqual([10_000, 20_000]);
    c.setPod('bert-1', { node: 'n0', phase: 'Failed', exitCode: 2 });
    c.step();
    expect(c.job.status).toMatchObject({ phase: 'Failed', restartCount: 2, completionTime: new Date(c.now).toISOString() });
    expect(condition(c.job, 'Failed')).toMatchObject({
      status: 'True',
      reason: 'BackoffLimitExceeded',
      message: 'replica bert-1 exited with code 2; the gang was already restarted 2 time(s), backoffLimit is 2',
    });
    // cleanPodPolicy Running (default): the running replicas go, the failed one stays for its logs; the gang objects go.
    expect(c.replicaPods().map((p) => p.metadata.name)).toEqual(['bert-1']);
    expect(c.groups.size).toBe(0);
    expect(c.services.size).toBe(0);
    c.now += 3_600_000;
    expect(kinds(c.step())).toEqual([]);
  });

  it('backoff delays: 10 s doubling, capped at 6 min', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((n) => backoffDelayMs(n, DEFAULT_CONTROLLER_CONFIG))).toEqual([
      10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 360_000, 360_000,
    ]);
  });

  it('restartPolicy Never fails at the first failure', () => {
    const c = running({ restartPolicy: 'Never' });
    c.setPod('bert-3', { node: 'n0', phase: 'Failed', exitCode: 137 });
    c.step();
    expect(c.job.status?.phase).toBe('Failed');
    expect(condition(c.job, 'Failed')).toMatchObject({ reason: 'ReplicaFailed', message: 'replica bert-3 exited with code 137; restartPolicy is Never' });
  });

  it('restartPolicy ExitCode: listed codes decide, else 1-127 permanent and 128-255 retryable', () => {
    const spec = { restartPolicy: 'ExitCode', exitCodes: { retryable: [3], permanent: [143] } };
    const outcome = (code: number): string | undefined => {
      const c = running(spec);
      c.setPod('bert-0', { node: 'n0', phase: 'Failed', exitCode: code });
      c.step();
      return c.job.status?.phase === 'Failed' ? condition(c.job, 'Failed')?.reason : c.job.status?.phase;
    };
    expect(outcome(3)).toBe('Restarting');
    expect(outcome(1)).toBe('PermanentExitCode');
    expect(outcome(137)).toBe('Restarting');
    expect(outcome(143)).toBe('PermanentExitCode');
    expect([1, 127, 128, 255].map((x) => isRetryableExitCode(x, {}))).toEqual([false, false, true, true]);
  });

  it('an evicted replica is retried even under restartPolicy ExitCode', () => {
    const c = running({ restartPolicy: 'ExitCode' });
    c.setPod('bert-2', { node: 'n0', phase: 'Failed', reason: 'Evicted', exitCode: 1 });
    c.step();
    expect(c.job.status?.phase).toBe('Restarting');
    expect(condition(c.job, 'Restarting')).toMatchObject({ reason: 'ReplicaEvicted' });
    expect(condition(c.job, 'Restarting')?.message).toMatch(/^replica bert-2 was evicted;/);
  });

  it('a running replica deleted by someone else, or vanished, restarts the gang', () => {
    const a = running();
    a.setPod('bert-1', { node: 'n0', phase: 'Running', deleting: true });
    a.step();
    expect(condition(a.job, 'Restarting')).toMatchObject({
      reason: 'ReplicaDeleted',
      message: expect.stringMatching(/^replica bert-1 was deleted while running;/),
    });
    const b = running();
    b.pods.delete('bert-3');
    b.step();
    expect(b.job.status).toMatchObject({ phase: 'Restarting', restartCount: 1 });
  });

  it('a gang SITS evicted to move it (gang-evicted naming this attempt) restarts at once, not counted, even under restartPolicy Never; another attempt’s mark counts as usual', () => {
    const a = running({ restartPolicy: 'Never' });
    const attempt = a.job.status?.attempt ?? 0;
    a.job = {
      ...a.job,
      metadata: {
        ...a.job.metadata,
        annotations: { [ANNOTATION.gangEvicted]: JSON.stringify({ attempt, reason: 'GpuQuarantined', message: 'GPU 3 of node n0 is quarantined' }) },
      },
    };
    a.pods.delete('bert-1');
    a.pods.delete('bert-3');
    a.step();
    expect(a.job.status).toMatchObject({ phase: 'Restarting', attempt: attempt + 1, nextAttemptTime: new Date(a.now).toISOString() });
    expect(a.job.status?.restartCount ?? 0).toBe(0);
    expect(condition(a.job, 'Restarting')).toMatchObject({
      reason: 'GangMoved',
      message: 'SITS evicted the gang to move it (GpuQuarantined: GPU 3 of node n0 is quarantined); restarting it whole, not counted against backoffLimit',
    });
    const b = running();
    b.job = {
      ...b.job,
      metadata: {
        ...b.job.metadata,
        annotations: { [ANNOTATION.gangEvicted]: JSON.stringify({ attempt: attempt - 1, reason: 'GpuQuarantined', message: 'old' }) },
      },
    };
    b.pods.delete('bert-3');
    b.step();
    expect(b.job.status).toMatchObject({ phase: 'Restarting', restartCount: 1 });
    expect(condition(b.job, 'Restarting')).toMatchObject({ reason: 'ReplicaDeleted' });
  });

  it('a gang SITS evicted that vanished whole between two reconciles is still a move of its attempt (restored, not recreated in place)', () => {
    const a = running();
    const attempt = a.job.status?.attempt ?? 0;
    a.job = {
      ...a.job,
      metadata: {
        ...a.job.metadata,
        annotations: { [ANNOTATION.gangEvicted]: JSON.stringify({ attempt, reason: 'Preempted', message: 'reclaimed by queue team-a' }) },
      },
    };
    for (const name of [...a.pods.keys()]) a.pods.delete(name);
    a.step();
    expect(a.job.status).toMatchObject({ phase: 'Restarting', attempt: attempt + 1 });
    expect(a.job.status?.restartCount ?? 0).toBe(0);
    expect(condition(a.job, 'Restarting')).toMatchObject({ reason: 'GangMoved' });
  });

  it('a pod that vanished before the gang ran (a scheduler rollback) is recreated, not counted', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 4 }));
    c.step();
    c.pods.delete('bert-2');
    const r = c.step();
    expect(kinds(r)).toEqual(['createPod']);
    expect(c.job.status).toMatchObject({ phase: 'Scheduling', restartCount: 0, attempt: 1 });
  });

  it("exit code: the trainer container's first", () => {
    const pod = {
      metadata: {},
      spec: { containers: [{ name: 'side' }, { name: 'trainer' }] },
      status: {
        containerStatuses: [
          { name: 'side', state: { terminated: { exitCode: 2 } } },
          { name: 'trainer', state: { terminated: { exitCode: 137 } } },
        ],
      },
    };
    expect(exitCodeOf(pod)).toBe(137);
    expect(exitCodeOf({ metadata: {}, status: {} })).toBeUndefined();
  });
});

describe('success, deadline, TTL and cleanup', () => {
  const finish = (spec: Record<string, unknown>) => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2, ...spec }));
    c.step();
    c.runAll();
    c.step();
    c.now += 100_000;
    for (const p of c.replicaPods()) c.setPod(p.metadata.name ?? '', { node: 'n0', phase: 'Succeeded', exitCode: 0 });
    c.step();
    return c;
  };

  it('every replica succeeded → Succeeded; cleanPodPolicy Running keeps the finished pods', () => {
    const c = finish({});
    expect(c.job.status).toMatchObject({ phase: 'Succeeded', completionTime: new Date(T0 + 100_000).toISOString(), succeededReplicas: 2, gpus: 0 });
    expect(condition(c.job, 'Succeeded')).toMatchObject({ status: 'True', reason: 'AllReplicasSucceeded' });
    expect(condition(c.job, 'Running')?.status).toBe('False');
    expect(c.replicaPods()).toHaveLength(2);
    expect(c.services.size + c.groups.size).toBe(0);
  });

  it('cleanPodPolicy All deletes every pod; None keeps pods and the Service', () => {
    expect(finish({ cleanPodPolicy: 'All' }).replicaPods()).toHaveLength(0);
    const none = finish({ cleanPodPolicy: 'None' });
    expect(none.replicaPods()).toHaveLength(2);
    expect(none.services.size).toBe(1);
  });

  it('ttlSecondsAfterFinished deletes the job after that time', () => {
    const c = finish({ ttlSecondsAfterFinished: 30 });
    expect(c.last.requeueAfterMs).toBe(30_000);
    c.now += 29_000;
    expect(c.step().requeueAfterMs).toBe(1_000);
    c.now += 1_000;
    expect(kinds(c.step())).toContain('deleteJob');
  });

  it('activeDeadlineSeconds: Failed (DeadlineExceeded) once exceeded, woken up for it', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2, activeDeadlineSeconds: 600 }));
    c.step();
    c.runAll();
    expect(c.step().requeueAfterMs).toBe(600_000);
    c.now += sec(600);
    c.step();
    expect(c.job.status?.phase).toBe('Failed');
    expect(condition(c.job, 'Failed')).toMatchObject({ reason: 'DeadlineExceeded' });
    expect(c.replicaPods()).toHaveLength(0);
  });

  it('a finished job is left alone (no new gang, no new restarts)', () => {
    const c = finish({});
    c.setPod('bert-0', { node: 'n0', phase: 'Failed', exitCode: 1 });
    expect(c.step().actions).toEqual([]);
    expect(c.job.status?.phase).toBe('Succeeded');
  });
});

describe('deletion', () => {
  it('deletes the pods, Service and PodGroup it owns, then removes its finalizer', () => {
    const c = new FakeCluster(makeJob(SEED_SPEC));
    c.step();
    c.runAll();
    c.step();
    c.addForeign({ metadata: { name: 'someone-else', namespace: 'ml', labels: { 'ai.sits2026.dev/training-job': 'bert' }, ownerReferences: [] } });
    c.job = { ...c.job, metadata: { ...c.job.metadata, deletionTimestamp: new Date(c.now).toISOString() } };
    const r = c.step();
    expect(kinds(r).filter((k) => k === 'deletePod')).toHaveLength(8);
    expect(kinds(r)).toContain('deleteService');
    expect(kinds(r)).toContain('deletePodGroup');
    expect(kinds(r)).not.toContain('removeFinalizer');
    expect(r.status).toBeUndefined();
    expect(kinds(c.step())).toEqual(['removeFinalizer']);
    expect(c.pods.has('someone-else')).toBe(true);
  });
});

describe('suspend', () => {
  it('deletes the gang and waits; resuming creates a new attempt', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2 }));
    c.step();
    c.runAll();
    c.step();
    c.job = { ...c.job, spec: { ...c.job.spec, suspend: true } };
    c.step();
    expect(c.replicaPods()).toHaveLength(0);
    expect(c.job.status).toMatchObject({ phase: 'Pending', attempt: 2, restartCount: 0 });
    expect(condition(c.job, 'Suspended')?.status).toBe('True');
    expect(kinds(c.step())).toEqual([]);
    c.job = { ...c.job, spec: { ...c.job.spec, suspend: false } };
    c.step();
    expect(c.replicaPods().map((p) => p.metadata.labels?.['ai.sits2026.dev/attempt'])).toEqual(['2', '2']);
    expect(condition(c.job, 'Suspended')).toMatchObject({ status: 'False', reason: 'Resumed' });
  });

  it('a job created suspended creates nothing', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, suspend: true }));
    expect(kinds(c.step())).toEqual([]);
    expect(c.job.status?.phase).toBe('Pending');
  });
});

describe('elastic jobs (minReplicas < replicas)', () => {
  const cfg = { ...DEFAULT_CONTROLLER_CONFIG, resizeCooldownMs: 30_000 };
  const elastic = () => new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 4, minReplicas: 2, maxReplicas: 4 }), cfg);
  const names = (c: FakeCluster) => c.replicaPods().map((p) => p.metadata.name ?? '');

  it('sizes: the gang aims for replicas and never runs below minReplicas', () => {
    expect(sizes(makeJob({ ...SEED_SPEC, replicas: 4, minReplicas: 2, maxReplicas: 8 }).spec)).toEqual({ min: 2, target: 4, elastic: true });
    expect(sizes(makeJob(SEED_SPEC).spec)).toEqual({ min: 8, target: 8, elastic: false });
  });

  it('starts with what fits: replicas pods, minMember = minReplicas; when only 2 fit it restarts with 2 (WORLD_SIZE 2), not counted', () => {
    const c = elastic();
    c.step();
    expect([...c.groups.values()][0]?.spec?.minMember).toBe(2);
    expect(envOf(c.replicaPods()[0]).WORLD_SIZE).toBe('4');
    const [a, b, x, y] = names(c);
    c.setPod(a as string, { node: 'n0' });
    c.setPod(b as string, { node: 'n0' });
    c.setPod(x as string, { unschedulable: '0/4 nodes fit pod ml/bert-2: 4 insufficient nvidia.com/gpu' });
    // The fourth has not been looked at yet: not settled, no decision.
    expect(kinds(c.observe()).filter((k) => k === 'deletePod')).toEqual([]);
    c.setPod(y as string, { unschedulable: '0/4 nodes fit pod ml/bert-3: 4 insufficient nvidia.com/gpu' });
    c.step();
    expect(c.job.status).toMatchObject({
      phase: 'Restarting',
      currentReplicas: 2,
      attempt: 2,
      restartCount: 0,
      nextAttemptTime: new Date(c.now).toISOString(),
    });
    expect(condition(c.job, 'Restarting')).toMatchObject({ reason: 'FitFewer' });
    expect(condition(c.job, 'Restarting')?.message).toMatch(/^only 2 of 4 replicas fit now \(0\/4 nodes fit/);
    c.step();
    expect(names(c)).toEqual(['bert-0', 'bert-1']);
    expect(c.replicaPods().map((p) => envOf(p).WORLD_SIZE)).toEqual(['2', '2']);
    expect([...c.groups.values()][0]?.spec?.minMember).toBe(2);
  });

  it('grows when capacity frees: after the cooldown placeholders probe; one placed → restart with 3, all at WORLD_SIZE 3', () => {
    const c = elastic();
    c.step();
    // Running with 2 after a FitFewer resize.
    const [a, b, x, y] = names(c);
    for (const n of [a, b]) c.setPod(n as string, { node: 'n0' });
    for (const n of [x, y]) c.setPod(n as string, { unschedulable: 'full' });
    c.step();
    c.step();
    c.runAll();
    const r = c.step();
    expect(c.job.status).toMatchObject({ phase: 'Running', currentReplicas: 2, worldSize: 2 });
    expect(c.probePods()).toEqual([]);
    expect(r.requeueAfterMs).toBe(30_000);
    c.now += 30_000;
    c.step();
    expect(
      c
        .probePods()
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['bert.grow-0', 'bert.grow-1']);
    const probe = c.probePods()[0];
    expect(probe?.spec?.containers).toEqual([
      { name: 'placeholder', image: 'registry.k8s.io/pause:3.10', resources: { requests: { 'nvidia.com/gpu': '1' }, limits: { 'nvidia.com/gpu': '1' } } },
    ]);
    expect(probe?.metadata.labels?.['ai.sits2026.dev/pod-group']).toBe('bert.grow');
    expect(c.groups.get('bert.grow')?.spec).toEqual({ minMember: 1 });
    for (const p of c.probePods()) c.setPod(p.metadata.name ?? '', { unschedulable: 'full' });
    c.step();
    expect(c.job.status?.phase).toBe('Running');
    expect(condition(c.job, 'Running')).toMatchObject({ reason: 'RunningBelowTarget' });
    // The scheduler is binding one of them (plan written): wait.
    c.setPod('bert.grow-0', { assigned: 'n1', unschedulable: 'full' });
    expect(kinds(c.step()).filter((k) => k === 'deletePod')).toEqual([]);
    c.setPod('bert.grow-0', { node: 'n1' });
    c.step();
    expect(c.job.status).toMatchObject({ phase: 'Restarting', currentReplicas: 3, restartCount: 0 });
    expect(condition(c.job, 'Restarting')).toMatchObject({
      reason: 'CapacityFreed',
      message: 'room for 1 more replica(s): restarting the gang with 3 of 4 (was 2)',
    });
    expect(c.probePods()).toEqual([]);
    c.step();
    expect(c.replicaPods().map((p) => envOf(p).WORLD_SIZE)).toEqual(['3', '3', '3']);
    c.runAll();
    c.step();
    // Still below the target: probes again only after another cooldown.
    expect(c.probePods()).toEqual([]);
    expect(c.last.requeueAfterMs).toBe(30_000);
    // At the size asked for, the probe PodGroup goes too.
    c.job = { ...c.job, spec: { ...c.job.spec, replicas: 3 } };
    c.step();
    expect(c.groups.has('bert.grow')).toBe(false);
    expect(c.job.status?.phase).toBe('Running');
  });

  it('extras the scheduler leaves unbound without a word count as unplaceable after settleMs (it does not repeat an explanation within a minute)', () => {
    const c = elastic();
    c.step();
    const [a, b, x] = names(c);
    for (const n of [a, b]) c.setPod(n as string, { node: 'n0' });
    c.setPod(x as string, { unschedulable: 'full' });
    const r = c.step();
    expect(c.job.status?.phase).toBe('Scheduling');
    expect(r.requeueAfterMs).toBe(10_000);
    c.now += 10_000;
    c.step();
    expect(c.job.status).toMatchObject({ phase: 'Restarting', currentReplicas: 2 });
  });

  it('fewer than minReplicas placed: it waits (no resize)', () => {
    const c = elastic();
    c.step();
    const [a, ...rest] = names(c);
    c.setPod(a as string, { node: 'n0' });
    for (const n of rest) c.setPod(n, { unschedulable: 'full' });
    c.step();
    expect(c.job.status).toMatchObject({ phase: 'Scheduling', currentReplicas: 4, attempt: 1 });
  });

  it('shrinks at once when asked (spec.replicas lowered)', () => {
    const c = elastic();
    c.step();
    c.runAll();
    c.step();
    c.job = { ...c.job, spec: { ...c.job.spec, replicas: 3 } };
    c.step();
    expect(c.job.status).toMatchObject({ phase: 'Restarting', currentReplicas: 3, restartCount: 0 });
    expect(condition(c.job, 'Restarting')?.reason).toBe('ScaledDown');
    c.step();
    expect(c.replicaPods().map((p) => envOf(p).WORLD_SIZE)).toEqual(['3', '3', '3']);
  });

  it('a non-elastic job whose replicas change restarts with the new size', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2 }));
    c.step();
    c.runAll();
    c.step();
    c.job = { ...c.job, spec: { ...c.job.spec, replicas: 3 } };
    c.step();
    expect(condition(c.job, 'Restarting')?.reason).toBe('ScaledUp');
    c.step();
    expect(c.replicaPods().map((p) => envOf(p).WORLD_SIZE)).toEqual(['3', '3', '3']);
    expect([...c.groups.values()][0]?.spec?.minMember).toBe(3);
  });
});

describe('a gang stuck half-placed', () => {
  it('is released after gangSchedulingTimeoutSeconds and recreated after a backoff, without counting a failure', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2, gangSchedulingTimeoutSeconds: 120 }));
    c.step();
    c.setPod('bert-0', { node: 'n0' });
    c.setPod('bert-1', { unschedulable: 'insufficient nvidia.com/gpu' });
    c.now += 60_000;
    expect(c.step().requeueAfterMs).toBe(60_000);
    expect(c.job.status?.phase).toBe('Scheduling');
    c.now += 60_000;
    c.step();
    expect(c.job.status).toMatchObject({ phase: 'Restarting', restartCount: 0, attempt: 2, nextAttemptTime: new Date(c.now + 10_000).toISOString() });
    expect(condition(c.job, 'Restarting')).toMatchObject({ reason: 'GangSchedulingTimeout' });
    expect(c.replicaPods()).toEqual([]);
  });

  it('isUnschedulable: only unbound pods the scheduler rejected and is not binding', () => {
    const base = { metadata: {}, status: { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: 'x' }] } };
    expect(isUnschedulable(base)).toBe(true);
    expect(isUnschedulable({ ...base, spec: { containers: [], nodeName: 'n' } })).toBe(false);
    expect(isUnschedulable({ ...base, metadata: { annotations: { 'ai.sits2026.dev/assigned-node': 'n' } } })).toBe(false);
    expect(isUnschedulable({ metadata: {} })).toBe(false);
  });
});

describe('housekeeping', () => {
  it('recreates a deleted Service or PodGroup and deletes pods of older attempts', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2 }));
    c.step();
    c.runAll();
    c.step();
    c.services.clear();
    c.groups.clear();
    const stale = c.replicaPods()[0];
    c.addForeign({
      ...(stale as NonNullable<typeof stale>),
      metadata: { ...stale?.metadata, name: 'bert-old', uid: 'old', labels: { ...stale?.metadata.labels, 'ai.sits2026.dev/attempt': '0' } },
    });
    const r = c.step();
    expect(kinds(r).sort()).toEqual(['applyPodGroup', 'createService', 'deletePod']);
  });

  it('a pod the apiserver refuses as invalid fails the job with its words; other errors show as ReconcileError', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 2 }));
    c.step();
    c.step([{ action: 'createPod', name: 'bert-1', status: 403, reason: 'Forbidden', message: 'no PriorityClass with name training-high was found' }]);
    expect(condition(c.job, 'ReconcileError')).toMatchObject({
      status: 'True',
      reason: 'Forbidden',
      message: 'createPod bert-1: 403 no PriorityClass with name training-high was found',
    });
    c.step();
    expect(condition(c.job, 'ReconcileError')).toMatchObject({ status: 'False', reason: 'Resolved' });
    c.step([{ action: 'createPod', name: 'bert-1', status: 422, reason: 'Invalid', message: 'spec.volumes[0].name: Invalid value' }]);
    expect(c.job.status?.phase).toBe('Failed');
    expect(condition(c.job, 'Failed')).toMatchObject({
      reason: 'InvalidPodTemplate',
      message: 'the apiserver refused the pod bert-1: spec.volumes[0].name: Invalid value',
    });
  });

  it('a replica pod of another job with our name blocks creation until it is gone', () => {
    const c = new FakeCluster(makeJob({ ...SEED_SPEC, replicas: 1 }));
    c.step();
    c.runAll();
    c.step();
    c.setPod('bert-0', { node: 'n0', phase: 'Failed', exitCode: 137 });
    c.step();
    c.addForeign({
      metadata: {
        name: 'bert-0',
        namespace: 'ml',
        uid: 'other',
        labels: { 'ai.sits2026.dev/training-job': 'bert', 'ai.sits2026.dev/role': 'replica' },
        ownerReferences: [{ apiVersion: 'ai.sits2026.dev/v1', kind: 'TrainingJob', name: 'bert', uid: 'old-job' }],
      },
    });
    c.now += 60_000;
    expect(kinds(c.step())).toEqual([]);
    c.pods.delete('bert-0');
    expect(kinds(c.step())).toContain('createPod');
  });
});

describe('/dev/shm of the trainer', () => {
  it('is a memory-backed emptyDir by default (the 64 MiB default kills DataLoader workers)', () => {
    const c = new FakeCluster(makeJob(SEED_SPEC));
    c.step();
    for (const p of c.replicaPods()) {
      expect(p.spec?.volumes).toContainEqual(SHM_VOLUME);
      expect(p0(p)?.['volumeMounts']).toContainEqual(SHM_MOUNT);
    }
  });

  it('is left alone when the template mounts its own at /dev/shm or shares the host IPC', () => {
    const own = new FakeCluster(
      makeJob({
        ...SEED_SPEC,
        container: undefined,
        podTemplate: {
          spec: {
            volumes: [{ name: 'shm', emptyDir: { medium: 'Memory', sizeLimit: '8Gi' } }],
            containers: [{ name: 'trainer', image: 'x', volumeMounts: [{ name: 'shm', mountPath: '/dev/shm/' }] }],
          },
        },
      }),
    );
    own.step();
    const hostIpc = new FakeCluster(
      makeJob({ ...SEED_SPEC, container: undefined, podTemplate: { spec: { hostIPC: true, containers: [{ name: 'trainer', image: 'x' }] } } }),
    );
    hostIpc.step();
    for (const p of [...own.replicaPods(), ...hostIpc.replicaPods()]) {
      expect(p.spec?.volumes ?? []).not.toContainEqual(SHM_VOLUME);
      expect((p0(p)?.['volumeMounts'] as unknown[] | undefined) ?? []).not.toContainEqual(SHM_MOUNT);
    }
    expect(own.replicaPods().length).toBeGreaterThan(0);
    expect(hostIpc.replicaPods().length).toBeGreaterThan(0);
  });
});
