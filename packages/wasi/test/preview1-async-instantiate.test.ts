/**
 * Where a thread refuses synchronous instantiation (a browser's main thread),
 * a preview1 module is instantiated asynchronously with imports of its own
 * host: its start function runs outside the call's `enter`. Its own file,
 * because the refusal is remembered for the rest of the module's life.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Preview1Runner } from '@corral/wasi';
import { runRequest } from './run-request.js';
import { startExits } from './start-exits.js';

describe('Preview1Runner where synchronous instantiation is refused', () => {
  const Instance = WebAssembly.Instance;
  let refused = 0;
  beforeAll(() => {
    // What Chromium's main thread throws for a module over its synchronous limit.
    (WebAssembly as { Instance: unknown }).Instance = function () {
      refused++;
      throw new RangeError('WebAssembly.Instance is disallowed on the main thread, if the buffer size is larger than 8MB.');
    };
  });
  afterAll(() => {
    (WebAssembly as { Instance: unknown }).Instance = Instance;
  });

  it("answers a start function's calls from its own call's host, and calls at once from their own", async () => {
    const runner = new Preview1Runner();
    const [five, six] = await Promise.all([startExits(5), startExits(6)]);
    const codes = [5, 6, 5, 6, 5, 6];
    const results = await Promise.all(codes.map((code) => runner.run(`exit-${code}`, code === 5 ? five : six, runRequest())));
    expect(results.map((r) => [r.exitCode, r.stdout.length, r.error])).toEqual(codes.map((code) => [code, 0, undefined]));
    // Refused once, then not asked again.
    expect(refused).toBe(1);
  });
});
