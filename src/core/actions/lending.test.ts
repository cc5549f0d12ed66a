import { describe, expect, it } from 'vitest';
import { giveBackWorkers, planLend, type Borrower, type Lender } from './lending.ts';

const svc = (b: Partial<Borrower> = {}): Borrower => ({ id: 'svc', queue: 'serving', priority: 100, gpus: 1, reclaim: 'Any', ...b });
const job = (l: Partial<Lender> = {}): Lender => ({
  id: 'job',
  queue: 'serving',
  priority: 0,
  workers: 4,
  minWorkers: 2,
  gpusPerWorker: 1,
  preemptible: false,
  checkpoints: true,
  ...l,
});

describe('planLend', () => {
  it('takes whole workers, at the checkpoint boundary unless the job is preemptible', () => {
    expect(planLend(svc({ gpus: 3 }), [job({ gpusPerWorker: 2 })])).toEqual({ ok: true, lender: 'job', workers: 2, gpus: 4, when: 'checkpoint' });
    expect(planLend(svc(), [job({ preemptible: true })])).toMatchObject({ ok: true, when: 'now' });
  });
  it('never goes below the minimum', () => {
    const d = planLend(svc({ gpus: 3 }), [job()]);
    expect(d).toMatchObject({ ok: false, refusals: [{ lender: 'job', code: 'AtMinimum' }] });
    expect(planLend(svc({ gpus: 2 }), [job()]).ok).toBe(true);
  });
  it('a job of higher priority than the service does not lend; equal priority does', () => {
    expect(planLend(svc(), [job({ priority: 101 })])).toMatchObject({ ok: false, refusals: [{ code: 'HigherPriority' }] });
    expect(planLend(svc(), [job({ priority: 100 })]).ok).toBe(true);
  });
  it('queues decide across queues: reclaimWithinCohort of the borrower, guaranteed GPUs of the lender', () => {
    const other = job({ queue: 'research' });
    expect(planLend(svc({ reclaim: 'Never' }), [other])).toMatchObject({ ok: false, refusals: [{ code: 'QueueNoReclaim' }] });
    expect(planLend(svc({ reclaim: 'LowerPriority' }), [job({ queue: 'research', priority: 100 })])).toMatchObject({
      ok: false,
      refusals: [{ code: 'QueueNoReclaim' }],
    });
    expect(planLend(svc({ reclaim: 'LowerPriority' }), [other]).ok).toBe(true);
    expect(planLend(svc(), [job({ queue: 'research', queueLendableGpus: 0 })])).toMatchObject({ ok: false, refusals: [{ code: 'QueueGuaranteed' }] });
    // Within one queue the queue's guarantee is not at stake (the GPUs stay in the queue).
    expect(planLend(svc(), [job({ queueLendableGpus: 0 })]).ok).toBe(true);
  });
  it('a job that can neither stop at once nor at a checkpoint does not lend', () => {
    expect(planLend(svc(), [job({ checkpoints: false })])).toMatchObject({ ok: false, refusals: [{ code: 'NoBoundary' }] });
  });
  it('prefers preemptible, then lower priority, then less waste, then the id; says why none lends', () => {
    const pick = (ls: Lender[]): string => {
      const d = planLend(svc({ gpus: 2 }), ls);
      return d.ok ? d.lender : 'none';
    };
    expect(pick([job({ id: 'a', priority: -5 }), job({ id: 'b', preemptible: true })])).toBe('b');
    expect(pick([job({ id: 'a', priority: 5 }), job({ id: 'b', priority: 1 })])).toBe('b');
    expect(pick([job({ id: 'a', gpusPerWorker: 4, workers: 8 }), job({ id: 'b', gpusPerWorker: 2 })])).toBe('b');
    expect(pick([job({ id: 'b' }), job({ id: 'a' })])).toBe('a');
    const none = planLend(svc({ gpus: 2 }), [job({ id: 'a', priority: 200 }), job({ id: 'b', workers: 2 })]);
    expect(none.ok).toBe(false);
    if (!none.ok)
      expect(none.message).toBe("no training job lends 2 GPU(s) to svc: a has priority 200, above svc's 100; b would run 0 workers, below its minimum of 2");
    expect(planLend(svc(), [])).toMatchObject({ ok: false, message: 'no elastic training job to borrow 1 GPU(s) from' });
  });
});

describe('giveBackWorkers', () => {
  it('returns as many lent workers as the spare GPUs hold, whole workers only', () => {
    expect(giveBackWorkers({ lentWorkers: 3, gpusPerWorker: 2, spareGpus: 5 })).toBe(2);
    expect(giveBackWorkers({ lentWorkers: 1, gpusPerWorker: 2, spareGpus: 8 })).toBe(1);
    expect(giveBackWorkers({ lentWorkers: 2, gpusPerWorker: 2, spareGpus: 1 })).toBe(0);
    expect(giveBackWorkers({ lentWorkers: 0, gpusPerWorker: 1, spareGpus: 4 })).toBe(0);
    expect(giveBackWorkers({ lentWorkers: 2, gpusPerWorker: 1, spareGpus: -3 })).toBe(0);
  });
});
