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
      async run() {
        const imports = leases.imports(compiled.memory ?? undefined, { wasi_snapshot_preview1: host.imports });
        try {
          const instance = await instantiatePreview1(host, compiled.module, imports);
          const memory = instance.exports.memory as WebAssembly.Memory;
          memories.watch(memory, compiled.memoryLimits);
          memories.instance(instance, compiled.growWatched);
          host.bind(memory);
          // A start function that exited and caught its own unwinding: the exit stands, and _start never runs.
          if (host.exitCode === undefined) host.enter(instance.exports._start as () => void);
        } catch (err) {
          // Exited (in _start or a start function), whatever was thrown after: the exit stands.
          if (host.exitCode === undefined) throw err;
        }
        // A module that caught its own exit and went on (returned, or trapped later) still exited.
        if (host.exitCode !== undefined) throw new ProcExit(host.exitCode);
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
}
