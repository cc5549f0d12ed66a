/**
 * SITS's token-based autoscaler (issue 12, Deliver 3; seed 000 §4.3). The signal is the token demand: tokens
 * processed per second (prompt + generated, from the engines' counters) plus the queue (waiting requests × the
 * recent mean prompt) drained over `drainSec`. The threshold — the tokens per second one replica carries within
 * the TTFT SLO — is not hand-set: it starts from the P95 of the per-replica throughput of the recent window and is
 * then calibrated continuously on the service's own history, lowered when the recent TTFT p99 misses the SLO,
 * raised while it is met with room and nothing queues. Replicas follow a high quantile of the demand over the
 * history window (capacity for the bursts the service has just seen), with a panic window that scales out at
 * once on a burst, rate limits, a scale-down delay, and scale to zero after an idle period where minReplicas is 0.
 * Two guards keep it from spending GPUs the SLO never needed (ADR 0183): the threshold is never below what one
 * replica was seen to carry in a window where the SLO held with room (learned from (load, latency) pairs, not only
 * the P95 of what it carried), and it scales out only on evidence the SLO is at risk (TTFT p99 over half the SLO,
 * or a queue slower than that to drain) seen within `riskHoldSec`; without it the replicas serving are held.
 * Pure and deterministic: the controller calls `decide` with live observations, the simulator with simulated ones.
 */
import { clamp, Window, type Autoscaler, type ServiceObservation } from './policy.ts';

export interface TokenAutoscalerConfig {
  readonly sloTtftSec: number;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  /** History the replicas are sized on: a quantile of the demand over this window. */
  readonly historyWindowSec: number;
  readonly demandQuantile: number;
  /** The demand is averaged over this many seconds before it enters the history (a backlog shorter than this
   * is absorbed by the queue within the SLO rather than by more replicas). */
  readonly smoothingSec: number;
  /** Short window for bursts; panic when it asks for `panicThreshold` × the replicas serving. */
  readonly panicWindowSec: number;
  readonly panicThreshold: number;
  /** Queued tokens are to be drained within this time. */
  readonly drainSec: number;
  /** Calibration of the per-replica threshold: every `calibrationSec`, ×`lower` on an SLO miss, ×`raise` with room. */
  readonly calibrationSec: number;
  readonly lower: number;
  readonly raise: number;
  /** The threshold stays within these bounds (tokens/s per replica). */
  readonly minThreshold: number;
  readonly maxThreshold: number;
  /** Threshold before there is history (tokens/s per replica). */
  readonly initialThreshold: number;
  /** A lower replica count must hold this long before scaling in, and then one replica per `scaleDownStepSec`. */
  readonly scaleDownDelaySec: number;
  readonly scaleDownStepSec: number;
  /** At most this factor more replicas per decision (and at least +1). */
  readonly maxScaleUpRate: number;
  /** With minReplicas 0: no demand for this long takes the service to zero (the first request activates it). */
  readonly idleToZeroSec: number;
  /**
   * Scale out (beyond one replica) only on evidence the SLO is at risk, seen within the last `riskHoldSec`: the
   * TTFT p99 above `riskTtftFraction` × the SLO, or a queue that takes longer than that to drain at the rate the
   * replicas serve. Demand above the threshold alone is not evidence: the threshold may underrate a replica.
   */
  readonly riskTtftFraction: number;
  readonly riskHoldSec: number;
}

export const TOKEN_AUTOSCALER_DEFAULTS: Omit<TokenAutoscalerConfig, 'sloTtftSec' | 'minReplicas' | 'maxReplicas'> = {
  historyWindowSec: 300,
  demandQuantile: 0.95,
  smoothingSec: 1,
  panicWindowSec: 6,
  panicThreshold: 1.5,
  drainSec: 2,
  calibrationSec: 30,
  lower: 0.85,
  raise: 1.05,
  minThreshold: 500,
  maxThreshold: 100_000,
  initialThreshold: 10_000,
  // The CRD's default of autoscaling.scaleDownStabilizationSeconds, as the HPA's downscale stabilisation (ADR 0204).
  scaleDownDelaySec: 300,
  scaleDownStepSec: 30,
  maxScaleUpRate: 2,
  idleToZeroSec: 300,
  riskTtftFraction: 0.5,
  riskHoldSec: 600,
};

/**
 * The per-replica threshold and what it is calibrated on: what one replica carried in the recent window, and the
 * per-replica demand carried within the SLO (each calibration window's peak, kept when no risk was seen in it).
 */
class ThresholdCalibration {
  /** Undefined until the first calibration with history. */
  threshold: number | undefined;
  private last = Number.NEGATIVE_INFINITY;
  readonly perReplica: Window;
  private proven: Window;
  private windowPeak = 0;
  private windowRisk = false;

  constructor(private readonly cfg: TokenAutoscalerConfig) {
    this.perReplica = new Window(cfg.historyWindowSec);
    this.proven = new Window(cfg.historyWindowSec);
  }

  get calibrated(): number {
    return this.threshold ?? this.cfg.initialThreshold;
  }

  get provenMax(): number {
    return this.proven.max();
  }

  /** An observation of the current calibration window: whether the SLO was at risk, and the smoothed demand per ready replica. */
  see(risk: boolean, perReadyReplica: number | undefined): void {
    this.windowRisk ||= risk;
    if (perReadyReplica !== undefined) this.windowPeak = Math.max(this.windowPeak, perReadyReplica);
  }

  /**
   * 000 §4.3: the first threshold is the P95 of what one replica has carried in the recent window (what the
   * service demonstrably sustains); afterwards it moves with the SLO — down when the TTFT p99 misses it, up while
   * replicas carry close to it, the p99 is under half the SLO and nothing queues (room to pack more tokens).
   */
  calibrate(obs: ServiceObservation): void {
    const c = this.cfg;
    if (obs.nowSec - this.last < c.calibrationSec) return;
    this.last = obs.nowSec;
    // The window's TTFT p99 covers the window's requests: no risk seen in it means its peak was carried within the SLO.
    if (!this.windowRisk && this.windowPeak > 0 && obs.ttftP99Sec !== undefined) this.proven.push(obs.nowSec, this.windowPeak);
    this.windowPeak = 0;
    this.windowRisk = false;
    const carried = this.perReplica.quantile(0.95);
    if (this.threshold === undefined) {
      if (obs.nowSec >= c.calibrationSec && carried > 0) this.threshold = clamp(carried, c.minThreshold, c.maxThreshold);
      return;
    }
    if (obs.ttftP99Sec !== undefined && obs.ttftP99Sec > c.sloTtftSec) {
      this.threshold = clamp(this.threshold * c.lower, c.minThreshold, c.maxThreshold);
      // A miss contradicts what was proven (the requests or the engine changed): learn the capacity afresh.
      this.proven = new Window(c.historyWindowSec);
    }
    // Raise only on evidence: replicas recently carried close to the threshold and the SLO held with room.
    else if ((obs.ttftP99Sec ?? 0) < c.sloTtftSec / 2 && obs.waiting === 0 && obs.kvCacheUsage < 0.9 && carried >= 0.8 * this.threshold) {
      this.threshold = clamp(this.threshold * c.raise, c.minThreshold, c.maxThreshold);
    }
  }
}

export class TokenAutoscaler implements Autoscaler {
  readonly name = 'sits';
  private readonly history: Window;
  private readonly panic: Window;
  private readonly smoothing: Window;
  private readonly calibration: ThresholdCalibration;
  private current: number | undefined;
  private lowerSince: number | undefined;
  private lastStepDown = Number.NEGATIVE_INFINITY;
  private panicUntil = Number.NEGATIVE_INFINITY;
  private lastDemand = Number.NEGATIVE_INFINITY;
  private lastObsSec: number | undefined;
  private firstObsSec: number | undefined;
  private lastBacklog = 0;
  private demand = 0;
  private riskAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly cfg: TokenAutoscalerConfig) {
    this.history = new Window(cfg.historyWindowSec);
    this.panic = new Window(cfg.panicWindowSec);
    this.smoothing = new Window(cfg.smoothingSec);
    this.calibration = new ThresholdCalibration(cfg);
  }

  /** The token demand of the last observation (tokens/s: served plus the queue drained over drainSec), for events. */
  get demandTokensPerSec(): number {
    return this.demand;
  }

  /** The per-replica threshold replicas are sized with (tokens/s): the calibrated one or the proven capacity, the higher. */
  get tokensPerReplica(): number {
    return Math.max(this.calibration.calibrated, this.provenTokensPerReplica);
  }

  /** The threshold the SLO feedback calibrated (tokens/s per replica), before the proven capacity raises it. */
  get calibratedTokensPerReplica(): number {
    return this.calibration.calibrated;
  }

  /** The most one replica carried (smoothed demand per ready replica) in a recent window the SLO held throughout. */
  get provenTokensPerReplica(): number {
    return this.calibration.provenMax;
  }

  /** When the SLO was last seen at risk (seconds; -Infinity when never), for status and tests. */
  get sloRiskAtSec(): number {
    return this.riskAt;
  }

  /**
   * A request arrived at `atSec` with no replica to take it (an activator or router holds it): demand at that time,
   * so a service at zero wants one replica again and the idle period restarts from it.
   */
  activate(atSec: number): void {
    this.lastDemand = Math.max(this.lastDemand, atSec);
  }

  decide(obs: ServiceObservation): number {
    const c = this.cfg;
    const served = obs.promptTokensPerSec + obs.generatedTokensPerSec;
    // Tokens queued now; their growth plus what was served is the arrival rate of tokens (served alone saturates
    // at the capacity in an overload). The history sizes sustained capacity on arrivals; the panic window also
    // wants the queue drained within drainSec.
    const backlog = obs.waiting * obs.meanPromptTokens;
    const dt = this.lastObsSec === undefined ? 0 : obs.nowSec - this.lastObsSec;
    const arriving = Math.max(0, served + (dt > 0 ? (backlog - this.lastBacklog) / dt : 0));
    this.lastObsSec = obs.nowSec;
    this.firstObsSec ??= obs.nowSec;
    this.lastBacklog = backlog;
    const demand = served + backlog / c.drainSec;
    this.demand = demand;
    this.smoothing.push(obs.nowSec, arriving);
    this.history.push(obs.nowSec, this.smoothing.mean());
    this.panic.push(obs.nowSec, demand);
    if (obs.readyReplicas > 0) this.calibration.perReplica.push(obs.nowSec, served / obs.readyReplicas);
    if (demand > 0 || obs.running > 0 || obs.waiting > 0) this.lastDemand = obs.nowSec;
    const risk = sloAtRisk(obs, backlog, served, this.tokensPerReplica, c.sloTtftSec * c.riskTtftFraction);
    if (risk) this.riskAt = obs.nowSec;
    this.calibration.see(risk, obs.readyReplicas > 0 ? this.smoothing.mean() / obs.readyReplicas : undefined);
    this.calibration.calibrate(obs);
    const theta = this.tokensPerReplica;
    const atRisk = obs.nowSec - this.riskAt <= c.riskHoldSec;
    const current = (this.current ??= obs.desiredReplicas);

    const sized = Math.ceil(this.history.quantile(c.demandQuantile) / theta);
    const burst = Math.ceil(this.panic.mean() / theta);
    const serving = Math.max(1, obs.readyReplicas + obs.startingReplicas);
    if (atRisk && burst >= c.panicThreshold * serving && burst > current) this.panicUntil = obs.nowSec + c.panicWindowSec * 10;
    let want = Math.max(sized, burst);
    // Without evidence of risk the replicas serving are enough: hold them (scale-in still follows the demand).
    if (!atRisk) want = Math.min(want, Math.max(current, 1));
    if (obs.waiting > 0) want = Math.max(want, 1);

    // Scale to zero only after a whole idle period (observed: a policy that just started has seen none yet); any
    // demand or activation brings the floor back to one.
    const idleSince = Math.max(this.lastDemand, this.firstObsSec);
    const floor = c.minReplicas === 0 && obs.nowSec - idleSince < c.idleToZeroSec ? 1 : c.minReplicas;
    want = clamp(want, floor, c.maxReplicas);

    let next = current;
    if (want > current) {
      next = Math.min(want, Math.max(current + 1, Math.ceil(current * c.maxScaleUpRate)));
      this.lowerSince = undefined;
    } else if (want < current) {
      this.lowerSince ??= obs.nowSec;
      const held = obs.nowSec - this.lowerSince >= c.scaleDownDelaySec;
      const inPanic = obs.nowSec < this.panicUntil;
      if (held && !inPanic && obs.nowSec - this.lastStepDown >= c.scaleDownStepSec) {
        next = want === 0 ? 0 : current - 1;
        this.lastStepDown = obs.nowSec;
      }
    } else this.lowerSince = undefined;
    this.current = next;
    return next;
  }
}

/**
 * The SLO is at risk when the recent TTFT p99 is above `limitSec`, or the queued tokens take longer than that to
 * drain at the rate the replicas serve (what they served, at least the threshold each): a request queued now would
 * wait that long for its first token.
 */
export function sloAtRisk(obs: ServiceObservation, backlogTokens: number, servedTokensPerSec: number, threshold: number, limitSec: number): boolean {
  if (obs.ttftP99Sec !== undefined && obs.ttftP99Sec > limitSec) return true;
  if (backlogTokens <= 0) return false;
  const rate = Math.max(servedTokensPerSec, threshold * obs.readyReplicas);
  return rate <= 0 || backlogTokens / rate > limitSec;
}
