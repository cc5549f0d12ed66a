/**
 * A clairvoyant autoscaler for the serving bench: it knows the whole trace, so it shows how few GPU-hours any
 * policy could spend and still meet the SLO (issue 12 asks for ≤ 0.6× static; this says whether the trace allows
 * it at all). Per bin of `binSec`, the *need* is the fewest replicas under which every request arriving in the bin
 * meets the TTFT SLO when the service runs that many replicas throughout (measured by replaying static n); the
 * oracle starts replicas one start-up ahead of a need and releases them when no need is in sight. Two numbers:
 * the fluid estimate (Σ need × bin, no start-up paid: below any real policy) and the oracle replayed in the
 * simulator (start-up and draining paid: a point a policy with perfect foresight reaches).
 * With `missBudget` > 0 the needs are lowered greedily where that loses the fewest requests per GPU-second saved,
 * until the budget of missed requests is spent (what an oracle allowed the SLO's 1 % would do).
 */
import type { Autoscaler, ServiceObservation } from '../../serving/autoscale/policy.ts';
import type { TraceRequest } from '../../serving/sim/trace.ts';

/** Per bin of the trace: how many requests arrive in it, and how many of them miss the SLO in the replay with n replicas. */
export interface BinTable {
  readonly binSec: number;
  readonly requests: readonly number[];
  /** misses[b][n − 1]. */
  readonly misses: readonly (readonly number[])[];
}

export function binMisses(trace: readonly TraceRequest[], ttftByReplicas: readonly Float64Array[], sloSec: number, binSec: number): BinTable {
  const span = trace.at(-1)?.arrivalSec ?? 0;
  const maxN = ttftByReplicas.length;
  const bins = Math.floor(span / binSec) + 1;
  const misses: number[][] = Array.from({ length: bins }, () => new Array<number>(maxN).fill(0));
  const requests = new Array<number>(bins).fill(0);
  trace.forEach((r, i) => {
    const b = Math.floor(r.arrivalSec / binSec);
    requests[b] = (requests[b] as number) + 1;
    const row = misses[b] as number[];
    for (let n = 1; n <= maxN; n++) if (((ttftByReplicas[n - 1] as Float64Array)[i] as number) > sloSec) row[n - 1] = (row[n - 1] as number) + 1;
  });
  return { binSec, requests, misses };
}

/**
 * needs[b]: the fewest replicas (1..maxN) whose replay serves every request of bin b within the SLO; then lowered
 * one replica at a time where that loses the fewest requests (bins from `fromSec` on) until `missBudget` is spent.
 */
export function binNeeds(table: BinTable, opts: { readonly fromSec: number; readonly missBudget: number }): number[] {
  const { misses, binSec } = table;
  const needs = misses.map((row) => {
    const n = row.indexOf(0);
    return n < 0 ? row.length : n + 1;
  });
  let budget = opts.missBudget;
  for (;;) {
    let best = -1;
    let bestCost = Number.POSITIVE_INFINITY;
    for (let b = 0; b < needs.length; b++) {
      const n = needs[b] as number;
      if (n <= 1 || b * binSec < opts.fromSec) continue;
      const row = misses[b] as readonly number[];
      const cost = (row[n - 2] as number) - (row[n - 1] as number);
      if (cost <= budget && cost < bestCost) {
        bestCost = cost;
        best = b;
      }
    }
    if (best < 0) break;
    budget -= bestCost;
    needs[best] = (needs[best] as number) - 1;
  }
  return needs;
}

/**
 * The best any *reactive* peak-hold policy can do (the family SITS, KEDA's stabilisation and KPA's stable window
 * belong to): it knows exactly what every past bin needed, holds the highest need of the last `holdSec`, and what
 * it asks for serves one start-up later (`lagSec`); each replica added pays `startupSec` of GPU time before it
 * serves. Scored as the replays with that many replicas scored the bins (a fluid estimate, no draining).
 */
export function peakHold(
  table: BinTable,
  needs: readonly number[],
  o: { readonly holdSec: number; readonly lagSec: number; readonly startupSec: number; readonly fromSec: number; readonly toSec: number },
): { readonly withinPct: number; readonly gpuHours: number } {
  const { misses, binSec } = table;
  const lag = Math.ceil(o.lagSec / binSec);
  const hold = Math.round(o.holdSec / binSec);
  let missed = 0;
  let requests = 0;
  let gpuSec = 0;
  let prev = 0;
  for (let b = 0; b < needs.length; b++) {
    let h = 1;
    for (let k = Math.max(0, b - lag - hold); k <= b - lag; k++) h = Math.max(h, needs[k] as number);
    h = Math.min(h, (misses[b] as readonly number[]).length);
    const at = b * binSec;
    if (at >= o.fromSec && at < o.toSec) {
      const row = misses[b] as readonly number[];
      missed += row[h - 1] as number;
      requests += table.requests[b] as number;
      gpuSec += h * binSec + o.startupSec * Math.max(0, h - prev);
    }
    prev = h;
  }
  return { withinPct: requests === 0 ? 100 : 100 - (100 * missed) / requests, gpuHours: gpuSec / 3600 };
}

/** GPU-hours of holding `needs` exactly over [fromSec, toSec) with no start-up: the fluid estimate. */
export function fluidGpuHours(needs: readonly number[], binSec: number, fromSec: number, toSec: number, gpusPerReplica: number): number {
  let s = 0;
  needs.forEach((n, b) => {
    const a = Math.max(b * binSec, fromSec);
    const e = Math.min((b + 1) * binSec, toSec);
    if (e > a) s += (e - a) * n * gpusPerReplica;
  });
  return s / 3600;
}

/** Wants the highest need of the bins from now to one start-up ahead (replicas it asks for now serve then). */
export class OraclePolicy implements Autoscaler {
  readonly name = 'oracle';
  constructor(
    private readonly needs: readonly number[],
    private readonly binSec: number,
    private readonly leadSec: number,
  ) {}
  decide(obs: ServiceObservation): number {
    const from = Math.max(0, Math.floor(obs.nowSec / this.binSec));
    const to = Math.min(this.needs.length - 1, Math.floor((obs.nowSec + this.leadSec) / this.binSec));
    let want = 1;
    for (let b = from; b <= to; b++) want = Math.max(want, this.needs[b] as number);
    return want;
  }
}
