/** CPU time of processes from /proc (Linux): what each process of a benchmark run costs. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseProcStat } from './measure.ts';

let ticks: number | undefined;

/** Clock ticks per second (`getconf CLK_TCK`, 100 on Linux almost everywhere). */
export function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** utime + stime of `pid` in seconds (all its threads), or NaN if it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const { utime, stime } = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return (utime + stime) / clockTicks();
  } catch {
    return Number.NaN;
  }
}

/** Resident memory of `pid` in MiB (/proc/PID/statm's second field, in 4 KiB pages on Linux x86-64), or undefined if it is gone. */
export function residentMiB(pid: number): number | undefined {
  try {
    const pages = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    return Number.isFinite(pages) ? Math.round((pages * 4096) / 2 ** 20) : undefined;
  } catch {
    return undefined;
  }
}

export function processName(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Named pids whose CPU is sampled together. */
export class CpuMeter {
  constructor(private readonly pids: ReadonlyMap<string, number>) {}

  names(): string[] {
    return [...this.pids.keys()];
  }

  /** CPU seconds per name now, plus `machine`: busy CPU seconds of the whole machine (see `withOther`). */
  sample(): Record<string, number> {
    const out: Record<string, number> = { machine: machineCpu().busy };
    for (const [name, pid] of this.pids) {
      if (pid === process.pid) {
        const u = process.cpuUsage();
        out[name] = (u.user + u.system) / 1e6;
      } else out[name] = cpuSeconds(pid);
    }
    return out;
  }
}

/** A CPU delta with `machine` replaced by `other`: what processes outside the benchmark used. */
export function withOther(d: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  let ours = 0;
  for (const [k, v] of Object.entries(d)) {
    if (k === 'machine') continue;
    out[k] = v;
    if (Number.isFinite(v)) ours += v;
  }
  if (d.machine !== undefined) out.other = Math.max(0, d.machine - ours);
  return out;
}

export function diff(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(b)) out[k] = (b[k] as number) - (a[k] ?? 0);
  return out;
}

/**
 * Machine-wide CPU seconds (all cores) from the first line of /proc/stat: busy (everything but idle and
 * iowait) and total. The difference between two samples tells how much of the machine other work took.
 */
export function machineCpu(): { busy: number; total: number } {
  try {
    const first = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const f = first.trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return { busy: (total - idle) / clockTicks(), total: total / clockTicks() };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}

/** 1-minute load average and the number of CPUs, to record how busy the shared machine was. */
export function loadAverage(): number {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  } catch {
    return Number.NaN;
  }
}
