/**
 * `sits dev up`: a local cluster for people and tools — etcd and kube-apiserver built from source, N fake
 * GPU nodes of one preset (Node objects only, no kubelet), the SITS CRDs, the SITS scheduler, a fake
 * kubelet that runs bound pods, and optionally the admission webhook. Everything started here is stopped by `stop()`.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { buildCrds } from '../api/crd.ts';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, LABEL, SCHEDULER_NAME } from '../api/wire.ts';
import { claimsUnder } from '../live/batch/batch-jobs.ts';
import { linkClaimFolders, type ClaimFolders } from '../harness/claim-folders.ts';
import { ensureTinyModel } from '../harness/llm/tiny-model.ts';
import { MODEL_DIR } from '../serving/pod-template.ts';
import { ensureCsiProvisioner, ensureSnapshotComponents, SNAPSHOT_API, startSnapshotStack, type SnapshotStack } from '../harness/snapshot-stack.ts';
import { createLiveApp, type LiveApp } from './live.ts';
import { KubeClient } from '../kube/client/client.ts';
import { nodeObjectFor } from '../kube/cache/labels.ts';
import { NODE_SHAPES } from '../core/model/presets.ts';
import { applyCrdObjects, upstreamCrds } from '../harness/upstream-crds.ts';
import { admissionPlaneSetup } from '../harness/admission-plane.ts';
import { startDevWebhook, type DevWebhookOptions } from './dev-webhook.ts';
import type { RunningWebhook } from '../webhook/start.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { FakeKubelet } from '../harness/fake-kubelet.ts';
import { makeScratchDir, sweepStaleScratch } from '../harness/scratch-dirs.ts';
import type { EnginePodsOptions } from '../harness/llm/engine-pods.ts';
import type { Tracing } from '../kube/telemetry/tracing.ts';
import { startControllers, type ControllerOptions, type Controllers } from './controllers.ts';

export interface DevClusterOptions {
  readonly nodes: number;
  readonly shape: string;
  readonly nodesPerRack?: number;
  readonly racksPerBlock?: number;
  /** Where to copy the kubeconfig (besides the control plane's own). */
  readonly kubeconfig?: string;
  readonly profile?: string;
  readonly withScheduler?: boolean;
  /** The workload controllers (TrainingJob, InferenceService, DataPipeline): on by default; false leaves them out. */
  readonly controllers?: false | ControllerOptions;
  readonly log?: (m: string) => void;
  readonly binDir?: string;
  /** The admission webhook (guard rails), called by the apiserver with its own identity; off by default. */
  readonly webhook?: false | DevWebhookOptions;
  /** Also install the real CRDs of KEDA and Kubeflow (their Go modules, through the module proxy). */
  readonly upstreamCrds?: boolean;
  /** Spans of the scheduler and the controllers (kube/telemetry/tracing.ts); default off. */
  readonly tracing?: Tracing;
  /** Run the llama-server stand-in for pods of the llamacpp runtime (harness/llm/engine-pods.ts); default off. */
  readonly engines?: EnginePodsOptions;
  /**
   * kube-controller-manager with the controllers a cluster needs for SITS's objects to behave as on a real one
   * (`DEV_CONTROLLERS`: garbage collection of owned objects, Deployments, Jobs, EndpointSlices, PV binding,
   * namespace deletion). `sits dev up` runs it; off by default here (tests that need it ask).
   */
  readonly controllerManager?: boolean;
  /**
   * The in-process scheduler takes the Lease `sits run` takes (kube-system/sits-scheduler), so a `sits run` started
   * against the dev cluster stands by behind it, and takes over when it is gone. `sits dev up` sets it.
   */
  readonly leaderElection?: boolean;
  /**
   * Storage as a cluster has it: the real csi-provisioner, snapshot-controller and csi-snapshotter over the stand-in
   * CSI driver (its volumes are folders under the dev folder), StorageClass and VolumeSnapshotClass `sits-dev`, both
   * the default. Needs `controllerManager` (PV binding). `sits dev up` sets it.
   */
  readonly storage?: boolean;
  /**
   * Batch inference as on a cluster: the BatchInferenceJob controller with its claims folder (`claimsDir`, a link per
   * Bound claim), and the fake kubelet runs its workers (`sits batch-worker`) and their engine (the llama.cpp
   * stand-in on the tiny generated model), mounting the pods' claims. Needs `storage`. `sits dev up` sets it.
   */
  readonly batch?: boolean;
  /**
   * Seconds a workload pod without the run-seconds annotation runs before it succeeds (TrainingJob replicas,
   * DataPipeline stages, batch/v1 Job pods; not servers). Undefined: they run until deleted.
   */
  readonly podRunSeconds?: number;
}

/** The engines of `sits dev up`: the tiny generated model for whatever model a pod names (/mnt/models, a Hugging Face id). */
function devEngines(): EnginePodsOptions {
  const { model } = ensureTinyModel();
  return { paths: { [MODEL_DIR]: model }, hubModel: model };
}

/** The StorageClass and VolumeSnapshotClass of `sits dev up` (the default of each). */
export const DEV_STORAGE_CLASS = 'sits-dev';

/** Pods that finish by themselves on a cluster (training replicas, pipeline stages, Jobs' pods), not servers. */
export function isFinitePod(p: V1Pod): boolean {
  const labels = p.metadata?.labels ?? {};
  if (labels[LABEL.trainingJob] !== undefined && labels[LABEL.role] === 'replica') return true;
  if (labels[LABEL.dataPipeline] !== undefined && labels[LABEL.inferenceService] === undefined) return true;
  return (p.metadata?.ownerReferences ?? []).some((o) => o.kind === 'Job' && o.apiVersion === 'batch/v1');
}

/** The kube-controller-manager controllers `sits dev up` runs. */
export const DEV_CONTROLLERS: readonly string[] = [
  'garbage-collector-controller',
  'deployment-controller',
  'replicaset-controller',
  'job-controller',
  'endpointslice-controller',
  'namespace-controller',
  'persistentvolume-binder-controller',
  'persistentvolumeclaim-protection-controller',
];

export interface DevCluster {
  readonly plane: ControlPlane;
  readonly kubeconfigPath: string;
  readonly app: LiveApp | undefined;
  readonly kubelet: FakeKubelet;
  readonly controllers: Controllers | undefined;
  readonly client: KubeClient;
  readonly nodeNames: readonly string[];
  readonly webhook: RunningWebhook | undefined;
  /** With `batch`: where the batch controller sees each Bound claim, `<claimsDir>/<namespace>/<claim>`. */
  readonly claimsDir: string | undefined;
  stop(): Promise<void>;
}

/** PCI bus ids `0000:10:00.0`, `0000:1c:00.0`, …: one bus per GPU, as boards number them (up to 20 GPUs). */
export function devBusIds(gpus: number): string[] {
  return Array.from({ length: gpus }, (_, i) => `0000:${(0x10 + 0x0c * i).toString(16).padStart(2, '0')}:00.0`);
}

export function devNodes(count: number, shape: string, nodesPerRack = 8, racksPerBlock = 4): ReturnType<typeof nodeObjectFor>[] {
  if (NODE_SHAPES[shape] === undefined) throw new Error(`unknown shape "${shape}" (presets: ${Object.keys(NODE_SHAPES).join(', ')})`);
  const gpus = NODE_SHAPES[shape].gpus.length;
  return Array.from({ length: count }, (_, i) => {
    const rack = Math.floor(i / nodesPerRack);
    const node = nodeObjectFor(`${shape}-${String(i).padStart(3, '0')}`, shape, {
      zone: 'zone-0',
      block: `block-${Math.floor(rack / racksPerBlock)}`,
      rack: `rack-${rack}`,
    });
    // What `sits node-agent` publishes from nvidia-smi on a real node; these simulated nodes get bus ids in a
    // made-up layout (devBusIds) so that pods on them get an NCCL topology file too.
    return gpus === 0 ? node : { ...node, annotations: { ...node.annotations, [ANNOTATION.gpuBusIds]: devBusIds(gpus).join(',') } };
  });
}

export async function applyCrds(client: KubeClient): Promise<void> {
  await applyCrdObjects(client, buildCrds());
}

export async function startDevCluster(opts: DevClusterOptions): Promise<DevCluster> {
  const log = opts.log ?? (() => undefined);
  sweepStaleScratch('sits-dev-');
  const scratch = makeScratchDir('sits-dev-');
  const admission = opts.webhook === undefined || opts.webhook === false ? undefined : admissionPlaneSetup(scratch);
  const plane = await startControlPlane({
    ...(opts.binDir === undefined ? {} : { binDir: opts.binDir }),
    log: (l) => log(l),
    ...(admission !== undefined ? { apiServerArgs: admission.apiServerArgs, tokens: admission.tokens } : {}),
  });
  let webhook: RunningWebhook | undefined;
  let stack: SnapshotStack | undefined;
  let folders: ClaimFolders | undefined;
  try {
    const kc = plane.kubeConfig();
    const client = new KubeClient(kc);
    await applyCrds(client);
    if (opts.upstreamCrds === true) await applyCrdObjects(client, [...upstreamCrds('keda'), ...upstreamCrds('kubeflow')]);
    if (opts.webhook !== undefined && opts.webhook !== false) webhook = await startDevWebhook(client, { log, ...opts.webhook });
    if (opts.controllerManager === true) await plane.startControllerManager({ controllers: DEV_CONTROLLERS });
    const nodes = devNodes(opts.nodes, opts.shape, opts.nodesPerRack, opts.racksPerBlock);
    await createFakeGpuNodes(kc, nodes);
    const names = new Set(nodes.map((n) => n.name));
    if (opts.storage === true || opts.batch === true) {
      await Promise.all([ensureSnapshotComponents({ log }), ensureCsiProvisioner({ log })]);
      stack = await startSnapshotStack(plane, { client, withProvisioner: true, stateDir: join(scratch, 'csi'), log });
      // Immediate binding: a batch job's input is written into its claim before any pod of it exists (the
      // controller validates it first), so the volume must be there when the claim is created.
      await client.post('/apis/storage.k8s.io/v1/storageclasses', {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: DEV_STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
        provisioner: stack.driver.name,
        reclaimPolicy: 'Delete',
        volumeBindingMode: 'Immediate',
      });
      await client.post(`${SNAPSHOT_API}/volumesnapshotclasses`, {
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshotClass',
        metadata: { name: DEV_STORAGE_CLASS, annotations: { 'snapshot.storage.kubernetes.io/is-default-class': 'true' } },
        driver: stack.driver.name,
        deletionPolicy: 'Delete',
      });
    }
    const driver = stack?.driver;
    const csiDrivers = driver === undefined ? undefined : { [driver.name]: driver.address };
    const engines = opts.engines ?? (opts.batch === true ? devEngines() : undefined);
    const kubelet = new FakeKubelet(client, (n) => names.has(n), log, {
      ...(engines === undefined ? {} : { engines: { kubeconfig: plane.kubeconfigPath, ...engines } }),
      ...(csiDrivers === undefined ? {} : { claims: { csiDrivers } }),
      ...(opts.podRunSeconds === undefined ? {} : { defaultRunSeconds: (p: V1Pod) => (isFinitePod(p) ? opts.podRunSeconds : undefined) }),
    });
    await kubelet.start();
    if (opts.batch === true)
      folders = await linkClaimFolders(client, join(scratch, 'claims'), (d, handle) => (d === driver?.name ? driver.volumeDir(handle) : undefined), log);
    const claimsDir = folders?.root;
    const app =
      opts.withScheduler === false
        ? undefined
        : await createLiveApp({
            kubeconfig: plane.kubeconfigPath,
            ...(opts.profile === undefined ? {} : { profile: opts.profile }),
            identity: 'sits-dev',
            log,
            ...(opts.leaderElection === true ? { leaseNamespace: 'kube-system' } : {}),
            ...(opts.tracing === undefined ? {} : { tracing: opts.tracing }),
          });
    const batch = claimsDir === undefined ? {} : { batch: { volumes: claimsUnder(claimsDir) } };
    // With leader election (dev up), pods left waiting while no scheduler leads are told so (`--scheduler none`).
    const watch = opts.leaderElection === true ? { schedulerWatch: { lease: `kube-system/${SCHEDULER_NAME}`, schedulerNames: [SCHEDULER_NAME] } } : {};
    const controllers =
      opts.controllers === false
        ? undefined
        : await startControllers(client, { log, ...(opts.tracing === undefined ? {} : { tracing: opts.tracing }), ...batch, ...watch, ...opts.controllers });
    if (opts.kubeconfig !== undefined) writeFileSync(opts.kubeconfig, await import('node:fs').then((fs) => fs.readFileSync(plane.kubeconfigPath, 'utf8')));
    return {
      plane,
      kubeconfigPath: opts.kubeconfig ?? plane.kubeconfigPath,
      app,
      kubelet,
      controllers,
      client,
      nodeNames: [...names],
      webhook,
      claimsDir,
      stop: async () => {
        await kubelet.stopAndWait();
        await controllers?.stop();
        folders?.stop();
        await app?.stop();
        await stack?.stop();
        await webhook?.close();
        client.close();
        await plane.stop();
        rmSync(scratch, { recursive: true, force: true });
      },
    };
  } catch (e) {
    folders?.stop();
    await stack?.stop();
    await webhook?.close();
    await plane.stop();
    rmSync(scratch, { recursive: true, force: true });
    throw e;
  }
}
