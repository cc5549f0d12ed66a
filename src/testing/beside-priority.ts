/**
 * The unit project's setup file: when `npm test` runs the unit files beside the e2e files (ADR 0201), it asks for
 * their workers to run at a lower priority (SITS_TEST_NICENESS). Set here, in each worker, and not on vitest's main
 * process: that process serves the workers' module transforms and RPCs, and a starved one timed them out.
 */
import { getPriority, setPriority } from 'node:os';

const asked = process.env.SITS_TEST_NICENESS;
if (asked !== undefined && asked !== '') {
  const niceness = Number(asked);
  if (!Number.isInteger(niceness) || niceness < -20 || niceness > 19) throw new Error(`SITS_TEST_NICENESS must be a whole number in [-20, 19], got "${asked}"`);
  // Only ever lower this process's priority (any user may); never raise it.
  if (getPriority() < niceness) setPriority(niceness);
}
