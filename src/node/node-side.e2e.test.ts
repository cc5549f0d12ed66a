// The node side against a real kube-apiserver: the topology agent patching its Node (through the real
// command runner and a stand-in nvidia-smi that prints captured outputs), and the device plugin driven by a
// stand-in of the kubelet's side of the device-plugin protocol, with pods bound as SITS binds them.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, GPU_RESOURCE, LABEL } from '../api/wire.ts';
import { KubeClient } from '../kube/client/client.ts';
import { nodeFromK8s } from '../kube/cache/labels.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { createNs, createPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { NodeAgent } from './agent.ts';
import { deviceId, SitsDevicePlugin } from './device-plugin.ts';
import { NodeQuarantineWatch } from './quarantine-watch.ts';
import { deriveReading, type NodeReading } from './reading.ts';
import { execRunner } from './source.ts';
import { writeFakeNvidiaSmi } from './testing/fake-nvidia-smi.ts';
import { KubeletStandIn } from './testing/kubelet-stand-in.ts';

const data = (f: string): string => readFileSync(new URL(`./testdata/${f}`, import.meta.url), 'utf8');
const A5000 = data('smi-q-x-dual-rtx-a5000.xml');
const TOPO = data('topo-2x-rtx3090-sys-numa-na.txt');
/** The A5000 capture with GPU 1's uncorrectable ECC counter raised. */
const A5000_ECC = ((): string => {
  const at = A5000.indexOf('<gpu id="00000000:C1:00.0">');
  return A5000.slice(0, at) + A5000.slice(at).replace('<dram_uncorrectable>N/A</dram_uncorrectable>', '<dram_uncorrectable>2</dram_uncorrectable>');
})();

let plane: ControlPlane;
let client: KubeClient;
let dir: string;
const logs: string[] = [];
const log = (m: string): void => void logs.push(m);

beforeAll(async () => {
  plane = await startControlPlane();
  client = new KubeClient(plane.kubeConfig());
  await createFakeGpuNodes(plane.kubeConfig(), [
    { name: 'ws-1', capacity: { [GPU_RESOURCE]: '2' } },
    { name: 'gpu-1', capacity: { [GPU_RESOURCE]: '2' } },
  ]);
  dir = mkdtempSync(join(tmpdir(), 'sits-node-'));
});

afterAll(async () => {
  client?.close();
  await plane?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const fakeSmi = (name: string, topo: string, query: string, exitCode = 0): string => writeFakeNvidiaSmi(join(dir, name), topo, query, exitCode);

function sysfs(numa: Record<string, number>): string {
  const root = join(dir, 'sys');
  for (const [bus, n] of Object.entries(numa)) {
    mkdirSync(join(root, 'bus', 'pci', 'devices', bus), { recursive: true });
    writeFileSync(join(root, 'bus', 'pci', 'devices', bus, 'numa_node'), `${n}\n`);
  }
  return root;
}

const getNode = (name: string): Promise<V1Node> => client.get<V1Node>(`/api/v1/nodes/${name}`);

describe('node agent on a real kube-apiserver', () => {
  const agent = (nvidiaSmi: string): NodeAgent =>
    new NodeAgent({
      source: { nvidiaSmi, sysfsRoot: sysfs({ '0000:81:00.0': 0, '0000:c1:00.0': 1 }), runner: execRunner },
      node: { client, name: 'ws-1' },
      intervalMs: 60_000,
      log,
    });

  it('writes the labels and annotations once, then nothing while nothing changes; SITS reads the node back', async () => {
    const a = agent(fakeSmi('good', TOPO, A5000));
    const first = await a.once();
    expect(first.kind).toBe('patched');
    const node = await getNode('ws-1');
    expect(node.metadata?.labels).toMatchObject({
      [LABEL.gfdProduct]: 'NVIDIA-RTX-A5000',
      [LABEL.gfdCount]: '2',
      [LABEL.gfdMemory]: '24564',
      'kubernetes.io/hostname': 'ws-1',
    });
    expect(node.metadata?.annotations?.[ANNOTATION.gpuTopology]).toBe(
      '\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tSYS\t0-7,16-23\t0\nGPU1\tSYS\t X \t8-15,24-31\t1\n',
    );
    const spec = nodeFromK8s(node);
    if (!spec.ok) throw new Error(spec.error);
    expect(spec.value.topology.numaOf).toEqual([0, 1]);
    // The bus ids of the captured -q -x (index 0 on bus 81, index 1 on bus C1), for the pods' NCCL topology files.
    expect(node.metadata?.annotations?.[ANNOTATION.gpuBusIds]).toBe('0000:81:00.0,0000:c1:00.0');
    expect(spec.value.pci).toEqual({ busIds: ['0000:81:00.0', '0000:c1:00.0'], nics: [] });
    expect(spec.value.gpus.map((g) => [g.memoryMiB, g.healthy])).toEqual([
      [24564, true],
      [24564, true],
    ]);
    const rv = node.metadata?.resourceVersion;
    expect(await a.once()).toEqual({ kind: 'unchanged' });
    expect((await getNode('ws-1')).metadata?.resourceVersion).toBe(rv);
  });

  it('garbage, truncated output, a failing or missing nvidia-smi: a clear error and the node untouched', async () => {
    const before = await getNode('ws-1');
    const cases: [string, RegExp][] = [
      [fakeSmi('garbage', 'Failed to initialize NVML: Driver/library version mismatch', A5000), /nvidia-smi topo -m: no header line/],
      [fakeSmi('truncated', TOPO, A5000.slice(0, A5000.length / 2)), /not well-formed XML at line \d+, column \d+/],
      [fakeSmi('failing', '', '', 9), /exit code 9/],
      [join(dir, 'no-such-dir', 'nvidia-smi'), /not found/],
    ];
    for (const [smi, want] of cases) {
      const r = await agent(smi).once();
      expect(r.kind, smi).toBe('error');
      if (r.kind === 'error') expect(r.error).toMatch(want);
    }
    const after = await getNode('ws-1');
    expect(after.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    expect(logs.some((l) => /labels left as they are/.test(l))).toBe(true);
  });

  it('a device turning unhealthy is annotated, and the annotation goes when it recovers', async () => {
    expect((await agent(fakeSmi('ecc', TOPO, A5000_ECC)).once()).kind).toBe('patched');
    expect((await getNode('ws-1')).metadata?.annotations?.[ANNOTATION.unhealthyGpus]).toBe('1');
    expect((await agent(fakeSmi('good', TOPO, A5000)).once()).kind).toBe('patched');
    expect((await getNode('ws-1')).metadata?.annotations?.[ANNOTATION.unhealthyGpus]).toBeUndefined();
  });
});

describe('device plugin with a kubelet stand-in and pods bound by SITS', () => {
  const reading = (query: string): NodeReading => {
    const r = deriveReading({ query, topo: TOPO, sysfsNuma: new Map([['0000:81:00.0', 0]]) });
    if (!r.ok) throw new Error(r.error);
    return r.value;
  };
  const good = reading(A5000);
  const id = (i: number): string => deviceId(good.gpus[i] as NodeReading['gpus'][number]);
  let plugins: string;
  let kubelet: KubeletStandIn;
  let plugin: SitsDevicePlugin;

  /** Creates the pod and binds it as SITS's binder does: one Binding carrying the gpu-indices annotation. */
  async function bound(name: string, gpus: number, indices?: string): Promise<void> {
    await createPods(client, [testPod('dp', name, { gpus })]);
    await client.post(`/api/v1/namespaces/dp/pods/${name}/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name, namespace: 'dp', ...(indices === undefined ? {} : { annotations: { [ANNOTATION.gpuIndices]: indices } }) },
      target: { apiVersion: 'v1', kind: 'Node', name: 'gpu-1' },
    });
  }
  const pod = (name: string): Promise<V1Pod> => client.get<V1Pod>(`/api/v1/namespaces/dp/pods/${name}`);

  beforeAll(async () => {
    plugins = join(dir, 'device-plugins');
    mkdirSync(plugins, { recursive: true });
    await createNs(client, 'dp');
    // Older first: SITS chose GPU 1 for it, GPU 0 for the younger one.
    await bound('old', 1, '1');
    await new Promise((r) => setTimeout(r, 1100));
    await bound('young', 1, '0');
    kubelet = new KubeletStandIn(plugins);
    await kubelet.start();
    plugin = new SitsDevicePlugin({ pluginDir: plugins, nodeName: 'gpu-1', client, log, watchIntervalMs: 100 });
    plugin.update(good);
    await plugin.start();
  });
  afterAll(async () => {
    await plugin?.stop();
    await kubelet?.stop();
  });

  it('registers nvidia.com/gpu (v1beta1, its socket, GetPreferredAllocation on) and lists one healthy device per GPU with its NUMA node', async () => {
    await waitFor('registration', async () => kubelet.registrations.length === 1);
    expect(kubelet.registrations[0]).toEqual({
      version: 'v1beta1',
      endpoint: 'sits-gpu.sock',
      resource_name: 'nvidia.com/gpu',
      options: { pre_start_required: false, get_preferred_allocation_available: true },
    });
    await waitFor('devices', async () => kubelet.devices.length === 2);
    expect(kubelet.devices).toEqual([
      { ID: 'GPU-12345678-aaaa-bbbb-cccc-0123456789ab', health: 'Healthy', topology: { nodes: [{ ID: 0 }] } },
      { ID: 'GPU-12345678-aaaa-bbbb-cccc-0123456789cd', health: 'Healthy', topology: { nodes: [{ ID: 1 }] } },
    ]);
    expect(await kubelet.options()).toEqual({ pre_start_required: false, get_preferred_allocation_available: true });
  });

  it('GetPreferredAllocation answers with the GPUs SITS recorded for the oldest waiting pod', async () => {
    expect(await kubelet.preferred([id(0), id(1)], 1)).toEqual({ container_responses: [{ deviceIDs: [id(1)] }] });
  });

  it('Allocate gives the container exactly the recorded GPUs, with its device files, and marks the pod', async () => {
    const r = await kubelet.allocate([id(1)]);
    const c = r.container_responses[0];
    expect(c?.envs).toEqual({ NVIDIA_VISIBLE_DEVICES: '1', CUDA_VISIBLE_DEVICES: '0', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' });
    // GPU index 1 is /dev/nvidia0 on this machine (its minor number).
    expect(c?.devices.map((d) => [d.container_path, d.host_path, d.permissions])).toEqual([
      ['/dev/nvidiactl', '/dev/nvidiactl', 'rw'],
      ['/dev/nvidia-uvm', '/dev/nvidia-uvm', 'rw'],
      ['/dev/nvidia-uvm-tools', '/dev/nvidia-uvm-tools', 'rw'],
      ['/dev/nvidia0', '/dev/nvidia0', 'rw'],
    ]);
    expect((await pod('old')).metadata?.annotations?.[ANNOTATION.gpuAllocated]).toBe('1');
  });

  it('a kubelet that offers other devices still gets the next pod’s recorded GPUs; a pod SITS did not place gets the kubelet’s choice', async () => {
    const r = await kubelet.allocate([id(1)]);
    expect(r.container_responses[0]?.envs.NVIDIA_VISIBLE_DEVICES).toBe('0');
    expect(r.container_responses[0]?.devices.at(-1)?.host_path).toBe('/dev/nvidia1');
    expect((await pod('young')).metadata?.annotations?.[ANNOTATION.gpuAllocated]).toBe('0');
    await bound('elsewhere', 1);
    const other = await kubelet.allocate([id(0)]);
    expect(other.container_responses[0]?.envs.NVIDIA_VISIBLE_DEVICES).toBe('0');
    expect(plugin.stats.fromKubeletChoice).toBe(1);
    await expect(kubelet.allocate(['GPU-not-here'])).rejects.toThrow(/unknown device GPU-not-here/);
  });

  it('a pod with two GPU containers: each Allocate gets the next of its recorded GPUs, in container order', async () => {
    const multi = testPod('dp', 'multi', { gpus: 1 });
    const main = multi.spec?.containers[0];
    if (main === undefined || multi.spec === undefined) throw new Error('no container');
    multi.spec.containers = [main, { ...main, name: 'second' }];
    await createPods(client, [multi]);
    await client.post('/api/v1/namespaces/dp/pods/multi/binding', {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'multi', namespace: 'dp', annotations: { [ANNOTATION.gpuIndices]: '1,0' } },
      target: { apiVersion: 'v1', kind: 'Node', name: 'gpu-1' },
    });
    const first = await kubelet.allocate([id(1)]);
    expect(first.container_responses[0]?.envs.NVIDIA_VISIBLE_DEVICES).toBe('0');
    expect((await pod('multi')).metadata?.annotations?.[ANNOTATION.gpuAllocated]).toBe('0');
    const second = await kubelet.allocate([id(0)]);
    expect(second.container_responses[0]?.envs.NVIDIA_VISIBLE_DEVICES).toBe('1');
    expect((await pod('multi')).metadata?.annotations?.[ANNOTATION.gpuAllocated]).toBe('0,1');
  });

  it('a device that turns unhealthy is sent Unhealthy through ListAndWatch', async () => {
    const n = kubelet.updates.length;
    plugin.update(reading(A5000_ECC));
    await waitFor('health update', async () => kubelet.updates.length > n);
    expect(kubelet.devices.map((d) => d.health)).toEqual(['Healthy', 'Unhealthy']);
  });

  it('registers again after the kubelet restarts (sockets removed, a new kubelet.sock)', async () => {
    const n = kubelet.updates.length;
    await kubelet.restart();
    await waitFor('re-registration', async () => kubelet.registrations.length === 2, 30_000);
    await waitFor('a ListAndWatch stream from the new kubelet', async () => kubelet.updates.length > n);
    expect(kubelet.devices.map((d) => d.health)).toEqual(['Healthy', 'Unhealthy']);
    // Every SITS pod has its GPUs now: the preference falls back to the available devices in index order.
    expect(await kubelet.preferred([id(1), id(0)], 1)).toEqual({ container_responses: [{ deviceIDs: [id(0)] }] });
    expect(logs.some((l) => /was removed \(kubelet restart\); serving again/.test(l))).toBe(true);
  });

  it('a GPU quarantined on the Node (the annotation the health monitor writes) is sent Unhealthy while quarantined, Healthy again after release; a malformed annotation keeps the last good one', async () => {
    plugin.update(good);
    await waitFor('both devices Healthy', async () => kubelet.devices.length === 2 && kubelet.devices.every((d) => d.health === 'Healthy'));
    const watch = new NodeQuarantineWatch(client, 'gpu-1', (q) => plugin.setQuarantined(q), log);
    await watch.start();
    try {
      const path = '/api/v1/nodes/gpu-1';
      const since = new Date().toISOString();
      const until = new Date(Date.now() + 15 * 60_000).toISOString();
      await client.mergePatch(path, {
        metadata: {
          annotations: {
            [ANNOTATION.gpuQuarantine]: JSON.stringify({ '0': { reason: 'XID 79 (GPU has fallen off the bus)', since, until, source: 'gpu-health' } }),
          },
        },
      });
      await waitFor('GPU 0 Unhealthy at the kubelet', async () => kubelet.devices[0]?.health === 'Unhealthy', 30_000);
      expect(kubelet.devices.map((d) => [d.ID, d.health])).toEqual([
        [id(0), 'Unhealthy'],
        [id(1), 'Healthy'],
      ]);
      expect(logs.some((l) => l.includes(`unhealthy: 0 (quarantined: quarantined until ${until}: XID 79 (GPU has fallen off the bus))`))).toBe(true);
      // Another node's quarantine is not this plugin's business (the field selector narrows the watch).
      await client.mergePatch('/api/v1/nodes/ws-1', {
        metadata: { annotations: { [ANNOTATION.gpuQuarantine]: JSON.stringify({ '1': { reason: 'x', since, until, source: 'gpu-health' } }) } },
      });
      const n = kubelet.updates.length;
      await client.mergePatch(path, { metadata: { annotations: { [ANNOTATION.gpuQuarantine]: '{not json' } } });
      await waitFor(
        'the malformed annotation logged',
        async () => logs.some((l) => /annotation ai\.sits2026\.dev\/gpu-quarantine: not JSON: .*keeps the last good quarantine/.test(l)),
        30_000,
      );
      expect(kubelet.updates.length).toBe(n);
      expect(kubelet.devices[0]?.health).toBe('Unhealthy');
      await client.mergePatch(path, { metadata: { annotations: { [ANNOTATION.gpuQuarantine]: null } } });
      await waitFor('GPU 0 Healthy again after the release', async () => kubelet.devices.every((d) => d.health === 'Healthy'), 30_000);
      expect(kubelet.updates.length).toBe(n + 1);
    } finally {
      watch.stop();
      await client.mergePatch('/api/v1/nodes/ws-1', { metadata: { annotations: { [ANNOTATION.gpuQuarantine]: null } } });
    }
  });
});
