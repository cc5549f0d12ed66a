/**
 * The FGD experiment's metrics (../shared/docs/fgd-reproduction.md §6). After every submitted pod, placed
 * or not: arrived = Σ n×m of all pods submitted so far; used = allocated GPU milli; frag = cluster
 * fragment for the typical workload; frag ratio = 100 × frag / idle. Events go into buckets
 * a = round(arrived / G / 10) (Python rounding; G = cluster GPU count), and a bucket's value is the mean
 * over its events (alloc and frag ratio rounded to 2 decimals per event, as the paper's logs print them),
 * or over buckets a−1..a+1 when it has none.
 */
import { pyRound, pyRound2 } from './py-round.ts';

export class FgdMeter {
  private readonly count: number[] = [];
  private readonly alloc: number[] = [];
  private readonly frag: number[] = [];
  private readonly ratio: number[] = [];
  private readonly gpus: number;

  constructor(readonly capacityMilli: number) {
    this.gpus = capacityMilli / 1000;
  }

  record(arrivedMilli: number, usedMilli: number, fragMilli: number): void {
    const a = pyRound(arrivedMilli / this.gpus / 10);
    while (this.count.length <= a) {
      this.count.push(0);
      this.alloc.push(0);
      this.frag.push(0);
      this.ratio.push(0);
    }
    this.count[a] = (this.count[a] as number) + 1;
    this.alloc[a] = (this.alloc[a] as number) + pyRound2(usedMilli / this.gpus / 10);
    this.frag[a] = (this.frag[a] as number) + fragMilli;
    const idle = this.capacityMilli - usedMilli;
    this.ratio[a] = (this.ratio[a] as number) + (idle > 0 ? pyRound2((100 * fragMilli) / idle) : 0);
  }

  /** Buckets 0..max seen: GPU allocation %, frag/total %, frag rate % (null where no event is near). */
  buckets(): FgdBuckets {
    const n = this.count.length;
    const allocPct: (number | null)[] = [];
    const fragPct: (number | null)[] = [];
    const fragRatePct: (number | null)[] = [];
    for (let b = 0; b < n; b++) {
      let lo = b;
      let hi = b;
      if ((this.count[b] as number) === 0) {
        lo = Math.max(0, b - 1);
        hi = Math.min(n - 1, b + 1);
      }
      let c = 0;
      let al = 0;
      let fr = 0;
      let ra = 0;
      for (let i = lo; i <= hi; i++) {
        c += this.count[i] as number;
        al += this.alloc[i] as number;
        fr += this.frag[i] as number;
        ra += this.ratio[i] as number;
      }
      if (c === 0) {
        allocPct.push(null);
        fragPct.push(null);
        fragRatePct.push(null);
        continue;
      }
      allocPct.push(pyRound2(al / c));
      fragPct.push(pyRound2((100 * (fr / c)) / 1000 / this.gpus));
      fragRatePct.push(ra / c);
    }
    return { allocPct, fragPct, fragRatePct };
  }
}

export interface FgdBuckets {
  /** Index = arrived workload %. */
  readonly allocPct: readonly (number | null)[];
  readonly fragPct: readonly (number | null)[];
  readonly fragRatePct: readonly (number | null)[];
}
