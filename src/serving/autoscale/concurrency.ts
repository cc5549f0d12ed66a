/**
 * A concurrency autoscaler like Knative's KPA (KServe's default): the in-flight requests per replica (running +
 * waiting) averaged over a 60 s stable window and a 6 s panic window, a target concurrency per replica at 70 %
 * target utilisation; panic when the panic window asks for twice the current replicas, and then no scale-down
 * until a stable window has passed without panic; scale-down by at most half per evaluation (every 2 s).
 */
import { clamp, Window, type Autoscaler, type ServiceObservation } from './policy.ts';

export interface ConcurrencyConfig {
  readonly targetConcurrency: number;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly targetUtilization?: number;
  readonly stableWindowSec?: number;
  readonly panicWindowSec?: number;
  readonly panicThreshold?: number;
  readonly tickSec?: number;
  readonly maxScaleDownRate?: number;
}

export class ConcurrencyPolicy implements Autoscaler {
  readonly name = 'concurrency';
  private readonly stable: Window;
  private readonly panic: Window;
  private lastTick = Number.NEGATIVE_INFINITY;
  private current: number | undefined;
  private panicUntil = Number.NEGATIVE_INFINITY;
  constructor(private readonly cfg: ConcurrencyConfig) {
    this.stable = new Window(cfg.stableWindowSec ?? 60);
    this.panic = new Window(cfg.panicWindowSec ?? 6);
  }

  decide(obs: ServiceObservation): number {
    const inFlight = obs.running + obs.waiting;
    this.stable.push(obs.nowSec, inFlight);
    this.panic.push(obs.nowSec, inFlight);
    this.current ??= obs.desiredReplicas;
    if (obs.nowSec - this.lastTick < (this.cfg.tickSec ?? 2)) return this.current;
    this.lastTick = obs.nowSec;
    const per = this.cfg.targetConcurrency * (this.cfg.targetUtilization ?? 0.7);
    const ready = Math.max(1, obs.readyReplicas);
    const stableWant = Math.ceil(this.stable.mean() / per);
    const panicWant = Math.ceil(this.panic.mean() / per);
    if (panicWant / ready >= (this.cfg.panicThreshold ?? 2)) this.panicUntil = obs.nowSec + (this.cfg.stableWindowSec ?? 60);
    let want: number;
    if (obs.nowSec < this.panicUntil) want = Math.max(this.current, panicWant);
    else want = Math.max(stableWant, Math.ceil(this.current / (this.cfg.maxScaleDownRate ?? 2)));
    this.current = clamp(want, this.cfg.minReplicas, this.cfg.maxReplicas);
    return this.current;
  }
}
