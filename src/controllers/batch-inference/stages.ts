/**
 * Heterogeneous stages (seed 004 §2.5, issue 13 Deliver 4), the pure part: where each stage runs and how a pipeline
 * with bounded queues between stages behaves. Tokenisation on CPU, inference on GPU (CPU when the job fell back),
 * post-processing on an NPU where the cluster has one, else CPU. Between stages a queue of at most `capacity`
 * records; a server that finished a record holds it (and stops) while the next queue is full — backpressure, so
 * memory stays bounded and the pipeline runs at the pace of its slowest stage.
 */
export type DeviceClass = 'cpu' | 'gpu' | 'npu';

export const STAGES = ['tokenise', 'infer', 'postprocess'] as const;
export type StageName = (typeof STAGES)[number];

const PREFERENCE: Readonly<Record<StageName, readonly DeviceClass[]>> = {
  tokenise: ['cpu'],
  infer: ['gpu', 'cpu'],
  postprocess: ['npu', 'cpu'],
};

/** The device class of each stage given what the cluster has, with the reason for status. */
export function placeStages(available: ReadonlySet<DeviceClass>): Record<StageName, { device: DeviceClass; reason: string }> {
  const out = {} as Record<StageName, { device: DeviceClass; reason: string }>;
  for (const s of STAGES) {
    const pref = PREFERENCE[s];
    const device = pref.find((d) => available.has(d)) ?? 'cpu';
    out[s] = {
      device,
      reason: device === pref[0] ? `${s} on ${device}` : `${s} on ${device}: no ${pref.slice(0, pref.indexOf(device)).join(' or ')} in the cluster`,
    };
  }
  return out;
}

export interface PipelineStage {
  readonly name: string;
  readonly servers: number;
  /** Service time of record i on this stage, ms. */
  readonly serviceMs: (i: number) => number;
}

export interface PipelineResult {
  readonly makespanMs: number;
  /** Most records ever waiting in the queue in front of each stage after the first. */
  readonly maxQueue: readonly number[];
  /** Time each stage's servers spent holding a finished record because the next queue was full, ms. */
  readonly blockedMs: readonly number[];
}

/**
 * Discrete-event run of `records` through the stages, in order, with queues of `capacity` between stages (the
 * first stage reads the input directly). Blocking after service: a finished record leaves its server only when the
 * next queue has room or a next-stage server is free.
 */
export function simulatePipeline(stages: readonly PipelineStage[], records: number, capacity: number): PipelineResult {
  if (capacity < 1) throw new Error(`queue capacity must be at least 1, got ${capacity}`);
  const k = stages.length;
  // Per stage: whether each server is serving, and the record each holds (finished, blocked) if any.
  const busy: boolean[][] = stages.map((s) => Array.from({ length: s.servers }, () => false));
  const queues: { i: number; at: number }[][] = stages.map(() => []);
  const maxQueue = stages.map(() => 0);
  const blocked = stages.map(() => 0);
  let nextInput = 0;
  let finished = 0;
  let makespan = 0;
  // Events: a server of stage s finishes record i at time t.
  const events: { t: number; s: number; server: number; i: number }[] = [];
  const holding: ({ i: number; since: number } | undefined)[][] = stages.map((s) => Array.from({ length: s.servers }, () => undefined));
  const push = (e: { t: number; s: number; server: number; i: number }) => {
    events.push(e);
    events.sort((a, b) => a.t - b.t || a.s - b.s || a.server - b.server);
  };
  const start = (s: number, now: number): void => {
    for (let v = 0; v < (stages[s] as PipelineStage).servers; v++) {
      // Busy until its finish event is handled (an event at this same instant may still be pending), or holding.
      if ((busy[s] as boolean[])[v] === true || (holding[s] as unknown[])[v] !== undefined) continue;
      let i: number | undefined;
      if (s === 0) {
        if (nextInput >= records) return;
        i = nextInput++;
      } else {
        const q = (queues[s] as { i: number }[]).shift();
        if (q === undefined) return;
        i = q.i;
      }
      const t = now + (stages[s] as PipelineStage).serviceMs(i);
      (busy[s] as boolean[])[v] = true;
      push({ t, s, server: v, i });
    }
  };
  /** Moves finished records held at stage s into stage s+1's queue while there is room. */
  const release = (s: number, now: number): boolean => {
    let moved = false;
    for (let v = 0; v < (stages[s] as PipelineStage).servers; v++) {
      const h = (holding[s] as ({ i: number; since: number } | undefined)[])[v];
      if (h === undefined) continue;
      const q = queues[s + 1] as { i: number; at: number }[];
      if (q.length >= capacity) continue;
      q.push({ i: h.i, at: now });
      maxQueue[s + 1] = Math.max(maxQueue[s + 1] as number, q.length);
      blocked[s] = (blocked[s] as number) + (now - h.since);
      (holding[s] as unknown[])[v] = undefined;
      moved = true;
    }
    return moved;
  };
  start(0, 0);
  while (events.length > 0) {
    const e = events.shift() as { t: number; s: number; server: number; i: number };
    const now = e.t;
    (busy[e.s] as boolean[])[e.server] = false;
    if (e.s === k - 1) {
      finished++;
      makespan = now;
    } else {
      (holding[e.s] as ({ i: number; since: number } | undefined)[])[e.server] = { i: e.i, since: now };
    }
    // Propagate: downstream first frees queue room, then upstream releases into it, then everything restarts.
    for (let pass = 0; pass < k + 1; pass++) {
      let any = false;
      for (let s = k - 1; s >= 0; s--) {
        start(s, now);
        if (s < k - 1 && release(s, now)) any = true;
      }
      if (!any) break;
    }
  }
  if (finished !== records) throw new Error(`pipeline stalled with ${records - finished} records in flight`);
  return { makespanMs: makespan, maxQueue, blockedMs: blocked };
}
