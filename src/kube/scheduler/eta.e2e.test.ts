// Issue 6 §5 on a real control plane: the expected start written on waiting pods uses runtimes learned from
// the queue's finished jobs (ADR 0021), not the 1 h default, while a user-given runtime still wins.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { startDevCluster, type DevCluster } from '../../app/dev-cluster.ts';
import { EXIT_CODE_ANNOTATION } from '../../harness/fake-kubelet.ts';
import type { KubeClient } from '../client/client.ts';
import { ANNOTATION } from '../../api/wire.ts';
import { runSits } from '../../testing/sits-cli.ts';
import { createNs, createPods, listPods, testPod, waitFor } from '../../harness/e2e-kit.ts';
import { scaled } from '../../testing/timeouts.ts';
import { parse } from 'yaml';

let cluster: DevCluster;
let client: KubeClient;

beforeAll(async () => {
  cluster = await startDevCluster({ nodes: 1, shape: 'a800x4', controllers: false });
  client = cluster.client;
});
afterAll(async () => {
  await cluster?.stop();
});

const queue = (name: string): Record<string, unknown> => ({
  apiVersion: 'ai.sits2026.dev/v1',
  kind: 'Queue',
  metadata: { name },
  spec: { tenant: name, resources: [{ name: 'nvidia.com/gpu', nominal: '4' }] },
});
const job = (name: string, q: string, annotations: Record<string, string> = {}): V1Pod =>
  testPod('eta', name, { gpus: 4, labels: { 'ai.sits2026.dev/queue': q }, annotations });
const get = async (name: string): Promise<V1Pod> => client.get<V1Pod>(`/api/v1/namespaces/eta/pods/${name}`);
const ms = (t: unknown): number => Date.parse(String(t));

describe('expected start on the live scheduler', () => {
  it(
    "a waiting job's expected start uses the runtime learned from its queue's finished job",
    async () => {
      await client.post('/apis/ai.sits2026.dev/v1/queues', queue('train'));
      await client.post('/apis/ai.sits2026.dev/v1/queues', queue('other'));
      await createNs(client, 'eta');
      // No wait for the scheduler to see the Queues: 'first' and 'blocker' bind either way (the node is free), and the
      // expected starts below are written only by the queue cycle, which the waitFor on them waits for.

      // 1. A job of queue `train` runs ~3 s and finishes: what the scheduler can learn is its pod's run time.
      await createPods(client, [job('first', 'train')]);
      await waitFor('first runs', async () => (await get('first')).status?.phase === 'Running', 30_000);
      await new Promise((r) => setTimeout(r, 3000));
      await client.mergePatch('/api/v1/namespaces/eta/pods/first', { metadata: { annotations: { [EXIT_CODE_ANNOTATION]: '0' } } });
      const done = await waitFor('first succeeded', async () => {
        const p = await get('first');
        return p.status?.phase === 'Succeeded' ? p : undefined;
      });
      const learnedMs = ms(done.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt) - ms(done.status?.startTime);
      expect(learnedMs).toBeGreaterThanOrEqual(2000);
      expect(learnedMs).toBeLessThan(60_000);

      // 2. Another queue's job holds the node; its user says it runs 600 s (a user-given runtime wins).
      await createPods(client, [job('blocker', 'other', { [ANNOTATION.expectedRuntimeSeconds]: '600' })]);
      const blocker = await waitFor('blocker runs', async () => {
        const p = await get('blocker');
        return p.status?.phase === 'Running' && p.status.startTime !== undefined ? p : undefined;
      });
      const blockerEnd = ms(blocker.status?.startTime) + 600_000;

      // 3. Two more jobs of `train` wait: the first starts when the blocker ends, the second one learned runtime later.
      await createPods(client, [job('w1', 'train')]);
      await createPods(client, [job('w2', 'train')]);
      const eta = async (name: string): Promise<number | undefined> => {
        const v = (await get(name)).metadata?.annotations?.[ANNOTATION.expectedStart];
        return v === undefined ? undefined : ms(v);
      };
      // Estimates are refreshed at most once a minute: w2 may get its own a minute after w1.
      const [w1, w2] = await waitFor(
        'both waiting jobs have an expected start',
        async () => {
          const a = await eta('w1');
          const b = await eta('w2');
          return a === undefined || b === undefined ? undefined : [a, b];
        },
        120_000,
        500,
      );
      expect(Math.abs(w1 - blockerEnd)).toBeLessThan(1000);
      // Learned: the finished job's run time (the 1 h default would put w2 an hour after w1).
      expect(Math.abs(w2 - w1 - learnedMs)).toBeLessThan(1000);
      expect(cluster.app?.scheduler.runtimes.recorded.finished).toBe(1);

      // `sits explain` is a new scheduler process: it learns the same from the finished pod still in the API.
      const out = await runSits(['explain', 'eta/w2', '--kubeconfig', cluster.kubeconfigPath]);
      expect(out.code, out.err).toBe(0);
      const at = /expected start: (\S+)/.exec(out.out)?.[1];
      expect(at, out.out).toBeDefined();
      expect(Math.abs(ms(at) - (blockerEnd + learnedMs))).toBeLessThan(1000);
      expect(
        (await listPods(client, 'eta'))
          .filter((p) => (p.spec?.nodeName ?? '') === '')
          .map((p) => p.metadata?.name)
          .sort(),
      ).toEqual(['w1', 'w2']);
    },
    scaled(240_000),
  );

  // Issue 31: a member pod of a gang bigger than the whole cluster, named kubectl style (NAME -n NS), answers for
  // its gang with the numbers instead of "no pending pod"; under another scheduler's name it is not ours.
  it(
    'sits explain on a member pod of a gang that can never fit, and --scheduler-name',
    async () => {
      const gang = [0, 1, 2].map((i) => testPod('eta', `huge-${i}`, { gpus: 4, group: 'huge', annotations: { [ANNOTATION.minMember]: '3' } }));
      await createPods(client, gang);
      const out = await waitFor(
        'explain sees the gang',
        async () => {
          const r = await runSits(['explain', 'huge-0', '-n', 'eta', '--kubeconfig', cluster.kubeconfigPath, '-o', 'yaml']);
          return r.code === 0 ? r : undefined;
        },
        60_000,
        500,
      );
      const report = parse(out.out) as { target: string; podGroup: string; neverFits: boolean; lines: string[] };
      expect(report.target).toBe('eta/huge-0');
      expect(report.podGroup).toBe('eta/huge');
      expect(report.neverFits).toBe(true);
      expect(report.lines[0]).toBe('pod eta/huge-0 belongs to pod group eta/huge: it starts with the whole gang');
      expect(report.lines.at(-1)).toBe('can never fit: needs 12 GPUs (3 pods × 4), the cluster has 4 (4 A800)');
      const other = await runSits(['explain', 'eta/huge-0', '--kubeconfig', cluster.kubeconfigPath, '--scheduler-name', 'someone-else']);
      expect(other.code).toBe(1);
      expect(other.out).toBe('eta/huge-0: waits for scheduler sits-scheduler, not someone-else (pass --scheduler-name sits-scheduler)\n');
    },
    scaled(120_000),
  );
});
