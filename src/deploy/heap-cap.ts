/**
 * The V8 old-space cap of SITS's Node processes, tied to the container's memory limit (ADR 0190). Node 24's
 * `--max-old-space-size-percentage` takes the share of the cgroup's limit when there is one (of the host's memory
 * otherwise), so the chart's `resources.limits.memory` is the one number to change. Without a cap V8 sizes the heap
 * from the host's memory and lets garbage grow far past the live data (4 GiB limit, growth factor 4 on a large host).
 */
import { quantityToNano } from '../api/quantity.ts';

/** Share of the container's memory limit the old space may take (the rest: young space, code, buffers, native). */
export const HEAP_LIMIT_PERCENT = 50;

/** The Node option the image and the chart start SITS with. */
export const HEAP_NODE_OPTION = `--max-old-space-size-percentage=${HEAP_LIMIT_PERCENT}`;

/**
 * The old-space cap in MiB that `--max-old-space-size-percentage` gives under a memory limit: Node (node_options.cc)
 * takes the limit in whole MiB, times the percentage, rounded down.
 */
export function maxOldSpaceMiB(memoryLimit: string, percent: number = HEAP_LIMIT_PERCENT): number {
  const nano = quantityToNano(memoryLimit);
  if (nano === undefined || nano <= 0n) throw new Error(`not a memory limit: ${JSON.stringify(memoryLimit)}`);
  const mib = Number(nano / (1_000_000_000n * 1_048_576n));
  return Math.floor((mib * percent) / 100);
}
