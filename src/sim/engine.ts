import type { Clock } from '../core/ports.ts';

/**
 * Discrete-event engine (after SimPy): virtual time in ms, events ordered by (time, priority, sequence) so
 * that ties resolve the same way on every run. No wall clock is read.
 */

export interface SimEvent<T> {
  readonly timeMs: number;
  /** Lower runs first among events at the same time (e.g. completions before arrivals). */
  readonly priority: number;
  readonly seq: number;
  readonly payload: T;
}

export class EventHeap<T> {
  private readonly items: SimEvent<T>[] = [];
  private nextSeq = 0;

  get size(): number {
    return this.items.length;
  }

  push(timeMs: number, priority: number, payload: T): SimEvent<T> {
    const e = { timeMs, priority, seq: this.nextSeq++, payload };
    const a = this.items;
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(a[i] as SimEvent<T>, a[p] as SimEvent<T>)) break;
      swap(a, i, p);
      i = p;
    }
    return e;
  }

  peek(): SimEvent<T> | undefined {
    return this.items[0];
  }

  pop(): SimEvent<T> | undefined {
    const a = this.items;
    const top = a[0];
    if (top === undefined) return undefined;
    const last = a.pop() as SimEvent<T>;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l] as SimEvent<T>, a[m] as SimEvent<T>)) m = l;
        if (r < a.length && before(a[r] as SimEvent<T>, a[m] as SimEvent<T>)) m = r;
        if (m === i) break;
        swap(a, i, m);
        i = m;
      }
    }
    return top;
  }
}

function before<T>(x: SimEvent<T>, y: SimEvent<T>): boolean {
  if (x.timeMs !== y.timeMs) return x.timeMs < y.timeMs;
  if (x.priority !== y.priority) return x.priority < y.priority;
  return x.seq < y.seq;
}

function swap<T>(a: T[], i: number, j: number): void {
  const t = a[i] as T;
  a[i] = a[j] as T;
  a[j] = t;
}

/** A simulation environment: `now`, `schedule`, `step`, `run(until)`. */
export class Environment<T> {
  private readonly heap = new EventHeap<T>();
  private current = 0;
  /** The Clock port in virtual time: what a host hands the core and the adapters instead of a wall clock. */
  readonly clock: Clock = { nowMs: () => this.current };

  constructor(private readonly handle: (event: SimEvent<T>, env: Environment<T>) => void) {}

  get nowMs(): number {
    return this.current;
  }

  get pending(): number {
    return this.heap.size;
  }

  schedule(delayMs: number, priority: number, payload: T): void {
    if (delayMs < 0 || !Number.isFinite(delayMs)) throw new Error(`schedule: bad delay ${delayMs}`);
    this.heap.push(this.current + delayMs, priority, payload);
  }

  at(timeMs: number, priority: number, payload: T): void {
    this.schedule(Math.max(0, timeMs - this.current), priority, payload);
  }

  /** Runs the next event; false when none is left. */
  step(): boolean {
    const e = this.heap.pop();
    if (e === undefined) return false;
    this.current = e.timeMs;
    this.handle(e, this);
    return true;
  }

  /** Runs events up to and including time `untilMs` (or all), then sets the clock to it. */
  run(untilMs = Number.POSITIVE_INFINITY): void {
    for (;;) {
      const next = this.heap.peek();
      if (next === undefined || next.timeMs > untilMs) break;
      this.step();
    }
    if (Number.isFinite(untilMs)) this.current = Math.max(this.current, untilMs);
  }
}
