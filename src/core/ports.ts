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

/**
 * What one committed statement asks to bind: a single pod, or the members of one gang that the statement
 * placed together (an adapter binds them all-or-nothing). `after` lists pods the same statement evicted
 * (preemption victims): the members are bound only once those are gone.
 */
export interface BindBatch {
  readonly requests: readonly BindRequest[];
  readonly gang?: string;
  readonly after: readonly string[];
}

/**
 * Carries committed placements to a cluster. Called synchronously at commit, like kube-scheduler's assume:
 * an adapter that talks to a server binds in the background and reports failures back to its host.
 */
export interface Binder {
  bind(batch: BindBatch): void;
}

/** Removes committed victims from a cluster (a whole gang at a time: the statement released all its pods). */
export interface Evictor {
  evict(podIds: readonly string[], reason: string): void;
}

export type SchedulingEventKind = 'Scheduled' | 'FailedScheduling' | 'Preempted' | 'WaitingForGang';

export interface SchedulingEvent {
  readonly kind: SchedulingEventKind;
  /** Pod id (`namespace/name` live). */
  readonly subject: string;
  readonly message: string;
}

export interface EventSink {
  emit(event: SchedulingEvent): void;
}

/** What the scheduler says about pods that wait: the PodScheduled condition and the expected start. */
export interface StatusWriter {
  unschedulable(podIds: readonly string[], message: string): void;
  expectedStart(podIds: readonly string[], atMs: number): void;
  /** The job of these pods was first held for a better placement at `atMs` (a host that keeps it across restarts). */
  heldSince?(podIds: readonly string[], atMs: number): void;
}

/** Every port a scheduling spine needs to reach a cluster. */
export interface ClusterPorts {
  readonly binder: Binder;
  readonly evictor: Evictor;
  readonly events: EventSink;
  readonly status: StatusWriter;
}

/** Attribute values a trace span carries (OpenTelemetry's primitive values and string lists). */
export type TraceValue = string | number | boolean | readonly string[];
export type TraceAttributes = Readonly<Record<string, TraceValue>>;

/** One open span; `set` adds attributes (a result known only at the end), `end` closes it. */
export interface TraceSpan {
  set(attrs: TraceAttributes): void;
  end(): void;
}

/**
 * Where the core reports its spans (a scheduling attempt, a preemption plan). Spans nest synchronously: one
 * started inside another is its child, and each ends before its parent does, within one synchronous stretch
 * of core code (the core never awaits). Hosts without tracing (the simulator, benchmarks) use `NO_TRACER`,
 * and callers test `enabled` before building attributes, so tracing that is off costs one branch.
 */
export interface Tracer {
  readonly enabled: boolean;
  start(name: string, attrs?: TraceAttributes): TraceSpan;
}

const NO_SPAN: TraceSpan = { set: () => undefined, end: () => undefined };

/** The tracer that records nothing. */
export const NO_TRACER: Tracer = { enabled: false, start: () => NO_SPAN };
