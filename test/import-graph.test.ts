/**
 * What a program that only runs tools loads: `@corral/node` leaves its HTTP
 * server, policy gate and workflow engine to their subpaths
 * (`@corral/node/http`, `/policy`, `/mcp`), which cost ~45 ms of a cold start.
 * Checked in a fresh process by the Node built-ins each would bring in.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('..', import.meta.url).pathname;
const DIFF = 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n';

/** Run `body` as an ES module in a fresh Node process; it prints the built-in HTTP modules loaded by then. */
async function httpModulesAfter(body: string): Promise<string[]> {
  const script = `${body}\nconsole.log(JSON.stringify(process.moduleLoadList.filter((m) => /^NativeModule _?http(_server)?$/.test(m))));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as string[];
}

describe('@corral/node at startup', () => {
  it('creating a Corral and running a tool loads no HTTP server', async () => {
    const loaded = await httpModulesAfter(`
      import { Corral } from '@corral/node';
      const corral = await Corral.create({ size: 1, store: false });
      const r = await corral.invoke('diff-summary', { diff: ${JSON.stringify(DIFF)} });
      await corral.close();
      if (!r.ok) throw new Error(JSON.stringify(r.error));`);
    expect(loaded).toEqual([]);
  });

  it('@corral/node/http does load it (the check above can see it)', async () => {
    const loaded = await httpModulesAfter(`import '@corral/node/http';`);
    expect(loaded).toContain('NativeModule http');
  });
});
