/**
 * GPU devices. Models are open strings (a cluster may report anything), but the well-known ones carry
 * defaults for memory and compute capability so that presets and traces stay short.
 */

/** Compute capability as an integer: sm_90 → 90, sm_86 → 86. */
export type ComputeCapability = number;

export interface GpuModelInfo {
  readonly model: string;
  readonly memoryMiB: number;
  readonly computeCapability: ComputeCapability;
}

/** Known models. G1/G2/G3 are the Alibaba trace's undisclosed codes: capability unknown (0). */
export const GPU_MODELS: Readonly<Record<string, GpuModelInfo>> = {
  'H100-SXM': { model: 'H100-SXM', memoryMiB: 81_920, computeCapability: 90 },
  H200: { model: 'H200', memoryMiB: 143_360, computeCapability: 90 },
  'A100-80G': { model: 'A100-80G', memoryMiB: 81_920, computeCapability: 80 },
  'A100-40G': { model: 'A100-40G', memoryMiB: 40_960, computeCapability: 80 },
  A800: { model: 'A800', memoryMiB: 81_920, computeCapability: 80 },
  A10: { model: 'A10', memoryMiB: 24_576, computeCapability: 86 },
  L4: { model: 'L4', memoryMiB: 24_576, computeCapability: 89 },
  T4: { model: 'T4', memoryMiB: 16_384, computeCapability: 75 },
  V100: { model: 'V100', memoryMiB: 32_768, computeCapability: 70 },
  V100M16: { model: 'V100M16', memoryMiB: 16_384, computeCapability: 70 },
  V100M32: { model: 'V100M32', memoryMiB: 32_768, computeCapability: 70 },
  P100: { model: 'P100', memoryMiB: 16_384, computeCapability: 60 },
  G1: { model: 'G1', memoryMiB: 0, computeCapability: 0 },
  G2: { model: 'G2', memoryMiB: 0, computeCapability: 0 },
  G3: { model: 'G3', memoryMiB: 0, computeCapability: 0 },
};

export interface GpuDevice {
  /** Device index as the container runtime numbers it (CUDA_VISIBLE_DEVICES). */
  readonly index: number;
  readonly model: string;
  readonly memoryMiB: number;
  readonly computeCapability: ComputeCapability;
  readonly healthy: boolean;
  /** Why the device is unhealthy, when its reporter said (a quarantine's reason): shown by `sits explain`. */
  readonly unhealthyReason?: string;
}

/**
 * Parses a compute capability as a person writes it into the sm code (90 for Hopper), the same for text and
 * numbers: `sm_90`/`sm90`, `9.0` (major.minor, one minor digit), `9` (a major version alone: every sm code has
 * two or more digits), `90` (the sm code, 20 to 199). 10 to 19 alone are ambiguous (sm_12 or 12.0?) and rejected,
 * as is anything else (undefined). A YAML loader must pass the text as written: YAML reads `9.0` as the number 9
 * (formats/yaml-source.ts keeps it), which is why 9 means 9.0 here and was once misread as sm_9 (issue 31).
 */
export function parseComputeCapability(text: string | number): ComputeCapability | undefined {
  if (typeof text === 'number') {
    if (!Number.isFinite(text) || text <= 0) return undefined;
    if (Number.isInteger(text)) return parseComputeCapability(String(text));
    const tenths = Math.round(text * 10);
    // One minor digit only: 8.65 is no capability, not 8.6 or 8.7.
    return Math.abs(text * 10 - tenths) < 1e-9 ? parseComputeCapability(`${Math.floor(tenths / 10)}.${tenths % 10}`) : undefined;
  }
  const s = text.trim();
  let m = /^sm_?(\d{2,3})$/i.exec(s);
  if (m?.[1] !== undefined) return valid(Number(m[1]));
  m = /^(\d{1,2})\.(\d)$/.exec(s);
  if (m?.[1] !== undefined && m[2] !== undefined) return Number(m[1]) >= 1 ? valid(Number(m[1]) * 10 + Number(m[2])) : undefined;
  m = /^(\d{1,3})$/.exec(s);
  if (m?.[1] === undefined) return undefined;
  const n = Number(m[1]);
  if (n >= 1 && n <= 9) return n * 10;
  return n >= 20 ? valid(n) : undefined;
}

function valid(cc: number): ComputeCapability | undefined {
  return cc >= 10 && cc < 200 ? cc : undefined;
}

/** What to tell a person whose compute capability did not parse. */
export const COMPUTE_CAPABILITY_FORMS = 'use sm_90, 9.0, 9 or 90; 10 to 19 alone are ambiguous: write 12.0 or sm_120';

export function formatComputeCapability(cc: ComputeCapability): string {
  return `sm_${cc}`;
}

export function makeGpus(count: number, model: string, overrides: Partial<Omit<GpuDevice, 'index'>> = {}): GpuDevice[] {
  const info = GPU_MODELS[model];
  return Array.from({ length: count }, (_, index) => ({
    index,
    model,
    memoryMiB: overrides.memoryMiB ?? info?.memoryMiB ?? 0,
    computeCapability: overrides.computeCapability ?? info?.computeCapability ?? 0,
    healthy: overrides.healthy ?? true,
  }));
}
