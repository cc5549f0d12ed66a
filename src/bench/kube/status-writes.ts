/**
 * `sits bench status-writes`: what the Queue and PodGroup status the scheduler writes (kube/adapters/object-status.ts,
 * issue 32) costs the apiserver at scale. A dev cluster (real etcd + kube-apiserver, fake GPU nodes and kubelet,
 * the live scheduler and the controllers) gets `jobs` TrainingJobs in `queues` Queues of one cohort, each replica
 * running a seeded 20–120 s, so gangs start, finish and queue the whole time. Counted from the apiserver's own
 * apiserver_request_total (PATCH on queues/status and podgroups/status) and etcd_requests_total over a window of
 * steady churn, per minute. At the end of the window, the statuses that still disagree with the pods are counted
 * (what the per-pass cap and the 5 s period leave stale), and again once the writer has had two periods.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../api/wire.ts';
import { etcdWrites } from '../../kits/batch-control-plane.ts';
import { startDevCluster } from '../../app/dev-cluster.ts';
import { promSamples, type Sample } from '../../core/prom-text.ts';
import { seededRng } from '../../core/ports.ts';
import { RUN_SECONDS_ANNOTATION } from '../../harness/fake-kubelet.ts';
import { podGroupStatus } from '../../kube/adapters/object-status.ts';
import type { KubeClient } from '../../kube/client/client.ts';

export interface StatusWritesOptions {
  readonly jobs: number;
  readonly nodes: number;
  readonly queues: number;
  /** Length of the measured window, after every job has been created. */
  readonly windowSec: number;
  readonly seed: number;
  readonly progress?: (line: string) => void;
}

export interface StatusWritesReport {
  readonly setup: { readonly jobs: number; readonly nodes: number; readonly gpus: number; readonly queues: number; readonly windowSec: number; readonly seed: number; readonly createSec: number };
  /** Writes per minute over the window, as the apiserver counted them. */
  readonly perMinute: { readonly queueStatus: number; readonly podGroupStatus: number; readonly total: number; readonly etcdQueues: number; readonly etcdPodGroups: number };
  /** The writer's own bound: maxWritesPerPass per intervalMs. */
  readonly boundPerMinute: number;
  /** Pod starts and ends seen during the window (the churn the statuses follow). */
  readonly churn: { readonly podsStarted: number; readonly podsFinished: number };
  /** PodGroups whose status disagrees with their pods: at the window's end, and 12 s later. */
  readonly stale: { readonly atEnd: number; readonly after12s: number; readonly podGroups: number };
}

const API = '/apis/ai.sits2026.dev/v1';
const NS = 'status-bench';

function statusPatches(samples: readonly Sample[], resource: string): number {
  let n = 0;
  for (const x of samples) if (x.name === 'apiserver_request_total' && x.labels.verb === 'PATCH' && x.labels.resource === resource && x.labels.subresource === 'status') n += x.value;
  return n;
}

async function staleGroups(client: KubeClient): Promise<{ stale: number; groups: number }> {
  const [pgs, pods] = await Promise.all([
    client.get<{ items: { metadata: { name: string }; spec?: { minMember?: number }; status?: Record<string, unknown> }[] }>(`${API}/namespaces/${NS}/podgroups`),
    client.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${NS}/pods`),
  ]);
  const members = new Map<string, V1Pod[]>();
  for (const p of pods.items) {
    const g = p.metadata?.labels?.[LABEL.podGroup];
    if (g !== undefined) members.set(g, [...(members.get(g) ?? []), p]);
  }
  let stale = 0;
  for (const g of pgs.items) {
    const want = podGroupStatus(Math.max(1, g.spec?.minMember ?? 1), members.get(g.metadata.name) ?? []);
    if (g.status?.phase !== want.phase || g.status.scheduled !== want.scheduled) stale++;
  }
  return { stale, groups: pgs.items.length };
}

export async function benchStatusWrites(o: StatusWritesOptions): Promise<StatusWritesReport> {
  const say = o.progress ?? (() => undefined);
  const cluster = await startDevCluster({ nodes: o.nodes, shape: 'dgx-h100', nodesPerRack: 8 });
  try {
    const client = cluster.client;
    await client.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    for (let q = 0; q < o.queues; q++) await client.post(`${API}/queues`, { apiVersion: 'ai.sits2026.dev/v1', kind: 'Queue', metadata: { name: `q${q}` }, spec: { tenant: `team-${q}`, weight: q + 1, cohort: 'all' } });
    const rng = seededRng(o.seed);
    const t0 = Date.now();
    const jobs = Array.from({ length: o.jobs }, (_, i) => {
      const replicas = [1, 1, 2, 4][rng.int(4)] ?? 1;
      const gpus = [1, 2, 4, 8][rng.int(4)] ?? 1;
      return {
        apiVersion: 'ai.sits2026.dev/v1',
        kind: 'TrainingJob',
        metadata: { name: `job-${String(i).padStart(5, '0')}` },
        spec: {
          replicas,
          resources: { 'nvidia.com/gpu': gpus },
          queue: `q${rng.int(o.queues)}`,
          podTemplate: { metadata: { annotations: { [RUN_SECONDS_ANNOTATION]: String(20 + rng.int(101)) } }, spec: { containers: [{ name: 'trainer', image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] }] } },
        },
      };
    });
    // 16 creators in parallel, as a busy team's CI would.
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < jobs.length) {
          const j = jobs[next++];
          await client.post(`${API}/namespaces/${NS}/trainingjobs`, j);
          if (next % 100 === 0) say(`created ${next}/${jobs.length} TrainingJobs`);
        }
      }),
    );
    const createSec = (Date.now() - t0) / 1000;
    const before = promSamples(await client.get<string>('/metrics'));
    const started0 = cluster.kubelet.stats.started;
    const finished0 = cluster.kubelet.stats.finished;
    const w0 = Date.now();
    while (Date.now() - w0 < o.windowSec * 1000) {
      await new Promise((r) => setTimeout(r, 5000));
      say(`window ${Math.round((Date.now() - w0) / 1000)}/${o.windowSec} s: ${cluster.kubelet.stats.started - started0} pods started, ${cluster.kubelet.stats.finished - finished0} finished`);
    }
    const after = promSamples(await client.get<string>('/metrics'));
    const minutes = (Date.now() - w0) / 60_000;
    const atEnd = await staleGroups(client);
    await new Promise((r) => setTimeout(r, 12_000));
    const later = await staleGroups(client);
    const per = (n: number): number => Math.round((n / minutes) * 10) / 10;
    const q = statusPatches(after, 'queues') - statusPatches(before, 'queues');
    const g = statusPatches(after, 'podgroups') - statusPatches(before, 'podgroups');
    return {
      setup: { jobs: o.jobs, nodes: o.nodes, gpus: o.nodes * 8, queues: o.queues, windowSec: o.windowSec, seed: o.seed, createSec: Math.round(createSec * 10) / 10 },
      perMinute: { queueStatus: per(q), podGroupStatus: per(g), total: per(q + g), etcdQueues: per(etcdWrites(after, 'queues') - etcdWrites(before, 'queues')), etcdPodGroups: per(etcdWrites(after, 'podgroups') - etcdWrites(before, 'podgroups')) },
      boundPerMinute: (100 * 60_000) / 5000,
      churn: { podsStarted: cluster.kubelet.stats.started - started0, podsFinished: cluster.kubelet.stats.finished - finished0 },
      stale: { atEnd: atEnd.stale, after12s: later.stale, podGroups: later.groups },
    };
  } finally {
    await cluster.stop();
  }
}
