/**
 * A huge input, in its own file: the test process must hold the input itself
 * (hundreds of MB with its JSON), which would blur the memory check that ends
 * the hostile suite.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Corral } from '@corral/node';

const FIXTURES = new URL('../fixtures/tools/', import.meta.url).pathname;
let corral: Corral;
beforeAll(async () => {
  corral = await Corral.create({ bundled: false, toolDirs: [FIXTURES], size: 1, store: false });
});
afterAll(() => corral?.close());

it('a huge input is refused before anything runs, with E_INPUT_VALIDATION', async () => {
  const before = corral.executor.pool.workerCount;
  const result = await corral.invoke('echo', { blob: 'x'.repeat(65 * 2 ** 20) });
  expect(result.error?.code).toBe('E_INPUT_VALIDATION');
  expect(result.error?.message).toMatch(/65\.0 MiB of JSON; the limit is 64\.0 MiB/);
  expect(result.exit_code).toBeNull();
  expect(corral.executor.pool.workerCount).toBe(before);
});
