/**
 * The one quarantine of GPU devices (issue 13 §6 and issue 14 §5; 004 §2.6: a failing device is quarantined
 * for 15 minutes and released after a health check). Pure: time comes in as numbers. Whoever finds a device
 * bad — the DCGM health monitor, the BatchInferenceJob fault ladder — calls `quarantine(device, reason,
 * untilMs)`; once `until` has passed the device is due a health check, and only a passing check releases it
 * (a failing one keeps it for another period). The book is stored on the Node as one annotation
 * (ANNOTATION.gpuQuarantine, see `formatQuarantine`), which is what the scheduler reads: a quarantined GPU
 * is unhealthy with the quarantine's reason (sits explain), whatever process wrote it. Each entry also says
 * whether the device is `suspect` or `failed` (ADR 0150), which decides how the health migrator moves the work on it.
 */
import { err, ok, type Result } from '../result.ts';

export interface DeviceRef {
  readonly node: string;
  readonly gpu: number;
}

/**
 * What the writer knows of the device. `suspect`: a failure is predicted and the work on it still runs, so it is
 * checkpointed first. `failed`: the device failed outright and the work on it is likely dead, so it restarts from its
 * newest Ready checkpoint without asking for one (the monitor's `restore-last`). An entry written without it
 * (before ADR 0150) is `suspect`.
 */
export type QuarantineState = 'suspect' | 'failed';

export interface QuarantineEntry extends DeviceRef {
  readonly reason: string;
  readonly state: QuarantineState;
  readonly sinceMs: number;
  readonly untilMs: number;
  /** Who put it there (`gpu-health`, `batch-fault-ladder`, ...): each releases only through a health check. */
  readonly source: string;
  /** Health checks failed since the quarantine began. */
  readonly failedChecks: number;
}

/** 004 §2.6. */
export const DEFAULT_QUARANTINE_MS = 15 * 60_000;

const key = (d: DeviceRef): string => `${d.node}\u0000${d.gpu}`;

export type QuarantineChange =
  | { readonly kind: 'quarantined'; readonly entry: QuarantineEntry }
  | { readonly kind: 'extended'; readonly entry: QuarantineEntry }
  | { readonly kind: 'released'; readonly entry: QuarantineEntry };

export class QuarantineBook {
  private readonly byKey = new Map<string, QuarantineEntry>();

  /**
   * Quarantines a device until `untilMs` (or keeps it longer: an existing quarantine keeps its start and
   * the later end; the newest reason is shown). `failed` is kept until the release: a device that failed
   * outright does not become merely suspect because another reading or writer says so.
   */
  quarantine(device: DeviceRef, reason: string, untilMs: number, nowMs: number, source: string, state: QuarantineState): QuarantineChange {
    const k = key(device);
    const old = this.byKey.get(k);
    const entry: QuarantineEntry = {
      node: device.node,
      gpu: device.gpu,
      reason,
      state: old?.state === 'failed' ? 'failed' : state,
      sinceMs: old?.sinceMs ?? nowMs,
      untilMs: Math.max(untilMs, old?.untilMs ?? untilMs),
      source: old?.source ?? source,
      failedChecks: old?.failedChecks ?? 0,
    };
    this.byKey.set(k, entry);
    return { kind: old === undefined ? 'quarantined' : 'extended', entry };
  }

  /** Ends a quarantine without a check (an operator's decision); false when the device was not quarantined. */
  release(device: DeviceRef): QuarantineEntry | undefined {
    const k = key(device);
    const e = this.byKey.get(k);
    this.byKey.delete(k);
    return e;
  }

  get(device: DeviceRef): QuarantineEntry | undefined {
    return this.byKey.get(key(device));
  }

  isQuarantined(device: DeviceRef): boolean {
    return this.byKey.has(key(device));
  }

  /** Quarantines whose period is over: each waits for a health check. */
  due(nowMs: number): QuarantineEntry[] {
    return [...this.byKey.values()].filter((e) => e.untilMs <= nowMs);
  }

  /**
   * A health check's result for a device. Passed after the period: released. Failed (or the period not
   * over): quarantined for another `retryMs` from now.
   */
  checkResult(device: DeviceRef, passed: boolean, nowMs: number, retryMs = DEFAULT_QUARANTINE_MS, detail = ''): QuarantineChange | undefined {
    const k = key(device);
    const e = this.byKey.get(k);
    if (e === undefined) return undefined;
    if (passed && e.untilMs <= nowMs) {
      this.byKey.delete(k);
      return { kind: 'released', entry: e };
    }
    if (passed) return undefined;
    const next: QuarantineEntry = {
      ...e,
      untilMs: Math.max(e.untilMs, nowMs + retryMs),
      failedChecks: e.failedChecks + 1,
      reason: detail === '' ? e.reason : detail,
    };
    this.byKey.set(k, next);
    return { kind: 'extended', entry: next };
  }

  entries(): QuarantineEntry[] {
    return [...this.byKey.values()].sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : a.gpu - b.gpu));
  }

  /** The node's quarantines, by GPU. */
  ofNode(node: string): QuarantineEntry[] {
    return this.entries().filter((e) => e.node === node);
  }

  /** Takes in what a node's annotation says (after a restart, or another writer's entries). */
  load(entries: readonly QuarantineEntry[]): void {
    for (const e of entries) this.byKey.set(key(e), e);
  }
}

/** How a quarantine reads in `sits explain`. */
export function quarantineText(e: Pick<QuarantineEntry, 'reason' | 'untilMs'>): string {
  return `quarantined until ${new Date(e.untilMs).toISOString()}: ${e.reason}`;
}

interface StoredEntry {
  readonly reason: string;
  readonly state: QuarantineState;
  readonly since: string;
  readonly until: string;
  readonly source: string;
  readonly failedChecks?: number;
}

/**
 * The annotation value: JSON keyed by GPU index, times in RFC 3339, e.g.
 * `{"3":{"reason":"XID 79 (GPU has fallen off the bus)","state":"failed","since":"…","until":"…","source":"gpu-health"}}`.
 * `state` is always written; a reader takes an entry without it as `suspect` (written before ADR 0150).
 * Undefined when the node has no quarantine (the annotation is then removed).
 */
export function formatQuarantine(entries: readonly QuarantineEntry[]): string | undefined {
  if (entries.length === 0) return undefined;
  const out: Record<string, StoredEntry> = {};
  for (const e of [...entries].sort((a, b) => a.gpu - b.gpu))
    out[String(e.gpu)] = {
      reason: e.reason,
      state: e.state,
      since: new Date(e.sinceMs).toISOString(),
      until: new Date(e.untilMs).toISOString(),
      source: e.source,
      ...(e.failedChecks === 0 ? {} : { failedChecks: e.failedChecks }),
    };
  return JSON.stringify(out);
}

/** Reads the annotation back; an error names the GPU key and the field that is wrong. */
export function parseQuarantine(node: string, text: string): Result<QuarantineEntry[], string> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return err(`not JSON: ${(e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return err('expected an object keyed by GPU index');
  const out: QuarantineEntry[] = [];
  for (const [k, raw] of Object.entries(v as Record<string, unknown>)) {
    if (!/^\d+$/.test(k)) return err(`key "${k}": not a GPU index`);
    if (typeof raw !== 'object' || raw === null) return err(`GPU ${k}: expected an object`);
    const r = raw as Record<string, unknown>;
    const time = (f: string): number | string => {
      const s = r[f];
      const t = typeof s === 'string' ? Date.parse(s) : Number.NaN;
      return Number.isNaN(t) ? `GPU ${k}: ${f}: expected an RFC 3339 time` : t;
    };
    if (typeof r.reason !== 'string' || r.reason === '') return err(`GPU ${k}: reason: expected a non-empty string`);
    const state = r.state === undefined ? 'suspect' : r.state;
    if (state !== 'suspect' && state !== 'failed') return err(`GPU ${k}: state: expected "suspect" or "failed", got ${JSON.stringify(state)}`);
    const since = time('since');
    const until = time('until');
    if (typeof since === 'string') return err(since);
    if (typeof until === 'string') return err(until);
    const fc = r.failedChecks ?? 0;
    if (typeof fc !== 'number' || !Number.isInteger(fc) || fc < 0) return err(`GPU ${k}: failedChecks: expected a count`);
    out.push({
      node,
      gpu: Number(k),
      reason: r.reason,
      state,
      sinceMs: since,
      untilMs: until,
      source: typeof r.source === 'string' ? r.source : 'unknown',
      failedChecks: fc,
    });
  }
  return ok(out.sort((a, b) => a.gpu - b.gpu));
}
