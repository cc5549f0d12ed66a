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
  'H200': { model: 'H200', memoryMiB: 143_360, computeCapability: 90 },
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

/** Parses `sm_90`, `9.0` or `90` into 90; returns undefined for anything else. */
export function parseComputeCapability(text: string | number): ComputeCapability | undefined {
  if (typeof text === 'number') return Number.isInteger(text) && text > 0 && text < 200 ? text : undefined;
  const s = text.trim();
  let m = /^sm_?(\d{2,3})$/i.exec(s);
  if (m?.[1] !== undefined) return Number(m[1]);
  m = /^(\d{1,2})\.(\d)$/.exec(s);
  if (m?.[1] !== undefined && m[2] !== undefined) return Number(m[1]) * 10 + Number(m[2]);
  m = /^(\d{2,3})$/.exec(s);
  if (m?.[1] !== undefined) return Number(m[1]);
  return undefined;
}

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
