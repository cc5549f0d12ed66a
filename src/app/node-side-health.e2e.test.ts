// `sits node-agent --dcgm-url`: the node side's composition root starts the GPU health watcher for its own
// node; against a real kube-apiserver, a real HTTP server serving recorded dcgm-exporter text (GPU 1's XID
// gauge at 79) and the stand-in nvidia-smi printing captured outputs, the Node gets its quarantine and
// SITS reads GPU 1 as unhealthy with the reason.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION, GPU_RESOURCE } from '../api/wire.ts';
import { T4_LABELS, withValue } from '../core/health/testing.ts';
import { KubeClient } from '../kube/client/client.ts';
import { nodeFromK8s } from '../kube/cache/labels.ts';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { createFakeGpuNodes } from '../harness/fake-nodes.ts';
import { waitFor } from '../harness/e2e-kit.ts';
import { writeFakeNvidiaSmi } from '../node/testing/fake-nvidia-smi.ts';
import { startNodeSide, type NodeSide } from './node-side.ts';

const nodeData = (f: string): string => readFileSync(new URL(`../node/testdata/${f}`, import.meta.url), 'utf8');
const T4 = readFileSync(new URL('../core/health/fixtures/dcgm-t4-datadog.txt', import.meta.url), 'utf8');
const GPU1 = T4_LABELS.replace('gpu="0"', 'gpu="1"').replace('device="nvidia0"', 'device="nvidia1"');

describe('node agent with --dcgm-url on a real kube-apiserver', () => {
  let plane: ControlPlane;
  let client: KubeClient;
  let server: Server;
  let dir: string;
  let side: NodeSide | undefined;
  const logs: string[] = [];

  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
      res.end(withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', 1, 79, GPU1));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    plane = await startControlPlane();
    client = new KubeClient(plane.kubeConfig());
    await createFakeGpuNodes(plane.kubeConfig(), [{ name: 'ws-h', capacity: { [GPU_RESOURCE]: '2' } }]);
    dir = mkdtempSync(join(tmpdir(), 'sits-node-health-'));
  });
  afterAll(async () => {
    await side?.stop();
    client?.close();
    await plane?.stop();
    await new Promise((r) => server?.close(r));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('quarantines the failing GPU on its own Node, logs the intent, and SITS reads the GPU unhealthy with the reason', async () => {
    const sys = join(dir, 'sys');
    for (const bus of ['0000:81:00.0', '0000:c1:00.0']) {
      mkdirSync(join(sys, 'bus', 'pci', 'devices', bus), { recursive: true });
      writeFileSync(join(sys, 'bus', 'pci', 'devices', bus, 'numa_node'), '0\n');
    }
    const nvidiaSmi = writeFakeNvidiaSmi(join(dir, 'nvidia-smi'), nodeData('topo-2x-rtx3090-sys-numa-na.txt'), nodeData('smi-q-x-dual-rtx-a5000.xml'), 0);
    side = await startNodeSide({
      kubeconfig: plane.kubeconfigPath,
      nodeName: 'ws-h',
      intervalMs: 60_000,
      nvidiaSmi,
      sysfsRoot: sys,
      labels: true,
      dcgmUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`,
      healthIntervalMs: 200,
      log: (m) => logs.push(m),
    });
    const node = await waitFor('the quarantine on the Node', async () => {
      const n = await client.get<V1Node>('/api/v1/nodes/ws-h');
      return n.metadata?.annotations?.[ANNOTATION.gpuQuarantine] === undefined ? undefined : n;
    });
    expect(Object.keys(JSON.parse(node.metadata?.annotations?.[ANNOTATION.gpuQuarantine] ?? '{}'))).toEqual(['1']);
    expect(
      logs.some((l) =>
        l.startsWith('gpu health: GPU 1 (GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e): restore elsewhere the work on it: XID 79 (GPU has fallen off the bus)'),
      ),
    ).toBe(true);
    const spec = nodeFromK8s(node);
    if (!spec.ok) throw new Error(spec.error);
    expect(spec.value.gpus.map((g) => [g.index, g.healthy, g.unhealthyReason?.replace(/until \S+:/, 'until T:')])).toEqual([
      [0, true, undefined],
      [1, false, 'quarantined until T: XID 79 (GPU has fallen off the bus)'],
    ]);
  });
});
