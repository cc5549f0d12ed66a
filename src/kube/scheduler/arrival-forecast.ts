/**
 * The arrival forecast of the live scheduler (ADR 0021, `ArrivalHistory`): each job SITS sees waiting for the
 * first time is an arrival of its queue at its creation time (a gang: its first pod's). A job seen again
 * under the same id — a gang recreated by its controller after preemption — is not a new arrival (as in the
 * simulator, where a victim goes back to its queue). The forecast repeats each queue's recent arrivals
 * (rate and shapes) as jobs with their own ids and pod ids, each with the runtime its class is expected to
 * run. Memory: the arrivals of the lookback (2 h) and a bounded set of job ids already counted.
 */
import type { QueuedJob } from '../../core/actions/jobs.ts';
import { ArrivalHistory, DEFAULT_FORECAST, type ForecastOptions } from '../../core/estimate/arrivals.ts';

export class LiveArrivals {
  private readonly history: ArrivalHistory<QueuedJob>;
  private readonly counted = new Set<string>();

  constructor(
    opts: ForecastOptions = DEFAULT_FORECAST,
    private readonly countedCap = 50_000,
  ) {
    this.history = new ArrivalHistory(opts);
  }

  /** The jobs waiting now, as of `nowMs`: those not counted before are arrivals at their `arrivalMs`. */
  observe(jobs: readonly QueuedJob[], nowMs: number): void {
    for (const j of jobs) {
      if (this.counted.has(j.id)) continue;
      this.counted.add(j.id);
      this.history.record(j.queue, j.arrivalMs, j);
    }
    for (const id of this.counted) {
      if (this.counted.size <= this.countedCap) break;
      this.counted.delete(id);
    }
    this.history.prune(nowMs);
  }

  /** Job ids counted (bounded by `countedCap`) and arrivals kept (bounded by the lookback). */
  sizes(): { counted: number; arrivals: number } {
    return { counted: this.counted.size, arrivals: this.history.size };
  }

  /**
   * Forecast jobs after `nowMs`, at most `max` (the earliest): each a copy of a recent arrival's shape under
   * id `forecast/<queue>/<k>` (pods `<id>/<i>`), its runtime from `runtimeOf` (queue, GPUs).
   */
  forecast(nowMs: number, runtimeOf: (queue: string, gpus: number) => number, max = Infinity): QueuedJob[] {
    const out: QueuedJob[] = [];
    for (const f of this.history.forecast(nowMs)) {
      if (out.length >= max) break;
      const t = f.template;
      const members = t.gang.members.map((m, i) => ({ ...m, id: `${f.id}/${i}`, ...(m.gang === undefined ? {} : { gang: f.id }) }));
      const gpus = members.reduce((s, m) => s + (m.request.gpuCount * m.request.gpuMilli) / 1000, 0);
      out.push({ ...t, id: f.id, arrivalMs: f.atMs, gang: { ...t.gang, name: f.id, members }, estRuntimeMs: runtimeOf(t.queue, gpus) });
    }
    return out;
  }
}
