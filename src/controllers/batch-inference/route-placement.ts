/**
 * What a decided route does to a BatchInferenceJob's workers (ADR 0161; the route itself is ADR 0165's), pure:
 *  - gpu-fragments: the workers created from then on take a share of one device (annotation gpu-fraction, no
 *    nvidia.com/gpu request) when the job allows it (gpusPerWorker 1, no gang); the share is sized from the
 *    profile's peak KV use and never leaves the model less than spec.gpu.minMemoryGiB;
 *  - cpu-elastic: the GPU workers are replaced by CPU workers (the runtime's CPU build, as the fallback worker of
 *    ADR 0162) that take all of the job's work, as many as spec.workers but no more than the shards left;
 *  - gpu-exclusive, gpu-shared: whole GPUs, as the spec makes them.
 * Running workers of the old shape are never killed mid-shard: the controller drains them at a shard boundary.
 */
import type { BatchRouting } from '../../api/schema/batch-inference-job.ts';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import { GPU_MODELS } from '../../core/model/gpu.ts';
import type { PodObject } from '../kube-objects.ts';

export type WorkerShape = 'whole' | 'fraction' | 'cpu';

export interface Placement {
  readonly shape: WorkerShape;
  /** The share of one device a fractional worker takes (0.25 steps, below 1). */
  readonly fraction?: number;
  /** The memory the device of a fractional worker must have so the share holds spec.gpu.minMemoryGiB. */
  readonly deviceMemoryGiB?: number;
  /** What was done and why, one line for status.routing.reasons. */
  readonly reason: string;
}

/** Share sizes: quarter devices (what time-slicing and most MIG layouts cut a GPU into). */
export const FRACTION_STEP = 0.25;
/** Room above the peak KV use the shards measured: the tail of a job may batch longer prompts. */
export const KV_HEADROOM = 1.25;
/** A share for an engine that exports no KV use (TGI, Triton): half a device. */
export const UNMEASURED_FRACTION = 0.5;
/** The largest GPU the scheduler knows (GiB): a share needing a bigger device cannot be placed. */
export const LARGEST_DEVICE_GIB = Math.max(...Object.values(GPU_MODELS).map((m) => m.memoryMiB)) / 1024;

/** The runtimes whose engines size their memory pool to a fraction of the device, told the share by this flag. */
const MEMORY_FRACTION_FLAG: Readonly<Record<string, string>> = { vllm: '--gpu-memory-utilization', tgi: '--cuda-memory-fraction' };

export interface PlacementJob {
  readonly spec: {
    readonly runtime: string;
    readonly gpusPerWorker: number;
    readonly gpu?: { readonly minMemoryGiB?: number };
  };
}

export interface PlacementCaps {
  /** The worker is a gang (tensor parallelism across its GPUs). */
  readonly gang: boolean;
  /** The runtime has a CPU build the CPU workers can run (serving/runtime.ts CpuSupport); unset: why not. */
  readonly cpuBuild: true | string;
}

const step = (x: number): number => Math.ceil(x / FRACTION_STEP - 1e-9) * FRACTION_STEP;

/** The share of one device from the profile and spec.gpu.minMemoryGiB; 1 means no share fits below a whole device. */
export function fractionFor(
  peakKvFraction: number | undefined,
  minMemoryGiB: number | undefined,
): { readonly fraction: number; readonly deviceMemoryGiB?: number; readonly why: string } {
  const fromKv = peakKvFraction === undefined ? UNMEASURED_FRACTION : Math.max(FRACTION_STEP, step(Math.min(1, peakKvFraction * KV_HEADROOM)));
  const kvWhy =
    peakKvFraction === undefined
      ? `no KV use measured: ${UNMEASURED_FRACTION} of a device`
      : `peak KV use ${peakKvFraction.toPrecision(3)} × ${KV_HEADROOM} headroom, rounded up to ${FRACTION_STEP}`;
  if (minMemoryGiB === undefined) return { fraction: fromKv, why: kvWhy };
  // The share holds minMemoryGiB on a device of minMemoryGiB / fraction GiB; no larger device than the largest GPU.
  const fraction = Math.max(fromKv, step(Math.min(1, minMemoryGiB / LARGEST_DEVICE_GIB)));
  const deviceMemoryGiB = Math.ceil(minMemoryGiB / fraction);
  return {
    fraction,
    deviceMemoryGiB,
    why: `${kvWhy}; spec.gpu.minMemoryGiB ${minMemoryGiB}: on a device of at least ${deviceMemoryGiB} GiB${fraction > fromKv ? ` (raised from ${fromKv}: no GPU has ${Math.ceil(minMemoryGiB / fromKv)} GiB)` : ''}`,
  };
}

/** What the route does to the workers created from now on, with the reason line said in status. */
export function placementFor(job: PlacementJob, routing: Pick<BatchRouting, 'route' | 'profile'>, caps: PlacementCaps): Placement {
  const { route } = routing;
  const g = job.spec.gpusPerWorker;
  if (route === 'gpu-exclusive' || route === 'gpu-shared') return { shape: 'whole', reason: `route ${route}: whole GPUs, as the spec makes the workers` };
  if (g === 0) return { shape: 'whole', reason: `route ${route}: the workers already hold no GPU (gpusPerWorker 0); nothing changed` };
  if (route === 'cpu-elastic') {
    if (caps.cpuBuild !== true) return { shape: 'whole', reason: `route cpu-elastic not acted on: ${caps.cpuBuild}; the workers stay on GPUs` };
    return {
      shape: 'cpu',
      reason: `route cpu-elastic: GPU workers drained at shard boundaries and replaced by CPU workers (the ${job.spec.runtime} CPU build, no GPU) taking all the work, at most spec.workers and no more than the shards left`,
    };
  }
  if (g > 1 || caps.gang)
    return {
      shape: 'whole',
      reason: `route gpu-fragments not acted on: a worker needs ${g} whole GPUs${caps.gang ? ' as a gang' : ''} (gpusPerWorker ${g}); a share is one device`,
    };
  const f = fractionFor(routing.profile.peakKvFraction, job.spec.gpu?.minMemoryGiB);
  if (f.fraction >= 1) return { shape: 'whole', reason: `route gpu-fragments not acted on: the share would be a whole device (${f.why}); whole GPUs kept` };
  return {
    shape: 'fraction',
    fraction: f.fraction,
    ...(f.deviceMemoryGiB === undefined ? {} : { deviceMemoryGiB: f.deviceMemoryGiB }),
    reason: `route gpu-fragments: new workers take ${f.fraction} of one GPU (${ANNOTATION.gpuFraction}, no whole-GPU request; ${f.why}); whole-GPU workers drained at shard boundaries`,
  };
}

/** The shape a worker pod was built with: from the labels and annotations this controller puts on it. */
export function shapeOf(p: PodObject): WorkerShape {
  if (p.metadata.labels?.[LABEL.batchRoute] === 'cpu-elastic') return 'cpu';
  return p.metadata.annotations?.[ANNOTATION.gpuFraction] !== undefined ? 'fraction' : 'whole';
}

/**
 * A GPU worker (`<job>-<n>`) built for another shape than the placement's, or another share: drained at its next
 * shard boundary and replaced.
 */
export function misplaced(p: PodObject, placement: Placement | undefined): boolean {
  if (placement === undefined) return false;
  const shape = shapeOf(p);
  if (placement.shape === 'fraction') return shape !== 'fraction' || p.metadata.annotations?.[ANNOTATION.gpuFraction] !== String(placement.fraction);
  // A fractional worker stays under a whole placement only if the route never made it (it does not happen: the
  // route is decided once); the cpu placement retires every GPU worker by its count instead.
  return placement.shape === 'whole' && shape === 'fraction';
}

/**
 * A CPU-elastic worker's name: `<job>-cpu<n>`. Its last `-` segment is `cpu` and digits, so it is neither a GPU
 * worker (`<job>-<digits>`) nor the fallback worker (`<job>-cpu`) of this or any job.
 */
export const elasticWorkerPodName = (job: string, n: number): string => `${job}-cpu${n}`;

/** CPU-elastic workers wanted: spec.workers, fewer as the shards run out (open ones and those the CPU workers run). */
export function elasticWorkers(specWorkers: number, openShards: number, runningOnCpu: number): number {
  return Math.max(0, Math.min(specWorkers, openShards + runningOnCpu));
}

/** The engine container of a fractional worker: no whole-GPU request; the engine's memory pool is the share. */
export function fractionalServer<
  C extends {
    readonly args?: readonly string[];
    readonly resources?: { readonly requests?: Readonly<Record<string, unknown>>; readonly limits?: Readonly<Record<string, unknown>> };
  },
>(c: C, runtime: string, fraction: number, gpuResource: string): C {
  const drop = (r: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> | undefined =>
    r === undefined ? undefined : Object.fromEntries(Object.entries(r).filter(([k]) => k !== gpuResource));
  const requests = drop(c.resources?.requests);
  const limits = drop(c.resources?.limits);
  const flag = MEMORY_FRACTION_FLAG[runtime];
  // The last flag wins in these engines, so a spec's own memory fraction cannot make the share's engine take more.
  return {
    ...c,
    ...(c.resources === undefined ? {} : { resources: { ...(requests === undefined ? {} : { requests }), ...(limits === undefined ? {} : { limits }) } }),
    ...(flag === undefined ? {} : { args: [...(c.args ?? []), flag, String(Math.round(fraction * 0.9 * 100) / 100)] }),
  };
}

/** The placement of a job whose worker template is rendered: its gang and whether its runtime has a CPU build. */
export function placementOf(
  job: PlacementJob,
  routing: Pick<BatchRouting, 'route' | 'profile'>,
  t: { readonly gang: boolean; readonly elasticPod: unknown },
): Placement {
  return placementFor(job, routing, { gang: t.gang, cpuBuild: typeof t.elasticPod === 'string' ? t.elasticPod : true });
}

/**
 * How many of the job's workers are on which shape now, for the Routed condition (bounded: four counts), e.g.
 * `workers now: 2 on 0.5 of a GPU, 1 on a whole GPU (draining)`.
 */
export function workersLine(pods: readonly PodObject[], placement: Placement | undefined): string {
  const live = pods.filter((p) => p.metadata.deletionTimestamp === undefined && p.status?.phase !== 'Failed' && p.status?.phase !== 'Succeeded');
  const fallback = live.filter((p) => p.metadata.labels?.[LABEL.batchCpuFallback] === 'true').length;
  const gpu = live.filter((p) => p.metadata.labels?.[LABEL.batchCpuFallback] !== 'true');
  const whole = gpu.filter((p) => shapeOf(p) === 'whole');
  const fractions = new Map<string, number>();
  for (const p of gpu.filter((x) => shapeOf(x) === 'fraction')) {
    const f = p.metadata.annotations?.[ANNOTATION.gpuFraction] ?? '?';
    fractions.set(f, (fractions.get(f) ?? 0) + 1);
  }
  const cpu = gpu.filter((p) => shapeOf(p) === 'cpu').length;
  const draining = (ps: readonly PodObject[]): string => {
    const n = ps.filter((p) => (placement?.shape === 'cpu' && shapeOf(p) !== 'cpu') || misplaced(p, placement)).length;
    return n === 0 ? '' : n === ps.length ? ' (draining)' : ` (${n} draining)`;
  };
  const parts = [
    ...(whole.length === 0 ? [] : [`${whole.length} on a whole GPU${draining(whole)}`]),
    ...[...fractions].map(([f, n]) => `${n} on ${f} of a GPU${draining(gpu.filter((p) => p.metadata.annotations?.[ANNOTATION.gpuFraction] === f))}`),
    ...(cpu === 0 ? [] : [`${cpu} CPU-elastic`]),
    ...(fallback === 0 ? [] : [`${fallback} CPU fallback`]),
  ];
  return `workers now: ${parts.length === 0 ? 'none' : parts.join(', ')}`;
}
