/**
 * Weighted-fair GPU time between tenants (seed 004 §4.1): WFQ virtual time over time slices. Tenants are the
 * Queue model's (core/queue/model.ts: one notion of tenant and weight; tiers gold/silver/bronze are 4/2/1).
 * A tenant's turn is one slice of at least quantum × weight ms (its minimum guaranteed slice: 120/60/30 ms at the
 * default 30 ms quantum), ended at the first batch boundary after it; its virtual time then advances by the GPU
 * time it actually used divided by its weight. The next slice goes to the backlogged tenant with the smallest
 * virtual time, so over many turns GPU time divides in proportion to the weights, overruns included. A tenant that
 * becomes backlogged starts at the current virtual time: idleness is not banked as credit.
 */
import type { QueueSpec } from '../../core/queue/model.ts';

export interface WfqTenant {
  readonly name: string;
  readonly weight: number;
  /** The slice a turn lasts at least (the minimum guaranteed slice). */
  readonly sliceMs: number;
}

/** Tenants from the queues: the queue's weight (its tier's), slices of quantum × weight. */
export function tenantsFromQueues(queues: readonly QueueSpec[], quantumMs: number): WfqTenant[] {
  return queues.map((q) => ({ name: q.name, weight: q.weight, sliceMs: quantumMs * q.weight }));
}

export class WfqScheduler {
  private readonly vtime = new Map<string, number>();
  private readonly usedMs = new Map<string, number>();
  private virtualNow = 0;
  private readonly byName = new Map<string, WfqTenant>();
  private readonly list: WfqTenant[] = [];

  constructor(tenants: readonly WfqTenant[]) {
    for (const t of tenants) this.add(t);
  }

  get tenants(): readonly WfqTenant[] {
    return this.list;
  }

  /** A tenant that appears later (a queue's first job in the live controller) starts at the current virtual time. */
  add(t: WfqTenant): void {
    if (!(t.weight > 0)) throw new Error(`tenant ${t.name}: weight must be positive, got ${t.weight}`);
    if (this.byName.has(t.name)) return;
    this.byName.set(t.name, t);
    this.list.push(t);
    this.vtime.set(t.name, this.virtualNow);
    this.usedMs.set(t.name, 0);
  }

  /**
   * The system's virtual time follows the busy tenants (the smallest virtual time among `active`), so a tenant that
   * arrives or comes back later starts there, not at the time of the last pick (the live share picks rarely).
   */
  advance(active: ReadonlySet<string>): void {
    let min = Infinity;
    for (const n of active) min = Math.min(min, this.vtime.get(n) ?? Infinity);
    if (Number.isFinite(min)) this.virtualNow = Math.max(this.virtualNow, min);
  }

  /** The tenant's virtual time as `pick` would see it now (an idle tenant's is raised to the current one). */
  virtualTime(name: string): number {
    return Math.max(this.vtime.get(name) ?? 0, this.virtualNow);
  }

  /** The tenant whose slice starts now among the backlogged ones; undefined when none is. */
  pick(backlogged: ReadonlySet<string>): WfqTenant | undefined {
    let best: WfqTenant | undefined;
    let bestV = Infinity;
    for (const t of this.tenants) {
      if (!backlogged.has(t.name)) continue;
      // Came back from idle: start at the current virtual time, not where it left off.
      const v = Math.max(this.vtime.get(t.name) ?? 0, this.virtualNow);
      this.vtime.set(t.name, v);
      if (v < bestV || (v === bestV && best !== undefined && t.weight > best.weight)) {
        best = t;
        bestV = v;
      }
    }
    if (best !== undefined) this.virtualNow = bestV;
    return best;
  }

  /** The tenant used `ms` of GPU time in its slice. */
  charge(name: string, ms: number): void {
    const t = this.byName.get(name);
    if (t === undefined) throw new Error(`unknown tenant ${name}`);
    this.vtime.set(name, (this.vtime.get(name) ?? 0) + ms / t.weight);
    this.usedMs.set(name, (this.usedMs.get(name) ?? 0) + ms);
  }

  /** GPU time each tenant has had, ms. */
  used(): ReadonlyMap<string, number> {
    return this.usedMs;
  }
}

export interface ShareReport {
  readonly sharePct: number;
  readonly entitledPct: number;
}

/**
 * Runs always-backlogged tenants on one GPU for `horizonMs`: each turn is a slice of batches whose durations
 * come from `batchMs(tenant, turn, batchIndex)` (the engine model, in the bench). Returns each tenant's share
 * of GPU time and its entitled share (weight over the sum of weights).
 */
export function simulateShares(
  tenants: readonly WfqTenant[],
  horizonMs: number,
  batchMs: (tenant: string, turn: number, i: number) => number,
): Record<string, ShareReport> {
  const s = new WfqScheduler(tenants);
  const all = new Set(tenants.map((t) => t.name));
  let now = 0;
  for (let turn = 0; now < horizonMs; turn++) {
    const t = s.pick(all) as WfqTenant;
    let used = 0;
    for (let i = 0; used < t.sliceMs; i++) used += Math.max(1e-3, batchMs(t.name, turn, i));
    s.charge(t.name, used);
    now += used;
  }
  const sumW = tenants.reduce((a, t) => a + t.weight, 0);
  const totalUsed = [...s.used().values()].reduce((a, x) => a + x, 0);
  const out: Record<string, ShareReport> = {};
  for (const t of tenants) out[t.name] = { sharePct: (100 * (s.used().get(t.name) ?? 0)) / totalUsed, entitledPct: (100 * t.weight) / sumW };
  return out;
}
