/**
 * A generated fault series for the health bench (deterministic by seed): GPUs sampled like dcgm-exporter
 * (every `sampleMs`) over `days`. Every device has a load (jobs at varied power, idle gaps), a temperature
 * that follows power through a thermal lag, and benign noise: stray correctable-ECC bursts, a minority of
 * devices with a steady trickle of them, NVLink CRC blips, application XIDs (13/31/43/45), hot-aisle
 * steps, and rare one-off row remaps / page retirements that repair a healthy device. A share of devices
 * fails at a random time: most degrade first (growing correctable ECC then pending retirements; a cooling
 * fault's creep at steady power; a failing NVLink's CRC errors; a row remapping that ends in failure), over a
 * precursor lasting from minutes to two days; the rest fail suddenly (XID 79 with nothing before).
 * The rates are modelling assumptions (docs/adr/0096-predictive-gpu-health.md), not field measurements.
 */
import type { DcgmFields } from '../../core/health/dcgm.ts';
import { seededRng, type Rng } from '../../core/ports.ts';

export type FaultKind = 'memory' | 'thermal' | 'nvlink' | 'row-remap' | 'sudden';

export interface FaultSeriesOptions {
  readonly seed: number;
  readonly devices: number;
  readonly days: number;
  readonly sampleMs?: number;
  /** Share of devices that fail within the series. */
  readonly failingShare?: number;
  /** Share of failures with no precursor. */
  readonly suddenShare?: number;
}

export interface DeviceFault {
  readonly kind: FaultKind;
  readonly failMs: number;
  readonly precursorMs: number;
}

export interface DeviceSeries {
  readonly id: number;
  /** Undefined: the device does not fail within the series. */
  readonly fault: DeviceFault | undefined;
  /** Calls `fn` with each sample in time order (until the failure, included, for a failing device). */
  readonly run: (fn: (timeMs: number, fields: DcgmFields) => void) => void;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const exp = (rng: Rng, mean: number): number => -Math.log(1 - rng.next()) * mean;
const gauss = (rng: Rng): number => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
const uniform = (rng: Rng, a: number, b: number): number => a + (b - a) * rng.next();
/** A Poisson count with mean `lambda` (Knuth; the means here are small, a normal approximation above 30). */
function poisson(rng: Rng, lambda: number): number {
  if (lambda <= 0) return 0;
  if (lambda > 30) return Math.max(0, Math.round(lambda + Math.sqrt(lambda) * gauss(rng)));
  const limit = Math.exp(-lambda);
  let k = 0;
  for (let p = rng.next(); p > limit; p *= rng.next()) k++;
  return k;
}
/** Poisson event times over [0, T) at `perDay`. */
function events(rng: Rng, perDay: number, T: number): number[] {
  const out: number[] = [];
  if (perDay <= 0) return out;
  for (let t = exp(rng, DAY / perDay); t < T; t += exp(rng, DAY / perDay)) out.push(t);
  return out;
}

const NOISE = { sbeBurstPerDay: 0.2, crcBlipPerDay: 0.5, appXidPerDay: 0.3, hotAislePerDay: 0.02, benignRemapPerDay: 0.0002, benignRetirePerDay: 0.0002, chronicSbeShare: 0.1 };

export function faultSeries(o: FaultSeriesOptions): DeviceSeries[] {
  const sampleMs = o.sampleMs ?? 60_000;
  const T = o.days * DAY;
  const master = seededRng(o.seed);
  const out: DeviceSeries[] = [];
  for (let id = 0; id < o.devices; id++) {
    const devSeed = Math.floor(master.next() * 2 ** 31);
    const pick = seededRng(devSeed ^ 0x5bd1e995);
    let fault: DeviceFault | undefined;
    if (pick.next() < (o.failingShare ?? 0.1)) {
      const failMs = uniform(pick, 0.2, 1) * T;
      const sudden = pick.next() < (o.suddenShare ?? 0.05);
      const r = pick.next();
      const kind: FaultKind = sudden ? 'sudden' : r < 0.45 ? 'memory' : r < 0.7 ? 'thermal' : r < 0.85 ? 'nvlink' : 'row-remap';
      // Precursor length log-uniform from 1 h to 72 h (hours to days of warning, docs/adr/0096); late-blooming
      // ones (below) leave little of it to act on.
      const precursorMs = sudden ? 0 : Math.exp(uniform(pick, Math.log(HOUR), Math.log(72 * HOUR)));
      fault = { kind, failMs, precursorMs: Math.min(precursorMs, failMs) };
    }
    const f = fault;
    out.push({ id, fault: f, run: (fn) => simulate(devSeed, T, sampleMs, f, fn) });
  }
  return out;
}

function simulate(seed: number, T: number, dt: number, fault: DeviceFault | undefined, fn: (t: number, f: DcgmFields) => void): void {
  const rng = seededRng(seed);
  const R = uniform(rng, 0.06, 0.08); // °C per W above the inlet
  const tau = 3 * 60_000;
  const chronicSbePerHour = rng.next() < NOISE.chronicSbeShare ? uniform(rng, 0.3, 3) : 0;
  const sbeBursts = events(rng, NOISE.sbeBurstPerDay, T);
  const crcBlips = events(rng, NOISE.crcBlipPerDay, T);
  const appXids = events(rng, NOISE.appXidPerDay, T);
  const hot = events(rng, NOISE.hotAislePerDay, T).map((t) => ({ t, len: uniform(rng, HOUR, 3 * HOUR), rise: uniform(rng, 4, 10) }));
  const benignRemap = events(rng, NOISE.benignRemapPerDay, T);
  const benignRetire = events(rng, NOISE.benignRetirePerDay, T);
  let iS = 0;
  let iC = 0;
  let iX = 0;
  let iR = 0;
  let iP = 0;
  let sbe = 0;
  let crc = 0;
  let dbe = 0;
  let lastXid = 0;
  let retiredPending = 0;
  let retiredSbe = 0;
  let rowRemapPending = 0;
  let rowRemapFailure = 0;
  let remapAcc = 0;
  let busy = rng.next() < 0.8;
  let segEnd = exp(rng, busy ? 4 * HOUR : 40 * 60_000);
  let jobPower = uniform(rng, 280, 650);
  let power = busy ? jobPower : 70;
  let temp = 30 + power * R;
  const end = fault === undefined ? T : fault.failMs;
  const start = fault === undefined ? Number.POSITIVE_INFINITY : fault.failMs - fault.precursorMs;
  // Shape of the precursor's growth: late-blooming ones show little until their last part.
  const bloom = uniform(rng, 1, 4);
  // A failing fan or pump: 3–12 °C/h, faster as it goes.
  const creepPerHour = uniform(rng, 3, 12);
  let retireAt = rng.next() < 0.6 ? uniform(rng, 0.6, 0.95) : 2;
  for (let t = 0; t <= end; t += dt) {
    if (t >= segEnd) {
      busy = !busy;
      segEnd = t + exp(rng, busy ? 4 * HOUR : 40 * 60_000);
      jobPower = uniform(rng, 280, 650);
    }
    const want = busy ? jobPower * (1 + 0.04 * gauss(rng)) : 70;
    power += (want - power) * 0.7;
    let inlet = 26 + 2 * Math.sin((2 * Math.PI * t) / DAY);
    for (const h of hot) if (t >= h.t && t < h.t + h.len) inlet += h.rise * Math.min(1, (t - h.t) / (20 * 60_000));
    const p = fault !== undefined && t >= start ? (fault.precursorMs === 0 ? 1 : (t - start) / fault.precursorMs) : -1;
    const g = p < 0 ? 0 : p ** bloom;
    let creep = 0;
    if (fault?.kind === 'thermal' && p >= 0) creep = Math.min(30, (creepPerHour / HOUR) * (t - start) * (0.5 + g));
    temp += (inlet + power * R + creep - temp) * (1 - Math.exp(-dt / tau));
    // Correctable ECC: chronic trickle, stray bursts, and a memory fault's exponential growth (0.5/h → 300/h).
    let sbeRate = chronicSbePerHour;
    if ((fault?.kind === 'memory' || fault?.kind === 'row-remap') && p >= 0) sbeRate += 0.5 * 600 ** g * (fault.kind === 'row-remap' ? 0.2 : 1);
    sbe += poisson(rng, (sbeRate * dt) / HOUR);
    while (iS < sbeBursts.length && (sbeBursts[iS] as number) <= t) {
      sbe += 1 + rng.int(8);
      iS++;
    }
    // NVLink CRC: blips, and a failing link's growth (5/h → 3000/h).
    if (fault?.kind === 'nvlink' && p >= 0) crc += poisson(rng, (5 * 600 ** g * dt) / HOUR);
    while (iC < crcBlips.length && (crcBlips[iC] as number) <= t) {
      crc += 1 + rng.int(50);
      iC++;
    }
    while (iX < appXids.length && (appXids[iX] as number) <= t) {
      lastXid = [13, 31, 43, 45][rng.int(4)] as number;
      iX++;
    }
    while (iR < benignRemap.length && (benignRemap[iR] as number) <= t) {
      lastXid = 63;
      iR++;
    }
    while (iP < benignRetire.length && (benignRetire[iP] as number) <= t) {
      retiredSbe++;
      iP++;
    }
    if (fault?.kind === 'memory' && p >= retireAt) {
      retiredPending = 1 + Math.floor(g * 4);
      retireAt = 2;
    }
    if (fault?.kind === 'row-remap' && p >= 0) {
      remapAcc += g * 0.02;
      if (remapAcc >= 1 && rowRemapPending === 0) {
        rowRemapPending = 1;
        lastXid = 63;
      }
    }
    if (fault !== undefined && t + dt > end) {
      // The failure itself.
      if (fault.kind === 'memory') {
        dbe++;
        lastXid = [48, 94, 95][rng.int(3)] as number;
      } else if (fault.kind === 'thermal' || fault.kind === 'sudden') lastXid = 79;
      else if (fault.kind === 'nvlink') lastXid = 74;
      else {
        rowRemapFailure = 1;
        lastXid = 64;
      }
    }
    fn(t, {
      tempC: Math.round(temp + 0.7 * gauss(rng)),
      powerW: Math.round(power * (1 + 0.02 * gauss(rng)) * 10) / 10,
      lastXid,
      sbeVolTotal: sbe,
      dbeVolTotal: dbe,
      retiredSbe,
      retiredDbe: 0,
      retiredPending,
      nvlinkCrcFlitTotal: crc,
      nvlinkCrcDataTotal: 0,
      rowRemapPending,
      rowRemapFailure,
    });
  }
}
