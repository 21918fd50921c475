import { CorralError, ErrorCodes, type CorralErrorJSON, type ExecutionResult, type MountBinding } from '@corral/core';
import { assertNoNetworkImports, type PreparedComponent } from './transpile.js';
import type { WasiShim } from './shim.js';
import { callFilesystem, type Descriptor, type HostDirectoryOpener } from './vfs.js';
import { capMemory, WASM_PAGE_BYTES } from './memory.js';

/** What one component run needs; the host has already checked it against the spec. */
export interface RunRequest {
  toolName: string;
  stdin: Uint8Array;
  args: string[];
  env: Record<string, string>;
  mounts: MountBinding[];
  outputLimitBytes: number;
  /** Cap on each wasm memory the tool defines (resources.memory_mb). */
  memoryLimitBytes: number;
  /** Bytes the call may add to files in writable mounts and /tmp (resources.disk_mb). */
  diskLimitBytes: number;
}

export interface RunnerOptions {
  /** Lets `hostPath` mounts work; hosts without a filesystem leave it out. */
  openHostDirectory?: HostDirectoryOpener;
}

type Instantiate = (
  getCoreModule: (name: string) => WebAssembly.Module,
  imports: Record<string, unknown>,
  instantiateCore: (module: WebAssembly.Module, imports?: WebAssembly.Imports) => Promise<WebAssembly.Instance>,
) => Promise<Record<string, unknown>>;

interface LoadedComponent {
  instantiate: Instantiate;
  modules: Map<string, WebAssembly.Module>;
}

/**
 * Compiles a prepared component once and runs it many times, each run in a
 * fresh instance with its own stdio, environment and filesystem.
 */
export class ComponentRunner {
  readonly #shim: WasiShim;
  readonly #openHostDirectory: HostDirectoryOpener | undefined;
  readonly #prepared = new Map<string, PreparedComponent>();
  /** Compiled per component and memory cap: the cap is part of the compiled code. */
  readonly #compiled = new Map<string, Promise<LoadedComponent>>();

  constructor(shim: WasiShim, options: RunnerOptions = {}) {
    this.#shim = shim;
    this.#openHostDirectory = options.openHostDirectory;
  }

  /** True when this runner holds the prepared component with this key. */
  has(key: string): boolean {
    return this.#prepared.has(key);
  }

  #load(key: string, maxPages: number, toolName: string): Promise<LoadedComponent> {
    const compiledKey = `${key}/${maxPages}`;
    let loaded = this.#compiled.get(compiledKey);
    if (!loaded) {
      loaded = compile(this.#prepared.get(key)!, maxPages, toolName);
      loaded.catch(() => this.#compiled.delete(compiledKey));
      this.#compiled.set(compiledKey, loaded);
    }
    return loaded;
  }

  async run(key: string, prepared: PreparedComponent | undefined, request: RunRequest): Promise<ExecutionResult> {
    const started = performance.now();
    if (prepared) this.#prepared.set(key, prepared);
    else if (!this.#prepared.has(key)) throw new Error(`component ${key} is not loaded`);
    const maxPages = Math.max(1, Math.floor(request.memoryLimitBytes / WASM_PAGE_BYTES));
    const component = await this.#load(key, maxPages, request.toolName);

    const stdout = new CappedSink(request.outputLimitBytes, 'head');
    const stderr = new CappedSink(request.outputLimitBytes, 'tail');
    const { cli, filesystem, io, clocks, random } = this.#shim;
    let stdinOffset = 0;
    const stdinBytes = request.stdin;
    const wasiCli = cli.createCli({
      stdin: {
        blockingRead(len: bigint) {
          if (stdinOffset >= stdinBytes.length) throw { tag: 'closed' };
          const chunk = stdinBytes.subarray(stdinOffset, stdinOffset + Number(len));
          stdinOffset += chunk.length;
          return chunk;
        },
      },
      stdout: { write: (bytes: Uint8Array) => stdout.write(bytes), blockingFlush() {} },
      stderr: { write: (bytes: Uint8Array) => stderr.write(bytes), blockingFlush() {} },
      environment: request.env,
      arguments: request.args,
      initialCwd: '/',
    });
    const callFs = callFilesystem(request.mounts, request.diskLimitBytes, this.#shim, this.#openHostDirectory);
    // The descriptors are built already (and guarded); the adapter hands them over as they are.
    const wasiFs = filesystem.createFilesystem<Descriptor>({
      adapter: { getRoot: (root) => root },
      preopens: Object.fromEntries(callFs.preopens.map(([root, guest]) => [guest, root])),
    });

    const imports: Record<string, unknown> = {
      'wasi:cli/environment': wasiCli.environment,
      'wasi:cli/exit': wasiCli.exit,
      'wasi:cli/stdin': wasiCli.stdin,
      'wasi:cli/stdout': wasiCli.stdout,
      'wasi:cli/stderr': wasiCli.stderr,
      'wasi:cli/terminal-input': wasiCli.terminalInput,
      'wasi:cli/terminal-output': wasiCli.terminalOutput,
      'wasi:cli/terminal-stdin': wasiCli.terminalStdin,
      'wasi:cli/terminal-stdout': wasiCli.terminalStdout,
      'wasi:cli/terminal-stderr': wasiCli.terminalStderr,
      'wasi:clocks/monotonic-clock': clocks.monotonicClock,
      'wasi:clocks/wall-clock': clocks.wallClock,
      'wasi:filesystem/types': wasiFs.types,
      'wasi:filesystem/preopens': wasiFs.preopens,
      'wasi:io/error': io.error,
      'wasi:io/poll': io.poll,
      'wasi:io/streams': io.streams,
      'wasi:random/random': random.random,
      'wasi:random/insecure': random.insecure,
      'wasi:random/insecure-seed': random.insecureSeed,
    };

    // Keep every memory the component's core instances export, to report the
    // peak and to recognise a tool that failed because it hit its memory cap.
    const memories: WebAssembly.Memory[] = [];
    const instantiateCore = async (module: WebAssembly.Module, coreImports?: WebAssembly.Imports) => {
      const instance = await WebAssembly.instantiate(module, coreImports);
      for (const value of Object.values(instance.exports)) if (value instanceof WebAssembly.Memory) memories.push(value);
      return instance;
    };

    let exitCode = 0;
    let error: CorralErrorJSON | undefined;
    try {
      const exports = await component.instantiate(
        (name) => {
          const module = component.modules.get(name);
          if (!module) throw new Error(`glue asked for unknown core module ${name}`);
          return module;
        },
        imports,
        instantiateCore,
      );
      findRun(exports, request.toolName).run();
    } catch (err) {
      const outcome = classify(err, request.toolName, stderr);
      exitCode = outcome.exitCode;
      error = outcome.error;
    } finally {
      wasiFs.dispose();
    }
    if (callFs.quota.exceeded) {
      const limitMb = Math.round(request.diskLimitBytes / 2 ** 20);
      error = new CorralError(
        ErrorCodes.RESOURCE_EXHAUSTED,
        `${request.toolName} tried to write more than its ${limitMb} MB disk quota (resources.disk_mb).`,
        { resource: 'disk', limit_bytes: request.diskLimitBytes, used_bytes: callFs.quota.usedBytes, cause: error?.message ?? `exit code ${exitCode}` },
      ).toJSON();
      if (exitCode === 0) exitCode = 1;
    }
    const peakMemoryBytes = Math.max(0, ...memories.map((m) => m.buffer.byteLength));
    // A tool that fails with its memory near the cap most likely ran out of
    // memory, whatever it did next (a NULL from malloc surfaces as a trap or
    // an exit code). "Near" allows for the block the allocator could not get.
    const capBytes = maxPages * WASM_PAGE_BYTES;
    const nearCap = peakMemoryBytes >= capBytes - Math.max(2 * 2 ** 20, capBytes / 8);
    if ((exitCode !== 0 || error) && nearCap && error?.code !== ErrorCodes.RESOURCE_EXHAUSTED) {
      error = new CorralError(
        ErrorCodes.RESOURCE_EXHAUSTED,
        `${request.toolName} ran out of memory: it reached its ${Math.round(request.memoryLimitBytes / 2 ** 20)} MB limit (resources.memory_mb).`,
        { resource: 'memory', limit_bytes: capBytes, peak_bytes: peakMemoryBytes, cause: error?.message ?? `exit code ${exitCode}` },
      ).toJSON();
      if (exitCode === 0) exitCode = 1;
    }
    return {
      peakMemoryBytes,
      exitCode,
      stdout: stdout.bytes(),
      stderr: stderr.bytes(),
      ...(error ? { error } : {}),
      durationMs: performance.now() - started,
      stdoutTruncated: stdout.truncated,
      stderrTruncated: stderr.truncated,
    };
  }
}

async function compile(prepared: PreparedComponent, maxPages: number, toolName: string): Promise<LoadedComponent> {
  // Checked here too, not only at transpile time: prepared components also come from caches.
  assertNoNetworkImports(prepared.imports, toolName);
  const modules = new Map<string, WebAssembly.Module>();
  await Promise.all(
    Object.entries(prepared.modules).map(async ([name, bytes]) => {
      modules.set(name, await WebAssembly.compile(capMemory(bytes, maxPages, toolName) as BufferSource));
    }),
  );
  // The glue has no imports of its own, so it loads from a data: URL in any host.
  const url = 'data:text/javascript;charset=utf-8,' + encodeURIComponent(prepared.glue);
  const glue = (await import(/* @vite-ignore */ url)) as { instantiate: Instantiate };
  return { instantiate: glue.instantiate, modules };
}

/** The wasi:cli/run export, whatever version suffix the component used. */
function findRun(exports: Record<string, unknown>, toolName: string): { run(): void } {
  for (const [name, value] of Object.entries(exports)) {
    if (name === 'run' || name.startsWith('wasi:cli/run')) return value as { run(): void };
  }
  throw new CorralError(
    ErrorCodes.UNEXPECTED_EXIT,
    `${toolName} does not export wasi:cli/run; Corral tools must be wasi:cli command components.`,
    { exports: Object.keys(exports) },
  );
}

/** Thrown from a stdio sink to unwind the guest when stdout passes its cap. */
class OutputLimitExceeded extends Error {}

function classify(err: unknown, toolName: string, stderr: CappedSink): { exitCode: number; error?: CorralErrorJSON } {
  if (isComponentExit(err)) return { exitCode: err.code };
  if (err instanceof CorralError) return { exitCode: 1, error: err.toJSON() };
  const limit = err instanceof OutputLimitExceeded ? err : (err as { cause?: unknown } | null)?.cause;
  if (limit instanceof OutputLimitExceeded) {
    return {
      exitCode: 1,
      error: new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, `${toolName} wrote more output than the ${limit.message} limit.`, {
        resource: 'output',
      }).toJSON(),
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  const trap = err instanceof WebAssembly.RuntimeError || err instanceof RangeError;
  return {
    exitCode: 1,
    error: new CorralError(
      ErrorCodes.UNEXPECTED_EXIT,
      trap ? `${toolName} trapped: ${message}` : `${toolName} failed: ${message}`,
      { trap, reason: message, stderr_tail: new TextDecoder().decode(stderr.bytes().slice(-1024)) },
    ).toJSON(),
  };
}

function isComponentExit(err: unknown): err is { exitError: true; code: number } {
  return typeof err === 'object' && err !== null && (err as { exitError?: unknown }).exitError === true;
}

/**
 * Collects a stdio stream up to a byte cap. stdout keeps its head and stops
 * the tool when the cap is passed (a cut JSON document is useless); stderr
 * keeps its tail, the part that explains a failure.
 */
class CappedSink {
  readonly #limit: number;
  readonly #keep: 'head' | 'tail';
  #chunks: Uint8Array[] = [];
  #size = 0;
  truncated = false;

  constructor(limit: number, keep: 'head' | 'tail') {
    this.#limit = limit;
    this.#keep = keep;
  }

  write(bytes: Uint8Array): void {
    this.#chunks.push(bytes.slice());
    this.#size += bytes.length;
    if (this.#size <= this.#limit) return;
    this.truncated = true;
    if (this.#keep === 'head') {
      this.#chunks = [this.bytes().subarray(0, this.#limit)];
      this.#size = this.#limit;
      throw new OutputLimitExceeded(`${this.#limit}-byte`);
    }
    this.#chunks = [this.bytes().subarray(this.#size - this.#limit)];
    this.#size = this.#limit;
  }

  bytes(): Uint8Array {
    if (this.#chunks.length === 1) return this.#chunks[0]!;
    const out = new Uint8Array(this.#size);
    let offset = 0;
    for (const chunk of this.#chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    this.#chunks = [out];
    return out;
  }
}
