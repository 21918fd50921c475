import { defineConfig } from 'vitest/config';

// Tests import the packages by name, so they exercise the built output
// (`npm test` builds first), exactly what a user of the packages runs.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'node',
          environment: 'node',
          include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
