/**
 * What every language's build shares: running a compiler, and turning a
 * wasi_snapshot_preview1 core module into a wasi:cli command component the
 * way wasm-tools/build.sh does (`wasm-opt`, then `jco new --wasi-command`),
 * with jco and binaryen found through module resolution, never PATH.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { packageRequire } from '../package-files.js';

/** What a finished process said. */
export interface ProcessResult {
  status: number | null;
  /** The error that kept it from starting (ENOENT: no such program). */
  error?: NodeJS.ErrnoException;
  stdout: string;
  stderr: string;
}

/** Run a program to the end, capturing its output; never throws. */
export function runProcess(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<ProcessResult> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    const child = spawn(file, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    let error: NodeJS.ErrnoException | undefined;
    child.on('error', (err) => (error = err));
    child.on('close', (status) => resolve({ status, stdout, stderr, ...(error ? { error } : {}) }));
    child.stdin.on('error', () => {}); // a program that exits without reading its input
    child.stdin.end(options.input ?? '');
  });
}

/**
 * jco as @corral/wasi depends on it (that is the jco Corral runs components
 * with), so an installed @corral/node finds it wherever npm put it.
 */
export function jcoEntry(): string {
  const wasi = packageRequire.resolve('@corral/wasi');
  return createRequire(wasi).resolve('@bytecodealliance/jco');
}

/** binaryen's `wasm-opt` (a Node script), the one jco depends on. */
export function wasmOptScript(): string {
  return join(dirname(createRequire(jcoEntry()).resolve('binaryen/package.json')), 'bin', 'wasm-opt');
}

/** The wasm-opt flags build.sh uses: the features wasm32-wasi compilers emit, debug info dropped. */
export const WASM_OPT_FLAGS = [
  '-O2',
  '--mvp-features',
  '--enable-sign-ext',
  '--enable-mutable-globals',
  '--strip-debug',
  '--strip-producers',
];

/** Optimize a core module in place with binaryen's wasm-opt. */
export async function wasmOpt(input: string, output: string, features: readonly string[] = []): Promise<void> {
  const result = await runProcess(process.execPath, [wasmOptScript(), ...WASM_OPT_FLAGS, ...features, input, '-o', output]);
  if (result.status !== 0) throw new Error(`wasm-opt failed:\n${result.stderr || result.stdout}`);
}

/** Exports of a core module, by name. */
export function coreExports(module: Uint8Array): string[] {
  // The node package compiles without the DOM library, where WebAssembly's types live.
  const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
  return wasm.Module.exports(new wasm.Module(module)).map((e) => e.name);
}

interface WasmApi {
  Module: { new (bytes: Uint8Array): object; exports(module: object): { name: string }[] };
}

/**
 * `jco new MODULE --wasi-command`: wrap a preview1 command module in the
 * preview1 -> wasi:cli adapter. The module must export cabi_realloc: without
 * it the adapter allocates from a small static arena and traps on inputs or
 * outputs of about 1 MiB and more.
 */
export async function componentizeCommand(module: Uint8Array): Promise<Uint8Array> {
  if (!coreExports(module).includes('cabi_realloc'))
    throw new Error(
      'the core module does not export cabi_realloc, so the component would trap on inputs of about 1 MiB and more. ' +
        "Keep the kit's helper file (it defines cabi_realloc) in the build.",
    );
  return wrapInCommandAdapter(module);
}

type ComponentNew = (module: Uint8Array, adapters: [string, Uint8Array][]) => Uint8Array;
let commandAdapter: Promise<{ componentNew: ComponentNew; adapter: Uint8Array }> | undefined;

/**
 * The module wrapped in jco's preview1 command adapter, as `jco new
 * --wasi-command` does, with jco's wasm-tools alone: its API entry also
 * loads terser and the CLI's helpers (~0.7 s against ~0.35 s). One path for
 * every caller, so the bytes agree: `corral build` makes components with it,
 * and a sandbox worker makes one again to see that a component only wraps a
 * preview1 module (adapted.ts).
 */
export async function wrapInCommandAdapter(module: Uint8Array): Promise<Uint8Array> {
  commandAdapter ??= (async () => {
    const entry = pathToFileURL(jcoEntry());
    const wasmTools = (await import(new URL('../obj/wasm-tools.js', entry).href)) as {
      $init: Promise<void>;
      tools: { componentNew: ComponentNew };
    };
    await wasmTools.$init;
    const adapter = new Uint8Array(await readFile(new URL('../lib/wasi_snapshot_preview1.command.wasm', entry)));
    return { componentNew: wasmTools.tools.componentNew, adapter };
  })();
  commandAdapter.catch(() => (commandAdapter = undefined));
  const { componentNew, adapter } = await commandAdapter;
  return componentNew(module, [['wasi_snapshot_preview1', adapter]]);
}
