/**
 * `sits explain` on a BatchInferenceJob worker pod (ADR 0161): which worker it is (a whole GPU, a share of one, a
 * CPU-elastic or the CPU fallback worker), and the job's route with every reason from status.routing and its
 * Routed condition, so the owner sees why the worker is fractional or on CPU. Pure: the pod and job come in.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { BatchInferenceJob } from '../../api/schema/batch-inference-job.ts';
import { ANNOTATION, LABEL } from '../../api/wire.ts';

export function batchWorkerLines(pod: V1Pod, job: BatchInferenceJob | undefined): string[] {
  const name = pod.metadata?.labels?.[LABEL.batchInferenceJob];
  if (name === undefined) return [];
  const ns = pod.metadata?.namespace ?? 'default';
  const ann = pod.metadata?.annotations ?? {};
  const labels = pod.metadata?.labels ?? {};
  const frac = ann[ANNOTATION.gpuFraction];
  const shape =
    labels[LABEL.batchCpuFallback] === 'true'
      ? "the CPU fallback worker (the fault ladder's rung 3): no GPU"
      : labels[LABEL.batchRoute] === 'cpu-elastic'
        ? "a CPU-elastic worker (route cpu-elastic): no GPU, takes any of the job's shards"
        : frac !== undefined
          ? `a worker on ${frac} of one GPU (route gpu-fragments)`
          : 'a worker on whole GPUs';
  const head = `BatchInferenceJob ${ns}/${name}: this pod is ${shape}`;
  if (job === undefined) return [head, `BatchInferenceJob ${ns}/${name} not found (deleted?)`];
  const r = job.status?.routing;
  const routed = job.status?.conditions?.find((c) => c.type === 'Routed');
  const cond =
    routed === undefined ? [] : [`condition Routed=${routed.status} (${routed.reason ?? ''})${routed.status === 'True' ? '' : `: ${routed.message ?? ''}`}`];
  if (r === undefined) return [head, 'route: not decided yet (profiling the first shards)', ...cond];
  return [
    head,
    `route ${r.route}${r.quantization === undefined ? '' : ` (${r.quantization} allowed)`}, decided ${r.decisionTime} by the ${r.source === 'plugin' ? 'routing plugin' : 'built-in rule'} at fragmentation ${r.fragmentation}:`,
    ...r.reasons.map((x) => `  - ${x}`),
    ...cond,
    // The live counts are the condition's tail (the reasons are above).
    ...(routed?.status === 'True' && /workers now: /.test(routed.message ?? '') ? [`  ${/workers now: .*$/.exec(routed.message ?? '')?.[0] ?? ''}`] : []),
  ];
}
