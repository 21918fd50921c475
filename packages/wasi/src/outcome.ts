/**
 * How a run ends, the same for every kind of tool Corral runs (wasi:cli
 * components and preview1 core modules): stdio captured up to a cap, the
 * way the tool stopped classified (exit, trap, output cap), and the checks
 * made once it stopped (disk quota, memory near its cap).
 */
import { CorralError, ErrorCodes, type CorralErrorJSON } from '@corral/core/errors';
import type { ExecutionResult } from '@corral/core';
import { WASM_PAGE_BYTES } from './limits.js';
import { isHandleLimit, MAX_LIVE_HANDLES } from './glue.js';
import type { DiskQuota } from './fs/quota.js';
import type { RunRequest } from './request.js';

/** Thrown from a stdio sink to unwind the guest when stdout passes its cap. */
export class OutputLimitExceeded extends Error {
  readonly limitBytes: number;

  constructor(limitBytes: number) {
    super(`${limitBytes}-byte`);
    this.limitBytes = limitBytes;
  }
}

/**
 * Thrown by a host's `proc_exit` to unwind the guest. Shaped like
 * preview2-shim's ComponentExit (`exitError`, `code`), so one check
 * recognises both.
 */
export class ProcExit extends Error {
  readonly exitError = true;
  readonly code: number;

  constructor(code: number) {
    super(`exit ${code}`);
    this.code = code;
  }
}

/** What a run ended with, before the post-run checks. */
export interface RunEnd {
  exitCode: number;
  /** True when the guest ended by itself (returned, or called exit), not stopped by a trap or a limit. */
  exited?: boolean;
  error?: CorralErrorJSON;
}

export function classify(err: unknown, toolName: string, stderr: CappedSink): RunEnd {
  if (isExit(err)) return { exitCode: err.code, exited: true };
  if (err instanceof CorralError) return { exitCode: 1, error: err.toJSON() };
  const limit = err instanceof OutputLimitExceeded ? err : (err as { cause?: unknown } | null)?.cause;
  if (limit instanceof OutputLimitExceeded) {
    return {
      exitCode: 1,
      error: new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, `${toolName} wrote more output than the ${limit.message} limit.`, {
        resource: 'output',
        limit_bytes: limit.limitBytes,
      }).toJSON(),
    };
  }
  if (isHandleLimit(err)) {
    return {
      exitCode: 1,
      error: new CorralError(
        ErrorCodes.RESOURCE_EXHAUSTED,
        `${toolName} held more than ${MAX_LIVE_HANDLES} handles at once (streams, descriptors, pollables, resources); drop those it no longer needs.`,
        { resource: 'handles', limit: MAX_LIVE_HANDLES },
      ).toJSON(),
    };
  }
  const cause = err instanceof Error ? err.message : String(err);
  const stderr_tail = new TextDecoder().decode(stderr.bytes().slice(-1024));
  const error =
    err instanceof WebAssembly.RuntimeError || err instanceof RangeError
      ? new CorralError(ErrorCodes.UNEXPECTED_EXIT, `${toolName} trapped: ${cause}`, { reason: 'trap', trap: true, cause, stderr_tail })
      : new CorralError(ErrorCodes.UNEXPECTED_EXIT, `${toolName} failed: ${cause}`, { reason: 'failed', trap: false, cause, stderr_tail });
  return { exitCode: 1, error: error.toJSON() };
}

/** preview2-shim's ComponentExit, or a preview1 host's ProcExit. */
export function isExit(err: unknown): err is { exitError: true; code: number } {
  return typeof err === 'object' && err !== null && (err as { exitError?: unknown }).exitError === true;
}

export interface RunFacts {
  request: RunRequest;
  /** performance.now() when the run started. */
  started: number;
  stdout: CappedSink;
  stderr: CappedSink;
  /** Largest size the tool's memories reached. */
  peakMemoryBytes: number;
  /** Whether it ran out of memory: a memory.grow failed (MemoryWatch.ranOut). */
  ranOutOfMemory: boolean;
  /** The memory cap the module was compiled with, in pages. */
  maxPages: number;
  /** The call's disk quota, when it had a filesystem. */
  quota?: DiskQuota;
}

/** V8's messages for a Map, Set or array that cannot grow any more. */
const HOST_CONTAINER_FULL = /Map maximum size exceeded|Set maximum size exceeded|Invalid array length/;

/**
 * Apply the post-run checks to how the tool ended and build the result:
 * a refused write over the disk quota is E_RESOURCE_EXHAUSTED (disk); a
 * failure after a refused memory.grow is E_RESOURCE_EXHAUSTED (memory).
 */
export function finishRun(end: RunEnd, facts: RunFacts): ExecutionResult {
  const { request, stdout, stderr, peakMemoryBytes, ranOutOfMemory, maxPages, quota } = facts;
  let { exitCode, error } = end;
  const exited = end.exited === true;
  if (quota?.exceeded) {
    const limitMb = Math.round(request.diskLimitBytes / 2 ** 20);
    error = new CorralError(
      ErrorCodes.RESOURCE_EXHAUSTED,
      `${request.toolName} tried to write more than its ${limitMb} MB disk quota (resources.disk_mb).`,
      {
        resource: 'disk',
        limit_bytes: request.diskLimitBytes,
        used_bytes: quota.usedBytes,
        cause: error?.message ?? `exit code ${exitCode}`,
      },
    ).toJSON();
    if (exitCode === 0) exitCode = 1;
  }
  // A tool that fails after a memory.grow failed ran out of memory, whatever
  // it did next (a NULL from malloc surfaces as a trap or an exit code).
  const capBytes = maxPages * WASM_PAGE_BYTES;
  if ((exitCode !== 0 || error) && ranOutOfMemory && error?.code !== ErrorCodes.RESOURCE_EXHAUSTED) {
    error = new CorralError(
      ErrorCodes.RESOURCE_EXHAUSTED,
      `${request.toolName} ran out of memory: it asked for more than its ${Math.round(request.memoryLimitBytes / 2 ** 20)} MB limit allows (resources.memory_mb).`,
      { resource: 'memory', limit_bytes: capBytes, peak_bytes: peakMemoryBytes, cause: error?.message ?? `exit code ${exitCode}` },
    ).toJSON();
    if (exitCode === 0) exitCode = 1;
  }
  // The host keeps a tool's handles (streams, descriptors) in JS maps and arrays: a tool that makes
  // millions without dropping them reaches V8's size limit on those before the worker's heap limit.
  // That is memory the tool used up, not a bug in it.
  if (error?.code === ErrorCodes.UNEXPECTED_EXIT && HOST_CONTAINER_FULL.test(error.message)) {
    error = new CorralError(
      ErrorCodes.RESOURCE_EXHAUSTED,
      `${request.toolName} holds more handles (streams, descriptors) than the host can keep; drop the ones it no longer needs.`,
      { resource: 'memory', peak_bytes: peakMemoryBytes, cause: error.message },
    ).toJSON();
    if (exitCode === 0) exitCode = 1;
  }
  return {
    peakMemoryBytes,
    exitCode,
    exited,
    stdout: stdout.bytes(),
    stderr: stderr.bytes(),
    ...(error ? { error } : {}),
    durationMs: performance.now() - facts.started,
    stdoutTruncated: stdout.truncated,
    stderrTruncated: stderr.truncated,
  };
}

/**
 * Collects a stdio stream up to a byte cap. stdout keeps its head and stops
 * the tool when the cap is passed (a cut JSON document is useless); stderr
 * keeps its tail, the part that explains a failure.
 *
 * The bytes live in one buffer that doubles as it fills, never in a list of
 * chunks: a tool writing one byte per call made a chunk list cost ~250 bytes
 * of worker heap per byte of output (1 MiB of output, 250 MB of heap).
 */
export class CappedSink {
  readonly #limit: number;
  readonly #keep: 'head' | 'tail';
  #buffer = new Uint8Array(0);
  /** Bytes in #buffer; for a tail, up to twice the limit between compactions. */
  #size = 0;
  truncated = false;

  constructor(limit: number, keep: 'head' | 'tail') {
    this.#limit = limit;
    this.#keep = keep;
  }

  write(bytes: Uint8Array): void {
    if (this.#keep === 'head') {
      const room = Math.max(0, this.#limit - this.#size);
      this.#append(bytes.subarray(0, room));
      if (bytes.length > room) {
        this.truncated = true;
        throw new OutputLimitExceeded(this.#limit);
      }
      return;
    }
    if (bytes.length >= this.#limit) {
      if (this.#size + bytes.length > this.#limit) this.truncated = true;
      this.#buffer = bytes.slice(bytes.length - this.#limit);
      this.#size = this.#limit;
      return;
    }
    // Keep the last #limit bytes, compacting only once the buffer holds
    // twice that: each byte is moved at most once per #limit bytes written.
    if (this.#size + bytes.length > 2 * this.#limit) {
      this.#buffer.copyWithin(0, this.#size - this.#limit, this.#size);
      this.#size = this.#limit;
    }
    this.#append(bytes);
    if (this.#size > this.#limit) this.truncated = true;
  }

  #append(bytes: Uint8Array): void {
    const needed = this.#size + bytes.length;
    if (needed > this.#buffer.length) {
      const grown = new Uint8Array(
        Math.max(needed, Math.min(2 * this.#buffer.length || 4096, (this.#keep === 'head' ? 1 : 2) * this.#limit)),
      );
      grown.set(this.#buffer.subarray(0, this.#size));
      this.#buffer = grown;
    }
    this.#buffer.set(bytes, this.#size);
    this.#size = needed;
  }

  /** What was kept: a copy, so it can be posted without the buffer's spare room. */
  bytes(): Uint8Array {
    const start = this.#keep === 'tail' ? Math.max(0, this.#size - this.#limit) : 0;
    return this.#buffer.slice(start, this.#size);
  }
}
