// Declarative scenarios of the fault ladder: a rung, a failure, a configuration → the next rung.
import { describe, expect, it } from 'vitest';
import type { Failure, LadderConfig, Rung } from './fault-ladder.ts';
import { DEFAULT_LADDER, FRESH, nextRung } from './fault-ladder.ts';

const R = { start: 0, end: 8 };
const oom: Failure = { kind: 'oom', message: 'CUDA OOM', device: 'n1/0' };
const xid: Failure = { kind: 'hardware', message: 'Xid 79', device: 'n1/0' };
const r1: Rung = { ...FRESH, level: 1, retries: 1, concurrencyFactor: 0.5, reducedClock: true, pinDevice: 'n1/0' };
const r2: Rung = { ...FRESH, level: 2, retries: 2, excludeDevices: ['n1/0'] };

interface Scenario {
  name: string;
  rung: Rung;
  failure: Failure;
  cfg?: Partial<LadderConfig>;
  reducedClock?: boolean;
  otherDevices?: number;
  expect: {
    kind: 'retry' | 'give-up';
    level?: number;
    pieces?: number;
    concurrency?: number;
    reducedClock?: boolean;
    pin?: string;
    cpu?: boolean;
    quarantine?: boolean;
    exclude?: string[];
  };
}

const SCENARIOS: Scenario[] = [
  {
    name: 'first failure: same device, half concurrency, reduced clock',
    rung: FRESH,
    failure: oom,
    expect: { kind: 'retry', level: 1, pieces: 1, concurrency: 0.5, reducedClock: true, pin: 'n1/0', quarantine: false },
  },
  {
    name: 'a device without clock control: only lower concurrency',
    rung: FRESH,
    failure: oom,
    reducedClock: false,
    expect: { kind: 'retry', level: 1, reducedClock: false },
  },
  {
    name: 'retryAtReducedClock off: only lower concurrency',
    rung: FRESH,
    failure: oom,
    cfg: { retryAtReducedClock: false },
    expect: { kind: 'retry', level: 1, reducedClock: false },
  },
  {
    name: 'second failure: split over the other devices, quarantine',
    rung: r1,
    failure: oom,
    otherDevices: 3,
    expect: { kind: 'retry', level: 2, pieces: 3, quarantine: true, exclude: ['n1/0'] },
  },
  {
    name: 'hardware fault: straight to split, quarantine at once',
    rung: FRESH,
    failure: xid,
    otherDevices: 2,
    expect: { kind: 'retry', level: 2, pieces: 2, quarantine: true },
  },
  {
    name: 'no other device: chunks wait for this one',
    rung: r1,
    failure: oom,
    otherDevices: 0,
    expect: { kind: 'retry', level: 2, pieces: 2, quarantine: true, exclude: [] },
  },
  // A CPU-elastic worker's device (ADR 0161): no GPU, nothing to quarantine, and other CPU workers on that node may take the chunks.
  {
    name: 'a CPU-elastic worker failed twice: split, no quarantine, its node/cpu not excluded',
    rung: { ...r1, pinDevice: 'n1/cpu' },
    failure: { ...oom, device: 'n1/cpu' },
    otherDevices: 3,
    expect: { kind: 'retry', level: 2, pieces: 3, quarantine: false, exclude: [] },
  },
  {
    name: 'split failed, CPU fallback on',
    rung: r2,
    failure: oom,
    cfg: { cpuFallback: true },
    expect: { kind: 'retry', level: 3, cpu: true, quarantine: false },
  },
  { name: 'split failed, CPU fallback off (the default): give up', rung: r2, failure: oom, expect: { kind: 'give-up' } },
  {
    name: 'splitOnRetry off: from rung 1 to the CPU',
    rung: r1,
    failure: oom,
    cfg: { splitOnRetry: false, cpuFallback: true },
    expect: { kind: 'retry', level: 3, cpu: true, quarantine: true },
  },
  { name: 'maxRetries 0: give up at once', rung: FRESH, failure: oom, cfg: { maxRetries: 0 }, expect: { kind: 'give-up' } },
  {
    name: 'quarantineMinutes 0: never quarantine',
    rung: r1,
    failure: oom,
    cfg: { quarantineMinutes: 0 },
    expect: { kind: 'retry', level: 2, quarantine: false },
  },
];

describe('fault ladder scenarios', () => {
  for (const s of SCENARIOS) {
    it(s.name, () => {
      const d = nextRung(
        R,
        s.rung,
        s.failure,
        { ...DEFAULT_LADDER, ...s.cfg },
        { nowMs: 1000, deviceAllowsReducedClock: s.reducedClock ?? true, otherDevices: s.otherDevices ?? 2 },
      );
      expect(d.kind).toBe(s.expect.kind);
      if (s.expect.quarantine !== undefined) {
        expect(d.quarantine !== undefined).toBe(s.expect.quarantine);
        if (s.expect.quarantine) expect(d.quarantine).toMatchObject({ device: 'n1/0', untilMs: 1000 + 15 * 60_000 });
      }
      if (d.kind !== 'retry') return;
      const first = d.pieces[0]!.rung;
      if (s.expect.level !== undefined) expect(first.level).toBe(s.expect.level);
      if (s.expect.pieces !== undefined) expect(d.pieces.length).toBe(s.expect.pieces);
      if (s.expect.concurrency !== undefined) expect(first.concurrencyFactor).toBe(s.expect.concurrency);
      if (s.expect.reducedClock !== undefined) expect(first.reducedClock).toBe(s.expect.reducedClock);
      if (s.expect.pin !== undefined) expect(first.pinDevice).toBe(s.expect.pin);
      if (s.expect.cpu !== undefined) expect(first.cpu).toBe(s.expect.cpu);
      if (s.expect.exclude !== undefined) expect(first.excludeDevices).toEqual(s.expect.exclude);
      // The pieces cover the failed records exactly.
      expect(d.pieces.reduce((a, p) => a + p.range.end - p.range.start, 0)).toBe(8);
      expect(first.retries).toBe(s.rung.retries + 1);
      expect(first.history.at(-1)).toContain(`${s.failure.kind} on`);
    });
  }
});
