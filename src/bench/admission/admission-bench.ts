/**
 * Admission decisions per second (issue 6 §2): one queue cycle over a synthetic cluster and a backlog
 * larger than the cluster, spread over three weighted queues with nominal quotas in one cohort. Every job is
 * decided — admitted (quota and a whole-gang placement on the same state) or left waiting with its reason —
 * and the cycle is timed as a whole. Building cluster and backlog is not timed.
 */
import { simAppOrThrow } from '../../app/sim-app.ts';
import { runCycle } from '../../core/actions/queue-cycle.ts';
import type { QueuedJob } from '../../core/actions/jobs.ts';
import { seededRng } from '../../core/ports.ts';
import { makeQueue, type QueueSpec } from '../../core/queue/model.ts';
import { benchNodes, benchWorkload } from '../throughput/workload.ts';

export interface AdmissionOptions {
  readonly nodes: number;
  readonly gpusPerNode: number;
  /** Backlog as a multiple of the pods that fill ~90 % of the cluster. */
  readonly backlog: number;
  readonly seed: number;
  readonly now: () => number;
  /** Explain every waiting job (as the live scheduler does for events); default true. */
  readonly explain?: boolean;
}

export interface AdmissionResult {
  readonly nodes: number;
  readonly jobs: number;
  readonly admitted: number;
  readonly waiting: Readonly<Record<string, number>>;
  readonly decisionsPerSecond: number;
  readonly cycleMs: number;
}

const QUEUES = [
  ['gold', 4],
  ['silver', 2],
  ['bronze', 1],
] as const;

export function runAdmissionBench(o: AdmissionOptions): AdmissionResult {
  const nodes = benchNodes(o.nodes, o.gpusPerNode);
  // The workload generator fills ~90 % of the cluster; a backlog of k is k such workloads, renamed.
  const units = [];
  for (let k = 0; k < Math.ceil(o.backlog); k++) {
    const w = benchWorkload('mixed', o.nodes, o.gpusPerNode, o.nodes * o.gpusPerNode * 2, o.seed + k);
    const take = k + 1 <= o.backlog ? w.units.length : Math.round(w.units.length * (o.backlog - k));
    for (const u of w.units.slice(0, take)) {
      if (u.kind === 'pod') units.push({ kind: 'pod' as const, pod: { ...u.pod, id: `b${k}-${u.pod.id}` } });
      else units.push({ kind: 'gang' as const, gang: { ...u.gang, name: `b${k}-${u.gang.name}`, members: u.gang.members.map((m) => ({ ...m, id: `b${k}-${m.id}`, gang: `b${k}-${u.gang.name}` })) } });
    }
  }
  const capacity = o.nodes * o.gpusPerNode * 1000;
  const queues = new Map<string, QueueSpec>(QUEUES.map(([q, wgt]) => [q, makeQueue(q, { weight: wgt, cohort: 'all', nominal: { gpuMilli: Math.floor((capacity * wgt) / 7), cpuMilli: Infinity, memoryMiB: Infinity } })]));
  const jobs: QueuedJob[] = units.map((u, i) => {
    const queue = (QUEUES[i % 3] as (typeof QUEUES)[number])[0];
    const gang = u.kind === 'gang' ? { ...u.gang, queue } : { name: u.pod.id, minMember: 1, members: [u.pod], topology: {}, priority: 0, queue };
    return { id: gang.name, queue, priority: 0, arrivalMs: i, gang, estRuntimeMs: 3_600_000 };
  });
  const { scheduler } = simAppOrThrow({ nodes, profile: 'sits', typicalShapes: [], rng: seededRng(o.seed) });
  const t0 = o.now();
  const r = runCycle({ nowMs: 0, scheduler, queues, pending: jobs, running: new Map(), options: { explain: o.explain ?? true } });
  const ms = o.now() - t0;
  const waiting: Record<string, number> = {};
  for (const x of r.waiting.values()) waiting[x.reason] = (waiting[x.reason] ?? 0) + 1;
  return { nodes: o.nodes, jobs: jobs.length, admitted: r.started.length, waiting, decisionsPerSecond: Math.round((jobs.length / ms) * 1000), cycleMs: Math.round(ms) };
}
