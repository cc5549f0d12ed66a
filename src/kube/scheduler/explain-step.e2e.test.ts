// `sits explain` on a running TrainingJob's pod group, through the CLI against a real kube-apiserver: the
// expected step on the GPUs it holds vs on an ideal placement (issue 19).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { runSits } from '../../testing/sits-cli.ts';
import { createNs, listPods, waitFor } from '../../harness/e2e-kit.ts';

let cluster: DevCluster;

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 2, shape: 'hgx-a100', log: () => undefined });
});
afterAll(async () => {
  await cluster?.stop();
});

const bound = (ps: V1Pod[]): V1Pod[] => ps.filter((p) => (p.spec?.nodeName ?? '') !== '' && p.metadata?.deletionTimestamp === undefined);

describe('sits explain: a running gang', () => {
  it('prints where its pods run, the expected step on those GPUs and on an ideal placement', async () => {
    await createNs(cluster.client, 'train');
    await cluster.client.post('/apis/ai.sits2026.dev/v1/namespaces/train/trainingjobs', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'TrainingJob',
      metadata: { name: 'bert' },
      spec: {
        replicas: 2,
        resources: { 'nvidia.com/gpu': 4 },
        container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
      },
    });
    const pods = await waitFor(
      'both replicas bound',
      async () => {
        const ps = bound(await listPods(cluster.client, 'train'));
        return ps.length === 2 ? ps : undefined;
      },
      60_000,
    );
    const group = pods[0]?.metadata?.labels?.['ai.sits2026.dev/pod-group'];
    expect(group).toBeDefined();
    const out = await runSits(['explain', `train/${group ?? ''}`, '--kubeconfig', cluster.kubeconfigPath]);
    expect(out.code, out.err).toBe(0);
    const lines = out.out.trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^gang train/${group ?? ''} is running: 2 pods on `));
    // SITS packs the 2 × 4 GPUs into one NVSwitch node: its own ideal.
    expect(lines[1]).toMatch(
      /^expected step of a gpt-1b DDP job \(ADR 0103\) on these 8 GPUs on 1 node\(s\): \d+\.\d{3} s = compute .* limited by nvswitch at 240 GB\/s; \d+ tokens\/s, GPU utilisation \d+\.\d %$/,
    );
    expect(lines[2]).toMatch(/^on an ideal placement \(1 A100-80G node\(s\) like .+, one rack\): .*×1\.00 the ideal step$/);
  });
});
