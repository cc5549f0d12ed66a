/**
 * Serving and training share a cluster (issue 12, Deliver 5, simulated): an elastic TrainingJob holds every GPU
 * the service does not. When the service must scale out and no GPU is free, the job lends one: it shrinks at its
 * next checkpoint boundary (at once when preemptible), never below its minimum; the service's replica gets the GPU
 * then. Whether and when the job lends, and how much it takes back, is the live lender's decision (core/actions/lending.ts,
 * ADR 0131): one job, one queue, equal priorities, one GPU per worker. GPUs the service gives back are free until the job regrows onto them, `regrowDelaySec` later (a cooldown
 * against resize storms). Every resize stalls the job for `restartSec` on all its GPUs (restart from checkpoint).
 *
 * Accounting, in GPU-seconds within [fromSec, toSec]:
 * - lent: GPUs of the job's share held by the service (the service's GPUs beyond its own minimum);
 * - lost: what lending cost the job beyond the GPUs it lent — resize stalls, and GPUs returned but idle until the
 *   job regrows. The job's progress falls short of running on its whole share by lent + lost.
 */
import { giveBackWorkers, planLend, type Borrower, type Lender } from '../../core/actions/lending.ts';
import type { GpuPool } from './serving-sim.ts';

export interface SharingConfig {
  readonly clusterGpus: number;
  /** GPUs the service owns outright (its minimum); the rest is the job's share. */
  readonly servingGpus: number;
  readonly trainingMinGpus: number;
  readonly checkpointIntervalSec: number;
  readonly restartSec: number;
  readonly regrowDelaySec: number;
  readonly preemptible: boolean;
  readonly fromSec: number;
  readonly toSec: number;
}

export interface SharingReport {
  readonly trainingGpuHoursLent: number;
  readonly trainingGpuHoursLost: number;
  readonly shrinks: number;
  readonly regrows: number;
  /** Requests refused because the job was at its minimum. */
  readonly refused: number;
}

/** The simulated service: same queue and priority as the job, so only the job's minimum and boundary decide. */
const SERVICE = (gpus: number): Borrower => ({ id: 'service', queue: '', priority: 0, gpus, reclaim: 'Any' });

type Event = { t: number; kind: 'shrink' | 'regrow'; gpus: number };

export class ElasticTrainingPool implements GpuPool {
  private free: number;
  private training: number;
  private serving = 0;
  private promised = 0;
  private events: Event[] = [];
  private clock = 0;
  private lentSec = 0;
  private idleSec = 0;
  private stallSec = 0;
  private lastStallAt = Number.NaN;
  private shrinks = 0;
  private regrows = 0;
  private refused = 0;

  constructor(private readonly cfg: SharingConfig) {
    this.training = cfg.clusterGpus - cfg.servingGpus;
    this.free = cfg.servingGpus;
  }

  request(nowSec: number, gpus: number): number | undefined {
    this.advance(nowSec);
    if (this.free >= gpus) {
      this.free -= gpus;
      this.serving += gpus;
      return nowSec;
    }
    const d = planLend(SERVICE(gpus), [this.lender()]);
    if (!d.ok) {
      this.refused++;
      return undefined;
    }
    const c = this.cfg.checkpointIntervalSec;
    const at = d.when === 'now' ? nowSec : Math.ceil(nowSec / c - 1e-9) * c;
    this.promised += d.gpus;
    this.push({ t: at, kind: 'shrink', gpus: d.gpus });
    this.advance(nowSec);
    return at;
  }

  release(nowSec: number, gpus: number): void {
    this.advance(nowSec);
    this.serving -= gpus;
    this.free += gpus;
    this.push({ t: nowSec + this.cfg.regrowDelaySec, kind: 'regrow', gpus: 0 });
  }

  cancel(nowSec: number, gpus: number, grantAtSec: number): void {
    this.advance(nowSec);
    const i = this.events.findIndex((e) => e.kind === 'shrink' && e.t === grantAtSec && e.gpus === gpus);
    if (i >= 0 && grantAtSec > nowSec) {
      this.events.splice(i, 1);
      this.promised -= gpus;
    } else this.release(nowSec, gpus);
  }

  finish(endSec: number): void {
    this.advance(endSec);
  }

  report(): SharingReport {
    return {
      trainingGpuHoursLent: this.lentSec / 3600,
      trainingGpuHoursLost: (this.idleSec + this.stallSec) / 3600,
      shrinks: this.shrinks,
      regrows: this.regrows,
      refused: this.refused,
    };
  }

  /** The job as the lending planner sees it: one GPU per worker, what it has not promised yet. */
  private lender(): Lender {
    return {
      id: 'training',
      queue: '',
      priority: 0,
      workers: this.training - this.promised,
      minWorkers: this.cfg.trainingMinGpus,
      gpusPerWorker: 1,
      preemptible: this.cfg.preemptible,
      checkpoints: true,
    };
  }

  private push(e: Event): void {
    this.events.push(e);
    this.events.sort((a, b) => a.t - b.t);
  }

  /** Integrates up to `t` (clipped to the reporting window), applying due resizes in time order. */
  private advance(t: number): void {
    while (this.events.length > 0 && (this.events[0] as Event).t <= t) {
      const e = this.events.shift() as Event;
      this.integrate(e.t);
      if (e.kind === 'shrink') {
        this.training -= e.gpus;
        this.promised -= e.gpus;
        this.serving += e.gpus;
        this.shrinks++;
        this.stall(e.t);
      } else {
        // Only GPUs of the job's share: the service's own minimum stays free for it.
        const spare = this.free - Math.max(0, this.cfg.servingGpus - this.serving);
        const n = giveBackWorkers({ lentWorkers: this.cfg.clusterGpus - this.cfg.servingGpus - this.training, gpusPerWorker: 1, spareGpus: spare });
        if (n > 0) {
          this.free -= n;
          this.training += n;
          this.regrows++;
          this.stall(e.t);
        }
      }
    }
    this.integrate(t);
  }

  private stall(t: number): void {
    if (this.lastStallAt === t) return;
    this.lastStallAt = t;
    const a = Math.max(t, this.cfg.fromSec);
    const b = Math.min(t + this.cfg.restartSec, this.cfg.toSec);
    if (b > a) this.stallSec += (b - a) * this.training;
  }

  private integrate(t: number): void {
    const a = Math.max(this.clock, this.cfg.fromSec);
    const b = Math.min(t, this.cfg.toSec);
    if (b > a) {
      this.lentSec += (b - a) * Math.max(0, this.serving - this.cfg.servingGpus);
      // Idle: free GPUs of the job's share (beyond what the service's own minimum leaves free).
      this.idleSec += (b - a) * Math.max(0, this.free - Math.max(0, this.cfg.servingGpus - this.serving));
    }
    this.clock = Math.max(this.clock, t);
  }
}
