import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readDcgmMetrics, type DcgmFields } from './dcgm.ts';
import { seededRng } from '../ports.ts';
import { DEFAULT_DETECTOR, HealthDetector, poissonTail } from './detector.ts';
import { T4_LABELS, withValue } from './testing.ts';

const T4 = readFileSync(new URL('./fixtures/dcgm-t4-datadog.txt', import.meta.url), 'utf8');
const fieldsOf = (text: string): DcgmFields => {
  const r = readDcgmMetrics(text);
  if (!r.ok || r.value[0] === undefined) throw new Error(r.ok ? 'no device' : r.error);
  return r.value[0].fields;
};
const MIN = 60_000;

describe('HealthDetector', () => {
  it('the recorded T4 scrape, repeated for two hours, stays healthy', () => {
    const d = new HealthDetector();
    for (let t = 0; t < 120; t++) expect(d.observe('n/0', t * MIN, fieldsOf(T4)).state).toBe('healthy');
  });

  it('a fatal XID in the recorded scrape: failed with the catalogue text; the sticky gauge does not fire again', () => {
    const d = new HealthDetector();
    d.observe('n/0', 0, fieldsOf(T4));
    const x79 = fieldsOf(withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', 0, 79, T4_LABELS));
    expect(d.observe('n/0', MIN, x79)).toEqual({ state: 'failed', signal: 'xid-fatal', reason: 'XID 79 (GPU has fallen off the bus)' });
    expect(d.observe('n/0', 2 * MIN, x79).state).toBe('healthy');
  });

  it('application XIDs (13, 31, 43, 45) say nothing about the device', () => {
    const d = new HealthDetector();
    for (const [i, x] of [13, 31, 43, 45].entries())
      expect(d.observe('n/0', i * MIN, fieldsOf(withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', 0, x, T4_LABELS))).state).toBe('healthy');
  });

  it('precursor XIDs (63, 92) make the device suspect', () => {
    const d = new HealthDetector();
    expect(d.observe('n/0', 0, fieldsOf(withValue(T4, 'DCGM_FI_DEV_XID_ERRORS', 0, 92, T4_LABELS)))).toMatchObject({
      state: 'suspect',
      signal: 'xid-precursor',
    });
  });

  it('a growing correctable ECC count is suspect once the window holds the threshold; a few stray ones are not', () => {
    const d = new HealthDetector();
    const at = (sbe: number): DcgmFields => fieldsOf(withValue(T4, 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 0, sbe, T4_LABELS));
    expect(d.observe('n/0', 0, at(0)).state).toBe('healthy');
    expect(d.observe('n/0', 10 * MIN, at(3)).state).toBe('healthy');
    // 3 an hour later is outside the window: the stray burst ages out.
    expect(d.observe('n/0', 80 * MIN, at(5)).state).toBe('healthy');
    const v = d.observe('n/0', 100 * MIN, at(5 + DEFAULT_DETECTOR.sbePerWindow));
    expect(v).toMatchObject({ state: 'suspect', signal: 'ecc-sbe-rate' });
    expect(v.reason).toBe(`correctable ECC errors rising: ${DEFAULT_DETECTOR.sbePerWindow} in 60 min (threshold ${DEFAULT_DETECTOR.sbePerWindow})`);
  });

  it('a new double-bit ECC error or a failed row remap: failed', () => {
    const d = new HealthDetector();
    d.observe('n/0', 0, fieldsOf(withValue(T4, 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 0, 0, T4_LABELS)));
    expect(d.observe('n/0', MIN, fieldsOf(withValue(T4, 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 0, 2, T4_LABELS)))).toMatchObject({
      state: 'failed',
      signal: 'ecc-dbe',
      reason: '2 new uncorrectable (double-bit) ECC error(s)',
    });
    expect(new HealthDetector().observe('n/0', 0, fieldsOf(withValue(T4, 'DCGM_FI_DEV_ROW_REMAP_FAILURE', 0, 1, T4_LABELS))).signal).toBe('row-remap-failure');
  });

  it('pages pending retirement and a pending row remap: suspect', () => {
    expect(new HealthDetector().observe('n/0', 0, fieldsOf(withValue(T4, 'DCGM_FI_DEV_RETIRED_PENDING', 0, 1, T4_LABELS)))).toMatchObject({
      state: 'suspect',
      signal: 'retired-pages',
    });
    expect(new HealthDetector().observe('n/0', 0, fieldsOf(withValue(T4, 'DCGM_FI_DEV_ROW_REMAP_PENDING', 0, 1, T4_LABELS)))).toMatchObject({
      state: 'suspect',
      signal: 'row-remap-pending',
    });
  });

  it('temperature creeping up at steady power is a cooling fault; the same rise with the load (power) is not', () => {
    const creep = new HealthDetector();
    const load = new HealthDetector();
    let last = creep.observe('n/0', 0, { tempC: 70, powerW: 300 });
    // The window fills (45 min), then the rise must hold for tempRiseHoldMs.
    for (let m = 1; m <= 70; m++) {
      last = creep.observe('n/0', m * MIN, { tempC: 70 + m * 0.12, powerW: 300 });
      expect(load.observe('n/0', m * MIN, { tempC: 40 + m * 0.6, powerW: 80 + m * 4 }).state).not.toBe('suspect');
    }
    expect(last).toMatchObject({ state: 'suspect', signal: 'temperature-rise' });
    expect(new HealthDetector().observe('n/0', 0, { tempC: 90 })).toMatchObject({
      state: 'suspect',
      signal: 'temperature',
      reason: 'GPU at 90 °C (threshold 88 °C)',
    });
  });

  it('the temperature limit is on the last 5 min, not one reading: a noise spike to 88 °C on a GPU at 86 °C is not suspect, a GPU held at 89 °C is', () => {
    const spiky = new HealthDetector();
    const readings = [86, 85, 87, 86, 85, 86, 86, 88];
    const verdicts = readings.map((tempC, m) => spiky.observe('n/0', m * MIN, { tempC, powerW: 680 }));
    expect(verdicts.every((v) => v.state === 'healthy')).toBe(true);
    // The rule as it was (one reading) would have fired on the last one.
    const single = new HealthDetector({ ...DEFAULT_DETECTOR, tempSuspectMs: 0 });
    expect(readings.map((tempC, m) => single.observe('n/0', m * MIN, { tempC, powerW: 680 }).state).at(-1)).toBe('suspect');
    const hot = new HealthDetector();
    let v = hot.observe('n/0', 0, { tempC: 86, powerW: 680 });
    for (let m = 1; m <= 6; m++) v = hot.observe('n/0', m * MIN, { tempC: 89, powerW: 680 });
    expect(v).toMatchObject({ state: 'suspect', signal: 'temperature', reason: 'GPU at 89.0 °C on average over the last 5 min (threshold 88 °C)' });
  });

  // A GPU on a first-order thermal model (0.07 °C/W above the inlet, 3 min lag): six hours of jobs and idle
  // gaps first, so that its thermal fit is its own; then `tail` minutes in which `extra(m)` °C are added to
  // the inlet and the load changes at minute 20 (a job ends) and 32 (another starts).
  const thermalRun = (d: HealthDetector, extra: (m: number) => number, tail: number): { first: number; signals: Set<string> } => {
    let temp = 30;
    let first = -1;
    const signals = new Set<string>();
    const history = 6 * 60;
    for (let m = 0; m <= history + tail; m++) {
      const k = m - history;
      const busy = k < 0 ? Math.floor(m / 40) % 2 === 0 : k < 20 || k >= 32;
      const power = busy ? 420 + 15 * Math.sin(m) : 70;
      temp += (26 + 0.07 * power + (k < 0 ? 0 : extra(k)) - temp) * (1 - Math.exp(-1 / 3));
      const v = d.observe('n/0', m * MIN, { tempC: Math.round(temp + 0.4 * Math.sin(7 * m)), powerW: power });
      if (v.signal !== undefined) signals.add(v.signal);
      if (k >= 0 && first < 0 && v.signal === 'temperature-creep') first = k;
    }
    return { first, signals };
  };

  it('a cooling creep through load changes trips the creep rule on the residual; the steady-power rule misses it', () => {
    const d = new HealthDetector();
    const r = thermalRun(d, (m) => (8 * m) / 60, 100);
    expect(r.first).toBeGreaterThan(40);
    // Parts without settled points (the idle gap) count as not rising: the verdict waits until the window is past it.
    expect(r.first).toBeLessThan(95);
    expect(r.signals.has('temperature-rise')).toBe(false);
    expect(d.thermalResistance('n/0')).toBeCloseTo(0.07, 2);
    const v = thermalRun(new HealthDetector(), (m) => (8 * m) / 60, r.first);
    expect(v.signals.has('temperature-creep')).toBe(true);
  });

  it('a hot-aisle step (8 °C over 20 min, then level) and the load changes alone never trip the creep rule', () => {
    const step = thermalRun(new HealthDetector(), (m) => 8 * Math.min(1, Math.max(0, m - 5) / 20), 180);
    expect(step.first).toBe(-1);
    expect(step.signals.has('temperature-creep')).toBe(false);
    expect(thermalRun(new HealthDetector(), () => 0, 180).signals.size).toBe(0);
  });

  // The same GPU with the generator's noise (sensor σ 0.7 °C and rounding, power ±2 %) from a seeded draw:
  // `busy(k)` is the load after the history, `extra(k)` the added inlet / cooling °C. The first minute of the
  // tail at which `temperature-creep` is the verdict, or -1.
  const noisyRun = (d: HealthDetector, seed: number, extra: (m: number) => number, tail: number, busy: (k: number) => boolean): number => {
    const rng = seededRng(seed);
    const gauss = (): number => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
    let temp = 30;
    const history = 6 * 60;
    for (let m = 0; m <= history + tail; m++) {
      const k = m - history;
      const power = (k < 0 ? Math.floor(m / 40) % 2 === 0 : busy(k)) ? 420 * (1 + 0.02 * gauss()) : 70;
      temp += (26 + 0.07 * power + (k < 0 ? 0 : extra(k)) - temp) * (1 - Math.exp(-1 / 3));
      const v = d.observe('n/0', m * MIN, { tempC: Math.round(temp + 0.7 * gauss()), powerW: Math.round(power * 10) / 10 });
      if (k >= 0 && v.signal === 'temperature-creep') return k;
    }
    return -1;
  };

  it('a short creep that flickers through the test: the hold as evidence (ADR 0168) sees it, an unbroken hold mostly not', () => {
    // A 75 min cooling fault starting at 3 °C/h and growing (the generator's shape), failing at minute 75:
    // the verdict must come at least 2 min before that. Twenty draws of the noise.
    const creep = (m: number): number => (6 / 60) * m * (0.5 + (m / 75) ** 2.5);
    const unbroken = { ...DEFAULT_DETECTOR, creepHoldDecay: Number.POSITIVE_INFINITY };
    let oldCaught = 0;
    let newCaught = 0;
    for (let s = 1; s <= 20; s++) {
      const before = noisyRun(new HealthDetector(unbroken), s, creep, 75, () => true);
      const after = noisyRun(new HealthDetector(), s, creep, 75, () => true);
      if (before >= 0 && before <= 73) oldCaught++;
      if (after >= 0 && after <= 73) newCaught++;
      // The evidence is never less than the unbroken run: never later.
      if (before >= 0) expect(after).toBeGreaterThanOrEqual(0);
      if (before >= 0) expect(after).toBeLessThanOrEqual(before);
    }
    expect(oldCaught).toBeLessThanOrEqual(6);
    expect(newCaught).toBeGreaterThanOrEqual(12);
  });

  it('with that noise, hot-aisle steps that level off, load changes alone and the diurnal inlet never trip the evidence hold', () => {
    for (let s = 1; s <= 20; s++) {
      for (const rise of [4, 7, 10])
        expect(
          noisyRun(
            new HealthDetector(),
            100 + s,
            (m) => rise * Math.min(1, Math.max(0, m - 5) / 20),
            240,
            () => true,
          ),
        ).toBe(-1);
      // A job every other 25 min.
      expect(
        noisyRun(
          new HealthDetector(),
          200 + s,
          () => 0,
          240,
          (k) => Math.floor(k / 25) % 2 === 0,
        ),
      ).toBe(-1);
    }
    // ±2 °C a day, a whole day.
    for (let s = 1; s <= 3; s++)
      expect(
        noisyRun(
          new HealthDetector(),
          300 + s,
          (m) => 2 * Math.sin((2 * Math.PI * m) / 1440),
          1440,
          () => true,
        ),
      ).toBe(-1);
  });

  it('NVLink CRC errors at a rate: suspect', () => {
    const d = new HealthDetector();
    d.observe('n/0', 0, { nvlinkCrcFlitTotal: 10, nvlinkCrcDataTotal: 0 });
    expect(d.observe('n/0', 30 * MIN, { nvlinkCrcFlitTotal: 150, nvlinkCrcDataTotal: 100 })).toMatchObject({ state: 'suspect', signal: 'nvlink-crc-rate' });
  });

  it("correctable ECC errors in more and more scrapes, against the GPU's own rate: suspect; a steady trickler and a one-off burst are not", () => {
    // A trickler: a new error every 20 min for a day, never surprising against its own rate.
    const trickler = new HealthDetector();
    for (let m = 0; m <= 24 * 60; m++) expect(trickler.observe('n/0', m * MIN, { sbeVolTotal: Math.floor(m / 20) }).signal).not.toBe('ecc-sbe-surge');
    // A burst: 12 errors in one scrape is one event.
    const burst = new HealthDetector();
    for (let m = 0; m <= 180; m++) expect(burst.observe('n/0', m * MIN, { sbeVolTotal: m >= 120 ? 12 : 0 }).state).toBe('healthy');
    // Accelerating after 3 quiet hours: new errors in every scrape from minute 180 on.
    // The 30 min rule alone (the short surge of ADR 0169 fires even earlier on this series: below).
    const failing = new HealthDetector({ ...DEFAULT_DETECTOR, sbeSurgeShortMin: Number.POSITIVE_INFINITY });
    let v = failing.observe('n/0', 0, { sbeVolTotal: 0 });
    let at = -1;
    for (let m = 1; m <= 200 && at < 0; m++) {
      v = failing.observe('n/0', m * MIN, { sbeVolTotal: Math.max(0, m - 180) });
      if (v.state !== 'healthy') at = m;
    }
    expect(v).toMatchObject({ state: 'suspect', signal: 'ecc-sbe-surge' });
    expect(at).toBeLessThan(181 + 6); // a handful of scrapes, far below the 16-in-an-hour count rule
    expect(v.reason).toMatch(/^correctable ECC errors accelerating: new ones in \d+ scrapes of the last 30 min/);
    const both = new HealthDetector();
    let first = -1;
    for (let m = 0; m <= 200 && first < 0; m++) if (both.observe('n/0', m * MIN, { sbeVolTotal: Math.max(0, m - 180) }).state !== 'healthy') first = m;
    expect(first).toBeGreaterThan(180);
    expect(first).toBeLessThanOrEqual(at);
  });

  // ADR 0169. A quiet GPU (no new errors for `quietH` hours), then new correctable errors in the scrapes `at`.
  const sbeRun = (
    d: HealthDetector,
    quietH: number,
    at: readonly number[],
    field: 'sbeVolTotal' | 'nvlinkCrcFlitTotal' = 'sbeVolTotal',
    per = 1,
  ): Set<string> => {
    const signals = new Set<string>();
    let total = 0;
    const end = quietH * 60 + Math.max(0, ...at);
    for (let m = 0; m <= end; m++) {
      const k = m - quietH * 60;
      if (at.includes(k)) total += per;
      const v = d.observe('n/0', m * MIN, { [field]: total });
      if (v.signal !== undefined) signals.add(v.signal);
    }
    return signals;
  };

  it('three scrapes with new correctable errors within 15 min on a quiet GPU: the short surge; the 30 min surge and the count miss them', () => {
    expect([...sbeRun(new HealthDetector(), 40, [0, 4, 7])]).toEqual(['ecc-sbe-surge-short']);
    const old = new HealthDetector({ ...DEFAULT_DETECTOR, sbeSurgeShortMin: Number.POSITIVE_INFINITY });
    expect(sbeRun(old, 40, [0, 4, 7]).size).toBe(0);
    const d = new HealthDetector();
    sbeRun(d, 40, [0, 4, 7]);
    expect(d.current('n/0').reason).toMatch(
      /^correctable ECC errors accelerating: new ones in 3 scrapes of the last 15 min, 0\.\d+ expected from this GPU's rate \(p \S+ < 0\.000001\)$/,
    );
  });

  it('the short surge stays quiet for one-off bursts, two close bursts, a new GPU without history and a steady trickler', () => {
    // Bursts of 7 errors, one scrape each, hours apart; then two 5 min apart (14 in an hour: below the count rule too).
    expect(sbeRun(new HealthDetector(), 20, [0, 180, 400, 405], 'sbeVolTotal', 7).size).toBe(0);
    // Without history the prior (1 scrape/h) holds: three scrapes in 15 min within the first hour are not rare enough.
    expect(sbeRun(new HealthDetector(), 0, [10, 14, 17]).has('ecc-sbe-surge-short')).toBe(false);
    // A trickler (a scrape with a new error every 20 min for a day), then three in 9 min: ordinary at its rate.
    const trickler = new HealthDetector();
    const at = [...Array.from({ length: 72 }, (_, i) => i * 20), 1441, 1445, 1449];
    expect(sbeRun(trickler, 0, at).has('ecc-sbe-surge-short')).toBe(false);
  });

  it('NVLink CRC errors in scrape after scrape, far below the count threshold: the CRC surge; blips of 50 are not', () => {
    const d = new HealthDetector();
    expect(sbeRun(d, 20, [0, 3, 5, 7, 8, 9], 'nvlinkCrcFlitTotal', 2).has('nvlink-crc-surge')).toBe(true);
    expect(d.current('n/0').reason).toMatch(/^NVLink CRC errors accelerating: new ones in 6 scrapes of the last 30 min/);
    const old = new HealthDetector({ ...DEFAULT_DETECTOR, crcSurgeMin: Number.POSITIVE_INFINITY });
    expect(sbeRun(old, 20, [0, 3, 5, 7, 8, 9], 'nvlinkCrcFlitTotal', 2).size).toBe(0);
    expect(sbeRun(new HealthDetector(), 20, [0, 120, 240, 250], 'nvlinkCrcFlitTotal', 50).size).toBe(0);
  });

  it('poissonTail', () => {
    expect(poissonTail(0, 3)).toBe(1);
    expect(poissonTail(1, 2)).toBeCloseTo(1 - Math.exp(-2), 12);
    expect(poissonTail(5, 0.25)).toBeCloseTo(6.6117e-6, 9);
    expect(poissonTail(3, 0)).toBe(0);
  });
});
