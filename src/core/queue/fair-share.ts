/**
 * Fair share across queues (ADR 0005): weighted dominant resource fairness for ordering, and weighted
 * water-filling for the share each queue deserves when reclaim decides who gives GPUs back.
 *
 * - Dominant share of a queue = max over resources of usage / cluster capacity; weighted share = dominant
 *   share / weight. The queue with the lowest weighted share goes next (Volcano's drf, KAI's fair share).
 * - Deserved share: capacity is poured into queues in proportion to their weights, each capped at its
 *   demand (usage + pending) and at its quota ceiling (nominal + borrowing limit); what a capped queue does
 *   not take flows to the others. A queue's guaranteed minimum is served first, then its nominal quota (the
 *   quota it owns; by weight when the nominal quotas add up to more than the cluster), then the rest.
 */
import { RESOURCE_KEYS, type Resources, type QueueSpec } from './model.ts';

export function dominantShare(used: Resources, capacity: Resources): number {
  let s = 0;
  for (const k of RESOURCE_KEYS) if (capacity[k] > 0) s = Math.max(s, used[k] / capacity[k]);
  return s;
}

export function weightedShare(queue: QueueSpec, used: Resources, capacity: Resources): number {
  return dominantShare(used, capacity) / Math.max(queue.weight, 1e-9);
}

export interface ShareInput {
  readonly queue: QueueSpec;
  /** GPU milli the queue uses now plus what its pending jobs ask. */
  readonly demandGpuMilli: number;
}

/**
 * Deserved GPU milli per queue by weighted water-filling over `capacityGpuMilli`.
 * Exact for the GPU dimension (the one that binds on GPU clusters); the result sums to at most capacity.
 */
export function deservedGpu(inputs: readonly ShareInput[], capacityGpuMilli: number): Map<string, number> {
  const out = new Map<string, number>();
  const cap = (i: ShareInput): number =>
    Math.min(i.demandGpuMilli, i.queue.nominal.gpuMilli + (i.queue.cohort === undefined ? 0 : i.queue.borrowingLimit.gpuMilli));
  let left = capacityGpuMilli;
  // Guarantees first.
  for (const i of inputs) {
    const g = Math.min(cap(i), i.queue.guaranteed.gpuMilli, left);
    out.set(i.queue.name, g);
    left -= g;
  }
  // Then the nominal quotas, then the rest. With nominal quotas in proportion to the weights (or none) this
  // is the same as one weighted water-filling up to the ceilings.
  left = waterFill(inputs, (i) => Math.min(cap(i), i.queue.nominal.gpuMilli), left, out);
  waterFill(inputs, cap, left, out);
  return out;
}

/** Pours `left` into the inputs by weight, each up to `cap`, on top of `out`; returns what is left over. */
function waterFill(inputs: readonly ShareInput[], cap: (i: ShareInput) => number, left: number, out: Map<string, number>): number {
  let active = inputs.filter((i) => (out.get(i.queue.name) ?? 0) < cap(i));
  while (left > 1e-6 && active.length > 0) {
    const w = active.reduce((s, i) => s + i.queue.weight, 0);
    let used = 0;
    const next: ShareInput[] = [];
    for (const i of active) {
      const have = out.get(i.queue.name) ?? 0;
      const give = Math.min((left * i.queue.weight) / w, cap(i) - have);
      out.set(i.queue.name, have + give);
      used += give;
      if (have + give < cap(i) - 1e-6) next.push(i);
    }
    left -= used;
    if (next.length === active.length) break; // nobody capped: the split is final
    active = next;
  }
  return left;
}
