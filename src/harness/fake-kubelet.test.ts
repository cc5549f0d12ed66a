import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podReadyCondition } from './fake-kubelet.ts';

const NOW = '2026-12-01T12:00:00.000Z';
const pod = (gates: string[], conditions: { type: string; status: string }[] = []): V1Pod => ({
  metadata: { name: 'p' },
  spec: { containers: [{ name: 'c' }], readinessGates: gates.map((conditionType) => ({ conditionType })) },
  status: { phase: 'Running', conditions },
});

describe("the fake kubelet's Ready condition (readiness gates, KEP-580)", () => {
  it("is the containers' readiness for a pod without gates", () => {
    expect(podReadyCondition(pod([]), true, NOW)).toEqual({ type: 'Ready', status: 'True', lastTransitionTime: NOW });
    expect(podReadyCondition(pod([]), false, NOW)).toEqual({ type: 'Ready', status: 'False', reason: 'ContainersNotReady', lastTransitionTime: NOW });
  });
  it("needs every gate's condition True; a missing one counts as False, with the kubelet's messages", () => {
    const g = ['ai.sits2026.dev/adapters-loaded', 'example.com/lb'];
    expect(podReadyCondition(pod(g), true, NOW)).toMatchObject({
      status: 'False',
      reason: 'ReadinessGatesNotReady',
      message:
        'corresponding condition of pod readiness gate "ai.sits2026.dev/adapters-loaded" does not exist., corresponding condition of pod readiness gate "example.com/lb" does not exist.',
    });
    const some = pod(g, [
      { type: 'ai.sits2026.dev/adapters-loaded', status: 'True' },
      { type: 'example.com/lb', status: 'False' },
    ]);
    expect(podReadyCondition(some, true, NOW)).toMatchObject({
      status: 'False',
      message: 'the status of pod readiness gate "example.com/lb" is not "True", but False',
    });
    const all = pod(g, [
      { type: 'ai.sits2026.dev/adapters-loaded', status: 'True' },
      { type: 'example.com/lb', status: 'True' },
    ]);
    expect(podReadyCondition(all, true, NOW).status).toBe('True');
    expect(podReadyCondition(all, false, NOW)).toMatchObject({ status: 'False', reason: 'ContainersNotReady' });
  });
});
