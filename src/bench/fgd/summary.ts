/**
 * Medians over seeds of an FGD grid: the JSON contract of `sits bench fgd` (issue 3 §6) and the curves the
 * HTML report draws. Values are rounded to 4 decimals so that float noise never shows.
 */
import { median } from '../../core/stats.ts';
import type { FgdRun } from './run.ts';

export const UNALLOCATED_AT = [90, 95, 100, 110, 120, 130] as const;
export const FRAG_RATE_AT = [50, 80, 90] as const;

export interface FgdPolicyResult {
  readonly policy: string;
  readonly unallocatedPct: Readonly<Record<string, number | null>>;
  readonly fragRatePct: Readonly<Record<string, number | null>>;
  readonly runMs: number;
}

export interface FgdBenchJson {
  readonly trace: string;
  readonly seeds: readonly number[];
  readonly results: readonly FgdPolicyResult[];
  /** No policy can do better (ADR 0107): median over seeds of the per-seed LP bound, at 100 % arrived. */
  readonly lowerBound?: { readonly unallocatedPct: Readonly<Record<string, number | null>> };
}

/** The JSON's `lowerBound` from per-seed bounds (null when some seed has none, like the policies' medians). */
export function lowerBoundJson(perSeed: readonly (number | null)[]): { unallocatedPct: Record<string, number | null> } {
  const vals = perSeed.filter((v): v is number => v !== null);
  return { unallocatedPct: { '100': vals.length === 0 || vals.length < perSeed.length ? null : round4(median(vals)) } };
}

export const round4 = (x: number): number => Math.round(x * 1e4) / 1e4;

/** Median over runs of a per-bucket value; null when some run has no value there. */
function medianAt(runs: readonly FgdRun[], pick: (r: FgdRun) => readonly (number | null)[], b: number, transform: (v: number) => number = (v) => v): number | null {
  const vals: number[] = [];
  for (const r of runs) {
    const v = pick(r)[b];
    if (v === null || v === undefined) return null;
    vals.push(transform(v));
  }
  return vals.length === 0 ? null : round4(median(vals));
}

export function summarizePolicy(policy: string, runs: readonly FgdRun[]): FgdPolicyResult {
  const unallocatedPct: Record<string, number | null> = {};
  for (const b of UNALLOCATED_AT) unallocatedPct[String(b)] = medianAt(runs, (r) => r.buckets.allocPct, b, (v) => 100 - v);
  const fragRatePct: Record<string, number | null> = {};
  for (const b of FRAG_RATE_AT) fragRatePct[String(b)] = medianAt(runs, (r) => r.buckets.fragRatePct, b);
  return { policy, unallocatedPct, fragRatePct, runMs: round4(median(runs.map((r) => r.runMs))) };
}

export function fgdBenchJson(trace: string, seeds: readonly number[], policies: readonly string[], runs: readonly FgdRun[]): FgdBenchJson {
  return { trace, seeds: [...seeds], results: policies.map((p) => summarizePolicy(p, runs.filter((r) => r.policy === p))) };
}

/** Per policy, per arrived % (0..max): median over seeds of allocation %, frag/total % and frag rate %. */
export interface FgdCurves {
  readonly policy: string;
  readonly allocPct: readonly (number | null)[];
  readonly fragPct: readonly (number | null)[];
  readonly fragRatePct: readonly (number | null)[];
  /** Unallocated % at 100 % arrived: per seed, in seed order. */
  readonly unallocated100: readonly (number | null)[];
}

export function fgdCurves(policies: readonly string[], runs: readonly FgdRun[]): FgdCurves[] {
  return policies.map((policy) => {
    const mine = runs.filter((r) => r.policy === policy);
    const len = Math.max(0, ...mine.map((r) => r.buckets.allocPct.length));
    const curve = (pick: (r: FgdRun) => readonly (number | null)[]): (number | null)[] => Array.from({ length: len }, (_, b) => medianAt(mine, pick, b));
    return {
      policy,
      allocPct: curve((r) => r.buckets.allocPct),
      fragPct: curve((r) => r.buckets.fragPct),
      fragRatePct: curve((r) => r.buckets.fragRatePct),
      unallocated100: mine.map((r) => {
        const v = r.buckets.allocPct[100];
        return v === null || v === undefined ? null : round4(100 - v);
      }),
    };
  });
}

/** Parses `42-51`, `42,43,50` or a mix (`42-45,50`) into a sorted list of distinct seeds. */
export function parseSeeds(text: string): number[] | undefined {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const p = part.trim();
    const range = /^(\d+)-(\d+)$/.exec(p);
    if (range !== null) {
      const a = Number(range[1]);
      const b = Number(range[2]);
      if (b < a || b - a > 10_000) return undefined;
      for (let s = a; s <= b; s++) out.add(s);
    } else if (/^\d+$/.test(p)) out.add(Number(p));
    else return undefined;
  }
  return out.size === 0 ? undefined : [...out].sort((x, y) => x - y);
}
