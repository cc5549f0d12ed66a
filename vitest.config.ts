import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { MAX_SCALE, scaled, TIMEOUT_SCALE, TIMEOUT_SCALE_ENV } from './src/testing/timeouts.ts';

// One timeout scale for the whole run, measured now (before the tests load the machine themselves): the test
// workers inherit it through the environment, so waitFor and the control plane use the same factor as these timeouts.
process.env[TIMEOUT_SCALE_ENV] = String(TIMEOUT_SCALE);
if (TIMEOUT_SCALE > 1) process.stderr.write(`test timeouts scaled ×${TIMEOUT_SCALE.toFixed(2)} (${TIMEOUT_SCALE_ENV} or load average per CPU)\n`);

// An e2e test or hook timeout only catches a hang (every wait inside has its own budget, stretched by the load
// while it runs: waitFor), and the factor measured at the start can be 1 on a machine the e2e files then load:
// give them the most the load may ask for.
const hangTimeout = (ms: number): number => Math.max(scaled(ms), MAX_SCALE * ms);

// Two projects: fast unit tests, and e2e tests that start a real control plane (one at a time: 2 cores). `npm test`
// runs them as two vitest processes side by side (scripts/test.mjs).
export default defineConfig({
  test: {
    // Vitest's default is one worker fewer than the CPUs: on a 2-core machine, one, and the unit files ran one at a
    // time (about 1.1 cores busy). At least two: the unit files are independent (temp dirs, port 0).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'web/**/*.test.ts', 'scripts/**/*.test.ts'],
          exclude: ['**/*.e2e.test.ts', 'node_modules/**'],
          // Only a hang: `npm test` runs the unit files beside the e2e files (ADR 0201), where a heavy file shares
          // the CPU with them; work bounds are in CPU time (cpuMsSince).
          testTimeout: hangTimeout(60_000),
          hookTimeout: hangTimeout(30_000),
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['src/**/*.e2e.test.ts', 'web/**/*.e2e.test.ts'],
          testTimeout: hangTimeout(180_000),
          hookTimeout: hangTimeout(240_000),
          pool: 'forks',
          poolOptions: { forks: { singleFork: true } },
          fileParallelism: false,
        },
      },
    ],
  },
});
