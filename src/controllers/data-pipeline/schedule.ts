/**
 * Cron schedules and run history for DataPipelines (issue 17, Deliver 5), with the semantics of Kubernetes'
 * CronJob controller (v2, pkg/controller/cronjob; ADR 0124), so that a pipeline's schedule behaves as its users
 * already expect:
 *  - the schedule is standard 5-field cron or a @hourly-style macro, read in spec.timeZone (default UTC, where a
 *    CronJob would take the controller-manager's zone: a controller's zone is not something users can see);
 *    `TZ=`/`CRON_TZ=` inside the schedule is refused as CronJob refuses it;
 *  - missed schedules start at most one run, for the most recent missed time; the search starts at the last
 *    schedule time (the creation time before the first), or at now − startingDeadlineSeconds when that is later;
 *  - more than 100 missed times still start that one run, with CronJob's warning (a v1 controller refused);
 *  - a time older than startingDeadlineSeconds is skipped; suspend starts nothing (runs in flight go on);
 *  - concurrencyPolicy Allow starts alongside active runs, Forbid skips the time (and does not record it, so a
 *    later look retries it within the deadline), Replace stops the active runs and starts the new one;
 *  - finished runs beyond successfulRunsHistoryLimit (default 3) / failedRunsHistoryLimit (default 1) are deleted,
 *    oldest first; active runs never are.
 * Pure: the cron arithmetic is croner's (no timers are started: no callback is given), time is an argument.
 */
import { Cron } from 'croner';
import { err, ok, type Result } from '../../core/result.ts';
import type { FieldError } from './step-cache.ts';

export type ConcurrencyPolicy = 'Allow' | 'Forbid' | 'Replace';
export const CONCURRENCY_POLICIES: readonly ConcurrencyPolicy[] = ['Allow', 'Forbid', 'Replace'];

export interface ScheduleSpec {
  readonly schedule: string;
  /** IANA zone the schedule is read in. Default: UTC. */
  readonly timeZone?: string;
  /** Default: Allow. */
  readonly concurrencyPolicy?: ConcurrencyPolicy;
  readonly startingDeadlineSeconds?: number;
  readonly suspend?: boolean;
  /** Default: 3. */
  readonly successfulRunsHistoryLimit?: number;
  /** Default: 1. */
  readonly failedRunsHistoryLimit?: number;
}

/** One run of the pipeline (scheduled or re-run by hand), as the controller lists them. */
export interface RunRef {
  readonly name: string;
  readonly phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  /** When the run started; the history limits delete by it (CronJob: status.startTime, then name). */
  readonly startTime?: Date;
}

export interface ScheduleDecision {
  /** The scheduled time to start a run for now; record it as status.lastScheduleTime once the run is created. */
  readonly start?: Date;
  /** Runs to delete: the active runs Replace stops, then finished runs beyond the history limits. */
  readonly deleteRuns: readonly string[];
  /** Of deleteRuns, those Replace stops. */
  readonly replaced: readonly string[];
  /** Of deleteRuns, those beyond the history limits. */
  readonly pruned: readonly string[];
  /** The next schedule time after now: when to look again. Undefined when suspended or the schedule ends. */
  readonly next?: Date;
  /** One line, user-readable: why a run starts or not. */
  readonly reason: string;
  /** Warnings for events, e.g. too many missed start times. */
  readonly warnings: readonly string[];
}

export const DEFAULT_SUCCESSFUL_HISTORY = 3;
export const DEFAULT_FAILED_HISTORY = 1;
/** CronJob's bound on missed start times before it warns (pkg/controller/cronjob/utils.go). */
export const MAX_MISSED_START_TIMES = 100;

const FINISHED = new Set<RunRef['phase']>(['Succeeded', 'Failed']);
const isActive = (r: RunRef): boolean => !FINISHED.has(r.phase);

/** A parsed schedule, or the spec field that is wrong. */
export function parseSchedule(spec: Pick<ScheduleSpec, 'schedule' | 'timeZone'>): Result<Cron, FieldError> {
  const text = spec.schedule.trim();
  if (/(^|\s)(CRON_)?TZ=/.test(text))
    return err({ field: 'spec.schedule', message: 'TZ/CRON_TZ inside the schedule is not supported (as in CronJob): set spec.timeZone' });
  if (text.startsWith('@every')) return err({ field: 'spec.schedule', message: '@every is not supported: write a 5-field cron expression' });
  const timezone = spec.timeZone ?? 'UTC';
  if (spec.timeZone !== undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    } catch {
      return err({ field: 'spec.timeZone', message: `unknown time zone ${JSON.stringify(spec.timeZone)}: use an IANA name such as Europe/Berlin` });
    }
  }
  let cron: Cron;
  try {
    cron = new Cron(text, { timezone, mode: '5-part', paused: true });
  } catch (e) {
    return err({ field: 'spec.schedule', message: `${JSON.stringify(spec.schedule)}: ${(e as Error).message.replace(/^CronPattern: /, '')}` });
  }
  return ok(cron);
}

function validate(spec: ScheduleSpec): FieldError | undefined {
  if (spec.concurrencyPolicy !== undefined && !CONCURRENCY_POLICIES.includes(spec.concurrencyPolicy)) {
    return { field: 'spec.concurrencyPolicy', message: `${JSON.stringify(spec.concurrencyPolicy)}: one of ${CONCURRENCY_POLICIES.join(', ')}` };
  }
  const nonNegInt = (field: string, v: number | undefined): FieldError | undefined =>
    v !== undefined && !(Number.isInteger(v) && v >= 0) ? { field, message: `${v}: a whole number ≥ 0` } : undefined;
  return (
    nonNegInt('spec.startingDeadlineSeconds', spec.startingDeadlineSeconds) ??
    nonNegInt('spec.successfulRunsHistoryLimit', spec.successfulRunsHistoryLimit) ??
    nonNegInt('spec.failedRunsHistoryLimit', spec.failedRunsHistoryLimit)
  );
}

const byStart = (a: RunRef, b: RunRef): number => {
  // As CronJob's byJobStartTime: runs without a start time sort last; ties by name.
  if (a.startTime === undefined && b.startTime !== undefined) return 1;
  if (a.startTime !== undefined && b.startTime === undefined) return -1;
  const d = (a.startTime?.getTime() ?? 0) - (b.startTime?.getTime() ?? 0);
  return d !== 0 ? d : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
};

/** Finished runs beyond the history limits, oldest first (successful and failed are counted apart). */
export function pruneHistory(runs: readonly RunRef[], limits: Pick<ScheduleSpec, 'successfulRunsHistoryLimit' | 'failedRunsHistoryLimit'> = {}): string[] {
  const over = (phase: RunRef['phase'], keep: number): RunRef[] => {
    const xs = runs.filter((r) => r.phase === phase).sort(byStart);
    return xs.slice(0, Math.max(0, xs.length - keep));
  };
  return [
    ...over('Succeeded', limits.successfulRunsHistoryLimit ?? DEFAULT_SUCCESSFUL_HISTORY),
    ...over('Failed', limits.failedRunsHistoryLimit ?? DEFAULT_FAILED_HISTORY),
  ]
    .sort(byStart)
    .map((r) => r.name);
}

/** A scheduled run's name: the pipeline's and the scheduled minute (CronJob's job names), so a time is created once. */
export function scheduledRunName(pipeline: string, scheduledTime: Date): string {
  return `${pipeline}-${Math.floor(scheduledTime.getTime() / 60_000)}`;
}

interface Missed {
  readonly mostRecent?: Date;
  /** Schedule times in (earliest, now], counted up to MAX_MISSED_START_TIMES + 1. */
  readonly count: number;
}

/** The most recent schedule time in (earliest, now] and how many there are (capped), as mostRecentScheduleTime. */
function missedTimes(cron: Cron, earliest: Date, now: Date): Missed {
  let count = 0;
  let last: Date | undefined;
  for (let t = cron.nextRun(earliest); t !== null && t.getTime() <= now.getTime(); t = cron.nextRun(t)) {
    count++;
    last = t;
    if (count > MAX_MISSED_START_TIMES) break;
  }
  if (count <= MAX_MISSED_START_TIMES) return { count, ...(last === undefined ? {} : { mostRecent: last }) };
  // Too many to walk: jump to the latest time ≤ now (previousRuns is strictly before its reference).
  const before = cron.previousRuns(1, now)[0];
  const at = before === undefined ? null : cron.nextRun(before);
  const mostRecent = at !== null && at.getTime() <= now.getTime() ? at : before;
  return { count, ...(mostRecent === undefined ? {} : { mostRecent }) };
}

const iso = (d: Date): string => d.toISOString().replace('.000Z', 'Z');

/**
 * What the pipeline's schedule asks for at `now`. `lastScheduleTime` is status.lastScheduleTime, or the
 * pipeline's creationTimestamp while it has none (as CronJob); `runs` are all its runs, active and finished.
 */
export function nextRuns(spec: ScheduleSpec, lastScheduleTime: Date, now: Date, runs: readonly RunRef[]): Result<ScheduleDecision, FieldError> {
  const bad = validate(spec);
  if (bad !== undefined) return err(bad);
  const parsed = parseSchedule(spec);
  if (!parsed.ok) return parsed;
  const cron = parsed.value;
  const pruned = pruneHistory(runs, spec);
  const next = cron.nextRun(now) ?? undefined;
  const decide = (reason: string, extra: Partial<Pick<ScheduleDecision, 'start' | 'replaced' | 'warnings'>> = {}): ScheduleDecision => {
    const replaced = extra.replaced ?? [];
    return {
      ...(extra.start === undefined ? {} : { start: extra.start }),
      deleteRuns: [...replaced, ...pruned.filter((n) => !replaced.includes(n))],
      replaced,
      pruned,
      ...(next === undefined || spec.suspend === true ? {} : { next }),
      reason,
      warnings: extra.warnings ?? [],
    };
  };
  if (cron.nextRun(lastScheduleTime) === null && next === undefined)
    return err({ field: 'spec.schedule', message: `${JSON.stringify(spec.schedule)} matches no date from ${iso(lastScheduleTime)} on` });
  if (spec.suspend === true) return ok(decide('suspended: no new runs (runs in flight go on)'));

  const deadline = spec.startingDeadlineSeconds;
  let earliest = lastScheduleTime;
  // CronJob does not look further back than the deadline: that also bounds the missed times it counts.
  if (deadline !== undefined && now.getTime() - deadline * 1000 > earliest.getTime()) earliest = new Date(now.getTime() - deadline * 1000);
  const missed = missedTimes(cron, earliest, now);
  const warnings =
    missed.count > MAX_MISSED_START_TIMES
      ? [`too many missed start times (> ${MAX_MISSED_START_TIMES}) since ${iso(earliest)}: set or decrease spec.startingDeadlineSeconds or check clock skew`]
      : [];
  const scheduled = missed.mostRecent;
  if (scheduled === undefined) {
    // Times between the last schedule and the deadline's horizon are skipped, as CronJob skips them ("missed").
    const late = earliest.getTime() > lastScheduleTime.getTime() ? missedTimes(cron, lastScheduleTime, earliest).mostRecent : undefined;
    const then = next === undefined ? 'the schedule has no further times' : `next run at ${iso(next)}`;
    return ok(decide(late === undefined ? then : `missed ${iso(late)}: more than startingDeadlineSeconds (${deadline}s) ago; ${then}`, { warnings }));
  }
  // scheduled > earliest ≥ now − deadline: CronJob's "too late" test cannot fail here, and scheduled is after
  // lastScheduleTime, so it was not started yet.
  const active = runs.filter(isActive).sort(byStart);
  const policy = spec.concurrencyPolicy ?? 'Allow';
  const skipped =
    missed.count > 1
      ? ` (${missed.count > MAX_MISSED_START_TIMES ? `more than ${MAX_MISSED_START_TIMES}` : missed.count - 1} earlier missed time${missed.count === 2 ? '' : 's'} not run)`
      : '';
  if (policy === 'Forbid' && active.length > 0) {
    return ok(decide(`not starting ${iso(scheduled)}: concurrencyPolicy Forbid and ${active.map((r) => r.name).join(', ')} still running`, { warnings }));
  }
  if (policy === 'Replace' && active.length > 0) {
    const replaced = active.map((r) => r.name);
    return ok(
      decide(`start ${iso(scheduled)}, replacing ${replaced.join(', ')} (concurrencyPolicy Replace)${skipped}`, { start: scheduled, replaced, warnings }),
    );
  }
  const alongside = active.length > 0 ? ` alongside ${active.length} active run${active.length === 1 ? '' : 's'}` : '';
  return ok(decide(`start ${iso(scheduled)}${alongside}${skipped}`, { start: scheduled, warnings }));
}
