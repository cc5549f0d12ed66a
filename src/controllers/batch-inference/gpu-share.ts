/**
 * Weighted-fair GPU time between the BatchInferenceJobs of different tenants, live (issue 13 Deliver 5; ADR 0140),
 * on the WFQ of wfq.ts that the simulator uses. The controller holds `budgetGpus` GPUs for batch workers across
 * all jobs; each worker pod is a slot of gpusPerWorker GPUs. Every reconcile charges each tenant the GPU time its
 * slots held since the last charge (virtual time += GPU-ms / weight), so:
 *  - a free slot goes to the backlogged tenant (a job wanting more workers than it holds) with the smallest
 *    virtual time (WfqScheduler.pick);
 *  - when none is free and a tenant waits, a slot of another tenant whose slice is over (quantum × weight: the
 *    minimum guaranteed slice) and whose virtual time is ahead of the waiter's is asked to yield: its worker gets
 *    no new shard, finishes the one it runs (a shard boundary, nothing is lost) and is deleted; its GPU time ends
 *    when the pod is gone (release).
 * Over many slices each tenant's GPU time follows its weight. A tenant is a Queue (its name and weight, the Queue
 * model's one notion of tenant); a job in no queue is the tenant of its tier. Pure: time comes in as arguments.
 */
import { WfqScheduler } from './wfq.ts';

export interface ShareTenant {
  readonly name: string;
  readonly weight: number;
}

export interface GpuShareConfig {
  /** GPUs batch workers may hold at once, over all jobs. */
  readonly budgetGpus: number;
  /** A tenant's slice is quantumMs × its weight. */
  readonly quantumMs: number;
}

interface Slot {
  readonly sinceMs: number;
  chargedMs: number;
  yielding: boolean;
}

interface Demand {
  readonly tenant: string;
  wanted: number;
  gpus: number;
  readonly slots: Slot[];
  readonly order: number;
}

export class GpuShare {
  private readonly wfq = new WfqScheduler([]);
  private readonly jobs = new Map<string, Demand>();
  private seq = 0;

  constructor(readonly cfg: GpuShareConfig) {
    if (!(cfg.budgetGpus >= 1)) throw new Error(`GPU share: budgetGpus must be at least 1, got ${cfg.budgetGpus}`);
    if (!(cfg.quantumMs > 0)) throw new Error(`GPU share: quantumMs must be positive, got ${cfg.quantumMs}`);
  }

  /**
   * A running job's demand this reconcile: `wanted` workers of `gpusPerWorker` GPUs. Returns how many workers it may
   * run now (indices 0..n-1); a worker at index ≥ n is to finish its shard and go (then `release`).
   */
  workers(job: string, tenant: ShareTenant, wanted: number, gpusPerWorker: number, nowMs: number): number {
    this.charge(nowMs);
    this.wfq.advance(new Set([...this.jobs.values()].map((d) => d.tenant)));
    this.wfq.add({ name: tenant.name, weight: tenant.weight, sliceMs: this.cfg.quantumMs * tenant.weight });
    let d = this.jobs.get(job);
    if (d === undefined) {
      d = { tenant: tenant.name, wanted, gpus: Math.max(1, gpusPerWorker), slots: [], order: this.seq++ };
      this.jobs.set(job, d);
    }
    d.wanted = wanted;
    d.gpus = Math.max(1, gpusPerWorker);
    this.rebalance(nowMs);
    return this.allowed(d);
  }

  /** The job's worker at `index` is gone: its slot (a yielding one, or any past `wanted`) is freed. */
  release(job: string, index: number, nowMs: number): void {
    const d = this.jobs.get(job);
    if (d === undefined || index >= d.slots.length) return;
    if (index < this.allowed(d) && index < d.wanted) return;
    this.charge(nowMs);
    d.slots.splice(index, 1);
  }

  /** The job finished or went: its GPU time so far is charged and its slots are free. */
  done(job: string, nowMs: number): void {
    if (!this.jobs.has(job)) return;
    this.charge(nowMs);
    this.jobs.delete(job);
  }

  /** GPU-ms each tenant has been charged (for status and tests). */
  used(nowMs: number): ReadonlyMap<string, number> {
    this.charge(nowMs);
    return this.wfq.used();
  }

  private allowed(d: Demand): number {
    const i = d.slots.findIndex((s) => s.yielding);
    return Math.min(d.wanted, i < 0 ? d.slots.length : i);
  }

  private charge(nowMs: number): void {
    for (const d of this.jobs.values())
      for (const s of d.slots) {
        if (nowMs > s.chargedMs) this.wfq.charge(d.tenant, (nowMs - s.chargedMs) * d.gpus);
        s.chargedMs = Math.max(s.chargedMs, nowMs);
      }
  }

  private rebalance(nowMs: number): void {
    this.charge(nowMs);
    const held = (): number => [...this.jobs.values()].reduce((a, d) => a + d.slots.length * d.gpus, 0);
    // A job's surplus slots (it wants fewer workers now) yield at once.
    for (const d of this.jobs.values()) for (let i = d.wanted; i < d.slots.length; i++) (d.slots[i] as Slot).yielding = true;
    const waiting = (fits: boolean): Map<string, Demand> => {
      const free = this.cfg.budgetGpus - held();
      const out = new Map<string, Demand>();
      for (const d of [...this.jobs.values()].sort((a, b) => a.order - b.order)) {
        if (d.slots.length >= d.wanted || out.has(d.tenant) || (fits && d.gpus > free)) continue;
        out.set(d.tenant, d);
      }
      return out;
    };
    // Free GPUs to the backlogged tenant with the smallest virtual time, one slot at a time.
    for (;;) {
      const w = waiting(true);
      const t = this.wfq.pick(new Set(w.keys()));
      if (t === undefined) break;
      (w.get(t.name) as Demand).slots.push({ sinceMs: nowMs, chargedMs: nowMs, yielding: false });
    }
    // No GPU free for a waiting tenant: a slot whose slice is over, of a tenant ahead in virtual time, yields.
    const w = [...waiting(false).values()].sort((a, b) => this.wfq.virtualTime(a.tenant) - this.wfq.virtualTime(b.tenant))[0];
    if (w === undefined) return;
    const yieldingGpus = [...this.jobs.values()].reduce((a, d) => a + d.slots.filter((s) => s.yielding).length * d.gpus, 0);
    if (this.cfg.budgetGpus - held() + yieldingGpus >= w.gpus) return;
    const wv = this.wfq.virtualTime(w.tenant);
    let victim: { d: Demand; slot: Slot; v: number } | undefined;
    for (const d of this.jobs.values()) {
      if (d.tenant === w.tenant) continue;
      const n = this.allowed(d);
      const slot = d.slots[n - 1];
      const t = this.wfq.tenants.find((x) => x.name === d.tenant);
      if (slot === undefined || t === undefined || nowMs - slot.sinceMs < t.sliceMs) continue;
      const v = this.wfq.virtualTime(d.tenant);
      if (v > wv && (victim === undefined || v > victim.v)) victim = { d, slot, v };
    }
    if (victim !== undefined) victim.slot.yielding = true;
  }
}
