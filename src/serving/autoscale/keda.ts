/**
 * KEDA's Prometheus scaler on sum(vllm:num_requests_waiting) with a hand-set threshold, as vLLM production-stack
 * ships it, driving the HPA: KEDA polls every pollingInterval (default 30 s); the HPA wants
 * ceil(metric / threshold) (AverageValue target), skips changes within its 10 % tolerance, scales up by at most
 * max(100 %, 4 pods) at a time and down only to the highest recommendation of the last 300 s (its default
 * scale-down stabilisation). KEDA's cooldownPeriod (default 300 s) applies to the last replica (to and from zero).
 */
import { clamp, type Autoscaler, type ServiceObservation } from './policy.ts';

export interface KedaConfig {
  readonly threshold: number;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  readonly pollingIntervalSec?: number;
  readonly cooldownPeriodSec?: number;
  readonly stabilizationSec?: number;
}

export class KedaPolicy implements Autoscaler {
  readonly name = 'keda';
  private lastPoll = Number.NEGATIVE_INFINITY;
  private current: number | undefined;
  private readonly recommendations: { t: number; r: number }[] = [];
  private lastActive = Number.NEGATIVE_INFINITY;
  constructor(private readonly cfg: KedaConfig) {}

  decide(obs: ServiceObservation): number {
    const poll = this.cfg.pollingIntervalSec ?? 30;
    this.current ??= obs.desiredReplicas;
    if (obs.nowSec - this.lastPoll < poll) return this.current;
    this.lastPoll = obs.nowSec;
    const metric = obs.waiting;
    if (metric > 0 || obs.running > 0) this.lastActive = obs.nowSec;
    const cur = Math.max(this.current, 0);
    let want = Math.ceil(metric / this.cfg.threshold);
    // HPA tolerance: no change when the ratio is within 10 % of 1.
    if (cur > 0 && Math.abs(metric / this.cfg.threshold / cur - 1) <= 0.1) want = cur;
    want = Math.min(want, Math.max(cur * 2, cur + 4));
    this.recommendations.push({ t: obs.nowSec, r: want });
    const horizon = obs.nowSec - (this.cfg.stabilizationSec ?? 300);
    while (this.recommendations.length > 0 && (this.recommendations[0] as { t: number }).t < horizon) this.recommendations.shift();
    const stabilized = want < cur ? Math.min(cur, Math.max(...this.recommendations.map((x) => x.r))) : want;
    let next = clamp(stabilized, Math.max(1, this.cfg.minReplicas), this.cfg.maxReplicas);
    // KEDA itself takes the service to zero only after cooldownPeriod without activity.
    if (this.cfg.minReplicas === 0 && metric === 0 && obs.running === 0 && obs.nowSec - this.lastActive >= (this.cfg.cooldownPeriodSec ?? 300)) next = 0;
    this.current = next;
    return next;
  }
}
