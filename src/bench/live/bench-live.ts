/**
 * `sits bench live` (issue 32): the simulator's fair-share promise replayed live. One time-compressed Philly window
 * (workload.ts) through the live scheduler on a dev cluster and through the simulator, under the same Queue
 * objects, on the same nodes, measured the same way (replay.ts): per-queue shares over the steady part, share over
 * time, utilisation, waits, preemptions and oscillation, side by side. `peer` is left for the Kueue peer
 * (kueue-peer.ts runKueuePeer on `workload`), filled by whoever runs it.
 */
import { readFileSync } from 'node:fs';
import { NODE_SHAPES } from '../../core/model/presets.ts';
import { parsePhilly } from '../tenants/philly-window.ts';
import { runLiveReplay, type LiveReplayResult } from './live-replay.ts';
import { replayMetrics, replayQueueObjects, sharesBetween, sharesOverTime, steadyFrom, type ReplayMetrics, type ReplayTrace } from './replay.ts';
import { simulateReplay } from './sim-replay.ts';
import { replayWorkload, type ReplayWorkload } from './workload.ts';
import { runKueuePeer, summariseShares, type KueuePeerResult, type ShareSample } from './kueue-peer.ts';

export interface BenchLiveOptions {
  readonly trace: string;
  readonly nodes: number;
  readonly windowHours: number;
  readonly compress: number;
  readonly maxDurationHours: number;
  readonly maxJobs?: number;
  readonly seed: number;
  /** Victim protection after a (re)start, in trace seconds (divided by `compress` for the Queue objects). */
  readonly cooldownTraceSec: number;
  readonly log?: (m: string) => void;
  readonly onProgress?: (t: number, horizon: number, submitted: number, usedGpus: number) => void;
  /** Also run the same workload on Kueue v0.17 with fair sharing and kube-scheduler (kueue-peer.ts), on a fresh cluster. */
  readonly peer?: boolean;
  readonly onPeerProgress?: (t: number, horizon: number) => void;
}

/** Kueue on the same workload, measured as SITS's live side is: shares of the GPUs in use over the same steady part. */
export interface PeerReport {
  readonly name: 'kueue';
  readonly version: string;
  readonly fairSharing: KueuePeerResult['fairSharing'];
  readonly quotas: string;
  readonly sharePct: Record<string, number>;
  readonly utilizationPct: number;
  readonly preemptions: number;
  readonly preemptionsByQueue: Readonly<Record<string, number>>;
  readonly waitSec: KueuePeerResult['waits']['running'];
  readonly neverAdmitted: number;
  readonly podsScheduledByKubeScheduler: number;
  /**
   * First second from which every queue stays within 3 pp of the GPUs share it holds over the last quarter of the
   * run (kueue-peer.ts summariseShares), for Kueue and, with the same function on its samples, for SITS live.
   */
  readonly timeToSteadySec: { readonly kueue: number | null; readonly sitsLive: number | null };
  /** SITS live minus Kueue, per queue, in pp. */
  readonly sharePpSitsMinusKueue: Record<string, number>;
}

export interface SideReport extends ReplayMetrics {
  /** Each queue's share of the GPUs in use, every `everySec` seconds of the window. */
  readonly shareOverTime: { readonly everySec: number; readonly byQueue: Record<string, number[]> };
}

export interface BenchLiveReport {
  readonly workload: ReplayWorkload & { readonly gpus: number; readonly cooldownSeconds: number; readonly steadyFromSec: number };
  readonly live: SideReport & { readonly wall: LiveReplayResult['wall']; readonly restarts: number };
  readonly simulated: SideReport;
  readonly diff: {
    readonly sharePp: Record<string, number>;
    /**
     * Live minus the simulator run on the jobs as they reached the live scheduler (`live.arrivedSec`: their pods
     * created, not their submission), each side's share of the GPU-seconds in use over the steady part, in pp.
     * Under load the TrainingJob controller and the API server delay and reorder arrivals by seconds, which at high
     * compression is most of a job; this difference leaves that out and keeps what the scheduler did with them.
     */
    readonly sharePpAsArrived: Record<string, number>;
    readonly preemptionsPct: number | null;
    readonly utilizationPp: number;
    readonly swings: Record<string, number>;
  };
  /** The Kueue peer's metrics on the same workload (kueue-peer.ts); null when it was not run (`peer: false`). */
  readonly peer: null | PeerReport;
  readonly goals: { readonly sharesWithin3pp: boolean; readonly preemptionsWithin10Pct: boolean; readonly noQueueOscillates: boolean; readonly convergesAtLeastAsFastAsKueue?: boolean; readonly noMorePreemptionsThanKueue?: boolean };
}

export const SHAPE = 'dgx-h100';
const NAMESPACE = 'replay';
const SHARE_EVERY_SEC = 5;
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

function side(w: ReplayWorkload, t: ReplayTrace, gpus: number, steady: number): SideReport {
  const all = sharesOverTime(t, w.queues.map((q) => q.name));
  const byQueue = Object.fromEntries(Object.entries(all).map(([q, xs]) => [q, xs.filter((_, i) => i % SHARE_EVERY_SEC === 0)]));
  return { ...replayMetrics(w, t, gpus, steady), shareOverTime: { everySec: SHARE_EVERY_SEC, byQueue } };
}

/** A queue oscillates live when its share swings more often than the same workload makes it swing in the simulator (2 swings of slack). */
export function oscillates(live: number, simulated: number): boolean {
  return live > simulated + Math.max(2, Math.ceil(simulated * 0.25));
}

export async function benchLive(o: BenchLiveOptions): Promise<BenchLiveReport> {
  const shape = NODE_SHAPES[SHAPE];
  if (shape === undefined) throw new Error(`unknown shape ${SHAPE}`);
  const perNode = shape.gpus.length;
  const gpus = o.nodes * perNode;
  const trace = parsePhilly(readFileSync(o.trace, 'utf8'), o.trace);
  const w = replayWorkload(trace, { nodes: o.nodes, shape: SHAPE, windowHours: o.windowHours, compress: o.compress, maxDurationHours: o.maxDurationHours, seed: o.seed, ...(o.maxJobs === undefined ? {} : { maxJobs: o.maxJobs }) });
  const cooldownSeconds = Math.round(o.cooldownTraceSec / o.compress);
  const queues = replayQueueObjects(w, gpus, cooldownSeconds);
  const simTrace = simulateReplay(w, { nodes: o.nodes, shape: SHAPE, queues, seed: o.seed, namespace: NAMESPACE });
  const liveTrace = await runLiveReplay(w, { nodes: o.nodes, shape: SHAPE, queues, namespace: NAMESPACE, ...(o.log === undefined ? {} : { log: o.log }), ...(o.onProgress === undefined ? {} : { onProgress: (t: number, n: number, g: number) => o.onProgress?.(t, w.horizonSec, n, g) }) });
  const steady = steadyFrom(simTrace, gpus, w.horizonSec);
  const simulated = side(w, simTrace, gpus, steady);
  const live = { ...side(w, liveTrace, gpus, steady), wall: liveTrace.wall, restarts: liveTrace.restarts };
  const names = w.queues.map((q) => q.name);
  const sharePp = Object.fromEntries(names.map((q) => [q, round((live.queues[q]?.sharePct ?? 0) - (simulated.queues[q]?.sharePct ?? 0))]));
  // The simulator once more, on the jobs as the live scheduler got them (their pods' arrival, not their submission).
  const asArrived = simulateReplay({ ...w, jobs: w.jobs.map((j) => ({ ...j, submitAtSec: liveTrace.arrivedSec.get(j.id) ?? Number.POSITIVE_INFINITY })) }, { nodes: o.nodes, shape: SHAPE, queues, seed: o.seed, namespace: NAMESPACE });
  const liveShares = sharesBetween(liveTrace.changes, names, steady, w.horizonSec);
  const asArrivedShares = sharesBetween(asArrived.changes, names, steady, w.horizonSec);
  const sharePpAsArrived = Object.fromEntries(names.map((q) => [q, round((liveShares[q] ?? 0) - (asArrivedShares[q] ?? 0))]));
  const swings = Object.fromEntries(names.map((q) => [q, (live.queues[q]?.oscillation.swings ?? 0) - (simulated.queues[q]?.oscillation.swings ?? 0)]));
  const preemptionsPct = simulated.preemptions === 0 ? (live.preemptions === 0 ? 0 : null) : round((100 * (live.preemptions - simulated.preemptions)) / simulated.preemptions);
  const peer = o.peer === true ? peerReport(await runKueuePeer({ jobs: w.jobs, queues: w.queues, nodes: o.nodes, shape: SHAPE }, { durationSec: w.horizonSec, ...(o.log === undefined ? {} : { log: o.log }), ...(o.onPeerProgress === undefined ? {} : { onSample: (x: ShareSample) => o.onPeerProgress?.(x.t, w.horizonSec) }) }), w, liveTrace.samples, live, steady, gpus) : null;
  return {
    workload: { ...w, gpus, cooldownSeconds, steadyFromSec: steady },
    live,
    simulated,
    diff: { sharePp, sharePpAsArrived, preemptionsPct, utilizationPp: round(live.utilizationPct - simulated.utilizationPct), swings },
    peer,
    goals: {
      ...(peer === null
        ? {}
        : {
            convergesAtLeastAsFastAsKueue: peer.timeToSteadySec.sitsLive !== null && (peer.timeToSteadySec.kueue === null || peer.timeToSteadySec.sitsLive <= peer.timeToSteadySec.kueue),
            noMorePreemptionsThanKueue: live.preemptions <= peer.preemptions,
          }),
      sharesWithin3pp: Object.values(sharePp).every((d) => Math.abs(d) <= 3),
      // No preemption on either side meets it; some live and none simulated (no percentage) does not.
      preemptionsWithin10Pct: preemptionsPct !== null && Math.abs(preemptionsPct) <= 10,
      noQueueOscillates: names.every((q) => !oscillates(live.queues[q]?.oscillation.swings ?? 0, simulated.queues[q]?.oscillation.swings ?? 0)),
    },
  };
}

export function peerReport(k: KueuePeerResult, w: ReplayWorkload, liveSamples: ReplayTrace['samples'], live: SideReport, steady: number, gpus: number): PeerReport {
  const names = w.queues.map((q) => q.name);
  const part = k.samples.filter((x) => x.t >= steady);
  const used = part.reduce((a, x) => a + names.reduce((b, q) => b + (x.running[q] ?? 0), 0), 0);
  const sharePct = Object.fromEntries(names.map((q) => [q, used === 0 ? 0 : round((100 * part.reduce((a, x) => a + (x.running[q] ?? 0), 0)) / used)]));
  const sits = summariseShares(liveSamples.map((x) => ({ t: x.t, admitted: x.gpus, running: x.gpus })), w.queues, gpus);
  return {
    name: 'kueue',
    version: k.kueueVersion,
    fairSharing: k.fairSharing,
    quotas: k.quotas,
    sharePct,
    utilizationPct: round(100 * k.utilisation.running),
    preemptions: k.preemptions.total,
    preemptionsByQueue: k.preemptions.byQueue,
    waitSec: k.waits.running,
    neverAdmitted: k.neverAdmitted,
    podsScheduledByKubeScheduler: k.podsScheduledByKubeScheduler,
    timeToSteadySec: { kueue: k.shares.timeToSteadySec, sitsLive: sits.timeToSteadySec },
    sharePpSitsMinusKueue: Object.fromEntries(names.map((q) => [q, round((live.queues[q]?.sharePct ?? 0) - (sharePct[q] ?? 0))])),
  };
}
