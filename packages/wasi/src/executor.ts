/**
 * The host side of a sandbox pool, shared by every host: transpile each
 * component once (memory, then the host's cache, then jco in a worker), send
 * it only to workers that have not compiled it, and run each call under its
 * time limit. Hosts differ only in their pool, their cache and which mount
 * sources they can open.
 */
import { releaseProxy, transfer } from 'comlink/dist/esm/comlink.mjs';
import type { Remote } from 'comlink';
import { CorralError, ErrorCodes } from '@corral/core/errors';
// Subpaths, not the index: sandbox workers load this package, and the index pulls in ajv (~80 ms).
import { detectWasmKind, sha256Hex } from '@corral/core/wasm';
import {
  onAbort,
  specDefaults,
  type ExecutionRequest,
  type ExecutionResult,
  type Executor,
  type MountBinding,
  type Tool,
} from '@corral/core';
import { checkMountSources, type MountSourceChecks } from './mount-sources.js';
import { closedError, unlessCancelled, type SandboxPool, type PoolWorker } from './pool.js';
import type { PreparedComponent } from './transpile.js';
import type { RunRequest } from './request.js';
import { NOT_LOADED } from './code-cache.js';
import { copyPrepared } from './prepared-format.js';
import { checkComponentImports } from './component-imports.js';
import { openStdio, type StdioHandlers } from './stdio-channel.js';
import type { PreloadJob, RunJob, SandboxWorkerApi } from './worker-api.js';

export { outcomeOf, type Outcome } from './worker-outcome.js';

/**
 * Run any WASI program (`corral exec`): a preview1 command module or a
 * wasi:cli command component, with its argv, environment and directories
 * exactly as given, under the same sandbox and limits as a tool call.
 */
export interface ExecRequest extends StdioHandlers {
  /** The program's name, for argv[0] and messages. */
  name: string;
  /** Arguments after argv[0]. */
  args: string[];
  env: Record<string, string>;
  /** Directories as the guest sees them; guest names are passed on as given (relative names too). */
  mounts: MountBinding[];
  memoryLimitBytes: number;
  diskLimitBytes: number;
  /** Cap on output kept when it is captured (no onStdout/onStderr), and on output streamed where the guest cannot be made to wait. */
  outputLimitBytes: number;
  /** 0: no time limit. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Called when a component has to be transpiled first (not cached): seconds for a large one. */
  onPrepare?: () => void;
}

/** A sandbox worker as a host's pool holds it: its API (through comlink, workerCalls) and what it has compiled. */
export interface ExecutorWorker extends PoolWorker {
  /** Keys of components and modules this worker has compiled, so they are sent only once. */
  readonly loaded: Set<string>;
  readonly api: WorkerCalls;
}

/** A sandbox worker's calls through comlink, and `release` to let go of its endpoint. */
export type WorkerCalls = Pick<Remote<SandboxWorkerApi>, 'ping' | 'prepare' | 'run' | 'preload'> & { release(): void };

/**
 * The calls of a worker's comlink remote, each read once: comlink makes a
 * proxy at every property read, and registers each for finalization, so
 * `remote.run(job)` cost a proxy and a FinalizationRegistry entry a call.
 */
export function workerCalls(remote: Remote<SandboxWorkerApi>): WorkerCalls {
  const calls = { ping: remote.ping, prepare: remote.prepare, run: remote.run, preload: remote.preload };
  let released = false;
  return {
    ...calls,
    // Each proxy is registered for finalization with a strong reference to the endpoint (the
    // worker): released only together, so a stopped worker can be collected in browsers too.
    release: () => {
      if (released) return;
      released = true;
      for (const call of Object.values(calls)) call[releaseProxy]();
      remote[releaseProxy]();
    },
  };
}

/** Tools a spare worker compiles ahead (the most recently called). */
const RECENT_TOOLS = 2;

/** What a call runs: a preview1 module as it is, or a component transpiled by jco. */
type Program = { kind: 'module'; bytes: Uint8Array; adapted?: true } | { kind: 'component'; prepared: PreparedComponent };

/**
 * What runs a component: the preview1 module it merely wraps in the preview1
 * adapter (PreparedComponent.preview1), marked so that it exits as the
 * component would; else its glue. The module needs one instance a call where
 * the glue needs four, and no lifting and lowering between them.
 */
function componentProgram(prepared: PreparedComponent, adaptedModules: boolean): Program {
  return adaptedModules && prepared.preview1
    ? { kind: 'module', bytes: prepared.preview1, adapted: true }
    : { kind: 'component', prepared };
}

/** RunRequest.adapterExit for a program that stands for the component wrapping it. */
function exitsAs(program: Program): Pick<RunRequest, 'adapterExit'> {
  return program.kind === 'module' && program.adapted ? { adapterExit: true } : {};
}

/** What a worker compiles ahead of a call: the program, for calls capped at `memoryLimitBytes`. */
function preloadJob(key: string, program: Program, memoryLimitBytes: number, toolName: string): PreloadJob {
  return program.kind === 'module'
    ? { kind: 'module', key, bytes: program.bytes, memoryLimitBytes, toolName }
    : { kind: 'component', key, prepared: program.prepared, memoryLimitBytes, toolName };
}

/** The job for one worker: the program goes along only when the worker has not compiled it yet. */
function runJob(worker: ExecutorWorker, key: string, program: Program, request: RunRequest): RunJob {
  return worker.loaded.has(key) ? { kind: program.kind, key, request } : jobWithProgram(key, program, request);
}

/** A job that carries its program, for a worker that may not hold it. */
function jobWithProgram(key: string, program: Program, request: RunRequest): RunJob {
  return program.kind === 'module'
    ? { kind: 'module', key, bytes: program.bytes, request }
    : { kind: 'component', key, prepared: program.prepared, request };
}

/** Send a job, with its input's buffer moved rather than copied when the caller gave it up. */
function send(worker: ExecutorWorker, job: RunJob, moveStdin: boolean) {
  return worker.api.run(moveStdin ? transfer(job, [job.request.stdin.buffer as ArrayBuffer]) : job);
}

/**
 * Run a job on a worker and keep `worker.loaded` true to what it holds: a
 * worker evicts code over its byte budget (code-cache.ts), and answers a key it
 * no longer holds with NOT_LOADED before running anything; the program is
 * then sent again. A job that carries its program is never refused so.
 * The worker gives the input back with every answer (worker-api.ts): a
 * moved input goes back to the caller through `returnStdin`.
 */
async function runOn(
  worker: ExecutorWorker,
  key: string,
  program: Program,
  request: RunRequest,
  given: Pick<ExecutionRequest, 'stdinTransferable' | 'returnStdin'> = {},
): Promise<ExecutionResult> {
  const { buffer } = request.stdin;
  // Moving a detached buffer would make Node drop the message silently: such a job is copied, and fails clearly.
  const moveStdin = given.stdinTransferable === true && buffer instanceof ArrayBuffer && buffer.byteLength > 0;
  let outcome = await send(worker, runJob(worker, key, program, request), moveStdin);
  if (!outcome.ok && outcome.error.details?.reason === NOT_LOADED) {
    worker.loaded.delete(key);
    const again = { ...request, stdin: outcome.stdin ?? request.stdin };
    outcome = await send(worker, runJob(worker, key, program, again), moveStdin && outcome.stdin !== undefined);
  }
  if (moveStdin && outcome.stdin) given.returnStdin?.(outcome.stdin);
  if (!outcome.ok) throw CorralError.fromJSON(outcome.error);
  worker.loaded.add(key);
  return outcome.value;
}

/**
 * Where a host keeps transpiled components between runs (disk in Node,
 * IndexedDB in browsers). An entry another version of Corral made is
 * prepared again: key entries by PREPARED_FORMAT to keep versions apart.
 * A `get` that fails or returns something else than a PreparedComponent is
 * a miss, and a `set` that fails costs only speed. What `get` returns is
 * read once and copied (copyPrepared): the host keeps none of it.
 */
export interface PreparedComponentStore {
  get(sha256: string): Promise<PreparedComponent | undefined>;
  set(sha256: string, prepared: PreparedComponent): Promise<void>;
}

/** A component being transpiled before its first call (not in any cache): seconds for a large one. */
export interface PrepareEvent {
  /** The tool's (or program's) name. */
  name: string;
  /** The component's SHA-256, the key it is cached under. */
  sha256: string;
  /** Settles (never rejects) when the transpile is over, done or failed. */
  finished: Promise<void>;
}

export interface PoolExecutorOptions {
  cache?: PreparedComponentStore | undefined;
  /** Told when a component has to be transpiled first, so a host can show progress (the CLI does after 0.5 s). */
  onPrepare?: ((event: PrepareEvent) => void) | undefined;
  /** Time allowed to transpile a component the first time. Default 120 s. */
  prepareTimeoutMs?: number;
  /**
   * Run a component that only wraps a preview1 module in jco's adapter as
   * that module (PreparedComponent.preview1). Default true; false runs every
   * component through its glue, answering edge cases as the adapter does.
   */
  adaptedModules?: boolean;
  /**
   * The mount sources this host opens besides `memory`: each kind's check,
   * run before the call (its worker registers the matching openers). A
   * source of another kind is refused, naming the kinds there are.
   */
  mountSources: MountSourceChecks;
}

export class PoolExecutor<W extends ExecutorWorker> implements Executor {
  readonly pool: SandboxPool<W>;
  readonly #options: PoolExecutorOptions;
  readonly #prepared = new Map<string, Promise<PreparedComponent>>();
  /** Aborted by close: ends the waits on a host's loader or cache, whose timers would hold the process up. */
  readonly #closing = new AbortController();
  readonly #prebuilt = new Map<string, () => Promise<PreparedComponent | undefined>>();
  /** The last tools called (oldest first), for a spare worker to compile before it replaces one. */
  readonly #recent = new Map<string, PreloadJob>();

  constructor(pool: SandboxPool<W>, options: PoolExecutorOptions) {
    this.pool = pool;
    this.#options = options;
    pool.onSpare((worker) => void this.#preloadRecent(worker));
  }

  /**
   * Have a spare worker compile the tools called last: the worker that
   * replaces one stopped by a timeout then runs its next call as a warm
   * worker would (~1 ms), not after compiling it again (~40 ms).
   */
  async #preloadRecent(worker: W): Promise<void> {
    for (const job of [...this.#recent.values()].reverse()) await this.#preload(worker, job);
  }

  async #preload(worker: W, job: PreloadJob): Promise<void> {
    if (!worker.alive || worker.loaded.has(job.key)) return;
    // A failure here is not a call's: that call sends its code again.
    const outcome = await worker.api.preload(job).catch(() => undefined);
    if (outcome?.ok && worker.alive) worker.loaded.add(job.key);
  }

  /** Remember a call's program for #preloadRecent (the last RECENT_TOOLS tools). */
  #remember(key: string, program: Program, request: RunRequest): void {
    const known = this.#recent.delete(key);
    const job = preloadJob(key, program, request.memoryLimitBytes, request.toolName);
    this.#recent.set(key, job);
    if (this.#recent.size > RECENT_TOOLS) this.#recent.delete(this.#recent.keys().next().value!);
    // A tool newly among the recent ones goes to the spare already waiting, too.
    const spare = this.pool.spareWorker;
    if (!known && spare) void this.#preload(spare, job);
  }

  async execute(request: ExecutionRequest): Promise<ExecutionResult> {
    const { tool } = request;
    const key = tool.wasmSha256;
    const mounts = await checkMountSources(request.mounts, this.#options.mountSources);
    // A preview1 module runs as it is: no jco transpile, the worker gets its bytes.
    const kind = tool.spec.kind ?? 'component';
    const program: Program =
      kind === 'module' ? { kind, bytes: tool.wasm } : this.#componentProgram(await unlessCancelled(this.prepare(tool), request.signal));
    const runRequest: RunRequest = {
      toolName: tool.spec.name,
      stdin: request.stdin,
      args: request.args,
      env: request.env,
      mounts,
      outputLimitBytes: request.outputLimitBytes,
      memoryLimitBytes: request.memoryLimitBytes,
      diskLimitBytes: request.diskLimitBytes,
      ...exitsAs(program),
    };
    this.#remember(key, program, runRequest);
    return this.pool.run((worker) => runOn(worker, key, program, runRequest, request), {
      timeoutMs: request.timeoutMs,
      ...(request.signal ? { signal: request.signal } : {}),
      onTimeout: () =>
        new CorralError(
          ErrorCodes.RESOURCE_EXHAUSTED,
          `${tool.spec.name} did not finish within ${request.timeoutMs} ms; its worker was stopped.`,
          { resource: 'time', timeout_ms: request.timeoutMs },
        ),
    });
  }

  /**
   * Run a WASI program in a sandbox worker. Output goes to onStdout and
   * onStderr as the program writes it when they are given (then the result
   * holds none), else it is captured up to outputLimitBytes.
   */
  async exec(request: ExecRequest, wasm: Uint8Array): Promise<ExecutionResult> {
    if (!(wasm instanceof Uint8Array)) {
      throw new CorralError(ErrorCodes.INPUT_VALIDATION, `exec: the program must be the bytes of a .wasm file (a Uint8Array).`, {});
    }
    const kind = detectWasmKind(wasm, request.name);
    const key = await sha256Hex(wasm);
    const mounts = await checkMountSources(request.mounts, this.#options.mountSources);
    const program: Program =
      kind === 'module'
        ? { kind, bytes: wasm }
        : this.#componentProgram(await unlessCancelled(this.#prepareBytes(key, wasm, request.name, request.onPrepare), request.signal));
    // The channel also carries `terminals`: without it the program would see none.
    const streamed =
      request.onStdout !== undefined ||
      request.onStderr !== undefined ||
      request.terminals !== undefined ||
      !(request.stdin === undefined || request.stdin instanceof Uint8Array);
    const stdio = streamed ? openStdio(request) : undefined;
    const runRequest: RunRequest = {
      toolName: request.name,
      stdin: request.stdin instanceof Uint8Array ? request.stdin : new Uint8Array(0),
      args: [request.name, ...request.args],
      env: request.env,
      mounts,
      outputLimitBytes: request.outputLimitBytes,
      memoryLimitBytes: request.memoryLimitBytes,
      diskLimitBytes: request.diskLimitBytes,
      scratchTmp: false,
      ...(stdio ? { stdio: stdio.channel } : {}),
      ...exitsAs(program),
    };
    try {
      const result = await this.pool.run(
        async (worker) => {
          if (!stdio) return runOn(worker, key, program, runRequest);
          // The stdio port moves to the worker (a MessagePort cannot be copied), so this job
          // cannot be sent twice: it carries its program even to a worker that holds it.
          const job = jobWithProgram(key, program, runRequest);
          const outcome = await worker.api.run(transfer(job, [stdio.channel.port]));
          if (!outcome.ok) throw CorralError.fromJSON(outcome.error);
          worker.loaded.add(key);
          return outcome.value;
        },
        {
          timeoutMs: request.timeoutMs > 0 ? request.timeoutMs : Number.POSITIVE_INFINITY,
          ...(request.signal ? { signal: request.signal } : {}),
          onTimeout: () =>
            new CorralError(
              ErrorCodes.RESOURCE_EXHAUSTED,
              `${request.name} did not finish within ${request.timeoutMs} ms; it was stopped.`,
              {
                resource: 'time',
                timeout_ms: request.timeoutMs,
              },
            ),
        },
      );
      // Output still on its way arrives before the result is reported.
      await stdio?.ended;
      return result;
    } finally {
      stdio?.close();
    }
  }

  /**
   * Where the transpiled form of a component Corral ships can be read (made
   * when Corral was built: prepared-file.ts): looked up before the host's
   * cache and jco. Only for components whose transpiled form the host
   * trusts as its own code, since the glue runs in the sandbox worker. A
   * loader that fails or finds nothing leaves the usual path.
   */
  addPrebuilt(sha256: string, load: () => Promise<PreparedComponent | undefined>): void {
    this.#prebuilt.set(sha256, load);
  }

  /**
   * What `step` gives, or undefined when it fails or takes longer than a
   * transpile may: a loader or cache of the host's that stalls (a fetch that
   * never answers) is given up on, never waited on for ever.
   */
  async #withinPrepareTime<T>(step: () => Promise<T | undefined>): Promise<T | undefined> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const closing = this.#closing.signal;
    if (closing.aborted) return undefined;
    let stopWaiting = () => {};
    const stalled = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.#options.prepareTimeoutMs ?? 120_000);
      // Closed meanwhile: the wait ends now, not when its timer would (up to 2 minutes of a process that cannot exit).
      stopWaiting = onAbort(closing, () => resolve(undefined));
    });
    try {
      return await Promise.race([step().catch(() => undefined), stalled]);
    } finally {
      clearTimeout(timer);
      stopWaiting();
    }
  }

  /**
   * Compile a tool in a sandbox worker ahead of its first call, as a spare
   * worker does for the tools called last: that call then costs what later
   * ones do. Runs no guest code. `memoryLimitBytes` is the cap its calls will
   * have (code is compiled per cap): by default the spec's. Code that does
   * not compile leaves the worker as it was (the first call reports why); a
   * worker still compiling after `timeoutMs` is stopped like a call's, and
   * preload rejects with E_RESOURCE_EXHAUSTED.
   */
  async preload(tool: Tool, options: { memoryLimitBytes?: number; timeoutMs?: number } = {}): Promise<void> {
    const key = tool.wasmSha256;
    const toolName = tool.spec.name;
    const memoryLimitBytes = options.memoryLimitBytes ?? (tool.spec.resources?.memory_mb ?? specDefaults.resources.memory_mb) * 2 ** 20;
    const program: Program =
      (tool.spec.kind ?? 'component') === 'module'
        ? { kind: 'module', bytes: tool.wasm }
        : this.#componentProgram(await this.prepare(tool));
    const job = preloadJob(key, program, memoryLimitBytes, toolName);
    const timeoutMs = options.timeoutMs ?? 30_000;
    await this.pool.run((worker) => this.#preload(worker, job), {
      timeoutMs,
      onTimeout: () =>
        new CorralError(
          ErrorCodes.RESOURCE_EXHAUSTED,
          `Compiling ${toolName} in a sandbox worker took over ${timeoutMs} ms; the worker was stopped.`,
          {
            resource: 'time',
            timeout_ms: timeoutMs,
          },
        ),
    });
  }

  #componentProgram(prepared: PreparedComponent): Program {
    return componentProgram(prepared, this.#options.adaptedModules !== false);
  }

  /** Transpile a tool's component ahead of its first call (memory, then what was built with Corral, then the host's cache, then a worker). */
  prepare(tool: Tool): Promise<PreparedComponent> {
    return this.#prepareBytes(tool.wasmSha256, tool.wasm, tool.spec.name);
  }

  #prepareBytes(key: string, wasm: Uint8Array, name: string, onTranspile?: () => void): Promise<PreparedComponent> {
    let prepared = this.#prepared.get(key);
    if (!prepared) {
      prepared = this.#prepareUncached(key, wasm, name, onTranspile).then((ready) => {
        // The glue's compile checks what the component imports, from a cache's list too; the module
        // that runs in its place is checked here, once, so a damaged or doctored list is refused either way.
        if (ready.preview1) checkComponentImports(ready.imports, name);
        return ready;
      });
      prepared.catch(() => this.#prepared.delete(key));
      this.#prepared.set(key, prepared);
    }
    return prepared;
  }

  async #prepareUncached(key: string, wasm: Uint8Array, name: string, onTranspile?: () => void): Promise<PreparedComponent> {
    const load = this.#prebuilt.get(key);
    const prebuilt = load && (await this.#withinPrepareTime(async () => load()));
    if (prebuilt) return prebuilt;
    const cache = this.#options.cache;
    // Only a plain copy, checked, is used: what a cache hands back may change between reads.
    // A cache that fails or stalls is a miss, as is one that hands back what cannot be used.
    const cached = cache && (await this.#withinPrepareTime(async () => copyPrepared(await cache.get(key))));
    if (cached) return cached;
    // Closed while the host's cache was asked: no transpile is started (nor announced) for a pool that is gone.
    if (this.#closing.signal.aborted) throw closedError(false);
    onTranspile?.();
    let finish = () => {};
    const finished = new Promise<void>((resolve) => (finish = resolve));
    try {
      this.#options.onPrepare?.({ name, sha256: key, finished });
    } catch {
      // A listener's failure is not the call's.
    }
    const timeoutMs = this.#options.prepareTimeoutMs ?? 120_000;
    const prepared = await this.pool
      .run(
        async (worker) => {
          const outcome = await worker.api.prepare(wasm, name);
          if (!outcome.ok) throw CorralError.fromJSON(outcome.error);
          return outcome.value;
        },
        {
          timeoutMs,
          // jco stays loaded in the worker that ran it (tens of MB, unused by calls): that worker goes.
          retire: true,
          onTimeout: () =>
            new CorralError(ErrorCodes.RESOURCE_EXHAUSTED, `Preparing ${name} took longer than ${timeoutMs} ms.`, {
              resource: 'time',
              timeout_ms: timeoutMs,
            }),
        },
      )
      .finally(finish);
    // A failed or stalled write costs the next process a transpile, not this call its result.
    if (cache) await this.#withinPrepareTime(async () => cache.set(key, prepared));
    return prepared;
  }

  close(): Promise<void> {
    this.#closing.abort();
    return this.pool.close();
  }
}
