import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { TOKEN_AUTOSCALER_DEFAULTS } from '../../serving/autoscale/token.ts';

// The simulator and the benches run TOKEN_AUTOSCALER_DEFAULTS; a live InferenceService gets the CRD's defaults, which
// the serving loop passes over them. They scaled in after 120 s and 300 s until ADR 0204: keep them one setting.
describe('the token autoscaler as shipped', () => {
  it("scales in after the CRD's default scaleDownStabilizationSeconds", () => {
    const isvc = withDefaults('InferenceService', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'InferenceService',
      metadata: { name: 'x', namespace: 'default' },
      spec: { runtime: 'vllm', model: { uri: 'hf://x/y' }, autoscaling: {} },
    }) as { spec: { autoscaling: { scaleDownStabilizationSeconds?: number } } };
    expect(isvc.spec.autoscaling.scaleDownStabilizationSeconds).toBe(TOKEN_AUTOSCALER_DEFAULTS.scaleDownDelaySec);
  });
});
