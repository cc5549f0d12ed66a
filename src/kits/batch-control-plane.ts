/**
 * The control-plane cost of one BatchInferenceJob (issue 13 Numbers, 004 §2.5), read from the real kube-apiserver's
 * own /metrics: the SITS controller and workers running a job against a controller that writes status on every
 * record. Shared by the batch e2e (which asserts on it) and `sits bench batch --control-plane` (which reports it),
 * so that both count the same writes the same way (ADR 0158).
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { BatchInferenceJob } from '../api/schema/batch-inference-job.ts';
import { promSamples, type Sample } from '../core/prom-text.ts';
import { ensureK8sBinaries } from '../harness/control-plane.ts';
import { waitFor } from '../harness/e2e-kit.ts';
import type { KubeClient } from '../kube/client/client.ts';
import { startBatchE2e, type BatchE2e } from './batch-e2e-kit.ts';

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const ETCD_WRITES = new Set(['create', 'update', 'delete']);

export async function scrapeApiserver(client: KubeClient): Promise<Sample[]> {
  return promSamples(await client.get<string>('/metrics'));
}

/**
 * Writes to the API server by the batch job's own parties (the controller and the workers), from the apiserver's
 * apiserver_request_total: every write on batchinferencejobs (any subresource) and on pods themselves (creates,
 * annotation patches, deletes). The kubelet's pods/status and the scheduler's pods/binding are the same under any
 * batch design and are left out.
 */
export function jobWrites(samples: readonly Sample[]): number {
  let n = 0;
  for (const x of samples) {
    if (x.name !== 'apiserver_request_total' || !WRITE_VERBS.has(x.labels.verb ?? '')) continue;
    const res = x.labels.resource;
    const sub = x.labels.subresource ?? '';
    if (res === 'batchinferencejobs' || (res === 'pods' && sub === '')) n += x.value;
  }
  return n;
}

/** apiserver_request_total on batchinferencejobs and pods by `VERB resource[/subresource]`, reads included. */
export function requestBreakdown(samples: readonly Sample[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const x of samples) {
    if (x.name !== 'apiserver_request_total' || (x.labels.resource !== 'batchinferencejobs' && x.labels.resource !== 'pods')) continue;
    const sub = x.labels.subresource ?? '';
    const k = `${x.labels.verb ?? ''} ${x.labels.resource}${sub === '' ? '' : `/${sub}`}`;
    out.set(k, (out.get(k) ?? 0) + x.value);
  }
  return out;
}

/**
 * Writes the apiserver made to etcd for one resource (etcd_requests_total, operation create/update/delete; labels
 * group and resource in v1.36). A PATCH that changes nothing is not a write here: the store short-circuits it.
 */
export function etcdWrites(samples: readonly Sample[], resource: string): number {
  let n = 0;
  for (const x of samples) if (x.name === 'etcd_requests_total' && x.labels.resource === resource && ETCD_WRITES.has(x.labels.operation ?? '')) n += x.value;
  return n;
}

/** `after − before` of a breakdown, without the keys that did not move. */
export function breakdownDelta(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of [...after].sort(([a], [b]) => a.localeCompare(b))) if (v - (before.get(k) ?? 0) !== 0) out[k] = v - (before.get(k) ?? 0);
  return out;
}

export interface MeasuredJob {
  /** The worker pods as first bound by SITS. */
  readonly pods: V1Pod[];
  readonly job: BatchInferenceJob;
  readonly elapsedMs: number;
  /** API writes by the job's parties (jobWrites) from the job's creation until its worker pods are gone. */
  readonly writes: number;
  /** etcd writes on the job object over the same window. */
  readonly etcdJobWrites: number;
  /** etcd writes on pods over the same window: everyone's, the kubelet's status and the scheduler's bindings too. */
  readonly etcdPodWrites: number;
  /** Every request (reads too) on batchinferencejobs and pods over the window. */
  readonly requests: Record<string, number>;
}

/** Creates job `name` over data/in/`input` on the kit's cluster and measures it until it ended and its pods are gone. */
export async function runMeasuredJob(kit: BatchE2e, o: { name: string; input: string; workers: number; timeoutMs: number }): Promise<MeasuredJob> {
  const client = kit.cluster.client;
  const first = await scrapeApiserver(client);
  const started = Date.now();
  await kit.createJob(o.name, o.input, o.workers);
  const pods = await waitFor(
    `${o.workers} worker pods bound by SITS`,
    async () => {
      const ps = await kit.workerPods(o.name);
      return ps.length === o.workers && ps.every((p) => p.spec?.nodeName !== undefined) ? ps : undefined;
    },
    60_000,
    250,
  );
  const job = await kit.finished(o.name, o.timeoutMs);
  const elapsedMs = Date.now() - started;
  await waitFor('worker pods gone', async () => ((await kit.workerPods(o.name)).length === 0 ? true : undefined), 60_000, 250);
  const after = await scrapeApiserver(client);
  return {
    pods,
    job,
    elapsedMs,
    writes: jobWrites(after) - jobWrites(first),
    etcdJobWrites: etcdWrites(after, 'batchinferencejobs') - etcdWrites(first, 'batchinferencejobs'),
    etcdPodWrites: etcdWrites(after, 'pods') - etcdWrites(first, 'pods'),
    requests: breakdownDelta(requestBreakdown(first), requestBreakdown(after)),
  };
}

export interface NaiveWrites {
  /** Status PATCHes measured on the apiserver (one per record when nothing failed). */
  readonly statusWrites: number;
  /** etcd writes on the job object they caused. */
  readonly etcdJobWrites: number;
  /** statusWrites + the pod creates and deletes the job needs under any design. */
  readonly writes: number;
}

/**
 * The design 004 §2.5 compares with, on the same apiserver: a controller that writes status on every record. Its
 * status writes are made for real (one `status.progress.recordsProcessed` PATCH per record, in sequence, on a job
 * object of its own that the SITS controller has judged and leaves alone); its pod writes are the same creates and
 * deletes as SITS's (`pods`), without SITS's assignment and report annotations.
 */
export async function naiveWrites(kit: BatchE2e, o: { name: string; records: number; pods: number }): Promise<NaiveWrites> {
  const client = kit.cluster.client;
  await client.post(kit.jobsPath, {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'BatchInferenceJob',
    metadata: { name: o.name },
    // Not on a claim: the SITS controller marks it Failed once and leaves it alone.
    spec: {
      runtime: 'llamacpp',
      model: { uri: 'pvc://models/tiny.gguf' },
      input: { uri: 's3://none/in.jsonl' },
      output: { uri: 's3://none/out' },
      workers: 1,
      gpusPerWorker: 0,
    },
  });
  await waitFor("the naive writer's job judged", async () => ((await kit.job(o.name)).status?.phase === 'Failed' ? true : undefined), 30_000, 100);
  const before = await scrapeApiserver(client);
  // One at a time, as one controller writes: PATCHes in parallel on one object would conflict in etcd (every
  // conflict a retried transaction, counted by etcd_requests_total) and inflate the naive count.
  for (let i = 0; i < o.records; i++) await client.mergePatch(`${kit.jobsPath}/${o.name}/status`, { status: { progress: { recordsProcessed: i + 1 } } });
  const after = await scrapeApiserver(client);
  const statusWrites = jobWrites(after) - jobWrites(before);
  return { statusWrites, etcdJobWrites: etcdWrites(after, 'batchinferencejobs') - etcdWrites(before, 'batchinferencejobs'), writes: statusWrites + 2 * o.pods };
}

export interface ControlPlaneMeasurement {
  readonly writesPerJob: { readonly sits: number; readonly naive: number };
  readonly details: {
    readonly records: number;
    readonly workers: number;
    readonly jobPhase: string;
    readonly jobSeconds: number;
    readonly reductionPct: number;
    readonly etcdJobWritesPerJob: { readonly sits: number; readonly naive: number };
    readonly etcdPodWrites: number;
    readonly naiveStatusWrites: number;
    readonly sitsRequests: Record<string, number>;
    readonly apiserver: string;
  };
}

/**
 * Starts the batch dev cluster (kube-apiserver + etcd, the PV binder, the SITS scheduler and controllers, the fake
 * kubelet running each worker's engine stand-in and `sits batch-worker`), runs one job of `records` records on
 * `workers` workers and the naive writer over the same record count, and stops it all.
 */
export async function measureControlPlane(o: { records: number; workers: number; log?: (l: string) => void }): Promise<ControlPlaneMeasurement> {
  // The binaries first (what startControlPlane would do anyway): absent, it fails here saying so, before anything
  // else is made.
  await ensureK8sBinaries({ log: o.log ?? (() => undefined) });
  const kit = await startBatchE2e({ ns: 'bench-batch' });
  try {
    await kit.startControllers();
    kit.writeInput('bench.jsonl', o.records, 'r');
    o.log?.(`control plane: a job of ${o.records} records on ${o.workers} workers`);
    const m = await runMeasuredJob(kit, { name: 'bench', input: 'bench.jsonl', workers: o.workers, timeoutMs: 900_000 });
    if (m.job.status?.phase !== 'Succeeded')
      throw new Error(`the measured job ended ${m.job.status?.phase ?? 'without a phase'}: ${JSON.stringify(m.job.status?.conditions ?? [])}`);
    o.log?.(`control plane: the job took ${(m.elapsedMs / 1000).toFixed(1)} s, ${m.writes} writes; now the per-record writer`);
    const n = await naiveWrites(kit, { name: 'naive-writer', records: o.records, pods: m.pods.length });
    const version = await kit.cluster.client.get<{ gitVersion?: string }>('/version');
    return {
      writesPerJob: { sits: m.writes, naive: n.writes },
      details: {
        records: o.records,
        workers: o.workers,
        jobPhase: m.job.status.phase,
        jobSeconds: Math.round(m.elapsedMs / 100) / 10,
        reductionPct: Math.round(1000 * (1 - m.writes / n.writes)) / 10,
        etcdJobWritesPerJob: { sits: m.etcdJobWrites, naive: n.etcdJobWrites },
        etcdPodWrites: m.etcdPodWrites,
        naiveStatusWrites: n.statusWrites,
        sitsRequests: m.requests,
        apiserver: version.gitVersion ?? 'unknown',
      },
    };
  } finally {
    await kit.stop();
  }
}
