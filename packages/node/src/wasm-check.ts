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
 *
 * Transpiling and instantiating run a hostile file's code (a wasm start
 * function runs at instantiation), so they happen in a sandbox worker
 * (wasm-check-worker.ts) driven by the runtime's own executor, under the
 * call's time limit (see probeTimeoutMs); never in the CLI's thread.
 */
import { isatty } from 'node:tty';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import {
  adapterReallocProblem,
  CorralError,
  detectWasmKind,
  ErrorCodes,
  hasStartFunction,
  specDefaults,
  type ExecutionResult,
  type WasmKind,
} from '@corral/core';
import { checkComponentImports } from '@corral/wasi';
import { PoolExecutor, SandboxPool } from '@corral/wasi/host-kit';
import type { ResourceLimits } from 'node:worker_threads';
import { ComponentCache } from './cache.js';
import { hostMountChecks } from './mounts.js';
import { SandboxWorker } from './pool.js';
import { forTerminal } from './terminal.js';
import { packageUrl } from './package-files.js';

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
  /** V8 heap limits of the worker the tool is instantiated in (default: the sandbox workers', DEFAULT_RESOURCE_LIMITS). */
  resourceLimits?: ResourceLimits;
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

  const limits: ProbeLimits = { memoryMb: memoryLimit(spec), timeoutMs: probeTimeoutMs(spec) };
  return kind === 'component'
    ? componentProblems(bytes, component, limits, at, options)
    : moduleProblems(bytes, component, limits, at, options);
}

type At = (message: string, hint?: string, path?: string) => WasmCheckProblem;

interface ProbeLimits {
  memoryMb: number;
  timeoutMs: number;
}

async function componentProblems(
  bytes: Uint8Array,
  name: string,
  limits: ProbeLimits,
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
    // Both checks read the component's sections: a malformed one fails both with the same words.
    const problem = problemOf(err, at);
    if (!problems.some((p) => p.path === problem.path && p.message === problem.message)) problems.push(problem);
    return problems;
  }
  // jco refuses what checkComponentImports refused, with the same words: check the rest only when they passed.
  if (!importsOk) return problems;
  try {
    await probe(bytes, name, limits, options);
  } catch (err) {
    problems.push(problemOf(err, at));
  }
  return problems;
}

async function moduleProblems(
  bytes: Uint8Array,
  name: string,
  limits: ProbeLimits,
  at: At,
  options: WasmCheckOptions,
): Promise<WasmCheckProblem[]> {
  try {
    await probe(bytes, name, limits, options);
    return [];
  } catch (err) {
    return [problemOf(err, at)];
  }
}

const PROBE_WORKER = packageUrl('dist/wasm-check-worker.js');

/**
 * Transpile (components only; from the cache `corral run` uses, or jco now,
 * cached for the first run) and instantiate the tool in a sandbox worker of
 * its own, as `corral exec` runs a program: PoolExecutor, SandboxPool and
 * SandboxWorker are the runtime's, so the limits, the timeout and a crashed
 * worker (E_RESOURCE_EXHAUSTED when it ran out of heap) are handled as in a
 * call. The worker only instantiates (wasm-check-worker.ts).
 */
async function probe(bytes: Uint8Array, name: string, { memoryMb, timeoutMs }: ProbeLimits, options: WasmCheckOptions): Promise<void> {
  const pool = new SandboxPool(
    () => new SandboxWorker(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}, PROBE_WORKER),
    { size: 1 },
  );
  const cache = options.cache === false ? undefined : (options.cache ?? new ComponentCache());
  const executor = new PoolExecutor(pool, { cache, mountSources: hostMountChecks });
  try {
    // The limit is instantiation's, as in a call on a running worker: the worker's own boot
    // (100-300 ms on a busy machine) is not counted, or a small timeout_ms blames a start function.
    pool.prestart(1);
    const worker = pool.workers[0]!;
    await Promise.race([worker.api.ping(), worker.crashed]);
    const result = await executor.exec(
      {
        name,
        args: [],
        env: { TZ: 'UTC' },
        mounts: [],
        memoryLimitBytes: memoryMb * 2 ** 20,
        diskLimitBytes: 0,
        outputLimitBytes: 1 << 20,
        timeoutMs,
        onPrepare: () => (options.onTranspile ?? defaultOnTranspile)(name),
      },
      bytes,
    );
    instantiated(result);
  } catch (err) {
    // The call's time limit ran out (a transpile's is 120 s, longer than any probeTimeoutMs).
    const details = CorralError.is(err) ? (err.details as { resource?: unknown; timeout_ms?: unknown }) : {};
    if (details.resource === 'time' && details.timeout_ms === timeoutMs) {
      // Blame a start function only when there is one: without, the machine was slower than a tiny timeout_ms.
      const why = startsCode(bytes)
        ? 'does a start function loop?'
        : 'none of its own code ran (it has no start function), so this machine needs longer to instantiate it: raise resources.timeout_ms';
      throw new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, `instantiation did not finish within ${timeoutMs} ms: ${why}`, {
        resource: 'time',
        timeout_ms: timeoutMs,
      });
    }
    throw err;
  } finally {
    await pool.close();
  }
}

/** Whether instantiating runs the binary's own code (a start section); true when that cannot be read, as before. */
function startsCode(bytes: Uint8Array): boolean {
  try {
    return hasStartFunction(bytes, detectWasmKind(bytes));
  } catch {
    return true;
  }
}

/** A runner reports what went wrong in a run (here: instantiating) in its result; compile errors it throws. */
function instantiated(result: ExecutionResult): void {
  if (result.error) throw CorralError.fromJSON(result.error);
}

function defaultOnTranspile(name: string): void {
  // `name` is the spec's "component", which may hold any character but '\\' and NUL.
  if (isatty(2))
    process.stderr.write(`corral: preparing ${forTerminal(name, { oneLine: true })} to check it (first time only; cached after)…\n`);
}

function memoryLimit(spec: Record<string, unknown>): number {
  const mb = (spec.resources as { memory_mb?: unknown } | undefined)?.memory_mb;
  return typeof mb === 'number' && Number.isInteger(mb) && mb >= 1 && mb <= 4096 ? mb : specDefaults.resources.memory_mb;
}

/**
 * How long instantiating may take: the spec's timeout_ms, which bounds every
 * call and so every instantiation the runtime makes (one slower than that
 * fails every call), but at most Corral's default (30 s), so that a spec
 * asking for an hour cannot hold a CI job validating untrusted tools that
 * long. Real tools instantiate in milliseconds (a 12 MB componentize-js one
 * in about 1.5 s), so the cap only ever stops a start function that loops.
 */
function probeTimeoutMs(spec: Record<string, unknown>): number {
  const ms = (spec.resources as { timeout_ms?: unknown } | undefined)?.timeout_ms;
  const asked = typeof ms === 'number' && Number.isInteger(ms) && ms >= 1 ? ms : specDefaults.resources.timeout_ms;
  return Math.min(asked, specDefaults.resources.timeout_ms);
}

/** A refusal from the runtime as a problem: its sentence, and a hint chosen by what it refused. */
function problemOf(err: unknown, at: At): WasmCheckProblem {
  if (!CorralError.is(err)) return at(`checking the wasm failed: ${err instanceof Error ? err.message : String(err)}`);
  const details = err.details as { imports?: unknown; exports?: unknown; resource?: unknown; worker_heap_limit_mb?: unknown };
  let hint: string | undefined;
  if (err.code === 'E_NETWORK_BLOCKED') hint = NETWORK_HINT;
  else if (err.code === 'E_REGISTRATION' && Array.isArray(details.imports)) {
    hint = /preview1/.test(err.message) ? MODULE_IMPORTS_HINT : COMPONENT_IMPORTS_HINT;
  } else if (err.code === 'E_REGISTRATION' && Array.isArray(details.exports)) {
    hint = 'build it as a WASI command: a main() linked with the default start-up files or your own _start, not -mexec-model=reactor';
  } else if (
    err.code === 'E_RESOURCE_EXHAUSTED' &&
    details.resource === 'time' &&
    /^instantiation.*start function loop/.test(err.message)
  ) {
    hint =
      'a wasm start section runs while the tool is instantiated, before every call: make it return (move the work into _start or main); validate allows resources.timeout_ms, at most 30000 ms';
  } else if (err.code === 'E_RESOURCE_EXHAUSTED' && details.resource === 'memory' && details.worker_heap_limit_mb !== undefined) {
    hint =
      "transpiling or instantiating it filled its sandbox worker's JS heap (not wasm memory, which memory_mb caps): real tools need a few MB there";
  } else if (err.code === 'E_RESOURCE_EXHAUSTED' && details.resource === 'memory') {
    hint = 'raise resources.memory_mb in the spec, or make the module start with less memory';
  } else if (err.code === 'E_UNEXPECTED_EXIT' && (details as { reason?: unknown }).reason === 'exit') {
    hint =
      'a wasm start section runs while the tool is instantiated, before every call: do not exit there (move the work into _start or main)';
  } else if (err.code === 'E_UNEXPECTED_EXIT' && /wasi:cli\/run/.test(err.message)) {
    hint = 'build it as a command component (`jco new MODULE --wasi-command`), not a library or reactor';
  } else if (err.code === 'E_UNEXPECTED_EXIT') {
    hint = "instantiating it failed before any of the tool's own code ran: rebuild it with a current toolchain";
  }
  return at(`${err.message} (${err.code})`, hint);
}
