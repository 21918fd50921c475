import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { OpenedCall } from '../call.js';
import { Runner, type Execution, type RunRequest } from '../runner.js';
import { ProcExit, type RunEnd } from '../outcome.js';
import { Preview1Host } from './host.js';
import { compilePreview1, instantiatePreview1, type LoadedModule } from './loader.js';
import { MemoryLeases } from '../memory-pool.js';
import { MemoryWatch } from '../memory-watch.js';

/**
 * Runs preview1 command modules the way ComponentRunner runs components:
 * compiled once per module and memory cap, a fresh instance per call, stdio
 * captured with caps, the call's filesystem from vfs.ts, and the same
 * classification of exits, traps and limits.
 */
export class Preview1Runner extends Runner<Uint8Array, LoadedModule> {
  protected readonly kind = 'module';

  protected compile(bytes: Uint8Array, maxPages: number, toolName: string): Promise<LoadedModule> {
    return compilePreview1(bytes, maxPages, toolName);
  }

  protected start(compiled: LoadedModule, call: OpenedCall, request: RunRequest): Execution {
    const host = new Preview1Host(call.guest);
    const memories = new MemoryWatch();
    const leases = new MemoryLeases(request.stdin.length, memories);
    return {
      run: async () => {
        const imports = leases.imports(compiled.memory ?? undefined, { wasi_snapshot_preview1: host.imports });
        let instance: WebAssembly.Instance | undefined;
        try {
          instance = await instantiatePreview1(host, compiled.module, imports);
          const memory = instance.exports.memory as WebAssembly.Memory;
          memories.watch(memory, compiled.memoryLimits);
          memories.instance(instance, compiled.growWatched);
          host.bind(memory);
        } catch (err) {
          // Exited in a start function, whatever was thrown after: the exit stands.
          if (host.exitCode === undefined) throw err;
        }
        // A start function that exited (even one that caught its own unwinding and returned): _start never runs.
        if (host.exitCode !== undefined) throw this.exitedWhileInstantiated(exitCode(host.exitCode, request), request.toolName);
        try {
          this.enter(host, instance!);
        } catch (err) {
          if (host.exitCode === undefined) throw err;
        }
        // A module that caught its own exit and went on (returned, or trapped later) still exited.
        if (host.exitCode !== undefined) throw new ProcExit(exitCode(host.exitCode, request));
      },
      // A guest that reached for the network ends E_NETWORK_BLOCKED, unless it was stopped at a limit.
      settle(end: RunEnd): RunEnd {
        if (host.networkCalls.length === 0 || end.error?.code === ErrorCodes.RESOURCE_EXHAUSTED) return end;
        const calls = [...new Set(host.networkCalls)];
        return {
          exitCode: end.exitCode === 0 ? 1 : end.exitCode,
          error: new CorralError(
            ErrorCodes.NETWORK_BLOCKED,
            `${request.toolName} tried to use the network (${calls.join(', ')}); Corral tools run without network access.`,
            { call: calls[0], calls, exit_code: end.exitCode, ...(end.error ? { cause: end.error.message } : {}) },
          ).toJSON(),
        };
      },
      memory: memories,
      release: () => leases.release(),
    };
  }

  /** Run the instantiated module's entry point, `_start`, as its guest's host. */
  protected enter(host: Preview1Host, instance: WebAssembly.Instance): void {
    host.enter(instance.exports._start as () => void);
  }

  /** What a call ends with when the module's start function exited: that exit. */
  protected exitedWhileInstantiated(code: number, _toolName: string): Error {
    return new ProcExit(code);
  }
}

/** The exit code a call reports: the module's own, or as the component it stands for would (RunRequest.adapterExit). */
function exitCode(code: number, request: RunRequest): number {
  return request.adapterExit && code !== 0 ? 1 : code;
}
