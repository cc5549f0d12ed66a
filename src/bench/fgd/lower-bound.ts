/**
 * A lower bound on the unallocated GPU % that any policy (online or offline, even one that may leave pods
 * out) can reach at 100 % arrived for one seed's arrival order (ADR 0107). At the last event the metric
 * averages over (bucket 100), the pods that have arrived are fixed; no placement can allocate more GPU
 * than the optimum of this linear relaxation of packing them:
 *
 *   max Σ_s,k n_s m_s x_sk   over x_sk ≥ 0 (pods of shape s on node class k, only where one node of k fits s)
 *   Σ_k x_sk ≤ count_s                                           (each pod at most once)
 *   Σ_s cpu_s x_sk ≤ N_k cpu_k,  Σ_s mem_s x_sk ≤ N_k mem_k        (CPU, memory of the class)
 *   Σ_s n_s f(m_s / 1000) x_sk ≤ N_k G_k   for every f in F        (GPU packing, per device)
 *
 * where a node class is the nodes of one spec (model, GPUs, CPU, memory) and F is a family of dual
 * feasible functions (f: [0,1] → [0,1] with Σ f(x_i) ≤ 1 whenever Σ x_i ≤ 1): the identity (GPU milli),
 * Fekete–Schepers f_k (k = 1..6) and the Martello–Toth-style u_ε for every ε just above 1 − m of a shape
 * with m > 500 milli (such a pod counts as a whole GPU against pods of at least ε). Any real placement
 * satisfies every row, so the optimum bounds the GPU allocated at that event, and (allocation only grows,
 * the metric rounds monotonically) every event of the bucket. The per-seed bound is then taken through the
 * same rounding and median as the policies' values, which preserves ≤.
 */
import * as highsModule from 'highs';
import type { Highs, InitOptions } from 'highs';
import { pyRound, pyRound2 } from './py-round.ts';
import type { FgdTrace } from './run.ts';
import { fgdWorkload } from './workload.ts';

// The package's types are CommonJS-flavoured; at run time the ESM build's default export is the loader.
const highsLoader = (highsModule as unknown as { default: (o?: InitOptions) => Promise<Highs> }).default;
let solver: Promise<Highs> | undefined;
const highs = (): Promise<Highs> => (solver ??= highsLoader());

/** Index of the last pod whose event the bucket-100 value averages over (fallback 99..101 as the meter); -1 if none. */
export function lastEventOfBucket(demands: readonly number[], capacityMilli: number, bucket = 100): number {
  const gpus = capacityMilli / 1000;
  let arrived = 0;
  let exact = -1;
  let near = -1;
  for (let i = 0; i < demands.length; i++) {
    arrived += demands[i] as number;
    const a = pyRound(arrived / gpus / 10);
    if (a === bucket) exact = i;
    if (a >= bucket - 1 && a <= bucket + 1) near = i;
    if (a > bucket + 1) break;
  }
  return exact >= 0 ? exact : near;
}

interface Shape {
  readonly cpu: number;
  mem: number;
  readonly n: number;
  readonly m: number;
  readonly models: readonly string[];
  count: number;
}

interface NodeClass {
  readonly model: string;
  readonly gpus: number;
  readonly cpu: number;
  readonly mem: number;
  count: number;
}

/** The dual feasible functions of the GPU rows, on per-device milli 1..1000 (exact rationals in float). */
export function packingFunctions(millis: readonly number[]): ((m: number) => number)[] {
  const fs: ((m: number) => number)[] = [(m) => m / 1000];
  for (let k = 1; k <= 6; k++) fs.push((m) => (((k + 1) * m) % 1000 === 0 ? m / 1000 : Math.floor(((k + 1) * m) / 1000) / k));
  const eps = new Set<number>();
  for (const m of millis) if (m > 500 && m < 1000) eps.add(1000 - m + 0.5);
  for (const e of [...eps].sort((a, b) => a - b)) fs.push((m) => (m > 1000 - e ? 1 : m >= e ? m / 1000 : 0));
  return fs;
}

/** The LP (CPLEX LP text) for the GPU pods among `pods` on `nodes`; undefined when no pod can be placed. */
export function boundLp(trace: Pick<FgdTrace, 'nodes'>, pods: readonly { cpu: number; mem: number; n: number; m: number; models: readonly string[] }[]): string | undefined {
  const shapes = new Map<string, Shape>();
  for (const p of pods) {
    if (p.n === 0 || p.m === 0) continue;
    // Pods that differ only in memory share a column with the least memory among them: a relaxation (fewer,
    // weaker rows) that keeps the LP small.
    const key = `${p.cpu}|${p.n}|${p.m}|${p.models.join('|')}`;
    const s = shapes.get(key);
    if (s === undefined) shapes.set(key, { ...p, count: 1 });
    else {
      s.count++;
      s.mem = Math.min(s.mem, p.mem);
    }
  }
  const classes = new Map<string, NodeClass>();
  for (const n of trace.nodes) {
    if (n.gpuCount === 0) continue;
    const key = `${n.model}|${n.gpuCount}|${n.cpuMilli}|${n.memoryMiB}`;
    const c = classes.get(key);
    if (c === undefined) classes.set(key, { model: n.model, gpus: n.gpuCount, cpu: n.cpuMilli, mem: n.memoryMiB, count: 1 });
    else c.count++;
  }
  const S = [...shapes.values()];
  const K = [...classes.values()];
  const fs = packingFunctions(S.map((s) => s.m));
  const obj: string[] = [];
  const rows: string[] = [];
  const perClass = K.map(() => [] as { v: string; s: Shape }[]);
  S.forEach((s, i) => {
    const vars: string[] = [];
    K.forEach((k, j) => {
      if (s.n > k.gpus || s.cpu > k.cpu || s.mem > k.mem) return;
      if (s.models.length > 0 && !s.models.includes(k.model)) return;
      const v = `x${i}_${j}`;
      vars.push(v);
      perClass[j]?.push({ v, s });
      obj.push(`${s.n * s.m} ${v}`);
    });
    if (vars.length > 0) rows.push(`c${i}: ${vars.join(' + ')} <= ${s.count}`);
  });
  if (obj.length === 0) return undefined;
  K.forEach((k, j) => {
    const xs = perClass[j] ?? [];
    if (xs.length === 0) return;
    rows.push(`cpu${j}: ${xs.map((x) => `${x.s.cpu} ${x.v}`).join(' + ')} <= ${k.count * k.cpu}`);
    rows.push(`mem${j}: ${xs.map((x) => `${x.s.mem} ${x.v}`).join(' + ')} <= ${k.count * k.mem}`);
    fs.forEach((f, q) => {
      const terms = xs.map((x) => ({ c: x.s.n * f(x.s.m), v: x.v })).filter((t) => t.c > 0);
      if (terms.length > 0) rows.push(`g${j}_${q}: ${terms.map((t) => `${t.c} ${t.v}`).join(' + ')} <= ${k.count * k.gpus}`);
    });
  });
  return `Maximize\n obj: ${obj.join(' + ')}\nSubject To\n${rows.map((r) => ` ${r}`).join('\n')}\nEnd\n`;
}

/** Optimum of the LP (GPU milli that can be allocated at most), or 0 when no pod fits anywhere. */
export async function solveBoundLp(nodes: FgdTrace['nodes'], pods: Parameters<typeof boundLp>[1]): Promise<number> {
  const lp = boundLp({ nodes }, pods);
  if (lp === undefined) return 0;
  const sol = (await highs()).solve(lp, { presolve: 'on' });
  if (sol.Status !== 'Optimal') throw new Error(`lower bound LP: HiGHS status ${sol.Status}`);
  return sol.ObjectiveValue;
}

/** The bound for one seed: unallocated GPU % at 100 % arrived, or null when the run never gets there. */
export async function fgdLowerBound(trace: FgdTrace, seed: number, tune = 1.3): Promise<number | null> {
  const wl = fgdWorkload(trace.nodes, trace.pods, seed, tune);
  const last = lastEventOfBucket(
    wl.pods.map((p) => p.request.gpuCount * p.request.gpuMilli),
    trace.capacityMilli,
  );
  if (last < 0) return null;
  const prefix = wl.pods.slice(0, last + 1).map((p) => ({ cpu: p.request.cpuMilli, mem: p.request.memoryMiB, n: p.request.gpuCount, m: p.request.gpuMilli, models: p.gpuModels }));
  // Solver tolerances are ~1e-7 relative: round the optimum up before the metric's own rounding.
  const used = (await solveBoundLp(trace.nodes, prefix)) * (1 + 1e-7) + 1e-3;
  const gpus = trace.capacityMilli / 1000;
  return Math.max(0, 100 - pyRound2(Math.min(used, trace.capacityMilli) / gpus / 10));
}
