import { CorralError, ErrorCodes, type CorralErrorJSON } from '@corral/core/errors';
import type { ExecutionResult, MountBinding } from '@corral/core';
import type { PreparedComponent } from './transpile.js';
import { checkComponentImports } from './component-imports.js';
import type { WasiShim } from './shim.js';
import { callFilesystem, type Descriptor, type HostDirectoryOpener, type OpfsDirectoryOpener } from './vfs.js';
import { capModule, WASM_PAGE_BYTES } from './limits.js';
import { CappedSink, classify, finishRun } from './outcome.js';

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
  /** Lets `opfsPath` mounts work; only browser hosts supply it. */
  openOpfsDirectory?: OpfsDirectoryOpener;
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
  readonly #openOpfsDirectory: OpfsDirectoryOpener | undefined;
  readonly #prepared = new Map<string, PreparedComponent>();
  /** Compiled per component and memory cap: the cap is part of the compiled code. */
  readonly #compiled = new Map<string, Promise<LoadedComponent>>();

  constructor(shim: WasiShim, options: RunnerOptions = {}) {
    this.#shim = shim;
    this.#openHostDirectory = options.openHostDirectory;
    this.#openOpfsDirectory = options.openOpfsDirectory;
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
    const callFs = callFilesystem(request.mounts, request.diskLimitBytes, this.#shim, this.#openHostDirectory, this.#openOpfsDirectory);
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
    return finishRun(
      { exitCode, ...(error ? { error } : {}) },
      {
        request,
        started,
        stdout,
        stderr,
        peakMemoryBytes: Math.max(0, ...memories.map((m) => m.buffer.byteLength)),
        maxPages,
        quota: callFs.quota,
      },
    );
  }
}

async function compile(prepared: PreparedComponent, maxPages: number, toolName: string): Promise<LoadedComponent> {
  // Checked here too, not only at transpile time: prepared components also come from caches.
  checkComponentImports(prepared.imports, toolName);
  const modules = new Map<string, WebAssembly.Module>();
  await Promise.all(
    Object.entries(prepared.modules).map(async ([name, bytes]) => {
      modules.set(name, await WebAssembly.compile(capModule(bytes, maxPages, toolName) as BufferSource));
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
