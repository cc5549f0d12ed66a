/**
 * How much longer than on an idle machine tests may wait: one factor for every test timeout (waitFor,
 * the e2e project's test and hook timeouts, the test control plane's start-up), so a loaded CI machine
 * gets more time while a failing test on an idle one still fails quickly.
 *
 * SITS_TEST_TIMEOUT_SCALE wins when set (vitest.config.ts sets it for the test workers, so the config and
 * every worker use the one value measured when vitest starts); otherwise the 1-minute load average per CPU,
 * clamped to [1, 4].
 */
import { cpus, loadavg } from 'node:os';

export const TIMEOUT_SCALE_ENV = 'SITS_TEST_TIMEOUT_SCALE';
const MIN_SCALE = 1;
export const MAX_SCALE = 4;

/** The factor for a given environment value and machine load; exported for its unit test. */
export function timeoutScaleFor(envValue: string | undefined, load1: number, cpuCount: number): number {
  if (envValue !== undefined && envValue.trim() !== '') {
    const v = Number(envValue);
    if (!Number.isFinite(v) || v <= 0) throw new Error(`${TIMEOUT_SCALE_ENV} must be a positive number, got "${envValue}"`);
    return v;
  }
  const perCpu = load1 / Math.max(1, cpuCount);
  return Math.min(MAX_SCALE, Math.max(MIN_SCALE, Number.isFinite(perCpu) ? perCpu : MIN_SCALE));
}

/** The factor of this process, measured once when this module is first imported. */
export const TIMEOUT_SCALE: number = timeoutScaleFor(process.env[TIMEOUT_SCALE_ENV], loadavg()[0] ?? 0, cpus().length);

/**
 * The factor now: the run's factor, or more while the machine is busier than when the run started. The run's
 * factor is measured before the tests load the machine themselves, and CI may start on an idle machine that
 * e2e control planes then load to 3-6 per CPU; a wait that polls uses this to stretch its budget meanwhile.
 */
export function loadScaleNow(): number {
  return Math.max(TIMEOUT_SCALE, timeoutScaleFor(undefined, loadavg()[0] ?? 0, cpus().length));
}

/** `ms` (a budget on an idle machine) scaled for this machine, in whole milliseconds. */
export function scaled(ms: number): number {
  return Math.round(ms * TIMEOUT_SCALE);
}

/**
 * CPU time this process has spent since `start` (a `process.cpuUsage()` reading), in ms. The bound a work test sets
 * (linear, not quadratic) holds in CPU time whatever else runs: a busy machine, or the lower priority the unit files
 * run at beside the e2e files (ADR 0201), stretches wall time, not this.
 */
export function cpuMsSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

/**
 * Lets the event loop turn (timers, I/O). A vitest worker answers its main process only between synchronous
 * stretches, and a reply that waits past 60 s fails the run (ADR 0201, ADR 0203): a long property test awaits this
 * between its runs, so no stretch is longer than one run however loaded the machine is.
 */
export const turnEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
