/**
 * The narrow port through which batch inference takes a device out of service (seed 004 §2.6: 15 minutes of
 * observation after a failure). Another part of SITS owns GPU health and its own quarantine; this port is what
 * the batch coordinator needs of it and nothing more, so the two can be unified behind one implementation
 * (the lead merges them). A device is `node/index`, e.g. `gpu-3/1`, as in status.quarantinedGpus.
 *
 * Contract: after quarantine(d, r, until), isQuarantined(d, t) is true for every t < until unless a health check
 * released the device earlier (release is the implementer's business: the health side calls it); quarantining
 * an already quarantined device keeps the later `until` and the newest reason.
 */
export interface Quarantine {
  quarantine(device: string, reason: string, untilMs: number): void;
  isQuarantined(device: string, nowMs: number): boolean;
}

export interface QuarantineEntry {
  readonly device: string;
  readonly reason: string;
  readonly untilMs: number;
}

/** In-memory implementation (tests, the simulator, and a single coordinator until the shared one lands). */
export class MemoryQuarantine implements Quarantine {
  private readonly entries = new Map<string, QuarantineEntry>();
  quarantine(device: string, reason: string, untilMs: number): void {
    const prev = this.entries.get(device);
    this.entries.set(device, { device, reason, untilMs: Math.max(untilMs, prev?.untilMs ?? untilMs) });
  }
  isQuarantined(device: string, nowMs: number): boolean {
    const e = this.entries.get(device);
    return e !== undefined && nowMs < e.untilMs;
  }
  /** A passed health check ends the quarantine early. */
  release(device: string): void {
    this.entries.delete(device);
  }
  /** What `sits explain` shows: the devices out of service now and why. */
  active(nowMs: number): QuarantineEntry[] {
    return [...this.entries.values()].filter((e) => nowMs < e.untilMs).sort((a, b) => a.device.localeCompare(b.device));
  }
}
