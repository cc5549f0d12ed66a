// What ADR 0200's hold costs a queue cycle: each gang held for its layout to free runs a reservation plan (a
// bisection over the running jobs' expected ends, a trial placement per step) every cycle.
//
//   npx tsx scripts/held-gangs-cost.ts [--nodes 1000,5000,10000] [--held 0,1,10,50] [--runs 3] [--slow links|model] [--out FILE]
//
// Half the nodes are NVSwitch A100 nodes, each running an 8-GPU job expected to end within 10 h; the other half are
// PCIe-only A100 nodes, free. The pending gangs are 8 × 1 GPU of a 2.7B GPT: the PCIe nodes give them ~3× their
// best step, for the links, so each one holds for an NVSwitch node (ADR 0200). With `--slow model` the free nodes
// have T4s instead: the gangs hold for the GPU model (ADR 0196), with no reservation plan, the cost before ADR 0200.
// One cycle is timed per run (the median is reported); building the cluster is not timed.
import { writeFileSync } from 'node:fs';
import { simAppOrThrow } from '../src/app/sim-app.ts';
import type { QueuedJob, RunningJob } from '../src/core/actions/jobs.ts';
import { runCycle } from '../src/core/actions/queue-cycle.ts';
import { ddpJob } from '../src/core/estimate/step-time.ts';
import type { NodeSpec } from '../src/core/model/node.ts';
import { makePod } from '../src/core/model/pod.ts';
import { makeGpus } from '../src/core/model/gpu.ts';
import { NODE_SHAPES } from '../src/core/model/presets.ts';
import { seededRng } from '../src/core/ports.ts';
import { resolveProfile } from '../src/core/plugins/registry.ts';
import type { QueueSpec } from '../src/core/queue/model.ts';
import { benchNodes } from '../src/bench/throughput/workload.ts';

const args = process.argv.slice(2);
const flag = (name: string, dflt: string): string => {
  const i = args.indexOf(name);
  return i < 0 ? dflt : (args[i + 1] ?? dflt);
};
const list = (s: string, name: string): number[] => {
  const xs = s.split(',').map(Number);
  if (xs.some((x) => !Number.isInteger(x) || x < 0)) {
    console.error(`held-gangs-cost: ${name} ${s}: give whole numbers separated by commas`);
    process.exit(2);
  }
  return xs;
};
const sizes = list(flag('--nodes', '1000,5000,10000'), '--nodes');
const helds = list(flag('--held', '0,1,10,50'), '--held');
const runs = list(flag('--runs', '3'), '--runs')[0] ?? 3;
const out = args.includes('--out') ? flag('--out', '') : undefined;
const slow = flag('--slow', 'links');
if (slow !== 'links' && slow !== 'model') {
  console.error(`held-gangs-cost: --slow ${slow}: give links or model`);
  process.exit(2);
}

const HOUR = 3_600_000;
const NOW = 10 * 60_000;
const pcieTopology = (NODE_SHAPES.l4x8 as NonNullable<(typeof NODE_SHAPES)['l4x8']>).topology;
const NO_QUEUES: ReadonlyMap<string, QueueSpec> = new Map();
const gpt = ddpJob('gpt-3b', 2048, 4);

function cycleMs(n: number, held: number): { ms: number; waiting: number; started: number } {
  const base = benchNodes(n, 8);
  // Odd nodes lose their NVSwitch: PCIe pairs, A100s still (their slowness is the links, not the GPU model).
  const slowGpus = slow === 'model' ? makeGpus(8, 'T4') : undefined;
  const nodes: NodeSpec[] = base.map((x, i) => (i % 2 === 1 ? { ...x, topology: pcieTopology, ...(slowGpus === undefined ? {} : { gpus: slowGpus }) } : x));
  const p = resolveProfile('sits', { typicalShapes: [] });
  if (!p.ok) throw new Error('held-gangs-cost: profile sits');
  const profile = { ...p.value, stepTimeArgs: { modelOf: () => gpt } };
  const { state, scheduler } = simAppOrThrow({ nodes, profile, rng: seededRng(1) });
  const running = new Map<string, RunningJob>();
  nodes.forEach((x, i) => {
    if (i % 2 === 1) return;
    const id = `run-${i}`;
    state.allocate({ podId: id, node: x.name, gpus: [0, 1, 2, 3, 4, 5, 6, 7], gpuMilli: 1000, cpuMilli: 0, memoryMiB: 0, priority: 0, queue: 'q' });
    const resources = { gpuMilli: 8000, cpuMilli: 0, memoryMiB: 0 };
    running.set(id, { id, queue: 'q', priority: 0, startMs: 0, estEndMs: HOUR + ((i * 7919) % (9 * HOUR)), podIds: [id], resources, preemptible: true });
  });
  const pending: QueuedJob[] = Array.from({ length: held }, (_, g) => {
    const name = `held-${g}`;
    const members = Array.from({ length: 8 }, (_, k) => makePod(`${name}-${k}`, { gpuCount: 1, cpuMilli: 1000, memoryMiB: 1024 }, { gang: name, queue: 'q' }));
    return {
      id: name,
      queue: 'q',
      priority: 0,
      arrivalMs: 0,
      seq: g,
      gang: { name, minMember: 8, members, topology: {}, priority: 0, queue: 'q' },
      estRuntimeMs: HOUR,
    };
  });
  const t0 = performance.now();
  const r = runCycle({ nowMs: NOW, scheduler, queues: NO_QUEUES, pending, running, options: { explain: false, preemption: false } });
  const ms = performance.now() - t0;
  const waiting = [...r.waiting.values()].filter((w) => w.reason === 'better-placement').length;
  return { ms, waiting, started: r.started.length };
}

const results: { nodes: number; held: number; cycleMs: number; runsMs: number[]; heldForLayout: number; started: number }[] = [];
for (const n of sizes) {
  for (const held of helds) {
    const xs: number[] = [];
    let last = { ms: 0, waiting: 0, started: 0 };
    for (let k = 0; k < runs; k++) {
      last = cycleMs(n, held);
      xs.push(Math.round(last.ms * 10) / 10);
    }
    const sorted = [...xs].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    results.push({ nodes: n, held, cycleMs: median, runsMs: xs, heldForLayout: last.waiting, started: last.started });
    console.log(
      `${String(n).padStart(6)} nodes, ${String(held).padStart(3)} gangs: cycle ${median} ms (runs ${xs.join(', ')}), ${last.waiting} held for a layout, ${last.started} started`,
    );
  }
}
if (out !== undefined) writeFileSync(out, `${JSON.stringify({ method: 'scripts/held-gangs-cost.ts', slow, runs, results }, null, 2)}\n`);
