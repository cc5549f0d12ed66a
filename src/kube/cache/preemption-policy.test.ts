// spec.preemptionPolicy reaches the core model from both readers: a workload file and a live pod.
import { describe, expect, it } from 'vitest';
import { podFromK8s } from './labels.ts';
import { loadWorkloadText } from '../../formats/workload-file.ts';

describe('preemptionPolicy', () => {
  it('a workload file: Never is carried, PreemptLowerPriority (the default) leaves no field, anything else is refused with its place', () => {
    const r = loadWorkloadText(
      'w.yaml',
      'pods:\n  - {name: a, gpu: 1, preemptionPolicy: Never}\n  - {name: b, gpu: 1, preemptionPolicy: PreemptLowerPriority}\n',
    );
    if (!r.ok) throw r.error;
    const pods = r.value.map((u) => (u.kind === 'pod' ? u.pod : undefined));
    expect(pods.map((p) => p?.preemptionPolicy)).toEqual(['Never', undefined]);
    expect(pods[1] !== undefined && 'preemptionPolicy' in pods[1]).toBe(false);
    const bad = loadWorkloadText('w.yaml', 'pods:\n  - {name: a, gpu: 1, preemptionPolicy: Sometimes}\n');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.message).toContain('w.yaml:2:');
  });
  it('a live pod: spec.preemptionPolicy Never (as the PriorityClass admission sets it)', () => {
    const spec = (preemptionPolicy?: string) => ({ containers: [{ name: 'c', image: 'x' }], ...(preemptionPolicy === undefined ? {} : { preemptionPolicy }) });
    const never = podFromK8s({ metadata: { name: 'p', namespace: 'ml' }, spec: spec('Never') });
    const dflt = podFromK8s({ metadata: { name: 'q', namespace: 'ml' }, spec: spec('PreemptLowerPriority') });
    expect(never.ok && never.value.preemptionPolicy).toBe('Never');
    expect(dflt.ok && dflt.value.preemptionPolicy).toBeUndefined();
  });
});
