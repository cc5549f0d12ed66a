/**
 * The live form of the bounded-queue stage pipeline (seed 004 §2.5, issue 13 Deliver 4; stages.ts is its model):
 * records flow through stages in order, each stage with its own concurrency (read again at every start, so a new
 * batch size applies to the next record), a queue of at most `capacity(k)` records in front of every stage after
 * the first. A record a stage finished waits on that stage (holding one of its slots) while the next queue is full:
 * backpressure, so a slow stage slows the stages before it instead of letting records pile up in memory, exactly
 * as simulatePipeline assumes. The first stage pulls from `source` only when it has a free slot.
 * Pure apart from the stages' own work; time comes from `now`.
 */

export interface LiveStage<T> {
  readonly name: string;
  /** Records this stage may work on at once (at least 1). */
  readonly concurrency: () => number;
  /** Works on one record: `next` hands it to the following stage, `done` finishes it here (e.g. rejected early). */
  readonly run: (item: T) => Promise<'next' | 'done'>;
}

export interface StageStats {
  readonly name: string;
  /** Records this stage finished. */
  processed: number;
  /** Time its slots spent working, ms (summed over slots). */
  busyMs: number;
  /** Time finished records waited on it for room in the next queue, ms. */
  blockedMs: number;
  /** Most records ever waiting in the queue in front of it (0 for the first stage, which reads the source). */
  maxQueue: number;
}

/**
 * Runs every record `source` hands out through `stages`. Resolves with each stage's stats when the source is dry
 * and every record has left the last stage (or, once `signal` aborts, when the work in flight ends; queued and
 * waiting records are then dropped). `live` gets the stats as they grow. Rejects with the first stage failure; no new work starts after it.
 */
export function runStages<T>(
  source: () => T | undefined,
  stages: readonly LiveStage<T>[],
  capacity: (stage: number) => number,
  signal: AbortSignal,
  now: () => number,
  live?: (stats: readonly StageStats[]) => void,
): Promise<StageStats[]> {
  if (stages.length === 0) throw new Error('runStages: no stage');
  const k = stages.length;
  const stats: StageStats[] = stages.map((s) => ({ name: s.name, processed: 0, busyMs: 0, blockedMs: 0, maxQueue: 0 }));
  // The caller may read the stats while the run goes on (a progress report).
  live?.(stats);
  const active = stages.map(() => 0);
  const queues: T[][] = stages.map(() => []);
  const waiting: { item: T; since: number }[][] = stages.map(() => []);
  let dry = false;
  return new Promise((resolve, reject) => {
    let failed = false;
    const start = (s: number, item: T): void => {
      active[s] = (active[s] as number) + 1;
      const t0 = now();
      // A stage that throws synchronously fails the run like one that rejects.
      new Promise<'next' | 'done'>((r) => r((stages[s] as LiveStage<T>).run(item))).then(
        (r) => {
          const st = stats[s] as StageStats;
          st.busyMs += now() - t0;
          st.processed++;
          if (r === 'done' || s === k - 1) active[s] = (active[s] as number) - 1;
          // Still holding its slot until the next queue has room.
          else (waiting[s] as { item: T; since: number }[]).push({ item, since: now() });
          pump();
        },
        (e: unknown) => {
          if (failed) return;
          failed = true;
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    };
    const pump = (): void => {
      if (failed) return;
      if (signal.aborted) {
        // Nothing new starts; what waits or is queued is dropped (the caller writes nothing for it).
        for (let s = 0; s < k; s++) {
          active[s] = (active[s] as number) - (waiting[s] as unknown[]).length;
          waiting[s] = [];
          queues[s] = [];
        }
      } else {
        // Downstream first: a stage that starts frees queue room the stage before it fills at once; records released
        // into a queue may then start downstream, so passes repeat until nothing moves.
        for (let changed = true; changed;) {
          changed = false;
          for (let s = k - 1; s >= 0; s--) {
            if (s < k - 1) {
              const q = queues[s + 1] as T[];
              const w = waiting[s] as { item: T; since: number }[];
              while (w.length > 0 && q.length < Math.max(1, capacity(s + 1))) {
                const h = w.shift() as { item: T; since: number };
                q.push(h.item);
                (stats[s] as StageStats).blockedMs += now() - h.since;
                active[s] = (active[s] as number) - 1;
                const next = stats[s + 1] as StageStats;
                next.maxQueue = Math.max(next.maxQueue, q.length);
                changed = true;
              }
            }
            const stage = stages[s] as LiveStage<T>;
            while ((active[s] as number) < Math.max(1, stage.concurrency())) {
              let item: T | undefined;
              if (s === 0) {
                if (dry) break;
                item = source();
                if (item === undefined) {
                  dry = true;
                  break;
                }
              } else {
                item = (queues[s] as T[]).shift();
                if (item === undefined) break;
              }
              start(s, item);
              changed = true;
            }
          }
        }
      }
      const idle = active.every((a) => a === 0) && queues.every((q) => q.length === 0);
      if (idle && (dry || signal.aborted)) resolve(stats);
    };
    signal.addEventListener('abort', pump, { once: true });
    pump();
  });
}
