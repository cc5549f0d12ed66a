// Several profiles in one `sits run` (issue 11 §2, ADR 0076): two schedulerNames with their own plugins and
// weights, one cache and one snapshot per cycle, against a real kube-apiserver.
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../client/client.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createFakeGpuNodes } from '../../harness/fake-nodes.ts';
import { createNs, createPods, gpuUsage, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { applyCrds, devNodes } from '../../app/dev-cluster.ts';
import { createLiveApp, type LiveApp } from '../../app/live.ts';
import { loadSchedulerConfig } from '../../formats/scheduler-config.ts';

const CONFIG = `apiVersion: ai.sits2026.dev/v1
kind: SchedulerConfiguration
profiles:
  - schedulerName: packer
    profile: best-fit
  - schedulerName: spreader
    profile: kube-default
    weights: {balanced-allocation: 0}
`;

describe('sits run with two profiles in one process', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let app: LiveApp;
  const nodes = devNodes(2, 'l4x8', 4);

  beforeAll(async () => {
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await applyCrds(client);
    await createFakeGpuNodes(plane.kubeConfig(), nodes);
    const profiles = loadSchedulerConfig('profiles.yaml', CONFIG);
    if (!profiles.ok) throw profiles.error;
    app = await createLiveApp({
      kubeconfig: plane.kubeconfigPath,
      identity: 'e2e-profiles',
      profiles: profiles.value,
      leaseNamespace: 'kube-system',
      leaseDurationSec: 5,
    });
  });
  afterAll(async () => {
    await app?.stop();
    client?.close();
    await plane?.stop();
  });

  const pod = (name: string, schedulerName: string): V1Pod => testPod('profiles', name, { gpus: 1, cpu: '1', memory: '1Gi', schedulerName });
  const nodeOf = async (name: string): Promise<string> =>
    waitFor(`${name} bound`, async () => {
      const p = (await listPods(client, 'profiles')).find((x) => x.metadata?.name === name);
      return (p?.spec?.nodeName ?? '') === '' ? undefined : (p?.spec?.nodeName as string);
    });

  it('each profile binds its own pods with its own plugins (least-allocated spreads, best-fit packs), reports as itself, and leaves other names alone', async () => {
    await createNs(client, 'profiles');
    await createPods(client, [testPod('profiles', 'nobody', { gpus: 1, schedulerName: 'some-other-scheduler' })]);
    // One at a time, so that each sees the one before it.
    await createPods(client, [pod('spread-0', 'spreader')]);
    const s0 = await nodeOf('spread-0');
    await createPods(client, [pod('spread-1', 'spreader')]);
    const s1 = await nodeOf('spread-1');
    expect(s1).not.toBe(s0);
    await createPods(client, [pod('pack-0', 'packer')]);
    const p0 = await nodeOf('pack-0');
    await createPods(client, [pod('pack-1', 'packer')]);
    expect(await nodeOf('pack-1')).toBe(p0);
    type Ev = { reason?: string; involvedObject?: { name?: string }; reportingComponent?: string };
    const events = await waitFor('the four Scheduled events', async () => {
      const items = (await client.get<{ items: Ev[] }>('/api/v1/namespaces/profiles/events')).items.filter((e) => e.reason === 'Scheduled');
      return items.length >= 4 ? items : undefined;
    });
    const by = (name: string): string | undefined => events.find((e) => e.involvedObject?.name === name)?.reportingComponent;
    expect([by('spread-0'), by('spread-1'), by('pack-0'), by('pack-1')]).toEqual(['spreader', 'spreader', 'packer', 'packer']);
    const lease = await client.get<{ spec: { holderIdentity?: string } }>('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/packer');
    expect(lease.spec.holderIdentity).toBe('e2e-profiles');
    const nobody = (await listPods(client, 'profiles')).find((p) => p.metadata?.name === 'nobody');
    expect(nobody?.spec?.nodeName ?? '').toBe('');
    expect(nobody?.status?.conditions ?? []).toEqual([]);
  });

  it('the two profiles share one cache: 16 pods at once for 12 free GPUs bind 12, never one GPU twice', async () => {
    const burst = [
      ...Array.from({ length: 8 }, (_, i) => pod(`burst-pack-${i}`, 'packer')),
      ...Array.from({ length: 8 }, (_, i) => pod(`burst-spread-${i}`, 'spreader')),
    ];
    await createPods(client, burst);
    await waitFor('12 of the 16 bound, and the other 4 told why', async () => {
      const ps = (await listPods(client, 'profiles')).filter((p) => p.metadata?.name?.startsWith('burst-') === true);
      const bound = ps.filter((p) => (p.spec?.nodeName ?? '') !== '');
      const told = ps.filter((p) => p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False') === true);
      return bound.length === 12 && told.length === 4 ? true : undefined;
    });
    // Settled: nothing more binds.
    await new Promise((r) => setTimeout(r, 1500));
    const all = await listPods(client, 'profiles');
    const used = gpuUsage(all, 8);
    for (const n of nodes) expect((used.get(n.name) ?? []).reduce((a, b) => a + b, 0)).toBe(8);
    const bound = all.filter((p) => p.metadata?.name?.startsWith('burst-') === true && (p.spec?.nodeName ?? '') !== '');
    expect(bound.length).toBe(12);
    // Both profiles got some: neither starves the other within one cycle's order.
    expect(bound.some((p) => p.spec?.schedulerName === 'packer')).toBe(true);
    expect(bound.some((p) => p.spec?.schedulerName === 'spreader')).toBe(true);
  });
});
