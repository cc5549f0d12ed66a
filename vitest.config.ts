import { defineConfig } from 'vitest/config';

// Two projects: fast unit tests, and e2e tests that start a real control plane (one at a time: 2 cores).
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['src/**/*.test.ts', 'web/**/*.test.ts', 'scripts/**/*.test.ts'], exclude: ['**/*.e2e.test.ts', 'node_modules/**'], testTimeout: 60_000 } },
      {
        test: {
          name: 'e2e',
          include: ['src/**/*.e2e.test.ts', 'web/**/*.e2e.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 240_000,
          pool: 'forks',
          poolOptions: { forks: { singleFork: true } },
          fileParallelism: false,
        },
      },
    ],
  },
});
