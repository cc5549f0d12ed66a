/**
 * Ports: everything impure the core needs comes in through these. Hosts (simulator, live scheduler,
 * benchmarks) provide the implementations.
 */

export interface Clock {
  nowMs(): number;
}

/** Seeded uniform random numbers. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
}

/** Mulberry32-style generator seeded by a 32-bit integer: small, fast and deterministic. */
export function seededRng(seed: number): Rng {
  let s = seed >>> 0 || 0x9e3779b9;
  const next = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n) };
}

/** Fisher–Yates shuffle in place with the given RNG. */
export function shuffle<T>(items: T[], rng: Rng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const t = items[i] as T;
    items[i] = items[j] as T;
    items[j] = t;
  }
  return items;
}

export interface BindRequest {
  readonly podId: string;
  readonly node: string;
  readonly gpus: readonly number[];
}

/** Carries committed placements to a cluster. */
export interface Binder {
  bind(requests: readonly BindRequest[]): Promise<void>;
}

export interface Evictor {
  evict(podIds: readonly string[], reason: string): Promise<void>;
}

export interface SchedulingEvent {
  readonly kind: 'Scheduled' | 'FailedScheduling' | 'Preempted';
  readonly subject: string;
  readonly message: string;
}

export interface EventSink {
  emit(event: SchedulingEvent): void;
}
