/**
 * `sits dev up`: a local cluster for people and tools — etcd and kube-apiserver built from source, N fake
 * GPU nodes of one preset (Node objects only, no kubelet), the SITS CRDs, the SITS scheduler, a fake
 * kubelet that runs bound pods, and optionally the admission webhook. Everything started here is stopped by `stop()`.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { buildCrds } from '../api/crd.ts';
import { ANNOTATION } from '../api/wire.ts';
import { createLiveApp, type LiveApp } from './live.ts';
import { KubeClient } from '../kube/client.ts';
import { nodeObjectFor } from '../kube/labels.ts';
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
import type { Tracing } from '../kube/tracing.ts';
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
  /** Spans of the scheduler and the controllers (kube/tracing.ts); default off. */
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
    const node = nodeObjectFor(`${shape}-${String(i).padStart(3, '0')}`, shape, { zone: 'zone-0', block: `block-${Math.floor(rack / racksPerBlock)}`, rack: `rack-${rack}` });
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
    const kubelet = new FakeKubelet(client, (n) => names.has(n), log, opts.engines === undefined ? {} : { engines: { kubeconfig: plane.kubeconfigPath, ...opts.engines } });
    await kubelet.start();
    const app = opts.withScheduler === false ? undefined : await createLiveApp({ kubeconfig: plane.kubeconfigPath, ...(opts.profile === undefined ? {} : { profile: opts.profile }), identity: 'sits-dev', log, ...(opts.leaderElection === true ? { leaseNamespace: 'kube-system' } : {}), ...(opts.tracing === undefined ? {} : { tracing: opts.tracing }) });
    const controllers = opts.controllers === false ? undefined : await startControllers(client, { log, ...(opts.tracing === undefined ? {} : { tracing: opts.tracing }), ...opts.controllers });
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
      stop: async () => {
        kubelet.stop();
        await controllers?.stop();
        await app?.stop();
        await webhook?.close();
        client.close();
        await plane.stop();
        rmSync(scratch, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await webhook?.close();
    await plane.stop();
    rmSync(scratch, { recursive: true, force: true });
    throw e;
  }
}
