/**
 * `sits bench checkpoint`, part snapshotLatencyMs (issue 14 "Numbers", 000 §2.5): the time from "checkpoint
 * written" to "snapshot ready" on the real snapshot controller, two ways in one run, on one cluster:
 *
 *   linked       the product path: a TrainingJob with spec.checkpoint asks rank 0 for a checkpoint, the bench
 *                plays rank 0 (writes the files on the shared volume, then patches the commit annotation of the
 *                contract, docs/checkpoints.md), and the TrainingJob controller creates the VolumeSnapshot in the
 *                reconcile that sees the commit;
 *   independent  a periodic snapshot scheduler unaware of commits (a VolumeSnapshot of the same claim every
 *                `periodMs`): a checkpoint written at a random moment is captured by the first snapshot that starts
 *                after it, so it waits for the next tick and then for that snapshot.
 *
 * "Snapshot ready" is when one watch (the same for both) first shows the snapshot readyToUse. Control plane, kube-
 * controller-manager (PV binding), snapshot-controller, csi-snapshotter and the stand-in CSI driver are all real.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { startControllers } from '../../app/controllers.ts';
import { startDevCluster } from '../../app/dev-cluster.ts';
import { ANNOTATION, API_PATH } from '../../api/wire.ts';
import { percentiles } from '../../core/stats.ts';
import { waitFor } from '../../harness/e2e-kit.ts';
import { createStaticVolume, ensureSnapshotComponents, SNAPSHOT_API, startSnapshotStack, volumeSnapshot, volumeSnapshotClass, type VolumeSnapshotObject } from '../../harness/snapshot-stack.ts';
import type { KubeClient } from '../../kube/client/client.ts';
import { Reflector } from '../../kube/client/reflector.ts';

/** `{mean, p50, p99}` in ms, rounded to 0.1 ms. */
export interface LatencySummary {
  readonly mean: number;
  readonly p50: number;
  readonly p99: number;
}

export interface SnapshotLatencyOptions {
  /** Checkpoints measured each way. */
  readonly cycles: number;
  /** Period of the independent scheduler. */
  readonly periodMs: number;
  /** Random phase of the independent run's checkpoint writes (seeded, so runs are comparable). */
  readonly seed: number;
  readonly log?: (line: string) => void;
}

export interface SnapshotLatencyResult {
  readonly linked: LatencySummary;
  readonly independent: LatencySummary;
  /** Every sample, for --details. */
  readonly samples: { readonly linked: readonly number[]; readonly independent: readonly number[] };
  readonly periodMs: number;
  readonly cycles: number;
}

const round1 = (x: number): number => Math.round(x * 10) / 10;

export function summarize(samples: readonly number[]): LatencySummary {
  if (samples.length === 0) throw new Error('no samples');
  const [p50, p99] = percentiles(samples, [50, 99]);
  return { mean: round1(samples.reduce((a, b) => a + b, 0) / samples.length), p50: round1(p50 ?? NaN), p99: round1(p99 ?? NaN) };
}

/** mulberry32: a small seeded generator for the write phases. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** First time (Date.now) the watch showed each snapshot readyToUse. */
function readyWatch(client: KubeClient, ns: string): { readonly readyAt: Map<string, number>; readonly seenAt: Map<string, number>; start(): Promise<void>; stop(): void } {
  const readyAt = new Map<string, number>();
  const seenAt = new Map<string, number>();
  const see = (o: VolumeSnapshotObject): void => {
    if (!seenAt.has(o.metadata.name)) seenAt.set(o.metadata.name, Date.now());
    if (o.status?.readyToUse === true && !readyAt.has(o.metadata.name)) readyAt.set(o.metadata.name, Date.now());
  };
  const r = new Reflector<VolumeSnapshotObject & { metadata: { resourceVersion?: string } }>(client, `${SNAPSHOT_API}/namespaces/${ns}/volumesnapshots`, { add: see, update: see, delete: () => undefined, error: () => undefined });
  return { readyAt, seenAt, start: () => r.start(), stop: () => r.stop() };
}

async function linkedRun(client: KubeClient, ns: string, volumeDir: string, ready: Map<string, number>, seen: Map<string, number>, o: SnapshotLatencyOptions): Promise<number[]> {
  const job = 'bench-linked';
  const jobPath = `${API_PATH}/namespaces/${ns}/trainingjobs/${job}`;
  await client.post(`${API_PATH}/namespaces/${ns}/trainingjobs`, {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'TrainingJob',
    metadata: { name: job },
    spec: {
      replicas: 1,
      gpusPerReplica: 1,
      container: { image: 'registry.sits2026.dev/ml/pytorch:2.3-cuda12.1', command: ['torchrun', 'train.py'] },
      // No retention deletes during the run: deletions would compete with the snapshot being measured (the
      // independent run deletes nothing either).
      checkpoint: { volume: { claimName: 'ckpt' }, volumeSnapshotClassName: 'bench', writers: 'rank0', retention: { keep: 1000 } },
    },
  });
  const rank0 = `${job}-0`;
  const podPath = `/api/v1/namespaces/${ns}/pods/${rank0}`;
  await waitFor('the linked job Running', async () => (await client.get<{ status?: { phase?: string } }>(jobPath)).status?.phase === 'Running', 120_000);
  const out: number[] = [];
  for (let i = 1; i <= o.cycles; i++) {
    await client.mergePatch(jobPath, { metadata: { annotations: { [ANNOTATION.requestCheckpoint]: `Manual/bench-${i}` } } });
    const seq = await waitFor(`rank 0 asked for checkpoint ${i}`, async () => {
      const v = (await client.get<{ metadata: { annotations?: Record<string, string> } }>(podPath)).metadata.annotations?.[ANNOTATION.checkpointRequest];
      const n = v === undefined ? NaN : Number(v);
      return n === i ? n : undefined;
    }, 60_000, 5);
    writeFileSync(join(volumeDir, `step-${i}.pt`), `weights of step ${i}`);
    const written = Date.now();
    await client.mergePatch(podPath, { metadata: { annotations: { [ANNOTATION.checkpointCommit]: JSON.stringify({ seq, step: i, ranks: 1 }) } } });
    const name = `${job}-ckpt-${seq}`;
    const at = await waitFor(`${name} readyToUse`, async () => ready.get(name), 60_000, 2);
    out.push(at - written);
    // The controller records it (committed label, status) before the next request.
    await waitFor(`${name} recorded`, async () => (await client.get<{ status?: { checkpoint?: { cycle?: { phase?: string; seq?: number } } } }>(jobPath)).status?.checkpoint?.cycle?.phase === 'Ready', 60_000, 5);
    const cyc = (await client.get<{ status?: { checkpoint?: { cycle?: { commitTime?: string; snapshotReadyTime?: string } } } }>(jobPath)).status?.checkpoint?.cycle;
    o.log?.(`linked ${i}/${o.cycles}: ${(at - written).toFixed(0)} ms (snapshot in the watch after ${(seen.get(name) ?? NaN) - written} ms, commit seen after ${Date.parse(cyc?.commitTime ?? '') - written} ms, controller saw ready after ${Date.parse(cyc?.snapshotReadyTime ?? '') - written} ms)`);
  }
  await client.delete(jobPath);
  return out;
}

async function independentRun(client: KubeClient, ns: string, volumeDir: string, ready: Map<string, number>, o: SnapshotLatencyOptions): Promise<number[]> {
  const random = rng(o.seed);
  const ticks: { name: string; startedMs: number }[] = [];
  let stop = false;
  const t0 = Date.now();
  // The scheduler: a snapshot of the claim at every tick, whatever the training side does.
  const scheduler = (async () => {
    for (let k = 0; !stop; k++) {
      await sleep(t0 + k * o.periodMs - Date.now());
      if (stop) break;
      const name = `bench-periodic-${k}`;
      ticks.push({ name, startedMs: Date.now() });
      await client.post(`${SNAPSHOT_API}/namespaces/${ns}/volumesnapshots`, volumeSnapshot(ns, name, 'ckpt', 'bench'));
    }
  })();
  const out: number[] = [];
  try {
    for (let i = 0; i < o.cycles; i++) {
      // A write at a random phase of the schedule.
      await sleep(random() * o.periodMs);
      writeFileSync(join(volumeDir, `indep-${i}.pt`), `weights ${i}`);
      const written = Date.now();
      const capture = await waitFor(`a scheduled snapshot after write ${i}`, async () => ticks.find((t) => t.startedMs >= written), 60_000, 2);
      const at = await waitFor(`${capture.name} readyToUse`, async () => ready.get(capture.name), 60_000, 2);
      out.push(at - written);
      o.log?.(`independent ${i + 1}/${o.cycles}: ${(at - written).toFixed(0)} ms`);
    }
  } finally {
    stop = true;
    await scheduler;
  }
  return out;
}

/** Both runs on one real cluster (started and stopped here). */
export async function measureSnapshotLatency(o: SnapshotLatencyOptions): Promise<SnapshotLatencyResult> {
  const log = o.log ?? (() => undefined);
  await ensureSnapshotComponents({ log });
  const cluster = await startDevCluster({ nodes: 1, shape: 'a800x4', controllers: false, log: () => undefined });
  const client = cluster.client;
  let stack: Awaited<ReturnType<typeof startSnapshotStack>> | undefined;
  let controllers: Awaited<ReturnType<typeof startControllers>> | undefined;
  let watch: ReturnType<typeof readyWatch> | undefined;
  try {
    await cluster.plane.startControllerManager({ controllers: ['persistentvolume-binder-controller'] });
    stack = await startSnapshotStack(cluster.plane, { client });
    const ns = 'bench-checkpoint';
    await client.post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await client.post(`${SNAPSHOT_API}/volumesnapshotclasses`, volumeSnapshotClass('bench', stack.driver.name, 'Delete'));
    const vol = await createStaticVolume(stack, { namespace: ns, pvcName: 'ckpt' });
    await waitFor('claim ckpt Bound', async () => (await client.get<{ status?: { phase?: string } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/ckpt`)).status?.phase === 'Bound', 120_000);
    const volumeDir = stack.driver.volumeDir(vol.volume.id);
    watch = readyWatch(client, ns);
    await watch.start();
    controllers = await startControllers(client, { log: () => undefined });
    log('linked: the TrainingJob controller snapshots each commit as it sees it');
    const linked = await linkedRun(client, ns, volumeDir, watch.readyAt, watch.seenAt, o);
    log(`independent: a snapshot every ${o.periodMs} ms, unaware of commits`);
    const independent = await independentRun(client, ns, volumeDir, watch.readyAt, o);
    return { linked: summarize(linked), independent: summarize(independent), samples: { linked, independent }, periodMs: o.periodMs, cycles: o.cycles };
  } finally {
    watch?.stop();
    await controllers?.stop();
    await stack?.stop();
    await cluster.stop();
  }
}
