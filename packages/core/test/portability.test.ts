/**
 * core, wasi, mcp and workflow must run in browsers, Web Workers and Node: no Node builtins,
 * no DOM or worker globals. Two fences keep them so, and this test checks
 * each one still stands, by feeding it code that breaks the rule:
 *
 * - their tsconfig (`lib: ["ES2023"]` plus types/portable-globals.d.ts):
 *   a host global or a `node:*` import is a compile error;
 * - the lint rules biome.jsonc applies to their sources (noNodejsModules,
 *   noRestrictedGlobals): they catch what a cast or a ts-ignore lets through.
 *
 * `npm test` builds and lints the real sources before this runs, so a
 * breach in them fails there; this fails if a fence itself comes down.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const PORTABLE = ['packages/core', 'packages/wasi', 'packages/mcp', 'packages/workflow'];

/** Host-specific code, one offence a line, and the name each line's error must mention. */
const OFFENCES: Array<[code: string, name: string]> = [
  ['export const a = navigator.hardwareConcurrency;', 'navigator'],
  ["export const b = indexedDB.open('x');", 'indexedDB'],
  ["export const c = self.postMessage('x');", 'self'],
  ['export const d = document.body;', 'document'],
  ['export const e = window.location;', 'window'],
  ["export const f = localStorage.getItem('x');", 'localStorage'],
  ['export const g = process.env;', 'process'],
  ["export const h = Buffer.from('x');", 'Buffer'],
  ["export { readFileSync } from 'node:fs';", 'node:fs'],
  ["export const i = await import('node:worker_threads');", 'node:worker_threads'],
];

/** What every host has, and core and wasi use: this must keep compiling. */
const PORTABLE_CODE = `
export const bytes = new TextEncoder().encode('x');
export const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
export const digest = crypto.subtle.digest('SHA-256', bytes);
export const id: string = crypto.randomUUID();
export const random = crypto.getRandomValues(new Uint8Array(4));
export const now = performance.now() + performance.timeOrigin;
export const timer = setTimeout(() => {}, 1);
clearTimeout(timer);
export const { port1, port2 } = new MessageChannel();
port1.onmessage = (event: MessageEvent<string>) => port2.postMessage(event.data.length);
export const cell = new Int32Array(new SharedArrayBuffer(4));
Atomics.notify(cell, 0);
export const module = WebAssembly.compile(bytes);
export const aborted = (signal: AbortSignal) => signal.aborted;
export const host = globalThis;
`;

/** Type errors in `code` compiled as one more source file of `pkg`, with `pkg`'s own tsconfig. */
function typeErrors(pkg: string, code: string): Array<{ line: number; message: string }> {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, pkg, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!parsed) throw new Error(`cannot read ${pkg}/tsconfig.json`);
  const probe = join(ROOT, pkg, 'src', '__portability_probe__.ts');
  const options = { ...parsed.options, noEmit: true, composite: false, incremental: false, declaration: false, declarationMap: false };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => f === probe || fileExists(f);
  host.readFile = (f) => (f === probe ? code : readFile(f));
  host.getSourceFile = (f, lang, ...rest) => (f === probe ? ts.createSourceFile(f, code, lang) : getSourceFile(f, lang, ...rest));
  // The package's declaration files (its ambient globals) and the probe: its sources need not be re-checked here.
  const roots = [...parsed.fileNames.filter((f) => f.endsWith('.d.ts')), probe];
  const program = ts.createProgram({ rootNames: roots, options, host });
  const source = program.getSourceFile(probe)!;
  return ts
    .getPreEmitDiagnostics(program, source)
    .filter((d) => d.file === source)
    .map((d) => ({
      line: source.getLineAndCharacterOfPosition(d.start ?? 0).line + 1,
      message: ts.flattenDiagnosticMessageText(d.messageText, ' '),
    }));
}

describe.each(PORTABLE)('%s compiles for every host', (pkg) => {
  it('with no DOM, worker or Node global, and no node:* import', () => {
    const errors = typeErrors(pkg, OFFENCES.map(([code]) => code).join('\n'));
    OFFENCES.forEach(([code, name], i) => {
      const onLine = errors.filter((e) => e.line === i + 1);
      expect(onLine.length, `no type error for: ${code}`).toBeGreaterThan(0);
      expect(onLine.map((e) => e.message).join(' | ')).toContain(name);
    });
  });

  it('with the cross-host globals it uses', () => {
    expect(typeErrors(pkg, PORTABLE_CODE)).toEqual([]);
  });
});

describe('the lint rules for core, wasi, mcp and workflow', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'corral-portability-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** Lint findings ("path:line rule") for `code` placed at `path` under the project's biome.jsonc. */
  function lint(path: string, code: string): string[] {
    const dir = mkdtempSync(join(scratch, 'lint-'));
    cpSync(join(ROOT, 'biome.jsonc'), join(dir, 'biome.jsonc'));
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), code);
    const biome = join(ROOT, 'node_modules/.bin/biome');
    let out: string;
    try {
      out = execFileSync(biome, ['lint', '--vcs-enabled=false', '--reporter=json', '--max-diagnostics=none', '.'], {
        cwd: dir,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
    } catch (err) {
      out = (err as { stdout: string }).stdout; // exits 1 on findings
    }
    const report = JSON.parse(out) as { diagnostics: Array<{ category: string; location: { path: string; start?: { line: number } } }> };
    return report.diagnostics.map((d) => `${d.location.path}:${d.location.start?.line} ${d.category}`);
  }

  // What slips past the compiler: a cast, a ts-expect-error, a dynamic import.
  const sneaky = [
    'export const a = (navigator as { hardwareConcurrency: number }).hardwareConcurrency;',
    '// @ts-expect-error',
    'export const b = indexedDB;',
    "export const c = await import('node:fs');",
    'export const d = (self as { postMessage(m: unknown): void }).postMessage;',
  ].join('\n');

  it.each(PORTABLE)('refuse host globals and Node builtins in %s/src', (pkg) => {
    const path = `${pkg}/src/probe.ts`;
    expect(lint(path, sneaky)).toEqual(
      expect.arrayContaining([
        `${path}:1 lint/style/noRestrictedGlobals`,
        `${path}:3 lint/style/noRestrictedGlobals`,
        `${path}:4 lint/correctness/noNodejsModules`,
        `${path}:5 lint/style/noRestrictedGlobals`,
      ]),
    );
  });

  it('leave the host packages alone', () => {
    expect(lint('packages/node/src/probe.ts', sneaky).filter((f) => /noRestrictedGlobals|noNodejsModules/.test(f))).toEqual([]);
  });
});
