/**
 * Per-device trend detection over a sliding window of dcgm-exporter readings (pure: time comes with each
 * reading). A device is `failed` (it cannot run work: a fatal XID, a new uncorrectable ECC error, a failed
 * row remap), `suspect` (it still runs, a failure is predicted: checkpoint first, then move the work), or
 * `healthy`. Every rule and its default is documented on DetectorConfig; docs/adr/0096-predictive-gpu-health.md
 * says where the defaults come from (tuned on the generated series' tuning seeds, reported on others); the
 * thermal creep rule is ADR 0154, its hold ADR 0168. Counted events (correctable ECC, NVLink CRC) are tested as
 * scrapes with new errors against the device's own long-run rate of them (ADR 0146; ADR 0169 adds a 15 min
 * window for ECC and the same test for NVLink).
 */
import type { DcgmFields } from './dcgm.ts';
import { xidInfo } from './xid.ts';

export type HealthState = 'healthy' | 'suspect' | 'failed';

/** Which rule fired (stable codes for metrics and tests; the reason is for people). */
export type HealthSignal =
  | 'xid-fatal'
  | 'xid-precursor'
  | 'ecc-dbe'
  | 'row-remap-failure'
  | 'retired-pages'
  | 'row-remap-pending'
  | 'ecc-sbe-rate'
  | 'ecc-sbe-surge'
  | 'temperature'
  | 'temperature-rise'
  | 'temperature-creep'
  | 'nvlink-crc-rate'
  | 'ecc-sbe-surge-short'
  | 'nvlink-crc-surge';

export interface Verdict {
  readonly state: HealthState;
  readonly signal?: HealthSignal;
  /** For `sits explain` and the checkpoint intent: what was seen, with the numbers. */
  readonly reason: string;
}

export interface DetectorConfig {
  /** Sliding window for rates and trends. */
  readonly windowMs: number;
  /** Correctable (single-bit) volatile ECC errors within the window that make a device suspect. */
  readonly sbePerWindow: number;
  /** NVLink CRC (flit + data) errors within the window that make a device suspect. */
  readonly nvlinkCrcPerWindow: number;
  /** GPU temperature at or above which the device is suspect (slowdown is near). */
  readonly tempSuspectC: number;
  /**
   * ...as the mean of the readings within this time (ADR 0170): one scrape is one noisy sensor reading (about
   * ±0.7 °C and rounded to a degree), so a GPU that runs at 86 °C would touch 88 now and then; slowdown follows
   * the sustained temperature.
   */
  readonly tempSuspectMs: number;
  /** A rise of at least this many °C per hour across the window, at roughly constant power, is a cooling fault. */
  readonly tempRiseCPerHour: number;
  /** ...counted only above this temperature (an idle GPU in a cold aisle drifting a little is not a fault). */
  readonly tempRiseFloorC: number;
  /** "Roughly constant power": the power at the window's end within this fraction of its start. */
  readonly powerSteadyFraction: number;
  /** The rise must hold this long without a break (noise flickers, a creep persists). */
  readonly tempRiseHoldMs: number;
  /**
   * SBE surge (ADR 0146): scrapes with new correctable ECC errors within `sbeSurgeWindowMs`, against the device's
   * own long-run rate of such scrapes, as a Poisson tail. Counting scrapes, not errors, makes a one-off burst
   * (many errors in one scrape) one event; comparing with the device's own rate keeps a steady trickler quiet.
   */
  readonly sbeSurgeWindowMs: number;
  /** Suspect when P(at least that many scrapes with new errors | the device's rate) falls below this. */
  readonly sbeSurgeP: number;
  /** ... and at least this many such scrapes. */
  readonly sbeSurgeMin: number;
  /** Prior of the long-run rate (scrapes with new errors per hour, weighted as `sbePriorHours` of history). */
  readonly sbePriorPerHour: number;
  readonly sbePriorHours: number;
  /**
   * Short SBE surge (ADR 0169): the same test as the surge rule on a second, shorter window in parallel, with a
   * lower minimum. A memory that degrades within an hour or two brings its first errors only in its last
   * minutes; in a 30 min window three scrapes are diluted by 30 min of the device's rate, in a 15 min window they
   * are less so. A quiet GPU's own rate (stray bursts, one scrape each) makes three scrapes in 15 min rare; a
   * trickler's rate makes them ordinary. Same p and prior as the surge rule.
   */
  readonly sbeSurgeShortWindowMs: number;
  readonly sbeSurgeShortMin: number;
  /**
   * NVLink CRC surge (ADR 0169): scrapes with new CRC errors within `crcSurgeWindowMs` against the link's own
   * long-run rate of such scrapes, as the SBE surge (a blip of many errors is one scrape; a failing link errs
   * scrape after scrape long before the count reaches `nvlinkCrcPerWindow`). Uses `sbeSurgeP` and the prior
   * `sbePriorPerHour` × `sbePriorHours`.
   */
  readonly crcSurgeWindowMs: number;
  readonly crcSurgeMin: number;
  /**
   * Thermal creep on the residual (ADR 0154). The residual is the temperature minus this GPU's own response
   * to its power (°C per W fitted on its history, power through the first-order lag `powerLagMs`): what is
   * left is inlet air plus cooling, so a load change cancels out and no steady-power condition is needed.
   * Only settled points count (power within `creepSettleFraction` of its lagged value), and the slope is
   * pooled within runs of them, each run with its own offset, so the fit's error times a power step is no
   * rise. Over `creepWindowMs` the slope must be at least `creepRateCPerHour` and `creepZ` standard errors
   * above zero; in each of `creepParts` equal parts at least `creepConvexity` × that slope (a cooling fault
   * keeps rising, a hot-aisle step or any step response levels off); for `creepHoldMs` of evidence
   * (`creepHoldDecay`, ADR 0168).
   */
  readonly creepWindowMs: number;
  readonly creepParts: number;
  readonly creepRateCPerHour: number;
  readonly creepConvexity: number;
  readonly creepSettleFraction: number;
  /** Share of the window's points that must be settled. */
  readonly creepSettledShare: number;
  /** The rise must stand this many standard errors above zero (the fit's scatter, at least `creepNoiseFloorC`). */
  readonly creepZ: number;
  readonly creepNoiseFloorC: number;
  readonly creepHoldMs: number;
  /**
   * The hold is sequential evidence, not an unbroken run (ADR 0168): each minute the rule holds adds a minute,
   * each minute it does not takes `creepHoldDecay` minutes away (a CUSUM with drift, floored at zero), and the
   * verdict comes at `creepHoldMs`. A short creep flickers through the test (the parts' slopes over 15 min have
   * a standard error near 3 °C/h), so an unbroken run rarely lasts; noise passing the test now and then is
   * drained at this rate. `Infinity` is the old rule: any lapse starts the hold again.
   */
  readonly creepHoldDecay: number;
  /** The thermal lag between power and temperature (a heat sink's time constant: minutes). */
  readonly powerLagMs: number;
  /**
   * Prior thermal resistance (°C per W) and its weight (samples × (100 W)²). The creep rule waits until the
   * GPU's history varies in power by at least that weight, so the fit is its own.
   */
  readonly thermalPriorCPerW: number;
  readonly thermalPriorWeight: number;
  /** Half-life of the history the thermal fit weighs (points enter it once they leave the window). */
  readonly thermalHalfLifeMs: number;
}

export const DEFAULT_DETECTOR: DetectorConfig = {
  windowMs: 60 * 60_000,
  sbePerWindow: 16,
  nvlinkCrcPerWindow: 120,
  tempSuspectC: 88,
  tempSuspectMs: 5 * 60_000,
  tempRiseCPerHour: 5,
  tempRiseFloorC: 45,
  powerSteadyFraction: 0.15,
  tempRiseHoldMs: 20 * 60_000,
  sbeSurgeWindowMs: 30 * 60_000,
  sbeSurgeP: 1e-6,
  sbeSurgeMin: 4,
  sbePriorPerHour: 1,
  sbePriorHours: 2,
  sbeSurgeShortWindowMs: 15 * 60_000,
  sbeSurgeShortMin: 3,
  crcSurgeWindowMs: 30 * 60_000,
  crcSurgeMin: 4,
  creepWindowMs: 45 * 60_000,
  creepParts: 3,
  creepRateCPerHour: 4,
  creepConvexity: 0.4,
  creepSettleFraction: 0.15,
  creepSettledShare: 0.5,
  creepZ: 5,
  creepNoiseFloorC: 0.5,
  creepHoldMs: 10 * 60_000,
  creepHoldDecay: 0.5,
  powerLagMs: 3 * 60_000,
  thermalPriorCPerW: 0.07,
  thermalPriorWeight: 60,
  thermalHalfLifeMs: 24 * 3_600_000,
};

export const HEALTHY: Verdict = { state: 'healthy', reason: 'no fault signal' };

interface Point {
  readonly t: number;
  readonly temp: number;
  /** The scrape brought new correctable ECC errors. */
  readonly sbeNew: boolean;
  readonly power: number;
  /** Power through the thermal lag (what the temperature follows). */
  readonly pf: number;
  readonly sbe: number;
  readonly crc: number;
  /** The scrape brought new NVLink CRC errors. */
  readonly crcNew: boolean;
}

interface DeviceTrack {
  points: Point[];
  head: number;
  /** Last XID value seen: DCGM_FI_DEV_XID_ERRORS is sticky (NVIDIA/dcgm-exporter#500), only a change is news. */
  lastXid: number;
  dbe: number | undefined;
  retired: number | undefined;
  remapped: number | undefined;
  activeXids: ReadonlySet<number>;
  /** Since when the temperature-rise condition has held (NaN: it does not). */
  riseSinceMs: number;
  verdict: Verdict;
  /** Scrapes with new SBE errors and hours observed, all history (for the long-run rate). */
  sbeScrapes: number;
  firstT: number;
  lastSbe: number;
  /** Scrapes with new NVLink CRC errors, all history, and the last CRC total (ADR 0169). */
  crcScrapes: number;
  lastCrc: number;
  /** Lag-filtered power and when it was last updated. */
  pf: number;
  pfT: number;
  /** Exponentially weighted sums of (pf, temp) of the points that left the window: the thermal fit. */
  fit: { w: number; p: number; t: number; pp: number; pt: number; at: number };
  /** The creep hold's evidence (ms; NaN: none) and when the creep rule last ran (ADR 0168). */
  creepEvidenceMs: number;
  creepLastT: number;
}

const NaNish = (v: number | undefined): number => (v === undefined ? Number.NaN : v);

/** Mean of a field over the points [from, to) of the window. */
function mean(ps: readonly Point[], from: number, to: number, f: (p: Point) => number): number {
  let s = 0;
  let c = 0;
  for (let i = from; i < to; i++) {
    const v = f(ps[i] as Point);
    if (!Number.isNaN(v)) {
      s += v;
      c++;
    }
  }
  return c === 0 ? Number.NaN : s / c;
}

/** P(X ≥ k) for X ~ Poisson(mu). */
export function poissonTail(k: number, mu: number): number {
  if (k <= 0) return 1;
  if (mu <= 0) return 0;
  let term = Math.exp(-mu);
  let below = 0;
  for (let i = 0; i < k; i++) {
    below += term;
    term *= mu / (i + 1);
  }
  // For small tails 1 − below loses precision: sum the upper terms instead.
  if (below < 0.99) return Math.max(0, 1 - below);
  let upper = 0;
  for (let i = k; i < k + 200 && term > 0; i++) {
    upper += term;
    term *= mu / (i + 1);
  }
  return upper;
}

export class HealthDetector {
  private readonly tracks = new Map<string, DeviceTrack>();

  constructor(readonly config: DetectorConfig = DEFAULT_DETECTOR) {}

  /** The last verdict for a device (healthy when never seen). */
  current(device: string): Verdict {
    return this.tracks.get(device)?.verdict ?? HEALTHY;
  }

  forget(device: string): void {
    this.tracks.delete(device);
  }

  /**
   * Feeds one reading of a device (readings of one device must come in time order) and returns its verdict.
   * `device` is any stable key (node/gpu).
   */
  observe(device: string, timeMs: number, f: Readonly<DcgmFields>, activeXids: readonly number[] = []): Verdict {
    const c = this.config;
    let tr = this.tracks.get(device);
    const first = tr === undefined;
    if (tr === undefined) {
      tr = {
        points: [],
        head: 0,
        lastXid: 0,
        dbe: undefined,
        retired: undefined,
        remapped: undefined,
        activeXids: new Set(),
        riseSinceMs: Number.NaN,
        verdict: HEALTHY,
        sbeScrapes: 0,
        firstT: timeMs,
        lastSbe: Number.NaN,
        crcScrapes: 0,
        lastCrc: Number.NaN,
        pf: Number.NaN,
        pfT: timeMs,
        fit: { w: 0, p: 0, t: 0, pp: 0, pt: 0, at: timeMs },
        creepEvidenceMs: Number.NaN,
        creepLastT: Number.NaN,
      };
      this.tracks.set(device, tr);
    }
    const sbe = NaNish(f.sbeVolTotal);
    const crc =
      f.nvlinkCrcFlitTotal === undefined && f.nvlinkCrcDataTotal === undefined ? Number.NaN : (f.nvlinkCrcFlitTotal ?? 0) + (f.nvlinkCrcDataTotal ?? 0);
    // A counter that went down (a reset) is no news; only a rise is.
    const sbeNew = !Number.isNaN(sbe) && !Number.isNaN(tr.lastSbe) && sbe > tr.lastSbe;
    if (!Number.isNaN(sbe)) tr.lastSbe = sbe;
    if (sbeNew) tr.sbeScrapes++;
    const crcNew = !Number.isNaN(crc) && !Number.isNaN(tr.lastCrc) && crc > tr.lastCrc;
    if (!Number.isNaN(crc)) tr.lastCrc = crc;
    if (crcNew) tr.crcScrapes++;
    const power = NaNish(f.powerW);
    if (!Number.isNaN(power)) {
      tr.pf = Number.isNaN(tr.pf) ? power : tr.pf + (power - tr.pf) * (1 - Math.exp(-(timeMs - tr.pfT) / c.powerLagMs));
      tr.pfT = timeMs;
    }
    tr.points.push({ t: timeMs, temp: NaNish(f.tempC), sbeNew, power, pf: tr.pf, sbe, crc, crcNew });
    while (tr.head < tr.points.length && (tr.points[tr.head] as Point).t < timeMs - c.windowMs) {
      this.fitAdd(tr, tr.points[tr.head] as Point);
      tr.head++;
    }
    if (tr.head > 1024 && tr.head * 2 > tr.points.length) {
      tr.points = tr.points.slice(tr.head);
      tr.head = 0;
    }
    const verdict = this.judge(tr, f, activeXids, first);
    tr.verdict = verdict;
    return verdict;
  }

  /** A point that left the window joins the GPU's thermal fit (older points weigh less). */
  private fitAdd(tr: DeviceTrack, p: Point): void {
    if (Number.isNaN(p.temp) || Number.isNaN(p.pf)) return;
    const f = tr.fit;
    const decay = Math.pow(0.5, Math.max(0, p.t - f.at) / this.config.thermalHalfLifeMs);
    f.w = f.w * decay + 1;
    f.p = f.p * decay + p.pf;
    f.t = f.t * decay + p.temp;
    f.pp = f.pp * decay + p.pf * p.pf;
    f.pt = f.pt * decay + p.pf * p.temp;
    f.at = p.t;
  }

  /** This GPU's thermal resistance (°C per W): its history's slope of temperature on power, shrunk to the prior. */
  thermalResistance(device: string): number {
    const tr = this.tracks.get(device);
    return tr === undefined ? this.config.thermalPriorCPerW : this.resistance(tr);
  }

  private resistance(tr: DeviceTrack): number {
    const c = this.config;
    const f = tr.fit;
    const lambda = c.thermalPriorWeight * 100 * 100;
    const sxy = f.w === 0 ? 0 : f.pt - (f.p * f.t) / f.w;
    return (sxy + lambda * c.thermalPriorCPerW) / (this.powerSpread(tr) + lambda);
  }

  /** How much the fit's history varies in power (Σ(pf − mean)², samples × W²): what the fit is learnt from. */
  private powerSpread(tr: DeviceTrack): number {
    const f = tr.fit;
    return f.w === 0 ? 0 : Math.max(0, f.pp - (f.p * f.p) / f.w);
  }

  /**
   * Slope (°C/h) of the thermal residual over the points [from, end) that are settled (power at its lagged
   * value: a load change is over), pooled within runs of settled points: each run has its own offset, so a
   * residual step at a load change (the fit's error times the power step) is no rise. NaN when too few points.
   */
  private residualSlope(tr: DeviceTrack, from: number, to: number, R: number): { slope: number; z: number; settled: number } {
    const c = this.config;
    const ps = tr.points;
    let sxx = 0;
    let sxy = 0;
    let syy = 0;
    let runs = 0;
    let settled = 0;
    let n = 0;
    let srr = 0;
    let st = 0;
    let sr = 0;
    let stt = 0;
    let str = 0;
    const close = (): void => {
      if (n >= 2) {
        sxx += stt - (st * st) / n;
        sxy += str - (st * sr) / n;
        syy += srr - (sr * sr) / n;
        runs++;
      }
      n = st = sr = stt = str = srr = 0;
    };
    const t0 = (ps[from] as Point | undefined)?.t ?? 0;
    for (let i = from; i < to; i++) {
      const p = ps[i] as Point;
      const ok =
        !Number.isNaN(p.temp) && !Number.isNaN(p.pf) && !Number.isNaN(p.power) && Math.abs(p.power - p.pf) <= c.creepSettleFraction * Math.max(p.pf, 1);
      if (!ok) {
        close();
        continue;
      }
      const x = (p.t - t0) / 3_600_000;
      const r = p.temp - R * p.pf;
      settled++;
      n++;
      st += x;
      sr += r;
      stt += x * x;
      str += x * r;
      srr += r * r;
    }
    close();
    if (sxx <= 0) return { slope: Number.NaN, z: Number.NaN, settled };
    const slope = sxy / sxx;
    // The slope's standard error from the scatter about the fit (one offset per run, one common slope).
    const dof = settled - runs - 1;
    const sigma2 = dof <= 0 ? Number.NaN : Math.max(syy - slope * sxy, 0) / dof;
    return { slope, z: slope / Math.sqrt(Math.max(sigma2, c.creepNoiseFloorC ** 2) / sxx), settled };
  }

  /** The creep rule's reason, or undefined (ADR 0154). */
  private creep(tr: DeviceTrack, now: number): string | undefined {
    const c = this.config;
    const ps = tr.points;
    const since = (ms: number): number => {
      let i = ps.length;
      while (i > tr.head && (ps[i - 1] as Point).t > now - ms) i--;
      return i;
    };
    const from = since(c.creepWindowMs);
    // Until the GPU's own history outweighs the prior, its response to power is not known (a T4 runs near
    // 0.5 °C/W, an H100 near 0.06): no creep verdict from a guess.
    if (this.powerSpread(tr) < c.thermalPriorWeight * 100 * 100) {
      tr.creepEvidenceMs = Number.NaN;
      tr.creepLastT = now;
      return undefined;
    }
    const oldest = ps[from] as Point | undefined;
    const R = this.resistance(tr);
    const whole = oldest === undefined || now - oldest.t < c.creepWindowMs * 0.9 ? undefined : this.residualSlope(tr, from, ps.length, R);
    // The window's parts (oldest first): a creep rises in every one, a step (hot aisle) only in one or two.
    const k = c.creepParts;
    const parts: number[] = [];
    if (whole !== undefined)
      for (let i = 0; i < k; i++)
        parts.push(this.residualSlope(tr, since(c.creepWindowMs * (1 - i / k)), since(c.creepWindowMs * (1 - (i + 1) / k) - 1), R).slope);
    const holds =
      whole !== undefined &&
      whole.settled >= c.creepSettledShare * (ps.length - from) &&
      whole.slope >= c.creepRateCPerHour &&
      whole.z >= c.creepZ &&
      parts.every((p) => p >= c.creepConvexity * whole.slope);
    const dt = Number.isNaN(tr.creepLastT) ? 0 : now - tr.creepLastT;
    tr.creepLastT = now;
    // The hold's evidence (ADR 0168): NaN until the rule first holds; a lapse drains it at creepHoldDecay.
    if (!holds) {
      const left = tr.creepEvidenceMs - c.creepHoldDecay * dt;
      tr.creepEvidenceMs = left > 0 ? left : Number.NaN;
      return undefined;
    }
    tr.creepEvidenceMs = Number.isNaN(tr.creepEvidenceMs) ? 0 : tr.creepEvidenceMs + dt;
    if (tr.creepEvidenceMs < c.creepHoldMs) return undefined;
    const minutes = Math.round(c.creepWindowMs / 60_000);
    return `temperature creeping ${whole.slope.toFixed(1)} °C/h beyond this GPU's response to its power (${R.toFixed(3)} °C/W) over ${minutes} min, rising in each part (${parts.map((p) => p.toFixed(1)).join(', ')} °C/h; threshold ${c.creepRateCPerHour} °C/h), held ${Math.round(tr.creepEvidenceMs / 60_000)} min net of lapses`;
  }

  /** The SBE surge rule's reason, or undefined when the recent scrapes with new errors are not surprising. */
  private sbeSurge(tr: DeviceTrack, now: number): string | undefined {
    const c = this.config;
    const { k, mu, p } = this.scrapeSurge(tr, now, c.sbeSurgeWindowMs, (q) => q.sbeNew, tr.sbeScrapes);
    if (k < c.sbeSurgeMin || p >= c.sbeSurgeP) return undefined;
    const minutes = Math.round(c.sbeSurgeWindowMs / 60_000);
    return `correctable ECC errors accelerating: new ones in ${k} scrapes of the last ${minutes} min, ${mu.toFixed(2)} expected from this GPU's rate (p ${p.toExponential(1)} < ${c.sbeSurgeP})`;
  }

  /**
   * Scrapes flagged by `isNew` within the last `windowMs` against the device's own long-run rate of them
   * (`total` over all history), as the SBE surge (ADR 0146, 0169): the count k, the expected count and the tail.
   */
  private scrapeSurge(tr: DeviceTrack, now: number, windowMs: number, isNew: (p: Point) => boolean, total: number): { k: number; mu: number; p: number } {
    const c = this.config;
    let k = 0;
    for (let i = tr.points.length - 1; i >= tr.head; i--) {
      const p = tr.points[i] as Point;
      if (p.t <= now - windowMs) break;
      if (isNew(p)) k++;
    }
    const hour = 3_600_000;
    const oldHours = Math.max(0, (now - tr.firstT - windowMs) / hour);
    const mu = (((total - k + c.sbePriorPerHour * c.sbePriorHours) / (oldHours + c.sbePriorHours)) * windowMs) / hour;
    return { k, mu, p: poissonTail(k, mu) };
  }

  /** The short SBE surge and the NVLink CRC surge rules (ADR 0169): their signal and reason, or undefined. */
  private shortSurges(tr: DeviceTrack, now: number): { signal: HealthSignal; reason: string } | undefined {
    const c = this.config;
    const s = this.scrapeSurge(tr, now, c.sbeSurgeShortWindowMs, (p) => p.sbeNew, tr.sbeScrapes);
    if (s.k >= c.sbeSurgeShortMin && s.p < c.sbeSurgeP) {
      return {
        signal: 'ecc-sbe-surge-short',
        reason: `correctable ECC errors accelerating: new ones in ${s.k} scrapes of the last ${Math.round(c.sbeSurgeShortWindowMs / 60_000)} min, ${s.mu.toFixed(3)} expected from this GPU's rate (p ${s.p.toExponential(1)} < ${c.sbeSurgeP})`,
      };
    }
    const l = this.scrapeSurge(tr, now, c.crcSurgeWindowMs, (p) => p.crcNew, tr.crcScrapes);
    if (l.k >= c.crcSurgeMin && l.p < c.sbeSurgeP) {
      return {
        signal: 'nvlink-crc-surge',
        reason: `NVLink CRC errors accelerating: new ones in ${l.k} scrapes of the last ${Math.round(c.crcSurgeWindowMs / 60_000)} min, ${l.mu.toFixed(3)} expected from this link's rate (p ${l.p.toExponential(1)} < ${c.sbeSurgeP})`,
      };
    }
    return undefined;
  }

  private judge(tr: DeviceTrack, f: Readonly<DcgmFields>, activeXids: readonly number[], first: boolean): Verdict {
    const c = this.config;
    let suspect: Verdict | undefined;
    const fail = (signal: HealthSignal, reason: string): Verdict => ({ state: 'failed', signal, reason });
    const warn = (signal: HealthSignal, reason: string): void => {
      suspect ??= { state: 'suspect', signal, reason };
    };

    // XIDs: the sticky gauge (a change, or a non-zero value at first sight) and the windowed "active" list.
    const xids: number[] = [];
    const last = f.lastXid ?? 0;
    if (last !== 0 && (first || last !== tr.lastXid)) xids.push(last);
    tr.lastXid = last;
    const active = new Set(activeXids);
    for (const x of active) if (!tr.activeXids.has(x)) xids.push(x);
    tr.activeXids = active;
    let failed: Verdict | undefined;
    for (const x of xids) {
      const info = xidInfo(x);
      if (info?.class === 'fatal') failed ??= fail('xid-fatal', `XID ${x} (${info.text})`);
      else if (info?.class === 'precursor') warn('xid-precursor', `XID ${x} (${info.text})`);
    }

    // Counters whose any increase is news (a reset of the counter, e.g. after a GPU reset, is not).
    const grew = (prev: number | undefined, now: number | undefined): number => (prev === undefined || now === undefined || now < prev ? 0 : now - prev);
    const dbeNow = f.dbeVolTotal;
    const dbeUp = first ? (dbeNow ?? 0) : grew(tr.dbe, dbeNow);
    tr.dbe = dbeNow ?? tr.dbe;
    if (dbeUp > 0) failed ??= fail('ecc-dbe', `${dbeUp} new uncorrectable (double-bit) ECC error(s)`);
    if ((f.rowRemapFailure ?? 0) > 0) failed ??= fail('row-remap-failure', 'row remapping failed (the memory can no longer be repaired)');
    if (failed !== undefined) return failed;

    const retiredNow = f.retiredSbe === undefined && f.retiredDbe === undefined ? undefined : (f.retiredSbe ?? 0) + (f.retiredDbe ?? 0);
    const retiredUp = grew(tr.retired, retiredNow);
    tr.retired = retiredNow ?? tr.retired;
    if ((f.retiredPending ?? 0) > 0) warn('retired-pages', `${f.retiredPending} page(s) pending retirement (reset needed)`);
    else if (retiredUp > 0) warn('retired-pages', `${retiredUp} page(s) newly retired`);
    const remappedNow = f.uncorrectableRemappedRows;
    const remappedUp = grew(tr.remapped, remappedNow);
    tr.remapped = remappedNow ?? tr.remapped;
    if ((f.rowRemapPending ?? 0) > 0) warn('row-remap-pending', 'row remap pending (reset needed)');
    else if (remappedUp > 0) warn('row-remap-pending', `${remappedUp} row(s) remapped for uncorrectable errors`);

    // Rates and trends over the window.
    const ps = tr.points;
    const n = ps.length - tr.head;
    const oldest = ps[tr.head] as Point;
    const newest = ps[ps.length - 1] as Point;
    const minutes = Math.round(c.windowMs / 60_000);
    if (n >= 2) {
      const sbeUp = newest.sbe - oldest.sbe;
      if (sbeUp >= c.sbePerWindow) warn('ecc-sbe-rate', `correctable ECC errors rising: ${sbeUp} in ${minutes} min (threshold ${c.sbePerWindow})`);
      const surge = this.sbeSurge(tr, newest.t);
      if (surge !== undefined) warn('ecc-sbe-surge', surge);
      const crcUp = newest.crc - oldest.crc;
      if (crcUp >= c.nvlinkCrcPerWindow) warn('nvlink-crc-rate', `NVLink CRC errors rising: ${crcUp} in ${minutes} min (threshold ${c.nvlinkCrcPerWindow})`);
      const short = this.shortSurges(tr, newest.t);
      if (short !== undefined) warn(short.signal, short.reason);
    }
    let recent = ps.length - 1;
    while (recent > tr.head && (ps[recent - 1] as Point).t > newest.t - c.tempSuspectMs) recent--;
    const hot = mean(ps, recent, ps.length, (p) => p.temp);
    if (hot >= c.tempSuspectC) {
      const span = Math.round(c.tempSuspectMs / 60_000);
      warn(
        'temperature',
        ps.length - recent === 1
          ? `GPU at ${newest.temp} °C (threshold ${c.tempSuspectC} °C)`
          : `GPU at ${hot.toFixed(1)} °C on average over the last ${span} min (threshold ${c.tempSuspectC} °C)`,
      );
    }
    // Rise across the window, quarter by quarter: a creep rises in every quarter; a step (a hot aisle, a fan
    // curve, a job starting) sits in one or two of them. Power must stay roughly where it was.
    const spanMs = newest.t - oldest.t;
    if (!(n >= 8 && spanMs >= c.windowMs * 0.75 && newest.temp >= c.tempRiseFloorC)) tr.riseSinceMs = Number.NaN;
    if (n >= 8 && spanMs >= c.windowMs * 0.75 && newest.temp >= c.tempRiseFloorC) {
      const q = Math.floor(n / 4);
      const qs = [0, 1, 2, 3].map((i) => mean(ps, tr.head + i * q, i === 3 ? ps.length : tr.head + (i + 1) * q, (p) => p.temp));
      const p0 = mean(ps, tr.head, tr.head + q, (p) => p.power);
      const p1 = mean(ps, ps.length - q, ps.length, (p) => p.power);
      const quarterHours = spanMs / 4 / 3_600_000;
      const [m0, m1, m2, m3] = qs as [number, number, number, number];
      const rate = (m3 - m0) / (3 * quarterHours);
      const step = (rate * quarterHours) / 3;
      const everyQuarter = m1 - m0 >= step && m2 - m1 >= step && m3 - m2 >= step;
      const steady = Number.isNaN(p0) || Number.isNaN(p1) || Math.abs(p1 - p0) <= c.powerSteadyFraction * Math.max(p0, 1);
      const holds = rate >= c.tempRiseCPerHour && everyQuarter && steady;
      if (!holds) tr.riseSinceMs = Number.NaN;
      else if (Number.isNaN(tr.riseSinceMs)) tr.riseSinceMs = newest.t;
      if (holds && newest.t - tr.riseSinceMs >= c.tempRiseHoldMs)
        warn('temperature-rise', `temperature rising ${rate.toFixed(1)} °C/h at steady power, now ${newest.temp} °C (threshold ${c.tempRiseCPerHour} °C/h)`);
    }
    const creep = this.creep(tr, newest.t);
    if (creep !== undefined) warn('temperature-creep', creep);
    return suspect ?? HEALTHY;
  }
}
