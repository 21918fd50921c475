import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { ExecutionResult } from '@corral/core';
import type { RunRequest, RunnerOptions } from '../run.js';
import { WASM_PAGE_BYTES } from '../limits.js';
import type { HostDirectoryOpener, OpfsDirectoryOpener } from '../vfs.js';
import { classify, finishRun, type RunEnd } from '../outcome.js';
import { openCall } from '../call.js';
import { Preview1Host } from './host.js';
import { compilePreview1, instantiate } from './loader.js';

/**
 * Runs preview1 command modules the way ComponentRunner runs components:
 * compiled once per module and memory cap, a fresh instance per call, stdio
 * captured with caps, the call's filesystem from vfs.ts, and the same
 * classification of exits, traps and limits.
 */
export class Preview1Runner {
  readonly #openHostDirectory: HostDirectoryOpener | undefined;
  readonly #openOpfsDirectory: OpfsDirectoryOpener | undefined;
  readonly #modules = new Map<string, Uint8Array>();
  /** Compiled per module and memory cap: the cap is part of the compiled code. */
  readonly #compiled = new Map<string, Promise<WebAssembly.Module>>();

  constructor(options: RunnerOptions = {}) {
    this.#openHostDirectory = options.openHostDirectory;
    this.#openOpfsDirectory = options.openOpfsDirectory;
  }

  /** True when this runner holds the module with this key. */
  has(key: string): boolean {
    return this.#modules.has(key);
  }

  #load(key: string, maxPages: number, toolName: string): Promise<WebAssembly.Module> {
    const compiledKey = `${key}/${maxPages}`;
    let compiled = this.#compiled.get(compiledKey);
    if (!compiled) {
      compiled = compilePreview1(this.#modules.get(key)!, maxPages, toolName);
      compiled.catch(() => this.#compiled.delete(compiledKey));
      this.#compiled.set(compiledKey, compiled);
    }
    return compiled;
  }

  /** Run the module with this key; pass its bytes the first time (or always). */
  async run(key: string, module: Uint8Array | undefined, request: RunRequest): Promise<ExecutionResult> {
    const started = performance.now();
    if (module) this.#modules.set(key, module);
    else if (!this.#modules.has(key)) throw new Error(`module ${key} is not loaded`);
    const maxPages = Math.max(1, Math.floor(request.memoryLimitBytes / WASM_PAGE_BYTES));
    const compiled = await this.#load(key, maxPages, request.toolName);

    const call = openCall(request, { openHostDirectory: this.#openHostDirectory, openOpfsDirectory: this.#openOpfsDirectory });
    const { stdout, stderr } = call.captured;
    const host = new Preview1Host(call.guest);

    let end: RunEnd = { exitCode: 0, exited: true };
    let memory: WebAssembly.Memory | undefined;
    try {
      const instance = await instantiate(compiled, { wasi_snapshot_preview1: host.imports });
      memory = instance.exports.memory as WebAssembly.Memory;
      host.bind(memory);
      (instance.exports._start as () => void)();
    } catch (err) {
      end = classify(err, request.toolName, stderr);
    } finally {
      call.close();
    }
    if (host.networkCalls.length > 0 && end.error?.code !== ErrorCodes.RESOURCE_EXHAUSTED) {
      const calls = [...new Set(host.networkCalls)];
      end = {
        exitCode: end.exitCode === 0 ? 1 : end.exitCode,
        error: new CorralError(
          ErrorCodes.NETWORK_BLOCKED,
          `${request.toolName} tried to use the network (${calls.join(', ')}); Corral tools run without network access.`,
          { call: calls[0], calls, exit_code: end.exitCode, ...(end.error ? { cause: end.error.message } : {}) },
        ).toJSON(),
      };
    }
    return finishRun(end, {
      request,
      started,
      stdout,
      stderr,
      peakMemoryBytes: memory?.buffer.byteLength ?? 0,
      maxPages,
      quota: call.quota,
    });
  }
}
