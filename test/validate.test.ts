// `corral validate` checks the wasm a spec names, the way the runtime will
// load it (issue 12): it said "valid", exit 0, for a missing component and
// for a text file renamed .wasm, and a component built without cabi_realloc
// passed validate and registration, then read a large input short or trapped
// ("assertion failed at adapter line"). One test per problem, through the
// real CLI, asserting what a user reads and the exit status.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { componentEmbed, componentNew, parse } from '@bytecodealliance/jco';
import { Registry, VALIDATOR_FORMAT, validateSpec, validatorSource } from '@corral/core';
import { Corral, loadToolFolder } from '@corral/node';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'packages/node/bin/corral.js');
const FIXTURES = join(ROOT, 'test/fixtures');
const DIFF_SUMMARY = join(ROOT, 'wasm-tools/diff-summary');

async function corral(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ROOT }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

/** A tool folder in a fresh temporary folder: tool-spec.json with `spec` over a minimal valid one, plus `files`. */
function toolFolder(spec: Record<string, unknown>, files: Record<string, string | Uint8Array> = {}): { dir: string; spec: string } {
  const dir = mkdtempSync(join(tmpdir(), 'corral-validate-'));
  const full = { name: 'probe', version: '1.0.0', component: 'tool.wasm', input_schema: { type: 'object' }, ...spec };
  writeFileSync(join(dir, 'tool-spec.json'), JSON.stringify(full));
  for (const [name, content] of Object.entries(files)) {
    if (typeof content === 'string' && content.startsWith('/')) copyFileSync(content, join(dir, name));
    else writeFileSync(join(dir, name), content);
  }
  return { dir, spec: join(dir, 'tool-spec.json') };
}

type Problem = { path: string; message: string; hint?: string };

/** `corral validate --json SPEC`: the exit status and the problems. */
async function validateJson(spec: string): Promise<{ code: number; problems: Problem[]; ok: boolean }> {
  const r = await corral(['validate', spec, '--json']);
  const parsed = JSON.parse(r.stdout) as { ok: boolean; problems?: Problem[] };
  return { code: r.code, ok: parsed.ok, problems: parsed.problems ?? [] };
}

describe('corral validate checks the wasm too', () => {
  it('a first-party tool is valid: exit 0', async () => {
    const r = await corral(['validate', join(DIFF_SUMMARY, 'tool-spec.json')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/tool-spec\.json: valid \(diff-summary@1\.1\.0\)\n$/);
    expect(await validateJson(join(DIFF_SUMMARY, 'tool-spec.json'))).toEqual({ code: 0, ok: true, problems: [] });
  });

  it('a component file that does not exist: /component, exit 1', async () => {
    const { spec, dir } = toolFolder({ component: 'missing.wasm' });
    const r = await corral(['validate', spec]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`/component: missing.wasm does not exist (looked for ${join(dir, 'missing.wasm')})`);
    expect(r.stdout).toContain('hint: build the tool first, or correct "component": it is relative to the folder of tool-spec.json');
    const json = await validateJson(spec);
    expect(json).toMatchObject({
      code: 1,
      ok: false,
      problems: [{ path: '/component', message: expect.stringContaining('does not exist') }],
    });
  });

  it('a text file renamed .wasm: not a WebAssembly file, exit 1', async () => {
    const { spec } = toolFolder({}, { 'tool.wasm': 'console.log("hello")\n' });
    const r = await corral(['validate', spec]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('/component: tool.wasm is not a WebAssembly file (it starts with 63 6f 6e 73 6f 6c 65 2e "console.")');
    expect(r.stdout).toContain('hint: point "component" at the WebAssembly binary your build produces');
  });

  it('a component cut short: the problem once, exit 1', async () => {
    const whole = readFileSync(join(DIFF_SUMMARY, 'diff-summary.wasm'));
    const { spec } = toolFolder({}, { 'tool.wasm': whole.subarray(0, whole.length >> 1) });
    const json = await validateJson(spec);
    expect(json).toMatchObject({ code: 1, ok: false });
    expect(json.problems).toEqual([
      { path: '/component', message: expect.stringMatching(/^tool\.wasm is not a valid WebAssembly component: section \d+ claims/) },
    ]);
  });

  it('corral tools lists a component cut short with a warning that it will fail, and says so in --json', async () => {
    // Before: listed like any other tool; only its first call (or corral validate) found it broken.
    const whole = readFileSync(join(DIFF_SUMMARY, 'diff-summary.wasm'));
    const { dir, spec } = toolFolder({ name: 'cut-short' }, { 'tool.wasm': whole.subarray(0, whole.length >> 1) });
    const text = await corral(['tools', '--tools', dir]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^cut-short@/m);
    expect(text.stderr).toContain('corral: warning: cut-short@');
    expect(text.stderr).toMatch(/will fail when called: tool\.wasm is not a valid WebAssembly component: section \d+ claims/);
    expect(text.stderr).toContain(`corral validate ${JSON.stringify(spec)} says more`);
    expect(text.stderr).not.toMatch(/warning: diff-summary/);
    const listed = JSON.parse((await corral(['tools', '--json', '--tools', dir])).stdout) as { name: string; problem?: string }[];
    expect(listed.find((t) => t.name === 'cut-short')?.problem).toMatch(/not a valid WebAssembly component/);
    expect(listed.find((t) => t.name === 'diff-summary')).not.toHaveProperty('problem');
  });

  it('kind "module" naming a component: /kind, exit 1', async () => {
    const { spec } = toolFolder({ kind: 'module' }, { 'tool.wasm': join(DIFF_SUMMARY, 'diff-summary.wasm') });
    const r = await corral(['validate', spec]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('/kind: the spec says "kind": "module" but tool.wasm is a component');
    expect(r.stdout).toContain('hint: set "kind": "component", or leave "kind" out and Corral detects it');
  });

  it('kind "component" naming a preview1 module: /kind, exit 1', async () => {
    const { spec } = toolFolder({ kind: 'component' }, { 'tool.wasm': join(DIFF_SUMMARY, 'diff-summary.module.wasm') });
    const { code, problems } = await validateJson(spec);
    expect(code).toBe(1);
    expect(problems).toEqual([
      {
        path: '/kind',
        message: 'the spec says "kind": "component" but tool.wasm is a core module (WASI preview1)',
        hint: 'set "kind": "module", or leave "kind" out and Corral detects it; or turn the module into a component with `jco new MODULE --wasi-command`',
      },
    ]);
  });

  it('a module importing something other than wasi_snapshot_preview1: exit 1, the import named', async () => {
    const { spec } = toolFolder({}, { 'tool.wasm': join(FIXTURES, 'preview1/bad-import/p1-bad-import.wasm') });
    const r = await corral(['validate', spec]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /\/component: tool\.wasm imports env\.host_magic, which Corral's preview1 host does not provide.*\(E_REGISTRATION\)/,
    );
    expect(r.stdout).toContain('hint: a preview1 tool may import only wasi_snapshot_preview1 functions');
  });

  it('a component importing wasi:http: E_NETWORK_BLOCKED, exit 1', async () => {
    const { spec } = toolFolder({}, { 'tool.wasm': join(FIXTURES, 'network/uses-http/uses-http.wasm') });
    const { code, problems } = await validateJson(spec);
    expect(code).toBe(1);
    expect(problems).toEqual([
      {
        path: '/component',
        message: expect.stringMatching(/^tool\.wasm imports wasi:http\/outgoing-handler@0\.2\.0; .*\(E_NETWORK_BLOCKED\)$/),
        hint: expect.stringContaining('Corral tools run without network access'),
      },
    ]);
  });

  it('a preview1-adapted component without cabi_realloc: exit 1, with the fix', async () => {
    const { spec } = toolFolder({}, { 'tool.wasm': join(FIXTURES, 'validate/no-realloc.wasm') });
    const r = await corral(['validate', spec]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      '/component: tool.wasm is a preview1 module adapted into a component, and that module does not export cabi_realloc',
    );
    expect(r.stdout).toContain('hint: export cabi_realloc from the core module before `jco new --wasi-command`');
    // The same module with a cabi_realloc export is valid: the check is about that export alone.
    const fixed = toolFolder({}, { 'tool.wasm': join(FIXTURES, 'validate/with-realloc.wasm') });
    expect(await validateJson(fixed.spec)).toEqual({ code: 0, ok: true, problems: [] });
  });

  it('a module that cannot be instantiated (a data segment past its memory): exit 1', async () => {
    const wasm = await parse(`(module
      (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
      (memory (export "memory") 1)
      (data (i32.const 70000) "x")
      (func (export "_start")))`);
    const { spec } = toolFolder({}, { 'tool.wasm': wasm });
    const { code, problems } = await validateJson(spec);
    expect(code).toBe(1);
    expect(problems).toEqual([
      {
        path: '/component',
        message: expect.stringMatching(/^tool\.wasm trapped: .*out of bounds.*\(E_UNEXPECTED_EXIT\)$/),
        hint: expect.any(String),
      },
    ]);
  });

  it('a component that is not a wasi:cli command (it exports a bare run function): exit 1', async () => {
    const core = await componentEmbed({
      dummy: true,
      witSource: 'package corral:probe;\nworld w { export run: func() -> u32; }',
      world: 'w',
    });
    const { spec } = toolFolder({}, { 'tool.wasm': await componentNew(core, []) });
    const { code, problems } = await validateJson(spec);
    expect(code).toBe(1);
    expect(problems).toEqual([
      {
        path: '/component',
        message: 'tool.wasm does not export wasi:cli/run; Corral tools must be wasi:cli command components. (E_UNEXPECTED_EXIT)',
        hint: 'build it as a command component (`jco new MODULE --wasi-command`), not a library or reactor',
      },
    ]);
  });

  it('spec problems and wasm problems are listed together', async () => {
    const { spec } = toolFolder({ version: 'one', component: 'gone.wasm' });
    const { code, problems } = await validateJson(spec);
    expect(code).toBe(1);
    expect(problems.map((p) => p.path)).toEqual(['/version', '/component']);
    // A "component" that is itself a spec problem is not read: one problem, not two.
    const climbing = toolFolder({ component: '../tool.wasm' });
    expect((await validateJson(climbing.spec)).problems).toEqual([
      { path: '/component', message: "must be a relative path to a .wasm file, with '/' separators and no '..' segments" },
    ]);
  });
});

describe('registration refuses a preview1-adapted component without cabi_realloc', () => {
  it('corral tools --tools DIR skips it with E_REGISTRATION and the fix; corral run --wasm refuses it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'corral-validate-folder-'));
    mkdirSync(join(root, 'naive'));
    copyFileSync(join(FIXTURES, 'validate/no-realloc.wasm'), join(root, 'naive/naive.wasm'));
    const spec = join(root, 'naive/tool-spec.json');
    writeFileSync(spec, JSON.stringify({ name: 'naive', version: '1.0.0', component: 'naive.wasm', input_schema: { type: 'object' } }));

    const tools = await corral(['tools', '--tools', root]);
    expect(tools.stdout).not.toMatch(/^naive@/m);
    expect(tools.stderr).toMatch(
      /naive\.wasm is a preview1 module adapted into a component, and that module does not export cabi_realloc.*\(E_REGISTRATION\)/,
    );
    expect(tools.stderr).toContain('To fix it, export cabi_realloc from the core module');

    const run = await corral(['run', '--wasm', join(root, 'naive/naive.wasm'), '--spec', spec, '--input', '{}', '--no-store']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/does not export cabi_realloc.*\(E_REGISTRATION\)/);
  });

  it("is checked for a copy of a bundled tool's spec beside other bytes: the build vouched only for the bundled wasm", async () => {
    // The build records the SHA-256 of each bundled component it checked, so a host skips reading it again;
    // the same spec beside any other wasm is checked as usual.
    const root = mkdtempSync(join(tmpdir(), 'corral-validate-copy-'));
    mkdirSync(join(root, 'read'));
    const bundled = readFileSync(join(ROOT, 'wasm-tools/read/tool-spec.json'), 'utf8');
    writeFileSync(join(root, 'read/tool-spec.json'), bundled);
    copyFileSync(join(FIXTURES, 'validate/no-realloc.wasm'), join(root, 'read', JSON.parse(bundled).component));
    const tools = await corral(['tools', '--tools', root]);
    expect(tools.stderr).toMatch(/does not export cabi_realloc.*\(E_REGISTRATION\)/);
  });
});

describe('the bundled specs, validated when Corral is built (npm run build: wasm-tools/validate-specs.mjs)', () => {
  const BUNDLED = join(ROOT, 'wasm-tools');
  const specHash = (raw: unknown) => createHash('sha256').update(JSON.stringify(raw)).digest('hex');
  const bundledSpecs = readdirSync(BUNDLED)
    .map((name) => join(BUNDLED, name, 'tool-spec.json'))
    .filter((file) => existsSync(file))
    .map((file) => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>);

  it('validated-specs.json names exactly the bundled specs, each one validateSpec accepts, with the code of its validators', () => {
    const built = JSON.parse(readFileSync(join(BUNDLED, 'validated-specs.json'), 'utf8')) as {
      format: string;
      specs: Record<string, { input: string; output?: string }>;
    };
    expect(built.format).toBe(VALIDATOR_FORMAT);
    expect(bundledSpecs.length).toBeGreaterThanOrEqual(7);
    expect(Object.keys(built.specs).sort()).toEqual(bundledSpecs.map(specHash).sort());
    for (const raw of bundledSpecs) {
      const result = validateSpec(raw);
      if (!result.ok) throw new Error(JSON.stringify(result.problems));
      const code = built.specs[specHash(raw)]!;
      expect(code.input).toBe(validatorSource(result.spec.input_schema));
      expect(code.output).toBe(result.spec.output_schema === undefined ? undefined : validatorSource(result.spec.output_schema));
    }
  });

  it('a bundled tool refuses bad input with the same problems as the same tool compiled at run time', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-renamed-bundled-'));
    const tool = join(dir, 'diff-summary');
    mkdirSync(tool);
    const raw = JSON.parse(readFileSync(join(DIFF_SUMMARY, 'tool-spec.json'), 'utf8'));
    // Another spec text (a description changed), so no prebuilt code applies to it.
    writeFileSync(join(tool, 'tool-spec.json'), JSON.stringify({ ...raw, description: `${raw.description} (copy)` }));
    copyFileSync(join(DIFF_SUMMARY, raw.component), join(tool, raw.component));
    const bundled = await Corral.create({ size: 1, store: false, spareWorker: false });
    const copy = await Corral.create({ bundled: false, toolDirs: [dir], size: 1, store: false, spareWorker: false });
    try {
      for (const input of [{}, { diff: 5, language: 'fr', extra: true }, { diff: 'x'.repeat(16), language: 'zh' }]) {
        const [a, b] = await Promise.all([bundled.invoke('diff-summary', input), copy.invoke('diff-summary', input)]);
        expect(a.error?.details, JSON.stringify(input)).toEqual(b.error?.details);
        expect(a.error?.message).toBe(b.error?.message);
      }
    } finally {
      await Promise.all([bundled.close(), copy.close()]);
    }
  });

  it('a bundled spec changed after the build is validated in full: an out-of-range memory_mb is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-edited-bundled-'));
    const tool = join(dir, 'diff-summary');
    mkdirSync(tool);
    const raw = JSON.parse(readFileSync(join(DIFF_SUMMARY, 'tool-spec.json'), 'utf8'));
    writeFileSync(join(tool, 'tool-spec.json'), JSON.stringify({ ...raw, resources: { ...raw.resources, memory_mb: 999_999 } }));
    copyFileSync(join(DIFF_SUMMARY, raw.component), join(tool, raw.component));
    const { loaded, errors } = await loadToolFolder(new Registry(), dir);
    expect(loaded).toEqual([]);
    expect(errors.map((e) => [e.code, e.message])).toEqual([['E_REGISTRATION', expect.stringMatching(/\/resources\/memory_mb/)]]);

    // The unchanged spec loads, with the defaults filled in as validateSpec does.
    writeFileSync(join(tool, 'tool-spec.json'), JSON.stringify(raw));
    const again = await loadToolFolder(new Registry(), dir);
    expect(again.errors).toEqual([]);
    expect(again.loaded[0]!.spec).toEqual({ ...(validateSpec(raw) as { spec: object }).spec, kind: 'component' });
  });
});
