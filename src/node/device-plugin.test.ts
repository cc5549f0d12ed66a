// The device plugin's failure paths that need no API server: a kubelet that is not there yet, and an API
// server that cannot be reached (Allocate must refuse rather than guess).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../kube/client/client.ts';
import { waitFor } from '../harness/e2e-kit.ts';
import { SitsDevicePlugin } from './device-plugin.ts';
import { deriveReading } from './reading.ts';
import { KubeletStandIn } from './testing/kubelet-stand-in.ts';

const data = (f: string): string => readFileSync(new URL(`./testdata/${f}`, import.meta.url), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'sits-dp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

describe('SitsDevicePlugin without a kubelet or an API server', () => {
  it('waits for kubelet.sock, registers once it appears, and refuses Allocate when the pods cannot be read', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${await closedPort()}` }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
      currentContext: 'c',
    });
    const client = new KubeClient(kc);
    const logs: string[] = [];
    const plugin = new SitsDevicePlugin({ pluginDir: dir, nodeName: 'n1', client, log: (m) => void logs.push(m), watchIntervalMs: 50 });
    const reading = deriveReading({ query: data('smi-q-x-tesla-t4.xml'), topo: data('topo-1x-tesla-p4-numa-na.txt'), sysfsNuma: new Map() });
    if (!reading.ok) throw new Error(reading.error);
    plugin.update(reading.value);
    await plugin.start();
    const kubelet = new KubeletStandIn(dir);
    try {
      expect(plugin.isRegistered).toBe(false);
      // The kubelet starts later (it removes the plugin's socket when it does): the plugin serves again and registers.
      await kubelet.start();
      await waitFor('registration', async () => kubelet.registrations.length === 1 && kubelet.devices.length === 1);
      await expect(kubelet.allocate([kubelet.devices[0]?.ID ?? ''])).rejects.toThrow(/cannot list the pods of node n1 to find which GPUs SITS chose/);
      expect(logs.some((l) => /serving again/.test(l))).toBe(true);
    } finally {
      await plugin.stop();
      await kubelet.stop();
      client.close();
    }
  });
});
