import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  MAX_MISSED_START_TIMES,
  type ConcurrencyPolicy,
  nextRuns,
  parseSchedule,
  pruneHistory,
  scheduledRunName,
  type RunRef,
  type ScheduleDecision,
  type ScheduleSpec,
} from './schedule.ts';

const T = (s: string): Date => new Date(`2026-12-01T${s}Z`);
const every5: ScheduleSpec = { schedule: '*/5 * * * *' };

function decide(spec: ScheduleSpec, last: Date, now: Date, runs: readonly RunRef[] = []): ScheduleDecision {
  const r = nextRuns(spec, last, now, runs);
  if (!r.ok) throw new Error(`${r.error.field}: ${r.error.message}`);
  return r.value;
}

function error(spec: ScheduleSpec): string {
  const r = nextRuns(spec, T('10:00:00'), T('10:07:00'), []);
  return r.ok ? 'ok' : `${r.error.field}: ${r.error.message}`;
}

describe('nextRuns: when to start', () => {
  it('starts the schedule time that passed and says when to look again', () => {
    const d = decide(every5, T('10:00:00'), T('10:07:00'));
    expect(d.start).toEqual(T('10:05:00'));
    expect(d.next).toEqual(T('10:10:00'));
    expect(d.reason).toBe('start 2026-12-01T10:05:00Z');
    expect(d.deleteRuns).toEqual([]);
  });

  it('starts nothing before the next time', () => {
    const d = decide(every5, T('10:05:00'), T('10:07:00'));
    expect(d.start).toBeUndefined();
    expect(d.reason).toBe('next run at 2026-12-01T10:10:00Z');
  });

  it('a time exactly at now is due (CronJob: !t.After(now))', () => {
    expect(decide(every5, T('10:00:00'), T('10:05:00')).start).toEqual(T('10:05:00'));
  });

  it('catches up missed times with one run, for the most recent one', () => {
    const d = decide(every5, T('09:00:00'), T('10:07:00'));
    expect(d.start).toEqual(T('10:05:00'));
    expect(d.reason).toBe('start 2026-12-01T10:05:00Z (12 earlier missed times not run)');
    expect(d.warnings).toEqual([]);
  });

  it("more than 100 missed times: still one run, for the latest, with CronJob's warning", () => {
    const d = decide({ schedule: '* * * * *' }, new Date('2026-11-30T10:00:00Z'), T('10:07:30'));
    expect(d.start).toEqual(T('10:07:00'));
    expect(d.warnings).toEqual([
      'too many missed start times (> 100) since 2026-11-30T10:00:00Z: set or decrease spec.startingDeadlineSeconds or check clock skew',
    ]);
    expect(d.reason).toBe(`start 2026-12-01T10:07:00Z (more than ${MAX_MISSED_START_TIMES} earlier missed times not run)`);
  });

  it('exactly 100 missed times do not warn, 101 do', () => {
    const last = T('08:20:00');
    expect(decide({ schedule: '* * * * *' }, last, T('10:00:00')).warnings).toEqual([]);
    expect(decide({ schedule: '* * * * *' }, last, T('10:01:00')).warnings).toHaveLength(1);
  });

  it('startingDeadlineSeconds: looks back no further than the deadline, and bounds the missed count', () => {
    // 10:05 is 150 s before now: inside a 200 s deadline, outside a 60 s one.
    expect(decide({ ...every5, startingDeadlineSeconds: 200 }, T('10:00:00'), T('10:07:30')).start).toEqual(T('10:05:00'));
    const late = decide({ ...every5, startingDeadlineSeconds: 60 }, T('10:00:00'), T('10:07:30'));
    expect(late.start).toBeUndefined();
    expect(late.reason).toBe('missed 2026-12-01T10:05:00Z: more than startingDeadlineSeconds (60s) ago; next run at 2026-12-01T10:10:00Z');
    const longDown = decide({ schedule: '* * * * *', startingDeadlineSeconds: 300 }, new Date('2026-11-30T10:00:00Z'), T('10:07:30'));
    expect(longDown.start).toEqual(T('10:07:00'));
    expect(longDown.warnings).toEqual([]);
  });

  it('suspend starts nothing and sets no requeue, but still prunes history', () => {
    const runs: RunRef[] = [
      { name: 'p-1', phase: 'Failed', startTime: T('09:00:00') },
      { name: 'p-2', phase: 'Failed', startTime: T('09:05:00') },
    ];
    const d = decide({ ...every5, suspend: true }, T('10:00:00'), T('10:07:00'), runs);
    expect(d.start).toBeUndefined();
    expect(d.next).toBeUndefined();
    expect(d.reason).toBe('suspended: no new runs (runs in flight go on)');
    expect(d.deleteRuns).toEqual(['p-1']);
  });

  it('concurrencyPolicy: Allow runs alongside, Forbid skips, Replace stops the active runs', () => {
    const runs: RunRef[] = [
      { name: 'p-a', phase: 'Running', startTime: T('10:00:00') },
      { name: 'p-b', phase: 'Pending' },
      { name: 'p-c', phase: 'Succeeded', startTime: T('09:55:00') },
    ];
    const allow = decide(every5, T('10:00:00'), T('10:07:00'), runs);
    expect(allow.start).toEqual(T('10:05:00'));
    expect(allow.reason).toBe('start 2026-12-01T10:05:00Z alongside 2 active runs');
    const forbid = decide({ ...every5, concurrencyPolicy: 'Forbid' }, T('10:00:00'), T('10:07:00'), runs);
    expect(forbid.start).toBeUndefined();
    expect(forbid.reason).toBe('not starting 2026-12-01T10:05:00Z: concurrencyPolicy Forbid and p-a, p-b still running');
    expect(forbid.next).toEqual(T('10:10:00'));
    const replace = decide({ ...every5, concurrencyPolicy: 'Replace' }, T('10:00:00'), T('10:07:00'), runs);
    expect(replace.start).toEqual(T('10:05:00'));
    expect(replace.replaced).toEqual(['p-a', 'p-b']);
    expect(replace.deleteRuns).toEqual(['p-a', 'p-b']);
    expect(replace.reason).toBe('start 2026-12-01T10:05:00Z, replacing p-a, p-b (concurrencyPolicy Replace)');
    // Forbid with nothing active starts as usual.
    expect(decide({ ...every5, concurrencyPolicy: 'Forbid' }, T('10:00:00'), T('10:07:00'), [runs[2] as RunRef]).start).toEqual(T('10:05:00'));
  });

  it('Forbid does not record the skipped time: once the run finishes, a later look starts it within the deadline', () => {
    const spec: ScheduleSpec = { ...every5, concurrencyPolicy: 'Forbid', startingDeadlineSeconds: 240 };
    expect(decide(spec, T('10:00:00'), T('10:06:00'), [{ name: 'p-a', phase: 'Running' }]).start).toBeUndefined();
    expect(decide(spec, T('10:00:00'), T('10:08:00'), [{ name: 'p-a', phase: 'Succeeded' }]).start).toEqual(T('10:05:00'));
    expect(decide(spec, T('10:00:00'), T('10:09:30'), [{ name: 'p-a', phase: 'Succeeded' }]).start).toBeUndefined();
  });

  it('reads the schedule in spec.timeZone (UTC by default), across a DST change', () => {
    expect(decide({ schedule: '0 9 * * *' }, T('00:00:00'), T('23:00:00')).start).toEqual(T('09:00:00'));
    expect(decide({ schedule: '0 9 * * *', timeZone: 'America/New_York' }, T('00:00:00'), T('23:00:00')).start).toEqual(T('14:00:00'));
    // Europe/Berlin leaves summer time on 2026-10-25: 09:00 local is 07:00Z before and 08:00Z after.
    const berlin: ScheduleSpec = { schedule: '0 9 * * *', timeZone: 'Europe/Berlin' };
    expect(decide(berlin, new Date('2026-10-24T00:00:00Z'), new Date('2026-10-24T12:00:00Z')).start).toEqual(new Date('2026-10-24T07:00:00Z'));
    expect(decide(berlin, new Date('2026-10-25T00:00:00Z'), new Date('2026-10-25T12:00:00Z')).start).toEqual(new Date('2026-10-25T08:00:00Z'));
  });

  it('accepts the macros CronJob accepts', () => {
    expect(decide({ schedule: '@hourly' }, T('09:30:00'), T('10:07:00')).start).toEqual(T('10:00:00'));
    expect(decide({ schedule: '@daily' }, new Date('2026-11-30T12:00:00Z'), T('10:07:00')).start).toEqual(T('00:00:00'));
  });

  it('names the field of a bad spec', () => {
    expect(error({ schedule: '61 * * * *' })).toBe('spec.schedule: "61 * * * *": Invalid value for minute: 61');
    expect(error({ schedule: '0 * * * * *' })).toMatch(/^spec\.schedule: "0 \* \* \* \* \*": mode '5-part' requires exactly 5 parts/);
    expect(error({ schedule: 'TZ=Europe/Berlin 0 9 * * *' })).toBe(
      'spec.schedule: TZ/CRON_TZ inside the schedule is not supported (as in CronJob): set spec.timeZone',
    );
    expect(error({ schedule: '@every 5m' })).toBe('spec.schedule: @every is not supported: write a 5-field cron expression');
    expect(error({ schedule: '0 0 31 2 *' })).toBe('spec.schedule: "0 0 31 2 *" matches no date from 2026-12-01T10:00:00Z on');
    expect(error({ ...every5, timeZone: 'Mars/Olympus' })).toBe('spec.timeZone: unknown time zone "Mars/Olympus": use an IANA name such as Europe/Berlin');
    expect(error({ ...every5, concurrencyPolicy: 'Sometimes' as never })).toBe('spec.concurrencyPolicy: "Sometimes": one of Allow, Forbid, Replace');
    expect(error({ ...every5, startingDeadlineSeconds: -1 })).toBe('spec.startingDeadlineSeconds: -1: a whole number ≥ 0');
    expect(error({ ...every5, failedRunsHistoryLimit: 1.5 })).toBe('spec.failedRunsHistoryLimit: 1.5: a whole number ≥ 0');
    expect(parseSchedule({ schedule: '*/15 * * * *' }).ok).toBe(true);
  });

  it('scheduled runs are named by the scheduled minute, so one time makes one run', () => {
    expect(scheduledRunName('nightly', T('10:05:00'))).toBe(`nightly-${Date.parse('2026-12-01T10:05:00Z') / 60_000}`);
    expect(scheduledRunName('nightly', T('10:05:59'))).toBe(scheduledRunName('nightly', T('10:05:00')));
  });
});

describe('pruneHistory', () => {
  it('keeps the newest 3 successes and 1 failure by default, deletes oldest first, never an active run', () => {
    const runs: RunRef[] = [
      { name: 's1', phase: 'Succeeded', startTime: T('01:00:00') },
      { name: 's2', phase: 'Succeeded', startTime: T('02:00:00') },
      { name: 's3', phase: 'Succeeded', startTime: T('03:00:00') },
      { name: 's4', phase: 'Succeeded', startTime: T('04:00:00') },
      { name: 'f1', phase: 'Failed', startTime: T('01:30:00') },
      { name: 'f2', phase: 'Failed', startTime: T('02:30:00') },
      { name: 'r1', phase: 'Running', startTime: T('00:00:00') },
    ];
    expect(pruneHistory(runs)).toEqual(['s1', 'f1']);
    expect(pruneHistory(runs, { successfulRunsHistoryLimit: 0, failedRunsHistoryLimit: 0 })).toEqual(['s1', 'f1', 's2', 'f2', 's3', 's4']);
    expect(pruneHistory(runs, { successfulRunsHistoryLimit: 10, failedRunsHistoryLimit: 10 })).toEqual([]);
  });

  it('property: keeps exactly min(limit, count) of each phase, the newest ones', () => {
    const phase = fc.constantFrom<RunRef['phase']>('Pending', 'Running', 'Succeeded', 'Failed');
    const run = fc.record({ phase, start: fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }) });
    fc.assert(
      fc.property(fc.array(run, { maxLength: 20 }), fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 6 }), (xs, sLimit, fLimit) => {
        const runs: RunRef[] = xs.map((x, i) => ({
          name: `r${String(i).padStart(2, '0')}`,
          phase: x.phase,
          ...(x.start === undefined ? {} : { startTime: new Date(x.start * 60_000) }),
        }));
        const gone = new Set(pruneHistory(runs, { successfulRunsHistoryLimit: sLimit, failedRunsHistoryLimit: fLimit }));
        const left = runs.filter((r) => !gone.has(r.name));
        for (const [p, limit] of [
          ['Succeeded', sLimit],
          ['Failed', fLimit],
        ] as const) {
          const all = runs.filter((r) => r.phase === p);
          const kept = left.filter((r) => r.phase === p);
          expect(kept.length).toBe(Math.min(limit, all.length));
          // Every deleted run of the phase started no later than every kept one (runs without a start count as newest).
          const t = (r: RunRef): number => r.startTime?.getTime() ?? Number.POSITIVE_INFINITY;
          for (const d of all.filter((r) => gone.has(r.name))) for (const k of kept) expect(t(d)).toBeLessThanOrEqual(t(k));
        }
        expect(runs.filter((r) => r.phase === 'Pending' || r.phase === 'Running').every((r) => !gone.has(r.name))).toBe(true);
        // Order of the list does not matter.
        expect(new Set(pruneHistory([...runs].reverse(), { successfulRunsHistoryLimit: sLimit, failedRunsHistoryLimit: fLimit }))).toEqual(gone);
      }),
      { numRuns: 300 },
    );
  });
});

describe('nextRuns: properties', () => {
  const schedule = fc.constantFrom('* * * * *', '*/5 * * * *', '7,37 * * * *', '0 */2 * * *', '30 6-16/4 * * 1-5', '@hourly');
  const minutes = (n: number): number => n * 60_000;
  const base = Date.parse('2026-12-01T00:00:00Z');

  it('at most one start: the latest schedule time in (horizon, now], and deterministic', () => {
    fc.assert(
      fc.property(
        schedule,
        fc.integer({ min: 0, max: 3000 }),
        fc.integer({ min: 0, max: 3000 }),
        fc.option(fc.integer({ min: 0, max: 20_000 }), { nil: undefined }),
        fc.constantFrom<ConcurrencyPolicy>('Allow', 'Forbid', 'Replace'),
        (sched, lastMin, gapMin, deadline, policy) => {
          const last = new Date(base + minutes(lastMin));
          const now = new Date(last.getTime() + minutes(gapMin) + 17_000);
          const spec: ScheduleSpec = { schedule: sched, concurrencyPolicy: policy, ...(deadline === undefined ? {} : { startingDeadlineSeconds: deadline }) };
          const d = decide(spec, last, now);
          expect(decide(spec, new Date(last), new Date(now))).toEqual(d);
          const cron = parseSchedule(spec);
          if (!cron.ok) throw new Error('schedule');
          const horizon = deadline === undefined ? last.getTime() : Math.max(last.getTime(), now.getTime() - deadline * 1000);
          const first = cron.value.nextRun(new Date(horizon));
          if (d.start === undefined) {
            // Nothing due: no schedule time in (horizon, now].
            expect(first === null || first.getTime() > now.getTime()).toBe(true);
          } else {
            expect(d.start.getTime()).toBeGreaterThan(horizon);
            expect(d.start.getTime()).toBeLessThanOrEqual(now.getTime());
            expect(cron.value.match(d.start)).toBe(true);
            const after = cron.value.nextRun(d.start);
            expect(after === null || after.getTime() > now.getTime()).toBe(true);
          }
          if (d.next !== undefined) expect(d.next.getTime()).toBeGreaterThan(now.getTime());
        },
      ),
      { numRuns: 100 },
    );
  });

  it('the order runs are listed in never changes the decision; Replace deletes exactly the active runs', () => {
    const phase = fc.constantFrom<RunRef['phase']>('Pending', 'Running', 'Succeeded', 'Failed');
    const runsArb = fc.array(fc.record({ phase, start: fc.option(fc.integer({ min: 0, max: 500 }), { nil: undefined }) }), { maxLength: 10 });
    fc.assert(
      fc.property(runsArb, fc.constantFrom<ConcurrencyPolicy>('Allow', 'Forbid', 'Replace'), fc.integer({ min: 0, max: 30 }), (xs, policy, gapMin) => {
        const runs: RunRef[] = xs.map((x, i) => ({
          name: `p-${i}`,
          phase: x.phase,
          ...(x.start === undefined ? {} : { startTime: new Date(base + minutes(x.start)) }),
        }));
        const spec: ScheduleSpec = { ...every5, concurrencyPolicy: policy };
        const last = new Date(base + minutes(600));
        const now = new Date(last.getTime() + minutes(gapMin));
        const d = decide(spec, last, now, runs);
        expect(decide(spec, last, now, [...runs].reverse())).toEqual(d);
        const active = runs.filter((r) => r.phase === 'Pending' || r.phase === 'Running').map((r) => r.name);
        if (policy === 'Replace' && d.start !== undefined) expect([...d.replaced].sort()).toEqual([...active].sort());
        else expect(d.replaced).toEqual([]);
        if (policy === 'Forbid' && active.length > 0) expect(d.start).toBeUndefined();
        for (const n of d.pruned) expect(active).not.toContain(n);
      }),
      { numRuns: 150 },
    );
  });
});
