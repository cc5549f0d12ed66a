/**
 * What an autoscaler sees and answers. The same objects run in the simulator and, fed by the controller from live
 * /metrics (metrics.ts), in the cluster: a policy is a pure, deterministic state machine over observations.
 */

/** One observation of a service, summed over its replicas (the controller builds it from every replica's scrape). */
export interface ServiceObservation {
  readonly nowSec: number;
  /** Replicas serving. */
  readonly readyReplicas: number;
  /** Replicas granted a GPU and loading the model. */
  readonly startingReplicas: number;
  /** The replica count the autoscaler asked for last (the scale subresource's spec.replicas). */
  readonly desiredReplicas: number;
  /** Requests queued in the engines (vllm:num_requests_waiting) plus those waiting for any replica. */
  readonly waiting: number;
  /** Requests in the engines' batches (vllm:num_requests_running). */
  readonly running: number;
  /** Mean KV-cache use of the ready replicas, 0..1. */
  readonly kvCacheUsage: number;
  /** Prompt tokens processed per second since the last observation (rate of vllm:prompt_tokens_total). */
  readonly promptTokensPerSec: number;
  /** Tokens generated per second since the last observation (rate of vllm:generation_tokens_total). */
  readonly generatedTokensPerSec: number;
  /** Mean prompt length of recent requests, tokens (prompt-token rate over request rate). */
  readonly meanPromptTokens: number;
  /** 99th percentile TTFT of the first tokens of the last calibration window, undefined when none. */
  readonly ttftP99Sec?: number;
}

export interface Autoscaler {
  readonly name: string;
  /** The replica count wanted now, within the policy's bounds. Called once per observation, in time order. */
  decide(obs: ServiceObservation): number;
}

/** Samples over a sliding time window (time-ordered pushes). */
export class Window {
  private readonly t: number[] = [];
  private readonly v: number[] = [];
  private head = 0;
  constructor(private readonly seconds: number) {}
  push(nowSec: number, value: number): void {
    this.t.push(nowSec);
    this.v.push(value);
    while (this.head < this.t.length && (this.t[this.head] as number) <= nowSec - this.seconds) this.head++;
    if (this.head > 4096) {
      this.t.splice(0, this.head);
      this.v.splice(0, this.head);
      this.head = 0;
    }
  }
  values(): number[] {
    return this.v.slice(this.head);
  }
  mean(): number {
    const xs = this.values();
    return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
  }
  max(): number {
    return this.values().reduce((a, b) => Math.max(a, b), 0);
  }
  /** Nearest-rank quantile (q in 0..1) of the window, 0 when empty. */
  quantile(q: number): number {
    const xs = this.values().sort((a, b) => a - b);
    if (xs.length === 0) return 0;
    return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))] as number;
  }
}

export const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));
