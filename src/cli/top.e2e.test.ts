// Issue 15 §6 on real parts: `sits run` (a child process, its HTTP port on a non-loopback address: TLS with a
// certificate the test made, callers checked by TokenReview and SubjectAccessReview against the real apiserver)
// on the dev cluster; `sits top` reads its /dashboard/api/v1/cluster with the kubeconfig's credentials, as kubectl would.
// The terminal view runs in a real pseudo-terminal (node-pty): colours on, heatmap, queues, the pending job with
// its explanation; `-o json` is parsed back and checked against the pods the apiserver bound.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevCluster, type DevCluster } from '../app/dev-cluster.ts';
import { freePorts } from '../harness/control-plane.ts';
import { createNs, createPods, listPods, testPod, waitFor } from '../harness/e2e-kit.ts';
import { selfSignedServing } from '../kube/secure/certs.ts';
import type { ClusterView } from '../server/cluster-view.ts';
import { sitsInPty } from '../testing/pty.ts';
import { runSits } from '../testing/sits-cli.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let cluster: DevCluster;
let sits: ChildProcess;
let server = '';
let caFile = '';
let dir = '';
let stderr = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sits-top-'));
  cluster = await startDevCluster({ nodes: 4, shape: 'a800x4', withScheduler: false, controllers: false });
  const serving = await selfSignedServing(['localhost'], ['127.0.0.1']);
  caFile = join(dir, 'ca.crt');
  writeFileSync(caFile, serving.ca);
  writeFileSync(join(dir, 'tls.crt'), serving.cert);
  writeFileSync(join(dir, 'tls.key'), serving.key);
  const [port] = (await freePorts(1)) as [number];
  server = `https://127.0.0.1:${port}`;
  sits = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/sits.mjs'),
      'run',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--no-leader-elect',
      '--metrics-port',
      String(port),
      '--metrics-host',
      '0.0.0.0',
      '--tls-cert-file',
      join(dir, 'tls.crt'),
      '--tls-private-key-file',
      join(dir, 'tls.key'),
    ],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  sits.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  await waitFor('sits run started', async () => stderr.includes('running (profile'), 60_000);
});

afterAll(async () => {
  if (sits !== undefined && sits.exitCode === null) {
    sits.kill('SIGTERM');
    await new Promise<void>((r) => (sits.exitCode !== null ? r() : sits.once('exit', () => r())));
  }
  await cluster?.stop();
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

/** `sits top …` in a pseudo-terminal of 160 columns: what a person would see. */
const inPty = (args: readonly string[]): Promise<{ code: number; out: string }> => sitsInPty(['top', ...args], { cols: 160 });

const ESC = String.fromCharCode(27);
const strip = (s: string): string => s.replace(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '').replace(/\r/g, '');
const auth = (): string[] => ['--server', server, '--kubeconfig', cluster.kubeconfigPath, '--certificate-authority', caFile];

describe('sits top against sits run on the dev cluster', () => {
  it('shows the heatmap, queues and a pending job in a terminal, and -o json is the dashboard view', async () => {
    const client = cluster.client;
    await createNs(client, 'top');
    await client.post('/apis/ai.sits2026.dev/v1/namespaces/top/podgroups', {
      apiVersion: 'ai.sits2026.dev/v1',
      kind: 'PodGroup',
      metadata: { name: 'train', namespace: 'top' },
      spec: { minMember: 2 },
    });
    await createPods(client, [
      testPod('top', 'solo', { gpus: 1 }),
      ...[0, 1].map((i) => testPod('top', `train-${i}`, { gpus: 4, group: 'train' })),
      testPod('top', 'too-big', { gpus: 5 }),
    ]);
    await waitFor(
      'three pods bound, the fourth told why it waits',
      async () => {
        const pods = await listPods(client, 'top');
        const bound = pods.filter((p) => p.spec?.nodeName !== undefined).length;
        const told = pods
          .find((p) => p.metadata?.name === 'too-big')
          ?.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False' && (c.message ?? '') !== '');
        return bound === 3 && told === true;
      },
      90_000,
    );

    // -o json: the view, parsed back; it agrees with the apiserver's bindings.
    const view = await waitFor(
      'the view shows 9 GPUs allocated',
      async () => {
        const r = await runSits(['top', '-o', 'json', ...auth()]);
        if (r.code !== 0) throw new Error(r.err);
        const v = JSON.parse(r.out) as ClusterView;
        return v.totals.usedGpuMilli === 9000 && v.pending.some((p) => p.id === 'top/too-big' && p.explanation.includes('nodes fit')) ? v : undefined;
      },
      60_000,
    );
    expect(view).toMatchObject({
      version: 1,
      source: 'live',
      totals: { nodes: 4, gpus: 16, healthyGpus: 16, usedGpuMilli: 9000, runningJobs: 2, pendingJobs: 1 },
    });
    const pods = await listPods(client, 'top');
    for (const p of pods.filter((x) => x.spec?.nodeName !== undefined)) {
      const node = view.nodes.find((n) => n.name === p.spec?.nodeName);
      expect(node?.pods.some((h) => h.pod === `top/${p.metadata?.name}`)).toBe(true);
    }
    expect(view.running.find((r) => r.id === 'gang:top/train')).toMatchObject({ pods: 2, gpuMilli: 8000 });

    // The terminal: colours (a TTY), one heatmap line for the one rack with 9 whole-GPU cells, queues, the pending job.
    const tty = await inPty(auth());
    expect(tty.code, tty.out).toBe(0);
    expect(tty.out).toMatch(new RegExp(`${ESC}\\[3\\dm`)); // ANSI foreground colours
    const screen = strip(tty.out);
    expect(screen).toContain('cluster: 4 nodes, 16 GPUs (16 healthy), 56% allocated, 2 running, 1 pending');
    const rack = screen.split('\n').find((l) => l.startsWith('zone-0/block-0/rack-0'));
    expect(rack).toBeDefined();
    expect(rack?.match(/█/g)?.length).toBe(9);
    expect(rack?.match(/·/g)?.length).toBe(7);
    expect(screen).toMatch(/QUEUE\s+COHORT\s+WEIGHT\s+NOMINAL\s+USED/);
    expect(screen).toMatch(/^default\*\s+-\s+1\s+∞\s+9\s/m);
    expect(screen).toMatch(/^top\/too-big\s+default\s+1\s+5\s+\S+\s+\S+\s+\S+\s+0\/4 nodes fit \S+ top\/too-big/m);

    // `sits top nodes -o wide`: one line per node, in a pipe (no colour).
    const wide = await runSits(['top', 'nodes', '-o', 'wide', ...auth()]);
    expect(wide.code, wide.err).toBe(0);
    expect(wide.out).not.toContain(`${ESC}[`);
    expect(wide.out.split('\n').filter((l) => /^a800x4-00\d\s/.test(l))).toHaveLength(4);

    // kubectl habits (issue 31): -n narrows the job rows; --context picks the kubeconfig user, an unknown one is named.
    const mine = await runSits(['top', 'pending', '-n', 'top', ...auth()]);
    expect(mine.code, mine.err).toBe(0);
    expect(mine.out).toMatch(/^top\/too-big\s/m);
    const others = await runSits(['top', 'pending', '-n', 'elsewhere', ...auth()]);
    expect(others.code, others.err).toBe(0);
    expect(others.out.trim()).toBe('No pending jobs.');
    const ctx = await runSits(['top', '--context', 'nope', ...auth()]);
    expect(ctx.code).toBe(2);
    expect(ctx.err).toMatch(/^sits: --context: no context "nope" in --kubeconfig \S+ \(known: \S+/);
  });

  it('says what to do when the certificate is not trusted or the credentials are refused', async () => {
    const untrusted = await runSits(['top', '--server', server, '--kubeconfig', cluster.kubeconfigPath]);
    expect(untrusted.code).not.toBe(0);
    expect(untrusted.err).toMatch(/pass --certificate-authority .* or --insecure-skip-tls-verify/);
    const refused = await runSits(['top', '--server', server, '--token', 'not-a-token', '--certificate-authority', caFile]);
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain('401 Unauthorized');
    const skip = await runSits(['top', 'queues', '--server', server, '--kubeconfig', cluster.kubeconfigPath, '--insecure-skip-tls-verify']);
    expect(skip.code, skip.err).toBe(0);
    expect(skip.out).toMatch(/^QUEUE/);
  });
});
