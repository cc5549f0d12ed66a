// `sits dev up` as a user runs it (the real CLI, a child process): it prints where its kubeconfig is, runs
// kube-controller-manager, and serves the scheduler's metrics and dashboard on loopback, which `sits top` reads.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePorts } from '../harness/control-plane.ts';
import { waitFor } from '../harness/e2e-kit.ts';
import { loadKubeConfig } from '../app/live.ts';
import { KubeClient } from '../kube/client.ts';
import type { ClusterView } from '../server/cluster-view.ts';
import { runSits } from '../testing/sits-cli.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const dir = mkdtempSync(join(tmpdir(), 'sits-devup-'));
let child: ChildProcess | undefined;

afterAll(async () => {
  if (child !== undefined && child.exitCode === null) {
    child.kill('SIGKILL');
    await new Promise<void>((r) => child?.once('exit', () => r()));
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('sits dev up', () => {
  it('prints its kubeconfig, leads with its scheduler, runs kube-controller-manager, serves metrics and the dashboard `sits top` reads; stops on SIGTERM', async () => {
    const [port] = (await freePorts(1)) as [number];
    const kubeconfig = join(dir, 'dev.kubeconfig');
    let out = '';
    let err = '';
    const proc = spawn(process.execPath, [join(ROOT, 'bin/sits.mjs'), 'dev', 'up', '--nodes', '2', '--shape', 'a800x4', '--kubeconfig', kubeconfig, '--metrics-port', String(port), '--webhook', 'off'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    proc.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    await waitFor('ready', async () => {
      if (proc.exitCode !== null) throw new Error(`dev up exited ${proc.exitCode}: ${err}`);
      return out.includes(`ready kubeconfig=${kubeconfig}`);
    }, 120_000);
    expect(err).toContain(`metrics on http://127.0.0.1:${port}/metrics, dashboard on http://127.0.0.1:${port}/dashboard/ (sits top --server http://127.0.0.1:${port})`);

    // `sits top` against it, as the line says.
    const view = await waitFor('sits top sees both nodes', async () => {
      const r = await runSits(['top', '-o', 'json', '--server', `http://127.0.0.1:${port}`]);
      if (r.code !== 0) throw new Error(r.err);
      const v = JSON.parse(r.out) as ClusterView;
      return v.totals.nodes === 2 ? v : undefined;
    }, 60_000);
    expect(view).toMatchObject({ source: 'live', totals: { nodes: 2, gpus: 8 } });
    // Its scheduler holds the Lease `sits run` takes, so a `sits run` against it stands by (--scheduler none: none).
    const client = new KubeClient(loadKubeConfig(kubeconfig));
    const lease = await waitFor('the scheduler\'s Lease', async () => (await client.get<{ spec?: { holderIdentity?: string } }>('/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/sits-scheduler')).spec?.holderIdentity, 30_000);
    expect(lease).toBe('sits-dev');
    // The controller manager runs: a Deployment gets its ReplicaSet (what `kubectl create deployment` relies on).
    await client.post('/apis/apps/v1/namespaces/default/deployments', { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] } } } });
    await waitFor('the Deployment\'s ReplicaSet', async () => (await client.get<{ items: unknown[] }>('/apis/apps/v1/namespaces/default/replicasets')).items.length === 1, 60_000);
    client.close();
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('sits_');

    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(err).toContain('SIGTERM: stopping the dev cluster');
  });
});
