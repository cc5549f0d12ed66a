// `sits explain` on a BatchInferenceJob worker: the pod's shape and the job's route with its reasons
// (batchWorkerLines, which explainLive appends to the scheduler's explanation).
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import type { BatchInferenceJob } from '../../api/schema/batch-inference-job.ts';
import { ANNOTATION, LABEL } from '../../api/wire.ts';
import { batchWorkerLines } from './explain-batch.ts';

const pod = (labels: Record<string, string>, annotations: Record<string, string> = {}): V1Pod => ({
  metadata: { name: 'j-0', namespace: 'ns', labels, annotations },
});
const job = (status: BatchInferenceJob['status']): BatchInferenceJob => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'BatchInferenceJob',
  metadata: { name: 'j', namespace: 'ns' },
  spec: {} as BatchInferenceJob['spec'],
  ...(status === undefined ? {} : { status }),
});
const routing = {
  route: 'gpu-fragments' as const,
  source: 'builtin' as const,
  reasons: ['precision: full (accuracyTolerance 1)', 'route gpu-fragments: new workers take 0.5 of one GPU'],
  fragmentation: 0.45,
  decisionTime: '2026-12-02T13:00:00Z',
  profile: { shards: 3, promptTokensPerRecord: 10, outputTokensPerRecord: 2, msPerRecord: 50 },
};

describe('sits explain on a BatchInferenceJob worker', () => {
  it('says the pod is on a share of a GPU and gives the route, every reason, the condition and the live counts', () => {
    const lines = batchWorkerLines(
      pod({ [LABEL.batchInferenceJob]: 'j', [LABEL.batchRoute]: 'gpu-fragments' }, { [ANNOTATION.gpuFraction]: '0.5' }),
      job({
        routing,
        conditions: [
          {
            type: 'Routed',
            status: 'True',
            reason: 'Routed',
            message: 'gpu-fragments: …; workers now: 2 on 0.5 of a GPU',
            lastTransitionTime: '2026-12-02T13:00:00Z',
          },
        ],
      }),
    );
    expect(lines).toEqual([
      'BatchInferenceJob ns/j: this pod is a worker on 0.5 of one GPU (route gpu-fragments)',
      'route gpu-fragments, decided 2026-12-02T13:00:00Z by the built-in rule at fragmentation 0.45:',
      '  - precision: full (accuracyTolerance 1)',
      '  - route gpu-fragments: new workers take 0.5 of one GPU',
      'condition Routed=True (Routed)',
      '  workers now: 2 on 0.5 of a GPU',
    ]);
  });

  it('names CPU-elastic and fallback workers, says Profiling before a route, and is silent on other pods', () => {
    const profiling = job({
      conditions: [
        {
          type: 'Routed',
          status: 'False',
          reason: 'Profiling',
          message: 'profiling the workload: 1 of 3 shards committed',
          lastTransitionTime: '2026-12-02T13:00:00Z',
        },
      ],
    });
    expect(batchWorkerLines(pod({ [LABEL.batchInferenceJob]: 'j', [LABEL.batchRoute]: 'cpu-elastic' }), profiling)).toEqual([
      "BatchInferenceJob ns/j: this pod is a CPU-elastic worker (route cpu-elastic): no GPU, takes any of the job's shards",
      'route: not decided yet (profiling the first shards)',
      'condition Routed=False (Profiling): profiling the workload: 1 of 3 shards committed',
    ]);
    expect(batchWorkerLines(pod({ [LABEL.batchInferenceJob]: 'j', [LABEL.batchCpuFallback]: 'true' }), undefined)).toEqual([
      "BatchInferenceJob ns/j: this pod is the CPU fallback worker (the fault ladder's rung 3): no GPU",
      'BatchInferenceJob ns/j not found (deleted?)',
    ]);
    expect(batchWorkerLines(pod({}), job(undefined))).toEqual([]);
  });
});
