import { describe, expect, it } from 'vitest';
import { renderScaledObject, scalingQuery } from './keda.ts';
import { RUNTIMES } from './runtimes/index.ts';

const input = {
  name: 'llm',
  namespace: 'ml',
  minReplicas: 1,
  maxReplicas: 12,
  tokensPerReplica: 18_432.7,
  queueDepthPerReplica: 4,
  prometheusAddress: 'http://prometheus.monitoring:9090',
  scaleDownStabilizationSec: 300,
};

describe('the SITS policy as a KEDA ScaledObject', () => {
  it('targets the InferenceService /scale subresource with a Prometheus trigger on the token demand at the calibrated threshold', () => {
    expect(renderScaledObject({ ...input, runtime: RUNTIMES.vllm })).toEqual({
      apiVersion: 'keda.sh/v1alpha1',
      kind: 'ScaledObject',
      metadata: { name: 'llm', namespace: 'ml', labels: { 'ai.sits2026.dev/inference-service': 'llm' } },
      spec: {
        scaleTargetRef: { apiVersion: 'ai.sits2026.dev/v1', kind: 'InferenceService', name: 'llm' },
        pollingInterval: 30,
        cooldownPeriod: 300,
        minReplicaCount: 1,
        maxReplicaCount: 12,
        advanced: { horizontalPodAutoscalerConfig: { behavior: { scaleDown: { stabilizationWindowSeconds: 300 } } } },
        triggers: [
          {
            type: 'prometheus',
            metricType: 'AverageValue',
            metadata: {
              serverAddress: 'http://prometheus.monitoring:9090',
              query:
                'sum(rate(vllm:prompt_tokens_total{namespace="ml",pod=~"llm-.*"}[1m])) + sum(rate(vllm:generation_tokens_total{namespace="ml",pod=~"llm-.*"}[1m]))',
              threshold: '18433',
              activationThreshold: '0',
            },
          },
        ],
      },
    });
  });
  it("uses each runtime's own counter names, and the queue where the engine counts no tokens (Triton)", () => {
    expect(scalingQuery(RUNTIMES.llamacpp, 's="x"').query).toBe(
      'sum(rate(llamacpp:prompt_tokens_total{s="x"}[1m])) + sum(rate(llamacpp:tokens_predicted_total{s="x"}[1m]))',
    );
    expect(scalingQuery(RUNTIMES.tgi, 's="x"').query).toBe(
      'sum(rate(tgi_request_input_length_sum{s="x"}[1m])) + sum(rate(tgi_request_generated_tokens_sum{s="x"}[1m]))',
    );
    const triton = renderScaledObject({ ...input, runtime: RUNTIMES.triton });
    expect(triton.spec.triggers[0]?.metadata).toMatchObject({ query: 'sum(nv_inference_pending_request_count{namespace="ml",pod=~"llm-.*"})', threshold: '4' });
  });
});
