import { CorralError, ErrorCodes } from '@corral/core/errors';
import type { PreparedComponent } from './transpile.js';
import { checkComponentImports } from './component-imports.js';
import { boundImports, callState, type CallState } from './preview2.js';
import { capComponentModules, definesMemoryOrTable, mayRunAtInstantiation, WASM_PAGE_BYTES } from './limits.js';
import { MemoryWatch, exportedMemoryLimits, type MemoryLimits } from './memory-watch.js';
import { watchGrowth } from './grow-watch.js';
import type { OpenedCall } from './call.js';
import { Runner, type Execution, type RunRequest, type RunnerOptions } from './runner.js';
import { instantiate } from './preview1/loader.js';
import { MemoryLeases, MemoryPool, importOwnMemory } from './memory-pool.js';
import { newIndirection, standIns, type Fixup, type Shim } from './indirection.js';
import { prepareGlue, TRAP_IMPORT, type Instantiate } from './glue.js';

interface LoadedComponent {
  instantiate: Instantiate;
  modules: Map<string, WebAssembly.Module>;
  /** The modules that define a memory or a table, by name: each may be instantiated once per call. */
  capped: Map<WebAssembly.Module, string>;
  /** The modules whose memory comes from a pool (memory-pool.ts). */
  pools: Map<WebAssembly.Module, MemoryPool>;
  /** Where the memories each other module exports start and how far they may grow. */
  memoryLimits: Map<WebAssembly.Module, MemoryLimits>;
  /** The modules whose memory.grows were rewritten so that a failed one is seen (grow-watch.ts). */
  growWatched: Set<WebAssembly.Module>;
  /** The adapter's shim and fixup modules, run as JS instead (indirection.ts). */
  standIns: Map<WebAssembly.Module, Shim | Fixup>;
  /** No core module has a start function: instantiating runs none of the tool's code. */
  startless: boolean;
  /** How long its last instantiation in a call took, in ms. */
  instantiateMs?: number;
  /** Instances made ahead in a row that took longer than the runner allows; at AHEAD_SLOW_LIMIT, none is made ahead but a trial every AHEAD_RETRY_CALLS calls. */
  aheadSlow?: number;
  /** Calls since instances ahead stopped, towards the next trial. */
  aheadSkipped?: number;
  /** Called when the code cache drops this component: its pooled memories go too. */
  dispose(): void;
}

/**
 * The longest instantiation made ahead of a call (prepareNext): that work
 * runs while the worker is idle, so a call of another tool that arrives
 * meanwhile waits for it.
 */
export const AHEAD_MAX_MS = 2;
/** Instances made ahead over the time bound, in a row, after which a component gets none (one alone may be a GC pause). */
const AHEAD_SLOW_LIMIT = 3;
/**
 * Calls after which a component whose instances ahead were stopped gets one
 * more trial: three slow ones in a row may have been a busy machine, and
 * without a trial they would stay stopped for the worker's life. A trial
 * that is quick resumes them; a slow one costs at most one instance's time.
 */
const AHEAD_RETRY_CALLS = 50;

export interface ComponentRunnerOptions extends RunnerOptions {
  /**
   * Instantiate ahead of a call (prepareNext) only a component whose last
   * instantiation took at most this (ms), and stop when those made ahead
   * take longer, three in a row (reused memories are zeroed then), but for
   * a trial every AHEAD_RETRY_CALLS calls. Default AHEAD_MAX_MS; 0 never.
   */
  aheadMaxMs?: number;
  /** The clock instantiations are timed with, in ms (default `performance.now`); tests pass their own. */
  now?: () => number;
}

/** One instance of a component, bound to the call it serves when that call starts. */
interface Instance {
  readonly component: LoadedComponent;
  bind(state: CallState): void;
  /** Instantiate (once): the component's core instances and its exports. */
  exports(): Promise<Record<string, unknown>>;
  /** Every memory its core instances lease or export. */
  memories: MemoryWatch;
  leases: MemoryLeases;
  /** The first error that left a call into the host, if one has (glue.ts, trapsEndTheInstance). */
  trap(): { error: unknown } | undefined;
}

/** Whether a call with this much input starts with more memory than a pooled instance has (MemoryPool.pagesFor). */
function needsRoom(component: LoadedComponent, inputBytes: number): boolean {
  for (const pool of component.pools.values()) if (pool.pagesFor(inputBytes) !== pool.pages) return true;
  return false;
}

/**
 * `toolName`: the tool of the call it is for, named in its errors (tools with the same wasm share compiled code).
 * `inputBytes`: the size of that call's input, which sets where its memories start (made ahead: unknown, 0).
 */
function newInstance(component: LoadedComponent, toolName: string, inputBytes = 0): Instance {
  let state: CallState | undefined;
  const imports = boundImports(() => {
    // An instance made ahead runs no guest code (startless) until its call binds it.
    if (!state)
      throw new CorralError(ErrorCodes.UNEXPECTED_EXIT, `${toolName} called the host before its call started`, {
        reason: 'internal',
        cause: 'unbound instance',
      });
    return state;
  });
  let trap: { error: unknown } | undefined;
  imports[TRAP_IMPORT] = {
    trapped: (error: unknown) => {
      trap ??= { error };
    },
  };
  // Watch every memory the component's core instances lease or export, to
  // report the peak and to recognise a tool that failed because it hit a cap.
  const memories = new MemoryWatch();
  const leases = new MemoryLeases(inputBytes, memories);
  // Caps are rewritten per core module, so a second instance of a module
  // with a memory or table would have a second cap: a component may
  // instantiate a module as often as it likes, and 16 copies filled 16x
  // memory_mb of host memory.
  const instantiated = new Set<WebAssembly.Module>();
  const indirection = component.standIns.size > 0 ? newIndirection() : undefined;
  const instantiateCore = async (module: WebAssembly.Module, coreImports?: WebAssembly.Imports) => {
    const name = component.capped.get(module);
    if (name !== undefined) {
      if (instantiated.has(module)) {
        throw new CorralError(
          ErrorCodes.RESOURCE_EXHAUSTED,
          `${toolName} instantiates its core module ${name} more than once; each instance would have its own memory cap (resources.memory_mb).`,
          { resource: 'memory', module: name },
        );
      }
      instantiated.add(module);
    }
    const standIn = component.standIns.get(module);
    if (standIn?.kind === 'shim') return { exports: indirection!.shimExports(standIn) } as WebAssembly.Instance;
    if (standIn?.kind === 'fixup' && indirection!.fill(standIn, coreImports)) return { exports: {} } as WebAssembly.Instance;
    const instance = await instantiate(module, leases.imports(component.pools.get(module), coreImports));
    memories.instance(instance, component.growWatched.has(module));
    const limits = component.memoryLimits.get(module);
    if (limits) for (const value of Object.values(instance.exports)) if (value instanceof WebAssembly.Memory) memories.watch(value, limits);
    return instance;
  };
  const getCoreModule = (name: string) => {
    const module = component.modules.get(name);
    // Glue and modules come from one transpile, but a cache on disk can lose files.
    if (!module) {
      throw new CorralError(
        ErrorCodes.REGISTRATION,
        `${toolName}: the prepared component is damaged (its glue asks for a core module ${name} it does not have); clear the cache.`,
        { reason: `no core module ${name}` },
      );
    }
    return module;
  };
  let exports: Promise<Record<string, unknown>> | undefined;
  return {
    component,
    bind: (bound) => {
      state = bound;
    },
    exports: () => {
      if (!exports) {
        // jco's instantiate returns its exports at once when every core instance is made synchronously.
        try {
          exports = Promise.resolve(component.instantiate(getCoreModule, imports, instantiateCore));
        } catch (err) {
          exports = Promise.reject(err);
        }
      }
      return exports;
    },
    memories,
    leases,
    trap: () => trap,
  };
}

/**
 * Compiles a prepared component once and runs it many times, each run in a
 * fresh instance with its own stdio, environment and filesystem, against
 * Corral's own WASI 0.2 host (preview2.ts).
 */
export class ComponentRunner extends Runner<PreparedComponent, LoadedComponent> {
  protected readonly kind = 'component';
  /** The component the last call ran, and that call's tool. */
  #last: { component: LoadedComponent; toolName: string } | undefined;
  /** An instance of it, made after that call for the next one (prepareNext). */
  #ahead: Instance | undefined;
  readonly #aheadMaxMs: number;
  readonly #now: () => number;

  constructor(options: ComponentRunnerOptions = {}) {
    const { aheadMaxMs = AHEAD_MAX_MS, now = () => performance.now(), ...runnerOptions } = options;
    super(runnerOptions);
    this.#aheadMaxMs = aheadMaxMs;
    this.#now = now;
  }

  protected async compile(prepared: PreparedComponent, maxPages: number, toolName: string): Promise<LoadedComponent> {
    const component = await compile(prepared, maxPages, toolName);
    const dispose = component.dispose;
    // Dropped from the code cache: nothing of it is kept here either.
    component.dispose = () => {
      dispose();
      if (this.#last?.component === component) this.#last = undefined;
      if (this.#ahead?.component === component) this.#takeAhead();
    };
    return component;
  }

  /** The instance made ahead, if it is of `component`; one of another component is dropped (its memories go back). */
  #takeAhead(component?: LoadedComponent): Instance | undefined {
    const ahead = this.#ahead;
    this.#ahead = undefined;
    if (ahead?.component === component) return ahead;
    ahead?.leases.release();
    return undefined;
  }

  protected start(component: LoadedComponent, call: OpenedCall, request: RunRequest): Execution {
    const state = callState({ ...call.guest, memoryLimitBytes: request.memoryLimitBytes });
    const inputBytes = request.stdin.length;
    const fresh = () => {
      const made = newInstance(component, request.toolName, inputBytes);
      made.bind(state);
      return made;
    };
    // An instance made ahead has the memories of a small input; a larger one needs room from the start.
    const ahead = this.#takeAhead(needsRoom(component, inputBytes) ? undefined : component);
    ahead?.bind(state);
    let instance = ahead ?? fresh();
    return {
      run: async () => {
        let exports: Record<string, unknown>;
        if (instance === ahead) {
          try {
            exports = await instance.exports();
          } catch {
            // Made ahead, it failed: instantiate again in this call, where the failure is classified.
            instance.leases.release();
            instance = fresh();
            exports = await instance.exports();
          }
        } else {
          const started = this.#now();
          exports = await instance.exports();
          component.instantiateMs = this.#now() - started;
        }
        try {
          findRun(exports, request.toolName).run();
        } catch (err) {
          throw instance.trap()?.error ?? err;
        }
        // A tool that caught the trap of a host call (wasm exception handling) still ends with it.
        const trap = instance.trap();
        if (trap) throw trap.error;
      },
      get memory() {
        return instance.memories;
      },
      release: () => {
        instance.leases.release();
        this.#last = { component, toolName: request.toolName };
      },
    };
  }

  /**
   * Make an instance of the component the last call ran, for its next call,
   * while the worker is idle (a worker calls this after sending a result):
   * the instance is bound to that call when it starts, and a call of
   * another tool drops it. Only for a component none of whose core modules
   * has a start function, so instantiating runs no tool code, and whose
   * instantiation took at most `aheadMaxMs` (in its last call, and when made
   * ahead: three over it in a row stop them, but for a trial every
   * AHEAD_RETRY_CALLS calls). Each instance still serves one
   * call. True when an instance is waiting for the next call.
   */
  prepareNext(): boolean {
    if (!this.#last) return false;
    const { component, toolName } = this.#last;
    if (this.#ahead?.component === component) return true;
    this.#takeAhead();
    const quick = component.instantiateMs !== undefined && component.instantiateMs <= this.#aheadMaxMs;
    if (!component.startless || !quick) return false;
    if ((component.aheadSlow ?? 0) >= AHEAD_SLOW_LIMIT) {
      component.aheadSkipped = (component.aheadSkipped ?? 0) + 1;
      if (component.aheadSkipped < AHEAD_RETRY_CALLS) return false;
      // A trial: quick, and they resume; slow, and they stop again.
      component.aheadSkipped = 0;
      component.aheadSlow = AHEAD_SLOW_LIMIT - 1;
    }
    const started = this.#now();
    const ahead = newInstance(component, toolName);
    this.#ahead = ahead;
    ahead.exports().then(
      // Measured whole, when its core instances are all made (zeroing reused memories included):
      // the time a call of another tool may wait for it.
      () => {
        component.aheadSlow = this.#now() - started > this.#aheadMaxMs ? (component.aheadSlow ?? 0) + 1 : 0;
      },
      () => {}, // met again, and classified, in the call that takes it
    );
    return true;
  }
}

async function compile(prepared: PreparedComponent, maxPages: number, toolName: string): Promise<LoadedComponent> {
  // Checked here too, not only at transpile time: prepared components also come from caches.
  checkComponentImports(prepared.imports, toolName);
  const modules = new Map<string, WebAssembly.Module>();
  const bytesOf = new Map<WebAssembly.Module, Uint8Array>();
  const withCaps = new Map<WebAssembly.Module, string>();
  const pools = new Map<WebAssembly.Module, MemoryPool>();
  const memoryLimits = new Map<WebAssembly.Module, MemoryLimits>();
  const growWatched = new Set<WebAssembly.Module>();
  const capped = capComponentModules(prepared.modules, maxPages, toolName);
  let startless = true;
  await Promise.all(
    Object.entries(capped).map(async ([name, bytes]) => {
      // Prepared by Corral (prepareComponent): its own export marks a module watched already.
      const watched = watchGrowth(bytes, { prepared: true, toolName });
      const pooled = importOwnMemory(watched?.bytes ?? bytes);
      let module: WebAssembly.Module;
      try {
        module = await WebAssembly.compile((pooled?.bytes ?? watched?.bytes ?? bytes) as BufferSource);
      } catch (err) {
        // jco checked them when it transpiled, but a prepared component may come from a cache.
        const reason = err instanceof Error ? err.message : String(err);
        throw new CorralError(ErrorCodes.REGISTRATION, `${toolName} has a core module ${name} that is not valid WebAssembly: ${reason}`, {
          reason,
          module: name,
        });
      }
      modules.set(name, module);
      bytesOf.set(module, bytes);
      if (definesMemoryOrTable(bytes)) withCaps.set(module, name);
      if (mayRunAtInstantiation(bytes)) startless = false;
      if (watched) growWatched.add(module);
      if (pooled) pools.set(module, new MemoryPool(pooled));
      else memoryLimits.set(module, exportedMemoryLimits(bytes, importsMemory(module), maxPages));
    }),
  );
  const instantiate = await prepareGlue(prepared.glue, toolName, maxPages * WASM_PAGE_BYTES);
  const dispose = () => {
    for (const pool of pools.values()) pool.dispose();
  };
  return { instantiate, modules, capped: withCaps, pools, memoryLimits, growWatched, standIns: standIns(bytesOf), startless, dispose };
}

/** The wasi:cli/run export, whatever version suffix the component used. */
function findRun(exports: Record<string, unknown>, toolName: string): { run(): void } {
  for (const [name, value] of Object.entries(exports)) {
    if (name === 'run' || name.startsWith('wasi:cli/run')) return value as { run(): void };
  }
  throw new CorralError(
    ErrorCodes.UNEXPECTED_EXIT,
    `${toolName} does not export wasi:cli/run; Corral tools must be wasi:cli command components.`,
    { reason: 'not_a_command', exports: Object.keys(exports) },
  );
}

function importsMemory(module: WebAssembly.Module): boolean {
  return WebAssembly.Module.imports(module).some((i) => i.kind === 'memory');
}
