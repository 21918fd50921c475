/**
 * What a program that only runs tools loads: `@corral/node` leaves its HTTP
 * server, policy gate and workflow engine to their subpaths
 * (`@corral/node/http`, `/policy`, `/mcp`), which cost ~45 ms of a cold start,
 * and ajv to the first schema compiled (~20 ms; the bundled tools ship
 * prebuilt validators). Checked in a fresh process by the Node built-ins or
 * CommonJS files each would bring in.
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

/** Run `body` as an ES module in a fresh Node process; it says whether ajv was loaded by then. */
async function ajvLoadedAfter(body: string): Promise<boolean> {
  const script = `import { createRequire } from 'node:module';\n${body}\nconsole.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache).some((f) => f.endsWith('ajv.cjs'))));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as boolean;
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

  it('creating a Corral and running a bundled tool with a bad input loads no JSON Schema compiler', async () => {
    const loaded = await ajvLoadedAfter(`
      import { Corral } from '@corral/node';
      const corral = await Corral.create({ size: 1, store: false });
      const ok = await corral.invoke('diff-summary', { diff: ${JSON.stringify(DIFF)} });
      const bad = await corral.invoke('diff-summary', { diff: 42 });
      await corral.close();
      if (!ok.ok || bad.error?.code !== 'E_INPUT_VALIDATION') throw new Error(JSON.stringify([ok, bad]));`);
    expect(loaded).toBe(false);
  });

  it("a spec of one's own is checked with ajv, loaded then (the check above can see it)", async () => {
    const loaded = await ajvLoadedAfter(`
      import { validateSpec } from '@corral/core';
      const spec = { name: 'x', version: '1.0.0', component: 'x.wasm', description: 'd', output_schema: { type: 'object' } };
      const bad = validateSpec({ ...spec, input_schema: { type: 'objec' } });
      if (bad.ok || !validateSpec({ ...spec, input_schema: { type: 'object' } }).ok) throw new Error(JSON.stringify(bad));`);
    expect(loaded).toBe(true);
  });
});

describe('comlink, one module per thread', () => {
  // transfer() marks a value in a table of the comlink module it comes from, which only that module's
  // wrap()/expose() read: a thread that loads comlink twice silently copies what it meant to move.
  it("every package's source imports comlink's functions from its ES module file, the one @corral/wasi uses", async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const offenders: string[] = [];
    for (const pkg of readdirSync(join(ROOT, 'packages'))) {
      const src = join(ROOT, 'packages', pkg, 'src');
      let files: string[];
      try {
        files = readdirSync(src, { recursive: true }) as string[];
      } catch {
        continue;
      }
      for (const file of files.filter((f) => /\.m?ts$/.test(f))) {
        const text = readFileSync(join(src, file), 'utf8');
        for (const m of text.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'(comlink[^']*)'/gm))
          if (!m[1] && !/^comlink\/dist\/esm\/(comlink|node-adapter)\.mjs$/.test(m[2]!))
            offenders.push(`packages/${pkg}/src/${file}: ${m[2]}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('a Node host running a tool loads no CommonJS (UMD) comlink beside the ES module one', async () => {
    const script = `import { createRequire } from 'node:module';
      import { Corral } from '@corral/node';
      const corral = await Corral.create({ size: 1, store: false });
      const r = await corral.invoke('diff-summary', { diff: ${JSON.stringify(DIFF)} });
      await corral.close();
      const commonjs = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('comlink'));
      console.log(JSON.stringify({ ok: r.ok, totals: r.output?.totals, commonjs }));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
    // The call went through the pool and back, and no comlink was loaded as CommonJS on the way.
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
      ok: true,
      totals: { files: 1, additions: 1, deletions: 1, hunks: 1 },
      commonjs: [],
    });
  });
});
