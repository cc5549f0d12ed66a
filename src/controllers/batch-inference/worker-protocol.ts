/**
 * The batch worker protocol (docs/adr/0102-batch-worker-protocol.md): two annotations on each worker pod, one
 * written by each side, so the controller never reads the worker's volume to learn what it did and the worker
 * never needs more than get/patch on its own pod.
 *  - ANNOTATION.batchAssignment, written by the controller: the shard the worker runs now (or none).
 *  - ANNOTATION.batchReport, written by the worker: how far it is in that shard, at a bounded rate, and when it
 *    has written the part file (state done) or given up (state failed).
 * A new attempt id in the assignment cancels the previous one: the worker drops it and writes nothing for it.
 * Pure: parsing and formatting only.
 */
import type { FailureKind } from './fault-ladder.ts';

export const WORKER_CONTAINER = 'batch-worker';
/** Where the worker pod mounts the claim of a `pvc://claim/path` input or output. */
export const batchMountPath = (claim: string): string => `/mnt/batch/${claim}`;
/** Where the worker pod mounts the ConfigMap of spec.strategy.batchSize.wasm.configMap (its key as a file, ADR 0156). */
export const BATCH_PLUGIN_MOUNT = '/var/run/sits/strategy/batch-size';
/** The worker pod's volume of that ConfigMap. */
export const BATCH_PLUGIN_VOLUME = 'sits-batch-size-plugin';

export interface WireAssignment {
  readonly attempt: string;
  readonly start: number;
  readonly end: number;
  readonly part: string;
  /** Fraction of the worker's normal concurrency (the fault ladder's first rung lowers it). */
  readonly concurrency: number;
}

/** The assignment annotation's value: a shard, or `{"attempt":null}` (wait). */
export function formatAssignment(a: WireAssignment | undefined): string {
  return a === undefined ? '{"attempt":null}' : JSON.stringify({ attempt: a.attempt, start: a.start, end: a.end, part: a.part, concurrency: a.concurrency });
}

export type ReportState = 'running' | 'done' | 'failed';

export interface WorkerReport {
  readonly attempt: string;
  readonly start: number;
  readonly end: number;
  /** Records finished so far (in order from start). */
  readonly done: number;
  readonly tokens: number;
  readonly state: ReportState;
  /** Epoch ms the worker started the attempt (an adopted attempt keeps its age for the long-tail breaker). */
  readonly startedMs: number;
  readonly failure?: { readonly kind: FailureKind; readonly message: string };
  /** Requests the worker keeps in flight now (its live batch size); absent from older workers. */
  readonly batchSize?: number;
  /** Why the job's batch-size plugin does not decide (rejected, or its last answer replaced by the built-in's). */
  readonly batchNote?: string;
  /**
   * The attempt's latest checkpoint (ADR 0159): a part file of its own, `parts/<attempt>.c<n>.jsonl`, holding the
   * finished prefix from `start`, for the coordinator to commit while the attempt runs on. Absent: none yet.
   */
  readonly checkpoint?: string;
  /** The job's batch-size plugin in this worker: deciding, refused at load, or disabled since (a time limit hit). */
  readonly batchPlugin?: BatchPluginState;
  /** Generated tokens of the finished records (the rest of `tokens` is prompt), for the workload profile (ADR 0165). */
  readonly outputTokens?: number;
  /** Wall time of the attempt's records, ms (done reports; engine start-up excluded). */
  readonly ms?: number;
  /** The engine's free KV-cache fraction at the attempt's tightest moment, 0..1 (ADR 0164); absent: not read. */
  readonly kvFree?: number;
  /** The engine's KV cache in tokens, when it reports its size. */
  readonly kvCapacityTokens?: number;
  /** The worker's stage pipeline since it started (ADR 0167): tokenise, infer, postprocess, in order. */
  readonly stages?: readonly WireStage[];
}

export const STAGE_NAMES = ['tokenise', 'infer', 'postprocess'] as const;
export type WireStageName = (typeof STAGE_NAMES)[number];

/** One stage of a worker's pipeline, summed over its attempts. */
export interface WireStage {
  readonly name: WireStageName;
  readonly processed: number;
  readonly busyMs: number;
  /** Time finished records waited on this stage for room in the next queue (backpressure), ms. */
  readonly blockedMs: number;
  /** Most records ever queued in front of it, and that queue's bound. */
  readonly maxQueue: number;
  readonly capacity: number;
  /** tokenise only: prompt tokens counted, and whether by the engine's tokenizer or estimated. */
  readonly promptTokens?: number;
  readonly counter?: 'engine' | 'estimated';
  /** tokenise only: records refused before the engine (prompt plus max_tokens beyond the engine's context). */
  readonly refused?: number;
}

function parseStages(v: unknown): WireStage[] | undefined {
  if (!Array.isArray(v) || v.length > STAGE_NAMES.length) return undefined;
  const out: WireStage[] = [];
  for (const x of v as Record<string, unknown>[]) {
    if (typeof x !== 'object' || x === null || !STAGE_NAMES.includes(x.name as WireStageName)) return undefined;
    if (![x.processed, x.busyMs, x.blockedMs, x.maxQueue, x.capacity].every(isInt)) return undefined;
    out.push({
      name: x.name as WireStageName,
      processed: x.processed as number,
      busyMs: x.busyMs as number,
      blockedMs: x.blockedMs as number,
      maxQueue: x.maxQueue as number,
      capacity: x.capacity as number,
      ...(isInt(x.promptTokens) ? { promptTokens: x.promptTokens } : {}),
      ...(x.counter === 'engine' || x.counter === 'estimated' ? { counter: x.counter } : {}),
      ...(isInt(x.refused) ? { refused: x.refused } : {}),
    });
  }
  return out;
}

/** The checkpoint file of an attempt's n-th checkpoint (the coordinator's own naming, ADR 0147). */
export const checkpointName = (attempt: string, n: number): string => `parts/${attempt}.c${n}.jsonl`;
const CHECKPOINT_FILE = /^parts\/[A-Za-z0-9_-]+\.c[0-9]+\.jsonl$/;

export type BatchPluginState = 'active' | 'rejected' | 'disabled';
const PLUGIN_STATES: readonly BatchPluginState[] = ['active', 'rejected', 'disabled'];

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** Parses an assignment annotation; undefined for none or idle; an error string for garbage. */
export function parseAssignment(text: string | undefined): WireAssignment | undefined | { error: string } {
  if (text === undefined) return undefined;
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    return { error: `assignment: not JSON (${(e as Error).message})` };
  }
  if (v.attempt === null || v.attempt === undefined) return undefined;
  if (typeof v.attempt !== 'string' || !isInt(v.start) || !isInt(v.end) || v.end < v.start || typeof v.part !== 'string')
    return { error: `assignment: expected {attempt, start, end, part}, got ${text}` };
  const concurrency = typeof v.concurrency === 'number' && v.concurrency > 0 && v.concurrency <= 1 ? v.concurrency : 1;
  return { attempt: v.attempt, start: v.start, end: v.end, part: v.part, concurrency };
}

const FAILURE_KINDS: readonly FailureKind[] = ['oom', 'timeout', 'crash', 'hardware', 'corrupt-output', 'model'];

/** Parses a report annotation; undefined when absent or not a report (a worker of another version: ignored). */
export function parseReport(text: string | undefined): WorkerReport | undefined {
  if (text === undefined) return undefined;
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof v.attempt !== 'string' || !isInt(v.start) || !isInt(v.end) || !isInt(v.done) || !isInt(v.tokens) || !isInt(v.startedMs)) return undefined;
  if (v.state !== 'running' && v.state !== 'done' && v.state !== 'failed') return undefined;
  const f = v.failure as { kind?: unknown; message?: unknown } | undefined;
  const failure =
    f !== undefined && typeof f.message === 'string'
      ? { kind: FAILURE_KINDS.includes(f.kind as FailureKind) ? (f.kind as FailureKind) : ('crash' as const), message: f.message }
      : undefined;
  // The batch fields are optional and advisory: a bad one is dropped, the report stays.
  const batchSize = isInt(v.batchSize) && v.batchSize >= 1 ? v.batchSize : undefined;
  const batchNote = typeof v.batchNote === 'string' ? v.batchNote.slice(0, 1024) : undefined;
  // Only a checkpoint file of this attempt: the controller reads it from the output volume.
  const checkpoint =
    typeof v.checkpoint === 'string' && CHECKPOINT_FILE.test(v.checkpoint) && v.checkpoint.startsWith(`parts/${v.attempt}.c`) ? v.checkpoint : undefined;
  const batchPlugin = PLUGIN_STATES.find((x) => x === v.batchPlugin);
  const stages = parseStages(v.stages);
  const outputTokens = isInt(v.outputTokens) && v.outputTokens <= v.tokens ? v.outputTokens : undefined;
  const ms = isInt(v.ms) ? v.ms : undefined;
  const kvFree = typeof v.kvFree === 'number' && v.kvFree >= 0 && v.kvFree <= 1 ? v.kvFree : undefined;
  const kvCapacityTokens = isInt(v.kvCapacityTokens) && v.kvCapacityTokens > 0 ? v.kvCapacityTokens : undefined;
  return {
    attempt: v.attempt,
    start: v.start,
    end: v.end,
    done: v.done,
    tokens: v.tokens,
    state: v.state,
    startedMs: v.startedMs,
    ...(failure === undefined ? {} : { failure }),
    ...(batchSize === undefined ? {} : { batchSize }),
    ...(batchNote === undefined ? {} : { batchNote }),
    ...(checkpoint === undefined ? {} : { checkpoint }),
    ...(batchPlugin === undefined ? {} : { batchPlugin }),
    ...(stages === undefined ? {} : { stages }),
    ...(outputTokens === undefined ? {} : { outputTokens }),
    ...(ms === undefined ? {} : { ms }),
    ...(kvFree === undefined ? {} : { kvFree }),
    ...(kvCapacityTokens === undefined ? {} : { kvCapacityTokens }),
  };
}

export const formatReport = (r: WorkerReport): string => JSON.stringify(r);
