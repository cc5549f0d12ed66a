/**
 * The spec.schedulerName values one SITS process schedules: one name, or the names of its profiles
 * (`sits run --config`, ADR 0076). The cache, the translation and the binder take either.
 */
export type SchedulerNames = string | ReadonlySet<string>;

export function isOurs(names: SchedulerNames, schedulerName: string | undefined): boolean {
  if (schedulerName === undefined) return false;
  return typeof names === 'string' ? schedulerName === names : names.has(schedulerName);
}
