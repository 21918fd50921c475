import { rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { playwright } from '@vitest/browser-playwright';
import { configDefaults, defineConfig } from 'vitest/config';

// Launch settings shared by every test and benchmark that drives Chromium (see chromium.json).
const chromiumConfig = JSON.parse(readFileSync(new URL('./chromium.json', import.meta.url), 'utf8')) as {
  executablePath: string;
  args: string[];
};
const CHROMIUM = process.env.CORRAL_CHROMIUM ?? chromiumConfig.executablePath;
const CHROMIUM_FLAGS = chromiumConfig.args;

// A profile on disk, because an incognito context keeps IndexedDB in memory and
// durability would go untested; a fresh one per run, because two runs sharing
// a profile (concurrent `npm test`s) would fight over its lock. Chromium
// creates it, so a run without the browser project leaves nothing behind.
const chromiumProfile = join(tmpdir(), `corral-vitest-chromium-${process.pid}-${Date.now()}`);
process.once('exit', () => rmSync(chromiumProfile, { recursive: true, force: true }));

// Tests never touch the user's own snapshot store, transpile cache or policy:
// each run gets its own, and so do the CLI processes the tests start. The
// policy file is never written there (it stays missing: the empty policy);
// a test that needs grants writes its own file and points CORRAL_POLICY or
// --policy at it.
const testState = join(tmpdir(), `corral-test-state-${process.pid}-${Date.now()}`);
process.once('exit', () => rmSync(testState, { recursive: true, force: true }));

const nodeTest = {
  environment: 'node',
  env: {
    CORRAL_STORE: join(testState, 'snapshots.db'),
    CORRAL_CACHE_DIR: join(testState, 'cache'),
    CORRAL_POLICY: join(testState, 'policy.yaml'),
  },
  testTimeout: 60_000,
  hookTimeout: 120_000,
} as const;

// The web app's files that time main-thread tasks against 100 ms in Chromium.
// Run beside the suite's busiest files (a wasm build on both cores), a task
// measured 240 ms in CI; so they run last, one at a time, with nothing beside them.
const TIMED = ['test/web-diffs.test.ts', 'test/web-input.test.ts', 'test/web-navigation.test.ts'];

// Tests import the packages by name, so they exercise the built output
// (`npm test` builds first), exactly what a user of the packages runs.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...nodeTest,
          name: 'node',
          include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, '**/*.browser.test.ts', ...TIMED],
        },
      },
      {
        test: {
          ...nodeTest,
          name: 'timed',
          include: TIMED,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        optimizeDeps: {
          // comlink and jco are imported by @corral/browser's sandbox worker, which vite
          // only sees once the worker starts: listed here so that never reloads a test.
          // yaml comes with @corral/workflow, which only the workflow test imports.
          include: [
            'idb',
            'ajv',
            'ajv/dist/2020.js',
            'ajv-formats',
            'semver',
            'comlink',
            'comlink/dist/esm/comlink.mjs',
            '@bytecodealliance/jco/component',
            'yaml',
          ],
        },
        test: {
          name: 'browser',
          include: ['**/*.browser.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          browser: {
            enabled: true,
            headless: true,
            provider: playwright({
              launchOptions: { executablePath: CHROMIUM, args: CHROMIUM_FLAGS },
              // Only honoured when files run one at a time.
              persistentContext: chromiumProfile,
            }),
            fileParallelism: false,
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
