/**
 * The health loop's pure step: readings in, actions out. For each device the detector's verdict decides:
 * a suspect or failed device not yet quarantined is quarantined (no new placements) and an intent to
 * checkpoint and move the work on it is emitted; a quarantined device whose period is over is due a health
 * check, and the check's result (an input: `checkResult`) releases it or keeps it. The host carries the actions
 * out (kube/scheduler/gpu-health.ts writes the node annotation; a controller consumes the intents: ADR 0096).
 */
import type { DcgmDevice, DcgmPodRef } from './dcgm.ts';
import { HealthDetector, type DetectorConfig, type HealthState, type Verdict } from './detector.ts';
import { DEFAULT_QUARANTINE_MS, QuarantineBook, type DeviceRef, type QuarantineEntry, type QuarantineState } from './quarantine.ts';

/**
 * What the work on a device should do. `checkpoint-first` (suspect): the job still runs; checkpoint now,
 * then restore elsewhere. `restore-last` (failed): the job is likely dead; restore from its newest
 * checkpoint elsewhere.
 */
export interface MigrateIntent extends DeviceRef {
  readonly kind: 'checkpoint-and-migrate';
  readonly uuid: string;
  readonly mode: 'checkpoint-first' | 'restore-last';
  readonly reason: string;
  /** Pods dcgm-exporter saw on the device (empty without its Kubernetes mapping: find them by the gpu-indices annotation). */
  readonly pods: readonly DcgmPodRef[];
  readonly atMs: number;
}

/** The one mapping from a quarantined device's state to what its work does (the intent here, the Node's entry in the migrator). */
export const migrateMode = (state: QuarantineState): MigrateIntent['mode'] => (state === 'failed' ? 'restore-last' : 'checkpoint-first');

export type HealthAction =
  | { readonly kind: 'quarantine'; readonly entry: QuarantineEntry; readonly state: HealthState }
  | MigrateIntent
  | { readonly kind: 'health-check-due'; readonly entry: QuarantineEntry }
  | { readonly kind: 'release'; readonly entry: QuarantineEntry }
  | { readonly kind: 'extend'; readonly entry: QuarantineEntry };

export interface MonitorConfig {
  readonly detector?: DetectorConfig;
  /** How long a device stays out before its health check (default 15 min, 004 §2.6). */
  readonly quarantineMs?: number;
}

export const deviceKey = (d: DeviceRef): string => `${d.node}/${d.gpu}`;

export class GpuHealthMonitor {
  readonly detector: HealthDetector;
  readonly book: QuarantineBook;
  readonly quarantineMs: number;
  /** State each quarantined device was quarantined with (an escalation suspect → failed re-emits the intent). */
  private readonly stateOf = new Map<string, HealthState>();

  constructor(config: MonitorConfig = {}, book = new QuarantineBook()) {
    this.detector = new HealthDetector(config.detector);
    this.book = book;
    this.quarantineMs = config.quarantineMs ?? DEFAULT_QUARANTINE_MS;
  }

  /** One scrape of a node's devices at `nowMs`. */
  observe(node: string, devices: readonly DcgmDevice[], nowMs: number): HealthAction[] {
    const out: HealthAction[] = [];
    for (const d of devices) {
      const ref = { node, gpu: d.gpu };
      const v = this.detector.observe(deviceKey(ref), nowMs, d.fields, d.activeXids);
      if (v.state !== 'healthy') out.push(...this.flag(ref, v, nowMs, d.uuid, d.pods));
    }
    for (const e of this.book.due(nowMs)) if (e.node === node) out.push({ kind: 'health-check-due', entry: e });
    return out;
  }

  /** Flags a device found bad by a verdict (the detector's, or any caller's). */
  flag(ref: DeviceRef, v: Verdict, nowMs: number, uuid = '', pods: readonly DcgmPodRef[] = []): HealthAction[] {
    const k = deviceKey(ref);
    const was = this.book.get(ref);
    const before = this.stateOf.get(k);
    const state: QuarantineState = v.state === 'failed' ? 'failed' : 'suspect';
    const change = this.book.quarantine(ref, v.reason, nowMs + this.quarantineMs, nowMs, was?.source ?? 'gpu-health', state);
    const out: HealthAction[] = [];
    if (was === undefined) out.push({ kind: 'quarantine', entry: change.entry, state: v.state });
    else out.push({ kind: 'extend', entry: change.entry });
    if (was === undefined || (before === 'suspect' && v.state === 'failed')) {
      out.push({ kind: 'checkpoint-and-migrate', node: ref.node, gpu: ref.gpu, uuid, mode: migrateMode(state), reason: v.reason, pods, atMs: nowMs });
      this.stateOf.set(k, v.state);
    }
    return out;
  }

  /**
   * The built-in health check: the detector's latest verdict on the device. Hosts with a real check (DCGM
   * diagnostics, `dcgmi diag -r 1`) pass its result to `checkResult` instead.
   */
  builtInCheck(ref: DeviceRef): { readonly passed: boolean; readonly detail: string } {
    const v = this.detector.current(deviceKey(ref));
    return { passed: v.state === 'healthy', detail: v.state === 'healthy' ? '' : `health check failed: ${v.reason}` };
  }

  /** A health check's result: a passing one after the period releases the device, a failing one keeps it. */
  checkResult(ref: DeviceRef, passed: boolean, nowMs: number, detail = ''): HealthAction[] {
    const c = this.book.checkResult(ref, passed, nowMs, this.quarantineMs, detail);
    if (c === undefined) return [];
    if (c.kind === 'released') {
      this.stateOf.delete(deviceKey(ref));
      return [{ kind: 'release', entry: c.entry }];
    }
    return [{ kind: 'extend', entry: c.entry }];
  }
}
