import { describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { NODE_SHAPES, nodeOfShape } from '../../core/model/presets.ts';
import { stagePod } from './children.ts';
import type { DataPipelineObject } from './model.ts';
import { summarizeCluster } from './profiles.ts';
import { profiledPod, stageProfile } from './stage-profile.ts';

const l4 = NODE_SHAPES['l4x8'];
if (l4 === undefined) throw new Error('no preset l4x8');
const cluster = summarizeCluster(['l1', 'l2'].map((n) => nodeOfShape(n, l4, { zone: 'z', block: 'b', rack: 'r1' })));

function pipeline(stage: Record<string, unknown>): DataPipelineObject {
  return withDefaults('DataPipeline', {
    metadata: { name: 'p', namespace: 'ns', uid: 'u' },
    spec: { stages: [{ name: 'infer', container: { image: 'x' }, ...stage }] },
  }) as DataPipelineObject;
}

describe('profiledPod (container stages)', () => {
  it("writes the per-GPU memory floor and, for low-latency, a topology spread of the stage's pods over nodes", () => {
    const p = pipeline({ device: 'gpu', parallelism: 2, resourceProfile: 'low-latency', model: { params: 8e9 } });
    const stage = p.spec.stages[0];
    if (stage === undefined) throw new Error('no stage');
    const r = stageProfile(stage, 0, cluster);
    if (r === undefined || !r.ok) throw new Error(JSON.stringify(r));
    expect(r.value.topology.spread).toBe(true);
    const min = r.value.minMemoryGiB ?? 0;
    expect(min).toBeGreaterThan(0);
    const pod = profiledPod(stagePod(p, stage, 0, 0, []), r.value);
    expect(pod.metadata.annotations?.['ai.sits2026.dev/gpu-memory']).toBe(`${Math.ceil(min) * 1024}Mi`);
    expect(pod.spec?.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: { 'ai.sits2026.dev/data-pipeline': 'p', 'ai.sits2026.dev/pipeline-stage': 'infer' } },
      },
    ]);
  });

  it('keeps a higher gpu-memory the pod asks for and its own hostname spread; batch-throughput does not spread', () => {
    const p = pipeline({ device: 'gpu', parallelism: 2, resourceProfile: 'low-latency', model: { params: 1e9 } });
    const stage = p.spec.stages[0];
    if (stage === undefined) throw new Error('no stage');
    const r = stageProfile(stage, 0, cluster);
    if (r === undefined || !r.ok) throw new Error(JSON.stringify(r));
    const own = { maxSkew: 2, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule' };
    const base = stagePod(p, stage, 0, 0, []);
    const asked = {
      ...base,
      metadata: { ...base.metadata, annotations: { 'ai.sits2026.dev/gpu-memory': '200Gi' } },
      spec: { ...(base.spec as NonNullable<typeof base.spec>), topologySpreadConstraints: [own] },
    };
    const pod = profiledPod(asked, r.value);
    expect(pod.metadata.annotations?.['ai.sits2026.dev/gpu-memory']).toBe('200Gi');
    expect(pod.spec?.topologySpreadConstraints).toEqual([own]);

    const b = pipeline({ device: 'gpu', parallelism: 2, resourceProfile: 'batch-throughput', model: { params: 1e9 } });
    const bs = b.spec.stages[0];
    if (bs === undefined) throw new Error('no stage');
    const rb = stageProfile(bs, 0, cluster);
    if (rb === undefined || !rb.ok) throw new Error(JSON.stringify(rb));
    expect(profiledPod(stagePod(b, bs, 0, 0, []), rb.value).spec?.topologySpreadConstraints).toBeUndefined();
  });
});
