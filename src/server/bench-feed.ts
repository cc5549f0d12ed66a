/**
 * The input of `sits bench dashboard`: a synthetic cluster of N nodes × 8 GPUs and a seeded workload replayed by
 * the simulator (SimFeed), the same for the same N and seed. Three nodes in four are DGX H100 (one NVSwitch
 * island), one in four L4×8 (eight PCIe islands: the widest node row of the heatmap); 16 nodes a rack, 8 racks a
 * block, 40 racks a zone. Jobs are single GPUs, fractions, whole nodes and gangs of 2–8 nodes, arriving at 95 % of
 * the GPUs' worth of demand; after the 3 h prefill about two thirds of the GPUs are allocated and few jobs wait.
 */
import type { NodeSpec } from '../core/model/node.ts';
import { makePod, type GangSpec } from '../core/model/pod.ts';
import { NODE_SHAPES } from '../core/model/presets.ts';
import { seededRng, type Rng } from '../core/ports.ts';
import { makeQueue, type QueueSpec } from '../core/queue/model.ts';
import { SimFeed, type FeedJob } from './sim-feed.ts';

const NODES_PER_RACK = 16;
const RACKS_PER_BLOCK = 8;
const RACKS_PER_ZONE = 40;

export function syntheticNodes(n: number): NodeSpec[] {
  return Array.from({ length: n }, (_, i) => {
    const shapeId = i % 4 === 3 ? 'l4x8' : 'dgx-h100';
    const s = NODE_SHAPES[shapeId];
    if (s === undefined) throw new Error(`no preset ${shapeId}`);
    const rack = Math.floor(i / NODES_PER_RACK);
    return {
      name: `node-${String(i).padStart(5, '0')}`,
      cpuMilli: s.cpuMilli,
      memoryMiB: s.memoryMiB,
      maxPods: s.maxPods,
      gpus: s.gpus,
      topology: s.topology,
      location: {
        zone: `zone-${Math.floor(rack / RACKS_PER_ZONE)}`,
        block: `block-${Math.floor(rack / RACKS_PER_BLOCK)}`,
        rack: `rack-${String(rack).padStart(4, '0')}`,
      },
      labels: {},
      taints: [],
      unschedulable: false,
      shape: shapeId,
    };
  });
}

const HOUR = 3_600_000;

function pick<T>(rng: Rng, items: readonly (readonly [T, number])[]): T {
  let x = rng.next() * items.reduce((s, [, w]) => s + w, 0);
  for (const [v, w] of items) {
    x -= w;
    if (x < 0) return v;
  }
  return (items[items.length - 1] as readonly [T, number])[0];
}

/** Jobs over `hours`, with arrivals sized so that GPU demand is about `load` of the cluster's GPUs. */
export function syntheticJobs(nodes: number, seed: number, hours = 6, load = 0.95): FeedJob[] {
  const rng = seededRng(seed);
  const kinds = [
    ['one', 40, 1, 0.5],
    ['frac', 25, 0.5, 0.5],
    ['node', 20, 8, 1.5],
    ['gang', 15, 32, 2],
  ] as const;
  // Mean GPU-hours per arrival, to size the arrival rate to the load.
  const total = kinds.reduce((s, k) => s + k[1], 0);
  const meanGpuHours = kinds.reduce((s, k) => s + (k[1] / total) * k[2] * k[3], 0);
  const perHour = (nodes * 8 * load) / meanGpuHours;
  const jobs: FeedJob[] = [];
  let t = 0;
  for (let n = 0; ; n++) {
    t += -Math.log(1 - rng.next()) * (HOUR / perHour);
    if (t >= hours * HOUR) break;
    const kind = pick(
      rng,
      kinds.map((k) => [k[0], k[1]] as const),
    );
    const meanH = kinds.find((k) => k[0] === kind)?.[3] ?? 1;
    const durationMs = Math.max(60_000, Math.round(-Math.log(1 - rng.next()) * meanH * HOUR));
    const id = `${kind}-${n}`;
    const queue = ['research', 'prod', 'batch'][n % 3] as string;
    let gang: GangSpec;
    if (kind === 'gang') {
      const replicas = pick(rng, [
        [2, 4],
        [4, 3],
        [8, 1],
      ] as const);
      const members = Array.from({ length: replicas }, (_, k) =>
        makePod(`${id}-${k}`, { cpuMilli: 96_000, memoryMiB: 512 * 1024, gpuCount: 8 }, { gang: id, queue, gpuModels: ['H100-SXM'] }),
      );
      gang = { name: id, minMember: replicas, members, topology: { preferred: 'rack' }, priority: 0, queue };
    } else {
      const pod =
        kind === 'frac'
          ? makePod(id, { cpuMilli: 2000, memoryMiB: 8192, gpuCount: 1, gpuMilli: rng.next() < 0.5 ? 250 : 500 }, { queue })
          : makePod(
              id,
              { cpuMilli: kind === 'node' ? 96_000 : 8000, memoryMiB: kind === 'node' ? 512 * 1024 : 32_768, gpuCount: kind === 'node' ? 8 : 1 },
              { queue },
            );
      gang = { name: id, minMember: 1, members: [pod], topology: {}, priority: 0, queue };
    }
    jobs.push({ id, arrivalMs: Math.round(t), durationMs, gang });
  }
  return jobs;
}

export function syntheticQueues(nodes: number): Map<string, QueueSpec> {
  const gpus = nodes * 8;
  const split: readonly [string, number][] = [
    ['research', 0.4],
    ['prod', 0.4],
    ['batch', 0.2],
  ];
  return new Map(
    split.map(([name, share]) => [
      name,
      makeQueue(name, { cohort: 'all', weight: share * 10, nominal: { gpuMilli: Math.round(gpus * share) * 1000, cpuMilli: Infinity, memoryMiB: Infinity } }),
    ]),
  );
}

/** The feed, run until `prefillHours` of virtual time so the page opens on a busy cluster. */
export function syntheticFeed(nodes: number, seed: number, prefillHours = 3): SimFeed {
  const feed = new SimFeed({ nodes: syntheticNodes(nodes), jobs: syntheticJobs(nodes, seed), queues: syntheticQueues(nodes), seed });
  feed.advanceTo(prefillHours * HOUR);
  return feed;
}
