/**
 * Trace variants of the Alibaba openb default pod list, built the way the FGD paper (ATC '23, §6) built its
 * `cpuXXX` / `gpushareXX` / `gpuspecXX` / `multigpuXX` lists: pods re-sampled from the default list to move
 * one share, everything else kept. Deterministic by seed, so a variant is named by (kind, share, seed) and
 * never stored. What each share means (the given traces, measured, match these definitions):
 *
 * - cpu XXX: the CPU-only pods (drawn uniformly with replacement from the default's CPU-only pods) request
 *   XXX/1000 × 1.3 × the cluster's CPU; GPU pods unchanged. (cpu050 and cpu100 measure 47 and 101; the
 *   default itself is ≈ 138.)
 * - gpushare XX: XX % of the GPU demand comes from GPU-sharing pods: the GPU pods are re-drawn, k from
 *   the default's sharing pods and the rest from its whole-GPU pods, k chosen for that share; CPU-only
 *   pods unchanged. (gpushare20 / 60 measure 20.0 / 60.0; default 28.5.)
 * - gpuspec XX: XX % of the GPU pods (a uniform subset) get a GPU-model constraint, drawn from the
 *   constrained pods of the same class (sharing, whole 1-GPU, n-GPU) in a source list that has them
 *   (the given gpuspec20); nothing else changes. (gpuspec10 / 20 constrain 10.4 / 20.4 %.)
 * - multigpu XX: multi-GPU pods drawn from the default's are appended until they carry XX % of the GPU
 *   demand. (multigpu20 / 30 measure 20.4 / 30.2; default 7.3.)
 */
import { seededRng, type Rng } from '../../core/ports.ts';
import type { TraceNode, TracePod } from '../../sim/trace/types.ts';

export const VARIANT_KINDS = ['cpu', 'gpushare', 'gpuspec', 'multigpu'] as const;
export type VariantKind = (typeof VARIANT_KINDS)[number];

export interface VariantSpec {
  readonly kind: VariantKind;
  /** cpu: per mille of 1.3 × cluster CPU; others: percent. */
  readonly share: number;
  readonly seed: number;
}

export class VariantError extends Error {
  override readonly name = 'VariantError';
}

/** `gpuspec28-s2`, `cpu175-s1`: the name a variant's file and results carry. */
export function variantName(v: VariantSpec): string {
  const share = v.kind === 'cpu' ? String(v.share).padStart(3, '0') : String(v.share).padStart(2, '0');
  return `${v.kind}${share}-s${v.seed}`;
}

/** Parses `gpuspec28-s2` back; undefined when it is not a variant name. */
export function parseVariantName(name: string): VariantSpec | undefined {
  const m = /^(cpu|gpushare|gpuspec|multigpu)(\d+)-s(\d+)$/.exec(name);
  if (m === null) return undefined;
  return { kind: m[1] as VariantKind, share: Number(m[2]), seed: Number(m[3]) };
}

const demand = (p: TracePod): number => p.gpuCount * p.gpuMilli;
const isSharing = (p: TracePod): boolean => p.gpuCount === 1 && p.gpuMilli > 0 && p.gpuMilli < 1000;
const pick = <T>(xs: readonly T[], rng: Rng): T => xs[rng.int(xs.length)] as T;
const specClass = (p: TracePod): string => (isSharing(p) ? 'share' : `n${p.gpuCount}`);

function renamed(pods: readonly TracePod[]): TracePod[] {
  const width = Math.max(4, String(pods.length - 1).length);
  return pods.map((p, i) => ({ ...p, name: `openb-pod-${String(i).padStart(width, '0')}`, line: i + 2 }));
}

/**
 * The variant's pod list, in file order, named `openb-pod-NNNN`. `specSource` (pods with model
 * constraints) is needed for gpuspec only.
 */
export function generateVariant(base: readonly TracePod[], nodes: readonly TraceNode[], v: VariantSpec, specSource: readonly TracePod[] = []): TracePod[] {
  const rng = seededRng(v.seed * 7919 + VARIANT_KINDS.indexOf(v.kind) * 131 + v.share);
  const cpuOnly = base.filter((p) => p.gpuCount === 0);
  const gpuPods = base.filter((p) => p.gpuCount > 0);
  if (gpuPods.length === 0) throw new VariantError('the base pod list has no GPU pods');
  switch (v.kind) {
    case 'cpu': {
      if (cpuOnly.length === 0) throw new VariantError('the base pod list has no CPU-only pods');
      const clusterCpu = nodes.reduce((s, n) => s + n.cpuMilli, 0);
      const target = (v.share / 1000) * 1.3 * clusterCpu;
      const drawn: TracePod[] = [];
      let cpu = 0;
      while (cpu < target) {
        const p = pick(cpuOnly, rng);
        drawn.push(p);
        cpu += p.cpuMilli;
      }
      // CPU-only pods first, as in the given cpuXXX lists (the order is shuffled by the protocol anyway).
      return renamed([...drawn, ...gpuPods]);
    }
    case 'gpushare': {
      const share = gpuPods.filter(isSharing);
      const whole = gpuPods.filter((p) => !isSharing(p));
      if (share.length === 0 || whole.length === 0) throw new VariantError('gpushare needs both sharing and whole-GPU pods in the base list');
      const s = v.share / 100;
      const mean = (xs: readonly TracePod[]): number => xs.reduce((a, p) => a + demand(p), 0) / xs.length;
      const ms = mean(share);
      const mw = mean(whole);
      // Expected sharing demand share q·ms / (q·ms + (1 − q)·mw) = s, solved for the pod fraction q.
      const q = (s * mw) / (ms * (1 - s) + s * mw);
      const k = Math.round(q * gpuPods.length);
      const drawn: TracePod[] = [];
      for (let i = 0; i < gpuPods.length; i++) drawn.push(i < k ? pick(share, rng) : pick(whole, rng));
      return renamed([...cpuOnly, ...drawn]);
    }
    case 'gpuspec': {
      const bySpec = new Map<string, string[][]>();
      for (const p of specSource) {
        if (p.gpuCount === 0 || p.gpuModels.length === 0) continue;
        const c = specClass(p);
        const l = bySpec.get(c) ?? [];
        l.push([...p.gpuModels]);
        bySpec.set(c, l);
      }
      if (bySpec.size === 0) throw new VariantError('gpuspec needs a source pod list with GPU-model constraints (gpu_spec)');
      const idx = gpuPods.map((_, i) => i);
      // A uniform subset of the GPU pods: the first k of a partial Fisher–Yates shuffle.
      const k = Math.round((v.share / 100) * gpuPods.length);
      for (let i = 0; i < k; i++) {
        const j = i + rng.int(idx.length - i);
        const t = idx[i] as number;
        idx[i] = idx[j] as number;
        idx[j] = t;
      }
      const out = gpuPods.map((p) => ({ ...p, gpuModels: [] as readonly string[] }));
      for (let i = 0; i < k; i++) {
        const at = idx[i] as number;
        const p = out[at] as TracePod;
        // Same class when the source has one; an n-GPU pod without one falls back to the largest class below it.
        let specs = bySpec.get(specClass(p));
        for (let n = p.gpuCount - 1; specs === undefined && n >= 1; n--) specs = bySpec.get(`n${n}`);
        specs ??= bySpec.get('n1') ?? bySpec.get('share');
        if (specs === undefined) continue;
        out[at] = { ...p, gpuModels: pick(specs, rng) };
      }
      return renamed([...base.filter((p) => p.gpuCount === 0), ...out]);
    }
    case 'multigpu': {
      const multi = gpuPods.filter((p) => p.gpuCount > 1);
      if (multi.length === 0) throw new VariantError('the base pod list has no multi-GPU pods');
      const s = v.share / 100;
      let total = gpuPods.reduce((a, p) => a + demand(p), 0);
      let m = multi.reduce((a, p) => a + demand(p), 0);
      const added: TracePod[] = [];
      while (m < s * total) {
        const p = pick(multi, rng);
        added.push(p);
        m += demand(p);
        total += demand(p);
      }
      return renamed([...base, ...added]);
    }
  }
}

/** The variant's shares as measured, for checking a generated list against its name. */
export function measureShares(pods: readonly TracePod[], nodes: readonly TraceNode[]): Record<VariantKind, number> {
  const gpu = pods.filter((p) => p.gpuCount > 0);
  const d = gpu.reduce((a, p) => a + demand(p), 0);
  const clusterCpu = nodes.reduce((s, n) => s + n.cpuMilli, 0);
  const cpuOnlyCpu = pods.filter((p) => p.gpuCount === 0).reduce((a, p) => a + p.cpuMilli, 0);
  return {
    cpu: (1000 * cpuOnlyCpu) / (1.3 * clusterCpu),
    gpushare: (100 * gpu.filter(isSharing).reduce((a, p) => a + demand(p), 0)) / d,
    gpuspec: (100 * gpu.filter((p) => p.gpuModels.length > 0).length) / gpu.length,
    multigpu: (100 * gpu.filter((p) => p.gpuCount > 1).reduce((a, p) => a + demand(p), 0)) / d,
  };
}

/** The pod list as an openb CSV (first six columns; the protocol ignores the rest). */
export function variantCsv(pods: readonly TracePod[]): string {
  const lines = ['name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec'];
  for (const p of pods) lines.push(`${p.name},${p.cpuMilli},${p.memoryMiB},${p.gpuCount},${p.gpuMilli},${p.gpuModels.join('|')}`);
  return `${lines.join('\n')}\n`;
}
