/**
 * Quota: may a queue take `demand` more, given what every queue of its cohort uses now?
 * Rule (Kueue semantics): usage + demand ≤ nominal, or, with a cohort, the excess above nominal is
 * ≤ borrowingLimit and ≤ what the cohort can lend: Σ over other cohort queues of
 * min(lendingLimit, max(0, nominal − max(usage, guaranteed))), less what those queues already borrow (a
 * GPU lent to one queue is not lent again to another). Per GPU model the same rule applies to that model's GPUs.
 */
import { add, fits, max0, min, RESOURCE_KEYS, sub, type Resources, type QueueSpec } from './model.ts';

export interface QueueUsage {
  readonly total: Resources;
  /** GPU milli used per model. */
  readonly byModel: Readonly<Record<string, number>>;
}

/**
 * `cohortShort`: the only obstacle is that the cohort has nothing left to lend (its idle quota is borrowed by
 * other queues) — reclaim can fix that; nominal, borrowing-limit and per-model refusals it cannot.
 */
export type QuotaVerdict = { readonly ok: true; readonly borrowed: Resources } | { readonly ok: false; readonly reason: string; readonly cohortShort?: true };

const fmt = (r: Resources, k: (typeof RESOURCE_KEYS)[number]): string =>
  k === 'gpuMilli' ? `${r[k] / 1000} GPU` : k === 'cpuMilli' ? `${r[k] / 1000} CPU` : `${Math.round(r[k] / 1024)} GiB`;

export function checkQuota(
  queue: QueueSpec,
  queues: ReadonlyMap<string, QueueSpec>,
  usage: ReadonlyMap<string, QueueUsage>,
  demand: Resources,
  gpuModel?: string,
): QuotaVerdict {
  const own = usage.get(queue.name)?.total ?? { gpuMilli: 0, cpuMilli: 0, memoryMiB: 0 };
  const after = add(own, demand);
  const over = max0(sub(after, queue.nominal));
  const lendable = cohortLendable(queue, queues, usage);
  let short: string | undefined;
  for (const k of RESOURCE_KEYS) {
    if (over[k] === 0) continue;
    if (queue.cohort === undefined) return { ok: false, reason: `queue ${queue.name} quota: ${fmt(after, k)} would exceed nominal ${fmt(queue.nominal, k)}` };
    if (over[k] > queue.borrowingLimit[k])
      return { ok: false, reason: `queue ${queue.name} quota: borrowing ${fmt(over, k)} would exceed its borrowing limit ${fmt(queue.borrowingLimit, k)}` };
    if (over[k] > lendable[k]) short ??= `queue ${queue.name} quota: needs to borrow ${fmt(over, k)}, cohort ${queue.cohort} can lend ${fmt(lendable, k)}`;
  }
  if (short !== undefined) return { ok: false, reason: short, cohortShort: true };
  if (gpuModel !== undefined && demand.gpuMilli > 0) {
    const mq = queue.models[gpuModel];
    if (mq !== undefined) {
      const used = (usage.get(queue.name)?.byModel[gpuModel] ?? 0) + demand.gpuMilli;
      const excess = used - mq.nominalGpuMilli;
      if (excess > 0) {
        let lend = 0;
        if (queue.cohort !== undefined) {
          for (const q of queues.values()) {
            if (q.name === queue.name || q.cohort !== queue.cohort) continue;
            const m = q.models[gpuModel];
            if (m === undefined) continue;
            const usedThere = usage.get(q.name)?.byModel[gpuModel] ?? 0;
            lend +=
              Math.min(m.lendingLimitGpuMilli, Math.max(0, m.nominalGpuMilli - Math.max(usedThere, m.guaranteedGpuMilli))) -
              Math.max(0, usedThere - m.nominalGpuMilli);
          }
        }
        if (queue.cohort === undefined || excess > mq.borrowingLimitGpuMilli || excess > lend)
          return { ok: false, reason: `queue ${queue.name} quota: ${used / 1000} ${gpuModel} GPUs would exceed nominal ${mq.nominalGpuMilli / 1000}` };
      }
    }
  }
  return { ok: true, borrowed: over };
}

/** What the other queues of the cohort can lend right now (their unused, unguaranteed nominal less what they borrow themselves). */
export function cohortLendable(queue: QueueSpec, queues: ReadonlyMap<string, QueueSpec>, usage: ReadonlyMap<string, QueueUsage>): Resources {
  let total: Resources = { gpuMilli: 0, cpuMilli: 0, memoryMiB: 0 };
  if (queue.cohort === undefined) return total;
  for (const q of queues.values()) {
    if (q.name === queue.name || q.cohort !== queue.cohort) continue;
    const used = usage.get(q.name)?.total ?? { gpuMilli: 0, cpuMilli: 0, memoryMiB: 0 };
    // Unused nominal, never the guaranteed part, at most the lending limit.
    const unused = max0(sub(q.nominal, maxOf(used, q.guaranteed)));
    total = sub(add(total, min(unused, q.lendingLimit)), borrowedBy(q, used));
  }
  return total;
}

function maxOf(a: Resources, b: Resources): Resources {
  return { gpuMilli: Math.max(a.gpuMilli, b.gpuMilli), cpuMilli: Math.max(a.cpuMilli, b.cpuMilli), memoryMiB: Math.max(a.memoryMiB, b.memoryMiB) };
}

/** The part of a queue's usage above its nominal quota (borrowed from the cohort): reclaimed first. */
export function borrowedBy(queue: QueueSpec, used: Resources): Resources {
  return max0(sub(used, queue.nominal));
}

export { fits };
