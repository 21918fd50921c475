/**
 * `corral validate`'s look at a tool's wasm: everything the runtime would
 * refuse, found before the tool is ever called, each problem with a hint.
 *
 * The checks are the runtime's own, in the order it meets them: the file
 * (tool-folder.ts reads it the same way), its header and kind (core's
 * detectWasmKind and the registry's kind rule), the imports it declares
 * (checkComponentImports for components; checkPreview1Module, reached
 * through the runner's compile, for modules), a preview1-adapted
 * component's cabi_realloc (core's adapterReallocProblem, which
 * registration refuses too), and then the component transpiled (jco, with
 * the same on-disk cache as `corral run`) and compiled with its memory
 * capped and instantiated by the very runners that run tools — only the
 * tool's entry point (`wasi:cli/run`, `_start`) is never called.
 */
import { isatty } from 'node:tty';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import {
  adapterReallocProblem,
  CorralError,
  detectWasmKind,
  sha256Hex,
  specDefaults,
  type ExecutionResult,
  type WasmKind,
} from '@corral/core';
import {
  ComponentRunner,
  Preview1Runner,
  checkComponentImports,
  transpileComponent,
  type PreparedComponent,
  type RunRequest,
} from '@corral/wasi';
import { Preview1Host } from '@corral/wasi/internal';
import { ComponentCache } from './cache.js';
import { forTerminal } from './terminal.js';

/** One problem, by JSON pointer into the spec (`/component`, `/kind`), with how to fix it. */
export interface WasmCheckProblem {
  path: string;
  message: string;
  hint?: string;
}

export interface WasmCheckOptions {
  /** Where transpiled components are cached (default: the cache `corral run` uses). */
  cache?: ComponentCache | false;
  /** Called before a component is transpiled because the cache does not have it (seconds, the first time). */
  onTranspile?: (file: string) => void;
}

const NETWORK_HINT =
  'Corral tools run without network access: remove what uses wasi:http or wasi:sockets (a world that only declares them still imports them)';
const COMPONENT_IMPORTS_HINT =
  'build the tool as a wasi:cli command of WASI 0.2 (`jco new MODULE --wasi-command`) that imports nothing else';
const MODULE_IMPORTS_HINT = 'a preview1 tool may import only wasi_snapshot_preview1 functions; remove the others or build a component';

/**
 * Every problem with the wasm a spec names. `raw` is the parsed spec, valid
 * or not: `component`, `kind` and `resources.memory_mb` are used when they
 * are well formed, and nothing is checked when `component` is not.
 */
export async function checkToolWasm(raw: unknown, specPath: string, options: WasmCheckOptions = {}): Promise<WasmCheckProblem[]> {
  const spec = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const component = spec.component;
  // A bad `component` is already a spec problem; there is no file to look at.
  if (typeof component !== 'string' || !component.endsWith('.wasm')) return [];
  const file = resolve(dirname(specPath), component);
  const at = (message: string, hint?: string, path = '/component'): WasmCheckProblem => ({ path, message, ...(hint ? { hint } : {}) });

  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await readFile(file));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      return [
        at(
          `${component} does not exist (looked for ${file})`,
          `build the tool first, or correct "component": it is relative to the folder of ${basename(specPath)}`,
        ),
      ];
    }
    if (code === 'EISDIR') return [at(`${component} is a folder, not a .wasm file (${file})`, 'point "component" at the built .wasm file')];
    return [at(`${component} cannot be read (${(err as Error).message})`, 'make the file readable by the user running corral')];
  }

  let kind: WasmKind;
  try {
    kind = detectWasmKind(bytes, component);
  } catch (err) {
    return [
      at(
        (err as Error).message,
        'point "component" at the WebAssembly binary your build produces (naming a file .wasm does not make it WebAssembly)',
      ),
    ];
  }
  const declared = spec.kind;
  if ((declared === 'component' || declared === 'module') && declared !== kind) {
    const what = (k: WasmKind) => (k === 'module' ? 'a core module (WASI preview1)' : 'a component');
    return [
      at(
        `the spec says "kind": "${declared}" but ${component} is ${what(kind)}`,
        `set "kind": "${kind}", or leave "kind" out and Corral detects it` +
          (declared === 'component' ? '; or turn the module into a component with `jco new MODULE --wasi-command`' : ''),
        '/kind',
      ),
    ];
  }

  const memoryMb = memoryLimit(spec);
  return kind === 'component' ? componentProblems(bytes, component, memoryMb, at, options) : moduleProblems(bytes, component, memoryMb, at);
}

type At = (message: string, hint?: string, path?: string) => WasmCheckProblem;

async function componentProblems(
  bytes: Uint8Array,
  name: string,
  memoryMb: number,
  at: At,
  options: WasmCheckOptions,
): Promise<WasmCheckProblem[]> {
  const problems: WasmCheckProblem[] = [];
  let importsOk = true;
  try {
    checkComponentImports(bytes, name);
  } catch (err) {
    importsOk = false;
    problems.push(problemOf(err, at));
  }
  try {
    const realloc = adapterReallocProblem(bytes, name);
    if (realloc) problems.push(at(realloc.message, realloc.hint));
  } catch (err) {
    problems.push(problemOf(err, at));
    return problems;
  }
  // jco refuses what checkComponentImports refused, with the same words: check the rest only when they passed.
  if (!importsOk) return problems;
  try {
    const prepared = await prepare(bytes, name, options);
    instantiated(await new ComponentProbe().run('validate', prepared, probeRequest(name, memoryMb)));
  } catch (err) {
    problems.push(problemOf(err, at));
  }
  return problems;
}

async function moduleProblems(bytes: Uint8Array, name: string, memoryMb: number, at: At): Promise<WasmCheckProblem[]> {
  try {
    instantiated(await new Preview1Probe().run('validate', bytes, probeRequest(name, memoryMb)));
    return [];
  } catch (err) {
    return [problemOf(err, at)];
  }
}

/** A runner reports what went wrong in a run (here: instantiating) in its result; compile errors it throws. */
function instantiated(result: ExecutionResult): void {
  if (result.error) throw CorralError.fromJSON(result.error);
}

/** The transpiled component from the cache `corral run` uses, or jco now (and cached for the first run). */
async function prepare(bytes: Uint8Array, name: string, options: WasmCheckOptions): Promise<PreparedComponent> {
  const cache = options.cache === false ? undefined : (options.cache ?? new ComponentCache());
  const key = await sha256Hex(bytes);
  const cached = await cache?.get(key);
  if (cached) return cached;
  (options.onTranspile ?? defaultOnTranspile)(name);
  const prepared = await transpileComponent(bytes, name);
  await cache?.set(key, prepared);
  return prepared;
}

function defaultOnTranspile(name: string): void {
  // `name` is the spec's "component", which may hold any character but '\\' and NUL.
  if (isatty(2))
    process.stderr.write(`corral: preparing ${forTerminal(name, { oneLine: true })} to check it (first time only; cached after)…\n`);
}

/** A RunRequest for instantiating the tool: no input, no mounts, the spec's memory cap. */
function probeRequest(toolName: string, memoryMb: number): RunRequest {
  return {
    toolName,
    stdin: new Uint8Array(0),
    args: [toolName],
    env: { TZ: 'UTC' },
    mounts: [],
    outputLimitBytes: 1 << 20,
    memoryLimitBytes: memoryMb * 2 ** 20,
    diskLimitBytes: 0,
  };
}

function memoryLimit(spec: Record<string, unknown>): number {
  const mb = (spec.resources as { memory_mb?: unknown } | undefined)?.memory_mb;
  return typeof mb === 'number' && Number.isInteger(mb) && mb >= 1 && mb <= 4096 ? mb : specDefaults.resources.memory_mb;
}

/** A refusal from the runtime as a problem: its sentence, and a hint chosen by what it refused. */
function problemOf(err: unknown, at: At): WasmCheckProblem {
  if (!CorralError.is(err)) return at(`checking the wasm failed: ${err instanceof Error ? err.message : String(err)}`);
  const details = err.details as { imports?: unknown; exports?: unknown; resource?: unknown };
  let hint: string | undefined;
  if (err.code === 'E_NETWORK_BLOCKED') hint = NETWORK_HINT;
  else if (err.code === 'E_REGISTRATION' && Array.isArray(details.imports)) {
    hint = /preview1/.test(err.message) ? MODULE_IMPORTS_HINT : COMPONENT_IMPORTS_HINT;
  } else if (err.code === 'E_REGISTRATION' && Array.isArray(details.exports)) {
    hint = 'build it as a WASI command: a main() linked with the default start-up files or your own _start, not -mexec-model=reactor';
  } else if (err.code === 'E_RESOURCE_EXHAUSTED' && details.resource === 'memory') {
    hint = 'raise resources.memory_mb in the spec, or make the module start with less memory';
  } else if (err.code === 'E_UNEXPECTED_EXIT' && /wasi:cli\/run/.test(err.message)) {
    hint = 'build it as a command component (`jco new MODULE --wasi-command`), not a library or reactor';
  } else if (err.code === 'E_UNEXPECTED_EXIT') {
    hint = "instantiating it failed before any of the tool's own code ran: rebuild it with a current toolchain";
  }
  return at(`${err.message} (${err.code})`, hint);
}

/**
 * The exports of a component as ComponentRunner's instantiation returns
 * them, with each `wasi:cli/run` interface replaced by one whose run does
 * nothing: the runner instantiates the component and looks for its run
 * export as it always does, and the tool's code never runs. An export by
 * that name that is not such an interface (a bare `run` function) is left
 * out, so the runner says the component is not a wasi:cli command, where a
 * real call would fail calling it.
 */
function withoutRunning(exports: Record<string, unknown>): Record<string, unknown> {
  const isRun = (name: string) => name === 'run' || name.startsWith('wasi:cli/run');
  const runnable = (value: unknown) =>
    typeof value === 'object' && value !== null && typeof (value as { run?: unknown }).run === 'function';
  return Object.fromEntries(
    Object.entries(exports).flatMap(([name, value]) => (!isRun(name) ? [[name, value]] : runnable(value) ? [[name, { run() {} }]] : [])),
  );
}

type Instantiate = (...args: never[]) => Promise<Record<string, unknown>>;

/** ComponentRunner, instantiating without running (see withoutRunning). */
class ComponentProbe extends ComponentRunner {
  protected override start(...[compiled, call, request]: Parameters<ComponentRunner['start']>): ReturnType<ComponentRunner['start']> {
    const loaded = compiled as unknown as { instantiate: Instantiate };
    const instantiate: Instantiate = async (...args) => withoutRunning(await loaded.instantiate(...args));
    return super.start({ ...compiled, instantiate } as typeof compiled, call, request);
  }
}

/** The JS API's instantiate (this package compiles without the WebAssembly namespace's types). */
const wasmApi = (
  globalThis as unknown as {
    WebAssembly: { instantiate(module: unknown, imports: unknown): Promise<{ exports: Record<string, unknown> }> };
  }
).WebAssembly;

/** Preview1Runner, instantiating against the real preview1 host without calling `_start`. */
class Preview1Probe extends Preview1Runner {
  protected override start(...[compiled, call]: Parameters<Preview1Runner['start']>): ReturnType<Preview1Runner['start']> {
    const host = new Preview1Host(call.guest);
    return {
      async run() {
        // The instantiation Preview1Runner makes, minus the call to _start that follows it there.
        const instance = await wasmApi.instantiate(compiled, { wasi_snapshot_preview1: host.imports });
        host.bind(instance.exports.memory as Parameters<Preview1Host['bind']>[0]);
      },
      peakMemoryBytes: () => 0,
    };
  }
}
